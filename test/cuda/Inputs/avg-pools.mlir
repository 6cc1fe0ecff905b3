// Average pooling as the CPU target divides (pool_window.h): count_include_pad with symmetric
// padding, a bottom/right-padded (ceil-mode) window without count_include_pad and one with it;
// an inference-form batch_norm (the running statistics normalise) after a convolution, and a
// training-mode batch_norm on a rank-2 input (one element per sample and channel). The batch-norm
// scales and statistics start from graph.init values (without one they would be zeros, and a zero
// scale would cut every gradient before it).
func.func @forward(%x: tensor<4x3x9x9xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<4x3x3x3xf32> {graph.kind = "parameter", graph.name = "conv1.weight"},
                   %g1: tensor<4xf32> {graph.kind = "parameter", graph.name = "bn1.weight", graph.init = dense<1.5> : tensor<4xf32>},
                   %b1: tensor<4xf32> {graph.kind = "parameter", graph.name = "bn1.bias", graph.init = dense<0.1> : tensor<4xf32>},
                   %m1: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "bn1.running_mean", graph.init = dense<0.05> : tensor<4xf32>},
                   %v1: tensor<4xf32> {graph.kind = "batch_stats", graph.name = "bn1.running_var", graph.init = dense<0.5> : tensor<4xf32>},
                   %w2: tensor<6x36xf32> {graph.kind = "parameter", graph.name = "fc.weight"},
                   %b2: tensor<6xf32> {graph.kind = "parameter", graph.name = "fc.bias"},
                   %g2: tensor<6xf32> {graph.kind = "parameter", graph.name = "bn2.weight", graph.init = dense<1.0> : tensor<6xf32>},
                   %c2: tensor<6xf32> {graph.kind = "parameter", graph.name = "bn2.bias"},
                   %m2: tensor<6xf32> {graph.kind = "batch_stats", graph.name = "bn2.running_mean"},
                   %v2: tensor<6xf32> {graph.kind = "batch_stats", graph.name = "bn2.running_var", graph.init = dense<1.0> : tensor<6xf32>}) -> tensor<4x6xf32> {
  %c = graph.conv2d %x, %w1 {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<4x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<4x4x9x9xf32> loc("conv1")
  %n:5 = graph.batch_norm %c, %g1, %b1, %m1, %v1 {epsilon = 1.0e-3 : f32, momentum = 0.0 : f32} : (tensor<4x4x9x9xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4x4x9x9xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) loc("bn1")
  %r = graph.tanh %n#0 : tensor<4x4x9x9xf32> loc("tanh")
  %p1 = graph.avg_pool2d %r {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad} : (tensor<4x4x9x9xf32>) -> tensor<4x4x5x5xf32> loc("pool1")
  %p2 = graph.avg_pool2d %p1 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>} : (tensor<4x4x5x5xf32>) -> tensor<4x4x3x3xf32> loc("pool2")
  %p3 = graph.avg_pool2d %p2 {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 1, 1>, count_include_pad} : (tensor<4x4x3x3xf32>) -> tensor<4x4x3x3xf32> loc("pool3")
  %f = graph.reshape %p3 : (tensor<4x4x3x3xf32>) -> tensor<4x36xf32> loc("flatten")
  %y = graph.dense %f, %w2, %b2 {transpose_weight} : (tensor<4x36xf32>, tensor<6x36xf32>, tensor<6xf32>) -> tensor<4x6xf32> loc("fc")
  %o:5 = graph.batch_norm %y, %g2, %c2, %m2, %v2 {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) loc("bn2")
  return %o#0 : tensor<4x6xf32>
}
