// Two dense layers wide enough that their products are compute-bound on a GPU (2 x 4096 x 2048
// x 2048 FLOPs against 42 MB in bf16): the cost model's 16-bit efficiency has work to price.
func.func @forward(%x: tensor<4096x2048xf32> {graph.kind = "input", graph.name = "x"},
                   %w1: tensor<2048x2048xf32> {graph.kind = "parameter", graph.name = "fc1.weight"},
                   %w2: tensor<2048x10xf32> {graph.kind = "parameter", graph.name = "fc2.weight"}) -> tensor<4096x10xf32> {
  %h = graph.dense %x, %w1 : (tensor<4096x2048xf32>, tensor<2048x2048xf32>) -> tensor<4096x2048xf32> loc("fc1")
  %r = graph.relu %h : tensor<4096x2048xf32> loc("relu")
  %y = graph.dense %r, %w2 : (tensor<4096x2048xf32>, tensor<2048x10xf32>) -> tensor<4096x10xf32> loc("fc2")
  %p = graph.softmax %y {axis = 1 : i64} : tensor<4096x10xf32> loc("softmax")
  return %p : tensor<4096x10xf32>
}
