func.func @mixed_precision_dense(%x: tensor<4x3xbf16>, %w: tensor<3x2xf32>) -> tensor<4x2xbf16> {
  %y = graph.dense %x, %w : (tensor<4x3xbf16>, tensor<3x2xf32>) -> tensor<4x2xbf16>
  return %y : tensor<4x2xbf16>
}
