func.func @maxpool_window_too_big(%x: tensor<2x4x3x3xf32>) -> tensor<2x4x1x1xf32> {
  %y = graph.max_pool2d %x {kernel = array<i64: 4, 4>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x3x3xf32>) -> tensor<2x4x1x1xf32>
  return %y : tensor<2x4x1x1xf32>
}
