// Scratch sizes of kernels that need one. The compiler plans these bytes as "workspace" buffers
// in the arena, and the kernels use exactly that much, so both include this one header.
#pragma once

#include <cstdint>

namespace graphc::rt {

/// Output rows per im2col tile: `tileRows` when it is set and below `oh`, else all `oh` rows.
constexpr int64_t conv2dTileRows(int64_t tileRows, int64_t oh) {
  return tileRows > 0 && tileRows < oh ? tileRows : oh;
}

/// Whether a convolution's CPU kernels read its input (or write its data gradient) in place of
/// an im2col matrix: a 1x1 filter at stride 1 without padding, whose im2col matrix of an image
/// is the image itself. Such a convolution needs no workspace on the CPU target. (h, w): the
/// input's size, (oh, ow) the output's; equal sizes with no top and left padding mean none at
/// the bottom and right either.
constexpr bool conv2dIsPointwise(int64_t r, int64_t s, int64_t strideH, int64_t strideW,
                                 int64_t padTop, int64_t padLeft, int64_t h, int64_t w, int64_t oh,
                                 int64_t ow) {
  return r == 1 && s == 1 && strideH == 1 && strideW == 1 && padTop == 0 && padLeft == 0 &&
         oh == h && ow == w;
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

/// The keys a block of `rows` query rows from row `first` reaches: all `keys`, or, causal
/// (query i sees keys 0..i), keys 0..first + rows - 1; the kernels' GEMMs skip the others,
/// about half of the products over a causal attention's blocks.
constexpr int64_t attentionBlockKeys(bool causal, int64_t first, int64_t rows, int64_t keys) {
  return causal && first + rows < keys ? first + rows : keys;
}

/// The query block the backward pass runs n-th of `blocks`: in order, or, causal, the last
/// first, so that the first block, whose dK and dV products are written rather than added,
/// reaches every key.
constexpr int64_t attentionBlockOrder(bool causal, int64_t n, int64_t blocks) {
  return causal ? blocks - 1 - n : n;
}

/// graph.attention's scores of one block of `rows` query rows against `keys` keys, for all
/// `batch` slices: batch x rows x keys floats. The backward op needs two such blocks (the
/// probabilities and their gradient).
constexpr uint64_t attentionWorkspaceBytes(int64_t batch, int64_t rows, int64_t keys,
                                           bool backward) {
  return static_cast<uint64_t>(batch * rows * keys) * sizeof(float) * (backward ? 2u : 1u);
}

} // namespace graphc::rt
