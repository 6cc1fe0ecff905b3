// RUN: graphc-opt %s --split-input-file | graphc-opt --split-input-file | FileCheck %s
// RUN: graphc-opt %s --split-input-file --mlir-print-op-generic | graphc-opt --split-input-file | FileCheck %s

// Round trip of the ops that a TransformerEncoder imports to: batch_matmul, transpose,
// layer_norm, layer_norm_backward, rms_norm and rms_norm_backward (custom form, and generic form
// back to custom).

// CHECK-LABEL: func.func @attention_scores
//  CHECK-NEXT:   %[[S:.*]] = graph.batch_matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<16x16x8xf32>, tensor<16x16x8xf32>) -> tensor<16x16x16xf32>
//  CHECK-NEXT:   %[[T:.*]] = graph.batch_matmul %[[S]], %{{.*}} {transpose_lhs} : (tensor<16x16x16xf32>, tensor<16x16x8xf32>) -> tensor<16x16x8xf32>
func.func @attention_scores(%q: tensor<16x16x8xf32>, %k: tensor<16x16x8xf32>) -> tensor<16x16x8xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<16x16x8xf32>, tensor<16x16x8xf32>) -> tensor<16x16x16xf32>
  %t = graph.batch_matmul %s, %k {transpose_lhs} : (tensor<16x16x16xf32>, tensor<16x16x8xf32>) -> tensor<16x16x8xf32>
  return %t : tensor<16x16x8xf32>
}

// -----

// CHECK-LABEL: func.func @transpose
//  CHECK-NEXT:   graph.transpose %{{.*}} {perm = array<i64: 1, 2, 0>} : (tensor<4x16x32xf32>) -> tensor<16x32x4xf32>
func.func @transpose(%x: tensor<4x16x32xf32>) -> tensor<16x32x4xf32> {
  %y = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<4x16x32xf32>) -> tensor<16x32x4xf32>
  return %y : tensor<16x32x4xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
//  CHECK-NEXT:   %[[Y:.*]], %[[M:.*]], %[[S:.*]] = graph.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x16x32xf32>, tensor<64xf32>, tensor<64xf32>)
//  CHECK-NEXT:   graph.layer_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[S]] : (tensor<4x16x32xf32>, tensor<4x16x32xf32>, tensor<32xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
func.func @layer_norm(%x: tensor<4x16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>, %dy: tensor<4x16x32xf32>) -> tensor<4x16x32xf32> {
  %y, %mean, %invstd = graph.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : (tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x16x32xf32>, tensor<64xf32>, tensor<64xf32>)
  %dx, %dg, %db = graph.layer_norm_backward %dy, %x, %g, %mean, %invstd : (tensor<4x16x32xf32>, tensor<4x16x32xf32>, tensor<32xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
  return %dx : tensor<4x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @rms_norm
//  CHECK-NEXT:   %[[Y:.*]], %[[S:.*]] = graph.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<4x16x32xf32>, tensor<32xf32>) -> (tensor<4x16x32xf32>, tensor<64xf32>)
//  CHECK-NEXT:   graph.rms_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %[[S]] : (tensor<4x16x32xf32>, tensor<4x16x32xf32>, tensor<32xf32>, tensor<64xf32>) -> (tensor<4x16x32xf32>, tensor<32xf32>)
func.func @rms_norm(%x: tensor<4x16x32xf32>, %g: tensor<32xf32>, %dy: tensor<4x16x32xf32>) -> tensor<4x16x32xf32> {
  %y, %invstd = graph.rms_norm %x, %g {epsilon = 1.0e-06 : f32} : (tensor<4x16x32xf32>, tensor<32xf32>) -> (tensor<4x16x32xf32>, tensor<64xf32>)
  %dx, %dg = graph.rms_norm_backward %dy, %x, %g, %invstd : (tensor<4x16x32xf32>, tensor<4x16x32xf32>, tensor<32xf32>, tensor<64xf32>) -> (tensor<4x16x32xf32>, tensor<32xf32>)
  return %dx : tensor<4x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_mul
//  CHECK-NEXT:   graph.broadcast_mul %{{.*}}, %{{.*}} : (tensor<8x2x12x16xf32>, tensor<12x16xf32>) -> tensor<8x2x12x16xf32>
func.func @broadcast_mul(%q: tensor<8x2x12x16xf32>, %cos: tensor<12x16xf32>) -> tensor<8x2x12x16xf32> {
  %y = graph.broadcast_mul %q, %cos : (tensor<8x2x12x16xf32>, tensor<12x16xf32>) -> tensor<8x2x12x16xf32>
  return %y : tensor<8x2x12x16xf32>
}

// -----

// CHECK-LABEL: func.func @rotary
//  CHECK-NEXT:   %[[Y:.*]] = graph.rotary %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x2x12x16xf32>, tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<8x2x12x16xf32>
//  CHECK-NEXT:   graph.rotary %[[Y]], %{{.*}}, %{{.*}} {transpose} : (tensor<8x2x12x16xf32>, tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<8x2x12x16xf32>
func.func @rotary(%q: tensor<8x2x12x16xf32>, %cos: tensor<12x16xf32>, %sin: tensor<12x16xf32>) -> tensor<8x2x12x16xf32> {
  %y = graph.rotary %q, %cos, %sin : (tensor<8x2x12x16xf32>, tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<8x2x12x16xf32>
  %z = graph.rotary %y, %cos, %sin {transpose} : (tensor<8x2x12x16xf32>, tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<8x2x12x16xf32>
  return %z : tensor<8x2x12x16xf32>
}
