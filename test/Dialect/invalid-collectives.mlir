// RUN: graphc-opt %s --split-input-file --verify-diagnostics

// The all_reduce verifier rejects buckets that are not flat and worlds of one rank.

// A gradient bucket is flat: the pass reshapes gradients before packing them.
func.func @all_reduce_not_flat(%g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'graph.all_reduce' op expects a flat (rank-1) gradient bucket, got 'tensor<4x4xf32>'}}
  %r = graph.all_reduce %g {bucket = 0 : i64, ranks = 2 : i64} : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// One rank has nothing to average with.
func.func @all_reduce_one_rank(%g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'graph.all_reduce' op needs at least 2 ranks, got 1}}
  %r = graph.all_reduce %g {bucket = 0 : i64, ranks = 1 : i64} : tensor<16xf32>
  return %r : tensor<16xf32>
}
