// A decoder step: a conv2d, then two transposed convolutions (conv2d_backward_data in the
// forward function), one strided with a bias (PyTorch's ConvTranspose2d(k=4, s=2, p=1)), one
// dilated without bias, and a dense head. The forward runs cuDNN's backward-data kernel plus
// the generated bias node; the gradients use its forward and backward-filter kernels. (cuDNN
// pads symmetrically: Keras's same stride-2 odd-kernel cropping is refused on this target.)
func.func @forward(%x: tensor<2x3x6x6xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<4x3x3x3xf32> {graph.kind = "parameter", graph.name = "conv.weight"},
                   %wt: tensor<4x2x4x4xf32> {graph.kind = "parameter", graph.name = "up.weight"},
                   %bt: tensor<2xf32> {graph.kind = "parameter", graph.name = "up.bias"},
                   %wd: tensor<2x3x3x3xf32> {graph.kind = "parameter", graph.name = "dil.weight"},
                   %w3: tensor<10x192xf32> {graph.kind = "parameter", graph.name = "fc.weight"},
                   %b3: tensor<10xf32> {graph.kind = "parameter", graph.name = "fc.bias"}) -> tensor<2x10xf32> {
  %c = graph.conv2d %x, %w1 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x3x3xf32> loc("down")
  %r = graph.relu %c : tensor<2x4x3x3xf32> loc("relu1")
  %u = graph.conv2d_backward_data %r, %wt, %bt {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x3x3xf32>, tensor<4x2x4x4xf32>, tensor<2xf32>) -> tensor<2x2x6x6xf32> loc("up")
  %t = graph.tanh %u : tensor<2x2x6x6xf32> loc("tanh")
  %d = graph.conv2d_backward_data %t, %wd {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>} : (tensor<2x2x6x6xf32>, tensor<2x3x3x3xf32>) -> tensor<2x3x8x8xf32> loc("dilated")
  %f = graph.reshape %d : (tensor<2x3x8x8xf32>) -> tensor<2x192xf32> loc("flatten")
  %y = graph.dense %f, %w3, %b3 {transpose_weight} : (tensor<2x192xf32>, tensor<10x192xf32>, tensor<10xf32>) -> tensor<2x10xf32> loc("fc")
  return %y : tensor<2x10xf32>
}
