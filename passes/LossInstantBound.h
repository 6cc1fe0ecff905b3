// The loss-instant lower bound (fit/BoundaryBound.h) on a training step's IR: which forward
// values the backward pass reads, what each one's producer costs to run again, and what is live
// at the loss gradient whatever is recomputed. graphc-fit-budget records it in the fit report
// next to what its solvers applied.
#pragma once

#include "fit/BoundaryBound.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace graphc {

/// The loss-instant program of `func` (a scheduled single-block training step whose backward
/// pass starts at `lossGrad`) for `budget` bytes:
///  - values: every result of an op before `lossGrad` (a reshape is a view of its operand and
///    results written in place into an argument are the argument's), with its bytes, whether an
///    op after `lossGrad` reads it (or a view of it), and whether `lossGrad` reads it;
///  - ops: an op the loss depends on can run again when it is pure and writes nothing in place
///    (its FLOPs); a batch norm's output can, as batch_norm_apply (2 FLOPs per element) from its
///    input and saved statistics, which cannot; an op the loss does not depend on may run after
///    the loss, at no extra cost;
///  - capacity: `budget` minus the buffers live at the loss step that no recomputation changes
///    (arguments, the loss gradient's result and workspace).
remat::BoundaryProblem lossInstantProblem(mlir::func::FuncOp func, mlir::Operation *lossGrad,
                                          int64_t budget);

} // namespace graphc
