func.func @max_pool2d(%x: tensor<2x4x6x6xf32>, %g: tensor<2x4x3x3xf32>) {
  %0 = graph.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32>
  %1 = graph.max_pool2d_backward %g, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  return
}
