func.func @softmax_causal_axis(%x: tensor<2x4x3xf32>) -> tensor<2x4x3xf32> {
  %y = graph.softmax %x {axis = 1, causal} : tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}
