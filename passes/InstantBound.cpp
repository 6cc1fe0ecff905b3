// Builds the instant program (InstantBound.h) from a training step's IR: one walk up from
// the instant's op for the ops that must run before it, one walk down for those that must run
// after it, one pass over the other ops for the values and producers, and one over the
// arguments for what is live at the instant whatever is recomputed. O(ops + uses) per
// instant.
#include "passes/InstantBound.h"

#include "passes/CostModel.h"
#include "passes/Liveness.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

namespace {

/// The value whose storage `v` is: through reshape views, and results written in place.
Value storageOf(Value v) {
  while (auto result = dyn_cast<OpResult>(v)) {
    if (isa<ReshapeOp>(result.getOwner())) {
      v = result.getOwner()->getOperand(0);
      continue;
    }
    int64_t operand = inPlaceOperandOf(result.getOwner(), result.getResultNumber());
    if (operand < 0)
      break;
    v = result.getOwner()->getOperand(unsigned(operand));
  }
  return v;
}

/// The ops of `body` that `op` depends on (walking operands up) or that depend on it (walking
/// results down; the terminator depends on everything).
llvm::DenseSet<Operation *> closure(Block &body, Operation *op, bool up) {
  llvm::DenseSet<Operation *> reached;
  SmallVector<Operation *> worklist = {op};
  while (!worklist.empty()) {
    Operation *current = worklist.pop_back_val();
    if (up) {
      for (Value operand : current->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (def->getBlock() == &body && reached.insert(def).second)
            worklist.push_back(def);
    } else {
      for (Operation *user : current->getUsers())
        if (user->getBlock() == &body && reached.insert(user).second)
          worklist.push_back(user);
    }
  }
  if (!up)
    reached.insert(body.getTerminator());
  return reached;
}

} // namespace

remat::BoundaryProblem graphc::instantProblem(func::FuncOp func, Operation *instant,
                                              int64_t budget) {
  remat::BoundaryProblem problem;
  Block &body = func.getBody().front();
  llvm::DenseSet<Operation *> before = closure(body, instant, /*up=*/true);
  llvm::DenseSet<Operation *> after = closure(body, instant, /*up=*/false);

  // Values: every result with storage of its own whose op may run before the instant.
  llvm::DenseMap<Value, unsigned> index;
  for (Operation &op : body.without_terminator()) {
    if (&op == instant || after.contains(&op) || isa<ReshapeOp>(op))
      continue;
    for (Value result : op.getResults())
      if (storageOf(result) == result) {
        index[result] = unsigned(problem.values.size());
        problem.values.push_back({int64_t(tensorBytes(result.getType())), -1, false, false});
      }
  }
  // Needed: read by an op that runs after the instant (through views); live: read by it. The
  // arguments read then or later are live at the instant too (an input is free once its last
  // reader has run).
  llvm::DenseSet<Value> argumentsRead;
  for (Operation &op : body) {
    bool reads = (after.contains(&op) && !isa<ReshapeOp>(op)) || &op == instant;
    if (!reads)
      continue;
    for (Value operand : op.getOperands()) {
      Value storage = storageOf(operand);
      if (isa<BlockArgument>(storage))
        argumentsRead.insert(storage);
      if (auto it = index.find(storage); it != index.end()) {
        problem.values[it->second].needed |= &op != instant;
        problem.values[it->second].live |= &op == instant;
      }
    }
  }

  // Producers: what running an op again after the instant costs and reads.
  auto inputsOf = [&](ValueRange operands) {
    std::vector<unsigned> inputs;
    for (Value operand : operands)
      if (auto it = index.find(storageOf(operand)); it != index.end())
        inputs.push_back(it->second); // arguments are live all step: left out
    return inputs;
  };
  auto addOp = [&](double flops, std::vector<unsigned> inputs, ArrayRef<Value> results) {
    int id = int(problem.ops.size());
    bool any = false;
    for (Value result : results)
      if (auto it = index.find(result); it != index.end()) {
        problem.values[it->second].producer = id;
        any = true;
      }
    if (any)
      problem.ops.push_back({flops, std::move(inputs)});
  };
  for (Operation &op : body.without_terminator()) {
    if (&op == instant || after.contains(&op) || isa<ReshapeOp>(op))
      continue;
    SmallVector<Value> results(op.getResults());
    if (!before.contains(&op)) {
      // The instant does not need it: it may run after the instant for the first time.
      addOp(0, inputsOf(op.getOperands()), results);
    } else if (auto batchNorm = dyn_cast<BatchNormOp>(op)) {
      // The saved statistics again means the batch statistics again (the op's FLOPs, without
      // the running-statistics update); the output, batch_norm_apply from them (2 FLOPs per
      // element).
      addOp(estimateOpCost(&op).flops, inputsOf({batchNorm.getInput()}),
            {batchNorm.getSavedMean(), batchNorm.getSavedInvstd()});
      addOp(2.0 * double(cast<RankedTensorType>(batchNorm.getResult().getType()).getNumElements()),
            inputsOf({batchNorm.getInput(), batchNorm.getSavedMean(), batchNorm.getSavedInvstd()}),
            {batchNorm.getResult()});
    } else if (isMemoryEffectFree(&op) &&
               llvm::all_of(llvm::seq<unsigned>(0, op.getNumResults()),
                            [&](unsigned i) { return inPlaceOperandOf(&op, i) < 0; })) {
      addOp(estimateOpCost(&op).flops, inputsOf(op.getOperands()), results);
    }
  }

  // Live at the instant whatever is recomputed: the arguments that persist (parameters,
  // optimizer state, batch statistics) or that the instant or a later op reads, the staging
  // region, and the instant's results, unless it may write them over a dying operand (an
  // elementwise op). Workspaces are left out: im2col tiling shrinks a convolution's.
  int64_t fixed = int64_t(nextBatchStagingBytes(func));
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (auto space = func.getArgAttrOfType<StringAttr>(i, kMemorySpaceAttr);
        space && space.getValue() == "host")
      continue;
    auto kind = func.getArgAttrOfType<StringAttr>(i, kKindAttr);
    bool persists =
        kind && (kind.getValue() == "parameter" || kind.getValue() == "optimizer_state" ||
                 kind.getValue() == "batch_stats");
    if (persists || argumentsRead.contains(arg))
      fixed += int64_t(tensorBytes(arg.getType()));
  }
  if (reusableOperandsOf(instant).empty())
    for (OpResult result : instant->getResults())
      if (inPlaceOperandOf(instant, result.getResultNumber()) < 0 && !isa<ReshapeOp>(instant))
        fixed += int64_t(tensorBytes(result.getType()));
  problem.capacity = budget - fixed;
  return problem;
}
