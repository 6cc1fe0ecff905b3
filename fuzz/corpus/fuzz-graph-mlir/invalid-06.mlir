func.func @reshape_dynamic_result(%x: tensor<4x3xf32>) -> tensor<?xf32> {
  %y = graph.reshape %x : (tensor<4x3xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}
