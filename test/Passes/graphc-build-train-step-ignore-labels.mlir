// RUN: graphc-opt %s --graphc-build-train-step='ignore-labels=true ignore-index=-100' | FileCheck %s --check-prefix=ONE
// RUN: graphc-opt %s --graphc-build-train-step='ignore-labels=true ignore-index=-100 micro-batches=2' | FileCheck %s --check-prefix=TWO
// RUN: not graphc-opt %s --graphc-build-train-step='ignore-labels=true loss=mse' 2>&1 | FileCheck %s --check-prefix=MSE
// RUN: graphc-opt %s --graphc-build-train-step='ignore-labels=true label-smoothing=0.25' | FileCheck %s --check-prefix=SMOOTH
// RUN: not graphc-opt %s --graphc-build-train-step='label-smoothing=0.25 loss=mse' 2>&1 | FileCheck %s --check-prefix=SMOOTHMSE
// RUN: graphc-opt %s --graphc-build-train-step='class-weights=1,2,3,4,5 micro-batches=2' | FileCheck %s --check-prefix=CLASSES
// RUN: not graphc-opt %s --graphc-build-train-step='class-weights=1,2' 2>&1 | FileCheck %s --check-prefix=CLASSCOUNT

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

// Label smoothing rides on the loss and its gradient, with the ignored label or without; mse
// has no targets to smooth.
// SMOOTH: graph.loss sparse_categorical_crossentropy {{.*}} {from_logits, ignore_index = -100 : i64, label_smoothing = 2.500000e-01 : f32}
// SMOOTH: graph.loss_backward sparse_categorical_crossentropy {{.*}} {from_logits, ignore_index = -100 : i64, label_smoothing = 2.500000e-01 : f32}
// SMOOTHMSE: error: label smoothing applies to the crossentropies, not mse

// Class weights ride on the loss and its gradient; with micro-batches each divides by the
// whole step's label weights (`count` of the step's labels), and nothing scales by 1/2. One
// weight per class.
// CLASSES-LABEL: func.func @train_step(
// CLASSES-SAME: %[[Y:[a-z0-9]*]]: tensor<8xi64>
// CLASSES: graph.loss sparse_categorical_crossentropy %{{.*}}, %{{.*}} count %[[Y]] {class_weights = array<f32: 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00>, from_logits}
// CLASSES-NOT: graph.scale
// CLASSES: graph.loss_backward sparse_categorical_crossentropy %{{.*}}, %{{.*}} count %[[Y]] {class_weights
// CLASSCOUNT: error: --class-weights gives 2 weights, but the model predicts 5 classes

// Only sparse crossentropy has class indices to ignore.
// MSE: error: an ignored label (ignore-index -100) applies to sparse_categorical_crossentropy, not mse
func.func @forward(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<3x5xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x5xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32> loc("fc")
  %p = graph.softmax %y {axis = 1 : i64} : tensor<4x5xf32>
  return %p : tensor<4x5xf32>
}
