// An average pool, which the CUDA target does not support yet.
func.func @forward(%x: tensor<4x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<8x3xf32> {graph.kind = "parameter", graph.name = "fc.weight"}) -> tensor<4x3xf32> {
  %y = graph.dense %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("fc")
  %i = graph.reshape %y : (tensor<4x3xf32>) -> tensor<4x3x1x1xf32> loc("image")
  %p = graph.avg_pool2d %i {kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<4x3x1x1xf32>) -> tensor<4x3x1x1xf32> loc("pool")
  %r = graph.reshape %p : (tensor<4x3x1x1xf32>) -> tensor<4x3xf32> loc("rows")
  return %r : tensor<4x3xf32>
}
