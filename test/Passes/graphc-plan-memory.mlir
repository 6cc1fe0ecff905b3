// RUN: graphc-opt %s --split-input-file --graphc-plan-memory=in-place=false | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-plan-memory | FileCheck %s --check-prefix=INPLACE
// RUN: graphc-opt %s --split-input-file --graphc-plan-memory=no-reuse=true | FileCheck %s --check-prefix=NOREUSE
// RUN: graphc-opt %s --split-input-file --graphc-plan-memory="alignment=64 in-place=false" | FileCheck %s --check-prefix=A64
// RUN: graphc-opt %s --split-input-file --graphc-plan-memory="alignment=1 in-place=false" | FileCheck %s --check-prefix=A1
// RUN: graphc-opt %s --split-input-file --graphc-plan-memory=in-place=false | graphc-opt --split-input-file --graphc-verify-plan | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-plan-memory | graphc-opt --split-input-file --graphc-verify-plan | FileCheck %s --check-prefix=INPLACE
// RUN: graphc-opt %s --split-input-file --graphc-plan-memory=no-reuse=true | graphc-opt --split-input-file --graphc-verify-plan | FileCheck %s --check-prefix=NOREUSE

// A chain whose intermediate values die one step after they are made, planned best-fit
// (largest aligned size first; ties by first step, then name). Live ranges: x 0..0,
// w 0..3 (parameter), a 0..1, h 1..2, t 2..3, s 3..3 (returned). Sizes at alignment 256:
// x, a: 400 bytes -> 512; w: 500 -> 512; h, t, s: 80 -> 256. h reuses x's bytes and t and s
// reuse a's once they are dead; the arena equals the lower bound (step 0: x + w + a = 1536).
// x: +1024 (400 bytes align 256, after a and w, live with both at step 0)
// w: +512 (500 bytes align 256, on top of a)
// CHECK-LABEL: func.func @chain(
//  CHECK-SAME:   {graph.kind = "input", graph.name = "x", graph.offset = 1024 : i64}
//  CHECK-SAME:   {graph.kind = "parameter", graph.name = "w", graph.offset = 512 : i64}
//  CHECK-SAME:   attributes {graph.alignment = 256 : i64, graph.arena_bytes = 1536 : i64, graph.lower_bound_bytes = 1536 : i64}
// a: +0 (400 bytes align 256; "a" < "w" < "x" breaks the tie of the three 512s)
//  CHECK-NEXT:   graph.relu %{{.*}} {graph.offsets = array<i64: 0>}
// h: +1024 (80 bytes align 256; x is dead at step 1, a and w are not)
//  CHECK-NEXT:   graph.dense %{{.*}} {graph.offsets = array<i64: 1024>}
// t: +0 (80 bytes align 256; a is dead at step 2, its 512-byte hole is the smallest gap)
//  CHECK-NEXT:   graph.tanh %{{.*}} {graph.offsets = array<i64: 0>}
// s: +256 (80 bytes align 256; the rest of a's hole above t)
//  CHECK-NEXT:   graph.sigmoid %{{.*}} {graph.offsets = array<i64: 256>}
//
// With in-place reuse (the default), each elementwise op whose operand dies at that op writes
// over it: relu over x is not allowed (x is an input), but tanh over h and sigmoid over t are,
// so h, t and s share one buffer at +1024 and the function is marked graph.in_place.
// INPLACE-LABEL: func.func @chain(
//  INPLACE-SAME:   graph.in_place
//  INPLACE-NEXT:   graph.relu %{{.*}} {graph.offsets = array<i64: [[A:[0-9]+]]>}
//  INPLACE-NEXT:   graph.dense %{{.*}} {graph.offsets = array<i64: [[H:[0-9]+]]>}
//  INPLACE-NEXT:   graph.tanh %{{.*}} {graph.offsets = array<i64: [[H]]>}
//  INPLACE-NEXT:   graph.sigmoid %{{.*}} {graph.offsets = array<i64: [[H]]>}
//
// Without reuse every buffer gets its own bytes in definition order, and the arena grows
// from 1536 to 2304 (the lower bound is unchanged).
// NOREUSE-LABEL: func.func @chain(
//  NOREUSE-SAME:   graph.offset = 0 : i64}
//  NOREUSE-SAME:   graph.offset = 512 : i64}
//  NOREUSE-SAME:   attributes {graph.alignment = 256 : i64, graph.arena_bytes = 2304 : i64, graph.lower_bound_bytes = 1536 : i64}
//  NOREUSE-NEXT:   graph.relu %{{.*}} {graph.offsets = array<i64: 1024>}
//  NOREUSE-NEXT:   graph.dense %{{.*}} {graph.offsets = array<i64: 1536>}
//  NOREUSE-NEXT:   graph.tanh %{{.*}} {graph.offsets = array<i64: 1792>}
//  NOREUSE-NEXT:   graph.sigmoid %{{.*}} {graph.offsets = array<i64: 2048>}
//
// At alignment 64: w 512 goes first at 0; a (400 -> 448) at +512; x at +960 (512 + 448);
// h (80 -> 128) reuses x at +960; t fits the 448-byte hole a left at +512; s goes on top of
// t at +640 (512 + 128). Arena 1408 = w + a + x.
// A64-LABEL: func.func @chain(
//  A64-SAME:   graph.offset = 960 : i64}
//  A64-SAME:   graph.offset = 0 : i64}
//  A64-SAME:   attributes {graph.alignment = 64 : i64, graph.arena_bytes = 1408 : i64, graph.lower_bound_bytes = 1408 : i64}
//  A64-NEXT:   graph.relu %{{.*}} {graph.offsets = array<i64: 512>}
//  A64-NEXT:   graph.dense %{{.*}} {graph.offsets = array<i64: 960>}
//  A64-NEXT:   graph.tanh %{{.*}} {graph.offsets = array<i64: 512>}
//  A64-NEXT:   graph.sigmoid %{{.*}} {graph.offsets = array<i64: 640>}
//
// At alignment 1 the sizes are exact: w 500 at 0, a 400 at 500, x at 900, arena 1300.
// A1-LABEL: func.func @chain(
//  A1-SAME:   graph.offset = 900 : i64}
//  A1-SAME:   graph.offset = 0 : i64}
//  A1-SAME:   attributes {graph.alignment = 1 : i64, graph.arena_bytes = 1300 : i64, graph.lower_bound_bytes = 1300 : i64}
//  A1-NEXT:   graph.relu %{{.*}} {graph.offsets = array<i64: 500>}
//  A1-NEXT:   graph.dense %{{.*}} {graph.offsets = array<i64: 900>}
//  A1-NEXT:   graph.tanh %{{.*}} {graph.offsets = array<i64: 500>}
//  A1-NEXT:   graph.sigmoid %{{.*}} {graph.offsets = array<i64: 580>}
func.func @chain(%x: tensor<4x25xf32> {graph.kind = "input", graph.name = "x"},  // 400 bytes
                 %w: tensor<25x5xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x5xf32> {  // 500 bytes
  %a = graph.relu %x : tensor<4x25xf32> loc("a")                                                  // step 0, 400 bytes
  %h = graph.dense %a, %w : (tensor<4x25xf32>, tensor<25x5xf32>) -> tensor<4x5xf32> loc("h")     // step 1, 80 bytes
  %t = graph.tanh %h : tensor<4x5xf32> loc("t")                                                   // step 2, 80 bytes
  %s = graph.sigmoid %t : tensor<4x5xf32> loc("s")                                                // step 3, 80 bytes
  return %s : tensor<4x5xf32>
}

// -----

// Views, in-place updates and workspaces: both reshapes get the conv output's offset; the
// sgd_update result gets the parameter's offset; each conv kernel gets a graph.workspace_offset
// (324 bytes -> 512, live at its own step only, so both share +0).
// Order: workspaces (512) at +0; then c, f, x (256 each, first step 0, by name) stacked on top
// at +512, +768, +1024; df (live 3..4, with x, f, c and the second workspace) at +1280.
// CHECK-LABEL: func.func @views(
//  CHECK-SAME:   {graph.kind = "parameter", graph.name = "f", graph.offset = 768 : i64}
//  CHECK-SAME:   {graph.kind = "input", graph.name = "x", graph.offset = 1024 : i64}
//  CHECK-SAME:   attributes {graph.alignment = 256 : i64, graph.arena_bytes = 1536 : i64, graph.lower_bound_bytes = 1536 : i64}
//  CHECK-NEXT:   %[[C:.*]] = graph.conv2d {{.*}}graph.offsets = array<i64: 512>, graph.workspace_offset = 0 : i64,
//  CHECK-NEXT:   %[[R:.*]] = graph.reshape %[[C]] {graph.offsets = array<i64: 512>}
//  CHECK-NEXT:   %[[G:.*]] = graph.reshape %[[R]] {graph.offsets = array<i64: 512>}
//  CHECK-NEXT:   %[[DF:.*]] = graph.conv2d_backward_filter %[[G]], {{.*}}graph.offsets = array<i64: 1280>, graph.workspace_offset = 0 : i64,
//  CHECK-NEXT:   graph.sgd_update %{{.*}}, %[[DF]] {graph.offsets = array<i64: 768>,
//
// Without reuse the buffers are laid out in liveness order: f, x, c, c's workspace, df, df's
// workspace, with the views and the update still sharing their source's offset.
// NOREUSE-LABEL: func.func @views(
//  NOREUSE-SAME:   graph.offset = 0 : i64}
//  NOREUSE-SAME:   graph.offset = 256 : i64}
//  NOREUSE-SAME:   attributes {graph.alignment = 256 : i64, graph.arena_bytes = 2048 : i64, graph.lower_bound_bytes = 1536 : i64}
//  NOREUSE-NEXT:   graph.conv2d {{.*}}graph.offsets = array<i64: 512>, graph.workspace_offset = 768 : i64,
//  NOREUSE-NEXT:   graph.reshape {{.*}}graph.offsets = array<i64: 512>
//  NOREUSE-NEXT:   graph.reshape {{.*}}graph.offsets = array<i64: 512>
//  NOREUSE-NEXT:   graph.conv2d_backward_filter {{.*}}graph.offsets = array<i64: 1280>, graph.workspace_offset = 1536 : i64,
//  NOREUSE-NEXT:   graph.sgd_update {{.*}}graph.offsets = array<i64: 0>,
func.func @views(%f: tensor<2x1x3x3xf32> {graph.kind = "parameter", graph.name = "f"},  // 72 bytes
                 %x: tensor<1x1x5x5xf32> {graph.kind = "input", graph.name = "x"})     // 100 bytes
    -> (tensor<1x18xf32>, tensor<2x1x3x3xf32>) {
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32> loc("c")
  %r = graph.reshape %c : (tensor<1x2x3x3xf32>) -> tensor<1x18xf32> loc("r")
  %g = graph.reshape %r : (tensor<1x18xf32>) -> tensor<1x2x3x3xf32> loc("g")
  %df = graph.conv2d_backward_filter %g, %x {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<1x1x5x5xf32>) -> tensor<2x1x3x3xf32> loc("df")
  %nf = graph.sgd_update %f, %df {lr = 0.5 : f32} : tensor<2x1x3x3xf32> loc("nf")
  return %r, %nf : tensor<1x18xf32>, tensor<2x1x3x3xf32>
}

// -----

// A step marked graph.direct_pointwise_convs (the CPU target) plans no workspace for its 1x1
// convolutions at stride 1 without padding, forward and backward, which read the tensors
// directly; a padded 1x1 convolution (7x7 output) keeps its im2col workspace.
// CHECK-LABEL: func.func @direct_pointwise(
//  CHECK-SAME:   graph.direct_pointwise_convs
//  CHECK-NEXT:   graph.conv2d {{.*}} {dilations = array<i64: 1, 1>, graph.offsets = array<i64: {{[0-9]+}}>, padding
//  CHECK-NEXT:   graph.conv2d {{.*}} {dilations = array<i64: 1, 1>, graph.offsets = array<i64: {{[0-9]+}}>, graph.workspace_offset = {{[0-9]+}} : i64, padding = array<i64: 1, 1, 1, 1>
//  CHECK-NEXT:   graph.conv2d_backward_filter {{.*}}graph.offsets = array<i64: {{[0-9]+}}>, padding
//  CHECK-NEXT:   graph.conv2d_backward_data {{.*}}graph.offsets = array<i64: {{[0-9]+}}>, padding
func.func @direct_pointwise(%f: tensor<2x4x1x1xf32> {graph.kind = "parameter", graph.name = "f"},
                            %x: tensor<1x4x5x5xf32> {graph.kind = "input", graph.name = "x"})
    -> (tensor<1x2x5x5xf32>, tensor<1x2x7x7xf32>, tensor<1x4x5x5xf32>, tensor<2x4x1x1xf32>)
    attributes {graph.direct_pointwise_convs} {
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x5x5xf32> loc("c")
  %p = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x7x7xf32> loc("p")
  %df = graph.conv2d_backward_filter %c, %x {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<1x4x5x5xf32>) -> tensor<2x4x1x1xf32> loc("df")
  %dx = graph.conv2d_backward_data %c, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<2x4x1x1xf32>) -> tensor<1x4x5x5xf32> loc("dx")
  %nf = graph.sgd_update %f, %df {lr = 0.5 : f32} : tensor<2x4x1x1xf32> loc("nf")
  return %c, %p, %dx, %nf : tensor<1x2x5x5xf32>, tensor<1x2x7x7xf32>, tensor<1x4x5x5xf32>, tensor<2x4x1x1xf32>
}

// -----

// Without the mark (the CUDA target, where the workspace is cuDNN's limit) the same pointwise
// convolution gets its workspace: 4 x 25 floats.
// CHECK-LABEL: func.func @pointwise_with_workspace(
//  CHECK-NEXT:   graph.conv2d {{.*}}graph.workspace_offset = {{[0-9]+}} : i64, padding = array<i64: 0, 0, 0, 0>
func.func @pointwise_with_workspace(%f: tensor<2x4x1x1xf32> {graph.kind = "parameter", graph.name = "f"},
                                    %x: tensor<1x4x5x5xf32> {graph.kind = "input", graph.name = "x"})
    -> tensor<1x2x5x5xf32> {
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x5x5xf32> loc("c")
  return %c : tensor<1x2x5x5xf32>
}
