func.func @softmax_backward_axis(%g: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %dx = graph.softmax_backward %g, %y {axis = 5} : tensor<4x3xf32>
  return %dx : tensor<4x3xf32>
}
