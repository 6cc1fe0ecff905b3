// RUN: graphc-opt %s --split-input-file --graphc-build-train-step='loss=mse' | FileCheck %s --check-prefix=ONE
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step='loss=mse micro-batches=2' | FileCheck %s --check-prefix=TWO
// RUN: not graphc-opt %s --split-input-file --graphc-build-train-step='loss=sparse_categorical_crossentropy ignore-labels=true' 2>&1 | FileCheck %s --check-prefix=IGNORE

// A forward function's second result marked graph.kind = "loss_weights" (a Keras output's
// mask, here 1 where a token id is not 0) weighs the loss's rows: the loss and its gradient
// take it after `weights`.
// ONE-LABEL: func.func @train_step(
// ONE-SAME: %[[IDS:[a-z0-9]*]]: tensor<2x4xf32> {{.*}}, %[[Y:[a-z0-9]*]]: tensor<2x4x5xf32>
// ONE: %[[EQ:.*]] = graph.activation equal %[[IDS]]
// ONE: %[[MASK:.*]] = graph.scale %[[EQ]]
// ONE: %[[P:.*]] = graph.reshape
// ONE: %[[L:.*]] = graph.loss mse %[[P]], %[[Y]] weights %[[MASK]] : (tensor<2x4x5xf32>, tensor<2x4x5xf32>, tensor<2x4xf32>) -> tensor<f32>
// ONE: graph.loss_backward mse %[[P]], %[[Y]] weights %[[MASK]] :
// ONE-NOT: graph.scale
// ONE: return %[[L]]

// With two micro-batches, both micro-batches' weights are computed first and concatenated:
// each loss divides by the whole step's weights (`count`), the micro-batches reuse their own
// weights, and no 1/2 scales the loss gradient or the summed loss.
// TWO-LABEL: func.func @train_step(
// TWO-SAME: %[[IDS:[a-z0-9]*]]: tensor<4x4xf32> {{.*}}, %[[Y:[a-z0-9]*]]: tensor<4x4x5xf32>
// TWO: %[[I0:.*]] = graph.batch_slice %[[IDS]] {count = 2 : i64, index = 0 : i64}
// TWO: %[[E0:.*]] = graph.activation equal %[[I0]]
// TWO: %[[W0:.*]] = graph.scale %[[E0]]
// TWO: %[[I1:.*]] = graph.batch_slice %[[IDS]] {count = 2 : i64, index = 1 : i64}
// TWO: %[[E1:.*]] = graph.activation equal %[[I1]]
// TWO: %[[W1:.*]] = graph.scale %[[E1]]
// TWO: %[[ALL:.*]] = graph.concat %[[W0]], %[[W1]] {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
// TWO-NOT: graph.activation equal
// TWO: %[[L0:.*]] = graph.loss mse %{{.*}}, %{{.*}} weights %[[W0]] count %[[ALL]]
// TWO: graph.loss_backward mse %{{.*}}, %{{.*}} weights %[[W0]] count %[[ALL]]
// TWO-NOT: graph.activation equal
// TWO: %[[L1:.*]] = graph.loss mse %{{.*}}, %{{.*}} weights %[[W1]] count %[[ALL]]
// TWO: %[[SUM:.*]] = graph.add %[[L0]], %[[L1]] : tensor<f32>
// TWO-NOT: graph.scale
// TWO: return %[[SUM]]

// An ignored label and loss weights together are refused.
// IGNORE: error: an ignored label (ignore-index -100) and the model's loss weights (a masked output) together are not supported
func.func @forward(%x: tensor<2x3xf32> {graph.kind = "input", graph.name = "x"},
                   %ids: tensor<2x4xf32> {graph.kind = "input", graph.name = "ids"},
                   %w: tensor<3x20xf32> {graph.kind = "parameter", graph.name = "w"})
    -> (tensor<2x4x5xf32>, tensor<2x4xf32> {graph.kind = "loss_weights"}) {
  %eq = graph.activation equal %ids {alpha = 0.0 : f32} : tensor<2x4xf32>
  %mask = graph.scale %eq {factor = -1.0 : f32, offset = 1.0 : f32} : tensor<2x4xf32>
  %y = graph.dense %x, %w : (tensor<2x3xf32>, tensor<3x20xf32>) -> tensor<2x20xf32>
  %p = graph.reshape %y : (tensor<2x20xf32>) -> tensor<2x4x5xf32>
  return %p, %mask : tensor<2x4x5xf32>, tensor<2x4xf32>
}
