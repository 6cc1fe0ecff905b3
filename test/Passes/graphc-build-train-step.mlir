// RUN: graphc-opt %s --split-input-file --graphc-build-train-step | FileCheck %s --check-prefix=SGD
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step='optimizer=momentum lr=0.5 momentum=0.25' | FileCheck %s --check-prefix=MOM
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step='optimizer=adam lr=0.5 beta1=0.5 beta2=0.75 epsilon=0.125' | FileCheck %s --check-prefix=ADAM
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step='loss=categorical_crossentropy' | FileCheck %s --check-prefix=CONV
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step='loss=binary_crossentropy' | FileCheck %s --check-prefix=BCE
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step='loss=mse' | FileCheck %s --check-prefix=MSE
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step='optimizer=adam' --graphc-plan-memory --graphc-verify-plan | FileCheck %s --check-prefix=PIPE
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step='loss-scaling=true loss-scale-growth-interval=7' | FileCheck %s --check-prefix=LS

// Each RUN line builds every split; each prefix checks the models it is about. The generated
// function is always @train_step, so labels include the first argument's type.

// Every built step can be planned and the plan passes the independent verifier; for these
// small models best fit reaches the lower bound (the MLP's 12 persistent Adam tensors plus
// data, labels and step alone take 15 x 256 bytes; the logits the runtime reads back for accuracy
// stay live to the end of the step).
// PIPE: attributes {graph.alignment = 256 : i64, graph.arena_bytes = 5376 : i64, graph.in_place, graph.lower_bound_bytes = 5376 : i64}
// PIPE: attributes {graph.alignment = 256 : i64, graph.arena_bytes = 4864 : i64, graph.in_place, graph.lower_bound_bytes = 4864 : i64}
// PIPE: attributes {graph.alignment = 256 : i64, graph.arena_bytes = 3072 : i64, graph.in_place, graph.lower_bound_bytes = 3072 : i64}
// PIPE: attributes {graph.alignment = 256 : i64, graph.arena_bytes = 2304 : i64, graph.in_place, graph.lower_bound_bytes = 2304 : i64}
// PIPE: attributes {graph.alignment = 256 : i64, graph.arena_bytes = 2560 : i64, graph.in_place, graph.lower_bound_bytes = 2560 : i64}
// PIPE: attributes {graph.alignment = 256 : i64, graph.arena_bytes = 2816 : i64, graph.in_place, graph.lower_bound_bytes = 2816 : i64}

// An MLP (dense relu dense softmax; fc1 stores its weight [out, in], fc2 [in, out]) with
// sparse categorical crossentropy and SGD. Parameters come first in the signature, then the
// data, then int64 labels; the softmax folds into the loss (from_logits) and disappears;
// backward ops run in reverse layer order with the transposes each weight layout needs, and
// each update follows its layer's gradients; results are tied to the parameter arguments.
// With loss scaling (for fp16), the scale's two scalars are persistent optimizer state after
// the parameters; the loss gradient is scaled up, every parameter gradient is checked for
// overflow before any update, and each update runs on its unscaled gradient only if the
// check passed; then the scale is updated in place. (The first split, the MLP.)
// LS-LABEL: func.func @train_step(
//  LS-SAME:   %arg4: tensor<f32> {graph.kind = "optimizer_state", graph.name = "loss_scale.halvings"}
//  LS-SAME:   %arg5: tensor<f32> {graph.kind = "optimizer_state", graph.name = "loss_scale.clean_steps"},
//  LS-SAME:   %arg6: tensor<f32> {graph.kind = "optimizer_state", graph.name = "loss_scale.skipped_steps"}
//       LS:   %[[DL:.*]] = graph.loss_backward
//  LS-NEXT:   %[[SDL:.*]] = graph.loss_scale %[[DL]], %arg4 : tensor<4x2xf32>
//   LS-NOT:   graph.sgd_update
//       LS:   %[[OK:.*]] = graph.all_finite %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<5x2xf32>, tensor<2xf32>, tensor<5x3xf32>, tensor<5xf32>
//       LS:   %[[U:.*]] = graph.loss_scale %{{.*}}, %arg4 {inverse} : tensor<5x2xf32>
//  LS-NEXT:   graph.sgd_update %arg2, %[[U]] if %[[OK]] {lr = {{.*}}} : tensor<5x2xf32>
//       LS:   %[[H:.*]], %[[C:.*]], %[[K:.*]] = graph.update_loss_scale %arg4, %arg5, %arg6, %[[OK]] {growth_interval = 7 : i64} : tensor<f32>
//  LS-NEXT:   return %{{.*}}, %[[H]], %[[C]], %[[K]] : {{.*}}, tensor<f32>, tensor<f32>, tensor<f32>
// SGD-LABEL: func.func @train_step(
//  SGD-SAME:   %[[W1:arg0]]: tensor<5x3xf32> {graph.init = "kaiming", graph.kind = "parameter", graph.name = "fc1.weight"},
//  SGD-SAME:   %[[B1:arg1]]: tensor<5xf32> {graph.kind = "parameter", graph.name = "fc1.bias"},
//  SGD-SAME:   %[[W2:arg2]]: tensor<5x2xf32> {graph.kind = "parameter", graph.name = "fc2.weight"},
//  SGD-SAME:   %[[B2:arg3]]: tensor<2xf32> {graph.kind = "parameter", graph.name = "fc2.bias"},
//  SGD-SAME:   %[[X:arg4]]: tensor<4x3xf32> {graph.kind = "input", graph.name = "x", graph.role = "data"},
//  SGD-SAME:   %[[L:arg5]]: tensor<4xi64> {graph.kind = "input", graph.name = "labels", graph.role = "labels"})
//  SGD-SAME:   -> (tensor<f32>,
//  SGD-SAME:   tensor<5x3xf32> {graph.name = "fc1.weight", graph.tied_to_arg = 0 : i64},
//  SGD-SAME:   tensor<5xf32> {graph.name = "fc1.bias", graph.tied_to_arg = 1 : i64},
//  SGD-SAME:   tensor<5x2xf32> {graph.name = "fc2.weight", graph.tied_to_arg = 2 : i64},
//  SGD-SAME:   tensor<2xf32> {graph.name = "fc2.bias", graph.tied_to_arg = 3 : i64}) {
//  SGD-NEXT:   %[[H:.*]] = graph.dense %[[X]], %[[W1]], %[[B1]] {transpose_weight} : (tensor<4x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<4x5xf32>
//  SGD-NEXT:   %[[R:.*]] = graph.relu %[[H]] : tensor<4x5xf32>
//  SGD-NEXT:   %[[Y:.*]] = graph.dense %[[R]], %[[W2]], %[[B2]] : (tensor<4x5xf32>, tensor<5x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
//  SGD-NEXT:   %[[LOSS:.*]] = graph.loss sparse_categorical_crossentropy %[[Y]], %[[L]] {from_logits} : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<f32>
//  SGD-NEXT:   %[[DY:.*]] = graph.loss_backward sparse_categorical_crossentropy %[[Y]], %[[L]] {from_logits} : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<4x2xf32>
//  SGD-NEXT:   %[[DR:.*]] = graph.matmul %[[DY]], %[[W2]] {transpose_rhs} : (tensor<4x2xf32>, tensor<5x2xf32>) -> tensor<4x5xf32>
//  SGD-NEXT:   %[[DW2:.*]] = graph.matmul %[[R]], %[[DY]] {transpose_lhs} : (tensor<4x5xf32>, tensor<4x2xf32>) -> tensor<5x2xf32>
//  SGD-NEXT:   %[[DB2:.*]] = graph.bias_grad %[[DY]] {axis = 1 : i64} : (tensor<4x2xf32>) -> tensor<2xf32>
//  SGD-NEXT:   %[[NW2:.*]] = graph.sgd_update %[[W2]], %[[DW2]] {lr = 0.00999999977 : f32} : tensor<5x2xf32>
//  SGD-NEXT:   %[[NB2:.*]] = graph.sgd_update %[[B2]], %[[DB2]] {lr = 0.00999999977 : f32} : tensor<2xf32>
//  SGD-NEXT:   %[[DH:.*]] = graph.relu_backward %[[DR]], %[[R]] : tensor<4x5xf32>
//  SGD-NEXT:   %[[DW1:.*]] = graph.matmul %[[DH]], %[[X]] {transpose_lhs} : (tensor<4x5xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
//  SGD-NEXT:   %[[DB1:.*]] = graph.bias_grad %[[DH]] {axis = 1 : i64} : (tensor<4x5xf32>) -> tensor<5xf32>
//  SGD-NEXT:   %[[NW1:.*]] = graph.sgd_update %[[W1]], %[[DW1]] {lr = 0.00999999977 : f32} : tensor<5x3xf32>
//  SGD-NEXT:   %[[NB1:.*]] = graph.sgd_update %[[B1]], %[[DB1]] {lr = 0.00999999977 : f32} : tensor<5xf32>
//  SGD-NEXT:   return %[[LOSS]], %[[NW1]], %[[NB1]], %[[NW2]], %[[NB2]] : tensor<f32>, tensor<5x3xf32>, tensor<5xf32>, tensor<5x2xf32>, tensor<2xf32>
//  SGD-NEXT: }
//   SGD-NOT: func.func @forward

// The same MLP with momentum: one velocity per parameter, named <param>.velocity, after the
// parameters; momentum_update returns the new parameter and velocity, tied in that order.
// MOM-LABEL: func.func @train_step(
//  MOM-SAME:   %[[W1:arg0]]: tensor<5x3xf32> {graph.init = "kaiming", graph.kind = "parameter", graph.name = "fc1.weight"},
//  MOM-SAME:   %[[B1:arg1]]: tensor<5xf32> {graph.kind = "parameter", graph.name = "fc1.bias"},
//  MOM-SAME:   %[[W2:arg2]]: tensor<5x2xf32> {graph.kind = "parameter", graph.name = "fc2.weight"},
//  MOM-SAME:   %[[B2:arg3]]: tensor<2xf32> {graph.kind = "parameter", graph.name = "fc2.bias"},
//  MOM-SAME:   %[[VW1:arg4]]: tensor<5x3xf32> {graph.kind = "optimizer_state", graph.name = "fc1.weight.velocity"},
//  MOM-SAME:   %[[VB1:arg5]]: tensor<5xf32> {graph.kind = "optimizer_state", graph.name = "fc1.bias.velocity"},
//  MOM-SAME:   %[[VW2:arg6]]: tensor<5x2xf32> {graph.kind = "optimizer_state", graph.name = "fc2.weight.velocity"},
//  MOM-SAME:   %[[VB2:arg7]]: tensor<2xf32> {graph.kind = "optimizer_state", graph.name = "fc2.bias.velocity"},
//  MOM-SAME:   %[[X:arg8]]: tensor<4x3xf32> {graph.kind = "input", graph.name = "x", graph.role = "data"},
//  MOM-SAME:   %[[L:arg9]]: tensor<4xi64> {graph.kind = "input", graph.name = "labels", graph.role = "labels"})
//  MOM-SAME:   -> (tensor<f32>,
//  MOM-SAME:   tensor<5x3xf32> {graph.name = "fc1.weight", graph.tied_to_arg = 0 : i64},
//  MOM-SAME:   tensor<5xf32> {graph.name = "fc1.bias", graph.tied_to_arg = 1 : i64},
//  MOM-SAME:   tensor<5x2xf32> {graph.name = "fc2.weight", graph.tied_to_arg = 2 : i64},
//  MOM-SAME:   tensor<2xf32> {graph.name = "fc2.bias", graph.tied_to_arg = 3 : i64},
//  MOM-SAME:   tensor<5x3xf32> {graph.name = "fc1.weight.velocity", graph.tied_to_arg = 4 : i64},
//  MOM-SAME:   tensor<5xf32> {graph.name = "fc1.bias.velocity", graph.tied_to_arg = 5 : i64},
//  MOM-SAME:   tensor<5x2xf32> {graph.name = "fc2.weight.velocity", graph.tied_to_arg = 6 : i64},
//  MOM-SAME:   tensor<2xf32> {graph.name = "fc2.bias.velocity", graph.tied_to_arg = 7 : i64}) {
//       MOM:   %[[LOSS:.*]] = graph.loss sparse_categorical_crossentropy %{{.*}}, %[[L]] {from_logits}
//       MOM:   %[[DW2:.*]] = graph.matmul %{{.*}} {transpose_lhs} : (tensor<4x5xf32>, tensor<4x2xf32>) -> tensor<5x2xf32>
//  MOM-NEXT:   %[[DB2:.*]] = graph.bias_grad
//  MOM-NEXT:   %[[NW2:[a-z_0-9]+]], %[[VW2N:[a-z_0-9]+]] = graph.momentum_update %[[W2]], %[[DW2]], %[[VW2]] {lr = 5.000000e-01 : f32, momentum = 2.500000e-01 : f32} : tensor<5x2xf32>
//  MOM-NEXT:   %[[NB2:[a-z_0-9]+]], %[[VB2N:[a-z_0-9]+]] = graph.momentum_update %[[B2]], %[[DB2]], %[[VB2]] {lr = 5.000000e-01 : f32, momentum = 2.500000e-01 : f32} : tensor<2xf32>
//  MOM-NEXT:   graph.relu_backward
//  MOM-NEXT:   %[[DW1:.*]] = graph.matmul %{{.*}}, %[[X]] {transpose_lhs} : (tensor<4x5xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
//  MOM-NEXT:   %[[DB1:.*]] = graph.bias_grad
//  MOM-NEXT:   %[[NW1:[a-z_0-9]+]], %[[VW1N:[a-z_0-9]+]] = graph.momentum_update %[[W1]], %[[DW1]], %[[VW1]] {lr = 5.000000e-01 : f32, momentum = 2.500000e-01 : f32} : tensor<5x3xf32>
//  MOM-NEXT:   %[[NB1:[a-z_0-9]+]], %[[VB1N:[a-z_0-9]+]] = graph.momentum_update %[[B1]], %[[DB1]], %[[VB1]] {lr = 5.000000e-01 : f32, momentum = 2.500000e-01 : f32} : tensor<5xf32>
//  MOM-NEXT:   return %[[LOSS]], %[[NW1]], %[[NB1]], %[[NW2]], %[[NB2]], %[[VW1N]], %[[VB1N]], %[[VW2N]], %[[VB2N]] :

// The same MLP with Adam: all first moments (<param>.m), then all second moments
// (<param>.v), after the parameters; an f32 `step` input comes last; adam_update returns
// parameter, m and v, returned in the argument order.
// ADAM-LABEL: func.func @train_step(
//  ADAM-SAME:   %[[W1:arg0]]: tensor<5x3xf32> {graph.init = "kaiming", graph.kind = "parameter", graph.name = "fc1.weight"},
//  ADAM-SAME:   %[[B1:arg1]]: tensor<5xf32> {graph.kind = "parameter", graph.name = "fc1.bias"},
//  ADAM-SAME:   %[[W2:arg2]]: tensor<5x2xf32> {graph.kind = "parameter", graph.name = "fc2.weight"},
//  ADAM-SAME:   %[[B2:arg3]]: tensor<2xf32> {graph.kind = "parameter", graph.name = "fc2.bias"},
//  ADAM-SAME:   %[[MW1:arg4]]: tensor<5x3xf32> {graph.kind = "optimizer_state", graph.name = "fc1.weight.m"},
//  ADAM-SAME:   %[[MB1:arg5]]: tensor<5xf32> {graph.kind = "optimizer_state", graph.name = "fc1.bias.m"},
//  ADAM-SAME:   %[[MW2:arg6]]: tensor<5x2xf32> {graph.kind = "optimizer_state", graph.name = "fc2.weight.m"},
//  ADAM-SAME:   %[[MB2:arg7]]: tensor<2xf32> {graph.kind = "optimizer_state", graph.name = "fc2.bias.m"},
//  ADAM-SAME:   %[[VW1:arg8]]: tensor<5x3xf32> {graph.kind = "optimizer_state", graph.name = "fc1.weight.v"},
//  ADAM-SAME:   %[[VB1:arg9]]: tensor<5xf32> {graph.kind = "optimizer_state", graph.name = "fc1.bias.v"},
//  ADAM-SAME:   %[[VW2:arg10]]: tensor<5x2xf32> {graph.kind = "optimizer_state", graph.name = "fc2.weight.v"},
//  ADAM-SAME:   %[[VB2:arg11]]: tensor<2xf32> {graph.kind = "optimizer_state", graph.name = "fc2.bias.v"},
//  ADAM-SAME:   %[[X:arg12]]: tensor<4x3xf32> {graph.kind = "input", graph.name = "x", graph.role = "data"},
//  ADAM-SAME:   %[[L:arg13]]: tensor<4xi64> {graph.kind = "input", graph.name = "labels", graph.role = "labels"},
//  ADAM-SAME:   %[[S:arg14]]: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"})
//  ADAM-SAME:   -> (tensor<f32>,
//  ADAM-SAME:   tensor<5x3xf32> {graph.name = "fc1.weight", graph.tied_to_arg = 0 : i64},
//  ADAM-SAME:   tensor<5xf32> {graph.name = "fc1.bias", graph.tied_to_arg = 1 : i64},
//  ADAM-SAME:   tensor<5x2xf32> {graph.name = "fc2.weight", graph.tied_to_arg = 2 : i64},
//  ADAM-SAME:   tensor<2xf32> {graph.name = "fc2.bias", graph.tied_to_arg = 3 : i64},
//  ADAM-SAME:   tensor<5x3xf32> {graph.name = "fc1.weight.m", graph.tied_to_arg = 4 : i64},
//  ADAM-SAME:   tensor<5xf32> {graph.name = "fc1.bias.m", graph.tied_to_arg = 5 : i64},
//  ADAM-SAME:   tensor<5x2xf32> {graph.name = "fc2.weight.m", graph.tied_to_arg = 6 : i64},
//  ADAM-SAME:   tensor<2xf32> {graph.name = "fc2.bias.m", graph.tied_to_arg = 7 : i64},
//  ADAM-SAME:   tensor<5x3xf32> {graph.name = "fc1.weight.v", graph.tied_to_arg = 8 : i64},
//  ADAM-SAME:   tensor<5xf32> {graph.name = "fc1.bias.v", graph.tied_to_arg = 9 : i64},
//  ADAM-SAME:   tensor<5x2xf32> {graph.name = "fc2.weight.v", graph.tied_to_arg = 10 : i64},
//  ADAM-SAME:   tensor<2xf32> {graph.name = "fc2.bias.v", graph.tied_to_arg = 11 : i64}) {
//       ADAM:   %[[LOSS:.*]] = graph.loss sparse_categorical_crossentropy %{{.*}}, %[[L]] {from_logits}
//       ADAM:   %[[DW2:.*]] = graph.matmul %{{.*}} {transpose_lhs} : (tensor<4x5xf32>, tensor<4x2xf32>) -> tensor<5x2xf32>
//  ADAM-NEXT:   %[[DB2:.*]] = graph.bias_grad
//  ADAM-NEXT:   %[[NW2:[a-z_0-9]+]], %[[MW2N:[a-z_0-9]+]], %[[VW2N:[a-z_0-9]+]] = graph.adam_update %[[W2]], %[[DW2]], %[[MW2]], %[[VW2]], %[[S]] {beta1 = 5.000000e-01 : f32, beta2 = 7.500000e-01 : f32, epsilon = 1.250000e-01 : f32, lr = 5.000000e-01 : f32} : tensor<5x2xf32>, tensor<f32>
//  ADAM-NEXT:   %[[NB2:[a-z_0-9]+]], %[[MB2N:[a-z_0-9]+]], %[[VB2N:[a-z_0-9]+]] = graph.adam_update %[[B2]], %[[DB2]], %[[MB2]], %[[VB2]], %[[S]] {{.*}} : tensor<2xf32>, tensor<f32>
//  ADAM-NEXT:   graph.relu_backward
//  ADAM-NEXT:   %[[DW1:.*]] = graph.matmul %{{.*}}, %[[X]] {transpose_lhs} : (tensor<4x5xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
//  ADAM-NEXT:   %[[DB1:.*]] = graph.bias_grad
//  ADAM-NEXT:   %[[NW1:[a-z_0-9]+]], %[[MW1N:[a-z_0-9]+]], %[[VW1N:[a-z_0-9]+]] = graph.adam_update %[[W1]], %[[DW1]], %[[MW1]], %[[VW1]], %[[S]] {{.*}} : tensor<5x3xf32>, tensor<f32>
//  ADAM-NEXT:   %[[NB1:[a-z_0-9]+]], %[[MB1N:[a-z_0-9]+]], %[[VB1N:[a-z_0-9]+]] = graph.adam_update %[[B1]], %[[DB1]], %[[MB1]], %[[VB1]], %[[S]] {{.*}} : tensor<5xf32>, tensor<f32>
//  ADAM-NEXT:   return %[[LOSS]], %[[NW1]], %[[NB1]], %[[NW2]], %[[NB2]], %[[MW1N]], %[[MB1N]], %[[MW2N]], %[[MB2N]], %[[VW1N]], %[[VB1N]], %[[VW2N]], %[[VB2N]] :

// With mse the softmax head stays: its backward is emitted and the loss takes probabilities.
// MSE-LABEL: func.func @train_step(%arg0: tensor<5x3xf32>
//  MSE-SAME:   %[[L:arg5]]: tensor<4x2xf32> {graph.kind = "input", graph.name = "labels", graph.role = "labels"})
//       MSE:   %[[Y:.*]] = graph.dense %{{.*}} : (tensor<4x5xf32>, tensor<5x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
//  MSE-NEXT:   %[[P:.*]] = graph.softmax %[[Y]] {axis = 1 : i64} : tensor<4x2xf32>
//  MSE-NEXT:   graph.loss mse %[[P]], %[[L]] : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<f32>
//  MSE-NEXT:   %[[DP:.*]] = graph.loss_backward mse %[[P]], %[[L]] : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
//  MSE-NEXT:   %[[DY:.*]] = graph.softmax_backward %[[DP]], %[[P]] {axis = 1 : i64} : tensor<4x2xf32>
//  MSE-NEXT:   graph.matmul %[[DY]], %arg2 {transpose_rhs}
func.func @forward(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<5x3xf32> {graph.kind = "parameter", graph.name = "fc1.weight", graph.init = "kaiming"},
                   %b1: tensor<5xf32> {graph.kind = "parameter", graph.name = "fc1.bias"},
                   %w2: tensor<5x2xf32> {graph.kind = "parameter", graph.name = "fc2.weight"},
                   %b2: tensor<2xf32> {graph.kind = "parameter", graph.name = "fc2.bias"}) -> tensor<4x2xf32> {
  %h = graph.dense %x, %w1, %b1 {transpose_weight} : (tensor<4x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %r = graph.relu %h : tensor<4x5xf32>
  %y = graph.dense %r, %w2, %b2 : (tensor<4x5xf32>, tensor<5x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %p = graph.softmax %y {axis = 1} : tensor<4x2xf32>
  return %p : tensor<4x2xf32>
}

// -----

// conv+relu+maxpool+flatten+dense+softmax with categorical crossentropy: f32 one-hot labels;
// the gradient flows back through a reshape to the pooled shape, max_pool2d_backward (which
// reads the pool input), relu_backward, then conv2d_backward_filter and the conv bias grad; no
// conv2d_backward_data is built because the image needs no gradient.
// CONV-LABEL: func.func @train_step(%arg0: tensor<2x1x3x3xf32>
//  CONV-SAME:   {graph.kind = "parameter", graph.name = "conv.weight"},
//  CONV-SAME:   %[[CB:arg1]]: tensor<2xf32> {graph.kind = "parameter", graph.name = "conv.bias"},
//  CONV-SAME:   %[[W:arg2]]: tensor<3x8xf32> {graph.kind = "parameter", graph.name = "fc.weight"},
//  CONV-SAME:   %[[X:arg3]]: tensor<2x1x6x6xf32> {graph.kind = "input", graph.name = "image", graph.role = "data"},
//  CONV-SAME:   %[[L:arg4]]: tensor<2x3xf32> {graph.kind = "input", graph.name = "labels", graph.role = "labels"})
//  CONV-SAME:   -> (tensor<f32>, tensor<2x1x3x3xf32> {graph.name = "conv.weight", graph.tied_to_arg = 0 : i64}, tensor<2xf32> {graph.name = "conv.bias", graph.tied_to_arg = 1 : i64}, tensor<3x8xf32> {graph.name = "fc.weight", graph.tied_to_arg = 2 : i64}) {
//  CONV-NEXT:   %[[C:.*]] = graph.conv2d %[[X]], %arg0, %[[CB]] {dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x1x6x6xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<2x2x4x4xf32>
//  CONV-NEXT:   %[[R:.*]] = graph.relu %[[C]] : tensor<2x2x4x4xf32>
//  CONV-NEXT:   %[[P:.*]] = graph.max_pool2d %[[R]] {kernel = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x2x4x4xf32>) -> tensor<2x2x2x2xf32>
//  CONV-NEXT:   %[[FL:.*]] = graph.reshape %[[P]] : (tensor<2x2x2x2xf32>) -> tensor<2x8xf32>
//  CONV-NEXT:   %[[Y:.*]] = graph.dense %[[FL]], %[[W]] {transpose_weight} : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32>
//  CONV-NEXT:   %[[LOSS:.*]] = graph.loss categorical_crossentropy %[[Y]], %[[L]] {from_logits} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
//  CONV-NEXT:   %[[DY:.*]] = graph.loss_backward categorical_crossentropy %[[Y]], %[[L]] {from_logits} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
//  CONV-NEXT:   %[[DFL:.*]] = graph.matmul %[[DY]], %[[W]] : (tensor<2x3xf32>, tensor<3x8xf32>) -> tensor<2x8xf32>
//  CONV-NEXT:   %[[DW:.*]] = graph.matmul %[[DY]], %[[FL]] {transpose_lhs} : (tensor<2x3xf32>, tensor<2x8xf32>) -> tensor<3x8xf32>
//  CONV-NEXT:   %[[NW:.*]] = graph.sgd_update %[[W]], %[[DW]] {lr = 0.00999999977 : f32} : tensor<3x8xf32>
//  CONV-NEXT:   %[[DP:.*]] = graph.reshape %[[DFL]] : (tensor<2x8xf32>) -> tensor<2x2x2x2xf32>
//  CONV-NEXT:   %[[DR:.*]] = graph.max_pool2d_backward %[[DP]], %[[R]] {kernel = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x2x2x2xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
//  CONV-NEXT:   %[[DC:.*]] = graph.relu_backward %[[DR]], %[[R]] : tensor<2x2x4x4xf32>
//  CONV-NEXT:   %[[DF:.*]] = graph.conv2d_backward_filter %[[DC]], %[[X]] {dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x2x4x4xf32>, tensor<2x1x6x6xf32>) -> tensor<2x1x3x3xf32>
//  CONV-NEXT:   %[[DCB:.*]] = graph.bias_grad %[[DC]] {axis = 1 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2xf32>
//  CONV-NEXT:   %[[NF:.*]] = graph.sgd_update %arg0, %[[DF]] {lr = 0.00999999977 : f32} : tensor<2x1x3x3xf32>
//  CONV-NEXT:   %[[NCB:.*]] = graph.sgd_update %[[CB]], %[[DCB]] {lr = 0.00999999977 : f32} : tensor<2xf32>
//  CONV-NEXT:   return %[[LOSS]], %[[NF]], %[[NCB]], %[[NW]] : tensor<f32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<3x8xf32>
func.func @forward(%x: tensor<2x1x6x6xf32> {graph.kind = "input", graph.name = "image"},
                   %f: tensor<2x1x3x3xf32> {graph.kind = "parameter", graph.name = "conv.weight"},
                   %cb: tensor<2xf32> {graph.kind = "parameter", graph.name = "conv.bias"},
                   %w: tensor<3x8xf32> {graph.kind = "parameter", graph.name = "fc.weight"}) -> tensor<2x3xf32> {
  %c = graph.conv2d %x, %f, %cb {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x1x6x6xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<2x2x4x4xf32>
  %r = graph.relu %c : tensor<2x2x4x4xf32>
  %p = graph.max_pool2d %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x2x4x4xf32>) -> tensor<2x2x2x2xf32>
  %flat = graph.reshape %p : (tensor<2x2x2x2xf32>) -> tensor<2x8xf32>
  %y = graph.dense %flat, %w {transpose_weight} : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32>
  %s = graph.softmax %y {axis = 1} : tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// -----

// Binary crossentropy with a sigmoid head: f32 labels shaped like the [N, 1] prediction, the
// sigmoid folds into the loss, and no sigmoid_backward is emitted.
// BCE-LABEL: func.func @train_step(%arg0: tensor<1x3xf32>
//  BCE-SAME:   {graph.kind = "parameter", graph.name = "out.weight"},
//  BCE-SAME:   %[[B:arg1]]: tensor<1xf32> {graph.kind = "parameter", graph.name = "out.bias"},
//  BCE-SAME:   %[[X:arg2]]: tensor<4x3xf32> {graph.kind = "input", graph.name = "x", graph.role = "data"},
//  BCE-SAME:   %[[L:arg3]]: tensor<4x1xf32> {graph.kind = "input", graph.name = "labels", graph.role = "labels"})
//  BCE-SAME:   -> (tensor<f32>, tensor<1x3xf32> {graph.name = "out.weight", graph.tied_to_arg = 0 : i64}, tensor<1xf32> {graph.name = "out.bias", graph.tied_to_arg = 1 : i64}) {
//  BCE-NEXT:   %[[Y:.*]] = graph.dense %[[X]], %arg0, %[[B]] {transpose_weight} : (tensor<4x3xf32>, tensor<1x3xf32>, tensor<1xf32>) -> tensor<4x1xf32>
//  BCE-NEXT:   %[[LOSS:.*]] = graph.loss binary_crossentropy %[[Y]], %[[L]] {from_logits} : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<f32>
//  BCE-NEXT:   %[[DY:.*]] = graph.loss_backward binary_crossentropy %[[Y]], %[[L]] {from_logits} : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
//  BCE-NEXT:   %[[DW:.*]] = graph.matmul %[[DY]], %[[X]] {transpose_lhs} : (tensor<4x1xf32>, tensor<4x3xf32>) -> tensor<1x3xf32>
//  BCE-NEXT:   %[[DB:.*]] = graph.bias_grad %[[DY]] {axis = 1 : i64} : (tensor<4x1xf32>) -> tensor<1xf32>
//  BCE-NEXT:   %[[NW:.*]] = graph.sgd_update %arg0, %[[DW]] {lr = 0.00999999977 : f32} : tensor<1x3xf32>
//  BCE-NEXT:   %[[NB:.*]] = graph.sgd_update %[[B]], %[[DB]] {lr = 0.00999999977 : f32} : tensor<1xf32>
//  BCE-NEXT:   return %[[LOSS]], %[[NW]], %[[NB]] : tensor<f32>, tensor<1x3xf32>, tensor<1xf32>
func.func @forward(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<1x3xf32> {graph.kind = "parameter", graph.name = "out.weight"},
                   %b: tensor<1xf32> {graph.kind = "parameter", graph.name = "out.bias"}) -> tensor<4x1xf32> {
  %y = graph.dense %x, %w, %b {transpose_weight} : (tensor<4x3xf32>, tensor<1x3xf32>, tensor<1xf32>) -> tensor<4x1xf32>
  %p = graph.sigmoid %y : tensor<4x1xf32>
  return %p : tensor<4x1xf32>
}

// -----

// mse on a dense+tanh regression head with untagged/unnamed arguments: an argument without
// graph.kind is the data input, names default to arg<N> of the forward function, labels are
// f32 shaped like the prediction, and the loss is not from_logits.
// MSE-LABEL: func.func @train_step(%arg0: tensor<3x2xf32>
//  MSE-SAME:   {graph.kind = "parameter", graph.name = "arg0"},
//  MSE-SAME:   %[[X:arg1]]: tensor<4x3xf32> {graph.kind = "input", graph.name = "arg1", graph.role = "data"},
//  MSE-SAME:   %[[L:arg2]]: tensor<4x2xf32> {graph.kind = "input", graph.name = "labels", graph.role = "labels"})
//  MSE-SAME:   -> (tensor<f32>, tensor<3x2xf32> {graph.name = "arg0", graph.tied_to_arg = 0 : i64}) {
//  MSE-NEXT:   %[[Y:.*]] = graph.dense %[[X]], %arg0 : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
//  MSE-NEXT:   %[[T:.*]] = graph.tanh %[[Y]] : tensor<4x2xf32>
//  MSE-NEXT:   %[[LOSS:.*]] = graph.loss mse %[[T]], %[[L]] : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<f32>
//  MSE-NEXT:   %[[DT:.*]] = graph.loss_backward mse %[[T]], %[[L]] : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
//  MSE-NEXT:   %[[DY:.*]] = graph.tanh_backward %[[DT]], %[[T]] : tensor<4x2xf32>
//  MSE-NEXT:   %[[DW:.*]] = graph.matmul %[[X]], %[[DY]] {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
//  MSE-NEXT:   %[[NW:.*]] = graph.sgd_update %arg0, %[[DW]] {lr = 0.00999999977 : f32} : tensor<3x2xf32>
//  MSE-NEXT:   return %[[LOSS]], %[[NW]] : tensor<f32>, tensor<3x2xf32>
func.func @forward(%w: tensor<3x2xf32> {graph.kind = "parameter"}, %x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %t = graph.tanh %y : tensor<4x2xf32>
  return %t : tensor<4x2xf32>
}

// -----

// A residual connection: the activation read by two ops gets the sum of both gradients, and
// the gradient of the add flows unchanged to both of its operands.
// MSE-LABEL: func.func @train_step
// MSE: %[[Y:.*]] = graph.dense
// MSE: %[[R:.*]] = graph.relu %[[Y]]
// MSE: %[[S:.*]] = graph.add %[[R]], %[[Y]]
// MSE: %[[DS:.*]] = graph.loss_backward mse
// MSE: %[[DR:.*]] = graph.relu_backward %[[DS]], %[[R]]
// MSE: %[[DY:.*]] = graph.add %[[DS]], %[[DR]]
// MSE: graph.matmul %{{.*}}, %[[DY]] {transpose_lhs}
// MSE: graph.sgd_update
func.func @residual(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                    %w: tensor<3x3xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x3xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("fc")
  %r = graph.relu %y : tensor<4x3xf32> loc("relu")
  %s = graph.add %r, %y : tensor<4x3xf32> loc("residual")
  return %s : tensor<4x3xf32>
}

// -----

// Weight tying: a parameter read by two layers is updated once, after both gradients are
// summed.
// MSE-LABEL: func.func @train_step
// MSE: graph.loss_backward mse
// MSE: %[[DW2:.*]] = graph.matmul {{.*}}transpose_lhs
// MSE: %[[DW1:.*]] = graph.matmul {{.*}}transpose_lhs
// MSE: %[[SUM:.*]] = graph.add %[[DW2]], %[[DW1]]
// MSE: graph.sgd_update %{{.*}}, %[[SUM]]
// MSE-NOT: graph.sgd_update
// MSE: return
func.func @tied(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                %w: tensor<3x3xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x3xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("fc1")
  %z = graph.dense %y, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("fc2")
  return %z : tensor<4x3xf32>
}

// -----

// Two data inputs (features and a 0/1 mask over them, as a padded batch comes with its
// attention mask): each becomes a data argument in the forward function's order, before the
// labels; the mask gets no gradient.
// MSE-LABEL: func.func @train_step(%arg0: tensor<3x2xf32>
//  MSE-SAME:   %[[X:arg1]]: tensor<4x3xf32> {graph.kind = "input", graph.name = "x", graph.role = "data"},
//  MSE-SAME:   %[[M:arg2]]: tensor<4x3xf32> {graph.kind = "input", graph.name = "mask", graph.role = "data"},
//  MSE-SAME:   %[[L:arg3]]: tensor<4x2xf32> {graph.kind = "input", graph.name = "labels", graph.role = "labels"})
//  MSE-NEXT:   %[[XM:.*]] = graph.mul %[[X]], %[[M]] : tensor<4x3xf32>
//  MSE-NEXT:   %[[Y:.*]] = graph.dense %[[XM]], %arg0
//       MSE:   graph.matmul %[[XM]], %{{.*}} {transpose_lhs}
//   MSE-NOT:   graph.mul
//       MSE:   graph.sgd_update
func.func @masked_features(%w: tensor<3x2xf32> {graph.kind = "parameter"},
                           %x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                           %mask: tensor<4x3xf32> {graph.kind = "input", graph.name = "mask"}) -> tensor<4x2xf32> {
  %xm = graph.mul %x, %mask : tensor<4x3xf32>
  %y = graph.dense %xm, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
