// Unit tests of the CPU kernels (runtime/lib/kernels.cpp). Forward kernels are compared with
// naive double-precision loops written here; backward kernels with central finite differences
// of those references; losses and optimizers with hand-computed values. Outputs and workspaces
// are pre-filled with NaN so that a kernel that reads instead of overwriting them fails.
#include "graphc/runtime/kernels.h"
#include "graphc/runtime/workspace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

using namespace graphc::rt;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> randomVec(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 gen(seed);
  std::vector<float> v(n);
  for (float &x : v)
    x = static_cast<float>(lo + (hi - lo) * static_cast<double>(gen() >> 11) * 0x1p-53);
  return v;
}

std::vector<double> toDouble(const std::vector<float> &v) { return {v.begin(), v.end()}; }

// |got - want| <= rtol * |want| + atol, with atol relative to the largest reference value so
// that entries that cancel to almost zero do not demand impossible relative accuracy.
void expectClose(const float *got, const std::vector<double> &want, double rtol = 1e-5,
                 double atolScale = 1e-5) {
  double maxAbs = 0.0;
  for (double w : want)
    maxAbs = std::max(maxAbs, std::fabs(w));
  const double atol = atolScale * std::max(maxAbs, 1e-30);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << "index " << i;
    ASSERT_LE(std::fabs(got[i] - want[i]), rtol * std::fabs(want[i]) + atol)
        << "index " << i << ": got " << got[i] << ", want " << want[i];
  }
}

// d/dx_i of sum_j g_j * f(x)_j by central differences, with f evaluated in double.
std::vector<double> numericGrad(const std::function<std::vector<double>(const std::vector<double> &)> &f,
                                const std::vector<double> &x, const std::vector<double> &g,
                                double h = 1e-6) {
  std::vector<double> grad(x.size());
  std::vector<double> xp = x;
  for (size_t i = 0; i < x.size(); ++i) {
    xp[i] = x[i] + h;
    const std::vector<double> fp = f(xp);
    xp[i] = x[i] - h;
    const std::vector<double> fm = f(xp);
    xp[i] = x[i];
    double d = 0.0;
    for (size_t j = 0; j < fp.size(); ++j)
      d += g[j] * (fp[j] - fm[j]);
    grad[i] = d / (2 * h);
  }
  return grad;
}

// ---------------------------------------------------------------------------------------------
// GEMM and dense

std::vector<double> refMatmul(const std::vector<double> &a, const std::vector<double> &b,
                              int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p)
        s += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = s;
    }
  return c;
}

TEST(RuntimeKernels, MatmulAllTransposes) {
  const int64_t m = 7, n = 5, k = 11;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    const auto a = randomVec(m * k, 1 + t), b = randomVec(k * n, 10 + t);
    std::vector<float> c(m * n, kNaN);
    matmul(a.data(), b.data(), c.data(), m, n, k, ta, tb);
    SCOPED_TRACE(t);
    expectClose(c.data(), refMatmul(toDouble(a), toDouble(b), m, n, k, ta, tb));
  }
}

TEST(RuntimeKernels, MatmulZeroInnerDimensionOverwrites) {
  std::vector<float> c(6, kNaN);
  matmul(nullptr, nullptr, c.data(), 2, 3, 0, false, false);
  for (float v : c)
    EXPECT_EQ(v, 0.0f);
}

TEST(RuntimeKernels, DenseWithAndWithoutBias) {
  const int64_t n = 6, in = 9, out = 4;
  const auto x = randomVec(n * in, 3), w = randomVec(in * out, 4), bias = randomVec(out, 5);
  for (int transposeW = 0; transposeW < 2; ++transposeW)
    for (int withBias = 0; withBias < 2; ++withBias) {
      SCOPED_TRACE(testing::Message() << "transposeW " << transposeW << " bias " << withBias);
      std::vector<float> y(n * out, kNaN);
      dense(x.data(), w.data(), withBias ? bias.data() : nullptr, y.data(), n, in, out,
            transposeW);
      std::vector<double> want = refMatmul(toDouble(x), toDouble(w), n, out, in, false, transposeW);
      if (withBias)
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < out; ++j)
            want[i * out + j] += bias[j];
      expectClose(y.data(), want);
    }
}

TEST(RuntimeKernels, BiasGradDenseAndConv) {
  // Dense: [n=5, out=3]; conv: [N=2, K=4, OH*OW=6].
  struct Case { int64_t outer, channels, inner; } cases[] = {{5, 3, 1}, {2, 4, 6}};
  for (const Case &c : cases) {
    const auto dy = randomVec(c.outer * c.channels * c.inner, 7);
    std::vector<float> db(c.channels, kNaN);
    biasGrad(dy.data(), db.data(), c.outer, c.channels, c.inner);
    std::vector<double> want(c.channels, 0.0);
    for (int64_t o = 0; o < c.outer; ++o)
      for (int64_t ch = 0; ch < c.channels; ++ch)
        for (int64_t i = 0; i < c.inner; ++i)
          want[ch] += dy[(o * c.channels + ch) * c.inner + i];
    expectClose(db.data(), want);
  }
}

// ---------------------------------------------------------------------------------------------
// Convolution

Conv2dShape makeConv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s,
                     int64_t stride, int64_t pad, int64_t dil) {
  Conv2dShape sh{};
  sh.n = n; sh.c = c; sh.h = h; sh.w = w; sh.k = k; sh.r = r; sh.s = s;
  sh.strideH = stride; sh.strideW = stride == 1 ? 2 : 1; // differing strides per axis
  sh.padTop = pad; sh.padLeft = pad == 0 ? 1 : pad - 1;
  sh.dilationH = dil; sh.dilationW = 1;
  // Symmetric padding, as PyTorch's padding=p.
  sh.oh = (h + 2 * sh.padTop - sh.dilationH * (r - 1) - 1) / sh.strideH + 1;
  sh.ow = (w + 2 * sh.padLeft - sh.dilationW * (s - 1) - 1) / sh.strideW + 1;
  return sh;
}

std::vector<double> refConv(const std::vector<double> &x, const std::vector<double> &w,
                            const std::vector<double> *bias, const Conv2dShape &sh) {
  std::vector<double> y(sh.n * sh.k * sh.oh * sh.ow);
  for (int64_t n = 0; n < sh.n; ++n)
    for (int64_t k = 0; k < sh.k; ++k)
      for (int64_t oy = 0; oy < sh.oh; ++oy)
        for (int64_t ox = 0; ox < sh.ow; ++ox) {
          double s = bias ? (*bias)[k] : 0.0;
          for (int64_t c = 0; c < sh.c; ++c)
            for (int64_t r = 0; r < sh.r; ++r)
              for (int64_t q = 0; q < sh.s; ++q) {
                const int64_t iy = oy * sh.strideH - sh.padTop + r * sh.dilationH;
                const int64_t ix = ox * sh.strideW - sh.padLeft + q * sh.dilationW;
                if (iy < 0 || iy >= sh.h || ix < 0 || ix >= sh.w)
                  continue;
                s += x[((n * sh.c + c) * sh.h + iy) * sh.w + ix] *
                     w[((k * sh.c + c) * sh.r + r) * sh.s + q];
              }
          y[((n * sh.k + k) * sh.oh + oy) * sh.ow + ox] = s;
        }
  return y;
}

// A workspace of exactly conv2dWorkspaceBytes (one im2col tile), NaN-filled, followed by guard
// floats that must survive (the kernel may use the planned size and no more).
struct Workspace {
  explicit Workspace(const Conv2dShape &sh)
      : floats(conv2dWorkspaceBytes(sh.c, sh.r, sh.s, conv2dTileRows(sh.tileRows, sh.oh), sh.ow) /
               sizeof(float)),
        buf(floats + kGuard, kNaN) {
    for (size_t i = floats; i < buf.size(); ++i)
      buf[i] = 12345.0f;
  }
  float *data() { return buf.data(); }
  void expectGuardIntact() const {
    for (size_t i = floats; i < buf.size(); ++i)
      ASSERT_EQ(buf[i], 12345.0f) << "workspace overrun at float " << i;
  }
  static constexpr size_t kGuard = 64;
  size_t floats;
  std::vector<float> buf;
};

const Conv2dShape kConvCases[] = {
    makeConv(2, 3, 7, 6, 4, 3, 2, 2, 1, 1), // stride 2 (H), padding
    makeConv(1, 2, 8, 7, 3, 3, 3, 1, 2, 2), // dilation 2 (H), padding 2
    makeConv(3, 1, 5, 5, 2, 1, 1, 1, 0, 1), // 1x1
    makeConv(2, 4, 9, 8, 5, 2, 3, 3, 1, 2), // stride 3 with dilation
};

// Every case untiled and tiled by 1 and 2 output rows (the last tile shorter when 2 does not
// divide OH): the kernels then stage one tile's im2col rows in a smaller workspace.
std::vector<Conv2dShape> convCasesAndTilings() {
  std::vector<Conv2dShape> cases;
  for (const Conv2dShape &sh : kConvCases)
    for (int64_t tileRows : {0, 1, 2}) {
      Conv2dShape tiled = sh;
      tiled.tileRows = tileRows;
      cases.push_back(tiled);
    }
  return cases;
}

TEST(RuntimeKernels, Conv2dForwardMatchesReference) {
  for (const Conv2dShape &sh : convCasesAndTilings()) {
    SCOPED_TRACE(testing::Message() << "tile rows " << sh.tileRows);
    SCOPED_TRACE(testing::Message() << "C" << sh.c << " H" << sh.h << " stride " << sh.strideH
                                    << " dil " << sh.dilationH);
    const auto x = randomVec(sh.n * sh.c * sh.h * sh.w, 11);
    const auto w = randomVec(sh.k * sh.c * sh.r * sh.s, 12);
    const auto b = randomVec(sh.k, 13);
    for (int withBias = 0; withBias < 2; ++withBias) {
      Workspace ws(sh);
      std::vector<float> y(sh.n * sh.k * sh.oh * sh.ow, kNaN);
      conv2d(x.data(), w.data(), withBias ? b.data() : nullptr, y.data(), sh, ws.data());
      const std::vector<double> bd = toDouble(b);
      expectClose(y.data(), refConv(toDouble(x), toDouble(w), withBias ? &bd : nullptr, sh));
      ws.expectGuardIntact();
    }
  }
}

TEST(RuntimeKernels, Conv2dBackwardDataMatchesFiniteDifferences) {
  for (const Conv2dShape &sh : convCasesAndTilings()) {
    SCOPED_TRACE(testing::Message() << "tile rows " << sh.tileRows);
    const auto x = randomVec(sh.n * sh.c * sh.h * sh.w, 21);
    const auto w = randomVec(sh.k * sh.c * sh.r * sh.s, 22);
    const auto dy = randomVec(sh.n * sh.k * sh.oh * sh.ow, 23);
    Workspace ws(sh);
    std::vector<float> dx(x.size(), kNaN);
    conv2dBackwardData(dy.data(), w.data(), dx.data(), sh, ws.data());
    const std::vector<double> wd = toDouble(w);
    auto f = [&](const std::vector<double> &xv) { return refConv(xv, wd, nullptr, sh); };
    expectClose(dx.data(), numericGrad(f, toDouble(x), toDouble(dy)), 1e-5, 1e-5);
    ws.expectGuardIntact();
  }
}

// As a transposed convolution's forward, conv2dBackwardData adds a bias per dx channel on
// top of exactly the bias-free result.
TEST(RuntimeKernels, Conv2dBackwardDataAddsBiasPerChannel) {
  for (const Conv2dShape &sh : convCasesAndTilings()) {
    SCOPED_TRACE(testing::Message() << "tile rows " << sh.tileRows);
    const auto w = randomVec(sh.k * sh.c * sh.r * sh.s, 24);
    const auto dy = randomVec(sh.n * sh.k * sh.oh * sh.ow, 25);
    const auto bias = randomVec(sh.c, 26);
    Workspace ws(sh);
    std::vector<float> plain(sh.n * sh.c * sh.h * sh.w, kNaN), biased(plain.size(), kNaN);
    conv2dBackwardData(dy.data(), w.data(), plain.data(), sh, ws.data());
    conv2dBackwardData(dy.data(), w.data(), biased.data(), sh, ws.data(), bias.data());
    for (size_t i = 0; i < plain.size(); ++i)
      ASSERT_EQ(biased[i], plain[i] + bias[(i / size_t(sh.h * sh.w)) % size_t(sh.c)]) << i;
    ws.expectGuardIntact();
  }
}

TEST(RuntimeKernels, Conv2dBackwardFilterMatchesFiniteDifferences) {
  for (const Conv2dShape &sh : convCasesAndTilings()) {
    SCOPED_TRACE(testing::Message() << "tile rows " << sh.tileRows);
    const auto x = randomVec(sh.n * sh.c * sh.h * sh.w, 31);
    const auto w = randomVec(sh.k * sh.c * sh.r * sh.s, 32);
    const auto dy = randomVec(sh.n * sh.k * sh.oh * sh.ow, 33);
    Workspace ws(sh);
    std::vector<float> dw(w.size(), kNaN);
    conv2dBackwardFilter(dy.data(), x.data(), dw.data(), sh, ws.data());
    const std::vector<double> xd = toDouble(x);
    auto f = [&](const std::vector<double> &wv) { return refConv(xd, wv, nullptr, sh); };
    expectClose(dw.data(), numericGrad(f, toDouble(w), toDouble(dy)), 1e-5, 1e-5);
    ws.expectGuardIntact();
  }
}

// The planner may place a buffer anywhere in the arena, and reuse must not change results, so
// every conv kernel has to produce the same bits at different (also misaligned) addresses.
TEST(RuntimeKernels, Conv2dBitIdenticalAtDifferentAddresses) {
  const Conv2dShape sh = makeConv(2, 8, 13, 11, 16, 3, 3, 1, 1, 1);
  const size_t nx = sh.n * sh.c * sh.h * sh.w, nw = sh.k * sh.c * sh.r * sh.s,
               ny = sh.n * sh.k * sh.oh * sh.ow, nb = sh.k,
               nws = conv2dWorkspaceBytes(sh.c, sh.r, sh.s, sh.oh, sh.ow) / sizeof(float);
  const auto x = randomVec(nx, 41), w = randomVec(nw, 42), b = randomVec(nb, 43),
             dy = randomVec(ny, 44);
  struct Results { std::vector<float> y, dx, dw; };
  auto run = [&](size_t shift) {
    // One block holding every buffer, shifted by `shift` floats and spaced irregularly.
    std::vector<float> block(nx + nw + nb + ny + ny + nx + nw + nws + 64 + shift, kNaN);
    float *p = block.data() + shift;
    float *bx = p, *bw = bx + nx + 1, *bb = bw + nw + 3, *by = bb + nb + 5, *bdy = by + ny + 7,
          *bdx = bdy + ny + 2, *bdw = bdx + nx + 1, *bws = bdw + nw + 3;
    std::memcpy(bx, x.data(), nx * 4);
    std::memcpy(bw, w.data(), nw * 4);
    std::memcpy(bb, b.data(), nb * 4);
    std::memcpy(bdy, dy.data(), ny * 4);
    conv2d(bx, bw, bb, by, sh, bws);
    conv2dBackwardData(bdy, bw, bdx, sh, bws);
    conv2dBackwardFilter(bdy, bx, bdw, sh, bws);
    return Results{{by, by + ny}, {bdx, bdx + nx}, {bdw, bdw + nw}};
  };
  const Results base = run(0);
  for (size_t shift : {1, 3, 16, 17}) {
    const Results other = run(shift);
    EXPECT_EQ(0, std::memcmp(base.y.data(), other.y.data(), ny * 4)) << "shift " << shift;
    EXPECT_EQ(0, std::memcmp(base.dx.data(), other.dx.data(), nx * 4)) << "shift " << shift;
    EXPECT_EQ(0, std::memcmp(base.dw.data(), other.dw.data(), nw * 4)) << "shift " << shift;
  }
}

// ---------------------------------------------------------------------------------------------
// Max pooling

Pool2dShape makePool(int64_t n, int64_t c, int64_t h, int64_t w, int64_t kernel, int64_t stride,
                     int64_t pad) {
  Pool2dShape sh{};
  sh.n = n; sh.c = c; sh.h = h; sh.w = w;
  sh.kernelH = kernel; sh.kernelW = kernel; sh.strideH = stride; sh.strideW = stride;
  sh.padTop = pad; sh.padLeft = pad;
  sh.oh = (h + 2 * pad - kernel) / stride + 1;
  sh.ow = (w + 2 * pad - kernel) / stride + 1;
  return sh;
}

// Reference forward with the first-max index (row-major in the window) of every output.
std::vector<double> refMaxPool(const std::vector<double> &x, const Pool2dShape &sh,
                               std::vector<int64_t> *argmax = nullptr) {
  std::vector<double> y(sh.n * sh.c * sh.oh * sh.ow);
  if (argmax)
    argmax->assign(y.size(), -1);
  for (int64_t nc = 0; nc < sh.n * sh.c; ++nc)
    for (int64_t oy = 0; oy < sh.oh; ++oy)
      for (int64_t ox = 0; ox < sh.ow; ++ox) {
        double best = -INFINITY;
        int64_t arg = -1;
        for (int64_t ky = 0; ky < sh.kernelH; ++ky)
          for (int64_t kx = 0; kx < sh.kernelW; ++kx) {
            const int64_t iy = oy * sh.strideH - sh.padTop + ky;
            const int64_t ix = ox * sh.strideW - sh.padLeft + kx;
            if (iy < 0 || iy >= sh.h || ix < 0 || ix >= sh.w)
              continue;
            const int64_t idx = (nc * sh.h + iy) * sh.w + ix;
            if (arg < 0 || x[idx] > best) {
              best = x[idx];
              arg = idx;
            }
          }
        const int64_t o = (nc * sh.oh + oy) * sh.ow + ox;
        y[o] = best;
        if (argmax)
          (*argmax)[o] = arg;
      }
  return y;
}

TEST(RuntimeKernels, MaxPoolForwardWithPadding) {
  for (const Pool2dShape &sh : {makePool(2, 3, 7, 6, 3, 2, 1), makePool(1, 2, 5, 5, 2, 1, 1),
                                makePool(1, 1, 6, 6, 2, 2, 0)}) {
    // All-negative inputs: a padded cell that wrongly counted as 0 would win.
    const auto x = randomVec(sh.n * sh.c * sh.h * sh.w, 51, -2.0, -0.5);
    std::vector<float> y(sh.n * sh.c * sh.oh * sh.ow, kNaN);
    maxPool2d(x.data(), y.data(), sh);
    expectClose(y.data(), refMaxPool(toDouble(x), sh), 0.0, 0.0);
  }
}

TEST(RuntimeKernels, MaxPoolBackwardRoutesToFirstMaxOnTies) {
  const Pool2dShape sh = makePool(1, 2, 6, 5, 3, 2, 1);
  // Few distinct values, so most windows hold ties.
  std::vector<float> x(sh.n * sh.c * sh.h * sh.w);
  std::mt19937_64 gen(61);
  for (float &v : x)
    v = static_cast<float>(gen() % 3);
  const auto dy = randomVec(sh.n * sh.c * sh.oh * sh.ow, 62);
  std::vector<float> dx(x.size(), kNaN);
  maxPool2dBackward(dy.data(), x.data(), dx.data(), sh);
  std::vector<int64_t> argmax;
  refMaxPool(toDouble(x), sh, &argmax);
  std::vector<double> want(x.size(), 0.0);
  for (size_t o = 0; o < argmax.size(); ++o)
    want[argmax[o]] += dy[o];
  expectClose(dx.data(), want, 1e-6, 0.0);
}

TEST(RuntimeKernels, MaxPoolBackwardMatchesFiniteDifferences) {
  const Pool2dShape sh = makePool(2, 2, 7, 7, 3, 2, 1);
  // Distinct values spaced far wider than the finite-difference step: no kinks are crossed.
  std::vector<float> x(sh.n * sh.c * sh.h * sh.w);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>((i * 37) % x.size()) * 0.01f - 1.0f;
  const auto dy = randomVec(sh.n * sh.c * sh.oh * sh.ow, 63);
  std::vector<float> dx(x.size(), kNaN);
  maxPool2dBackward(dy.data(), x.data(), dx.data(), sh);
  auto f = [&](const std::vector<double> &xv) { return refMaxPool(xv, sh); };
  expectClose(dx.data(), numericGrad(f, toDouble(x), toDouble(dy)), 1e-5, 1e-5);
}

// ---------------------------------------------------------------------------------------------
// Activations and softmax

struct Activation {
  const char *name;
  void (*fwd)(const float *, float *, int64_t);
  void (*bwd)(const float *, const float *, float *, int64_t);
  double (*ref)(double);
};

TEST(RuntimeKernels, ActivationsForwardAndBackward) {
  const Activation acts[] = {
      {"relu", relu, reluBackward, [](double v) { return v > 0 ? v : 0.0; }},
      {"sigmoid", sigmoid, sigmoidBackward, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"tanh", tanhForward, tanhBackward, [](double v) { return std::tanh(v); }},
  };
  std::vector<float> x = randomVec(64, 71, -4.0, 4.0);
  for (float &v : x)
    if (std::fabs(v) < 1e-3f) // keep relu's kink out of the finite differences
      v = 0.5f;
  const auto dy = randomVec(x.size(), 72);
  for (const Activation &a : acts) {
    SCOPED_TRACE(a.name);
    std::vector<float> y(x.size(), kNaN), dx(x.size(), kNaN);
    a.fwd(x.data(), y.data(), x.size());
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      want[i] = a.ref(x[i]);
    expectClose(y.data(), want, 1e-6, 1e-7);
    a.bwd(dy.data(), y.data(), dx.data(), x.size());
    auto f = [&](const std::vector<double> &xv) {
      std::vector<double> r(xv.size());
      for (size_t i = 0; i < xv.size(); ++i)
        r[i] = a.ref(xv[i]);
      return r;
    };
    expectClose(dx.data(), numericGrad(f, toDouble(x), toDouble(dy)), 1e-5, 1e-6);
  }
}

TEST(RuntimeKernels, SigmoidIsStableForLargeInputs) {
  const float x[] = {-200.0f, -88.0f, 0.0f, 88.0f, 200.0f};
  float y[5];
  sigmoid(x, y, 5);
  for (float v : y)
    EXPECT_TRUE(std::isfinite(v));
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[2], 0.5f);
  EXPECT_EQ(y[4], 1.0f);
}

std::vector<double> refSoftmax(const std::vector<double> &x, int64_t outer, int64_t dim,
                               int64_t inner) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double mx = -INFINITY, sum = 0.0;
      for (int64_t d = 0; d < dim; ++d)
        mx = std::max(mx, x[(o * dim + d) * inner + i]);
      for (int64_t d = 0; d < dim; ++d)
        sum += std::exp(x[(o * dim + d) * inner + i] - mx);
      for (int64_t d = 0; d < dim; ++d)
        y[(o * dim + d) * inner + i] = std::exp(x[(o * dim + d) * inner + i] - mx) / sum;
    }
  return y;
}

TEST(RuntimeKernels, SoftmaxOnMiddleAxis) {
  const int64_t outer = 3, dim = 5, inner = 4;
  const auto x = randomVec(outer * dim * inner, 81, -3.0, 3.0);
  std::vector<float> y(x.size(), kNaN);
  softmax(x.data(), y.data(), outer, dim, inner);
  expectClose(y.data(), refSoftmax(toDouble(x), outer, dim, inner), 1e-6, 1e-7);

  const auto dy = randomVec(x.size(), 82);
  std::vector<float> dx(x.size(), kNaN);
  softmaxBackward(dy.data(), y.data(), dx.data(), outer, dim, inner);
  auto f = [&](const std::vector<double> &xv) { return refSoftmax(xv, outer, dim, inner); };
  expectClose(dx.data(), numericGrad(f, toDouble(x), toDouble(dy)), 1e-5, 1e-5);
}

TEST(RuntimeKernels, SoftmaxIsStableForLargeLogits) {
  const float x[] = {1000.0f, 1000.0f, 990.0f, -1000.0f};
  float y[4];
  softmax(x, y, 1, 4, 1);
  EXPECT_NEAR(y[0], 0.5 / (1 + 0.5 * std::exp(-10.0)), 1e-7);
  EXPECT_EQ(y[0], y[1]);
  EXPECT_EQ(y[3], 0.0f);
}

// ---------------------------------------------------------------------------------------------
// Losses

// Double-precision reference of the mean loss, with Keras' clipping for probabilities.
double refLoss(LossKind kind, bool logits, const std::vector<double> &p, const void *labels,
               int64_t batch, int64_t classes) {
  const double eps = 1e-7;
  auto clip = [&](double v) { return std::min(std::max(v, eps), 1.0 - eps); };
  const float *t = static_cast<const float *>(labels);
  double total = 0.0;
  switch (kind) {
  case LossKind::SparseCategoricalCrossentropy:
  case LossKind::CategoricalCrossentropy:
    for (int64_t b = 0; b < batch; ++b) {
      double mx = -INFINITY, sum = 0.0;
      for (int64_t j = 0; j < classes; ++j)
        mx = std::max(mx, p[b * classes + j]);
      for (int64_t j = 0; j < classes; ++j)
        sum += std::exp(p[b * classes + j] - mx);
      for (int64_t j = 0; j < classes; ++j) {
        const double target = kind == LossKind::SparseCategoricalCrossentropy
                                  ? (static_cast<const int64_t *>(labels)[b] == j ? 1.0 : 0.0)
                                  : t[b * classes + j];
        const double logp = logits ? p[b * classes + j] - mx - std::log(sum)
                                   : std::log(clip(p[b * classes + j]));
        total -= target * logp;
      }
    }
    return total / batch;
  case LossKind::BinaryCrossentropy:
    for (int64_t i = 0; i < batch * classes; ++i) {
      const double s = logits ? 1.0 / (1.0 + std::exp(-p[i])) : clip(p[i]);
      total -= t[i] * std::log(s) + (1 - t[i]) * std::log(1 - s);
    }
    return total / (batch * classes);
  case LossKind::MeanSquaredError:
    for (int64_t i = 0; i < batch * classes; ++i)
      total += (p[i] - t[i]) * (p[i] - t[i]);
    return total / (batch * classes);
  }
  return NAN;
}

float runLoss(LossKind kind, bool logits, const std::vector<float> &p, const void *labels,
              int64_t batch, int64_t classes) {
  float loss = kNaN;
  lossForward(kind, logits, p.data(), labels, &loss, batch, classes);
  return loss;
}

TEST(RuntimeKernels, SparseCrossentropyHandComputed) {
  const int64_t labels[] = {2, 0};
  // Logits: row 0 = lse(1,2,3) - 3 = log(1 + e^-1 + e^-2); row 1 = log 3.
  const std::vector<float> logits = {1, 2, 3, 1, 1, 1};
  const double want = (0.40760596444438030 + 1.0986122886681098) / 2;
  EXPECT_NEAR(runLoss(LossKind::SparseCategoricalCrossentropy, true, logits, labels, 2, 3), want,
              1e-6 * want);
  // Probabilities: -log(0.5) and -log(clip(0) = 1e-7).
  const std::vector<float> probs = {0.2f, 0.3f, 0.5f, 0.0f, 0.1f, 0.9f};
  const double wantP = (0.69314718055994531 + 16.118095650958319) / 2;
  EXPECT_NEAR(runLoss(LossKind::SparseCategoricalCrossentropy, false, probs, labels, 2, 3), wantP,
              1e-6 * wantP);
}

TEST(RuntimeKernels, CategoricalCrossentropyHandComputed) {
  const float labels[] = {0.0f, 0.25f, 0.75f, 1.0f, 0.0f, 0.0f};
  const std::vector<float> logits = {1, 2, 3, 0, 0, 0};
  // row 0: lse - 0.25*2 - 0.75*3 with lse = 3.4076059644443803; row 1: log 3.
  const double want = ((3.4076059644443803 - 0.5 - 2.25) + 1.0986122886681098) / 2;
  EXPECT_NEAR(runLoss(LossKind::CategoricalCrossentropy, true, logits, labels, 2, 3), want,
              1e-6 * want);
  const std::vector<float> probs = {0.2f, 0.3f, 0.5f, 0.5f, 0.25f, 0.25f};
  // row 0: -(0.25 log 0.3 + 0.75 log 0.5); row 1: -log 0.5.
  const double wantP = ((0.25 * 1.2039728043259361 + 0.75 * 0.69314718055994531) +
                        0.69314718055994531) / 2;
  EXPECT_NEAR(runLoss(LossKind::CategoricalCrossentropy, false, probs, labels, 2, 3), wantP,
              1e-6 * wantP);
}

TEST(RuntimeKernels, BinaryCrossentropyHandComputedAndStable) {
  const float labels[] = {1.0f, 0.0f, 0.0f, 1.0f};
  // Logits: softplus(-0) = log 2; x=100,y=0 -> 100 (+log1p(e^-100)); x=-100,y=0 -> ~3.7e-44;
  // x=-2,y=1 -> log(1 + e^2) = 2.1269280110429727. Mean over 4 elements.
  const std::vector<float> logits = {0.0f, 100.0f, -100.0f, -2.0f};
  const double want = (0.69314718055994531 + 100.0 + 0.0 + 2.1269280110429727) / 4;
  const float got = runLoss(LossKind::BinaryCrossentropy, true, logits, labels, 2, 2);
  EXPECT_TRUE(std::isfinite(got));
  EXPECT_NEAR(got, want, 1e-6 * want);
  // Probabilities: -log 0.8, -log(1 - clip(1.0)), -log(1 - 0.25), -log clip(0) = -log 1e-7.
  // The upper clip bound is 1 - 1e-7 rounded to float, 1 - 2^-23 (as in Keras' float32
  // clip), so the second term is -log(2^-23) = 23 log 2.
  const std::vector<float> probs = {0.8f, 1.0f, 0.25f, 0.0f};
  const double wantP = (0.22314355131420976 + 15.942385152878742 + 0.28768207245178093 +
                        16.118095650958319) / 4;
  EXPECT_NEAR(runLoss(LossKind::BinaryCrossentropy, false, probs, labels, 2, 2), wantP,
              1e-6 * wantP);
}

TEST(RuntimeKernels, MeanSquaredErrorHandComputedIgnoresFromLogits) {
  const float labels[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  const std::vector<float> pred = {1.5f, 2.0f, 1.0f, 4.0f, 5.0f, 9.0f};
  const double want = (0.25 + 0 + 4 + 0 + 0 + 9) / 6.0;
  for (bool logits : {false, true})
    EXPECT_NEAR(runLoss(LossKind::MeanSquaredError, logits, pred, labels, 2, 3), want,
                1e-6 * want);
}

TEST(RuntimeKernels, CrossentropyIsStableForHugeLogits) {
  const int64_t sparse[] = {1};
  const float dense[] = {0.0f, 1.0f};
  const std::vector<float> logits = {1000.0f, -1000.0f};
  EXPECT_NEAR(runLoss(LossKind::SparseCategoricalCrossentropy, true, logits, sparse, 1, 2), 2000.0,
              1e-3);
  EXPECT_NEAR(runLoss(LossKind::CategoricalCrossentropy, true, logits, dense, 1, 2), 2000.0, 1e-3);
  std::vector<float> grad(2, kNaN);
  lossBackward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), sparse, grad.data(),
               1, 2);
  EXPECT_FLOAT_EQ(grad[0], 1.0f);
  EXPECT_FLOAT_EQ(grad[1], -1.0f);
}

TEST(RuntimeKernels, SparseLabelOutOfRangeGivesNaNNotACrash) {
  const int64_t labels[] = {0, 7};
  const std::vector<float> logits = {1, 2, 3, 4, 5, 6};
  EXPECT_TRUE(std::isnan(runLoss(LossKind::SparseCategoricalCrossentropy, true, logits, labels, 2, 3)));
}

// An ignored label adds nothing and is not counted: rows {1000, -1000} with label 1 (loss
// 2000) and a -100 row give 2000 / 1; counted over the step's labels {1, -100, 0, -100} (this
// is its first micro-batch), 2000 / 2. The ignored row's gradient is zero, the other's is divided
// by the count. With every label ignored, loss and gradient are 0.
TEST(RuntimeKernels, IgnoredLabelsAddNothingAndAreNotCounted) {
  const int64_t labels[] = {1, -100, 0, -100};
  const std::vector<float> logits = {1000.0f, -1000.0f, 3.0f, 5.0f};
  float loss = kNaN;
  const LossRows own{true, -100, nullptr, labels, 2}, step{true, -100, nullptr, labels, 4},
      all{true, -100, nullptr, labels + 1, 1};
  lossForward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), labels, &loss, 2, 2,
              &own);
  EXPECT_NEAR(loss, 2000.0, 1e-3);
  lossForward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), labels, &loss, 2, 2,
              &step);
  EXPECT_NEAR(loss, 1000.0, 1e-3);
  std::vector<float> grad(4, kNaN);
  lossBackward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), labels, grad.data(), 2,
               2, &step);
  EXPECT_EQ(grad, (std::vector<float>{0.5f, -0.5f, 0.0f, 0.0f}));
  lossForward(LossKind::SparseCategoricalCrossentropy, true, logits.data() + 2, labels + 1, &loss,
              1, 2, &all);
  EXPECT_EQ(loss, 0.0f);
  lossBackward(LossKind::SparseCategoricalCrossentropy, true, logits.data() + 2, labels + 1,
               grad.data(), 1, 2, &all);
  EXPECT_EQ(grad[0], 0.0f);
  EXPECT_EQ(grad[1], 0.0f);
}

// Weighted rows (a Keras output mask): sum_r w_r loss_r / sum of the counted weights, with a
// row's mse and binary crossentropy the mean over its elements. Rows [1, 3] -> [0, 0] (mse 5)
// and [2, 2] -> [0, 0] (mse 4) of weights {1, 0}: 5 / 1; counted over the step's weights
// {1, 0, 1, 1}: 5 / 3. The weight-0 row's gradient is zero even where it holds NaN (padding),
// the other's is 2 (p - t) / 2 (elements) / 3.
TEST(RuntimeKernels, WeightedRowsAverageOverTheWeights) {
  const std::vector<float> pred = {1.0f, 3.0f, kNaN, 2.0f};
  const float targets[] = {0.0f, 0.0f, 0.0f, 0.0f};
  const float weights[] = {1.0f, 0.0f, 1.0f, 1.0f};
  const LossRows own{false, 0, weights, weights, 2}, step{false, 0, weights, weights, 4};
  float loss = kNaN;
  lossForward(LossKind::MeanSquaredError, false, pred.data(), targets, &loss, 2, 2, &own);
  EXPECT_FLOAT_EQ(loss, 5.0f);
  lossForward(LossKind::MeanSquaredError, false, pred.data(), targets, &loss, 2, 2, &step);
  EXPECT_FLOAT_EQ(loss, 5.0f / 3.0f);
  std::vector<float> grad(4, kNaN);
  lossBackward(LossKind::MeanSquaredError, false, pred.data(), targets, grad.data(), 2, 2, &step);
  EXPECT_FLOAT_EQ(grad[0], 1.0f / 3.0f);
  EXPECT_FLOAT_EQ(grad[1], 1.0f);
  EXPECT_EQ(grad[2], 0.0f);
  EXPECT_EQ(grad[3], 0.0f);
  // Sparse crossentropy from logits: row 0's loss lse(0, ln 3) - ln 3 = ln(4/3), weighted 2,
  // over weights 2 + 0.
  const std::vector<float> logits = {0.0f, std::log(3.0f), 5.0f, kNaN};
  const int64_t labels[] = {1, 0};
  const float twice[] = {2.0f, 0.0f};
  const LossRows sparse{false, 0, twice, twice, 2};
  lossForward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), labels, &loss, 2, 2,
              &sparse);
  EXPECT_NEAR(loss, std::log(4.0 / 3.0), 1e-6);
  lossBackward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), labels, grad.data(), 2,
               2, &sparse);
  EXPECT_NEAR(grad[0], 0.25, 1e-6);  // softmax 1/4 - 0
  EXPECT_NEAR(grad[1], -0.25, 1e-6); // 3/4 - 1
  EXPECT_EQ(grad[2], 0.0f);
}

// Sample weights (Keras's sample_weight): each sample's rows scale by its weight and the
// divisor stays the unweighted one. MSE rows [1, 3] -> [0, 0] (mean 5) and [2, 2] -> [0, 0]
// (mean 4), one row per sample, weights {3, 0.5}: (3 * 5 + 0.5 * 4) / 2 rows = 8.5; the
// gradient 2 (p - t) / 2 (elements) / 2 (rows) times the weight. Two rows per sample of weight
// 0 and 2 (rowsPerSample 2): only the second sample counts, (2 * 4) / 2 = 4, and the first
// sample's rows are zero even where they hold NaN.
TEST(RuntimeKernels, SampleWeightsScaleRowsNotTheDivisor) {
  const std::vector<float> pred = {1.0f, 3.0f, 2.0f, 2.0f};
  const float targets[] = {0.0f, 0.0f, 0.0f, 0.0f};
  const float perSample[] = {3.0f, 0.5f};
  LossRows rows{false, 0, nullptr, nullptr, 0, nullptr, perSample, 1};
  float loss = kNaN;
  lossForward(LossKind::MeanSquaredError, false, pred.data(), targets, &loss, 2, 2, &rows);
  EXPECT_FLOAT_EQ(loss, 8.5f);
  std::vector<float> grad(4, kNaN);
  lossBackward(LossKind::MeanSquaredError, false, pred.data(), targets, grad.data(), 2, 2, &rows);
  EXPECT_FLOAT_EQ(grad[0], 3.0f * 1.0f / 2.0f); // 2 * 1 / 2 / 2 * 3
  EXPECT_FLOAT_EQ(grad[1], 3.0f * 3.0f / 2.0f);
  EXPECT_FLOAT_EQ(grad[2], 0.5f * 2.0f / 2.0f);
  EXPECT_FLOAT_EQ(grad[3], 0.5f * 2.0f / 2.0f);
  const std::vector<float> padded = {kNaN, kNaN, 1.0f, 3.0f}; // one element per row
  const float twoSamples[] = {0.0f, 2.0f};
  rows.sampleWeights = twoSamples;
  rows.rowsPerSample = 2;
  lossForward(LossKind::MeanSquaredError, false, padded.data(), targets, &loss, 4, 1, &rows);
  EXPECT_FLOAT_EQ(loss, 2.0f * (1.0f + 9.0f) / 4.0f);
  lossBackward(LossKind::MeanSquaredError, false, padded.data(), targets, grad.data(), 4, 1, &rows);
  EXPECT_EQ(grad[0], 0.0f);
  EXPECT_EQ(grad[1], 0.0f);
  EXPECT_FLOAT_EQ(grad[2], 2.0f * 2.0f * 1.0f / 4.0f);
  EXPECT_FLOAT_EQ(grad[3], 2.0f * 2.0f * 3.0f / 4.0f);
  // With an ignored label the divisor is the counted labels: rows of labels {1, -100} from
  // logits {0, ln 3}, sample weights {2, 7}: 2 ln(4/3) / 1.
  const std::vector<float> logits = {0.0f, std::log(3.0f), 5.0f, kNaN};
  const int64_t labels[] = {1, -100};
  const float sparseWeights[] = {2.0f, 7.0f};
  const LossRows ignoring{true, -100, nullptr, labels, 2, nullptr, sparseWeights, 1};
  lossForward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), labels, &loss, 2, 2,
              &ignoring);
  EXPECT_NEAR(loss, 2.0 * std::log(4.0 / 3.0), 1e-6);
  lossBackward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), labels, grad.data(), 2,
               2, &ignoring);
  EXPECT_NEAR(grad[0], 2.0 * 0.25, 1e-6);
  EXPECT_NEAR(grad[1], -2.0 * 0.25, 1e-6);
  EXPECT_EQ(grad[2], 0.0f);
  EXPECT_EQ(grad[3], 0.0f);
}

// Label smoothing ε: sparse crossentropy with class y equals categorical crossentropy with the
// one-hot target of y (both smoothed to (1 - ε) onehot + ε / C), from logits and from
// probabilities, forward and backward; and each row's loss is the smoothed target's
// crossentropy: for logits {0, ln 3} (softmax {1/4, 3/4}), class 1, ε = 0.2 over 2 classes the
// target is {0.1, 0.9}: -0.1 ln(1/4) - 0.9 ln(3/4), the gradient softmax - target.
TEST(RuntimeKernels, LabelSmoothingSmoothsTheTargets) {
  const std::vector<float> logits = {0.0f, std::log(3.0f)};
  const int64_t label[] = {1};
  float loss = kNaN;
  lossForward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), label, &loss, 1, 2,
              nullptr, 0.2);
  EXPECT_NEAR(loss, -0.1 * std::log(0.25) - 0.9 * std::log(0.75), 1e-6);
  std::vector<float> grad(2, kNaN);
  lossBackward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), label, grad.data(), 1,
               2, nullptr, 0.2);
  EXPECT_NEAR(grad[0], 0.25 - 0.1, 1e-6);
  EXPECT_NEAR(grad[1], 0.75 - 0.9, 1e-6);

  const int64_t batch = 3, classes = 4;
  const int64_t sparse[] = {3, 0, 2};
  std::vector<float> onehot(batch * classes, 0.0f);
  for (int64_t b = 0; b < batch; ++b)
    onehot[size_t(b * classes + sparse[b])] = 1.0f;
  for (bool fromLogits : {true, false}) {
    std::vector<float> pred =
        randomVec(batch * classes, 17, fromLogits ? -2.0 : 0.05, fromLogits ? 2.0 : 0.9);
    float a = kNaN, b = kNaN;
    lossForward(LossKind::SparseCategoricalCrossentropy, fromLogits, pred.data(), sparse, &a, batch,
                classes, nullptr, 0.1);
    lossForward(LossKind::CategoricalCrossentropy, fromLogits, pred.data(), onehot.data(), &b,
                batch, classes, nullptr, 0.1);
    EXPECT_NEAR(a, b, 1e-6 * std::fabs(b)) << fromLogits;
    float plain = kNaN;
    lossForward(LossKind::SparseCategoricalCrossentropy, fromLogits, pred.data(), sparse, &plain,
                batch, classes);
    EXPECT_GT(std::fabs(a - plain), 1e-3) << fromLogits; // the smoothing changes the loss
    std::vector<float> ga(batch * classes, kNaN), gb(batch * classes, kNaN);
    lossBackward(LossKind::SparseCategoricalCrossentropy, fromLogits, pred.data(), sparse,
                 ga.data(), batch, classes, nullptr, 0.1);
    lossBackward(LossKind::CategoricalCrossentropy, fromLogits, pred.data(), onehot.data(),
                 gb.data(), batch, classes, nullptr, 0.1);
    for (size_t i = 0; i < ga.size(); ++i)
      EXPECT_NEAR(ga[i], gb[i], 1e-7) << fromLogits << " " << i;
    // Weights of one on every row average like the plain mean.
    const std::vector<float> ones(batch, 1.0f);
    const LossRows all{false, 0, ones.data(), ones.data(), batch};
    float weighted = kNaN;
    lossForward(LossKind::SparseCategoricalCrossentropy, fromLogits, pred.data(), sparse, &weighted,
                batch, classes, &all, 0.1);
    EXPECT_NEAR(weighted, a, 1e-6 * std::fabs(a)) << fromLogits;
  }
}

// Class weights (PyTorch's CrossEntropyLoss(weight)): rows {0, ln 3} of class 1 (loss ln 4/3,
// softmax {1/4, 3/4}) and {5, 5} of class 0 (loss ln 2), class weights {3, 1}: (1 ln 4/3 + 3
// ln 2) / (1 + 3); gradient rows w_y (softmax - onehot) / 4. With label smoothing 0.2 a row's
// terms are each weighted by its class: row 0's target {0.1, 0.9} gives 3 * 0.1 (lse - 0) +
// 1 * 0.9 (lse - ln 3), divided by the labels' weights as before.
TEST(RuntimeKernels, ClassWeightsWeighTheLabelsAndTheMean) {
  const std::vector<float> logits = {0.0f, std::log(3.0f), 5.0f, 5.0f};
  const int64_t labels[] = {1, 0};
  const float perClass[] = {3.0f, 1.0f};
  const LossRows rows{false, 0, nullptr, labels, 2, perClass};
  float loss = kNaN;
  lossForward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), labels, &loss, 2, 2,
              &rows);
  EXPECT_NEAR(loss, (std::log(4.0 / 3.0) + 3.0 * std::log(2.0)) / 4.0, 1e-6);
  std::vector<float> grad(4, kNaN);
  lossBackward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), labels, grad.data(), 2,
               2, &rows);
  EXPECT_NEAR(grad[0], 1.0 * 0.25 / 4.0, 1e-7);
  EXPECT_NEAR(grad[1], 1.0 * -0.25 / 4.0, 1e-7);
  EXPECT_NEAR(grad[2], 3.0 * -0.5 / 4.0, 1e-7);
  EXPECT_NEAR(grad[3], 3.0 * 0.5 / 4.0, 1e-7);
  const double lse0 = std::log(4.0), lse1 = 5.0 + std::log(2.0);
  lossForward(LossKind::SparseCategoricalCrossentropy, true, logits.data(), labels, &loss, 2, 2,
              &rows, 0.2);
  EXPECT_NEAR(loss,
              (3.0 * 0.1 * lse0 + 1.0 * 0.9 * (lse0 - std::log(3.0)) + 3.0 * 0.9 * (lse1 - 5.0) +
               1.0 * 0.1 * (lse1 - 5.0)) /
                  4.0,
              1e-6);
}

// A positive weight P (PyTorch's BCEWithLogitsLoss(pos_weight)): logit 0 (σ = 1/2) with
// target 1 and P = 3 costs 3 ln 2, with target 0 ln 2 (P only weighs positives); gradients
// (1 + (P - 1) y) σ - P y: -1 and 1/2, each over the 2 elements. One weight per column of
// [1, 2] elements: {3, 1}.
TEST(RuntimeKernels, PositiveWeightWeighsThePositiveTargets) {
  const std::vector<float> logits = {0.0f, 0.0f};
  const float targets[] = {1.0f, 0.0f};
  const float positive[] = {3.0f, 1.0f};
  float loss = kNaN;
  lossForward(LossKind::BinaryCrossentropy, true, logits.data(), targets, &loss, 1, 2, nullptr, 0.0,
              positive, 2);
  EXPECT_NEAR(loss, (3.0 * std::log(2.0) + std::log(2.0)) / 2.0, 1e-6);
  std::vector<float> grad(2, kNaN);
  lossBackward(LossKind::BinaryCrossentropy, true, logits.data(), targets, grad.data(), 1, 2,
               nullptr, 0.0, positive, 2);
  EXPECT_NEAR(grad[0], (3.0 * 0.5 - 3.0) / 2.0, 1e-7);
  EXPECT_NEAR(grad[1], 0.5 / 2.0, 1e-7);
  // A single value applies to every element; from probabilities P weighs -y log p.
  const std::vector<float> probs = {0.25f, 0.5f};
  lossForward(LossKind::BinaryCrossentropy, false, probs.data(), targets, &loss, 1, 2, nullptr, 0.0,
              positive, 1);
  EXPECT_NEAR(loss, (-3.0 * std::log(0.25) - std::log(0.5)) / 2.0, 1e-6);
}

// Every loss's backward against finite differences of refLoss, in both modes.
TEST(RuntimeKernels, LossBackwardMatchesFiniteDifferences) {
  const int64_t batch = 3, classes = 4, n = batch * classes;
  const int64_t sparse[] = {3, 0, 2};
  std::vector<float> soft = randomVec(n, 91, 0.0, 1.0); // soft targets in [0, 1]
  for (int64_t b = 0; b < batch; ++b) { // rows summing to one for the categorical case
    double s = 0;
    for (int64_t j = 0; j < classes; ++j)
      s += soft[b * classes + j];
    for (int64_t j = 0; j < classes; ++j)
      soft[b * classes + j] = static_cast<float>(soft[b * classes + j] / s);
  }
  const LossKind kinds[] = {LossKind::SparseCategoricalCrossentropy,
                            LossKind::CategoricalCrossentropy, LossKind::BinaryCrossentropy,
                            LossKind::MeanSquaredError};
  for (LossKind kind : kinds)
    for (bool logits : {true, false}) {
      SCOPED_TRACE(testing::Message() << "kind " << int(kind) << " logits " << logits);
      const void *labels = kind == LossKind::SparseCategoricalCrossentropy
                               ? static_cast<const void *>(sparse)
                               : static_cast<const void *>(soft.data());
      // Probabilities stay well inside the clip range so the derivative is the smooth one.
      const std::vector<float> pred =
          logits ? randomVec(n, 92, -3.0, 3.0) : randomVec(n, 93, 0.05, 0.95);
      const double want = refLoss(kind, logits, toDouble(pred), labels, batch, classes);
      const float got = runLoss(kind, logits, pred, labels, batch, classes);
      EXPECT_NEAR(got, want, 1e-6 * std::fabs(want));
      std::vector<float> grad(n, kNaN);
      lossBackward(kind, logits, pred.data(), labels, grad.data(), batch, classes);
      auto f = [&](const std::vector<double> &pv) {
        return std::vector<double>{refLoss(kind, logits, pv, labels, batch, classes)};
      };
      expectClose(grad.data(), numericGrad(f, toDouble(pred), {1.0}), 1e-5, 1e-5);
    }
}

TEST(RuntimeKernels, ClippedProbabilitiesGetZeroGradient) {
  const float targets[] = {1.0f, 1.0f};
  const std::vector<float> probs = {0.0f, 1.0f};
  std::vector<float> grad(2, kNaN);
  lossBackward(LossKind::BinaryCrossentropy, false, probs.data(), targets, grad.data(), 1, 2);
  EXPECT_EQ(grad[0], 0.0f);
  EXPECT_EQ(grad[1], 0.0f);
  const int64_t sparse[] = {0};
  lossBackward(LossKind::SparseCategoricalCrossentropy, false, probs.data(), sparse, grad.data(),
               1, 2);
  EXPECT_EQ(grad[0], 0.0f);
  EXPECT_EQ(grad[1], 0.0f);
}

// ---------------------------------------------------------------------------------------------
// Optimizers: two steps each, by hand.

TEST(RuntimeKernels, SgdTwoSteps) {
  float p[] = {1.0f, -2.0f};
  const float g1[] = {0.5f, 1.0f}, g2[] = {0.25f, -3.0f};
  sgdUpdate(p, g1, 2, 0.1f);
  EXPECT_FLOAT_EQ(p[0], 0.95f);
  EXPECT_FLOAT_EQ(p[1], -2.1f);
  sgdUpdate(p, g2, 2, 0.1f);
  EXPECT_FLOAT_EQ(p[0], 0.925f);
  EXPECT_FLOAT_EQ(p[1], -1.8f);
}

TEST(RuntimeKernels, MomentumTwoSteps) {
  float p[] = {1.0f}, v[] = {0.0f};
  const float g1[] = {0.5f}, g2[] = {0.25f};
  momentumUpdate(p, g1, v, 1, 0.1f, 0.9f);
  EXPECT_FLOAT_EQ(v[0], 0.5f);  // v = 0.9 * 0 + 0.5
  EXPECT_FLOAT_EQ(p[0], 0.95f); // p = 1 - 0.1 * 0.5
  momentumUpdate(p, g2, v, 1, 0.1f, 0.9f);
  EXPECT_FLOAT_EQ(v[0], 0.7f);  // v = 0.45 + 0.25
  EXPECT_FLOAT_EQ(p[0], 0.88f); // p = 0.95 - 0.07
}

TEST(RuntimeKernels, AdamTwoSteps) {
  float p[] = {1.0f, 0.0f}, m[] = {0.0f, 0.0f}, v[] = {0.0f, 0.0f};
  const float g1[] = {0.5f, 0.0f}, g2[] = {-0.25f, 0.0f};
  adamUpdate(p, g1, m, v, 2, 0.001f, 0.9f, 0.999f, 1e-8f, 1.0f);
  // m = 0.05, v = 0.00025; m/(1-0.9) = 0.5, sqrt(v/(1-0.999)) = 0.5:
  // p = 1 - 0.001 * 0.5 / (0.5 + 1e-8).
  EXPECT_FLOAT_EQ(m[0], 0.05f);
  EXPECT_FLOAT_EQ(v[0], 0.00025f);
  EXPECT_NEAR(p[0], 1.0 - 0.001 * 0.5 / (0.5 + 1e-8), 1e-7);
  EXPECT_EQ(p[1], 0.0f); // zero gradient: zero update, no NaN from 0/eps
  adamUpdate(p, g2, m, v, 2, 0.001f, 0.9f, 0.999f, 1e-8f, 2.0f);
  // m = 0.045 - 0.025 = 0.02; v = 0.00024975 + 0.0000625 = 0.00031225;
  // p -= (0.001 / 0.19) * 0.02 / (sqrt(0.00031225) / sqrt(0.001999) + 1e-8).
  EXPECT_NEAR(m[0], 0.02, 1e-8);
  EXPECT_NEAR(v[0], 0.00031225, 1e-10);
  const double p1 = 1.0 - 0.001 * 0.5 / (0.5 + 1e-8);
  const double want = p1 - (0.001 / 0.19) * 0.02 / (std::sqrt(0.00031225) / std::sqrt(0.001999) + 1e-8);
  EXPECT_NEAR(p[0], want, 2e-7);
  EXPECT_LT(p[0], static_cast<float>(p1)); // it moved
  EXPECT_EQ(p[1], 0.0f);
}

TEST(RuntimeKernels, AdamBiasCorrectionUsesTheStep) {
  // At step 1 the bias correction makes the update lr * sign(g) (up to eps) for any g.
  float p[] = {0.0f, 0.0f}, m[] = {0.0f, 0.0f}, v[] = {0.0f, 0.0f};
  const float g[] = {1e-3f, -50.0f};
  adamUpdate(p, g, m, v, 2, 0.01f, 0.9f, 0.999f, 1e-8f, 1.0f);
  EXPECT_NEAR(p[0], -0.01, 1e-6);
  EXPECT_NEAR(p[1], 0.01, 1e-7);
}

} // namespace

// 16-bit storage of mixed precision: conversions round to nearest even, widen exactly.
TEST(RuntimeKernels, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToHalf(HalfFormat::BF16, 1.0f), 0x3F80);
  // 1 + 2^-8 lies halfway between 1 (0x3F80, even) and 1 + 2^-7 (0x3F81): to even.
  EXPECT_EQ(floatToHalf(HalfFormat::BF16, 1.00390625f), 0x3F80);
  // 1 + 3 * 2^-8 lies halfway between 0x3F81 and 0x3F82 (even): up.
  EXPECT_EQ(floatToHalf(HalfFormat::BF16, 1.01171875f), 0x3F82);
  // Just above the halfway point rounds up.
  EXPECT_EQ(floatToHalf(HalfFormat::BF16, std::nextafter(1.00390625f, 2.0f)), 0x3F81);
  EXPECT_EQ(floatToHalf(HalfFormat::BF16, -2.0f), 0xC000);
  EXPECT_EQ(halfToFloat(HalfFormat::BF16, 0x3F81), 1.0078125f);
  EXPECT_TRUE(std::isnan(halfToFloat(HalfFormat::BF16, floatToHalf(HalfFormat::BF16, kNaN))));
  // The largest finite f32 rounds up to infinity in bf16 (its exponent is f32's).
  EXPECT_TRUE(std::isinf(halfToFloat(HalfFormat::BF16,
                                     floatToHalf(HalfFormat::BF16, 3.4028235e38f))));
}

TEST(RuntimeKernels, F16RoundsOverflowsAndKeepsSubnormals) {
  EXPECT_EQ(floatToHalf(HalfFormat::F16, 1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(HalfFormat::F16, 65504.0f), 0x7BFF); // the largest finite f16
  EXPECT_EQ(floatToHalf(HalfFormat::F16, 65520.0f), 0x7C00); // halfway above it: infinity
  EXPECT_EQ(floatToHalf(HalfFormat::F16, 0x1p-24f), 0x0001);  // the smallest subnormal
  EXPECT_EQ(floatToHalf(HalfFormat::F16, 0x1p-26f), 0x0000);  // below half of it: zero
  // 1 + 2^-11 is halfway between 1 (0x3C00, even) and 1 + 2^-10: to even.
  EXPECT_EQ(floatToHalf(HalfFormat::F16, 1.00048828125f), 0x3C00);
  EXPECT_EQ(halfToFloat(HalfFormat::F16, 0x3C01), 1.0009765625f);
}

TEST(RuntimeKernels, HalfArraysRoundTripAndConvert) {
  std::vector<float> x = randomVec(257, 11, -100.0, 100.0);
  std::vector<uint16_t> h(x.size()), g(x.size());
  std::vector<float> back(x.size(), kNaN);
  for (HalfFormat format : {HalfFormat::BF16, HalfFormat::F16}) {
    narrowHalf(format, x.data(), h.data(), int64_t(x.size()));
    widenHalf(format, h.data(), back.data(), int64_t(x.size()));
    // Relative rounding error at most half an ulp: 2^-8 for bf16 (8 significant bits), 2^-11
    // for f16 (11), in the normal range these values stay in.
    double bound = format == HalfFormat::BF16 ? 0x1p-8 : 0x1p-11;
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_LE(std::fabs(back[i] - x[i]), bound * std::fabs(x[i])) << i;
    // Widening then narrowing again is the identity.
    narrowHalf(format, back.data(), g.data(), int64_t(x.size()));
    EXPECT_EQ(g, h);
  }
  // bf16 -> f16 -> bf16 keeps values that fit both (small integers).
  std::vector<float> ints = {0.0f, 1.0f, -3.0f, 96.0f};
  std::vector<uint16_t> b(4), f(4), b2(4);
  narrowHalf(HalfFormat::BF16, ints.data(), b.data(), 4);
  convertHalf(HalfFormat::BF16, b.data(), HalfFormat::F16, f.data(), 4);
  EXPECT_EQ(halfToFloat(HalfFormat::F16, f[3]), 96.0f);
  convertHalf(HalfFormat::F16, f.data(), HalfFormat::BF16, b2.data(), 4);
  EXPECT_EQ(b2, b);
}

// Dynamic loss scaling: the scale is 2^(16 - halvings); overflow halves it and restarts the
// clean-step count, growthInterval clean steps double it, never above 2^24.
TEST(RuntimeKernels, LossScaleBacksOffGrowsAndClamps) {
  float halvings = 0, clean = 0, skipped = 0;
  updateLossScale(&halvings, &clean, &skipped, 0.0f, 3); // overflow
  EXPECT_EQ(halvings, 1.0f);
  EXPECT_EQ(clean, 0.0f);
  EXPECT_EQ(skipped, 1.0f);
  updateLossScale(&halvings, &clean, &skipped, 1.0f, 3);
  updateLossScale(&halvings, &clean, &skipped, 1.0f, 3);
  EXPECT_EQ(halvings, 1.0f);
  EXPECT_EQ(clean, 2.0f);
  updateLossScale(&halvings, &clean, &skipped, 1.0f, 3); // the third clean step doubles the scale
  EXPECT_EQ(halvings, 0.0f);
  EXPECT_EQ(clean, 0.0f);
  updateLossScale(&halvings, &clean, &skipped, 1.0f, 3);
  updateLossScale(&halvings, &clean, &skipped, 0.0f, 3); // an overflow restarts the count
  EXPECT_EQ(halvings, 1.0f);
  EXPECT_EQ(clean, 0.0f);
  halvings = -8;
  for (int i = 0; i < 3; ++i)
    updateLossScale(&halvings, &clean, &skipped, 1.0f, 3);
  EXPECT_EQ(halvings, -8.0f); // 2^24 is the ceiling
  EXPECT_EQ(skipped, 2.0f);   // the two overflows; clean steps are not counted
}

TEST(RuntimeKernels, LossScaleIsExactAndChecksFiniteness) {
  std::vector<float> x = randomVec(100, 5), up(100), down(100);
  lossScale(x.data(), up.data(), 100, 3.0f, false); // x 2^13
  lossScale(up.data(), down.data(), 100, 3.0f, true);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(up[i], x[i] * 8192.0f);
    EXPECT_EQ(down[i], x[i]); // powers of two: exact
  }
  EXPECT_TRUE(allFinite(x.data(), 100));
  x[57] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(allFinite(x.data(), 100));
  x[57] = kNaN;
  EXPECT_FALSE(allFinite(x.data(), 100));
}
