// The instant lower bound (BoundaryBound.h), built as a sparse 0/1 program and solved with
// CBC (BinaryProgram.h). Sizes: one column per value and per op reachable from the needed
// values, one row per needed value, per (op, input) pair and one for the capacity; building is
// O(values + ops + inputs). The program contains 0/1 knapsack, so it is NP-hard in general, but
// its LP relaxation is already a valid bound, and any bound CBC proves is one too.
#include "fit/BoundaryBound.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "OsiClpSolverInterface.hpp"
#include "fit/BinaryProgram.h"

namespace graphc::remat {

BoundarySolution solveBoundaryBound(const BoundaryProblem &problem, double timeLimitSeconds) {
  auto start = std::chrono::steady_clock::now();
  BoundarySolution sol;
  auto finish = [&](Status status) {
    sol.status = status;
    sol.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return sol;
  };
  size_t numValues = problem.values.size();
  // The values and ops that matter: the needed and live values, their producers, and, for
  // every producer that matters, its inputs (a worklist over the producer graph).
  std::vector<int> valueColumn(numValues, -1), opColumn(problem.ops.size(), -1);
  std::vector<unsigned> valueOrder, opOrder, worklist;
  auto reach = [&](unsigned v) {
    if (valueColumn[v] >= 0)
      return;
    valueColumn[v] = int(valueOrder.size());
    valueOrder.push_back(v);
    worklist.push_back(v);
  };
  for (unsigned v = 0; v < numValues; ++v)
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

  // Trivial cases: the values that must be held already exceed the capacity (no
  // recomputation fits), or holding every needed value fits (nothing must be recomputed).
  int64_t forced = 0, allNeeded = 0;
  for (unsigned v : valueOrder) {
    const BoundaryValue &value = problem.values[v];
    if (value.live || (value.needed && value.producer < 0))
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
  size_t keepColumns = valueOrder.size(), columns = keepColumns + opOrder.size();
  double bytesScale = 1.0 / double(std::max<int64_t>(problem.capacity, 1));
  double flopsScale = 1;
  for (unsigned p : opOrder)
    flopsScale = std::max(flopsScale, problem.ops[p].flops);
  flopsScale = 1.0 / flopsScale;
  std::vector<double> objective(columns, 0), colLower(columns, 0), colUpper(columns, 1);
  for (size_t i = 0; i < opOrder.size(); ++i)
    objective[keepColumns + i] = problem.ops[opOrder[i]].flops * flopsScale;
  for (unsigned v : valueOrder)
    if (problem.values[v].live || (problem.values[v].needed && problem.values[v].producer < 0))
      colLower[valueColumn[v]] = 1;

  // Rows, built column-wise by collecting (row, column, coefficient) triples.
  struct Entry {
    int row, column;
    double value;
  };
  std::vector<Entry> entries;
  std::vector<double> rowLower, rowUpper;
  auto addRow = [&](double lower, double upper) {
    rowLower.push_back(lower);
    rowUpper.push_back(upper);
    return int(rowLower.size()) - 1;
  };
  auto heldOrAgain = [&](int row, unsigned v) { // keep[v] + again[producer(v)]
    entries.push_back({row, valueColumn[v], 1});
    if (int p = problem.values[v].producer; p >= 0)
      entries.push_back({row, int(keepColumns) + opColumn[p], 1});
  };
  for (unsigned v : valueOrder)
    if (problem.values[v].needed)
      heldOrAgain(addRow(1, COIN_DBL_MAX), v);
  for (unsigned p : opOrder)
    for (unsigned u : problem.ops[p].inputs) {
      int row = addRow(0, COIN_DBL_MAX);
      heldOrAgain(row, u);
      entries.push_back({row, int(keepColumns) + opColumn[p], -1});
    }
  int capacityRow = addRow(-COIN_DBL_MAX, double(problem.capacity) * bytesScale);
  for (unsigned v : valueOrder)
    entries.push_back({capacityRow, valueColumn[v], double(problem.values[v].bytes) * bytesScale});

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
  sol.rows = rowLower.size();
  sol.columns = columns;

  OsiClpSolverInterface solver;
  solver.loadProblem(int(columns), int(rowLower.size()), starts.data(), indices.data(),
                     values.data(), colLower.data(), colUpper.data(), objective.data(),
                     rowLower.data(), rowUpper.data());
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

} // namespace graphc::remat
