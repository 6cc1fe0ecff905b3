// The instant bound (fit/BoundaryBound.h) on a training step's IR: at the instant one op runs,
// which values must be there, what each one's producer costs to run again, and what is live
// whatever is recomputed. graphc-fit-budget records the strongest bound over a few instants in
// the fit report, next to what its solvers applied.
#pragma once

#include "fit/BoundaryBound.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace graphc {

/// The program of `func` (a single-block training step) at the instant `instant` first runs,
/// for `budget` bytes. Whatever the schedule, the ops `instant` depends on have run by then and
/// those that depend on it (and the terminator) run after it:
///  - values: every result (a reshape is a view of its operand; a result written in place is
///    its operand's) of an op that may run before the instant, with its bytes, whether an op
///    that runs after the instant reads it, and whether `instant` reads it;
///  - ops: an op `instant` depends on can run again when it is pure and writes nothing in
///    place (its FLOPs); a batch norm's saved statistics can, at its FLOPs (without the
///    running-statistics update), and its output as batch_norm_apply (2 FLOPs per element)
///    from its input and those statistics; an op `instant` does not depend on may run after
///    the instant, at no extra cost;
///  - capacity: `budget` minus what is live at the instant whatever is recomputed: the
///    arguments that persist across steps or that the instant or a later op reads, the
///    staging region, and the instant's results unless it may write them over a dying operand.
remat::BoundaryProblem instantProblem(mlir::func::FuncOp func, mlir::Operation *instant,
                                      int64_t budget);

} // namespace graphc
