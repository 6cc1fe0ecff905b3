// Unit tests of the CPU kernels added for torchvision CNNs and transformers (issue #6):
// grouped convolution, average pooling, batch normalization, clip, concat/slice, dropout,
// batched matmul, transpose and layer normalization; and for recurrent and embedding models:
// the activations of graph.activation, mul, scale with an offset, embedding. Forward kernels are
// compared with naive double-precision references written here, backward kernels with central
// finite differences of those references (loss = sum(y * r) for a fixed random r), dropout
// with its own reproducibility and mask statistics. Outputs and workspaces are pre-filled with
// NaN so that a kernel that reads instead of overwriting them fails.
#include "graphc/runtime/kernels.h"
#include "graphc/runtime/workspace.h"

#include <gtest/gtest.h>

#include <cmath>
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

using Ref = std::function<std::vector<double>(const std::vector<double> &)>;

// Max |got - want| <= tol * max(max|want|, 1e-30).
void expectClose(const float *got, const std::vector<double> &want, double tol) {
  double maxAbs = 0.0, maxErr = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    maxAbs = std::max(maxAbs, std::fabs(want[i]));
    ASSERT_FALSE(std::isnan(got[i])) << "at " << i;
    maxErr = std::max(maxErr, std::fabs(got[i] - want[i]));
  }
  EXPECT_LE(maxErr, tol * std::max(maxAbs, 1e-30));
}

// d/d(in) of sum(ref(in) * r) by central differences in double.
std::vector<double> finiteDiff(const Ref &ref, std::vector<double> in, const std::vector<float> &r,
                               double h = 1e-4) {
  std::vector<double> g(in.size());
  auto loss = [&](const std::vector<double> &x) {
    auto y = ref(x);
    double s = 0.0;
    for (size_t i = 0; i < y.size(); ++i)
      s += y[i] * r[i];
    return s;
  };
  for (size_t i = 0; i < in.size(); ++i) {
    const double keep = in[i];
    in[i] = keep + h;
    const double up = loss(in);
    in[i] = keep - h;
    const double down = loss(in);
    in[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

std::vector<double> toDouble(const std::vector<float> &v) { return {v.begin(), v.end()}; }

//===----------------------------------------------------------------------===//
// Grouped convolution
//===----------------------------------------------------------------------===//

std::vector<double> convRef(const std::vector<double> &x, const std::vector<double> &w,
                            const Conv2dShape &sh) {
  std::vector<double> y(sh.n * sh.k * sh.oh * sh.ow, 0.0);
  const int64_t cg = sh.c / sh.groups, kg = sh.k / sh.groups;
  for (int64_t n = 0; n < sh.n; ++n)
    for (int64_t k = 0; k < sh.k; ++k)
      for (int64_t oy = 0; oy < sh.oh; ++oy)
        for (int64_t ox = 0; ox < sh.ow; ++ox) {
          double s = 0.0;
          const int64_t g = k / kg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < sh.r; ++r)
              for (int64_t q = 0; q < sh.s; ++q) {
                int64_t iy = oy * sh.strideH - sh.padTop + r * sh.dilationH;
                int64_t ix = ox * sh.strideW - sh.padLeft + q * sh.dilationW;
                if (iy < 0 || iy >= sh.h || ix < 0 || ix >= sh.w)
                  continue;
                s += x[((n * sh.c + g * cg + c) * sh.h + iy) * sh.w + ix] *
                     w[((k * cg + c) * sh.r + r) * sh.s + q];
              }
          y[((n * sh.k + k) * sh.oh + oy) * sh.ow + ox] = s;
        }
  return y;
}

/// conv2d, conv2dBackwardData and conv2dBackwardFilter on `sh` against the double reference
/// (with a bias) and its finite differences; outputs and workspace pre-filled with NaN. With
/// `noWorkspace` the kernels get a null workspace (pointwise convolutions need none).
void checkConvAgainstReference(const Conv2dShape &sh, uint64_t seed, bool noWorkspace = false) {
  const int64_t cg = sh.c / sh.groups;
  auto x = randomVec(sh.n * sh.c * sh.h * sh.w, seed);
  auto w = randomVec(sh.k * cg * sh.r * sh.s, seed + 1);
  auto bias = randomVec(sh.k, seed + 2);
  auto r = randomVec(sh.n * sh.k * sh.oh * sh.ow, seed + 3);
  std::vector<float> ws(noWorkspace ? 0 : conv2dWorkspaceBytes(cg, sh.r, sh.s, sh.oh, sh.ow) / 4,
                        kNaN);

  std::vector<float> y(r.size(), kNaN);
  conv2d(x.data(), w.data(), bias.data(), y.data(), sh, noWorkspace ? nullptr : ws.data());
  auto want = convRef(toDouble(x), toDouble(w), sh);
  for (int64_t i = 0; i < int64_t(want.size()); ++i)
    want[i] += bias[(i / (sh.oh * sh.ow)) % sh.k];
  expectClose(y.data(), want, 1e-5);

  std::vector<float> dx(x.size(), kNaN), dw(w.size(), kNaN);
  std::fill(ws.begin(), ws.end(), kNaN);
  conv2dBackwardData(r.data(), w.data(), dx.data(), sh, noWorkspace ? nullptr : ws.data());
  std::fill(ws.begin(), ws.end(), kNaN);
  conv2dBackwardFilter(r.data(), x.data(), dw.data(), sh, noWorkspace ? nullptr : ws.data());
  auto wd = toDouble(w), xd = toDouble(x);
  expectClose(dx.data(), finiteDiff([&](const std::vector<double> &v) { return convRef(v, wd, sh); }, xd, r), 1e-6);
  expectClose(dw.data(), finiteDiff([&](const std::vector<double> &v) { return convRef(xd, v, sh); }, wd, r), 1e-6);
}

class GroupedConv : public ::testing::TestWithParam<int64_t> {};

TEST_P(GroupedConv, ForwardAndBackwardMatchDoubleReference) {
  // 4 input and 8 output channels, 5x5 image, 3x3 window, stride 2, padding 1.
  checkConvAgainstReference(Conv2dShape{2, 4, 5, 5, 8, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, GetParam()},
                            1);
}

// Dense, two groups, and depthwise (groups = C = 4; 2 filters per channel).
INSTANTIATE_TEST_SUITE_P(Groups, GroupedConv, ::testing::Values(1, 2, 4));

// Depthwise convolutions run direct loops instead of im2col and a GEMM: a stride-1 dilated
// window with uneven padding (the border outputs have taps outside the image on either side),
// on a non-square image, one filter per channel.
TEST(DepthwiseConv, DilatedPaddedMatchesDoubleReference) {
  // 3 channels, 7x6 image, 3x2 window, dilation 2, padding 3 (top) and 2 (left): 7x6 output.
  checkConvAgainstReference(Conv2dShape{2, 3, 7, 6, 3, 3, 2, 7, 6, 1, 1, 3, 2, 2, 2, 3}, 11);
}

// A 1x1 convolution at stride 1 without padding reads and writes the tensors directly, with no
// workspace at all (a null pointer): dense and with two groups, on a non-square image.
TEST(PointwiseConv, RunsWithoutAWorkspace) {
  for (int64_t groups : {1, 2}) {
    // 6 input and 4 output channels, 5x3 image, 1x1 window: 5x3 output.
    const Conv2dShape sh{3, 6, 5, 3, 4, 1, 1, 5, 3, 1, 1, 0, 0, 1, 1, groups};
    ASSERT_TRUE(conv2dIsPointwise(sh.r, sh.s, sh.strideH, sh.strideW, sh.padTop, sh.padLeft, sh.h,
                                  sh.w, sh.oh, sh.ow));
    checkConvAgainstReference(sh, 21 + groups, /*noWorkspace=*/true);
  }
}

// 1x1 windows that are not pointwise keep the im2col path: with padding (7x5 output) and at
// stride 2 (3x2 output).
TEST(PointwiseConv, PaddedOrStridedOnesStillUseIm2col) {
  const Conv2dShape padded{2, 3, 5, 3, 4, 1, 1, 7, 5, 1, 1, 1, 1, 1, 1, 1};
  const Conv2dShape strided{2, 3, 5, 3, 4, 1, 1, 3, 2, 2, 2, 0, 0, 1, 1, 1};
  for (const Conv2dShape &sh : {padded, strided}) {
    EXPECT_FALSE(conv2dIsPointwise(sh.r, sh.s, sh.strideH, sh.strideW, sh.padTop, sh.padLeft, sh.h,
                                   sh.w, sh.oh, sh.ow));
    checkConvAgainstReference(sh, 31);
  }
}

//===----------------------------------------------------------------------===//
// Average pooling
//===----------------------------------------------------------------------===//

std::vector<double> avgPoolRef(const std::vector<double> &x, const Pool2dShape &sh,
                               bool includePad) {
  std::vector<double> y(sh.n * sh.c * sh.oh * sh.ow);
  for (int64_t nc = 0; nc < sh.n * sh.c; ++nc)
    for (int64_t oy = 0; oy < sh.oh; ++oy)
      for (int64_t ox = 0; ox < sh.ow; ++ox) {
        double s = 0.0;
        int64_t cells = 0, padded = 0;
        for (int64_t ky = 0; ky < sh.kernelH; ++ky)
          for (int64_t kx = 0; kx < sh.kernelW; ++kx) {
            int64_t iy = oy * sh.strideH - sh.padTop + ky, ix = ox * sh.strideW - sh.padLeft + kx;
            // The padded input here: padTop/padLeft on every side (symmetric test shapes).
            if (iy < -sh.padTop || iy >= sh.h + sh.padTop || ix < -sh.padLeft || ix >= sh.w + sh.padLeft)
              continue;
            ++padded;
            if (iy < 0 || iy >= sh.h || ix < 0 || ix >= sh.w)
              continue;
            ++cells;
            s += x[(nc * sh.h + iy) * sh.w + ix];
          }
        y[(nc * sh.oh + oy) * sh.ow + ox] = s / double(includePad ? padded : cells);
      }
  return y;
}

class AvgPool : public ::testing::TestWithParam<bool> {};

TEST_P(AvgPool, ForwardAndBackwardMatchDoubleReference) {
  const bool includePad = GetParam();
  // 6x6 input, 3x3 window, stride 2, padding 1 on every side: 3x3 output, border windows
  // overlap the padding.
  Pool2dShape sh{2, 3, 6, 6, 3, 3, 3, 3, 2, 2, 1, 1};
  auto x = randomVec(sh.n * sh.c * sh.h * sh.w, 5);
  auto r = randomVec(sh.n * sh.c * sh.oh * sh.ow, 6);
  std::vector<float> y(r.size(), kNaN), dx(x.size(), kNaN);
  avgPool2d(x.data(), y.data(), sh, includePad);
  expectClose(y.data(), avgPoolRef(toDouble(x), sh, includePad), 1e-6);
  avgPool2dBackward(r.data(), dx.data(), sh, includePad);
  expectClose(dx.data(),
              finiteDiff([&](const std::vector<double> &v) { return avgPoolRef(v, sh, includePad); },
                         toDouble(x), r),
              1e-6);
}

INSTANTIATE_TEST_SUITE_P(CountIncludePad, AvgPool, ::testing::Bool());

TEST(AvgPoolGlobal, IsTheMeanOfEachChannel) {
  Pool2dShape sh{1, 2, 3, 4, 1, 1, 3, 4, 1, 1, 0, 0};
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i)
    x[i] = float(i);
  float y[2] = {kNaN, kNaN};
  avgPool2d(x.data(), y, sh, false);
  EXPECT_FLOAT_EQ(y[0], 5.5f);
  EXPECT_FLOAT_EQ(y[1], 17.5f);
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

// Training-mode batch norm of x [n, c, inner] in double.
std::vector<double> batchNormRef(const std::vector<double> &x, const std::vector<double> &g,
                                 const std::vector<double> &b, int64_t n, int64_t c,
                                 int64_t inner, double eps) {
  std::vector<double> y(x.size());
  for (int64_t ch = 0; ch < c; ++ch) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j)
        mean += x[(i * c + ch) * inner + j];
    mean /= double(n * inner);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j)
        var += std::pow(x[(i * c + ch) * inner + j] - mean, 2);
    var /= double(n * inner);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) {
        int64_t k = (i * c + ch) * inner + j;
        y[k] = g[ch] * (x[k] - mean) / std::sqrt(var + eps) + b[ch];
      }
  }
  return y;
}

TEST(BatchNorm, TrainingForwardRunningStatsAndBackward) {
  const int64_t n = 3, c = 2, inner = 5;
  const float eps = 1e-5f, momentum = 0.1f;
  auto x = randomVec(n * c * inner, 7, -2.0, 3.0);
  auto g = randomVec(c, 8, 0.5, 1.5), b = randomVec(c, 9);
  std::vector<float> rm = {0.25f, -0.5f}, rv = {1.0f, 2.0f};
  std::vector<float> y(x.size(), kNaN), sm(c, kNaN), si(c, kNaN);
  std::vector<float> nm = rm, nv = rv; // updated in place, as the plan does
  batchNorm(x.data(), g.data(), b.data(), nm.data(), nv.data(), y.data(), nm.data(), nv.data(),
            sm.data(), si.data(), n, c, inner, eps, momentum, true);
  auto xd = toDouble(x), gd = toDouble(g), bd = toDouble(b);
  expectClose(y.data(), batchNormRef(xd, gd, bd, n, c, inner, eps), 1e-6);
  for (int64_t ch = 0; ch < c; ++ch) {
    double mean = 0, ss = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j)
        mean += xd[(i * c + ch) * inner + j];
    mean /= double(n * inner);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j)
        ss += std::pow(xd[(i * c + ch) * inner + j] - mean, 2);
    // PyTorch: the running variance takes the unbiased batch variance.
    EXPECT_NEAR(nm[ch], 0.9 * rm[ch] + 0.1 * mean, 1e-6);
    EXPECT_NEAR(nv[ch], 0.9 * rv[ch] + 0.1 * ss / double(n * inner - 1), 1e-6);
    EXPECT_NEAR(sm[ch], mean, 1e-6);
    EXPECT_NEAR(si[ch], 1.0 / std::sqrt(ss / double(n * inner) + eps), 1e-5);
  }

  auto r = randomVec(x.size(), 10);
  std::vector<float> dx(x.size(), kNaN), dg(c, kNaN), db(c, kNaN);
  batchNormBackward(r.data(), x.data(), g.data(), sm.data(), si.data(), dx.data(), dg.data(),
                    db.data(), n, c, inner, true);
  expectClose(dx.data(), finiteDiff([&](const std::vector<double> &v) { return batchNormRef(v, gd, bd, n, c, inner, eps); }, xd, r), 1e-5);
  expectClose(dg.data(), finiteDiff([&](const std::vector<double> &v) { return batchNormRef(xd, v, bd, n, c, inner, eps); }, gd, r), 1e-5);
  expectClose(db.data(), finiteDiff([&](const std::vector<double> &v) { return batchNormRef(xd, gd, v, n, c, inner, eps); }, bd, r), 1e-5);
}

TEST(BatchNorm, InferenceUsesRunningStatsAndLeavesThem) {
  const int64_t n = 2, c = 2, inner = 3;
  auto x = randomVec(n * c * inner, 11);
  std::vector<float> g = {2.0f, 0.5f}, b = {0.1f, -0.2f}, rm = {0.3f, -0.4f}, rv = {4.0f, 0.25f};
  std::vector<float> y(x.size(), kNaN), nm(c, kNaN), nv(c, kNaN), sm(c, kNaN), si(c, kNaN);
  batchNorm(x.data(), g.data(), b.data(), rm.data(), rv.data(), y.data(), nm.data(), nv.data(),
            sm.data(), si.data(), n, c, inner, 0.0f, 0.1f, false);
  EXPECT_EQ(nm, rm);
  EXPECT_EQ(nv, rv);
  for (int64_t i = 0; i < n * c * inner; ++i) {
    int64_t ch = (i / inner) % c;
    EXPECT_NEAR(y[i], g[ch] * (x[i] - rm[ch]) / std::sqrt(rv[ch]) + b[ch], 1e-6);
  }
  // A fixed affine map: dx = dy * scale * invstd.
  auto r = randomVec(x.size(), 12);
  std::vector<float> dx(x.size(), kNaN), dg(c, kNaN), db(c, kNaN);
  batchNormBackward(r.data(), x.data(), g.data(), sm.data(), si.data(), dx.data(), dg.data(),
                    db.data(), n, c, inner, false);
  for (int64_t i = 0; i < n * c * inner; ++i) {
    int64_t ch = (i / inner) % c;
    EXPECT_NEAR(dx[i], r[i] * g[ch] / std::sqrt(rv[ch]), 1e-6);
  }
}

//===----------------------------------------------------------------------===//
// Clip, concat, slice
//===----------------------------------------------------------------------===//

TEST(Clip, ForwardAndHardtanhBackwardAtTheBounds) {
  std::vector<float> x = {-1.0f, 0.0f, 3.0f, 6.0f, 7.0f, kNaN};
  std::vector<float> y(6, kNaN), dx(6, kNaN), dy(6, 1.0f);
  clip(x.data(), y.data(), 6, 0.0f, 6.0f);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 3.0f);
  EXPECT_EQ(y[3], 6.0f);
  EXPECT_EQ(y[4], 6.0f);
  EXPECT_TRUE(std::isnan(y[5]));
  clipBackward(dy.data(), y.data(), dx.data(), 6, 0.0f, 6.0f);
  // PyTorch's hardtanh_backward: zero at and beyond the bounds, pass strictly inside.
  EXPECT_EQ(dx[0], 0.0f);
  EXPECT_EQ(dx[1], 0.0f);
  EXPECT_EQ(dx[2], 1.0f);
  EXPECT_EQ(dx[3], 0.0f);
  EXPECT_EQ(dx[4], 0.0f);
  EXPECT_EQ(dx[5], 0.0f);
}

TEST(Concat, IntoAndSliceBackAlongTheMiddleAxis) {
  // a [2, 1, 3] and b [2, 2, 3] -> y [2, 3, 3]; slicing y gives a and b back.
  auto a = randomVec(6, 13), b = randomVec(12, 14);
  std::vector<float> y(18, kNaN), a2(6, kNaN), b2(12, kNaN);
  concatInto(a.data(), y.data(), 2, 1, 3, 0, 3);
  concatInto(b.data(), y.data(), 2, 2, 3, 1, 3);
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(y[(o * 3 + 0) * 3 + i], a[o * 3 + i]);
      for (int d = 0; d < 2; ++d)
        EXPECT_EQ(y[(o * 3 + 1 + d) * 3 + i], b[(o * 2 + d) * 3 + i]);
    }
  sliceFrom(y.data(), a2.data(), 2, 3, 0, 1, 3);
  sliceFrom(y.data(), b2.data(), 2, 3, 1, 2, 3);
  EXPECT_EQ(a2, a);
  EXPECT_EQ(b2, b);
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

TEST(Dropout, MaskIsAPureFunctionOfSeedOpStepAndIndex) {
  const int64_t n = 4096;
  std::vector<float> x(n, 1.0f), y1(n, kNaN), y2(n, kNaN), y3(n, kNaN), y4(n, kNaN);
  dropout(x.data(), y1.data(), n, 0.25f, 7, 3, 5.0f);
  dropout(x.data(), y2.data(), n, 0.25f, 7, 3, 5.0f);
  EXPECT_EQ(y1, y2); // recomputation reproduces the mask
  dropout(x.data(), y3.data(), n, 0.25f, 7, 3, 6.0f);
  dropout(x.data(), y4.data(), n, 0.25f, 7, 4, 5.0f);
  EXPECT_NE(y1, y3); // another step
  EXPECT_NE(y1, y4); // another op
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(y1[i] == 0.0f || y1[i] == 1.0f / 0.75f);
    EXPECT_EQ(y1[i] != 0.0f, dropoutKeep(7, 3, 5, i, 0.25f));
  }
  // The backward applies the same mask and scale.
  std::vector<float> dx(n, kNaN);
  dropoutBackward(x.data(), dx.data(), n, 0.25f, 7, 3, 5.0f);
  EXPECT_EQ(dx, y1);
}

TEST(Dropout, KeepsAboutOneMinusRatio) {
  // Over 2^18 elements the kept fraction is within 4 standard deviations of 1 - ratio, and
  // neighbouring elements are uncorrelated.
  const int64_t n = 1 << 18;
  for (float ratio : {0.1f, 0.5f, 0.9f}) {
    int64_t kept = 0, bothKept = 0;
    bool previous = false;
    for (int64_t i = 0; i < n; ++i) {
      bool k = dropoutKeep(1234, 0, 1, i, ratio);
      kept += k;
      bothKept += k && previous;
      previous = k;
    }
    const double p = 1.0 - ratio, sd = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(double(kept) / n, p, 4 * sd) << "ratio " << ratio;
    EXPECT_NEAR(double(bothKept) / (n - 1), p * p, 4 * std::sqrt(p * p * (1 - p * p) / n) + 1e-3)
        << "ratio " << ratio;
  }
}

TEST(Dropout, RatioZeroKeepsEverything) {
  std::vector<float> x = randomVec(100, 15), y(100, kNaN);
  dropout(x.data(), y.data(), 100, 0.0f, 0, 0, 1.0f);
  EXPECT_EQ(y, x);
}

//===----------------------------------------------------------------------===//
// Transformer kernels: batched matmul, transpose, layer normalization
//===----------------------------------------------------------------------===//

TEST(BatchMatmul, EveryTransposeCombinationMatchesNaiveProducts) {
  const int64_t batch = 3, m = 4, n = 5, k = 6;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      auto a = randomVec(batch * m * k, 21), b = randomVec(batch * k * n, 22);
      std::vector<float> c(batch * m * n, kNaN);
      batchMatmul(a.data(), b.data(), c.data(), batch, m, n, k, ta, tb);
      std::vector<double> want(c.size(), 0.0);
      for (int64_t z = 0; z < batch; ++z)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            for (int64_t p = 0; p < k; ++p) {
              double av = a[z * m * k + (ta ? p * m + i : i * k + p)];
              double bv = b[z * k * n + (tb ? j * k + p : p * n + j)];
              want[(z * m + i) * n + j] += av * bv;
            }
      SCOPED_TRACE(std::string("transA ") + (ta ? "1" : "0") + " transB " + (tb ? "1" : "0"));
      expectClose(c.data(), want, 1e-6);
    }
}

TEST(Transpose, Rank3And4PermutationsAndTheirInverse) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{4, 3, 5}, {1, 0, 2}}, {{4, 3, 5}, {1, 2, 0}}, {{4, 3, 5}, {2, 1, 0}},
      {{2, 3, 4, 5}, {0, 2, 1, 3}}, {{2, 3, 4, 5}, {3, 1, 0, 2}}, {{7}, {0}}};
  for (const auto &[dims, perm] : cases) {
    int64_t total = 1;
    for (int64_t d : dims)
      total *= d;
    auto x = randomVec(total, 23);
    TransposeShape sh{int64_t(dims.size()), {}, {}};
    std::vector<int64_t> ydims(dims.size()), inv(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
      sh.dims[i] = dims[i];
      sh.perm[i] = perm[i];
      ydims[i] = dims[perm[i]];
      inv[perm[i]] = int64_t(i);
    }
    std::vector<float> y(total, kNaN);
    transpose(x.data(), y.data(), sh);
    // Naive reference: y[idx] = x[idx permuted back], by decoding each y index.
    std::vector<double> want(total);
    for (int64_t flat = 0; flat < total; ++flat) {
      std::vector<int64_t> idx(dims.size());
      for (int64_t i = int64_t(dims.size()) - 1, rest = flat; i >= 0; --i) {
        idx[i] = rest % ydims[i];
        rest /= ydims[i];
      }
      int64_t src = 0;
      for (size_t a = 0; a < dims.size(); ++a)
        src = src * dims[a] + idx[inv[a]];
      want[flat] = x[src];
    }
    expectClose(y.data(), want, 0.0);
    // The inverse permutation (the gradient) restores x exactly.
    TransposeShape back{int64_t(dims.size()), {}, {}};
    for (size_t i = 0; i < dims.size(); ++i) {
      back.dims[i] = ydims[i];
      back.perm[i] = inv[i];
    }
    std::vector<float> z(total, kNaN);
    transpose(y.data(), z.data(), back);
    EXPECT_EQ(z, x);
  }
}

// Mean and biased variance of row r of x viewed as [rows, d].
std::pair<double, double> rowStats(const std::vector<double> &x, int64_t r, int64_t d) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < d; ++i)
    mean += x[r * d + i] / double(d);
  for (int64_t i = 0; i < d; ++i)
    var += std::pow(x[r * d + i] - mean, 2) / double(d);
  return {mean, var};
}

std::vector<double> layerNormRef(const std::vector<double> &x, const std::vector<double> &g,
                                 const std::vector<double> &b, int64_t rows, int64_t d,
                                 double eps) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    auto [mean, var] = rowStats(x, r, d);
    for (int64_t i = 0; i < d; ++i)
      y[r * d + i] = (x[r * d + i] - mean) / std::sqrt(var + eps) * g[i] + b[i];
  }
  return y;
}

TEST(LayerNorm, ForwardStatisticsAndBackwardByFiniteDifferences) {
  const int64_t rows = 6, d = 7;
  const float eps = 1e-5f;
  auto x = randomVec(rows * d, 24, -2.0, 3.0);
  auto g = randomVec(d, 25, 0.5, 1.5), b = randomVec(d, 26);
  std::vector<float> y(x.size(), kNaN), sm(rows, kNaN), si(rows, kNaN);
  layerNorm(x.data(), g.data(), b.data(), y.data(), sm.data(), si.data(), rows, d, eps);
  auto xd = toDouble(x), gd = toDouble(g), bd = toDouble(b);
  expectClose(y.data(), layerNormRef(xd, gd, bd, rows, d, eps), 1e-6);
  for (int64_t r = 0; r < rows; ++r) {
    auto [mean, var] = rowStats(xd, r, d);
    EXPECT_NEAR(sm[r], mean, 1e-6);
    EXPECT_NEAR(si[r], 1.0 / std::sqrt(var + eps), 1e-5);
  }

  auto r = randomVec(x.size(), 27);
  std::vector<float> dx(x.size(), kNaN), dg(d, kNaN), db(d, kNaN);
  layerNormBackward(r.data(), x.data(), g.data(), sm.data(), si.data(), dx.data(), dg.data(),
                    db.data(), rows, d);
  expectClose(dx.data(), finiteDiff([&](const std::vector<double> &v) { return layerNormRef(v, gd, bd, rows, d, eps); }, xd, r), 1e-5);
  expectClose(dg.data(), finiteDiff([&](const std::vector<double> &v) { return layerNormRef(xd, v, bd, rows, d, eps); }, gd, r), 1e-5);
  expectClose(db.data(), finiteDiff([&](const std::vector<double> &v) { return layerNormRef(xd, gd, v, rows, d, eps); }, bd, r), 1e-5);
}

std::vector<double> rmsNormRef(const std::vector<double> &x, const std::vector<double> &g,
                               int64_t rows, int64_t d, double eps) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double squares = 0.0;
    for (int64_t i = 0; i < d; ++i)
      squares += x[r * d + i] * x[r * d + i];
    for (int64_t i = 0; i < d; ++i)
      y[r * d + i] = x[r * d + i] / std::sqrt(squares / double(d) + eps) * g[i];
  }
  return y;
}

TEST(RmsNorm, ForwardStatisticAndBackwardByFiniteDifferences) {
  // Rows of a mean far from 0: a centred (layer-norm) kernel would give another result.
  const int64_t rows = 5, d = 9;
  const float eps = 1e-6f;
  auto x = randomVec(rows * d, 28, -1.0, 4.0);
  auto g = randomVec(d, 29, 0.5, 1.5);
  std::vector<float> y(x.size(), kNaN), si(rows, kNaN);
  rmsNorm(x.data(), g.data(), y.data(), si.data(), rows, d, eps);
  auto xd = toDouble(x), gd = toDouble(g);
  expectClose(y.data(), rmsNormRef(xd, gd, rows, d, eps), 1e-6);
  for (int64_t r = 0; r < rows; ++r) {
    double squares = 0.0;
    for (int64_t i = 0; i < d; ++i)
      squares += xd[r * d + i] * xd[r * d + i];
    EXPECT_NEAR(si[r], 1.0 / std::sqrt(squares / double(d) + eps), 1e-6);
  }

  auto r = randomVec(x.size(), 30);
  std::vector<float> dx(x.size(), kNaN), dg(d, kNaN);
  rmsNormBackward(r.data(), x.data(), g.data(), si.data(), dx.data(), dg.data(), rows, d);
  expectClose(
      dx.data(),
      finiteDiff([&](const std::vector<double> &v) { return rmsNormRef(v, gd, rows, d, eps); }, xd,
                 r),
      1e-5);
  expectClose(
      dg.data(),
      finiteDiff([&](const std::vector<double> &v) { return rmsNormRef(xd, v, rows, d, eps); }, gd,
                 r),
      1e-5);
}

//===----------------------------------------------------------------------===//
// graph.activation kinds, mul, scale with offset, embedding
//===----------------------------------------------------------------------===//

// The textbook definitions in double, written independently of elementwise_math.h.
double activationRef(Activation kind, double alpha, double x) {
  switch (kind) {
  case Activation::Gelu:
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case Activation::GeluTanh:
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  case Activation::Elu:
    return x > 0 ? x : alpha * (std::exp(x) - 1.0);
  case Activation::Selu:
    return 1.0507009873554804934 * (x > 0 ? x : 1.6732632423543772848 * (std::exp(x) - 1.0));
  case Activation::Silu:
    return x / (1.0 + std::exp(-x));
  case Activation::Softplus:
    return std::log(1.0 + std::exp(x));
  case Activation::Softsign:
    return x / (1.0 + std::fabs(x));
  case Activation::LeakyRelu:
    return x > 0 ? x : alpha * x;
  case Activation::Exp:
    return std::exp(x);
  case Activation::Log:
    return std::log(x);
  case Activation::Pow:
    return std::pow(x, alpha);
  case Activation::Abs:
    return std::fabs(x);
  case Activation::Equal:
    return x == alpha ? 1.0 : 0.0;
  case Activation::Greater:
    return x > alpha ? 1.0 : 0.0;
  }
  return 0.0;
}

TEST(BroadcastMul, EveryRowTimesTheFactor) {
  const int64_t rows = 5, n = 7;
  auto a = randomVec(rows * n, 42), b = randomVec(n, 43);
  std::vector<float> y(a.size(), kNaN);
  broadcastMul(a.data(), b.data(), y.data(), rows, n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(y[r * n + i], a[r * n + i] * b[i]) << "row " << r << ", element " << i;
}

TEST(Rotary, MatchesItsDefinitionAndTheTransposeIsItsAdjoint) {
  // Rows of 2 positions x 6 features (d = 6, halves of 3), tables [2, 6] shared by 3 rows.
  const int64_t rows = 3, n = 12, d = 6, half = 3;
  auto x = randomVec(rows * n, 44), c = randomVec(n, 45), s = randomVec(n, 46);
  std::vector<float> y(x.size(), kNaN);
  rotary(x.data(), c.data(), s.data(), y.data(), rows, n, d, false);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) {
      const float *p = x.data() + r * n;
      const float rotated = i % d < half ? -p[i + half] : p[i - half];
      EXPECT_EQ(y[r * n + i], p[i] * c[i] + rotated * s[i]) << "row " << r << ", element " << i;
    }
  // <rotary(x), g> = <x, rotary^T(g)> for any g: the transpose is the gradient.
  auto g = randomVec(x.size(), 47);
  std::vector<float> t(x.size(), kNaN);
  rotary(g.data(), c.data(), s.data(), t.data(), rows, n, d, true);
  double forward = 0.0, adjoint = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    forward += double(y[i]) * g[i];
    adjoint += double(x[i]) * t[i];
  }
  EXPECT_NEAR(forward, adjoint, 1e-5 * (std::fabs(forward) + 1.0));
}

/// activation(kind) on `x` within 1e-6 of activationRef, and its backward of `r` within 1e-5 of
/// central finite differences of the reference.
void expectActivationMatches(Activation kind, float alpha, const std::vector<float> &x,
                             const std::vector<float> &r) {
  const int64_t n = int64_t(x.size());
  auto ref = [&](const std::vector<double> &v) {
    std::vector<double> y(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      y[i] = activationRef(kind, alpha, v[i]);
    return y;
  };
  std::vector<float> y(n, kNaN), dx(n, kNaN);
  activation(kind, alpha, x.data(), y.data(), n);
  expectClose(y.data(), ref(toDouble(x)), 1e-6);
  activationBackward(kind, alpha, r.data(), x.data(), dx.data(), n);
  expectClose(dx.data(), finiteDiff(ref, toDouble(x), r), 1e-5);
}

TEST(Activation, EveryKindMatchesItsDefinitionAndFiniteDifferences) {
  const int64_t n = 64;
  // Away from 0 (the kinks of elu and leaky_relu) by more than the difference step.
  auto x = randomVec(n, 40, -4.0, 4.0);
  for (float &v : x)
    if (std::fabs(v) < 1e-2f)
      v += 0.05f;
  auto r = randomVec(n, 41);
  for (int k = 0; k <= static_cast<int>(Activation::LeakyRelu); ++k) {
    const Activation kind = static_cast<Activation>(k);
    const float alpha = kind == Activation::LeakyRelu ? 0.2f : 0.7f;
    SCOPED_TRACE("activation kind " + std::to_string(k));
    expectActivationMatches(kind, alpha, x, r);
  }
  // abs on both signs (its kink at 0 is avoided as elu's is).
  SCOPED_TRACE("activation kind abs");
  expectActivationMatches(Activation::Abs, 1.0f, x, r);
}

TEST(Activation, ExpLogAndPowMatchTheirDefinitionsAndFiniteDifferences) {
  // Positive inputs (log's and a fractional power's domain); every exponent that pow treats as
  // its own op, and two that go through powf.
  const int64_t n = 64;
  auto x = randomVec(n, 48, 0.3, 3.0);
  auto r = randomVec(n, 49);
  const std::vector<std::pair<Activation, float>> cases = {
      {Activation::Exp, 1.0f},  {Activation::Log, 1.0f},  {Activation::Pow, 2.0f},
      {Activation::Pow, 1.0f},  {Activation::Pow, 0.5f},  {Activation::Pow, -1.0f},
      {Activation::Pow, -0.5f}, {Activation::Pow, 0.75f}, {Activation::Pow, 3.0f}};
  for (auto [kind, alpha] : cases) {
    SCOPED_TRACE("activation kind " + std::to_string(static_cast<int>(kind)) + ", alpha " +
                 std::to_string(alpha));
    expectActivationMatches(kind, alpha, x, r);
  }
  // The exponents of square, sqrt, reciprocal and rsqrt give those ops' float32 bits, which
  // PyTorch's x * x, sqrt and reciprocal give too (powf may differ in the last place).
  std::vector<float> y(n);
  for (auto [alpha, exact] : std::vector<std::pair<float, float (*)(float)>>{
           {2.0f, [](float v) { return v * v; }},
           {0.5f, [](float v) { return std::sqrt(v); }},
           {-1.0f, [](float v) { return 1.0f / v; }},
           {-0.5f, [](float v) { return 1.0f / std::sqrt(v); }}}) {
    activation(Activation::Pow, alpha, x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(y[i], exact(x[i])) << "alpha " << alpha << ", element " << i;
  }
}

/// activation(kind, alpha) of the 5 elements x is `expected` (a 0/1 mask), and its gradient
/// is 0 everywhere.
void expectMask(Activation kind, float alpha, const float (&x)[5], const float (&expected)[5]) {
  const float g[5] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  float y[5], dx[5];
  activation(kind, alpha, x, y, 5);
  activationBackward(kind, alpha, g, x, dx, 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(y[i], expected[i]) << "element " << i;
    EXPECT_EQ(dx[i], 0.0f) << "element " << i;
  }
}

TEST(Activation, EqualIsAMaskWithoutGradient) {
  const float x[5] = {0.0f, 3.0f, -0.0f, 2.0f, 3.0f};
  expectMask(Activation::Equal, 3.0f, x, {0.0f, 1.0f, 0.0f, 0.0f, 1.0f});
  expectMask(Activation::Equal, 0.0f, x, {1.0f, 0.0f, 1.0f, 0.0f, 0.0f}); // -0 equals 0
}

TEST(Activation, GreaterIsAMaskWithoutGradient) {
  // Strictly greater: 3 > 3 is false; NaN compares false.
  const float x[5] = {0.0f, 3.0f, 3.5f, -4.0f, std::numeric_limits<float>::quiet_NaN()};
  expectMask(Activation::Greater, 3.0f, x, {0.0f, 0.0f, 1.0f, 0.0f, 0.0f});
}

TEST(Activation, SoftplusIsLinearAboveTwentyAndNaNPropagates) {
  const float x[3] = {30.0f, -30.0f, std::numeric_limits<float>::quiet_NaN()};
  float y[3];
  activation(Activation::Softplus, 1.0f, x, y, 3);
  EXPECT_EQ(y[0], 30.0f);
  EXPECT_NEAR(y[1], std::exp(-30.0), 1e-18);
  EXPECT_TRUE(std::isnan(y[2]));
  activation(Activation::Gelu, 1.0f, x + 2, y, 1);
  EXPECT_TRUE(std::isnan(y[0]));
}

TEST(MulScaleFill, ProductsAffineMapsAndConstants) {
  const int64_t n = 10;
  auto a = randomVec(n, 42), b = randomVec(n, 43);
  std::vector<float> y(n, kNaN);
  mul(a.data(), b.data(), y.data(), n);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(y[i], a[i] * b[i]);
  // In place, as the planner may reuse an operand's buffer.
  scale(y.data(), y.data(), n, -1.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(y[i], 1.0f - a[i] * b[i]);
  fill(y.data(), n, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(y[i], 0.0f);
}

TEST(Embedding, GathersRowsAndSumsRepeatedIndicesInTheBackward) {
  const int64_t vocab = 5, features = 3;
  auto table = randomVec(vocab * features, 44);
  // 2 and 4 repeat; 7, -1, 1.5 and NaN are not rows of the table.
  const std::vector<float> ids = {2, 0, 4, 2, 7, -1, 1.5f, std::numeric_limits<float>::quiet_NaN(), 4};
  const int64_t count = static_cast<int64_t>(ids.size());
  std::vector<float> rows(count * features, kNaN);
  embedding(ids.data(), table.data(), rows.data(), count, vocab, features);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t f = 0; f < features; ++f) {
      const bool valid = i < 4 || i == 8;
      const float want = valid ? table[static_cast<int64_t>(ids[i]) * features + f] : 0.0f;
      EXPECT_EQ(rows[i * features + f], want) << "index " << i;
    }
  auto grad = randomVec(count * features, 45);
  std::vector<float> dtable(vocab * features, kNaN);
  embeddingBackward(grad.data(), ids.data(), dtable.data(), count, vocab, features);
  for (int64_t f = 0; f < features; ++f) {
    EXPECT_EQ(dtable[0 * features + f], grad[1 * features + f]);
    EXPECT_EQ(dtable[1 * features + f], 0.0f);
    EXPECT_EQ(dtable[2 * features + f], grad[0 * features + f] + grad[3 * features + f]);
    EXPECT_EQ(dtable[3 * features + f], 0.0f);
    EXPECT_EQ(dtable[4 * features + f], grad[2 * features + f] + grad[8 * features + f]);
  }
}

} // namespace
