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

// With `starts` (a bucket laid out with aligned gaps), the shard covers the layout up to the
// last input's end: 64 + 4 = 68 elements over 3 ranks, 23 each.
func.func @rank_shard_layout_size(%w: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'graph.rank_shard' op shard 'tensor<7xf32>' of 68 elements over 3 ranks must be tensor<23xf32>}}
  %s = graph.rank_shard %w, %b {ranks = 3 : i64, starts = array<i64: 0, 64>} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<7xf32>
  return %s : tensor<7xf32>
}

// -----

// The inputs may not overlap in the layout: the weight's 16 elements end at 16.
func.func @rank_shard_overlap(%w: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'graph.rank_shard' op start 8 overlaps the tensor before it (which ends at 16)}}
  %s = graph.rank_shard %w, %b {ranks = 3 : i64, starts = array<i64: 0, 8>} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<7xf32>
  return %s : tensor<7xf32>
}

// -----

// One start per parameter.
func.func @all_gather_starts(%s: tensor<10xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{'graph.all_gather_into' op has 1 starts for 2 tensors}}
  %r:2 = graph.all_gather_into %s, %w, %b {bucket = 0 : i64, ranks = 2 : i64, starts = array<i64: 0>} : (tensor<10xf32>, tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<4x4xf32>, tensor<4xf32>
}

// -----

// Gathered parameters keep their types.
func.func @all_gather_types(%s: tensor<8xf32>, %w: tensor<4x4xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'graph.all_gather_into' op result 'tensor<16xf32>' differs from its parameter 'tensor<4x4xf32>'}}
  %r = graph.all_gather_into %s, %w {bucket = 0 : i64, ranks = 2 : i64} : (tensor<8xf32>, tensor<4x4xf32>) -> tensor<16xf32>
  return %r : tensor<16xf32>
}
