func.func @add(%a: tensor<4x3xf32>, %b: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = graph.add %a, %b : tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
