// RUN: graphc-opt %s --split-input-file --graphc-split-channel-reductions | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-split-channel-reductions=min-elements=256 | FileCheck %s --check-prefix=SMALL
// RUN: graphc-opt %s --split-input-file --graphc-split-channel-reductions=min-elements=256 --graphc-plan-memory --graphc-test-print-liveness | FileCheck %s --check-prefix=LIVE

// A training batch norm and its backward over 8 samples of 4 channels of 16 x 16: each channel
// has 2048 values. With 528 blocks wanted (132 per channel) and at least 1024 values per block,
// 2 blocks per channel (2 divides 8); with at least 256 values per block, 8. The eval-mode batch
// norm sums nothing and keeps one block per channel.
// CHECK-LABEL: func.func @bn(
//       CHECK:   graph.batch_norm {{.*}}graph.block_splits = 2 : i64
//       CHECK:   graph.batch_norm {{.*}}{epsilon
//   CHECK-NOT:   graph.block_splits
//       CHECK:   graph.batch_norm_backward {{.*}}graph.block_splits = 2 : i64
// SMALL-LABEL: func.func @bn(
//       SMALL:   graph.batch_norm {{.*}}graph.block_splits = 8 : i64
//       SMALL:   graph.batch_norm_backward {{.*}}graph.block_splits = 8 : i64
//
// The partial sums are each op's workspace: 2 x 4 channels x 8 blocks doubles = 512 bytes.
// LIVE-LABEL: liveness of @bn:
//       LIVE:   y#0.workspace workspace 512 0..0
//       LIVE:   dx#0.workspace workspace 512 2..2
func.func @bn(%x: tensor<8x4x16x16xf32> {graph.kind = "input", graph.name = "x"},
              %g: tensor<4xf32> {graph.kind = "parameter", graph.name = "g"},
              %b: tensor<4xf32> {graph.kind = "parameter", graph.name = "b"},
              %m: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "m"},
              %v: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "v"},
              %dy: tensor<8x4x16x16xf32> {graph.kind = "input", graph.name = "dy"},
              %m2: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "m2"},
              %v2: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "v2"})
    -> (tensor<8x4x16x16xf32>, tensor<8x4x16x16xf32>, tensor<4xf32>, tensor<8x4x16x16xf32>) {
  %y:5 = graph.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<8x4x16x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4x16x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) loc("y")
  %e:5 = graph.batch_norm %x, %g, %b, %m2, %v2 {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32} : (tensor<8x4x16x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4x16x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) loc("e")
  %dx:3 = graph.batch_norm_backward %dy, %x, %g, %y#3, %y#4 {training} : (tensor<8x4x16x16xf32>, tensor<8x4x16x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4x16x16xf32>, tensor<4xf32>, tensor<4xf32>) loc("dx")
  return %y#0, %dx#0, %dx#1, %e#0 : tensor<8x4x16x16xf32>, tensor<8x4x16x16xf32>, tensor<4xf32>, tensor<8x4x16x16xf32>
}

// -----

// 6 samples of 64 channels of 8 x 8 (384 values each): 528 / 64 = 8 blocks wanted, but with at
// least 1024 values per block none is split; with 256, at most 1 (384 / 256), so none either.
// CHECK-LABEL: func.func @few_values(
//   CHECK-NOT:   graph.block_splits
// SMALL-LABEL: func.func @few_values(
//   SMALL-NOT:   graph.block_splits
func.func @few_values(%x: tensor<6x64x8x8xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
                      %m: tensor<64xf32>, %v: tensor<64xf32>) -> tensor<6x64x8x8xf32> {
  %y:5 = graph.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<6x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<6x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
  return %y#0 : tensor<6x64x8x8xf32>
}

// -----

// 6 samples of 100 channels of 32 x 32 (6144 values each): 528 / 100 = 5 blocks wanted and
// 6144 / 1024 = 6 allowed; 5 does not divide 6, 4 does not either, 3 does.
// CHECK-LABEL: func.func @divisor(
//       CHECK:   graph.block_splits = 3 : i64
// SMALL-LABEL: func.func @divisor(
//       SMALL:   graph.block_splits = 3 : i64
func.func @divisor(%x: tensor<6x100x32x32xf32>, %g: tensor<100xf32>, %b: tensor<100xf32>,
                   %m: tensor<100xf32>, %v: tensor<100xf32>) -> tensor<6x100x32x32xf32> {
  %y:5 = graph.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<6x100x32x32xf32>, tensor<100xf32>, tensor<100xf32>, tensor<100xf32>, tensor<100xf32>) -> (tensor<6x100x32x32xf32>, tensor<100xf32>, tensor<100xf32>, tensor<100xf32>, tensor<100xf32>)
  return %y#0 : tensor<6x100x32x32xf32>
}

// -----

// Bias gradients: a convolution's over 32 samples of 32 channels of 26 x 26 (21632 values each:
// 16 blocks wanted, 21 allowed, 16 divides 32) and a dense layer's over 256 rows of 10 features
// (256 values each: none).
// CHECK-LABEL: func.func @bias(
//       CHECK:   graph.bias_grad {{.*}}graph.block_splits = 16 : i64
//       CHECK:   graph.bias_grad %arg1 {axis = 1 : i64} :
// SMALL-LABEL: func.func @bias(
func.func @bias(%conv: tensor<32x32x26x26xf32>, %dense: tensor<256x10xf32>) -> (tensor<32xf32>, tensor<10xf32>) {
  %a = graph.bias_grad %conv {axis = 1 : i64} : (tensor<32x32x26x26xf32>) -> tensor<32xf32>
  %b = graph.bias_grad %dense {axis = 1 : i64} : (tensor<256x10xf32>) -> tensor<10xf32>
  return %a, %b : tensor<32xf32>, tensor<10xf32>
}
