// A CNN on 96x96 images whose im2col workspaces outweigh its activations: conv -> relu ->
// conv -> relu -> max pool -> flatten -> dense -> softmax. The second convolution's
// whole-image im2col (16 * 3 * 3 channels x 96 * 96 pixels, 5.3 MB) is the largest buffer of
// the training step.
func.func @forward(%x: tensor<2x4x96x96xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<16x4x3x3xf32> {graph.kind = "parameter", graph.name = "conv1.weight"},
                   %b1: tensor<16xf32> {graph.kind = "parameter", graph.name = "conv1.bias"},
                   %w2: tensor<16x16x3x3xf32> {graph.kind = "parameter", graph.name = "conv2.weight"},
                   %b2: tensor<16xf32> {graph.kind = "parameter", graph.name = "conv2.bias"},
                   %w3: tensor<5x9216xf32> {graph.kind = "parameter", graph.name = "fc.weight"},
                   %b3: tensor<5xf32> {graph.kind = "parameter", graph.name = "fc.bias"}) -> tensor<2x5xf32> {
  %c1 = graph.conv2d %x, %w1, %b1 {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x96x96xf32>, tensor<16x4x3x3xf32>, tensor<16xf32>) -> tensor<2x16x96x96xf32> loc("conv1")
  %r1 = graph.relu %c1 : tensor<2x16x96x96xf32> loc("relu1")
  %c2 = graph.conv2d %r1, %w2, %b2 {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x16x96x96xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<2x16x96x96xf32> loc("conv2")
  %r2 = graph.relu %c2 : tensor<2x16x96x96xf32> loc("relu2")
  %p = graph.max_pool2d %r2 {kernel = array<i64: 4, 4>, strides = array<i64: 4, 4>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x16x96x96xf32>) -> tensor<2x16x24x24xf32> loc("pool")
  %f = graph.reshape %p : (tensor<2x16x24x24xf32>) -> tensor<2x9216xf32> loc("flatten")
  %y = graph.dense %f, %w3, %b3 {transpose_weight} : (tensor<2x9216xf32>, tensor<5x9216xf32>, tensor<5xf32>) -> tensor<2x5xf32> loc("fc")
  %s = graph.softmax %y {axis = 1 : i64} : tensor<2x5xf32> loc("softmax")
  return %s : tensor<2x5xf32>
}
