func.func @cast_changes_shape(%x: tensor<4x3xf32>) -> tensor<12xbf16> {
  %y = graph.cast %x : tensor<4x3xf32> to tensor<12xbf16>
  return %y : tensor<12xbf16>
}
