// A pre-norm residual MLP: 4 blocks of x + dense(relu(dense(layer_norm(x)))) on 256x128
// activations (hidden 256). Per-value recomputation cannot free the layer norms' outputs (an
// op with three results); segment recomputation clones each block from its residual input.
func.func @forward(%x0: tensor<256x128xf32> {graph.kind = "input", graph.name = "x"},
    %g0: tensor<128xf32> {graph.kind = "parameter", graph.name = "ln0.weight"},
    %b0: tensor<128xf32> {graph.kind = "parameter", graph.name = "ln0.bias"},
    %wa0: tensor<128x256xf32> {graph.kind = "parameter", graph.name = "fc0a"},
    %wb0: tensor<256x128xf32> {graph.kind = "parameter", graph.name = "fc0b"},
    %g1: tensor<128xf32> {graph.kind = "parameter", graph.name = "ln1.weight"},
    %b1: tensor<128xf32> {graph.kind = "parameter", graph.name = "ln1.bias"},
    %wa1: tensor<128x256xf32> {graph.kind = "parameter", graph.name = "fc1a"},
    %wb1: tensor<256x128xf32> {graph.kind = "parameter", graph.name = "fc1b"},
    %g2: tensor<128xf32> {graph.kind = "parameter", graph.name = "ln2.weight"},
    %b2: tensor<128xf32> {graph.kind = "parameter", graph.name = "ln2.bias"},
    %wa2: tensor<128x256xf32> {graph.kind = "parameter", graph.name = "fc2a"},
    %wb2: tensor<256x128xf32> {graph.kind = "parameter", graph.name = "fc2b"},
    %g3: tensor<128xf32> {graph.kind = "parameter", graph.name = "ln3.weight"},
    %b3: tensor<128xf32> {graph.kind = "parameter", graph.name = "ln3.bias"},
    %wa3: tensor<128x256xf32> {graph.kind = "parameter", graph.name = "fc3a"},
    %wb3: tensor<256x128xf32> {graph.kind = "parameter", graph.name = "fc3b"}) -> tensor<256x128xf32> {
  %y0, %m0, %s0 = graph.layer_norm %x0, %g0, %b0 {epsilon = 1.0e-05 : f32} : (tensor<256x128xf32>, tensor<128xf32>, tensor<128xf32>) -> (tensor<256x128xf32>, tensor<256xf32>, tensor<256xf32>) loc("ln0")
  %h0 = graph.dense %y0, %wa0 : (tensor<256x128xf32>, tensor<128x256xf32>) -> tensor<256x256xf32> loc("fc0a")
  %r0 = graph.relu %h0 : tensor<256x256xf32> loc("relu0")
  %o0 = graph.dense %r0, %wb0 : (tensor<256x256xf32>, tensor<256x128xf32>) -> tensor<256x128xf32> loc("fc0b")
  %x1 = graph.add %x0, %o0 : tensor<256x128xf32> loc("residual0")
  %y1, %m1, %s1 = graph.layer_norm %x1, %g1, %b1 {epsilon = 1.0e-05 : f32} : (tensor<256x128xf32>, tensor<128xf32>, tensor<128xf32>) -> (tensor<256x128xf32>, tensor<256xf32>, tensor<256xf32>) loc("ln1")
  %h1 = graph.dense %y1, %wa1 : (tensor<256x128xf32>, tensor<128x256xf32>) -> tensor<256x256xf32> loc("fc1a")
  %r1 = graph.relu %h1 : tensor<256x256xf32> loc("relu1")
  %o1 = graph.dense %r1, %wb1 : (tensor<256x256xf32>, tensor<256x128xf32>) -> tensor<256x128xf32> loc("fc1b")
  %x2 = graph.add %x1, %o1 : tensor<256x128xf32> loc("residual1")
  %y2, %m2, %s2 = graph.layer_norm %x2, %g2, %b2 {epsilon = 1.0e-05 : f32} : (tensor<256x128xf32>, tensor<128xf32>, tensor<128xf32>) -> (tensor<256x128xf32>, tensor<256xf32>, tensor<256xf32>) loc("ln2")
  %h2 = graph.dense %y2, %wa2 : (tensor<256x128xf32>, tensor<128x256xf32>) -> tensor<256x256xf32> loc("fc2a")
  %r2 = graph.relu %h2 : tensor<256x256xf32> loc("relu2")
  %o2 = graph.dense %r2, %wb2 : (tensor<256x256xf32>, tensor<256x128xf32>) -> tensor<256x128xf32> loc("fc2b")
  %x3 = graph.add %x2, %o2 : tensor<256x128xf32> loc("residual2")
  %y3, %m3, %s3 = graph.layer_norm %x3, %g3, %b3 {epsilon = 1.0e-05 : f32} : (tensor<256x128xf32>, tensor<128xf32>, tensor<128xf32>) -> (tensor<256x128xf32>, tensor<256xf32>, tensor<256xf32>) loc("ln3")
  %h3 = graph.dense %y3, %wa3 : (tensor<256x128xf32>, tensor<128x256xf32>) -> tensor<256x256xf32> loc("fc3a")
  %r3 = graph.relu %h3 : tensor<256x256xf32> loc("relu3")
  %o3 = graph.dense %r3, %wb3 : (tensor<256x256xf32>, tensor<256x128xf32>) -> tensor<256x128xf32> loc("fc3b")
  %x4 = graph.add %x3, %o3 : tensor<256x128xf32> loc("residual3")
  return %x4 : tensor<256x128xf32>
}
