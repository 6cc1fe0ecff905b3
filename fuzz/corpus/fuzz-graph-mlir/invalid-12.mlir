func.func @conv_channels(%x: tensor<2x3x8x8xf32>, %f: tensor<4x2x3x3xf32>) -> tensor<2x4x6x6xf32> {
  %y = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}
