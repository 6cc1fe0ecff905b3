func.func @dense_dynamic(%x: tensor<?x3xf32>, %w: tensor<3x2xf32>) -> tensor<?x2xf32> {
  %y = graph.dense %x, %w : (tensor<?x3xf32>, tensor<3x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}
