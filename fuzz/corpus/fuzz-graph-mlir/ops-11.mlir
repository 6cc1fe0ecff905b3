func.func @updates(%p: tensor<3x2xf32>, %g: tensor<3x2xf32>, %v: tensor<3x2xf32>, %m: tensor<3x2xf32>, %s: tensor<f32>)
    -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %0 = graph.sgd_update %p, %g {lr = 0.5 : f32} : tensor<3x2xf32>
  %1:2 = graph.momentum_update %p, %g, %v {lr = 0.25 : f32, momentum = 0.75 : f32} : tensor<3x2xf32>
  %2:3 = graph.adam_update %p, %g, %m, %v, %s {lr = 0.25 : f32, beta1 = 0.5 : f32, beta2 = 0.75 : f32, epsilon = 0.125 : f32} : tensor<3x2xf32>, tensor<f32>
  return %0, %1#0, %1#1, %2#0, %2#1, %2#2 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}
