// RUN: graphc-opt %s --split-input-file --verify-diagnostics --graphc-build-train-step='loss=mse micro-batches=2'

// With micro-batches, every micro-batch's loss weights are computed before the first loss,
// so they may depend on the data only, not on a parameter.
func.func @weights_from_a_parameter(%x: tensor<2x3xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<3x20xf32> {graph.kind = "parameter", graph.name = "w"})
    -> (tensor<2x4x5xf32>, tensor<2x4xf32> {graph.kind = "loss_weights"}) {
  // expected-error @+1 {{the loss weights depend on parameters, state or random draws; with micro-batches they may depend on the data only}}
  %y = graph.dense %x, %w : (tensor<2x3xf32>, tensor<3x20xf32>) -> tensor<2x20xf32>
  %p = graph.reshape %y : (tensor<2x20xf32>) -> tensor<2x4x5xf32>
  %s = graph.slice %p {axis = 2 : i64, offset = 0 : i64} : (tensor<2x4x5xf32>) -> tensor<2x4x1xf32>
  %m = graph.reshape %s : (tensor<2x4x1xf32>) -> tensor<2x4xf32>
  return %p, %m : tensor<2x4x5xf32>, tensor<2x4xf32>
}
