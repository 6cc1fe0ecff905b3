// Max pools whose windows overlap, after a relu (ties among zeros: the first maximum wins):
// ResNet's stem pool (3x3, stride 2, padding 1) and a 16x16 window at stride 2 (256 elements: the
// recorded argmax positions no longer fit a byte). On the CUDA target each backward records every
// window's argmax in its workspace, then gathers by it (EmitCuda.cpp, maxPoolBackward). And, for
// the other backward kernel (a thread per window writing its stride cell), 2x2 windows at stride
// 3 with top/left padding 1: rows and columns between windows and after the last one belong to
// no window and get zeros.
func.func @forward(%x: tensor<4x3x20x20xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<4x3x3x3xf32> {graph.kind = "parameter", graph.name = "conv1.weight"},
                   %b1: tensor<4xf32> {graph.kind = "parameter", graph.name = "conv1.bias"},
                   %w2: tensor<632x6xf32> {graph.kind = "parameter", graph.name = "fc.weight"},
                   %b2: tensor<6xf32> {graph.kind = "parameter", graph.name = "fc.bias"}) -> tensor<4x6xf32> {
  %c = graph.conv2d %x, %w1, %b1 {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<4x3x20x20xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<4x4x20x20xf32> loc("conv1")
  %r = graph.relu %c : tensor<4x4x20x20xf32> loc("relu")
  %pa = graph.max_pool2d %r {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<4x4x20x20xf32>) -> tensor<4x4x10x10xf32> loc("stem_pool")
  %pb = graph.max_pool2d %r {kernel = array<i64: 16, 16>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<4x4x20x20xf32>) -> tensor<4x4x3x3xf32> loc("wide_pool")
  %pc = graph.max_pool2d %r {kernel = array<i64: 2, 2>, strides = array<i64: 3, 3>, padding = array<i64: 1, 1, 0, 0>} : (tensor<4x4x20x20xf32>) -> tensor<4x4x7x7xf32> loc("gapped_pool")
  %fa = graph.reshape %pa : (tensor<4x4x10x10xf32>) -> tensor<4x400xf32> loc("flatten_a")
  %fb = graph.reshape %pb : (tensor<4x4x3x3xf32>) -> tensor<4x36xf32> loc("flatten_b")
  %fc = graph.reshape %pc : (tensor<4x4x7x7xf32>) -> tensor<4x196xf32> loc("flatten_c")
  %f = graph.concat %fa, %fb, %fc {axis = 1 : i64} : (tensor<4x400xf32>, tensor<4x36xf32>, tensor<4x196xf32>) -> tensor<4x632xf32> loc("features")
  %y = graph.dense %f, %w2, %b2 : (tensor<4x632xf32>, tensor<632x6xf32>, tensor<6xf32>) -> tensor<4x6xf32> loc("fc")
  %sm = graph.softmax %y {axis = 1 : i64} : tensor<4x6xf32> loc("softmax")
  return %sm : tensor<4x6xf32>
}
