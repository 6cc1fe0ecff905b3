func.func @dense_bad_result(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> tensor<2x4xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
