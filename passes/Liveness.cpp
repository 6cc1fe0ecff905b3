// Buffer liveness over the op order of a training step; see Liveness.h.
#include "passes/Liveness.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

#include "dialects/graph/GraphOps.h"
#include "graphc/runtime/staging.h"
#include "graphc/runtime/workspace.h"

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

uint64_t graphc::tensorBytes(Type type) {
  auto ranked = cast<RankedTensorType>(type);
  return static_cast<uint64_t>(ranked.getNumElements()) *
         static_cast<uint64_t>(ranked.getElementTypeBitWidth() / 8);
}

int64_t graphc::im2colTileRows(Operation *op) {
  auto rows = op->getAttrOfType<IntegerAttr>(kIm2colRowsAttr);
  return rows ? rows.getInt() : 0;
}

uint64_t graphc::maxPoolArgmaxBytes(ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                    uint64_t outputs) {
  const bool overlapping = kernel[0] > strides[0] || kernel[1] > strides[1];
  if (!overlapping)
    return 0; // an input element lies in one window: the gather scans it once anyway
  return outputs * (kernel[0] * kernel[1] < 255 ? 1 : 4);
}

int64_t graphc::attentionQueryBlock(Operation *op) {
  // Forward operands: query, key, value; backward: grad, query, key, value.
  const unsigned first = isa<AttentionOp>(op) ? 0 : 1;
  auto q = cast<RankedTensorType>(op->getOperand(first).getType());
  auto v = cast<RankedTensorType>(op->getOperand(first + 2).getType());
  const int64_t queries = q.getDimSize(1), keys = v.getDimSize(1), width = v.getDimSize(2);
  if (auto rows = op->getAttrOfType<IntegerAttr>(kQueryBlockAttr))
    return rt::attentionBlockRows(rows.getInt(), queries);
  return std::clamp<int64_t>(queries * width / std::max<int64_t>(keys, 1), 1, queries);
}

uint64_t graphc::workspaceBytes(Operation *op) {
  if (auto planned = op->getAttrOfType<IntegerAttr>(kWorkspaceBytesAttr))
    return uint64_t(planned.getInt());
  return kernelWorkspaceBytes(op);
}

std::optional<ConvTensors> graphc::convTensorsOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<ConvTensors>>(op)
      .Case([](Conv2dOp c) {
        return ConvTensors{c.getInput(), c.getFilter(), c.getResult(), c.getStrides(),
                           c.getPadding()};
      })
      .Case([](Conv2dBackwardDataOp c) {
        return ConvTensors{c.getResult(), c.getFilter(), c.getGrad(), c.getStrides(),
                           c.getPadding()};
      })
      .Case([](Conv2dBackwardFilterOp c) {
        return ConvTensors{c.getInput(), c.getResult(), c.getGrad(), c.getStrides(),
                           c.getPadding()};
      })
      .Default([](Operation *) { return std::nullopt; });
}

namespace {
ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// isDirectPointwiseConv for a convolution whose tensors are `conv`.
bool readsDirectly(Operation *op, const ConvTensors &conv) {
  auto func = op->getParentOfType<func::FuncOp>();
  if (!func || !func->hasAttr(kDirectPointwiseConvsAttr))
    return false;
  auto x = shapeOf(conv.image), w = shapeOf(conv.filter), y = shapeOf(conv.output);
  return rt::conv2dIsPointwise(w[2], w[3], conv.strides[0], conv.strides[1], conv.padding[0],
                               conv.padding[1], x[2], x[3], y[2], y[3]);
}
} // namespace

bool graphc::isDirectPointwiseConv(Operation *op) {
  std::optional<ConvTensors> conv = convTensorsOf(op);
  return conv && readsDirectly(op, *conv);
}

uint64_t graphc::cudnnHalfTransformBytes(const ConvTensors &conv, bool filterGradient) {
  Type element = cast<RankedTensorType>(conv.image.getType()).getElementType();
  if (!element.isBF16() && !element.isF16())
    return 0;
  // Elements of `shape` with its channel axes (`last` channel axis and the ones before it,
  // down to `first`) rounded up to multiples of 8.
  auto padded = [](ArrayRef<int64_t> shape, unsigned first, unsigned last) {
    uint64_t elements = 1;
    for (auto [axis, d] : llvm::enumerate(shape))
      elements *= uint64_t(axis >= first && axis <= last ? llvm::alignTo(d, 8) : d);
    return elements;
  };
  auto x = shapeOf(conv.image), w = shapeOf(conv.filter), y = shapeOf(conv.output);
  uint64_t filter = padded(w, 0, 1); // [K, C, R, S]: both channel counts
  uint64_t bytes =
      2 * (padded(x, 1, 1) + padded(y, 1, 1) + filter) + 4 * filter + (uint64_t(1) << 20);
  // The filter gradient sums over N x OH x OW in split-K partial sums of the f32 filter, in
  // numbers cuDNN's heuristic picks: 61, 29, 13, 8 and 3 of them measured on five filters
  // (6.1, 3.8, 3.8, 16.8 and 6.3 MB; cuDNN 9.19 on an H200). Room for up to 64 of them, capped
  // at the larger of 32 MiB and 8 filters.
  if (filterGradient)
    bytes += std::min(64 * 4 * filter, std::max<uint64_t>(uint64_t(32) << 20, 8 * 4 * filter));
  return bytes;
}

uint64_t graphc::kernelWorkspaceBytes(Operation *op) {
  if (std::optional<ConvTensors> conv = convTensorsOf(op)) {
    if (readsDirectly(op, *conv))
      return 0;
    // All three conv kernels stage one tile of one image's im2col matrix: C*R*S x rows*OW, for
    // one group's channels (the filter's C / groups).
    auto filter = shapeOf(conv->filter), out = shapeOf(conv->output);
    uint64_t tile = rt::conv2dWorkspaceBytes(
        filter[1], filter[2], filter[3], rt::conv2dTileRows(im2colTileRows(op), out[2]), out[3]);
    auto func = op->getParentOfType<func::FuncOp>();
    if (func && func->hasAttr(kCudnnConvsAttr))
      return std::max(tile, cudnnHalfTransformBytes(*conv, isa<Conv2dBackwardFilterOp>(op)));
    return tile;
  }
  return llvm::TypeSwitch<Operation *, uint64_t>(op)
      // One block of scores (two in the backward pass).
      .Case<AttentionOp, AttentionBackwardOp>([&](Operation *attention) {
        auto q = shapeOf(attention->getOperand(isa<AttentionOp>(attention) ? 0 : 1));
        auto k = shapeOf(attention->getOperand(isa<AttentionOp>(attention) ? 1 : 2));
        return rt::attentionWorkspaceBytes(q[0], attentionQueryBlock(attention), k[1],
                                           isa<AttentionBackwardOp>(attention));
      })
      // Two partial sums (double) per block of each channel, when split over blocks.
      .Case<BatchNormOp, BatchNormBackwardOp>([&](Operation *bn) -> uint64_t {
        auto splits = bn->getAttrOfType<IntegerAttr>(kBlockSplitsAttr);
        if (!splits || splits.getInt() <= 1)
          return 0;
        int64_t channels = shapeOf(bn->getOperand(isa<BatchNormOp>(bn) ? 0 : 1))[1];
        return uint64_t(2 * channels * splits.getInt()) * sizeof(double);
      })
      // On the CUDA target, a max-pool backward whose windows overlap (ResNet's 3x3 stride 2)
      // first records each window's argmax, one byte per output (its position in the window;
      // 4 bytes for windows of 255 elements or more), so that the gather over an input element's
      // windows reads a byte per window instead of scanning each one again (maxPoolArgmaxBytes).
      .Case([&](MaxPool2dBackwardOp pool) -> uint64_t {
        auto func = op->getParentOfType<func::FuncOp>();
        if (!func || !func->hasAttr(kCudnnConvsAttr))
          return 0;
        return maxPoolArgmaxBytes(
            pool.getKernel(), pool.getStrides(),
            uint64_t(cast<RankedTensorType>(pool.getGrad().getType()).getNumElements()));
      })
      // One partial sum (double) per block of each channel, when split over blocks.
      .Case([&](BiasGradOp bias) -> uint64_t {
        auto splits = bias->getAttrOfType<IntegerAttr>(kBlockSplitsAttr);
        if (!splits || splits.getInt() <= 1)
          return 0;
        int64_t channels = shapeOf(bias.getGrad())[bias.getAxis()];
        return uint64_t(channels * splits.getInt()) * sizeof(double);
      })
      // The gathered flat concatenation of the parameters (every rank's shard).
      .Case([&](AllGatherIntoOp gather) {
        return uint64_t(tensorBytes(gather.getShard().getType()) * uint64_t(gather.getRanks()));
      })
      .Default([](Operation *) { return uint64_t{0}; });
}

std::optional<HalfEmulation> graphc::halfEmulationOf(Operation *op) {
  if (isa<CastOp, ReshapeOp, BatchSliceOp>(op))
    return std::nullopt;
  auto isHalf = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && (tensor.getElementType().isBF16() || tensor.getElementType().isF16());
  };
  HalfEmulation emulation;
  uint64_t offset = 0;
  auto addCopy = [&](Value v) {
    if (!isHalf(v.getType()) ||
        llvm::any_of(emulation.copies, [&](auto &copy) { return copy.first == v; }))
      return;
    offset = llvm::alignTo(offset, 64);
    emulation.copies.push_back({v, offset});
    offset += tensorBytes(v.getType()) * 2; // f32 is twice the 16-bit size
  };
  for (Value operand : op->getOperands())
    addCopy(operand);
  for (Value result : op->getResults())
    addCopy(result);
  if (emulation.copies.empty())
    return std::nullopt;
  emulation.scratchBytes = offset;
  return emulation;
}

uint64_t graphc::halfEmulationScratchBytes(func::FuncOp func) {
  uint64_t bytes = 0;
  func.walk([&](Operation *op) {
    if (auto emulation = halfEmulationOf(op))
      bytes = std::max(bytes, emulation->scratchBytes);
  });
  return bytes;
}

int64_t graphc::inPlaceOperandOf(Operation *op, unsigned resultIndex) {
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case([&](ReshapeOp) { return 0; })
      // The averaged bucket overwrites the bucket (the collective never allocates).
      .Case([&](AllReduceOp) { return 0; })
      // The shard overwrites the start of its bucket; gathered parameters overwrite theirs.
      .Case([&](ReduceScatterOp) { return 0; })
      .Case([&](AllGatherIntoOp) { return int64_t(resultIndex) + 1; })
      .Case([&](SgdUpdateOp) { return 0; })
      .Case([&](MomentumUpdateOp) { return resultIndex == 0 ? 0 : 2; })
      .Case([&](AdamUpdateOp) { return resultIndex == 0 ? 0 : int64_t(resultIndex) + 1; })
      .Case([&](UpdateLossScaleOp) { return int64_t(resultIndex); })
      // The running statistics (results 1, 2) overwrite operands 3, 4.
      .Case([&](BatchNormOp) {
        return resultIndex == 1 || resultIndex == 2 ? int64_t(resultIndex) + 2 : int64_t{-1};
      })
      .Default([](Operation *) { return int64_t{-1}; });
}

llvm::SmallVector<unsigned, 2> graphc::reusableOperandsOf(Operation *op) {
  if (isa<ReluOp, SigmoidOp, TanhOp, ClipOp, DropoutOp, DropoutBackwardOp, ScaleOp, LossScaleOp,
          ActivationOp, BatchNormApplyOp, BroadcastMulOp>(op))
    return {0};
  if (isa<AddOp, MulOp, ReluBackwardOp, SigmoidBackwardOp, TanhBackwardOp, ClipBackwardOp,
          ActivationBackwardOp>(op))
    return {0, 1};
  return {};
}

/// The prediction the runtime reads after the step, given the step's only loss (null: none,
/// or several).
static Value predictionOfOnlyLoss(LossOp only) {
  if (!only || only.getKind() == LossKind::mse)
    return {};
  if (only.getKind() == LossKind::binary_crossentropy && !only.getFromLogits())
    return {};
  return only.getPrediction();
}

Value graphc::reportedPrediction(func::FuncOp func) {
  LossOp only;
  for (Operation &op : func.getBody().front())
    if (auto loss = dyn_cast<LossOp>(op)) {
      if (only)
        return {};
      only = loss;
    }
  return predictionOfOnlyLoss(only);
}

std::string graphc::valueName(Value value, int64_t step) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (func)
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr))
        return name.str();
    return "arg" + std::to_string(arg.getArgNumber());
  }
  Operation *op = value.getDefiningOp();
  std::string base;
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    base = loc.getName().str();
  else
    base = op->getName().stripDialect().str() + "_" + std::to_string(step);
  if (op->getNumResults() > 1)
    base += "#" + std::to_string(cast<OpResult>(value).getResultNumber());
  return base;
}

/// Forward values are activations; values derived from the loss gradient are temporaries,
/// except the parameter gradients consumed by optimizer updates.
static std::string resultKind(Value value, const llvm::DenseSet<Operation *> &backward) {
  for (OpOperand &use : value.getUses())
    if (isa<SgdUpdateOp, MomentumUpdateOp, AdamUpdateOp>(use.getOwner()) &&
        use.getOperandNumber() == 1)
      return "gradient";
  return backward.contains(value.getDefiningOp()) ? "temporary" : "activation";
}

uint64_t graphc::nextBatchStagingBytes(func::FuncOp func) {
  if (!func->hasAttr(kStageNextBatchAttr))
    return 0;
  uint64_t data = 0, labels = 0;
  for (BlockArgument arg : func.getArguments()) {
    auto role = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kRoleAttr);
    // (staging.h's layout: each input aligned, the sample weights after the data inputs, as
    // they follow them among the step's arguments)
    if (role && (role.getValue() == "data" || role.getValue() == "sample_weights"))
      data = rt::stagedDataOffset(data) + tensorBytes(arg.getType());
    else if (role && role.getValue() == "labels")
      labels += tensorBytes(arg.getType());
  }
  return data + labels ? rt::stagingBytes(data, labels) : 0;
}

std::optional<unsigned> StepLiveness::valueNumber(Value value) const {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (arg.getOwner() != body)
      return std::nullopt;
    return arg.getArgNumber();
  }
  auto result = cast<OpResult>(value);
  auto step = stepOf.find(result.getOwner());
  if (step == stepOf.end())
    return std::nullopt;
  return resultBase[step->second] + result.getResultNumber();
}

std::optional<unsigned> StepLiveness::bufferOf(Value value) const {
  std::optional<unsigned> number = valueNumber(value);
  if (!number)
    return std::nullopt;
  return bufferOfValue[*number];
}

namespace {
/// The working state of computeStepLiveness beside the result: per value number, its last
/// reading step (-1: never read) and the operands' numbers of each step; per buffer, the last
/// read of any of its values and whether it is an argument that no result may take over.
struct LivenessScratch {
  std::vector<int64_t> lastRead;
  std::vector<int> operandNumbers; // -1: not a value of the step
  std::vector<unsigned> operandBase;
  std::vector<int64_t> bufferLastRead;
  std::vector<bool> pinned;

  ArrayRef<int> operandsOf(size_t step) const {
    return ArrayRef<int>(operandNumbers)
        .slice(operandBase[step], operandBase[step + 1] - operandBase[step]);
  }
  /// Moves value `number` (read last at lastRead[number]) into buffer `buffer`.
  void join(StepLiveness &live, unsigned number, unsigned buffer) {
    live.bufferOfValue[number] = buffer;
    bufferLastRead[buffer] = std::max(bufferLastRead[buffer], lastRead[number]);
  }
};
} // namespace

/// A bucket concat (kBucketViewAttr): when every operand's buffer is a value of the step
/// (not an argument, workspace or staging region), covers that operand whole, has no value at
/// an offset already, dies at the concat and appears once, every such buffer moves inside the
/// concat's result buffer at the operand's offset (its values with it), and the result buffer
/// starts where the earliest of them did. Otherwise nothing changes (the concat copies).
static void placeInsideConcat(StepLiveness &live, LivenessScratch &scratch, ConcatOp concat,
                              int64_t step, llvm::DenseSet<unsigned> &merged) {
  auto resultType = cast<RankedTensorType>(concat.getResult().getType());
  if (resultType.getRank() != 1)
    return;
  unsigned target = live.bufferOfValue[live.resultBase[step]];
  llvm::SmallVector<unsigned, 8> parts;
  for (auto [in, number] : llvm::zip(concat.getInputs(), scratch.operandsOf(step))) {
    if (number < 0)
      return;
    unsigned id = live.bufferOfValue[number];
    const LiveBuffer &buffer = live.buffers[id];
    if (id == target || buffer.workspaceOf || buffer.staging ||
        buffer.bytes != tensorBytes(in.getType()) || llvm::is_contained(parts, id) ||
        llvm::any_of(
            buffer.values,
            [&](Value v) { return isa<BlockArgument>(v) || live.byteOffsetOf.count(v); }) ||
        scratch.bufferLastRead[id] > step)
      return;
    parts.push_back(id);
  }
  uint64_t offset = 0;
  LiveBuffer &bucket = live.buffers[target];
  for (auto [in, id] : llvm::zip(concat.getInputs(), parts)) {
    LiveBuffer &part = live.buffers[id];
    for (Value v : part.values) {
      live.bufferOfValue[*live.valueNumber(v)] = target;
      if (offset)
        live.byteOffsetOf[v] = offset;
      bucket.values.push_back(v);
    }
    scratch.bufferLastRead[target] =
        std::max(scratch.bufferLastRead[target], scratch.bufferLastRead[id]);
    bucket.first = std::min(bucket.first, part.first);
    part.values.clear();
    merged.insert(id);
    offset += tensorBytes(in.getType());
  }
}

/// Removes the buffers placeInsideConcat emptied, renumbering the rest.
static void dropMergedBuffers(StepLiveness &live, const llvm::DenseSet<unsigned> &merged) {
  std::vector<unsigned> newIndex(live.buffers.size());
  std::vector<LiveBuffer> kept;
  kept.reserve(live.buffers.size() - merged.size());
  for (unsigned i = 0; i < live.buffers.size(); ++i) {
    newIndex[i] = unsigned(kept.size());
    if (!merged.contains(i))
      kept.push_back(std::move(live.buffers[i]));
  }
  live.buffers = std::move(kept);
  for (unsigned &buffer : live.bufferOfValue)
    buffer = newIndex[buffer];
  for (auto &entry : live.workspaceBufferOf)
    entry.second = newIndex[entry.second];
  if (live.stagingBuffer)
    live.stagingBuffer = newIndex[*live.stagingBuffer];
}

FailureOr<StepLiveness> graphc::computeStepLiveness(func::FuncOp func, bool reuseDyingOperands,
                                                    bool withNames, ArgumentBuffers *arguments) {
  StepLiveness live;
  if (!func.getBody().hasOneBlock())
    return func.emitError("graphc plans single-block functions only"), failure();
  Block &body = func.getBody().front();
  live.body = &body;

  // One walk over the ops (each is a cache miss on a large step): the steps; the values'
  // numbers (the arguments, then each step's results); each step's operands' numbers,
  // looked up once; and the last reading step of every value (-1: none).
  LivenessScratch scratch;
  LossOp onlyLoss;
  bool severalLosses = false;
  unsigned values = func.getNumArguments();
  auto numberOf = [&](Value v) {
    std::optional<unsigned> number = live.valueNumber(v);
    return number ? int(*number) : -1;
  };
  if (arguments && arguments->stepsHint) {
    size_t steps = arguments->stepsHint + arguments->stepsHint / 8;
    live.steps.reserve(steps);
    live.stepOf.reserve(steps);
    live.resultBase.reserve(steps + 1);
    scratch.operandBase.reserve(steps + 1);
    scratch.operandNumbers.reserve(2 * steps);
  }
  for (Operation &op : body.without_terminator()) {
    const unsigned step = unsigned(live.steps.size());
    live.steps.push_back(&op);
    live.stepOf[&op] = step;
    live.resultBase.push_back(values);
    values += op.getNumResults();
    scratch.lastRead.resize(values, -1); // (amortised: the vector's capacity doubles)
    scratch.operandBase.push_back(unsigned(scratch.operandNumbers.size()));
    for (Value operand : op.getOperands()) {
      int number = numberOf(operand);
      scratch.operandNumbers.push_back(number);
      if (number >= 0)
        scratch.lastRead[number] = int64_t(step); // steps ascend; defined before, so numbered
    }
    if (auto loss = dyn_cast<LossOp>(op)) {
      severalLosses = severalLosses || onlyLoss;
      onlyLoss = loss;
    }
  }
  const size_t stepCount = live.steps.size();
  if (arguments)
    arguments->stepsHint = stepCount;
  const int64_t lastStep = std::max<int64_t>(0, int64_t(stepCount) - 1);
  live.resultBase.push_back(values);
  scratch.operandBase.push_back(unsigned(scratch.operandNumbers.size()));
  scratch.lastRead.resize(values, -1); // the arguments of a step without ops
  live.bufferOfValue.assign(values, 0);
  live.buffers.reserve(stepCount + func.getNumArguments());
  auto readAfterTheStep = [&](Value v) {
    if (int number = numberOf(v); number >= 0)
      scratch.lastRead[number] = int64_t(stepCount);
  };
  for (Value operand : body.getTerminator()->getOperands())
    readAfterTheStep(operand);
  if (Value prediction = severalLosses ? Value() : predictionOfOnlyLoss(onlyLoss))
    readAfterTheStep(prediction); // = reportedPrediction

  // `definingOp` null: a function argument. Names are built only when asked for (the
  // rematerialization search measures thousands of variants and reads only sizes and ranges).
  auto newBuffer = [&](Value v, unsigned number, std::string kind, Operation *definingOp,
                       int64_t first) {
    if (auto ranked = dyn_cast<RankedTensorType>(v.getType()); !ranked || !ranked.hasStaticShape())
      return false;
    LiveBuffer buffer;
    if (withNames) {
      buffer.name = valueName(v, first);
      buffer.op = definingOp ? definingOp->getName().stripDialect().str() : std::string("arg");
    }
    buffer.kind = std::move(kind);
    buffer.bytes = tensorBytes(v.getType());
    buffer.first = buffer.last = first;
    buffer.values.push_back(v);
    live.bufferOfValue[number] = unsigned(live.buffers.size());
    live.buffers.push_back(std::move(buffer));
    scratch.bufferLastRead.push_back(scratch.lastRead[number]);
    scratch.pinned.push_back(false);
    return true;
  };
  // A buffer without values (a workspace, the staging region).
  auto newScratchBuffer = [&](LiveBuffer buffer) {
    live.buffers.push_back(std::move(buffer));
    scratch.bufferLastRead.push_back(-1);
    scratch.pinned.push_back(false);
    return unsigned(live.buffers.size() - 1);
  };

  ArrayAttr argAttrs = func.getArgAttrsAttr();
  if (withNames)
    arguments = nullptr;
  if (arguments && arguments->body == &body && arguments->functionType == func.getFunctionType() &&
      arguments->argAttrs == argAttrs) {
    llvm::append_range(live.buffers, arguments->buffers);
    scratch.pinned = arguments->pinned;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      live.bufferOfValue[i] = i;
      scratch.bufferLastRead.push_back(scratch.lastRead[i]);
      if (arguments->persistent[i])
        live.buffers[i].last = lastStep;
    }
  } else {
    // The argument attributes are looked up by interned name (a pointer comparison per entry,
    // where a string key compares characters).
    auto kindName = StringAttr::get(func.getContext(), kKindAttr);
    auto spaceName = StringAttr::get(func.getContext(), kMemorySpaceAttr);
    std::vector<bool> persistentArguments;
    for (BlockArgument arg : func.getArguments()) {
      auto attrs = argAttrs ? dyn_cast<DictionaryAttr>(argAttrs[arg.getArgNumber()]) : nullptr;
      auto kind = attrs ? dyn_cast_or_null<StringAttr>(attrs.get(kindName)) : nullptr;
      std::string k = kind ? kind.str() : "input";
      if (!newBuffer(arg, arg.getArgNumber(), k, nullptr, 0))
        return func.emitError() << "argument " << arg.getArgNumber()
                                << " needs a static shape, got " << arg.getType(),
               failure();
      bool persistent = k == "parameter" || k == "optimizer_state" || k == "batch_stats";
      if (persistent)
        live.buffers.back().last = lastStep; // persists across training steps
      persistentArguments.push_back(persistent);
      scratch.pinned.back() = persistent || k == "input"; // no result takes these over
      if (auto space = attrs ? dyn_cast_or_null<StringAttr>(attrs.get(spaceName)) : nullptr)
        live.buffers.back().host = space.getValue() == "host";
    }
    if (arguments) {
      arguments->body = &body;
      arguments->functionType = func.getFunctionType();
      arguments->argAttrs = argAttrs;
      arguments->buffers.assign(live.buffers.begin(), live.buffers.end());
      arguments->pinned = scratch.pinned;
      arguments->persistent = std::move(persistentArguments);
    }
  }

  if (uint64_t bytes = nextBatchStagingBytes(func)) {
    LiveBuffer staging;
    if (withNames) {
      staging.name = "next_batch_staging";
      staging.op = "staging";
    }
    staging.kind = "input_staging";
    staging.bytes = bytes;
    staging.first = 0;
    staging.last = lastStep; // written by the copy stream while any op of the step runs
    staging.staging = true;
    live.stagingBuffer = newScratchBuffer(std::move(staging));
  }

  // The backward region: every op that (transitively) reads the loss gradient (only the
  // kinds of results, which are left empty without names, need it).
  llvm::DenseSet<Operation *> backward;
  if (withNames)
    for (Operation *op : live.steps)
      if (isa<LossBackwardOp>(op) || llvm::any_of(op->getOperands(), [&](Value v) {
            Operation *def = v.getDefiningOp();
            return def && backward.contains(def);
          }))
        backward.insert(op);

  llvm::DenseSet<unsigned> merged; // buffers moved inside a bucket (placeInsideConcat)
  for (auto [step, op] : llvm::enumerate(live.steps)) {
    ArrayRef<int> operands = scratch.operandsOf(step);
    const unsigned results = live.resultBase[step];
    // The op's scratch lives during its own step only.
    auto addWorkspace = [&, step = step, op = op] {
      uint64_t bytes = workspaceBytes(op);
      if (!bytes)
        return;
      LiveBuffer ws;
      if (withNames) {
        ws.name = valueName(op->getResult(0), step) + ".workspace";
        ws.kind = "workspace";
        ws.op = op->getName().stripDialect().str();
      }
      ws.bytes = bytes;
      ws.first = ws.last = step;
      ws.workspaceOf = op;
      live.workspaceBufferOf[op] = newScratchBuffer(std::move(ws));
    };
    if (reuseDyingOperands && op->getNumResults() == 1) {
      // An elementwise op whose operand dies here takes over the operand's buffer when the
      // whole buffer dies here too.
      bool reused = false;
      for (unsigned index : reusableOperandsOf(op)) {
        int number = operands[index];
        if (number < 0 || scratch.lastRead[number] != int64_t(step))
          continue;
        unsigned id = live.bufferOfValue[number];
        LiveBuffer &buffer = live.buffers[id];
        if (scratch.pinned[id] || buffer.bytes != tensorBytes(op->getResult(0).getType()) ||
            scratch.bufferLastRead[id] > int64_t(step))
          continue;
        if (live.byteOffsetOf.count(op->getOperand(index)))
          continue; // a view inside a bigger buffer: the result would be placed elsewhere
        buffer.values.push_back(op->getResult(0));
        scratch.join(live, results, id);
        reused = true;
        break;
      }
      if (reused) {
        addWorkspace();
        continue;
      }
    }
    for (OpResult result : op->getResults()) {
      const unsigned number = results + result.getResultNumber();
      int64_t source = inPlaceOperandOf(op, result.getResultNumber());
      if (source >= 0) {
        Value operand = op->getOperand(source);
        unsigned id = live.bufferOfValue[operands[source]];
        // Writing in place is only sound when nothing reads the old value afterwards (a
        // view writes nothing): no value of the buffer is read after this step (the
        // terminator and the reported prediction read after every step).
        if (!isa<ReshapeOp>(op) && scratch.bufferLastRead[id] > int64_t(step))
          return op->emitError() << "in-place update of '" << live.buffers[id].name
                                 << "' while it is still used by a later op",
                 failure();
        live.buffers[id].values.push_back(result);
        scratch.join(live, number, id);
        if (auto offset = live.byteOffsetOf.find(operand); offset != live.byteOffsetOf.end())
          live.byteOffsetOf[result] = offset->second;
        continue;
      }
      if (isa<SliceOp>(op) && op->hasAttr(kBucketViewAttr)) {
        // A view of the (rank-1) input at the slice's offset.
        auto slice = cast<SliceOp>(op);
        auto inputType = cast<RankedTensorType>(slice.getInput().getType());
        if (inputType.getRank() == 1 && operands[0] >= 0) {
          uint64_t offset = live.byteOffsetOf.lookup(slice.getInput()) +
                            uint64_t(slice.getOffset()) * (inputType.getElementTypeBitWidth() / 8);
          unsigned id = live.bufferOfValue[operands[0]];
          live.buffers[id].values.push_back(result);
          scratch.join(live, number, id);
          if (offset)
            live.byteOffsetOf[result] = offset;
          continue;
        }
      }
      if (!newBuffer(result, number, withNames ? resultKind(result, backward) : std::string(), op,
                     step))
        return op->emitError() << "result needs a static shape, got " << result.getType(),
               failure();
      if (isa<ConcatOp>(op) && op->hasAttr(kBucketViewAttr))
        placeInsideConcat(live, scratch, cast<ConcatOp>(op), int64_t(step), merged);
    }
    addWorkspace();
  }

  // Extend each buffer to the last read of its values; returned values (and the prediction
  // the runtime reads for accuracy), read "after the last step", live to the end of the step.
  for (auto [buffer, read] : llvm::zip(live.buffers, scratch.bufferLastRead))
    if (read >= 0)
      buffer.last = std::max(buffer.last, std::min(read, lastStep));
  if (!merged.empty())
    dropMergedBuffers(live, merged);
  return live;
}
