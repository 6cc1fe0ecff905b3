// Three conv -> training batch_norm -> relu blocks, the second with a residual connection
// (relu(bn2 + block 1's output)), then a global average pool and a dense softmax classifier:
// the shape of a ResNet stem, small enough for tests. Rematerialization
// keeps each convolution's output (its batch_norm's backward reads it) and recomputes the
// batch norm as graph.batch_norm_apply from the saved statistics, then the relu. Batch norm
// scales and running variances start at 1, as PyTorch's do.
func.func @forward(%x: tensor<8x3x12x12xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<8x3x3x3xf32> {graph.kind = "parameter", graph.name = "conv1.weight"},
                   %g1: tensor<8xf32> {graph.kind = "parameter", graph.name = "bn1.weight", graph.init = dense<1.0> : tensor<8xf32>},
                   %b1: tensor<8xf32> {graph.kind = "parameter", graph.name = "bn1.bias"},
                   %m1: tensor<8xf32> {graph.kind = "batch_stats", graph.name = "bn1.running_mean"},
                   %v1: tensor<8xf32> {graph.kind = "batch_stats", graph.name = "bn1.running_var", graph.init = dense<1.0> : tensor<8xf32>},
                   %w2: tensor<8x8x3x3xf32> {graph.kind = "parameter", graph.name = "conv2.weight"},
                   %g2: tensor<8xf32> {graph.kind = "parameter", graph.name = "bn2.weight", graph.init = dense<1.0> : tensor<8xf32>},
                   %b2: tensor<8xf32> {graph.kind = "parameter", graph.name = "bn2.bias"},
                   %m2: tensor<8xf32> {graph.kind = "batch_stats", graph.name = "bn2.running_mean"},
                   %v2: tensor<8xf32> {graph.kind = "batch_stats", graph.name = "bn2.running_var", graph.init = dense<1.0> : tensor<8xf32>},
                   %w3: tensor<8x8x3x3xf32> {graph.kind = "parameter", graph.name = "conv3.weight"},
                   %g3: tensor<8xf32> {graph.kind = "parameter", graph.name = "bn3.weight", graph.init = dense<1.0> : tensor<8xf32>},
                   %b3: tensor<8xf32> {graph.kind = "parameter", graph.name = "bn3.bias"},
                   %m3: tensor<8xf32> {graph.kind = "batch_stats", graph.name = "bn3.running_mean"},
                   %v3: tensor<8xf32> {graph.kind = "batch_stats", graph.name = "bn3.running_var", graph.init = dense<1.0> : tensor<8xf32>},
                   %fw: tensor<5x8xf32> {graph.kind = "parameter", graph.name = "fc.weight"},
                   %fb: tensor<5xf32> {graph.kind = "parameter", graph.name = "fc.bias"}) -> tensor<8x5xf32> {
  %c1 = graph.conv2d %x, %w1 {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x3x12x12xf32>, tensor<8x3x3x3xf32>) -> tensor<8x8x12x12xf32> loc("conv1")
  %n1:5 = graph.batch_norm %c1, %g1, %b1, %m1, %v1 {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<8x8x12x12xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8x8x12x12xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) loc("bn1")
  %r1 = graph.relu %n1#0 : tensor<8x8x12x12xf32> loc("relu1")
  %c2 = graph.conv2d %r1, %w2 {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x8x12x12xf32>, tensor<8x8x3x3xf32>) -> tensor<8x8x12x12xf32> loc("conv2")
  %n2:5 = graph.batch_norm %c2, %g2, %b2, %m2, %v2 {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<8x8x12x12xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8x8x12x12xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) loc("bn2")
  %a2 = graph.add %n2#0, %r1 : tensor<8x8x12x12xf32> loc("residual2")
  %r2 = graph.relu %a2 : tensor<8x8x12x12xf32> loc("relu2")
  %c3 = graph.conv2d %r2, %w3 {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x8x12x12xf32>, tensor<8x8x3x3xf32>) -> tensor<8x8x12x12xf32> loc("conv3")
  %n3:5 = graph.batch_norm %c3, %g3, %b3, %m3, %v3 {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<8x8x12x12xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8x8x12x12xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) loc("bn3")
  %r3 = graph.relu %n3#0 : tensor<8x8x12x12xf32> loc("relu3")
  %p = graph.avg_pool2d %r3 {kernel = array<i64: 12, 12>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<8x8x12x12xf32>) -> tensor<8x8x1x1xf32> loc("pool")
  %f = graph.reshape %p : (tensor<8x8x1x1xf32>) -> tensor<8x8xf32> loc("flatten")
  %o = graph.dense %f, %fw, %fb {transpose_weight} : (tensor<8x8xf32>, tensor<5x8xf32>, tensor<5xf32>) -> tensor<8x5xf32> loc("fc")
  %s = graph.softmax %o {axis = 1 : i64} : tensor<8x5xf32> loc("softmax")
  return %s : tensor<8x5xf32>
}
