// Whether the planned arena fits the device, and the message when it does not; and how many
// images per call a convolution takes when cuDNN needs more workspace for the whole batch than
// the plan holds. Host-only code (no CUDA): the CUDA runtime feeds it cudaMemGetInfo's numbers
// and cuDNN's workspace sizes at start-up, the unit tests feed it made-up ones.
#pragma once

#include "graphc/runtime/format_bytes.h"

#include <cstdint>
#include <functional>
#include <string>

namespace graphc::rt::cuda {

/// Device memory kept free outside the arena at start-up: the instantiated CUDA graph and what
/// cuDNN/cuBLAS allocate lazily on their first calls (measured and reported as the runtime
/// reserve; see docs/cuda.md).
constexpr uint64_t kDefaultHeadroomBytes = 64ull << 20;

struct ArenaFit {
  bool fits = false;
  /// Empty when it fits; otherwise a multi-line message that names the planned, free and total
  /// bytes and suggests a --budget that would fit.
  std::string message;
  /// The --budget suggested (free - headroom, rounded down to MiB), 0 when nothing fits.
  uint64_t suggestedBudget = 0;
};

/// `planned` bytes fit when planned + headroom <= freeBytes.
ArenaFit decideArenaFit(uint64_t planned, uint64_t freeBytes, uint64_t totalBytes,
                        uint64_t headroom = kDefaultHeadroomBytes);

/// The images per cuDNN call of a convolution over a batch of `n`: the largest divisor of n, at
/// most `atMost` (0 or less: n), whose workspace `workspaceFor(images)` is within `limit`; 0 when
/// not even one image fits. Divisors, so that every call has the same descriptors. Tries the
/// divisors from the largest down: O(n) candidates, one workspace query per divisor until one
/// fits (cuDNN's workspaces shrink with the batch).
int64_t convChunkImages(int64_t n, int64_t atMost, uint64_t limit,
                        const std::function<uint64_t(int64_t images)> &workspaceFor);

using graphc::rt::formatBytes; // format_bytes.h

} // namespace graphc::rt::cuda
