// Unit tests of parallelFor (runtime/include/graphc/runtime/parallel.h), the split the CPU
// kernels hand their independent work to: the ranges cover [0, n) exactly once, respect the
// grain, run inline where splitting cannot pay, and a kernel called from inside a range runs
// sequentially. GRAPHC_NUM_THREADS is set to 3 before the first call (the thread count is read
// once), so that the splits are uneven. The GEMMs' blocks (kernels.h, gemmBlocks) are checked
// here too: on 3 threads a GEMM must equal its blocks computed one after the other on one
// thread, which is what a 1-thread run does.
#include "graphc/runtime/kernels.h"
#include "graphc/runtime/parallel.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
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

TEST(GemmBlocks, DependOnTheShapeAlone) {
  // 64 x 1000 x 20 = 1.28M multiply-adds: under 2M, one call.
  EXPECT_EQ(gemmBlocks(64, 1000, 20).count, 1);
  // 64 x 3136 x 576 = 115.6M: 16 blocks at most, of ceil(3136 / 16) = 196 -> 208 columns
  // (a multiple of 16); 3136 / 208 -> 16 blocks, the last one 16 columns.
  GemmBlocks conv = gemmBlocks(64, 3136, 576);
  EXPECT_TRUE(conv.columns);
  EXPECT_EQ(conv.length, 208);
  EXPECT_EQ(conv.count, 16);
  // 4608 x 4 x 512 = 9.4M: 9 blocks along the 4608 rows, ceil(4608 / 9) = 512 rows each.
  GemmBlocks tall = gemmBlocks(4608, 4, 512);
  EXPECT_FALSE(tall.columns);
  EXPECT_EQ(tall.length, 512);
  EXPECT_EQ(tall.count, 9);
  // 20 x 20 x 100000 = 40M, but 20 rows make no two tiles of 16: one call.
  EXPECT_EQ(gemmBlocks(20, 20, 100000).count, 1);
}

/// C = alpha op(A) op(B) + beta C computed the way a 1-thread run does: gemmBlocks' blocks in
/// order, each one single-threaded OpenBLAS call.
void blockByBlock(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
                  bool transA, bool transB, float alpha, float beta) {
  (void)blasCore(); // the kernels' BLAS core (chosen at their first call), single-threaded
  const int64_t lda = transA ? m : k, ldb = transB ? k : n;
  const GemmBlocks split = gemmBlocks(m, n, k);
  for (int64_t block = 0; block < split.count; ++block) {
    const int64_t begin = block * split.length;
    const int64_t len = std::min((split.columns ? n : m) - begin, split.length);
    const float *blockA = split.columns ? a : a + (transA ? begin : begin * lda);
    const float *blockB = split.columns ? b + (transB ? begin * ldb : begin) : b;
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, int(split.columns ? m : len),
                int(split.columns ? len : n), int(k), alpha, blockA, int(lda), blockB, int(ldb),
                beta, c + (split.columns ? begin : begin * n), int(n));
  }
}

TEST(GemmBlocks, ThreadsChangeNoBit) {
  ASSERT_EQ(threeThreads(), 3);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  struct Case {
    int64_t m, n, k;
  };
  // Convolution-like shapes (forward, backward data, filter gradient) and uneven ones.
  for (Case s : {Case{64, 784, 576}, Case{576, 784, 64}, Case{64, 576, 784}, Case{1152, 49, 256},
                 Case{37, 1000, 91}, Case{1000, 37, 91}})
    for (int t = 0; t < 4; ++t) {
      const bool transA = t & 1, transB = t & 2;
      std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n), expected;
      for (float &v : a)
        v = uniform(rng);
      for (float &v : b)
        v = uniform(rng);
      for (float &v : c)
        v = uniform(rng);
      expected = c;
      const float alpha = 0.5f, beta = t == 3 ? 0.25f : 0.0f;
      blockByBlock(a.data(), b.data(), expected.data(), s.m, s.n, s.k, transA, transB, alpha, beta);
      stridedBatchMatmul(a.data(), 0, b.data(), 0, c.data(), 0, 1, s.m, s.n, s.k, transA, transB,
                         alpha, beta);
      EXPECT_EQ(std::memcmp(c.data(), expected.data(), c.size() * sizeof(float)), 0)
          << s.m << " x " << s.n << " x " << s.k << " transA " << transA << " transB " << transB;
      if (beta == 0.0f) {
        matmul(a.data(), b.data(), c.data(), s.m, s.n, s.k, transA, transB);
        blockByBlock(a.data(), b.data(), expected.data(), s.m, s.n, s.k, transA, transB, 1.0f,
                     0.0f);
        EXPECT_EQ(std::memcmp(c.data(), expected.data(), c.size() * sizeof(float)), 0)
            << "matmul " << s.m << " x " << s.n << " x " << s.k;
      }
    }
}

// Batches of GEMMs too small for blocks (attention's per-head products) are shared out whole:
// 64 products of 32 x 32 x 64 (65536 multiply-adds each, so 16 per range) on 3 threads must
// equal the same products computed one after the other.
TEST(GemmBlocks, SmallBatchedProductsSharedOutWhole) {
  ASSERT_EQ(threeThreads(), 3);
  const int64_t batch = 64, m = 32, n = 32, k = 64;
  ASSERT_EQ(gemmBlocks(m, n, k).count, 1);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> a(batch * m * k), b(batch * k * n), c(batch * m * n, 0.0f), expected;
  for (float &v : a)
    v = uniform(rng);
  for (float &v : b)
    v = uniform(rng);
  expected = c;
  for (int64_t i = 0; i < batch; ++i)
    blockByBlock(a.data() + i * m * k, b.data() + i * k * n, expected.data() + i * m * n, m, n, k,
                 false, true, 0.125f, 0.0f);
  stridedBatchMatmul(a.data(), m * k, b.data(), k * n, c.data(), m * n, batch, m, n, k, false,
                     true, 0.125f, 0.0f);
  EXPECT_EQ(std::memcmp(c.data(), expected.data(), c.size() * sizeof(float)), 0);
  std::vector<float> plain(c.size(), -1.0f);
  batchMatmul(a.data(), b.data(), plain.data(), batch, m, n, k, false, true);
  for (int64_t i = 0; i < batch; ++i)
    blockByBlock(a.data() + i * m * k, b.data() + i * k * n, expected.data() + i * m * n, m, n, k,
                 false, true, 1.0f, 0.0f);
  EXPECT_EQ(std::memcmp(plain.data(), expected.data(), plain.size() * sizeof(float)), 0);
}

} // namespace
