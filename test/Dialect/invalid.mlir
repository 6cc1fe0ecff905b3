// RUN: graphc-opt %s --split-input-file --verify-diagnostics

// Every verifier of the graph dialect rejects bad IR with a message that prints the offending
// shapes. Negative axes are in invalid-negative-axis.mlir.

// Dense: the input's feature count must match the weight's [in, out] rows.
func.func @dense_feature_mismatch(%x: tensor<4x3xf32>, %w: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'graph.dense' op input 'tensor<4x3xf32>' has 3 features but weight 'tensor<4x2xf32>' expects 4 (weight is [in, out])}}
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Dense with transpose_weight: the weight is [out, in], so its columns are the features.
func.func @dense_transposed_feature_mismatch(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{input 'tensor<4x3xf32>' has 3 features but weight 'tensor<3x2xf32>' expects 2 (weight is [out, in])}}
  %y = graph.dense %x, %w {transpose_weight} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// Dense: the bias must be [out].
func.func @dense_bad_bias(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>, %b: tensor<3xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'graph.dense' op bias should have shape [2], got 'tensor<3xf32>'}}
  %y = graph.dense %x, %w, %b : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Dense: the result must be [N, out].
func.func @dense_bad_result(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'graph.dense' op result should have shape [4x2], got 'tensor<2x4xf32>'}}
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Dense: input and weight must be rank 2.
func.func @dense_rank(%x: tensor<4x3x1xf32>, %w: tensor<3x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'graph.dense' op expects rank-2 input and weight, got 'tensor<4x3x1xf32>' and 'tensor<3x2xf32>'}}
  %y = graph.dense %x, %w : (tensor<4x3x1xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Dynamic shapes are refused: graphc plans bytes ahead of time.
func.func @dense_dynamic(%x: tensor<?x3xf32>, %w: tensor<3x2xf32>) -> tensor<?x2xf32> {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<?x3xf32>'}}
  %y = graph.dense %x, %w : (tensor<?x3xf32>, tensor<3x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// A dynamic result type is refused too, even when every operand is static.
func.func @reshape_dynamic_result(%x: tensor<4x3xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<?xf32>'}}
  %y = graph.reshape %x : (tensor<4x3xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Matmul: the contraction sizes of op(lhs) and op(rhs) must agree.
func.func @matmul_contraction(%a: tensor<4x3xf32>, %b: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'graph.matmul' op contraction sizes differ: 'tensor<4x3xf32>' and 'tensor<4x2xf32>'}}
  %y = graph.matmul %a, %b : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Matmul: transpose_rhs makes the rhs [n, k], so a 2x3 rhs contracts over 3, not 2.
func.func @matmul_transposed_contraction(%a: tensor<4x2xf32>, %b: tensor<2x3xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'graph.matmul' op contraction sizes differ: 'tensor<4x2xf32>' and 'tensor<2x3xf32>'}}
  %y = graph.matmul %a, %b {transpose_rhs} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Matmul: the result is [m, n] of the transposed operands.
func.func @matmul_result(%a: tensor<4x3xf32>, %g: tensor<4x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.matmul' op result should have shape [3x2], got 'tensor<2x3xf32>'}}
  %y = graph.matmul %a, %g {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// bias_grad: the axis must be a dimension of the gradient.
func.func @bias_grad_axis(%g: tensor<4x2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.bias_grad' op axis 2 is out of range for 'tensor<4x2xf32>'}}
  %b = graph.bias_grad %g {axis = 2} : (tensor<4x2xf32>) -> tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

// bias_grad: the result has the size of the kept axis.
func.func @bias_grad_result(%g: tensor<2x5x3x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.bias_grad' op result should have shape [5], got 'tensor<3xf32>'}}
  %b = graph.bias_grad %g {axis = 1} : (tensor<2x5x3x3xf32>) -> tensor<3xf32>
  return %b : tensor<3xf32>
}

// -----

// Conv2d: input channels must match the filter's I (OIHW).
func.func @conv_channels(%x: tensor<2x3x8x8xf32>, %f: tensor<4x2x3x3xf32>) -> tensor<2x4x6x6xf32> {
  // expected-error @+1 {{'graph.conv2d' op input channels 3 do not match filter channels 2 (filter is OIHW)}}
  %y = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}

// -----

// Conv2d: a 5x5 filter does not fit an unpadded 4x4 image.
func.func @conv_window_too_big(%x: tensor<2x3x4x4xf32>, %f: tensor<4x3x5x5xf32>) -> tensor<2x4x1x1xf32> {
  // expected-error @+1 {{'graph.conv2d' op filter window 5x5 does not fit the padded input 4x4}}
  %y = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x4x4xf32>, tensor<4x3x5x5xf32>) -> tensor<2x4x1x1xf32>
  return %y : tensor<2x4x1x1xf32>
}

// -----

// Conv2d: dilation 2 widens a 3x3 window to 5x5, which no longer fits a 4x4 image.
func.func @conv_dilated_window_too_big(%x: tensor<2x3x4x4xf32>, %f: tensor<4x3x3x3xf32>) -> tensor<2x4x1x1xf32> {
  // expected-error @+1 {{'graph.conv2d' op filter window 3x3 does not fit the padded input 4x4}}
  %y = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>} : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x1x1xf32>
  return %y : tensor<2x4x1x1xf32>
}

// -----

// Conv2d: strides are [h, w], three values are refused.
func.func @conv_strides_count(%x: tensor<2x3x8x8xf32>, %f: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {
  // expected-error @+1 {{'graph.conv2d' op expects strides [h, w], padding [top, left, bottom, right] and dilations [h, w], got 3, 4 and 2 values}}
  %y = graph.conv2d %x, %f {strides = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}

// -----

// Conv2d: padding is [top, left, bottom, right], two values are refused.
func.func @conv_padding_count(%x: tensor<2x3x8x8xf32>, %f: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {
  // expected-error @+1 {{got 2, 2 and 2 values}}
  %y = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}

// -----

// Conv2d: a zero stride is refused (and printed).
func.func @conv_zero_stride(%x: tensor<2x3x8x8xf32>, %f: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {
  // expected-error @+1 {{'graph.conv2d' op strides must be positive, got [1, 0]}}
  %y = graph.conv2d %x, %f {strides = array<i64: 1, 0>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}

// -----

// Conv2d: a zero dilation is refused.
func.func @conv_zero_dilation(%x: tensor<2x3x8x8xf32>, %f: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {
  // expected-error @+1 {{'graph.conv2d' op dilations must be positive}}
  %y = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 0, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}

// -----

// Conv2d: negative padding is refused.
func.func @conv_negative_padding(%x: tensor<2x3x8x8xf32>, %f: tensor<4x3x3x3xf32>) -> tensor<2x4x5x6xf32> {
  // expected-error @+1 {{'graph.conv2d' op padding must be non-negative}}
  %y = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: -1, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x5x6xf32>
  return %y : tensor<2x4x5x6xf32>
}

// -----

// Conv2d: the bias has one value per output channel (filter's O).
func.func @conv_bad_bias(%x: tensor<2x3x8x8xf32>, %f: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<2x4x6x6xf32> {
  // expected-error @+1 {{'graph.conv2d' op bias should have shape [4], got 'tensor<3xf32>'}}
  %y = graph.conv2d %x, %f, %b {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}

// -----

// Conv2d: the result shape follows from strides and padding ((8 + 2 - 3) / 2 + 1 = 4).
func.func @conv_bad_result(%x: tensor<2x3x8x8xf32>, %f: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {
  // expected-error @+1 {{'graph.conv2d' op result should have shape [2x4x4x4], got 'tensor<2x4x6x6xf32>'}}
  %y = graph.conv2d %x, %f {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}

// -----

// Conv2d: input and filter must be rank 4.
func.func @conv_rank(%x: tensor<3x8x8xf32>, %f: tensor<4x3x3x3xf32>) -> tensor<4x6x6xf32> {
  // expected-error @+1 {{'graph.conv2d' op expects a rank-4 NCHW input and OIHW filter, got ranks 3 and 4}}
  %y = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<4x6x6xf32>
  return %y : tensor<4x6x6xf32>
}

// -----

// conv2d_backward_data: the gradient must have the conv output shape of the result (the
// conv input) and the filter.
func.func @conv_backward_data_shape(%dy: tensor<2x4x5x5xf32>, %f: tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32> {
  // expected-error @+1 {{'graph.conv2d_backward_data' op grad should have shape [2x4x6x6], got 'tensor<2x4x5x5xf32>'}}
  %dx = graph.conv2d_backward_data %dy, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return %dx : tensor<2x3x8x8xf32>
}

// -----

// conv2d_backward_data: the result (conv input) channels must match the filter's I.
func.func @conv_backward_data_channels(%dy: tensor<2x4x6x6xf32>, %f: tensor<4x3x3x3xf32>) -> tensor<2x5x8x8xf32> {
  // expected-error @+1 {{'graph.conv2d_backward_data' op input channels 5 do not match filter channels 3 (filter is OIHW)}}
  %dx = graph.conv2d_backward_data %dy, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x5x8x8xf32>
  return %dx : tensor<2x5x8x8xf32>
}

// -----

// conv2d_backward_filter: the gradient's output channels must match the result's O.
func.func @conv_backward_filter_shape(%dy: tensor<2x4x6x6xf32>, %x: tensor<2x3x8x8xf32>) -> tensor<5x3x3x3xf32> {
  // expected-error @+1 {{'graph.conv2d_backward_filter' op grad should have shape [2x5x6x6], got 'tensor<2x4x6x6xf32>'}}
  %dw = graph.conv2d_backward_filter %dy, %x {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x3x8x8xf32>) -> tensor<5x3x3x3xf32>
  return %dw : tensor<5x3x3x3xf32>
}

// -----

// conv2d_backward_filter: the window attributes are checked like conv2d's.
func.func @conv_backward_filter_strides(%dy: tensor<2x4x6x6xf32>, %x: tensor<2x3x8x8xf32>) -> tensor<4x3x3x3xf32> {
  // expected-error @+1 {{'graph.conv2d_backward_filter' op expects strides [h, w], padding [top, left, bottom, right] and dilations [h, w], got 1, 4 and 2 values}}
  %dw = graph.conv2d_backward_filter %dy, %x {strides = array<i64: 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x3x8x8xf32>) -> tensor<4x3x3x3xf32>
  return %dw : tensor<4x3x3x3xf32>
}

// -----

// max_pool2d: the result shape follows from kernel and strides ((6 - 2) / 2 + 1 = 3).
func.func @maxpool_result(%x: tensor<2x4x6x6xf32>) -> tensor<2x4x2x2xf32> {
  // expected-error @+1 {{'graph.max_pool2d' op result should have shape [2x4x3x3], got 'tensor<2x4x2x2xf32>'}}
  %y = graph.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x6x6xf32>) -> tensor<2x4x2x2xf32>
  return %y : tensor<2x4x2x2xf32>
}

// -----

// max_pool2d: the window must fit the padded input.
func.func @maxpool_window_too_big(%x: tensor<2x4x3x3xf32>) -> tensor<2x4x1x1xf32> {
  // expected-error @+1 {{'graph.max_pool2d' op pooling window 4x4 does not fit the padded input 3x3}}
  %y = graph.max_pool2d %x {kernel = array<i64: 4, 4>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x3x3xf32>) -> tensor<2x4x1x1xf32>
  return %y : tensor<2x4x1x1xf32>
}

// -----

// max_pool2d: the kernel is [h, w] and positive.
func.func @maxpool_bad_kernel(%x: tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32> {
  // expected-error @+1 {{'graph.max_pool2d' op expects a positive kernel [h, w]}}
  %y = graph.max_pool2d %x {kernel = array<i64: 2, 0>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32>
  return %y : tensor<2x4x3x3xf32>
}

// -----

// max_pool2d_backward: the gradient has the pooled shape.
func.func @maxpool_backward_grad(%g: tensor<2x4x2x2xf32>, %x: tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32> {
  // expected-error @+1 {{'graph.max_pool2d_backward' op grad should have shape [2x4x3x3], got 'tensor<2x4x2x2xf32>'}}
  %dx = graph.max_pool2d_backward %g, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x2x2xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  return %dx : tensor<2x4x6x6xf32>
}

// -----

// max_pool2d_backward: the result has the forward input's shape.
func.func @maxpool_backward_result(%g: tensor<2x4x3x3xf32>, %x: tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32> {
  // expected-error @+1 {{'graph.max_pool2d_backward' op result should have shape [2x4x6x6], got 'tensor<2x4x3x3xf32>'}}
  %dx = graph.max_pool2d_backward %g, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32>
  return %dx : tensor<2x4x3x3xf32>
}

// -----

// Reshape keeps the element count.
func.func @reshape_count(%x: tensor<2x4x3x3xf32>) -> tensor<2x35xf32> {
  // expected-error @+1 {{'graph.reshape' op cannot reshape 'tensor<2x4x3x3xf32>' (72 elements) to 'tensor<2x35xf32>' (70 elements)}}
  %y = graph.reshape %x : (tensor<2x4x3x3xf32>) -> tensor<2x35xf32>
  return %y : tensor<2x35xf32>
}

// -----

// Softmax: the axis must be a dimension of the input.
func.func @softmax_axis(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.softmax' op axis 2 is out of range for 'tensor<4x3xf32>'}}
  %y = graph.softmax %x {axis = 2} : tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// A causal softmax masks the keys (last axis) of [..., queries, keys] scores.
func.func @softmax_causal_axis(%x: tensor<2x4x3xf32>) -> tensor<2x4x3xf32> {
  // expected-error @+1 {{'graph.softmax' op causal needs [..., queries, keys] scores and the last axis, got 'tensor<2x4x3xf32>' and axis 1}}
  %y = graph.softmax %x {axis = 1, causal} : tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// softmax_backward: the same axis check as softmax.
func.func @softmax_backward_axis(%g: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.softmax_backward' op axis 5 is out of range for 'tensor<4x3xf32>'}}
  %dx = graph.softmax_backward %g, %y {axis = 5} : tensor<4x3xf32>
  return %dx : tensor<4x3xf32>
}

// -----

// Sparse categorical crossentropy: f32 labels are refused (class indices are int64).
func.func @sparse_label_dtype(%p: tensor<4x3xf32>, %l: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op sparse_categorical_crossentropy expects int64 labels of shape [4], got 'tensor<4xf32>'}}
  %0 = graph.loss sparse_categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Sparse categorical crossentropy: labels are [N], one class index per sample.
func.func @sparse_label_shape(%p: tensor<4x3xf32>, %l: tensor<3xi64>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op sparse_categorical_crossentropy expects int64 labels of shape [4], got 'tensor<3xi64>'}}
  %0 = graph.loss sparse_categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<3xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Sparse categorical crossentropy: one-hot shaped int64 labels are refused too.
func.func @sparse_label_rank(%p: tensor<4x3xf32>, %l: tensor<4x3xi64>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op sparse_categorical_crossentropy expects int64 labels of shape [4], got 'tensor<4x3xi64>'}}
  %0 = graph.loss sparse_categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4x3xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Sparse categorical crossentropy: predictions are [batch, classes] or [batch, ..., classes].
func.func @sparse_prediction_rank(%p: tensor<4xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op sparse_categorical_crossentropy expects [batch, classes] or [batch, ..., classes] predictions, got 'tensor<4xf32>'}}
  %0 = graph.loss sparse_categorical_crossentropy %p, %l : (tensor<4xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Sparse categorical crossentropy: per-position predictions [4, 3, 2] need a class index per
// position, [4, 3].
func.func @sparse_positions_label_shape(%p: tensor<4x3x2xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op sparse_categorical_crossentropy expects int64 labels of shape [4, 3], got 'tensor<4xi64>'}}
  %0 = graph.loss sparse_categorical_crossentropy %p, %l : (tensor<4x3x2xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// An ignored label belongs to class indices: mse has none.
func.func @ignore_index_mse(%p: tensor<4x3xf32>, %l: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op ignore_index applies to sparse_categorical_crossentropy only}}
  %0 = graph.loss mse %p, %l {ignore_index = 0 : i64} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// count only says what an ignored label's or the weights' mean divides by.
func.func @count_without_ignore_index(%p: tensor<2x3xf32>, %l: tensor<2xi64>, %a: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op count needs ignore_index, class_weights or weights}}
  %0 = graph.loss sparse_categorical_crossentropy %p, %l count %a : (tensor<2x3xf32>, tensor<2xi64>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// count holds the whole step's labels: the same positions per sample, at least as many
// samples.
func.func @count_labels_shape(%p: tensor<4x5x3xf32>, %l: tensor<4x5xi64>, %a: tensor<4x6xi64>) -> tensor<4x5x3xf32> {
  // expected-error @+1 {{'graph.loss_backward' op count 'tensor<4x6xi64>' must be labels like 'tensor<4x5xi64>' for at least as many samples}}
  %0 = graph.loss_backward sparse_categorical_crossentropy %p, %l count %a {ignore_index = -100 : i64} : (tensor<4x5x3xf32>, tensor<4x5xi64>, tensor<4x6xi64>) -> tensor<4x5x3xf32>
  return %0 : tensor<4x5x3xf32>
}

// -----

// Loss weights: one f32 per row, the prediction without its last axis.
func.func @weights_shape(%p: tensor<4x5x3xf32>, %l: tensor<4x5x3xf32>, %w: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op weights 'tensor<4x3xf32>' must be f32 with one weight per row of the prediction 'tensor<4x5x3xf32>'}}
  %0 = graph.loss mse %p, %l weights %w : (tensor<4x5x3xf32>, tensor<4x5x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Sample weights: one f32 per sample, the prediction's first dimension.
func.func @sample_weights_shape(%p: tensor<4x5x3xf32>, %l: tensor<4x5x3xf32>, %s: tensor<5xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op sample_weights 'tensor<5xf32>' must be f32 with one weight per sample or per row of the prediction 'tensor<4x5x3xf32>'}}
  %0 = graph.loss mse %p, %l sample_weights %s : (tensor<4x5x3xf32>, tensor<4x5x3xf32>, tensor<5xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// An ignored label and weights are two ways of choosing rows; one at a time.
func.func @weights_and_ignore_index(%p: tensor<4x5x3xf32>, %l: tensor<4x5xi64>, %w: tensor<4x5xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op takes ignore_index or weights, not both}}
  %0 = graph.loss sparse_categorical_crossentropy %p, %l weights %w {ignore_index = 0 : i64} : (tensor<4x5x3xf32>, tensor<4x5xi64>, tensor<4x5xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// With weights, count holds the whole step's weights, not labels.
func.func @weights_count_type(%p: tensor<2x5x3xf32>, %l: tensor<2x5xi64>, %w: tensor<2x5xf32>, %a: tensor<4x5xi64>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op count 'tensor<4x5xi64>' must be weights like 'tensor<2x5xf32>' for at least as many samples}}
  %0 = graph.loss sparse_categorical_crossentropy %p, %l weights %w count %a : (tensor<2x5x3xf32>, tensor<2x5xi64>, tensor<2x5xf32>, tensor<4x5xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Label smoothing smooths crossentropy targets; mse has none.
func.func @label_smoothing_mse(%p: tensor<4x3xf32>, %l: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op label_smoothing applies to the crossentropies, not mse}}
  %0 = graph.loss mse %p, %l {label_smoothing = 0.1 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Label smoothing lies in [0, 1): at 1 the targets would be uniform whatever the labels.
func.func @label_smoothing_range(%p: tensor<4x3xf32>, %l: tensor<4xi64>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.loss_backward' op label_smoothing 1.000000e+00 must lie in [0, 1)}}
  %0 = graph.loss_backward sparse_categorical_crossentropy %p, %l {label_smoothing = 1.0 : f32} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Class weights: one per class, for class indices.
func.func @class_weights_count(%p: tensor<4x3xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op has 2 class_weights for 3 classes}}
  %0 = graph.loss sparse_categorical_crossentropy %p, %l {class_weights = array<f32: 1.0, 2.0>} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Class weights are finite and not negative.
func.func @class_weights_negative(%p: tensor<4x3xf32>, %l: tensor<4xi64>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.loss_backward' op class_weights must be finite and not negative}}
  %0 = graph.loss_backward sparse_categorical_crossentropy %p, %l {class_weights = array<f32: 1.0, -2.0, 1.0>} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Class weights belong to class indices; one-hot targets have none.
func.func @class_weights_categorical(%p: tensor<4x3xf32>, %l: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op class_weights apply to sparse_categorical_crossentropy only}}
  %0 = graph.loss categorical_crossentropy %p, %l {class_weights = array<f32: 1.0, 2.0, 3.0>} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A positive weight: one value, or one per index of the prediction's last axis.
func.func @pos_weight_count(%p: tensor<4x3xf32>, %l: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op has 2 pos_weight values; expected 1 or 3 (the prediction's last axis)}}
  %0 = graph.loss binary_crossentropy %p, %l {pos_weight = array<f32: 1.0, 2.0>} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A positive weight belongs to binary targets.
func.func @pos_weight_sparse(%p: tensor<4x3xf32>, %l: tensor<4xi64>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.loss_backward' op pos_weight applies to binary_crossentropy only}}
  %0 = graph.loss_backward sparse_categorical_crossentropy %p, %l {pos_weight = array<f32: 2.0>} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Categorical crossentropy: int64 labels are refused (one-hot f32 labels expected).
func.func @categorical_label_dtype(%p: tensor<4x3xf32>, %l: tensor<4x3xi64>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op categorical_crossentropy expects f32 labels shaped like the prediction 'tensor<4x3xf32>', got 'tensor<4x3xi64>'}}
  %0 = graph.loss categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4x3xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Binary crossentropy: labels are shaped like the prediction.
func.func @binary_label_shape(%p: tensor<4x1xf32>, %l: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op binary_crossentropy expects f32 labels shaped like the prediction 'tensor<4x1xf32>', got 'tensor<4xf32>'}}
  %0 = graph.loss binary_crossentropy %p, %l : (tensor<4x1xf32>, tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// MSE: labels are shaped like the prediction.
func.func @mse_label_shape(%p: tensor<4x3xf32>, %l: tensor<4x2xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op mse expects f32 labels shaped like the prediction 'tensor<4x3xf32>', got 'tensor<4x2xf32>'}}
  %0 = graph.loss mse %p, %l : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Loss: a rank-0 prediction has no batch axis.
func.func @loss_scalar_prediction(%p: tensor<f32>, %l: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op prediction must be at least rank 1 (batch first), got 'tensor<f32>'}}
  %0 = graph.loss mse %p, %l : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Loss: dynamic shapes are refused.
func.func @loss_dynamic(%p: tensor<?x3xf32>, %l: tensor<?x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op operand #0 must be statically shaped tensor of 32-bit float values, but got 'tensor<?x3xf32>'}}
  %0 = graph.loss mse %p, %l : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// loss_backward: the result has the prediction's type.
func.func @loss_backward_result(%p: tensor<4x3xf32>, %l: tensor<4xi64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'graph.loss_backward' op result 'tensor<3x4xf32>' must match the prediction 'tensor<4x3xf32>'}}
  %0 = graph.loss_backward sparse_categorical_crossentropy %p, %l {from_logits} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// loss_backward: the label checks of graph.loss apply as well.
func.func @loss_backward_labels(%p: tensor<4x3xf32>, %l: tensor<4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.loss_backward' op sparse_categorical_crossentropy expects int64 labels of shape [4], got 'tensor<4xf32>'}}
  %0 = graph.loss_backward sparse_categorical_crossentropy %p, %l : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// An op runs in one precision: a bf16 input with an f32 weight needs a graph.cast.
func.func @mixed_precision_dense(%x: tensor<4x3xbf16>, %w: tensor<3x2xf32>) -> tensor<4x2xbf16> {
  // expected-error @+1 {{operand 1 is 'tensor<3x2xf32>' but the op runs in 'bf16'; insert a graph.cast}}
  %y = graph.dense %x, %w : (tensor<4x3xbf16>, tensor<3x2xf32>) -> tensor<4x2xbf16>
  return %y : tensor<4x2xbf16>
}

// -----

// A cast changes the element type only.
func.func @cast_changes_shape(%x: tensor<4x3xf32>) -> tensor<12xbf16> {
  // expected-error @+1 {{cannot cast 'tensor<4x3xf32>' to 'tensor<12xbf16>': a cast changes the element type, not the shape}}
  %y = graph.cast %x : tensor<4x3xf32> to tensor<12xbf16>
  return %y : tensor<12xbf16>
}

// -----

// Losses stay f32 (the f32 list of graphc-insert-casts).
func.func @bf16_loss(%p: tensor<4x3xbf16>, %l: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float values, but got 'tensor<4x3xbf16>'}}
  %loss = graph.loss sparse_categorical_crossentropy %p, %l : (tensor<4x3xbf16>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// conv2d_backward_data as a transposed convolution: one bias per result channel.
func.func @conv_transpose_bias(%x: tensor<2x4x6x6xf32>, %f: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x3x8x8xf32> {
  // expected-error @+1 {{'graph.conv2d_backward_data' op bias should have shape [3], got 'tensor<4xf32>'}}
  %y = graph.conv2d_backward_data %x, %f, %b {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x3x8x8xf32>
  return %y : tensor<2x3x8x8xf32>
}

// -----

// Temporal sample weights are one per row: the prediction without its last axis.
func.func @sample_weights_rows(%p: tensor<4x5x3xf32>, %l: tensor<4x5xi64>, %s: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'graph.loss' op sample_weights 'tensor<4x3xf32>' must be f32 with one weight per sample or per row of the prediction 'tensor<4x5x3xf32>'}}
  %0 = graph.loss sparse_categorical_crossentropy %p, %l sample_weights %s : (tensor<4x5x3xf32>, tensor<4x5xi64>, tensor<4x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
