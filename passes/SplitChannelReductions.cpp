// graphc-split-channel-reductions: marks the batch norms and bias gradients whose per-channel
// sums the CUDA kernels spread over several blocks (graph.block_splits); the emitter
// (targets/cuda) reads the mark, and liveness plans the partial sums as the op's workspace
// (kernelWorkspaceBytes).
#include "dialects/graph/GraphOps.h"
#include "passes/Liveness.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace graphc {
#define GEN_PASS_DEF_SPLITCHANNELREDUCTIONS
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;

namespace {
struct SplitChannelReductionsPass
    : graphc::impl::SplitChannelReductionsBase<SplitChannelReductionsPass> {
  using SplitChannelReductionsBase::SplitChannelReductionsBase;
  void runOnOperation() override {
    Builder b(&getContext());
    getOperation().walk([&](Operation *op) {
      // The summed tensor, and the axis of its channels (the rows before it are split).
      Value summed;
      int64_t axis = 1;
      if (auto bn = dyn_cast<graph::BatchNormOp>(op); bn && bn.getTraining())
        summed = bn.getInput();
      else if (auto bn = dyn_cast<graph::BatchNormBackwardOp>(op))
        summed = bn.getInput();
      else if (auto bias = dyn_cast<graph::BiasGradOp>(op)) {
        summed = bias.getGrad();
        axis = bias.getAxis();
      }
      auto type = summed ? dyn_cast<RankedTensorType>(summed.getType()) : RankedTensorType();
      if (!type || !type.hasStaticShape() || axis < 1 || axis >= type.getRank())
        return;
      int64_t n = 1, channels = type.getDimSize(axis);
      for (int64_t d = 0; d < axis; ++d)
        n *= type.getDimSize(d);
      int64_t count = channels > 0 ? type.getNumElements() / channels : 0;
      int64_t most = std::min(blocks / std::max<int64_t>(channels, 1),
                              count / std::max<int64_t>(minElements, 1));
      int64_t splits = 1;
      for (int64_t s = std::min(most, n); s > 1; --s)
        if (n % s == 0) {
          splits = s;
          break;
        }
      if (splits > 1)
        op->setAttr(kBlockSplitsAttr, b.getI64IntegerAttr(splits));
      else
        op->removeAttr(kBlockSplitsAttr);
    });
  }
};
} // namespace
