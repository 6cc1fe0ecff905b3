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
      plan::planWithHostBuffers(plan, [&](plan::Plan &p) { plan::planNearOptimal(p, options); });
    }
    annotatePlan(func, *live, plan, reuseDyingOperands);
  }
};
} // namespace
