// Microbenchmarks of the CPU runtime's heaviest kernels, on ResNet-18's shapes (224x224,
// batch 8), with Google Benchmark:
//   * BM_Gemm/<layer>/<direction>: graphc's GEMM (runtime/lib/kernels.cpp: blocks of C that
//     depend on the shape alone, shared out among graphc's threads, each one single-threaded
//     OpenBLAS call) against BM_OpenBlasThreads, one cblas_sgemm on OpenBLAS's own threads
//     (what the runtime did before 2026-11-27), same shape, same thread count;
//   * BM_BatchedGemm: attention's per-head products (unfused, 8 heads of 128 x 128 x 64, 1M
//     multiply-adds each, too small for blocks), shared out whole among graphc's threads,
//     against BM_BatchedGemmOneByOne, the same calls one after the other (before 2026-11-27);
//   * BM_MaxPool3x3: ResNet-18's 3x3 stride-2 max pooling, forward and backward;
//   * BM_ReluBackward, BM_ClipBackward, BM_Dropout and BM_BatchNorm (forward, backward):
//     MobileNetV2-sized elementwise gradients and batch norms ([8, 96, 112, 112]);
//   * BM_PointwiseConv: a 1x1 convolution of MobileNetV2, which multiplies the tensors without
//     an im2col copy, against BM_PointwiseAsIm2col, the same product through a 1x1 "window"
//     with one padded row (the im2col path), cropped;
//   * BM_Attention and BM_AttentionCausal: one GPT-2 small layer's fused attention, forward and
//     backward, without and with the causal mask (whose blocks skip the masked keys).
// Run: build/bin/bench-cpu-kernels [--benchmark_filter=Gemm] [--benchmark_repetitions=5]
// (GRAPHC_NUM_THREADS sets both contenders' thread count). Results in docs/benchmarks.md.
// It uses only the declarations of kernels.h and parallel.h, so it also builds against an older
// runtime, to compare two builds in one run (OLD: a checkout with its build):
//   c++ -O2 -std=c++17 -I OLD/runtime/include bench/cpu_kernels.cpp \
//     OLD/build/lib/libgraphc_runtime.a -lbenchmark -lopenblas -lpthread -o bench-old
#include "graphc/runtime/kernels.h"
#include "graphc/runtime/parallel.h"

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <random>
#include <vector>

using namespace graphc::rt;

namespace {

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float &x : v)
    x = normal(gen);
  return v;
}

/// One per-image GEMM of a ResNet-18 3x3 convolution: K output channels, C input channels, an
/// OH x OW output. Direction 0: forward, C[K, OHW] = W[K, 9C] col[9C, OHW]; 1: the data
/// gradient's col[9C, OHW] = W^T dy[K, OHW]; 2: the filter gradient's dW[K, 9C] = dy col^T.
struct GemmShape {
  int64_t m, n, k;
  bool transA, transB;
};
GemmShape convGemm(int64_t channelsK, int64_t channelsC, int64_t side, int direction) {
  const int64_t crs = 9 * channelsC, ohw = side * side;
  if (direction == 0)
    return {channelsK, ohw, crs, false, false};
  if (direction == 1)
    return {crs, ohw, channelsK, true, false};
  return {channelsK, crs, ohw, false, true};
}
/// ResNet-18's four stages: (K = C, output side).
constexpr int64_t kStages[4][2] = {{64, 56}, {128, 28}, {256, 14}, {512, 7}};

void gemmBenchmark(benchmark::State &state, bool openBlasThreads) {
  const GemmShape s = convGemm(kStages[state.range(0)][0], kStages[state.range(0)][0],
                               kStages[state.range(0)][1], int(state.range(1)));
  auto a = randomFloats(size_t(s.m * s.k), 1), b = randomFloats(size_t(s.k * s.n), 2);
  std::vector<float> c(size_t(s.m * s.n));
  matmul(a.data(), b.data(), c.data(), s.m, s.n, s.k, s.transA, s.transB); // pool, BLAS setup
  for (auto _ : state) {
    if (openBlasThreads) {
      openblas_set_num_threads(kernelThreads());
      cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans,
                  s.transB ? CblasTrans : CblasNoTrans, int(s.m), int(s.n), int(s.k), 1.0f,
                  a.data(), int(s.transA ? s.m : s.k), b.data(), int(s.transB ? s.k : s.n), 0.0f,
                  c.data(), int(s.n));
      openblas_set_num_threads(1); // graphc's GEMMs assume single-threaded calls
    } else {
      matmul(a.data(), b.data(), c.data(), s.m, s.n, s.k, s.transA, s.transB);
    }
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(s.m * s.n * s.k),
                                                 benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
void BM_Gemm(benchmark::State &state) { gemmBenchmark(state, false); }
void BM_OpenBlasThreads(benchmark::State &state) { gemmBenchmark(state, true); }
// Args: stage (0-3), direction (0 forward, 1 data gradient, 2 filter gradient).
BENCHMARK(BM_Gemm)->ArgsProduct({{0, 1, 2, 3}, {0, 1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OpenBlasThreads)
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond);

void batchedBenchmark(benchmark::State &state, bool oneByOne) {
  const int64_t batch = 8, m = 128, n = 128, k = 64;
  auto a = randomFloats(size_t(batch * m * k), 6), b = randomFloats(size_t(batch * k * n), 7);
  std::vector<float> c(size_t(batch * m * n));
  batchMatmul(a.data(), b.data(), c.data(), batch, m, n, k, false, true); // pool, BLAS setup
  for (auto _ : state) {
    if (oneByOne)
      for (int64_t i = 0; i < batch; ++i)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(k), 1.0f,
                    a.data() + i * m * k, int(k), b.data() + i * k * n, int(k), 0.0f,
                    c.data() + i * m * n, int(n));
    else
      batchMatmul(a.data(), b.data(), c.data(), batch, m, n, k, false, true);
    benchmark::DoNotOptimize(c.data());
  }
}
void BM_BatchedGemm(benchmark::State &state) { batchedBenchmark(state, false); }
void BM_BatchedGemmOneByOne(benchmark::State &state) { batchedBenchmark(state, true); }
BENCHMARK(BM_BatchedGemm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BatchedGemmOneByOne)->Unit(benchmark::kMillisecond);

void BM_MaxPool3x3(benchmark::State &state) {
  const Pool2dShape sh{8, 64, 112, 112, 56, 56, 3, 3, 2, 2, 1, 1};
  auto x = randomFloats(size_t(sh.n * sh.c * sh.h * sh.w), 3);
  std::vector<float> y(size_t(sh.n * sh.c * sh.oh * sh.ow)), dx(x.size());
  const bool backward = state.range(0) != 0;
  for (auto _ : state) {
    if (backward)
      maxPool2dBackward(y.data(), x.data(), dx.data(), sh);
    else
      maxPool2d(x.data(), y.data(), sh);
    benchmark::DoNotOptimize(backward ? dx.data() : y.data());
  }
}
BENCHMARK(BM_MaxPool3x3)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

/// MobileNetV2's widest activations: [8, 96, 112, 112].
constexpr int64_t kWideN = 8, kWideC = 96, kWideInner = 112 * 112;
constexpr int64_t kWide = kWideN * kWideC * kWideInner;

void BM_ReluBackward(benchmark::State &state) {
  auto y = randomFloats(size_t(kWide), 8), dy = randomFloats(size_t(kWide), 9);
  std::vector<float> dx(y.size());
  for (auto _ : state) {
    reluBackward(dy.data(), y.data(), dx.data(), kWide);
    benchmark::DoNotOptimize(dx.data());
  }
}
BENCHMARK(BM_ReluBackward)->Unit(benchmark::kMillisecond);

void BM_ClipBackward(benchmark::State &state) {
  auto y = randomFloats(size_t(kWide), 10), dy = randomFloats(size_t(kWide), 11);
  for (float &v : y)
    v *= 4.0f; // about a third of ReLU6's outputs at each bound or beyond
  std::vector<float> dx(y.size());
  for (auto _ : state) {
    clipBackward(dy.data(), y.data(), dx.data(), kWide, 0.0f, 6.0f);
    benchmark::DoNotOptimize(dx.data());
  }
}
BENCHMARK(BM_ClipBackward)->Unit(benchmark::kMillisecond);

void BM_Dropout(benchmark::State &state) {
  auto x = randomFloats(size_t(kWide), 12);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    dropout(x.data(), y.data(), kWide, 0.5f, 7, 3, 1.0f, 0);
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(BM_Dropout)->Unit(benchmark::kMillisecond);

void BM_BatchNorm(benchmark::State &state) {
  auto x = randomFloats(size_t(kWide), 13), dy = randomFloats(size_t(kWide), 14);
  std::vector<float> y(x.size()), dx(x.size()), scale(kWideC, 1.5f), bias(kWideC, 0.1f),
      runningMean(kWideC, 0.0f), runningVar(kWideC, 1.0f), newMean(kWideC), newVar(kWideC),
      savedMean(kWideC), savedInvstd(kWideC), dscale(kWideC), dbias(kWideC);
  auto forward = [&] {
    batchNorm(x.data(), scale.data(), bias.data(), runningMean.data(), runningVar.data(), y.data(),
              newMean.data(), newVar.data(), savedMean.data(), savedInvstd.data(), kWideN, kWideC,
              kWideInner, 1e-5f, 0.1f, true);
  };
  forward();
  for (auto _ : state) {
    if (state.range(0) == 0)
      forward();
    else
      batchNormBackward(dy.data(), x.data(), scale.data(), savedMean.data(), savedInvstd.data(),
                        dx.data(), dscale.data(), dbias.data(), kWideN, kWideC, kWideInner, true);
    benchmark::DoNotOptimize(dx.data());
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(BM_BatchNorm)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

/// MobileNetV2's first expansion: 16 -> 96 channels on 112 x 112, batch 8.
void pointwiseBenchmark(benchmark::State &state, bool asIm2col) {
  const int64_t n = 8, c = 16, k = 96, side = 112;
  // The im2col contender pads one row at the bottom: a 1x1 window is then not "pointwise", so
  // the kernel unfolds the image (a copy) before the same GEMM, with one extra output row.
  const Conv2dShape sh{n,    c, side, side, k, 1, 1, asIm2col ? side + 1 : side,
                       side, 1, 1,    0,    0, 1, 1, 1};
  auto x = randomFloats(size_t(n * c * side * side), 4), w = randomFloats(size_t(k * c), 5);
  std::vector<float> y(size_t(n * k * sh.oh * sh.ow));
  std::vector<float> workspace(conv2dWorkspaceBytes(c, 1, 1, sh.oh, sh.ow) / sizeof(float));
  for (auto _ : state) {
    conv2d(x.data(), w.data(), nullptr, y.data(), sh, asIm2col ? workspace.data() : nullptr);
    benchmark::DoNotOptimize(y.data());
  }
}
void BM_PointwiseConv(benchmark::State &state) { pointwiseBenchmark(state, false); }
void BM_PointwiseAsIm2col(benchmark::State &state) { pointwiseBenchmark(state, true); }
BENCHMARK(BM_PointwiseConv)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PointwiseAsIm2col)->Unit(benchmark::kMillisecond);

/// A GPT-2 small layer's fused attention at sequence 512 (12 heads of width 64, batch 1),
/// forward and backward, in graphc's default query blocks (64 rows: the scores no larger than
/// the output): the non-causal attention against the causal one, whose blocks skip the keys
/// past their last query (about half of the products) and mask the rest of the triangle.
void attentionBenchmark(benchmark::State &state, bool causal) {
  const int64_t batch = 12, seq = 512, width = 64;
  AttentionShape sh{batch, seq, seq, width, width, 64, 0.125f, 0.0f, 0, 0};
  sh.causal = causal;
  auto q = randomFloats(size_t(batch * seq * width), 6);
  auto k = randomFloats(size_t(batch * seq * width), 7);
  auto v = randomFloats(size_t(batch * seq * width), 8);
  auto dout = randomFloats(size_t(batch * seq * width), 9);
  std::vector<float> out(q.size()), dq(q.size()), dk(q.size()), dv(q.size());
  std::vector<float> workspace(attentionWorkspaceBytes(batch, 64, seq, true) / sizeof(float));
  for (auto _ : state) {
    attentionForward(q.data(), k.data(), v.data(), out.data(), workspace.data(), sh, 0, 0.0f);
    attentionBackward(dout.data(), q.data(), k.data(), v.data(), dq.data(), dk.data(), dv.data(),
                      workspace.data(), sh, 0, 0.0f);
    benchmark::DoNotOptimize(dk.data());
  }
}
void BM_Attention(benchmark::State &state) { attentionBenchmark(state, false); }
void BM_AttentionCausal(benchmark::State &state) { attentionBenchmark(state, true); }
BENCHMARK(BM_Attention)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionCausal)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
