// RUN: graphc-opt %s --split-input-file | graphc-opt --split-input-file | FileCheck %s
// RUN: graphc-opt %s --split-input-file --mlir-print-op-generic | graphc-opt --split-input-file | FileCheck %s

// Round trip of every op of the graph dialect: custom form, and generic form back to custom.

// Dense without a bias, weight in [in, out] layout, and no unit attribute.
// CHECK-LABEL: func.func @dense_no_bias
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>, %[[W:.*]]: tensor<3x2xf32>)
//  CHECK-NEXT:   %[[Y:.*]] = graph.dense %[[X]], %[[W]] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<4x2xf32>
func.func @dense_no_bias(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Dense with a bias and the transpose_weight unit attribute ([out, in] weight).
// CHECK-LABEL: func.func @dense_bias_transposed
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>, %[[W:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2xf32>)
//  CHECK-NEXT:   graph.dense %[[X]], %[[W]], %[[B]] {transpose_weight} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32>
func.func @dense_bias_transposed(%x: tensor<4x3xf32>, %w: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<4x2xf32> {
  %y = graph.dense %x, %w, %b {transpose_weight} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Matmul with no transpose, transpose_lhs, transpose_rhs and both unit attributes.
// CHECK-LABEL: func.func @matmul
//  CHECK-SAME:   (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<3x2xf32>, %[[G:.*]]: tensor<4x2xf32>, %[[C:.*]]: tensor<2x4xf32>)
//  CHECK-NEXT:   graph.matmul %[[A]], %[[B]] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
//  CHECK-NEXT:   graph.matmul %[[A]], %[[G]] {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
//  CHECK-NEXT:   graph.matmul %[[G]], %[[B]] {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
//  CHECK-NEXT:   graph.matmul %[[A]], %[[C]] {transpose_lhs, transpose_rhs} : (tensor<4x3xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
func.func @matmul(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>, %g: tensor<4x2xf32>, %c: tensor<2x4xf32>) {
  %0 = graph.matmul %a, %b : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = graph.matmul %a, %g {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %2 = graph.matmul %g, %b {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %3 = graph.matmul %a, %c {transpose_lhs, transpose_rhs} : (tensor<4x3xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
  return
}

// -----

// Bias gradient of a dense layer ([N, Out]) and of a conv (NCHW), both along axis 1.
// CHECK-LABEL: func.func @bias_grad
//  CHECK-SAME:   (%[[G:.*]]: tensor<4x2xf32>, %[[C:.*]]: tensor<2x5x3x3xf32>)
//  CHECK-NEXT:   graph.bias_grad %[[G]] {axis = 1 : i64} : (tensor<4x2xf32>) -> tensor<2xf32>
//  CHECK-NEXT:   graph.bias_grad %[[C]] {axis = 1 : i64} : (tensor<2x5x3x3xf32>) -> tensor<5xf32>
func.func @bias_grad(%g: tensor<4x2xf32>, %c: tensor<2x5x3x3xf32>) {
  %0 = graph.bias_grad %g {axis = 1} : (tensor<4x2xf32>) -> tensor<2xf32>
  %1 = graph.bias_grad %c {axis = 1 : i64} : (tensor<2x5x3x3xf32>) -> tensor<5xf32>
  return
}

// -----

// Conv2d with a bias, strides 2 and padding 1 ((8 + 2 - 3) / 2 + 1 = 4), and without a bias
// with dilation 2 ((8 - 5) / 1 + 1 = 4); attributes print sorted.
// CHECK-LABEL: func.func @conv2d
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x3x8x8xf32>, %[[F:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>)
//  CHECK-NEXT:   graph.conv2d %[[X]], %[[F]], %[[B]] {dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
//  CHECK-NEXT:   graph.conv2d %[[X]], %[[F]] {dilations = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
func.func @conv2d(%x: tensor<2x3x8x8xf32>, %f: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) {
  %0 = graph.conv2d %x, %f, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  %1 = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
  return
}

// -----

// The two conv2d backward ops, with the window attributes of the strided conv above.
// CHECK-LABEL: func.func @conv2d_backward
//  CHECK-SAME:   (%[[DY:.*]]: tensor<2x4x4x4xf32>, %[[F:.*]]: tensor<4x3x3x3xf32>, %[[X:.*]]: tensor<2x3x8x8xf32>)
//  CHECK-NEXT:   graph.conv2d_backward_data %[[DY]], %[[F]] {dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
//  CHECK-NEXT:   graph.conv2d_backward_filter %[[DY]], %[[X]] {dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32>) -> tensor<4x3x3x3xf32>
func.func @conv2d_backward(%dy: tensor<2x4x4x4xf32>, %f: tensor<4x3x3x3xf32>, %x: tensor<2x3x8x8xf32>) {
  %0 = graph.conv2d_backward_data %dy, %f {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  %1 = graph.conv2d_backward_filter %dy, %x {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

// Max pooling 2x2 / 2 and its backward, which returns the input's shape.
// CHECK-LABEL: func.func @max_pool2d
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x4x6x6xf32>, %[[G:.*]]: tensor<2x4x3x3xf32>)
//  CHECK-NEXT:   graph.max_pool2d %[[X]] {kernel = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32>
//  CHECK-NEXT:   graph.max_pool2d_backward %[[G]], %[[X]] {kernel = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
func.func @max_pool2d(%x: tensor<2x4x6x6xf32>, %g: tensor<2x4x3x3xf32>) {
  %0 = graph.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32>
  %1 = graph.max_pool2d_backward %g, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  return
}

// -----

// Reshape (flatten) keeps its functional type.
// CHECK-LABEL: func.func @reshape
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x4x3x3xf32>)
//  CHECK-NEXT:   %[[Y:.*]] = graph.reshape %[[X]] : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32>
//  CHECK-NEXT:   return %[[Y]]
func.func @reshape(%x: tensor<2x4x3x3xf32>) -> tensor<2x36xf32> {
  %0 = graph.reshape %x : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32>
  return %0 : tensor<2x36xf32>
}

// -----

// The activations and their backward ops, which take the forward output and print one type.
// CHECK-LABEL: func.func @activations
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>, %[[G:.*]]: tensor<4x3xf32>)
//  CHECK-NEXT:   %[[R:.*]] = graph.relu %[[X]] : tensor<4x3xf32>
//  CHECK-NEXT:   %[[S:.*]] = graph.sigmoid %[[X]] : tensor<4x3xf32>
//  CHECK-NEXT:   %[[T:.*]] = graph.tanh %[[X]] : tensor<4x3xf32>
//  CHECK-NEXT:   %[[SM:.*]] = graph.softmax %[[X]] {axis = 1 : i64} : tensor<4x3xf32>
//  CHECK-NEXT:   graph.relu_backward %[[G]], %[[R]] : tensor<4x3xf32>
//  CHECK-NEXT:   graph.sigmoid_backward %[[G]], %[[S]] : tensor<4x3xf32>
//  CHECK-NEXT:   graph.tanh_backward %[[G]], %[[T]] : tensor<4x3xf32>
//  CHECK-NEXT:   graph.softmax_backward %[[G]], %[[SM]] {axis = 1 : i64} : tensor<4x3xf32>
func.func @activations(%x: tensor<4x3xf32>, %g: tensor<4x3xf32>) {
  %r = graph.relu %x : tensor<4x3xf32>
  %s = graph.sigmoid %x : tensor<4x3xf32>
  %t = graph.tanh %x : tensor<4x3xf32>
  %sm = graph.softmax %x {axis = 1} : tensor<4x3xf32>
  %0 = graph.relu_backward %g, %r : tensor<4x3xf32>
  %1 = graph.sigmoid_backward %g, %s : tensor<4x3xf32>
  %2 = graph.tanh_backward %g, %t : tensor<4x3xf32>
  %3 = graph.softmax_backward %g, %sm {axis = 1} : tensor<4x3xf32>
  return
}

// -----

// graph.loss with each LossKind, with and without from_logits: int64 [N] labels for the
// sparse loss, f32 labels shaped like the prediction otherwise.
// CHECK-LABEL: func.func @loss
//  CHECK-SAME:   (%[[P:.*]]: tensor<4x3xf32>, %[[I:.*]]: tensor<4xi64>, %[[L:.*]]: tensor<4x3xf32>)
//  CHECK-NEXT:   graph.loss sparse_categorical_crossentropy %[[P]], %[[I]] {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
//  CHECK-NEXT:   graph.loss sparse_categorical_crossentropy %[[P]], %[[I]] : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
//  CHECK-NEXT:   graph.loss categorical_crossentropy %[[P]], %[[L]] {from_logits} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
//  CHECK-NEXT:   graph.loss categorical_crossentropy %[[P]], %[[L]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
//  CHECK-NEXT:   graph.loss binary_crossentropy %[[P]], %[[L]] {from_logits} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
//  CHECK-NEXT:   graph.loss binary_crossentropy %[[P]], %[[L]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
//  CHECK-NEXT:   graph.loss mse %[[P]], %[[L]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
func.func @loss(%p: tensor<4x3xf32>, %i: tensor<4xi64>, %l: tensor<4x3xf32>) {
  %0 = graph.loss sparse_categorical_crossentropy %p, %i {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  %1 = graph.loss sparse_categorical_crossentropy %p, %i : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  %2 = graph.loss categorical_crossentropy %p, %l {from_logits} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %3 = graph.loss categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %4 = graph.loss binary_crossentropy %p, %l {from_logits} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %5 = graph.loss binary_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %6 = graph.loss mse %p, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return
}

// -----

// An ignored label: ignore_index, and the labels that count (a micro-batch's step labels)
// after `count`.
// CHECK-LABEL: func.func @loss_ignore_index
//  CHECK-SAME:   (%[[P:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<2xi64>, %[[A:.*]]: tensor<4xi64>)
//  CHECK-NEXT:   graph.loss sparse_categorical_crossentropy %[[P]], %[[I]] {from_logits, ignore_index = -100 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
//  CHECK-NEXT:   graph.loss sparse_categorical_crossentropy %[[P]], %[[I]] count %[[A]] {ignore_index = 0 : i64} : (tensor<2x3xf32>, tensor<2xi64>, tensor<4xi64>) -> tensor<f32>
//  CHECK-NEXT:   graph.loss_backward sparse_categorical_crossentropy %[[P]], %[[I]] count %[[A]] {from_logits, ignore_index = -1 : i64} : (tensor<2x3xf32>, tensor<2xi64>, tensor<4xi64>) -> tensor<2x3xf32>
func.func @loss_ignore_index(%p: tensor<2x3xf32>, %i: tensor<2xi64>, %a: tensor<4xi64>) {
  %0 = graph.loss sparse_categorical_crossentropy %p, %i {from_logits, ignore_index = -100 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  %1 = graph.loss sparse_categorical_crossentropy %p, %i count %a {ignore_index = 0 : i64} : (tensor<2x3xf32>, tensor<2xi64>, tensor<4xi64>) -> tensor<f32>
  %2 = graph.loss_backward sparse_categorical_crossentropy %p, %i count %a {from_logits, ignore_index = -1 : i64} : (tensor<2x3xf32>, tensor<2xi64>, tensor<4xi64>) -> tensor<2x3xf32>
  return
}

// -----

// Loss weights (one per row: a Keras output's mask), and the whole step's weights after
// `count`.
// CHECK-LABEL: func.func @loss_weights
//  CHECK-SAME:   (%[[P:.*]]: tensor<2x5x3xf32>, %[[L:.*]]: tensor<2x5x3xf32>, %[[W:.*]]: tensor<2x5xf32>, %[[A:.*]]: tensor<4x5xf32>)
//  CHECK-NEXT:   graph.loss mse %[[P]], %[[L]] weights %[[W]] : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x5xf32>) -> tensor<f32>
//  CHECK-NEXT:   graph.loss_backward binary_crossentropy %[[P]], %[[L]] weights %[[W]] count %[[A]] {from_logits} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x5xf32>, tensor<4x5xf32>) -> tensor<2x5x3xf32>
func.func @loss_weights(%p: tensor<2x5x3xf32>, %l: tensor<2x5x3xf32>, %w: tensor<2x5xf32>, %a: tensor<4x5xf32>) {
  %0 = graph.loss mse %p, %l weights %w : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x5xf32>) -> tensor<f32>
  %1 = graph.loss_backward binary_crossentropy %p, %l weights %w count %a {from_logits} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x5xf32>, tensor<4x5xf32>) -> tensor<2x5x3xf32>
  return
}

// -----

// Sample weights (one per sample), with loss weights and a count or alone.
// CHECK-LABEL: func.func @sample_weights
//  CHECK-SAME:   (%[[P:.*]]: tensor<2x5x3xf32>, %[[L:.*]]: tensor<2x5x3xf32>, %[[W:.*]]: tensor<2x5xf32>, %[[A:.*]]: tensor<4x5xf32>, %[[S:.*]]: tensor<2xf32>)
//  CHECK-NEXT:   graph.loss mse %[[P]], %[[L]] sample_weights %[[S]] : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2xf32>) -> tensor<f32>
//  CHECK-NEXT:   graph.loss_backward binary_crossentropy %[[P]], %[[L]] weights %[[W]] count %[[A]] sample_weights %[[S]] {from_logits} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x5xf32>, tensor<4x5xf32>, tensor<2xf32>) -> tensor<2x5x3xf32>
func.func @sample_weights(%p: tensor<2x5x3xf32>, %l: tensor<2x5x3xf32>, %w: tensor<2x5xf32>, %a: tensor<4x5xf32>, %s: tensor<2xf32>) {
  %0 = graph.loss mse %p, %l sample_weights %s : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2xf32>) -> tensor<f32>
  %1 = graph.loss_backward binary_crossentropy %p, %l weights %w count %a sample_weights %s {from_logits} : (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x5xf32>, tensor<4x5xf32>, tensor<2xf32>) -> tensor<2x5x3xf32>
  return
}

// -----

// graph.loss_backward with each LossKind; its result has the prediction's type.
// CHECK-LABEL: func.func @loss_backward
//  CHECK-SAME:   (%[[P:.*]]: tensor<4x3xf32>, %[[I:.*]]: tensor<4xi64>, %[[L:.*]]: tensor<4x3xf32>)
//  CHECK-NEXT:   graph.loss_backward sparse_categorical_crossentropy %[[P]], %[[I]] {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
//  CHECK-NEXT:   graph.loss_backward categorical_crossentropy %[[P]], %[[L]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
//  CHECK-NEXT:   graph.loss_backward binary_crossentropy %[[P]], %[[L]] {from_logits} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
//  CHECK-NEXT:   graph.loss_backward mse %[[P]], %[[L]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
func.func @loss_backward(%p: tensor<4x3xf32>, %i: tensor<4xi64>, %l: tensor<4x3xf32>) {
  %0 = graph.loss_backward sparse_categorical_crossentropy %p, %i {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  %1 = graph.loss_backward categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %2 = graph.loss_backward binary_crossentropy %p, %l {from_logits} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %3 = graph.loss_backward mse %p, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

// The three optimizer updates: sgd (one result), momentum (param, velocity) and adam
// (param, m, v, with an f32 scalar step); f32 attributes print in shortest round-trip form.
// CHECK-LABEL: func.func @updates
//  CHECK-SAME:   (%[[P:.*]]: tensor<3x2xf32>, %[[G:.*]]: tensor<3x2xf32>, %[[V:.*]]: tensor<3x2xf32>, %[[M:.*]]: tensor<3x2xf32>, %[[S:.*]]: tensor<f32>)
//  CHECK-NEXT:   %[[P1:.*]] = graph.sgd_update %[[P]], %[[G]] {lr = 5.000000e-01 : f32} : tensor<3x2xf32>
//  CHECK-NEXT:   %[[P2:.*]], %[[V2:.*]] = graph.momentum_update %[[P]], %[[G]], %[[V]] {lr = 2.500000e-01 : f32, momentum = 7.500000e-01 : f32} : tensor<3x2xf32>
//  CHECK-NEXT:   %[[P3:.*]], %[[M3:.*]], %[[V3:.*]] = graph.adam_update %[[P]], %[[G]], %[[M]], %[[V]], %[[S]] {beta1 = 5.000000e-01 : f32, beta2 = 7.500000e-01 : f32, epsilon = 1.250000e-01 : f32, lr = 2.500000e-01 : f32} : tensor<3x2xf32>, tensor<f32>
//  CHECK-NEXT:   return %[[P1]], %[[P2]], %[[V2]], %[[P3]], %[[M3]], %[[V3]]
func.func @updates(%p: tensor<3x2xf32>, %g: tensor<3x2xf32>, %v: tensor<3x2xf32>, %m: tensor<3x2xf32>, %s: tensor<f32>)
    -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %0 = graph.sgd_update %p, %g {lr = 0.5 : f32} : tensor<3x2xf32>
  %1:2 = graph.momentum_update %p, %g, %v {lr = 0.25 : f32, momentum = 0.75 : f32} : tensor<3x2xf32>
  %2:3 = graph.adam_update %p, %g, %m, %v, %s {lr = 0.25 : f32, beta1 = 0.5 : f32, beta2 = 0.75 : f32, epsilon = 0.125 : f32} : tensor<3x2xf32>, tensor<f32>
  return %0, %1#0, %1#1, %2#0, %2#1, %2#2 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// The elementwise add (residual connections, gradient sums) round-trips.
// CHECK-LABEL: func.func @add
// CHECK: %{{.*}} = graph.add %arg0, %arg1 : tensor<4x3xf32>
func.func @add(%a: tensor<4x3xf32>, %b: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = graph.add %a, %b : tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Casts between f32, bf16 and f16, and a dense layer in bf16.
// CHECK-LABEL: func.func @casts_and_bf16_dense
//  CHECK-NEXT:   %[[XH:.*]] = graph.cast %{{.*}} : tensor<4x3xf32> to tensor<4x3xbf16>
//  CHECK-NEXT:   %[[Y:.*]] = graph.dense %[[XH]], %{{.*}} : (tensor<4x3xbf16>, tensor<3x2xbf16>) -> tensor<4x2xbf16>
//  CHECK-NEXT:   %[[H:.*]] = graph.cast %[[Y]] : tensor<4x2xbf16> to tensor<4x2xf16>
//  CHECK-NEXT:   %[[F:.*]] = graph.cast %[[H]] : tensor<4x2xf16> to tensor<4x2xf32>
//  CHECK-NEXT:   return %[[F]]
func.func @casts_and_bf16_dense(%x: tensor<4x3xf32>, %w: tensor<3x2xbf16>) -> tensor<4x2xf32> {
  %xh = graph.cast %x : tensor<4x3xf32> to tensor<4x3xbf16>
  %y = graph.dense %xh, %w : (tensor<4x3xbf16>, tensor<3x2xbf16>) -> tensor<4x2xbf16>
  %h = graph.cast %y : tensor<4x2xbf16> to tensor<4x2xf16>
  %f = graph.cast %h : tensor<4x2xf16> to tensor<4x2xf32>
  return %f : tensor<4x2xf32>
}

// -----

// Dynamic loss scaling: scale and unscale, the overflow check, an update it guards, and the
// in-place update of the scale's state.
// CHECK-LABEL: func.func @loss_scaling
//  CHECK-NEXT:   %[[S:.*]] = graph.loss_scale %{{.*}}, %[[H:.*]] : tensor<4x3xf32>
//  CHECK-NEXT:   %[[U:.*]] = graph.loss_scale %[[S]], %[[H]] {inverse} : tensor<4x3xf32>
//  CHECK-NEXT:   %[[OK:.*]] = graph.all_finite %[[U]], %{{.*}} : tensor<4x3xf32>, tensor<3xf32>
//  CHECK-NEXT:   %[[P:.*]] = graph.sgd_update %{{.*}}, %[[U]] if %[[OK]] {lr = 1.000000e-01 : f32} : tensor<4x3xf32>
//  CHECK-NEXT:   %{{.*}}, %{{.*}}, %{{.*}} = graph.update_loss_scale %[[H]], %{{.*}}, %{{.*}}, %[[OK]] {growth_interval = 2000 : i64} : tensor<f32>
func.func @loss_scaling(%g: tensor<4x3xf32>, %b: tensor<3xf32>, %p: tensor<4x3xf32>, %h: tensor<f32>, %c: tensor<f32>, %k: tensor<f32>) -> (tensor<4x3xf32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %s = graph.loss_scale %g, %h : tensor<4x3xf32>
  %u = graph.loss_scale %s, %h {inverse} : tensor<4x3xf32>
  %ok = graph.all_finite %u, %b : tensor<4x3xf32>, tensor<3xf32>
  %np = graph.sgd_update %p, %u if %ok {lr = 0.1 : f32} : tensor<4x3xf32>
  %h2, %c2, %k2 = graph.update_loss_scale %h, %c, %k, %ok {growth_interval = 2000 : i64} : tensor<f32>
  return %np, %h2, %c2, %k2 : tensor<4x3xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// A data-parallel step averages a flat gradient bucket over the ranks (round trip).
// CHECK-LABEL: func.func @all_reduce_round_trip
// CHECK: graph.all_reduce %{{.*}} {bucket = 3 : i64, ranks = 4 : i64} : tensor<16xf32>
func.func @all_reduce_round_trip(%g: tensor<16xf32>) -> tensor<16xf32> {
  %r = graph.all_reduce %g {bucket = 3 : i64, ranks = 4 : i64} : tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

// Optimizer-state sharding's collectives round-trip.
// CHECK-LABEL: func.func @zero_round_trip
// CHECK: graph.reduce_scatter %{{.*}} {bucket = 0 : i64, ranks = 2 : i64} : (tensor<20xf32>) -> tensor<10xf32>
// CHECK: graph.rank_shard %{{.*}}, %{{.*}} {ranks = 2 : i64} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<10xf32>
// CHECK: graph.all_gather_into %{{.*}}, %{{.*}}, %{{.*}} {bucket = 0 : i64, ranks = 2 : i64} : (tensor<10xf32>, tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>)
func.func @zero_round_trip(%g: tensor<20xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>) -> (tensor<10xf32>, tensor<4x4xf32>, tensor<4xf32>) {
  %s = graph.reduce_scatter %g {bucket = 0 : i64, ranks = 2 : i64} : (tensor<20xf32>) -> tensor<10xf32>
  %p = graph.rank_shard %w, %b {ranks = 2 : i64} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<10xf32>
  %n:2 = graph.all_gather_into %p, %w, %b {bucket = 0 : i64, ranks = 2 : i64} : (tensor<10xf32>, tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>)
  return %s, %n#0, %n#1 : tensor<10xf32>, tensor<4x4xf32>, tensor<4xf32>
}
