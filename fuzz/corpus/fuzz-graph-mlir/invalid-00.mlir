func.func @dense_feature_mismatch(%x: tensor<4x3xf32>, %w: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
