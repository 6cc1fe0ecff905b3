// RUN: graphc-opt %s --split-input-file --graphc-split-data-gradients | FileCheck %s

// A data gradient that only channel slices read (the backward of a concatenation [2, 4]) is
// computed per slice, from the filter's input-channel slices; the whole gradient is gone.
// CHECK-LABEL: func.func @two_slices
// CHECK-SAME: graph.split_data_gradients = 1 : i64
//  CHECK-NEXT: %[[WA:.*]] = graph.slice %arg1 {axis = 1 : i64, offset = 0 : i64} : (tensor<4x6x3x3xf32>) -> tensor<4x2x3x3xf32>
//  CHECK-NEXT: %[[GA:.*]] = graph.conv2d_backward_data %arg0, %[[WA]] {dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<2x2x8x8xf32>
//  CHECK-NEXT: %[[WB:.*]] = graph.slice %arg1 {axis = 1 : i64, offset = 2 : i64} : (tensor<4x6x3x3xf32>) -> tensor<4x4x3x3xf32>
//  CHECK-NEXT: %[[GB:.*]] = graph.conv2d_backward_data %arg0, %[[WB]] {{.*}} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
//  CHECK-NEXT: return %[[GA]], %[[GB]]
func.func @two_slices(%gy: tensor<2x4x8x8xf32>, %w: tensor<4x6x3x3xf32>) -> (tensor<2x2x8x8xf32>, tensor<2x4x8x8xf32>) {
  %gx = graph.conv2d_backward_data %gy, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x6x3x3xf32>) -> tensor<2x6x8x8xf32>
  %ga = graph.slice %gx {axis = 1 : i64, offset = 0 : i64} : (tensor<2x6x8x8xf32>) -> tensor<2x2x8x8xf32>
  %gb = graph.slice %gx {axis = 1 : i64, offset = 2 : i64} : (tensor<2x6x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %ga, %gb : tensor<2x2x8x8xf32>, tensor<2x4x8x8xf32>
}

// -----

// The filter's in-place optimizer update comes before the slices (autodiff's order): the parts
// are computed before it, while the filter still holds the weights the forward pass used.
// CHECK-LABEL: func.func @update_before_slices
//       CHECK: %[[GW:.*]] = graph.conv2d_backward_filter
//  CHECK-NEXT: %[[WA:.*]] = graph.slice %arg1 {axis = 1 : i64, offset = 0 : i64}
//  CHECK-NEXT: graph.conv2d_backward_data %arg0, %[[WA]]
//  CHECK-NEXT: %[[WB:.*]] = graph.slice %arg1 {axis = 1 : i64, offset = 2 : i64}
//  CHECK-NEXT: graph.conv2d_backward_data %arg0, %[[WB]]
//  CHECK-NEXT: graph.momentum_update %arg1, %[[GW]], %arg3
func.func @update_before_slices(%gy: tensor<2x4x8x8xf32>, %w: tensor<4x6x3x3xf32>, %x: tensor<2x6x8x8xf32>, %u: tensor<4x6x3x3xf32>)
    -> (tensor<2x2x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4x6x3x3xf32>, tensor<4x6x3x3xf32>) {
  %gx = graph.conv2d_backward_data %gy, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x6x3x3xf32>) -> tensor<2x6x8x8xf32>
  %gw = graph.conv2d_backward_filter %gy, %x {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<2x6x8x8xf32>) -> tensor<4x6x3x3xf32>
  %w1, %u1 = graph.momentum_update %w, %gw, %u {lr = 1.0e-02 : f32, momentum = 0.9 : f32} : tensor<4x6x3x3xf32>
  %ga = graph.slice %gx {axis = 1 : i64, offset = 0 : i64} : (tensor<2x6x8x8xf32>) -> tensor<2x2x8x8xf32>
  %gb = graph.slice %gx {axis = 1 : i64, offset = 2 : i64} : (tensor<2x6x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %ga, %gb, %w1, %u1 : tensor<2x2x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4x6x3x3xf32>, tensor<4x6x3x3xf32>
}

// -----

// A reader other than a channel slice needs the whole gradient: nothing changes.
// CHECK-LABEL: func.func @other_reader
//   CHECK-NOT: graph.split_data_gradients
//       CHECK: graph.conv2d_backward_data %arg0, %arg1 {{.*}} -> tensor<2x6x8x8xf32>
//   CHECK-NOT: graph.conv2d_backward_data
func.func @other_reader(%gy: tensor<2x4x8x8xf32>, %w: tensor<4x6x3x3xf32>) -> (tensor<2x2x8x8xf32>, tensor<2x6x8x8xf32>) {
  %gx = graph.conv2d_backward_data %gy, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x6x3x3xf32>) -> tensor<2x6x8x8xf32>
  %ga = graph.slice %gx {axis = 1 : i64, offset = 0 : i64} : (tensor<2x6x8x8xf32>) -> tensor<2x2x8x8xf32>
  %r = graph.relu %gx : tensor<2x6x8x8xf32>
  return %ga, %r : tensor<2x2x8x8xf32>, tensor<2x6x8x8xf32>
}

// -----

// Slices on the batch axis are not over the filter's input channels: nothing changes.
// CHECK-LABEL: func.func @batch_slices
//   CHECK-NOT: graph.split_data_gradients
//       CHECK: graph.conv2d_backward_data %arg0, %arg1
//  CHECK-NEXT: graph.slice %{{.*}} {axis = 0 : i64, offset = 0 : i64}
func.func @batch_slices(%gy: tensor<2x4x8x8xf32>, %w: tensor<4x6x3x3xf32>) -> (tensor<1x6x8x8xf32>, tensor<1x6x8x8xf32>) {
  %gx = graph.conv2d_backward_data %gy, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x6x3x3xf32>) -> tensor<2x6x8x8xf32>
  %ga = graph.slice %gx {axis = 0 : i64, offset = 0 : i64} : (tensor<2x6x8x8xf32>) -> tensor<1x6x8x8xf32>
  %gb = graph.slice %gx {axis = 0 : i64, offset = 1 : i64} : (tensor<2x6x8x8xf32>) -> tensor<1x6x8x8xf32>
  return %ga, %gb : tensor<1x6x8x8xf32>, tensor<1x6x8x8xf32>
}

// -----

// A grouped convolution's input channels each belong to one group's filter slice: left whole.
// CHECK-LABEL: func.func @grouped
//   CHECK-NOT: graph.split_data_gradients
//       CHECK: graph.conv2d_backward_data %arg0, %arg1 {{.*}} -> tensor<2x6x8x8xf32>
func.func @grouped(%gy: tensor<2x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>) {
  %gx = graph.conv2d_backward_data %gy, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x6x8x8xf32>
  %ga = graph.slice %gx {axis = 1 : i64, offset = 0 : i64} : (tensor<2x6x8x8xf32>) -> tensor<2x3x8x8xf32>
  %gb = graph.slice %gx {axis = 1 : i64, offset = 3 : i64} : (tensor<2x6x8x8xf32>) -> tensor<2x3x8x8xf32>
  return %ga, %gb : tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>
}
