// The upsampling arithmetic of importers/common/ImageOps.h: the taps and crops of one axis as a
// transposed convolution, spelled out for the factors models use, and checked against a
// direct evaluation of the interpolation (ONNX Resize's formula, the source position clamped
// to the input) for every factor 1..6, input length 1..9, both coordinate modes; and which
// nearest rounding modes repeat each element.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "importers/common/ImageOps.h"

using graphc::nearestRepeatsEachElement;
using graphc::SourceCoordinates;
using graphc::upsampleAxis;
using graphc::UpsampleAxis;
using graphc::UpsampleInterpolation;

namespace {

void expectTaps(const UpsampleAxis &axis, std::vector<float> taps) {
  ASSERT_EQ(axis.taps.size(), taps.size());
  for (size_t k = 0; k < taps.size(); ++k)
    EXPECT_FLOAT_EQ(axis.taps[k], taps[k]) << "tap " << k;
}

TEST(UpsampleAxis, NearestRepeats) {
  UpsampleAxis axis = upsampleAxis(UpsampleInterpolation::Nearest, SourceCoordinates::HalfPixel, 3);
  expectTaps(axis, {1, 1, 1}); // each input written to 3 outputs, nothing cropped
  EXPECT_EQ(axis.cropBefore, 0);
  EXPECT_EQ(axis.cropAfter, 0);
  EXPECT_FALSE(axis.replicateEdges);
}

TEST(UpsampleAxis, BilinearHalfPixelByTwo) {
  // PyTorch's bilinear x2 with align_corners=False: out[2i] = .75 x[i] + .25 x[i-1],
  // out[2i+1] = .75 x[i] + .25 x[i+1]; as tap k at d = k - 3 (d = o - 2p, p = i + 1 the
  // padded index) of the input with its edges replicated: 2 (n + 1) + 4 outputs, crop 3 + 3.
  UpsampleAxis axis = upsampleAxis(UpsampleInterpolation::Linear, SourceCoordinates::HalfPixel, 2);
  expectTaps(axis, {0.25f, 0.75f, 0.75f, 0.25f});
  EXPECT_EQ(axis.cropBefore, 3);
  EXPECT_EQ(axis.cropAfter, 3);
  EXPECT_TRUE(axis.replicateEdges);
}

TEST(UpsampleAxis, BilinearHalfPixelByThree) {
  // Source (o + .5) / 3 - .5: outputs 3i, 3i + 1, 3i + 2 sit at i - 1/3, i, i + 1/3.
  UpsampleAxis axis = upsampleAxis(UpsampleInterpolation::Linear, SourceCoordinates::HalfPixel, 3);
  expectTaps(axis, {1.f / 3, 2.f / 3, 1.f, 2.f / 3, 1.f / 3});
  EXPECT_EQ(axis.cropBefore, 4); // d from -4
  EXPECT_EQ(axis.cropAfter, 4);  // 3 + 5 taps - 4
}

TEST(UpsampleAxis, LinearAsymmetricByTwo) {
  // Source o / 2: out[2i] = x[i], out[2i+1] = .5 x[i] + .5 x[i+1].
  UpsampleAxis axis = upsampleAxis(UpsampleInterpolation::Linear, SourceCoordinates::Asymmetric, 2);
  expectTaps(axis, {0.5f, 1.0f, 0.5f});
  EXPECT_EQ(axis.cropBefore, 3);
  EXPECT_EQ(axis.cropAfter, 2);
}

TEST(UpsampleAxis, FactorOneIsTheIdentity) {
  UpsampleAxis axis = upsampleAxis(UpsampleInterpolation::Linear, SourceCoordinates::HalfPixel, 1);
  expectTaps(axis, {1.0f});
  EXPECT_EQ(axis.cropBefore + axis.cropAfter, 0);
  EXPECT_FALSE(axis.replicateEdges);
}

/// The transposed convolution of `axis` applied to `x` (edges replicated when it says so):
/// out[o] = sum over p, k with s p + k - cropBefore = o of taps[k] x'[p].
std::vector<double> transposedConvolution(const UpsampleAxis &axis, const std::vector<double> &x) {
  std::vector<double> padded = x;
  if (axis.replicateEdges) {
    padded.insert(padded.begin(), x.front());
    padded.push_back(x.back());
  }
  const int64_t n = int64_t(x.size()), s = axis.scale, k = int64_t(axis.taps.size());
  const int64_t full = s * (int64_t(padded.size()) - 1) + k;
  EXPECT_EQ(full - axis.cropBefore - axis.cropAfter, s * n);
  std::vector<double> out(size_t(s * n), 0.0);
  for (int64_t p = 0; p < int64_t(padded.size()); ++p)
    for (int64_t t = 0; t < k; ++t) {
      const int64_t o = s * p + t - axis.cropBefore;
      if (o >= 0 && o < s * n)
        out[size_t(o)] += double(axis.taps[size_t(t)]) * padded[size_t(p)];
    }
  return out;
}

/// Linear interpolation as ONNX Resize defines it: the source position of output o, its two
/// neighbours clamped to the input, weighted by distance.
std::vector<double> interpolate(SourceCoordinates coordinates, int64_t s,
                                const std::vector<double> &x) {
  const int64_t n = int64_t(x.size());
  std::vector<double> out;
  for (int64_t o = 0; o < s * n; ++o) {
    double source = coordinates == SourceCoordinates::HalfPixel
                        ? (double(o) + 0.5) / double(s) - 0.5
                        : double(o) / double(s);
    source = std::clamp(source, 0.0, double(n - 1));
    const int64_t below = int64_t(std::floor(source)), above = std::min(below + 1, n - 1);
    const double fraction = source - double(below);
    out.push_back((1.0 - fraction) * x[size_t(below)] + fraction * x[size_t(above)]);
  }
  return out;
}

TEST(UpsampleAxis, TransposedConvolutionIsTheInterpolation) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  for (SourceCoordinates coordinates :
       {SourceCoordinates::HalfPixel, SourceCoordinates::Asymmetric})
    for (int64_t s = 1; s <= 6; ++s)
      for (int64_t n = 1; n <= 9; ++n) {
        std::vector<double> x(static_cast<size_t>(n), 0.0);
        for (double &v : x)
          v = value(gen);
        const std::vector<double> got =
            transposedConvolution(upsampleAxis(UpsampleInterpolation::Linear, coordinates, s), x);
        const std::vector<double> want = interpolate(coordinates, s, x);
        for (size_t o = 0; o < want.size(); ++o)
          EXPECT_NEAR(got[o], want[o], 1e-6) << "scale " << s << " length " << n << " output " << o;
        const std::vector<double> repeated =
            transposedConvolution(upsampleAxis(UpsampleInterpolation::Nearest, coordinates, s), x);
        for (size_t o = 0; o < repeated.size(); ++o)
          EXPECT_EQ(repeated[o], x[o / size_t(s)]);
      }
}

TEST(NearestRepeats, WhichRoundingRepeats) {
  // PyTorch's mode='nearest' (asymmetric, floor) and 'nearest-exact' (half_pixel, rounded)
  // repeat at any factor; asymmetric rounding reads the next element from o / s = i + 1/2 on.
  EXPECT_TRUE(nearestRepeatsEachElement("asymmetric", "floor", 5, 3));
  EXPECT_TRUE(nearestRepeatsEachElement("half_pixel", "round_prefer_floor", 5, 3));
  EXPECT_TRUE(nearestRepeatsEachElement("pytorch_half_pixel", "round_prefer_ceil", 5, 4));
  EXPECT_TRUE(
      nearestRepeatsEachElement("asymmetric", "round_prefer_floor", 5, 2)); // 1/2 rounds down
  EXPECT_FALSE(nearestRepeatsEachElement("asymmetric", "round_prefer_floor", 5, 3));
  EXPECT_FALSE(nearestRepeatsEachElement("asymmetric", "round_prefer_ceil", 5, 2));
  EXPECT_FALSE(nearestRepeatsEachElement("half_pixel", "floor", 5, 2)); // output 0 reads -1/4
  EXPECT_FALSE(nearestRepeatsEachElement("asymmetric", "ceil", 5, 2));
  // align_corners reads o (n - 1) / (s n - 1): a repeat for some lengths only (5 at x2:
  // 0, .44, .89, 1.33, ... rounds to 0, 0, 1, 1, ...), which is why each axis is checked.
  EXPECT_TRUE(nearestRepeatsEachElement("align_corners", "round_prefer_floor", 5, 2));
  EXPECT_FALSE(nearestRepeatsEachElement("align_corners", "round_prefer_floor", 5, 3));
  EXPECT_FALSE(nearestRepeatsEachElement("tf_crop_and_resize", "floor", 5, 2));
}

} // namespace
