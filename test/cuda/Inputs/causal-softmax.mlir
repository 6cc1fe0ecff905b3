// Causal softmaxes (graph.softmax {causal}: query row i sees keys 0..i) on the CUDA target: one of
// 40 keys per row (a warp per row) and one of 5 keys for 6 queries (a thread per row; the last
// query's row is capped at the 5 keys), each on scores computed from the input by a dense.
func.func @forward(%in: tensor<2x6x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<8x40xf32> {graph.kind = "parameter", graph.name = "wide.weight"},
                   %w2: tensor<8x5xf32> {graph.kind = "parameter", graph.name = "narrow.weight"},
                   %w3: tensor<270x4xf32> {graph.kind = "parameter", graph.name = "fc.weight"}) -> tensor<2x4xf32> {
  %x = graph.reshape %in : (tensor<2x6x8xf32>) -> tensor<12x8xf32> loc("rows")
  %s1 = graph.dense %x, %w1 : (tensor<12x8xf32>, tensor<8x40xf32>) -> tensor<12x40xf32> loc("wide")
  %v1 = graph.reshape %s1 : (tensor<12x40xf32>) -> tensor<2x6x40xf32> loc("wide_scores")
  %p1 = graph.softmax %v1 {axis = 2 : i64, causal} : tensor<2x6x40xf32> loc("wide_softmax")
  %f1 = graph.reshape %p1 : (tensor<2x6x40xf32>) -> tensor<2x240xf32> loc("wide_flat")
  %s2 = graph.dense %x, %w2 : (tensor<12x8xf32>, tensor<8x5xf32>) -> tensor<12x5xf32> loc("narrow")
  %v2 = graph.reshape %s2 : (tensor<12x5xf32>) -> tensor<2x6x5xf32> loc("narrow_scores")
  %p2 = graph.softmax %v2 {axis = 2 : i64, causal} : tensor<2x6x5xf32> loc("narrow_softmax")
  %f2 = graph.reshape %p2 : (tensor<2x6x5xf32>) -> tensor<2x30xf32> loc("narrow_flat")
  %f = graph.concat %f1, %f2 {axis = 1 : i64} : (tensor<2x240xf32>, tensor<2x30xf32>) -> tensor<2x270xf32> loc("features")
  %y = graph.dense %f, %w3 : (tensor<2x270xf32>, tensor<270x4xf32>) -> tensor<2x4xf32> loc("fc")
  %sm = graph.softmax %y {axis = 1 : i64} : tensor<2x4xf32> loc("softmax")
  return %sm : tensor<2x4xf32>
}
