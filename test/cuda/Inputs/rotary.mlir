// A rotary embedding on the CUDA target: the [2, 2, 6, 8] projection of the input rotated with
// frozen [6, 8] cos/sin tables (graph.rotary, and its adjoint in the backward pass).
func.func @forward(%in: tensor<2x6x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<8x16xf32> {graph.kind = "parameter", graph.name = "q.weight"},
                   %cos: tensor<6x8xf32> {graph.kind = "parameter", graph.name = "cos", graph.trainable = false},
                   %sin: tensor<6x8xf32> {graph.kind = "parameter", graph.name = "sin", graph.trainable = false},
                   %fc: tensor<96x4xf32> {graph.kind = "parameter", graph.name = "fc.weight"}) -> tensor<2x4xf32> {
  %x = graph.reshape %in : (tensor<2x6x8xf32>) -> tensor<12x8xf32> loc("rows")
  %q = graph.dense %x, %w : (tensor<12x8xf32>, tensor<8x16xf32>) -> tensor<12x16xf32> loc("q")
  %q4 = graph.reshape %q : (tensor<12x16xf32>) -> tensor<2x6x2x8xf32> loc("heads")
  %qt = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x6x2x8xf32>) -> tensor<2x2x6x8xf32> loc("heads_first")
  %r = graph.rotary %qt, %cos, %sin : (tensor<2x2x6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<2x2x6x8xf32> loc("rope")
  %f = graph.reshape %r : (tensor<2x2x6x8xf32>) -> tensor<2x96xf32> loc("flat")
  %y = graph.dense %f, %fc : (tensor<2x96xf32>, tensor<96x4xf32>) -> tensor<2x4xf32> loc("fc")
  %sm = graph.softmax %y {axis = 1 : i64} : tensor<2x4xf32> loc("softmax")
  return %sm : tensor<2x4xf32>
}
