// RUN: graphc-opt %s --split-input-file --verify-diagnostics

// The verifiers of batch_matmul, transpose, layer_norm(_backward) and rms_norm(_backward) reject bad IR with a
// message that prints the offending shapes.

func.func @batch_matmul_contraction(%a: tensor<2x3x4xf32>, %b: tensor<2x5x6xf32>) -> tensor<2x3x6xf32> {
  // expected-error @+1 {{'graph.batch_matmul' op contraction sizes differ: 'tensor<2x3x4xf32>' and 'tensor<2x5x6xf32>'}}
  %y = graph.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x5x6xf32>) -> tensor<2x3x6xf32>
  return %y : tensor<2x3x6xf32>
}

// -----

func.func @batch_matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x6xf32>) -> tensor<2x3x6xf32> {
  // expected-error @+1 {{'graph.batch_matmul' op batch sizes differ: 'tensor<2x3x4xf32>' and 'tensor<3x4x6xf32>'}}
  %y = graph.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x6xf32>) -> tensor<2x3x6xf32>
  return %y : tensor<2x3x6xf32>
}

// -----

func.func @batch_matmul_rank(%a: tensor<3x4xf32>, %b: tensor<4x6xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'graph.batch_matmul' op expects rank-3 operands [B, M, K] and [B, K, N], got 'tensor<3x4xf32>' and 'tensor<4x6xf32>'}}
  %y = graph.batch_matmul %a, %b : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32>
  return %y : tensor<3x6xf32>
}

// -----

func.func @batch_matmul_result(%a: tensor<2x4x3xf32>, %b: tensor<2x4x6xf32>) -> tensor<2x4x6xf32> {
  // expected-error @+1 {{'graph.batch_matmul' op result should have shape [2x3x6], got 'tensor<2x4x6xf32>'}}
  %y = graph.batch_matmul %a, %b {transpose_lhs} : (tensor<2x4x3xf32>, tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  return %y : tensor<2x4x6xf32>
}

// -----

func.func @transpose_not_a_permutation(%x: tensor<2x3x4xf32>) -> tensor<3x3x4xf32> {
  // expected-error @+1 {{'graph.transpose' op perm is not a permutation of 0..2 for 'tensor<2x3x4xf32>'}}
  %y = graph.transpose %x {perm = array<i64: 1, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<3x3x4xf32>
  return %y : tensor<3x3x4xf32>
}

// -----

func.func @transpose_result(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{'graph.transpose' op result should have shape [3x2x4], got 'tensor<2x3x4xf32>'}}
  %y = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

func.func @transpose_perm_length(%x: tensor<2x3x4xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'graph.transpose' op perm has 2 entries for 'tensor<2x3x4xf32>'}}
  %y = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @layer_norm_scale(%x: tensor<4x32xf32>, %g: tensor<16xf32>, %b: tensor<32xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'graph.layer_norm' op per-feature tensor should have shape [32], got 'tensor<16xf32>'}}
  %y, %m, %s = graph.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : (tensor<4x32xf32>, tensor<16xf32>, tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y : tensor<4x32xf32>
}

// -----

func.func @layer_norm_stats(%x: tensor<4x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<4x8x32xf32> {
  // expected-error @+1 {{'graph.layer_norm' op row statistic should have shape [32], got 'tensor<4xf32>'}}
  %y, %m, %s = graph.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x8x32xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y : tensor<4x8x32xf32>
}

// -----

func.func @layer_norm_epsilon(%x: tensor<4x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'graph.layer_norm' op epsilon must be non-negative}}
  %y, %m, %s = graph.layer_norm %x, %g, %b {epsilon = -1.0 : f32} : (tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y : tensor<4x32xf32>
}

// -----

func.func @layer_norm_backward_grad(%dy: tensor<4x16xf32>, %x: tensor<4x32xf32>, %g: tensor<32xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'graph.layer_norm_backward' op grad and grad_input must match the input 'tensor<4x32xf32>'}}
  %dx, %dg, %db = graph.layer_norm_backward %dy, %x, %g, %m, %s : (tensor<4x16xf32>, tensor<4x32xf32>, tensor<32xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>)
  return %dx : tensor<4x32xf32>
}

// -----

// graph.attention needs a step operand exactly when it drops.
func.func @attention_dropout_without_step(%q: tensor<2x8x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x3xf32>) -> tensor<2x8x3xf32> {
  // expected-error @+1 {{'graph.attention' op needs a step operand for its dropout}}
  %o = graph.attention %q, %k, %v {scale = 0.5 : f32, dropout_ratio = 0.1 : f32} : (tensor<2x8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x3xf32>) -> tensor<2x8x3xf32>
  return %o : tensor<2x8x3xf32>
}

// -----

// Query and key widths must agree.
func.func @attention_widths(%q: tensor<2x8x4xf32>, %k: tensor<2x6x5xf32>, %v: tensor<2x6x3xf32>) -> tensor<2x8x3xf32> {
  // expected-error @+1 {{'graph.attention' op query and key widths differ: 'tensor<2x8x4xf32>' and 'tensor<2x6x5xf32>'}}
  %o = graph.attention %q, %k, %v {scale = 0.5 : f32} : (tensor<2x8x4xf32>, tensor<2x6x5xf32>, tensor<2x6x3xf32>) -> tensor<2x8x3xf32>
  return %o : tensor<2x8x3xf32>
}

// -----

// A causal attention's query i sees keys 0..i: as many queries as keys.
func.func @attention_causal_rectangular(%q: tensor<2x8x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x3xf32>) -> tensor<2x8x3xf32> {
  // expected-error @+1 {{'graph.attention' op causal needs as many queries as keys, got 'tensor<2x8x4xf32>' and 'tensor<2x6x4xf32>'}}
  %o = graph.attention %q, %k, %v {scale = 0.5 : f32, causal} : (tensor<2x8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x3xf32>) -> tensor<2x8x3xf32>
  return %o : tensor<2x8x3xf32>
}

// -----

// The backward op's gradients have their inputs' shapes.
func.func @attention_backward_shapes(%g: tensor<2x8x3xf32>, %q: tensor<2x8x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x3xf32>) -> tensor<2x6x4xf32> {
  // expected-error @+1 {{'graph.attention_backward' op grad_key should have shape [2x6x4], got 'tensor<2x6x3xf32>'}}
  %dq, %dk, %dv = graph.attention_backward %g, %q, %k, %v {scale = 0.5 : f32} : (tensor<2x8x3xf32>, tensor<2x8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x3xf32>) -> (tensor<2x8x4xf32>, tensor<2x6x3xf32>, tensor<2x6x3xf32>)
  return %k : tensor<2x6x4xf32>
}

// -----

func.func @rms_norm_scale(%x: tensor<4x32xf32>, %g: tensor<16xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'graph.rms_norm' op per-feature tensor should have shape [32], got 'tensor<16xf32>'}}
  %y, %s = graph.rms_norm %x, %g {epsilon = 1.0e-06 : f32} : (tensor<4x32xf32>, tensor<16xf32>) -> (tensor<4x32xf32>, tensor<4xf32>)
  return %y : tensor<4x32xf32>
}

// -----

func.func @rms_norm_stats(%x: tensor<4x8x32xf32>, %g: tensor<32xf32>) -> tensor<4x8x32xf32> {
  // expected-error @+1 {{'graph.rms_norm' op row statistic should have shape [32], got 'tensor<4xf32>'}}
  %y, %s = graph.rms_norm %x, %g {epsilon = 1.0e-06 : f32} : (tensor<4x8x32xf32>, tensor<32xf32>) -> (tensor<4x8x32xf32>, tensor<4xf32>)
  return %y : tensor<4x8x32xf32>
}

// -----

func.func @rms_norm_epsilon(%x: tensor<4x32xf32>, %g: tensor<32xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'graph.rms_norm' op epsilon must be non-negative}}
  %y, %s = graph.rms_norm %x, %g {epsilon = -1.0 : f32} : (tensor<4x32xf32>, tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4xf32>)
  return %y : tensor<4x32xf32>
}

// -----

func.func @rms_norm_backward_grad(%dy: tensor<4x16xf32>, %x: tensor<4x32xf32>, %g: tensor<32xf32>, %s: tensor<4xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'graph.rms_norm_backward' op grad and grad_input must match the input 'tensor<4x32xf32>'}}
  %dx, %dg = graph.rms_norm_backward %dy, %x, %g, %s : (tensor<4x16xf32>, tensor<4x32xf32>, tensor<32xf32>, tensor<4xf32>) -> (tensor<4x32xf32>, tensor<32xf32>)
  return %dx : tensor<4x32xf32>
}

// -----

func.func @broadcast_mul_leading(%q: tensor<8x12x16xf32>, %t: tensor<8x16xf32>) -> tensor<8x12x16xf32> {
  // expected-error @+1 {{'graph.broadcast_mul' op rhs 'tensor<8x16xf32>' must have the shape of the lhs's trailing axes 'tensor<8x12x16xf32>'}}
  %y = graph.broadcast_mul %q, %t : (tensor<8x12x16xf32>, tensor<8x16xf32>) -> tensor<8x12x16xf32>
  return %y : tensor<8x12x16xf32>
}

// -----

func.func @broadcast_mul_result(%q: tensor<8x12x16xf32>, %t: tensor<16xf32>) -> tensor<12x16xf32> {
  // expected-error @+1 {{'graph.broadcast_mul' op result 'tensor<12x16xf32>' must match the lhs 'tensor<8x12x16xf32>'}}
  %y = graph.broadcast_mul %q, %t : (tensor<8x12x16xf32>, tensor<16xf32>) -> tensor<12x16xf32>
  return %y : tensor<12x16xf32>
}

// -----

func.func @rotary_odd(%q: tensor<8x12x15xf32>, %t: tensor<12x15xf32>) -> tensor<8x12x15xf32> {
  // expected-error @+1 {{'graph.rotary' op needs an input whose last axis is even, got 'tensor<8x12x15xf32>'}}
  %y = graph.rotary %q, %t, %t : (tensor<8x12x15xf32>, tensor<12x15xf32>, tensor<12x15xf32>) -> tensor<8x12x15xf32>
  return %y : tensor<8x12x15xf32>
}

// -----

func.func @rotary_table(%q: tensor<8x12x16xf32>, %c: tensor<12x16xf32>, %s: tensor<8x16xf32>) -> tensor<8x12x16xf32> {
  // expected-error @+1 {{'graph.rotary' op table 'tensor<8x16xf32>' must have the shape of the input's trailing axes 'tensor<8x12x16xf32>'}}
  %y = graph.rotary %q, %c, %s : (tensor<8x12x16xf32>, tensor<12x16xf32>, tensor<8x16xf32>) -> tensor<8x12x16xf32>
  return %y : tensor<8x12x16xf32>
}

// -----

// graph.attention's bias is [batch, keys] or [batch, queries, keys] with a batch that divides
// the slices (batch x heads): 3 rows cannot be shared by 2 slices.
func.func @attention_bias_batch(%q: tensor<2x8x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x3xf32>, %b: tensor<3x6xf32>) -> tensor<2x8x3xf32> {
  // expected-error @+1 {{'graph.attention' op expects a bias [batch, 6] or [batch, 8, 6] whose batch divides 2, got 'tensor<3x6xf32>'}}
  %o = graph.attention %q, %k, %v bias %b {scale = 0.5 : f32} : (tensor<2x8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x3xf32>, tensor<3x6xf32>) -> tensor<2x8x3xf32>
  return %o : tensor<2x8x3xf32>
}

// -----

// bias_fills says how the bias meets the scores; without a bias there is nothing to fill.
func.func @attention_fills_without_bias(%q: tensor<2x8x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x3xf32>) -> tensor<2x8x3xf32> {
  // expected-error @+1 {{'graph.attention' op has bias_fills but no bias}}
  %o = graph.attention %q, %k, %v {bias_fills, scale = 0.5 : f32} : (tensor<2x8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x3xf32>) -> tensor<2x8x3xf32>
  return %o : tensor<2x8x3xf32>
}
