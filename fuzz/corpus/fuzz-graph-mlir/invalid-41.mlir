func.func @categorical_label_dtype(%p: tensor<4x3xf32>, %l: tensor<4x3xi64>) -> tensor<f32> {
  %0 = graph.loss categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4x3xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}
