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

} // namespace graphc::rt
