func.func @reshape_count(%x: tensor<2x4x3x3xf32>) -> tensor<2x35xf32> {
  %y = graph.reshape %x : (tensor<2x4x3x3xf32>) -> tensor<2x35xf32>
  return %y : tensor<2x35xf32>
}
