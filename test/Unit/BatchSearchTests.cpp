// Unit tests for the batch searches' bisection split (fit/BatchSearch.h): its values at the
// costs measured on ResNet-50, its symmetry, and, on simulated searches, that it finds the same
// boundary as halving at a lower mean cost when misses are dearer.
#include "fit/BatchSearch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

using graphc::remat::bisectionSplit;

namespace {

struct SearchCost {
  int64_t found = 0;
  double seconds = 0;
};

// The largest b in [lo, hi) with b <= boundary, by bisection with bisectionSplit's fraction;
// lo holds and hi fails, as in Driver::largestBatch.
SearchCost bisect(int64_t lo, int64_t hi, int64_t boundary, double miss, double hit) {
  SearchCost cost;
  while (hi > lo + 1) {
    int64_t mid = lo + std::clamp<int64_t>(int64_t(double(hi - lo) * bisectionSplit(miss, hit)), 1,
                                           hi - lo - 1);
    bool holds = mid <= boundary;
    cost.seconds += holds ? hit : miss;
    (holds ? lo : hi) = mid;
  }
  cost.found = lo;
  return cost;
}

} // namespace

TEST(BatchSearch, SplitFollowsTheCosts) {
  EXPECT_DOUBLE_EQ(bisectionSplit(1, 1), 0.5);
  EXPECT_DOUBLE_EQ(bisectionSplit(0, 3), 0.5); // unknown cost: halve
  // ResNet-50 at 80 GB with recomputation: a miss 7.7 s, a fit 0.55 s.
  EXPECT_DOUBLE_EQ(bisectionSplit(7.7, 0.55), 0.13);
  // Its micro-batching row: 10.7 s against 2.1 s.
  EXPECT_DOUBLE_EQ(bisectionSplit(10.7, 2.1), 0.24);
  // The driver's constant (kMissesCostFits): misses cost 8 fits.
  EXPECT_DOUBLE_EQ(bisectionSplit(8, 1), 0.19);
  // The mirror image.
  EXPECT_DOUBLE_EQ(bisectionSplit(0.55, 7.7), 1 - 0.13);
  // Never past the scan's ends, however lopsided.
  EXPECT_DOUBLE_EQ(bisectionSplit(1e9, 1), 0.05);
}

TEST(BatchSearch, SameBoundaryAtLessCost) {
  for (auto [miss, hit] : {std::pair{7.7, 0.55}, std::pair{10.7, 2.1}}) {
    double halving = 0, split = 0;
    int searches = 0;
    for (int64_t boundary = 8192; boundary < 16384; boundary += 37, ++searches) {
      SearchCost ours = bisect(8192, 16384, boundary, miss, hit);
      SearchCost halves = bisect(8192, 16384, boundary, 1, 1);
      ASSERT_EQ(ours.found, boundary);
      ASSERT_EQ(halves.found, boundary);
      split += ours.seconds;
      // Halving's probes priced at the real costs: the same walk with hit and miss swapped in.
      int64_t lo = 8192, hi = 16384;
      while (hi > lo + 1) {
        int64_t mid = lo + (hi - lo) / 2;
        halving += mid <= boundary ? hit : miss;
        (mid <= boundary ? lo : hi) = mid;
      }
    }
    // The mean cost falls by at least a sixth (simulated: 53.7 -> 36 s and 102 -> 85 s).
    EXPECT_LT(split / searches, halving / searches * 5 / 6) << miss << " " << hit;
  }
}
