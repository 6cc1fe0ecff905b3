// The 0/1 rematerialization program (RematSolver.h), built as a sparse matrix and solved with
// CBC's standard branch and cut (BinaryProgram.h). Sizes: one column
// per option, one row per distinguishable over-budget stretch of program points (at most two
// per option segment) plus one per candidate with several options; building is
// O(S log S + nonzeros) for S segments. Solving is NP-hard in general (the problem contains
// 0/1 knapsack), so CBC runs under a time limit and the best incumbent is returned.
#include "fit/RematSolver.h"

#include <cstring>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <string>

#include "OsiClpSolverInterface.hpp"
#include "fit/BinaryProgram.h"

namespace graphc::remat {

const char *statusName(Status status) {
  switch (status) {
  case Status::Optimal:
    return "optimal";
  case Status::Feasible:
    return "feasible";
  case Status::Infeasible:
    return "infeasible";
  case Status::NoSolution:
    return "no-solution";
  case Status::TooLarge:
    return "too-large";
  }
  return "unknown";
}

double Solution::gap() const {
  if (objective <= 0)
    return 0;
  return std::max(0.0, (objective - bestBound) / objective);
}

int64_t modelPeak(const Problem &problem, const std::vector<int> &choice) {
  size_t n = problem.baseMemory.size();
  std::vector<int64_t> diff(n + 1, 0);
  for (size_t c = 0; c < problem.candidates.size() && c < choice.size(); ++c) {
    if (choice[c] < 0)
      continue;
    for (const Segment &s : problem.candidates[c][choice[c]].delta) {
      diff[s.first] += s.bytes;
      diff[s.last + 1] -= s.bytes;
    }
  }
  int64_t peak = 0, running = 0;
  for (size_t t = 0; t < n; ++t) {
    running += diff[t];
    peak = std::max(peak, problem.baseMemory[t] + running);
  }
  return peak;
}

std::vector<bool> chenCheckpoints(size_t n) {
  std::vector<bool> kept(n, false);
  if (n == 0)
    return kept;
  size_t k = size_t(std::ceil(std::sqrt(double(n))));
  for (size_t i = 0; i < n; ++i)
    kept[i] = (i + 1) % k == 0 || i + 1 == n;
  return kept;
}

namespace {


struct Flat {
  unsigned candidate;
  int option;
  const Option *data;
};

} // namespace

Solution solveExact(const Problem &problem, const SolveOptions &options) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  Solution sol;
  // Memory enters the matrix as a fraction of the fullest base point and FLOPs as a fraction
  // of the dearest option, so that Clp's absolute tolerances (around 1e-7) act on numbers
  // near 1 whatever the model's size.
  double bytesScale = 1, flopsScale = 1;
  for (int64_t m : problem.baseMemory)
    bytesScale = std::max(bytesScale, double(m));
  bytesScale = 1.0 / bytesScale;
  for (const auto &options : problem.candidates)
    for (const Option &o : options)
      flopsScale = std::max(flopsScale, o.flops);
  flopsScale = 1.0 / flopsScale;
  sol.choice.assign(problem.candidates.size(), -1);
  std::vector<Flat> columns;
  for (unsigned c = 0; c < problem.candidates.size(); ++c)
    for (unsigned o = 0; o < problem.candidates[c].size(); ++o)
      columns.push_back({c, int(o), &problem.candidates[c][o]});
  sol.columns = columns.size();
  int64_t n = int64_t(problem.baseMemory.size());
  if (columns.size() > options.maxOptions) {
    sol.status = Status::TooLarge;
    sol.modelPeak = modelPeak(problem, sol.choice);
    sol.seconds = elapsed();
    return sol;
  }

  // Program points that could exceed the budget: base plus every positive delta.
  std::vector<int64_t> diff(n + 1, 0);
  std::vector<int64_t> breaks = {0, n};
  for (const Flat &col : columns)
    for (const Segment &s : col.data->delta) {
      if (s.bytes > 0) {
        diff[s.first] += s.bytes;
        diff[s.last + 1] -= s.bytes;
      }
      breaks.push_back(s.first);
      breaks.push_back(s.last + 1);
    }
  std::sort(breaks.begin(), breaks.end());
  breaks.erase(std::unique(breaks.begin(), breaks.end()), breaks.end());
  // One row per stretch between consecutive breaks that holds a point over the budget: no
  // option's delta starts or ends inside a stretch, so its fullest point dominates the rest.
  std::vector<int64_t> rowPoint;  // the representative (fullest) point of each memory row
  std::vector<int64_t> rowBase;
  int64_t upper = 0;
  for (size_t b = 0; b + 1 < breaks.size(); ++b) {
    int64_t best = -1;
    for (int64_t t = breaks[b]; t < breaks[b + 1]; ++t) {
      upper += diff[t];
      if (problem.baseMemory[t] + upper > problem.budget &&
          (best < 0 || problem.baseMemory[t] > problem.baseMemory[best]))
        best = t;
    }
    if (best >= 0) {
      rowPoint.push_back(best);
      rowBase.push_back(problem.baseMemory[best]);
    }
  }
  if (rowPoint.empty()) { // nothing can exceed the budget: keep everything
    sol.status = Status::Optimal;
    sol.modelPeak = modelPeak(problem, sol.choice);
    sol.seconds = elapsed();
    return sol;
  }

  // Columns: each option's coefficient in every memory row its segments cover.
  std::vector<int> starts = {0}, indices;
  std::vector<double> values, objective, colLower(columns.size(), 0), colUpper(columns.size(), 1);
  size_t memoryRows = rowPoint.size();
  std::vector<unsigned> multiRow(problem.candidates.size(), ~0u);
  size_t rows = memoryRows;
  for (unsigned c = 0; c < problem.candidates.size(); ++c)
    if (problem.candidates[c].size() > 1)
      multiRow[c] = unsigned(rows++);
  // One row per exclusive group: every option of its candidates has coefficient 1.
  std::vector<std::vector<int>> exclusiveRows(problem.candidates.size());
  for (const std::vector<unsigned> &group : problem.exclusive) {
    for (unsigned c : group)
      if (c < problem.candidates.size())
        exclusiveRows[c].push_back(int(rows));
    ++rows;
  }
  for (const Flat &col : columns) {
    std::map<int, double> coefficient;
    for (const Segment &s : col.data->delta) {
      auto lo = std::lower_bound(rowPoint.begin(), rowPoint.end(), s.first);
      auto hi = std::upper_bound(rowPoint.begin(), rowPoint.end(), s.last);
      for (auto it = lo; it != hi; ++it)
        coefficient[int(it - rowPoint.begin())] += double(s.bytes) * bytesScale;
    }
    for (auto &[row, value] : coefficient)
      if (value != 0) {
        indices.push_back(row);
        values.push_back(value);
      }
    if (multiRow[col.candidate] != ~0u) {
      indices.push_back(int(multiRow[col.candidate]));
      values.push_back(1);
    }
    for (int row : exclusiveRows[col.candidate]) {
      indices.push_back(row);
      values.push_back(1);
    }
    starts.push_back(int(indices.size()));
    objective.push_back(col.data->flops * flopsScale);
  }
  std::vector<double> rowLower(rows, -COIN_DBL_MAX), rowUpper(rows, 1);
  for (size_t r = 0; r < memoryRows; ++r)
    rowUpper[r] = double(problem.budget - rowBase[r]) * bytesScale;
  sol.rows = rows;
  sol.nonzeros = values.size();

  OsiClpSolverInterface solver;
  solver.loadProblem(int(columns.size()), int(rows), starts.data(), indices.data(), values.data(),
                     colLower.data(), colUpper.data(), objective.data(), rowLower.data(),
                     rowUpper.data());
  BinaryProgramResult solved =
      solveBinaryProgram(solver, options.timeLimitSeconds - elapsed(), options.maxNodes,
                         /*inChild=*/nullptr, options.isolated);
  if (!solved.lpSolved) {
    // The relaxation has no solution, so neither has the 0/1 program (unless the solver died
    // before it could say).
    sol.status = solved.aborted ? Status::NoSolution : Status::Infeasible;
    sol.modelPeak = modelPeak(problem, sol.choice);
    sol.seconds = elapsed();
    return sol;
  }
  sol.lpBound = std::max(0.0, solved.lpObjective / flopsScale);
  sol.bestBound = sol.lpBound;
  if (solved.hasSolution) {
    sol.status = solved.optimal ? Status::Optimal : Status::Feasible;
    sol.objective = 0;
    for (size_t i = 0; i < columns.size(); ++i)
      if (solved.x[i] > 0.5) {
        sol.choice[columns[i].candidate] = columns[i].option;
        sol.objective += columns[i].data->flops;
      }
    double bound = solved.bestBound / flopsScale;
    if (sol.status == Status::Optimal)
      bound = sol.objective;
    if (std::isfinite(bound))
      sol.bestBound = std::min(sol.objective, std::max(sol.bestBound, bound));
  } else {
    sol.status = solved.provenInfeasible ? Status::Infeasible : Status::NoSolution;
  }
  sol.modelPeak = modelPeak(problem, sol.choice);
  sol.seconds = elapsed();
  return sol;
}

namespace {

/// A Solution's fixed-size fields, as the child of solveExactAtBudgets reports them; `choice`
/// follows as `choices` ints.
struct SolutionRecord {
  int32_t status;
  double objective, lpBound, bestBound, seconds;
  int64_t modelPeak;
  uint64_t rows, columns, nonzeros, choices;
};

} // namespace

std::vector<Solution> solveExactAtBudgets(Problem problem, const std::vector<int64_t> &budgets,
                                          const SolveOptions &options) {
  SolveOptions inChild = options;
  inChild.isolated = false;
  bool exited = false;
  std::optional<std::string> reported = runInChild(
      [&](int fd) {
        for (int64_t budget : budgets) {
          problem.budget = budget;
          Solution sol = solveExact(problem, inChild);
          SolutionRecord record{int32_t(sol.status), sol.objective,    sol.lpBound, sol.bestBound,
                                sol.seconds,         sol.modelPeak,    sol.rows,    sol.columns,
                                sol.nonzeros,        sol.choice.size()};
          writeToParent(fd, &record, sizeof record);
          writeToParent(fd, sol.choice.data(), sizeof(int) * sol.choice.size());
          if (!sol.hasSolution())
            break;
        }
      },
      exited);
  std::vector<Solution> solutions;
  if (!reported)
    return solutions;
  size_t at = 0;
  const std::string &bytes = *reported;
  while (bytes.size() - at >= sizeof(SolutionRecord)) {
    SolutionRecord record;
    std::memcpy(&record, bytes.data() + at, sizeof record);
    size_t choiceBytes = sizeof(int) * record.choices;
    if (bytes.size() - at - sizeof record < choiceBytes)
      break; // the child died while reporting
    Solution sol;
    sol.status = Status(record.status);
    sol.objective = record.objective;
    sol.lpBound = record.lpBound;
    sol.bestBound = record.bestBound;
    sol.seconds = record.seconds;
    sol.modelPeak = record.modelPeak;
    sol.rows = record.rows;
    sol.columns = record.columns;
    sol.nonzeros = record.nonzeros;
    sol.choice.resize(record.choices);
    std::memcpy(sol.choice.data(), bytes.data() + at + sizeof record, choiceBytes);
    at += sizeof record + choiceBytes;
    solutions.push_back(std::move(sol));
  }
  return solutions;
}

} // namespace graphc::remat
