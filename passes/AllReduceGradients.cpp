// graphc-all-reduce-gradients: data parallelism's one change to the training step. Each rank's
// gradients, bucketed in completion order, are averaged over the ranks by graph.all_reduce
// before any optimizer update reads them (see Passes.td for the IR before and after).
//
// Buckets are contiguous flat tensors (a reshape view of each gradient, one concat), so the
// collective works on one planned buffer in place; each update then reads its slice. Greedy
// bucketing by completion order is PyTorch DDP's (Li et al., "PyTorch Distributed", VLDB 2020):
// the first bucket's reduction starts while the rest of the backward pass still runs.
// O(ops + gradients).
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

namespace graphc {
#define GEN_PASS_DEF_ALLREDUCEGRADIENTS
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

namespace {

/// `<gradient name>.<suffix>` for the ops a bucket adds, so plan dumps stay readable.
Location derivedLoc(Value value, const llvm::Twine &suffix) {
  MLIRContext *ctx = value.getContext();
  std::string base = "grad";
  if (Operation *def = value.getDefiningOp())
    if (auto name = dyn_cast<NameLoc>(def->getLoc()))
      base = name.getName().str();
  return NameLoc::get(StringAttr::get(ctx, base + "." + suffix.str()), value.getLoc());
}

struct AllReduceGradientsPass
    : graphc::impl::AllReduceGradientsBase<AllReduceGradientsPass> {
  using AllReduceGradientsBase::AllReduceGradientsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (ranks < 0 || bucketBytes < 1) {
      func.emitError() << "graphc-all-reduce-gradients: ranks must be non-negative and "
                          "bucket-bytes positive";
      return signalPassFailure();
    }
    if (ranks == 0)
      return;
    Block &body = func.getBody().front();
    llvm::DenseMap<Operation *, int64_t> position;
    int64_t index = 0;
    for (Operation &op : body)
      position[&op] = index++;

    // The gradient each update reads, in the order the gradients are completed.
    struct Reduced {
      Value grad;
      Operation *update;
    };
    SmallVector<Reduced> gradients;
    for (Operation &op : body) {
      Value grad = llvm::TypeSwitch<Operation *, Value>(&op)
                       .Case([](SgdUpdateOp u) { return u.getGrad(); })
                       .Case([](MomentumUpdateOp u) { return u.getGrad(); })
                       .Case([](AdamUpdateOp u) { return u.getGrad(); })
                       .Default([](Operation *) { return Value(); });
      if (!grad)
        continue;
      if (!grad.getDefiningOp() || grad.getDefiningOp()->getBlock() != &body) {
        op.emitError() << "graphc-all-reduce-gradients: the gradient of this update is not "
                          "computed in the step";
        return signalPassFailure();
      }
      gradients.push_back({grad, &op});
    }
    if (gradients.empty())
      return;
    llvm::stable_sort(gradients, [&](const Reduced &a, const Reduced &b) {
      return position[a.grad.getDefiningOp()] < position[b.grad.getDefiningOp()];
    });

    // Greedy buckets: close one when the next gradient would push it past bucket-bytes.
    SmallVector<SmallVector<Reduced>> buckets(1);
    uint64_t bytes = 0;
    for (const Reduced &g : gradients) {
      uint64_t size = uint64_t(cast<RankedTensorType>(g.grad.getType()).getNumElements()) * 4;
      if (!buckets.back().empty() && bytes + size > uint64_t(int64_t(bucketBytes))) {
        buckets.emplace_back();
        bytes = 0;
      }
      buckets.back().push_back(g);
      bytes += size;
    }

    OpBuilder b(func.getContext());
    Type f32 = b.getF32Type();
    for (auto [id, bucket] : llvm::enumerate(buckets)) {
      Operation *last = bucket.back().grad.getDefiningOp();
      b.setInsertionPointAfter(last);
      SmallPtrSet<Operation *, 8> packing;
      SmallVector<Value> flats;
      int64_t total = 0;
      for (const Reduced &g : bucket) {
        auto type = cast<RankedTensorType>(g.grad.getType());
        Value flat = g.grad;
        if (type.getRank() != 1) {
          auto view = b.create<ReshapeOp>(derivedLoc(g.grad, "flat"),
                                          RankedTensorType::get({type.getNumElements()}, f32),
                                          g.grad);
          packing.insert(view);
          flat = view;
        }
        flats.push_back(flat);
        total += type.getNumElements();
      }
      Location bucketLoc =
          NameLoc::get(b.getStringAttr("gradient_bucket" + std::to_string(id)), func.getLoc());
      Value packed = flats.front();
      if (flats.size() > 1) {
        auto concat = b.create<ConcatOp>(bucketLoc, RankedTensorType::get({total}, f32), flats,
                                         b.getI64IntegerAttr(0));
        packing.insert(concat);
        packed = concat;
      }
      auto reduce = b.create<AllReduceOp>(
          NameLoc::get(b.getStringAttr("gradient_bucket" + std::to_string(id) + ".all_reduce"),
                       func.getLoc()),
          packed.getType(), packed, b.getI64IntegerAttr(int64_t(id)),
          b.getI64IntegerAttr(int64_t(ranks)));
      packing.insert(reduce);
      int64_t offset = 0;
      SmallVector<Operation *> unpacked;
      for (const Reduced &g : bucket) {
        auto type = cast<RankedTensorType>(g.grad.getType());
        Value averaged = reduce;
        if (bucket.size() > 1) {
          auto slice = b.create<SliceOp>(derivedLoc(g.grad, "averaged"),
                                         RankedTensorType::get({type.getNumElements()}, f32),
                                         reduce, b.getI64IntegerAttr(0),
                                         b.getI64IntegerAttr(offset));
          averaged = slice;
        }
        if (type.getRank() != 1)
          averaged = b.create<ReshapeOp>(derivedLoc(g.grad, "averaged"), type, averaged);
        offset += type.getNumElements();
        Value(g.grad).replaceUsesWithIf(averaged, [&](OpOperand &use) {
          return !packing.contains(use.getOwner());
        });
      }
      // Updates (and anything else) that ran before the bucket was complete now follow it.
      Operation *insertAfter = b.getInsertionBlock()->getOperations().empty()
                                   ? nullptr
                                   : &*std::prev(b.getInsertionPoint());
      for (const Reduced &g : bucket)
        if (g.update->isBeforeInBlock(insertAfter)) {
          g.update->moveAfter(insertAfter);
          insertAfter = g.update;
        }
    }
    func->setAttr("graph.data_parallel_ranks", b.getI64IntegerAttr(int64_t(ranks)));
    func->setAttr("graph.gradient_buckets", b.getI64IntegerAttr(int64_t(buckets.size())));
  }
};

} // namespace
