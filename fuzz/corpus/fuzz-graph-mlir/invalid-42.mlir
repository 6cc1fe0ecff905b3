func.func @binary_label_shape(%p: tensor<4x1xf32>, %l: tensor<4xf32>) -> tensor<f32> {
  %0 = graph.loss binary_crossentropy %p, %l : (tensor<4x1xf32>, tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
