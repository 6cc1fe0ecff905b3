// RUN: graphc-opt %s --split-input-file --graphc-build-train-step='optimizer=adam' | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step='optimizer=adam' --graphc-plan-memory --graphc-verify-plan | FileCheck %s --check-prefix=PLAN

// Frozen parameters (graph.trainable = false, as the Keras importer writes for a layer with
// trainable: false) are read like constants: they come after the batch statistics in the
// signature, keep their name and initial value, get no gradient, no update and no optimizer
// state, and are not results. Here conv1 (filter and bias) is frozen and fc trains: only fc's
// parameters get Adam's m and v, and no conv2d_backward_filter or bias_grad of conv1 appears;
// the input gradient of conv1 is not needed either (its input is the data).
// CHECK-LABEL: func.func @train_step(
//  CHECK-SAME:   %[[W:arg0]]: tensor<8x4xf32> {graph.kind = "parameter", graph.name = "fc/kernel"},
//  CHECK-SAME:   %arg1: tensor<4xf32> {graph.kind = "parameter", graph.name = "fc/bias"},
//  CHECK-SAME:   %arg2: tensor<8x4xf32> {graph.kind = "optimizer_state", graph.name = "fc/kernel.m"},
//  CHECK-SAME:   %arg3: tensor<4xf32> {graph.kind = "optimizer_state", graph.name = "fc/bias.m"},
//  CHECK-SAME:   %arg4: tensor<8x4xf32> {graph.kind = "optimizer_state", graph.name = "fc/kernel.v"},
//  CHECK-SAME:   %arg5: tensor<4xf32> {graph.kind = "optimizer_state", graph.name = "fc/bias.v"},
//  CHECK-SAME:   %[[F:arg6]]: tensor<2x1x3x3xf32> {graph.init = dense<1.000000e+00> : tensor<2x1x3x3xf32>, graph.kind = "parameter", graph.name = "conv1/kernel", graph.trainable = false},
//  CHECK-SAME:   %[[FB:arg7]]: tensor<2xf32> {graph.kind = "parameter", graph.name = "conv1/bias", graph.trainable = false},
//  CHECK-SAME:   %[[X:arg8]]: tensor<2x1x4x4xf32> {graph.kind = "input", graph.name = "x", graph.role = "data"},
//  CHECK-SAME:   %arg9: tensor<2xi64> {graph.kind = "input", graph.name = "labels", graph.role = "labels"},
//  CHECK-SAME:   %arg10: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"})
//  CHECK-SAME:   -> (tensor<f32>, tensor<8x4xf32> {graph.name = "fc/kernel", graph.tied_to_arg = 0 : i64},
//  CHECK-SAME:   tensor<4xf32> {graph.name = "fc/bias", graph.tied_to_arg = 1 : i64},
//  CHECK-SAME:   tensor<8x4xf32> {graph.name = "fc/kernel.m", graph.tied_to_arg = 2 : i64},
//  CHECK-SAME:   tensor<4xf32> {graph.name = "fc/bias.m", graph.tied_to_arg = 3 : i64},
//  CHECK-SAME:   tensor<8x4xf32> {graph.name = "fc/kernel.v", graph.tied_to_arg = 4 : i64},
//  CHECK-SAME:   tensor<4xf32> {graph.name = "fc/bias.v", graph.tied_to_arg = 5 : i64}) {
//       CHECK:   graph.conv2d %[[X]], %[[F]], %[[FB]]
//   CHECK-NOT:   graph.conv2d_backward_filter
//   CHECK-NOT:   graph.conv2d_backward_data
//   CHECK-NOT:   graph.bias_grad %{{.*}} : (tensor<2x2x2x2xf32>)
//       CHECK:   graph.adam_update %[[W]]
//   CHECK-NOT:   graph.conv2d_backward_filter
//       CHECK:   return
//  PLAN-LABEL: func.func @train_step(
//       PLAN:   graph.arena_bytes
func.func @forward(%x: tensor<2x1x4x4xf32> {graph.kind = "input", graph.name = "x"},
                   %k: tensor<2x1x3x3xf32> {graph.kind = "parameter", graph.name = "conv1/kernel", graph.trainable = false, graph.init = dense<1.0> : tensor<2x1x3x3xf32>},
                   %kb: tensor<2xf32> {graph.kind = "parameter", graph.name = "conv1/bias", graph.trainable = false},
                   %w: tensor<8x4xf32> {graph.kind = "parameter", graph.name = "fc/kernel"},
                   %b: tensor<4xf32> {graph.kind = "parameter", graph.name = "fc/bias"}) -> tensor<2x4xf32> {
  %c = graph.conv2d %x, %k, %kb {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x1x4x4xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<2x2x2x2xf32>
  %r = graph.relu %c : tensor<2x2x2x2xf32>
  %f = graph.reshape %r : (tensor<2x2x2x2xf32>) -> tensor<2x8xf32>
  %y = graph.dense %f, %w, %b : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// A frozen layer in the middle still passes the gradient to its input (dense's grad_input
// matmul), but computes no weight gradient; the layer before it trains.
// CHECK-LABEL: func.func @train_step(
//       CHECK:   %[[H:.*]] = graph.dense %{{.*}}, %[[W1:arg0]]
//       CHECK:   graph.dense %{{.*}}, %[[W2:arg[0-9]+]]
//       CHECK:   graph.matmul %{{.*}}, %[[W2]] {transpose_rhs}
//   CHECK-NOT:   graph.adam_update %[[W2]]
//       CHECK:   graph.adam_update %[[W1]]
//   CHECK-NOT:   graph.adam_update
//       CHECK:   return
func.func @forward(%x: tensor<2x3xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<3x5xf32> {graph.kind = "parameter", graph.name = "w1"},
                   %w2: tensor<5x2xf32> {graph.kind = "parameter", graph.name = "w2", graph.trainable = false}) -> tensor<2x2xf32> {
  %h = graph.dense %x, %w1 : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  %y = graph.dense %h, %w2 : (tensor<2x5xf32>, tensor<5x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
