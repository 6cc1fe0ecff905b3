// The CUDA runtime's start-up decision whether the planned arena fits the GPU (fit.h), tested on
// the host with made-up cudaMemGetInfo numbers.
#include "graphc/runtime/cuda/fit.h"

#include <gtest/gtest.h>

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
