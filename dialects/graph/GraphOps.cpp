// Verifiers, folders and canonicalization patterns of the graph dialect's ops. Verifier
// messages print the offending types so that a bad import points at its shapes.
#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringSwitch.h"

#include <sstream>

using namespace mlir;
using namespace graphc::graph;

#include "dialects/graph/GraphEnums.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.cpp.inc"

FailureOr<std::vector<char>> graphc::graph::initialValueBytes(Attribute init) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(init)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    auto type = cast<ShapedType>(resource.getType());
    if (!blob || !type.getElementType().isF32() ||
        blob->getData().size() != size_t(type.getNumElements()) * sizeof(float))
      return failure();
    ArrayRef<char> data = blob->getData();
    return std::vector<char>(data.begin(), data.end());
  }
  if (auto dense = dyn_cast<DenseFPElementsAttr>(init)) {
    std::vector<char> bytes;
    for (APFloat v : dense.getValues<APFloat>()) {
      float f = v.convertToFloat();
      const char *p = reinterpret_cast<const char *>(&f);
      bytes.insert(bytes.end(), p, p + sizeof(float));
    }
    return bytes;
  }
  return failure();
}

int64_t graphc::graph::convOutputSize(int64_t in, int64_t window, int64_t stride,
                                      int64_t padBegin, int64_t padEnd, int64_t dilation) {
  int64_t span = dilation * (window - 1) + 1;
  int64_t padded = in + padBegin + padEnd;
  if (padded < span || stride <= 0)
    return -1;
  return (padded - span) / stride + 1;
}

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Static ranked tensors only: graphc plans bytes ahead of time.
LogicalResult requireStatic(Operation *op) {
  auto check = [&](Type t) -> LogicalResult {
    if (auto ranked = dyn_cast<RankedTensorType>(t); ranked && !ranked.hasStaticShape())
      return op->emitOpError() << "needs static shapes, got " << t;
    return success();
  };
  for (Type t : op->getOperandTypes())
    if (failed(check(t)))
      return failure();
  for (Type t : op->getResultTypes())
    if (failed(check(t)))
      return failure();
  return success();
}

/// Checks the [h, w] / [top, left, bottom, right] window attributes shared by conv and pool.
LogicalResult verifyWindowAttrs(Operation *op, ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> padding, ArrayRef<int64_t> dilations) {
  if (strides.size() != 2 || padding.size() != 4 || dilations.size() != 2)
    return op->emitOpError() << "expects strides [h, w], padding [top, left, bottom, right] and "
                                "dilations [h, w], got "
                             << strides.size() << ", " << padding.size() << " and "
                             << dilations.size() << " values";
  for (int64_t s : strides)
    if (s <= 0)
      return op->emitOpError() << "strides must be positive, got [" << strides[0] << ", "
                               << strides[1] << "]";
  for (int64_t d : dilations)
    if (d <= 0)
      return op->emitOpError() << "dilations must be positive";
  for (int64_t p : padding)
    if (p < 0)
      return op->emitOpError() << "padding must be non-negative";
  return success();
}

/// The NCHW output shape of a conv2d with input [N,C,H,W] and filter [K,C,R,S], or failure.
FailureOr<SmallVector<int64_t>> conv2dOutputShape(Operation *op, ArrayRef<int64_t> input,
                                                  ArrayRef<int64_t> filter,
                                                  ArrayRef<int64_t> strides,
                                                  ArrayRef<int64_t> padding,
                                                  ArrayRef<int64_t> dilations,
                                                  int64_t groups) {
  if (input.size() != 4 || filter.size() != 4) {
    op->emitOpError() << "expects a rank-4 NCHW input and OIHW filter, got ranks "
                      << input.size() << " and " << filter.size();
    return failure();
  }
  if (groups < 1 || filter[0] % groups != 0) {
    op->emitOpError() << "groups " << groups << " must be positive and divide the "
                      << filter[0] << " output channels";
    return failure();
  }
  if (input[1] != filter[1] * groups) {
    auto diag = op->emitOpError() << "input channels " << input[1]
                                  << " do not match filter channels " << filter[1];
    if (groups != 1)
      diag << " x groups " << groups;
    diag << " (filter is OIHW)";
    return failure();
  }
  int64_t oh = convOutputSize(input[2], filter[2], strides[0], padding[0], padding[2],
                              dilations[0]);
  int64_t ow = convOutputSize(input[3], filter[3], strides[1], padding[1], padding[3],
                              dilations[1]);
  if (oh <= 0 || ow <= 0) {
    op->emitOpError() << "filter window " << filter[2] << "x" << filter[3]
                      << " does not fit the padded input " << input[2] << "x" << input[3];
    return failure();
  }
  return SmallVector<int64_t>{input[0], filter[0], oh, ow};
}

FailureOr<SmallVector<int64_t>> pool2dOutputShape(Operation *op, ArrayRef<int64_t> input,
                                                  ArrayRef<int64_t> kernel,
                                                  ArrayRef<int64_t> strides,
                                                  ArrayRef<int64_t> padding) {
  if (input.size() != 4) {
    op->emitOpError() << "expects a rank-4 NCHW input, got rank " << input.size();
    return failure();
  }
  if (kernel.size() != 2 || kernel[0] <= 0 || kernel[1] <= 0) {
    op->emitOpError() << "expects a positive kernel [h, w]";
    return failure();
  }
  int64_t oh = convOutputSize(input[2], kernel[0], strides[0], padding[0], padding[2], 1);
  int64_t ow = convOutputSize(input[3], kernel[1], strides[1], padding[1], padding[3], 1);
  if (oh <= 0 || ow <= 0) {
    op->emitOpError() << "pooling window " << kernel[0] << "x" << kernel[1]
                      << " does not fit the padded input " << input[2] << "x" << input[3];
    return failure();
  }
  return SmallVector<int64_t>{input[0], input[1], oh, ow};
}

/// The checks every pooling op shares (static shapes, window attributes), then the pooled
/// shape of `input`.
FailureOr<SmallVector<int64_t>> verifiedPoolShape(Operation *op, Value input,
                                                  ArrayRef<int64_t> kernel,
                                                  ArrayRef<int64_t> strides,
                                                  ArrayRef<int64_t> padding) {
  SmallVector<int64_t> ones = {1, 1};
  if (failed(requireStatic(op)) || failed(verifyWindowAttrs(op, strides, padding, ones)))
    return failure();
  return pool2dOutputShape(op, tensorType(input).getShape(), kernel, strides, padding);
}

LogicalResult expectShape(Operation *op, StringRef what, Type actual,
                          ArrayRef<int64_t> expected) {
  auto ranked = cast<RankedTensorType>(actual);
  if (ranked.getShape() == expected)
    return success();
  auto diag = op->emitOpError() << what << " should have shape [";
  llvm::interleave(expected, [&](int64_t d) { diag << d; }, [&] { diag << "x"; });
  return diag << "], got " << actual;
}

} // namespace

//===----------------------------------------------------------------------===//
// Dense, matmul, bias_grad
//===----------------------------------------------------------------------===//

LogicalResult DenseOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  auto x = tensorType(getInput()), w = tensorType(getWeight());
  if (x.getRank() != 2 || w.getRank() != 2)
    return emitOpError() << "expects rank-2 input and weight, got " << x << " and " << w;
  int64_t in = getTransposeWeight() ? w.getDimSize(1) : w.getDimSize(0);
  int64_t out = getTransposeWeight() ? w.getDimSize(0) : w.getDimSize(1);
  if (x.getDimSize(1) != in)
    return emitOpError() << "input " << x << " has " << x.getDimSize(1)
                         << " features but weight " << w << " expects " << in
                         << (getTransposeWeight() ? " (weight is [out, in])" : " (weight is [in, out])");
  if (getBias() && failed(expectShape(*this, "bias", getBias().getType(), {out})))
    return failure();
  return expectShape(*this, "result", getType(), {x.getDimSize(0), out});
}

LogicalResult MatmulOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  auto a = tensorType(getLhs()), b = tensorType(getRhs());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOpError() << "expects rank-2 operands, got " << a << " and " << b;
  int64_t m = a.getDimSize(getTransposeLhs() ? 1 : 0), k = a.getDimSize(getTransposeLhs() ? 0 : 1);
  int64_t kb = b.getDimSize(getTransposeRhs() ? 1 : 0), n = b.getDimSize(getTransposeRhs() ? 0 : 1);
  if (k != kb)
    return emitOpError() << "contraction sizes differ: " << a << " and " << b;
  return expectShape(*this, "result", getType(), {m, n});
}

LogicalResult BatchMatmulOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  auto a = tensorType(getLhs()), b = tensorType(getRhs());
  if (a.getRank() != 3 || b.getRank() != 3)
    return emitOpError() << "expects rank-3 operands [B, M, K] and [B, K, N], got " << a
                         << " and " << b;
  if (a.getDimSize(0) != b.getDimSize(0))
    return emitOpError() << "batch sizes differ: " << a << " and " << b;
  int64_t m = a.getDimSize(getTransposeLhs() ? 2 : 1), k = a.getDimSize(getTransposeLhs() ? 1 : 2);
  int64_t kb = b.getDimSize(getTransposeRhs() ? 2 : 1), n = b.getDimSize(getTransposeRhs() ? 1 : 2);
  if (k != kb)
    return emitOpError() << "contraction sizes differ: " << a << " and " << b;
  return expectShape(*this, "result", getType(), {a.getDimSize(0), m, n});
}

/// Shapes shared by graph.attention and its backward: query [B, M, D], key [B, N, D], value
/// [B, N, E]; a step operand exactly when the dropout ratio is in (0, 1).
static LogicalResult verifyAttention(Operation *op, Value query, Value key, Value value, Value step,
                                     Value scoreBias, float ratio, bool causal, bool biasFills) {
  if (failed(requireStatic(op)))
    return failure();
  auto q = tensorType(query), k = tensorType(key), v = tensorType(value);
  if (q.getRank() != 3 || k.getRank() != 3 || v.getRank() != 3)
    return op->emitOpError() << "expects rank-3 query, key and value [B, M, D], [B, N, D], "
                                "[B, N, E], got "
                             << q << ", " << k << " and " << v;
  if (causal && q.getDimSize(1) != k.getDimSize(1))
    return op->emitOpError() << "causal needs as many queries as keys, got " << q << " and " << k;
  if (q.getDimSize(0) != k.getDimSize(0) || k.getDimSize(0) != v.getDimSize(0))
    return op->emitOpError() << "batch sizes differ: " << q << ", " << k << " and " << v;
  if (q.getDimSize(2) != k.getDimSize(2))
    return op->emitOpError() << "query and key widths differ: " << q << " and " << k;
  if (k.getDimSize(1) != v.getDimSize(1))
    return op->emitOpError() << "key and value lengths differ: " << k << " and " << v;
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return op->emitOpError() << "dropout_ratio " << ratio << " is outside [0, 1)";
  if ((ratio > 0.0f) != bool(step))
    return op->emitOpError() << (step ? "has a step operand but no dropout"
                                      : "needs a step operand for its dropout");
  if (biasFills && !scoreBias)
    return op->emitOpError() << "has bias_fills but no bias";
  if (scoreBias) { // [batch, (M,) N], shared by each batch's heads (B = batch x heads)
    auto bias = tensorType(scoreBias);
    const bool perQuery = bias.getRank() == 3;
    if ((bias.getRank() != 2 && !perQuery) ||
        bias.getDimSize(bias.getRank() - 1) != k.getDimSize(1) ||
        (perQuery && bias.getDimSize(1) != q.getDimSize(1)) || bias.getDimSize(0) < 1 ||
        q.getDimSize(0) % bias.getDimSize(0) != 0)
      return op->emitOpError() << "expects a bias [batch, " << k.getDimSize(1) << "] or [batch, "
                               << q.getDimSize(1) << ", " << k.getDimSize(1)
                               << "] whose batch divides " << q.getDimSize(0) << ", got " << bias;
  }
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttention(*this, getQuery(), getKey(), getValue(), getStep(), getBias(),
                             getDropoutRatio().convertToFloat(), getCausal(), getBiasFills())))
    return failure();
  auto q = tensorType(getQuery()), v = tensorType(getValue());
  return expectShape(*this, "result", getType(),
                     {q.getDimSize(0), q.getDimSize(1), v.getDimSize(2)});
}

LogicalResult AttentionBackwardOp::verify() {
  if (failed(verifyAttention(*this, getQuery(), getKey(), getValue(), getStep(), getBias(),
                             getDropoutRatio().convertToFloat(), getCausal(), getBiasFills())))
    return failure();
  auto q = tensorType(getQuery()), v = tensorType(getValue());
  if (failed(expectShape(*this, "grad", getGrad().getType(),
                         {q.getDimSize(0), q.getDimSize(1), v.getDimSize(2)})) ||
      failed(expectShape(*this, "grad_query", getGradQuery().getType(), q.getShape())) ||
      failed(
          expectShape(*this, "grad_key", getGradKey().getType(), tensorType(getKey()).getShape())))
    return failure();
  return expectShape(*this, "grad_value", getGradValue().getType(), v.getShape());
}

LogicalResult BiasGradOp::verify() {
  auto g = tensorType(getGrad());
  int64_t axis = static_cast<int64_t>(getAxis()); // I64Attr's getter is unsigned
  if (axis < 0 || axis >= g.getRank())
    return emitOpError() << "axis " << axis << " is out of range for " << g;
  return expectShape(*this, "result", getType(), {g.getDimSize(axis)});
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult Conv2dOp::verify() {
  if (failed(requireStatic(*this)) ||
      failed(verifyWindowAttrs(*this, getStrides(), getPadding(), getDilations())))
    return failure();
  auto shape = conv2dOutputShape(*this, tensorType(getInput()).getShape(),
                                 tensorType(getFilter()).getShape(), getStrides(), getPadding(),
                                 getDilations(), static_cast<int64_t>(getGroups()));
  if (failed(shape))
    return failure();
  if (getBias() && failed(expectShape(*this, "bias", getBias().getType(), {(*shape)[1]})))
    return failure();
  return expectShape(*this, "result", getType(), *shape);
}

LogicalResult Conv2dBackwardDataOp::verify() {
  if (failed(requireStatic(*this)) ||
      failed(verifyWindowAttrs(*this, getStrides(), getPadding(), getDilations())))
    return failure();
  auto shape = conv2dOutputShape(*this, tensorType(getResult()).getShape(),
                                 tensorType(getFilter()).getShape(), getStrides(), getPadding(),
                                 getDilations(), static_cast<int64_t>(getGroups()));
  if (failed(shape))
    return failure();
  if (getBias() && failed(expectShape(*this, "bias", getBias().getType(),
                                      {tensorType(getResult()).getDimSize(1)})))
    return failure();
  return expectShape(*this, "grad", getGrad().getType(), *shape);
}

LogicalResult Conv2dBackwardFilterOp::verify() {
  if (failed(requireStatic(*this)) ||
      failed(verifyWindowAttrs(*this, getStrides(), getPadding(), getDilations())))
    return failure();
  auto shape = conv2dOutputShape(*this, tensorType(getInput()).getShape(),
                                 tensorType(getResult()).getShape(), getStrides(), getPadding(),
                                 getDilations(), static_cast<int64_t>(getGroups()));
  if (failed(shape))
    return failure();
  return expectShape(*this, "grad", getGrad().getType(), *shape);
}

LogicalResult MaxPool2dOp::verify() {
  auto shape = verifiedPoolShape(*this, getInput(), getKernel(), getStrides(), getPadding());
  if (failed(shape))
    return failure();
  return expectShape(*this, "result", getType(), *shape);
}

LogicalResult MaxPool2dBackwardOp::verify() {
  auto shape = verifiedPoolShape(*this, getInput(), getKernel(), getStrides(), getPadding());
  if (failed(shape) || failed(expectShape(*this, "grad", getGrad().getType(), *shape)))
    return failure();
  return expectShape(*this, "result", getType(), tensorType(getInput()).getShape());
}

LogicalResult AvgPool2dOp::verify() {
  auto shape = verifiedPoolShape(*this, getInput(), getKernel(), getStrides(), getPadding());
  if (failed(shape))
    return failure();
  return expectShape(*this, "result", getType(), *shape);
}

LogicalResult AvgPool2dBackwardOp::verify() {
  auto shape = verifiedPoolShape(*this, getResult(), getKernel(), getStrides(), getPadding());
  if (failed(shape))
    return failure();
  return expectShape(*this, "grad", getGrad().getType(), *shape);
}

//===----------------------------------------------------------------------===//
// Batch normalization and dropout
//===----------------------------------------------------------------------===//

/// A normalization's result has its input's type, and its epsilon is non-negative.
static LogicalResult verifyNormalized(Operation *op, Value result, Value input,
                                      const APFloat &epsilon) {
  if (result.getType() != input.getType())
    return op->emitOpError() << "result " << result.getType() << " must match the input "
                             << input.getType();
  if (!(epsilon.convertToFloat() >= 0.f))
    return op->emitOpError() << "epsilon must be non-negative";
  return success();
}

/// input [N, C, ...] and the [C] per-channel operands/results.
static LogicalResult verifyPerChannel(Operation *op, Value input, ValueRange perChannel) {
  if (failed(requireStatic(op)))
    return failure();
  auto x = tensorType(input);
  if (x.getRank() < 2)
    return op->emitOpError() << "expects an [N, C, ...] input, got " << x;
  for (Value v : perChannel)
    if (failed(expectShape(op, "per-channel tensor", v.getType(), {x.getDimSize(1)})))
      return failure();
  return success();
}

LogicalResult BatchNormOp::verify() {
  if (failed(verifyPerChannel(*this, getInput(),
                              {getScale(), getBias(), getRunningMean(), getRunningVar(),
                               getNewRunningMean(), getNewRunningVar(), getSavedMean(),
                               getSavedInvstd()})))
    return failure();
  if (failed(verifyNormalized(*this, getResult(), getInput(), getEpsilon())))
    return failure();
  float m = getMomentum().convertToFloat();
  if (!(m >= 0.f && m <= 1.f))
    return emitOpError() << "momentum must be in [0, 1], got " << m;
  if (getTraining()) {
    auto x = tensorType(getInput());
    if (x.getNumElements() / x.getDimSize(1) < 2)
      return emitOpError() << "training needs more than one value per channel, got " << x;
  }
  return success();
}

LogicalResult BatchNormApplyOp::verify() {
  if (failed(verifyPerChannel(*this, getInput(),
                              {getScale(), getBias(), getSavedMean(), getSavedInvstd()})))
    return failure();
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result " << getResult().getType() << " must match the input "
                         << getInput().getType();
  return success();
}

LogicalResult BatchNormBackwardOp::verify() {
  if (failed(verifyPerChannel(*this, getInput(),
                              {getScale(), getSavedMean(), getSavedInvstd(), getGradScale(),
                               getGradBias()})))
    return failure();
  if (getGrad().getType() != getInput().getType() ||
      getGradInput().getType() != getInput().getType())
    return emitOpError() << "grad and grad_input must match the input " << getInput().getType();
  return success();
}

/// input [..., D]; scale/bias/grad_scale/grad_bias [D]; the row statistics [elements / D].
static LogicalResult verifyLayerNorm(Operation *op, Value input, ValueRange perFeature,
                                     ValueRange perRow) {
  if (failed(requireStatic(op)))
    return failure();
  auto x = tensorType(input);
  if (x.getRank() < 1 || x.getNumElements() == 0)
    return op->emitOpError() << "expects a non-empty [..., D] input, got " << x;
  int64_t d = x.getDimSize(x.getRank() - 1);
  for (Value v : perFeature)
    if (failed(expectShape(op, "per-feature tensor", v.getType(), {d})))
      return failure();
  for (Value v : perRow)
    if (failed(expectShape(op, "row statistic", v.getType(), {x.getNumElements() / d})))
      return failure();
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyLayerNorm(*this, getInput(), {getScale(), getBias()},
                             {getSavedMean(), getSavedInvstd()})))
    return failure();
  return verifyNormalized(*this, getResult(), getInput(), getEpsilon());
}

LogicalResult LayerNormBackwardOp::verify() {
  if (failed(verifyLayerNorm(*this, getInput(), {getScale(), getGradScale(), getGradBias()},
                             {getSavedMean(), getSavedInvstd()})))
    return failure();
  if (getGrad().getType() != getInput().getType() ||
      getGradInput().getType() != getInput().getType())
    return emitOpError() << "grad and grad_input must match the input " << getInput().getType();
  return success();
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyLayerNorm(*this, getInput(), {getScale()}, {getSavedInvstd()})))
    return failure();
  return verifyNormalized(*this, getResult(), getInput(), getEpsilon());
}

LogicalResult RmsNormBackwardOp::verify() {
  if (failed(verifyLayerNorm(*this, getInput(), {getScale(), getGradScale()}, {getSavedInvstd()})))
    return failure();
  if (getGrad().getType() != getInput().getType() ||
      getGradInput().getType() != getInput().getType())
    return emitOpError() << "grad and grad_input must match the input " << getInput().getType();
  return success();
}

LogicalResult BroadcastMulOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  auto lhs = tensorType(getLhs()), rhs = tensorType(getRhs());
  if (getResult().getType() != getLhs().getType())
    return emitOpError() << "result " << getResult().getType() << " must match the lhs "
                         << getLhs().getType();
  if (rhs.getRank() > lhs.getRank() ||
      !llvm::equal(rhs.getShape(), lhs.getShape().take_back(rhs.getRank())))
    return emitOpError() << "rhs " << getRhs().getType()
                         << " must have the shape of the lhs's trailing axes "
                         << getLhs().getType();
  return success();
}

LogicalResult RotaryOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  auto x = tensorType(getInput());
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result " << getResult().getType() << " must match the input "
                         << getInput().getType();
  if (x.getRank() < 1 || x.getShape().back() % 2 != 0)
    return emitOpError() << "needs an input whose last axis is even, got " << x;
  for (Value table : {getCos(), getSin()}) {
    auto t = tensorType(table);
    if (t.getRank() < 1 || t.getRank() > x.getRank() ||
        !llvm::equal(t.getShape(), x.getShape().take_back(t.getRank())))
      return emitOpError() << "table " << table.getType()
                           << " must have the shape of the input's trailing axes " << x;
  }
  return success();
}

static LogicalResult verifyRatio(Operation *op, float ratio, Type in, Type out) {
  if (!(ratio >= 0.f && ratio < 1.f))
    return op->emitOpError() << "ratio must be in [0, 1), got " << ratio;
  if (in != out)
    return op->emitOpError() << "result " << out << " must match the operand " << in;
  return requireStatic(op);
}

/// A broadcast mask's runs (graph.dropout): groups of `repeat` runs of `inner` elements share
/// one draw, so the groups must tile the tensor.
static LogicalResult verifyMaskBroadcast(Operation *op, int64_t repeat, int64_t inner, Type type) {
  int64_t span = 0;
  if (repeat < 1 || inner < 1 || __builtin_mul_overflow(repeat, inner, &span))
    return op->emitOpError() << "mask_repeat (" << repeat << ") and mask_inner (" << inner
                             << ") must be positive";
  int64_t elements = cast<RankedTensorType>(type).getNumElements();
  if (elements % span != 0)
    return op->emitOpError() << "mask groups of mask_repeat * mask_inner = " << span
                             << " elements do not tile the " << elements << " elements of " << type;
  return success();
}

LogicalResult DropoutOp::verify() {
  if (failed(verifyRatio(*this, getRatio().convertToFloat(), getInput().getType(), getType())))
    return failure();
  return verifyMaskBroadcast(*this, getMaskRepeat(), getMaskInner(), getType());
}

LogicalResult DropoutBackwardOp::verify() {
  if (failed(verifyRatio(*this, getRatio().convertToFloat(), getGrad().getType(), getType())))
    return failure();
  return verifyMaskBroadcast(*this, getMaskRepeat(), getMaskInner(), getType());
}

//===----------------------------------------------------------------------===//
// Random noise
//===----------------------------------------------------------------------===//

llvm::StringRef graphc::graph::randomAffineKindEnumerator(llvm::StringRef kind) {
  return llvm::StringSwitch<llvm::StringRef>(kind)
      .Case("flip_horizontal", "FlipHorizontal")
      .Case("flip_vertical", "FlipVertical")
      .Case("flip_both", "FlipBoth")
      .Case("rotate", "Rotate")
      .Case("zoom", "Zoom")
      .Case("zoom_uniform", "ZoomUniform")
      .Case("translate", "Translate")
      .Case("crop_offset", "CropOffset")
      .Default("");
}

llvm::StringRef graphc::graph::randomAffineFillEnumerator(llvm::StringRef fillMode) {
  return llvm::StringSwitch<llvm::StringRef>(fillMode)
      .Case("reflect", "Reflect")
      .Case("nearest", "Nearest")
      .Case("constant", "Constant")
      .Default("");
}

/// A float as C++ streams write it (2.5, not 2.500000e+00).
static std::string shortText(float value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

LogicalResult RandomAffineOp::verify() {
  auto x = tensorType(getInput());
  if (x.getRank() != 4)
    return emitOpError() << "needs an NCHW image, got " << x;
  if (getResult().getType() != x)
    return emitOpError() << "result " << getResult().getType() << " must match the input " << x;
  if (randomAffineKindEnumerator(getKind()).empty())
    return emitOpError() << "kind \"" << getKind()
                         << "\" is not one of flip_horizontal, flip_vertical, flip_both, rotate, "
                            "zoom, zoom_uniform, translate, crop_offset";
  if (randomAffineFillEnumerator(getFillMode()).empty())
    return emitOpError() << "fill_mode \"" << getFillMode()
                         << "\" is not one of reflect, nearest, constant";
  if (getInterpolation() != "bilinear" && getInterpolation() != "nearest")
    return emitOpError() << "interpolation \"" << getInterpolation()
                         << "\" is not one of bilinear, nearest";
  float bounds[] = {getLow0().convertToFloat(), getHigh0().convertToFloat(),
                    getLow1().convertToFloat(), getHigh1().convertToFloat(),
                    getFillValue().convertToFloat()};
  for (float b : bounds)
    if (!std::isfinite(b))
      return emitOpError() << "needs finite bounds and fill_value";
  if (bounds[0] > bounds[1] || bounds[2] > bounds[3])
    return emitOpError() << "needs low <= high, got [" << bounds[0] << ", " << bounds[1]
                         << "] and [" << bounds[2] << ", " << bounds[3] << "]";
  if (getKind().starts_with("zoom") && (bounds[0] <= -1.f || bounds[2] <= -1.f))
    return emitOpError() << "zooms by 1 + low > 0, got low " << bounds[0] << " and " << bounds[2];
  if (getKind() == "crop_offset") {
    // Whole counts of positions, at least one, within the image.
    auto whole = [](float b, int64_t len) {
      return b >= 1.f && b == std::floor(b) && int64_t(b) <= len;
    };
    if (bounds[0] != 0.f || bounds[2] != 0.f || !whole(bounds[1], x.getDimSize(2)) ||
        !whole(bounds[3], x.getDimSize(3)))
      return emitOpError() << "crop_offset needs low0 = low1 = 0 and high0, high1 whole counts "
                              "of offsets from 1 to the height and width, got "
                           << shortText(bounds[0]) << ", " << shortText(bounds[1]) << " and "
                           << shortText(bounds[2]) << ", " << shortText(bounds[3]);
  }
  if (getSampleOffset() < 0)
    return emitOpError() << "sample_offset must be >= 0";
  return success();
}

LogicalResult RandomNormalOp::verify() {
  float mean = getMean().convertToFloat(), scale = getScale().convertToFloat();
  if (!std::isfinite(mean) || !std::isfinite(scale) || scale < 0.f)
    return emitOpError() << "needs a finite mean and a finite scale >= 0, got mean " << mean
                         << " and scale " << scale;
  return requireStatic(*this);
}

LogicalResult RandomUniformOp::verify() {
  float low = getLow().convertToFloat(), high = getHigh().convertToFloat();
  if (!std::isfinite(low) || !std::isfinite(high) || !std::isfinite(high - low) || low > high)
    return emitOpError() << "needs finite bounds with low <= high, got [" << low << ", " << high
                         << ")";
  if (failed(requireStatic(*this)))
    return failure();
  int64_t elements = getType().getNumElements();
  if (getRepeat() < 1 || elements % getRepeat() != 0)
    return emitOpError() << "repeat " << getRepeat() << " must be positive and divide the "
                         << elements << " elements";
  return success();
}

//===----------------------------------------------------------------------===//
// Reshape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  auto in = tensorType(getInput()), out = tensorType(getResult());
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "cannot reshape " << in << " (" << in.getNumElements()
                         << " elements) to " << out << " (" << out.getNumElements()
                         << " elements)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

namespace {
/// reshape(reshape(x)) -> reshape(x): only the final shape matters.
struct FoldReshapeChain : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<ReshapeOp>();
    if (!producer)
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), producer.getInput());
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &patterns, MLIRContext *context) {
  patterns.add<FoldReshapeChain>(context);
}

//===----------------------------------------------------------------------===//
// Concat and slice
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  auto x = tensorType(getInput());
  ArrayRef<int64_t> perm = getPerm();
  int64_t rank = x.getRank();
  if (int64_t(perm.size()) != rank)
    return emitOpError() << "perm has " << perm.size() << " entries for " << x;
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return emitOpError() << "perm is not a permutation of 0.." << rank - 1 << " for " << x;
    seen[p] = true;
    expected.push_back(x.getDimSize(p));
  }
  return expectShape(*this, "result", getType(), expected);
}

/// transpose(x, identity) -> x, and transpose(transpose(x, p), q) -> transpose(x, p∘q) in
/// place (result axis i is x's axis p[q[i]]), or x when that is the identity: the importers'
/// layout changes (Keras's channels-last layers around graphc's NCHW ones) cancel.
OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  auto isIdentity = [](ArrayRef<int64_t> p) {
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i] != int64_t(i))
        return false;
    return true;
  };
  if (isIdentity(perm))
    return getInput();
  auto inner = getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  SmallVector<int64_t> composed;
  for (int64_t q : perm)
    composed.push_back(inner.getPerm()[size_t(q)]);
  if (isIdentity(composed))
    return inner.getInput();
  getInputMutable().assign(inner.getInput());
  setPerm(composed);
  return getResult();
}

LogicalResult ConcatOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  auto out = tensorType(getResult());
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= out.getRank())
    return emitOpError() << "axis " << axis << " is out of range for " << out;
  int64_t total = 0;
  for (Value v : getInputs()) {
    auto t = tensorType(v);
    if (t.getRank() != out.getRank())
      return emitOpError() << "input " << t << " has a different rank from the result " << out;
    for (int64_t d = 0; d < out.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != out.getDimSize(d))
        return emitOpError() << "input " << t << " differs from the result " << out
                             << " outside axis " << axis;
    total += t.getDimSize(axis);
  }
  if (total != out.getDimSize(axis))
    return emitOpError() << "inputs add up to " << total << " along axis " << axis
                         << " but the result " << out << " has " << out.getDimSize(axis);
  return success();
}

LogicalResult SliceOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  auto in = tensorType(getInput()), out = tensorType(getResult());
  int64_t axis = static_cast<int64_t>(getAxis()), offset = static_cast<int64_t>(getOffset());
  if (axis < 0 || axis >= in.getRank() || in.getRank() != out.getRank())
    return emitOpError() << "axis " << axis << " is out of range for " << in << " -> " << out;
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (d != axis && in.getDimSize(d) != out.getDimSize(d))
      return emitOpError() << "result " << out << " differs from the input " << in
                           << " outside axis " << axis;
  if (offset < 0 || offset + out.getDimSize(axis) > in.getDimSize(axis))
    return emitOpError() << "slice [" << offset << ", " << offset + out.getDimSize(axis)
                         << ") is outside the input's " << in.getDimSize(axis) << " along axis "
                         << axis;
  return success();
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

/// indices [I...], table [V, D], rows [I..., D] with the table's element type.
static LogicalResult verifyEmbeddingShapes(Operation *op, RankedTensorType indices,
                                           RankedTensorType table, RankedTensorType rows) {
  if (table.getRank() != 2)
    return op->emitOpError() << "table " << table << " must be [vocabulary, features]";
  if (rows.getElementType() != table.getElementType())
    return op->emitOpError() << "rows " << rows << " and table " << table
                             << " differ in element type";
  SmallVector<int64_t> expected(indices.getShape());
  expected.push_back(table.getDimSize(1));
  if (rows.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError() << "rows " << rows << " must be the indices' shape " << indices
                             << " plus [" << table.getDimSize(1) << "]";
  return success();
}

LogicalResult EmbeddingOp::verify() {
  return verifyEmbeddingShapes(*this, tensorType(getIndices()), tensorType(getTable()),
                               tensorType(getResult()));
}

LogicalResult EmbeddingBackwardOp::verify() {
  return verifyEmbeddingShapes(*this, tensorType(getIndices()), tensorType(getResult()),
                               tensorType(getGrad()));
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

LogicalResult ClipOp::verify() {
  if (!(getMin().convertToFloat() <= getMax().convertToFloat()))
    return emitOpError() << "min " << getMin().convertToFloat() << " must not exceed max "
                         << getMax().convertToFloat();
  return success();
}

LogicalResult ClipBackwardOp::verify() {
  if (!(getMin().convertToFloat() <= getMax().convertToFloat()))
    return emitOpError() << "min " << getMin().convertToFloat() << " must not exceed max "
                         << getMax().convertToFloat();
  return success();
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = tensorType(getInput()).getRank();
  int64_t axis = static_cast<int64_t>(getAxis()); // I64Attr's getter is unsigned
  if (axis < 0 || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for " << getInput().getType();
  if (getCausal() && (rank < 2 || axis != rank - 1))
    return emitOpError() << "causal needs [..., queries, keys] scores and the last axis, got "
                         << getInput().getType() << " and axis " << axis;
  return success();
}

LogicalResult SoftmaxBackwardOp::verify() {
  int64_t rank = tensorType(getGrad()).getRank();
  int64_t axis = static_cast<int64_t>(getAxis()); // I64Attr's getter is unsigned
  if (axis < 0 || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for " << getGrad().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

static LogicalResult verifyLossOperands(Operation *op, LossKind kind, Value prediction,
                                        Value labels) {
  auto pred = tensorType(prediction), lab = tensorType(labels);
  if (!pred.hasStaticShape() || !lab.hasStaticShape())
    return op->emitOpError() << "needs static shapes";
  if (pred.getRank() < 1)
    return op->emitOpError() << "prediction must be at least rank 1 (batch first), got " << pred;
  if (kind == LossKind::sparse_categorical_crossentropy) {
    // [batch, classes], or [batch, positions..., classes] (a language model's per-token
    // predictions) with a class index per position.
    if (pred.getRank() < 2)
      return op->emitOpError() << "sparse_categorical_crossentropy expects [batch, classes] or "
                                  "[batch, ..., classes] predictions, got "
                               << pred;
    if (!lab.getElementType().isInteger(64) || lab.getShape() != pred.getShape().drop_back())
      return op->emitOpError() << "sparse_categorical_crossentropy expects int64 labels of shape ["
                               << pred.getShape().drop_back() << "], got " << lab;
    return success();
  }
  if (!lab.getElementType().isF32() || lab.getShape() != pred.getShape())
    return op->emitOpError() << stringifyLossKind(kind)
                             << " expects f32 labels shaped like the prediction " << pred
                             << ", got " << lab;
  return success();
}

/// The rows that count less: ignore_index (sparse crossentropy only) or weights (one f32 per
/// row, a row the prediction without its last axis), not both; `count` holds the whole step's
/// labels (ignore_index) or weights: the same shape after the batch, at least as many samples.
static LogicalResult verifyLossRows(Operation *op, LossKind kind, Value prediction, Value labels,
                                    Value weights, Value count, Value sampleWeights,
                                    std::optional<int64_t> ignoreIndex,
                                    std::optional<APFloat> labelSmoothing,
                                    std::optional<ArrayRef<float>> classWeights,
                                    std::optional<ArrayRef<float>> posWeight) {
  if (posWeight) {
    if (kind != LossKind::binary_crossentropy)
      return op->emitOpError() << "pos_weight applies to binary_crossentropy only";
    const int64_t last = tensorType(prediction).getShape().back();
    if (posWeight->size() != 1 && int64_t(posWeight->size()) != last)
      return op->emitOpError() << "has " << posWeight->size()
                               << " pos_weight values; expected 1 or " << last
                               << " (the prediction's last axis)";
    if (llvm::any_of(*posWeight, [](float w) { return !(w >= 0.0f) || std::isinf(w); }))
      return op->emitOpError() << "pos_weight must be finite and not negative";
  }
  if (classWeights) {
    if (kind != LossKind::sparse_categorical_crossentropy)
      return op->emitOpError() << "class_weights apply to sparse_categorical_crossentropy only";
    if (weights)
      return op->emitOpError() << "takes class_weights or weights, not both";
    const int64_t classes = tensorType(prediction).getShape().back();
    if (int64_t(classWeights->size()) != classes)
      return op->emitOpError() << "has " << classWeights->size() << " class_weights for " << classes
                               << " classes";
    if (llvm::any_of(*classWeights, [](float w) { return !(w >= 0.0f) || std::isinf(w); }))
      return op->emitOpError() << "class_weights must be finite and not negative";
  }
  if (labelSmoothing) {
    const double eps = labelSmoothing->convertToDouble();
    if (kind == LossKind::mse)
      return op->emitOpError() << "label_smoothing applies to the crossentropies, not mse";
    if (!(eps >= 0.0 && eps < 1.0))
      return op->emitOpError() << "label_smoothing " << eps << " must lie in [0, 1)";
  }
  if (ignoreIndex && kind != LossKind::sparse_categorical_crossentropy)
    return op->emitOpError() << "ignore_index applies to sparse_categorical_crossentropy only";
  if (ignoreIndex && weights)
    return op->emitOpError() << "takes ignore_index or weights, not both";
  Value counted = ignoreIndex || classWeights ? labels : weights;
  if (count && !counted)
    return op->emitOpError() << "count needs ignore_index, class_weights or weights";
  if (weights) {
    auto pred = tensorType(prediction), w = tensorType(weights);
    if (pred.getRank() < 2 || w.getShape() != pred.getShape().drop_back() ||
        !w.getElementType().isF32())
      return op->emitOpError() << "weights " << w
                               << " must be f32 with one weight per row of the prediction " << pred;
  }
  if (sampleWeights) {
    auto pred = tensorType(prediction), s = tensorType(sampleWeights);
    const bool perSample = s.getRank() == 1 && s.getDimSize(0) == pred.getDimSize(0);
    const bool perRow = pred.getRank() >= 2 && s.getShape() == pred.getShape().drop_back();
    if (!(perSample || perRow) || !s.getElementType().isF32())
      return op->emitOpError() << "sample_weights " << s
                               << " must be f32 with one weight per sample or per row of the "
                                  "prediction "
                               << pred;
  }
  if (!count)
    return success();
  auto own = tensorType(counted), all = tensorType(count);
  if (all.getElementType() != own.getElementType() || all.getRank() != own.getRank() ||
      !all.hasStaticShape() || all.getShape().drop_front() != own.getShape().drop_front() ||
      all.getDimSize(0) < own.getDimSize(0))
    return op->emitOpError() << "count " << all << " must be "
                             << (counted == labels ? "labels" : "weights") << " like " << own
                             << " for at least as many samples";
  return success();
}

LogicalResult LossOp::verify() {
  if (failed(verifyLossOperands(*this, getKind(), getPrediction(), getLabels())))
    return failure();
  return verifyLossRows(*this, getKind(), getPrediction(), getLabels(), getWeights(), getCount(),
                        getSampleWeights(), getIgnoreIndex(), getLabelSmoothing(),
                        getClassWeights(), getPosWeight());
}

LogicalResult LossBackwardOp::verify() {
  if (failed(verifyLossOperands(*this, getKind(), getPrediction(), getLabels())) ||
      failed(verifyLossRows(*this, getKind(), getPrediction(), getLabels(), getWeights(),
                            getCount(), getSampleWeights(), getIgnoreIndex(), getLabelSmoothing(),
                            getClassWeights(), getPosWeight())))
    return failure();
  if (getType() != getPrediction().getType())
    return emitOpError() << "result " << getType() << " must match the prediction "
                         << getPrediction().getType();
  return success();
}

Value graphc::graph::getLossLogits(LossKind kind, Value prediction) {
  switch (kind) {
  case LossKind::sparse_categorical_crossentropy:
  case LossKind::categorical_crossentropy:
    // The log of a softmax (an imported LogSoftmax): log-probabilities, whose crossentropy is
    // PyTorch's NLLLoss, -log p[label], the crossentropy from the softmax's logits too.
    if (auto log = prediction.getDefiningOp<ActivationOp>();
        log && log.getKind() == ActivationKind::log)
      prediction = log.getInput();
    // A softmax over the class axis, the last (of [batch, classes] or [batch, ..., classes]).
    if (auto softmax = prediction.getDefiningOp<SoftmaxOp>();
        softmax && !softmax.getCausal() && tensorType(softmax.getInput()).getRank() >= 2 &&
        int64_t(softmax.getAxis()) == tensorType(softmax.getInput()).getRank() - 1)
      return softmax.getInput();
    return {};
  case LossKind::binary_crossentropy:
    if (auto sigmoid = prediction.getDefiningOp<SigmoidOp>())
      return sigmoid.getInput();
    return {};
  case LossKind::mse:
    return {};
  }
  return {};
}

namespace {
/// loss(softmax(x)) -> loss(x) {from_logits} for the categorical losses, and
/// loss(sigmoid(x)) -> loss(x) {from_logits} for binary crossentropy: the loss then works in
/// log space (log-softmax / log-sigmoid) and never takes the log of a rounded probability.
struct FoldActivationIntoLoss : OpRewritePattern<LossOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LossOp op, PatternRewriter &rewriter) const override {
    if (op.getFromLogits())
      return failure();
    Value logits = getLossLogits(op.getKind(), op.getPrediction());
    if (!logits)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getPredictionMutable().assign(logits);
      op.setFromLogits(true);
    });
    return success();
  }
};
} // namespace

void LossOp::getCanonicalizationPatterns(RewritePatternSet &patterns, MLIRContext *context) {
  patterns.add<FoldActivationIntoLoss>(context);
}

//===----------------------------------------------------------------------===//
// Micro-batching
//===----------------------------------------------------------------------===//

LogicalResult BatchSliceOp::verify() {
  auto in = tensorType(getInput()), out = tensorType(getResult());
  int64_t count = static_cast<int64_t>(getCount()), index = static_cast<int64_t>(getIndex());
  if (in.getRank() < 1 || count <= 0 || in.getDimSize(0) % count != 0)
    return emitOpError() << "cannot split " << in << " into " << count << " equal micro-batches";
  if (index < 0 || index >= count)
    return emitOpError() << "micro-batch index " << index << " is out of range for " << count
                         << " micro-batches";
  SmallVector<int64_t> shape(in.getShape());
  shape[0] /= count;
  if (out.getShape() != ArrayRef<int64_t>(shape) || out.getElementType() != in.getElementType())
    return emitOpError() << "result " << out << " is not one of " << count << " slices of " << in;
  return success();
}

//===----------------------------------------------------------------------===//
// Precision
//===----------------------------------------------------------------------===//

LogicalResult graphc::graph::verifySameFloatElementType(Operation *op) {
  Type common;
  auto check = [&](Type type, StringRef what, unsigned index) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() == 0 || !isa<FloatType>(tensor.getElementType()))
      return success();
    if (!common) {
      common = tensor.getElementType();
      return success();
    }
    if (tensor.getElementType() == common)
      return success();
    return op->emitOpError() << what << " " << index << " is " << tensor
                             << " but the op runs in " << common
                             << "; insert a graph.cast (mixed element types in one op)";
  };
  for (auto [i, type] : llvm::enumerate(op->getOperandTypes()))
    if (failed(check(type, "operand", i)))
      return failure();
  for (auto [i, type] : llvm::enumerate(op->getResultTypes()))
    if (failed(check(type, "result", i)))
      return failure();
  return success();
}

LogicalResult CastOp::verify() {
  auto in = tensorType(getInput()), out = tensorType(getResult());
  if (in.getShape() != out.getShape())
    return emitOpError() << "cannot cast " << in << " to " << out
                         << ": a cast changes the element type, not the shape";
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // Narrowing back what was just widened is exact: cast(cast(x : bf16 -> f32) -> bf16) = x.
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    Type original = inner.getInput().getType();
    unsigned originalBits = tensorType(inner.getInput()).getElementTypeBitWidth();
    unsigned wideBits = tensorType(inner.getResult()).getElementTypeBitWidth();
    if (original == getType() && wideBits > originalBits)
      return inner.getInput();
  }
  return {};
}

LogicalResult AllReduceOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  if (tensorType(getInput()).getRank() != 1)
    return emitOpError() << "expects a flat (rank-1) gradient bucket, got " << getInput().getType();
  if (getRanks() < 1)
    return emitOpError() << "needs at least 1 rank, got " << getRanks();
  if (getBucket() < 0)
    return emitOpError() << "bucket id must be non-negative, got " << getBucket();
  return success();
}

/// Elements of the flat concatenation of `values`.
static int64_t totalElements(ValueRange values) {
  int64_t total = 0;
  for (Value v : values)
    total += tensorType(v).getNumElements();
  return total;
}

SmallVector<int64_t> graphc::graph::layoutStarts(ValueRange values,
                                                 std::optional<ArrayRef<int64_t>> starts) {
  if (starts)
    return SmallVector<int64_t>(*starts);
  SmallVector<int64_t> packed;
  int64_t next = 0;
  for (Value v : values) {
    packed.push_back(next);
    next += cast<RankedTensorType>(v.getType()).getNumElements();
  }
  return packed;
}

/// The elements of the flat layout of `values`: their total, or with `starts` (each value's
/// first element, ascending, without overlaps) the end of the last; fails with a diagnostic on
/// bad starts.
static FailureOr<int64_t> layoutElements(Operation *op, ValueRange values,
                                         std::optional<ArrayRef<int64_t>> starts) {
  if (!starts)
    return totalElements(values);
  if (starts->size() != values.size())
    return op->emitOpError() << "has " << starts->size() << " starts for " << values.size()
                             << " tensors",
           failure();
  int64_t end = 0;
  for (auto [v, start] : llvm::zip(values, *starts)) {
    if (start < end)
      return op->emitOpError() << "start " << start << " overlaps the tensor before it (which "
                               << "ends at " << end << ")",
             failure();
    end = start + tensorType(v).getNumElements();
  }
  return end;
}

/// A shard of `total` elements over `ranks` ranks: ceil(total / ranks) elements.
static LogicalResult verifyShard(Operation *op, int64_t total, int64_t ranks, Type shard) {
  if (ranks < 1)
    return op->emitOpError() << "needs at least 1 rank, got " << ranks;
  auto type = cast<RankedTensorType>(shard);
  int64_t expected = (total + ranks - 1) / ranks;
  if (type.getRank() != 1 || type.getNumElements() != expected)
    return op->emitOpError() << "shard " << shard << " of " << total << " elements over "
                             << ranks << " ranks must be tensor<" << expected << "xf32>";
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  auto in = tensorType(getInput());
  if (in.getRank() != 1)
    return emitOpError() << "expects a flat (rank-1) gradient bucket, got " << in;
  if (getRanks() >= 1 && in.getNumElements() % getRanks() != 0)
    return emitOpError() << "bucket of " << in.getNumElements() << " elements does not split "
                         << "into " << getRanks() << " equal shards (pad it)";
  return verifyShard(*this, in.getNumElements(), getRanks(), getResult().getType());
}

LogicalResult RankShardOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  FailureOr<int64_t> total = layoutElements(*this, getInputs(), getStarts());
  if (failed(total))
    return failure();
  return verifyShard(*this, *total, getRanks(), getResult().getType());
}

LogicalResult AllGatherIntoOp::verify() {
  if (failed(requireStatic(*this)))
    return failure();
  if (getParams().empty() || getParams().size() != getNewParams().size())
    return emitOpError() << "needs one result per parameter, got " << getParams().size()
                         << " parameters and " << getNewParams().size() << " results";
  for (auto [param, result] : llvm::zip(getParams(), getNewParams()))
    if (param.getType() != result.getType())
      return emitOpError() << "result " << result.getType() << " differs from its parameter "
                           << param.getType();
  FailureOr<int64_t> total = layoutElements(*this, getParams(), getStarts());
  if (failed(total))
    return failure();
  return verifyShard(*this, *total, getRanks(), getShard().getType());
}
