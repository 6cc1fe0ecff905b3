// RUN: graphc-opt %s --graphc-build-train-step='sample-weights=true' | FileCheck %s --check-prefix=ONE
// RUN: graphc-opt %s --graphc-build-train-step='sample-weights=true micro-batches=2 optimizer=adam' | FileCheck %s --check-prefix=TWO
// RUN: graphc-opt %s --graphc-build-train-step='sample-weights=true temporal-sample-weights=true' | FileCheck %s --check-prefix=TEMPORAL

// Sample weights (Keras's fit(sample_weight)): the step takes one f32 per sample after the
// labels, and the loss and its gradient scale each sample's terms by it.
// ONE-LABEL: func.func @train_step(
// ONE-SAME: %[[Y:[a-z0-9]*]]: tensor<4xi64> {graph.kind = "input", graph.name = "labels", graph.role = "labels"}, %[[S:[a-z0-9]*]]: tensor<4xf32> {graph.kind = "input", graph.name = "sample_weight", graph.role = "sample_weights"})
// ONE: %[[L:.*]] = graph.loss sparse_categorical_crossentropy %{{.*}}, %[[Y]] sample_weights %[[S]] {from_logits} : (tensor<4x5xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<f32>
// ONE: graph.loss_backward sparse_categorical_crossentropy %{{.*}}, %[[Y]] sample_weights %[[S]] {from_logits}
// ONE: return %[[L]]

// With two micro-batches each takes its slice of the weights, like the labels' (the divisor
// stays the micro-batch's rows, so the gradient still scales by 1/2); the step argument
// follows the weights.
// TWO-LABEL: func.func @train_step(
// TWO-SAME: %[[S:[a-z0-9]*]]: tensor<8xf32> {graph.kind = "input", graph.name = "sample_weight", graph.role = "sample_weights"}, %{{.*}}: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"})
// TWO: %[[S0:.*]] = graph.batch_slice %[[S]] {count = 2 : i64, index = 0 : i64} : (tensor<8xf32>) -> tensor<4xf32>
// TWO: graph.loss sparse_categorical_crossentropy %{{.*}}, %{{.*}} sample_weights %[[S0]]
// TWO: %[[G0:.*]] = graph.loss_backward sparse_categorical_crossentropy %{{.*}}, %{{.*}} sample_weights %[[S0]]
// TWO: graph.scale %[[G0]] {factor = 5.000000e-01 : f32}
// TWO: %[[S1:.*]] = graph.batch_slice %[[S]] {count = 2 : i64, index = 1 : i64}
// TWO: graph.loss sparse_categorical_crossentropy %{{.*}}, %{{.*}} sample_weights %[[S1]]
// Temporal weights: one per label row, here the prediction's [4] rows of 5 classes (a
// sequence model's [N, positions]).
// TEMPORAL-LABEL: func.func @train_step(
// TEMPORAL-SAME: %{{[a-z0-9]*}}: tensor<4xf32> {graph.kind = "input", graph.name = "sample_weight", graph.role = "sample_weights"})
// TEMPORAL: graph.loss sparse_categorical_crossentropy {{.*}} sample_weights

func.func @forward(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<3x5xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x5xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32> loc("fc")
  %p = graph.softmax %y {axis = 1 : i64} : tensor<4x5xf32>
  return %p : tensor<4x5xf32>
}
