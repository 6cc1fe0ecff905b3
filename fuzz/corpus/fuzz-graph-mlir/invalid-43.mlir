func.func @mse_label_shape(%p: tensor<4x3xf32>, %l: tensor<4x2xf32>) -> tensor<f32> {
  %0 = graph.loss mse %p, %l : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
