// The per-row work of graph.attention and graph.attention_backward, one definition for the CPU
// kernels (runtime/lib/kernels.cpp) and the generated CUDA kernels (targets/cuda/EmitCuda.cpp,
// through step.h), so both targets compute the same probabilities and drop the same elements.
//
// Both kernels walk the query rows in blocks. A block's scores are one GEMM (Q_block K^T) into
// the op's workspace, then each row is turned into probabilities here, in place; the GEMMs
// around these rows are cuBLAS calls on the GPU and cblas_sgemm on the CPU.
//
// A row is split between kRowLanes lanes: lane l owns the keys j with j % kRowLanes == l. On the
// GPU the lanes are one warp's threads, so that a warp reads a row in 128-byte lines (coalesced)
// and a launch has a warp per row rather than a thread per row; each pass over the row is one
// barrier-separated phase, and the lanes' partial maxima and sums meet in shared memory. On the
// CPU attentionProbabilityRow and attentionGradientRow run the same lane functions one lane
// after the other. Each lane sums its keys in increasing order and the lanes' sums are added in
// lane order (laneSum, row_lanes.h), so both targets add the same numbers in the same order.
// A pass costs O(keys / kRowLanes) per lane and O(kRowLanes) to combine.
#pragma once

#include <math.h>

#include <cstdint>

#include "graphc/runtime/dropout_mask.h"
#include "graphc/runtime/host_device.h"
#include "graphc/runtime/row_lanes.h"

namespace graphc::rt {

/// The mask factor of element j: keep / (1 - ratio) or 0 with dropout, 1 without.
GRAPHC_HD float attentionKeepFactor(bool dropout, uint64_t dropKey, int64_t index, float ratio) {
  return dropout ? (dropoutKeeps(dropKey, index, ratio) ? 1.0f / (1.0f - ratio) : 0.0f) : 1.0f;
}

/// Score j of a row: scale * s, plus its bias when there is one (a mask's 0 or large negative:
/// graph.attention's bias), as the unfused scale and add compute it. With `biasFills` a non-zero
/// bias replaces the score instead (a masked_fill: the unfused (scale s) (1 - mask) + fill mask,
/// whose masked term is fill exactly and whose kept one is scale s + -0, that is scale s).
GRAPHC_HD float attentionScore(float s, float scale, const float *scoreBias, int64_t j,
                               bool biasFills) {
  if (!scoreBias)
    return s * scale;
  return biasFills && scoreBias[j] != 0.0f ? scoreBias[j] : s * scale + scoreBias[j];
}

/// Pass 1 of the probabilities, lane `lane`'s keys: row[j] <- scale * row[j] (+ scoreBias[j]) for
/// the first `visible` keys and -inf for the others (a causal attention's query i sees keys
/// 0..i, so visible = i + 1; all keys otherwise), whose exponentials are then exactly 0, so
/// that masked probabilities are 0 and add nothing to the sums; returns their maximum (-inf
/// when the lane owns no key). `scoreBias` is null without one; `biasFills` as attentionScore's.
GRAPHC_HD float attentionScaleMaxLane(float *row, int64_t keys, float scale, int lane,
                                      int64_t visible, const float *scoreBias = nullptr,
                                      bool biasFills = false) {
  float mx = -INFINITY;
  for (int64_t j = lane; j < keys; j += kRowLanes) {
    row[j] = j < visible ? attentionScore(row[j], scale, scoreBias, j, biasFills) : -INFINITY;
    mx = row[j] > mx ? row[j] : mx;
  }
  return mx;
}

/// Pass 2: row[j] <- exp(row[j] - mx), mx the row's maximum; returns the lane's sum in double.
GRAPHC_HD double attentionExpSumLane(float *row, int64_t keys, float mx, int lane) {
  double sum = 0.0;
  for (int64_t j = lane; j < keys; j += kRowLanes) {
    const float e = expf(row[j] - mx);
    row[j] = e;
    sum += e;
  }
  return sum;
}

/// Pass 3: row[j] <- row[j] * inv (inv = 1 / the row's sum, rounded to float once), then the
/// dropout of element `firstIndex + j` of the unfused [B, M, N] probabilities when `dropout`.
/// (attentionNormalizeLaneRange: the keys j = begin, begin + stride, ...; elementwise, so the
/// CPU's row runs it over all keys in order.)
GRAPHC_HD void attentionNormalizeLaneRange(float *row, int64_t keys, float inv, int64_t begin,
                                           int64_t stride, bool dropout, uint64_t dropKey,
                                           int64_t firstIndex, float ratio) {
  const float keepScale = 1.0f / (1.0f - ratio);
  for (int64_t j = begin; j < keys; j += stride) {
    row[j] *= inv;
    if (dropout)
      row[j] = dropoutKeeps(dropKey, firstIndex + j, ratio) ? row[j] * keepScale : 0.0f;
  }
}
GRAPHC_HD void attentionNormalizeLane(float *row, int64_t keys, float inv, int lane, bool dropout,
                                      uint64_t dropKey, int64_t firstIndex, float ratio) {
  attentionNormalizeLaneRange(row, keys, inv, lane, kRowLanes, dropout, dropKey, firstIndex, ratio);
}

/// Key j's term of D = sum_j dP~_j P~_j (see attentionGradientRow), in double.
GRAPHC_HD double attentionGradDotTerm(const float *p, const float *g, int64_t j, bool dropout,
                                      uint64_t dropKey, int64_t firstIndex, float ratio) {
  return static_cast<double>(g[j]) *
         (p[j] * attentionKeepFactor(dropout, dropKey, firstIndex + j, ratio));
}

/// The backward's pass 1: the lane's share of D, its terms added in increasing j.
GRAPHC_HD double attentionGradDotLane(const float *p, const float *g, int64_t keys, int lane,
                                      bool dropout, uint64_t dropKey, int64_t firstIndex,
                                      float ratio) {
  double dot = 0.0;
  for (int64_t j = lane; j < keys; j += kRowLanes)
    dot += attentionGradDotTerm(p, g, j, dropout, dropKey, firstIndex, ratio);
  return dot;
}

/// The backward's pass 2, `d` = D rounded to float: p[j] <- P~_j, g[j] <- dS_j for the keys
/// j = begin, begin + stride, ... (elementwise). `filledBias` (null: none) is the row of a
/// bias_fills bias: where it is non-zero the score was the fill, which no gradient reaches, so
/// dS_j = 0 there, also in a row whose keys are all filled (uniform probabilities, whose
/// dS would otherwise be non-zero).
GRAPHC_HD void attentionGradApplyLaneRange(float *p, float *g, int64_t keys, float d, int64_t begin,
                                           int64_t stride, bool dropout, uint64_t dropKey,
                                           int64_t firstIndex, float ratio,
                                           const float *filledBias = nullptr) {
  for (int64_t j = begin; j < keys; j += stride) {
    const float m = attentionKeepFactor(dropout, dropKey, firstIndex + j, ratio);
    const float probability = p[j];
    p[j] = probability * m;
    g[j] = filledBias && filledBias[j] != 0.0f ? 0.0f : probability * (m * g[j] - d);
  }
}
GRAPHC_HD void attentionGradApplyLane(float *p, float *g, int64_t keys, float d, int lane,
                                      bool dropout, uint64_t dropKey, int64_t firstIndex,
                                      float ratio, const float *filledBias = nullptr) {
  attentionGradApplyLaneRange(p, g, keys, d, lane, kRowLanes, dropout, dropKey, firstIndex, ratio,
                              filledBias);
}

/// row[j] (raw scores q . k_j) <- softmax(scale * row)[j] over the first `visible` keys (0 for
/// the others: a causal row), max-subtracted and summed in double by lanes (above); then, when
/// `dropout` is set (ratio > 0), the dropout of element `firstIndex + j` of the unfused [B, M, N]
/// probabilities: kept / (1 - ratio) or 0.
///
/// The CPU's row. It walks the keys in order rather than lane by lane (contiguous, and a chunk
/// of kRowLanes keys adds into the kRowLanes partial sums at once), but computes each element as
/// the lane functions do and adds lane l's elements into sums[l] in increasing j, so the sums,
/// and the probabilities, are the lane functions' bit for bit (test/cuda: worst error 0).
GRAPHC_HD void attentionProbabilityRow(float *row, int64_t keys, float scale, bool dropout,
                                       uint64_t dropKey, int64_t firstIndex, float ratio,
                                       int64_t visible, const float *scoreBias = nullptr,
                                       bool biasFills = false) {
  float mx = -INFINITY; // the lanes' maxima's maximum: max is exact, so any order gives it
  for (int64_t j = 0; j < keys; ++j) {
    // (attentionScaleMaxLane's score and mask)
    row[j] = j < visible ? attentionScore(row[j], scale, scoreBias, j, biasFills) : -INFINITY;
    mx = row[j] > mx ? row[j] : mx;
  }
  double sums[kRowLanes] = {};
  for (int64_t j0 = 0; j0 < keys; j0 += kRowLanes) {
    const int64_t chunk = keys - j0 < kRowLanes ? keys - j0 : kRowLanes;
    for (int64_t l = 0; l < chunk; ++l) {
      const float e = expf(row[j0 + l] - mx);
      row[j0 + l] = e;
      sums[l] += e;
    }
  }
  const float inv = static_cast<float>(1.0 / laneSum(sums));
  attentionNormalizeLaneRange(row, keys, inv, 0, 1, dropout, dropKey, firstIndex, ratio);
}

/// The backward row: `p` holds the undropped probabilities P, `g` holds dP~ = dO V^T. With
/// m_j = keep_j / (1 - ratio) (1 without dropout), P~ = m P and D = sum_j dP~_j P~_j (which is
/// dO . O), it leaves P~ in `p` (for dV = P~^T dO) and dS = P (m dP~ - D) in `g` (for dQ and
/// dK). D is summed in double by lanes, as the probabilities' sum, and in the same way on the
/// CPU: keys in order, lane l's products into sums[l]. `filledBias` as
/// attentionGradApplyLaneRange's.
GRAPHC_HD void attentionGradientRow(float *p, float *g, int64_t keys, bool dropout,
                                    uint64_t dropKey, int64_t firstIndex, float ratio,
                                    const float *filledBias = nullptr) {
  double sums[kRowLanes] = {};
  for (int64_t j0 = 0; j0 < keys; j0 += kRowLanes) {
    const int64_t chunk = keys - j0 < kRowLanes ? keys - j0 : kRowLanes;
    for (int64_t l = 0; l < chunk; ++l)
      sums[l] += attentionGradDotTerm(p, g, j0 + l, dropout, dropKey, firstIndex, ratio);
  }
  const float d = static_cast<float>(laneSum(sums));
  attentionGradApplyLaneRange(p, g, keys, d, 0, 1, dropout, dropKey, firstIndex, ratio, filledBias);
}

} // namespace graphc::rt
