func.func @conv_backward_data_shape(%dy: tensor<2x4x5x5xf32>, %f: tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32> {
  %dx = graph.conv2d_backward_data %dy, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return %dx : tensor<2x3x8x8xf32>
}
