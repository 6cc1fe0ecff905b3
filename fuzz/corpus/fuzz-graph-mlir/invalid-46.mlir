func.func @loss_backward_result(%p: tensor<4x3xf32>, %l: tensor<4xi64>) -> tensor<3x4xf32> {
  %0 = graph.loss_backward sparse_categorical_crossentropy %p, %l {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
