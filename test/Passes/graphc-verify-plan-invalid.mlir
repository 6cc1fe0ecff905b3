// RUN: graphc-opt %s --split-input-file --verify-diagnostics --graphc-verify-plan

// (a) Two values live at the same step share bytes: b [32, 96) is made at step 0 while a
// [0, 64) is still read at step 1.
// expected-error @+1 {{memory plan is invalid: plan: buffers "a" [0, 64) live 0..1 and "b" [32, 96) live 0..1 overlap at step 0}}
func.func @overlap(%a: tensor<16xf32> {graph.kind = "input", graph.name = "a", graph.offset = 0 : i64}) -> tensor<16xf32>
    attributes {graph.arena_bytes = 128 : i64, graph.alignment = 32 : i64} {
  %b = graph.relu %a {graph.offsets = array<i64: 32>} : tensor<16xf32> loc("b")
  %c = graph.relu_backward %b, %a {graph.offsets = array<i64: 64>} : tensor<16xf32> loc("c")
  return %c : tensor<16xf32>
}

// -----

// (a) A parameter persists to the last step even after its last reader, so a late
// temporary may not take its bytes.
// expected-error @+1 {{memory plan is invalid: plan: buffers "w" [0, 64) live 0..2 and "t" [0, 64) live 2..2 overlap at step 2}}
func.func @overlap_persistent_parameter(%w: tensor<16xf32> {graph.kind = "parameter", graph.name = "w", graph.offset = 0 : i64},
                                        %x: tensor<16xf32> {graph.kind = "input", graph.name = "x", graph.offset = 64 : i64}) -> tensor<16xf32>
    attributes {graph.arena_bytes = 256 : i64, graph.alignment = 64 : i64} {
  %a = graph.relu_backward %x, %w {graph.offsets = array<i64: 128>} : tensor<16xf32> loc("a")
  %b = graph.relu %a {graph.offsets = array<i64: 192>} : tensor<16xf32> loc("b")
  %t = graph.tanh %b {graph.offsets = array<i64: 0>} : tensor<16xf32> loc("t")
  return %t : tensor<16xf32>
}

// -----

// (a) A returned value lives to the end, so a later value may not reuse its bytes.
// expected-error @+1 {{memory plan is invalid: plan: buffers "early" [64, 128) live 0..1 and "late" [64, 128) live 1..1 overlap at step 1}}
func.func @overlap_returned(%x: tensor<16xf32> {graph.kind = "input", graph.name = "x", graph.offset = 0 : i64}) -> (tensor<16xf32>, tensor<16xf32>)
    attributes {graph.arena_bytes = 192 : i64, graph.alignment = 64 : i64} {
  %early = graph.relu %x {graph.offsets = array<i64: 64>} : tensor<16xf32> loc("early")
  %late = graph.tanh %x {graph.offsets = array<i64: 64>} : tensor<16xf32> loc("late")
  return %early, %late : tensor<16xf32>, tensor<16xf32>
}

// -----

// (a) A reshape view keeps its source's bytes alive: c (a softmax, which cannot run in place)
// may not reuse them while the view is still read at step 2.
// expected-error @+1 {{memory plan is invalid: plan: buffers "a" [64, 128) live 0..2 and "c" [64, 128) live 2..2 overlap at step 2}}
func.func @overlap_view(%x: tensor<16xf32> {graph.kind = "input", graph.name = "x", graph.offset = 0 : i64}) -> tensor<4x4xf32>
    attributes {graph.arena_bytes = 192 : i64, graph.alignment = 64 : i64} {
  %a = graph.relu %x {graph.offsets = array<i64: 64>} : tensor<16xf32> loc("a")
  %v = graph.reshape %a {graph.offsets = array<i64: 64>} : (tensor<16xf32>) -> tensor<4x4xf32> loc("v")
  %c = graph.softmax %v {axis = 1 : i64, graph.offsets = array<i64: 64>} : tensor<4x4xf32> loc("c")
  return %c : tensor<4x4xf32>
}

// -----

// (a) A conv workspace is live at its step and may not overlap the conv's operands.
// expected-error @+1 {{memory plan is invalid: plan: buffers "f" [0, 72) live 0..0 and "c.workspace" [0, 324) live 0..0 overlap at step 0}}
func.func @overlap_workspace(%f: tensor<2x1x3x3xf32> {graph.kind = "input", graph.name = "f", graph.offset = 0 : i64},
                             %x: tensor<1x1x5x5xf32> {graph.kind = "input", graph.name = "x", graph.offset = 256 : i64}) -> tensor<1x2x3x3xf32>
    attributes {graph.arena_bytes = 1024 : i64, graph.alignment = 256 : i64} {
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, graph.offsets = array<i64: 512>, graph.workspace_offset = 0 : i64} : (tensor<1x1x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32> loc("c")
  return %c : tensor<1x2x3x3xf32>
}

// -----

// (b) A buffer that ends past graph.arena_bytes.
// expected-error @+1 {{memory plan is invalid: plan: buffer "b" [128, 192) live 0..0 ends past the arena of 160 bytes}}
func.func @past_arena(%a: tensor<16xf32> {graph.kind = "input", graph.name = "a", graph.offset = 0 : i64}) -> tensor<16xf32>
    attributes {graph.arena_bytes = 160 : i64, graph.alignment = 64 : i64} {
  %b = graph.relu %a {graph.offsets = array<i64: 128>} : tensor<16xf32> loc("b")
  return %b : tensor<16xf32>
}

// -----

// (b) A workspace that ends past graph.arena_bytes.
// expected-error @+1 {{memory plan is invalid: plan: buffer "c.workspace" [768, 1092) live 0..0 ends past the arena of 1024 bytes}}
func.func @workspace_past_arena(%f: tensor<2x1x3x3xf32> {graph.kind = "input", graph.name = "f", graph.offset = 0 : i64},
                                %x: tensor<1x1x5x5xf32> {graph.kind = "input", graph.name = "x", graph.offset = 256 : i64}) -> tensor<1x2x3x3xf32>
    attributes {graph.arena_bytes = 1024 : i64, graph.alignment = 256 : i64} {
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, graph.offsets = array<i64: 512>, graph.workspace_offset = 768 : i64} : (tensor<1x1x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32> loc("c")
  return %c : tensor<1x2x3x3xf32>
}

// -----

// (c) An offset that is not a multiple of graph.alignment.
// expected-error @+1 {{memory plan is invalid: plan: buffer "b" [96, 160) live 0..0 offset 96 is not a multiple of the alignment 64}}
func.func @misaligned(%a: tensor<16xf32> {graph.kind = "input", graph.name = "a", graph.offset = 0 : i64}) -> tensor<16xf32>
    attributes {graph.arena_bytes = 256 : i64, graph.alignment = 64 : i64} {
  %b = graph.relu %a {graph.offsets = array<i64: 96>} : tensor<16xf32> loc("b")
  return %b : tensor<16xf32>
}

// -----

// (c) A misaligned argument offset.
// expected-error @+1 {{memory plan is invalid: plan: buffer "a" [32, 96) live 0..0 offset 32 is not a multiple of the alignment 64}}
func.func @misaligned_argument(%a: tensor<16xf32> {graph.kind = "input", graph.name = "a", graph.offset = 32 : i64}) -> tensor<16xf32>
    attributes {graph.arena_bytes = 256 : i64, graph.alignment = 64 : i64} {
  %b = graph.relu %a {graph.offsets = array<i64: 128>} : tensor<16xf32> loc("b")
  return %b : tensor<16xf32>
}

// -----

// (d) An in-place update planned somewhere else than its parameter.
func.func @in_place_moved(%w: tensor<16xf32> {graph.kind = "parameter", graph.name = "w", graph.offset = 0 : i64},
                          %g: tensor<16xf32> {graph.kind = "input", graph.name = "g", graph.offset = 64 : i64}) -> tensor<16xf32>
    attributes {graph.arena_bytes = 256 : i64, graph.alignment = 64 : i64} {
  // expected-error @+1 {{value shares storage with 'w' but is planned at offset 128 instead of 0}}
  %nw = graph.sgd_update %w, %g {lr = 0.5 : f32, graph.offsets = array<i64: 128>} : tensor<16xf32>
  return %nw : tensor<16xf32>
}

// -----

// (d) The second result of momentum_update (the new velocity) shares the velocity's storage.
func.func @in_place_velocity_moved(%w: tensor<16xf32> {graph.kind = "parameter", graph.name = "w", graph.offset = 0 : i64},
                                   %v: tensor<16xf32> {graph.kind = "optimizer_state", graph.name = "w.velocity", graph.offset = 64 : i64},
                                   %g: tensor<16xf32> {graph.kind = "input", graph.name = "g", graph.offset = 128 : i64}) -> (tensor<16xf32>, tensor<16xf32>)
    attributes {graph.arena_bytes = 256 : i64, graph.alignment = 64 : i64} {
  // expected-error @+1 {{value shares storage with 'w.velocity' but is planned at offset 192 instead of 64}}
  %nw, %nv = graph.momentum_update %w, %g, %v {lr = 0.5 : f32, momentum = 0.5 : f32, graph.offsets = array<i64: 0, 192>} : tensor<16xf32>
  return %nw, %nv : tensor<16xf32>, tensor<16xf32>
}

// -----

// (d) A reshape view planned away from its source.
func.func @view_moved(%x: tensor<16xf32> {graph.kind = "input", graph.name = "x", graph.offset = 0 : i64}) -> tensor<4x4xf32>
    attributes {graph.arena_bytes = 256 : i64, graph.alignment = 64 : i64} {
  // expected-error @+1 {{value shares storage with 'x' but is planned at offset 64 instead of 0}}
  %v = graph.reshape %x {graph.offsets = array<i64: 64>} : (tensor<16xf32>) -> tensor<4x4xf32>
  return %v : tensor<4x4xf32>
}

// -----

// (e) An op result without graph.offsets.
func.func @missing_op_offset(%a: tensor<16xf32> {graph.kind = "input", graph.name = "a", graph.offset = 0 : i64}) -> tensor<16xf32>
    attributes {graph.arena_bytes = 256 : i64, graph.alignment = 64 : i64} {
  // expected-error @+1 {{value has no planned offset}}
  %b = graph.relu %a : tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

// (e) An argument without graph.offset (the error points at the argument).
func.func @missing_argument_offset(
    // expected-error @+1 {{value has no planned offset}}
    %a: tensor<16xf32> {graph.kind = "input", graph.name = "a"}) -> tensor<16xf32>
    attributes {graph.arena_bytes = 256 : i64, graph.alignment = 64 : i64} {
  %b = graph.relu %a {graph.offsets = array<i64: 64>} : tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

// (e) graph.offsets with fewer entries than the op has results.
func.func @short_offsets(%w: tensor<16xf32> {graph.kind = "parameter", graph.name = "w", graph.offset = 0 : i64},
                         %v: tensor<16xf32> {graph.kind = "optimizer_state", graph.name = "w.velocity", graph.offset = 64 : i64},
                         %g: tensor<16xf32> {graph.kind = "input", graph.name = "g", graph.offset = 128 : i64}) -> (tensor<16xf32>, tensor<16xf32>)
    attributes {graph.arena_bytes = 256 : i64, graph.alignment = 64 : i64} {
  // expected-error @+1 {{value has no planned offset}}
  %nw, %nv = graph.momentum_update %w, %g, %v {lr = 0.5 : f32, momentum = 0.5 : f32, graph.offsets = array<i64: 0>} : tensor<16xf32>
  return %nw, %nv : tensor<16xf32>, tensor<16xf32>
}

// -----

// (f) A conv kernel needs scratch, so it must carry graph.workspace_offset.
func.func @missing_workspace(%f: tensor<2x1x3x3xf32> {graph.kind = "input", graph.name = "f", graph.offset = 0 : i64},
                             %x: tensor<1x1x5x5xf32> {graph.kind = "input", graph.name = "x", graph.offset = 256 : i64}) -> tensor<1x2x3x3xf32>
    attributes {graph.arena_bytes = 1536 : i64, graph.alignment = 256 : i64} {
  // expected-error @+1 {{kernel needs a workspace but has no graph.workspace_offset}}
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, graph.offsets = array<i64: 512>} : (tensor<1x1x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %c : tensor<1x2x3x3xf32>
}

// -----

// (f) The same for conv2d_backward_data.
func.func @missing_workspace_backward_data(%dy: tensor<1x2x3x3xf32> {graph.kind = "input", graph.name = "dy", graph.offset = 0 : i64},
                                           %f: tensor<2x1x3x3xf32> {graph.kind = "input", graph.name = "f", graph.offset = 256 : i64}) -> tensor<1x1x5x5xf32>
    attributes {graph.arena_bytes = 1536 : i64, graph.alignment = 256 : i64} {
  // expected-error @+1 {{kernel needs a workspace but has no graph.workspace_offset}}
  %dx = graph.conv2d_backward_data %dy, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, graph.offsets = array<i64: 512>} : (tensor<1x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<1x1x5x5xf32>
  return %dx : tensor<1x1x5x5xf32>
}

// -----

// (g) A function that was never planned.
// expected-error @+1 {{graphc-verify-plan: function has no valid plan (non-negative graph.arena_bytes and positive graph.alignment attributes)}}
func.func @unplanned(%a: tensor<16xf32>) -> tensor<16xf32> {
  %b = graph.relu %a : tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

// (g) Offsets without the function's graph.alignment are not a plan either.
// expected-error @+1 {{graphc-verify-plan: function has no valid plan (non-negative graph.arena_bytes and positive graph.alignment attributes)}}
func.func @no_alignment(%a: tensor<16xf32> {graph.offset = 0 : i64}) -> tensor<16xf32>
    attributes {graph.arena_bytes = 256 : i64} {
  %b = graph.relu %a {graph.offsets = array<i64: 64>} : tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

// An elementwise op may write over an operand only when the operand dies at that op: here %a is
// still read by the return, so relu's result may not take its bytes.
// expected-error @+1 {{memory plan is invalid: plan: buffers "a" [64, 128) live 0..1 and "b" [64, 128) live 1..1 overlap at step 1}}
func.func @in_place_operand_still_live(%x: tensor<16xf32> {graph.kind = "input", graph.name = "x", graph.offset = 0 : i64}) -> (tensor<16xf32>, tensor<16xf32>)
    attributes {graph.arena_bytes = 192 : i64, graph.alignment = 64 : i64} {
  %a = graph.tanh %x {graph.offsets = array<i64: 64>} : tensor<16xf32> loc("a")
  %b = graph.relu %a {graph.offsets = array<i64: 64>} : tensor<16xf32> loc("b")
  return %a, %b : tensor<16xf32>, tensor<16xf32>
}

// -----

// (h) Only optimizer state may live in host memory (the update kernels are the only ones that
// reach it).
// expected-error @+1 {{argument 0 of kind 'parameter' is in host memory; only optimizer_state may be}}
func.func @host_parameter(%w: tensor<16xf32> {graph.kind = "parameter", graph.name = "w", graph.memory_space = "host", graph.offset = 256 : i64})
    -> tensor<16xf32> attributes {graph.arena_bytes = 256 : i64, graph.host_arena_bytes = 256 : i64, graph.alignment = 256 : i64} {
  %y = graph.relu %w {graph.offsets = array<i64: 0>} : tensor<16xf32> loc("y")
  return %y : tensor<16xf32>
}

// -----

// (h) Host-resident state must be read by optimizer updates only.
func.func @host_state_read(%u: tensor<16xf32> {graph.kind = "optimizer_state", graph.name = "u", graph.memory_space = "host", graph.offset = 256 : i64})
    -> tensor<16xf32> attributes {graph.arena_bytes = 256 : i64, graph.host_arena_bytes = 256 : i64, graph.alignment = 256 : i64} {
  // expected-error @+1 {{reads argument 0, which is in host memory; only optimizer updates may}}
  %y = graph.relu %u {graph.offsets = array<i64: 0>} : tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// (h) Host-resident state must lie in the host arena, after the device arena.
// expected-error @+1 {{memory plan is invalid: plan: host buffer "m" [0, 64) live 0..0 lies outside the host arena [256, 512)}}
func.func @host_state_in_arena(%w: tensor<16xf32> {graph.kind = "parameter", graph.name = "w", graph.offset = 0 : i64},
                               %g: tensor<16xf32> {graph.kind = "input", graph.name = "g", graph.offset = 128 : i64},
                               %m: tensor<16xf32> {graph.kind = "optimizer_state", graph.name = "m", graph.memory_space = "host", graph.offset = 0 : i64})
    -> (tensor<16xf32>, tensor<16xf32>) attributes {graph.arena_bytes = 256 : i64, graph.host_arena_bytes = 256 : i64, graph.alignment = 64 : i64} {
  %w1, %m1 = graph.momentum_update %w, %g, %m {graph.offsets = array<i64: 0, 0>, lr = 1.0e-02 : f32, momentum = 0.9 : f32} : tensor<16xf32> loc("u")
  return %w1, %m1 : tensor<16xf32>, tensor<16xf32>
}

// -----

// (a) A bucket concat (graph.bucket_view) may hold its operands inside its own bytes only when
// they die there: here "g" [0, 64) is read again after the concat, so it overlaps the bucket.
// expected-error @+1 {{memory plan is invalid: plan: buffers "g" [0, 64) live 0..3 and "bucket" [0, 128) live 2..3 overlap at step 2}}
func.func @bucket_view_operand_read_later(%x: tensor<16xf32> {graph.kind = "input", graph.name = "x", graph.offset = 256 : i64}) -> (tensor<32xf32>, tensor<16xf32>)
    attributes {graph.arena_bytes = 512 : i64, graph.alignment = 64 : i64} {
  %g = graph.relu %x {graph.offsets = array<i64: 0>} : tensor<16xf32> loc("g")
  %h = graph.tanh %x {graph.offsets = array<i64: 64>} : tensor<16xf32> loc("h")
  %bucket = graph.concat %g, %h {axis = 0 : i64, graph.bucket_view, graph.offsets = array<i64: 0>} : (tensor<16xf32>, tensor<16xf32>) -> tensor<32xf32> loc("bucket")
  %r = graph.relu %g {graph.offsets = array<i64: 128>} : tensor<16xf32> loc("r")
  return %bucket, %r : tensor<32xf32>, tensor<16xf32>
}

// -----

// (h) A grown workspace (graphc-grow-workspaces) is checked at its planned size: 4096 bytes at
// +8192 run over x at +8704, where the kernel's own 324 bytes would not.
// expected-error @+1 {{memory plan is invalid: plan: buffers "x" [8704, 8804) live 0..0 and "conv2d_0.workspace" [8192, 12288) live 0..0 overlap at step 0}}
func.func @grown_workspace_overlaps(%f: tensor<2x1x3x3xf32> {graph.kind = "parameter", graph.name = "f", graph.offset = 16640 : i64},
                                    %x: tensor<1x1x5x5xf32> {graph.kind = "input", graph.name = "x", graph.offset = 8704 : i64}) -> tensor<1x2x3x3xf32>
    attributes {graph.arena_bytes = 16896 : i64, graph.alignment = 256 : i64} {
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, graph.offsets = array<i64: 16384>, graph.workspace_offset = 8192 : i64, graph.workspace_bytes = 4096 : i64} : (tensor<1x1x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %c : tensor<1x2x3x3xf32>
}

// -----

// (i) A planned workspace smaller than what the kernel needs (324 bytes here).
func.func @workspace_below_need(%f: tensor<2x1x3x3xf32> {graph.kind = "parameter", graph.name = "f", graph.offset = 0 : i64},
                                %x: tensor<1x1x5x5xf32> {graph.kind = "input", graph.name = "x", graph.offset = 256 : i64}) -> tensor<1x2x3x3xf32>
    attributes {graph.arena_bytes = 1536 : i64, graph.alignment = 256 : i64} {
  // expected-error @+1 {{graph.workspace_bytes = 256 is less than the 324 bytes the kernel's workspace needs}}
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, graph.offsets = array<i64: 512>, graph.workspace_offset = 768 : i64, graph.workspace_bytes = 256 : i64} : (tensor<1x1x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %c : tensor<1x2x3x3xf32>
}
