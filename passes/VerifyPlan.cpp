// graphc-verify-plan: an independent check of a planned training step.
//
// It does not reuse the planner's liveness code: it walks the IR itself, giving each value the
// range [defining step, last using step] (arguments start at 0; parameters, optimizer state
// and returned values live to the end), merges values that share storage after checking that
// they were given the same offset, adds one workspace range per kernel that needs scratch, and
// hands the result to plan::verifyPlan, whose sweep is itself independent of the planner's
// best-fit search. Any overlap of simultaneously live bytes, or any byte outside the arena,
// fails the compile with the names of the buffers involved.
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

namespace graphc {
#define GEN_PASS_DEF_VERIFYPLAN
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;

namespace {
struct Range {
  int64_t first, last;
  int64_t offset;
  uint64_t bytes;
  std::string name, kind;
  bool host = false; // graph.memory_space = "host": must lie in the host arena
};

/// A bucket concat (kBucketViewAttr) whose operands were planned inside its result: each
/// operand's storage lies at the result's offset plus the bytes before it, covers the operand
/// exactly, is a value of the step, appears once and is dead after the concat. Then the
/// operands' ranges become part of the result's (which starts at the earliest of them) and
/// hold no bytes of their own. Anything else is left alone, so a plan that put operands inside
/// their concat without these conditions fails as an overlap.
template <typename DiesAt>
static void
absorbPartsPlannedInside(graph::ConcatOp concat, unsigned bucket, int64_t at,
                         std::vector<Range> &ranges, llvm::DenseMap<Value, unsigned> &rangeOf,
                         std::vector<llvm::SmallVector<Value>> &members, const DiesAt &diesAt) {
  if (cast<RankedTensorType>(concat.getResult().getType()).getRank() != 1)
    return;
  llvm::SmallVector<unsigned, 8> parts;
  int64_t offset = ranges[bucket].offset;
  for (Value in : concat.getInputs()) {
    auto it = rangeOf.find(in);
    if (it == rangeOf.end() || it->second == bucket || llvm::is_contained(parts, it->second))
      return;
    const Range &part = ranges[it->second];
    if (part.kind != "value" || part.offset != offset || part.bytes != tensorBytes(in.getType()) ||
        !diesAt(it->second, at))
      return;
    parts.push_back(it->second);
    offset += int64_t(part.bytes);
  }
  for (unsigned id : parts) {
    ranges[bucket].first = std::min(ranges[bucket].first, ranges[id].first);
    ranges[id].bytes = 0;
    for (Value v : members[id]) {
      rangeOf[v] = bucket;
      members[bucket].push_back(v);
    }
    members[id].clear();
  }
}

struct VerifyPlanPass : graphc::impl::VerifyPlanBase<VerifyPlanPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto arena = func->getAttrOfType<IntegerAttr>(kArenaBytesAttr);
    auto alignment = func->getAttrOfType<IntegerAttr>(kAlignmentAttr);
    if (!arena || !alignment || arena.getInt() < 0 || alignment.getInt() <= 0) {
      func.emitError("graphc-verify-plan: function has no valid plan (non-negative "
                     "graph.arena_bytes and positive graph.alignment attributes)");
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    int64_t numSteps = 0;
    llvm::DenseMap<Operation *, int64_t> step;
    for (Operation &op : body.without_terminator())
      step[&op] = numSteps++;
    int64_t end = std::max<int64_t>(numSteps - 1, 0);

    // Union of storage-sharing values: each value maps to the index of its range.
    llvm::DenseMap<Value, unsigned> rangeOf;
    std::vector<Range> ranges;
    bool ok = true;
    // `expected`: where a value sharing storage must be planned (its source's offset; a value
    // inside a bucket sits above the storage's start).
    auto addValue = [&](Value v, int64_t first, StringRef kind, int64_t root,
                        int64_t expected = -1) {
      int64_t offset = plannedOffset(v);
      if (offset < 0) {
        emitError(v.getLoc()) << "value has no planned offset";
        ok = false;
        return;
      }
      if (root >= 0) {
        Range &r = ranges[root];
        if (expected < 0)
          expected = r.offset;
        if (expected != offset) {
          emitError(v.getLoc()) << "value shares storage with '" << r.name
                                << "' but is planned at offset " << offset << " instead of "
                                << expected;
          ok = false;
        }
        rangeOf[v] = root;
        return;
      }
      rangeOf[v] = ranges.size();
      ranges.push_back({first, first, offset, tensorBytes(v.getType()), valueName(v, first),
                        kind.str()});
    };
    for (BlockArgument arg : func.getArguments()) {
      auto kind = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kKindAttr);
      StringRef k = kind ? kind.getValue() : "input";
      addValue(arg, 0, k, -1);
      if (ok && (k == "parameter" || k == "optimizer_state" || k == "batch_stats"))
        ranges.back().last = end;
      auto space = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kMemorySpaceAttr);
      if (ok && space && space.getValue() == "host") {
        // Only the optimizer's state may leave the device: the update kernels are the only ones
        // that can reach host memory (docs/fitting.md, offload).
        if (k != "optimizer_state") {
          emitError(arg.getLoc()) << "argument " << arg.getArgNumber() << " of kind '" << k
                                  << "' is in host memory; only optimizer_state may be";
          ok = false;
        }
        ranges.back().host = true;
        for (OpOperand &use : arg.getUses()) {
          if (k != "optimizer_state")
            break; // already refused above
          Operation *user = use.getOwner();
          bool stateOfUpdate =
              user->hasTrait<OpTrait::IsTerminator>() ||
              (isa<graph::MomentumUpdateOp>(user) &&
               use.get() == cast<graph::MomentumUpdateOp>(user).getVelocity()) ||
              (isa<graph::AdamUpdateOp>(user) &&
               (use.get() == cast<graph::AdamUpdateOp>(user).getM() ||
                use.get() == cast<graph::AdamUpdateOp>(user).getV()));
          if (!stateOfUpdate) {
            user->emitError() << "reads argument " << arg.getArgNumber()
                              << ", which is in host memory; only optimizer updates may";
            ok = false;
          }
        }
      }
    }
    // Last reading step of each value (the terminator reads after every step), so that an
    // elementwise result planned over one of its operands can be checked: that is only sound
    // when every value in the operand's storage is dead after this op.
    llvm::DenseMap<Value, int64_t> lastRead;
    for (Operation &op : body)
      for (Value operand : op.getOperands())
        lastRead[operand] = std::max(lastRead.lookup(operand),
                                     op.hasTrait<OpTrait::IsTerminator>() ? numSteps : step[&op]);
    // The runtime reads the reported prediction after the step (accuracy).
    Value prediction = reportedPrediction(func);
    if (prediction)
      lastRead[prediction] = numSteps;
    std::vector<llvm::SmallVector<Value>> members(ranges.size());
    for (auto [v, index] : rangeOf)
      members[index].push_back(v);
    auto diesAt = [&](unsigned index, int64_t at) {
      return llvm::all_of(members[index], [&](Value v) { return lastRead.lookup(v) <= at; });
    };
    for (Operation &op : body.without_terminator()) {
      // A bucket slice planned as a view (kBucketViewAttr): its bytes lie inside the input's
      // storage, at the slice's offset, and share its range.
      if (auto slice = dyn_cast<graph::SliceOp>(op); slice && op.hasAttr(kBucketViewAttr)) {
        auto it = rangeOf.find(slice.getInput());
        if (it != rangeOf.end() &&
            cast<RankedTensorType>(slice.getInput().getType()).getRank() == 1 &&
            plannedInPlace(slice.getInput(), slice.getResult(), 0, slice.getOffset())) {
          rangeOf[slice.getResult()] = it->second;
          members[it->second].push_back(slice.getResult());
          continue;
        }
      }
      for (OpResult result : op.getResults()) {
        int64_t source = inPlaceOperandOf(&op, result.getResultNumber());
        int64_t root = source >= 0 ? int64_t(rangeOf.lookup(op.getOperand(source))) : -1;
        if (root < 0 && op.getNumResults() == 1)
          for (unsigned index : reusableOperandsOf(&op)) {
            auto it = rangeOf.find(op.getOperand(index));
            if (it != rangeOf.end() && ranges[it->second].offset == plannedOffset(result) &&
                diesAt(it->second, step[&op])) {
              root = it->second;
              break;
            }
          }
        addValue(result, step[&op], "value", root,
                 source >= 0 ? plannedOffset(op.getOperand(source)) : -1);
        // Kept up to date even after an error, so that later checks never index past it.
        members.resize(ranges.size());
        if (auto it = rangeOf.find(result); it != rangeOf.end())
          members[it->second].push_back(result);
      }
      if (auto concat = dyn_cast<graph::ConcatOp>(op); concat && op.hasAttr(kBucketViewAttr))
        if (auto it = rangeOf.find(concat.getResult()); it != rangeOf.end())
          absorbPartsPlannedInside(concat, it->second, step[&op], ranges, rangeOf, members, diesAt);
      if (uint64_t bytes = workspaceBytes(&op)) {
        auto attr = op.getAttrOfType<IntegerAttr>(kWorkspaceOffsetAttr);
        if (!attr) {
          op.emitError("kernel needs a workspace but has no graph.workspace_offset");
          ok = false;
          continue;
        }
        if (uint64_t need = kernelWorkspaceBytes(&op); bytes < need) {
          op.emitError() << "graph.workspace_bytes = " << bytes << " is less than the " << need
                         << " bytes the kernel's workspace needs";
          ok = false;
          continue;
        }
        ranges.push_back({step[&op], step[&op], attr.getInt(), bytes,
                          valueName(op.getResult(0), step[&op]) + ".workspace", "workspace"});
      }
    }
    // An op that overwrites its operand in place must be the operand's last reader.
    for (Operation &op : body.without_terminator())
      for (OpResult result : op.getResults()) {
        int64_t source = inPlaceOperandOf(&op, result.getResultNumber());
        if (source < 0 || isa<graph::ReshapeOp>(op))
          continue;
        for (Operation *user : op.getOperand(source).getUsers()) {
          int64_t at = user->hasTrait<OpTrait::IsTerminator>() ? numSteps : step.lookup(user);
          if (user != &op && at > step[&op]) {
            op.emitError() << "overwrites '" << valueName(op.getOperand(source), step[&op])
                           << "' in place, but a later op still reads the old value";
            ok = false;
          }
        }
      }
    if (!ok)
      return signalPassFailure();
    for (Operation &op : body)
      for (Value operand : op.getOperands())
        if (auto it = rangeOf.find(operand); it != rangeOf.end()) {
          Range &r = ranges[it->second];
          r.last = std::max(r.last, op.hasTrait<OpTrait::IsTerminator>() ? end : step[&op]);
        }
    if (prediction)
      if (auto it = rangeOf.find(prediction); it != rangeOf.end())
        ranges[it->second].last = end;

    plan::Plan plan;
    plan.alignment = alignment.getInt();
    plan.arenaBytes = arena.getInt();
    if (auto host = func->getAttrOfType<IntegerAttr>(kHostArenaBytesAttr))
      plan.hostArenaBytes = host.getInt();
    for (Range &r : ranges) {
      if (r.bytes == 0 && r.kind == "value")
        continue; // planned inside a bucket (absorbPartsPlannedInside)
      plan::Buffer b;
      b.name = r.name;
      b.bytes = r.bytes;
      b.first = r.first;
      b.last = r.last;
      b.offset = r.offset;
      b.kind = r.kind;
      b.host = r.host;
      plan.buffers.push_back(std::move(b));
    }
    std::string error = plan::verifyPlan(plan);
    if (!error.empty()) {
      func.emitError() << "memory plan is invalid: " << error;
      return signalPassFailure();
    }
  }
};
} // namespace
