func.func @zero_round_trip(%g: tensor<20xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>) -> (tensor<10xf32>, tensor<4x4xf32>, tensor<4xf32>) {
  %s = graph.reduce_scatter %g {bucket = 0 : i64, ranks = 2 : i64} : (tensor<20xf32>) -> tensor<10xf32>
  %p = graph.rank_shard %w, %b {ranks = 2 : i64} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<10xf32>
  %n:2 = graph.all_gather_into %p, %w, %b {bucket = 0 : i64, ranks = 2 : i64} : (tensor<10xf32>, tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>)
  return %s, %n#0, %n#1 : tensor<10xf32>, tensor<4x4xf32>, tensor<4xf32>
}
