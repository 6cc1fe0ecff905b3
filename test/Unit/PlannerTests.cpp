// Unit tests for the planner core (planner/Planner.h) and the plan dump formats
// (planner/PlanIO.h). Small hand-written problems spell out the expected offsets in comments;
// a property test then checks best-fit plans on random problems against the verifier, and the
// verifier against a brute-force O(n^2) pairwise check. planNearOptimal is checked on problems
// where every best-fit order misses the optimum, and on random ones against best fit, the
// lower bound and (tiny ones) an exhaustive search.
#include "planner/PlanIO.h"
#include "planner/Planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

using namespace graphc::plan;

namespace {

Buffer buf(std::string name, uint64_t bytes, int64_t first, int64_t last, uint64_t offset = 0) {
  Buffer b;
  b.name = std::move(name);
  b.bytes = bytes;
  b.first = first;
  b.last = last;
  b.offset = offset;
  return b;
}

Plan makePlan(std::vector<Buffer> buffers, uint64_t alignment, uint64_t arena = 0) {
  Plan p;
  p.buffers = std::move(buffers);
  p.alignment = alignment;
  p.arenaBytes = arena;
  return p;
}

// The obvious O(n^2) check, written independently of verifyPlan: any two buffers with
// intersecting live ranges and intersecting (exact) byte ranges.
bool bruteForceOverlap(const Plan &p) {
  for (size_t i = 0; i < p.buffers.size(); ++i)
    for (size_t j = i + 1; j < p.buffers.size(); ++j) {
      const Buffer &a = p.buffers[i], &b = p.buffers[j];
      bool time = a.first <= b.last && b.first <= a.last;
      bool space = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      if (time && space && a.bytes && b.bytes)
        return true;
    }
  return false;
}

} // namespace

//===----------------------------------------------------------------------===//
// Planner
//===----------------------------------------------------------------------===//

TEST(Planner, AlignTo) {
  EXPECT_EQ(alignTo(0, 256), 0u);
  EXPECT_EQ(alignTo(1, 256), 256u);
  EXPECT_EQ(alignTo(256, 256), 256u);
  EXPECT_EQ(alignTo(257, 256), 512u);
  EXPECT_EQ(alignTo(7, 1), 7u);
}

TEST(Planner, ChainReusesDeadSpace) {
  // a -> b -> c, each live for two steps: a and c never meet, so c takes a's bytes.
  Plan plan = makePlan({buf("a", 1000, 0, 1), buf("b", 1000, 1, 2), buf("c", 1000, 2, 3)}, 256);
  planBestFit(plan);
  // All three are 1024 after alignment; ties go to the earlier first step: a, b, c.
  EXPECT_EQ(plan.buffers[0].offset, 0u);    // a: first placed, bottom
  EXPECT_EQ(plan.buffers[1].offset, 1024u); // b: meets a at step 1, goes on top of a's 1024
  EXPECT_EQ(plan.buffers[2].offset, 0u);    // c: meets only b; the gap [0, 1024) below b fits
  EXPECT_EQ(plan.arenaBytes, 2048u);
  EXPECT_EQ(lowerBound(plan.buffers, 256), 2048u); // steps 1 and 2: two 1024-byte buffers
  EXPECT_EQ(verifyPlan(plan), "");
}

TEST(Planner, BestFitTakesTheSmallerGap) {
  // g1 and g2 live only at step 0 and leave holes; x (150 bytes, steps 5..9) fits both holes
  // and must take the smaller one. Alignment 1 so that sizes are exact.
  Plan plan = makePlan({buf("g1", 300, 0, 0), buf("w1", 250, 0, 9), buf("g2", 200, 0, 0),
                        buf("w2", 190, 0, 9), buf("x", 150, 5, 9)},
                       1);
  planBestFit(plan);
  // Order by size: g1 300, w1 250, g2 200, w2 190, x 150.
  EXPECT_EQ(plan.buffers[0].offset, 0u);   // g1 [0, 300)
  EXPECT_EQ(plan.buffers[1].offset, 300u); // w1 [300, 550): on top of g1
  EXPECT_EQ(plan.buffers[2].offset, 550u); // g2 [550, 750): on top of w1
  EXPECT_EQ(plan.buffers[3].offset, 750u); // w2 [750, 940): on top of g2
  // x meets only w1 and w2: gaps [0, 300) (300 bytes) and [550, 750) (200 bytes); best fit
  // takes the 200-byte gap, first fit would have taken offset 0.
  EXPECT_EQ(plan.buffers[4].offset, 550u);
  EXPECT_EQ(plan.arenaBytes, 940u);
  EXPECT_EQ(lowerBound(plan.buffers, 1), 940u); // step 0: 300 + 250 + 200 + 190
  EXPECT_EQ(verifyPlan(plan), "");
}

TEST(Planner, AlignmentRounding) {
  // All live together; sizes rounded up to 256: a 100 -> 256, b 100 -> 256, c 300 -> 512.
  Plan plan = makePlan({buf("a", 100, 0, 1), buf("b", 100, 0, 1), buf("c", 300, 0, 1)}, 256);
  planBestFit(plan);
  EXPECT_EQ(plan.buffers[2].offset, 0u);   // c: largest (512), placed first
  EXPECT_EQ(plan.buffers[0].offset, 512u); // a: +512 (c's 300 aligned to 256)
  EXPECT_EQ(plan.buffers[1].offset, 768u); // b: +256 (a's 100 aligned to 256)
  EXPECT_EQ(plan.arenaBytes, 1024u);
  EXPECT_EQ(lowerBound(plan.buffers, 256), 1024u);
  EXPECT_EQ(lowerBound(plan.buffers, 1), 500u); // exact sizes
  for (const Buffer &b : plan.buffers)
    EXPECT_EQ(b.offset % 256, 0u) << b.name;
  EXPECT_EQ(verifyPlan(plan), "");
}

TEST(Planner, LowerBound) {
  // Live bytes by step (alignment 1): 0:100 1:150 2:150 3:120 4:70. a ends at 2 and c starts
  // at 3, so they are never counted together (releases come before acquisitions).
  std::vector<Buffer> bs = {buf("a", 100, 0, 2), buf("b", 50, 1, 3), buf("c", 70, 3, 4)};
  EXPECT_EQ(lowerBound(bs, 1), 150u);
  bs.push_back(buf("d", 40, 3, 3)); // step 3: 50 + 70 + 40 = 160
  EXPECT_EQ(lowerBound(bs, 1), 160u);
  // Aligned to 64: a 128, b 64, c 128, d 64; step 3 holds b + c + d = 256 (steps 1, 2: 192).
  EXPECT_EQ(lowerBound(bs, 64), 256u);
  EXPECT_EQ(lowerBound({}, 256), 0u);
}

TEST(Planner, NoReuse) {
  Plan plan = makePlan({buf("a", 100, 0, 0), buf("b", 300, 5, 5), buf("c", 1, 9, 9)}, 256);
  planNoReuse(plan);
  EXPECT_EQ(plan.buffers[0].offset, 0u);   // a [0, 256)
  EXPECT_EQ(plan.buffers[1].offset, 256u); // b: +256 (100 aligned to 256)
  EXPECT_EQ(plan.buffers[2].offset, 768u); // c: +512 (300 aligned to 256)
  EXPECT_EQ(plan.arenaBytes, 1024u);       // + 256 (1 aligned to 256)
  EXPECT_EQ(verifyPlan(plan), "");
}

TEST(Planner, ZeroByteBuffersTakeNoSpace) {
  Plan plan = makePlan({buf("empty", 0, 0, 9), buf("a", 256, 0, 9)}, 256);
  planBestFit(plan);
  EXPECT_EQ(plan.buffers[0].offset, 0u);
  EXPECT_EQ(plan.buffers[1].offset, 0u);
  EXPECT_EQ(plan.arenaBytes, 256u);
  EXPECT_EQ(verifyPlan(plan), "");
}

//===----------------------------------------------------------------------===//
// Verifier
//===----------------------------------------------------------------------===//

TEST(Verifier, AcceptsValidPlans) {
  // Touching byte ranges and touching live ranges are both fine.
  Plan plan = makePlan({buf("a", 256, 0, 3, 0), buf("b", 256, 0, 3, 256), buf("c", 512, 4, 5, 0)},
                       256, 512);
  EXPECT_EQ(verifyPlan(plan), "");
  // Exact bytes count against the arena, not aligned ones: 100 bytes at 256 fit in 356.
  Plan exact = makePlan({buf("a", 100, 0, 0, 256)}, 256, 356);
  EXPECT_EQ(verifyPlan(exact), "");
  EXPECT_EQ(verifyPlan(makePlan({}, 256, 0)), "");
}

TEST(Verifier, RejectsOverlap) {
  Plan plan = makePlan({buf("a", 256, 0, 3, 0), buf("b", 256, 2, 5, 128)}, 128, 512);
  EXPECT_EQ(verifyPlan(plan),
            "plan: buffers \"a\" [0, 256) live 0..3 and \"b\" [128, 384) live 2..5 overlap at "
            "step 2");
  // The newer buffer starting below the older one is found too (successor check).
  Plan below = makePlan({buf("a", 256, 0, 3, 128), buf("b", 256, 1, 1, 0)}, 128, 512);
  EXPECT_EQ(verifyPlan(below),
            "plan: buffers \"a\" [128, 384) live 0..3 and \"b\" [0, 256) live 1..1 overlap at "
            "step 1");
  // Overlap with a buffer that is not the most recent one, after another one expired.
  Plan later = makePlan({buf("long", 100, 0, 9, 0), buf("short", 100, 0, 1, 100),
                         buf("late", 100, 5, 6, 50)},
                        1, 300);
  EXPECT_EQ(verifyPlan(later), "plan: buffers \"long\" [0, 100) live 0..9 and \"late\" [50, 150) "
                               "live 5..6 overlap at step 5");
  // Same offset, both live.
  Plan same = makePlan({buf("a", 8, 3, 3, 64), buf("b", 8, 0, 7, 64)}, 1, 128);
  EXPECT_NE(verifyPlan(same).find("overlap at step 3"), std::string::npos) << verifyPlan(same);
}

TEST(Verifier, RejectsOutOfArena) {
  Plan plan = makePlan({buf("a", 256, 0, 0, 0), buf("big", 300, 0, 0, 256)}, 256, 512);
  EXPECT_EQ(verifyPlan(plan),
            "plan: buffer \"big\" [256, 556) live 0..0 ends past the arena of 512 bytes");
  // No wrap-around at the top of uint64_t.
  Plan huge = makePlan({buf("h", 512, 0, 0, UINT64_MAX - 255)}, 256, 1024);
  EXPECT_NE(verifyPlan(huge).find("ends past the arena"), std::string::npos);
}

TEST(Verifier, RejectsMisaligned) {
  Plan plan = makePlan({buf("a", 64, 0, 0, 100)}, 256, 1024);
  EXPECT_EQ(verifyPlan(plan), "plan: buffer \"a\" [100, 164) live 0..0 offset 100 is not a "
                              "multiple of the alignment 256");
}

TEST(Verifier, RejectsBadLiveRanges) {
  Plan empty = makePlan({buf("a", 64, 5, 4, 0)}, 1, 64);
  EXPECT_EQ(verifyPlan(empty), "plan: buffer \"a\" [0, 64) live 5..4 has an empty live range");
  Plan negative = makePlan({buf("a", 64, -1, 4, 0)}, 1, 64);
  EXPECT_EQ(verifyPlan(negative),
            "plan: buffer \"a\" [0, 64) live -1..4 starts at negative step -1");
  EXPECT_EQ(verifyPlan(makePlan({}, 0, 0)), "plan: alignment is 0");
}

// Property test: on random problems, best-fit plans verify, respect the lower bound and the
// no-reuse arena, and any buffer moved onto a live-overlapping neighbour's offset is caught.
// Also cross-checks the verifier against the brute-force pairwise check on random offsets.
TEST(Verifier, RandomProblems) {
  std::mt19937_64 rng(20240611);
  auto uniform = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  const uint64_t alignments[] = {1, 8, 64, 256};
  for (int trial = 0; trial < 200; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    size_t n = uniform(1, 60);
    int64_t steps = static_cast<int64_t>(uniform(1, 40));
    std::vector<Buffer> bs;
    for (size_t i = 0; i < n; ++i) {
      int64_t first = static_cast<int64_t>(uniform(0, steps - 1));
      int64_t last = first + static_cast<int64_t>(uniform(0, steps - 1 - first));
      bs.push_back(buf("t" + std::to_string(i), uniform(1, 5000), first, last));
    }
    uint64_t alignment = alignments[uniform(0, 3)];
    Plan plan = makePlan(bs, alignment);
    planBestFit(plan);
    ASSERT_EQ(verifyPlan(plan), "");
    uint64_t lower = lowerBound(plan.buffers, alignment);
    EXPECT_GE(plan.arenaBytes, lower);
    Plan noReuse = makePlan(bs, alignment);
    planNoReuse(noReuse);
    EXPECT_EQ(verifyPlan(noReuse), "");
    EXPECT_LE(plan.arenaBytes, noReuse.arenaBytes);

    // Move i onto the offset of some j whose live range meets i's: must be rejected as an
    // overlap (the arena is grown so that the move cannot be caught as out-of-arena instead).
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        const Buffer &a = plan.buffers[i], &b = plan.buffers[j];
        if (i == j || a.last < b.first || b.last < a.first)
          continue;
        Plan moved = plan;
        moved.buffers[i].offset = b.offset;
        moved.arenaBytes = std::max(plan.arenaBytes, b.offset + alignTo(a.bytes, alignment));
        std::string err = verifyPlan(moved);
        EXPECT_NE(err.find("overlap"), std::string::npos) << i << " onto " << j << ": " << err;
        i = n; // one pair per trial is enough
        break;
      }

    // Random offsets (aligned, in the arena): verifier agrees with the brute force.
    Plan shuffled = plan;
    for (Buffer &b : shuffled.buffers)
      b.offset = uniform(0, plan.arenaBytes / alignment) * alignment;
    shuffled.arenaBytes = plan.arenaBytes + alignTo(5000, alignment);
    EXPECT_EQ(verifyPlan(shuffled).empty(), !bruteForceOverlap(shuffled)) << verifyPlan(shuffled);
  }
}

//===----------------------------------------------------------------------===//
// planNearOptimal
//===----------------------------------------------------------------------===//

namespace {

PlanOptions heuristicOnly() {
  PlanOptions o;
  o.heuristicOnly = true;
  return o;
}

// Independent brute force for tiny problems: pushing every buffer down until it rests on 0 or
// on a buffer it meets in time does not raise the height, so some optimal plan has every
// offset, and the height, equal to a sum of a subset of the (aligned) sizes. Tries heights in
// increasing order among those sums (from the lower bound up), each by a depth-first search
// over subset-sum offsets in input order. Exponential; n <= 7.
uint64_t bruteForceOptimum(const std::vector<Buffer> &bs, uint64_t alignment) {
  const size_t n = bs.size();
  std::vector<uint64_t> size(n);
  for (size_t i = 0; i < n; ++i)
    size[i] = alignTo(bs[i].bytes, alignment);
  std::vector<uint64_t> sums;
  for (size_t mask = 0; mask < (size_t(1) << n); ++mask) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i)
      if (mask >> i & 1)
        sum += size[i];
    sums.push_back(sum);
  }
  std::sort(sums.begin(), sums.end());
  sums.erase(std::unique(sums.begin(), sums.end()), sums.end());
  std::vector<uint64_t> off(n);
  std::function<bool(size_t, uint64_t)> place = [&](size_t i, uint64_t height) {
    if (i == n)
      return true;
    for (uint64_t o : sums) {
      if (o + size[i] > height)
        break;
      bool ok = true;
      for (size_t j = 0; j < i && ok; ++j) {
        bool time = bs[i].first <= bs[j].last && bs[j].first <= bs[i].last;
        bool space = o < off[j] + size[j] && off[j] < o + size[i];
        ok = !(time && space && size[i] && size[j]);
      }
      if (ok) {
        off[i] = o;
        if (place(i + 1, height))
          return true;
      }
    }
    return false;
  };
  uint64_t lower = lowerBound(bs, alignment);
  for (uint64_t h : sums)
    if (h >= lower && place(0, h))
      return h;
  ADD_FAILURE() << "brute force found no plan";
  return 0;
}

} // namespace

TEST(NearOptimal, HeuristicAtLowerBoundKeepsBestFitPlan) {
  // The gaps problem of BestFitTakesTheSmallerGap: best fit by size reaches the lower bound,
  // so planNearOptimal returns exactly its plan and never searches.
  Plan plan = makePlan({buf("g1", 300, 0, 0), buf("w1", 250, 0, 9), buf("g2", 200, 0, 0),
                        buf("w2", 190, 0, 9), buf("x", 150, 5, 9)},
                       1);
  PlanStats st = planNearOptimal(plan);
  EXPECT_EQ(plan.buffers[0].offset, 0u);   // g1 [0, 300)
  EXPECT_EQ(plan.buffers[1].offset, 300u); // w1: +300 on g1
  EXPECT_EQ(plan.buffers[2].offset, 550u); // g2: +250 on w1
  EXPECT_EQ(plan.buffers[3].offset, 750u); // w2: +200 on g2
  EXPECT_EQ(plan.buffers[4].offset, 550u); // x: the 200-byte hole left by g2
  EXPECT_EQ(plan.arenaBytes, 940u);
  EXPECT_EQ(st.lowerBound, 940u);
  EXPECT_EQ(st.height, 940u);
  EXPECT_EQ(st.heuristic, "size");
  EXPECT_TRUE(st.optimal);
  EXPECT_FALSE(st.searched);
  EXPECT_EQ(verifyPlan(plan), "");
}

TEST(NearOptimal, AlignmentRounding) {
  // Alignment 16: x 100 -> 112, y 50 -> 64, z 40 -> 48; all live at step 1, z not with x.
  Plan plan = makePlan({buf("x", 100, 0, 1), buf("y", 50, 1, 2), buf("z", 40, 2, 3)}, 16);
  PlanStats st = planNearOptimal(plan);
  EXPECT_EQ(plan.buffers[0].offset, 0u);   // x [0, 112): largest first
  EXPECT_EQ(plan.buffers[1].offset, 112u); // y: +112 (100 align 16)
  EXPECT_EQ(plan.buffers[2].offset, 0u);   // z: meets only y; x's bytes are free again
  EXPECT_EQ(plan.arenaBytes, 176u);        // 112 + 64 (50 align 16)
  EXPECT_EQ(st.lowerBound, 176u);
  EXPECT_TRUE(st.optimal);
  EXPECT_EQ(verifyPlan(plan), "");
}

TEST(NearOptimal, SearchBeatsEveryBestFitOrder) {
  // Live bytes by step: 0: b 80; 1: b + c = 120; 2, 3: a + c + d = 130; 4: a + d = 90.
  Plan problem = makePlan(
      {buf("a", 70, 2, 4), buf("b", 80, 0, 1), buf("c", 40, 1, 3), buf("d", 20, 2, 4)}, 1);
  // Best fit by size: b @0, a @0 (never meets b), c @80 (on b, above a), d: the 10-byte hole
  // [70, 80) between a and c is too small, so d goes on top of c @120: height 140. The other
  // orders (duration, area, first step, conflict) do no better.
  Plan heuristic = problem;
  PlanStats hs = planNearOptimal(heuristic, heuristicOnly());
  EXPECT_EQ(hs.heuristicHeight, 140u);
  EXPECT_EQ(hs.height, 140u);
  EXPECT_EQ(hs.heuristic, "size");
  EXPECT_EQ(heuristic.buffers[3].offset, 120u);
  EXPECT_FALSE(hs.searched);
  EXPECT_FALSE(hs.optimal);

  // c meets every other buffer in time, so the search stacks it at the bottom and places the
  // rest above it: c [0, 40), a [40, 110) and b [40, 120) (they never meet), d on a.
  Plan plan = problem;
  PlanStats st = planNearOptimal(plan);
  EXPECT_EQ(plan.buffers[0].offset, 40u);  // a: +40 on c
  EXPECT_EQ(plan.buffers[1].offset, 40u);  // b: +40 on c
  EXPECT_EQ(plan.buffers[2].offset, 0u);   // c: the bottom stack
  EXPECT_EQ(plan.buffers[3].offset, 110u); // d: +70 on a
  EXPECT_EQ(plan.arenaBytes, 130u);
  EXPECT_EQ(st.lowerBound, 130u);
  EXPECT_EQ(st.heuristicHeight, 140u);
  EXPECT_EQ(st.height, 130u);
  EXPECT_TRUE(st.searched);
  EXPECT_TRUE(st.optimal);
  EXPECT_GT(st.nodes, 0u);
  EXPECT_EQ(verifyPlan(plan), "");
  EXPECT_EQ(bruteForceOptimum(problem.buffers, 1), 130u);
}

TEST(NearOptimal, SearchStacksBuffersLiveThroughoutAtTheBottom) {
  // SearchBeatsEveryBestFitOrder's buffers plus p, live at every step (a parameter). p and c
  // meet every other buffer, so the search stacks them at the bottom in index order and
  // searches only a, b and d, against the capacity less 70.
  Plan problem = makePlan({buf("p", 30, 0, 4), buf("a", 70, 2, 4), buf("b", 80, 0, 1),
                           buf("c", 40, 1, 3), buf("d", 20, 2, 4)},
                          1);
  Plan plan = problem;
  PlanStats st = planNearOptimal(plan);
  EXPECT_EQ(plan.buffers[0].offset, 0u);   // p: the bottom stack
  EXPECT_EQ(plan.buffers[3].offset, 30u);  // c: +30 on p
  EXPECT_EQ(plan.buffers[1].offset, 70u);  // a: +40 on c
  EXPECT_EQ(plan.buffers[2].offset, 70u);  // b: +40 on c (never meets a)
  EXPECT_EQ(plan.buffers[4].offset, 140u); // d: +70 on a
  EXPECT_EQ(st.lowerBound, 160u);          // steps 2, 3: p + a + c + d
  EXPECT_EQ(st.height, 160u);
  EXPECT_GT(st.heuristicHeight, 160u);
  EXPECT_TRUE(st.searched);
  EXPECT_TRUE(st.optimal);
  EXPECT_EQ(verifyPlan(plan), "");
  EXPECT_EQ(bruteForceOptimum(problem.buffers, 1), 160u);

  // Against a capacity: the stacked bytes come off it, and a capacity below the lower bound
  // is still refused before the search.
  PlanOptions capacity;
  capacity.capacity = 160;
  Plan fitted = problem;
  EXPECT_TRUE(planNearOptimal(fitted, capacity).fits);
  EXPECT_EQ(fitted.arenaBytes, 160u);
  capacity.capacity = 159;
  Plan refused = problem;
  PlanStats none = planNearOptimal(refused, capacity);
  EXPECT_FALSE(none.fits);
  EXPECT_TRUE(none.infeasible);
}

TEST(NearOptimal, SearchClosesALargeGap) {
  // Best fit by size (a, b, c, d, e) reaches 180; the optimum is the lower bound 130:
  // step 1 holds c 50 + d 50 + e 30. Search: a @0, b @50, c @0, d @80, e @50.
  Plan plan = makePlan({buf("a", 80, 2, 2), buf("b", 80, 0, 0), buf("c", 50, 0, 1),
                        buf("d", 50, 1, 2), buf("e", 30, 1, 1)},
                       1);
  Plan heuristic = plan;
  EXPECT_EQ(planNearOptimal(heuristic, heuristicOnly()).height, 180u);
  PlanStats st = planNearOptimal(plan);
  EXPECT_EQ(st.height, 130u);
  EXPECT_TRUE(st.optimal);
  EXPECT_EQ(plan.buffers[2].offset, 0u);  // c [0, 50)
  EXPECT_EQ(plan.buffers[4].offset, 50u); // e: +50 on c
  EXPECT_EQ(plan.buffers[3].offset, 80u); // d: +30 on e
  EXPECT_EQ(plan.buffers[0].offset, 0u);  // a: below d at step 2
  EXPECT_EQ(plan.buffers[1].offset, 50u); // b: on c at step 0
  EXPECT_EQ(verifyPlan(plan), "");
}

TEST(NearOptimal, Capacity) {
  Plan problem = makePlan(
      {buf("a", 70, 2, 4), buf("b", 80, 0, 1), buf("c", 40, 1, 3), buf("d", 20, 2, 4)}, 1);
  // Below the lower bound: proven impossible without searching; the heuristic plan is kept.
  Plan below = problem;
  PlanOptions o;
  o.capacity = 129;
  PlanStats st = planNearOptimal(below, o);
  EXPECT_FALSE(st.fits);
  EXPECT_TRUE(st.infeasible);
  EXPECT_FALSE(st.searched);
  EXPECT_EQ(st.height, 140u);
  EXPECT_EQ(verifyPlan(below), "");
  // The heuristic fits 150: no search.
  Plan loose = problem;
  o.capacity = 150;
  st = planNearOptimal(loose, o);
  EXPECT_TRUE(st.fits);
  EXPECT_FALSE(st.searched);
  EXPECT_EQ(st.height, 140u);
  // 135 needs the search, which stops at the first plan that fits (here the optimum).
  Plan tight = problem;
  o.capacity = 135;
  st = planNearOptimal(tight, o);
  EXPECT_TRUE(st.fits);
  EXPECT_TRUE(st.searched);
  EXPECT_LE(st.height, 135u);
  EXPECT_EQ(verifyPlan(tight), "");
}

TEST(NearOptimal, EmptyAndZeroByteBuffers) {
  Plan empty = makePlan({}, 256);
  PlanStats st = planNearOptimal(empty);
  EXPECT_EQ(st.height, 0u);
  EXPECT_EQ(empty.arenaBytes, 0u);
  EXPECT_TRUE(st.optimal);
  Plan zero = makePlan({buf("z", 0, 0, 9), buf("a", 300, 0, 9)}, 256);
  st = planNearOptimal(zero);
  EXPECT_EQ(zero.buffers[0].offset, 0u);
  EXPECT_EQ(zero.buffers[1].offset, 0u);
  EXPECT_EQ(zero.arenaBytes, 512u); // 300 align 256
  EXPECT_EQ(verifyPlan(zero), "");
}

// Property test: on random problems the plan verifies, its height lies between the lower
// bound and best fit's (and the multi-order heuristic's), the search proves optimality on
// these small problems, and on tiny ones the height equals the brute-force optimum.
TEST(NearOptimal, RandomProblems) {
  std::mt19937_64 rng(20261122);
  auto uniform = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  const uint64_t alignments[] = {1, 8, 64};
  int beaten = 0;
  for (int trial = 0; trial < 1200; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    bool tiny = trial % 4 != 0;
    size_t n = tiny ? uniform(1, 7) : uniform(8, 40);
    int64_t steps = static_cast<int64_t>(uniform(1, tiny ? 6 : 20));
    std::vector<Buffer> bs;
    for (size_t i = 0; i < n; ++i) {
      int64_t first = static_cast<int64_t>(uniform(0, steps - 1));
      int64_t last = first + static_cast<int64_t>(uniform(0, steps - 1 - first));
      bs.push_back(buf("t" + std::to_string(i), uniform(1, tiny ? 100 : 5000), first, last));
    }
    uint64_t alignment = alignments[uniform(0, 2)];
    Plan plan = makePlan(bs, alignment);
    PlanOptions options;
    options.nodeLimit = 200000; // deterministic, and ample for these sizes
    options.timeLimitSeconds = 10;
    PlanStats st = planNearOptimal(plan, options);
    ASSERT_EQ(verifyPlan(plan), "");
    EXPECT_FALSE(bruteForceOverlap(plan));
    EXPECT_EQ(st.height, plan.arenaBytes);
    EXPECT_GE(st.height, st.lowerBound);
    EXPECT_EQ(st.lowerBound, lowerBound(bs, alignment));
    EXPECT_LE(st.height, st.heuristicHeight);
    Plan bestFit = makePlan(bs, alignment);
    planBestFit(bestFit);
    EXPECT_LE(st.height, bestFit.arenaBytes);
    Plan heuristic = makePlan(bs, alignment);
    EXPECT_EQ(planNearOptimal(heuristic, heuristicOnly()).height, st.heuristicHeight);
    if (tiny) {
      EXPECT_TRUE(st.optimal);
      EXPECT_EQ(st.height, bruteForceOptimum(bs, alignment));
    }
    beaten += st.height < st.heuristicHeight;
    // Same input, same budget: same plan.
    Plan again = makePlan(bs, alignment);
    planNearOptimal(again, options);
    for (size_t i = 0; i < n; ++i)
      EXPECT_EQ(again.buffers[i].offset, plan.buffers[i].offset);
  }
  EXPECT_GT(beaten, 10); // the search must matter on some of them
}

// The multi-order heuristic's "size" order is planBestFit's order, placed by a different sweep
// (columns of ranks tested 64 buffers at a time, PlanSearch.cpp). On problems of hundreds of
// buffers over many steps (many blocks, many equal offsets), it must give planBestFit's height
// exactly: the heuristic reports "size" exactly when no later order beats planBestFit, and
// otherwise a strictly lower height.
TEST(NearOptimal, BestFitSweepMatchesPlanBestFit) {
  std::mt19937_64 rng(20261124);
  auto uniform = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  int sizeWins = 0;
  for (int trial = 0; trial < 60; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    size_t n = uniform(65, 700);
    int64_t steps = int64_t(uniform(2, 3000));
    std::vector<Buffer> bs;
    for (size_t i = 0; i < n; ++i) {
      int64_t first = int64_t(uniform(0, steps - 1));
      int64_t span = int64_t(uniform(0, i % 5 == 0 ? steps - 1 : std::min<int64_t>(steps - 1, 40)));
      bs.push_back(buf("t" + std::to_string(i), 64 * uniform(1, 6), first,
                       std::min(steps - 1, first + span)));
    }
    Plan heuristic = makePlan(bs, 64), bestFit = makePlan(bs, 64);
    PlanStats st = planNearOptimal(heuristic, heuristicOnly());
    planBestFit(bestFit);
    ASSERT_EQ(verifyPlan(heuristic), "");
    if (st.heuristic == "size") {
      ++sizeWins;
      EXPECT_EQ(st.heuristicHeight, bestFit.arenaBytes);
    } else {
      EXPECT_LT(st.heuristicHeight, bestFit.arenaBytes);
    }
  }
  EXPECT_GT(sizeWins, 5); // both branches must be exercised
}

//===----------------------------------------------------------------------===//
// PlanIO
//===----------------------------------------------------------------------===//

TEST(PlanIO, HumanBytes) {
  EXPECT_EQ(humanBytes(0), "0 B");
  EXPECT_EQ(humanBytes(1023), "1023 B");
  EXPECT_EQ(humanBytes(1024), "1.00 KiB");
  EXPECT_EQ(humanBytes(1536 * 1024), "1.50 MiB");
  EXPECT_EQ(humanBytes(3ull << 30), "3.00 GiB");
}

TEST(PlanIO, CsvWriteAndRead) {
  Plan plan = makePlan({buf("a,odd name", 100, 0, 1, 0), buf("b", 300, 2, 4, 256)}, 256, 768);
  std::string text;
  llvm::raw_string_ostream os(text);
  writePlanCsv(os, plan);
  // id = index, upper = last + 1, size = aligned size.
  EXPECT_EQ(text, "id,lower,upper,size,offset\n0,0,2,256,0\n1,2,5,512,256\n");

  CsvProblem back;
  ASSERT_EQ(parseMiniMallocCsv(text, "x.csv", back), "");
  ASSERT_TRUE(back.hasOffsets);
  ASSERT_EQ(back.buffers.size(), 2u);
  EXPECT_EQ(back.buffers[1].name, "1");
  EXPECT_EQ(back.buffers[1].first, 2);
  EXPECT_EQ(back.buffers[1].last, 4);
  EXPECT_EQ(back.buffers[1].bytes, 512u);
  EXPECT_EQ(back.buffers[1].offset, 256u);

  std::string named;
  llvm::raw_string_ostream nos(named);
  writePlanCsv(nos, makePlan({buf("b1", 4, 0, 2, 8)}, 1), CsvIds::Name);
  EXPECT_EQ(named, "id,lower,upper,size,offset\nb1,0,3,4,8\n");
}

TEST(PlanIO, CsvProblemWithoutOffsets) {
  CsvProblem p;
  ASSERT_EQ(parseMiniMallocCsv("id,lower,upper,size\r\n\nb1,0,3,4\r\n  b2 , 3 ,9,4\n\n", "p.csv", p),
            "");
  EXPECT_FALSE(p.hasOffsets);
  ASSERT_EQ(p.buffers.size(), 2u);
  EXPECT_EQ(p.buffers[1].name, "b2");
  EXPECT_EQ(p.buffers[1].first, 3);
  EXPECT_EQ(p.buffers[1].last, 8);
  EXPECT_EQ(p.buffers[1].bytes, 4u);
}

TEST(PlanIO, CsvErrors) {
  CsvProblem p;
  EXPECT_EQ(parseMiniMallocCsv("", "e.csv", p),
            "e.csv:1: missing header row id,lower,upper,size[,offset]");
  EXPECT_EQ(parseMiniMallocCsv("0,0,3,4\n", "e.csv", p),
            "e.csv:1: unknown column '0' in header (expected id,lower,upper,size[,offset])");
  EXPECT_EQ(parseMiniMallocCsv("id,lower,size\n", "e.csv", p),
            "e.csv:1: header lacks column 'upper' (expected id,lower,upper,size[,offset])");
  EXPECT_EQ(parseMiniMallocCsv("id,lower,upper,size\n\nb1,0,3\n", "e.csv", p),
            "e.csv:3: expected 4 fields, found 3");
  EXPECT_EQ(parseMiniMallocCsv("id,lower,upper,size\nb1,0,x3,4\n", "e.csv", p),
            "e.csv:2: 'upper' is not a valid integer: 'x3'");
  EXPECT_EQ(parseMiniMallocCsv("id,lower,upper,size\nb1,0,3,-4\n", "e.csv", p),
            "e.csv:2: 'size' is not a valid integer: '-4'");
  EXPECT_EQ(parseMiniMallocCsv("id,lower,upper,size\nb1,3,3,4\n", "e.csv", p),
            "e.csv:2: empty interval: upper 3 <= lower 3");
  EXPECT_EQ(parseMiniMallocCsv("id,lower,upper,size\nb1,-1,3,4\n", "e.csv", p),
            "e.csv:2: negative lower -1");
  EXPECT_EQ(parseMiniMallocCsv("id,lower,upper,size\nb1,0,3,4\nb1,0,3,4\n", "e.csv", p),
            "e.csv:3: duplicate id 'b1'");
  EXPECT_EQ(parseMiniMallocCsv("id,lower,upper,size\nb1,0,99999999999999999999,4\n", "e.csv", p),
            "e.csv:2: 'upper' is not a valid integer: '99999999999999999999'");
  EXPECT_EQ(readMiniMallocCsv("/nonexistent/graphc/p.csv", p).rfind("/nonexistent/graphc/p.csv: ", 0),
            0u);
}

TEST(PlanIO, JsonRoundTrip) {
  Plan plan = makePlan({buf("w", 1000, 0, 3, 0), buf("g", 24, 2, 3, 1024)}, 256, 1280);
  plan.buffers[0].kind = "parameter";
  plan.buffers[1].kind = "gradient";
  std::vector<Step> steps = {{0, "graph.matmul", "model.onnx:3"}, {1, "graph.relu", "loc(\"x\")"}};
  std::string text;
  llvm::raw_string_ostream os(text);
  writePlanJson(os, plan, steps, uint64_t(4096));
  EXPECT_NE(text.find("\"lower_bound_bytes\": 1280"), std::string::npos) << text;
  EXPECT_NE(text.find("\"budget_bytes\": 4096"), std::string::npos) << text;

  JsonPlan back;
  ASSERT_EQ(parsePlanJson(text, "p.json", back), "");
  EXPECT_EQ(back.plan.arenaBytes, 1280u);
  EXPECT_EQ(back.plan.alignment, 256u);
  EXPECT_EQ(back.lowerBoundBytes, 1280u);
  ASSERT_TRUE(back.budget.has_value());
  EXPECT_EQ(*back.budget, 4096u);
  ASSERT_EQ(back.steps.size(), 2u);
  EXPECT_EQ(back.steps[1].loc, "loc(\"x\")");
  ASSERT_EQ(back.plan.buffers.size(), 2u);
  EXPECT_EQ(back.plan.buffers[1].name, "g");
  EXPECT_EQ(back.plan.buffers[1].offset, 1024u);
  EXPECT_EQ(back.plan.buffers[1].kind, "gradient");
  EXPECT_EQ(verifyPlan(back.plan), "");

  std::string noBudget;
  llvm::raw_string_ostream nos(noBudget);
  writePlanJson(nos, plan, {}, std::nullopt);
  EXPECT_NE(noBudget.find("\"budget_bytes\": null"), std::string::npos) << noBudget;
  ASSERT_EQ(parsePlanJson(noBudget, "p.json", back), "");
  EXPECT_FALSE(back.budget.has_value());
}

TEST(PlanIO, JsonErrors) {
  JsonPlan p;
  EXPECT_EQ(parsePlanJson("[]", "p.json", p), "p.json: expected a JSON object at the top level");
  EXPECT_EQ(parsePlanJson("{\"alignment\": 1, \"buffers\": []}", "p.json", p),
            "p.json: missing 'arena_bytes'");
  EXPECT_EQ(parsePlanJson("{\"arena_bytes\": 1, \"alignment\": 1, \"buffers\": [{\"name\": \"a\", "
                          "\"bytes\": 1, \"offset\": -1, \"first\": 0, \"last\": 0}]}",
                          "p.json", p),
            "p.json: 'buffers[0].offset' is not a non-negative integer");
  EXPECT_EQ(parsePlanJson("{\"arena_bytes\": 1, \"alignment\": 1}", "p.json", p),
            "p.json: missing 'buffers'");
  std::string syntax = parsePlanJson("{\"arena_bytes\": 1,,}", "p.json", p);
  EXPECT_EQ(syntax.rfind("p.json: [1:", 0), 0u) << syntax;
}

TEST(PlanIO, TextTable) {
  Plan plan = makePlan({buf("late", 100, 4, 5, 0), buf("w", 1000, 0, 3, 0), buf("g", 24, 2, 3, 1024)},
                       256, 1280);
  plan.buffers[1].kind = "parameter";
  plan.buffers[1].op = "graph.param";
  std::string text;
  llvm::raw_string_ostream os(text);
  writePlanText(os, plan, std::nullopt);
  EXPECT_NE(text.find("arena:       1280 (1.25 KiB)"), std::string::npos) << text;
  EXPECT_NE(text.find("budget:      none"), std::string::npos) << text;
  EXPECT_NE(text.find("parameter"), std::string::npos) << text;
  // Rows sorted by offset then first: w (0, 0..3), late (0, 4..5), g (1024).
  size_t w = text.find("graph.param"), late = text.find("late"), g = text.find("  g ");
  ASSERT_NE(w, std::string::npos);
  ASSERT_NE(late, std::string::npos);
  ASSERT_NE(g, std::string::npos) << text;
  EXPECT_LT(w, late);
  EXPECT_LT(late, g);
  EXPECT_NE(text.find("offset   end  size  live"), std::string::npos) << text;
}

TEST(Planner, HostBuffersFollowTheArena) {
  // Two offloaded state buffers (host, live throughout) and a chain a -> b on the device: the
  // device planner sees only a and b; the host ones are laid out above the arena in input order.
  Plan plan = makePlan({buf("m", 100, 0, 3), buf("a", 1000, 0, 1), buf("v", 300, 0, 3),
                        buf("b", 1000, 2, 3)},
                       256);
  plan.buffers[0].host = plan.buffers[2].host = true;
  planWithHostBuffers(plan, [](Plan &p) { planBestFit(p); });
  EXPECT_EQ(plan.buffers[1].offset, 0u);    // a: bottom of the device arena
  EXPECT_EQ(plan.buffers[3].offset, 0u);    // b: never meets a, takes its bytes
  EXPECT_EQ(plan.arenaBytes, 1024u);        // 1000 align 256; m and v are not in it
  EXPECT_EQ(plan.buffers[0].offset, 1024u); // m: +1024, the host arena's start
  EXPECT_EQ(plan.buffers[2].offset, 1280u); // v: +1280 (m's 100 align 256)
  EXPECT_EQ(plan.hostArenaBytes, 768u);     // 256 + 512 (300 align 256)
  EXPECT_EQ(lowerBound(plan.buffers, 256), 1024u); // host buffers do not count
  EXPECT_EQ(verifyPlan(plan), "");
  // A host buffer moved into the device arena, or past the host arena, is refused.
  plan.buffers[0].offset = 0;
  EXPECT_NE(verifyPlan(plan).find("lies outside the host arena [1024, 1792)"), std::string::npos);
  plan.buffers[0].offset = 1792;
  EXPECT_NE(verifyPlan(plan).find("lies outside the host arena"), std::string::npos);
}

TEST(Planner, GrowablesTakeTheFreeBytesAtTheirStep) {
  // Arena 4096 (alignment 256). Step 0: p [0, 1024) and a [1024, 3072); step 1: p and the
  // workspace w (256 bytes at +3072); step 2: p and b [1024, 2048).
  Plan plan = makePlan({buf("p", 1000, 0, 2, 0), buf("a", 2000, 0, 0, 1024),
                        buf("w", 200, 1, 1, 3072), buf("b", 1000, 2, 2, 1024)},
                       256, 4096);
  ASSERT_EQ(verifyPlan(plan), "");
  EXPECT_EQ(growIntoFreeBytes(plan, {{2, uint64_t{1} << 30}}), 1u);
  // At step 1 only p is live: the free gap is [1024, 4096), 3072 bytes; the largest power of
  // two within it is 2048.
  EXPECT_EQ(plan.buffers[2].offset, 1024u); // w: +1024 (the gap's start, after p's 1024)
  EXPECT_EQ(plan.buffers[2].bytes, 2048u);
  EXPECT_EQ(plan.arenaBytes, 4096u); // the arena does not move
  EXPECT_EQ(verifyPlan(plan), "");
  EXPECT_FALSE(bruteForceOverlap(plan));
  // Nothing else moved.
  EXPECT_EQ(plan.buffers[0].offset, 0u);
  EXPECT_EQ(plan.buffers[1].offset, 1024u);
  EXPECT_EQ(plan.buffers[3].offset, 1024u);
}

TEST(Planner, GrowablesRespectTheirLimitAndTheOthers) {
  // Two workspaces live at step 1 with p [0, 256) and q [2048, 2304), arena 4096: the gaps are
  // [256, 2048) (1792 bytes) and [2304, 4096) (1792 bytes) once w1 and w2 leave their slots.
  Plan plan =
      makePlan({buf("p", 256, 0, 2, 0), buf("q", 256, 0, 2, 2048), buf("w1", 256, 1, 1, 256),
                buf("w2", 256, 1, 1, 512), buf("top", 4096 - 2304, 0, 0, 2304)},
               256, 4096);
  ASSERT_EQ(verifyPlan(plan), "");
  EXPECT_EQ(growIntoFreeBytes(plan, {{2, 1u << 20}, {3, 600}}), 2u);
  // w1: the gaps without w1 are [256, 512) and [768, 2048) (w2 at +512) and [2304, 4096):
  // the largest is [2304, 4096), 1792 bytes -> 1024.
  EXPECT_EQ(plan.buffers[2].offset, 2304u);
  EXPECT_EQ(plan.buffers[2].bytes, 1024u);
  // w2: limit 600 -> 512 bytes (power of two), in the largest gap left, [256, 2048).
  EXPECT_EQ(plan.buffers[3].offset, 256u);
  EXPECT_EQ(plan.buffers[3].bytes, 512u);
  EXPECT_EQ(verifyPlan(plan), "");
  EXPECT_FALSE(bruteForceOverlap(plan));
  // No room beyond its own aligned size: a growable stays where it is.
  Plan full = makePlan({buf("p", 768, 0, 0, 0), buf("w", 200, 0, 0, 768)}, 256, 1024);
  EXPECT_EQ(growIntoFreeBytes(full, {{1, 1u << 20}}), 0u);
  EXPECT_EQ(full.buffers[1].offset, 768u);
  EXPECT_EQ(full.buffers[1].bytes, 200u);
}

TEST(Planner, GrownPlansStayValid) {
  // Property: on random problems planned best fit, growing every buffer that lives one step
  // keeps the plan valid (independent brute-force check) and the arena unchanged.
  std::mt19937_64 rng(7);
  size_t grownInAll = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Buffer> buffers;
    int n = 2 + int(rng() % 20);
    for (int i = 0; i < n; ++i) {
      int64_t first = int64_t(rng() % 10), length = int64_t(rng() % 4);
      buffers.push_back(buf("b" + std::to_string(i), 1 + rng() % 3000, first, first + length));
    }
    Plan plan = makePlan(buffers, 256);
    planBestFit(plan);
    uint64_t arena = plan.arenaBytes;
    std::vector<Growable> growables;
    for (size_t i = 0; i < plan.buffers.size(); ++i)
      if (plan.buffers[i].first == plan.buffers[i].last)
        growables.push_back({i, 1 + rng() % 8192});
    grownInAll += growIntoFreeBytes(plan, growables);
    EXPECT_EQ(plan.arenaBytes, arena);
    EXPECT_EQ(verifyPlan(plan), "") << "trial " << trial;
    EXPECT_FALSE(bruteForceOverlap(plan)) << "trial " << trial;
    for (const Growable &g : growables)
      EXPECT_LE(plan.buffers[g.buffer].bytes,
                std::max<uint64_t>(g.maxBytes, buffers[g.buffer].bytes));
  }
  EXPECT_GT(grownInAll, 100u); // the property is not vacuous
}
