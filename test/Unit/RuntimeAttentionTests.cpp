// Unit tests of the fused attention kernels (graph.attention and graph.attention_backward):
// without dropout against a double-precision reference and its central finite differences;
// with dropout against the unfused chain of CPU kernels the importer's graph runs
// (batchMatmul, softmax, dropout, batchMatmul and their backward ops), which must draw the
// very same mask. Each case runs with every query block (all rows, uneven blocks, one row);
// outputs are pre-filled with NaN and a guard after the exact planned workspace must survive.
// The CPU's rows (attention_rows.h) equal, bit for bit, the lane functions the CUDA target's
// warp-per-row kernels run, for rows shorter than, as long as and longer than a warp.
#include "graphc/runtime/attention_rows.h"
#include "graphc/runtime/kernels.h"
#include "graphc/runtime/workspace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace graphc::rt;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kGuard = 12345.0f;

std::vector<float> randomVec(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<float> v(n);
  for (float &x : v)
    x = static_cast<float>(-1.0 + 2.0 * static_cast<double>(gen() >> 11) * 0x1p-53);
  return v;
}

// Max |got - want| <= tol * max|want|.
void expectClose(const std::vector<float> &got, const std::vector<double> &want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  double maxAbs = 0.0, maxErr = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << "at " << i;
    maxAbs = std::max(maxAbs, std::fabs(want[i]));
    maxErr = std::max(maxErr, std::fabs(got[i] - want[i]));
  }
  EXPECT_LE(maxErr, tol * std::max(maxAbs, 1e-30)) << "max error " << maxErr;
}

std::vector<double> toDouble(const std::vector<float> &v) { return {v.begin(), v.end()}; }

// softmax(scale q k^T + bias) v in double, no dropout; with sh.causal query i sees keys 0..i;
// with `bias` ([batch / sh.biasHeads, keys], or [..., queries, keys] with sh.biasPerQuery) its
// row b / biasHeads (and query i's row of it) is added to slice b's scores.
std::vector<double> attentionRef(const std::vector<double> &q, const std::vector<double> &k,
                                 const std::vector<double> &v, const AttentionShape &sh,
                                 const std::vector<float> *bias = nullptr) {
  const int64_t M = sh.queries, N = sh.keys, D = sh.width, E = sh.valueWidth;
  std::vector<double> out(sh.batch * M * E, 0.0), s(N);
  for (int64_t b = 0; b < sh.batch; ++b)
    for (int64_t i = 0; i < M; ++i) {
      const int64_t visible = sh.causal ? i + 1 : N; // the keys query i sees
      double mx = -INFINITY, sum = 0.0;
      for (int64_t j = 0; j < visible; ++j) {
        s[j] = 0.0;
        for (int64_t d = 0; d < D; ++d)
          s[j] += q[(b * M + i) * D + d] * k[(b * N + j) * D + d];
        s[j] *= sh.scale;
        if (bias) // a row per sequence, or per sequence and query
          s[j] +=
              (*bias)[((b / sh.biasHeads) * (sh.biasPerQuery ? M : 1) + (sh.biasPerQuery ? i : 0)) *
                          N +
                      j];
        mx = std::max(mx, s[j]);
      }
      for (int64_t j = 0; j < visible; ++j)
        sum += (s[j] = std::exp(s[j] - mx));
      for (int64_t j = 0; j < visible; ++j)
        for (int64_t e = 0; e < E; ++e)
          out[(b * M + i) * E + e] += s[j] / sum * v[(b * N + j) * E + e];
    }
  return out;
}

struct Buffers {
  std::vector<float> q, k, v, out, dout, dq, dk, dv;
};

Buffers randomBuffers(const AttentionShape &sh) {
  Buffers x;
  x.q = randomVec(sh.batch * sh.queries * sh.width, 1);
  x.k = randomVec(sh.batch * sh.keys * sh.width, 2);
  x.v = randomVec(sh.batch * sh.keys * sh.valueWidth, 3);
  x.dout = randomVec(sh.batch * sh.queries * sh.valueWidth, 4);
  x.out.assign(sh.batch * sh.queries * sh.valueWidth, kNaN);
  x.dq.assign(x.q.size(), kNaN);
  x.dk.assign(x.k.size(), kNaN);
  x.dv.assign(x.v.size(), kNaN);
  return x;
}

// Runs both kernels with a workspace of exactly the planned size plus a guard word.
void runFused(Buffers &x, const AttentionShape &sh, uint64_t seed, float step,
              const float *scoreBias = nullptr) {
  const int64_t rows = attentionBlockRows(sh.queryBlock, sh.queries);
  for (bool backward : {false, true}) {
    const uint64_t bytes = attentionWorkspaceBytes(sh.batch, rows, sh.keys, backward);
    std::vector<float> workspace(bytes / sizeof(float) + 1, kNaN);
    workspace.back() = kGuard;
    if (backward)
      attentionBackward(x.dout.data(), x.q.data(), x.k.data(), x.v.data(), x.dq.data(), x.dk.data(),
                        x.dv.data(), workspace.data(), sh, seed, step, scoreBias);
    else
      attentionForward(x.q.data(), x.k.data(), x.v.data(), x.out.data(), workspace.data(), sh, seed,
                       step, scoreBias);
    EXPECT_EQ(workspace.back(), kGuard)
        << (backward ? "backward" : "forward") << " wrote past its planned workspace";
  }
}

class AttentionBlocks : public ::testing::TestWithParam<int64_t> {};

void expectReferenceAndFiniteDifferences(const AttentionShape &sh,
                                         const std::vector<float> *bias = nullptr) {
  Buffers x = randomBuffers(sh);
  runFused(x, sh, 0, 0.0f, bias ? bias->data() : nullptr);
  auto q = toDouble(x.q), k = toDouble(x.k), v = toDouble(x.v);
  expectClose(x.out, attentionRef(q, k, v, sh, bias), 1e-6);

  // d/d(input) of sum(attention * dout) by central differences, for each of q, k and v.
  auto gradient = [&](std::vector<double> *input) {
    std::vector<double> g(input->size());
    for (size_t i = 0; i < input->size(); ++i) {
      const double keep = (*input)[i], h = 1e-5;
      double sides[2];
      for (int side = 0; side < 2; ++side) {
        (*input)[i] = keep + (side ? -h : h);
        auto y = attentionRef(q, k, v, sh, bias);
        sides[side] = 0.0;
        for (size_t e = 0; e < y.size(); ++e)
          sides[side] += y[e] * x.dout[e];
      }
      (*input)[i] = keep;
      g[i] = (sides[0] - sides[1]) / (2 * h);
    }
    return g;
  };
  expectClose(x.dq, gradient(&q), 1e-5);
  expectClose(x.dk, gradient(&k), 1e-5);
  expectClose(x.dv, gradient(&v), 1e-5);
}

TEST_P(AttentionBlocks, NoDropoutMatchesDoubleReferenceAndFiniteDifferences) {
  // batch 2, 5 queries, 7 keys, width 3, value width 4; blocks of GetParam() query rows.
  expectReferenceAndFiniteDifferences({2, 5, 7, 3, 4, GetParam(), 0.6f, 0.0f, 0, 0});
}

TEST_P(AttentionBlocks, CausalMatchesDoubleReferenceAndFiniteDifferences) {
  // batch 2, 6 queries and keys (query i sees keys 0..i, also across query blocks), width 3,
  // value width 4: the output and all three gradients against the causal reference.
  expectReferenceAndFiniteDifferences({2, 6, 6, 3, 4, GetParam(), 0.6f, 0.0f, 0, 0, true});
  // The first query sees only the first key: its output is v's first row, exactly.
  const AttentionShape sh{1, 6, 6, 3, 4, GetParam(), 0.6f, 0.0f, 0, 0, true};
  Buffers x = randomBuffers(sh);
  runFused(x, sh, 0, 0.0f);
  for (int64_t e = 0; e < sh.valueWidth; ++e)
    EXPECT_EQ(x.out[size_t(e)], x.v[size_t(e)]);
}

TEST_P(AttentionBlocks, KeyBiasMatchesDoubleReferenceAndFiniteDifferences) {
  // 2 sequences x 2 heads (4 slices), 5 queries, 7 keys, width 3, value width 4; a key bias
  // [2, 7] shared by each sequence's heads: random values, and for the second sequence a
  // padding key (BertModel's finfo.min), whose probabilities must then be exactly 0.
  AttentionShape sh{4, 5, 7, 3, 4, GetParam(), 0.6f, 0.0f, 0, 0};
  sh.biasHeads = 2;
  std::vector<float> bias = randomVec(2 * 7, 9);
  bias[7 + 6] = -std::numeric_limits<float>::max();
  expectReferenceAndFiniteDifferences(sh, &bias);
  // With key 6's value rows changed in every slice, the first sequence's outputs change and
  // the second's (where key 6 is padding) stay the same, bit for bit.
  Buffers x = randomBuffers(sh), y = randomBuffers(sh);
  for (int64_t slice = 0; slice < 4; ++slice)
    for (int64_t e = 0; e < sh.valueWidth; ++e)
      y.v[size_t((slice * sh.keys + 6) * sh.valueWidth + e)] += 1.0f;
  runFused(x, sh, 0, 0.0f, bias.data());
  runFused(y, sh, 0, 0.0f, bias.data());
  const size_t half = x.out.size() / 2;
  EXPECT_TRUE(std::equal(x.out.begin() + half, x.out.end(), y.out.begin() + half));
  EXPECT_FALSE(std::equal(x.out.begin(), x.out.begin() + half, y.out.begin()));
}

TEST_P(AttentionBlocks, PerQueryBiasMatchesDoubleReferenceAndFiniteDifferences) {
  // The same shapes with a bias of a row per query ([2, 5, 7], a per-query mask shared by each
  // sequence's 2 heads): random values, and a causal-like -max above the diagonal of the
  // second sequence (query i sees keys 0..i+2).
  AttentionShape sh{4, 5, 7, 3, 4, GetParam(), 0.6f, 0.0f, 0, 0};
  sh.biasHeads = 2;
  sh.biasPerQuery = true;
  std::vector<float> bias = randomVec(2 * 5 * 7, 10);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = i + 3; j < 7; ++j)
      bias[size_t((5 + i) * 7 + j)] = -std::numeric_limits<float>::max();
  expectReferenceAndFiniteDifferences(sh, &bias);
}

TEST_P(AttentionBlocks, DropoutEqualsTheUnfusedChainWithTheSameMask) {
  // batch 3, 6 queries, 9 keys, width 4, value width 5; dropout 0.3 of op 61, drawing the
  // mask's elements from 1000 on (a micro-batch's offset).
  const AttentionShape sh{3, 6, 9, 4, 5, GetParam(), 0.5f, 0.3f, 61, 1000};
  const uint64_t seed = 7;
  const float step = 4.0f;
  Buffers x = randomBuffers(sh);
  runFused(x, sh, seed, step);

  // The unfused chain on the same inputs: scale(q) k^T -> softmax -> dropout -> . v.
  const int64_t B = sh.batch, M = sh.queries, N = sh.keys, D = sh.width, E = sh.valueWidth;
  std::vector<float> scaled(x.q.size()), scores(B * M * N), probs(B * M * N), dropped(B * M * N),
      out(B * M * E);
  scale(x.q.data(), scaled.data(), int64_t(scaled.size()), sh.scale);
  batchMatmul(scaled.data(), x.k.data(), scores.data(), B, M, N, D, false, true);
  softmax(scores.data(), probs.data(), B * M, N, 1);
  dropout(probs.data(), dropped.data(), B * M * N, sh.dropoutRatio, seed, sh.opId, step,
          sh.indexOffset);
  batchMatmul(dropped.data(), x.v.data(), out.data(), B, M, E, N, false, false);
  expectClose(x.out, toDouble(out), 1e-5);

  std::vector<float> dDropped(B * M * N), dProbs(B * M * N), dScores(B * M * N),
      dScaled(x.q.size()), dq(x.q.size()), dk(x.k.size()), dv(x.v.size());
  batchMatmul(x.dout.data(), x.v.data(), dDropped.data(), B, M, N, E, false, true);
  batchMatmul(dropped.data(), x.dout.data(), dv.data(), B, N, E, M, true, false);
  dropoutBackward(dDropped.data(), dProbs.data(), B * M * N, sh.dropoutRatio, seed, sh.opId, step,
                  sh.indexOffset);
  softmaxBackward(dProbs.data(), probs.data(), dScores.data(), B * M, N, 1);
  batchMatmul(dScores.data(), x.k.data(), dScaled.data(), B, M, D, N, false, false);
  batchMatmul(dScores.data(), scaled.data(), dk.data(), B, N, D, M, true, false);
  scale(dScaled.data(), dq.data(), int64_t(dq.size()), sh.scale);
  expectClose(x.dq, toDouble(dq), 1e-5);
  expectClose(x.dk, toDouble(dk), 1e-5);
  expectClose(x.dv, toDouble(dv), 1e-5);

  // A different step draws a different mask.
  Buffers other = randomBuffers(sh);
  runFused(other, sh, seed, step + 1.0f);
  EXPECT_NE(other.out, x.out);
}

TEST_P(AttentionBlocks, FilledBiasEqualsTheUnfusedMaskedFill) {
  // masked_fill(pad, fill) of the scaled scores, held unfused as scaled * (1 - pad) + fill * pad
  // and fused as a bias_fills bias fill * pad. 2 sequences x 2 heads, 5 queries, 7 keys: the
  // first sequence pads keys 1 and 5, the second pads every key, so its rows are all fill
  // (uniform probabilities) and no gradient reaches its scores: its dq and dk are exactly 0.
  AttentionShape sh{4, 5, 7, 3, 4, GetParam(), 0.6f, 0.0f, 0, 0};
  sh.biasHeads = 2;
  sh.biasFills = true;
  const int64_t B = sh.batch, M = sh.queries, N = sh.keys, D = sh.width, E = sh.valueWidth;
  const float fill = -std::numeric_limits<float>::max();
  std::vector<float> pad(2 * N, 0.0f), bias(2 * N);
  pad[1] = pad[5] = 1.0f;
  std::fill(pad.begin() + N, pad.end(), 1.0f);
  for (size_t j = 0; j < pad.size(); ++j)
    bias[j] = fill * pad[j];
  Buffers x = randomBuffers(sh);
  runFused(x, sh, 0, 0.0f, bias.data());

  // The unfused chain with the runtime's kernels: scores, masked_fill, softmax, . v.
  std::vector<float> scores(B * M * N), masked(B * M * N), probs(B * M * N), out(B * M * E);
  batchMatmul(x.q.data(), x.k.data(), scores.data(), B, M, N, D, false, true);
  auto padOf = [&](int64_t at) { return pad[size_t((at / (M * N)) / 2 * N + at % N)]; };
  for (int64_t at = 0; at < B * M * N; ++at)
    masked[at] = scores[at] * sh.scale * (1.0f - padOf(at)) + fill * padOf(at);
  softmax(masked.data(), probs.data(), B * M, N, 1);
  batchMatmul(probs.data(), x.v.data(), out.data(), B, M, E, N, false, false);
  expectClose(x.out, toDouble(out), 1e-5);

  std::vector<float> dProbs(B * M * N), dMasked(B * M * N), dScores(B * M * N), dq(x.q.size()),
      dk(x.k.size()), dv(x.v.size());
  batchMatmul(x.dout.data(), x.v.data(), dProbs.data(), B, M, N, E, false, true);
  batchMatmul(probs.data(), x.dout.data(), dv.data(), B, N, E, M, true, false);
  softmaxBackward(dProbs.data(), probs.data(), dMasked.data(), B * M, N, 1);
  for (int64_t at = 0; at < B * M * N; ++at)
    dScores[at] = dMasked[at] * (1.0f - padOf(at)) * sh.scale;
  batchMatmul(dScores.data(), x.k.data(), dq.data(), B, M, D, N, false, false);
  batchMatmul(dScores.data(), x.q.data(), dk.data(), B, N, D, M, true, false);
  expectClose(x.dq, toDouble(dq), 1e-5);
  expectClose(x.dk, toDouble(dk), 1e-5);
  expectClose(x.dv, toDouble(dv), 1e-5);
  const size_t half = x.dq.size() / 2, keyHalf = x.dk.size() / 2;
  EXPECT_TRUE(std::all_of(x.dq.begin() + half, x.dq.end(), [](float g) { return g == 0.0f; }));
  EXPECT_TRUE(std::all_of(x.dk.begin() + keyHalf, x.dk.end(), [](float g) { return g == 0.0f; }));
  // The fully padded sequence's outputs are the mean of its values, as the unfused chain's.
  for (int64_t e = 0; e < E; ++e) {
    double mean = 0.0;
    for (int64_t j = 0; j < N; ++j)
      mean += x.v[size_t((2 * N + j) * E + e)];
    EXPECT_NEAR(x.out[size_t(2 * M * E + e)], mean / N, 1e-6);
  }
  // Added rather than filled, the same bias gives the padded rows' scores a gradient.
  sh.biasFills = false;
  Buffers added = randomBuffers(sh);
  runFused(added, sh, 0, 0.0f, bias.data());
  EXPECT_FALSE(
      std::all_of(added.dq.begin() + half, added.dq.end(), [](float g) { return g == 0.0f; }));
}

INSTANTIATE_TEST_SUITE_P(QueryBlocks, AttentionBlocks, ::testing::Values(0, 2, 1),
                         [](const auto &info) {
                           return info.param ? "block" + std::to_string(info.param) : "all";
                         });

// A warp's row as the generated CUDA kernel runs it: each phase is every lane's call, the lanes'
// partial results meeting in arrays (shared memory on the GPU), lanes in reverse order as a GPU
// may run them.
void warpProbabilityRow(float *row, int64_t keys, float scale, bool dropout, uint64_t key,
                        int64_t first, float ratio, int64_t visible,
                        const float *scoreBias = nullptr, bool biasFills = false) {
  float maxParts[kRowLanes];
  double sumParts[kRowLanes];
  for (int lane = kRowLanes - 1; lane >= 0; --lane)
    maxParts[lane] = attentionScaleMaxLane(row, keys, scale, lane, visible, scoreBias, biasFills);
  for (int lane = kRowLanes - 1; lane >= 0; --lane)
    sumParts[lane] = attentionExpSumLane(row, keys, laneMax(maxParts), lane);
  for (int lane = kRowLanes - 1; lane >= 0; --lane)
    attentionNormalizeLane(row, keys, static_cast<float>(1.0 / laneSum(sumParts)), lane, dropout,
                           key, first, ratio);
}
void warpGradientRow(float *p, float *g, int64_t keys, bool dropout, uint64_t key, int64_t first,
                     float ratio, const float *filledBias = nullptr) {
  double sumParts[kRowLanes];
  for (int lane = kRowLanes - 1; lane >= 0; --lane)
    sumParts[lane] = attentionGradDotLane(p, g, keys, lane, dropout, key, first, ratio);
  for (int lane = kRowLanes - 1; lane >= 0; --lane)
    attentionGradApplyLane(p, g, keys, static_cast<float>(laneSum(sumParts)), lane, dropout, key,
                           first, ratio, filledBias);
}

TEST(AttentionRows, CpuRowsEqualTheWarpLanesBitForBit) {
  for (int64_t keys : {1, 5, 31, 32, 33, 70, 512, 1000})
    for (bool dropout : {false, true})
      for (int64_t visible : {keys, keys / 2 + 1}) { // all keys, or a causal row's first ones
        SCOPED_TRACE("keys " + std::to_string(keys) + (dropout ? ", dropout" : "") + ", visible " +
                     std::to_string(visible));
        // Scores of a realistic spread (|s| up to 8), so the exponentials span many binades.
        std::vector<float> scores = randomVec(size_t(keys), uint64_t(keys) * 7 + 1);
        for (float &s : scores)
          s *= 8.0f;
        const uint64_t key = dropoutKey(3, 9, 11);
        const int64_t first = 4096 + keys;
        std::vector<float> cpu = scores, warp = scores;
        attentionProbabilityRow(cpu.data(), keys, 0.37f, dropout, key, first, 0.25f, visible);
        warpProbabilityRow(warp.data(), keys, 0.37f, dropout, key, first, 0.25f, visible);
        ASSERT_EQ(0, std::memcmp(cpu.data(), warp.data(), sizeof(float) * size_t(keys)));
        // And with a key bias (every third key padding: finfo.min).
        std::vector<float> bias = randomVec(size_t(keys), uint64_t(keys) * 7 + 3);
        for (size_t j = 0; j < bias.size(); j += 3)
          bias[j] = -std::numeric_limits<float>::max();
        cpu = scores, warp = scores;
        attentionProbabilityRow(cpu.data(), keys, 0.37f, dropout, key, first, 0.25f, visible,
                                bias.data());
        warpProbabilityRow(warp.data(), keys, 0.37f, dropout, key, first, 0.25f, visible,
                           bias.data());
        ASSERT_EQ(0, std::memcmp(cpu.data(), warp.data(), sizeof(float) * size_t(keys)));
        // And that bias filling rather than adding (bias_fills), forward and backward.
        cpu = scores, warp = scores;
        attentionProbabilityRow(cpu.data(), keys, 0.37f, dropout, key, first, 0.25f, visible,
                                bias.data(), true);
        warpProbabilityRow(warp.data(), keys, 0.37f, dropout, key, first, 0.25f, visible,
                           bias.data(), true);
        ASSERT_EQ(0, std::memcmp(cpu.data(), warp.data(), sizeof(float) * size_t(keys)));
        {
          std::vector<float> g = randomVec(size_t(keys), uint64_t(keys) * 7 + 4), gWarp = g,
                             pWarp = cpu;
          attentionGradientRow(cpu.data(), g.data(), keys, dropout, key, first, 0.25f, bias.data());
          warpGradientRow(pWarp.data(), gWarp.data(), keys, dropout, key, first, 0.25f,
                          bias.data());
          ASSERT_EQ(0, std::memcmp(g.data(), gWarp.data(), sizeof(float) * size_t(keys)));
          for (size_t j = 0; j < g.size(); j += 3) // filled keys: no gradient
            ASSERT_EQ(g[j], 0.0f) << "key " << j;
        }
        double total = 0.0; // a softmax row sums to 1 (before dropout)
        std::vector<float> undropped = scores;
        attentionProbabilityRow(undropped.data(), keys, 0.37f, false, 0, 0, 0.0f, visible);
        for (float v : undropped)
          total += v;
        EXPECT_NEAR(total, 1.0, 1e-5);
        for (int64_t j = visible; j < keys; ++j) // masked keys: exactly 0
          ASSERT_EQ(undropped[size_t(j)], 0.0f) << "key " << j;

        std::vector<float> grad = randomVec(size_t(keys), uint64_t(keys) * 7 + 2);
        std::vector<float> pCpu = undropped, gCpu = grad, pWarp = undropped, gWarp = grad;
        attentionGradientRow(pCpu.data(), gCpu.data(), keys, dropout, key, first, 0.25f);
        warpGradientRow(pWarp.data(), gWarp.data(), keys, dropout, key, first, 0.25f);
        ASSERT_EQ(0, std::memcmp(pCpu.data(), pWarp.data(), sizeof(float) * size_t(keys)));
        ASSERT_EQ(0, std::memcmp(gCpu.data(), gWarp.data(), sizeof(float) * size_t(keys)));
        // dS sums to zero over the row without dropout (softmax's Jacobian kills constants).
        if (!dropout) {
          double dsSum = 0.0, dsAbs = 0.0;
          for (float v : gCpu) {
            dsSum += v;
            dsAbs += std::fabs(v);
          }
          EXPECT_LE(std::fabs(dsSum), 1e-5 * std::max(dsAbs, 1e-30));
        }
      }
}

TEST(AttentionWorkspace, IsOneBlockOfScoresForwardAndTwoBackward) {
  // 16 slices x 8 rows x 512 keys x 4 bytes = 262144; the backward holds P and dP.
  EXPECT_EQ(attentionWorkspaceBytes(16, attentionBlockRows(8, 512), 512, false), 262144u);
  EXPECT_EQ(attentionWorkspaceBytes(16, attentionBlockRows(8, 512), 512, true), 524288u);
  // No block, or one past the query count, means all 512 rows: 16 x 512 x 512 x 4.
  EXPECT_EQ(attentionWorkspaceBytes(16, attentionBlockRows(0, 512), 512, false), 16777216u);
  EXPECT_EQ(attentionBlockRows(600, 512), 512);
}

} // namespace
