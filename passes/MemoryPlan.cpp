// Adapter between IR and the planner core; see MemoryPlan.h.
#include "passes/MemoryPlan.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace graphc;

void graphc::planToCapacity(plan::Plan &plan, uint64_t capacity) {
  plan::planWithHostBuffers(plan, [&](plan::Plan &p) {
    plan::PlanOptions options;
    options.heuristicOnly = true;
    plan::planNearOptimal(p, options);
    if (p.arenaBytes <= capacity || plan::lowerBound(p.buffers, p.alignment) > capacity)
      return;
    options.heuristicOnly = false;
    options.capacity = capacity;
    options.nodeLimit = capacitySearchNodes(p.buffers.size());
    options.timeLimitSeconds = 1e9; // the node limit decides
    plan::planNearOptimal(p, options);
  });
}

plan::Plan graphc::planProblemFromLiveness(const StepLiveness &live, uint64_t alignment) {
  plan::Plan plan;
  plan.alignment = alignment;
  plan.buffers.reserve(live.buffers.size());
  for (const LiveBuffer &buffer : live.buffers) {
    plan::Buffer b;
    b.name = buffer.name;
    b.bytes = buffer.bytes;
    b.first = buffer.first;
    b.last = buffer.last;
    b.kind = buffer.kind;
    b.op = buffer.op;
    b.host = buffer.host;
    plan.buffers.push_back(std::move(b));
  }
  return plan;
}

void graphc::annotatePlan(func::FuncOp func, const StepLiveness &live, const plan::Plan &plan,
                          bool inPlace) {
  Builder b(func.getContext());
  for (BlockArgument arg : func.getArguments())
    func.setArgAttr(arg.getArgNumber(), kOffsetAttr,
                    b.getI64IntegerAttr(plan.buffers[*live.bufferOf(arg)].offset));
  for (Operation *op : live.steps) {
    if (op->getNumResults()) {
      SmallVector<int64_t> offsets;
      for (Value result : op->getResults())
        offsets.push_back(plan.buffers[*live.bufferOf(result)].offset +
                          live.byteOffsetOf.lookup(result));
      op->setAttr(kOffsetsAttr, b.getDenseI64ArrayAttr(offsets));
    }
    if (auto it = live.workspaceBufferOf.find(op); it != live.workspaceBufferOf.end())
      op->setAttr(kWorkspaceOffsetAttr, b.getI64IntegerAttr(plan.buffers[it->second].offset));
  }
  if (live.stagingBuffer)
    func->setAttr(kStagingOffsetAttr,
                  b.getI64IntegerAttr(plan.buffers[*live.stagingBuffer].offset));
  else
    func->removeAttr(kStagingOffsetAttr);
  func->setAttr(kArenaBytesAttr, b.getI64IntegerAttr(plan.arenaBytes));
  if (plan.hostArenaBytes)
    func->setAttr(kHostArenaBytesAttr, b.getI64IntegerAttr(plan.hostArenaBytes));
  else
    func->removeAttr(kHostArenaBytesAttr);
  func->setAttr(kLowerBoundAttr,
                b.getI64IntegerAttr(plan::lowerBound(plan.buffers, plan.alignment)));
  func->setAttr(kAlignmentAttr, b.getI64IntegerAttr(plan.alignment));
  if (inPlace)
    func->setAttr(kInPlaceAttr, b.getUnitAttr());
  else
    func->removeAttr(kInPlaceAttr);
}

int64_t graphc::plannedOffset(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    auto attr = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), kOffsetAttr);
    return attr ? attr.getInt() : -1;
  }
  auto offsets = value.getDefiningOp()->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr);
  unsigned index = cast<OpResult>(value).getResultNumber();
  return offsets && index < offsets.size() ? offsets[index] : -1;
}

bool graphc::plannedInPlace(Value whole, Value part, int64_t axis, int64_t offset) {
  auto type = cast<RankedTensorType>(whole.getType());
  int64_t inner = 1;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (d < axis && type.getDimSize(d) != 1)
      return false;
    if (d > axis)
      inner *= type.getDimSize(d);
  }
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  int64_t base = plannedOffset(whole), at = plannedOffset(part);
  return base >= 0 && at >= 0 && at == base + offset * inner * elementBytes;
}

static std::string locationString(Location loc) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto name = dyn_cast<NameLoc>(loc))
    os << name.getName().str();
  else if (auto file = dyn_cast<FileLineColLoc>(loc))
    os << file.getFilename().str() << ":" << file.getLine() << ":" << file.getColumn();
  else
    loc.print(os);
  return text;
}

FailureOr<PlannedStep> graphc::readPlannedStep(func::FuncOp func) {
  auto arena = func->getAttrOfType<IntegerAttr>(kArenaBytesAttr);
  auto alignment = func->getAttrOfType<IntegerAttr>(kAlignmentAttr);
  if (!arena || !alignment)
    return func.emitError("function has not been planned (run graphc-plan-memory)"), failure();
  auto live = computeStepLiveness(func, func->hasAttr(kInPlaceAttr));
  if (failed(live))
    return failure();
  PlannedStep planned;
  planned.plan = planProblemFromLiveness(*live, alignment.getInt());
  planned.plan.arenaBytes = arena.getInt();
  if (auto host = func->getAttrOfType<IntegerAttr>(kHostArenaBytesAttr))
    planned.plan.hostArenaBytes = host.getInt();
  planned.workspaceOf.assign(live->buffers.size(), nullptr);
  for (auto [i, buffer] : llvm::enumerate(live->buffers)) {
    planned.workspaceOf[i] = buffer.workspaceOf;
    int64_t offset = -1;
    if (buffer.workspaceOf)
      offset = buffer.workspaceOf->getAttrOfType<IntegerAttr>(kWorkspaceOffsetAttr).getInt();
    else if (buffer.staging) {
      if (auto attr = func->getAttrOfType<IntegerAttr>(kStagingOffsetAttr))
        offset = attr.getInt();
    } else {
      offset = plannedOffset(buffer.values.front());
      if (offset >= 0) // a value inside a bucket (kBucketViewAttr) sits above its buffer's start
        offset -= int64_t(live->byteOffsetOf.lookup(buffer.values.front()));
    }
    if (offset < 0)
      return func.emitError() << "buffer '" << buffer.name << "' has no planned offset",
             failure();
    planned.plan.buffers[i].offset = offset;
  }
  for (auto [i, op] : llvm::enumerate(live->steps))
    planned.steps.push_back({int64_t(i), op->getName().getStringRef().str(),
                             locationString(op->getLoc())});
  // The bound is the step's: a workspace that graphc-grow-workspaces enlarged into free bytes
  // counts what its kernel needs.
  std::vector<plan::Buffer> needed = planned.plan.buffers;
  for (auto [i, buffer] : llvm::enumerate(live->buffers))
    if (buffer.workspaceOf)
      needed[i].bytes = kernelWorkspaceBytes(buffer.workspaceOf);
  planned.lowerBound = plan::lowerBound(needed, planned.plan.alignment);
  return planned;
}
