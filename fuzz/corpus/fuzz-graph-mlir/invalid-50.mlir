func.func @bf16_loss(%p: tensor<4x3xbf16>, %l: tensor<4xi64>) -> tensor<f32> {
  %loss = graph.loss sparse_categorical_crossentropy %p, %l : (tensor<4x3xbf16>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
