// How a row kernel splits a row between lanes, shared by the CPU kernels (runtime/lib/kernels.cpp)
// and the generated CUDA kernels (targets/cuda/EmitCuda.cpp, through step.h). Lane l of a row
// owns the elements j with j % kRowLanes == l; on the GPU the lanes are one warp's threads, so
// a warp reads its row in 128-byte lines. Each lane reduces its elements in increasing j, and
// the lanes' partial results are combined here in lane order: a fixed order, so a GPU row, a
// host-shim row and a CPU row that use these functions add the same numbers in the same order.
// Combining costs O(kRowLanes).
#pragma once

#include "graphc/runtime/host_device.h"

namespace graphc::rt {

/// How many lanes share a row: a GPU warp.
constexpr int kRowLanes = 32;

/// The largest of the lanes' partial maxima parts[0..kRowLanes).
GRAPHC_HD float laneMax(const float *parts) {
  float mx = parts[0];
  for (int l = 1; l < kRowLanes; ++l)
    mx = parts[l] > mx ? parts[l] : mx;
  return mx;
}

/// The lanes' partial sums parts[0..kRowLanes) added in lane order.
GRAPHC_HD double laneSum(const double *parts) {
  double sum = 0.0;
  for (int l = 0; l < kRowLanes; ++l)
    sum += parts[l];
  return sum;
}

} // namespace graphc::rt
