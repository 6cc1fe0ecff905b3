// The CUDA runtime's start-up decision whether the planned arena fits the GPU (fit.h), tested on
// the host with made-up cudaMemGetInfo numbers.
#include "graphc/runtime/cuda/fit.h"

#include <gtest/gtest.h>

#include <vector>

using namespace graphc::rt::cuda;

namespace {
constexpr uint64_t MiB = 1ull << 20, GiB = 1ull << 30;
}

TEST(CudaFit, FitsWithHeadroom) {
  ArenaFit fit = decideArenaFit(10 * GiB, 79 * GiB, 80 * GiB);
  EXPECT_TRUE(fit.fits);
  EXPECT_TRUE(fit.message.empty());
  // Exactly free - headroom still fits; one byte more does not.
  EXPECT_TRUE(decideArenaFit(GiB - 64 * MiB, GiB, 80 * GiB).fits);
  EXPECT_FALSE(decideArenaFit(GiB - 64 * MiB + 1, GiB, 80 * GiB).fits);
}

TEST(CudaFit, RefusalNamesPlannedFreeTotalAndSuggestsBudget) {
  ArenaFit fit = decideArenaFit(100 * GiB, 70 * GiB, 80 * GiB);
  ASSERT_FALSE(fit.fits);
  EXPECT_EQ(fit.suggestedBudget, 70 * GiB - 64 * MiB);
  EXPECT_NE(fit.message.find("needs 100.00 GiB (107374182400 bytes)"), std::string::npos)
      << fit.message;
  EXPECT_NE(fit.message.find("70.00 GiB free (75161927680 bytes)"), std::string::npos)
      << fit.message;
  EXPECT_NE(fit.message.find("80.00 GiB total (85899345920 bytes)"), std::string::npos)
      << fit.message;
  EXPECT_NE(fit.message.find("--budget=71616MiB"), std::string::npos) << fit.message;
  EXPECT_EQ(fit.message.rfind("error: ", 0), 0u);
}

TEST(CudaFit, NothingFreeSuggestsFreeingMemory) {
  ArenaFit fit = decideArenaFit(MiB, 10 * MiB, 80 * GiB);
  ASSERT_FALSE(fit.fits);
  EXPECT_EQ(fit.suggestedBudget, 0u);
  EXPECT_NE(fit.message.find("free the GPU memory other processes hold"), std::string::npos);
  EXPECT_EQ(fit.message.find("--budget"), std::string::npos);
}

TEST(CudaFit, SuggestedBudgetIsWholeMiBAndFits) {
  ArenaFit fit = decideArenaFit(8 * GiB, 5 * GiB + 123457, 8 * GiB);
  ASSERT_FALSE(fit.fits);
  EXPECT_EQ(fit.suggestedBudget % MiB, 0u);
  EXPECT_TRUE(decideArenaFit(fit.suggestedBudget, 5 * GiB + 123457, 8 * GiB).fits);
}

TEST(CudaFit, FormatBytes) {
  EXPECT_EQ(formatBytes(512), "512 bytes");
  EXPECT_EQ(formatBytes(1536), "1.50 KiB");
  EXPECT_EQ(formatBytes(64 * MiB), "64.00 MiB");
  EXPECT_EQ(formatBytes(80 * GiB), "80.00 GiB");
}

// The batch split of a convolution whose whole-batch workspace exceeds the plan: a workspace
// proportional to the images per call, 1000 bytes each, within 64 KB of plan.
TEST(CudaConvChunks, TheLargestDivisorWhoseWorkspaceFits) {
  std::vector<int64_t> asked;
  auto perImage = [&](int64_t images) -> uint64_t {
    asked.push_back(images);
    return uint64_t(images) * 1000;
  };
  EXPECT_EQ(convChunkImages(64, 0, 1u << 20, perImage), 64); // the whole batch fits: one call
  EXPECT_EQ(asked, std::vector<int64_t>{64});
  asked.clear();
  // 64000 > 50000: 32 images (32000) is the largest divisor of 64 that fits, 2 calls.
  EXPECT_EQ(convChunkImages(64, 0, 50000, perImage), 32);
  EXPECT_EQ(asked, (std::vector<int64_t>{64, 32})); // non-divisors are not asked about
  // 2674 = 2 x 7 x 191: 1337 (1337000) is over 1000000, 382 (382000) fits.
  EXPECT_EQ(convChunkImages(2674, 0, 1000000, perImage), 382);
  // A prime batch falls to one image per call.
  EXPECT_EQ(convChunkImages(97, 0, 50000, perImage), 1);
  // Nothing fits: 0, and the caller refuses to start.
  EXPECT_EQ(convChunkImages(64, 0, 999, perImage), 0);
  // GRAPHC_CUDA_CONV_CHUNK=N: at most N images (a divisor of the batch) even when more fit.
  EXPECT_EQ(convChunkImages(64, 10, 1u << 20, perImage), 8);
  EXPECT_EQ(convChunkImages(64, 100, 1u << 20, perImage), 64);
}
