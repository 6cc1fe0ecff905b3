// The MLIR-free core of exact rematerialization: given how much memory a training step needs at
// each program point and, for every recomputation option, how it changes that profile and how
// many FLOPs it adds, choose the options that fit a byte budget at the fewest extra FLOPs.
//
// The model is a 0/1 program in the spirit of Checkmate (Jain et al., "Checkmate: Breaking the
// Memory Wall with Optimal Tensor Rematerialization", MLSys 2020), restricted to what
// graphc-fit-budget can realise: each candidate (a forward value read by the backward pass) is
// either kept or recomputed right before its first backward reader, by one of a few options
// (the op alone, or with 1..3 levels of its pure producers). Checkmate decides, for every
// stage and every value, whether to compute, keep or free it (O(n^2) binaries); here the
// schedule is fixed, so each option's effect is a signed memory delta over program-point
// ranges, measured on the real IR, and memory at a program point is the base profile plus the
// sum of the chosen options' deltas. That linearity is the approximation: two options that
// touch the same buffers (a recomputed op reading a value that is itself recomputed) do not
// add exactly, and the planned arena adds alignment and fragmentation on top of the liveness
// bound. The caller therefore always applies the choice to the IR, plans it and checks the
// real arena (graphc-fit-budget tightens the budget and re-solves, or falls back to the
// heuristic). Solved with CBC (branch and cut over Clp), with a time limit; the root LP
// relaxation is a lower bound on the model's optimum.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace graphc::remat {

/// `bytes` (signed) added to the memory live at every program point in [first, last].
struct Segment {
  int64_t first = 0;
  int64_t last = 0;
  int64_t bytes = 0;
};

/// One way to recompute a candidate: the FLOPs it adds and how it changes the profile.
struct Option {
  double flops = 0;
  std::vector<Segment> delta;
};

struct Problem {
  std::vector<int64_t> baseMemory; // bytes live at each program point without recomputation
  /// Per candidate, its options; at most one option of a candidate is chosen.
  std::vector<std::vector<Option>> candidates;
  /// Groups of candidates of which at most one is chosen, whatever its option: a segment
  /// recomputation and the values inside it would redirect the same backward reads.
  std::vector<std::vector<unsigned>> exclusive;
  int64_t budget = 0;
};

enum class Status {
  Optimal,    // proven optimal for the model
  Feasible,   // a solution within the budget, optimality not proven in the time limit
  Infeasible, // no choice of options fits the budget (the LP relaxation already shows it)
  NoSolution, // the time limit ran out before any solution was found
  TooLarge,   // more options than SolveOptions::maxOptions: not attempted
};

const char *statusName(Status status);

struct SolveOptions {
  double timeLimitSeconds = 60;
  size_t maxOptions = 4000; // larger problems are left to the heuristic
  /// Branch-and-bound nodes CBC may explore (-1: no limit). A node limit, unlike the time
  /// limit, gives the same choice on any machine.
  long maxNodes = -1;
  /// CBC in a child process of its own (BinaryProgram.h); false for a caller that is one.
  bool isolated = true;
};

struct Solution {
  Status status = Status::NoSolution;
  std::vector<int> choice;  // per candidate: the chosen option, or -1 (kept)
  double objective = 0;     // extra FLOPs of `choice`
  double lpBound = 0;       // the root LP relaxation's optimum
  double bestBound = 0;     // the best lower bound known at the end (>= lpBound)
  int64_t modelPeak = 0;    // the model's peak for `choice`
  size_t rows = 0, columns = 0, nonzeros = 0;
  double seconds = 0;
  bool hasSolution() const { return status == Status::Optimal || status == Status::Feasible; }
  /// (objective - bestBound) / objective, 0 when both are 0.
  double gap() const;
};

/// Peak of the model's memory profile when candidate i uses option choice[i] (-1: none).
int64_t modelPeak(const Problem &problem, const std::vector<int> &choice);

/// Solves the 0/1 program: minimise the chosen options' FLOPs subject to model memory <= budget
/// at every program point, at most one option per candidate and at most one candidate of
/// each exclusive group. Program points whose memory
/// cannot exceed the budget whatever is chosen get no row, and of consecutive points that no
/// option distinguishes only the fullest keeps one. Returns the best incumbent found within
/// the time limit. Deterministic (CBC runs single-threaded).
Solution solveExact(const Problem &problem, const SolveOptions &options = {});

/// solveExact at each of `budgets` in turn, all in one child process (one fork instead of
/// one per solve: the exact seeds solve up to 12 levels in every compile that tries them).
/// Stops after the first budget without a solution. If the child dies, the solutions it
/// finished are returned and the rest are missing.
std::vector<Solution> solveExactAtBudgets(Problem problem, const std::vector<int64_t> &budgets,
                                          const SolveOptions &options = {});

/// Chen et al.'s sqrt(n) checkpointing ("Training Deep Nets with Sublinear Memory Cost",
/// 2016) on a forward chain of n ops: keep every ceil(sqrt(n))-th output as a checkpoint and
/// recompute every other forward op once in the backward pass. Returns whether op i is kept.
std::vector<bool> chenCheckpoints(size_t n);

} // namespace graphc::remat
