func.func @maxpool_backward_grad(%g: tensor<2x4x2x2xf32>, %x: tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32> {
  %dx = graph.max_pool2d_backward %g, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x2x2xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  return %dx : tensor<2x4x6x6xf32>
}
