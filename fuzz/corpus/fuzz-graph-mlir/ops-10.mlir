func.func @loss_backward(%p: tensor<4x3xf32>, %i: tensor<4xi64>, %l: tensor<4x3xf32>) {
  %0 = graph.loss_backward sparse_categorical_crossentropy %p, %i {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  %1 = graph.loss_backward categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %2 = graph.loss_backward binary_crossentropy %p, %l {from_logits} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %3 = graph.loss_backward mse %p, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return
}
