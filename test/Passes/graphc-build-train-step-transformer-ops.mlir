// RUN: graphc-opt %s --split-input-file --graphc-build-train-step | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-build-train-step --graphc-plan-memory --graphc-verify-plan | FileCheck %s --check-prefix=PIPE

// Autodiff of the ops a TransformerEncoder imports to (issue #6): a fused Q/K/V projection
// split by three slices, transposes, batch_matmul with transposes, a scale, softmax and
// layer_norm. Every built step also plans and passes the verifier.
// PIPE-COUNT-4: graph.arena_bytes

// The three slices tile the projection, so its gradient is the concat of theirs, emitted once;
// transpose's gradient is the transpose by the inverse permutation; Q K^T's gradients are
// batch_matmuls (dQ = dS K, dK = dS^T Q); layer_norm_backward feeds the scale and bias updates.
// CHECK-LABEL: func.func @train_step(
//       CHECK:   %[[QKV:.*]] = graph.dense
//       CHECK:   %[[Q:.*]] = graph.slice %[[QKV]] {axis = 1 : i64, offset = 0 : i64}
//       CHECK:   %[[K:.*]] = graph.slice %[[QKV]] {axis = 1 : i64, offset = 8 : i64}
//       CHECK:   %[[V:.*]] = graph.slice %[[QKV]] {axis = 1 : i64, offset = 16 : i64}
//       CHECK:   %[[KT:.*]] = graph.transpose %{{.*}} {perm = array<i64: 0, 2, 1>}
//       CHECK:   %[[S:.*]] = graph.batch_matmul %[[Q3:.*]], %[[KT]]
//       CHECK:   %[[SS:.*]] = graph.scale %[[S]] {factor = 5.000000e-01 : f32}
//       CHECK:   %[[P:.*]] = graph.softmax %[[SS]] {axis = 2 : i64}
//       CHECK:   %[[O:.*]] = graph.batch_matmul %[[P]], %{{.*}} :
//       CHECK:   %[[Y:.*]], %[[M:.*]], %[[IS:.*]] = graph.layer_norm
//       CHECK:   graph.loss_backward
//       CHECK:   %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = graph.layer_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[IS]]
//   CHECK-DAG:   graph.sgd_update %{{.*}}, %[[DG]]
//   CHECK-DAG:   graph.batch_matmul %[[P]], %{{.*}} {transpose_lhs}
//   CHECK-DAG:   %[[DP:.*]] = graph.batch_matmul %{{.*}}, %{{.*}} {transpose_rhs}
//       CHECK:   %[[DSS:.*]] = graph.softmax_backward %[[DP]], %[[P]] {axis = 2 : i64}
//       CHECK:   %[[DS:.*]] = graph.scale %[[DSS]] {factor = 5.000000e-01 : f32}
//   CHECK-DAG:   %[[DKT:.*]] = graph.batch_matmul %[[Q3]], %[[DS]] {transpose_lhs}
//   CHECK-DAG:   graph.batch_matmul %[[DS]], %[[KT]] {transpose_rhs}
//       CHECK:   graph.transpose %[[DKT]] {perm = array<i64: 0, 2, 1>}
//       CHECK:   graph.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x24xf32>
//   CHECK-NOT:   graph.concat
//       CHECK:   return
func.func @forward(%x: tensor<2x4x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<24x8xf32> {graph.kind = "parameter", graph.name = "in_proj"},
                   %g: tensor<8xf32> {graph.kind = "parameter", graph.name = "ln.weight"},
                   %b: tensor<8xf32> {graph.kind = "parameter", graph.name = "ln.bias"},
                   %fc: tensor<8x3xf32> {graph.kind = "parameter", graph.name = "fc"}) -> tensor<2x3xf32> {
  %rows = graph.reshape %x : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %qkv = graph.dense %rows, %w {transpose_weight} : (tensor<8x8xf32>, tensor<24x8xf32>) -> tensor<8x24xf32>
  %q = graph.slice %qkv {axis = 1 : i64, offset = 0 : i64} : (tensor<8x24xf32>) -> tensor<8x8xf32>
  %k = graph.slice %qkv {axis = 1 : i64, offset = 8 : i64} : (tensor<8x24xf32>) -> tensor<8x8xf32>
  %v = graph.slice %qkv {axis = 1 : i64, offset = 16 : i64} : (tensor<8x24xf32>) -> tensor<8x8xf32>
  %q3 = graph.reshape %q : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k3 = graph.reshape %k : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %v3 = graph.reshape %v : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %kt = graph.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = graph.batch_matmul %q3, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %ss = graph.scale %s {factor = 0.5 : f32} : tensor<2x4x4xf32>
  %p = graph.softmax %ss {axis = 2 : i64} : tensor<2x4x4xf32>
  %o = graph.batch_matmul %p, %v3 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y, %m, %is = graph.layer_norm %o, %g, %b {epsilon = 1.0e-05 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %yv = graph.reshape %y : (tensor<2x4x8xf32>) -> tensor<2x1x4x8xf32>
  %pool = graph.avg_pool2d %yv {kernel = array<i64: 4, 1>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x1x4x8xf32>) -> tensor<2x1x1x8xf32>
  %mean = graph.reshape %pool : (tensor<2x1x1x8xf32>) -> tensor<2x8xf32>
  %logits = graph.dense %mean, %fc : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32>
  return %logits : tensor<2x3xf32>
}


// -----

// rms_norm's gradient is rms_norm_backward, which reads the saved 1/rms and feeds the scale's
// update; a tensor read whole (the add) and as two slices (rotary embeddings' rotate_half) gets
// the slices' concat plus the whole reader's gradient.
// CHECK-LABEL: func.func @train_step(
//       CHECK:   %[[H:.*]], %[[IS:.*]] = graph.rms_norm
//       CHECK:   graph.loss_backward
//       CHECK:   %[[CAT:.*]] = graph.concat %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32>
//       CHECK:   %[[DH:.*]] = graph.add {{.*}}%[[CAT]]
//       CHECK:   %[[DX:.*]], %[[DG:.*]] = graph.rms_norm_backward %[[DH]], %{{.*}}, %{{.*}}, %[[IS]] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
//       CHECK:   graph.sgd_update %{{.*}}, %[[DG]]
func.func @forward(%x: tensor<2x4x8xf32> {graph.kind = "input", graph.name = "x"},
                   %g: tensor<8xf32> {graph.kind = "parameter", graph.name = "norm.weight"},
                   %fc: tensor<8x3xf32> {graph.kind = "parameter", graph.name = "fc"}) -> tensor<8x3xf32> {
  %h, %is = graph.rms_norm %x, %g {epsilon = 1.0e-06 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  %a = graph.slice %h {axis = 2 : i64, offset = 0 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %b = graph.slice %h {axis = 2 : i64, offset = 4 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %nb = graph.scale %b {factor = -1.0 : f32} : tensor<2x4x4xf32>
  %rot = graph.concat %nb, %a {axis = 2 : i64} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32>
  %sum = graph.add %h, %rot : tensor<2x4x8xf32>
  %rows = graph.reshape %sum : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %logits = graph.dense %rows, %fc : (tensor<8x8xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  return %logits : tensor<8x3xf32>
}

// -----

// broadcast_mul by a frozen table (rotary embeddings' cos) and by a trained per-feature
// scale: the input's gradient is broadcast_mul(dy, factor) through both; only the trained
// factor gets a gradient, the sum over the rows, ones [1, R] times the [R, N] products.
// CHECK-LABEL: func.func @train_step(
//       CHECK:   %[[Q:.*]] = graph.broadcast_mul %{{.*}}, %[[COS:.*]] : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
//       CHECK:   graph.broadcast_mul %[[Q]], %[[GAMMA:.*]] : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
//       CHECK:   graph.loss_backward
//   CHECK-DAG:   %[[P:.*]] = graph.mul %{{.*}}, %[[Q]] : tensor<2x4x8xf32>
//   CHECK-DAG:   %[[DQ:.*]] = graph.broadcast_mul %{{.*}}, %[[GAMMA]] : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
//   CHECK-DAG:   %[[ROWS:.*]] = graph.reshape %[[P]] : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
//   CHECK-DAG:   %[[ONES:.*]] = graph.fill {value = 1.000000e+00 : f32} : tensor<1x8xf32>
//   CHECK-DAG:   %[[SUM:.*]] = graph.dense %[[ONES]], %[[ROWS]] : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
//   CHECK-DAG:   %[[DG:.*]] = graph.reshape %[[SUM]] : (tensor<1x8xf32>) -> tensor<8xf32>
//   CHECK-DAG:   graph.sgd_update %[[GAMMA]], %[[DG]]
//       CHECK:   graph.broadcast_mul %[[DQ]], %[[COS]] : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
//   CHECK-NOT:   graph.sgd_update %[[COS]]
//       CHECK:   return
func.func @forward(%x: tensor<8x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<8x8xf32> {graph.kind = "parameter", graph.name = "w"},
                   %cos: tensor<4x8xf32> {graph.kind = "parameter", graph.name = "cos", graph.trainable = false},
                   %g: tensor<8xf32> {graph.kind = "parameter", graph.name = "gamma"},
                   %fc: tensor<8x3xf32> {graph.kind = "parameter", graph.name = "fc"}) -> tensor<8x3xf32> {
  %h = graph.dense %x, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %h3 = graph.reshape %h : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %q = graph.broadcast_mul %h3, %cos : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %s = graph.broadcast_mul %q, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %rows = graph.reshape %s : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %logits = graph.dense %rows, %fc : (tensor<8x8xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  return %logits : tensor<8x3xf32>
}

// -----

// rotary's gradient is the adjoint rotary ({transpose}) of the output gradient with the same
// tables, which get none; rotary of a trained table is refused (graphc-build-train-step-invalid).
// CHECK-LABEL: func.func @train_step(
//       CHECK:   graph.rotary %{{.*}}, %[[COS:.*]], %[[SIN:.*]] : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
//       CHECK:   graph.loss_backward
//       CHECK:   graph.rotary %{{.*}}, %[[COS]], %[[SIN]] {transpose} : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
//   CHECK-NOT:   graph.sgd_update %[[COS]]
//       CHECK:   return
func.func @forward(%x: tensor<8x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<8x8xf32> {graph.kind = "parameter", graph.name = "w"},
                   %cos: tensor<4x8xf32> {graph.kind = "parameter", graph.name = "cos", graph.trainable = false},
                   %sin: tensor<4x8xf32> {graph.kind = "parameter", graph.name = "sin", graph.trainable = false},
                   %fc: tensor<8x3xf32> {graph.kind = "parameter", graph.name = "fc"}) -> tensor<8x3xf32> {
  %h = graph.dense %x, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %h3 = graph.reshape %h : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %q = graph.rotary %h3, %cos, %sin : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %rows = graph.reshape %q : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %logits = graph.dense %rows, %fc : (tensor<8x8xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  return %logits : tensor<8x3xf32>
}

// -----

// Overlapping slices (a 3-D convolution's depth taps) are dealt into layers of disjoint ones:
// [0, 8) with zeros for [8, 24), then zeros for [0, 4), [4, 12) and zeros for [12, 24); the
// layers' concats are added into the input's one gradient.
// CHECK-LABEL: func.func @train_step
//       CHECK:   %[[Z1:.*]] = graph.fill {value = 0.000000e+00 : f32} : tensor<4x16xf32>
//       CHECK:   %[[L1:.*]] = graph.concat %[[GA:.*]], %[[Z1]] {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x24xf32>
//       CHECK:   %[[Z2:.*]] = graph.fill {value = 0.000000e+00 : f32} : tensor<4x4xf32>
//       CHECK:   %[[Z3:.*]] = graph.fill {value = 0.000000e+00 : f32} : tensor<4x12xf32>
//       CHECK:   %[[L2:.*]] = graph.concat %[[Z2]], %{{.*}}, %[[Z3]] {axis = 1 : i64} : (tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x12xf32>) -> tensor<4x24xf32>
//       CHECK:   %[[SUM:.*]] = graph.add %[[L1]], %[[L2]] : tensor<4x24xf32>
//       CHECK:   graph.matmul %{{.*}}, %[[SUM]] {transpose_lhs}
func.func @forward(%x: tensor<4x8xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<8x24xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x8xf32> {
  %h = graph.dense %x, %w : (tensor<4x8xf32>, tensor<8x24xf32>) -> tensor<4x24xf32>
  %a = graph.slice %h {axis = 1 : i64, offset = 0 : i64} : (tensor<4x24xf32>) -> tensor<4x8xf32>
  %b = graph.slice %h {axis = 1 : i64, offset = 4 : i64} : (tensor<4x24xf32>) -> tensor<4x8xf32>
  %s = graph.add %a, %b : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
