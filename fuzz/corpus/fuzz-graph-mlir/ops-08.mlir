func.func @activations(%x: tensor<4x3xf32>, %g: tensor<4x3xf32>) {
  %r = graph.relu %x : tensor<4x3xf32>
  %s = graph.sigmoid %x : tensor<4x3xf32>
  %t = graph.tanh %x : tensor<4x3xf32>
  %sm = graph.softmax %x {axis = 1} : tensor<4x3xf32>
  %0 = graph.relu_backward %g, %r : tensor<4x3xf32>
  %1 = graph.sigmoid_backward %g, %s : tensor<4x3xf32>
  %2 = graph.tanh_backward %g, %t : tensor<4x3xf32>
  %3 = graph.softmax_backward %g, %sm {axis = 1} : tensor<4x3xf32>
  return
}
