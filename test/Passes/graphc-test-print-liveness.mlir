// RUN: graphc-opt %s --split-input-file --graphc-test-print-liveness -o /dev/null | FileCheck %s

// A hand-scheduled conv training step with momentum. One line per buffer, `name kind bytes
// first..last`, in definition order (arguments, then each op's results and workspace):
// arguments start at step 0; the parameter and its velocity persist to the last step (6); the
// reshape views add no buffer but stretch the conv output to the loss_backward (step 3) and
// loss.grad to the backward-filter conv (step 5); the momentum results share the parameter
// and velocity buffers; each conv kernel gets a workspace live at its own step only
// (1*3*3 x 3*3 floats = 324 bytes); the returned loss lives to the end, and so does the
// prediction the loss reads (through the flatten view), which the runtime reads back for
// accuracy.
// CHECK-LABEL: liveness of @conv_step: 7 steps, 10 buffers
//  CHECK-NEXT:   conv.weight parameter 144 0..6
//  CHECK-NEXT:   conv.weight.velocity optimizer_state 144 0..6
//  CHECK-NEXT:   image input 200 0..5
//  CHECK-NEXT:   labels input 16 0..3
//  CHECK-NEXT:   conv activation 288 0..6
//  CHECK-NEXT:   conv.workspace workspace 324 0..0
//  CHECK-NEXT:   loss activation 4 2..6
//  CHECK-NEXT:   loss.grad temporary 288 3..5
//  CHECK-NEXT:   conv2d_backward_filter_5 gradient 144 5..6
//  CHECK-NEXT:   conv2d_backward_filter_5.workspace workspace 324 5..5
//   CHECK-NOT:   {{[0-9]+\.\.[0-9]+}}
func.func @conv_step(%f: tensor<4x1x3x3xf32> {graph.kind = "parameter", graph.name = "conv.weight"},
                     %vel: tensor<4x1x3x3xf32> {graph.kind = "optimizer_state", graph.name = "conv.weight.velocity"},
                     %x: tensor<2x1x5x5xf32> {graph.kind = "input", graph.name = "image"},
                     %lab: tensor<2xi64> {graph.kind = "input", graph.name = "labels"})
    -> (tensor<f32>, tensor<4x1x3x3xf32>, tensor<4x1x3x3xf32>) {
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x1x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x3x3xf32> loc("conv")
  %r = graph.reshape %c : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32> loc("flatten")
  %loss = graph.loss sparse_categorical_crossentropy %r, %lab {from_logits} : (tensor<2x36xf32>, tensor<2xi64>) -> tensor<f32> loc("loss")
  %d = graph.loss_backward sparse_categorical_crossentropy %r, %lab {from_logits} : (tensor<2x36xf32>, tensor<2xi64>) -> tensor<2x36xf32> loc("loss.grad")
  %d4 = graph.reshape %d : (tensor<2x36xf32>) -> tensor<2x4x3x3xf32>
  %df = graph.conv2d_backward_filter %d4, %x {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x3x3xf32>, tensor<2x1x5x5xf32>) -> tensor<4x1x3x3xf32>
  %nf, %nv = graph.momentum_update %f, %df, %vel {lr = 0.5 : f32, momentum = 0.5 : f32} : tensor<4x1x3x3xf32>
  return %loss, %nf, %nv : tensor<f32>, tensor<4x1x3x3xf32>, tensor<4x1x3x3xf32>
}

// -----

// Adam writes the parameter, m and v in place (three results, no new buffer); an argument
// without graph.kind is an input named arg<N>; a forward activation dies at its last reader
// (the relu output is read by relu_backward at step 3); an unnamed op result is
// <mnemonic>_<step>; the gradient feeding the update is a "gradient"; the step scalar is a
// 4-byte input read by the last op. relu_backward writes in place over the loss gradient, which
// dies there, so it adds no buffer and stretches loss_backward_2 to the matmul (step 4).
// CHECK-LABEL: liveness of @adam_step: 6 steps, 9 buffers
//  CHECK-NEXT:   w parameter 36 0..5
//  CHECK-NEXT:   w.m optimizer_state 36 0..5
//  CHECK-NEXT:   w.v optimizer_state 36 0..5
//  CHECK-NEXT:   arg3 input 24 0..4
//  CHECK-NEXT:   step input 4 0..5
//  CHECK-NEXT:   relu_0 activation 24 0..3
//  CHECK-NEXT:   loss activation 4 1..5
//  CHECK-NEXT:   loss_backward_2 temporary 24 2..4
//  CHECK-NEXT:   matmul_4 gradient 36 4..5
//   CHECK-NOT:   {{[0-9]+\.\.[0-9]+}}
func.func @adam_step(%w: tensor<3x3xf32> {graph.kind = "parameter", graph.name = "w"},
                     %m: tensor<3x3xf32> {graph.kind = "optimizer_state", graph.name = "w.m"},
                     %v: tensor<3x3xf32> {graph.kind = "optimizer_state", graph.name = "w.v"},
                     %x: tensor<2x3xf32>,
                     %s: tensor<f32> {graph.kind = "input", graph.name = "step"})
    -> (tensor<f32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) {
  %r = graph.relu %x : tensor<2x3xf32>
  %loss = graph.loss mse %r, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32> loc("loss")
  %d = graph.loss_backward mse %r, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %dr = graph.relu_backward %d, %r : tensor<2x3xf32>
  %g = graph.matmul %x, %dr {transpose_lhs} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<3x3xf32>
  %nw, %nm, %nv = graph.adam_update %w, %g, %m, %v, %s {lr = 0.5 : f32, beta1 = 0.5 : f32, beta2 = 0.5 : f32, epsilon = 0.5 : f32} : tensor<3x3xf32>, tensor<f32>
  return %loss, %nw, %nm, %nv : tensor<f32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>
}
