// Dropout's counter-based mask (graph.dropout), one definition for the CPU kernels
// (runtime/lib/kernels.cpp) and the generated CUDA kernels (targets/cuda/EmitCuda.cpp, through
// step.h), so both targets drop the very same elements.
//
// Whether element i is kept is a pure function of (the program's seed = graphc --seed, the op's
// id, the step number, i): no generator state, so a rematerialized dropout and dropout_backward
// regenerate the forward mask, and a GPU thread computes its element's bit on its own.
#pragma once

#include <cstdint>

#include "graphc/runtime/host_device.h"

namespace graphc::rt {

/// splitmix64's finaliser (Steele, Lea and Flood): a bijective 64-bit mix.
GRAPHC_HD uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The key of one dropout op's mask at one step.
GRAPHC_HD uint64_t dropoutKey(uint64_t seed, uint64_t opId, int64_t step) {
  return splitmix64(splitmix64(splitmix64(seed) ^ opId) ^ static_cast<uint64_t>(step));
}

/// Whether the mask keyed `key` keeps element `index`: 24 random bits as a float in [0, 1)
/// (exactly), compared with the drop ratio.
GRAPHC_HD bool dropoutKeeps(uint64_t key, int64_t index, float ratio) {
  const uint64_t h = splitmix64(key ^ static_cast<uint64_t>(index));
  const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
  return u >= ratio;
}

} // namespace graphc::rt
