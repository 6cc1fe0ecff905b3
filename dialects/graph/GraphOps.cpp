// Verifiers, folders and canonicalization patterns of the graph dialect's ops. Verifier
// messages print the offending types so that a bad import points at its shapes.
#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace graphc::graph;

#include "dialects/graph/GraphEnums.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.cpp.inc"

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
                                                  ArrayRef<int64_t> dilations) {
  if (input.size() != 4 || filter.size() != 4) {
    op->emitOpError() << "expects a rank-4 NCHW input and OIHW filter, got ranks "
                      << input.size() << " and " << filter.size();
    return failure();
  }
  if (input[1] != filter[1]) {
    op->emitOpError() << "input channels " << input[1] << " do not match filter channels "
                      << filter[1] << " (filter is OIHW)";
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
                                 getDilations());
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
                                 getDilations());
  if (failed(shape))
    return failure();
  return expectShape(*this, "grad", getGrad().getType(), *shape);
}

LogicalResult Conv2dBackwardFilterOp::verify() {
  if (failed(requireStatic(*this)) ||
      failed(verifyWindowAttrs(*this, getStrides(), getPadding(), getDilations())))
    return failure();
  auto shape = conv2dOutputShape(*this, tensorType(getInput()).getShape(),
                                 tensorType(getResult()).getShape(), getStrides(), getPadding(),
                                 getDilations());
  if (failed(shape))
    return failure();
  return expectShape(*this, "grad", getGrad().getType(), *shape);
}

LogicalResult MaxPool2dOp::verify() {
  SmallVector<int64_t> ones = {1, 1};
  if (failed(requireStatic(*this)) ||
      failed(verifyWindowAttrs(*this, getStrides(), getPadding(), ones)))
    return failure();
  auto shape = pool2dOutputShape(*this, tensorType(getInput()).getShape(), getKernel(),
                                 getStrides(), getPadding());
  if (failed(shape))
    return failure();
  return expectShape(*this, "result", getType(), *shape);
}

LogicalResult MaxPool2dBackwardOp::verify() {
  SmallVector<int64_t> ones = {1, 1};
  if (failed(requireStatic(*this)) ||
      failed(verifyWindowAttrs(*this, getStrides(), getPadding(), ones)))
    return failure();
  auto shape = pool2dOutputShape(*this, tensorType(getInput()).getShape(), getKernel(),
                                 getStrides(), getPadding());
  if (failed(shape) || failed(expectShape(*this, "grad", getGrad().getType(), *shape)))
    return failure();
  return expectShape(*this, "result", getType(), tensorType(getInput()).getShape());
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
// Activations
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  int64_t rank = tensorType(getInput()).getRank();
  int64_t axis = static_cast<int64_t>(getAxis()); // I64Attr's getter is unsigned
  if (axis < 0 || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for " << getInput().getType();
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
    if (pred.getRank() != 2)
      return op->emitOpError() << "sparse_categorical_crossentropy expects [batch, classes] "
                                  "predictions, got "
                               << pred;
    if (!lab.getElementType().isInteger(64) || lab.getRank() != 1 ||
        lab.getDimSize(0) != pred.getDimSize(0))
      return op->emitOpError() << "sparse_categorical_crossentropy expects int64 labels of shape ["
                               << pred.getDimSize(0) << "], got " << lab;
    return success();
  }
  if (!lab.getElementType().isF32() || lab.getShape() != pred.getShape())
    return op->emitOpError() << stringifyLossKind(kind)
                             << " expects f32 labels shaped like the prediction " << pred
                             << ", got " << lab;
  return success();
}

LogicalResult LossOp::verify() {
  return verifyLossOperands(*this, getKind(), getPrediction(), getLabels());
}

LogicalResult LossBackwardOp::verify() {
  if (failed(verifyLossOperands(*this, getKind(), getPrediction(), getLabels())))
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
    if (auto softmax = prediction.getDefiningOp<SoftmaxOp>();
        softmax && tensorType(softmax.getInput()).getRank() == 2 && softmax.getAxis() == 1)
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
