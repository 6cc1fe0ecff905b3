// graphc-grow-workspaces: gives each convolution's cuDNN workspace the arena bytes that are
// free at its step. A thin adapter: the planned step is read back (readPlannedStep), the
// planner core grows the workspaces (plan::growIntoFreeBytes), and the new offsets and sizes
// land on the ops, where liveness, the verifier and the CUDA emitter read them
// (workspaceBytes).
#include "dialects/graph/GraphOps.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace graphc {
#define GEN_PASS_DEF_GROWWORKSPACES
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;

namespace {
struct GrowWorkspacesPass : graphc::impl::GrowWorkspacesBase<GrowWorkspacesPass> {
  using GrowWorkspacesBase::GrowWorkspacesBase;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kArenaBytesAttr) || maxBytes <= 0)
      return;
    auto planned = readPlannedStep(func);
    if (failed(planned))
      return signalPassFailure();
    // The convolutions' workspaces, in step order (the buffers' order).
    std::vector<plan::Growable> growables;
    std::vector<Operation *> ops;
    uint64_t before = 0, after = 0;
    for (auto [index, op] : llvm::enumerate(planned->workspaceOf))
      if (op &&
          isa<graph::Conv2dOp, graph::Conv2dBackwardDataOp, graph::Conv2dBackwardFilterOp>(op)) {
        ops.push_back(op);
        growables.push_back({index, uint64_t(maxBytes)});
        before += planned->plan.buffers[index].bytes;
      }
    size_t grown = plan::growIntoFreeBytes(planned->plan, growables);
    Builder b(func.getContext());
    for (auto [op, growable] : llvm::zip(ops, growables)) {
      const plan::Buffer &buffer = planned->plan.buffers[growable.buffer];
      after += buffer.bytes;
      if (buffer.bytes <= kernelWorkspaceBytes(op))
        continue;
      op->setAttr(kWorkspaceOffsetAttr, b.getI64IntegerAttr(int64_t(buffer.offset)));
      op->setAttr(kWorkspaceBytesAttr, b.getI64IntegerAttr(int64_t(buffer.bytes)));
    }
    if (grown)
      func->setAttr("graph.workspaces_grown",
                    b.getDenseI64ArrayAttr({int64_t(grown), int64_t(before), int64_t(after)}));
  }
};
} // namespace
