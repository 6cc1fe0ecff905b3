func.func @dense_bias_transposed(%x: tensor<4x3xf32>, %w: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<4x2xf32> {
  %y = graph.dense %x, %w, %b {transpose_weight} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
