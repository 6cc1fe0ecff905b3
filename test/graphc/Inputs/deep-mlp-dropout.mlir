// The 4-layer MLP of deep-mlp.mlir with dropout (ratio 0.25) after each hidden relu: each
// dropout output is read again by the backward pass (the next layer's weight gradient), so it
// is a rematerialization candidate.
func.func @forward(%x: tensor<32x64xf32> {graph.kind = "input", graph.name = "x"},
    %w0: tensor<64x64xf32> {graph.kind = "parameter", graph.name = "w0"},
    %w1: tensor<64x64xf32> {graph.kind = "parameter", graph.name = "w1"},
    %w2: tensor<64x64xf32> {graph.kind = "parameter", graph.name = "w2"},
    %w3: tensor<64x64xf32> {graph.kind = "parameter", graph.name = "w3"},
    %step: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"}) -> tensor<32x64xf32> {
  %h0 = graph.dense %x, %w0 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("fc0")
  %r0 = graph.relu %h0 : tensor<32x64xf32> loc("relu0")
  %d0 = graph.dropout %r0, %step {ratio = 0.25 : f32, op_id = 0} : (tensor<32x64xf32>, tensor<f32>) -> tensor<32x64xf32> loc("drop0")
  %h1 = graph.dense %d0, %w1 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("fc1")
  %r1 = graph.relu %h1 : tensor<32x64xf32> loc("relu1")
  %d1 = graph.dropout %r1, %step {ratio = 0.25 : f32, op_id = 1} : (tensor<32x64xf32>, tensor<f32>) -> tensor<32x64xf32> loc("drop1")
  %h2 = graph.dense %d1, %w2 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("fc2")
  %r2 = graph.relu %h2 : tensor<32x64xf32> loc("relu2")
  %d2 = graph.dropout %r2, %step {ratio = 0.25 : f32, op_id = 2} : (tensor<32x64xf32>, tensor<f32>) -> tensor<32x64xf32> loc("drop2")
  %h3 = graph.dense %d2, %w3 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("fc3")
  return %h3 : tensor<32x64xf32>
}
