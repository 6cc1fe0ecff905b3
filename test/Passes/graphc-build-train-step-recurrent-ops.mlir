// RUN: graphc-opt %s --split-input-file --graphc-build-train-step | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step --graphc-plan-memory --graphc-verify-plan | FileCheck %s --check-prefix=PIPE

// Autodiff of the ops that embedding and recurrent layers import to (issue #6): embedding,
// activation, mul and scale with an offset. Every built step also plans and passes the verifier.
// PIPE-COUNT-3: graph.arena_bytes

// The table's gradient is embedding_backward of the rows' gradient and the ids (the ids, data,
// get none); a product's operands get the output gradient times the other operand; an
// activation's backward reads its input; an affine scale's gradient drops the offset.
// CHECK-LABEL: func.func @train_step(
//       CHECK:   %[[E:.*]] = graph.embedding %[[IDS:.*]], %[[T:[^ ]*]] :
//       CHECK:   %[[A:.*]] = graph.activation gelu %[[ER:.*]] :
//       CHECK:   %[[G:.*]] = graph.scale %[[A]] {factor = -1.000000e+00 : f32, offset = 1.000000e+00 : f32}
//       CHECK:   %[[M:.*]] = graph.mul %[[G]], %[[A]] :
//       CHECK:   graph.loss_backward
//   CHECK-DAG:   %[[DG:.*]] = graph.mul %{{.*}}, %[[A]] :
//   CHECK-DAG:   %[[DA1:.*]] = graph.mul %{{.*}}, %[[G]] :
//       CHECK:   %[[DGS:.*]] = graph.scale %[[DG]] {factor = -1.000000e+00 : f32} :
//       CHECK:   %[[DA:.*]] = graph.add
//       CHECK:   %[[DX:.*]] = graph.activation_backward gelu %[[DA]], %[[ER]] :
//       CHECK:   %[[DT:.*]] = graph.embedding_backward %{{.*}}, %[[IDS]] : (tensor<2x3x4xf32>, tensor<2x3xf32>) -> tensor<10x4xf32>
//       CHECK:   graph.sgd_update %[[T]], %[[DT]]
func.func @forward(%ids: tensor<2x3xf32> {graph.kind = "input", graph.name = "ids"},
                   %table: tensor<10x4xf32> {graph.kind = "parameter", graph.name = "embedding"},
                   %w: tensor<12x2xf32> {graph.kind = "parameter", graph.name = "fc"}) -> tensor<2x2xf32> {
  %e = graph.embedding %ids, %table : (tensor<2x3xf32>, tensor<10x4xf32>) -> tensor<2x3x4xf32>
  %er = graph.reshape %e : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %a = graph.activation gelu %er : tensor<2x12xf32>
  %g = graph.scale %a {factor = -1.0 : f32, offset = 1.0 : f32} : tensor<2x12xf32>
  %m = graph.mul %g, %a : tensor<2x12xf32>
  %logits = graph.dense %m, %w : (tensor<2x12xf32>, tensor<12x2xf32>) -> tensor<2x2xf32>
  return %logits : tensor<2x2xf32>
}

// -----

// A parameter read only through slices that tile it (a GRU's [2, 3 units] bias: input and
// recurrent rows) gets one gradient, the concat of the slices', and one update.
// CHECK-LABEL: func.func @train_step(
//       CHECK:   %[[G:.*]] = graph.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
//       CHECK:   graph.sgd_update %{{.*}}, %[[G]] {{.*}} : tensor<2x3xf32>
func.func @forward(%x: tensor<2x4xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<4x3xf32> {graph.kind = "parameter", graph.name = "w"},
                   %b: tensor<2x3xf32> {graph.kind = "parameter", graph.name = "b"}) -> tensor<2x3xf32> {
  %0 = graph.slice %b {axis = 0 : i64, offset = 0 : i64} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  %1 = graph.reshape %0 : (tensor<1x3xf32>) -> tensor<3xf32>
  %2 = graph.slice %b {axis = 0 : i64, offset = 1 : i64} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  %3 = graph.reshape %2 : (tensor<1x3xf32>) -> tensor<3xf32>
  %4 = graph.dense %x, %w, %1 : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %5 = graph.dense %x, %w, %3 : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %6 = graph.add %4, %5 : tensor<2x3xf32>
  return %6 : tensor<2x3xf32>
}

// -----

// One slice of a sequence (`out[:, -1]` of an LSTM's outputs): its gradient is padded with
// zeros (graph.fill) for the steps it does not read.
// CHECK-LABEL: func.func @train_step(
//       CHECK:   %[[Z:.*]] = graph.fill {value = 0.000000e+00 : f32} : tensor<2x3x4xf32>
//       CHECK:   %[[G:.*]] = graph.concat %[[Z]], %{{.*}} {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x4x4xf32>
//       CHECK:   graph.reshape %[[G]] : (tensor<2x4x4xf32>) -> tensor<8x4xf32>
func.func @forward(%x: tensor<8x4xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<4x4xf32> {graph.kind = "parameter", graph.name = "w"},
                   %fc: tensor<4x3xf32> {graph.kind = "parameter", graph.name = "fc"}) -> tensor<2x3xf32> {
  %h = graph.dense %x, %w : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %seq = graph.reshape %h : (tensor<8x4xf32>) -> tensor<2x4x4xf32>
  %last = graph.slice %seq {axis = 1 : i64, offset = 3 : i64} : (tensor<2x4x4xf32>) -> tensor<2x1x4xf32>
  %l2 = graph.reshape %last : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
  %logits = graph.dense %l2, %fc : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %logits : tensor<2x3xf32>
}
