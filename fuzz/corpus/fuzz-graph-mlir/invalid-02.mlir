func.func @dense_bad_bias(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>, %b: tensor<3xf32>) -> tensor<4x2xf32> {
  %y = graph.dense %x, %w, %b : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
