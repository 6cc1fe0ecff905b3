func.func @matmul_result(%a: tensor<4x3xf32>, %g: tensor<4x2xf32>) -> tensor<2x3xf32> {
  %y = graph.matmul %a, %g {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
