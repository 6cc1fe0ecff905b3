// The host shim (runtime/cuda/include/graphc/runtime/cuda/host_shim.h) and the device helpers of
// step.h: a launch runs every block and thread exactly once with the right indices, grid-stride
// loops cover every element once, and the helpers agree with runtime/kernels.cpp's formulas.
#define GRAPHC_HOST_SHIM 1
#include "graphc/runtime/cuda/step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace graphc::rt::cuda;

// Stand-in for the program the generated code would define (step.h declares it).
extern "C" const GeneratedProgram graphc_generated = {};

namespace {

std::vector<int> *gVisits;

__global__ void recordIndex(int width) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x +
                    width * (int64_t(blockIdx.y) * blockDim.y + threadIdx.y);
  (*gVisits)[static_cast<size_t>(i)] += 1;
}

__global__ void gridStrideScale(float *x, int64_t n, float f) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    x[i] *= f;
}

} // namespace

TEST(CudaHostShim, EveryThreadOfTheGridRunsOnce) {
  std::vector<int> visits(6 * 4 * 3 * 2, 0);
  gVisits = &visits;
  // grid 3x2 blocks of 2x2 threads: 6 x 4 logical positions... width = 3 blocks * 2 threads.
  hostLaunch(recordIndex, dim3(3, 2), dim3(2, 2), 6);
  int ran = 0;
  for (int v : visits) {
    EXPECT_LE(v, 1);
    ran += v;
  }
  EXPECT_EQ(ran, 3 * 2 * 2 * 2);
}

TEST(CudaHostShim, GridStrideLoopCoversEveryElementOnce) {
  std::vector<float> x(10007, 1.0f);
  GRAPHC_LAUNCH(gridStrideScale, 7, 64, "test", x.data(), int64_t(x.size()), 3.0f);
  for (float v : x)
    ASSERT_EQ(v, 3.0f);
}

TEST(CudaHostShim, DeviceHelpersMatchTheCpuFormulas) {
  for (float x : {-80.0f, -3.5f, -0.0f, 0.0f, 1e-8f, 2.25f, 90.0f}) {
    const float ref = x >= 0.0f ? 1.0f / (1.0f + std::exp(-x)) : std::exp(x) / (1.0f + std::exp(x));
    EXPECT_EQ(sigmoidStable(x), ref) << x;
  }
  const float row[4] = {1.0f, -2.0f, 3.5f, 0.25f};
  double sum = 0.0;
  for (float v : row)
    sum += std::exp(static_cast<double>(v) - 3.5);
  EXPECT_EQ(logSumExpRow(row, 4), 3.5 + std::log(sum));
  EXPECT_EQ(clipProb(0.0f), 1e-7f);
  EXPECT_EQ(clipProb(1.0f), 1.0f - 1e-7f);
  EXPECT_FALSE(probInRange(0.0f));
  // First maximum wins, padding never does.
  const float img[9] = {1, 5, 5, 0, 2, 5, 7, 7, 0};
  EXPECT_EQ(poolArgmax(img, 3, 3, 0, 0, 2, 3), 1);
  EXPECT_EQ(poolArgmax(img, 3, 3, -1, -1, 2, 2), 0);
  EXPECT_EQ(poolArgmax(img, 3, 3, 1, 0, 2, 2), 6);
  EXPECT_EQ(poolArgmax(img, 3, 3, -5, 0, 2, 2), -1);
}
