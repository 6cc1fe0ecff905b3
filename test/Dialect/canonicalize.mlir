// RUN: graphc-opt %s --split-input-file --canonicalize | FileCheck %s

// Sparse categorical crossentropy absorbs the softmax over classes: the loss takes the logits
// with from_logits and the dead softmax is erased.
// CHECK-LABEL: func.func @sparse_ce_softmax
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>, %[[L:.*]]: tensor<4xi64>)
//   CHECK-NOT:   graph.softmax
//       CHECK:   %[[R:.*]] = graph.loss sparse_categorical_crossentropy %[[X]], %[[L]] {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
//  CHECK-NEXT:   return %[[R]]
func.func @sparse_ce_softmax(%x: tensor<4x3xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  %p = graph.softmax %x {axis = 1} : tensor<4x3xf32>
  %0 = graph.loss sparse_categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// The log of a softmax (an imported LogSoftmax) holds log-probabilities: the crossentropy reads
// it as PyTorch's NLLLoss, the crossentropy from the softmax's logits; both ops are erased.
// CHECK-LABEL: func.func @sparse_ce_log_softmax
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>, %[[L:.*]]: tensor<4xi64>)
//   CHECK-NOT:   graph.activation
//       CHECK:   %[[R:.*]] = graph.loss sparse_categorical_crossentropy %[[X]], %[[L]] {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
//  CHECK-NEXT:   return %[[R]]
func.func @sparse_ce_log_softmax(%x: tensor<4x3xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  %p = graph.softmax %x {axis = 1} : tensor<4x3xf32>
  %lp = graph.activation log %p : tensor<4x3xf32>
  %0 = graph.loss sparse_categorical_crossentropy %lp, %l : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// The log of anything but a softmax is not folded.
// CHECK-LABEL: func.func @sparse_ce_log_sigmoid_not_folded
//       CHECK:   graph.activation log
//       CHECK:   graph.loss sparse_categorical_crossentropy %{{.*}}, %{{.*}} : (tensor<4x3xf32>, tensor<4xi64>)
func.func @sparse_ce_log_sigmoid_not_folded(%x: tensor<4x3xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  %p = graph.sigmoid %x : tensor<4x3xf32>
  %lp = graph.activation log %p : tensor<4x3xf32>
  %0 = graph.loss sparse_categorical_crossentropy %lp, %l : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Categorical crossentropy absorbs the softmax over classes too.
// CHECK-LABEL: func.func @categorical_ce_softmax
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>, %[[L:.*]]: tensor<4x3xf32>)
//   CHECK-NOT:   graph.softmax
//       CHECK:   %[[R:.*]] = graph.loss categorical_crossentropy %[[X]], %[[L]] {from_logits} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
//  CHECK-NEXT:   return %[[R]]
func.func @categorical_ce_softmax(%x: tensor<4x3xf32>, %l: tensor<4x3xf32>) -> tensor<f32> {
  %p = graph.softmax %x {axis = 1} : tensor<4x3xf32>
  %0 = graph.loss categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Binary crossentropy absorbs a sigmoid head.
// CHECK-LABEL: func.func @binary_ce_sigmoid
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x1xf32>, %[[L:.*]]: tensor<4x1xf32>)
//   CHECK-NOT:   graph.sigmoid
//       CHECK:   %[[R:.*]] = graph.loss binary_crossentropy %[[X]], %[[L]] {from_logits} : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<f32>
//  CHECK-NEXT:   return %[[R]]
func.func @binary_ce_sigmoid(%x: tensor<4x1xf32>, %l: tensor<4x1xf32>) -> tensor<f32> {
  %p = graph.sigmoid %x : tensor<4x1xf32>
  %0 = graph.loss binary_crossentropy %p, %l : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// MSE works on probabilities: neither a softmax nor a sigmoid before it is folded.
// CHECK-LABEL: func.func @mse_unchanged
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>, %[[L:.*]]: tensor<4x3xf32>)
//  CHECK-NEXT:   %[[S:.*]] = graph.softmax %[[X]] {axis = 1 : i64} : tensor<4x3xf32>
//  CHECK-NEXT:   %[[A:.*]] = graph.loss mse %[[S]], %[[L]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
//  CHECK-NEXT:   %[[G:.*]] = graph.sigmoid %[[X]] : tensor<4x3xf32>
//  CHECK-NEXT:   %[[B:.*]] = graph.loss mse %[[G]], %[[L]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
//  CHECK-NEXT:   return %[[A]], %[[B]]
func.func @mse_unchanged(%x: tensor<4x3xf32>, %l: tensor<4x3xf32>) -> (tensor<f32>, tensor<f32>) {
  %s = graph.softmax %x {axis = 1} : tensor<4x3xf32>
  %0 = graph.loss mse %s, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %g = graph.sigmoid %x : tensor<4x3xf32>
  %1 = graph.loss mse %g, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}

// -----

// A softmax over the batch axis (0) is not the class softmax, so it is not folded.
// CHECK-LABEL: func.func @softmax_axis0_not_folded
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>, %[[L:.*]]: tensor<4x3xf32>)
//  CHECK-NEXT:   %[[S:.*]] = graph.softmax %[[X]] {axis = 0 : i64} : tensor<4x3xf32>
//  CHECK-NEXT:   %[[R:.*]] = graph.loss categorical_crossentropy %[[S]], %[[L]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
//  CHECK-NEXT:   return %[[R]]
func.func @softmax_axis0_not_folded(%x: tensor<4x3xf32>, %l: tensor<4x3xf32>) -> tensor<f32> {
  %s = graph.softmax %x {axis = 0} : tensor<4x3xf32>
  %0 = graph.loss categorical_crossentropy %s, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// The activation must match the loss: a sigmoid before a categorical loss and a softmax
// before binary crossentropy stay.
// CHECK-LABEL: func.func @mismatched_activation_not_folded
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>, %[[L:.*]]: tensor<4x3xf32>)
//  CHECK-NEXT:   %[[G:.*]] = graph.sigmoid %[[X]] : tensor<4x3xf32>
//  CHECK-NEXT:   %[[A:.*]] = graph.loss categorical_crossentropy %[[G]], %[[L]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
//  CHECK-NEXT:   %[[S:.*]] = graph.softmax %[[X]] {axis = 1 : i64} : tensor<4x3xf32>
//  CHECK-NEXT:   %[[B:.*]] = graph.loss binary_crossentropy %[[S]], %[[L]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
//  CHECK-NEXT:   return %[[A]], %[[B]]
func.func @mismatched_activation_not_folded(%x: tensor<4x3xf32>, %l: tensor<4x3xf32>) -> (tensor<f32>, tensor<f32>) {
  %g = graph.sigmoid %x : tensor<4x3xf32>
  %0 = graph.loss categorical_crossentropy %g, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %s = graph.softmax %x {axis = 1} : tensor<4x3xf32>
  %1 = graph.loss binary_crossentropy %s, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}

// -----

// A loss that already takes logits is left alone: its softmax input is not folded a second time.
// CHECK-LABEL: func.func @already_from_logits
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>, %[[L:.*]]: tensor<4xi64>)
//  CHECK-NEXT:   %[[S:.*]] = graph.softmax %[[X]] {axis = 1 : i64} : tensor<4x3xf32>
//  CHECK-NEXT:   %[[R:.*]] = graph.loss sparse_categorical_crossentropy %[[S]], %[[L]] {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
//  CHECK-NEXT:   return %[[R]]
func.func @already_from_logits(%x: tensor<4x3xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  %s = graph.softmax %x {axis = 1} : tensor<4x3xf32>
  %0 = graph.loss sparse_categorical_crossentropy %s, %l {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A softmax with another user is folded into the loss but kept for that user.
// CHECK-LABEL: func.func @softmax_kept_for_other_user
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>, %[[L:.*]]: tensor<4xi64>)
//  CHECK-NEXT:   %[[S:.*]] = graph.softmax %[[X]] {axis = 1 : i64} : tensor<4x3xf32>
//  CHECK-NEXT:   %[[R:.*]] = graph.loss sparse_categorical_crossentropy %[[X]], %[[L]] {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
//  CHECK-NEXT:   return %[[R]], %[[S]]
func.func @softmax_kept_for_other_user(%x: tensor<4x3xf32>, %l: tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  %s = graph.softmax %x {axis = 1} : tensor<4x3xf32>
  %0 = graph.loss sparse_categorical_crossentropy %s, %l : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %0, %s : tensor<f32>, tensor<4x3xf32>
}

// -----

// A chain of reshapes becomes one reshape from the first input to the final shape.
// CHECK-LABEL: func.func @reshape_chain
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x4x3x3xf32>)
//  CHECK-NEXT:   %[[R:.*]] = graph.reshape %[[X]] : (tensor<2x4x3x3xf32>) -> tensor<72xf32>
//  CHECK-NEXT:   return %[[R]] : tensor<72xf32>
func.func @reshape_chain(%x: tensor<2x4x3x3xf32>) -> tensor<72xf32> {
  %0 = graph.reshape %x : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32>
  %1 = graph.reshape %0 : (tensor<2x36xf32>) -> tensor<8x9xf32>
  %2 = graph.reshape %1 : (tensor<8x9xf32>) -> tensor<72xf32>
  return %2 : tensor<72xf32>
}

// -----

// A reshape to its operand's own type folds away.
// CHECK-LABEL: func.func @identity_reshape
//  CHECK-SAME:   (%[[X:.*]]: tensor<4x3xf32>)
//  CHECK-NEXT:   return %[[X]] : tensor<4x3xf32>
func.func @identity_reshape(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = graph.reshape %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A reshape chain that comes back to the original shape folds away entirely.
// CHECK-LABEL: func.func @reshape_round_trip
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x36xf32>)
//  CHECK-NEXT:   return %[[X]] : tensor<2x36xf32>
func.func @reshape_round_trip(%x: tensor<2x36xf32>) -> tensor<2x36xf32> {
  %0 = graph.reshape %x : (tensor<2x36xf32>) -> tensor<72xf32>
  %1 = graph.reshape %0 : (tensor<72xf32>) -> tensor<2x36xf32>
  return %1 : tensor<2x36xf32>
}

// -----

// An intermediate reshape with another user stays, while the chain still folds.
// CHECK-LABEL: func.func @reshape_chain_shared
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x4x3x3xf32>)
//  CHECK-DAG:    %[[A:.*]] = graph.reshape %[[X]] : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32>
//  CHECK-DAG:    %[[B:.*]] = graph.reshape %[[X]] : (tensor<2x4x3x3xf32>) -> tensor<72xf32>
//       CHECK:   return %[[A]], %[[B]]
func.func @reshape_chain_shared(%x: tensor<2x4x3x3xf32>) -> (tensor<2x36xf32>, tensor<72xf32>) {
  %0 = graph.reshape %x : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32>
  %1 = graph.reshape %0 : (tensor<2x36xf32>) -> tensor<72xf32>
  return %0, %1 : tensor<2x36xf32>, tensor<72xf32>
}

// -----

// Narrowing what was just widened is exact and folds away; widening what was just narrowed
// (a rounding) stays, as does a cast to the same type's opposite.
// CHECK-LABEL: func.func @cast_folds
//  CHECK-SAME:   (%[[H:.*]]: tensor<4xbf16>, %[[X:.*]]: tensor<4xf32>)
//       CHECK:   %[[N:.*]] = graph.cast %[[X]] : tensor<4xf32> to tensor<4xbf16>
//       CHECK:   %[[W:.*]] = graph.cast %[[N]] : tensor<4xbf16> to tensor<4xf32>
//       CHECK:   return %[[H]], %[[W]]
func.func @cast_folds(%h: tensor<4xbf16>, %x: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %w = graph.cast %h : tensor<4xbf16> to tensor<4xf32>
  %back = graph.cast %w : tensor<4xf32> to tensor<4xbf16>
  %n = graph.cast %x : tensor<4xf32> to tensor<4xbf16>
  %rounded = graph.cast %n : tensor<4xbf16> to tensor<4xf32>
  return %back, %rounded : tensor<4xbf16>, tensor<4xf32>
}

// -----

// Transposes fold: the identity is its input, a transpose of a transpose whose permutations
// cancel is the original value, and two that do not cancel become one transpose of the original.
// CHECK-LABEL: func.func @transpose_chains
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x3x4xf32>)
//       CHECK:   %[[T:.*]] = graph.transpose %[[X]] {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
//  CHECK-NEXT:   return %[[X]], %[[X]], %[[T]]
func.func @transpose_chains(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  %id = graph.transpose %x {perm = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %a = graph.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %b = graph.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  %c = graph.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<2x4x3xf32>) -> tensor<4x2x3xf32>
  return %id, %b, %c : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>
}
