func.func @reshape(%x: tensor<2x4x3x3xf32>) -> tensor<2x36xf32> {
  %0 = graph.reshape %x : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32>
  return %0 : tensor<2x36xf32>
}
