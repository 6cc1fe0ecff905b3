// graphc-plan-memory: liveness -> planner core -> offsets as attributes. A thin adapter; the
// placement algorithms live in planner/Planner.cpp.
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

namespace graphc {
#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;

namespace {
struct PlanMemoryPass : graphc::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
      func.emitError() << "alignment must be a positive power of two, got " << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    bool reuseDyingOperands = inPlace && !noReuse;
    auto live = computeStepLiveness(func, reuseDyingOperands);
    if (failed(live))
      return signalPassFailure();
    plan::Plan plan = planProblemFromLiveness(*live, alignment);
    // Host-resident buffers (offloaded optimizer state) go above the device arena.
    if (noReuse) {
      plan::planWithHostBuffers(plan, [](plan::Plan &p) { plan::planNoReuse(p); });
    } else {
      plan::PlanOptions options;
      options.timeLimitSeconds = timeLimit;
      options.nodeLimit =
          std::max<uint64_t>(searchWork / std::max<size_t>(plan.buffers.size(), 1), 1);
      plan::planWithHostBuffers(plan, [&](plan::Plan &p) { plan::planNearOptimal(p, options); });
      // graphc-fit-budget measured this step with planToCapacity and promised its arena; a
      // time-limited minimisation can stop above it, the node-limited search of that plan
      // cannot (same liveness, same search).
      if (auto promised = func->getAttrOfType<IntegerAttr>("graph.fit_peak_after")) {
        uint64_t capacity = uint64_t(std::max<int64_t>(promised.getInt(), 0));
        if (plan.arenaBytes > capacity) {
          plan::Plan again = planProblemFromLiveness(*live, alignment);
          planToCapacity(again, capacity);
          if (again.arenaBytes < plan.arenaBytes)
            plan = std::move(again);
        }
      }
    }
    // graphc-fit-budget kept a cheaper recomputation that plans below the arena of the one it
    // replaced: the arena keeps those bytes, unused, so that it stays monotone in the budget
    // (FitBudget.cpp, improveLocally). Host buffers move up with the arena's end.
    if (auto floor = func->getAttrOfType<IntegerAttr>("graph.fit_arena_floor");
        floor && uint64_t(floor.getInt()) > plan.arenaBytes) {
      uint64_t padding = uint64_t(floor.getInt()) - plan.arenaBytes;
      for (plan::Buffer &buffer : plan.buffers)
        if (buffer.host)
          buffer.offset += padding;
      plan.arenaBytes += padding;
      func->setAttr("graph.arena_padding", Builder(func.getContext()).getI64IntegerAttr(padding));
    }
    annotatePlan(func, *live, plan, reuseDyingOperands);
  }
};
} // namespace
