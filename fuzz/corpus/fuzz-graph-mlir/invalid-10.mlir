func.func @bias_grad_axis(%g: tensor<4x2xf32>) -> tensor<2xf32> {
  %b = graph.bias_grad %g {axis = 2} : (tensor<4x2xf32>) -> tensor<2xf32>
  return %b : tensor<2xf32>
}
