// Scratch sizes of kernels that need one. The compiler plans these bytes as "workspace" buffers
// in the arena, and the kernels use exactly that much, so both include this one header.
#pragma once

#include <cstdint>

namespace graphc::rt {

/// Output rows per im2col tile: `tileRows` when it is set and below `oh`, else all `oh` rows.
constexpr int64_t conv2dTileRows(int64_t tileRows, int64_t oh) {
  return tileRows > 0 && tileRows < oh ? tileRows : oh;
}

/// im2col buffer for one tile of `rows` output rows of one image: (C * R * S) x (rows * OW)
/// floats. Used by conv2d forward, backward-data (as the col2im source) and backward-filter.
constexpr uint64_t conv2dWorkspaceBytes(int64_t c, int64_t r, int64_t s, int64_t rows,
                                        int64_t ow) {
  return static_cast<uint64_t>(c * r * s * rows * ow) * sizeof(float);
}

/// Query rows per attention block: `queryBlock` when it is set and below `queries`, else all.
constexpr int64_t attentionBlockRows(int64_t queryBlock, int64_t queries) {
  return queryBlock > 0 && queryBlock < queries ? queryBlock : queries;
}

/// graph.attention's scores of one block of `rows` query rows against `keys` keys, for all
/// `batch` slices: batch x rows x keys floats. The backward op needs two such blocks (the
/// probabilities and their gradient).
constexpr uint64_t attentionWorkspaceBytes(int64_t batch, int64_t rows, int64_t keys,
                                           bool backward) {
  return static_cast<uint64_t>(batch * rows * keys) * sizeof(float) * (backward ? 2u : 1u);
}

} // namespace graphc::rt
