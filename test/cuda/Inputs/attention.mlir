// Batched products of three different shapes (so that every cuBLAS dimension, leading dimension
// and stride of the emitted cublasSgemmStridedBatched is distinguishable): lhs transposed,
// rhs transposed and neither (in the backward pass), a layer_norm over 3 features, a softmax
// and a dropout on the attention-like scores. The layer-norm scale starts at 1 (graph.init; a
// 1-D parameter without one starts at 0, which would cut every gradient before it).
//   p = x w (a [10, 6] x [6, 3] dense, viewed [2, 5, 3]);  s = x^T p per sample: [2, 6, 3]
//   n = layer_norm(s);  t = n p^T per sample: [2, 6, 5];  a = dropout(softmax(t))  -> dense to 4
func.func @forward(%x: tensor<2x5x6xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<6x3xf32> {graph.kind = "parameter", graph.name = "proj.weight"},
                   %g: tensor<3xf32> {graph.kind = "parameter", graph.name = "norm.weight", graph.init = dense<1.0> : tensor<3xf32>},
                   %b: tensor<3xf32> {graph.kind = "parameter", graph.name = "norm.bias", graph.init = dense<0.1> : tensor<3xf32>},
                   %w2: tensor<30x4xf32> {graph.kind = "parameter", graph.name = "fc.weight"},
                   %step: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"}) -> tensor<2x4xf32> {
  %xf = graph.reshape %x : (tensor<2x5x6xf32>) -> tensor<10x6xf32> loc("rows")
  %pf = graph.dense %xf, %w : (tensor<10x6xf32>, tensor<6x3xf32>) -> tensor<10x3xf32> loc("proj")
  %p = graph.reshape %pf : (tensor<10x3xf32>) -> tensor<2x5x3xf32> loc("per_sample")
  %s = graph.batch_matmul %x, %p {transpose_lhs} : (tensor<2x5x6xf32>, tensor<2x5x3xf32>) -> tensor<2x6x3xf32> loc("xtp")
  %n:3 = graph.layer_norm %s, %g, %b {epsilon = 1.0e-05 : f32} : (tensor<2x6x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x6x3xf32>, tensor<12xf32>, tensor<12xf32>) loc("norm")
  %t = graph.batch_matmul %n#0, %p {transpose_rhs} : (tensor<2x6x3xf32>, tensor<2x5x3xf32>) -> tensor<2x6x5xf32> loc("scores")
  %a = graph.softmax %t {axis = 2 : i64} : tensor<2x6x5xf32> loc("softmax")
  %d = graph.dropout %a, %step {ratio = 0.2 : f32, op_id = 0} : (tensor<2x6x5xf32>, tensor<f32>) -> tensor<2x6x5xf32> loc("drop")
  %f = graph.reshape %d : (tensor<2x6x5xf32>) -> tensor<2x30xf32> loc("flatten")
  %y = graph.dense %f, %w2 : (tensor<2x30xf32>, tensor<30x4xf32>) -> tensor<2x4xf32> loc("fc")
  return %y : tensor<2x4xf32>
}
