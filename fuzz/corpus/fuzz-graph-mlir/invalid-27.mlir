func.func @maxpool_result(%x: tensor<2x4x6x6xf32>) -> tensor<2x4x2x2xf32> {
  %y = graph.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x6x6xf32>) -> tensor<2x4x2x2xf32>
  return %y : tensor<2x4x2x2xf32>
}
