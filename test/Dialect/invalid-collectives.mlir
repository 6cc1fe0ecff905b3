// RUN: graphc-opt %s --split-input-file --verify-diagnostics

// The all_reduce verifier rejects buckets that are not flat and empty worlds.

// A gradient bucket is flat: the pass reshapes gradients before packing them.
func.func @all_reduce_not_flat(%g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'graph.all_reduce' op expects a flat (rank-1) gradient bucket, got 'tensor<4x4xf32>'}}
  %r = graph.all_reduce %g {bucket = 0 : i64, ranks = 2 : i64} : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// A world has at least one rank.
func.func @all_reduce_no_rank(%g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'graph.all_reduce' op needs at least 1 rank, got 0}}
  %r = graph.all_reduce %g {bucket = 0 : i64, ranks = 0 : i64} : tensor<16xf32>
  return %r : tensor<16xf32>
}
