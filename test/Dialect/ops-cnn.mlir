// RUN: graphc-opt %s --split-input-file | graphc-opt --split-input-file | FileCheck %s
// RUN: graphc-opt %s --split-input-file --mlir-print-op-generic | graphc-opt --split-input-file | FileCheck %s

// Round trip of the ops of issue #6 (torchvision CNNs): custom form, and generic form back.

// A depthwise conv2d (groups = C) and its two backward ops carry groups.
// CHECK-LABEL: func.func @conv_groups
//  CHECK-NEXT:   graph.conv2d %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, groups = 4 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x5x5xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
//  CHECK-NEXT:   graph.conv2d_backward_data %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, groups = 4 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x5x5xf32>
//  CHECK-NEXT:   graph.conv2d_backward_filter %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, groups = 4 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<4x1x3x3xf32>
func.func @conv_groups(%x: tensor<2x4x5x5xf32>, %w: tensor<4x1x3x3xf32>, %b: tensor<4xf32>) {
  %y = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4} : (tensor<2x4x5x5xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
  %dx = graph.conv2d_backward_data %y, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4} : (tensor<2x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x5x5xf32>
  %dw = graph.conv2d_backward_filter %y, %x {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4} : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<4x1x3x3xf32>
  return
}

// -----

// A transposed convolution: conv2d_backward_data with a bias (one per result channel).
// CHECK-LABEL: func.func @conv_transpose
//  CHECK-NEXT:   graph.conv2d_backward_data %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x8x4x4xf32>, tensor<8x4x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
func.func @conv_transpose(%x: tensor<2x8x4x4xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<4xf32>) {
  %y = graph.conv2d_backward_data %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x8x4x4xf32>, tensor<8x4x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  return
}

// -----

// Average pooling with count_include_pad, and its backward.
// CHECK-LABEL: func.func @avg_pool
//  CHECK-NEXT:   graph.avg_pool2d %{{.*}} {count_include_pad, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
//  CHECK-NEXT:   graph.avg_pool2d_backward %{{.*}} {count_include_pad, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
func.func @avg_pool(%x: tensor<1x2x6x6xf32>) {
  %y = graph.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  %dx = graph.avg_pool2d_backward %y {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad} : (tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  return
}

// -----

// Training-mode batch_norm with its five results, and its backward with three.
// CHECK-LABEL: func.func @batch_norm
//  CHECK-NEXT:   %{{.*}}, %{{.*}}, %{{.*}}, %[[MEAN:.*]], %[[INVSTD:.*]] = graph.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32, momentum = 1.000000e-01 : f32, training} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
//  CHECK-NEXT:   %{{.*}}, %{{.*}}, %{{.*}} = graph.batch_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %[[MEAN]], %[[INVSTD]] {training} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
func.func @batch_norm(%x: tensor<2x3x4x4xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) {
  %y:5 = graph.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, training} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  %d:3 = graph.batch_norm_backward %y#0, %x, %g, %y#3, %y#4 {training} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// batch_norm_apply: a batch norm's output recomputed from its saved statistics (remat).
// CHECK-LABEL: func.func @batch_norm_apply
//  CHECK-NEXT:   graph.batch_norm_apply %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x3x4x4xbf16>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xbf16>
func.func @batch_norm_apply(%x: tensor<2x3x4x4xbf16>, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %i: tensor<3xf32>) {
  %y = graph.batch_norm_apply %x, %g, %b, %m, %i : (tensor<2x3x4x4xbf16>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xbf16>
  return
}

// -----

// Inference-form batch_norm (no training attribute) on a rank-2 input.
// CHECK-LABEL: func.func @batch_norm_inference
//  CHECK-NEXT:   graph.batch_norm %{{.*}} {epsilon = 1.000000e-03 : f32, momentum = 0.000000e+00 : f32} : (tensor<4x3xf32>
func.func @batch_norm_inference(%x: tensor<4x3xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) {
  %y:5 = graph.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-3 : f32, momentum = 0.0 : f32} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// Concat of three tensors along channels and a slice back out.
// CHECK-LABEL: func.func @concat_slice
//  CHECK-NEXT:   %[[C:.*]] = graph.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x1x3x3xf32>, tensor<2x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<2x4x3x3xf32>
//  CHECK-NEXT:   graph.slice %[[C]] {axis = 1 : i64, offset = 1 : i64} : (tensor<2x4x3x3xf32>) -> tensor<2x2x3x3xf32>
func.func @concat_slice(%a: tensor<2x1x3x3xf32>, %b: tensor<2x2x3x3xf32>, %c: tensor<2x1x3x3xf32>) {
  %y = graph.concat %a, %b, %c {axis = 1 : i64} : (tensor<2x1x3x3xf32>, tensor<2x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<2x4x3x3xf32>
  %s = graph.slice %y {axis = 1 : i64, offset = 1 : i64} : (tensor<2x4x3x3xf32>) -> tensor<2x2x3x3xf32>
  return
}

// -----

// Clip (ReLU6) and its backward from the output.
// CHECK-LABEL: func.func @clip
//  CHECK-NEXT:   %[[Y:.*]] = graph.clip %{{.*}} {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : tensor<4x8xf32>
//  CHECK-NEXT:   graph.clip_backward %{{.*}}, %[[Y]] {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : tensor<4x8xf32>
func.func @clip(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>) {
  %y = graph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<4x8xf32>
  %d = graph.clip_backward %g, %y {min = 0.0 : f32, max = 6.0 : f32} : tensor<4x8xf32>
  return
}

// -----

// Dropout reads the step counter; its backward regenerates the mask from the same op_id.
// CHECK-LABEL: func.func @dropout
//  CHECK-NEXT:   graph.dropout %{{.*}}, %{{.*}} {op_id = 7 : i64, ratio = 2.000000e-01 : f32} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
//  CHECK-NEXT:   graph.dropout_backward %{{.*}}, %{{.*}} {op_id = 7 : i64, ratio = 2.000000e-01 : f32} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
func.func @dropout(%x: tensor<4x8xf32>, %step: tensor<f32>) {
  %y = graph.dropout %x, %step {ratio = 0.2 : f32, op_id = 7} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %d = graph.dropout_backward %y, %step {ratio = 0.2 : f32, op_id = 7} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return
}

// -----

// A spatial dropout's mask broadcast: one draw per (sample, channel) of an NCHW image, shared by
// its H * W = 36 pixels; its backward carries the same broadcast.
// CHECK-LABEL: func.func @spatial_dropout
//  CHECK-NEXT:   graph.dropout %{{.*}}, %{{.*}} {mask_repeat = 36 : i64, op_id = 3 : i64, ratio = 2.500000e-01 : f32} : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
//  CHECK-NEXT:   graph.dropout_backward %{{.*}}, %{{.*}} {mask_inner = 8 : i64, mask_repeat = 5 : i64, op_id = 4 : i64, ratio = 2.500000e-01 : f32} : (tensor<2x5x8xf32>, tensor<f32>) -> tensor<2x5x8xf32>
func.func @spatial_dropout(%x: tensor<2x4x6x6xf32>, %g: tensor<2x5x8xf32>, %step: tensor<f32>) {
  %y = graph.dropout %x, %step {ratio = 0.25 : f32, op_id = 3, mask_repeat = 36} : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %d = graph.dropout_backward %g, %step {ratio = 0.25 : f32, op_id = 4, mask_repeat = 5, mask_inner = 8} : (tensor<2x5x8xf32>, tensor<f32>) -> tensor<2x5x8xf32>
  return
}

// -----

// Counter-based noise reads only the step counter; `repeat` elements share a draw.
// CHECK-LABEL: func.func @noise
//  CHECK-NEXT:   graph.random_normal %{{.*}} {mean = 1.000000e+00 : f32, op_id = 5 : i64, scale = 5.000000e-01 : f32} : (tensor<f32>) -> tensor<4x8xf32>
//  CHECK-NEXT:   graph.random_uniform %{{.*}} {high = 1.000000e+00 : f32, index_offset = 32 : i64, low = -1.000000e+00 : f32, op_id = 6 : i64} : (tensor<f32>) -> tensor<4x8xf32>
//  CHECK-NEXT:   graph.random_uniform %{{.*}} {high = 1.000000e+00 : f32, low = 0.000000e+00 : f32, op_id = 7 : i64, repeat = 8 : i64} : (tensor<f32>) -> tensor<4x8xf32>
func.func @noise(%step: tensor<f32>) {
  %n = graph.random_normal %step {mean = 1.0 : f32, scale = 0.5 : f32, op_id = 5} : (tensor<f32>) -> tensor<4x8xf32>
  %u = graph.random_uniform %step {low = -1.0 : f32, high = 1.0 : f32, op_id = 6, index_offset = 32} : (tensor<f32>) -> tensor<4x8xf32>
  %r = graph.random_uniform %step {low = 0.0 : f32, high = 1.0 : f32, op_id = 7, repeat = 8} : (tensor<f32>) -> tensor<4x8xf32>
  return
}

// -----

// A random image transform (a zoom, a flip, a crop offset) reads the image and the step
// counter; the defaults (reflect fill, bilinear taps, no offset) are elided.
// CHECK-LABEL: func.func @random_affine
//  CHECK-NEXT:   graph.random_affine %{{.*}}, %{{.*}} {high0 = 2.000000e-01 : f32, high1 = 3.000000e-01 : f32, kind = "zoom", low0 = -2.000000e-01 : f32, low1 = 1.000000e-01 : f32, op_id = 2 : i64} : (tensor<2x3x7x9xf32>, tensor<f32>) -> tensor<2x3x7x9xf32>
//  CHECK-NEXT:   graph.random_affine %{{.*}}, %{{.*}} {fill_mode = "constant", fill_value = 5.000000e-01 : f32, interpolation = "nearest", kind = "flip_both", op_id = 3 : i64, sample_offset = 2 : i64} : (tensor<2x3x7x9xf32>, tensor<f32>) -> tensor<2x3x7x9xf32>
//  CHECK-NEXT:   graph.random_affine %{{.*}}, %{{.*}} {fill_mode = "constant", high0 = 3.000000e+00 : f32, high1 = 9.000000e+00 : f32, interpolation = "nearest", kind = "crop_offset", op_id = 4 : i64} : (tensor<2x3x7x9xf32>, tensor<f32>) -> tensor<2x3x7x9xf32>
func.func @random_affine(%x: tensor<2x3x7x9xf32>, %step: tensor<f32>) {
  %z = graph.random_affine %x, %step {kind = "zoom", low0 = -0.2 : f32, high0 = 0.2 : f32, low1 = 0.1 : f32, high1 = 0.3 : f32, fill_mode = "reflect", op_id = 2} : (tensor<2x3x7x9xf32>, tensor<f32>) -> tensor<2x3x7x9xf32>
  %f = graph.random_affine %x, %step {kind = "flip_both", fill_mode = "constant", fill_value = 0.5 : f32, interpolation = "nearest", op_id = 3, sample_offset = 2} : (tensor<2x3x7x9xf32>, tensor<f32>) -> tensor<2x3x7x9xf32>
  %c = graph.random_affine %x, %step {kind = "crop_offset", high0 = 3.0 : f32, high1 = 9.0 : f32, fill_mode = "constant", interpolation = "nearest", op_id = 4} : (tensor<2x3x7x9xf32>, tensor<f32>) -> tensor<2x3x7x9xf32>
  return
}
