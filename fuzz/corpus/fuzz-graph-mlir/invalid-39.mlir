func.func @sparse_prediction_rank(%p: tensor<4xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  %0 = graph.loss sparse_categorical_crossentropy %p, %l : (tensor<4xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}
