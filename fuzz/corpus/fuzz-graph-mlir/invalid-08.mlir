func.func @matmul_transposed_contraction(%a: tensor<4x2xf32>, %b: tensor<2x3xf32>) -> tensor<4x2xf32> {
  %y = graph.matmul %a, %b {transpose_rhs} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
