// Builds the loss-instant program (LossInstantBound.h) from a training step's IR: one pass over
// the forward ops for the values and producers, one walk up from the loss gradient for the ops
// it depends on, and one liveness computation for what is live at its step. O(ops + uses).
#include "passes/LossInstantBound.h"

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
    int64_t operand = inPlaceOperandOf(result.getOwner(), result.getResultNumber());
    if (operand < 0)
      break;
    v = result.getOwner()->getOperand(unsigned(operand));
  }
  return v;
}

/// Whether an op after `lossGrad` reads `v` or a reshape view of it made before `lossGrad`.
bool readAfter(Value v, Operation *lossGrad) {
  for (Operation *user : v.getUsers()) {
    if (isa<ReshapeOp>(user) && user->isBeforeInBlock(lossGrad)) {
      if (readAfter(user->getResult(0), lossGrad))
        return true;
    } else if (user != lossGrad && lossGrad->isBeforeInBlock(user)) {
      return true;
    }
  }
  return false;
}

} // namespace

remat::BoundaryProblem graphc::lossInstantProblem(func::FuncOp func, Operation *lossGrad,
                                                  int64_t budget) {
  remat::BoundaryProblem problem;
  Block &body = func.getBody().front();

  // The ops the loss depends on: they run before it in every schedule.
  llvm::DenseSet<Operation *> ancestors;
  SmallVector<Operation *> worklist = {lossGrad};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (def->getBlock() == &body && ancestors.insert(def).second)
          worklist.push_back(def);
  }

  // Values: every forward result with storage of its own.
  llvm::DenseMap<Value, unsigned> index;
  for (Operation &op : body) {
    if (&op == lossGrad)
      break;
    if (isa<ReshapeOp>(op))
      continue;
    for (Value result : op.getResults()) {
      if (storageOf(result) != result)
        continue;
      remat::BoundaryValue value;
      value.bytes = int64_t(tensorBytes(result.getType()));
      value.needed = readAfter(result, lossGrad);
      index[result] = unsigned(problem.values.size());
      problem.values.push_back(value);
    }
  }
  for (Value operand : lossGrad->getOperands())
    if (auto it = index.find(storageOf(operand)); it != index.end())
      problem.values[it->second].live = true;

  // Producers: what running an op again after the loss costs and reads.
  auto inputsOf = [&](ValueRange operands) {
    std::vector<unsigned> inputs;
    for (Value operand : operands)
      if (auto it = index.find(storageOf(operand)); it != index.end())
        inputs.push_back(it->second); // arguments are live all step: left out
    return inputs;
  };
  for (Operation &op : body) {
    if (&op == lossGrad)
      break;
    if (isa<ReshapeOp>(op))
      continue;
    SmallVector<unsigned> produced; // the values it can produce again
    remat::BoundaryOp again;
    if (!ancestors.contains(&op)) {
      // The loss does not need it: it may run after the loss for the first time.
      again.inputs = inputsOf(op.getOperands());
      for (Value result : op.getResults())
        if (auto it = index.find(result); it != index.end())
          produced.push_back(it->second);
    } else if (auto batchNorm = dyn_cast<BatchNormOp>(op)) {
      // The output, as batch_norm_apply from the input and the saved statistics; the
      // statistics themselves only with the running-statistics update, which runs once.
      again.flops =
          2.0 * double(cast<RankedTensorType>(batchNorm.getResult().getType()).getNumElements());
      again.inputs =
          inputsOf({batchNorm.getInput(), batchNorm.getSavedMean(), batchNorm.getSavedInvstd()});
      produced.push_back(index.lookup(batchNorm.getResult()));
    } else if (isMemoryEffectFree(&op) &&
               llvm::all_of(llvm::seq<unsigned>(0, op.getNumResults()),
                            [&](unsigned i) { return inPlaceOperandOf(&op, i) < 0; })) {
      again.flops = estimateOpCost(&op).flops;
      again.inputs = inputsOf(op.getOperands());
      for (Value result : op.getResults())
        produced.push_back(index.lookup(result));
    }
    if (produced.empty())
      continue;
    for (unsigned v : produced)
      problem.values[v].producer = int(problem.ops.size());
    problem.ops.push_back(std::move(again));
  }

  // What is live at the loss step whatever is recomputed: arguments (parameters, optimizer
  // state, inputs), the staging region, the loss gradient's workspace, and its results unless
  // they overwrite a forward value (counted among the values).
  int64_t fixed = 0;
  auto live = computeStepLiveness(func, /*reuseDyingOperands=*/true, /*withNames=*/false);
  if (failed(live)) {
    problem.capacity = -1;
    return problem;
  }
  int64_t step = llvm::find(live->steps, lossGrad) - live->steps.begin();
  for (const LiveBuffer &b : live->buffers) {
    if (b.host || b.first > step || b.last < step)
      continue;
    bool argument = llvm::any_of(b.values, [](Value v) { return isa<BlockArgument>(v); });
    bool forward = llvm::any_of(b.values, [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && def != lossGrad && def->isBeforeInBlock(lossGrad);
    });
    bool lossResult =
        llvm::any_of(b.values, [&](Value v) { return v.getDefiningOp() == lossGrad; });
    if (argument || b.staging || b.workspaceOf == lossGrad || (lossResult && !forward))
      fixed += int64_t(b.bytes);
  }
  problem.capacity = budget - fixed;
  return problem;
}
