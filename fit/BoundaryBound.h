// A lower bound on the extra FLOPs of *any* recomputation that fits a training step into a
// byte budget, from one instant of the step: when a given op first runs (the loss gradient, or
// any other op).
//
// Whatever the schedule, the ops that op depends on have run before that instant and the ops
// that depend on it run after it. So each value made before and read after it is, at that
// instant, either held in memory or produced again later; producing it again runs its producer
// once more (its FLOPs are extra), and that producer's inputs are in turn held or produced
// again. Values whose producer the instant does not depend on may simply be computed after it,
// at no extra cost. Minimising the FLOPs produced again, subject to the held values fitting the
// bytes the budget leaves at that instant, is a 0/1 program over the values alone (no program
// points, no options): a relaxation of every recomputation graphc (or anyone) can apply to this
// step, so its optimum, or any lower bound on it, bounds them all, and so does the largest of
// several instants' bounds. The exact solver's bound (RematSolver.h) is only a bound on its own
// restricted model; this one is a proof.
//
// What it leaves out, each of which only lowers the bound (it stays valid): memory at every
// other instant, alignment and fragmentation, and the recomputed values' own lifetimes.
//
// Solved with CBC under a time limit; when optimality is not proven, CBC's best bound (at least
// the LP relaxation's) is returned, which is still a lower bound.
#pragma once

#include <cstdint>
#include <vector>

#include "fit/RematSolver.h"

namespace graphc::remat {

/// A value, as the instant sees it (views of one buffer count once).
struct BoundaryValue {
  int64_t bytes = 0;
  int producer = -1;   // the BoundaryOp that can produce it again after the instant; -1: none
  bool needed = false; // read after the instant
  bool live = false;   // live at the instant whatever is chosen (an operand of its op)
};

/// A way to produce values again after the instant: its extra FLOPs and what it reads.
struct BoundaryOp {
  double flops = 0;             // 0 for an op the instant does not depend on (it may run later)
  std::vector<unsigned> inputs; // BoundaryValue indices; values live all step are left out
};

struct BoundaryProblem {
  std::vector<BoundaryValue> values;
  std::vector<BoundaryOp> ops;
  /// Bytes the budget leaves for the values at the instant: the budget minus what is live
  /// there whatever is recomputed (parameters, optimizer state, inputs, the op's results).
  /// Negative: nothing fits.
  int64_t capacity = 0;
};

struct BoundarySolution {
  /// Optimal: `bound` is the program's optimum. Feasible: not proven in the time limit;
  /// `bound` is CBC's best bound. Infeasible: no recomputation at all fits the budget (the
  /// values that cannot be produced again, or the op's operands, exceed the capacity).
  Status status = Status::NoSolution;
  double bound = 0;      // lower bound on the extra FLOPs of any recomputation that fits
  int64_t heldBytes = 0; // of the optimum found (or the best incumbent): bytes held
  size_t rows = 0, columns = 0;
  double seconds = 0;
};

/// Solves the instant program: binaries keep[v] (held at the instant) and again[p]
/// (op p runs again after it); minimise sum flops[p] again[p] subject to
///   keep[v] + again[producer(v)] >= 1        for every needed value v,
///   keep[u] + again[producer(u)] >= again[p] for every input u of p,
///   sum bytes[v] keep[v] <= capacity,        keep[v] = 1 for live values.
/// Only values reachable from the needed ones through producers' inputs enter the program.
/// Deterministic (CBC runs single-threaded).
BoundarySolution solveBoundaryBound(const BoundaryProblem &problem, double timeLimitSeconds = 10);

/// The fewest bytes that any recomputation must hold at the instant, FLOPs aside: the same
/// rows without the capacity, minimising sum bytes[v] keep[v]. With d[p] = 1 - again[p] (d = 1
/// for "no op produces it", 0 for "not needed") every row reads keep[u] >= d[a] - d[b]: a
/// minimum cut that splits each value into a held arc, so the LP's optimum is the integer one
/// (max-flow min-cut). It is solved only when two cheap bounds differ: the forced values
/// (held in any solution) and holding them plus every needed value that cannot be recomputed
/// from values live then (a solution). Within Clp's tolerances (exact below 500 KB values).
/// The bytes live at the instant whatever is recomputed (BoundaryProblem::capacity's
/// complement) are not in it: add them for a floor on the whole step's memory. Negative when
/// the LP failed.
int64_t minimumHeldBytes(const BoundaryProblem &problem);

} // namespace graphc::remat
