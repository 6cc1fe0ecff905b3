// RUN: graphc-opt %s --split-input-file --verify-diagnostics

// Verifier errors of the ops of issue #6; each message names the offending shapes or values.

// conv2d: groups must divide the output channels.
func.func @conv_groups_divide(%x: tensor<1x4x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> {
  // expected-error @+1 {{'graph.conv2d' op groups 2 must be positive and divide the 3 output channels}}
  %0 = graph.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2} : (tensor<1x4x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
}

// -----

// conv2d: input channels must be filter channels times groups.
func.func @conv_groups_channels(%x: tensor<1x4x5x5xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error @+1 {{'graph.conv2d' op input channels 4 do not match filter channels 1 x groups 2 (filter is OIHW)}}
  %0 = graph.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2} : (tensor<1x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

// avg_pool2d: the result shape follows from kernel, strides and padding.
func.func @avg_pool_shape(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x2x2xf32> {
  // expected-error @+1 {{'graph.avg_pool2d' op result should have shape [1x2x3x3], got 'tensor<1x2x2x2xf32>'}}
  %0 = graph.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}

// -----

// avg_pool2d_backward: grad must have the forward result's shape.
func.func @avg_pool_backward_shape(%g: tensor<1x2x2x2xf32>) -> tensor<1x2x6x6xf32> {
  // expected-error @+1 {{'graph.avg_pool2d_backward' op grad should have shape [1x2x3x3], got 'tensor<1x2x2x2xf32>'}}
  %0 = graph.avg_pool2d_backward %g {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x6x6xf32>
  return %0 : tensor<1x2x6x6xf32>
}

// -----

// batch_norm: the per-channel operands are [C].
func.func @batch_norm_channels(%x: tensor<2x3x4x4xf32>, %g: tensor<4xf32>, %v: tensor<3xf32>) {
  // expected-error @+1 {{'graph.batch_norm' op per-channel tensor should have shape [3], got 'tensor<4xf32>'}}
  %y:5 = graph.batch_norm %x, %g, %v, %v, %v {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<2x3x4x4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// batch_norm: PyTorch's momentum is a weight in [0, 1].
func.func @batch_norm_momentum(%x: tensor<2x3xf32>, %v: tensor<3xf32>) {
  // expected-error @+1 {{'graph.batch_norm' op momentum must be in [0, 1], got 1.5}}
  %y:5 = graph.batch_norm %x, %v, %v, %v, %v {epsilon = 1.0e-5 : f32, momentum = 1.5 : f32, training} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// batch_norm: batch statistics need more than one value per channel (as PyTorch requires).
func.func @batch_norm_one_value(%x: tensor<1x3xf32>, %v: tensor<3xf32>) {
  // expected-error @+1 {{'graph.batch_norm' op training needs more than one value per channel, got 'tensor<1x3xf32>'}}
  %y:5 = graph.batch_norm %x, %v, %v, %v, %v {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// batch_norm_apply: the saved statistics are per channel.
func.func @batch_norm_apply_channels(%x: tensor<2x3x4x4xf32>, %v: tensor<3xf32>, %m: tensor<4xf32>) {
  // expected-error @+1 {{'graph.batch_norm_apply' op per-channel tensor should have shape [3], got 'tensor<4xf32>'}}
  %y = graph.batch_norm_apply %x, %v, %v, %m, %v : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  return
}

// -----

// batch_norm_apply: the result has the input's type.
func.func @batch_norm_apply_type(%x: tensor<2x3xf32>, %v: tensor<3xf32>) {
  // expected-error @+1 {{'graph.batch_norm_apply' op result 'tensor<2x3xbf16>' must match the input 'tensor<2x3xf32>'}}
  %y = graph.batch_norm_apply %x, %v, %v, %v, %v : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xbf16>
  return
}

// -----

// batch_norm_backward: grad and grad_input have the input's type.
func.func @batch_norm_backward_type(%g: tensor<2x3xf32>, %x: tensor<4x3xf32>, %v: tensor<3xf32>) {
  // expected-error @+1 {{'graph.batch_norm_backward' op grad and grad_input must match the input 'tensor<4x3xf32>'}}
  %d:3 = graph.batch_norm_backward %g, %x, %v, %v, %v {training} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// concat: the inputs must add up to the result along the axis.
func.func @concat_sum(%a: tensor<2x1x3x3xf32>, %b: tensor<2x2x3x3xf32>) -> tensor<2x4x3x3xf32> {
  // expected-error @+1 {{'graph.concat' op inputs add up to 3 along axis 1 but the result 'tensor<2x4x3x3xf32>' has 4}}
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x1x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<2x4x3x3xf32>
  return %0 : tensor<2x4x3x3xf32>
}

// -----

// concat: other dimensions must agree.
func.func @concat_other_dims(%a: tensor<2x1x3x3xf32>, %b: tensor<2x2x4x3xf32>) -> tensor<2x3x3x3xf32> {
  // expected-error @+1 {{'graph.concat' op input 'tensor<2x2x4x3xf32>' differs from the result 'tensor<2x3x3x3xf32>' outside axis 1}}
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x1x3x3xf32>, tensor<2x2x4x3xf32>) -> tensor<2x3x3x3xf32>
  return %0 : tensor<2x3x3x3xf32>
}

// -----

// slice: the slice must lie inside the input.
func.func @slice_range(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.slice' op slice [2, 5) is outside the input's 4 along axis 1}}
  %0 = graph.slice %x {axis = 1 : i64, offset = 2 : i64} : (tensor<2x4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// clip: min must not exceed max.
func.func @clip_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.clip' op min 6.000000e+00 must not exceed max 0.000000e+00}}
  %0 = graph.clip %x {min = 6.0 : f32, max = 0.0 : f32} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// dropout: the ratio is in [0, 1).
func.func @dropout_ratio(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.dropout' op ratio must be in [0, 1), got 1}}
  %0 = graph.dropout %x, %s {ratio = 1.0 : f32, op_id = 0} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// dropout: a broadcast mask's groups tile the tensor.
func.func @dropout_mask_groups(%x: tensor<2x6xf32>, %s: tensor<f32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'graph.dropout' op mask groups of mask_repeat * mask_inner = 8 elements do not tile the 12 elements of 'tensor<2x6xf32>'}}
  %0 = graph.dropout %x, %s {ratio = 0.5 : f32, op_id = 0, mask_repeat = 4, mask_inner = 2} : (tensor<2x6xf32>, tensor<f32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// dropout: the broadcast counts are positive.
func.func @dropout_mask_repeat(%x: tensor<2x6xf32>, %s: tensor<f32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'graph.dropout_backward' op mask_repeat (0) and mask_inner (1) must be positive}}
  %0 = graph.dropout_backward %x, %s {ratio = 0.5 : f32, op_id = 0, mask_repeat = 0} : (tensor<2x6xf32>, tensor<f32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// random_normal: a finite mean and a non-negative scale.
func.func @random_normal_scale(%s: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.random_normal' op needs a finite mean and a finite scale >= 0, got mean 0.000000e+00 and scale -1.000000e+00}}
  %0 = graph.random_normal %s {mean = 0.0 : f32, scale = -1.0 : f32, op_id = 0} : (tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// random_uniform: low <= high.
func.func @random_uniform_bounds(%s: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.random_uniform' op needs finite bounds with low <= high, got [2.000000e+00, 1.000000e+00)}}
  %0 = graph.random_uniform %s {low = 2.0 : f32, high = 1.0 : f32, op_id = 0} : (tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// random_affine: a known kind.
func.func @random_affine_kind(%x: tensor<1x1x4x4xf32>, %s: tensor<f32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{'graph.random_affine' op kind "shear" is not one of flip_horizontal, flip_vertical, flip_both, rotate, zoom, zoom_uniform, translate}}
  %0 = graph.random_affine %x, %s {kind = "shear", op_id = 0} : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// random_affine: TensorFlow's fill modes but wrap.
func.func @random_affine_fill(%x: tensor<1x1x4x4xf32>, %s: tensor<f32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{'graph.random_affine' op fill_mode "wrap" is not one of reflect, nearest, constant}}
  %0 = graph.random_affine %x, %s {kind = "rotate", fill_mode = "wrap", op_id = 0} : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// random_affine: a zoom by 1 + low must stay positive.
func.func @random_affine_zoom(%x: tensor<1x1x4x4xf32>, %s: tensor<f32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{'graph.random_affine' op zooms by 1 + low > 0}}
  %0 = graph.random_affine %x, %s {kind = "zoom_uniform", low0 = -1.0 : f32, high0 = 0.5 : f32, op_id = 0} : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// random_affine: a crop's offsets are whole counts of positions within the image.
func.func @random_affine_crop(%x: tensor<1x1x4x4xf32>, %s: tensor<f32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{'graph.random_affine' op crop_offset needs low0 = low1 = 0 and high0, high1 whole counts of offsets from 1 to the height and width, got 0, 2.5 and 0, 1}}
  %0 = graph.random_affine %x, %s {kind = "crop_offset", high0 = 2.5 : f32, high1 = 1.0 : f32, op_id = 0} : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// random_affine: an image.
func.func @random_affine_rank(%x: tensor<4x4xf32>, %s: tensor<f32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'graph.random_affine' op needs an NCHW image, got 'tensor<4x4xf32>'}}
  %0 = graph.random_affine %x, %s {kind = "flip_horizontal", op_id = 0} : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// random_uniform: runs of `repeat` elements tile the tensor.
func.func @random_uniform_repeat(%s: tensor<f32>) -> tensor<4x6xf32> {
  // expected-error @+1 {{'graph.random_uniform' op repeat 5 must be positive and divide the 24 elements}}
  %0 = graph.random_uniform %s {low = 0.0 : f32, high = 1.0 : f32, op_id = 0, repeat = 5} : (tensor<f32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}
