// graphc-insert-casts: mixed precision in the spirit of torch.autocast.
//
// One forward walk over the function (O(ops)) decides each op's precision from three lists:
// dense, matmul, conv2d and the transposed convolution (conv2d_backward_data) run in 16 bit;
// ops whose numerics do not care follow their inputs; batch_norm keeps its activation's type
// but f32 parameters and statistics; everything else (softmax, losses, updates) runs in f32.
// Casts are inserted on operands only, memoized per (value, type), so a value read by several
// 16-bit ops is cast once; results change type in place, and users visited later adapt to
// them. Parameters keep their f32 type (master weights): the cast that feeds a 16-bit op is
// differentiated by graphc-build-train-step into an f32 gradient.
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

namespace graphc {
#define GEN_PASS_DEF_INSERTCASTS
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

namespace {

enum class Policy { Low, Follow, Normalize, Factor, F32 };

/// The length of the sums a dense or batch_matmul computes (its contraction), or 0 for other ops.
int64_t contractionLength(Operation *op) {
  if (auto dense = dyn_cast<DenseOp>(op))
    return cast<RankedTensorType>(dense.getInput().getType()).getShape().back();
  if (auto bmm = dyn_cast<BatchMatmulOp>(op)) {
    auto lhs = cast<RankedTensorType>(bmm.getLhs().getType()).getShape();
    return bmm.getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
  }
  return 0;
}

Policy policyOf(Operation *op) {
  // A dense or batch_matmul with nothing to sum (a contraction of 1) is an elementwise product
  // or a copy that the importer wrote as one: a tensor times a per-row gate (x / norm), a
  // broadcast along an axis (a product with ones). It follows its operands' type, as the
  // elementwise op it stands for does under torch.autocast, rather than rounding an f32 tensor
  // to 16 bits where no tensor core helps.
  if (contractionLength(op) == 1)
    return Policy::Follow;
  // conv2d_backward_data in a forward function is a transposed convolution.
  if (isa<DenseOp, MatmulOp, BatchMatmulOp, Conv2dOp, Conv2dBackwardDataOp>(op))
    return Policy::Low;
  if (isa<BatchNormOp, LayerNormOp, RmsNormOp>(op))
    return Policy::Normalize;
  if (isa<BroadcastMulOp, RotaryOp>(op))
    return Policy::Factor;
  // exp, log and pow stay in float32, as torch.autocast keeps them (their range and the
  // reductions they feed, an L2 norm's sum of squares, would lose the most in 16 bits).
  if (auto activation = dyn_cast<ActivationOp>(op);
      activation &&
      (activation.getKind() == ActivationKind::exp || activation.getKind() == ActivationKind::log ||
       activation.getKind() == ActivationKind::pow))
    return Policy::F32;
  if (isa<ReluOp, SigmoidOp, TanhOp, ClipOp, MaxPool2dOp, AvgPool2dOp, DropoutOp, ReshapeOp,
          ConcatOp, SliceOp, AddOp, ScaleOp, TransposeOp, CastOp, MulOp, ActivationOp>(op))
    return Policy::Follow;
  return Policy::F32;
}

/// A floating-point tensor that carries data (not the 0-d step counter or a loss).
bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() > 0 && isa<FloatType>(tensor.getElementType());
}

Type withElement(Type type, Type element) {
  return cast<RankedTensorType>(type).clone(element);
}

struct InsertCastsPass : graphc::impl::InsertCastsBase<InsertCastsPass> {
  using InsertCastsBase::InsertCastsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    OpBuilder b(func.getContext());
    Type low;
    if (precision == "bf16")
      low = b.getBF16Type();
    else if (precision == "f16" || precision == "fp16")
      low = b.getF16Type();
    else {
      func.emitError() << "graphc-insert-casts: unknown precision '" << precision
                       << "'; expected bf16 or f16";
      return signalPassFailure();
    }
    Type f32 = b.getF32Type();
    llvm::DenseMap<std::pair<Value, Type>, Value> casts;
    // `v` as element type `element`, casting it once right after its definition.
    auto castTo = [&](Value v, Type element) -> Value {
      auto type = cast<RankedTensorType>(v.getType());
      if (type.getElementType() == element)
        return v;
      Value &cached = casts[{v, element}];
      if (cached)
        return cached;
      OpBuilder::InsertionGuard guard(b);
      if (auto arg = dyn_cast<BlockArgument>(v))
        b.setInsertionPointToStart(arg.getOwner());
      else
        b.setInsertionPointAfter(v.getDefiningOp());
      cached = b.create<CastOp>(v.getLoc(), type.clone(element), v);
      return cached;
    };
    // Casts the float tensor operands of `op` from `first` on.
    auto castOperands = [&](Operation *op, Type element, unsigned first = 0) {
      for (OpOperand &operand : llvm::drop_begin(op->getOpOperands(), first))
        if (isFloatTensor(operand.get().getType()))
          operand.set(castTo(operand.get(), element));
    };
    auto setResultElements = [&](Operation *op, Type element) {
      for (Value result : op->getResults())
        if (isFloatTensor(result.getType()))
          result.setType(withElement(result.getType(), element));
    };

    Block &body = func.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (isa<CastOp>(op))
        continue; // casts this pass inserted, or the user's own
      if (isa<func::ReturnOp>(op)) {
        castOperands(&op, f32);
        continue;
      }
      switch (policyOf(&op)) {
      case Policy::Low:
        castOperands(&op, low);
        setResultElements(&op, low);
        break;
      case Policy::Follow: {
        Type common;
        bool mixed = false;
        for (Value operand : op.getOperands())
          if (isFloatTensor(operand.getType())) {
            Type element = cast<RankedTensorType>(operand.getType()).getElementType();
            mixed |= common && common != element;
            common = common ? common : element;
          }
        if (!common)
          break;
        if (mixed) {
          castOperands(&op, f32);
          common = f32;
        }
        setResultElements(&op, common);
        break;
      }
      case Policy::Normalize: {
        // batch_norm, layer_norm and rms_norm read and write their activation in whatever type it
        // comes in, and keep their scale, bias and statistics f32: the kernel computes the
        // statistics in f32 (cuDNN's mixed-precision batch norm does the same), and no f32 copy of
        // the activation has to stay alive for the backward pass.
        castOperands(&op, f32, /*first=*/1);
        op.getResult(0).setType(op.getOperand(0).getType());
        break;
      }
      case Policy::Factor: {
        // broadcast_mul's factor and rotary's tables (a per-feature scale, cos/sin) take the
        // activation's type, as Hugging Face's cos.to(q.dtype): a 16-bit activation is not widened,
        // and the factor is small.
        Type element = cast<RankedTensorType>(op.getOperand(0).getType()).getElementType();
        castOperands(&op, element, /*first=*/1);
        op.getResult(0).setType(op.getOperand(0).getType());
        break;
      }
      case Policy::F32:
        castOperands(&op, f32);
        break;
      }
    }
    // The function's signature: f32 arguments and (after the return's casts) f32 results.
    func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                   body.getTerminator()->getOperandTypes()));
  }
};

} // namespace
