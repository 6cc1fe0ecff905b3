// RUN: graphc-opt %s --graphc-build-train-step='ignore-labels=true ignore-index=-100' | FileCheck %s --check-prefix=ONE
// RUN: graphc-opt %s --graphc-build-train-step='ignore-labels=true ignore-index=-100 micro-batches=2' | FileCheck %s --check-prefix=TWO
// RUN: not graphc-opt %s --graphc-build-train-step='ignore-labels=true loss=mse' 2>&1 | FileCheck %s --check-prefix=MSE

// An ignored label (PyTorch's CrossEntropyLoss(ignore_index=-100)): the loss and its gradient
// carry ignore_index and average over the labels that are not -100.
// ONE-LABEL: func.func @train_step(
// ONE-SAME: %[[W:.*]]: tensor<3x5xf32> {{.*}}, %[[X:.*]]: tensor<4x3xf32> {{.*}}, %[[Y:.*]]: tensor<4xi64>
// ONE: %[[P:.*]] = graph.dense %[[X]], %[[W]]
// ONE: %[[L:.*]] = graph.loss sparse_categorical_crossentropy %[[P]], %[[Y]] {from_logits, ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
// ONE: %[[D:.*]] = graph.loss_backward sparse_categorical_crossentropy %[[P]], %[[Y]] {from_logits, ignore_index = -100 : i64}
// ONE-NOT: graph.scale
// ONE: graph.sgd_update
// ONE: return %[[L]]

// With two micro-batches each loss divides by the count of the whole step's labels (`count`
// %Y), so the micro-batches' losses and gradients add up to the step's mean as they are: no
// 1/2 scale of the loss gradient or of the summed loss.
// TWO-LABEL: func.func @train_step(
// TWO-SAME: %[[Y:[a-z0-9]*]]: tensor<8xi64>
// TWO: %[[Y0:.*]] = graph.batch_slice %[[Y]] {count = 2 : i64, index = 0 : i64}
// TWO: %[[L0:.*]] = graph.loss sparse_categorical_crossentropy %{{.*}}, %[[Y0]] count %[[Y]] {from_logits, ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi64>, tensor<8xi64>) -> tensor<f32>
// TWO: graph.loss_backward sparse_categorical_crossentropy %{{.*}}, %[[Y0]] count %[[Y]] {from_logits, ignore_index = -100 : i64}
// TWO-NOT: graph.scale
// TWO: %[[Y1:.*]] = graph.batch_slice %[[Y]] {count = 2 : i64, index = 1 : i64}
// TWO: %[[L1:.*]] = graph.loss sparse_categorical_crossentropy %{{.*}}, %[[Y1]] count %[[Y]]
// TWO: %[[SUM:.*]] = graph.add %[[L0]], %[[L1]] : tensor<f32>
// TWO-NOT: graph.scale
// TWO: return %[[SUM]]

// Only sparse crossentropy has class indices to ignore.
// MSE: error: an ignored label (ignore-index -100) applies to sparse_categorical_crossentropy, not mse
func.func @forward(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<3x5xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x5xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32> loc("fc")
  %p = graph.softmax %y {axis = 1 : i64} : tensor<4x5xf32>
  return %p : tensor<4x5xf32>
}
