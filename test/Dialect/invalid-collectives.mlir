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

// -----

// A reduce-scatter needs a bucket that splits into equal shards.
func.func @reduce_scatter_uneven(%g: tensor<10xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.reduce_scatter' op bucket of 10 elements does not split into 3 equal shards (pad it)}}
  %s = graph.reduce_scatter %g {bucket = 0 : i64, ranks = 3 : i64} : (tensor<10xf32>) -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// -----

// A rank's shard of 20 elements over 3 ranks has ceil(20 / 3) = 7 elements.
func.func @rank_shard_size(%w: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'graph.rank_shard' op shard 'tensor<6xf32>' of 20 elements over 3 ranks must be tensor<7xf32>}}
  %s = graph.rank_shard %w, %b {ranks = 3 : i64} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<6xf32>
  return %s : tensor<6xf32>
}

// -----

// Gathered parameters keep their types.
func.func @all_gather_types(%s: tensor<8xf32>, %w: tensor<4x4xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'graph.all_gather_into' op result 'tensor<16xf32>' differs from its parameter 'tensor<4x4xf32>'}}
  %r = graph.all_gather_into %s, %w {bucket = 0 : i64, ranks = 2 : i64} : (tensor<8xf32>, tensor<4x4xf32>) -> tensor<16xf32>
  return %r : tensor<16xf32>
}
