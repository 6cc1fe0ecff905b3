// RUN: graphc-opt %s --split-input-file --verify-diagnostics --graphc-plan-memory
// RUN: not graphc-opt %s --split-input-file --graphc-plan-memory=alignment=48 2>&1 | FileCheck %s --check-prefix=ALIGN
// RUN: not graphc-opt %s --split-input-file --graphc-plan-memory=alignment=0 2>&1 | FileCheck %s --check-prefix=ALIGN
// RUN: not graphc-opt %s --split-input-file --graphc-plan-memory=alignment=-256 2>&1 | FileCheck %s --check-prefix=ALIGN

// An alignment that is not a positive power of two is refused before planning and nothing is
// annotated. (The value in the message is checked in graphc-plan-memory-alignment-message.mlir.)
// ALIGN: error: alignment must be a positive power of two, got
// ALIGN-NOT: graph.offset

// The parameter is overwritten in place by sgd_update while a later relu still reads it.
func.func @param_read_after_update(%w: tensor<4xf32> {graph.kind = "parameter", graph.name = "w"},
                                   %g: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{in-place update of 'w' while it is still used by a later op}}
  %nw = graph.sgd_update %w, %g {lr = 0.5 : f32} : tensor<4xf32>
  %r = graph.relu %w : tensor<4xf32>
  return %nw, %r : tensor<4xf32>, tensor<4xf32>
}

// -----

// A later reader of a reshape view of the parameter reads the same bytes, so it counts too.
func.func @view_read_after_update(%w: tensor<4xf32> {graph.kind = "parameter", graph.name = "w"},
                                  %g: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x2xf32>) {
  %v = graph.reshape %w : (tensor<4xf32>) -> tensor<2x2xf32>
  // expected-error @+1 {{in-place update of 'w' while it is still used by a later op}}
  %nw = graph.sgd_update %w, %g {lr = 0.5 : f32} : tensor<4xf32>
  %r = graph.relu %v : tensor<2x2xf32>
  return %nw, %r : tensor<4xf32>, tensor<2x2xf32>
}

// -----

// Two updates of the same parameter: the first one's input is still read by the second.
func.func @updated_twice(%w: tensor<4xf32> {graph.kind = "parameter", graph.name = "w"},
                         %g: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{in-place update of 'w' while it is still used by a later op}}
  %a = graph.sgd_update %w, %g {lr = 0.5 : f32} : tensor<4xf32>
  %b = graph.sgd_update %w, %g {lr = 0.25 : f32} : tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Optimizer state is written in place too: Adam's m is still read by a later relu.
func.func @state_read_after_update(%w: tensor<4xf32> {graph.kind = "parameter", graph.name = "w"},
                                   %m: tensor<4xf32> {graph.kind = "optimizer_state", graph.name = "w.m"},
                                   %v: tensor<4xf32> {graph.kind = "optimizer_state", graph.name = "w.v"},
                                   %g: tensor<4xf32>, %s: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{in-place update of 'w.m' while it is still used by a later op}}
  %nw, %nm, %nv = graph.adam_update %w, %g, %m, %v, %s {lr = 0.5 : f32, beta1 = 0.5 : f32, beta2 = 0.5 : f32, epsilon = 0.5 : f32} : tensor<4xf32>, tensor<f32>
  %r = graph.relu %m : tensor<4xf32>
  return %nw, %nm, %nv, %r : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
