func.func @sparse_positions_label_shape(%p: tensor<4x3x2xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  %0 = graph.loss sparse_categorical_crossentropy %p, %l : (tensor<4x3x2xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}
