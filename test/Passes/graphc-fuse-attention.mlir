// RUN: graphc-opt %s --split-input-file --graphc-fuse-attention | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-fuse-attention=query-block=4 | FileCheck %s --check-prefix=BLOCK

// The exported MultiheadAttention chain (scaled Q, K^T as a transpose of the stored K, softmax,
// dropout, times V) becomes one graph.attention; K^T's transpose becomes the one giving K.
// CHECK-LABEL: func.func @exported_chain
// CHECK: %[[K:.*]] = graph.transpose %arg1 {perm = array<i64: 1, 0, 2>} : (tensor<16x8x4xf32>) -> tensor<8x16x4xf32>
// CHECK-NEXT: %[[O:.*]] = graph.attention %arg0, %[[K]], %arg2, %arg3 {dropout_ratio = 1.000000e-01 : f32, op_id = 61 : i64, scale = 5.000000e-01 : f32} : (tensor<8x16x4xf32>, tensor<8x16x4xf32>, tensor<8x16x4xf32>, tensor<f32>) -> tensor<8x16x4xf32>
// CHECK-NEXT: return %[[O]]
// BLOCK-LABEL: func.func @exported_chain
// BLOCK: graph.attention {{.*}}graph.query_block = 4 : i64
func.func @exported_chain(%q: tensor<8x16x4xf32>, %k0: tensor<16x8x4xf32>, %v: tensor<8x16x4xf32>,
                          %step: tensor<f32>) -> tensor<8x16x4xf32> {
  %qs = graph.scale %q {factor = 0.5 : f32} : tensor<8x16x4xf32>
  %kt = graph.transpose %k0 {perm = array<i64: 1, 2, 0>} : (tensor<16x8x4xf32>) -> tensor<8x4x16xf32>
  %s = graph.batch_matmul %qs, %kt : (tensor<8x16x4xf32>, tensor<8x4x16xf32>) -> tensor<8x16x16xf32>
  %p = graph.softmax %s {axis = 2 : i64} : tensor<8x16x16xf32>
  %d = graph.dropout %p, %step {op_id = 61 : i64, ratio = 0.1 : f32} : (tensor<8x16x16xf32>, tensor<f32>) -> tensor<8x16x16xf32>
  %o = graph.batch_matmul %d, %v : (tensor<8x16x16xf32>, tensor<8x16x4xf32>) -> tensor<8x16x4xf32>
  return %o : tensor<8x16x4xf32>
}

// -----

// Scores scaled after the product, K stored [B, N, D] (transpose_rhs), no dropout: no step
// operand, and no transpose is needed.
// CHECK-LABEL: func.func @scaled_scores
// CHECK-NEXT: %[[O:.*]] = graph.attention %arg0, %arg1, %arg2 {scale = 2.500000e-01 : f32} : (tensor<2x8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x3xf32>) -> tensor<2x8x3xf32>
// CHECK-NEXT: return %[[O]]
func.func @scaled_scores(%q: tensor<2x8x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x3xf32>) -> tensor<2x8x3xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<2x8x4xf32>, tensor<2x6x4xf32>) -> tensor<2x8x6xf32>
  %ss = graph.scale %s {factor = 0.25 : f32} : tensor<2x8x6xf32>
  %p = graph.softmax %ss {axis = 2 : i64} : tensor<2x8x6xf32>
  %o = graph.batch_matmul %p, %v : (tensor<2x8x6xf32>, tensor<2x6x3xf32>) -> tensor<2x8x3xf32>
  return %o : tensor<2x8x3xf32>
}

// -----

// K^T whose transpose only swaps the last two axes: K is the transpose's input itself.
// CHECK-LABEL: func.func @key_transposed_in_place
// CHECK-NOT: graph.transpose
// CHECK: graph.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f32}
func.func @key_transposed_in_place(%q: tensor<2x8x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x3xf32>) -> tensor<2x8x3xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x6x4xf32>) -> tensor<2x4x6xf32>
  %s = graph.batch_matmul %q, %kt : (tensor<2x8x4xf32>, tensor<2x4x6xf32>) -> tensor<2x8x6xf32>
  %p = graph.softmax %s {axis = 2 : i64} : tensor<2x8x6xf32>
  %o = graph.batch_matmul %p, %v : (tensor<2x8x6xf32>, tensor<2x6x3xf32>) -> tensor<2x8x3xf32>
  return %o : tensor<2x8x3xf32>
}

// -----

// Probabilities read twice (returned too) must exist anyway: nothing is fused.
// CHECK-LABEL: func.func @probabilities_returned
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @probabilities_returned(%q: tensor<2x8x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x3xf32>)
    -> (tensor<2x8x3xf32>, tensor<2x8x6xf32>) {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<2x8x4xf32>, tensor<2x6x4xf32>) -> tensor<2x8x6xf32>
  %p = graph.softmax %s {axis = 2 : i64} : tensor<2x8x6xf32>
  %o = graph.batch_matmul %p, %v : (tensor<2x8x6xf32>, tensor<2x6x3xf32>) -> tensor<2x8x3xf32>
  return %o, %p : tensor<2x8x3xf32>, tensor<2x8x6xf32>
}

// -----

// A softmax over the queries (axis 1) is not attention over the keys: nothing is fused.
// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT: graph.attention
func.func @softmax_over_queries(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x3xf32>) -> tensor<2x8x3xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  %p = graph.softmax %s {axis = 1 : i64} : tensor<2x8x8xf32>
  %o = graph.batch_matmul %p, %v : (tensor<2x8x8xf32>, tensor<2x8x3xf32>) -> tensor<2x8x3xf32>
  return %o : tensor<2x8x3xf32>
}

// -----

// A causal softmax (a decoder's self-attention) makes a causal attention.
// CHECK-LABEL: func.func @causal_scores
// CHECK-NEXT: %[[O:.*]] = graph.attention %arg0, %arg1, %arg2 {causal, scale = 2.500000e-01 : f32} : (tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<2x6x3xf32>) -> tensor<2x6x3xf32>
// CHECK-NEXT: return %[[O]]
func.func @causal_scores(%q: tensor<2x6x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x3xf32>) -> tensor<2x6x3xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<2x6x4xf32>, tensor<2x6x4xf32>) -> tensor<2x6x6xf32>
  %ss = graph.scale %s {factor = 0.25 : f32} : tensor<2x6x6xf32>
  %p = graph.softmax %ss {axis = 2 : i64, causal} : tensor<2x6x6xf32>
  %o = graph.batch_matmul %p, %v : (tensor<2x6x6xf32>, tensor<2x6x3xf32>) -> tensor<2x6x3xf32>
  return %o : tensor<2x6x3xf32>
}

// -----

// A model's own q @ k.transpose(-2, -1) on [batch, heads, seq, width] tensors (nanoGPT's): the
// importer's 3-D batch_matmul between reshapes of the leading axes, K^T a reshape of a
// transpose, the causal softmax on the 4-D view. K becomes the transpose with the last two
// axes swapped back, merged by the same reshape.
// CHECK-LABEL: func.func @four_d_scores
// CHECK: %[[KT:.*]] = graph.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x6x3x4xf32>) -> tensor<2x3x6x4xf32>
// CHECK-NEXT: %[[K:.*]] = graph.reshape %[[KT]] : (tensor<2x3x6x4xf32>) -> tensor<6x6x4xf32>
// CHECK-NEXT: %[[O:.*]] = graph.attention %arg0, %[[K]], %arg2 {causal, scale = 5.000000e-01 : f32} : (tensor<6x6x4xf32>, tensor<6x6x4xf32>, tensor<6x6x4xf32>) -> tensor<6x6x4xf32>
// CHECK-NEXT: return %[[O]]
func.func @four_d_scores(%q: tensor<6x6x4xf32>, %k0: tensor<2x6x3x4xf32>, %v: tensor<6x6x4xf32>) -> tensor<6x6x4xf32> {
  %kt4 = graph.transpose %k0 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x6x3x4xf32>) -> tensor<2x3x4x6xf32>
  %kt = graph.reshape %kt4 : (tensor<2x3x4x6xf32>) -> tensor<6x4x6xf32>
  %s = graph.batch_matmul %q, %kt : (tensor<6x6x4xf32>, tensor<6x4x6xf32>) -> tensor<6x6x6xf32>
  %s4 = graph.reshape %s : (tensor<6x6x6xf32>) -> tensor<2x3x6x6xf32>
  %ss = graph.scale %s4 {factor = 0.5 : f32} : tensor<2x3x6x6xf32>
  %p4 = graph.softmax %ss {axis = 3 : i64, causal} : tensor<2x3x6x6xf32>
  %p = graph.reshape %p4 : (tensor<2x3x6x6xf32>) -> tensor<6x6x6xf32>
  %o = graph.batch_matmul %p, %v : (tensor<6x6x6xf32>, tensor<6x6x4xf32>) -> tensor<6x6x4xf32>
  return %o : tensor<6x6x4xf32>
}

// -----

// A key-padding mask added to the scaled scores as the importers broadcast it (a [2, 1, 1, 6]
// mask copied to every head and query row by a product with ones): the attention takes it as
// bias [2, 6] (batch 2, 2 heads per bias row), and the broadcast is gone.
// CHECK-LABEL: func.func @key_padding_bias
// CHECK: %[[BIAS:.*]] = graph.reshape %arg3 : (tensor<2x1x1x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[O:.*]] = graph.attention %arg0, %arg1, %arg2 bias %[[BIAS]] {scale = 2.500000e-01 : f32} : (tensor<4x8x4xf32>, tensor<4x6x4xf32>, tensor<4x6x3xf32>, tensor<2x6xf32>) -> tensor<4x8x3xf32>
// CHECK-NOT: graph.fill
// CHECK-NOT: graph.softmax
func.func @key_padding_bias(%q: tensor<4x8x4xf32>, %k: tensor<4x6x4xf32>, %v: tensor<4x6x3xf32>,
                            %mask: tensor<2x1x1x6xf32> {graph.kind = "input"}) -> tensor<4x8x3xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<4x8x4xf32>, tensor<4x6x4xf32>) -> tensor<4x8x6xf32>
  %s4 = graph.reshape %s : (tensor<4x8x6xf32>) -> tensor<2x2x8x6xf32>
  %ss = graph.scale %s4 {factor = 0.25 : f32} : tensor<2x2x8x6xf32>
  %ones = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %rows = graph.reshape %mask : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %copies = graph.batch_matmul %ones, %rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %bias = graph.reshape %copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %sum = graph.add %ss, %bias : tensor<2x2x8x6xf32>
  %p = graph.softmax %sum {axis = 3 : i64} : tensor<2x2x8x6xf32>
  %p3 = graph.reshape %p : (tensor<2x2x8x6xf32>) -> tensor<4x8x6xf32>
  %o = graph.batch_matmul %p3, %v : (tensor<4x8x6xf32>, tensor<4x6x3xf32>) -> tensor<4x8x3xf32>
  return %o : tensor<4x8x3xf32>
}

// -----

// masked_fill(pad, -inf) of the scaled scores, as the importers hold Where(pad, fill, scores):
// fill * pad + scores * (1 - pad), both broadcast over heads and queries. The attention takes
// fill * pad as bias [2, 6] with bias_fills, and the multiply and both broadcasts are gone.
// CHECK-LABEL: func.func @masked_fill
// CHECK: %[[FILL:.*]] = graph.scale %{{.*}} {factor = -3.40282347E+38 : f32} : tensor<2x1x1x6xf32>
// CHECK: %[[BIAS:.*]] = graph.reshape %[[FILL]] : (tensor<2x1x1x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[O:.*]] = graph.attention %arg0, %arg1, %arg2 bias %[[BIAS]] {bias_fills, scale = 2.500000e-01 : f32} : (tensor<4x8x4xf32>, tensor<4x6x4xf32>, tensor<4x6x3xf32>, tensor<2x6xf32>) -> tensor<4x8x3xf32>
// CHECK-NOT: graph.mul
// CHECK-NOT: graph.batch_matmul
// CHECK-NOT: graph.softmax
func.func @masked_fill(%q: tensor<4x8x4xf32>, %k: tensor<4x6x4xf32>, %v: tensor<4x6x3xf32>,
                            %tokens: tensor<2x1x1x6xf32> {graph.kind = "input"}) -> tensor<4x8x3xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<4x8x4xf32>, tensor<4x6x4xf32>) -> tensor<4x8x6xf32>
  %s4 = graph.reshape %s : (tensor<4x8x6xf32>) -> tensor<2x2x8x6xf32>
  %ss = graph.scale %s4 {factor = 0.25 : f32} : tensor<2x2x8x6xf32>
  %pad = graph.activation equal %tokens {alpha = 0.0 : f32} : tensor<2x1x1x6xf32>
  %keep = graph.scale %pad {factor = -1.0 : f32, offset = 1.0 : f32} : tensor<2x1x1x6xf32>
  %fill = graph.scale %pad {factor = -3.40282347E+38 : f32} : tensor<2x1x1x6xf32>
  %ones = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %keep_rows = graph.reshape %keep : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %keep_copies = graph.batch_matmul %ones, %keep_rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %keep_b = graph.reshape %keep_copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %kept = graph.mul %ss, %keep_b : tensor<2x2x8x6xf32>
  %ones2 = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %fill_rows = graph.reshape %fill : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %fill_copies = graph.batch_matmul %ones2, %fill_rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %fill_b = graph.reshape %fill_copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %sum = graph.add %fill_b, %kept : tensor<2x2x8x6xf32>
  %p = graph.softmax %sum {axis = 3 : i64} : tensor<2x2x8x6xf32>
  %p3 = graph.reshape %p : (tensor<2x2x8x6xf32>) -> tensor<4x8x6xf32>
  %o = graph.batch_matmul %p3, %v : (tensor<4x8x6xf32>, tensor<4x6x3xf32>) -> tensor<4x8x3xf32>
  return %o : tensor<4x8x3xf32>
}

// -----

// The other operand orders (Where(keep, scores, fill), the products commuted) fuse the
// same way: the fill multiplies the complement of the mask that keeps.
// CHECK-LABEL: func.func @masked_fill_kept_first
// CHECK: %[[FILL:.*]] = graph.scale %{{.*}} {factor = -3.40282347E+38 : f32} : tensor<2x1x1x6xf32>
// CHECK: %[[BIAS:.*]] = graph.reshape %[[FILL]] : (tensor<2x1x1x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[O:.*]] = graph.attention %arg0, %arg1, %arg2 bias %[[BIAS]] {bias_fills, scale = 2.500000e-01 : f32} : (tensor<4x8x4xf32>, tensor<4x6x4xf32>, tensor<4x6x3xf32>, tensor<2x6xf32>) -> tensor<4x8x3xf32>
// CHECK-NOT: graph.mul
// CHECK-NOT: graph.batch_matmul
// CHECK-NOT: graph.softmax
func.func @masked_fill_kept_first(%q: tensor<4x8x4xf32>, %k: tensor<4x6x4xf32>, %v: tensor<4x6x3xf32>,
                            %tokens: tensor<2x1x1x6xf32> {graph.kind = "input"}) -> tensor<4x8x3xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<4x8x4xf32>, tensor<4x6x4xf32>) -> tensor<4x8x6xf32>
  %s4 = graph.reshape %s : (tensor<4x8x6xf32>) -> tensor<2x2x8x6xf32>
  %ss = graph.scale %s4 {factor = 0.25 : f32} : tensor<2x2x8x6xf32>
  %keep_c = graph.activation equal %tokens {alpha = 0.0 : f32} : tensor<2x1x1x6xf32>
  %pad = graph.scale %keep_c {factor = -1.0 : f32, offset = 1.0 : f32} : tensor<2x1x1x6xf32>
  %fill = graph.scale %pad {factor = -3.40282347E+38 : f32} : tensor<2x1x1x6xf32>
  %ones = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %keep_rows = graph.reshape %keep_c : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %keep_copies = graph.batch_matmul %ones, %keep_rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %keep_b = graph.reshape %keep_copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %kept = graph.mul %keep_b, %ss : tensor<2x2x8x6xf32>
  %ones2 = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %fill_rows = graph.reshape %fill : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %fill_copies = graph.batch_matmul %ones2, %fill_rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %fill_b = graph.reshape %fill_copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %sum = graph.add %kept, %fill_b : tensor<2x2x8x6xf32>
  %p = graph.softmax %sum {axis = 3 : i64} : tensor<2x2x8x6xf32>
  %p3 = graph.reshape %p : (tensor<2x2x8x6xf32>) -> tensor<4x8x6xf32>
  %o = graph.batch_matmul %p3, %v : (tensor<4x8x6xf32>, tensor<4x6x3xf32>) -> tensor<4x8x3xf32>
  return %o : tensor<4x8x3xf32>
}

// -----

// A mask that is not provably 0 or 1 (an input, not a comparison) could mix the score and the
// fill: the chain stays unfused.
// CHECK-LABEL: func.func @fill_of_any_mask
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @fill_of_any_mask(%q: tensor<4x8x4xf32>, %k: tensor<4x6x4xf32>, %v: tensor<4x6x3xf32>,
                            %tokens: tensor<2x1x1x6xf32> {graph.kind = "input"}) -> tensor<4x8x3xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<4x8x4xf32>, tensor<4x6x4xf32>) -> tensor<4x8x6xf32>
  %s4 = graph.reshape %s : (tensor<4x8x6xf32>) -> tensor<2x2x8x6xf32>
  %ss = graph.scale %s4 {factor = 0.25 : f32} : tensor<2x2x8x6xf32>
  %pad = graph.scale %tokens {factor = 1.0 : f32} : tensor<2x1x1x6xf32>
  %keep = graph.scale %pad {factor = -1.0 : f32, offset = 1.0 : f32} : tensor<2x1x1x6xf32>
  %fill = graph.scale %pad {factor = -3.40282347E+38 : f32} : tensor<2x1x1x6xf32>
  %ones = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %keep_rows = graph.reshape %keep : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %keep_copies = graph.batch_matmul %ones, %keep_rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %keep_b = graph.reshape %keep_copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %kept = graph.mul %ss, %keep_b : tensor<2x2x8x6xf32>
  %ones2 = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %fill_rows = graph.reshape %fill : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %fill_copies = graph.batch_matmul %ones2, %fill_rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %fill_b = graph.reshape %fill_copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %sum = graph.add %fill_b, %kept : tensor<2x2x8x6xf32>
  %p = graph.softmax %sum {axis = 3 : i64} : tensor<2x2x8x6xf32>
  %p3 = graph.reshape %p : (tensor<2x2x8x6xf32>) -> tensor<4x8x6xf32>
  %o = graph.batch_matmul %p3, %v : (tensor<4x8x6xf32>, tensor<4x6x3xf32>) -> tensor<4x8x3xf32>
  return %o : tensor<4x8x3xf32>
}

// -----

// A fill of 0 would be indistinguishable from the kept scores' bias of 0: unfused.
// CHECK-LABEL: func.func @fill_of_zero
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @fill_of_zero(%q: tensor<4x8x4xf32>, %k: tensor<4x6x4xf32>, %v: tensor<4x6x3xf32>,
                            %tokens: tensor<2x1x1x6xf32> {graph.kind = "input"}) -> tensor<4x8x3xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<4x8x4xf32>, tensor<4x6x4xf32>) -> tensor<4x8x6xf32>
  %s4 = graph.reshape %s : (tensor<4x8x6xf32>) -> tensor<2x2x8x6xf32>
  %ss = graph.scale %s4 {factor = 0.25 : f32} : tensor<2x2x8x6xf32>
  %pad = graph.activation equal %tokens {alpha = 0.0 : f32} : tensor<2x1x1x6xf32>
  %keep = graph.scale %pad {factor = -1.0 : f32, offset = 1.0 : f32} : tensor<2x1x1x6xf32>
  %fill = graph.scale %pad {factor = 0.0 : f32} : tensor<2x1x1x6xf32>
  %ones = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %keep_rows = graph.reshape %keep : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %keep_copies = graph.batch_matmul %ones, %keep_rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %keep_b = graph.reshape %keep_copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %kept = graph.mul %ss, %keep_b : tensor<2x2x8x6xf32>
  %ones2 = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %fill_rows = graph.reshape %fill : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %fill_copies = graph.batch_matmul %ones2, %fill_rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %fill_b = graph.reshape %fill_copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %sum = graph.add %fill_b, %kept : tensor<2x2x8x6xf32>
  %p = graph.softmax %sum {axis = 3 : i64} : tensor<2x2x8x6xf32>
  %p3 = graph.reshape %p : (tensor<2x2x8x6xf32>) -> tensor<4x8x6xf32>
  %o = graph.batch_matmul %p3, %v : (tensor<4x8x6xf32>, tensor<4x6x3xf32>) -> tensor<4x8x3xf32>
  return %o : tensor<4x8x3xf32>
}

// -----

// A product by the mask itself rather than its complement is not a masked_fill: unfused.
// CHECK-LABEL: func.func @fill_without_complement
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @fill_without_complement(%q: tensor<4x8x4xf32>, %k: tensor<4x6x4xf32>, %v: tensor<4x6x3xf32>,
                            %tokens: tensor<2x1x1x6xf32> {graph.kind = "input"}) -> tensor<4x8x3xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<4x8x4xf32>, tensor<4x6x4xf32>) -> tensor<4x8x6xf32>
  %s4 = graph.reshape %s : (tensor<4x8x6xf32>) -> tensor<2x2x8x6xf32>
  %ss = graph.scale %s4 {factor = 0.25 : f32} : tensor<2x2x8x6xf32>
  %pad = graph.activation equal %tokens {alpha = 0.0 : f32} : tensor<2x1x1x6xf32>
  %keep = graph.scale %pad {factor = -1.0 : f32, offset = 1.0 : f32} : tensor<2x1x1x6xf32>
  %fill = graph.scale %pad {factor = -3.40282347E+38 : f32} : tensor<2x1x1x6xf32>
  %ones = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %keep_rows = graph.reshape %pad : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %keep_copies = graph.batch_matmul %ones, %keep_rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %keep_b = graph.reshape %keep_copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %kept = graph.mul %ss, %keep_b : tensor<2x2x8x6xf32>
  %ones2 = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %fill_rows = graph.reshape %fill : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %fill_copies = graph.batch_matmul %ones2, %fill_rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %fill_b = graph.reshape %fill_copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %sum = graph.add %fill_b, %kept : tensor<2x2x8x6xf32>
  %p = graph.softmax %sum {axis = 3 : i64} : tensor<2x2x8x6xf32>
  %p3 = graph.reshape %p : (tensor<2x2x8x6xf32>) -> tensor<4x8x6xf32>
  %o = graph.batch_matmul %p3, %v : (tensor<4x8x6xf32>, tensor<4x6x3xf32>) -> tensor<4x8x3xf32>
  return %o : tensor<4x8x3xf32>
}

// -----

// The same bias computed from a parameter (a learned per-key bias) would need a gradient,
// which bias never gets: the chain stays unfused.
// CHECK-LABEL: func.func @learned_bias
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @learned_bias(%q: tensor<4x8x4xf32>, %k: tensor<4x6x4xf32>, %v: tensor<4x6x3xf32>,
                        %w: tensor<2x1x1x6xf32> {graph.kind = "parameter"}) -> tensor<4x8x3xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<4x8x4xf32>, tensor<4x6x4xf32>) -> tensor<4x8x6xf32>
  %s4 = graph.reshape %s : (tensor<4x8x6xf32>) -> tensor<2x2x8x6xf32>
  %ones = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
  %rows = graph.reshape %w : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
  %copies = graph.batch_matmul %ones, %rows : (tensor<2x16x1xf32>, tensor<2x1x6xf32>) -> tensor<2x16x6xf32>
  %bias = graph.reshape %copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
  %sum = graph.add %s4, %bias : tensor<2x2x8x6xf32>
  %p = graph.softmax %sum {axis = 3 : i64} : tensor<2x2x8x6xf32>
  %p3 = graph.reshape %p : (tensor<2x2x8x6xf32>) -> tensor<4x8x6xf32>
  %o = graph.batch_matmul %p3, %v : (tensor<4x8x6xf32>, tensor<4x6x3xf32>) -> tensor<4x8x3xf32>
  return %o : tensor<4x8x3xf32>
}

// -----

// A per-query mask [2, 1, 8, 6] copied to the 2 heads (ones [2, 2, 1] times its [2, 1, 48]
// rows): the attention's bias is [2, 8, 6], a row per query.
// CHECK-LABEL: func.func @per_query_bias
// CHECK: %[[BIAS:.*]] = graph.reshape %arg3 : (tensor<2x1x8x6xf32>) -> tensor<2x8x6xf32>
// CHECK-NEXT: graph.attention %arg0, %arg1, %arg2 bias %[[BIAS]] {scale = 2.500000e-01 : f32} : ({{.*}}, tensor<2x8x6xf32>) -> tensor<4x8x3xf32>
// CHECK-NOT: graph.softmax
func.func @per_query_bias(%q: tensor<4x8x4xf32>, %k: tensor<4x6x4xf32>, %v: tensor<4x6x3xf32>,
                          %mask: tensor<2x1x8x6xf32> {graph.kind = "input"}) -> tensor<4x8x3xf32> {
  %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<4x8x4xf32>, tensor<4x6x4xf32>) -> tensor<4x8x6xf32>
  %s4 = graph.reshape %s : (tensor<4x8x6xf32>) -> tensor<2x2x8x6xf32>
  %ss = graph.scale %s4 {factor = 0.25 : f32} : tensor<2x2x8x6xf32>
  %ones = graph.fill {value = 1.0 : f32} : tensor<2x2x1xf32>
  %rows = graph.reshape %mask : (tensor<2x1x8x6xf32>) -> tensor<2x1x48xf32>
  %copies = graph.batch_matmul %ones, %rows : (tensor<2x2x1xf32>, tensor<2x1x48xf32>) -> tensor<2x2x48xf32>
  %bias = graph.reshape %copies : (tensor<2x2x48xf32>) -> tensor<2x2x8x6xf32>
  %sum = graph.add %ss, %bias : tensor<2x2x8x6xf32>
  %p = graph.softmax %sum {axis = 3 : i64} : tensor<2x2x8x6xf32>
  %p3 = graph.reshape %p : (tensor<2x2x8x6xf32>) -> tensor<4x8x6xf32>
  %o = graph.batch_matmul %p3, %v : (tensor<4x8x6xf32>, tensor<4x6x3xf32>) -> tensor<4x8x3xf32>
  return %o : tensor<4x8x3xf32>
}

// -----

// PyTorch's exported scaled_dot_product_attention at opset 18: Q and K^T each scaled by
// sqrt(scale) before the product (their factors multiply into the attention's), K^T made by
// a [B H, S, D] view, a transpose and a view back to [B, H, D, S], then viewed as [B H, D, S]
// for the product. The view of Q reads the unscaled Q; K^T's transpose, scale and views all go.
// CHECK-LABEL: func.func @sdpa_export_scales
// CHECK-NEXT: %[[K:.*]] = graph.reshape %arg1 : (tensor<2x2x4x8xf32>) -> tensor<4x4x8xf32>
// CHECK-NEXT: %[[Q:.*]] = graph.reshape %arg0 : (tensor<2x2x4x8xf32>) -> tensor<4x4x8xf32>
// CHECK-NEXT: %[[V:.*]] = graph.reshape %arg2 : (tensor<2x2x4x8xf32>) -> tensor<4x4x8xf32>
// CHECK-NEXT: %[[O:.*]] = graph.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 0.353553355 : f32} : (tensor<4x4x8xf32>, tensor<4x4x8xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @sdpa_export_scales(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>) -> tensor<4x4x8xf32> {
  %k3 = graph.reshape %k : (tensor<2x2x4x8xf32>) -> tensor<4x4x8xf32>
  %kt3 = graph.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<4x4x8xf32>) -> tensor<4x8x4xf32>
  %kt = graph.reshape %kt3 : (tensor<4x8x4xf32>) -> tensor<2x2x8x4xf32>
  %qs = graph.scale %q {factor = 0.594603539 : f32} : tensor<2x2x4x8xf32>
  %kts = graph.scale %kt {factor = 0.594603539 : f32} : tensor<2x2x8x4xf32>
  %qv = graph.reshape %qs : (tensor<2x2x4x8xf32>) -> tensor<4x4x8xf32>
  %ktv = graph.reshape %kts : (tensor<2x2x8x4xf32>) -> tensor<4x8x4xf32>
  %s = graph.batch_matmul %qv, %ktv : (tensor<4x4x8xf32>, tensor<4x8x4xf32>) -> tensor<4x4x4xf32>
  %p = graph.softmax %s {axis = 2 : i64, causal} : tensor<4x4x4xf32>
  %vv = graph.reshape %v : (tensor<2x2x4x8xf32>) -> tensor<4x4x8xf32>
  %o = graph.batch_matmul %p, %vv : (tensor<4x4x4xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  return %o : tensor<4x4x8xf32>
}
