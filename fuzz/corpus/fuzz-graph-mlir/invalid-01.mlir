func.func @dense_transposed_feature_mismatch(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> tensor<4x3xf32> {
  %y = graph.dense %x, %w {transpose_weight} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
