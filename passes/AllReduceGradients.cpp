// graphc-all-reduce-gradients: data parallelism's one change to the training step. Each rank's
// gradients, bucketed in completion order, are averaged over the ranks by graph.all_reduce
// before any optimizer update reads them (see Passes.td for the IR before and after).
//
// Buckets are contiguous flat tensors (a reshape view of each gradient, one concat), so the
// collective works on one planned buffer in place; each update then reads its slice. Greedy
// bucketing by completion order is PyTorch DDP's (Li et al., "PyTorch Distributed", VLDB 2020):
// the first bucket's reduction starts while the rest of the backward pass still runs.
// O(ops + gradients).
#include "passes/Liveness.h"
#include "passes/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"
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

/// A gradient and the optimizer update that reads it.
struct Reduced {
  Value grad;
  Operation *update;
};

/// The signature changes of optimizer-state sharding, applied once every bucket is rewritten:
/// the per-parameter state arguments (and the results returning them) go, per-bucket shard
/// arguments and results come.
struct ZeroSurgery {
  llvm::BitVector deadArgs;
  llvm::SmallSetVector<unsigned, 8> deadReturns; // terminator operand indices
  SmallVector<std::pair<Value, Value>> newStates; // (shard argument, its update)
  int64_t shardedBuckets = 0;
  /// fp16 loss scaling: per sharded bucket, 0 when this rank's averaged shard is finite, NaN
  /// otherwise (see overflowProbe).
  SmallVector<Value> overflowProbes;

  void finish(func::FuncOp func) {
    if (shardedBuckets == 0)
      return;
    Operation *ret = func.getBody().front().getTerminator();
    OpBuilder b(func.getContext());
    // New results: each shard state, returned after the step like every optimizer state.
    for (auto [arg, updated] : newStates) {
      unsigned index = ret->getNumOperands();
      ret->insertOperands(index, updated);
      func.insertResult(index, updated.getType(), b.getDictionaryAttr({}));
      func.setResultAttr(index, kNameAttr,
                         func.getArgAttr(cast<BlockArgument>(arg).getArgNumber(), kNameAttr));
    }
    llvm::BitVector deadResults(ret->getNumOperands());
    for (unsigned index : deadReturns)
      deadResults.set(index);
    for (int index = int(ret->getNumOperands()) - 1; index >= 0; --index)
      if (deadResults.test(unsigned(index)))
        ret->eraseOperand(unsigned(index));
    func.eraseResults(deadResults);
    deadArgs.resize(func.getNumArguments());
    func.eraseArguments(deadArgs);
    // Results name the argument they update; re-derive the ties after the renumbering.
    for (unsigned r = 0; r < func.getNumResults(); ++r) {
      func.removeResultAttr(r, b.getStringAttr(kTiedArgAttr));
      auto name = func.getResultAttrOfType<StringAttr>(r, kNameAttr);
      for (unsigned a = 0; name && a < func.getNumArguments(); ++a)
        if (func.getArgAttr(a, kNameAttr) == name)
          func.setResultAttr(r, kTiedArgAttr, b.getI64IntegerAttr(a));
    }
  }
};

struct AllReduceGradientsPass
    : graphc::impl::AllReduceGradientsBase<AllReduceGradientsPass> {
  using AllReduceGradientsBase::AllReduceGradientsBase;

  /// Where each gradient of `bucket` begins in the bucket (in elements), and in `end` where the
  /// last one ends: one after the other, or with `views` (gradients planned inside the bucket,
  /// gradient-as-bucket-view) each at a multiple of the plan's alignment, so that kernels and
  /// libraries get the same alignment as for any planned buffer.
  SmallVector<int64_t> bucketLayout(ArrayRef<Reduced> bucket, bool views, int64_t &end) const {
    SmallVector<int64_t> starts;
    end = 0;
    for (auto [i, g] : llvm::enumerate(bucket)) {
      starts.push_back(end);
      end += cast<RankedTensorType>(g.grad.getType()).getNumElements();
      if (views && i + 1 < bucket.size())
        end = int64_t(llvm::alignTo(uint64_t(end), uint64_t(alignment) / 4));
    }
    return starts;
  }

  /// The parts of the bucket's concatenation, built at `b`'s insertion point: each gradient
  /// flattened (a reshape view, added to `packing`) and zeros in the gaps of `starts`, so that
  /// the average and the overflow check read zeros there.
  static SmallVector<Value> bucketParts(OpBuilder &b, ArrayRef<Reduced> bucket,
                                        ArrayRef<int64_t> starts,
                                        SmallPtrSetImpl<Operation *> &packing) {
    Type f32 = b.getF32Type();
    SmallVector<Value> parts;
    for (auto [i, g] : llvm::enumerate(bucket)) {
      auto type = cast<RankedTensorType>(g.grad.getType());
      Value flat = g.grad;
      if (type.getRank() != 1) {
        auto view =
            b.create<ReshapeOp>(derivedLoc(g.grad, "flat"),
                                RankedTensorType::get({type.getNumElements()}, f32), g.grad);
        packing.insert(view);
        flat = view;
      }
      parts.push_back(flat);
      int64_t end = starts[i] + type.getNumElements();
      if (i + 1 < bucket.size() && starts[i + 1] > end)
        parts.push_back(b.create<FillOp>(derivedLoc(g.grad, "bucket_gap"),
                                         RankedTensorType::get({starts[i + 1] - end}, f32),
                                         b.getF32FloatAttr(0.0f)));
    }
    return parts;
  }

  /// Whether the bucket's updates take fp16 loss scaling's apply flag.
  static bool scaledLoss(ArrayRef<Reduced> bucket) {
    return llvm::any_of(bucket, [](const Reduced &g) {
      return llvm::TypeSwitch<Operation *, bool>(g.update)
          .Case([](SgdUpdateOp u) { return bool(u.getApply()); })
          .Case([](MomentumUpdateOp u) { return bool(u.getApply()); })
          .Case([](AdamUpdateOp u) { return bool(u.getApply()); })
          .Default([](Operation *) { return false; });
    });
  }

  /// A one-element sum of `shard` * 0: exactly 0 when every element is finite, NaN when one
  /// is not (inf * 0 and NaN * 0 are NaN, and NaN survives the sum). Averaged over the ranks
  /// it stays 0 or NaN, so one element per bucket tells every rank whether any shard of any
  /// rank overflowed, where the shards themselves would take the whole bucket.
  static Value overflowProbe(OpBuilder &b, Location loc, Value shard) {
    auto type = cast<RankedTensorType>(shard.getType());
    Type f32 = type.getElementType();
    Value zeroed = b.create<ScaleOp>(loc, type, shard, b.getF32FloatAttr(0.0f));
    Value column =
        b.create<ReshapeOp>(loc, RankedTensorType::get({type.getNumElements(), 1}, f32), zeroed);
    return b.create<BiasGradOp>(loc, RankedTensorType::get({1}, f32), column,
                                b.getI64IntegerAttr(1));
  }

  /// ZeRO for one bucket: reduce-scatter the gradients, update this rank's shard of the
  /// parameters with this rank's shard of the optimizer state (new per-bucket arguments), and
  /// all-gather the updated shards back over the parameters.
  void shardBucket(func::FuncOp func, int64_t id, ArrayRef<Reduced> bucket, ZeroSurgery &zero) {
    OpBuilder b(func.getContext());
    Type f32 = b.getF32Type();
    Block &body = func.getBody().front();
    // With gradient-as-bucket-view the parameters' shard follows the bucket's layout
    // (rank_shard's and all_gather_into's `starts`), so that it lines up with the gradients'.
    bool views = gradientAsBucketView && bucket.size() > 1;
    int64_t w = ranks, total = 0;
    SmallVector<int64_t> starts = bucketLayout(bucket, views, total);
    int64_t shard = (total + w - 1) / w, padded = shard * w;
    std::string base = "gradient_bucket" + std::to_string(id);
    auto loc = [&](StringRef suffix) {
      return NameLoc::get(b.getStringAttr(base + suffix), func.getLoc());
    };

    // The shard arguments: one per optimizer state, named after the bucket.
    Operation *first = bucket.front().update;
    bool adam = isa<AdamUpdateOp>(first);
    auto shardType = RankedTensorType::get({shard}, f32);
    SmallVector<Value> states;
    static const char *const kAdamStates[] = {".m", ".v"}, *const kMomentumStates[] = {".velocity"};
    ArrayRef<const char *> suffixes = adam ? ArrayRef(kAdamStates) : ArrayRef(kMomentumStates);
    for (StringRef suffix : suffixes) {
      unsigned index = func.getNumArguments();
      func.insertArgument(index, shardType,
                          b.getDictionaryAttr({b.getNamedAttr(kKindAttr, b.getStringAttr("optimizer_state")),
                                               b.getNamedAttr(kNameAttr, b.getStringAttr("zero." + base + suffix.str()))}),
                          func.getLoc());
      states.push_back(func.getArgument(index));
    }

    // Pack after the last gradient, exactly as the all-reduce path does, plus zero padding.
    b.setInsertionPointAfter(bucket.back().grad.getDefiningOp());
    SmallPtrSet<Operation *, 8> packing;
    SmallVector<Value> flats = bucketParts(b, bucket, starts, packing);
    if (padded > total)
      flats.push_back(b.create<FillOp>(
          loc(".padding"), RankedTensorType::get({padded - total}, f32), b.getF32FloatAttr(0.0f)));
    Value packed = flats.front();
    if (flats.size() > 1) {
      auto concat = b.create<ConcatOp>(loc(""), RankedTensorType::get({padded}, f32), flats,
                                       b.getI64IntegerAttr(0));
      if (views)
        concat->setAttr(kBucketViewAttr, b.getUnitAttr());
      packing.insert(concat);
      packed = concat;
    }
    DenseI64ArrayAttr layout = views ? b.getDenseI64ArrayAttr(starts) : nullptr;
    Value gradShard = b.create<ReduceScatterOp>(loc(".reduce_scatter"), shardType, packed,
                                                b.getI64IntegerAttr(id), b.getI64IntegerAttr(w));
    if (scaledLoss(bucket)) {
      // With fp16 loss scaling every update waits for the overflow check, which follows the
      // last bucket; the shard, written in place at the bucket's start, would keep the whole
      // bucket alive until then. Its own copy lets the bucket die here, so each rank holds
      // 1/N of the gradients while it waits (ZeRO stage 2's saving, where it matters).
      gradShard = b.create<SliceOp>(loc(".shard"), shardType, gradShard, b.getI64IntegerAttr(0),
                                    b.getI64IntegerAttr(0));
      zero.overflowProbes.push_back(overflowProbe(b, loc(".overflow_probe"), gradShard));
    }
    SmallVector<Value> params;
    for (const Reduced &g : bucket)
      params.push_back(g.update->getOperand(0));
    auto paramShard =
        b.create<RankShardOp>(loc(".params"), shardType, params, b.getI64IntegerAttr(w), layout);
    // Every update of the bucket has the same hyper-parameters and apply flag (one optimizer).
    Value updatedShard;
    Location updateLoc = loc(".update");
    if (auto a = dyn_cast<AdamUpdateOp>(first)) {
      auto u = b.create<AdamUpdateOp>(updateLoc, shardType, shardType, shardType, paramShard,
                                      gradShard, states[0], states[1], a.getStep(), a.getApply(),
                                      a.getLrAttr(), a.getBeta1Attr(), a.getBeta2Attr(),
                                      a.getEpsilonAttr());
      updatedShard = u.getNewParam();
      zero.newStates.push_back({states[0], u.getNewM()});
      zero.newStates.push_back({states[1], u.getNewV()});
    } else {
      auto m = cast<MomentumUpdateOp>(first);
      auto u = b.create<MomentumUpdateOp>(updateLoc, shardType, shardType, paramShard, gradShard,
                                          states[0], m.getApply(), m.getLrAttr(),
                                          m.getMomentumAttr());
      updatedShard = u.getNewParam();
      zero.newStates.push_back({states[0], u.getNewVelocity()});
    }
    SmallVector<Type> paramTypes;
    for (Value p : params)
      paramTypes.push_back(p.getType());
    auto gather =
        b.create<AllGatherIntoOp>(loc(".all_gather"), paramTypes, updatedShard, params,
                                  b.getI64IntegerAttr(id), b.getI64IntegerAttr(w), layout);

    // The per-parameter updates go; their state arguments and returned states with them.
    Operation *ret = body.getTerminator();
    for (auto [i, g] : llvm::enumerate(bucket)) {
      Operation *old = g.update;
      old->getResult(0).replaceAllUsesWith(gather.getResult(i));
      for (unsigned r = 1; r < old->getNumResults(); ++r)
        for (OpOperand &use : old->getResult(r).getUses())
          if (use.getOwner() == ret)
            zero.deadReturns.insert(use.getOperandNumber());
      for (unsigned operand = 2; operand < old->getNumOperands(); ++operand)
        if (auto arg = dyn_cast<BlockArgument>(old->getOperand(operand));
            arg && arg.getOwner() == &body &&
            func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kKindAttr) &&
            func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kKindAttr).getValue() ==
                "optimizer_state") {
          zero.deadArgs.resize(func.getNumArguments());
          zero.deadArgs.set(arg.getArgNumber());
        }
      // Returned states of the old update stay referenced by the terminator until finish():
      // point them at a live value of the same role so the op can go now.
      for (unsigned r = 1; r < old->getNumResults(); ++r)
        old->getResult(r).replaceAllUsesWith(old->getOperand(r == 1 ? 2 : 3));
      old->erase();
    }
    ++zero.shardedBuckets;
  }

  /// fp16 loss scaling skips a step when any gradient overflowed, and every rank must skip the
  /// same steps: a rank whose own gradients are finite, applying an average that holds another
  /// rank's inf, would turn its weights to NaN. So graph.all_finite reads the averaged buckets
  /// (finite exactly when every rank's gradients were, up to the ldexp unscaling, which keeps
  /// inf and NaN) and, for sharded buckets, whose average no rank holds whole, the overflow
  /// probes averaged by one more all-reduce (bucket id `nextBucket`). The check then follows
  /// the last bucket, and the updates it gates move after it (a stable topological sort), as
  /// GradScaler's unscale and inf check run after DDP's all-reduce and before the step.
  void checkOverflowOnAveraged(func::FuncOp func, ArrayRef<Value> averagedBuckets,
                               ArrayRef<Value> probes, int64_t nextBucket) {
    Block &body = func.getBody().front();
    SmallVector<AllFiniteOp> checks(body.getOps<AllFiniteOp>());
    if (checks.empty())
      return;
    SmallVector<Value> inputs(averagedBuckets.begin(), averagedBuckets.end());
    if (!probes.empty()) {
      OpBuilder b(checks.front());
      Location loc = NameLoc::get(b.getStringAttr("overflow_probes"), func.getLoc());
      Value packed = probes.front();
      if (probes.size() > 1)
        packed =
            b.create<ConcatOp>(loc, RankedTensorType::get({int64_t(probes.size())}, b.getF32Type()),
                               probes, b.getI64IntegerAttr(0));
      inputs.push_back(b.create<AllReduceOp>(
          NameLoc::get(b.getStringAttr("overflow_probes.all_reduce"), func.getLoc()),
          packed.getType(), packed, b.getI64IntegerAttr(nextBucket),
          b.getI64IntegerAttr(int64_t(ranks))));
    }
    for (AllFiniteOp check : checks)
      check->setOperands(inputs);
    sortTopologically(&body);
  }

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
    ZeroSurgery zero;
    SmallVector<Value> averagedBuckets; // the all-reduced buckets, for the overflow check
    for (auto [id, bucket] : llvm::enumerate(buckets)) {
      if (shardOptimizerState && llvm::all_of(bucket, [](const Reduced &g) {
            return isa<MomentumUpdateOp, AdamUpdateOp>(g.update);
          })) {
        shardBucket(func, int64_t(id), bucket, zero);
        continue;
      }
      Operation *last = bucket.back().grad.getDefiningOp();
      b.setInsertionPointAfter(last);
      SmallPtrSet<Operation *, 8> packing;
      bool views = gradientAsBucketView && bucket.size() > 1;
      int64_t total = 0;
      SmallVector<int64_t> startOf = bucketLayout(bucket, views, total);
      SmallVector<Value> flats = bucketParts(b, bucket, startOf, packing);
      Location bucketLoc =
          NameLoc::get(b.getStringAttr("gradient_bucket" + std::to_string(id)), func.getLoc());
      Value packed = flats.front();
      if (flats.size() > 1) {
        auto concat = b.create<ConcatOp>(bucketLoc, RankedTensorType::get({total}, f32), flats,
                                         b.getI64IntegerAttr(0));
        if (views)
          concat->setAttr(kBucketViewAttr, b.getUnitAttr());
        packing.insert(concat);
        packed = concat;
      }
      auto reduce = b.create<AllReduceOp>(
          NameLoc::get(b.getStringAttr("gradient_bucket" + std::to_string(id) + ".all_reduce"),
                       func.getLoc()),
          packed.getType(), packed, b.getI64IntegerAttr(int64_t(id)),
          b.getI64IntegerAttr(int64_t(ranks)));
      packing.insert(reduce);
      averagedBuckets.push_back(reduce);
      SmallVector<Operation *> unpacked;
      for (auto [i, g] : llvm::enumerate(bucket)) {
        auto type = cast<RankedTensorType>(g.grad.getType());
        Value averaged = reduce;
        if (bucket.size() > 1) {
          auto slice = b.create<SliceOp>(
              derivedLoc(g.grad, "averaged"), RankedTensorType::get({type.getNumElements()}, f32),
              reduce, b.getI64IntegerAttr(0), b.getI64IntegerAttr(startOf[i]));
          if (views)
            slice->setAttr(kBucketViewAttr, b.getUnitAttr());
          averaged = slice;
        }
        if (type.getRank() != 1)
          averaged = b.create<ReshapeOp>(derivedLoc(g.grad, "averaged"), type, averaged);
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
    checkOverflowOnAveraged(func, averagedBuckets, zero.overflowProbes, int64_t(buckets.size()));
    zero.finish(func);
    func->setAttr("graph.data_parallel_ranks", b.getI64IntegerAttr(int64_t(ranks)));
    if (zero.shardedBuckets > 0)
      func->setAttr("graph.sharded_buckets", b.getI64IntegerAttr(zero.shardedBuckets));
    func->setAttr("graph.gradient_buckets", b.getI64IntegerAttr(int64_t(buckets.size())));
  }
};

} // namespace
