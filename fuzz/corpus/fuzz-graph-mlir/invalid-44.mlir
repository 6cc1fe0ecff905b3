func.func @loss_scalar_prediction(%p: tensor<f32>, %l: tensor<f32>) -> tensor<f32> {
  %0 = graph.loss mse %p, %l : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
