func.func @conv_transpose_bias(%x: tensor<2x4x6x6xf32>, %f: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x3x8x8xf32> {
  %y = graph.conv2d_backward_data %x, %f, %b {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x3x8x8xf32>
  return %y : tensor<2x3x8x8xf32>
}
