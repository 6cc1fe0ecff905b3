func.func @conv_window_too_big(%x: tensor<2x3x4x4xf32>, %f: tensor<4x3x5x5xf32>) -> tensor<2x4x1x1xf32> {
  %y = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x4x4xf32>, tensor<4x3x5x5xf32>) -> tensor<2x4x1x1xf32>
  return %y : tensor<2x4x1x1xf32>
}
