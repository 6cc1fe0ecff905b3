// RUN: graphc-opt %s --split-input-file > %t.before
// RUN: graphc-opt %s --split-input-file --graphc-verify-plan > %t.after
// RUN: diff %t.before %t.after
// RUN: FileCheck %s < %t.after

// A hand-written plan like the one graphc-plan-memory makes for a conv step: two reshape
// views at the conv output's offset, the update at the parameter's, one shared workspace
// offset for the two conv kernels that run at different steps, and a buffer that reuses the
// dead input's bytes. The pass accepts it and leaves the IR unchanged (the diff above).
// Live ranges (6 steps): f and f.velocity 0..5, x 0..3, c (with r, g) 0..5, c.workspace 0..0,
// df 3..4, df.workspace 3..3, t 5..5; with x dead after step 3, t takes x's bytes at +1024.
// CHECK-LABEL: func.func @conv_step(
//  CHECK-SAME:   graph.offset = 768 : i64}
//  CHECK-SAME:   graph.offset = 1536 : i64}
//  CHECK-SAME:   graph.offset = 1024 : i64}
//  CHECK-SAME:   attributes {graph.alignment = 256 : i64, graph.arena_bytes = 1792 : i64}
//  CHECK-NEXT:   graph.conv2d {{.*}}graph.offsets = array<i64: 512>, graph.workspace_offset = 0 : i64,
//  CHECK-NEXT:   graph.reshape {{.*}}{graph.offsets = array<i64: 512>}
//  CHECK-NEXT:   graph.reshape {{.*}}{graph.offsets = array<i64: 512>}
//  CHECK-NEXT:   graph.conv2d_backward_filter {{.*}}graph.offsets = array<i64: 1280>, graph.workspace_offset = 0 : i64,
//  CHECK-NEXT:   graph.momentum_update {{.*}}{graph.offsets = array<i64: 768, 1536>,
//  CHECK-NEXT:   graph.relu {{.*}}{graph.offsets = array<i64: 1024>}
func.func @conv_step(%f: tensor<2x1x3x3xf32> {graph.kind = "parameter", graph.name = "f", graph.offset = 768 : i64},
                     %v: tensor<2x1x3x3xf32> {graph.kind = "optimizer_state", graph.name = "f.velocity", graph.offset = 1536 : i64},
                     %x: tensor<1x1x5x5xf32> {graph.kind = "input", graph.name = "x", graph.offset = 1024 : i64})
    -> (tensor<1x18xf32>, tensor<2x1x3x3xf32>, tensor<2x1x3x3xf32>, tensor<1x2x3x3xf32>)
    attributes {graph.arena_bytes = 1792 : i64, graph.alignment = 256 : i64} {
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, graph.offsets = array<i64: 512>, graph.workspace_offset = 0 : i64} : (tensor<1x1x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %r = graph.reshape %c {graph.offsets = array<i64: 512>} : (tensor<1x2x3x3xf32>) -> tensor<1x18xf32>
  %g = graph.reshape %r {graph.offsets = array<i64: 512>} : (tensor<1x18xf32>) -> tensor<1x2x3x3xf32>
  %df = graph.conv2d_backward_filter %g, %x {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, graph.offsets = array<i64: 1280>, graph.workspace_offset = 0 : i64} : (tensor<1x2x3x3xf32>, tensor<1x1x5x5xf32>) -> tensor<2x1x3x3xf32>
  %nf, %nv = graph.momentum_update %f, %df, %v {lr = 0.5 : f32, momentum = 0.5 : f32, graph.offsets = array<i64: 768, 1536>} : tensor<2x1x3x3xf32>
  %t = graph.relu %g {graph.offsets = array<i64: 1024>} : tensor<1x2x3x3xf32>
  return %r, %nf, %nv, %t : tensor<1x18xf32>, tensor<2x1x3x3xf32>, tensor<2x1x3x3xf32>, tensor<1x2x3x3xf32>
}

// -----

// Exact fits are accepted: a buffer may end exactly at the arena end, and two buffers may
// touch (a [0, 64) and b [64, 128) at alignment 64) or share bytes when their live ranges do
// not meet (c reuses a's bytes after a's last use at step 1).
// CHECK-LABEL: func.func @exact_fit(
//  CHECK-SAME:   graph.offset = 0 : i64}
//  CHECK-SAME:   attributes {graph.alignment = 64 : i64, graph.arena_bytes = 128 : i64}
//  CHECK-NEXT:   graph.relu {{.*}}{graph.offsets = array<i64: 64>}
//  CHECK-NEXT:   graph.tanh {{.*}}{graph.offsets = array<i64: 0>}
func.func @exact_fit(%a: tensor<16xf32> {graph.kind = "input", graph.name = "a", graph.offset = 0 : i64}) -> tensor<16xf32>
    attributes {graph.arena_bytes = 128 : i64, graph.alignment = 64 : i64} {
  %b = graph.relu %a {graph.offsets = array<i64: 64>} : tensor<16xf32>
  %c = graph.tanh %b {graph.offsets = array<i64: 0>} : tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// An elementwise op writes its result over an operand that dies at that op (in place): the
// verifier accepts the shared offset because %a has no reader after the relu.
// CHECK-LABEL: func.func @elementwise_in_place
// CHECK: graph.relu %{{.*}} {graph.offsets = array<i64: 64>}
func.func @elementwise_in_place(%x: tensor<16xf32> {graph.kind = "input", graph.name = "x", graph.offset = 0 : i64}) -> tensor<16xf32>
    attributes {graph.arena_bytes = 128 : i64, graph.alignment = 64 : i64} {
  %a = graph.tanh %x {graph.offsets = array<i64: 64>} : tensor<16xf32> loc("a")
  %b = graph.relu %a {graph.offsets = array<i64: 64>} : tensor<16xf32> loc("b")
  return %b : tensor<16xf32>
}
