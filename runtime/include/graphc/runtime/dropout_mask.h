// Dropout's counter-based mask (graph.dropout), one definition for the CPU kernels
// (runtime/lib/kernels.cpp) and the generated CUDA kernels (targets/cuda/EmitCuda.cpp, through
// step.h), so both targets drop the very same elements.
//
// Whether element i is kept is a pure function of (the program's seed = graphc --seed, the op's
// id, the step number, i): no generator state, so a rematerialized dropout and dropout_backward
// regenerate the forward mask, and a GPU thread computes its element's bit on its own. The
// noise of graph.random_normal and graph.random_uniform comes from the same hash.
#pragma once

#include <cstdint>
#include <math.h>

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

/// The draw element `index` reads from a mask broadcast over groups of `repeat` runs of `inner`
/// elements (graph.dropout's mask_repeat and mask_inner; 1 and 1 for an element-wise mask).
GRAPHC_HD int64_t maskDrawIndex(int64_t index, int64_t repeat, int64_t inner) {
  return repeat == 1 ? index : (index / (repeat * inner)) * inner + index % inner;
}

/// The uniform of draw `index` of the key: its hash's top 24 bits as a float in [0, 1)
/// (exactly).
GRAPHC_HD float uniformDraw(uint64_t key, int64_t index) {
  const uint64_t h = splitmix64(key ^ static_cast<uint64_t>(index));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

/// Whether the mask keyed `key` keeps element `index`: its uniform against the drop ratio.
GRAPHC_HD bool dropoutKeeps(uint64_t key, int64_t index, float ratio) {
  return uniformDraw(key, index) >= ratio;
}

/// A standard normal by the Box-Muller transform of two 24-bit uniforms from one hash:
/// u1 in (0, 1] (bits 40..63, plus one, so the log is finite), u2 in [0, 1) (bits 16..39).
GRAPHC_HD float normalDraw(uint64_t key, int64_t index) {
  const uint64_t h = splitmix64(key ^ static_cast<uint64_t>(index));
  const float u1 = static_cast<float>((h >> 40) + 1) * (1.0f / 16777216.0f);
  const float u2 = static_cast<float>((h >> 16) & 0xffffffull) * (1.0f / 16777216.0f);
  return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

} // namespace graphc::rt
