// Unit tests for the instant lower bound (fit/BoundaryBound.h): hand-made steps whose
// optimum is worked out in the comments, and random small steps checked against an exhaustive
// search over every set of ops run again.
#include "fit/BoundaryBound.h"

#include <gtest/gtest.h>

#include <random>

using namespace graphc::remat;

namespace {

BoundaryValue value(int64_t bytes, int producer, bool needed, bool live = false) {
  return BoundaryValue{bytes, producer, needed, live};
}

// x (an argument) -> conv A (100 FLOPs) -> a (10 B) -> relu B (1 FLOP) -> b (10 B), both read
// by the backward pass, 10 bytes free at the loss: hold a and run B again (1 FLOP); holding b
// and running A again would cost 100.
TEST(BoundaryBound, HoldsTheInputOfTheCheapOp) {
  BoundaryProblem p;
  p.ops = {{100, {}}, {1, {0}}};
  p.values = {value(10, 0, true), value(10, 1, true)};
  p.capacity = 10;
  BoundarySolution s = solveBoundaryBound(p);
  ASSERT_EQ(s.status, Status::Optimal);
  EXPECT_DOUBLE_EQ(s.bound, 1);
  EXPECT_EQ(s.heldBytes, 10);
}

// Only b is read after the loss, and nothing may be held: B runs again, and so does A, since
// its output a is not there either: 101.
TEST(BoundaryBound, RunsTheProducersOfWhatIsNotHeld) {
  BoundaryProblem p;
  p.ops = {{100, {}}, {1, {0}}};
  p.values = {value(10, 0, false), value(10, 1, true)};
  p.capacity = 0;
  BoundarySolution s = solveBoundaryBound(p);
  ASSERT_EQ(s.status, Status::Optimal);
  EXPECT_DOUBLE_EQ(s.bound, 101);
}

// Three needed values of 6 bytes (1 FLOP each) and 10 bytes: one can be held, two run again.
// The LP relaxation would hold 10/6 of one (bound 1.33); the 0/1 optimum is 2.
TEST(BoundaryBound, IsTheIntegerOptimum) {
  BoundaryProblem p;
  p.ops = {{1, {}}, {1, {}}, {1, {}}};
  p.values = {value(6, 0, true), value(6, 1, true), value(6, 2, true)};
  p.capacity = 10;
  BoundarySolution s = solveBoundaryBound(p);
  ASSERT_EQ(s.status, Status::Optimal);
  EXPECT_DOUBLE_EQ(s.bound, 2);
}

// A live value (the loss's operand, 8 B) takes 8 of the 10 bytes, so the needed 5-byte value
// must be produced again (7 FLOPs); a two-result op (a layer norm) runs once for both.
TEST(BoundaryBound, CountsLiveValuesAndMultiResultOpsOnce) {
  BoundaryProblem p;
  p.ops = {{7, {}}, {3, {}}};
  p.values = {value(8, -1, false, /*live=*/true), value(5, 0, true), value(4, 1, true),
              value(4, 1, true)};
  p.capacity = 10;
  BoundarySolution s = solveBoundaryBound(p);
  ASSERT_EQ(s.status, Status::Optimal);
  EXPECT_DOUBLE_EQ(s.bound, 10); // 7 + 3: nothing but the live value fits
}

// An op the loss does not depend on (0 FLOPs) may simply run after the loss: free.
TEST(BoundaryBound, DeferredOpsAreFree) {
  BoundaryProblem p;
  p.ops = {{0, {}}};
  p.values = {value(100, 0, true)};
  p.capacity = 0;
  BoundarySolution s = solveBoundaryBound(p);
  ASSERT_EQ(s.status, Status::Optimal);
  EXPECT_DOUBLE_EQ(s.bound, 0);
}

// A needed value that cannot be produced again (a batch norm's saved statistics) must be held:
// over the capacity, no recomputation fits. Within it and with room for the rest: 0.
TEST(BoundaryBound, InfeasibleAndTrivial) {
  BoundaryProblem p;
  p.ops = {{5, {}}};
  p.values = {value(20, -1, true), value(10, 0, true)};
  p.capacity = 19;
  EXPECT_EQ(solveBoundaryBound(p).status, Status::Infeasible);
  p.capacity = -1;
  EXPECT_EQ(solveBoundaryBound(p).status, Status::Infeasible);
  p.capacity = 30;
  BoundarySolution s = solveBoundaryBound(p);
  EXPECT_EQ(s.status, Status::Optimal);
  EXPECT_EQ(s.bound, 0);
  EXPECT_EQ(s.heldBytes, 30);
}

// Random forward DAGs of up to 8 ops (each op one value, some ops free or not re-runnable)
// against exhaustive search: for each set R of ops run again, the bytes that must be held are
// the live values, the needed values whose producer is not in R, and the inputs of R's ops
// whose producer is not in R; R is feasible when a producer-less value is never required
// outside of being held and the held bytes fit. The bound must equal the cheapest feasible R.
TEST(BoundaryBound, MatchesExhaustiveSearch) {
  std::mt19937 rng(7);
  for (int instance = 0; instance < 300; ++instance) {
    unsigned n = 1 + rng() % 8;
    BoundaryProblem p;
    for (unsigned i = 0; i < n; ++i) {
      BoundaryOp op;
      op.flops = rng() % 4 == 0 ? 0 : double(1 + rng() % 50);
      for (unsigned j = 0; j < i; ++j)
        if (rng() % 3 == 0)
          op.inputs.push_back(j);
      p.ops.push_back(op);
      bool reRunnable = rng() % 5 != 0;
      p.values.push_back(
          value(1 + rng() % 40, reRunnable ? int(i) : -1, rng() % 2 == 0, rng() % 10 == 0));
    }
    p.capacity = int64_t(rng() % 120);
    double best = -1;
    for (unsigned mask = 0; mask < (1u << n); ++mask) {
      auto again = [&](unsigned v) {
        return p.values[v].producer >= 0 && (mask >> p.values[v].producer & 1);
      };
      std::vector<bool> held(n, false);
      for (unsigned v = 0; v < n; ++v)
        if (p.values[v].live || (p.values[v].needed && !again(v)))
          held[v] = true;
      bool valid = true;
      double flops = 0;
      for (unsigned o = 0; o < n; ++o) {
        if (!(mask >> o & 1))
          continue;
        if (p.values[o].producer != int(o)) { // this op produces nothing re-runnable
          valid = false;
          break;
        }
        flops += p.ops[o].flops;
        for (unsigned u : p.ops[o].inputs)
          if (!again(u))
            held[u] = true;
      }
      int64_t bytes = 0;
      for (unsigned v = 0; v < n; ++v)
        bytes += held[v] ? p.values[v].bytes : 0;
      if (valid && bytes <= p.capacity && (best < 0 || flops < best))
        best = flops;
    }
    BoundarySolution s = solveBoundaryBound(p);
    if (best < 0) {
      EXPECT_EQ(s.status, Status::Infeasible) << "instance " << instance;
    } else {
      ASSERT_EQ(s.status, Status::Optimal) << "instance " << instance;
      EXPECT_NEAR(s.bound, best, 1e-6) << "instance " << instance;
    }
  }
}

} // namespace
