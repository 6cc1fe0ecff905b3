func.func @bias_grad(%g: tensor<4x2xf32>, %c: tensor<2x5x3x3xf32>) {
  %0 = graph.bias_grad %g {axis = 1} : (tensor<4x2xf32>) -> tensor<2xf32>
  %1 = graph.bias_grad %c {axis = 1 : i64} : (tensor<2x5x3x3xf32>) -> tensor<5xf32>
  return
}
