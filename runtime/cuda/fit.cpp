// The arena-fit decision of the CUDA runtime's start-up and its convolutions' batch split (fit.h).
#include "graphc/runtime/cuda/fit.h"

#include <cinttypes>
#include <cstdio>

namespace graphc::rt::cuda {

ArenaFit decideArenaFit(uint64_t planned, uint64_t freeBytes, uint64_t totalBytes,
                        uint64_t headroom) {
  ArenaFit fit;
  const uint64_t usable = freeBytes > headroom ? freeBytes - headroom : 0;
  if (planned <= usable) {
    fit.fits = true;
    return fit;
  }
  fit.suggestedBudget = usable / (1ull << 20) * (1ull << 20);
  char line[512];
  std::snprintf(line, sizeof(line),
                "error: the planned arena does not fit on this GPU: it needs %s (%" PRIu64
                " bytes), the GPU has %s free (%" PRIu64 " bytes) of %s total (%" PRIu64
                " bytes) after the CUDA context and library handles, and %s stay free for the "
                "CUDA graph and library scratch outside the arena\n",
                formatBytes(planned).c_str(), planned, formatBytes(freeBytes).c_str(), freeBytes,
                formatBytes(totalBytes).c_str(), totalBytes, formatBytes(headroom).c_str());
  fit.message = line;
  if (fit.suggestedBudget > 0) {
    std::snprintf(line, sizeof(line),
                  "  suggestion: recompile with --budget=%" PRIu64
                  "MiB (graphc rematerializes to fit it, or names the largest batch that fits; "
                  "see --max-batch), or free the GPU memory other processes hold",
                  fit.suggestedBudget >> 20);
  } else {
    std::snprintf(line, sizeof(line),
                  "  suggestion: free the GPU memory other processes hold (less than %s is "
                  "free), or run on a GPU with more memory",
                  formatBytes(headroom).c_str());
  }
  fit.message += line;
  return fit;
}

int64_t convChunkImages(int64_t n, int64_t atMost, uint64_t limit,
                        const std::function<uint64_t(int64_t images)> &workspaceFor) {
  for (int64_t images = atMost > 0 && atMost < n ? atMost : n; images >= 1; --images)
    if (n % images == 0 && workspaceFor(images) <= limit)
      return images;
  return 0;
}

} // namespace graphc::rt::cuda
