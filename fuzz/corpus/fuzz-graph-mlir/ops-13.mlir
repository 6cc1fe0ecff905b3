func.func @casts_and_bf16_dense(%x: tensor<4x3xf32>, %w: tensor<3x2xbf16>) -> tensor<4x2xf32> {
  %xh = graph.cast %x : tensor<4x3xf32> to tensor<4x3xbf16>
  %y = graph.dense %xh, %w : (tensor<4x3xbf16>, tensor<3x2xbf16>) -> tensor<4x2xbf16>
  %h = graph.cast %y : tensor<4x2xbf16> to tensor<4x2xf16>
  %f = graph.cast %h : tensor<4x2xf16> to tensor<4x2xf32>
  return %f : tensor<4x2xf32>
}
