func.func @loss_backward_labels(%p: tensor<4x3xf32>, %l: tensor<4xf32>) -> tensor<4x3xf32> {
  %0 = graph.loss_backward sparse_categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
