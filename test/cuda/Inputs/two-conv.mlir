// Two convolutions (the second strided and grouped, so conv2d_backward_data is needed), tanh,
// sigmoid, a ceil-mode max pool (bottom/right padding, windows cuDNN cannot express: the generated kernel) and a softmax
// that stays in the graph under --loss=mse (softmax_backward).
func.func @forward(%x: tensor<4x3x9x9xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<4x3x3x3xf32> {graph.kind = "parameter", graph.name = "conv1.weight"},
                   %b1: tensor<4xf32> {graph.kind = "parameter", graph.name = "conv1.bias"},
                   %w2: tensor<4x2x3x3xf32> {graph.kind = "parameter", graph.name = "conv2.weight"},
                   %w3: tensor<6x36xf32> {graph.kind = "parameter", graph.name = "fc.weight"},
                   %b3: tensor<6xf32> {graph.kind = "parameter", graph.name = "fc.bias"}) -> tensor<4x6xf32> {
  %c1 = graph.conv2d %x, %w1, %b1 {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<4x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<4x4x9x9xf32> loc("conv1")
  %t = graph.tanh %c1 : tensor<4x4x9x9xf32> loc("tanh")
  %c2 = graph.conv2d %t, %w2 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2} : (tensor<4x4x9x9xf32>, tensor<4x2x3x3xf32>) -> tensor<4x4x5x5xf32> loc("conv2")
  %s = graph.sigmoid %c2 : tensor<4x4x5x5xf32> loc("sigmoid")
  %p = graph.max_pool2d %s {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>} : (tensor<4x4x5x5xf32>) -> tensor<4x4x3x3xf32> loc("pool")
  %f = graph.reshape %p : (tensor<4x4x3x3xf32>) -> tensor<4x36xf32> loc("flatten")
  %y = graph.dense %f, %w3, %b3 {transpose_weight} : (tensor<4x36xf32>, tensor<6x36xf32>, tensor<6xf32>) -> tensor<4x6xf32> loc("fc")
  %sm = graph.softmax %y {axis = 1 : i64} : tensor<4x6xf32> loc("softmax")
  return %sm : tensor<4x6xf32>
}
