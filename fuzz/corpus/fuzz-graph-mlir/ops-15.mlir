func.func @all_reduce_round_trip(%g: tensor<16xf32>) -> tensor<16xf32> {
  %r = graph.all_reduce %g {bucket = 3 : i64, ranks = 4 : i64} : tensor<16xf32>
  return %r : tensor<16xf32>
}
