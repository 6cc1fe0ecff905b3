// A tiny CNN forward function in the graph dialect: conv -> relu -> pool -> flatten -> dense -> softmax.
func.func @forward(%x: tensor<4x3x8x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<2x3x3x3xf32> {graph.kind = "parameter", graph.name = "conv.weight"},
                   %b: tensor<2xf32> {graph.kind = "parameter", graph.name = "conv.bias"},
                   %w2: tensor<5x18xf32> {graph.kind = "parameter", graph.name = "fc.weight"},
                   %b2: tensor<5xf32> {graph.kind = "parameter", graph.name = "fc.bias"}) -> tensor<4x5xf32> {
  %c = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<4x3x8x8xf32>, tensor<2x3x3x3xf32>, tensor<2xf32>) -> tensor<4x2x6x6xf32> loc("conv")
  %r = graph.relu %c : tensor<4x2x6x6xf32> loc("relu")
  %p = graph.max_pool2d %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<4x2x6x6xf32>) -> tensor<4x2x3x3xf32> loc("pool")
  %f = graph.reshape %p : (tensor<4x2x3x3xf32>) -> tensor<4x18xf32> loc("flatten")
  %y = graph.dense %f, %w2, %b2 {transpose_weight} : (tensor<4x18xf32>, tensor<5x18xf32>, tensor<5xf32>) -> tensor<4x5xf32> loc("fc")
  %s = graph.softmax %y {axis = 1 : i64} : tensor<4x5xf32> loc("softmax")
  return %s : tensor<4x5xf32>
}
