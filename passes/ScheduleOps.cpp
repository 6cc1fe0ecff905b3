// graphc-schedule-ops: a memory-aware topological order for the training step.
//
// Greedy list scheduling (in the spirit of the "min-memory" heuristics of Sethi-Ullman style
// register-pressure schedulers): repeatedly run the ready op whose execution grows the live
// bytes least, i.e. the bytes of the new buffers it defines minus the bytes of the buffers it
// reads for the last time; ties keep the original order. Storage groups follow the liveness
// rules (views and in-place updates share their operand's buffer), and an in-place update is
// only ready once every other reader of the buffer it overwrites has run. The new order is kept
// only when it strictly lowers the liveness lower bound of the step, so the pass never makes a
// plan worse; both bounds are recorded for the fit report. O(n * r) for n ops and at most r
// ready ops.
#include "passes/Liveness.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

namespace graphc {
#define GEN_PASS_DEF_SCHEDULEOPS
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;

namespace {

/// Lower bound of the function in its current op order.
FailureOr<uint64_t> boundOf(func::FuncOp func, uint64_t alignment) {
  auto live = computeStepLiveness(func, /*reuseDyingOperands=*/true, /*withNames=*/false);
  if (failed(live))
    return failure();
  plan::Plan plan = planProblemFromLiveness(*live, alignment);
  return plan::lowerBound(plan.buffers, alignment);
}

struct ScheduleOpsPass : graphc::impl::ScheduleOpsBase<ScheduleOpsPass> {
  using ScheduleOpsBase::ScheduleOpsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    if (ops.size() < 2)
      return;
    auto before = boundOf(func, alignment);
    if (failed(before))
      return signalPassFailure();

    // Storage groups: every value maps to the value that owns its bytes.
    llvm::DenseMap<Value, Value> owner;
    for (BlockArgument arg : func.getArguments())
      owner[arg] = arg;
    for (Operation *op : ops)
      for (OpResult r : op->getResults()) {
        int64_t source = inPlaceOperandOf(op, r.getResultNumber());
        owner[r] = source >= 0 ? owner.lookup(op->getOperand(source)) : Value(r);
      }
    auto persistent = [&](Value root) {
      auto arg = dyn_cast<BlockArgument>(root);
      if (!arg)
        return false;
      auto kind = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kKindAttr);
      return kind && kind.getValue() != "input";
    };
    // Remaining reads of each group; the terminator's reads never finish.
    llvm::DenseMap<Value, int64_t> remaining;
    for (Operation *op : ops)
      for (Value operand : op->getOperands())
        ++remaining[owner.lookup(operand)];
    for (Value operand : body.getTerminator()->getOperands())
      remaining[owner.lookup(operand)] += 1 << 30;

    // Dependencies: producers, plus (for in-place writers) every other reader of the group.
    llvm::DenseMap<Operation *, unsigned> index;
    for (auto [i, op] : llvm::enumerate(ops))
      index[op] = i;
    std::vector<llvm::SmallVector<unsigned>> successors(ops.size());
    std::vector<unsigned> pending(ops.size(), 0);
    auto addEdge = [&](Operation *from, Operation *to) {
      if (from == to || !index.count(from) || !index.count(to))
        return;
      successors[index[from]].push_back(index[to]);
      ++pending[index[to]];
    };
    // The readers of a value's bytes: its users, and the users of reshape views of it. (Later
    // versions of the same storage, written in place, are read after their writer anyway.)
    auto readersOf = [&](Value value) {
      SmallVector<Operation *> readers;
      SmallVector<Value> worklist = {value};
      while (!worklist.empty()) {
        Value v = worklist.pop_back_val();
        for (Operation *user : v.getUsers()) {
          if (isa<graph::ReshapeOp>(user))
            worklist.push_back(user->getResult(0));
          else
            readers.push_back(user);
        }
      }
      return readers;
    };
    for (Operation *op : ops) {
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          addEdge(def, op);
      for (OpResult r : op->getResults()) {
        int64_t source = inPlaceOperandOf(op, r.getResultNumber());
        if (source < 0 || isa<graph::ReshapeOp>(op))
          continue;
        for (Operation *reader : readersOf(op->getOperand(source)))
          if (reader != op)
            addEdge(reader, op);
      }
    }

    // Greedy selection.
    std::vector<unsigned> ready;
    for (unsigned i = 0; i < ops.size(); ++i)
      if (pending[i] == 0)
        ready.push_back(i);
    SmallVector<Operation *> order;
    while (!ready.empty()) {
      auto delta = [&](unsigned i) {
        Operation *op = ops[i];
        int64_t bytes = 0;
        for (OpResult r : op->getResults())
          if (owner.lookup(r) == Value(r))
            bytes += int64_t(tensorBytes(r.getType()));
        llvm::SmallDenseMap<Value, int64_t> reads;
        for (Value operand : op->getOperands())
          ++reads[owner.lookup(operand)];
        for (auto [root, count] : reads)
          if (remaining.lookup(root) == count && !persistent(root))
            bytes -= int64_t(tensorBytes(root.getType()));
        return bytes;
      };
      auto best = ready.begin();
      int64_t bestDelta = delta(*best);
      for (auto it = std::next(ready.begin()); it != ready.end(); ++it) {
        int64_t d = delta(*it);
        if (d < bestDelta || (d == bestDelta && *it < *best)) {
          best = it;
          bestDelta = d;
        }
      }
      unsigned chosen = *best;
      ready.erase(best);
      order.push_back(ops[chosen]);
      for (Value operand : ops[chosen]->getOperands())
        --remaining[owner.lookup(operand)];
      for (unsigned next : successors[chosen])
        if (--pending[next] == 0)
          ready.push_back(next);
    }
    if (order.size() != ops.size()) {
      func.emitError("graphc-schedule-ops: the op graph has a cycle");
      return signalPassFailure();
    }

    // Apply the order, and keep it only if it lowers the bound.
    Operation *terminator = body.getTerminator();
    for (Operation *op : order)
      op->moveBefore(terminator);
    auto after = boundOf(func, alignment);
    if (failed(after))
      return signalPassFailure();
    if (*after >= *before) {
      for (Operation *op : ops)
        op->moveBefore(terminator);
      after = before;
    }
    Builder b(func.getContext());
    func->setAttr("graph.schedule_bound_before", b.getI64IntegerAttr(*before));
    func->setAttr("graph.schedule_bound_after", b.getI64IntegerAttr(*after));
  }
};

} // namespace
