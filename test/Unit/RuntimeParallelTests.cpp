// Unit tests of parallelFor (runtime/include/graphc/runtime/parallel.h), the split the CPU
// kernels hand their independent work to: the ranges cover [0, n) exactly once, respect the
// grain, run inline where splitting cannot pay, and a kernel called from inside a range runs
// sequentially. GRAPHC_NUM_THREADS is set to 3 before the first call (the thread count is read
// once), so that the splits are uneven.
#include "graphc/runtime/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

using namespace graphc::rt;

namespace {

int threeThreads() {
  ::setenv("GRAPHC_NUM_THREADS", "3", 1);
  return kernelThreads();
}

/// The ranges one call hands out, sorted.
std::vector<std::pair<int64_t, int64_t>> rangesOf(int64_t n, int64_t grain) {
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  parallelFor(n, grain, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(m);
    ranges.emplace_back(begin, end);
  });
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

TEST(ParallelFor, ReadsTheThreadCountFromTheEnvironment) { EXPECT_EQ(threeThreads(), 3); }

TEST(ParallelFor, RangesCoverEveryIndexOnce) {
  ASSERT_EQ(threeThreads(), 3);
  for (int64_t n : {1, 2, 5, 6, 7, 100, 1001})
    for (int64_t grain : {1, 2, 3, 50}) {
      auto ranges = rangesOf(n, grain);
      ASSERT_FALSE(ranges.empty());
      int64_t next = 0;
      for (auto [begin, end] : ranges) {
        EXPECT_EQ(begin, next) << "n " << n << " grain " << grain;
        EXPECT_LT(begin, end);
        next = end;
      }
      EXPECT_EQ(next, n);
      // At most one range per thread, and none shorter than the grain once split.
      EXPECT_LE(ranges.size(), 3u);
      if (ranges.size() > 1)
        for (auto [begin, end] : ranges)
          EXPECT_GE(end - begin, grain) << "n " << n << " grain " << grain;
    }
}

TEST(ParallelFor, SplitsOnlyWhenEveryRangeGetsAGrain) {
  ASSERT_EQ(threeThreads(), 3);
  EXPECT_EQ(rangesOf(9, 5).size(), 1u);  // 9 < 2 x 5: one call
  EXPECT_EQ(rangesOf(10, 5).size(), 2u); // two ranges of 5
  EXPECT_EQ(rangesOf(99, 5).size(), 3u); // capped at the thread count
  EXPECT_TRUE(rangesOf(0, 1).empty());
}

TEST(ParallelFor, UsesSeveralThreadsAndRunsNestedCallsInline) {
  ASSERT_EQ(threeThreads(), 3);
  std::mutex m;
  std::vector<std::thread::id> outer;
  std::atomic<int> nestedSplit{0};
  for (int repeat = 0; repeat < 50; ++repeat)
    parallelFor(3, 1, [&](int64_t, int64_t) {
      {
        std::lock_guard<std::mutex> lock(m);
        outer.push_back(std::this_thread::get_id());
      }
      const std::thread::id here = std::this_thread::get_id();
      parallelFor(1000, 1, [&](int64_t begin, int64_t end) {
        if (begin != 0 || end != 1000 || std::this_thread::get_id() != here)
          ++nestedSplit;
      });
    });
  std::sort(outer.begin(), outer.end());
  const auto distinct = std::unique(outer.begin(), outer.end()) - outer.begin();
  EXPECT_GE(distinct, 2) << "every range ran on one thread";
  EXPECT_EQ(nestedSplit.load(), 0);
}

TEST(ParallelFor, GrainForKeepsPlanesWhole) {
  EXPECT_EQ(grainFor(elementGrain() * 2), 1);
  EXPECT_EQ(grainFor(elementGrain() / 4), 4);
  EXPECT_EQ(grainFor(0), elementGrain());
}

} // namespace
