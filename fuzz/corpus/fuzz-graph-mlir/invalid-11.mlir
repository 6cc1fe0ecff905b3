func.func @bias_grad_result(%g: tensor<2x5x3x3xf32>) -> tensor<3xf32> {
  %b = graph.bias_grad %g {axis = 1} : (tensor<2x5x3x3xf32>) -> tensor<3xf32>
  return %b : tensor<3xf32>
}
