// CPU implementations of the kernels declared in kernels.h: fp32, NCHW, GEMM and convolution
// through OpenBLAS's cblas_sgemm on blocks of C (depthwise convolutions as direct loops),
// everything else as loops; the blocks and the loops' independent outputs are split over the
// kernel threads (parallel.h) without changing the order in which any one output is
// computed. Each kernel fully overwrites
// its outputs, never allocates (convolutions use the caller's planned im2col workspace) and
// sums in a fixed order, so results never depend on where the buffers live. The numerics follow
// PyTorch's CPU kernels where the header says so (optimizers, max-pool tie-breaking, reductions)
// and Keras' probability clipping for the losses that take probabilities.
#include "graphc/runtime/kernels.h"

#include "graphc/runtime/attention_rows.h"
#include "graphc/runtime/dropout_mask.h"
#include "graphc/runtime/parallel.h"
#include "graphc/runtime/pool_window.h"

#include <cblas.h>
#include <dlfcn.h>
#include <strings.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace graphc::rt {

void rankShard(const float *const *inputs, const int64_t *counts, const int64_t *starts, int n,
               float *out, int64_t shard, int rank) {
  const int64_t begin = int64_t(rank) * shard, end = begin + shard;
  std::fill(out, out + shard, 0.0f);
  for (int i = 0; i < n; ++i) {
    const int64_t start = starts[i]; // where input i begins in the layout
    const int64_t lo = std::max(begin, start), hi = std::min(end, start + counts[i]);
    if (lo < hi)
      std::copy(inputs[i] + (lo - start), inputs[i] + (hi - start), out + (lo - begin));
  }
}

void scatterConcatenation(const float *gathered, float *const *outputs, const int64_t *counts,
                          const int64_t *starts, int n) {
  for (int i = 0; i < n; ++i)
    std::copy(gathered + starts[i], gathered + starts[i] + counts[i], outputs[i]);
}

namespace {

// Keras' epsilon: probabilities are clipped to [kProbEps, 1 - kProbEps] before the log.
constexpr float kProbEps = 1e-7f;

// BLAS takes int dimensions; the planner never produces a GEMM dimension beyond that.
inline int blasInt(int64_t v) { return static_cast<int>(v); }

// GEMMs are split over the kernel threads here, into blocks of C's rows or columns, each block
// one single-threaded cblas_sgemm; OpenBLAS's own threads are never used. Once woken, they
// spin on sched_yield for about 0.1 s after every GEMM (a timeout settable only in the
// environment before the process starts), and on a 2-core machine they took 15% of the
// ResNet-18 step's CPU time (perf) while graphc's threads ran the kernels that follow. They
// also made results depend on the thread count: OpenBLAS's threaded and single-threaded
// GEMMs, and its GEMMs on different blocks of C, differ in the last bits (measured on
// ResNet-18's shapes with OpenBLAS 0.3.21). So the blocks here depend on the shape
// alone: a GEMM of W multiply-adds is cut into min(16, W / 1M) blocks (whole multiples of 16
// rows or columns, the kernel's tile) along C's longer side, whatever the thread count, and
// the threads share them out. The step is then bit-identical for any thread count
// (test/Unit/RuntimeParallelTests.cpp, test/e2e/kernel-threads.test). Below 2M multiply-adds
// a GEMM is one call on the calling thread: the 28x28 CNN's per-image convolution GEMMs
// (0.6M) ran 1.4x slower threaded.
constexpr double kGemmBlockMacs = double(1 << 20);
constexpr int64_t kGemmMaxBlocks = 16;
constexpr int64_t kGemmTile = 16;

/// fn(i) for every i < n, split over the kernel threads in contiguous ranges: for the
/// elementwise kernels, whose elements are independent.
template <typename Fn> void forEachElement(int64_t n, Fn fn) {
  parallelFor(n, elementGrain(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      fn(i);
  });
}

void fillZero(float *p, int64_t n) {
  if (n > 0)
    std::memset(p, 0, static_cast<size_t>(n) * sizeof(float));
}

// Long sums in double (batch norm's per-channel statistics, a depthwise filter gradient's taps)
// spread over 4 partial sums: element i of each run goes to lane i % 4, and the lanes are added
// as (0 + 1) + (2 + 3) at the end. One running sum was bound by the latency of its adds (batch
// norm's statistics took 8% of MobileNetV2's step); four independent chains are not. The order
// is fixed, and each sum is one thread's, so the sums still do not depend on the thread count.
constexpr int kSumLanes = 4;
template <typename Fn> void forEachInLanes(int64_t n, Fn fn) {
  int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    fn(i, 0);
    fn(i + 1, 1);
    fn(i + 2, 2);
    fn(i + 3, 3);
  }
  for (; i < n; ++i)
    fn(i, int(i % kSumLanes));
}
inline double laneTotal(const double (&lanes)[kSumLanes]) {
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

/// OpenBLAS before 0.3.22 (Debian 12 ships 0.3.21) does not know Intel's newest server cores
/// (Sapphire and Emerald Rapids, family 6 models 143 and 207) and runs its generic Prescott
/// (SSE3) kernels there: the step of bench/norm_unet_step_time.py took 2.0x as long as with
/// the AVX-512 kernels. Unless the user chose a core (OPENBLAS_CORETYPE), when the library
/// runs that fallback on a CPU with AVX-512 (or AVX2 and FMA), select the matching core
/// through OpenBLAS's own dynamic-architecture entry points before the first BLAS call. They
/// are looked up at run time: another BLAS, or an OpenBLAS built for one core, is left alone.
/// Returns the core in use ("" when unknown).
std::string selectBlasCore() {
  using CoreName = char *(*)();
  using Hook = void (*)();
  auto coreName = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  auto quit = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (!coreName)
    return "";
  const char *current = coreName();
  if (!current || std::getenv("OPENBLAS_CORETYPE") || !quit || !init ||
      strcasecmp(current, "prescott") != 0)
    return current ? current : "";
  __builtin_cpu_init();
  const char *better = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    better = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    better = "Haswell";
  if (!better)
    return current;
  // gotoblas_dynamic_init reads the variable only while no core is set; quit clears it.
  setenv("OPENBLAS_CORETYPE", better, 0);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
  const char *chosen = coreName();
  return chosen ? chosen : "";
}

void blasGemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
              bool transA, bool transB, float alpha, float beta, int64_t lda, int64_t ldb,
              int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              blasInt(m), blasInt(n), blasInt(k), alpha, a, blasInt(lda), b, blasInt(ldb), beta, c,
              blasInt(ldc));
}

} // namespace

const std::string &blasCore() {
  // Before any BLAS call, once: the core chosen, and OpenBLAS's own threads off (the kernels
  // split the work over graphc's pool).
  static const std::string core = [] {
    std::string chosen = selectBlasCore();
    openblas_set_num_threads(1);
    return chosen;
  }();
  return core;
}

GemmBlocks gemmBlocks(int64_t m, int64_t n, int64_t k) {
  GemmBlocks split;
  split.columns = n >= m;
  const int64_t side = split.columns ? n : m;
  const double macs = double(m) * double(n) * double(k);
  const int64_t wanted =
      std::min<int64_t>(kGemmMaxBlocks, static_cast<int64_t>(macs / kGemmBlockMacs));
  if (wanted < 2 || side < 2 * kGemmTile) {
    split.length = side;
    split.count = 1;
    return split;
  }
  split.length = ((side + wanted - 1) / wanted + kGemmTile - 1) / kGemmTile * kGemmTile;
  split.count = (side + split.length - 1) / split.length;
  return split;
}

namespace {

// C[m,n] = alpha * op(A) * op(B) + beta * C, row-major, with the degenerate shapes handled here
// because BLAS implementations differ on them (k == 0 must still overwrite C when beta == 0).
// lda, ldb, ldc: the row strides of A, B and C as stored (0: packed, op(A) is m x k etc.); a
// convolution's im2col tile is a column block of its [K, OH*OW] output.
void gemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k, bool transA,
          bool transB, float beta, int64_t lda = 0, int64_t ldb = 0, int64_t ldc = 0,
          float alpha = 1.0f) {
  if (m <= 0 || n <= 0)
    return;
  if (ldc == 0)
    ldc = n;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : c[i * ldc + j] * beta;
    return;
  }
  (void)blasCore(); // the core chosen and OpenBLAS single-threaded, once
  lda = lda ? lda : (transA ? m : k);
  ldb = ldb ? ldb : (transB ? k : n);
  const GemmBlocks split = gemmBlocks(m, n, k);
  if (split.count < 2) {
    blasGemm(a, b, c, m, n, k, transA, transB, alpha, beta, lda, ldb, ldc);
    return;
  }
  // One call per block, whichever thread runs it, so the blocks never depend on the threads.
  parallelFor(split.count, 1, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t begin = block * split.length;
      if (split.columns) {
        const int64_t cols = std::min(n - begin, split.length);
        blasGemm(a, b + (transB ? begin * ldb : begin), c + begin, m, cols, k, transA, transB,
                 alpha, beta, lda, ldb, ldc);
      } else {
        const int64_t rows = std::min(m - begin, split.length);
        blasGemm(a + (transA ? begin : begin * lda), b, c + begin * ldc, rows, n, k, transA, transB,
                 alpha, beta, lda, ldb, ldc);
      }
    }
  });
}

/// The output columns [begin, end) whose tap at filter column s falls inside the input row
/// (input column ox * strideW + s * dilationW - padLeft); the others read padding.
inline void insideColumns(const Conv2dShape &sh, int64_t s, int64_t &begin, int64_t &end) {
  const int64_t shift = s * sh.dilationW - sh.padLeft; // ix = ox * strideW + shift
  begin = shift >= 0 ? 0 : (-shift + sh.strideW - 1) / sh.strideW;
  end = sh.w - shift <= 0 ? 0 : std::min(sh.ow, (sh.w - shift + sh.strideW - 1) / sh.strideW);
  begin = std::min(begin, end);
}

// Unfolds output rows [oy0, oy0 + rows) of one image x[C,H,W]:
// col[(c*R + r)*S + s][(oy - oy0)*OW + ox]; out-of-image taps are 0.
void im2colRows(const float *x, float *col, const Conv2dShape &sh, int64_t oy0, int64_t rows) {
  const int64_t cols = rows * sh.ow;
  parallelFor(sh.c * sh.r * sh.s, grainFor(cols), [&](int64_t begin, int64_t end) {
    for (int64_t crs = begin; crs < end; ++crs) {
      const int64_t c = crs / (sh.r * sh.s), r = crs / sh.s % sh.r, s = crs % sh.s;
      const int64_t shift = s * sh.dilationW - sh.padLeft;
      int64_t lo, hi;
      insideColumns(sh, s, lo, hi);
      float *row = col + crs * cols;
      const float *img = x + c * sh.h * sh.w;
      for (int64_t oy = oy0; oy < oy0 + rows; ++oy) {
        const int64_t iy = oy * sh.strideH - sh.padTop + r * sh.dilationH;
        float *out = row + (oy - oy0) * sh.ow;
        if (iy < 0 || iy >= sh.h) {
          fillZero(out, sh.ow);
          continue;
        }
        const float *in = img + iy * sh.w;
        fillZero(out, lo);
        if (sh.strideW == 1 && hi > lo)
          std::memcpy(out + lo, in + lo + shift, static_cast<size_t>(hi - lo) * sizeof(float));
        else
          for (int64_t ox = lo; ox < hi; ++ox)
            out[ox] = in[ox * sh.strideW + shift];
        fillZero(out + hi, sh.ow - hi);
      }
    }
  });
}

// The adjoint of im2colRows: adds to dx[C,H,W] the column entries of output rows
// [oy0, oy0 + rows), in (c, r, s, oy, ox) order, so that one tile over all rows sums every
// pixel in the same order whatever the tiling of other convolutions.
void col2imRowsAdd(const float *col, float *dx, const Conv2dShape &sh, int64_t oy0,
                   int64_t rows) {
  const int64_t cols = rows * sh.ow;
  // A channel's pixels only receive that channel's rows, so channels split over threads and
  // each pixel still adds its entries in the sequential order.
  parallelFor(sh.c, grainFor(sh.r * sh.s * cols), [&](int64_t cBegin, int64_t cEnd) {
    for (int64_t c = cBegin; c < cEnd; ++c)
      for (int64_t r = 0; r < sh.r; ++r)
        for (int64_t s = 0; s < sh.s; ++s) {
          const float *row = col + ((c * sh.r + r) * sh.s + s) * cols;
          float *img = dx + c * sh.h * sh.w;
          const int64_t shift = s * sh.dilationW - sh.padLeft;
          int64_t lo, hi;
          insideColumns(sh, s, lo, hi);
          for (int64_t oy = oy0; oy < oy0 + rows; ++oy) {
            const int64_t iy = oy * sh.strideH - sh.padTop + r * sh.dilationH;
            if (iy < 0 || iy >= sh.h)
              continue;
            const float *in = row + (oy - oy0) * sh.ow;
            float *out = img + iy * sh.w;
            for (int64_t ox = lo; ox < hi; ++ox)
              out[ox * sh.strideW + shift] += in[ox];
          }
        }
  });
}

// The flat index in x of the maximum of output (oy, ox)'s window in one image plane `img`
// (plane offset `planeBase`), or -1 for a window entirely in the padding. Row-major scan with a
// strict '>' keeps the first maximum, as PyTorch does; a NaN always wins (the last one seen) so
// that it propagates like PyTorch's max_pool2d.
inline int64_t poolWindowArgmax(const float *img, const Pool2dShape &sh, int64_t planeBase,
                                int64_t oy, int64_t ox) {
  const int64_t y0 = oy * sh.strideH - sh.padTop;
  const int64_t x0 = ox * sh.strideW - sh.padLeft;
  const int64_t yBegin = std::max<int64_t>(y0, 0), yEnd = std::min(y0 + sh.kernelH, sh.h);
  const int64_t xBegin = std::max<int64_t>(x0, 0), xEnd = std::min(x0 + sh.kernelW, sh.w);
  if (yBegin >= yEnd || xBegin >= xEnd)
    return -1;
  int64_t best = yBegin * sh.w + xBegin;
  float bestVal = img[best];
  for (int64_t iy = yBegin; iy < yEnd; ++iy)
    for (int64_t ix = xBegin; ix < xEnd; ++ix) {
      const float v = img[iy * sh.w + ix];
      if (v > bestVal || v != v) {
        best = iy * sh.w + ix;
        bestVal = v;
      }
    }
  return planeBase + best;
}

// Visits every pooling window of image planes [planeBegin, planeEnd) (a plane is one (n, c)
// pair); fn(outIndex, windowArgmaxIndexInX or -1). Windows of KH x KW (both > 0: the usual 2x2
// and ResNet's 3x3) that lie inside the image get poolWindowArgmax's scan unrolled, without its
// bounds; KH = KW = 0 scans every window with poolWindowArgmax.
template <int KH, int KW, typename Fn>
void forEachPoolWindowOf(const float *x, const Pool2dShape &sh, int64_t planeBegin,
                         int64_t planeEnd, Fn fn) {
  for (int64_t nc = planeBegin; nc < planeEnd; ++nc) {
    const int64_t planeBase = nc * sh.h * sh.w;
    const float *img = x + planeBase;
    for (int64_t oy = 0; oy < sh.oh; ++oy) {
      const int64_t y0 = oy * sh.strideH - sh.padTop;
      const bool rowsInside = KH > 0 && y0 >= 0 && y0 + KH <= sh.h;
      for (int64_t ox = 0; ox < sh.ow; ++ox) {
        const int64_t out = (nc * sh.oh + oy) * sh.ow + ox;
        const int64_t x0 = ox * sh.strideW - sh.padLeft;
        if (rowsInside && x0 >= 0 && x0 + KW <= sh.w) {
          const float *p = img + y0 * sh.w + x0;
          int64_t best = 0;
          float bestVal = p[0];
          for (int r = 0; r < KH; ++r)
            for (int s = r == 0 ? 1 : 0; s < KW; ++s) {
              const float v = p[r * sh.w + s];
              if (v > bestVal || v != v) {
                best = r * sh.w + s;
                bestVal = v;
              }
            }
          fn(out, planeBase + y0 * sh.w + x0 + best);
        } else {
          fn(out, poolWindowArgmax(img, sh, planeBase, oy, ox));
        }
      }
    }
  }
}

template <typename Fn>
void forEachPoolWindow(const float *x, const Pool2dShape &sh, int64_t planeBegin, int64_t planeEnd,
                       Fn fn) {
  if (sh.kernelH == 2 && sh.kernelW == 2)
    forEachPoolWindowOf<2, 2>(x, sh, planeBegin, planeEnd, fn);
  else if (sh.kernelH == 3 && sh.kernelW == 3)
    forEachPoolWindowOf<3, 3>(x, sh, planeBegin, planeEnd, fn);
  else
    forEachPoolWindowOf<0, 0>(x, sh, planeBegin, planeEnd, fn);
}

// Returns (max, log(sum(exp(row - max)))) of one row of logits, accumulated in double.
inline double logSumExp(const float *row, int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j)
    mx = std::max(mx, row[j]);
  if (std::isinf(mx))
    return mx; // all -inf (or +inf present): the result is that infinity
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j)
    sum += std::exp(static_cast<double>(row[j]) - mx);
  return mx + std::log(sum);
}

inline float clipProb(float p) { return std::min(std::max(p, kProbEps), 1.0f - kProbEps); }
// Derivative of the clip: gradients only flow through probabilities inside the range (like
// tf.clip_by_value, which Keras' loss uses).
inline bool probInRange(float p) { return p >= kProbEps && p <= 1.0f - kProbEps; }

// The compiler hands hyperparameters over as float, but PyTorch holds them as Python doubles
// (0.9, not 0.89999997615814209). The shortest decimal that round-trips the float recovers the
// double the user wrote, so the double-precision bias corrections match PyTorch's bit for bit.
double intendedDouble(float f) {
  if (!std::isfinite(f))
    return f;
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf) - 1, f);
  if (res.ec != std::errc())
    return f;
  *res.ptr = '\0';
  return std::strtod(buf, nullptr);
}

} // namespace

void matmul(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
            bool transA, bool transB) {
  gemm(a, b, c, m, n, k, transA, transB, 0.0f);
}

void batchMatmul(const float *a, const float *b, float *c, int64_t batch, int64_t m, int64_t n,
                 int64_t k, bool transA, bool transB) {
  stridedBatchMatmul(a, m * k, b, k * n, c, m * n, batch, m, n, k, transA, transB, 1.0f, 0.0f);
}

void stridedBatchMatmul(const float *a, int64_t strideA, const float *b, int64_t strideB, float *c,
                        int64_t strideC, int64_t batch, int64_t m, int64_t n, int64_t k,
                        bool transA, bool transB, float alpha, float beta) {
  // GEMMs too small to be cut into blocks (attention's per-head products) are shared out whole
  // among the threads instead, a range of them being worth at least kGemmBlockMacs: each is
  // still one call, so the results do not depend on the threads either.
  const double macs = std::max(double(m) * double(n) * double(k), 1.0);
  const int64_t grain = gemmBlocks(m, n, k).count > 1
                            ? batch
                            : std::max<int64_t>(1, static_cast<int64_t>(kGemmBlockMacs / macs));
  parallelFor(batch, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      gemm(a + i * strideA, b + i * strideB, c + i * strideC, m, n, k, transA, transB, beta, 0, 0,
           0, alpha);
  });
}

// Memory-efficient attention (Rabe and Staats 2021): per block of query rows, three (forward)
// or five (backward) GEMMs over all batch slices around an O(keys) pass per row
// (attention_rows.h). The [batch, queries, keys] probabilities never exist; a block's scores
// live in the workspace. Time O(batch queries keys width), workspace O(batch rows keys).
namespace {
/// The sizes both attention kernels loop over, and the dropout mask's key at this step.
struct AttentionSizes {
  int64_t M, N, D, E, block;
  bool dropout;
  uint64_t key;
};
AttentionSizes attentionSizes(const AttentionShape &sh, uint64_t seed, float step) {
  const bool dropout = sh.dropoutRatio > 0.0f;
  return {sh.queries,
          sh.keys,
          sh.width,
          sh.valueWidth,
          attentionBlockRows(sh.queryBlock, sh.queries),
          dropout,
          dropout ? dropoutKey(seed, sh.opId, static_cast<int64_t>(step)) : 0};
}
} // namespace

void attentionForward(const float *q, const float *k, const float *v, float *out, float *workspace,
                      const AttentionShape &sh, uint64_t seed, float step, const float *scoreBias) {
  const AttentionSizes z = attentionSizes(sh, seed, step);
  const int64_t M = z.M, N = z.N, D = z.D, E = z.E, block = z.block;
  const bool dropout = z.dropout;
  const uint64_t key = z.key;
  for (int64_t i0 = 0; i0 < M; i0 += block) {
    const int64_t rows = std::min(block, M - i0);
    // A causal block's rows see keys 0..i0 + rows - 1 at most: the GEMMs skip the others
    // (about half of the products over all blocks), and the block's rows are `cols` apart.
    const int64_t cols = attentionBlockKeys(sh.causal, i0, rows, N);
    stridedBatchMatmul(q + i0 * D, M * D, k, N * D, workspace, block * N, sh.batch, rows, cols, D,
                       false, true, 1.0f, 0.0f);
    parallelFor(sh.batch * rows, grainFor(cols), [&](int64_t begin, int64_t end) {
      for (int64_t br = begin; br < end; ++br) {
        const int64_t b = br / rows, r = br % rows;
        attentionProbabilityRow(workspace + b * block * N + r * cols, cols, sh.scale, dropout, key,
                                (b * M + i0 + r) * N + sh.indexOffset, sh.dropoutRatio,
                                sh.causal ? i0 + r + 1 : cols,
                                attentionBiasRow(scoreBias, sh, b, i0 + r), sh.biasFills);
      }
    });
    stridedBatchMatmul(workspace, block * N, v, N * E, out + i0 * E, M * E, sh.batch, rows, E, cols,
                       false, false, 1.0f, 0.0f);
  }
}

void attentionBackward(const float *dout, const float *q, const float *k, const float *v, float *dq,
                       float *dk, float *dv, float *workspace, const AttentionShape &sh,
                       uint64_t seed, float step, const float *scoreBias) {
  const AttentionSizes z = attentionSizes(sh, seed, step);
  const int64_t M = z.M, N = z.N, D = z.D, E = z.E, block = z.block;
  const bool dropout = z.dropout;
  const uint64_t key = z.key;
  float *p = workspace, *g = workspace + sh.batch * block * N;
  // dK and dV sum over the blocks, the first block written (beta 0) and the others added. A
  // causal block reaches only keys 0..i0 + rows - 1, so the blocks run last first: the first
  // one written reaches every key (attentionBlockOrder).
  const int64_t blocks = (M + block - 1) / block;
  for (int64_t n = 0; n < blocks; ++n) {
    const int64_t i0 = attentionBlockOrder(sh.causal, n, blocks) * block;
    const int64_t rows = std::min(block, M - i0);
    const int64_t cols = attentionBlockKeys(sh.causal, i0, rows, N);
    const float accumulate = n == 0 ? 0.0f : 1.0f;
    stridedBatchMatmul(q + i0 * D, M * D, k, N * D, p, block * N, sh.batch, rows, cols, D, false,
                       true, 1.0f, 0.0f);
    parallelFor(sh.batch * rows, grainFor(cols), [&](int64_t begin, int64_t end) {
      for (int64_t br = begin; br < end; ++br) {
        const int64_t b = br / rows, r = br % rows;
        attentionProbabilityRow(p + b * block * N + r * cols, cols, sh.scale, false, 0, 0, 0.0f,
                                sh.causal ? i0 + r + 1 : cols,
                                attentionBiasRow(scoreBias, sh, b, i0 + r), sh.biasFills);
      }
    });
    stridedBatchMatmul(dout + i0 * E, M * E, v, N * E, g, block * N, sh.batch, rows, cols, E, false,
                       true, 1.0f, 0.0f);
    parallelFor(sh.batch * rows, grainFor(cols), [&](int64_t begin, int64_t end) {
      for (int64_t br = begin; br < end; ++br) {
        const int64_t b = br / rows, r = br % rows;
        const int64_t at = b * block * N + r * cols;
        attentionGradientRow(p + at, g + at, cols, dropout, key,
                             (b * M + i0 + r) * N + sh.indexOffset, sh.dropoutRatio,
                             sh.biasFills ? attentionBiasRow(scoreBias, sh, b, i0 + r) : nullptr);
      }
    });
    stridedBatchMatmul(p, block * N, dout + i0 * E, M * E, dv, N * E, sh.batch, cols, E, rows, true,
                       false, 1.0f, accumulate);
    stridedBatchMatmul(g, block * N, k, N * D, dq + i0 * D, M * D, sh.batch, rows, D, cols, false,
                       false, sh.scale, 0.0f);
    stridedBatchMatmul(g, block * N, q + i0 * D, M * D, dk, N * D, sh.batch, cols, D, rows, true,
                       false, sh.scale, accumulate);
  }
}

void transpose(const float *x, float *y, const TransposeShape &sh) {
  // Walk y in order with an odometer over its index; `stride[i]` is how far x moves when y's
  // axis i advances, so each element costs one add (no div/mod per element).
  const int64_t rank = sh.rank;
  int64_t xStride[kMaxRank], stride[kMaxRank], ydims[kMaxRank];
  int64_t total = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    xStride[i] = total;
    total *= sh.dims[i];
  }
  for (int64_t i = 0; i < rank; ++i) {
    ydims[i] = sh.dims[sh.perm[i]];
    stride[i] = xStride[sh.perm[i]];
  }
  if (total == 0)
    return;
  if (rank == 0) {
    y[0] = x[0];
    return;
  }
  // The innermost y axis as a tight loop; the odometer covers the others. Threads take ranges
  // of y's rows, each starting its odometer at its first row.
  const int64_t inner = ydims[rank - 1], innerStride = stride[rank - 1];
  parallelFor(total / inner, grainFor(inner), [&](int64_t rowBegin, int64_t rowEnd) {
    int64_t index[kMaxRank] = {}, offset = 0;
    for (int64_t i = rank - 2, rest = rowBegin; i >= 0; --i) {
      index[i] = rest % ydims[i];
      rest /= ydims[i];
      offset += index[i] * stride[i];
    }
    for (int64_t row = rowBegin; row < rowEnd; ++row) {
      const float *p = x + offset;
      float *q = y + row * inner;
      for (int64_t j = 0; j < inner; ++j)
        q[j] = p[j * innerStride];
      for (int64_t i = rank - 2; i >= 0; --i) {
        offset += stride[i];
        if (++index[i] < ydims[i])
          break;
        offset -= stride[i] * ydims[i];
        index[i] = 0;
      }
    }
  });
}

void dense(const float *x, const float *w, const float *bias, float *y, int64_t n, int64_t in,
           int64_t out, bool transposeW) {
  gemm(x, w, y, n, out, in, false, transposeW, 0.0f);
  if (bias)
    parallelFor(n, grainFor(out), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        for (int64_t j = 0; j < out; ++j)
          y[i * out + j] += bias[j];
    });
}

void biasGrad(const float *dy, float *db, int64_t outer, int64_t channels, int64_t inner) {
  // One channel's sum stays on one thread, in the sequential order.
  parallelFor(channels, grainFor(outer * inner), [&](int64_t cBegin, int64_t cEnd) {
    for (int64_t c = cBegin; c < cEnd; ++c) {
      double sum = 0.0;
      for (int64_t o = 0; o < outer; ++o) {
        const float *p = dy + (o * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i)
          sum += p[i];
      }
      db[c] = static_cast<float>(sum);
    }
  });
}

// The convolution of one group: channels [g cg, (g+1) cg) of each image, filters
// [g kg, (g+1) kg), as a dense convolution with c = cg, k = kg on offset pointers.
namespace {
Conv2dShape groupShape(const Conv2dShape &sh) {
  Conv2dShape g = sh;
  const int64_t groups = sh.groups > 1 ? sh.groups : 1;
  g.c = sh.c / groups;
  g.k = sh.k / groups;
  g.groups = 1;
  return g;
}
inline int64_t groupsOf(const Conv2dShape &sh) { return sh.groups > 1 ? sh.groups : 1; }
} // namespace

// Depthwise convolutions (one input channel per group, MobileNet's 3x3 layers) skip im2col and
// the GEMM, whose k = r*s and m = the channel multiplier are far too small for it: direct loops
// over one output plane at a time, O(N K OH OW R S) like the GEMM, on every core. Each output
// element sums its taps in (r, s) order from zero, each filter gradient its products image by
// image in double, so results do not depend on the thread count; the workspace goes unused.
namespace {
inline bool isDepthwise(const Conv2dShape &sh) { return sh.groups > 1 && sh.c == sh.groups; }

/// A 1x1 convolution at stride 1 without padding: each image (each group's channels of it) is
/// its own im2col matrix, so the GEMMs read and write the tensors directly, with no workspace
/// (and a null one is allowed). Its im2col tile rows, if any, are ignored.
inline bool isPointwise(const Conv2dShape &sh) {
  return conv2dIsPointwise(sh.r, sh.s, sh.strideH, sh.strideW, sh.padTop, sh.padLeft, sh.h, sh.w,
                           sh.oh, sh.ow);
}

/// A pointwise convolution's products, per image and group, written over `out`: forward,
/// y[img, g][kg, HW] = W_g[kg, cg] x[img, g][cg, HW]; for the data gradient,
/// dx[img, g][cg, HW] = W_g^T[cg, kg] dy[img, g][kg, HW].
void pointwiseProducts(const float *w, const float *in, float *out, const Conv2dShape &sh,
                       bool dataGradient) {
  const int64_t groups = groupsOf(sh), hw = sh.h * sh.w;
  const int64_t cg = sh.c / groups, kg = sh.k / groups;
  const int64_t inRows = dataGradient ? kg : cg, outRows = dataGradient ? cg : kg;
  for (int64_t plane = 0; plane < sh.n * groups; ++plane) // plane = img * groups + group
    gemm(w + plane % groups * kg * cg, in + plane * inRows * hw, out + plane * outRows * hw,
         outRows, hw, inRows, dataGradient, false, 0.0f);
}

/// Visits, for every output row oy, the filter taps (r, s) whose input row
/// iy = oy * strideH - padTop + r * dilationH lies in the image, in row-major tap order:
/// fn(oy, iy, tap = r * S + s, shift, lo, hi), where output columns [lo, hi) read input column
/// ox * strideW + shift (insideColumns). The forward pass and the data gradient share it.
template <typename Fn> void forEachDepthwiseTap(const Conv2dShape &sh, Fn fn) {
  for (int64_t oy = 0; oy < sh.oh; ++oy)
    for (int64_t r = 0; r < sh.r; ++r) {
      const int64_t iy = oy * sh.strideH - sh.padTop + r * sh.dilationH;
      if (iy < 0 || iy >= sh.h)
        continue;
      for (int64_t s = 0; s < sh.s; ++s) {
        int64_t lo, hi;
        insideColumns(sh, s, lo, hi);
        fn(oy, iy, r * sh.s + s, s * sh.dilationW - sh.padLeft, lo, hi);
      }
    }
}

void depthwiseForward(const float *x, const float *w, float *y, const Conv2dShape &sh) {
  const int64_t multiplier = sh.k / sh.c, hw = sh.h * sh.w, ohw = sh.oh * sh.ow;
  parallelFor(sh.n * sh.k, grainFor(ohw * sh.r * sh.s), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t img = plane / sh.k, k = plane % sh.k;
      const float *in = x + (img * sh.c + k / multiplier) * hw;
      const float *filter = w + k * sh.r * sh.s;
      float *out = y + plane * ohw;
      fillZero(out, ohw);
      forEachDepthwiseTap(sh, [&](int64_t oy, int64_t iy, int64_t tap, int64_t shift, int64_t lo,
                                  int64_t hi) {
        float *row = out + oy * sh.ow;
        const float *inRow = in + iy * sh.w;
        const float weight = filter[tap];
        for (int64_t ox = lo; ox < hi; ++ox)
          row[ox] += weight * inRow[ox * sh.strideW + shift];
      });
    }
  });
}

void depthwiseBackwardData(const float *dy, const float *w, float *dx, const Conv2dShape &sh) {
  const int64_t multiplier = sh.k / sh.c, hw = sh.h * sh.w, ohw = sh.oh * sh.ow;
  parallelFor(sh.n * sh.c, grainFor(multiplier * ohw * sh.r * sh.s),
              [&](int64_t begin, int64_t end) {
                for (int64_t plane = begin; plane < end; ++plane) {
                  const int64_t img = plane / sh.c, c = plane % sh.c;
                  float *out = dx + plane * hw;
                  fillZero(out, hw);
                  for (int64_t m = 0; m < multiplier; ++m) {
                    const int64_t k = c * multiplier + m;
                    const float *grad = dy + (img * sh.k + k) * ohw;
                    const float *filter = w + k * sh.r * sh.s;
                    forEachDepthwiseTap(sh, [&](int64_t oy, int64_t iy, int64_t tap,
                                                int64_t shift, int64_t lo, int64_t hi) {
                      float *outRow = out + iy * sh.w;
                      const float *gradRow = grad + oy * sh.ow;
                      const float weight = filter[tap];
                      for (int64_t ox = lo; ox < hi; ++ox)
                        outRow[ox * sh.strideW + shift] += weight * gradRow[ox];
                    });
                  }
                }
              });
}

void depthwiseBackwardFilter(const float *dy, const float *x, float *dw, const Conv2dShape &sh) {
  const int64_t multiplier = sh.k / sh.c, hw = sh.h * sh.w, ohw = sh.oh * sh.ow;
  parallelFor(sh.k, grainFor(sh.n * ohw * sh.r * sh.s), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k)
      for (int64_t r = 0; r < sh.r; ++r)
        for (int64_t s = 0; s < sh.s; ++s) {
          const int64_t shift = s * sh.dilationW - sh.padLeft;
          int64_t lo, hi;
          insideColumns(sh, s, lo, hi);
          double total = 0.0;
          for (int64_t img = 0; img < sh.n; ++img) {
            const float *in = x + (img * sh.c + k / multiplier) * hw;
            const float *grad = dy + (img * sh.k + k) * ohw;
            for (int64_t oy = 0; oy < sh.oh; ++oy) {
              const int64_t iy = oy * sh.strideH - sh.padTop + r * sh.dilationH;
              if (iy < 0 || iy >= sh.h)
                continue;
              const float *inRow = in + iy * sh.w + lo * sh.strideW + shift,
                          *gradRow = grad + oy * sh.ow + lo;
              double sums[kSumLanes] = {};
              forEachInLanes(hi - lo, [&](int64_t i, int lane) {
                sums[lane] += double(gradRow[i]) * double(inRow[i * sh.strideW]);
              });
              total += laneTotal(sums);
            }
          }
          dw[(k * sh.r + r) * sh.s + s] = static_cast<float>(total);
        }
  });
}

/// y[plane] += bias[plane % channels] for every plane of `planeSize` elements: the bias of a
/// convolution's output (planes n x k) or of a transposed convolution's (n x c).
void addChannelBias(float *y, const float *bias, int64_t planes, int64_t channels,
                    int64_t planeSize) {
  parallelFor(planes, grainFor(planeSize), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane)
      for (int64_t i = 0; i < planeSize; ++i)
        y[plane * planeSize + i] += bias[plane % channels];
  });
}
} // namespace

// Every convolution kernel walks the output rows in tiles of conv2dTileRows(sh.tileRows, oh)
// rows (all of them unless graphc tiled the op to fit a budget), staging one tile's im2col
// matrix in the workspace: C*R*S x rows*OW floats. Each tile's GEMM writes (or reads) a column
// block of the [K, OH*OW] output with row stride OH*OW. Forward and backward-data results do not
// depend on the tiling (each output element's dot product is the same); backward-filter sums
// the tiles' partial products in tile order, like the images.
void conv2d(const float *x, const float *w, const float *bias, float *y, const Conv2dShape &sh,
            float *workspace) {
  if (isDepthwise(sh)) {
    depthwiseForward(x, w, y, sh);
    if (bias)
      addChannelBias(y, bias, sh.n * sh.k, sh.k, sh.oh * sh.ow);
    return;
  }
  const Conv2dShape g = groupShape(sh);
  const int64_t groups = groupsOf(sh);
  const int64_t crs = g.c * sh.r * sh.s, ohw = sh.oh * sh.ow;
  if (isPointwise(sh)) {
    pointwiseProducts(w, x, y, sh, /*dataGradient=*/false);
    if (bias)
      addChannelBias(y, bias, sh.n * sh.k, sh.k, ohw);
    return;
  }
  const int64_t tile = conv2dTileRows(sh.tileRows, sh.oh);
  for (int64_t img = 0; img < sh.n; ++img) {
    float *yImg = y + img * sh.k * ohw;
    for (int64_t grp = 0; grp < groups; ++grp)
      for (int64_t oy0 = 0; oy0 < sh.oh; oy0 += tile) {
        const int64_t rows = std::min(tile, sh.oh - oy0), cols = rows * sh.ow;
        im2colRows(x + (img * sh.c + grp * g.c) * sh.h * sh.w, workspace, g, oy0, rows);
        gemm(w + grp * g.k * crs, workspace, yImg + grp * g.k * ohw + oy0 * sh.ow, g.k, cols, crs,
             false, false, 0.0f, crs, cols, ohw);
      }
  }
  if (bias)
    addChannelBias(y, bias, sh.n * sh.k, sh.k, ohw);
}

void conv2dBackwardData(const float *dy, const float *w, float *dx, const Conv2dShape &sh,
                        float *workspace, const float *bias) {
  if (isDepthwise(sh)) {
    depthwiseBackwardData(dy, w, dx, sh);
    if (bias)
      addChannelBias(dx, bias, sh.n * sh.c, sh.c, sh.h * sh.w);
    return;
  }
  const Conv2dShape g = groupShape(sh);
  const int64_t groups = groupsOf(sh);
  const int64_t crs = g.c * sh.r * sh.s, ohw = sh.oh * sh.ow, hw = sh.h * sh.w;
  if (isPointwise(sh)) {
    pointwiseProducts(w, dy, dx, sh, /*dataGradient=*/true);
    if (bias)
      addChannelBias(dx, bias, sh.n * sh.c, sh.c, hw);
    return;
  }
  const int64_t tile = conv2dTileRows(sh.tileRows, sh.oh);
  for (int64_t img = 0; img < sh.n; ++img) {
    for (int64_t grp = 0; grp < groups; ++grp) {
      float *dxGroup = dx + (img * sh.c + grp * g.c) * hw;
      fillZero(dxGroup, g.c * hw);
      for (int64_t oy0 = 0; oy0 < sh.oh; oy0 += tile) {
        const int64_t rows = std::min(tile, sh.oh - oy0), cols = rows * sh.ow;
        // col[crs, cols] = W_g^T[crs, kg] * dy_g[kg, the tile's columns]
        gemm(w + grp * g.k * crs, dy + (img * sh.k + grp * g.k) * ohw + oy0 * sh.ow, workspace,
             crs, cols, g.k, true, false, 0.0f, crs, ohw, cols);
        col2imRowsAdd(workspace, dxGroup, g, oy0, rows);
      }
    }
  }
  if (bias)
    addChannelBias(dx, bias, sh.n * sh.c, sh.c, hw);
}

void conv2dBackwardFilter(const float *dy, const float *x, float *dw, const Conv2dShape &sh,
                          float *workspace) {
  if (isDepthwise(sh)) {
    depthwiseBackwardFilter(dy, x, dw, sh);
    return;
  }
  const Conv2dShape g = groupShape(sh);
  const int64_t groups = groupsOf(sh);
  const int64_t crs = g.c * sh.r * sh.s, ohw = sh.oh * sh.ow;
  if (sh.n <= 0)
    fillZero(dw, sh.k * crs);
  if (isPointwise(sh)) {
    // dw_g[kg, cg] (+)= dy[img, group][kg, HW] x[img, group]^T[HW, cg]; beta = 0 on the first.
    for (int64_t img = 0; img < sh.n; ++img)
      for (int64_t grp = 0; grp < groups; ++grp)
        gemm(dy + (img * sh.k + grp * g.k) * ohw, x + (img * sh.c + grp * g.c) * ohw,
             dw + grp * g.k * g.c, g.k, g.c, ohw, false, true, img == 0 ? 0.0f : 1.0f);
    return;
  }
  const int64_t tile = conv2dTileRows(sh.tileRows, sh.oh);
  for (int64_t img = 0; img < sh.n; ++img)
    for (int64_t grp = 0; grp < groups; ++grp)
      for (int64_t oy0 = 0; oy0 < sh.oh; oy0 += tile) {
        const int64_t rows = std::min(tile, sh.oh - oy0), cols = rows * sh.ow;
        im2colRows(x + (img * sh.c + grp * g.c) * sh.h * sh.w, workspace, g, oy0, rows);
        // dw_g[kg, crs] (+)= dy_g[kg, tile] * col^T[tile, crs]; beta = 0 on the first product.
        gemm(dy + (img * sh.k + grp * g.k) * ohw + oy0 * sh.ow, workspace, dw + grp * g.k * crs,
             g.k, crs, cols, false, true, img == 0 && oy0 == 0 ? 0.0f : 1.0f, ohw, cols, crs);
      }
}

void maxPool2d(const float *x, float *y, const Pool2dShape &sh) {
  parallelFor(sh.n * sh.c, grainFor(sh.h * sh.w), [&](int64_t begin, int64_t end) {
    forEachPoolWindow(x, sh, begin, end, [&](int64_t o, int64_t arg) {
      y[o] = arg < 0 ? -std::numeric_limits<float>::infinity() : x[arg];
    });
  });
}

void maxPool2dBackward(const float *dy, const float *x, float *dx, const Pool2dShape &sh) {
  // A plane's windows only reach into that plane, so planes split over threads freely; within
  // one, overlapping windows add in the sequential order.
  parallelFor(sh.n * sh.c, grainFor(sh.h * sh.w), [&](int64_t begin, int64_t end) {
    fillZero(dx + begin * sh.h * sh.w, (end - begin) * sh.h * sh.w);
    forEachPoolWindow(x, sh, begin, end, [&](int64_t o, int64_t arg) {
      if (arg >= 0)
        dx[arg] += dy[o];
    });
  });
}

namespace {
// The divisor and input range of one average-pooling window (pool_window.h, shared with the
// CUDA target's generated kernels).
AvgPoolWindow avgWindow(const Pool2dShape &sh, int64_t oy, int64_t ox, bool countIncludePad) {
  return avgPoolWindow(sh.h, sh.w, sh.oh, sh.ow, sh.kernelH, sh.kernelW, sh.strideH, sh.strideW,
                       sh.padTop, sh.padLeft, oy, ox, countIncludePad);
}
} // namespace

void avgPool2d(const float *x, float *y, const Pool2dShape &sh, bool countIncludePad) {
  parallelFor(sh.n * sh.c, grainFor(sh.h * sh.w), [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const float *img = x + nc * sh.h * sh.w;
      for (int64_t oy = 0; oy < sh.oh; ++oy)
        for (int64_t ox = 0; ox < sh.ow; ++ox) {
          const AvgPoolWindow win = avgWindow(sh, oy, ox, countIncludePad);
          // PyTorch's CPU avg_pool2d sums in the scalar type, row by row.
          float sum = 0.0f;
          for (int64_t iy = win.yBegin; iy < win.yEnd; ++iy)
            for (int64_t ix = win.xBegin; ix < win.xEnd; ++ix)
              sum += img[iy * sh.w + ix];
          y[(nc * sh.oh + oy) * sh.ow + ox] =
              win.divisor > 0 ? sum / static_cast<float>(win.divisor) : 0.0f;
        }
    }
  });
}

void avgPool2dBackward(const float *dy, float *dx, const Pool2dShape &sh, bool countIncludePad) {
  parallelFor(sh.n * sh.c, grainFor(sh.h * sh.w), [&](int64_t begin, int64_t end) {
    fillZero(dx + begin * sh.h * sh.w, (end - begin) * sh.h * sh.w);
    for (int64_t nc = begin; nc < end; ++nc) {
      float *img = dx + nc * sh.h * sh.w;
      for (int64_t oy = 0; oy < sh.oh; ++oy)
        for (int64_t ox = 0; ox < sh.ow; ++ox) {
          const AvgPoolWindow win = avgWindow(sh, oy, ox, countIncludePad);
          if (win.divisor <= 0)
            continue;
          const float g = dy[(nc * sh.oh + oy) * sh.ow + ox] / static_cast<float>(win.divisor);
          for (int64_t iy = win.yBegin; iy < win.yEnd; ++iy)
            for (int64_t ix = win.xBegin; ix < win.xEnd; ++ix)
              img[iy * sh.w + ix] += g;
        }
    }
  });
}

void batchNorm(const float *x, const float *scale, const float *bias, const float *runningMean,
               const float *runningVar, float *y, float *newRunningMean, float *newRunningVar,
               float *savedMean, float *savedInvstd, int64_t n, int64_t c, int64_t inner,
               float epsilon, float momentum, bool training) {
  const int64_t count = n * inner;
  parallelFor(c, grainFor(count), [&](int64_t chBegin, int64_t chEnd) {
    for (int64_t ch = chBegin; ch < chEnd; ++ch) {
      double mean, var;
      if (training) {
        double sums[kSumLanes] = {}, squares[kSumLanes] = {};
        for (int64_t b = 0; b < n; ++b) {
          const float *p = x + (b * c + ch) * inner;
          forEachInLanes(inner, [&](int64_t i, int lane) { sums[lane] += p[i]; });
        }
        mean = count > 0 ? laneTotal(sums) / static_cast<double>(count) : 0.0;
        for (int64_t b = 0; b < n; ++b) {
          const float *p = x + (b * c + ch) * inner;
          forEachInLanes(inner, [&](int64_t i, int lane) {
            const double d = p[i] - mean;
            squares[lane] += d * d;
          });
        }
        const double varSum = laneTotal(squares);
        var = count > 0 ? varSum / static_cast<double>(count) : 0.0;
        const double unbiased = count > 1 ? varSum / static_cast<double>(count - 1) : var;
        const double m = momentum;
        const double oldMean = runningMean[ch], oldVar = runningVar[ch];
        newRunningMean[ch] = static_cast<float>(m * mean + (1.0 - m) * oldMean);
        newRunningVar[ch] = static_cast<float>(m * unbiased + (1.0 - m) * oldVar);
      } else {
        mean = runningMean[ch];
        var = runningVar[ch];
        newRunningMean[ch] = runningMean[ch];
        newRunningVar[ch] = runningVar[ch];
      }
      const double invstd = 1.0 / std::sqrt(var + static_cast<double>(epsilon));
      savedMean[ch] = static_cast<float>(mean);
      savedInvstd[ch] = static_cast<float>(invstd);
    }
  });
  // From the saved float32 statistics: exactly what a rematerialized batch norm recomputes.
  batchNormApply(x, scale, bias, savedMean, savedInvstd, y, n, c, inner);
}

void batchNormApply(const float *x, const float *scale, const float *bias,
                    const float *savedMean, const float *savedInvstd, float *y, int64_t n,
                    int64_t c, int64_t inner) {
  parallelFor(c, grainFor(n * inner), [&](int64_t chBegin, int64_t chEnd) {
    for (int64_t ch = chBegin; ch < chEnd; ++ch) {
      float alpha, beta;
      batchNormAffine(savedMean[ch], savedInvstd[ch], scale[ch], bias[ch], &alpha, &beta);
      for (int64_t b = 0; b < n; ++b) {
        const float *p = x + (b * c + ch) * inner;
        float *q = y + (b * c + ch) * inner;
        for (int64_t i = 0; i < inner; ++i)
          q[i] = p[i] * alpha + beta;
      }
    }
  });
}

void batchNormBackward(const float *dy, const float *x, const float *scale,
                       const float *savedMean, const float *savedInvstd, float *dx,
                       float *dscale, float *dbias, int64_t n, int64_t c, int64_t inner,
                       bool training) {
  const int64_t count = n * inner;
  parallelFor(c, grainFor(count), [&](int64_t chBegin, int64_t chEnd) {
    for (int64_t ch = chBegin; ch < chEnd; ++ch) {
      const double mean = savedMean[ch], invstd = savedInvstd[ch];
      double sums[kSumLanes] = {}, dots[kSumLanes] = {};
      for (int64_t b = 0; b < n; ++b) {
        const float *g = dy + (b * c + ch) * inner;
        const float *p = x + (b * c + ch) * inner;
        forEachInLanes(inner, [&](int64_t i, int lane) {
          sums[lane] += g[i];
          dots[lane] += (p[i] - mean) * g[i];
        });
      }
      const double sum = laneTotal(sums), dot = laneTotal(dots);
      dbias[ch] = static_cast<float>(sum);
      dscale[ch] = static_cast<float>(dot * invstd);
      const double w = scale[ch];
      if (training && count > 0) {
        // PyTorch: k = dot invstd^2 / N; dx = (dy - sum/N - (x - mean) k) invstd w.
        const double k = dot * invstd * invstd / static_cast<double>(count);
        const double gradMean = sum / static_cast<double>(count);
        for (int64_t b = 0; b < n; ++b) {
          const float *g = dy + (b * c + ch) * inner;
          const float *p = x + (b * c + ch) * inner;
          float *q = dx + (b * c + ch) * inner;
          for (int64_t i = 0; i < inner; ++i)
            q[i] = static_cast<float>((g[i] - gradMean - (p[i] - mean) * k) * invstd * w);
        }
      } else {
        const float f = static_cast<float>(invstd * w);
        for (int64_t b = 0; b < n; ++b) {
          const float *g = dy + (b * c + ch) * inner;
          float *q = dx + (b * c + ch) * inner;
          for (int64_t i = 0; i < inner; ++i)
            q[i] = g[i] * f;
        }
      }
    }
  });
}

void layerNorm(const float *x, const float *scale, const float *bias, float *y,
               float *savedMean, float *savedInvstd, int64_t rows, int64_t d, float epsilon) {
  parallelFor(rows, grainFor(d), [&](int64_t rBegin, int64_t rEnd) {
    for (int64_t r = rBegin; r < rEnd; ++r) {
      const float *p = x + r * d;
      float *q = y + r * d;
      double sum = 0.0;
      for (int64_t i = 0; i < d; ++i)
        sum += p[i];
      const double mean = d > 0 ? sum / static_cast<double>(d) : 0.0;
      double varSum = 0.0;
      for (int64_t i = 0; i < d; ++i) {
        const double dev = p[i] - mean;
        varSum += dev * dev;
      }
      const double var = d > 0 ? varSum / static_cast<double>(d) : 0.0;
      const double invstd = 1.0 / std::sqrt(var + static_cast<double>(epsilon));
      savedMean[r] = static_cast<float>(mean);
      savedInvstd[r] = static_cast<float>(invstd);
      for (int64_t i = 0; i < d; ++i)
        q[i] = static_cast<float>((p[i] - mean) * invstd * scale[i] + bias[i]);
    }
  });
}

void layerNormBackward(const float *dy, const float *x, const float *scale,
                       const float *savedMean, const float *savedInvstd, float *dx,
                       float *dscale, float *dbias, int64_t rows, int64_t d) {
  // The parameter gradients sum over rows in double, column by column (strided, but no
  // scratch is needed and the order is fixed); skipped when nothing reads them (null: a group
  // norm's unit scale and zero bias).
  if (dscale && dbias)
    parallelFor(d, grainFor(rows), [&](int64_t iBegin, int64_t iEnd) {
      for (int64_t i = iBegin; i < iEnd; ++i) {
        double sumDy = 0.0, sumDyXhat = 0.0;
        for (int64_t r = 0; r < rows; ++r) {
          const double g = dy[r * d + i];
          sumDy += g;
          sumDyXhat += g * (x[r * d + i] - static_cast<double>(savedMean[r])) * savedInvstd[r];
        }
        dscale[i] = static_cast<float>(sumDyXhat);
        dbias[i] = static_cast<float>(sumDy);
      }
    });
  parallelFor(rows, grainFor(d), [&](int64_t rBegin, int64_t rEnd) {
    for (int64_t r = rBegin; r < rEnd; ++r) {
      const float *g = dy + r * d;
      const float *p = x + r * d;
      float *q = dx + r * d;
      const double mean = savedMean[r], invstd = savedInvstd[r];
      double sumG = 0.0, sumGXhat = 0.0;
      for (int64_t i = 0; i < d; ++i) {
        const double xhat = (p[i] - mean) * invstd;
        const double gi = static_cast<double>(g[i]) * scale[i];
        sumG += gi;
        sumGXhat += gi * xhat;
      }
      const double meanG = d > 0 ? sumG / static_cast<double>(d) : 0.0;
      const double meanGXhat = d > 0 ? sumGXhat / static_cast<double>(d) : 0.0;
      for (int64_t i = 0; i < d; ++i) {
        const double xhat = (p[i] - mean) * invstd;
        q[i] = static_cast<float>(
            invstd * (static_cast<double>(g[i]) * scale[i] - meanG - xhat * meanGXhat));
      }
    }
  });
}

void rmsNorm(const float *x, const float *scale, float *y, float *savedInvstd, int64_t rows,
             int64_t d, float epsilon) {
  parallelFor(rows, grainFor(d), [&](int64_t rBegin, int64_t rEnd) {
    for (int64_t r = rBegin; r < rEnd; ++r) {
      const float *p = x + r * d;
      float *q = y + r * d;
      double squares = 0.0;
      for (int64_t i = 0; i < d; ++i)
        squares += static_cast<double>(p[i]) * p[i];
      const double meanSquare = d > 0 ? squares / static_cast<double>(d) : 0.0;
      const double invstd = 1.0 / std::sqrt(meanSquare + static_cast<double>(epsilon));
      savedInvstd[r] = static_cast<float>(invstd);
      for (int64_t i = 0; i < d; ++i)
        q[i] = static_cast<float>(p[i] * invstd * scale[i]);
    }
  });
}

void rmsNormBackward(const float *dy, const float *x, const float *scale, const float *savedInvstd,
                     float *dx, float *dscale, int64_t rows, int64_t d) {
  // As layerNormBackward: the scale gradient column by column in double, then dx by rows.
  parallelFor(d, grainFor(rows), [&](int64_t iBegin, int64_t iEnd) {
    for (int64_t i = iBegin; i < iEnd; ++i) {
      double sumDyXhat = 0.0;
      for (int64_t r = 0; r < rows; ++r)
        sumDyXhat += static_cast<double>(dy[r * d + i]) * x[r * d + i] * savedInvstd[r];
      dscale[i] = static_cast<float>(sumDyXhat);
    }
  });
  parallelFor(rows, grainFor(d), [&](int64_t rBegin, int64_t rEnd) {
    for (int64_t r = rBegin; r < rEnd; ++r) {
      const float *g = dy + r * d;
      const float *p = x + r * d;
      float *q = dx + r * d;
      const double invstd = savedInvstd[r];
      double sumGXhat = 0.0;
      for (int64_t i = 0; i < d; ++i)
        sumGXhat += static_cast<double>(g[i]) * scale[i] * (p[i] * invstd);
      const double meanGXhat = d > 0 ? sumGXhat / static_cast<double>(d) : 0.0;
      for (int64_t i = 0; i < d; ++i)
        q[i] = static_cast<float>(
            invstd * (static_cast<double>(g[i]) * scale[i] - p[i] * invstd * meanGXhat));
    }
  });
}

void concatInto(const float *src, float *dst, int64_t outer, int64_t part, int64_t total,
                int64_t offset, int64_t inner) {
  parallelFor(outer, grainFor(part * inner), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o)
      std::memcpy(dst + (o * total + offset) * inner, src + o * part * inner,
                  static_cast<size_t>(part * inner) * sizeof(float));
  });
}

void sliceFrom(const float *src, float *dst, int64_t outer, int64_t total, int64_t offset,
               int64_t part, int64_t inner) {
  parallelFor(outer, grainFor(part * inner), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o)
      std::memcpy(dst + o * part * inner, src + (o * total + offset) * inner,
                  static_cast<size_t>(part * inner) * sizeof(float));
  });
}

// The mask (dropout_mask.h) is shared with the CUDA target's generated kernels.
bool dropoutKeep(uint64_t seed, uint64_t opId, int64_t step, int64_t index, float ratio) {
  return dropoutKeeps(dropoutKey(seed, opId, step), index, ratio);
}

void dropout(const float *x, float *y, int64_t n, float ratio, uint64_t seed, uint64_t opId,
             float step, int64_t indexOffset, int64_t maskRepeat, int64_t maskInner) {
  const uint64_t key = dropoutKey(seed, opId, static_cast<int64_t>(step));
  const float scale = 1.0f / (1.0f - ratio);
  forEachElement(n, [&](int64_t i) {
    const float kept = x[i] * scale; // read whatever the mask: a select, not a random branch
    y[i] = dropoutKeeps(key, maskDrawIndex(i, maskRepeat, maskInner) + indexOffset, ratio) ? kept
                                                                                           : 0.0f;
  });
}

void dropoutBackward(const float *dy, float *dx, int64_t n, float ratio, uint64_t seed,
                     uint64_t opId, float step, int64_t indexOffset, int64_t maskRepeat,
                     int64_t maskInner) {
  dropout(dy, dx, n, ratio, seed, opId, step, indexOffset, maskRepeat, maskInner);
}

void randomNormal(float *y, int64_t n, float mean, float scale, uint64_t seed, uint64_t opId,
                  float step, int64_t indexOffset) {
  const uint64_t key = dropoutKey(seed, opId, static_cast<int64_t>(step));
  forEachElement(n, [&](int64_t i) { y[i] = mean + scale * normalDraw(key, i + indexOffset); });
}

void randomUniform(float *y, int64_t n, float low, float high, uint64_t seed, uint64_t opId,
                   float step, int64_t indexOffset, int64_t repeat) {
  const uint64_t key = dropoutKey(seed, opId, static_cast<int64_t>(step));
  const float width = high - low;
  forEachElement(
      n, [&](int64_t i) { y[i] = low + width * uniformDraw(key, i / repeat + indexOffset); });
}

void randomAffine(const float *x, float *y, int64_t n, int64_t c, int64_t h, int64_t w,
                  const RandomAffineParams &params, uint64_t seed, uint64_t opId, float step,
                  int64_t sampleOffset) {
  const uint64_t key = dropoutKey(seed, opId, static_cast<int64_t>(step));
  const int64_t plane = h * w;
  // One channel plane per task; its sample's map is recomputed per plane (cheap: a few draws).
  parallelFor(n * c, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      float m[6];
      randomAffineMap(params, key, p / c + sampleOffset, h, w, m);
      const float *in = x + p * plane;
      float *out = y + p * plane;
      for (int64_t yy = 0; yy < h; ++yy)
        for (int64_t xx = 0; xx < w; ++xx)
          out[yy * w + xx] = randomAffinePixel(params, m, in, h, w, yy, xx);
    }
  });
}

void clip(const float *x, float *y, int64_t n, float lo, float hi) {
  forEachElement(n, [&](int64_t i) {
    const float v = x[i];
    y[i] = std::isnan(v) ? v : std::min(std::max(v, lo), hi);
  });
}

void clipBackward(const float *dy, const float *y, float *dx, int64_t n, float lo, float hi) {
  // dy is read whatever the mask, so the loop is a vector select: reading it only where the
  // mask passes made it a branch per element (mispredicted at random), 4x clip's own time.
  forEachElement(n, [&](int64_t i) {
    const float g = dy[i], v = y[i];
    dx[i] = ((v > lo) & (v < hi)) ? g : 0.0f;
  });
}

void scale(const float *x, float *y, int64_t n, float factor, float offset) {
  forEachElement(n, [&](int64_t i) { y[i] = factor * x[i] + offset; });
}

void fill(float *y, int64_t n, float value) { std::fill(y, y + n, value); }

void mul(const float *a, const float *b, float *y, int64_t n) {
  forEachElement(n, [&](int64_t i) { y[i] = a[i] * b[i]; });
}

void broadcastMul(const float *a, const float *b, float *y, int64_t rows, int64_t n) {
  parallelFor(rows, grainFor(n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t i = 0; i < n; ++i)
        y[r * n + i] = a[r * n + i] * b[i];
  });
}

void rotary(const float *x, const float *cos, const float *sin, float *y, int64_t rows, int64_t n,
            int64_t d, bool transpose) {
  const int64_t half = d / 2;
  parallelFor(rows, grainFor(n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *p = x + r * n;
      float *q = y + r * n;
      for (int64_t i = 0; i < n; ++i) {
        const bool first = i % d < half;
        const float rotated =
            transpose ? (first ? p[i + half] * sin[i + half] : -(p[i - half] * sin[i - half]))
                      : (first ? -p[i + half] : p[i - half]) * sin[i];
        q[i] = p[i] * cos[i] + rotated;
      }
    }
  });
}

namespace {
/// `fn` called with the activation `kind` as a compile-time constant, so that the element loops
/// inline one formula instead of calling the switch of activationValue per element (a SiLU's
/// forward and backward loops took 2.2x as long so, bench/norm_unet_step_time.py). The values
/// are those of the switch: the same expressions, only inlined.
template <typename Fn> void withActivationKind(Activation kind, Fn &&fn) {
  using K = Activation;
  switch (kind) {
  case K::Gelu:
    return fn(std::integral_constant<K, K::Gelu>{});
  case K::GeluTanh:
    return fn(std::integral_constant<K, K::GeluTanh>{});
  case K::Elu:
    return fn(std::integral_constant<K, K::Elu>{});
  case K::Selu:
    return fn(std::integral_constant<K, K::Selu>{});
  case K::Silu:
    return fn(std::integral_constant<K, K::Silu>{});
  case K::Softplus:
    return fn(std::integral_constant<K, K::Softplus>{});
  case K::Softsign:
    return fn(std::integral_constant<K, K::Softsign>{});
  case K::LeakyRelu:
    return fn(std::integral_constant<K, K::LeakyRelu>{});
  case K::Exp:
    return fn(std::integral_constant<K, K::Exp>{});
  case K::Log:
    return fn(std::integral_constant<K, K::Log>{});
  case K::Pow:
    return fn(std::integral_constant<K, K::Pow>{});
  case K::Abs:
    return fn(std::integral_constant<K, K::Abs>{});
  case K::Equal:
    return fn(std::integral_constant<K, K::Equal>{});
  case K::Greater:
    return fn(std::integral_constant<K, K::Greater>{});
  }
  fn(kind); // (an unknown kind: the switch per element, as activationValue has it)
}
} // namespace

void activation(Activation kind, float alpha, const float *x, float *y, int64_t n) {
  withActivationKind(kind, [&](auto constantKind) {
    forEachElement(n, [&](int64_t i) { y[i] = activationValue(constantKind, alpha, x[i]); });
  });
}

void activationBackward(Activation kind, float alpha, const float *dy, const float *x, float *dx,
                        int64_t n) {
  withActivationKind(kind, [&](auto constantKind) {
    forEachElement(
        n, [&](int64_t i) { dx[i] = dy[i] * activationDerivative(constantKind, alpha, x[i]); });
  });
}

void embedding(const float *indices, const float *table, float *rows, int64_t count,
               int64_t vocabulary, int64_t features) {
  parallelFor(count, grainFor(features), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t row = embeddingRow(indices[i], vocabulary);
      float *out = rows + i * features;
      if (row < 0)
        std::fill(out, out + features, 0.0f);
      else
        std::copy_n(table + row * features, features, out);
    }
  });
}

void embeddingBackward(const float *grad, const float *indices, float *dtable, int64_t count,
                       int64_t vocabulary, int64_t features) {
  std::fill(dtable, dtable + vocabulary * features, 0.0f);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t row = embeddingRow(indices[i], vocabulary);
    if (row < 0)
      continue;
    float *out = dtable + row * features;
    const float *g = grad + i * features;
    for (int64_t f = 0; f < features; ++f)
      out[f] += g[f];
  }
}

void lossScale(const float *x, float *y, int64_t n, float halvings, bool inverse) {
  const float scale = std::ldexp(1.0f, inverse ? int(halvings) - 16 : 16 - int(halvings));
  forEachElement(n, [&](int64_t i) { y[i] = x[i] * scale; });
}

bool allFinite(const float *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i]))
      return false;
  return true;
}

void updateLossScale(float *halvings, float *cleanSteps, float *skippedSteps, float finite,
                     int64_t growthInterval) {
  if (finite == 0.0f) {
    *halvings += 1.0f;
    *cleanSteps = 0.0f;
    *skippedSteps += 1.0f;
    return;
  }
  *cleanSteps += 1.0f;
  if (*cleanSteps >= float(growthInterval)) {
    *halvings = std::max(*halvings - 1.0f, -8.0f);
    *cleanSteps = 0.0f;
  }
}

float halfToFloat(HalfFormat format, uint16_t bits) {
  if (format == HalfFormat::F16) {
    _Float16 h;
    std::memcpy(&h, &bits, sizeof(h));
    return static_cast<float>(h);
  }
  // bf16 is the upper half of an f32.
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof(f));
  return f;
}

uint16_t floatToHalf(HalfFormat format, float value) {
  if (format == HalfFormat::F16) {
    _Float16 h = static_cast<_Float16>(value); // IEEE round to nearest even, overflow -> inf
    uint16_t bits;
    std::memcpy(&bits, &h, sizeof(bits));
    return bits;
  }
  uint32_t wide;
  std::memcpy(&wide, &value, sizeof(wide));
  if ((wide & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((wide >> 16) | 0x40u); // a quiet NaN, sign kept
  // Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate.
  wide += 0x7fffu + ((wide >> 16) & 1u);
  return static_cast<uint16_t>(wide >> 16);
}

void widenHalf(HalfFormat format, const uint16_t *src, float *dst, int64_t n) {
  forEachElement(n, [&](int64_t i) { dst[i] = halfToFloat(format, src[i]); });
}

void narrowHalf(HalfFormat format, const float *src, uint16_t *dst, int64_t n) {
  forEachElement(n, [&](int64_t i) { dst[i] = floatToHalf(format, src[i]); });
}

void convertHalf(HalfFormat from, const uint16_t *src, HalfFormat to, uint16_t *dst, int64_t n) {
  forEachElement(n, [&](int64_t i) { dst[i] = floatToHalf(to, halfToFloat(from, src[i])); });
}

void copyBytes(const void *src, void *dst, uint64_t bytes) { std::memcpy(dst, src, bytes); }

void add(const float *a, const float *b, float *y, int64_t n) {
  forEachElement(n, [&](int64_t i) { y[i] = a[i] + b[i]; });
}

void relu(const float *x, float *y, int64_t n) {
  // NaN passes through, as with PyTorch's relu.
  forEachElement(n, [&](int64_t i) { y[i] = x[i] < 0.0f ? 0.0f : x[i]; });
}

void reluBackward(const float *dy, const float *y, float *dx, int64_t n) {
  // dy is read whatever the mask: a vector select, not a branch per element (clipBackward).
  forEachElement(n, [&](int64_t i) {
    const float g = dy[i];
    dx[i] = y[i] > 0.0f ? g : 0.0f;
  });
}

void sigmoid(const float *x, float *y, int64_t n) {
  forEachElement(n, [&](int64_t i) {
    y[i] = sigmoidOf(x[i]); // elementwise_math.h
  });
}

void sigmoidBackward(const float *dy, const float *y, float *dx, int64_t n) {
  forEachElement(n, [&](int64_t i) { dx[i] = dy[i] * y[i] * (1.0f - y[i]); });
}

void tanhForward(const float *x, float *y, int64_t n) {
  forEachElement(n, [&](int64_t i) { y[i] = std::tanh(x[i]); });
}

void tanhBackward(const float *dy, const float *y, float *dx, int64_t n) {
  forEachElement(n, [&](int64_t i) { dx[i] = dy[i] * (1.0f - y[i] * y[i]); });
}

void softmax(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner) {
  parallelFor(outer, grainFor(dim * inner), [&](int64_t oBegin, int64_t oEnd) {
    for (int64_t o = oBegin; o < oEnd; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const float *xs = x + o * dim * inner + i;
        float *ys = y + o * dim * inner + i;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t d = 0; d < dim; ++d)
          mx = std::max(mx, xs[d * inner]);
        double sum = 0.0;
        for (int64_t d = 0; d < dim; ++d) {
          const float e = std::exp(xs[d * inner] - mx);
          ys[d * inner] = e;
          sum += e;
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t d = 0; d < dim; ++d)
          ys[d * inner] *= inv;
      }
  });
}

void softmaxCausal(const float *x, float *y, int64_t rows, int64_t queries, int64_t keys) {
  parallelFor(rows, grainFor(keys), [&](int64_t rBegin, int64_t rEnd) {
    for (int64_t r = rBegin; r < rEnd; ++r) {
      const float *xs = x + r * keys;
      float *ys = y + r * keys;
      const int64_t seen = std::min(r % queries + 1, keys);
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t d = 0; d < seen; ++d)
        mx = std::max(mx, xs[d]);
      double sum = 0.0;
      for (int64_t d = 0; d < seen; ++d) {
        const float e = std::exp(xs[d] - mx);
        ys[d] = e;
        sum += e;
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t d = 0; d < seen; ++d)
        ys[d] *= inv;
      for (int64_t d = seen; d < keys; ++d)
        ys[d] = 0.0f;
    }
  });
}

void softmaxBackward(const float *dy, const float *y, float *dx, int64_t outer, int64_t dim,
                     int64_t inner) {
  parallelFor(outer, grainFor(dim * inner), [&](int64_t oBegin, int64_t oEnd) {
    for (int64_t o = oBegin; o < oEnd; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * dim * inner + i;
        double dot = 0.0;
        for (int64_t d = 0; d < dim; ++d)
          dot += static_cast<double>(dy[base + d * inner]) * y[base + d * inner];
        const float fdot = static_cast<float>(dot);
        for (int64_t d = 0; d < dim; ++d)
          dx[base + d * inner] = y[base + d * inner] * (dy[base + d * inner] - fdot);
      }
  });
}

/// What a selective mean divides by (LossRows): the labels of its counted tensor that are not
/// ignored, or the sum of its counted weights.
static double countedRows(const LossRows &rows, int64_t classes) {
  double counted = 0.0;
  if (!rows.weights) {
    // Labels: each one not ignored adds 1, or its class's weight (NaN outside the classes).
    const int64_t *labels = static_cast<const int64_t *>(rows.counted);
    for (int64_t i = 0; i < rows.countedRows; ++i) {
      const int64_t label = labels[i];
      if (rows.ignore && label == rows.ignoreIndex)
        continue;
      counted += !rows.classWeights              ? 1.0
                 : label >= 0 && label < classes ? static_cast<double>(rows.classWeights[label])
                                                 : std::numeric_limits<double>::quiet_NaN();
    }
  } else {
    const float *weights = static_cast<const float *>(rows.counted);
    for (int64_t i = 0; i < rows.countedRows; ++i)
      counted += weights[i];
  }
  return counted;
}

/// Whether a loss takes the per-row path: rows scaled by (mask) weights or sample weights.
static bool perRowWeights(const LossRows *rows) {
  return rows && (rows->weights || rows->sampleWeights);
}

/// Row r's factor on the per-row path: its weight times its sample's weight; 0 for an ignored
/// label.
static double rowWeight(const LossRows &rows, const void *labels, int64_t r) {
  if (rows.ignore && static_cast<const int64_t *>(labels)[r] == rows.ignoreIndex)
    return 0.0;
  double weight = rows.weights ? static_cast<double>(rows.weights[r]) : 1.0;
  if (rows.sampleWeights)
    weight *= static_cast<double>(rows.sampleWeights[r / rows.rowsPerSample]);
  return weight;
}

/// What the per-row path divides by: the counted labels or weights, or all `batch` rows.
static double rowDivisor(const LossRows &rows, int64_t batch, int64_t classes) {
  return rows.counted ? countedRows(rows, classes) : static_cast<double>(batch);
}

/// Label smoothing ε as the smoothed target t * keep + add: a categorical target's
/// (1 - ε) t + ε / C over C classes, a binary target's (1 - ε) t + ε / 2. With ε = 0 the
/// target is t exactly.
struct Smoothing {
  double keep, add;
  Smoothing(LossKind kind, double eps, int64_t classes)
      : keep(1.0 - eps), add(kind == LossKind::BinaryCrossentropy ? eps / 2.0
                             : classes > 0 ? eps / static_cast<double>(classes)
                                           : 0.0) {}
  double operator()(double t) const { return t * keep + add; }
};

/// Binary crossentropy of one element x (a logit, or a probability clipped as Keras does)
/// against target y; with a positive weight P (positive non-null), PyTorch's
/// BCEWithLogitsLoss(pos_weight) form (1 - y) x + (1 + (P - 1) y) softplus(-x), or
/// -(P y log p + (1 - y) log(1 - p)).
static double binaryLoss(bool fromLogits, double x, double y, const double *positive) {
  if (positive) {
    if (fromLogits)
      return (1.0 - y) * x + (1.0 + (*positive - 1.0) * y) *
                                 (std::log1p(std::exp(-std::fabs(x))) + std::max(-x, 0.0));
    const double p = clipProb(static_cast<float>(x));
    return -(*positive * y * std::log(p) + (1.0 - y) * std::log(1.0 - p));
  }
  if (fromLogits) // log(1 + exp(-|x|)) never overflows; max(x, 0) - x*y supplies the rest.
    return std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::fabs(x)));
  const double p = clipProb(static_cast<float>(x));
  return -(y * std::log(p) + (1.0 - y) * std::log(1.0 - p));
}

/// scale * d(binaryLoss)/dx: from logits (1 + (P - 1) y) sigmoid(x) - P y (P = 1 without a
/// positive weight), from probabilities -P y / p + (1 - y) / (1 - p), 0 where p was clipped.
static float binaryGradient(bool fromLogits, float x, double y, const double *positive,
                            double scale) {
  if (fromLogits) {
    const double v = x;
    const double s = v >= 0 ? 1.0 / (1.0 + std::exp(-v)) : std::exp(v) / (1.0 + std::exp(v));
    return positive
               ? static_cast<float>(((1.0 + (*positive - 1.0) * y) * s - *positive * y) * scale)
               : static_cast<float>((s - y) * scale);
  }
  if (!probInRange(x))
    return 0.0f;
  const double p = x;
  return static_cast<float>(((positive ? -*positive * y : -y) / p + (1.0 - y) / (1.0 - p)) * scale);
}

/// Row r's own loss for the weighted mean (and sparse crossentropy with label smoothing): the
/// crossentropies' sum over the row's classes, binary crossentropy's and mse's mean over its
/// elements. NaN for a class index outside the row.
static double rowLoss(LossKind kind, bool fromLogits, const float *row, const void *labels,
                      int64_t r, int64_t classes, double labelSmoothing,
                      const float *classWeights = nullptr, const float *posWeight = nullptr,
                      int64_t posWeightCount = 1) {
  const float *t = static_cast<const float *>(labels) + r * classes;
  const Smoothing smooth(kind, labelSmoothing, classes);
  double total = 0.0;
  switch (kind) {
  case LossKind::SparseCategoricalCrossentropy: {
    const int64_t y = static_cast<const int64_t *>(labels)[r];
    if (y < 0 || y >= classes)
      return std::numeric_limits<double>::quiet_NaN();
    if (labelSmoothing == 0.0) {
      const double own = fromLogits ? logSumExp(row, classes) - row[y]
                                    : -std::log(static_cast<double>(clipProb(row[y])));
      return classWeights ? static_cast<double>(classWeights[y]) * own : own;
    }
    // sum_j (w_j) t'_j (lse - x_j) (or -t'_j log p_j), t' the smoothed one-hot target.
    const double lse = fromLogits ? logSumExp(row, classes) : 0.0;
    for (int64_t j = 0; j < classes; ++j) {
      const double target = classWeights
                                ? static_cast<double>(classWeights[j]) * smooth(j == y ? 1.0 : 0.0)
                                : smooth(j == y ? 1.0 : 0.0);
      total +=
          target * (fromLogits ? lse - row[j] : -std::log(static_cast<double>(clipProb(row[j]))));
    }
    return total;
  }
  case LossKind::CategoricalCrossentropy: {
    const double lse = fromLogits ? logSumExp(row, classes) : 0.0;
    for (int64_t j = 0; j < classes; ++j)
      total += fromLogits ? smooth(t[j]) * (lse - row[j])
                          : -smooth(t[j]) * std::log(static_cast<double>(clipProb(row[j])));
    return total;
  }
  case LossKind::BinaryCrossentropy:
    for (int64_t j = 0; j < classes; ++j) {
      const double positive = posWeight ? posWeight[j % posWeightCount] : 1.0;
      total += binaryLoss(fromLogits, row[j], smooth(t[j]), posWeight ? &positive : nullptr);
    }
    return total / static_cast<double>(classes);
  case LossKind::MeanSquaredError:
    for (int64_t j = 0; j < classes; ++j) {
      const double d = static_cast<double>(row[j]) - t[j];
      total += d * d;
    }
    return total / static_cast<double>(classes);
  }
  return total;
}

/// d(scale * rowLoss)/d(row), written to drow.
static void rowLossBackward(LossKind kind, bool fromLogits, const float *row, const void *labels,
                            int64_t r, int64_t classes, double scale, double labelSmoothing,
                            float *drow, const float *classWeights = nullptr,
                            const float *posWeight = nullptr, int64_t posWeightCount = 1) {
  const float *t = static_cast<const float *>(labels) + r * classes;
  const Smoothing smooth(kind, labelSmoothing, classes);
  switch (kind) {
  case LossKind::SparseCategoricalCrossentropy: {
    const int64_t y = static_cast<const int64_t *>(labels)[r];
    if (y < 0 || y >= classes) {
      for (int64_t j = 0; j < classes; ++j)
        drow[j] = std::numeric_limits<float>::quiet_NaN();
      return;
    }
    if (classWeights) {
      // From logits mass * softmax_j - w_j t'_j, mass = sum_j w_j t'_j; from probabilities
      // -w_j t'_j / p_j.
      auto target = [&](int64_t j) {
        return static_cast<double>(classWeights[j]) * smooth(j == y ? 1.0 : 0.0);
      };
      if (fromLogits) {
        const double lse = logSumExp(row, classes);
        double mass = 0.0;
        for (int64_t j = 0; j < classes; ++j)
          mass += target(j);
        for (int64_t j = 0; j < classes; ++j)
          drow[j] = static_cast<float>((std::exp(row[j] - lse) * mass - target(j)) * scale);
      } else {
        for (int64_t j = 0; j < classes; ++j)
          drow[j] = probInRange(row[j]) ? static_cast<float>(-(target(j)) * scale / row[j]) : 0.0f;
      }
    } else if (fromLogits) {
      // softmax_j - t'_j (t' sums to one).
      const double lse = logSumExp(row, classes);
      for (int64_t j = 0; j < classes; ++j)
        drow[j] = static_cast<float>((std::exp(row[j] - lse) - smooth(j == y ? 1.0 : 0.0)) * scale);
    } else if (labelSmoothing == 0.0) {
      fillZero(drow, classes);
      if (probInRange(row[y]))
        drow[y] = static_cast<float>(-scale / row[y]);
    } else {
      for (int64_t j = 0; j < classes; ++j)
        drow[j] = probInRange(row[j])
                      ? static_cast<float>(-smooth(j == y ? 1.0 : 0.0) * scale / row[j])
                      : 0.0f;
    }
    return;
  }
  case LossKind::CategoricalCrossentropy: {
    if (fromLogits) {
      const double lse = logSumExp(row, classes);
      double tsum = 0.0;
      for (int64_t j = 0; j < classes; ++j)
        tsum += smooth(t[j]);
      for (int64_t j = 0; j < classes; ++j)
        drow[j] = static_cast<float>((std::exp(row[j] - lse) * tsum - smooth(t[j])) * scale);
    } else {
      for (int64_t j = 0; j < classes; ++j)
        drow[j] = probInRange(row[j]) ? static_cast<float>(-smooth(t[j]) * scale / row[j]) : 0.0f;
    }
    return;
  }
  case LossKind::BinaryCrossentropy: {
    const double perElement = scale / static_cast<double>(classes);
    for (int64_t j = 0; j < classes; ++j) {
      const double positive = posWeight ? posWeight[j % posWeightCount] : 1.0;
      drow[j] = binaryGradient(fromLogits, row[j], smooth(t[j]), posWeight ? &positive : nullptr,
                               perElement);
    }
    return;
  }
  case LossKind::MeanSquaredError: {
    const double perElement = 2.0 * scale / static_cast<double>(classes);
    for (int64_t j = 0; j < classes; ++j)
      drow[j] = static_cast<float>((static_cast<double>(row[j]) - t[j]) * perElement);
    return;
  }
  }
}

void lossForward(LossKind kind, bool fromLogits, const float *pred, const void *labels, float *loss,
                 int64_t batch, int64_t classes, const LossRows *rows, double labelSmoothing,
                 const float *posWeight, int64_t posWeightCount) {
  const Smoothing smooth(kind, labelSmoothing, classes);
  if (perRowWeights(rows)) {
    // Weighted rows (a Keras output's mask, sample weights): sum_r w_r loss_r / the divisor.
    // A row of weight 0 is skipped, so that what it holds (padding) cannot turn the sum NaN.
    const double divisor = rowDivisor(*rows, batch, classes);
    double total = 0.0;
    for (int64_t r = 0; r < batch; ++r)
      if (const double weight = rowWeight(*rows, labels, r); weight != 0.0)
        total += weight * rowLoss(kind, fromLogits, pred + r * classes, labels, r, classes,
                                  labelSmoothing, rows->classWeights, posWeight, posWeightCount);
    loss[0] = divisor > 0 ? static_cast<float>(total / divisor) : 0.0f;
    return;
  }
  const float *target = static_cast<const float *>(labels);
  double total = 0.0;
  double count = static_cast<double>(batch);
  switch (kind) {
  case LossKind::SparseCategoricalCrossentropy: {
    const int64_t *idx = static_cast<const int64_t *>(labels);
    const bool ignore = rows && rows->ignore;
    const float *classWeights = rows ? rows->classWeights : nullptr;
    if (rows)
      count = countedRows(*rows, classes);
    for (int64_t b = 0; b < batch; ++b) {
      const float *row = pred + b * classes;
      const int64_t y = idx[b];
      if (ignore && y == rows->ignoreIndex)
        continue;
      if (y < 0 || y >= classes) {
        // An out-of-range label has no defined loss; NaN makes the driver stop with an error
        // instead of reading outside the row.
        total = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      if (labelSmoothing != 0.0 || classWeights)
        total += rowLoss(kind, fromLogits, row, labels, b, classes, labelSmoothing, classWeights);
      else if (fromLogits)
        total += logSumExp(row, classes) - row[y];
      else
        total -= std::log(static_cast<double>(clipProb(row[y])));
    }
    break;
  }
  case LossKind::CategoricalCrossentropy:
    for (int64_t b = 0; b < batch; ++b) {
      const float *row = pred + b * classes;
      const float *t = target + b * classes;
      if (fromLogits) {
        // -sum_j t_j * (x_j - lse), written so that labels need not sum to one.
        const double lse = logSumExp(row, classes);
        for (int64_t j = 0; j < classes; ++j)
          total += smooth(t[j]) * (lse - row[j]);
      } else {
        for (int64_t j = 0; j < classes; ++j)
          total -= smooth(t[j]) * std::log(static_cast<double>(clipProb(row[j])));
      }
    }
    break;
  case LossKind::BinaryCrossentropy:
    count = static_cast<double>(batch) * static_cast<double>(classes);
    for (int64_t i = 0; i < batch * classes; ++i) {
      const double positive = posWeight ? posWeight[i % posWeightCount] : 1.0;
      total += binaryLoss(fromLogits, pred[i], smooth(target[i]), posWeight ? &positive : nullptr);
    }
    break;
  case LossKind::MeanSquaredError:
    count = static_cast<double>(batch) * static_cast<double>(classes);
    for (int64_t i = 0; i < batch * classes; ++i) {
      const double d = static_cast<double>(pred[i]) - target[i];
      total += d * d;
    }
    break;
  }
  loss[0] = count > 0 ? static_cast<float>(total / count) : 0.0f;
}

void lossBackward(LossKind kind, bool fromLogits, const float *pred, const void *labels,
                  float *dpred, int64_t batch, int64_t classes, const LossRows *rows,
                  double labelSmoothing, const float *posWeight, int64_t posWeightCount) {
  const Smoothing smooth(kind, labelSmoothing, classes);
  if (perRowWeights(rows)) {
    const double divisor = rowDivisor(*rows, batch, classes);
    for (int64_t r = 0; r < batch; ++r) {
      const double weight = rowWeight(*rows, labels, r);
      if (weight == 0.0 || divisor <= 0) {
        fillZero(dpred + r * classes, classes);
        continue;
      }
      rowLossBackward(kind, fromLogits, pred + r * classes, labels, r, classes, weight / divisor,
                      labelSmoothing, dpred + r * classes, rows->classWeights, posWeight,
                      posWeightCount);
    }
    return;
  }
  const float *target = static_cast<const float *>(labels);
  const int64_t n = batch * classes;
  switch (kind) {
  case LossKind::SparseCategoricalCrossentropy: {
    const int64_t *idx = static_cast<const int64_t *>(labels);
    const bool ignore = rows && rows->ignore;
    const double counted = rows ? countedRows(*rows, classes) : static_cast<double>(batch);
    const double scale = counted > 0 ? 1.0 / counted : 0.0;
    for (int64_t b = 0; b < batch; ++b) {
      if (ignore && idx[b] == rows->ignoreIndex)
        fillZero(dpred + b * classes, classes);
      else
        rowLossBackward(kind, fromLogits, pred + b * classes, labels, b, classes, scale,
                        labelSmoothing, dpred + b * classes, rows ? rows->classWeights : nullptr);
    }
    break;
  }
  case LossKind::CategoricalCrossentropy: {
    const double scale = 1.0 / static_cast<double>(batch);
    for (int64_t b = 0; b < batch; ++b)
      rowLossBackward(kind, fromLogits, pred + b * classes, labels, b, classes, scale,
                      labelSmoothing, dpred + b * classes);
    break;
  }
  case LossKind::BinaryCrossentropy: {
    const double scale = n > 0 ? 1.0 / static_cast<double>(n) : 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double positive = posWeight ? posWeight[i % posWeightCount] : 1.0;
      dpred[i] = binaryGradient(fromLogits, pred[i], smooth(target[i]),
                                posWeight ? &positive : nullptr, scale);
    }
    break;
  }
  case LossKind::MeanSquaredError: {
    const double scale = n > 0 ? 2.0 / static_cast<double>(n) : 0.0;
    for (int64_t i = 0; i < n; ++i)
      dpred[i] = static_cast<float>((static_cast<double>(pred[i]) - target[i]) * scale);
    break;
  }
  }
}

void sgdUpdate(float *param, const float *grad, int64_t n, float lr) {
  // PyTorch: param.add_(grad, alpha=-lr).
  const float alpha = -lr;
  forEachElement(n, [&](int64_t i) { param[i] = param[i] + alpha * grad[i]; });
}

void momentumUpdate(float *param, const float *grad, float *velocity, int64_t n, float lr,
                    float momentum) {
  // PyTorch: buf.mul_(momentum).add_(grad); param.add_(buf, alpha=-lr). The first step's
  // buf = grad equals momentum * 0 + grad because the state starts at zero.
  const float alpha = -lr;
  forEachElement(n, [&](int64_t i) {
    velocity[i] = velocity[i] * momentum + grad[i];
    param[i] = param[i] + alpha * velocity[i];
  });
}

void adamUpdate(float *param, const float *grad, float *m, float *v, int64_t n, float lr,
                float beta1, float beta2, float eps, float step) {
  // Scalars in double as PyTorch's Python-side code computes them, then rounded to float the way
  // PyTorch's CPU kernels round a Python scalar for a float tensor.
  const double b1 = intendedDouble(beta1), b2 = intendedDouble(beta2);
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(b2, static_cast<double>(step));
  const float negStepSize = static_cast<float>(-(intendedDouble(lr) / bc1));
  const float bc2Sqrt = static_cast<float>(std::sqrt(bc2));
  const float oneMinusB1 = static_cast<float>(1.0 - b1), oneMinusB2 = static_cast<float>(1.0 - b2);
  const float fb1 = beta1, fb2 = beta2, feps = eps;
  forEachElement(n, [&](int64_t i) {
    const float g = grad[i];
    // exp_avg.mul_(b1).add_(g, alpha=1-b1); exp_avg_sq.mul_(b2).addcmul_(g, g, value=1-b2)
    m[i] = m[i] * fb1 + oneMinusB1 * g;
    v[i] = v[i] * fb2 + oneMinusB2 * g * g;
    // denom = sqrt(v) / bc2_sqrt + eps; param.addcdiv_(m, denom, value=-step_size), whose CPU
    // kernel evaluates self + value * m / denom left to right.
    const float denom = std::sqrt(v[i]) / bc2Sqrt + feps;
    param[i] = param[i] + negStepSize * m[i] / denom;
  });
}

} // namespace graphc::rt
