// graphc-split-data-gradients: computes each channel slice of a convolution's data gradient on
// its own, from the matching input-channel slice of the filter, when slices are all that read
// that gradient (the backward of a channel concatenation: a U-Net decoder's first convolution,
// a SqueezeNet fire module). The whole gradient and the copies the slices make never exist.
// See Passes.td for the IR before and after.
#include "dialects/graph/GraphOps.h"
#include "passes/Liveness.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace graphc {
#define GEN_PASS_DEF_SPLITDATAGRADIENTS
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

namespace {

/// `<name of op>.<suffix>`, so plan dumps name the filter slices after their gradient.
Location derivedLoc(Operation *op, StringRef suffix) {
  std::string base = "conv";
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    base = name.getName().str();
  return NameLoc::get(StringAttr::get(op->getContext(), base + "." + suffix.str()), op->getLoc());
}

/// The channel slices that read `dataGrad`, when they are its only readers and each slice's
/// channels are input channels of one filter group (groups = 1, no bias: a bias would be added
/// per output channel of a transposed convolution, and the slices would need its slices too).
/// Empty when the gradient has another reader or none. In block order.
SmallVector<SliceOp> channelSliceReaders(Conv2dBackwardDataOp dataGrad) {
  SmallVector<SliceOp> slices;
  if (dataGrad.getGroups() != 1 || dataGrad.getBias())
    return slices;
  for (Operation *user : dataGrad.getResult().getUsers()) {
    auto slice = dyn_cast<SliceOp>(user);
    if (!slice || slice.getAxis() != 1) {
      slices.clear();
      return slices;
    }
    slices.push_back(slice);
  }
  // In block order (use lists are not), so that the parts come out in the slices' order.
  llvm::sort(slices, [](SliceOp a, SliceOp b) { return a->isBeforeInBlock(b); });
  return slices;
}

/// Where the parts go: before the first slice, or before the filter's in-place optimizer
/// update when that comes first (autodiff emits the update right after the filter gradient,
/// before the concatenation's backward slices). Not at the whole gradient's place: autodiff
/// runs the filter gradient after it, and the filter gradient reads the concatenation, which
/// dies there, so the parts come after it (the U-Net's unbudgeted peak: 256 MiB of
/// concatenation alive together with the parts otherwise).
Operation *firstReaderOrUpdate(Conv2dBackwardDataOp dataGrad, ArrayRef<SliceOp> slices) {
  Operation *first = slices.front();
  for (OpOperand &use : dataGrad.getFilter().getUses()) {
    Operation *user = use.getOwner();
    if (user->getBlock() != dataGrad->getBlock() || !dataGrad->isBeforeInBlock(user) ||
        !user->isBeforeInBlock(first))
      continue;
    for (OpResult result : user->getResults())
      if (inPlaceOperandOf(user, result.getResultNumber()) == int64_t(use.getOperandNumber()))
        first = user;
  }
  return first;
}

struct SplitDataGradientsPass : graphc::impl::SplitDataGradientsBase<SplitDataGradientsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<Conv2dBackwardDataOp> found;
    func.walk([&](Conv2dBackwardDataOp dataGrad) {
      if (!channelSliceReaders(dataGrad).empty())
        found.push_back(dataGrad);
    });
    int64_t split = 0;
    for (Conv2dBackwardDataOp dataGrad : found) {
      auto filterType = cast<RankedTensorType>(dataGrad.getFilter().getType());
      SmallVector<SliceOp> slices = channelSliceReaders(dataGrad);
      Operation *insertionPoint = firstReaderOrUpdate(dataGrad, slices);
      for (SliceOp slice : slices) {
        // Input channel c of the data gradient sums over the filter's [*, c, *, *] alone, so
        // channels [offset, offset + n) are the data gradient of that filter slice: the same
        // products and sums per element, and the slices' FLOPs add up to the whole.
        OpBuilder b(insertionPoint);
        auto sliceType = cast<RankedTensorType>(slice.getResult().getType());
        auto filterSliceType =
            RankedTensorType::get({filterType.getDimSize(0), sliceType.getDimSize(1),
                                   filterType.getDimSize(2), filterType.getDimSize(3)},
                                  filterType.getElementType());
        auto filterSlice =
            b.create<SliceOp>(derivedLoc(slice, "filter"), filterSliceType, dataGrad.getFilter(),
                              b.getI64IntegerAttr(1), slice.getOffsetAttr());
        auto part = b.create<Conv2dBackwardDataOp>(
            slice.getLoc(), sliceType, dataGrad.getGrad(), filterSlice.getResult(), Value(),
            dataGrad.getStridesAttr(), dataGrad.getPaddingAttr(), dataGrad.getDilationsAttr(),
            dataGrad.getGroupsAttr());
        slice.getResult().replaceAllUsesWith(part.getResult());
      }
      // Erased only now: the first slice may be where the parts go.
      for (SliceOp slice : slices)
        slice->erase();
      dataGrad->erase();
      ++split;
    }
    if (split)
      func->setAttr("graph.split_data_gradients",
                    Builder(func.getContext()).getI64IntegerAttr(split));
  }
};

} // namespace
