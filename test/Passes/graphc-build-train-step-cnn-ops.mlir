// RUN: graphc-opt %s --split-input-file --graphc-build-train-step | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step --graphc-plan-memory --graphc-verify-plan | FileCheck %s --check-prefix=PIPE

// Autodiff of the ops of issue #6. Every built step also plans and passes the verifier.
// PIPE-COUNT-6: graph.arena_bytes

// A depthwise conv, a training-mode batch_norm, ReLU6 (clip) and a global average pool: the
// running statistics become batch_stats arguments after the parameters, are returned last as
// batch_norm's new statistics (tied to their arguments), and get no gradient or update;
// batch_norm_backward feeds the scale and bias updates and the conv's backward ops keep groups.
// CHECK-LABEL: func.func @train_step(
//  CHECK-SAME:   %[[W:arg0]]: tensor<4x1x3x3xf32> {graph.kind = "parameter", graph.name = "w"},
//  CHECK-SAME:   %[[G:arg1]]: tensor<4xf32> {graph.kind = "parameter", graph.name = "bn.weight"},
//  CHECK-SAME:   %[[B:arg2]]: tensor<4xf32> {graph.kind = "parameter", graph.name = "bn.bias"},
//  CHECK-SAME:   %[[FW:arg3]]: tensor<3x4xf32> {graph.kind = "parameter", graph.name = "fc"},
//  CHECK-SAME:   %[[M:arg4]]: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "bn.running_mean"},
//  CHECK-SAME:   %[[V:arg5]]: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "bn.running_var"},
//  CHECK-SAME:   %[[X:arg6]]: tensor<2x4x5x5xf32> {graph.kind = "input", graph.name = "x", graph.role = "data"},
//  CHECK-SAME:   %[[L:arg7]]: tensor<2xi64> {graph.kind = "input", graph.name = "labels", graph.role = "labels"})
//  CHECK-SAME:   tensor<4xf32> {graph.name = "bn.running_mean", graph.tied_to_arg = 4 : i64},
//  CHECK-SAME:   tensor<4xf32> {graph.name = "bn.running_var", graph.tied_to_arg = 5 : i64})
//       CHECK:   %[[C:.*]] = graph.conv2d %[[X]], %[[W]] {{{.*}}groups = 4 : i64
//       CHECK:   %[[Y:.*]], %[[NM:.*]], %[[NV:.*]], %[[SM:.*]], %[[SI:.*]] = graph.batch_norm %[[C]], %[[G]], %[[B]], %[[M]], %[[V]] {{{.*}}training}
//       CHECK:   %[[R6:.*]] = graph.clip %[[Y]] {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32}
//       CHECK:   %[[P:.*]] = graph.avg_pool2d %[[R6]] {kernel = array<i64: 5, 5>
//       CHECK:   graph.loss_backward
//       CHECK:   %[[DP:.*]] = graph.avg_pool2d_backward %{{.*}} {kernel = array<i64: 5, 5>
//       CHECK:   %[[DR:.*]] = graph.clip_backward %[[DP]], %[[R6]] {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32}
//       CHECK:   %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = graph.batch_norm_backward %[[DR]], %[[C]], %[[G]], %[[SM]], %[[SI]] {training}
//       CHECK:   graph.sgd_update %[[G]], %[[DG]]
//       CHECK:   graph.sgd_update %[[B]], %[[DB]]
//       CHECK:   graph.conv2d_backward_filter %[[DX]], %[[X]] {{{.*}}groups = 4 : i64
//       CHECK:   return {{.*}}, %[[NM]], %[[NV]] :
func.func @forward(%x: tensor<2x4x5x5xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<4x1x3x3xf32> {graph.kind = "parameter", graph.name = "w"},
                   %g: tensor<4xf32> {graph.kind = "parameter", graph.name = "bn.weight"},
                   %b: tensor<4xf32> {graph.kind = "parameter", graph.name = "bn.bias"},
                   %m: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "bn.running_mean"},
                   %v: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "bn.running_var"},
                   %fw: tensor<3x4xf32> {graph.kind = "parameter", graph.name = "fc"}) -> tensor<2x3xf32> {
  %c = graph.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4} : (tensor<2x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x5x5xf32>
  %y:5 = graph.batch_norm %c, %g, %b, %m, %v {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = graph.clip %y#0 {min = 0.0 : f32, max = 6.0 : f32} : tensor<2x4x5x5xf32>
  %p = graph.avg_pool2d %r {kernel = array<i64: 5, 5>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x5x5xf32>) -> tensor<2x4x1x1xf32>
  %f = graph.reshape %p : (tensor<2x4x1x1xf32>) -> tensor<2x4xf32>
  %o = graph.dense %f, %fw {transpose_weight} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %o : tensor<2x3xf32>
}

// -----

// Inference-form batch_norm: its backward has no training attribute, and the unchanged
// statistics are still returned.
// CHECK-LABEL: func.func @train_step(
//       CHECK:   graph.batch_norm %{{.*}} {epsilon = 9.99999974E-6 : f32, momentum = 0.000000e+00 : f32}
//       CHECK:   graph.batch_norm_backward %{{.*}} : (
func.func @forward(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                   %g: tensor<3xf32> {graph.kind = "parameter", graph.name = "g"},
                   %b: tensor<3xf32> {graph.kind = "parameter", graph.name = "b"},
                   %m: tensor<3xf32> {graph.kind = "batch_stats", graph.name = "m"},
                   %v: tensor<3xf32> {graph.kind = "batch_stats", graph.name = "v"}) -> tensor<4x3xf32> {
  %y:5 = graph.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-5 : f32, momentum = 0.0 : f32} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y#0 : tensor<4x3xf32>
}

// -----

// Concat and dropout: the forward's step input becomes the step argument after the labels;
// dropout_backward regenerates the mask from the same step and op_id, and each concat input
// gets its slice of the gradient.
// CHECK-LABEL: func.func @train_step(
//  CHECK-SAME:   %[[S:arg[0-9]+]]: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"})
//       CHECK:   %[[C:.*]] = graph.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x5xf32>
//       CHECK:   graph.dropout %[[C]], %[[S]] {op_id = 3 : i64, ratio = 5.000000e-01 : f32}
//       CHECK:   %[[DD:.*]] = graph.dropout_backward %{{.*}}, %[[S]] {op_id = 3 : i64, ratio = 5.000000e-01 : f32}
//   CHECK-DAG:   graph.slice %[[DD]] {axis = 1 : i64, offset = 0 : i64} : (tensor<2x5xf32>) -> tensor<2x3xf32>
//   CHECK-DAG:   graph.slice %[[DD]] {axis = 1 : i64, offset = 3 : i64} : (tensor<2x5xf32>) -> tensor<2x2xf32>
func.func @forward(%x: tensor<2x3xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<3x3xf32> {graph.kind = "parameter", graph.name = "w1"},
                   %w2: tensor<3x2xf32> {graph.kind = "parameter", graph.name = "w2"},
                   %step: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"}) -> tensor<2x5xf32> {
  %a = graph.dense %x, %w1 : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %b = graph.dense %x, %w2 : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x5xf32>
  %d = graph.dropout %c, %step {ratio = 0.5 : f32, op_id = 3} : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  return %d : tensor<2x5xf32>
}

// -----

// A transposed convolution (conv2d_backward_data with a bias in the forward function): its
// input gradient is a conv2d of the output gradient with the same window attributes, its
// filter gradient a conv2d_backward_filter with the roles of the two tensors swapped (the
// layer's input is the grad operand, the output gradient the input operand), and its bias
// gradient sums the output gradient per channel.
// CHECK-LABEL: func.func @train_step(
//  CHECK-SAME:   %[[W:arg0]]: tensor<3x2x3x3xf32> {graph.kind = "parameter", graph.name = "w1"},
//  CHECK-SAME:   %[[WT:arg1]]: tensor<3x4x3x3xf32> {graph.kind = "parameter", graph.name = "wt"},
//  CHECK-SAME:   %[[BT:arg2]]: tensor<4xf32> {graph.kind = "parameter", graph.name = "bt"},
//       CHECK:   %[[H:.*]] = graph.conv2d %{{.*}}, %[[W]] {dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
//       CHECK:   %[[T:.*]] = graph.conv2d_backward_data %[[H]], %[[WT]], %[[BT]] {dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x4x4xf32>, tensor<3x4x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
//       CHECK:   %[[DT:.*]] = graph.reshape %{{.*}} : (tensor<2x256xf32>) -> tensor<2x4x8x8xf32>
//       CHECK:   %[[DH:.*]] = graph.conv2d %[[DT]], %[[WT]] {dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>, tensor<3x4x3x3xf32>) -> tensor<2x3x4x4xf32>
//       CHECK:   %[[DWT:.*]] = graph.conv2d_backward_filter %[[H]], %[[DT]] {dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x4x4xf32>, tensor<2x4x8x8xf32>) -> tensor<3x4x3x3xf32>
//       CHECK:   %[[DBT:.*]] = graph.bias_grad %[[DT]] {axis = 1 : i64} : (tensor<2x4x8x8xf32>) -> tensor<4xf32>
//   CHECK-DAG:   graph.sgd_update %[[WT]], %[[DWT]]
//   CHECK-DAG:   graph.sgd_update %[[BT]], %[[DBT]]
//       CHECK:   graph.conv2d_backward_filter %[[DH]], %{{.*}} {{.*}} -> tensor<3x2x3x3xf32>
func.func @forward(%x: tensor<2x2x6x6xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<3x2x3x3xf32> {graph.kind = "parameter", graph.name = "w1"},
                   %wt: tensor<3x4x3x3xf32> {graph.kind = "parameter", graph.name = "wt"},
                   %bt: tensor<4xf32> {graph.kind = "parameter", graph.name = "bt"},
                   %wd: tensor<256x3xf32> {graph.kind = "parameter", graph.name = "wd"}) -> tensor<2x3xf32> {
  %h = graph.conv2d %x, %w1 {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<2x3x4x4xf32>
  %t = graph.conv2d_backward_data %h, %wt, %bt {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x4x4xf32>, tensor<3x4x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %f = graph.reshape %t : (tensor<2x4x8x8xf32>) -> tensor<2x256xf32>
  %o = graph.dense %f, %wd : (tensor<2x256xf32>, tensor<256x3xf32>) -> tensor<2x3xf32>
  return %o : tensor<2x3xf32>
}

// -----

// relu read only by a dropout (a transformer's FFN): relu_backward reads the dropout's output,
// positive exactly where relu's is and the mask keeps the element (where it drops it, the
// gradient from dropout_backward is zero), so relu's output dies at the dropout.
// CHECK-LABEL: func.func @train_step(
//       CHECK:   %[[R:.*]] = graph.relu
//       CHECK:   %[[D:.*]] = graph.dropout %[[R]], %{{.*}} {op_id = 4 : i64, ratio = 1.000000e-01 : f32}
//       CHECK:   %[[DD:.*]] = graph.dropout_backward %{{.*}}, %{{.*}} {op_id = 4 : i64, ratio = 1.000000e-01 : f32}
//       CHECK:   graph.relu_backward %[[DD]], %[[D]] :
func.func @forward(%x: tensor<2x3xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<3x4xf32> {graph.kind = "parameter", graph.name = "w1"},
                   %w2: tensor<4x2xf32> {graph.kind = "parameter", graph.name = "w2"},
                   %step: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"}) -> tensor<2x2xf32> {
  %h = graph.dense %x, %w1 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %r = graph.relu %h : tensor<2x4xf32>
  %d = graph.dropout %r, %step {ratio = 0.1 : f32, op_id = 4} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %o = graph.dense %d, %w2 : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  return %o : tensor<2x2xf32>
}

// -----

// A relu with another reader besides the dropout keeps reading its own output: the other
// reader's gradient reaches relu where the mask dropped the element too.
// CHECK-LABEL: func.func @train_step(
//       CHECK:   %[[R:.*]] = graph.relu
//       CHECK:   graph.relu_backward %{{.*}}, %[[R]] :
func.func @forward(%x: tensor<2x3xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<3x4xf32> {graph.kind = "parameter", graph.name = "w1"},
                   %w2: tensor<4x2xf32> {graph.kind = "parameter", graph.name = "w2"},
                   %step: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"}) -> tensor<2x2xf32> {
  %h = graph.dense %x, %w1 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %r = graph.relu %h : tensor<2x4xf32>
  %d = graph.dropout %r, %step {ratio = 0.1 : f32, op_id = 4} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %s = graph.add %d, %r : tensor<2x4xf32>
  %o = graph.dense %s, %w2 : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  return %o : tensor<2x2xf32>
}
