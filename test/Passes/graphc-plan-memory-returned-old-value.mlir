// RUN: graphc-opt %s --split-input-file --verify-diagnostics --graphc-plan-memory

// Returning the old value of a parameter after its in-place update would return the updated
// bytes, so the return counts as a later use. Today Liveness.cpp skips uses by the terminator
// (stepOf.lookup gives 0 for it), plans both results at the parameter's offset, and
// graphc-verify-plan accepts the plan.
func.func @param_returned_after_update(%w: tensor<4xf32> {graph.kind = "parameter", graph.name = "w"},
                                       %g: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{in-place update of 'w' while it is still used by a later op}}
  %nw = graph.sgd_update %w, %g {lr = 0.5 : f32} : tensor<4xf32>
  return %nw, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// The same through a view: the reshape of the parameter is returned after the update.
func.func @view_returned_after_update(%w: tensor<4xf32> {graph.kind = "parameter", graph.name = "w"},
                                      %g: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x2xf32>) {
  %v = graph.reshape %w : (tensor<4xf32>) -> tensor<2x2xf32>
  // expected-error @+1 {{in-place update of 'w' while it is still used by a later op}}
  %nw = graph.sgd_update %w, %g {lr = 0.5 : f32} : tensor<4xf32>
  return %nw, %v : tensor<4xf32>, tensor<2x2xf32>
}
