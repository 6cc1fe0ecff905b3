// Elementwise math on the CUDA target: a dense's output through exp, log and pow (x^2, sqrt,
// 1 / x, a fractional power), a row's L2 norm (an avg_pool2d of the squares) dividing it, then
// a softmax head; every activation kind's value and derivative go into fused elementwise
// kernels.
func.func @forward(%in: tensor<4x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<8x16xf32> {graph.kind = "parameter", graph.name = "fc1.weight"},
                   %w2: tensor<16x4xf32> {graph.kind = "parameter", graph.name = "fc2.weight"}) -> tensor<4x4xf32> {
  %h = graph.dense %in, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc1")
  %sq = graph.activation pow %h {alpha = 2.0 : f32} : tensor<4x16xf32> loc("square")
  %one = graph.scale %sq {factor = 1.0 : f32, offset = 1.0 : f32} : tensor<4x16xf32> loc("one_plus")
  %l = graph.activation log %one : tensor<4x16xf32> loc("log")
  %f = graph.activation pow %one {alpha = 0.75 : f32} : tensor<4x16xf32> loc("power")
  %e = graph.activation exp %l : tensor<4x16xf32> loc("exp")
  %s = graph.add %f, %e : tensor<4x16xf32> loc("sum")
  %v = graph.reshape %sq : (tensor<4x16xf32>) -> tensor<4x1x16x1xf32> loc("rows")
  %m = graph.avg_pool2d %v {kernel = array<i64: 16, 1>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<4x1x16x1xf32>) -> tensor<4x1x1x1xf32> loc("mean_square")
  %m2 = graph.reshape %m : (tensor<4x1x1x1xf32>) -> tensor<4x1xf32> loc("mean_rows")
  %n = graph.activation pow %m2 {alpha = 0.5 : f32} : tensor<4x1xf32> loc("norm")
  %r = graph.activation pow %n {alpha = -1.0 : f32} : tensor<4x1xf32> loc("reciprocal")
  %r3 = graph.reshape %r : (tensor<4x1xf32>) -> tensor<4x1x1xf32> loc("gate")
  %s3 = graph.reshape %s : (tensor<4x16xf32>) -> tensor<4x16x1xf32> loc("full")
  %p = graph.batch_matmul %s3, %r3 : (tensor<4x16x1xf32>, tensor<4x1x1xf32>) -> tensor<4x16x1xf32> loc("divide")
  %p2 = graph.reshape %p : (tensor<4x16x1xf32>) -> tensor<4x16xf32> loc("scaled")
  %y = graph.dense %p2, %w2 : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32> loc("fc2")
  %sm = graph.softmax %y {axis = 1 : i64} : tensor<4x4xf32> loc("softmax")
  return %sm : tensor<4x4xf32>
}
