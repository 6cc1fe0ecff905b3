// A cast to bfloat16 written in the model, which the CUDA target does not support yet (its
// mixed-precision ops are refused).
func.func @forward(%x: tensor<4x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<8x3xf32> {graph.kind = "parameter", graph.name = "fc.weight"}) -> tensor<4x3xf32> {
  %y = graph.dense %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("fc")
  %h = graph.cast %y : tensor<4x3xf32> to tensor<4x3xbf16> loc("narrow")
  %r = graph.cast %h : tensor<4x3xbf16> to tensor<4x3xf32> loc("widen")
  return %r : tensor<4x3xf32>
}
