func.func @softmax_axis(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %y = graph.softmax %x {axis = 2} : tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
