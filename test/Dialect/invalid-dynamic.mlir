// RUN: graphc-opt %s --split-input-file --verify-diagnostics

// Dynamic shapes are refused by every op, not only by those with a shape verifier: graphc
// plans bytes ahead of time. Today relu, softmax, bias_grad and the optimizer updates accept
// them and only graphc-plan-memory's liveness rejects them later (see the report).

// Relu: a dynamic batch is refused.
func.func @relu_dynamic(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<?x3xf32>'}}
  %y = graph.relu %x : tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// Softmax: a dynamic batch is refused.
func.func @softmax_dynamic(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float values, but got 'tensor<?x3xf32>'}}
  %y = graph.softmax %x {axis = 1} : tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// bias_grad: a dynamic kept axis is refused (today ? == ? makes the shape check pass).
func.func @bias_grad_dynamic(%g: tensor<4x?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x?xf32>'}}
  %b = graph.bias_grad %g {axis = 1} : (tensor<4x?xf32>) -> tensor<?xf32>
  return %b : tensor<?xf32>
}

// -----

// sgd_update: a dynamic parameter is refused.
func.func @sgd_update_dynamic(%p: tensor<?x3xf32>, %g: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float values, but got 'tensor<?x3xf32>'}}
  %y = graph.sgd_update %p, %g {lr = 0.5 : f32} : tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}
