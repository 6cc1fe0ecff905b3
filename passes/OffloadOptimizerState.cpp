// graphc-offload-optimizer-state: marks the optimizer state that only optimizer updates read as
// host-resident (graph.memory_space = "host"), so that the planner lays it out in the host
// arena instead of the device arena. See Passes.td for the IR before and after.
#include "dialects/graph/GraphOps.h"
#include "passes/Liveness.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace graphc {
#define GEN_PASS_DEF_OFFLOADOPTIMIZERSTATE
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;

namespace {

/// Whether every use of `state` is an optimizer update reading it as its state (velocity, m,
/// v) or the terminator returning it: the only readers that may reach host memory.
bool onlyUpdatesRead(Value state) {
  for (OpOperand &use : state.getUses()) {
    Operation *user = use.getOwner();
    if (user->hasTrait<OpTrait::IsTerminator>())
      continue;
    if (auto momentum = dyn_cast<graph::MomentumUpdateOp>(user))
      if (use.get() == momentum.getVelocity() && use.get() != momentum.getParam() &&
          use.get() != momentum.getGrad())
        continue;
    if (auto adam = dyn_cast<graph::AdamUpdateOp>(user))
      if ((use.get() == adam.getM() || use.get() == adam.getV()) &&
          use.get() != adam.getParam() && use.get() != adam.getGrad())
        continue;
    return false;
  }
  return true;
}

struct OffloadOptimizerStatePass
    : graphc::impl::OffloadOptimizerStateBase<OffloadOptimizerStatePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Builder b(func.getContext());
    int64_t bytes = 0;
    for (BlockArgument arg : func.getArguments()) {
      auto kind = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kKindAttr);
      if (!kind || kind.getValue() != "optimizer_state" || !onlyUpdatesRead(arg))
        continue;
      func.setArgAttr(arg.getArgNumber(), graph::kMemorySpaceAttr, b.getStringAttr("host"));
      bytes += int64_t(tensorBytes(arg.getType()));
    }
    func->setAttr("graph.offloaded_state_bytes", b.getI64IntegerAttr(bytes));
  }
};

} // namespace
