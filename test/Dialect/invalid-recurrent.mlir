// RUN: graphc-opt %s --split-input-file --verify-diagnostics

// The verifiers of mul, activation and embedding(_backward) reject bad IR with a message that
// prints the offending types.

// mul does not broadcast.
func.func @mul_broadcast(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'graph.mul' op requires the same type for all operands and results}}
  %y = "graph.mul"(%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// An unknown activation kind is a parse error naming it.
func.func @unknown_activation(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [gelu, gelu_tanh, elu, selu, silu, softplus, softsign, leaky_relu, exp, log, pow, abs, equal, greater]}}
  %y = graph.activation mish %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The table is [vocabulary, features].
func.func @embedding_table_rank(%ids: tensor<2x5xf32>, %t: tensor<100x4x4xf32>) -> tensor<2x5x4xf32> {
  // expected-error @+1 {{'graph.embedding' op table 'tensor<100x4x4xf32>' must be [vocabulary, features]}}
  %e = graph.embedding %ids, %t : (tensor<2x5xf32>, tensor<100x4x4xf32>) -> tensor<2x5x4xf32>
  return %e : tensor<2x5x4xf32>
}

// -----

// The rows are the indices' shape plus the feature size.
func.func @embedding_rows(%ids: tensor<2x5xf32>, %t: tensor<100x16xf32>) -> tensor<10x16xf32> {
  // expected-error @+1 {{'graph.embedding' op rows 'tensor<10x16xf32>' must be the indices' shape 'tensor<2x5xf32>' plus [16]}}
  %e = graph.embedding %ids, %t : (tensor<2x5xf32>, tensor<100x16xf32>) -> tensor<10x16xf32>
  return %e : tensor<10x16xf32>
}

// -----

// The backward's result is the table's shape, and the gradient rows match it.
func.func @embedding_backward_rows(%dy: tensor<2x5x8xf32>, %ids: tensor<2x5xf32>) -> tensor<100x16xf32> {
  // expected-error @+1 {{'graph.embedding_backward' op rows 'tensor<2x5x8xf32>' must be the indices' shape 'tensor<2x5xf32>' plus [16]}}
  %d = graph.embedding_backward %dy, %ids : (tensor<2x5x8xf32>, tensor<2x5xf32>) -> tensor<100x16xf32>
  return %d : tensor<100x16xf32>
}

// -----

// Indices are f32 whole numbers (Keras's default input dtype).
func.func @embedding_index_type(%ids: tensor<2x5xi64>, %t: tensor<100x16xf32>) -> tensor<2x5x16xf32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float values}}
  %e = graph.embedding %ids, %t : (tensor<2x5xi64>, tensor<100x16xf32>) -> tensor<2x5x16xf32>
  return %e : tensor<2x5x16xf32>
}
