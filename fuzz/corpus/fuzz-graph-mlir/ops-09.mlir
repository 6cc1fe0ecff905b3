func.func @loss(%p: tensor<4x3xf32>, %i: tensor<4xi64>, %l: tensor<4x3xf32>) {
  %0 = graph.loss sparse_categorical_crossentropy %p, %i {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  %1 = graph.loss sparse_categorical_crossentropy %p, %i : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  %2 = graph.loss categorical_crossentropy %p, %l {from_logits} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %3 = graph.loss categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %4 = graph.loss binary_crossentropy %p, %l {from_logits} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %5 = graph.loss binary_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %6 = graph.loss mse %p, %l : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return
}
