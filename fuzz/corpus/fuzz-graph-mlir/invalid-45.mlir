func.func @loss_dynamic(%p: tensor<?x3xf32>, %l: tensor<?x3xf32>) -> tensor<f32> {
  %0 = graph.loss mse %p, %l : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
