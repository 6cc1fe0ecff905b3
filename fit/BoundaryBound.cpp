// The instant lower bound (BoundaryBound.h), built as a sparse 0/1 program and solved with
// CBC (BinaryProgram.h). Sizes: one column per value and per op reachable from the needed
// values, one row per needed value, per (op, input) pair and one for the capacity; building is
// O(values + ops + inputs). The program contains 0/1 knapsack, so it is NP-hard in general, but
// its LP relaxation is already a valid bound, and any bound CBC proves is one too. The
// fewest bytes held at the instant (minimumHeldBytes) is the same program's rows alone, a
// minimum cut, solved as an LP.
#include "fit/BoundaryBound.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "OsiClpSolverInterface.hpp"
#include "fit/BinaryProgram.h"

namespace graphc::remat {

namespace {

/// The values and ops that matter: the needed and live values, their producers, and, for every
/// producer that matters, its inputs (a worklist over the producer graph). Columns: keep[v] for
/// each value in valueOrder, then again[p] for each op in opOrder.
struct Reached {
  std::vector<int> valueColumn, opColumn;
  std::vector<unsigned> valueOrder, opOrder;

  explicit Reached(const BoundaryProblem &problem)
      : valueColumn(problem.values.size(), -1), opColumn(problem.ops.size(), -1) {
    std::vector<unsigned> worklist;
    auto reach = [&](unsigned v) {
      if (valueColumn[v] >= 0)
        return;
      valueColumn[v] = int(valueOrder.size());
      valueOrder.push_back(v);
      worklist.push_back(v);
    };
    for (unsigned v = 0; v < problem.values.size(); ++v)
      if (problem.values[v].needed || problem.values[v].live)
        reach(v);
    while (!worklist.empty()) {
      unsigned v = worklist.back();
      worklist.pop_back();
      int p = problem.values[v].producer;
      if (p < 0 || opColumn[p] >= 0)
        continue;
      opColumn[p] = int(opOrder.size());
      opOrder.push_back(unsigned(p));
      for (unsigned u : problem.ops[p].inputs)
        reach(u);
    }
  }
  size_t keepColumns() const { return valueOrder.size(); }
  size_t columns() const { return valueOrder.size() + opOrder.size(); }
  int againColumn(int op) const { return int(keepColumns()) + opColumn[op]; }
};

/// A sparse matrix built row by row from (row, column, coefficient) triples, loaded into Clp
/// column-wise.
struct SparseRows {
  struct Entry {
    int row, column;
    double value;
  };
  std::vector<Entry> entries;
  std::vector<double> rowLower, rowUpper;

  int addRow(double lower, double upper) {
    rowLower.push_back(lower);
    rowUpper.push_back(upper);
    return int(rowLower.size()) - 1;
  }
  void add(int row, int column, double value) { entries.push_back({row, column, value}); }

  /// The rows every recomputation satisfies: keep[v] + again[producer(v)] >= 1 for each needed
  /// value, keep[u] + again[producer(u)] >= again[p] for each input u of a reached op p.
  void addRecomputationRows(const BoundaryProblem &problem, const Reached &reached) {
    auto heldOrAgain = [&](int row, unsigned v) { // keep[v] + again[producer(v)]
      add(row, reached.valueColumn[v], 1);
      if (int p = problem.values[v].producer; p >= 0)
        add(row, reached.againColumn(p), 1);
    };
    for (unsigned v : reached.valueOrder)
      if (problem.values[v].needed)
        heldOrAgain(addRow(1, COIN_DBL_MAX), v);
    for (unsigned p : reached.opOrder)
      for (unsigned u : problem.ops[p].inputs) {
        int row = addRow(0, COIN_DBL_MAX);
        heldOrAgain(row, u);
        add(row, reached.againColumn(int(p)), -1);
      }
  }

  void load(OsiClpSolverInterface &solver, size_t columns, const std::vector<double> &colLower,
            const std::vector<double> &colUpper, const std::vector<double> &objective) {
    std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
      return a.column < b.column || (a.column == b.column && a.row < b.row);
    });
    std::vector<int> starts(columns + 1, 0), indices;
    std::vector<double> values;
    for (const Entry &e : entries) {
      ++starts[e.column + 1];
      indices.push_back(e.row);
      values.push_back(e.value);
    }
    for (size_t c = 0; c < columns; ++c)
      starts[c + 1] += starts[c];
    solver.loadProblem(int(columns), int(rowLower.size()), starts.data(), indices.data(),
                       values.data(), colLower.data(), colUpper.data(), objective.data(),
                       rowLower.data(), rowUpper.data());
  }
};

/// Held whatever is recomputed: an operand of the instant, or a needed value no op produces.
bool forcedHeld(const BoundaryValue &value) {
  return value.live || (value.needed && value.producer < 0);
}

} // namespace

BoundarySolution solveBoundaryBound(const BoundaryProblem &problem, double timeLimitSeconds) {
  auto start = std::chrono::steady_clock::now();
  BoundarySolution sol;
  auto finish = [&](Status status) {
    sol.status = status;
    sol.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return sol;
  };
  Reached reached(problem);
  const std::vector<int> &valueColumn = reached.valueColumn;
  const std::vector<unsigned> &valueOrder = reached.valueOrder, &opOrder = reached.opOrder;

  // Trivial cases: the values that must be held already exceed the capacity (no
  // recomputation fits), or holding every needed value fits (nothing must be recomputed).
  int64_t forced = 0, allNeeded = 0;
  for (unsigned v : valueOrder) {
    const BoundaryValue &value = problem.values[v];
    if (forcedHeld(value))
      forced += value.bytes;
    if (value.live || value.needed)
      allNeeded += value.bytes;
  }
  if (problem.capacity < 0 || forced > problem.capacity)
    return finish(Status::Infeasible);
  if (allNeeded <= problem.capacity) {
    sol.heldBytes = allNeeded;
    return finish(Status::Optimal);
  }

  // Columns: keep[v] for each value, then again[p] for each op. Bytes enter the matrix as a
  // fraction of the capacity and FLOPs as a fraction of the dearest op, so that Clp's absolute
  // tolerances act on numbers near 1.
  size_t keepColumns = reached.keepColumns(), columns = reached.columns();
  double bytesScale = 1.0 / double(std::max<int64_t>(problem.capacity, 1));
  double flopsScale = 1;
  for (unsigned p : opOrder)
    flopsScale = std::max(flopsScale, problem.ops[p].flops);
  flopsScale = 1.0 / flopsScale;
  std::vector<double> objective(columns, 0), colLower(columns, 0), colUpper(columns, 1);
  for (size_t i = 0; i < opOrder.size(); ++i)
    objective[keepColumns + i] = problem.ops[opOrder[i]].flops * flopsScale;
  for (unsigned v : valueOrder)
    if (forcedHeld(problem.values[v]))
      colLower[valueColumn[v]] = 1;

  SparseRows rows;
  rows.addRecomputationRows(problem, reached);
  int capacityRow = rows.addRow(-COIN_DBL_MAX, double(problem.capacity) * bytesScale);
  for (unsigned v : valueOrder)
    rows.add(capacityRow, valueColumn[v], double(problem.values[v].bytes) * bytesScale);
  sol.rows = rows.rowLower.size();
  sol.columns = columns;

  OsiClpSolverInterface solver;
  rows.load(solver, columns, colLower, colUpper, objective);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BinaryProgramResult solved = solveBinaryProgram(solver, timeLimitSeconds - elapsed);
  if (!solved.lpSolved) // no bound at all when the solver died first
    return finish(solved.aborted ? Status::NoSolution : Status::Infeasible);
  double bound = std::max(0.0, solved.lpObjective / flopsScale);
  if (std::isfinite(solved.bestBound))
    bound = std::max(bound, solved.bestBound / flopsScale);
  if (solved.hasSolution) {
    double objectiveFlops = 0;
    for (size_t i = 0; i < opOrder.size(); ++i)
      if (solved.x[keepColumns + i] > 0.5)
        objectiveFlops += problem.ops[opOrder[i]].flops;
    for (unsigned v : valueOrder)
      if (solved.x[valueColumn[v]] > 0.5)
        sol.heldBytes += problem.values[v].bytes;
    // Proven optimal: the bound is the optimum itself. Otherwise CBC's bound, never above
    // the incumbent.
    sol.bound = solved.optimal ? objectiveFlops : std::min(bound, objectiveFlops);
    return finish(solved.optimal ? Status::Optimal : Status::Feasible);
  }
  if (solved.provenInfeasible)
    return finish(Status::Infeasible);
  sol.bound = bound;
  return finish(Status::NoSolution);
}

int64_t minimumHeldBytes(const BoundaryProblem &problem) {
  Reached reached(problem);
  // Bounds first: the forced values are held in any solution; holding them and every needed
  // value whose producers do not lead back only to values live at the instant or all step
  // (recomputing the rest) is a solution. In training steps, where every value but the instant's
  // operands can be recomputed from the parameters and inputs, the two meet and no program is
  // solved.
  std::vector<signed char> fromArguments(problem.values.size(), -1); // -1: not yet known
  auto recomputableFromArguments = [&](unsigned root) {
    // Iterative post-order over the producer graph (values made before the instant form a DAG).
    std::vector<std::pair<unsigned, size_t>> stack = {{root, 0}};
    while (!stack.empty()) {
      auto &[v, next] = stack.back();
      if (fromArguments[v] >= 0) {
        stack.pop_back();
        continue;
      }
      int p = problem.values[v].producer;
      if (problem.values[v].live) { // held anyway: its readers can be recomputed from it
        fromArguments[v] = 1;
        stack.pop_back();
        continue;
      }
      if (p < 0) {
        fromArguments[v] = 0;
        stack.pop_back();
        continue;
      }
      const std::vector<unsigned> &inputs = problem.ops[p].inputs;
      while (next < inputs.size() && fromArguments[inputs[next]] == 1)
        ++next;
      if (next == inputs.size()) {
        fromArguments[v] = 1;
        stack.pop_back();
      } else if (fromArguments[inputs[next]] == 0) {
        fromArguments[v] = 0;
        stack.pop_back();
      } else {
        stack.push_back({inputs[next], 0});
      }
    }
    return fromArguments[root] == 1;
  };
  int64_t forced = 0, recomputingAll = 0;
  for (unsigned v : reached.valueOrder) {
    const BoundaryValue &value = problem.values[v];
    forced += forcedHeld(value) ? value.bytes : 0;
    recomputingAll +=
        value.live || (value.needed && !recomputableFromArguments(v)) ? value.bytes : 0;
  }
  if (recomputingAll == forced)
    return forced;

  size_t columns = reached.columns();
  int64_t largest = 1;
  for (unsigned v : reached.valueOrder)
    largest = std::max(largest, problem.values[v].bytes);
  // Bytes as a fraction of the largest value's, so that Clp's tolerances act on numbers near 1.
  double bytesScale = 1.0 / double(largest);
  std::vector<double> objective(columns, 0), colLower(columns, 0), colUpper(columns, 1);
  for (unsigned v : reached.valueOrder) {
    objective[reached.valueColumn[v]] = double(problem.values[v].bytes) * bytesScale;
    if (forcedHeld(problem.values[v]))
      colLower[reached.valueColumn[v]] = 1;
  }
  SparseRows rows;
  rows.addRecomputationRows(problem, reached);
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  rows.load(solver, columns, colLower, colUpper, objective);
  solver.initialSolve();
  if (!solver.isProvenOptimal())
    return -1;
  // The optimum is a whole number of bytes, and Clp's is within its tolerances of it; take a
  // millionth of the largest value as the error (far above them). Under half a byte, rounding
  // up to within that error gives the optimum exactly; above, subtract it (still a bound).
  double bytes = solver.getObjValue() / bytesScale, error = 1e-6 * double(largest);
  int64_t bound = int64_t(std::floor(error < 0.5 ? bytes + error : bytes - error));
  return std::max(forced, bound);
}

} // namespace graphc::remat
