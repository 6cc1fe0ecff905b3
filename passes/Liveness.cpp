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
  auto shape = [](Value v) { return cast<RankedTensorType>(v.getType()).getShape(); };
  // All three conv kernels stage one tile of one image's im2col matrix: C*R*S x rows*OW, for
  // one group's channels (the filter's C / groups).
  auto im2col = [&](ArrayRef<int64_t> filter, ArrayRef<int64_t> out) {
    return rt::conv2dWorkspaceBytes(filter[1], filter[2], filter[3],
                                    rt::conv2dTileRows(im2colTileRows(op), out[2]), out[3]);
  };
  return llvm::TypeSwitch<Operation *, uint64_t>(op)
      .Case([&](Conv2dOp conv) { return im2col(shape(conv.getFilter()), shape(conv.getResult())); })
      .Case([&](Conv2dBackwardDataOp conv) {
        return im2col(shape(conv.getFilter()), shape(conv.getGrad()));
      })
      .Case([&](Conv2dBackwardFilterOp conv) {
        return im2col(shape(conv.getResult()), shape(conv.getGrad()));
      })
      // One block of scores (two in the backward pass).
      .Case<AttentionOp, AttentionBackwardOp>([&](Operation *attention) {
        auto q = shape(attention->getOperand(isa<AttentionOp>(attention) ? 0 : 1));
        auto k = shape(attention->getOperand(isa<AttentionOp>(attention) ? 1 : 2));
        return rt::attentionWorkspaceBytes(q[0], attentionQueryBlock(attention), k[1],
                                           isa<AttentionBackwardOp>(attention));
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
  if (isa<ReluOp, SigmoidOp, TanhOp, ClipOp, DropoutOp, DropoutBackwardOp, ScaleOp,
          LossScaleOp, ActivationOp, BatchNormApplyOp>(op))
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
    if (role && role.getValue() == "data")
      data += tensorBytes(arg.getType());
    else if (role && role.getValue() == "labels")
      labels += tensorBytes(arg.getType());
  }
  return data + labels ? rt::stagingBytes(data, labels) : 0;
}

/// A bucket concat (kBucketViewAttr): when every operand's buffer is a value of the step
/// (not an argument, workspace or staging region), covers that operand whole, has no value at
/// an offset already, dies at the concat and appears once, every such buffer moves inside the
/// concat's result buffer at the operand's offset (its values with it), and the result buffer
/// starts where the earliest of them did. Otherwise nothing changes (the concat copies).
template <typename DiesAt>
static void placeInsideConcat(StepLiveness &live, ConcatOp concat, int64_t step,
                              const DiesAt &diesAt, llvm::DenseSet<unsigned> &merged) {
  auto resultType = cast<RankedTensorType>(concat.getResult().getType());
  if (resultType.getRank() != 1)
    return;
  unsigned target = live.bufferOf.at(concat.getResult());
  llvm::SmallVector<unsigned, 8> parts;
  for (Value in : concat.getInputs()) {
    auto it = live.bufferOf.find(in);
    if (it == live.bufferOf.end())
      return;
    const LiveBuffer &buffer = live.buffers[it->second];
    if (it->second == target || buffer.workspaceOf || buffer.staging ||
        buffer.bytes != tensorBytes(in.getType()) || llvm::is_contained(parts, it->second) ||
        llvm::any_of(
            buffer.values,
            [&](Value v) { return isa<BlockArgument>(v) || live.byteOffsetOf.count(v); }) ||
        !diesAt(it->second, step))
      return;
    parts.push_back(it->second);
  }
  uint64_t offset = 0;
  LiveBuffer &bucket = live.buffers[target];
  for (auto [in, id] : llvm::zip(concat.getInputs(), parts)) {
    LiveBuffer &part = live.buffers[id];
    for (Value v : part.values) {
      live.bufferOf[v] = target;
      if (offset)
        live.byteOffsetOf[v] = offset;
      bucket.values.push_back(v);
    }
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
  for (auto &entry : live.bufferOf)
    entry.second = newIndex[entry.second];
  for (auto &entry : live.workspaceBufferOf)
    entry.second = newIndex[entry.second];
  if (live.stagingBuffer)
    live.stagingBuffer = newIndex[*live.stagingBuffer];
}

FailureOr<StepLiveness> graphc::computeStepLiveness(func::FuncOp func,
                                                    bool reuseDyingOperands, bool withNames) {
  StepLiveness live;
  if (!func.getBody().hasOneBlock())
    return func.emitError("graphc plans single-block functions only"), failure();
  Block &body = func.getBody().front();
  LossOp onlyLoss;
  bool severalLosses = false;
  for (Operation &op : body.without_terminator()) {
    live.steps.push_back(&op);
    if (auto loss = dyn_cast<LossOp>(op)) {
      severalLosses = severalLosses || onlyLoss;
      onlyLoss = loss;
    }
  }
  int64_t lastStep = std::max<int64_t>(0, int64_t(live.steps.size()) - 1);
  live.buffers.reserve(live.steps.size() + func.getNumArguments());
  live.bufferOf.reserve(2 * live.steps.size() + func.getNumArguments());
  llvm::DenseMap<Operation *, int64_t> stepOf;
  stepOf.reserve(live.steps.size());
  for (auto [i, op] : llvm::enumerate(live.steps))
    stepOf[op] = int64_t(i);

  // `definingOp` null: a function argument. Names are built only when asked for (the
  // rematerialization search measures thousands of variants and reads only sizes and ranges).
  auto newBuffer = [&](Value v, std::string kind, Operation *definingOp, int64_t first) {
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
    live.bufferOf[v] = live.buffers.size();
    live.buffers.push_back(std::move(buffer));
    return true;
  };

  for (BlockArgument arg : func.getArguments()) {
    auto kind = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kKindAttr);
    std::string k = kind ? kind.str() : "input";
    if (!newBuffer(arg, k, nullptr, 0))
      return func.emitError() << "argument " << arg.getArgNumber() << " needs a static shape, got "
                              << arg.getType(), failure();
    if (k == "parameter" || k == "optimizer_state" || k == "batch_stats")
      live.buffers.back().last = lastStep; // persists across training steps
    if (auto space = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kMemorySpaceAttr))
      live.buffers.back().host = space.getValue() == "host";
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
    live.stagingBuffer = unsigned(live.buffers.size());
    live.buffers.push_back(std::move(staging));
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

  // Last reading step of every value (the terminator reads after the last step).
  llvm::DenseMap<Value, int64_t> lastRead;
  lastRead.reserve(2 * live.steps.size());
  for (auto [step, op] : llvm::enumerate(live.steps))
    for (Value operand : op->getOperands()) {
      auto [it, inserted] = lastRead.try_emplace(operand, int64_t(step));
      if (!inserted)
        it->second = std::max(it->second, int64_t(step));
    }
  for (Value operand : body.getTerminator()->getOperands())
    lastRead[operand] = int64_t(live.steps.size());
  Value prediction = severalLosses ? Value() : predictionOfOnlyLoss(onlyLoss); // = reportedPrediction
  if (prediction)
    lastRead[prediction] = int64_t(live.steps.size());
  auto bufferDiesAt = [&](unsigned id, int64_t step) {
    for (Value v : live.buffers[id].values)
      if (lastRead.lookup(v) != step && !(lastRead.lookup(v) < step))
        return false;
    return true;
  };
  llvm::DenseSet<unsigned> merged; // buffers moved inside a bucket (placeInsideConcat)

  for (auto [step, op] : llvm::enumerate(live.steps)) {
    // The op's scratch lives during its own step only.
    auto addWorkspace = [&, step = step, op = op] {
      uint64_t bytes = workspaceBytes(op);
      if (!bytes)
        return;
      LiveBuffer ws;
      if (withNames)
        ws.name = valueName(op->getResult(0), step) + ".workspace";
      if (withNames) {
        ws.kind = "workspace";
        ws.op = op->getName().stripDialect().str();
      }
      ws.bytes = bytes;
      ws.first = ws.last = step;
      ws.workspaceOf = op;
      live.workspaceBufferOf[op] = live.buffers.size();
      live.buffers.push_back(std::move(ws));
    };
    if (reuseDyingOperands && op->getNumResults() == 1) {
      // An elementwise op whose operand dies here takes over the operand's buffer.
      bool reused = false;
      for (unsigned index : reusableOperandsOf(op)) {
        Value operand = op->getOperand(index);
        auto it = live.bufferOf.find(operand);
        if (it == live.bufferOf.end() || lastRead.lookup(operand) != int64_t(step))
          continue;
        LiveBuffer &buffer = live.buffers[it->second];
        if (buffer.kind == "parameter" || buffer.kind == "optimizer_state" ||
            buffer.kind == "batch_stats" || buffer.kind == "input" || buffer.bytes != tensorBytes(op->getResult(0).getType()) ||
            !bufferDiesAt(it->second, step))
          continue;
        if (live.byteOffsetOf.count(operand))
          continue; // a view inside a bigger buffer: the result would be placed elsewhere
        live.bufferOf[op->getResult(0)] = it->second;
        buffer.values.push_back(op->getResult(0));
        reused = true;
        break;
      }
      if (reused) {
        addWorkspace();
        continue;
      }
    }
    for (OpResult result : op->getResults()) {
      int64_t source = inPlaceOperandOf(op, result.getResultNumber());
      if (source >= 0) {
        Value operand = op->getOperand(source);
        unsigned id = live.bufferOf.at(operand);
        // Writing in place is only sound when nothing reads the old value afterwards (a
        // view writes nothing). The terminator counts as a use after every step.
        auto userStep = [&](Operation *user) {
          return user->hasTrait<OpTrait::IsTerminator>() ? int64_t(live.steps.size())
                                                         : stepOf.lookup(user);
        };
        if (!isa<ReshapeOp>(op))
          for (Value alias : live.buffers[id].values)
            for (Operation *user : alias.getUsers())
              if (user != op && user->getBlock() == &body && userStep(user) > int64_t(step))
                return op->emitError() << "in-place update of '" << live.buffers[id].name
                                       << "' while it is still used by a later op",
                       failure();
        live.bufferOf[result] = id;
        live.buffers[id].values.push_back(result);
        if (auto offset = live.byteOffsetOf.find(operand); offset != live.byteOffsetOf.end())
          live.byteOffsetOf[result] = offset->second;
        continue;
      }
      if (isa<SliceOp>(op) && op->hasAttr(kBucketViewAttr)) {
        // A view of the (rank-1) input at the slice's offset.
        auto slice = cast<SliceOp>(op);
        auto inputType = cast<RankedTensorType>(slice.getInput().getType());
        auto it = live.bufferOf.find(slice.getInput());
        if (inputType.getRank() == 1 && it != live.bufferOf.end()) {
          uint64_t offset = live.byteOffsetOf.lookup(slice.getInput()) +
                            uint64_t(slice.getOffset()) * (inputType.getElementTypeBitWidth() / 8);
          live.bufferOf[result] = it->second;
          live.buffers[it->second].values.push_back(result);
          if (offset)
            live.byteOffsetOf[result] = offset;
          continue;
        }
      }
      if (!newBuffer(result, withNames ? resultKind(result, backward) : std::string(), op, step))
        return op->emitError() << "result needs a static shape, got " << result.getType(),
               failure();
      if (isa<ConcatOp>(op) && op->hasAttr(kBucketViewAttr))
        placeInsideConcat(live, cast<ConcatOp>(op), int64_t(step), bufferDiesAt, merged);
    }
    addWorkspace();
  }
  if (!merged.empty())
    dropMergedBuffers(live, merged);

  // Extend each buffer to the last read of its values; returned values (and the prediction
  // the runtime reads for accuracy), read "after the last step", live to the end of the step.
  // Per buffer value rather than per operand: about a third of the lookups.
  for (LiveBuffer &buffer : live.buffers)
    for (Value v : buffer.values) {
      auto read = lastRead.find(v);
      if (read != lastRead.end())
        buffer.last = std::max(buffer.last, std::min(read->second, lastStep));
    }
  return live;
}
