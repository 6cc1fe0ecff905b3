// RMS normalizations on the CUDA target: rows of 40 features (a warp per row: lanes 0-7 own
// two elements, the others one) and of 5 (most lanes idle), each of a dense's output, trained
// through rms_norm_backward's column (scale) and row (input) kernels.
func.func @forward(%in: tensor<2x6x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<8x40xf32> {graph.kind = "parameter", graph.name = "wide.weight"},
                   %g1: tensor<40xf32> {graph.kind = "parameter", graph.name = "wide_norm.weight"},
                   %w2: tensor<8x5xf32> {graph.kind = "parameter", graph.name = "narrow.weight"},
                   %g2: tensor<5xf32> {graph.kind = "parameter", graph.name = "narrow_norm.weight"},
                   %w3: tensor<270x4xf32> {graph.kind = "parameter", graph.name = "fc.weight"}) -> tensor<2x4xf32> {
  %x = graph.reshape %in : (tensor<2x6x8xf32>) -> tensor<12x8xf32> loc("rows")
  %s1 = graph.dense %x, %w1 : (tensor<12x8xf32>, tensor<8x40xf32>) -> tensor<12x40xf32> loc("wide")
  %n1, %r1 = graph.rms_norm %s1, %g1 {epsilon = 1.0e-06 : f32} : (tensor<12x40xf32>, tensor<40xf32>) -> (tensor<12x40xf32>, tensor<12xf32>) loc("wide_norm")
  %f1 = graph.reshape %n1 : (tensor<12x40xf32>) -> tensor<2x240xf32> loc("wide_flat")
  %s2 = graph.dense %x, %w2 : (tensor<12x8xf32>, tensor<8x5xf32>) -> tensor<12x5xf32> loc("narrow")
  %n2, %r2 = graph.rms_norm %s2, %g2 {epsilon = 1.0e-05 : f32} : (tensor<12x5xf32>, tensor<5xf32>) -> (tensor<12x5xf32>, tensor<12xf32>) loc("narrow_norm")
  %f2 = graph.reshape %n2 : (tensor<12x5xf32>) -> tensor<2x30xf32> loc("narrow_flat")
  %f = graph.concat %f1, %f2 {axis = 1 : i64} : (tensor<2x240xf32>, tensor<2x30xf32>) -> tensor<2x270xf32> loc("features")
  %y = graph.dense %f, %w3 : (tensor<2x270xf32>, tensor<270x4xf32>) -> tensor<2x4xf32> loc("fc")
  %sm = graph.softmax %y {axis = 1 : i64} : tensor<2x4xf32> loc("softmax")
  return %sm : tensor<2x4xf32>
}
