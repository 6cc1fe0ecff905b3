// A 4-layer MLP (32x64 activations, 64x64 weights, no biases): deep enough for rematerialization to pay.
func.func @forward(%x: tensor<32x64xf32> {graph.kind = "input", graph.name = "x"},
    %w0: tensor<64x64xf32> {graph.kind = "parameter", graph.name = "w0"},
    %w1: tensor<64x64xf32> {graph.kind = "parameter", graph.name = "w1"},
    %w2: tensor<64x64xf32> {graph.kind = "parameter", graph.name = "w2"},
    %w3: tensor<64x64xf32> {graph.kind = "parameter", graph.name = "w3"}) -> tensor<32x64xf32> {
  %h0 = graph.dense %x, %w0 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("fc0")
  %r0 = graph.relu %h0 : tensor<32x64xf32> loc("relu0")
  %h1 = graph.dense %r0, %w1 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("fc1")
  %r1 = graph.relu %h1 : tensor<32x64xf32> loc("relu1")
  %h2 = graph.dense %r1, %w2 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("fc2")
  %r2 = graph.relu %h2 : tensor<32x64xf32> loc("relu2")
  %h3 = graph.dense %r2, %w3 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("fc3")
  %r3 = graph.relu %h3 : tensor<32x64xf32> loc("relu3")
  return %r3 : tensor<32x64xf32>
}
