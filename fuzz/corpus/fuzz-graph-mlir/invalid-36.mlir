func.func @sparse_label_dtype(%p: tensor<4x3xf32>, %l: tensor<4xf32>) -> tensor<f32> {
  %0 = graph.loss sparse_categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
