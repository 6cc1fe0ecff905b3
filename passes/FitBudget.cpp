// graphc-fit-budget: rematerialization until the training step fits a byte budget.
//
// Forward activations that the backward pass reads keep their bytes alive across the whole
// step; recomputing one right before its first backward reader frees them in between, at the
// price of running its op twice. Candidates are the forward values read by the backward pass
// whose defining op is pure and writes nothing in place (so side effects such as running
// statistics are never applied twice); a candidate is recomputed together with the reshape
// views through which the backward pass reads it. Candidates are tried in a fixed order,
// most bytes saved per recomputed FLOP first (cost model, passes/CostModel.h); a remat is kept
// only if it lowers the liveness lower bound, otherwise undone. After each kept remat the
// step is planned (heuristic placement) and the search stops at the first plan within the
// budget. Because the keep/undo decisions do not depend on the budget, a smaller budget only
// ever goes further along the same sequence, so the planned peak never increases when the
// budget decreases. O(c * n log n) for c candidates and n buffers.
#include "passes/CostModel.h"
#include "passes/Liveness.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace graphc {
#define GEN_PASS_DEF_FITBUDGET
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

namespace {

struct Measure {
  uint64_t bound = 0;
  uint64_t arena = 0;
};

FailureOr<Measure> measure(func::FuncOp func, uint64_t alignment, bool withArena) {
  auto live = computeStepLiveness(func, /*reuseDyingOperands=*/true);
  if (failed(live))
    return failure();
  plan::Plan plan = planProblemFromLiveness(*live, alignment);
  Measure m;
  m.bound = plan::lowerBound(plan.buffers, alignment);
  if (withArena) {
    plan::PlanOptions options;
    options.heuristicOnly = true;
    plan::planNearOptimal(plan, options);
    m.arena = plan.arenaBytes;
  }
  return m;
}

/// One applied rematerialization, kept so that it can be undone.
struct Remat {
  SmallVector<Operation *> clones;
  SmallVector<std::pair<OpOperand *, Value>> redirected; // operand -> its old value
  void undo() {
    for (auto &[operand, old] : redirected)
      operand->set(old);
    for (Operation *clone : llvm::reverse(clones))
      clone->erase();
  }
};

struct FitBudgetPass : graphc::impl::FitBudgetBase<FitBudgetPass> {
  using FitBudgetBase::FitBudgetBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (budget <= 0 || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    Builder attrs(func.getContext());
    auto start = measure(func, alignment, true);
    if (failed(start))
      return signalPassFailure();
    double flopsBefore = 0;
    for (Operation &op : body.without_terminator())
      flopsBefore += estimateOpCost(&op).flops;
    func->setAttr("graph.fit_peak_before", attrs.getI64IntegerAttr(start->arena));
    if (start->arena <= uint64_t(budget)) {
      func->setAttr("graph.fit_remat_ops", attrs.getI64IntegerAttr(0));
      func->setAttr("graph.fit_peak_after", attrs.getI64IntegerAttr(start->arena));
      func->setAttr("graph.fit_extra_flops", attrs.getF64FloatAttr(0));
      return;
    }

    // The backward region starts at the loss gradient.
    Operation *lossGrad = nullptr;
    for (Operation &op : body)
      if (isa<LossBackwardOp>(op)) {
        lossGrad = &op;
        break;
      }
    if (!lossGrad)
      return func->setAttr("graph.fit_peak_after", attrs.getI64IntegerAttr(start->arena));

    // Candidates: forward results with a reader after the loss gradient.
    struct Candidate {
      Operation *op;
      double score;
      unsigned order;
    };
    std::vector<Candidate> candidates;
    unsigned position = 0;
    for (Operation &op : body) {
      if (&op == lossGrad)
        break;
      ++position;
      if (!recomputable(&op))
        continue;
      Value v = op.getResult(0);
      if (backwardUses(v, lossGrad).empty())
        continue;
      OpCost cost = estimateOpCost(&op);
      double bytes = double(tensorBytes(v.getType()));
      candidates.push_back({&op, bytes / std::max(cost.flops, 1.0), position});
    }
    llvm::stable_sort(candidates, [](const Candidate &a, const Candidate &b) {
      return a.score > b.score || (a.score == b.score && a.order < b.order);
    });

    Measure current = *start;
    unsigned kept = 0;
    double extraFlops = 0;
    for (const Candidate &c : candidates) {
      // Recompute the op alone, or with up to kMaxChain of the pure forward ops that feed it
      // (a relu is only worth recomputing together with the conv before it, whose output the
      // relu overwrote in place).
      std::optional<Remat> remat;
      for (unsigned chain = 0; chain <= kMaxChain && !remat; ++chain) {
        remat = rematerialize(c.op, lossGrad, chain);
        if (!remat)
          break;
        auto bound = measure(func, alignment, false);
        if (failed(bound))
          return signalPassFailure();
        if (bound->bound >= current.bound) {
          remat->undo();
          remat.reset();
        }
      }
      if (!remat)
        continue;
      ++kept;
      for (Operation *clone : remat->clones)
        extraFlops += estimateOpCost(clone).flops;
      auto next = measure(func, alignment, true);
      if (failed(next))
        return signalPassFailure();
      current = *next;
      if (current.arena <= uint64_t(budget))
        break;
    }
    func->setAttr("graph.fit_remat_ops", attrs.getI64IntegerAttr(kept));
    func->setAttr("graph.fit_peak_after", attrs.getI64IntegerAttr(current.arena));
    func->setAttr("graph.fit_extra_flops",
                  attrs.getF64FloatAttr(flopsBefore > 0 ? extraFlops / flopsBefore : 0));
  }

  /// Pure forward ops that write nothing in place and are worth recomputing.
  static bool recomputable(Operation *op) {
    if (op->getNumResults() != 1 || !isMemoryEffectFree(op) || isa<ReshapeOp, LossOp>(op))
      return false;
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      if (inPlaceOperandOf(op, i) >= 0)
        return false;
    return true;
  }

  /// The uses of `v`, or of reshape views of it, by ops after `lossGrad`.
  static SmallVector<OpOperand *> backwardUses(Value v, Operation *lossGrad) {
    SmallVector<OpOperand *> uses;
    SmallVector<Value> worklist = {v};
    while (!worklist.empty()) {
      Value current = worklist.pop_back_val();
      for (OpOperand &use : current.getUses()) {
        Operation *user = use.getOwner();
        if (isa<ReshapeOp>(user) && user->isBeforeInBlock(lossGrad))
          worklist.push_back(user->getResult(0));
        else if (user != lossGrad && lossGrad->isBeforeInBlock(user))
          uses.push_back(&use);
        else if (user == lossGrad)
          continue;
      }
    }
    return uses;
  }

  static constexpr unsigned kMaxChain = 3;

  /// Recomputes `op` (and the views through which the backward pass reads it) right before
  /// its first backward reader, and points the backward readers at the recomputed values.
  /// With `chain` > 0, the pure forward ops producing its operands are recomputed too, up to
  /// `chain` levels deep, so that their outputs need not stay alive either.
  std::optional<Remat> rematerialize(Operation *op, Operation *lossGrad, unsigned chain) {
    SmallVector<OpOperand *> uses = backwardUses(op->getResult(0), lossGrad);
    if (uses.empty())
      return std::nullopt;
    Operation *first = uses.front()->getOwner();
    for (OpOperand *use : uses)
      if (use->getOwner()->isBeforeInBlock(first))
        first = use->getOwner();
    Remat remat;
    OpBuilder b(first);
    // Clone the producers first (depth-first), then the op reading their clones.
    std::function<Operation *(Operation *, unsigned)> cloneChain = [&](Operation *source,
                                                                       unsigned depth) {
      IRMapping map;
      if (depth > 0)
        for (Value operand : source->getOperands()) {
          Operation *producer = operand.getDefiningOp();
          if (producer && recomputable(producer) && producer->isBeforeInBlock(lossGrad))
            map.map(operand, cloneChain(producer, depth - 1)->getResult(0));
        }
      Operation *clone = b.clone(*source, map);
      remat.clones.push_back(clone);
      return clone;
    };
    Operation *clone = cloneChain(op, chain);
    // Map each forward view of the original to a view of the clone, made on demand.
    llvm::DenseMap<Value, Value> recomputed = {{op->getResult(0), clone->getResult(0)}};
    std::function<Value(Value)> viewOf = [&](Value original) -> Value {
      if (Value known = recomputed.lookup(original))
        return known;
      auto reshape = original.getDefiningOp<ReshapeOp>();
      Value source = viewOf(reshape.getInput());
      Operation *view = b.create<ReshapeOp>(reshape.getLoc(), reshape.getType(), source);
      remat.clones.push_back(view);
      recomputed[original] = view->getResult(0);
      return view->getResult(0);
    };
    for (OpOperand *use : uses) {
      Value old = use->get();
      remat.redirected.push_back({use, old});
      use->set(viewOf(old));
    }
    // The recomputation must read the same inputs: none may have been overwritten in place
    // (an optimizer update of a parameter) before the point where it runs.
    for (Operation *c : remat.clones)
      for (Value operand : c->getOperands())
        for (OpOperand &use : operand.getUses()) {
          Operation *user = use.getOwner();
          if (isa<ReshapeOp>(user) || user->getBlock() != first->getBlock() ||
              !user->isBeforeInBlock(first))
            continue;
          for (unsigned i = 0; i < user->getNumResults(); ++i)
            if (inPlaceOperandOf(user, i) == int64_t(use.getOperandNumber())) {
              remat.undo();
              return std::nullopt;
            }
        }
    return remat;
  }
};

} // namespace
