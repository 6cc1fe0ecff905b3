// RUN: graphc-opt %s --split-input-file | graphc-opt --split-input-file | FileCheck %s
// RUN: graphc-opt %s --split-input-file --mlir-print-op-generic | graphc-opt --split-input-file | FileCheck %s

// Round trip of the ops that recurrent and embedding models import to: mul, scale with an
// offset, activation(_backward) and embedding(_backward) (custom form, and generic form back
// to custom).

// The gates of an LSTM cell: products of tensors of one type.
// CHECK-LABEL: func.func @gates
//  CHECK-NEXT:   %[[M:.*]] = graph.mul %{{.*}}, %{{.*}} : tensor<4x8xf32>
//  CHECK-NEXT:   %[[C:.*]] = graph.cast %[[M]]
//  CHECK-NEXT:   graph.mul %[[C]], %[[C]] : tensor<4x8xbf16>
func.func @gates(%f: tensor<4x8xf32>, %c: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  %fc = graph.mul %f, %c : tensor<4x8xf32>
  %h = graph.cast %fc : tensor<4x8xf32> to tensor<4x8xbf16>
  %sq = graph.mul %h, %h : tensor<4x8xbf16>
  return %sq : tensor<4x8xbf16>
}

// -----

// tf.keras 2's hard_sigmoid is clip(0.2 x + 0.5, 0, 1): the offset prints only when it is set.
// CHECK-LABEL: func.func @affine
//  CHECK-NEXT:   %[[A:.*]] = graph.scale %{{.*}} {factor = 2.000000e-01 : f32, offset = 5.000000e-01 : f32} : tensor<4x8xf32>
//  CHECK-NEXT:   graph.scale %[[A]] {factor = 2.000000e+00 : f32} : tensor<4x8xf32>
func.func @affine(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = graph.scale %x {factor = 0.2 : f32, offset = 0.5 : f32} : tensor<4x8xf32>
  %b = graph.scale %a {factor = 2.0 : f32} : tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// Every activation kind, with alpha where it matters (pow's exponent), and a backward.
// CHECK-LABEL: func.func @activations
//  CHECK-NEXT:   %[[G:.*]] = graph.activation gelu %{{.*}} : tensor<4x8xf32>
//  CHECK-NEXT:   %[[T:.*]] = graph.activation gelu_tanh %[[G]] : tensor<4x8xf32>
//  CHECK-NEXT:   %[[E:.*]] = graph.activation elu %[[T]] {alpha = 5.000000e-01 : f32} : tensor<4x8xf32>
//  CHECK-NEXT:   %[[S:.*]] = graph.activation selu %[[E]] : tensor<4x8xf32>
//  CHECK-NEXT:   %[[W:.*]] = graph.activation silu %[[S]] : tensor<4x8xf32>
//  CHECK-NEXT:   %[[P:.*]] = graph.activation softplus %[[W]] : tensor<4x8xf32>
//  CHECK-NEXT:   %[[N:.*]] = graph.activation softsign %[[P]] : tensor<4x8xf32>
//  CHECK-NEXT:   %[[L:.*]] = graph.activation leaky_relu %[[N]] {alpha = 3.000000e-01 : f32} : tensor<4x8xf32>
//  CHECK-NEXT:   %[[X:.*]] = graph.activation exp %[[L]] : tensor<4x8xf32>
//  CHECK-NEXT:   %[[O:.*]] = graph.activation log %[[X]] : tensor<4x8xf32>
//  CHECK-NEXT:   %[[R:.*]] = graph.activation pow %[[O]] {alpha = -5.000000e-01 : f32} : tensor<4x8xf32>
//  CHECK-NEXT:   %[[A:.*]] = graph.activation abs %[[R]] : tensor<4x8xf32>
//  CHECK-NEXT:   %[[Q:.*]] = graph.activation equal %[[A]] {alpha = 2.000000e+00 : f32} : tensor<4x8xf32>
//  CHECK-NEXT:   %[[G:.*]] = graph.activation greater %[[Q]] {alpha = 5.000000e-01 : f32} : tensor<4x8xf32>
//  CHECK-NEXT:   graph.activation_backward pow %[[G]], %[[O]] {alpha = -5.000000e-01 : f32} : tensor<4x8xf32>
func.func @activations(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %g = graph.activation gelu %x : tensor<4x8xf32>
  %t = graph.activation gelu_tanh %g : tensor<4x8xf32>
  %e = graph.activation elu %t {alpha = 0.5 : f32} : tensor<4x8xf32>
  %s = graph.activation selu %e : tensor<4x8xf32>
  %w = graph.activation silu %s : tensor<4x8xf32>
  %p = graph.activation softplus %w : tensor<4x8xf32>
  %n = graph.activation softsign %p : tensor<4x8xf32>
  %l = graph.activation leaky_relu %n {alpha = 0.3 : f32} : tensor<4x8xf32>
  %x2 = graph.activation exp %l : tensor<4x8xf32>
  %o = graph.activation log %x2 : tensor<4x8xf32>
  %r = graph.activation pow %o {alpha = -0.5 : f32} : tensor<4x8xf32>
  %a = graph.activation abs %r : tensor<4x8xf32>
  %q = graph.activation equal %a {alpha = 2.0 : f32} : tensor<4x8xf32>
  %c = graph.activation greater %q {alpha = 0.5 : f32} : tensor<4x8xf32>
  %d = graph.activation_backward pow %c, %o {alpha = -0.5 : f32} : tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// Token ids pick rows of the table; the backward sums the gradient rows into a table.
// CHECK-LABEL: func.func @embedding
//  CHECK-NEXT:   %[[E:.*]] = graph.embedding %{{.*}}, %{{.*}} : (tensor<2x5xf32>, tensor<100x16xf32>) -> tensor<2x5x16xf32>
//  CHECK-NEXT:   graph.embedding_backward %[[E]], %{{.*}} : (tensor<2x5x16xf32>, tensor<2x5xf32>) -> tensor<100x16xf32>
func.func @embedding(%ids: tensor<2x5xf32>, %table: tensor<100x16xf32>) -> tensor<100x16xf32> {
  %e = graph.embedding %ids, %table : (tensor<2x5xf32>, tensor<100x16xf32>) -> tensor<2x5x16xf32>
  %d = graph.embedding_backward %e, %ids : (tensor<2x5x16xf32>, tensor<2x5xf32>) -> tensor<100x16xf32>
  return %d : tensor<100x16xf32>
}

// -----

// The zero initial state of a recurrent layer.
// CHECK-LABEL: func.func @fill
//  CHECK-NEXT:   graph.fill {value = 0.000000e+00 : f32} : tensor<4x8xbf16>
func.func @fill() -> tensor<4x8xbf16> {
  %z = graph.fill {value = 0.0 : f32} : tensor<4x8xbf16>
  return %z : tensor<4x8xbf16>
}
