// RUN: graphc-opt %s --split-input-file --graphc-insert-casts | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-insert-casts='precision=f16' | FileCheck %s --check-prefix=F16
// RUN: graphc-opt %s --split-input-file --graphc-insert-casts --graphc-build-train-step='optimizer=adam loss=mse' --graphc-plan-memory --graphc-verify-plan | FileCheck %s --check-prefix=TRAIN

// A dense layer runs in bf16: its input, weight and bias are cast once; the relu follows its
// bf16 input; the softmax (f32 list) gets a widened copy; the function still returns f32.
// CHECK-LABEL: func.func @mlp(
//  CHECK-SAME:   %[[X:.*]]: tensor<4x3xf32> {{.*}}, %[[W:.*]]: tensor<2x3xf32> {{.*}}, %[[B:.*]]: tensor<2xf32> {{.*}}) -> tensor<4x2xf32>
//   CHECK-DAG:   %[[BH:.*]] = graph.cast %[[B]] : tensor<2xf32> to tensor<2xbf16>
//   CHECK-DAG:   %[[WH:.*]] = graph.cast %[[W]] : tensor<2x3xf32> to tensor<2x3xbf16>
//   CHECK-DAG:   %[[XH:.*]] = graph.cast %[[X]] : tensor<4x3xf32> to tensor<4x3xbf16>
//       CHECK:   %[[Y:.*]] = graph.dense %[[XH]], %[[WH]], %[[BH]] {transpose_weight} : (tensor<4x3xbf16>, tensor<2x3xbf16>, tensor<2xbf16>) -> tensor<4x2xbf16>
//       CHECK:   %[[R:.*]] = graph.relu %[[Y]] : tensor<4x2xbf16>
//       CHECK:   %[[RF:.*]] = graph.cast %[[R]] : tensor<4x2xbf16> to tensor<4x2xf32>
//       CHECK:   %[[S:.*]] = graph.softmax %[[RF]] {axis = 1 : i64} : tensor<4x2xf32>
//       CHECK:   return %[[S]] : tensor<4x2xf32>
// After graphc-build-train-step (every split becomes @train_step; this is the first), the
// cast of the weight is differentiated: the bf16 weight gradient is widened back, and Adam
// updates the f32 master weight with an f32 gradient.
// TRAIN-LABEL: func.func @train_step(
//       TRAIN:   %[[GW:.*]] = graph.matmul {{.*}} -> tensor<2x3xbf16>
//       TRAIN:   %[[GWF:.*]] = graph.cast %[[GW]] {{.*}}: tensor<2x3xbf16> to tensor<2x3xf32>
//       TRAIN:   graph.adam_update %arg0, %[[GWF]], {{.*}} : tensor<2x3xf32>, tensor<f32>
// F16-LABEL: func.func @mlp(
//       F16:   graph.dense {{.*}} -> tensor<4x2xf16>
func.func @mlp(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
               %w: tensor<2x3xf32> {graph.kind = "parameter", graph.name = "fc.weight"},
               %b: tensor<2xf32> {graph.kind = "parameter", graph.name = "fc.bias"}) -> tensor<4x2xf32> {
  %y = graph.dense %x, %w, %b {transpose_weight} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %r = graph.relu %y : tensor<4x2xf32>
  %s = graph.softmax %r {axis = 1 : i64} : tensor<4x2xf32>
  return %s : tensor<4x2xf32>
}

// -----

// A value read by two 16-bit ops is cast once; an add of a bf16 and an f32 operand (a
// residual around an f32 op) runs in f32, so its bf16 operand is widened.
// CHECK-LABEL: func.func @shared_and_mixed(
//       CHECK:   %[[XH:.*]] = graph.cast %arg0 : tensor<4x4xf32> to tensor<4x4xbf16>
//   CHECK-NOT:   graph.cast %arg0
//       CHECK:   %[[A:.*]] = graph.dense %[[XH]], {{.*}} -> tensor<4x4xbf16>
//       CHECK:   %[[AF:.*]] = graph.cast %[[A]] : tensor<4x4xbf16> to tensor<4x4xf32>
//       CHECK:   %[[B:.*]] = graph.dense %[[XH]], {{.*}} -> tensor<4x4xbf16>
//       CHECK:   %[[BF:.*]] = graph.cast %[[B]] : tensor<4x4xbf16> to tensor<4x4xf32>
//       CHECK:   %[[T:.*]] = graph.softmax %[[BF]]
//       CHECK:   graph.add %[[AF]], %[[T]] : tensor<4x4xf32>
func.func @shared_and_mixed(%x: tensor<4x4xf32> {graph.kind = "input", graph.name = "x"},
                            %w: tensor<4x4xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x4xf32> {
  %a = graph.dense %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = graph.dense %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = graph.softmax %b {axis = 1 : i64} : tensor<4x4xf32>
  %s = graph.add %a, %t : tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// -----

// Convolution runs in bf16 and max pooling follows it; batch_norm normalizes the bf16 tensor
// itself (bf16 out) with f32 scale, bias and statistics; the returned value is widened.
// CHECK-LABEL: func.func @conv_bn(
//       CHECK:   graph.conv2d {{.*}} -> tensor<2x4x6x6xbf16>
//       CHECK:   %[[P:.*]] = graph.max_pool2d {{.*}} -> tensor<2x4x3x3xbf16>
//   CHECK-NOT:   graph.cast %[[P]]
//       CHECK:   %[[Y:[a-z_0-9]+]], {{.*}} = graph.batch_norm %[[P]], %arg2, %arg3, %arg4, %arg5 {{.*}} : (tensor<2x4x3x3xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xbf16>, tensor<4xf32>,
//       CHECK:   %[[YF:.*]] = graph.cast %[[Y]] : tensor<2x4x3x3xbf16> to tensor<2x4x3x3xf32>
//       CHECK:   return %[[YF]]
func.func @conv_bn(%x: tensor<2x3x8x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<4x3x3x3xf32> {graph.kind = "parameter", graph.name = "conv.weight"},
                   %g: tensor<4xf32> {graph.kind = "parameter", graph.name = "bn.weight"},
                   %beta: tensor<4xf32> {graph.kind = "parameter", graph.name = "bn.bias"},
                   %mean: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "bn.running_mean"},
                   %var: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "bn.running_var"}) -> tensor<2x4x3x3xf32> {
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  %p = graph.max_pool2d %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32>
  %y, %nm, %nv, %sm, %si = graph.batch_norm %p, %g, %beta, %mean, %var {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y : tensor<2x4x3x3xf32>
}

// -----

// A transposed convolution (conv2d_backward_data in the forward function) runs in bf16 like
// conv2d: its input, filter and bias are cast, its result is bf16; in the train step its
// gradients (a conv2d and a conv2d_backward_filter) are bf16 and the filter's is widened for
// the f32 update.
// CHECK-LABEL: func.func @conv_transpose(
//       CHECK:   graph.conv2d_backward_data %{{.*}}, %{{.*}}, %{{.*}} {{.*}} : (tensor<2x3x4x4xbf16>, tensor<3x2x3x3xbf16>, tensor<2xbf16>) -> tensor<2x2x8x8xbf16>
// TRAIN-LABEL: func.func @train_step(
//       TRAIN:   graph.conv2d_backward_data {{.*}} -> tensor<2x2x8x8xbf16>
//       TRAIN:   %[[GW:.*]] = graph.conv2d_backward_filter {{.*}} -> tensor<3x2x3x3xbf16>
//       TRAIN:   graph.cast %[[GW]] {{.*}}: tensor<3x2x3x3xbf16> to tensor<3x2x3x3xf32>
func.func @conv_transpose(%x: tensor<2x3x4x4xf32> {graph.kind = "input", graph.name = "x"},
                          %w: tensor<3x2x3x3xf32> {graph.kind = "parameter", graph.name = "w"},
                          %b: tensor<2xf32> {graph.kind = "parameter", graph.name = "b"}) -> tensor<2x2x8x8xf32> {
  %y = graph.conv2d_backward_data %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x4x4xf32>, tensor<3x2x3x3xf32>, tensor<2xf32>) -> tensor<2x2x8x8xf32>
  return %y : tensor<2x2x8x8xf32>
}

// -----

// broadcast_mul's factor (here a trained per-feature scale) takes the activation's type: the
// bf16 product of a dense is not widened, the f32 factor is cast to bf16; in the train step the
// factor's gradient (the sum over the rows) is widened for the f32 update.
// CHECK-LABEL: func.func @factor(
//       CHECK:   %[[G:.*]] = graph.cast %arg2 : tensor<6xf32> to tensor<6xbf16>
//       CHECK:   %[[H:.*]] = graph.dense {{.*}} -> tensor<4x6xbf16>
//       CHECK:   graph.broadcast_mul %[[H]], %[[G]] : (tensor<4x6xbf16>, tensor<6xbf16>) -> tensor<4x6xbf16>
//       TRAIN:   graph.broadcast_mul {{.*}} : (tensor<4x6xbf16>, tensor<6xbf16>) -> tensor<4x6xbf16>
//       TRAIN:   %[[GG:.*]] = graph.reshape {{.*}} : (tensor<1x6xbf16>) -> tensor<6xbf16>
//       TRAIN:   graph.cast %[[GG]] {{.*}}: tensor<6xbf16> to tensor<6xf32>
func.func @factor(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                  %w: tensor<3x6xf32> {graph.kind = "parameter", graph.name = "w"},
                  %g: tensor<6xf32> {graph.kind = "parameter", graph.name = "gamma"}) -> tensor<4x6xf32> {
  %h = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
  %y = graph.broadcast_mul %h, %g : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// exp, log and pow stay in float32 (torch.autocast's fp32 list): the bf16 dense output is
// widened before them; gelu follows its input and stays bf16.
// CHECK-LABEL: func.func @float32_math(
//       CHECK:   %[[H:.*]] = graph.dense {{.*}} -> tensor<4x6xbf16>
//       CHECK:   %[[G:.*]] = graph.activation gelu %[[H]] : tensor<4x6xbf16>
//       CHECK:   %[[W:.*]] = graph.cast %[[G]] : tensor<4x6xbf16> to tensor<4x6xf32>
//       CHECK:   %[[E:.*]] = graph.activation exp %[[W]] : tensor<4x6xf32>
//       CHECK:   %[[L:.*]] = graph.activation log %[[E]] : tensor<4x6xf32>
//       CHECK:   graph.activation pow %[[L]] {alpha = -1.000000e+00 : f32} : tensor<4x6xf32>
func.func @float32_math(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                        %w: tensor<3x6xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x6xf32> {
  %h = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
  %g = graph.activation gelu %h : tensor<4x6xf32>
  %e = graph.activation exp %g : tensor<4x6xf32>
  %l = graph.activation log %e : tensor<4x6xf32>
  %r = graph.activation pow %l {alpha = -1.0 : f32} : tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// A batch_matmul or dense that sums nothing (a contraction of 1: a per-row gate x / norm, a
// broadcast by a product with ones) follows its operands as the elementwise op it stands for:
// of f32 tensors it stays f32, of bf16 ones (two denses' outputs) bf16; a real product (K = 3)
// is bf16.
// CHECK-LABEL: func.func @unit_contraction(
//       CHECK:   graph.batch_matmul %{{.*}}, %{{.*}} : (tensor<4x6x1xf32>, tensor<4x1x1xf32>) -> tensor<4x6x1xf32>
//       CHECK:   graph.dense %{{.*}}, %{{.*}} : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
//       CHECK:   graph.dense %{{.*}}, %{{.*}} : (tensor<4x3xbf16>, tensor<3x6xbf16>) -> tensor<4x6xbf16>
//       CHECK:   graph.batch_matmul %{{.*}}, %{{.*}} : (tensor<4x6x1xbf16>, tensor<4x1x1xbf16>) -> tensor<4x6x1xbf16>
func.func @unit_contraction(%x: tensor<4x6xf32> {graph.kind = "input", graph.name = "x"},
                            %w: tensor<3x6xf32> {graph.kind = "parameter", graph.name = "w"},
                            %v: tensor<3x1xf32> {graph.kind = "parameter", graph.name = "v"}) -> tensor<4x6xf32> {
  %g = graph.slice %x {axis = 1 : i64, offset = 0 : i64} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %a = graph.slice %x {axis = 1 : i64, offset = 1 : i64} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  %x3 = graph.reshape %x : (tensor<4x6xf32>) -> tensor<4x6x1xf32>
  %g3 = graph.reshape %g : (tensor<4x1xf32>) -> tensor<4x1x1xf32>
  %gated = graph.batch_matmul %x3, %g3 : (tensor<4x6x1xf32>, tensor<4x1x1xf32>) -> tensor<4x6x1xf32>
  %ones = graph.fill {value = 1.0 : f32} : tensor<1x6xf32>
  %copied = graph.dense %g, %ones : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %h = graph.dense %a, %w : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
  %h3 = graph.reshape %h : (tensor<4x6xf32>) -> tensor<4x6x1xf32>
  %s = graph.dense %a, %v : (tensor<4x3xf32>, tensor<3x1xf32>) -> tensor<4x1xf32>
  %s3 = graph.reshape %s : (tensor<4x1xf32>) -> tensor<4x1x1xf32>
  %hg = graph.batch_matmul %h3, %s3 : (tensor<4x6x1xf32>, tensor<4x1x1xf32>) -> tensor<4x6x1xf32>
  %gated2 = graph.reshape %gated : (tensor<4x6x1xf32>) -> tensor<4x6xf32>
  %hg2 = graph.reshape %hg : (tensor<4x6x1xf32>) -> tensor<4x6xf32>
  %sum = graph.add %gated2, %copied : tensor<4x6xf32>
  %y = graph.add %sum, %hg2 : tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}
