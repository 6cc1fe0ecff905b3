func.func @loss_scaling(%g: tensor<4x3xf32>, %b: tensor<3xf32>, %p: tensor<4x3xf32>, %h: tensor<f32>, %c: tensor<f32>, %k: tensor<f32>) -> (tensor<4x3xf32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %s = graph.loss_scale %g, %h : tensor<4x3xf32>
  %u = graph.loss_scale %s, %h {inverse} : tensor<4x3xf32>
  %ok = graph.all_finite %u, %b : tensor<4x3xf32>, tensor<3xf32>
  %np = graph.sgd_update %p, %u if %ok {lr = 0.1 : f32} : tensor<4x3xf32>
  %h2, %c2, %k2 = graph.update_loss_scale %h, %c, %k, %ok {growth_interval = 2000 : i64} : tensor<f32>
  return %np, %h2, %c2, %k2 : tensor<4x3xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
