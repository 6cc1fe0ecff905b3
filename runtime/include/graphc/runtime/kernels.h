// CPU kernels of the graph dialect's ops, forward and backward, in fp32 (16-bit tensors are
// widened to f32 copies around them, see HalfFormat).
//
// Conventions shared with the compiler (docs/architecture.md):
//  - Images are NCHW, convolution filters OIHW (as in PyTorch and ONNX).
//  - Every kernel fully overwrites its outputs (never accumulates into them), so buffer reuse
//    cannot change results, and never allocates: scratch comes in as a planned workspace.
//  - Optimizer updates are in place on the parameter and its state.
//  - Results must not depend on buffer addresses (reuse and --no-reuse are bit-identical).
#pragma once

#include <cstdint>
#include <string>

#include "graphc/runtime/elementwise_math.h"
#include "graphc/runtime/program.h"
#include "graphc/runtime/random_affine.h"
#include "graphc/runtime/workspace.h"

namespace graphc::rt {

/// Optimizer-state sharding: elements [rank * shard, (rank + 1) * shard) of the flat layout of
/// inputs[0..n) (counts[i] elements each, input i from element starts[i]), zeros in the gaps
/// and past its end.
void rankShard(const float *const *inputs, const int64_t *counts, const int64_t *starts, int n,
               float *out, int64_t shard, int rank);
/// Writes the flat layout `gathered` back over outputs[0..n) (counts[i] elements each, output
/// i from element starts[i]).
void scatterConcatenation(const float *gathered, float *const *outputs, const int64_t *counts,
                          const int64_t *starts, int n);

/// How a GEMM of C[m,n] with shared dimension k is cut into blocks for the kernel threads:
/// `count` blocks of `length` rows (or columns when `columns`) of C, the last one shorter, each
/// one OpenBLAS call. It depends on the shape alone, never on the thread count, which is what
/// keeps GEMMs bit-identical for any number of threads. count == 1: one call.
struct GemmBlocks {
  bool columns = true;
  int64_t length = 0, count = 1;
};
GemmBlocks gemmBlocks(int64_t m, int64_t n, int64_t k);

/// The OpenBLAS core the CPU kernels run, fixed at the first call (before any BLAS call):
/// OpenBLAS's own choice, the user's OPENBLAS_CORETYPE, or, where OpenBLAS 0.3.21 falls back to
/// its Prescott (SSE3) kernels on a CPU it does not know (Intel's Sapphire and Emerald Rapids)
/// that has AVX-512 or AVX2, SkylakeX or Haswell; "" for another BLAS.
const std::string &blasCore();

/// C[m,n] = op(A) * op(B), op(A) is [m,k], op(B) is [k,n]; A is stored [k,m] when transA,
/// B is stored [n,k] when transB. Row-major. C is overwritten.
void matmul(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
            bool transA, bool transB);

/// c[i] = op(a[i]) * op(b[i]) for i < batch, each as matmul: a is [batch, m, k] ([batch, k, m]
/// when transA), b is [batch, k, n] ([batch, n, k] when transB), c is [batch, m, n], overwritten.
void batchMatmul(const float *a, const float *b, float *c, int64_t batch, int64_t m, int64_t n,
                 int64_t k, bool transA, bool transB);

/// c[i] = alpha op(a[i]) op(b[i]) + beta c[i] for i < batch, where a[i] = a + i * strideA (and
/// so for b and c), each matrix row-major and dense in its rows: lets a product work on a block
/// of rows of each batch slice (graph.attention's query blocks). beta = 0 overwrites c.
void stridedBatchMatmul(const float *a, int64_t strideA, const float *b, int64_t strideB, float *c,
                        int64_t strideC, int64_t batch, int64_t m, int64_t n, int64_t k,
                        bool transA, bool transB, float alpha, float beta);

/// graph.attention's sizes: query [batch, queries, width], key [batch, keys, width], value
/// [batch, keys, valueWidth]; queryBlock rows per block (0: all); dropout as graph.dropout's.
struct AttentionShape {
  int64_t batch, queries, keys, width, valueWidth, queryBlock;
  float scale, dropoutRatio;
  uint64_t opId;
  int64_t indexOffset;
  bool causal = false; // query i sees keys 0..i (queries == keys)
  // With a score bias: the slices per bias row (heads; batch % biasHeads == 0), else 0; and
  // whether it has a row per query ([batch / biasHeads, queries, keys]) or one per sequence
  // ([batch / biasHeads, keys], a key-padding mask).
  int64_t biasHeads = 0;
  bool biasPerQuery = false;
  // Whether a non-zero bias replaces the score rather than adding to it (graph.attention's
  // bias_fills, a masked_fill), the score then getting no gradient.
  bool biasFills = false;
};
/// The bias row of query `query` of slice `b`, or null without a score bias.
inline const float *attentionBiasRow(const float *scoreBias, const AttentionShape &sh, int64_t b,
                                     int64_t query) {
  if (!scoreBias)
    return nullptr;
  const int64_t row = b / sh.biasHeads;
  return scoreBias + (sh.biasPerQuery ? row * sh.queries + query : row) * sh.keys;
}
/// out = dropout(softmax(scale q k^T + bias)) v, one block of query rows at a time; `workspace`
/// holds attentionWorkspaceBytes(batch, block rows, keys, false). `scoreBias` (null: none) is
/// added to slice b's scores from its row b / biasHeads: [batch / biasHeads, keys] to every
/// query (a key-padding mask), or [batch / biasHeads, queries, keys] query by query.
void attentionForward(const float *q, const float *k, const float *v, float *out, float *workspace,
                      const AttentionShape &shape, uint64_t seed, float step,
                      const float *scoreBias = nullptr);
/// dq, dk, dv of attentionForward, the probabilities recomputed per block; `workspace` holds
/// attentionWorkspaceBytes(batch, block rows, keys, true). The bias gets no gradient.
void attentionBackward(const float *dout, const float *q, const float *k, const float *v, float *dq,
                       float *dk, float *dv, float *workspace, const AttentionShape &shape,
                       uint64_t seed, float step, const float *scoreBias = nullptr);

/// The input's dims and a permutation of its axes (rank <= kMaxRank).
struct TransposeShape {
  int64_t rank;
  int64_t dims[kMaxRank];
  int64_t perm[kMaxRank];
};
/// y = x with its axes permuted: y's axis i is x's axis perm[i]. y is overwritten.
void transpose(const float *x, float *y, const TransposeShape &shape);

/// y[n,out] = x[n,in] * W + bias. W is stored [in,out], or [out,in] when transposeW
/// (PyTorch/ONNX Gemm with transB=1). bias may be null.
void dense(const float *x, const float *w, const float *bias, float *y, int64_t n, int64_t in,
           int64_t out, bool transposeW);

/// db[c] = sum over o < outer, i < inner of dy[(o * channels + c) * inner + i].
/// Dense bias gradient: outer=n, channels=out, inner=1. Conv bias: outer=N, channels=K, inner=OH*OW.
void biasGrad(const float *dy, float *db, int64_t outer, int64_t channels, int64_t inner);

struct Conv2dShape {
  int64_t n, c, h, w;       // input
  int64_t k, r, s;          // filter: k output channels, r x s window
  int64_t oh, ow;           // output spatial size
  int64_t strideH, strideW;
  int64_t padTop, padLeft;  // bottom/right padding is implied by oh/ow
  int64_t dilationH, dilationW;
  // c and k are totals; output channel group g (k / groups channels) reads input channels
  // [g c/groups, (g+1) c/groups) through filter channels [0, c/groups): w is [K, C/groups, R, S].
  int64_t groups = 1;
  // Output rows per im2col tile (0: all OH rows at once). graphc tiles a convolution whose
  // workspace would not fit the budget; the workspace then holds one tile.
  int64_t tileRows = 0;
};

/// y[N,K,OH,OW] = conv(x[N,C,H,W], w[K,C/groups,R,S]) + bias[K] (bias may be null).
/// workspace: conv2dWorkspaceBytes(c / groups, r, s, conv2dTileRows(tileRows, oh), ow) bytes,
/// none (it may be null) for a pointwise convolution (conv2dIsPointwise, workspace.h).
void conv2d(const float *x, const float *w, const float *bias, float *y, const Conv2dShape &shape,
            float *workspace);
/// dx[N,C,H,W] from dy[N,K,OH,OW] and w. Same workspace size as conv2d. With `bias` [C] (a
/// transposed convolution's), dx[n, c] += bias[c].
void conv2dBackwardData(const float *dy, const float *w, float *dx, const Conv2dShape &shape,
                        float *workspace, const float *bias = nullptr);
/// dw[K,C,R,S] from dy and x. Same workspace size as conv2d.
void conv2dBackwardFilter(const float *dy, const float *x, float *dw, const Conv2dShape &shape,
                          float *workspace);

struct Pool2dShape {
  int64_t n, c, h, w;
  int64_t oh, ow;
  int64_t kernelH, kernelW;
  int64_t strideH, strideW;
  int64_t padTop, padLeft; // padded cells never win the max
};

void maxPool2d(const float *x, float *y, const Pool2dShape &shape);
/// Routes each dy to the first position (row-major within the window) holding the window's max
/// of x, as PyTorch does. dx is overwritten (zeros elsewhere).
void maxPool2dBackward(const float *dy, const float *x, float *dx, const Pool2dShape &shape);

/// Average pooling; the divisor is the number of input cells in the window, or with
/// countIncludePad the window clipped to the padded input (PyTorch's avg_pool2d rule).
void avgPool2d(const float *x, float *y, const Pool2dShape &shape, bool countIncludePad);
/// Spreads each dy over its window with the forward divisor. dx is overwritten.
void avgPool2dBackward(const float *dy, float *dx, const Pool2dShape &shape,
                       bool countIncludePad);

/// Batch normalization of x viewed as [n, c, inner] per channel c, as PyTorch's CPU kernel
/// computes it (sums in double). training: batch mean and biased variance normalise; the
/// running statistics become (1 - momentum) old + momentum batch, with the unbiased variance
/// (n * inner / (n * inner - 1)) for the running variance. Otherwise the running statistics
/// normalise and are copied unchanged. y = x * alpha + beta with alpha = scale * invstd,
/// beta = bias - mean * alpha. savedMean/savedInvstd get the statistics used.
/// newRunningMean/Var may alias runningMean/Var.
void batchNorm(const float *x, const float *scale, const float *bias, const float *runningMean,
               const float *runningVar, float *y, float *newRunningMean, float *newRunningVar,
               float *savedMean, float *savedInvstd, int64_t n, int64_t c, int64_t inner,
               float epsilon, float momentum, bool training);
/// y = x * alpha + beta per channel from the statistics batchNorm saved (graph.batch_norm_apply,
/// the rematerialized output): bit-identical to batchNorm's y. y may alias x.
void batchNormApply(const float *x, const float *scale, const float *bias,
                    const float *savedMean, const float *savedInvstd, float *y, int64_t n,
                    int64_t c, int64_t inner);
/// dscale = sum dy xhat, dbias = sum dy; training: dx = (dy - mean(dy) - xhat mean(dy xhat))
/// invstd scale (PyTorch's formula); otherwise dx = dy invstd scale.
void batchNormBackward(const float *dy, const float *x, const float *scale,
                       const float *savedMean, const float *savedInvstd, float *dx,
                       float *dscale, float *dbias, int64_t n, int64_t c, int64_t inner,
                       bool training);

/// Layer normalization of x viewed as [rows, d] over its last axis, as PyTorch's LayerNorm
/// (statistics summed in double): y = (x - mean) invstd scale + bias with the row's mean and
/// biased variance, invstd = 1 / sqrt(var + epsilon). savedMean/savedInvstd [rows] get them.
void layerNorm(const float *x, const float *scale, const float *bias, float *y,
               float *savedMean, float *savedInvstd, int64_t rows, int64_t d, float epsilon);
/// dscale = sum over rows of dy xhat, dbias = sum of dy; per row, with g = dy scale,
/// dx = invstd (g - mean(g) - xhat mean(g xhat)).
void layerNormBackward(const float *dy, const float *x, const float *scale,
                       const float *savedMean, const float *savedInvstd, float *dx,
                       float *dscale, float *dbias, int64_t rows, int64_t d);

/// Root-mean-square normalization of x viewed as [rows, d] over its last axis (RMSNorm, as
/// LLaMA's x * rsqrt(mean(x^2) + epsilon) * scale; the mean square summed in double):
/// y = x invstd scale, invstd = 1 / sqrt(mean(x^2) + epsilon), saved in savedInvstd [rows].
void rmsNorm(const float *x, const float *scale, float *y, float *savedInvstd, int64_t rows,
             int64_t d, float epsilon);
/// dscale = sum over rows of dy xhat (xhat = x invstd); per row, with g = dy scale,
/// dx = invstd (g - xhat mean(g xhat)).
void rmsNormBackward(const float *dy, const float *x, const float *scale, const float *savedInvstd,
                     float *dx, float *dscale, int64_t rows, int64_t d);

/// Copies src, viewed as [outer, part, inner], into dst viewed as [outer, total, inner] at
/// [*, offset, *] (one input of a concat).
void concatInto(const float *src, float *dst, int64_t outer, int64_t part, int64_t total,
                int64_t offset, int64_t inner);
/// dst[outer, part, inner] = src[outer, offset : offset + part, inner] (src has total).
void sliceFrom(const float *src, float *dst, int64_t outer, int64_t total, int64_t offset,
               int64_t part, int64_t inner);

/// Whether dropout keeps element `index`: a splitmix64 hash of (seed, opId, step, index)
/// mapped to [0, 1) and compared with ratio. Pure, so a recomputed mask is identical.
bool dropoutKeep(uint64_t seed, uint64_t opId, int64_t step, int64_t index, float ratio);
/// y = keep ? x / (1 - ratio) : 0, step the runtime's f32 step counter; element i draws the
/// mask's element maskDrawIndex(i, maskRepeat, maskInner) + indexOffset (a micro-batch's rows
/// of the whole batch's mask; a mask broadcast over groups of maskRepeat runs of maskInner).
void dropout(const float *x, float *y, int64_t n, float ratio, uint64_t seed, uint64_t opId,
             float step, int64_t indexOffset = 0, int64_t maskRepeat = 1, int64_t maskInner = 1);
/// dx = keep ? dy / (1 - ratio) : 0 with the forward's mask.
void dropoutBackward(const float *dy, float *dx, int64_t n, float ratio, uint64_t seed,
                     uint64_t opId, float step, int64_t indexOffset = 0, int64_t maskRepeat = 1,
                     int64_t maskInner = 1);
/// y[i] = mean + scale * normalDraw(key, i + indexOffset) (graph.random_normal).
void randomNormal(float *y, int64_t n, float mean, float scale, uint64_t seed, uint64_t opId,
                  float step, int64_t indexOffset = 0);
/// y[i] = low + (high - low) * uniformDraw(key, i / repeat + indexOffset)
/// (graph.random_uniform).
void randomUniform(float *y, int64_t n, float low, float high, uint64_t seed, uint64_t opId,
                   float step, int64_t indexOffset = 0, int64_t repeat = 1);

/// graph.random_affine on an NCHW image [n, c, h, w]: sample s's transform from the draws of
/// sample s + sampleOffset (random_affine.h). y must not alias x.
void randomAffine(const float *x, float *y, int64_t n, int64_t c, int64_t h, int64_t w,
                  const RandomAffineParams &params, uint64_t seed, uint64_t opId, float step,
                  int64_t sampleOffset = 0);

/// y = factor * x + offset over n elements. y may alias x.
void scale(const float *x, float *y, int64_t n, float factor, float offset = 0.0f);

/// 16-bit storage formats of mixed precision (graphc-insert-casts). Their tensors hold the
/// raw 16-bit patterns; the CPU computes on f32 copies (widenHalf / narrowHalf).
enum class HalfFormat { BF16, F16 };

/// dst[i] = src[i] widened to f32 (exact).
void widenHalf(HalfFormat format, const uint16_t *src, float *dst, int64_t n);
/// dst[i] = src[i] rounded to the 16-bit format, to nearest even (NaN stays NaN; f16
/// overflows to infinity, as on the GPU).
void narrowHalf(HalfFormat format, const float *src, uint16_t *dst, int64_t n);
/// dst[i] = src[i] converted between the two 16-bit formats, through f32.
void convertHalf(HalfFormat from, const uint16_t *src, HalfFormat to, uint16_t *dst, int64_t n);
/// One value each way (the tests use them).
float halfToFloat(HalfFormat format, uint16_t bits);
uint16_t floatToHalf(HalfFormat format, float value);

/// Copies `bytes` bytes (a micro-batch slice of data or labels).
void copyBytes(const void *src, void *dst, uint64_t bytes);

/// y = a + b over n elements (residual connections, gradient accumulation). y may alias a or b.
void add(const float *a, const float *b, float *y, int64_t n);

// Elementwise activations over n elements, and their backward from the forward *output* y.
void relu(const float *x, float *y, int64_t n);
void reluBackward(const float *dy, const float *y, float *dx, int64_t n);   // dy * (y > 0)
void sigmoid(const float *x, float *y, int64_t n);
void sigmoidBackward(const float *dy, const float *y, float *dx, int64_t n); // dy*y*(1-y)
void tanhForward(const float *x, float *y, int64_t n);
void tanhBackward(const float *dy, const float *y, float *dx, int64_t n);    // dy*(1-y^2)

/// y[i] = value over n elements (the zero initial state of recurrent layers).
void fill(float *y, int64_t n, float value);

/// y = a * b over n elements (gates of unrolled recurrent layers, Keras Multiply). y may alias
/// a or b.
void mul(const float *a, const float *b, float *y, int64_t n);
/// y[r, i] = a[r, i] * b[i] for the rows r < rows of a [rows, n] (graph.broadcast_mul).
void broadcastMul(const float *a, const float *b, float *y, int64_t rows, int64_t n);
/// graph.rotary on x viewed as [rows, n] rows whose last axis has d (even) elements, the tables
/// [n] shared by the rows: y = x cos + rotate_half(x) sin, rotate_half(x)[j] = -x[j + d/2]
/// (j < d/2) or x[j - d/2]; with transpose the adjoint, y = x cos + rotate_half^T(x sin),
/// rotate_half^T(g)[j] = g[j + d/2] (j < d/2) or -g[j - d/2].
void rotary(const float *x, const float *cos, const float *sin, float *y, int64_t rows, int64_t n,
            int64_t d, bool transpose);

/// y = f(x) and dx = dy * f'(x) for the activations of elementwise_math.h (graph.activation).
void activation(Activation kind, float alpha, const float *x, float *y, int64_t n);
void activationBackward(Activation kind, float alpha, const float *dy, const float *x, float *dx,
                        int64_t n);

/// rows[i, :] = table[indices[i], :] for `count` indices into a [vocabulary, features] table;
/// an index that is not a whole number in [0, vocabulary) gives zeros (embeddingRow).
void embedding(const float *indices, const float *table, float *rows, int64_t count,
               int64_t vocabulary, int64_t features);
/// dtable = 0, then dtable[indices[i], :] += grad[i, :] in index order (deterministic).
void embeddingBackward(const float *grad, const float *indices, float *dtable, int64_t count,
                       int64_t vocabulary, int64_t features);

/// y = min(max(x, lo), hi); NaN stays NaN (as torch.clamp / hardtanh).
void clip(const float *x, float *y, int64_t n, float lo, float hi);
/// dx = lo < y < hi ? dy : 0 (PyTorch's hardtanh backward: zero at the bounds).
void clipBackward(const float *dy, const float *y, float *dx, int64_t n, float lo, float hi);

/// Softmax over the middle axis of x viewed as [outer, dim, inner], max-subtracted.
void softmax(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner);
/// The causal softmax of `rows` rows of `keys` scores, row r being query r % queries: its keys
/// j > r % queries get probability 0, the others the softmax of keys 0..r % queries, in
/// softmax's order and precision (graph.softmax {causal}).
void softmaxCausal(const float *x, float *y, int64_t rows, int64_t queries, int64_t keys);
/// dx = y * (dy - sum_axis(dy * y)).
void softmaxBackward(const float *dy, const float *y, float *dx, int64_t outer, int64_t dim,
                     int64_t inner);

/// Mean loss over the batch, written to loss[0].
/// pred is [batch, classes] (classes = product of the non-batch dims).
/// labels: int64 [batch] class indices for SparseCategoricalCrossentropy, otherwise f32 with the
/// shape of pred.
/// fromLogits: pred holds logits; the loss applies log-softmax (categorical) or log-sigmoid
/// (binary) itself, stably. Otherwise pred holds probabilities, clipped to [1e-7, 1 - 1e-7] as
/// Keras does. MeanSquaredError ignores fromLogits.
/// Reductions: categorical losses average over the batch; binary crossentropy and MSE average
/// over all batch * classes elements (PyTorch's BCELoss/MSELoss with reduction='mean').
/// Rows that count less than the others (null: every row counts, as above):
/// - ignore (SparseCategoricalCrossentropy): labels equal to ignoreIndex add nothing (their
///   gradient rows are zero), and the sum is divided by the number of the other labels among
///   the int64 labels `counted`;
/// - weights (one per row): row r's loss (the crossentropies' sum over its classes,
///   binary crossentropy's and MSE's mean over its elements) is scaled by weights[r], and the
///   sum divided by the sum of the float weights `counted`.
/// - classWeights (SparseCategoricalCrossentropy, one per class: PyTorch's
///   CrossEntropyLoss(weight)): a row's loss is sum_j w_j t_j (lse - x_j) over its target t
///   (w_y (lse - x_y) unsmoothed), and the sum is divided by the class weights of the labels
///   `counted` (those not ignored).
/// - sampleWeights (one per sample, rowsPerSample rows each: graphc --sample-weights, Keras's
///   fit(sample_weight)): row r's loss is also scaled by sampleWeights[r / rowsPerSample], and
///   the divisor stays what it is without them (`counted`, or the rows when it is null).
/// `counted` holds countedRows values: the whole step's labels or weights when `labels` and
/// `weights` are one micro-batch's slice of them, else the same as those; labels unless there
/// are weights; null when only sample weights are given. Nothing counted: the loss and
/// gradient are 0.
/// With weights or sample weights, the caller passes [rows, classes] = the prediction without
/// and with its last axis for every kind.
struct LossRows {
  bool ignore;
  int64_t ignoreIndex;
  const float *weights;
  const void *counted;
  int64_t countedRows;
  const float *classWeights = nullptr;
  const float *sampleWeights = nullptr;
  int64_t rowsPerSample = 1;
};
/// labelSmoothing ε (the crossentropies): categorical targets become (1 - ε) t + ε / classes
/// (a class index: (1 - ε) on its class), binary targets (1 - ε) t + ε / 2, as PyTorch's
/// CrossEntropyLoss(label_smoothing) and Keras's label_smoothing have it.
/// posWeight (BinaryCrossentropy, unweighted rows): element i's loss is -(P y log p + (1 - y)
/// log(1 - p)), P = posWeight[i % posWeightCount] (one value, or one per index of the
/// prediction's last axis), as PyTorch's BCEWithLogitsLoss(pos_weight).
void lossForward(LossKind kind, bool fromLogits, const float *pred, const void *labels, float *loss,
                 int64_t batch, int64_t classes, const LossRows *rows = nullptr,
                 double labelSmoothing = 0.0, const float *posWeight = nullptr,
                 int64_t posWeightCount = 0);
/// d(mean loss)/d(pred), same shape as pred, overwritten.
void lossBackward(LossKind kind, bool fromLogits, const float *pred, const void *labels,
                  float *dpred, int64_t batch, int64_t classes, const LossRows *rows = nullptr,
                  double labelSmoothing = 0.0, const float *posWeight = nullptr,
                  int64_t posWeightCount = 0);

/// p -= lr * g
void sgdUpdate(float *param, const float *grad, int64_t n, float lr);
/// PyTorch SGD(momentum): v = momentum * v + g; p -= lr * v.
void momentumUpdate(float *param, const float *grad, float *velocity, int64_t n, float lr,
                    float momentum);
/// PyTorch Adam (no weight decay, no amsgrad), step = 1-based step number:
/// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
/// p -= (lr / (1 - b1^step)) * m / (sqrt(v) / sqrt(1 - b2^step) + eps).
void adamUpdate(float *param, const float *grad, float *m, float *v, int64_t n, float lr,
                float beta1, float beta2, float eps, float step);

/// Dynamic loss scaling (fp16). The scale is 2^(16 - halvings), a power of two, so scaling
/// and unscaling are exact. y = x * scale, or x / scale with `inverse`; y may alias x.
void lossScale(const float *x, float *y, int64_t n, float halvings, bool inverse);
/// Whether all n elements of x are finite (no inf, no NaN).
bool allFinite(const float *x, int64_t n);
/// In place: overflow (finite == 0) -> halvings + 1, cleanSteps = 0, skippedSteps + 1;
/// otherwise cleanSteps + 1, and at growthInterval clean steps the scale doubles (halvings - 1,
/// not below -8).
void updateLossScale(float *halvings, float *cleanSteps, float *skippedSteps, float finite,
                     int64_t growthInterval);

} // namespace graphc::rt
