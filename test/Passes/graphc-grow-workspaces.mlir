// RUN: graphc-opt %s --split-input-file --graphc-plan-memory --graphc-grow-workspaces | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-plan-memory --graphc-grow-workspaces=max-bytes=1024 | FileCheck %s --check-prefix=LIMIT
// RUN: graphc-opt %s --split-input-file --graphc-plan-memory --graphc-grow-workspaces --graphc-verify-plan --graphc-test-print-liveness | FileCheck %s --check-prefix=LIVE

// The convolution's workspace grows into the bytes free at its step. Planned (best fit):
// big [0, 8192), c.workspace [8192, 8704) (324 bytes align 256), x [8704, 8960),
// b [8192, 16384) (step 1 only), c [16384, 16640), f [16640, 16896). At step 0 b is not live
// yet, so [8960, 16384) is free: 7424 bytes, of which the workspace takes 4096 (the largest
// power of two), at +8960. The arena stays 16896 and nothing else moves.
// CHECK-LABEL: func.func @grow(
//  CHECK-SAME:   graph.arena_bytes = 16896 : i64
//  CHECK-SAME:   graph.workspaces_grown = array<i64: 1, 324, 4096>
//  CHECK-NEXT:   graph.conv2d {{.*}}graph.offsets = array<i64: 16384>, graph.workspace_bytes = 4096 : i64, graph.workspace_offset = 8960 : i64
//  CHECK-NEXT:   graph.relu {{.*}}graph.offsets = array<i64: 8192>
//
// max-bytes caps each workspace: 1024 bytes, in the same gap.
// LIMIT-LABEL: func.func @grow(
//  LIMIT-SAME:   graph.workspaces_grown = array<i64: 1, 324, 1024>
//  LIMIT-NEXT:   graph.conv2d {{.*}}graph.workspace_bytes = 1024 : i64, graph.workspace_offset = 8960 : i64
//
// Liveness, and so the verifier and the plan dumps, see the grown size.
// LIVE-LABEL: liveness of @grow: 2 steps, 6 buffers
//       LIVE:   c.workspace workspace 4096 0..0
func.func @grow(%f: tensor<2x1x3x3xf32> {graph.kind = "parameter", graph.name = "f"},    // 72 bytes
                %x: tensor<1x1x5x5xf32> {graph.kind = "input", graph.name = "x"},        // 100 bytes
                %big: tensor<2048xf32> {graph.kind = "input", graph.name = "big"})      // 8192 bytes
    -> (tensor<1x2x3x3xf32>, tensor<2048xf32>) {
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32> loc("c")
  %b = graph.relu %big : tensor<2048xf32> loc("b")
  return %c, %b : tensor<1x2x3x3xf32>, tensor<2048xf32>
}

// -----

// A workspace at the peak has no free bytes around it: both convolutions keep their 512
// bytes at +0 (graphc-plan-memory.mlir's @views), and the step gets no graph.workspaces_grown.
// CHECK-LABEL: func.func @at_the_peak(
//  CHECK-SAME:   graph.arena_bytes = 1536 : i64
//   CHECK-NOT:   graph.workspaces_grown
//  CHECK-NEXT:   graph.conv2d {{.*}}graph.workspace_offset = 0 : i64
//   CHECK-NOT:   graph.workspace_bytes
//       CHECK:   graph.conv2d_backward_filter {{.*}}graph.workspace_offset = 0 : i64
//   CHECK-NOT:   graph.workspace_bytes
//       CHECK:   return
func.func @at_the_peak(%f: tensor<2x1x3x3xf32> {graph.kind = "parameter", graph.name = "f"},
                       %x: tensor<1x1x5x5xf32> {graph.kind = "input", graph.name = "x"})
    -> (tensor<1x18xf32>, tensor<2x1x3x3xf32>) {
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32> loc("c")
  %r = graph.reshape %c : (tensor<1x2x3x3xf32>) -> tensor<1x18xf32> loc("r")
  %g = graph.reshape %r : (tensor<1x18xf32>) -> tensor<1x2x3x3xf32> loc("g")
  %df = graph.conv2d_backward_filter %g, %x {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<1x1x5x5xf32>) -> tensor<2x1x3x3xf32> loc("df")
  %nf = graph.sgd_update %f, %df {lr = 0.5 : f32} : tensor<2x1x3x3xf32> loc("nf")
  return %r, %nf : tensor<1x18xf32>, tensor<2x1x3x3xf32>
}
