func.func @matmul(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>, %g: tensor<4x2xf32>, %c: tensor<2x4xf32>) {
  %0 = graph.matmul %a, %b : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = graph.matmul %a, %g {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %2 = graph.matmul %g, %b {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %3 = graph.matmul %a, %c {transpose_lhs, transpose_rhs} : (tensor<4x3xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
  return
}
