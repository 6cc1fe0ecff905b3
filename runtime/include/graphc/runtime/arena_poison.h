// GRAPHC_POISON_ARENA=1, a test aid shared by the CPU main and the CUDA runtime: before every
// step, each arena byte that no persistent tensor holds (parameters, batch statistics, optimizer
// state, the step's data, labels and step number, the next batch's staging region) is set to
// 0xFF, a NaN in every float format. On a GPU the arena starts as whatever cudaMalloc hands back,
// and a byte the step reads before writing holds what an earlier op or step left; on the CPU it
// reads fresh pages' zeros or the previous step's value, which can pass unseen. Poisoned, such a
// read gives NaN or other bits, which the tests compare (RuntimeMainTests,
// e2e/kernel-threads.test, cuda/host-launch-order.test, bench/gpu_checks.py).
// O(tensors log tensors) once; then one memset per scratch range and step.
#pragma once

#include "graphc/runtime/program.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace graphc::rt {

/// Reads GRAPHC_POISON_ARENA: false when unset, empty or "0", true for "1"; any other value
/// sets `error` (so that a misspelt value cannot pass for a check) and returns false.
inline bool poisonArenaRequested(std::string &error) {
  const char *env = std::getenv("GRAPHC_POISON_ARENA");
  if (!env || !*env || std::strcmp(env, "0") == 0)
    return false;
  if (std::strcmp(env, "1") == 0)
    return true;
  error = std::string("GRAPHC_POISON_ARENA=") + env + ": expected 0 or 1";
  return false;
}

/// The scratch ranges of `prog`'s arena, [begin, end) in bytes, sorted: the complement, in
/// [0, arenaBytes), of its persistent tensors' bytes.
inline std::vector<std::pair<uint64_t, uint64_t>> arenaScratchRanges(const Program &prog) {
  auto persistent = [](TensorRole role) {
    switch (role) {
    case TensorRole::None:
    case TensorRole::Loss:
    case TensorRole::Prediction:
      return false;
    case TensorRole::Parameter:
    case TensorRole::State:
    case TensorRole::Data:
    case TensorRole::Labels:
    case TensorRole::SampleWeights:
    case TensorRole::Step:
    case TensorRole::Staging:
      return true;
    }
    return true; // a role added later stays untouched until it is classified
  };
  std::vector<std::pair<uint64_t, uint64_t>> kept, scratch;
  for (int i = 0; i < prog.numTensors; ++i) {
    const TensorInfo &t = prog.tensors[i];
    if (persistent(t.role) && t.offset < prog.arenaBytes)
      kept.push_back({t.offset, std::min(t.offset + t.bytes, prog.arenaBytes)});
  }
  std::sort(kept.begin(), kept.end());
  uint64_t at = 0;
  for (const auto &[begin, end] : kept) {
    if (begin > at)
      scratch.push_back({at, begin});
    at = std::max(at, end);
  }
  if (at < prog.arenaBytes)
    scratch.push_back({at, prog.arenaBytes});
  return scratch;
}

} // namespace graphc::rt
