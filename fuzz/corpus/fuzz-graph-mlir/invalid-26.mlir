func.func @conv_backward_filter_strides(%dy: tensor<2x4x6x6xf32>, %x: tensor<2x3x8x8xf32>) -> tensor<4x3x3x3xf32> {
  %dw = graph.conv2d_backward_filter %dy, %x {strides = array<i64: 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x3x8x8xf32>) -> tensor<4x3x3x3xf32>
  return %dw : tensor<4x3x3x3xf32>
}
