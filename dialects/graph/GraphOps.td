//===- GraphOps.td - the graph dialect's ops ----------------------------------===//
//
// Ops of one training step on ranked tensors with value semantics: the forward layers, the
// losses, the backward op of each, and the optimizer updates. Layout: images are NCHW and
// convolution filters OIHW, as in PyTorch and ONNX (docs/architecture.md). Every op has a
// verifier whose messages print the offending shapes.
//
//===----------------------------------------------------------------------===//

#ifndef GRAPHC_GRAPH_OPS
#define GRAPHC_GRAPH_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::graphc::graph";
  let summary = "Training-step ops on ranked tensors";
  let description = [{
    The graph dialect holds a model's forward function and, after autodiff, its whole training
    step: forward ops, a loss, backward ops and optimizer updates. Everything is a ranked tensor
    value; memory appears only when the planner assigns arena offsets.
  }];
  let hasConstantMaterializer = 0;
}

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

def GraphF32Tensor : StaticShapeTensorOf<[F32]>;
// Ops that may run in 16 bit (graphc-insert-casts) take f32, bf16 or f16 tensors; their
// floating-point operands and results share one element type (SameFloatElementType).
// Losses, normalizations, softmax and the optimizer updates stay f32.
def GraphFloatTensor : StaticShapeTensorOf<[F32, BF16, F16]>;
def SameFloatElementType : NativeOpTrait<"SameFloatElementType"> {
  let cppNamespace = "::graphc::graph";
}
def GraphLabelTensor : StaticShapeTensorOf<[F32, I64]>;
def GraphF32Scalar : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;

def Graph_LossKind : I32EnumAttr<"LossKind", "training loss", [
    I32EnumAttrCase<"sparse_categorical_crossentropy", 0>,
    I32EnumAttrCase<"categorical_crossentropy", 1>,
    I32EnumAttrCase<"binary_crossentropy", 2>,
    I32EnumAttrCase<"mse", 3>,
  ]> {
  let cppNamespace = "::graphc::graph";
}

def Graph_ActivationKind : I32EnumAttr<"ActivationKind", "elementwise activation", [
    I32EnumAttrCase<"gelu", 0>,       // x * Phi(x), the exact (erf) form
    I32EnumAttrCase<"gelu_tanh", 1>,  // the tanh approximation
    I32EnumAttrCase<"elu", 2>,        // x > 0 ? x : alpha * (exp(x) - 1)
    I32EnumAttrCase<"selu", 3>,       // 1.0507 * elu(x) with alpha = 1.67326
    I32EnumAttrCase<"silu", 4>,       // x * sigmoid(x) (swish)
    I32EnumAttrCase<"softplus", 5>,   // log(1 + exp(x))
    I32EnumAttrCase<"softsign", 6>,   // x / (1 + |x|)
    I32EnumAttrCase<"leaky_relu", 7>, // x > 0 ? x : alpha * x
    I32EnumAttrCase<"exp", 8>,        // e^x
    I32EnumAttrCase<"log", 9>,        // the natural logarithm
    I32EnumAttrCase<"pow", 10>,       // x^alpha (square, sqrt, reciprocal, rsqrt as their own)
    I32EnumAttrCase<"abs", 11>,       // |x|
    I32EnumAttrCase<"equal", 12>,     // x == alpha ? 1 : 0 (a mask; no gradient)
    I32EnumAttrCase<"greater", 13>,   // x > alpha ? 1 : 0 (a mask; no gradient)
  ]> {
  let cppNamespace = "::graphc::graph";
}

//===----------------------------------------------------------------------===//
// Dense and matmul
//===----------------------------------------------------------------------===//

def Graph_DenseOp : Graph_Op<"dense", [Pure, SameFloatElementType]> {
  let summary = "fully connected layer: x * W + b";
  let description = [{
    `x` is [N, In]. `weight` is [In, Out], or [Out, In] with `transpose_weight` (the layout of
    PyTorch's Linear and of ONNX Gemm with transB = 1). `bias`, when present, is [Out].

    ```mlir
    %y = graph.dense %x, %w, %b {transpose_weight} : (tensor<32x10xf32>, tensor<100x10xf32>, tensor<100xf32>) -> tensor<32x100xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input, GraphFloatTensor:$weight, Optional<GraphFloatTensor>:$bias,
                       UnitAttr:$transpose_weight);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_MatmulOp : Graph_Op<"matmul", [Pure, SameFloatElementType]> {
  let summary = "2-D matrix product with optional transposes";
  let description = [{
    `result = op(lhs) * op(rhs)`; used by the backward of dense.
  }];
  let arguments = (ins GraphFloatTensor:$lhs, GraphFloatTensor:$rhs, UnitAttr:$transpose_lhs,
                       UnitAttr:$transpose_rhs);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_BiasGradOp : Graph_Op<"bias_grad", [Pure, SameFloatElementType]> {
  let summary = "sum over every axis but `axis`";
  let description = [{
    The gradient of a bias added along `axis` (1 for both dense [N, Out] and conv NCHW).
  }];
  let arguments = (ins GraphFloatTensor:$grad, I64Attr:$axis);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_BatchMatmulOp : Graph_Op<"batch_matmul", [Pure, SameFloatElementType]> {
  let summary = "batched matrix product [B, M, K] x [B, K, N] with optional transposes";
  let description = [{
    `result[b] = op(lhs[b]) * op(rhs[b])` for each of the B leading slices; with
    `transpose_lhs` lhs is stored [B, K, M], with `transpose_rhs` rhs is stored [B, N, K].
    The product of two activations (attention's Q K^T and softmax(..) V); the importer
    flattens further leading axes into B. Its gradients are batch_matmuls too.

    ```mlir
    %s = graph.batch_matmul %q, %k {transpose_rhs} : (tensor<16x16x8xf32>, tensor<16x16x8xf32>) -> tensor<16x16x16xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$lhs, GraphFloatTensor:$rhs, UnitAttr:$transpose_lhs,
                       UnitAttr:$transpose_rhs);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_AttentionOp : Graph_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "fused scaled dot-product attention that never stores the probabilities";
  let description = [{
    `result[b] = dropout(softmax(scale * query[b] key[b]^T)) value[b]` for each of the B
    leading slices (B = batch x heads): query is [B, M, D], key [B, N, D], value [B, N, E]
    and the result [B, M, E]. graphc-fuse-attention forms it from the importer's
    batch_matmul / softmax / dropout / batch_matmul chain.

    The kernels walk the query rows in blocks of `query_block` rows (all of them when it is
    absent or 0): a block's [B, rows, N] scores live in the op's planned workspace only, so the
    [B, M, N] probabilities, which the unfused chain keeps alive from the forward pass to the
    backward pass, never exist. graph.attention_backward recomputes them block by block from
    the query and the key (memory-efficient attention; Rabe and Staats 2021, FlashAttention's
    backward pass, Dao et al. 2022).

    With `dropout_ratio` > 0 the probabilities' element (b, i, j) is kept by the same
    counter-based draw as graph.dropout's element b M N + i N + j + `index_offset` under
    `op_id` and `step`, so the fused and unfused graphs train identically and a recomputed
    attention reproduces its mask.

    With `causal` (M = N) query i sees keys 0..i only: the others' scores are -inf before the
    softmax, so their probabilities are exactly 0 (graph.softmax's causal mask, fused).

    With `bias` [batch, N] (B = batch x heads), row b / heads of it is added to every
    score row of slice b after the scale: a key-padding mask (BertModel's extended attention
    mask, 0 for a real token and a large negative for padding) without its [B, M, N] broadcast.
    A `bias` [batch, M, N] adds query i's row of it to score row i instead (a per-query mask,
    shared by each sequence's heads). It gets no gradient.

    With `bias_fills` the bias is a masked_fill rather than an addition: where it is non-zero
    it replaces the score (masked_fill(mask, -inf), which the importers hold as scores * (1 -
    mask) + fill * mask), and the score gets no gradient there, as the unfused product by
    1 - mask gives it none, even in a row whose keys are all filled.

    ```mlir
    %o = graph.attention %q, %k, %v, %step {scale = 0.125 : f32, dropout_ratio = 0.1 : f32, op_id = 61}
        : (tensor<16x64x64xf32>, tensor<16x64x64xf32>, tensor<16x64x64xf32>, tensor<f32>) -> tensor<16x64x64xf32>
    %m = graph.attention %q, %k, %v bias %pad {scale = 0.125 : f32}
        : (tensor<16x64x64xf32>, tensor<16x64x64xf32>, tensor<16x64x64xf32>, tensor<2x64xf32>) -> tensor<16x64x64xf32>
    ```
  }];
  let arguments = (ins GraphF32Tensor:$query, GraphF32Tensor:$key, GraphF32Tensor:$value,
                       Optional<GraphF32Scalar>:$step, Optional<GraphF32Tensor>:$bias,
                       F32Attr:$scale,
                       DefaultValuedAttr<F32Attr, "0.0f">:$dropout_ratio,
                       DefaultValuedAttr<I64Attr, "0">:$op_id,
                       DefaultValuedAttr<I64Attr, "0">:$index_offset, UnitAttr:$causal,
                       UnitAttr:$bias_fills);
  let results = (outs GraphF32Tensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $step^)? (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_AttentionBackwardOp : Graph_Op<"attention_backward", [Pure, AttrSizedOperandSegments]> {
  let summary = "gradients of graph.attention, the probabilities recomputed block by block";
  let description = [{
    For each block of query rows: the scores S = scale Q K^T and the probabilities P =
    softmax(S) again, the masked P~ = keep P / (1 - ratio), dV += P~^T dO, dP~ = dO V^T,
    the row sums D = sum_j dP~ P~ (= dO . O, so the forward result is not read),
    dS = P (keep dP~ / (1 - ratio) - D), dQ = scale dS K and dK += scale dS^T Q.
    Its workspace holds two [B, rows, N] blocks. `causal`, `bias` and `bias_fills` as
    graph.attention's: masked probabilities are 0, so are their dS, and so is dS where a
    `bias_fills` bias is non-zero; the bias gets no gradient.
  }];
  let arguments = (ins GraphF32Tensor:$grad, GraphF32Tensor:$query, GraphF32Tensor:$key,
                       GraphF32Tensor:$value, Optional<GraphF32Scalar>:$step,
                       Optional<GraphF32Tensor>:$bias, F32Attr:$scale,
                       DefaultValuedAttr<F32Attr, "0.0f">:$dropout_ratio,
                       DefaultValuedAttr<I64Attr, "0">:$op_id,
                       DefaultValuedAttr<I64Attr, "0">:$index_offset, UnitAttr:$causal,
                       UnitAttr:$bias_fills);
  let results = (outs GraphF32Tensor:$grad_query, GraphF32Tensor:$grad_key,
                      GraphF32Tensor:$grad_value);
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value (`,` $step^)? (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW, OIHW)
//===----------------------------------------------------------------------===//


def Graph_Conv2dOp : Graph_Op<"conv2d", [Pure, SameFloatElementType]> {
  let summary = "2-D convolution, NCHW input, OIHW filter";
  let description = [{
    `padding` is [top, left, bottom, right]; `strides` and `dilations` are [h, w].
    With `groups` = G (default 1) the filter is [K, C / G, R, S] and output channels
    [g K/G, (g+1) K/G) read input channels [g C/G, (g+1) C/G) only (depthwise: G = C).
    Output size: (H + top + bottom - dilation * (R - 1) - 1) / stride + 1.

    ```mlir
    %y = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
        : (tensor<32x3x28x28xf32>, tensor<32x3x3x3xf32>, tensor<32xf32>) -> tensor<32x32x26x26xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input, GraphFloatTensor:$filter, Optional<GraphFloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_Conv2dBackwardDataOp : Graph_Op<"conv2d_backward_data", [Pure, SameFloatElementType]> {
  let summary = "gradient of conv2d with respect to its input; also the transposed convolution";
  let description = [{
    The result type is the conv2d input type; it cannot be inferred because strides drop rows
    (rows no output reads are zero).

    The same op is the forward of a transposed convolution (ONNX ConvTranspose, Keras
    Conv2DTranspose): `grad` is then the layer's input [N, K, OH, OW], `filter` its weight
    [K, C / groups, R, S] (ONNX's ConvTranspose layout as it is), and the optional `bias` [C] is
    added per output channel. Its gradients are a conv2d (input) and a conv2d_backward_filter
    (filter).

    ```mlir
    %y = graph.conv2d_backward_data %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>}
        : (tensor<2x8x4x4xf32>, tensor<8x4x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$grad, GraphFloatTensor:$filter,
                       Optional<GraphFloatTensor>:$bias, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_Conv2dBackwardFilterOp : Graph_Op<"conv2d_backward_filter", [Pure, SameFloatElementType]> {
  let summary = "gradient of conv2d with respect to its filter";
  let description = [{
    `grad` is the output gradient [N, K, OH, OW], `input` the conv2d input [N, C, H, W];
    the result is [K, C / groups, R, S].
  }];
  let arguments = (ins GraphFloatTensor:$grad, GraphFloatTensor:$input, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_MaxPool2dOp : Graph_Op<"max_pool2d", [Pure, SameFloatElementType]> {
  let summary = "2-D max pooling, NCHW";
  let description = [{
    `kernel` and `strides` are [h, w]; `padding` is [top, left, bottom, right].
  }];
  let arguments = (ins GraphFloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_MaxPool2dBackwardOp : Graph_Op<"max_pool2d_backward", [Pure, SameFloatElementType]> {
  let summary = "gradient of max_pool2d, routed to the first max of each window";
  let arguments = (ins GraphFloatTensor:$grad, GraphFloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_AvgPool2dOp : Graph_Op<"avg_pool2d", [Pure, SameFloatElementType]> {
  let summary = "2-D average pooling, NCHW";
  let description = [{
    `kernel` and `strides` are [h, w]; `padding` is [top, left, bottom, right]. With
    `count_include_pad` the divisor is the window size clipped to the padded input (PyTorch's
    rule), otherwise the number of input cells in the window. GlobalAveragePool is an
    avg_pool2d whose kernel is the whole image.

    ```mlir
    %y = graph.avg_pool2d %x {kernel = array<i64: 4, 4>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>}
        : (tensor<2x8x4x4xf32>) -> tensor<2x8x1x1xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       UnitAttr:$count_include_pad);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_AvgPool2dBackwardOp : Graph_Op<"avg_pool2d_backward", [Pure, SameFloatElementType]> {
  let summary = "gradient of avg_pool2d: each dy spread evenly over its window";
  let description = [{
    The result type is the avg_pool2d input type.
  }];
  let arguments = (ins GraphFloatTensor:$grad, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       UnitAttr:$count_include_pad);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

def Graph_BatchNormOp : Graph_Op<"batch_norm", [Pure]> {
  let summary = "batch normalization over every axis but 1 (channels)";
  let description = [{
    `input` is [N, C, ...]; `scale`, `bias`, `running_mean` and `running_var` are [C].

    With `training`, the batch mean and biased variance over N and the spatial axes
    normalise the input, `y = scale (x - mean) / sqrt(var + epsilon) + bias`, and the running
    statistics are updated as PyTorch does, with the *unbiased* batch variance:
    `new_mean = (1 - momentum) running_mean + momentum mean`,
    `new_var = (1 - momentum) running_var + momentum var * M / (M - 1)` (M = N * spatial).
    `momentum` is PyTorch's (ONNX's momentum attribute is 1 - this).

    Without `training` (inference form) the running statistics normalise the input and are
    returned unchanged: the op is a fixed per-channel affine map whose scale and bias still
    train.

    `saved_mean` and `saved_invstd` ([C]) are what the backward op needs:
    the statistics used and 1 / sqrt(var + epsilon).
    The new running statistics are written in place over the old ones.
  }];
  let arguments = (ins GraphFloatTensor:$input, GraphF32Tensor:$scale, GraphF32Tensor:$bias,
                       GraphF32Tensor:$running_mean, GraphF32Tensor:$running_var,
                       F32Attr:$epsilon, F32Attr:$momentum, UnitAttr:$training);
  let results = (outs GraphFloatTensor:$result, GraphF32Tensor:$new_running_mean,
                      GraphF32Tensor:$new_running_var, GraphF32Tensor:$saved_mean,
                      GraphF32Tensor:$saved_invstd);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_BatchNormApplyOp : Graph_Op<"batch_norm_apply", [Pure]> {
  let summary = "a batch_norm's output recomputed from its saved statistics";
  let description = [{
    `result = scale (input - saved_mean) saved_invstd + bias`, per channel (axis 1), with the
    statistics a `graph.batch_norm` saved. It is the recomputation that
    `graphc-fit-budget` places in the backward pass when it rematerializes a batch norm's
    output: unlike re-running `graph.batch_norm`, it updates no running statistics (a side
    effect applied once per step) and reads no batch statistics, and it computes the same
    per-channel affine map as the forward kernel, so the recomputed values are bit-identical.

    ```mlir
    %y = graph.batch_norm_apply %x, %scale, %bias, %saved_mean, %saved_invstd
        : (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>,
           tensor<16xf32>) -> tensor<8x16x4x4xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input, GraphF32Tensor:$scale, GraphF32Tensor:$bias,
                       GraphF32Tensor:$saved_mean, GraphF32Tensor:$saved_invstd);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_BatchNormBackwardOp : Graph_Op<"batch_norm_backward", [Pure]> {
  let summary = "gradients of batch_norm with respect to input, scale and bias";
  let description = [{
    With xhat = (x - saved_mean) saved_invstd and sums over every axis but 1:
    `grad_bias = sum dy`, `grad_scale = sum dy xhat`, and with `training`
    `grad_input = scale invstd / M (M dy - grad_bias - xhat grad_scale)` (the batch statistics
    depend on x); without it `grad_input = scale invstd dy`.
  }];
  let arguments = (ins GraphFloatTensor:$grad, GraphFloatTensor:$input, GraphF32Tensor:$scale,
                       GraphF32Tensor:$saved_mean, GraphF32Tensor:$saved_invstd,
                       UnitAttr:$training);
  let results = (outs GraphFloatTensor:$grad_input, GraphF32Tensor:$grad_scale,
                      GraphF32Tensor:$grad_bias);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_LayerNormOp : Graph_Op<"layer_norm", [Pure]> {
  let summary = "layer normalization over the last axis";
  let description = [{
    `input` is [..., D], `scale` and `bias` are [D]. Each of the R = (elements / D) rows is
    normalised by its own mean and biased variance:
    `y = scale (x - mean) / sqrt(var + epsilon) + bias` (PyTorch's LayerNorm, ONNX
    LayerNormalization with axis = -1). `saved_mean` and `saved_invstd` ([R]) are the row
    statistics the backward op needs.

    ```mlir
    %y, %mean, %invstd = graph.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32}
        : (tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x16x32xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input, GraphF32Tensor:$scale, GraphF32Tensor:$bias,
                       F32Attr:$epsilon);
  let results = (outs GraphFloatTensor:$result, GraphF32Tensor:$saved_mean,
                      GraphF32Tensor:$saved_invstd);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_LayerNormBackwardOp : Graph_Op<"layer_norm_backward", [Pure]> {
  let summary = "gradients of layer_norm with respect to input, scale and bias";
  let description = [{
    Per row, with xhat = (x - saved_mean) saved_invstd and g = dy scale:
    `grad_input = invstd (g - mean(g) - xhat mean(g xhat))`; over the rows,
    `grad_scale = sum dy xhat` and `grad_bias = sum dy`.
  }];
  let arguments = (ins GraphFloatTensor:$grad, GraphFloatTensor:$input, GraphF32Tensor:$scale,
                       GraphF32Tensor:$saved_mean, GraphF32Tensor:$saved_invstd);
  let results = (outs GraphFloatTensor:$grad_input, GraphFloatTensor:$grad_scale,
                      GraphFloatTensor:$grad_bias);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_RmsNormOp : Graph_Op<"rms_norm", [Pure]> {
  let summary = "root-mean-square normalization over the last axis";
  let description = [{
    `input` is [..., D], `scale` is [D]. Each of the R = (elements / D) rows is divided by
    its root mean square, without centering and without a shift:
    `y = scale x / sqrt(mean(x^2) + epsilon)` (Zhang & Sennrich 2019, the normalization of
    T5, LLaMA and Mistral; PyTorch's `nn.RMSNorm`). `saved_invstd` ([R]) is the row's
    1 / sqrt(mean(x^2) + epsilon), which the backward op reads.

    ```mlir
    %y, %invstd = graph.rms_norm %x, %g {epsilon = 1.0e-06 : f32}
        : (tensor<4x16x32xf32>, tensor<32xf32>) -> (tensor<4x16x32xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input, GraphF32Tensor:$scale, F32Attr:$epsilon);
  let results = (outs GraphFloatTensor:$result, GraphF32Tensor:$saved_invstd);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_RmsNormBackwardOp : Graph_Op<"rms_norm_backward", [Pure]> {
  let summary = "gradients of rms_norm with respect to input and scale";
  let description = [{
    Per row, with xhat = x saved_invstd and g = dy scale:
    `grad_input = invstd (g - xhat mean(g xhat))`; over the rows, `grad_scale = sum dy xhat`.
  }];
  let arguments = (ins GraphFloatTensor:$grad, GraphFloatTensor:$input, GraphF32Tensor:$scale,
                       GraphF32Tensor:$saved_invstd);
  let results = (outs GraphFloatTensor:$grad_input, GraphFloatTensor:$grad_scale);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

def Graph_DropoutOp : Graph_Op<"dropout", [Pure, SameFloatElementType]> {
  let summary = "training-mode dropout with a counter-based mask";
  let description = [{
    `y = x * keep / (1 - ratio)`, where keep for element i is a pure function of (the
    program's seed, `op_id`, the step number `step`, i + `index_offset`): a splitmix64 hash
    compared with `ratio`. A recomputed dropout (and the backward op) reproduces the same mask.
    `step` is the runtime's f32 step counter. With micro-batches, micro-batch j's copy has
    `index_offset` = j * its mask's element count, so the k micro-batches draw exactly the rows
    of the whole batch's mask.

    A mask broadcast over some axes (Keras's SpatialDropout, Dropout's `noise_shape`): the
    elements are runs of `mask_inner` whose consecutive groups of `mask_repeat` runs share one
    draw, so element i draws `(i / (mask_repeat * mask_inner)) * mask_inner + i % mask_inner`.
    SpatialDropout2D on an NCHW image is `mask_repeat` = H * W (one bit per sample and channel);
    on a (batch, steps, features) sequence SpatialDropout1D is `mask_repeat` = steps and
    `mask_inner` = features.

    ```mlir
    %y = graph.dropout %x, %step {ratio = 2.500000e-01 : f32, op_id = 3 : i64, mask_repeat = 64 : i64}
        : (tensor<8x16x8x8xf32>, tensor<f32>) -> tensor<8x16x8x8xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input, GraphF32Scalar:$step, F32Attr:$ratio,
                       I64Attr:$op_id, DefaultValuedAttr<I64Attr, "0">:$index_offset,
                       DefaultValuedAttr<I64Attr, "1">:$mask_repeat,
                       DefaultValuedAttr<I64Attr, "1">:$mask_inner);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_DropoutBackwardOp : Graph_Op<"dropout_backward", [Pure, SameFloatElementType]> {
  let summary = "dx = dy * keep / (1 - ratio), the forward mask regenerated";
  let arguments = (ins GraphFloatTensor:$grad, GraphF32Scalar:$step, F32Attr:$ratio,
                       I64Attr:$op_id, DefaultValuedAttr<I64Attr, "0">:$index_offset,
                       DefaultValuedAttr<I64Attr, "1">:$mask_repeat,
                       DefaultValuedAttr<I64Attr, "1">:$mask_inner);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure, SameFloatElementType]> {
  let summary = "same elements, new shape (flatten is a reshape)";
  let description = [{
    A view: the planner gives the result the operand's buffer.
  }];
  let arguments = (ins GraphFloatTensor:$input);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Graph_TransposeOp : Graph_Op<"transpose", [Pure, SameFloatElementType]> {
  let summary = "permutation of the axes: result axis i is input axis perm[i]";
  let description = [{
    ONNX Transpose. Its gradient is the transpose by the inverse permutation. Folds: the
    identity, and a transpose of a transpose (into one, or nothing).

    ```mlir
    %y = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<4x16x32xf32>) -> tensor<16x4x32xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_ConcatOp : Graph_Op<"concat", [Pure, SameFloatElementType]> {
  let summary = "concatenation along `axis`";
  let description = [{
    ```mlir
    %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3x4x4xf32>, tensor<2x5x4x4xf32>) -> tensor<2x8x4x4xf32>
    ```
  }];
  let arguments = (ins Variadic<GraphFloatTensor>:$inputs, I64Attr:$axis);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_SliceOp : Graph_Op<"slice", [Pure, SameFloatElementType]> {
  let summary = "the slice [offset, offset + result size) of `input` along `axis`";
  let description = [{
    Every other dimension is whole. The backward of concat.
  }];
  let arguments = (ins GraphFloatTensor:$input, I64Attr:$axis, I64Attr:$offset);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

class Graph_UnaryOp<string mnemonic, string doc>
    : Graph_Op<mnemonic, [Pure, SameFloatElementType, SameOperandsAndResultType]> {
  let summary = doc;
  let arguments = (ins GraphFloatTensor:$input);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Graph_AddOp : Graph_Op<"add", [Pure, SameFloatElementType, Commutative, SameOperandsAndResultType]> {
  let summary = "elementwise sum of two tensors of the same type";
  let description = [{
    Residual connections in the forward pass, and the sum of the gradients of a value that
    has several users in the backward pass. No broadcasting.

    ```mlir
    %s = graph.add %a, %b : tensor<32x100xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$lhs, GraphFloatTensor:$rhs);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` type($result)";
}

def Graph_ReluOp : Graph_UnaryOp<"relu", "max(x, 0)">;
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def Graph_TanhOp : Graph_UnaryOp<"tanh", "hyperbolic tangent">;

def Graph_ScaleOp : Graph_Op<"scale", [Pure, SameFloatElementType, SameOperandsAndResultType]> {
  let summary = "factor * x + offset, elementwise (offset defaults to 0)";
  let description = [{
    Micro-batching scales each micro-batch's loss gradient (and the summed loss) by 1/k so that
    the accumulated gradients are those of the full batch's mean loss.

    ```mlir
    %g = graph.scale %dy {factor = 2.500000e-01 : f32} : tensor<8x10xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input, F32Attr:$factor,
                       DefaultValuedAttr<F32Attr, "0.0f">:$offset);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let builders = [
    // factor * x, without an offset.
    OpBuilder<(ins "::mlir::Type":$type, "::mlir::Value":$input, "::mlir::FloatAttr":$factor), [{
      build($_builder, $_state, type, input, factor, $_builder.getF32FloatAttr(0.0f));
    }]>
  ];
}

def Graph_MulOp : Graph_Op<"mul", [Pure, SameFloatElementType, Commutative, SameOperandsAndResultType]> {
  let summary = "elementwise product of two tensors of the same type";
  let description = [{
    The gates of unrolled recurrent layers (LSTM, GRU) and Keras's Multiply layer. No
    broadcasting. Its gradient is `mul(grad, rhs)` for the lhs and `mul(grad, lhs)` for the rhs,
    so both operands stay live until the backward pass.

    ```mlir
    %c = graph.mul %f, %c_prev : tensor<32x64xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$lhs, GraphFloatTensor:$rhs);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` type($result)";
}

def Graph_BroadcastMulOp : Graph_Op<"broadcast_mul", [Pure, SameFloatElementType]> {
  let summary = "elementwise product of a tensor and a factor broadcast over its leading axes";
  let description = [{
    `rhs` has the shape of `lhs`'s trailing axes ([N...] of [R..., N...]); every one of the R
    leading positions is multiplied by it: `result[r, n] = lhs[r, n] * rhs[n]`. The product
    of an activation with a table that does not depend on the batch (rotary embeddings' cos
    and sin [S, d] on [B, H, S, d]) or with a per-feature scale [D], without a copy of the
    factor per row: the backward pass keeps `rhs` as it is, not R copies of it. Its gradient
    is `broadcast_mul(grad, rhs)` for the lhs and the sum over the rows of `grad * lhs` for the
    rhs.

    ```mlir
    %y = graph.broadcast_mul %q, %cos : (tensor<8x2x12x16xf32>, tensor<12x16xf32>) -> tensor<8x2x12x16xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$lhs, GraphFloatTensor:$rhs);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_RotaryOp : Graph_Op<"rotary", [Pure, SameFloatElementType]> {
  let summary = "rotary position embedding, rotate_half form, fused";
  let description = [{
    `y = x * cos + rotate_half(x) * sin` with `rotate_half(x) = concat(-x[..., d/2:],
    x[..., :d/2])` over the last axis (d even), and `cos`, `sin` of the shape of `x`'s trailing
    axes, broadcast over its leading ones (LLaMA's and Hugging Face's apply_rotary_pos_emb).
    With `transpose`, the adjoint: `y = x * cos + rotate_half^T(x * sin)`, rotate_half^T(g) =
    concat(g[..., d/2:], -g[..., :d/2]), which is the gradient of the plain form; the tables
    are constants of the step and get none. One op instead of seven: no rotate_half
    temporaries, and a recomputation reaches through it.

    ```mlir
    %q2 = graph.rotary %q, %cos, %sin : (tensor<8x2x12x16xf32>, tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<8x2x12x16xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input, GraphFloatTensor:$cos, GraphFloatTensor:$sin,
                       UnitAttr:$transpose);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ActivationOp : Graph_Op<"activation", [Pure, SameFloatElementType, SameOperandsAndResultType]> {
  let summary = "an elementwise activation function named by `kind`";
  let description = [{
    The activations whose derivative is best written in terms of the input (gelu, elu, selu,
    silu, softplus, softsign, leaky_relu), in PyTorch's formulas, and the elementwise math that
    imported models write by hand (exp, log, abs, and pow: x^alpha, with x * x, sqrt, 1 / x and
    1 / sqrt(x) computed as such for alpha = 2, 0.5, -1 and -0.5; abs's derivative is PyTorch's
    sign(x), 0 at 0), and equal, 1 where x equals alpha and 0 elsewhere: a comparison's mask
    (pad = tokens == 0), whose derivative is 0, as no gradient flows through PyTorch's bools. `alpha` is elu's scale of
    the negative part, leaky_relu's slope and pow's exponent; the other kinds ignore it. relu,
    sigmoid and tanh have their own ops, whose backward reads the output instead. exp, log and
    pow stay in float32 under a 16-bit precision, as torch.autocast keeps them.

    ```mlir
    %y = graph.activation gelu %x : tensor<32x64xf32>
    %z = graph.activation leaky_relu %x {alpha = 2.000000e-01 : f32} : tensor<32x64xf32>
    %r = graph.activation pow %x {alpha = -1.000000e+00 : f32} : tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Graph_ActivationKind:$kind, GraphFloatTensor:$input,
                       DefaultValuedAttr<F32Attr, "1.0f">:$alpha);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($result)";
}

def Graph_ActivationBackwardOp : Graph_Op<"activation_backward", [Pure, SameFloatElementType, SameOperandsAndResultType]> {
  let summary = "grad * f'(input) for the activation `kind`";
  let description = [{
    Takes the output gradient and the forward *input*.

    ```mlir
    %dx = graph.activation_backward gelu %dy, %x : tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Graph_ActivationKind:$kind, GraphFloatTensor:$grad,
                       GraphFloatTensor:$input, DefaultValuedAttr<F32Attr, "1.0f">:$alpha);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "$kind $grad `,` $input attr-dict `:` type($result)";
}

def Graph_FillOp : Graph_Op<"fill", [Pure]> {
  let summary = "a tensor with every element `value`";
  let description = [{
    The zero initial state of unrolled recurrent layers (Keras and PyTorch start h and c at
    zero). It reads nothing, so it has no gradient and is free to recompute.

    ```mlir
    %h0 = graph.fill {value = 0.000000e+00 : f32} : tensor<32x64xf32>
    ```
  }];
  let arguments = (ins F32Attr:$value);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Graph_RandomNormalOp : Graph_Op<"random_normal", [Pure]> {
  let summary = "counter-based normal noise: mean + scale * N(0, 1)";
  let description = [{
    Element i is `mean + scale * z`, z a standard normal drawn by Box-Muller from the same
    splitmix64 hash as graph.dropout's mask, keyed by (the program's seed, `op_id`, `step`,
    i + `index_offset`): no generator state, so a recomputed op gives the same noise and a
    micro-batch j (`index_offset` = j * its element count) draws its rows of the whole batch's.
    It reads no tensor, so it has no gradient (Keras's GaussianNoise adds it, GaussianDropout
    multiplies by it; ONNX RandomNormal, RandomNormalLike).

    ```mlir
    %noise = graph.random_normal %step {mean = 0.000000e+00 : f32, scale = 1.000000e-01 : f32,
        op_id = 2 : i64} : (tensor<f32>) -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins GraphF32Scalar:$step, F32Attr:$mean, F32Attr:$scale, I64Attr:$op_id,
                       DefaultValuedAttr<I64Attr, "0">:$index_offset);
  let results = (outs GraphF32Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_RandomUniformOp : Graph_Op<"random_uniform", [Pure]> {
  let summary = "counter-based uniform noise in [low, high)";
  let description = [{
    Element i is `low + (high - low) * u`, u the 24-bit uniform in [0, 1) that graph.dropout
    compares with its ratio, keyed as graph.random_normal's: draw i / `repeat` + `index_offset`,
    so runs of `repeat` elements share one draw (a value per sample: Keras's RandomContrast
    and RandomBrightness). ONNX RandomUniform, RandomUniformLike.

    ```mlir
    %u = graph.random_uniform %step {low = -1.000000e+00 : f32, high = 1.000000e+00 : f32,
        op_id = 4 : i64} : (tensor<f32>) -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins GraphF32Scalar:$step, F32Attr:$low, F32Attr:$high, I64Attr:$op_id,
                       DefaultValuedAttr<I64Attr, "0">:$index_offset,
                       DefaultValuedAttr<I64Attr, "1">:$repeat);
  let results = (outs GraphF32Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_RandomAffineOp : Graph_Op<"random_affine", [Pure]> {
  let summary = "a random flip, rotation, zoom, translation or crop offset of each image";
  let description = [{
    Keras's image augmentation layers (RandomFlip, RandomRotation, RandomZoom,
    RandomTranslation) on an NCHW image: sample s draws two uniforms (draws 2 (s +
    `sample_offset`) and 2 (s + `sample_offset`) + 1 of the counter-based key of (the
    program's seed, `op_id`, `step`)), which give its transform (`kind`: `flip_horizontal`,
    `flip_vertical`, `flip_both`, `rotate` by 2 pi times a turn in [`low0`, `high0`),
    `zoom` by 1 + [`low0`, `high0`) vertically and 1 + [`low1`, `high1`) horizontally,
    `zoom_uniform` by the first both ways, `translate` by [`low0`, `high0`) of the height and
    [`low1`, `high1`) of the width, `crop_offset` up by a whole number of pixels below
    `high0` and left by one below `high1`, drawn once for the whole batch (draws 0 and 1, in
    every micro-batch alike), so that the top-left window of the output is RandomCrop's crop
    of every image at one place); every output pixel reads the input at its transformed
    point with TensorFlow's `fill_mode` (`reflect`, `nearest`, `constant` with `fill_value`)
    and `bilinear` or `nearest` interpolation (runtime/include/graphc/runtime/random_affine.h).
    Every channel of a sample moves alike. Recomputed, it samples the same pixels; micro-batch j
    draws its samples' (`sample_offset` = j * its batch). The input has no gradient: the layers
    augment the data before any trained layer.

    ```mlir
    %y = graph.random_affine %x, %step {kind = "rotate", low0 = -1.000000e-01 : f32,
        high0 = 1.000000e-01 : f32, fill_mode = "reflect", interpolation = "bilinear",
        op_id = 1 : i64} : (tensor<8x3x32x32xf32>, tensor<f32>) -> tensor<8x3x32x32xf32>
    ```
  }];
  let arguments = (ins GraphF32Tensor:$input, GraphF32Scalar:$step, StrAttr:$kind,
                       DefaultValuedAttr<F32Attr, "0.0f">:$low0,
                       DefaultValuedAttr<F32Attr, "0.0f">:$high0,
                       DefaultValuedAttr<F32Attr, "0.0f">:$low1,
                       DefaultValuedAttr<F32Attr, "0.0f">:$high1,
                       DefaultValuedAttr<StrAttr, "\"reflect\"">:$fill_mode,
                       DefaultValuedAttr<F32Attr, "0.0f">:$fill_value,
                       DefaultValuedAttr<StrAttr, "\"bilinear\"">:$interpolation,
                       I64Attr:$op_id, DefaultValuedAttr<I64Attr, "0">:$sample_offset);
  let results = (outs GraphF32Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_EmbeddingOp : Graph_Op<"embedding", [Pure]> {
  let summary = "rows of `table` picked by integer-valued `indices`";
  let description = [{
    `indices` is an f32 tensor of whole numbers (Keras's default input dtype; exact up to
    2^24), `table` is [vocabulary, features] and the result is the indices' shape plus
    [features]: result[i..., :] = table[indices[i...], :]. An index outside [0, vocabulary)
    gives a row of zeros (the training binary refuses such data before step 1).

    ```mlir
    %e = graph.embedding %ids, %table : (tensor<8x20xf32>, tensor<1000x64xf32>) -> tensor<8x20x64xf32>
    ```
  }];
  let arguments = (ins GraphF32Tensor:$indices, GraphFloatTensor:$table);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_EmbeddingBackwardOp : Graph_Op<"embedding_backward", [Pure]> {
  let summary = "the gradient of an embedding's table: grad rows summed by index";
  let description = [{
    result[v, :] = sum of grad[i..., :] over the positions i whose index is v; rows no index
    names are zero (a dense gradient, as PyTorch's `sparse=False`).

    ```mlir
    %dt = graph.embedding_backward %dy, %ids : (tensor<8x20x64xf32>, tensor<8x20xf32>) -> tensor<1000x64xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$grad, GraphF32Tensor:$indices);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_BatchSliceOp : Graph_Op<"batch_slice", [Pure]> {
  let summary = "copy of micro-batch `index` of `count` equal slices along the batch axis";
  let description = [{
    Rows [index * B / count, (index + 1) * B / count) of a [B, ...] tensor (f32 data or int64
    labels), as a new [B / count, ...] tensor. Micro-batching feeds each micro-batch's forward
    pass with one.

    ```mlir
    %x1 = graph.batch_slice %x {index = 1 : i64, count = 4 : i64} : (tensor<32x10xf32>) -> tensor<8x10xf32>
    ```
  }];
  let arguments = (ins GraphLabelTensor:$input, I64Attr:$index, I64Attr:$count);
  let results = (outs GraphLabelTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ClipOp : Graph_Op<"clip", [Pure, SameFloatElementType, SameOperandsAndResultType]> {
  let summary = "min(max(x, min), max) (ReLU6 is clip 0, 6)";
  let description = [{
    An absent bound of ONNX Clip is -inf or +inf.

    ```mlir
    %y = graph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input, F32Attr:$min, F32Attr:$max);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_ClipBackwardOp : Graph_Op<"clip_backward", [Pure, SameFloatElementType, SameOperandsAndResultType]> {
  let summary = "grad * (min < y < max)";
  let description = [{
    PyTorch's hardtanh backward: the gradient passes only strictly inside the bounds (zero at
    a bound). Takes the forward output y: min < y < max exactly when min < x < max.
  }];
  let arguments = (ins GraphFloatTensor:$grad, GraphFloatTensor:$output, F32Attr:$min,
                       F32Attr:$max);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_SoftmaxOp : Graph_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax along `axis`, max-subtracted";
  let description = [{
    With `causal` (attention scores [..., queries, keys], `axis` the last), row i's keys
    j > i are masked: their probability is 0 and the others' softmax is over keys 0..i
    (Keras's `use_causal_mask`, a decoder's self-attention).

    ```mlir
    %p = graph.softmax %s {axis = 2 : i64, causal} : tensor<8x5x5xf32>
    ```
  }];
  let arguments = (ins GraphF32Tensor:$input, I64Attr:$axis, UnitAttr:$causal);
  let results = (outs GraphF32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

class Graph_ActivationBackwardOp<string mnemonic, string doc>
    : Graph_Op<mnemonic, [Pure, SameFloatElementType, SameOperandsAndResultType]> {
  let summary = doc;
  let description = [{
    Takes the output gradient and the forward *output*, so the forward input can die early.
  }];
  let arguments = (ins GraphFloatTensor:$grad, GraphFloatTensor:$output);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` type($result)";
}

def Graph_ReluBackwardOp : Graph_ActivationBackwardOp<"relu_backward", "grad * (y > 0)">;
def Graph_SigmoidBackwardOp
    : Graph_ActivationBackwardOp<"sigmoid_backward", "grad * y * (1 - y)">;
def Graph_TanhBackwardOp : Graph_ActivationBackwardOp<"tanh_backward", "grad * (1 - y^2)">;

def Graph_SoftmaxBackwardOp : Graph_Op<"softmax_backward", [Pure, SameOperandsAndResultType]> {
  let summary = "y * (grad - sum_axis(grad * y))";
  let arguments = (ins GraphF32Tensor:$grad, GraphF32Tensor:$output, I64Attr:$axis);
  let results = (outs GraphF32Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Precision
//===----------------------------------------------------------------------===//

def Graph_CastOp : Graph_Op<"cast", [Pure]> {
  let summary = "elementwise conversion between f32, bf16 and f16";
  let description = [{
    Rounds to nearest even when narrowing; widening is exact. Inserted by graphc-insert-casts
    around the ops that run in 16 bit; its gradient is the cast of the output gradient back
    to the input's type, so parameters (f32 master weights) get f32 gradients.

    ```mlir
    %h = graph.cast %x : tensor<32x100xf32> to tensor<32x100xbf16>
    ```
  }];
  let arguments = (ins GraphFloatTensor:$input);
  let results = (outs GraphFloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Graph_LossOp : Graph_Op<"loss", [Pure, AttrSizedOperandSegments]> {
  let summary = "mean training loss of a batch";
  let description = [{
    `prediction` is [N, ...]. `labels` are int64 class indices [N] for
    sparse_categorical_crossentropy, otherwise f32 with the prediction's shape.
    With `from_logits`, the prediction holds logits and the loss applies log-softmax or
    log-sigmoid itself (stable); without it, probabilities are clipped to [1e-7, 1 - 1e-7]
    as Keras does. Canonicalization folds a preceding softmax or sigmoid into `from_logits`.
    Categorical losses average over N; binary crossentropy and mse over all elements.

    Some rows may count less (a row: the prediction without its last axis):
    - `ignore_index` (sparse_categorical_crossentropy only; PyTorch's
      `CrossEntropyLoss(ignore_index=...)`, Keras's `ignore_class`): labels equal to it add
      nothing, and the mean is over the other labels;
    - `weights` (f32, one per row: a Keras output's mask): row r's loss (for binary
      crossentropy and mse the mean over its last axis) is scaled by weights[r], and the sum
      divided by the sum of the weights, as Keras's masked sum_over_batch_size reduction.
    The count (sum) is that of `count` when given (the whole step's labels or weights, when
    `labels` and `weights` are one micro-batch's slice of them: the micro-batches' losses then
    add up to the step's mean), else of `labels` (`weights`). When it is 0 the loss is 0
    (Keras's divide-no-nan; PyTorch's mean is NaN).

    `label_smoothing` ε (the crossentropies; PyTorch's `CrossEntropyLoss(label_smoothing=ε)`,
    Keras's `label_smoothing`): the categorical targets become (1 - ε) t + ε / C over the C
    classes (a class index: (1 - ε) on its class), binary targets (1 - ε) t + ε / 2.

    `class_weights` w (sparse_categorical_crossentropy; PyTorch's `CrossEntropyLoss(weight=w)`):
    a row's loss is sum_j w_j t_j (lse - x_j) over its (smoothed) target t, w_y (lse - x_y)
    unsmoothed, and the mean divides by the sum of w over the counted labels (not ignored), as
    PyTorch's weighted mean does.

    `pos_weight` p (binary_crossentropy; PyTorch's `BCEWithLogitsLoss(pos_weight=p)`): an
    element's loss is -(p y log σ(x) + (1 - y) log(1 - σ(x))), p one value or one per index of
    the prediction's last axis (broadcast over the others).

    `sample_weights` s (f32 [N], one per sample of the prediction [N, ...], or one per row: the
    prediction without its last axis, Keras's temporal weights; graphc --sample-weights, Keras's
    `fit(sample_weight=s)`): every loss term of sample (row) i (each of its rows, or elements)
    is scaled by s[i], and the divisor stays what it is without them (the
    rows, elements, counted labels or weights): Keras's sum_over_batch_size reduction,
    PyTorch's `(loss(reduction='none') * s).mean()`.

    ```mlir
    %l = graph.loss sparse_categorical_crossentropy %logits, %labels {from_logits}
        : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
    %m = graph.loss sparse_categorical_crossentropy %logits, %labels
        {from_logits, ignore_index = -100 : i64} : (tensor<4x16x50xf32>, tensor<4x16xi64>) -> tensor<f32>
    %k = graph.loss sparse_categorical_crossentropy %logits1, %labels1 count %labels
        {from_logits, ignore_index = -100 : i64}
        : (tensor<2x16x50xf32>, tensor<2x16xi64>, tensor<4x16xi64>) -> tensor<f32>
    %w = graph.loss mse %out, %target weights %mask
        : (tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<f32>
    %s = graph.loss sparse_categorical_crossentropy %logits, %labels sample_weights %sw
        {from_logits} : (tensor<32x10xf32>, tensor<32xi64>, tensor<32xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_LossKind:$kind, GraphF32Tensor:$prediction, GraphLabelTensor:$labels,
                       Optional<GraphF32Tensor>:$weights, Optional<GraphLabelTensor>:$count,
                       Optional<GraphF32Tensor>:$sample_weights, UnitAttr:$from_logits, OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<F32Attr>:$label_smoothing,
                       OptionalAttr<DenseF32ArrayAttr>:$class_weights,
                       OptionalAttr<DenseF32ArrayAttr>:$pos_weight);
  let results = (outs GraphF32Scalar:$result);
  let assemblyFormat = [{
    $kind $prediction `,` $labels (`weights` $weights^)? (`count` $count^)?
    (`sample_weights` $sample_weights^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let builders = [
    // A mean over every label.
    OpBuilder<(ins "::mlir::Type":$type, "LossKind":$kind, "::mlir::Value":$prediction,
                   "::mlir::Value":$labels, "bool":$from_logits), [{
      build($_builder, $_state, type, kind, prediction, labels, ::mlir::Value(), ::mlir::Value(),
            ::mlir::Value(), from_logits, ::mlir::IntegerAttr(), ::mlir::FloatAttr(),
            ::mlir::DenseF32ArrayAttr(), ::mlir::DenseF32ArrayAttr());
    }]>
  ];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Graph_LossBackwardOp : Graph_Op<"loss_backward", [Pure, AttrSizedOperandSegments]> {
  let summary = "gradient of the mean loss with respect to the prediction";
  let description = [{
    The gradient of `graph.loss` with the same operands and attributes: an ignored label's
    row of the gradient is zero, a weighted row's is scaled by its weight (and by its sample's
    weight), and every row is divided by the count (sum) of `graph.loss`.
  }];
  let arguments = (ins Graph_LossKind:$kind, GraphF32Tensor:$prediction, GraphLabelTensor:$labels,
                       Optional<GraphF32Tensor>:$weights, Optional<GraphLabelTensor>:$count,
                       Optional<GraphF32Tensor>:$sample_weights, UnitAttr:$from_logits, OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<F32Attr>:$label_smoothing,
                       OptionalAttr<DenseF32ArrayAttr>:$class_weights,
                       OptionalAttr<DenseF32ArrayAttr>:$pos_weight);
  let results = (outs GraphF32Tensor:$result);
  let assemblyFormat = [{
    $kind $prediction `,` $labels (`weights` $weights^)? (`count` $count^)?
    (`sample_weights` $sample_weights^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$type, "LossKind":$kind, "::mlir::Value":$prediction,
                   "::mlir::Value":$labels, "bool":$from_logits), [{
      build($_builder, $_state, type, kind, prediction, labels, ::mlir::Value(), ::mlir::Value(),
            ::mlir::Value(), from_logits, ::mlir::IntegerAttr(), ::mlir::FloatAttr(),
            ::mlir::DenseF32ArrayAttr(), ::mlir::DenseF32ArrayAttr());
    }]>
  ];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dynamic loss scaling (fp16)
//===----------------------------------------------------------------------===//

def Graph_LossScaleOp : Graph_Op<"loss_scale", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "multiply by the loss scale 2^(16 - halvings), or by its inverse";
  let description = [{
    `halvings` is the persistent loss-scale state (0 at the start: scale 65536). The loss
    gradient is scaled up before the backward pass so that small fp16 gradients do not flush
    to zero; with `inverse`, the f32 parameter gradients are scaled back before the update.
    Powers of two make both exact.

    ```mlir
    %g = graph.loss_scale %dloss, %halvings : tensor<32x10xf32>
    %u = graph.loss_scale %dw, %halvings {inverse} : tensor<10x100xf32>
    ```
  }];
  let arguments = (ins GraphF32Tensor:$input, GraphF32Scalar:$halvings, UnitAttr:$inverse);
  let results = (outs GraphF32Tensor:$result);
  let assemblyFormat = "$input `,` $halvings attr-dict `:` type($result)";
}

def Graph_AllFiniteOp : Graph_Op<"all_finite", [Pure]> {
  let summary = "1 when every element of every operand is finite, else 0";
  let description = [{
    The overflow check of dynamic loss scaling, over all parameter gradients of the step: the
    optimizer updates take its result as their `apply` flag.

    ```mlir
    %ok = graph.all_finite %dw1, %db1 : tensor<10x100xf32>, tensor<10xf32>
    ```
  }];
  let arguments = (ins Variadic<GraphF32Tensor>:$inputs);
  let results = (outs GraphF32Scalar:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
}

def Graph_UpdateLossScaleOp : Graph_Op<"update_loss_scale", [Pure]> {
  let summary = "halve the loss scale on overflow, double it after `growth_interval` clean steps";
  let description = [{
    In place on its state, like an optimizer update: when `finite` is 0, halvings + 1, the
    clean-step count restarts at 0 and the skipped-step count grows; otherwise the clean-step
    count grows, and on reaching `growth_interval` the scale doubles (halvings - 1, never below
    -8, a scale of 2^24) and the count restarts. This is PyTorch's GradScaler with growth and
    backoff factors of 2. The skipped steps are what Adam's step counter leaves out (GradScaler
    skips optimizer.step(), so Adam counts applied updates only).

    ```mlir
    %h2, %c2, %s2 = graph.update_loss_scale %h, %c, %s, %ok {growth_interval = 2000 : i64} : tensor<f32>
    ```
  }];
  let arguments = (ins GraphF32Scalar:$halvings, GraphF32Scalar:$clean_steps,
                       GraphF32Scalar:$skipped_steps, GraphF32Scalar:$finite,
                       I64Attr:$growth_interval);
  let results = (outs GraphF32Scalar:$new_halvings, GraphF32Scalar:$new_clean_steps,
                      GraphF32Scalar:$new_skipped_steps);
  let assemblyFormat = "operands attr-dict `:` type($halvings)";
}

//===----------------------------------------------------------------------===//
// Optimizer updates (in place on their parameter and state in the plan)
//===----------------------------------------------------------------------===//

// Each update takes an optional `apply` flag (f32 scalar): with dynamic loss scaling the
// updates of a step whose gradients overflowed are skipped (apply = 0), parameters and
// optimizer state left as they were.
def Graph_SgdUpdateOp : Graph_Op<"sgd_update", [Pure, AllTypesMatch<["param", "grad", "new_param"]>]> {
  let summary = "param - lr * grad";
  let arguments = (ins GraphF32Tensor:$param, GraphF32Tensor:$grad,
                       Optional<GraphF32Scalar>:$apply, F32Attr:$lr);
  let results = (outs GraphF32Tensor:$new_param);
  let assemblyFormat = "$param `,` $grad (`if` $apply^)? attr-dict `:` type($new_param)";
}

def Graph_MomentumUpdateOp : Graph_Op<"momentum_update", [Pure, AllTypesMatch<["param", "grad", "velocity", "new_param", "new_velocity"]>]> {
  let summary = "PyTorch SGD with momentum: v = mu v + g; p -= lr v";
  let arguments = (ins GraphF32Tensor:$param, GraphF32Tensor:$grad, GraphF32Tensor:$velocity,
                       Optional<GraphF32Scalar>:$apply, F32Attr:$lr, F32Attr:$momentum);
  let results = (outs GraphF32Tensor:$new_param, GraphF32Tensor:$new_velocity);
  let assemblyFormat = "$param `,` $grad `,` $velocity (`if` $apply^)? attr-dict `:` type($param)";
}

def Graph_AdamUpdateOp : Graph_Op<"adam_update", [Pure, AllTypesMatch<["param", "grad", "m", "v", "new_param", "new_m", "new_v"]>]> {
  let summary = "PyTorch Adam with bias correction";
  let description = [{
    `step` is the 1-based step number as an f32 scalar, fed by the runtime.
  }];
  let arguments = (ins GraphF32Tensor:$param, GraphF32Tensor:$grad, GraphF32Tensor:$m, GraphF32Tensor:$v,
                       GraphF32Scalar:$step, Optional<GraphF32Scalar>:$apply, F32Attr:$lr,
                       F32Attr:$beta1, F32Attr:$beta2, F32Attr:$epsilon);
  let results = (outs GraphF32Tensor:$new_param, GraphF32Tensor:$new_m, GraphF32Tensor:$new_v);
  let assemblyFormat = "$param `,` $grad `,` $m `,` $v `,` $step (`if` $apply^)? attr-dict `:` type($param) `,` type($step)";
}

//===----------------------------------------------------------------------===//
// Data parallelism (collectives across the ranks of a --data-parallel run)
//===----------------------------------------------------------------------===//

def Graph_AllReduceOp : Graph_Op<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "the mean over `ranks` data-parallel ranks of a flat gradient bucket, in place";
  let description = [{
    Every rank holds its own gradient of the mean loss over its shard of the global batch;
    the mean of those is the gradient of the global batch's mean loss. The result overwrites
    the operand's buffer (the plan gives both one offset), so the collective never allocates.
    The targets start the collective here and wait for it only before the first op that reads
    the result, so it overlaps the rest of the backward pass. Not `Pure`: it talks to the other
    ranks, so it is never folded, duplicated or rematerialized.

    ```mlir
    %r = graph.all_reduce %bucket {bucket = 0 : i64, ranks = 4 : i64} : tensor<1010xf32>
    ```
  }];
  let arguments = (ins GraphF32Tensor:$input, I64Attr:$bucket, I64Attr:$ranks);
  let results = (outs GraphF32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_ReduceScatterOp : Graph_Op<"reduce_scatter"> {
  let summary = "this rank's shard of the mean over `ranks` ranks of a flat gradient bucket";
  let description = [{
    Optimizer-state sharding (ZeRO): rank r keeps elements [r S, (r + 1) S) of the averaged
    bucket, S = size / ranks. The shard overwrites the start of the bucket's buffer (the plan
    gives both one offset), so the collective never allocates; like `all_reduce` it runs from
    this op to the first op that reads the shard.

    ```mlir
    %s = graph.reduce_scatter %bucket {bucket = 0 : i64, ranks = 4 : i64} : (tensor<1112xf32>) -> tensor<278xf32>
    ```
  }];
  let arguments = (ins GraphF32Tensor:$input, I64Attr:$bucket, I64Attr:$ranks);
  let results = (outs GraphF32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_RankShardOp : Graph_Op<"rank_shard"> {
  let summary = "this rank's shard of the flat concatenation of `inputs`, zero-padded";
  let description = [{
    The parameters a sharded optimizer update reads: elements [r S, (r + 1) S) of the inputs
    flattened and concatenated, zeros past their end (S = result size, r = this process's rank,
    known only at run time).

    ```mlir
    %p = graph.rank_shard %w, %b {ranks = 4 : i64} : (tensor<100x10xf32>, tensor<100xf32>) -> tensor<275xf32>
    ```

    With `starts`, input i begins at element `starts[i]` of the layout instead (ascending, the
    inputs do not overlap), and zeros fill the gaps: the layout of a gradient bucket whose
    gradients are planned inside it at aligned offsets (gradient-as-bucket-view), so that the
    parameter shard lines up with the gradient shard.
    ```mlir
    %p = graph.rank_shard %w, %b {ranks = 4 : i64, starts = array<i64: 0, 1024>} : (tensor<100x10xf32>, tensor<100xf32>) -> tensor<281xf32>
    ```
  }];
  let arguments = (ins Variadic<GraphF32Tensor>:$inputs, I64Attr:$ranks,
                       OptionalAttr<DenseI64ArrayAttr>:$starts);
  let results = (outs GraphF32Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_AllGatherIntoOp : Graph_Op<"all_gather_into"> {
  let summary = "gathers every rank's updated shard and writes the whole back over `params`";
  let description = [{
    The inverse of `rank_shard` across ranks: the shards of all ranks, in rank order, are the
    flat concatenation of the new parameters (past their end: padding). Each result overwrites
    its parameter in place; the gathered concatenation is staged in the op's planned workspace.
    `starts`: as rank_shard's (the gaps are not written anywhere).

    ```mlir
    %w1, %b1 = graph.all_gather_into %p1, %w, %b {bucket = 0 : i64, ranks = 4 : i64} : (tensor<275xf32>, tensor<100x10xf32>, tensor<100xf32>) -> (tensor<100x10xf32>, tensor<100xf32>)
    ```
  }];
  let arguments = (ins GraphF32Tensor:$shard, Variadic<GraphF32Tensor>:$params, I64Attr:$bucket,
                       I64Attr:$ranks, OptionalAttr<DenseI64ArrayAttr>:$starts);
  let results = (outs Variadic<GraphF32Tensor>:$new_params);
  let assemblyFormat = "$shard `,` $params attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // GRAPHC_GRAPH_OPS
