// The batch-location analysis of BatchLocation.h: a post-order walk over the producers of a
// value (an explicit stack, so that a deep network does not recurse), each op mapping its
// operands' locations to its result's by the rules below. Ops it does not model give Unknown,
// and the importer then keeps to its older rule (the batch as the leading axis).
#include "importers/onnx/BatchLocation.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using namespace graphc::graph;

namespace graphc::onnx_import {

namespace {

llvm::ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

} // namespace

int64_t checkedProduct(llvm::ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(p, d, &p))
      return -1;
  return p;
}

int64_t batchStride(llvm::ArrayRef<int64_t> shape, const BatchLocation &location) {
  int64_t later = checkedProduct(shape.drop_front(location.axis + 1)), stride = 0;
  return later < 0 || __builtin_mul_overflow(location.inner, later, &stride) ? -1 : stride;
}

BatchLocation locateBatchByStride(llvm::ArrayRef<int64_t> shape, int64_t stride, int64_t batch,
                                  bool *guessed) {
  // Axis c holds the batch when its later axes span a divisor of the stride (inner = stride /
  // that span) and `batch` steps of `inner` fit a whole number of times in it. For a batch
  // above 1 at most one axis does (the batch's block of stride x batch elements must lie within
  // one axis's span). A batch of 1 moves nothing, and several axes may do ([T, H, D] is
  // [T, 1 x H, D] or [T x 1, H, D]): which one the model meant is unknowable, so Unknown, or
  // with `guessed` the one the batch fills most (the least outer, then the least inner, then
  // the first; a [T, 1 x H, D] merge, a [T, 1, D] axis of its own, [1, 1, 1, S]'s axis 0), not
  // the last axis unless nothing else fits, and *guessed set.
  BatchLocation found = BatchLocation::unknown(), best = BatchLocation::unknown();
  int64_t bestOuter = 0, candidates = 0;
  if (stride <= 0 || batch <= 0)
    return found;
  int64_t later = 1;
  for (int64_t c = int64_t(shape.size()) - 1; c >= 0; --c) {
    if (later <= 0 || later > stride) // (0: an empty shape; beyond the stride: no later axis fits)
      break;
    int64_t span = 0;
    const int64_t inner = stride / later;
    const bool fits = stride % later == 0 && !__builtin_mul_overflow(batch, inner, &span) &&
                      shape[c] >= span && shape[c] % span == 0;
    if (__builtin_mul_overflow(later, shape[c], &later))
      later = -1;
    if (!fits)
      continue;
    ++candidates;
    found = BatchLocation::at(c, inner);
    const int64_t outer = shape[c] / span;
    // (The last axis only when nothing else fits: it is the features' axis, which a product
    // or a normalization reads whole.)
    const bool last = c == int64_t(shape.size()) - 1,
               bestLast = best.isAt() && best.axis == int64_t(shape.size()) - 1;
    if (!best.isAt() || (bestLast && !last) ||
        (last == bestLast && (outer < bestOuter || (outer == bestOuter && inner <= best.inner)))) {
      best = found;
      bestOuter = outer;
    }
  }
  if (candidates <= 1)
    return found;
  if (!guessed)
    return BatchLocation::unknown();
  *guessed = true;
  return best;
}

void BatchLocator::remember(Value value, BatchLocation location) { cache[value] = location; }

BatchLocation BatchLocator::locate(Value value) {
  llvm::SmallVector<Value> stack = {value};
  while (!stack.empty()) {
    Value v = stack.back();
    if (cache.count(v)) {
      stack.pop_back();
      continue;
    }
    bool ready = true;
    if (Operation *op = v.getDefiningOp())
      for (Value operand : op->getOperands())
        if (!cache.count(operand)) {
          stack.push_back(operand);
          ready = false;
        }
    if (!ready)
      continue;
    stack.pop_back();
    cache[v] = compute(v);
  }
  return cache.lookup(value);
}

BatchLocation BatchLocator::compute(Value value) {
  using Kind = BatchLocation::Kind;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    auto kind =
        func ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kKindAttr) : StringAttr();
    // (A scalar input is the step counter that dropout masks are drawn from: no batch.)
    if (kind && kind.getValue() == "input" && !shapeOf(value).empty())
      return shapeOf(value)[0] == batch ? BatchLocation::at(0, 1) : BatchLocation::unknown();
    return BatchLocation::free();
  }
  Operation *op = value.getDefiningOp();
  auto at = [&](Value v) { return cache.lookup(v); };
  auto allFree = [&] {
    return llvm::all_of(op->getOperands(), [&](Value v) { return at(v).kind == Kind::Free; });
  };
  if (isa<FillOp>(op) || allFree())
    return BatchLocation::free();
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    BatchLocation in = at(reshape.getInput());
    if (!in.isAt())
      return in;
    return locateBatchByStride(shapeOf(value), batchStride(shapeOf(reshape.getInput()), in), batch);
  }
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    BatchLocation in = at(transpose.getInput());
    if (!in.isAt())
      return in;
    for (auto [to, from] : llvm::enumerate(transpose.getPerm()))
      if (from == in.axis)
        return BatchLocation::at(int64_t(to), in.inner);
    return BatchLocation::unknown();
  }
  if (auto dense = dyn_cast<DenseOp>(op)) { // rows [N, K] -> [N, M]: the batch in the rows
    BatchLocation in = at(dense.getInput());
    bool weightsFree = llvm::all_of(op->getOperands().drop_front(),
                                    [&](Value v) { return at(v).kind == Kind::Free; });
    return in.isAt() && in.axis == 0 && weightsFree ? in : BatchLocation::unknown();
  }
  if (auto product = dyn_cast<BatchMatmulOp>(op)) {
    // [B, M, K] x [B, K, N] -> [B, M, N]: the batch in B (either operand), or in the lhs's M
    // or the rhs's N when the other operand has none.
    BatchLocation l = at(product.getLhs()), r = at(product.getRhs());
    if (l.kind == Kind::Unknown || r.kind == Kind::Unknown)
      return BatchLocation::unknown();
    if (l.isAt() && r.isAt())
      return l.axis == 0 && r.axis == 0 && l.inner == r.inner ? l : BatchLocation::unknown();
    BatchLocation in = l.isAt() ? l : r;
    if (in.axis == 0)
      return in;
    // The lhs's rows (axis 1, or 2 transposed) are the result's axis 1, the rhs's columns
    // (axis 2, or 1 transposed) its axis 2; a batch in the contracted axis is summed away.
    if (l.isAt())
      return in.axis == (product.getTransposeLhs() ? 2 : 1) ? BatchLocation::at(1, in.inner)
                                                            : BatchLocation::unknown();
    return in.axis == (product.getTransposeRhs() ? 1 : 2) ? BatchLocation::at(2, in.inner)
                                                          : BatchLocation::unknown();
  }
  if (auto embedding = dyn_cast<EmbeddingOp>(op)) { // ids [...] -> [..., D]
    BatchLocation ids = at(embedding.getIndices());
    return ids.isAt() && at(embedding.getTable()).kind == Kind::Free ? ids
                                                                     : BatchLocation::unknown();
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    BatchLocation in = at(slice.getInput());
    return in.isAt() && int64_t(slice.getAxis()) != in.axis ? in : BatchLocation::unknown();
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    // Along another axis: the operands with the batch must agree where it is, and a
    // batch-free one must have the same extent there (a class token expanded to the batch,
    // concatenated with the patches).
    std::optional<BatchLocation> common;
    for (Value input : concat.getInputs()) {
      BatchLocation in = at(input);
      if (in.kind == Kind::Unknown ||
          (in.isAt() && common && (common->axis != in.axis || common->inner != in.inner)))
        return BatchLocation::unknown();
      if (in.isAt())
        common = in;
    }
    if (!common || int64_t(concat.getAxis()) == common->axis)
      return BatchLocation::unknown();
    for (Value input : concat.getInputs())
      if (shapeOf(input)[common->axis] != shapeOf(value)[common->axis])
        return BatchLocation::unknown();
    return *common;
  }
  // A softmax or a normalization over the axis that holds the batch mixes the samples.
  if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
    BatchLocation in = at(softmax.getInput());
    if (in.isAt() && int64_t(softmax.getAxis()) == in.axis)
      return BatchLocation::unknown();
  }
  if (isa<LayerNormOp, RmsNormOp>(op)) {
    BatchLocation in = at(op->getOperand(0));
    if (in.isAt() && in.axis == int64_t(shapeOf(op->getOperand(0)).size()) - 1)
      return BatchLocation::unknown();
  }
  // Ops that keep the leading axis (convolutions and pools over NCHW, normalizations) or the
  // shape (elementwise ops, softmax, dropout, casts): the located operands must agree, and
  // none be Unknown.
  const bool keepsLeadingAxis =
      isa<Conv2dOp, Conv2dBackwardDataOp, MaxPool2dOp, AvgPool2dOp, BatchNormOp, BatchNormApplyOp>(
          op);
  std::optional<BatchLocation> common;
  for (Value operand : op->getOperands()) {
    BatchLocation in = at(operand);
    if (in.kind == Kind::Unknown)
      return BatchLocation::unknown();
    if (!in.isAt())
      continue;
    const bool sameShape = shapeOf(operand) == shapeOf(value);
    const bool leading = keepsLeadingAxis && in.axis == 0 && !shapeOf(value).empty() &&
                         shapeOf(value)[0] == shapeOf(operand)[0];
    if (!sameShape && !leading)
      return BatchLocation::unknown();
    if (common && (common->axis != in.axis || common->inner != in.inner))
      return BatchLocation::unknown();
    common = in;
  }
  return common ? *common : BatchLocation::unknown();
}

} // namespace graphc::onnx_import
