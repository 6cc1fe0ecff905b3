// Unit tests for the exact rematerialization solver (fit/RematSolver.h): hand-made instances
// whose optimum is worked out in the comments, and random small instances checked against an
// exhaustive search over every choice of options.
#include "fit/BinaryProgram.h"
#include "fit/RematSolver.h"

#include "OsiClpSolverInterface.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>

using namespace graphc::remat;

namespace {

Option option(double flops, std::vector<Segment> delta) { return Option{flops, std::move(delta)}; }

// Memory 100 at points 1 and 2, budget 60: 40 bytes must go. A (5 FLOPs, -50) alone fits;
// B + C (3 + 4 FLOPs, -30 each) also fit but cost 7; B alone or C alone saves too little. The
// LP relaxation takes A or B fractionally at 0.1 FLOP per byte: 40 bytes -> bound 4.
TEST(RematSolver, PicksCheapestCoverAndReportsLpBound) {
  Problem p;
  p.baseMemory = {10, 100, 100, 10};
  p.budget = 60;
  p.candidates = {{option(5, {{1, 2, -50}})}, {option(3, {{1, 2, -30}})},
                  {option(4, {{1, 2, -30}})}};
  Solution s = solveExact(p);
  ASSERT_EQ(s.status, Status::Optimal);
  EXPECT_EQ(s.choice, (std::vector<int>{0, -1, -1}));
  EXPECT_DOUBLE_EQ(s.objective, 5);
  EXPECT_NEAR(s.lpBound, 4, 1e-6);
  EXPECT_NEAR(s.gap(), 0, 1e-9); // proven optimal: the bound closes on the objective
  EXPECT_EQ(s.modelPeak, 50);
}

// Recomputing A frees 40 bytes at point 0 but its copy adds 40 at point 1 (90 > 80), so A
// does not fit even though it is cheaper; B (5 FLOPs) frees 30 and adds 10: 70 and 60 fit.
TEST(RematSolver, CountsTheRecomputedCopy) {
  Problem p;
  p.baseMemory = {100, 50};
  p.budget = 80;
  p.candidates = {{option(2, {{0, 0, -40}, {1, 1, 40}})}, {option(5, {{0, 0, -30}, {1, 1, 10}})}};
  Solution s = solveExact(p);
  ASSERT_EQ(s.status, Status::Optimal);
  EXPECT_EQ(s.choice, (std::vector<int>{-1, 0}));
  EXPECT_DOUBLE_EQ(s.objective, 5);
}

// One candidate with two options (alone: -30 at point 1; with its producer: -20 at points 1
// and 2). Points 1 and 2 need -20 and -5: only the second option covers point 2, and taking
// both options (which would also fit) is not allowed.
TEST(RematSolver, AtMostOneOptionPerCandidate) {
  Problem p;
  p.baseMemory = {0, 60, 45};
  p.budget = 40;
  p.candidates = {{option(1, {{1, 1, -30}}), option(3, {{1, 2, -20}})}};
  Solution s = solveExact(p);
  ASSERT_EQ(s.status, Status::Optimal);
  EXPECT_EQ(s.choice, (std::vector<int>{1}));
  EXPECT_DOUBLE_EQ(s.objective, 3);
  EXPECT_EQ(s.modelPeak, 40);
}

// Exclusive groups (a segment against each value it recomputes). Memory 100 at point 1,
// budget 40: 60 bytes must go. A and B (1 and 2 FLOPs, -30 each) together fit at 3; the
// segment S (5 FLOPs, -60) alone fits at 5. With the pairs {S, A} and {S, B}, A and B may
// still go together: 3. With the group {A, B}, only one of them may: S, at 5.
TEST(RematSolver, ExclusiveGroups) {
  Problem p;
  p.baseMemory = {10, 100, 10};
  p.budget = 40;
  p.candidates = {
      {option(1, {{1, 1, -30}})}, {option(2, {{1, 1, -30}})}, {option(5, {{1, 1, -60}})}};
  p.exclusive = {{2, 0}, {2, 1}};
  Solution pairs = solveExact(p);
  ASSERT_EQ(pairs.status, Status::Optimal);
  EXPECT_EQ(pairs.choice, (std::vector<int>{0, 0, -1}));
  EXPECT_DOUBLE_EQ(pairs.objective, 3);
  p.exclusive = {{0, 1}};
  Solution group = solveExact(p);
  ASSERT_EQ(group.status, Status::Optimal);
  EXPECT_EQ(group.choice, (std::vector<int>{-1, -1, 0}));
  EXPECT_DOUBLE_EQ(group.objective, 5);
  // S saves 50: it fits with A (6 FLOPs) unless the pairs forbid that too.
  p.candidates[2][0].delta = {{1, 1, -50}};
  Solution withA = solveExact(p);
  ASSERT_EQ(withA.status, Status::Optimal);
  EXPECT_EQ(withA.choice, (std::vector<int>{0, -1, 0}));
  p.exclusive = {{0, 1}, {2, 0}, {2, 1}};
  EXPECT_EQ(solveExact(p).status, Status::Infeasible);
}

TEST(RematSolver, InfeasibleAndTrivialAndTooLarge) {
  Problem p;
  p.baseMemory = {100};
  p.candidates = {{option(1, {{0, 0, -20}})}};
  p.budget = 10; // at most 20 of the 90 bytes can go
  EXPECT_EQ(solveExact(p).status, Status::Infeasible);
  p.budget = 100; // already fits: nothing to recompute
  Solution fits = solveExact(p);
  EXPECT_EQ(fits.status, Status::Optimal);
  EXPECT_EQ(fits.choice, (std::vector<int>{-1}));
  EXPECT_EQ(fits.objective, 0);
  p.budget = 90;
  SolveOptions small;
  small.maxOptions = 0;
  EXPECT_EQ(solveExact(p, small).status, Status::TooLarge);
}

// Random instances (up to 7 candidates, 1-3 options each, mixed signs) against an exhaustive
// search: the solver finds a choice exactly when one exists, and with the least FLOPs.
TEST(RematSolver, MatchesExhaustiveSearch) {
  std::mt19937 rng(7);
  for (int round = 0; round < 60; ++round) {
    Problem p;
    int points = 2 + int(rng() % 8);
    for (int t = 0; t < points; ++t)
      p.baseMemory.push_back(50 + int64_t(rng() % 100));
    int candidates = 1 + int(rng() % 7);
    for (int c = 0; c < candidates; ++c) {
      std::vector<Option> options;
      for (int o = 0, k = 1 + int(rng() % 3); o < k; ++o) {
        Option opt;
        opt.flops = 1 + double(rng() % 20);
        for (int s = 0, m = 1 + int(rng() % 2); s < m; ++s) {
          int64_t a = rng() % points, b = rng() % points;
          int64_t bytes = -int64_t(rng() % 40) + (s == 1 ? int64_t(rng() % 30) : 0);
          opt.delta.push_back({std::min(a, b), std::max(a, b), bytes});
        }
        options.push_back(opt);
      }
      p.candidates.push_back(options);
    }
    int64_t base = *std::max_element(p.baseMemory.begin(), p.baseMemory.end());
    p.budget = base - int64_t(rng() % 60);

    double best = INFINITY;
    std::vector<int> choice(candidates, -1);
    std::function<void(int)> search = [&](int c) {
      if (c == candidates) {
        if (modelPeak(p, choice) <= p.budget) {
          double flops = 0;
          for (int i = 0; i < candidates; ++i)
            if (choice[i] >= 0)
              flops += p.candidates[i][choice[i]].flops;
          best = std::min(best, flops);
        }
        return;
      }
      for (int o = -1; o < int(p.candidates[c].size()); ++o) {
        choice[c] = o;
        search(c + 1);
      }
      choice[c] = -1;
    };
    search(0);

    Solution s = solveExact(p);
    SCOPED_TRACE("round " + std::to_string(round));
    if (std::isinf(best)) {
      EXPECT_EQ(s.status, Status::Infeasible);
      continue;
    }
    ASSERT_EQ(s.status, Status::Optimal);
    EXPECT_NEAR(s.objective, best, 1e-6);
    EXPECT_LE(s.modelPeak, p.budget);
    EXPECT_LE(s.lpBound, s.objective + 1e-6);
  }
}

// n = 16: checkpoints every 4th op (3, 7, 11, 15); n = 10: every 4th and the last (3, 7, 9).
// max x0 + x1 (min -x0 - x1) subject to x0 + x1 <= 1.5, 0/1: the LP gives -1.5, the 0/1
// optimum -1. The solve runs in a child process; one that dies there (as Debian's CLP does on
// a failed assertion) costs that solve only, and proves nothing.
OsiClpSolverInterface twoColumnProgram() {
  OsiClpSolverInterface solver;
  int starts[] = {0, 1, 2};
  int rows[] = {0, 0};
  double values[] = {1, 1}, colLower[] = {0, 0}, colUpper[] = {1, 1}, objective[] = {-1, -1};
  double rowLower[] = {-1e30}, rowUpper[] = {1.5};
  solver.loadProblem(2, 1, starts, rows, values, colLower, colUpper, objective, rowLower, rowUpper);
  return solver;
}

TEST(BinaryProgram, SolvesInAChildProcess) {
  OsiClpSolverInterface solver = twoColumnProgram();
  BinaryProgramResult r = solveBinaryProgram(solver, 10);
  EXPECT_FALSE(r.aborted);
  ASSERT_TRUE(r.lpSolved);
  EXPECT_DOUBLE_EQ(r.lpObjective, -1.5);
  ASSERT_TRUE(r.hasSolution);
  EXPECT_TRUE(r.optimal);
  ASSERT_EQ(r.x.size(), 2u);
  EXPECT_DOUBLE_EQ(r.x[0] + r.x[1], 1);
}

TEST(BinaryProgram, ASolverThatDiesProvesNothing) {
  OsiClpSolverInterface solver = twoColumnProgram();
  BinaryProgramResult r = solveBinaryProgram(solver, 10, -1, [] { std::abort(); });
  EXPECT_TRUE(r.aborted);
  EXPECT_FALSE(r.lpSolved);
  EXPECT_FALSE(r.hasSolution);
  EXPECT_FALSE(r.provenInfeasible);
  // And the next solve is unaffected.
  OsiClpSolverInterface again = twoColumnProgram();
  EXPECT_TRUE(solveBinaryProgram(again, 10).optimal);
}

// The solves at several budgets in one child process give what one solve per budget gives,
// and stop after the first budget without a solution (0: nothing fits).
TEST(RematSolver, SolvesSeveralBudgetsInOneChild) {
  Problem p;
  p.baseMemory = {10, 100, 100, 10};
  p.candidates = {
      {option(5, {{1, 2, -50}})}, {option(3, {{1, 2, -30}})}, {option(4, {{1, 2, -30}})}};
  std::vector<int64_t> budgets = {60, 75, 0, 90};
  std::vector<Solution> all = solveExactAtBudgets(p, budgets);
  ASSERT_EQ(all.size(), 3u);
  for (size_t i = 0; i < all.size(); ++i) {
    Problem one = p;
    one.budget = budgets[i];
    Solution alone = solveExact(one);
    EXPECT_EQ(all[i].status, alone.status) << "budget " << budgets[i];
    EXPECT_EQ(all[i].choice, alone.choice) << "budget " << budgets[i];
    EXPECT_DOUBLE_EQ(all[i].objective, alone.objective) << "budget " << budgets[i];
  }
  EXPECT_EQ(all[0].choice, (std::vector<int>{0, -1, -1})); // A: 5 FLOPs frees 50
  EXPECT_EQ(all[1].choice, (std::vector<int>{-1, 0, -1})); // B: 3 FLOPs frees the 25 needed
  EXPECT_FALSE(all[2].hasSolution());
}

TEST(RematSolver, ChenCheckpoints) {
  std::vector<bool> sixteen = chenCheckpoints(16), ten = chenCheckpoints(10);
  for (size_t i = 0; i < 16; ++i)
    EXPECT_EQ(sixteen[i], i % 4 == 3) << i;
  for (size_t i = 0; i < 10; ++i)
    EXPECT_EQ(ten[i], i == 3 || i == 7 || i == 9) << i;
}

} // namespace
