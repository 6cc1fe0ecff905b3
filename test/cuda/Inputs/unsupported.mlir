// A clip (ReLU6), which the CUDA target does not support yet.
func.func @forward(%x: tensor<4x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<8x3xf32> {graph.kind = "parameter", graph.name = "fc.weight"}) -> tensor<4x3xf32> {
  %y = graph.dense %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("fc")
  %c = graph.clip %y {min = 0.0 : f32, max = 6.0 : f32} : tensor<4x3xf32> loc("clip")
  return %c : tensor<4x3xf32>
}
