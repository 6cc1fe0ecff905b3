// RUN: graphc-opt %s --split-input-file --verify-diagnostics

// Negative axes are out of range for the axis attributes of the graph dialect, and the
// message must print the axis as written. The I64Attr getter returns uint64_t, so the
// verifiers print -1 as 18446744073709551615 (see the report on GraphOps.cpp).

// bias_grad: a negative axis is out of range too.
func.func @bias_grad_negative_axis(%g: tensor<4x2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.bias_grad' op axis -1 is out of range for 'tensor<4x2xf32>'}}
  %b = graph.bias_grad %g {axis = -1} : (tensor<4x2xf32>) -> tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

// Softmax: negative axes are not accepted (no Python-style wrap-around).
func.func @softmax_negative_axis(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.softmax' op axis -1 is out of range for 'tensor<4x3xf32>'}}
  %y = graph.softmax %x {axis = -1} : tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// softmax_backward: a negative axis is refused like softmax's.
func.func @softmax_backward_negative_axis(%g: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.softmax_backward' op axis -2 is out of range for 'tensor<4x3xf32>'}}
  %dx = graph.softmax_backward %g, %y {axis = -2} : tensor<4x3xf32>
  return %dx : tensor<4x3xf32>
}
