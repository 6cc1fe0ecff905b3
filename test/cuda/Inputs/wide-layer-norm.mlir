// Layer normalizations over rows of 4100 features (wider than kBlockRowWidth, and not a
// multiple of the 256 threads, so the last threads own one element fewer): a block per row on
// the CUDA target. The first has a trained scale and bias (the column kernel of their
// gradients); the second a unit scale and zero bias from fills, as a group norm's, whose
// gradients nothing reads.
func.func @forward(%x: tensor<6x4100xf32> {graph.kind = "input", graph.name = "x"},
                   %g: tensor<4100xf32> {graph.kind = "parameter", graph.name = "ln.weight"},
                   %b: tensor<4100xf32> {graph.kind = "parameter", graph.name = "ln.bias"},
                   %w: tensor<4100x3xf32> {graph.kind = "parameter", graph.name = "fc.weight"}) -> tensor<6x3xf32> {
  %y, %m, %s = graph.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : (tensor<6x4100xf32>, tensor<4100xf32>, tensor<4100xf32>) -> (tensor<6x4100xf32>, tensor<6xf32>, tensor<6xf32>) loc("ln")
  %r = graph.relu %y : tensor<6x4100xf32> loc("relu")
  %ones = graph.fill {value = 1.000000e+00 : f32} : tensor<4100xf32> loc("unit_scale")
  %zeros = graph.fill {value = 0.000000e+00 : f32} : tensor<4100xf32> loc("zero_bias")
  %z, %m2, %s2 = graph.layer_norm %r, %ones, %zeros {epsilon = 1.0e-03 : f32} : (tensor<6x4100xf32>, tensor<4100xf32>, tensor<4100xf32>) -> (tensor<6x4100xf32>, tensor<6xf32>, tensor<6xf32>) loc("group_norm")
  %o = graph.dense %z, %w : (tensor<6x4100xf32>, tensor<4100x3xf32>) -> tensor<6x3xf32> loc("fc")
  %p = graph.softmax %o {axis = 1 : i64} : tensor<6x3xf32> loc("softmax")
  return %p : tensor<6x3xf32>
}
