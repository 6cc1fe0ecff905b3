// Whether the planned arena fits the device, and the message when it does not. Host-only code
// (no CUDA): the CUDA runtime feeds it cudaMemGetInfo's numbers at start-up, the unit tests feed
// it made-up ones.
#pragma once

#include "graphc/runtime/format_bytes.h"

#include <cstdint>
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

using graphc::rt::formatBytes; // format_bytes.h

} // namespace graphc::rt::cuda
