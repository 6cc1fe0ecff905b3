// Scratch sizes of kernels that need one. The compiler plans these bytes as "workspace" buffers
// in the arena, and the kernels use exactly that much, so both include this one header.
#pragma once

#include <cstdint>

namespace graphc::rt {

/// im2col buffer for one image: (C * R * S) x (OH * OW) floats. Used by conv2d forward,
/// backward-data (as the col2im source) and backward-filter.
constexpr uint64_t conv2dWorkspaceBytes(int64_t c, int64_t r, int64_t s, int64_t oh,
                                        int64_t ow) {
  return static_cast<uint64_t>(c * r * s * oh * ow) * sizeof(float);
}

} // namespace graphc::rt
