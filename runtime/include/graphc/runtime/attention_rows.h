// The per-row work of graph.attention and graph.attention_backward, one definition for the CPU
// kernels (runtime/lib/kernels.cpp) and the generated CUDA kernels (targets/cuda/EmitCuda.cpp,
// through step.h), so both targets compute the same probabilities and drop the same elements.
//
// Both kernels walk the query rows in blocks. A block's scores are one GEMM (Q_block K^T) into
// the op's workspace, then each row is turned into probabilities here, in place; the GEMMs
// around these rows are cuBLAS calls on the GPU and cblas_sgemm on the CPU. A row of N keys
// costs O(N) and reads nothing but itself, so one GPU thread owns one row.
#pragma once

#include <math.h>

#include <cstdint>

#include "graphc/runtime/dropout_mask.h"
#include "graphc/runtime/host_device.h"

namespace graphc::rt {

/// row[j] (raw scores q . k_j) <- softmax(scale * row)[j], max-subtracted and summed in double
/// as the softmax kernel does; then, when `dropKey` is set (ratio > 0), the dropout of element
/// `firstIndex + j` of the unfused [B, M, N] probabilities: kept / (1 - ratio) or 0.
GRAPHC_HD void attentionProbabilityRow(float *row, int64_t keys, float scale, bool dropout,
                                       uint64_t dropKey, int64_t firstIndex, float ratio) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < keys; ++j) {
    row[j] *= scale;
    mx = row[j] > mx ? row[j] : mx;
  }
  double sum = 0.0;
  for (int64_t j = 0; j < keys; ++j) {
    const float e = expf(row[j] - mx);
    row[j] = e;
    sum += e;
  }
  const float inv = static_cast<float>(1.0 / sum);
  const float keepScale = 1.0f / (1.0f - ratio);
  for (int64_t j = 0; j < keys; ++j) {
    row[j] *= inv;
    if (dropout)
      row[j] = dropoutKeeps(dropKey, firstIndex + j, ratio) ? row[j] * keepScale : 0.0f;
  }
}

/// The backward row: `p` holds the undropped probabilities P, `g` holds dP~ = dO V^T. With
/// m_j = keep_j / (1 - ratio) (1 without dropout), P~ = m P and D = sum_j dP~_j P~_j (which is
/// dO . O), it leaves P~ in `p` (for dV = P~^T dO) and dS = P (m dP~ - D) in `g` (for dQ and
/// dK). D is summed in double, as the softmax backward kernel sums its dot product.
GRAPHC_HD void attentionGradientRow(float *p, float *g, int64_t keys, bool dropout,
                                    uint64_t dropKey, int64_t firstIndex, float ratio) {
  const float keepScale = 1.0f / (1.0f - ratio);
  double dot = 0.0;
  for (int64_t j = 0; j < keys; ++j) {
    const float m =
        dropout ? (dropoutKeeps(dropKey, firstIndex + j, ratio) ? keepScale : 0.0f) : 1.0f;
    dot += static_cast<double>(g[j]) * (p[j] * m);
  }
  const float d = static_cast<float>(dot);
  for (int64_t j = 0; j < keys; ++j) {
    const float m =
        dropout ? (dropoutKeeps(dropKey, firstIndex + j, ratio) ? keepScale : 0.0f) : 1.0f;
    const float probability = p[j];
    p[j] = probability * m;
    g[j] = probability * (m * g[j] - d);
  }
}

} // namespace graphc::rt
