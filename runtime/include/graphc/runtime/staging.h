// The layout of the next-batch staging region (graphc --target=cuda). While step t runs, the
// runtime uploads batch t+1 into a planned buffer of the arena ("next_batch_staging"), so the
// host-to-device copy overlaps compute instead of preceding it; step t+1 starts with a
// device-to-device copy from there into the data and labels tensors. The compiler sizes the
// buffer and the runtime fills it with this one layout: the data inputs from 0, one after the
// other in the program's order (each 64-byte aligned: the host main's staging slots hold them
// so), the sample weights (graphc --sample-weights) after them as one more, then the labels,
// aligned.
#pragma once

#include <cstdint>

namespace graphc::rt {

/// Alignment of the labels inside the staging region (cudaMemcpy's fast path, and the
/// planner's own alignment).
constexpr uint64_t kStagingAlignment = 256;

/// Alignment of each data input's batch after the first (the host main's slot layout).
constexpr uint64_t kStagedDataAlignment = 64;

/// Offset of the next data input after `end` bytes of the ones before it (0 for the first).
constexpr uint64_t stagedDataOffset(uint64_t end) {
  return (end + kStagedDataAlignment - 1) / kStagedDataAlignment * kStagedDataAlignment;
}

/// Offset of the labels in the staging region: after `dataBytes` of data, aligned.
constexpr uint64_t stagedLabelsOffset(uint64_t dataBytes) {
  return (dataBytes + kStagingAlignment - 1) / kStagingAlignment * kStagingAlignment;
}

/// Bytes of the staging region for one batch of data and labels.
constexpr uint64_t stagingBytes(uint64_t dataBytes, uint64_t labelsBytes) {
  return stagedLabelsOffset(dataBytes) + labelsBytes;
}

} // namespace graphc::rt
