// The upsampling arithmetic of importers/common/ImageOps.h: the taps and crops of one axis as a
// transposed convolution, spelled out for the factors models use, and checked against a
// direct evaluation of the interpolation (ONNX Resize's formula, the source position clamped
// to the input) for every factor 1..6, input length 1..9, both coordinate modes; and which
// nearest rounding modes repeat each element. And resizeMatrix (any length, ONNX's modes) on
// cases spelled out, and against the upsampling at whole factors.
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

using graphc::ResizeAxis;
using graphc::resizeMatrix;

/// resizeMatrix's [in, out] matrix as columns: column o's weights on inputs 0 .. in - 1.
void expectColumns(const ResizeAxis &axis, const std::vector<std::vector<float>> &columns) {
  const std::vector<float> m = resizeMatrix(axis);
  ASSERT_EQ(m.size(), size_t(axis.in * axis.out));
  ASSERT_EQ(columns.size(), size_t(axis.out));
  for (int64_t o = 0; o < axis.out; ++o)
    for (int64_t i = 0; i < axis.in; ++i)
      EXPECT_NEAR(m[size_t(i * axis.out + o)], columns[size_t(o)][size_t(i)], 1e-6)
          << "output " << o << " input " << i;
}

ResizeAxis resizeAxis(int64_t in, int64_t out, ResizeAxis::Mode mode,
                      ResizeAxis::Coordinates coordinates) {
  ResizeAxis axis;
  axis.in = in;
  axis.out = out;
  axis.scale = double(out) / double(in);
  axis.inverseScale = float(in) / float(out);
  axis.mode = mode;
  axis.coordinates = coordinates;
  return axis;
}

TEST(ResizeMatrix, BilinearShrinkByThreeQuarters) {
  // 4 -> 3, source (o + .5) 4/3 - .5: 1/6, 3/2, 17/6.
  expectColumns(resizeAxis(4, 3, ResizeAxis::Mode::Linear, ResizeAxis::Coordinates::HalfPixel),
                {{5.f / 6, 1.f / 6, 0, 0},   // between 0 and 1
                 {0, 0.5f, 0.5f, 0},         // halfway between 1 and 2
                 {0, 0, 1.f / 6, 5.f / 6}}); // between 2 and 3
}

TEST(ResizeMatrix, NearestAsymmetricFloorNineToFour) {
  // PyTorch's mode='nearest' to size 4 of 9: floor(o 9/4) = 0, 2, 4, 6 (not a repeat).
  ResizeAxis axis =
      resizeAxis(9, 4, ResizeAxis::Mode::Nearest, ResizeAxis::Coordinates::Asymmetric);
  axis.rounding = ResizeAxis::Rounding::Floor;
  std::vector<std::vector<float>> columns(4, std::vector<float>(9, 0.0f));
  for (int o = 0; o < 4; ++o)
    columns[size_t(o)][size_t(2 * o)] = 1.0f;
  expectColumns(axis, columns);
}

TEST(ResizeMatrix, NearestHalfPixelRoundsHalvesByItsMode) {
  // 2 -> 4 by half_pixel: sources -.25, .25, .75, 1.25; no halves, so both roundings agree;
  // 4 -> 2: sources .5 and 2.5, halves: round_prefer_floor takes 0 and 2, _ceil 1 and 3.
  ResizeAxis down = resizeAxis(4, 2, ResizeAxis::Mode::Nearest, ResizeAxis::Coordinates::HalfPixel);
  down.rounding = ResizeAxis::Rounding::RoundPreferFloor;
  expectColumns(down, {{1, 0, 0, 0}, {0, 0, 1, 0}});
  down.rounding = ResizeAxis::Rounding::RoundPreferCeil;
  expectColumns(down, {{0, 1, 0, 0}, {0, 0, 0, 1}});
}

TEST(ResizeMatrix, AlignCornersKeepsTheEnds) {
  // 2 -> 3 with align_corners: sources 0, .5, 1.
  expectColumns(resizeAxis(2, 3, ResizeAxis::Mode::Linear, ResizeAxis::Coordinates::AlignCorners),
                {{1, 0}, {0.5f, 0.5f}, {0, 1}});
}

TEST(ResizeMatrix, CubicClampsOrExcludesTheOutside) {
  // 4 -> 2, source .5: Keys's taps (a = -.75) at -1, 0, 1, 2 are -.09375, .59375, .59375,
  // -.09375; the one at -1 reads the edge (0) ...
  ResizeAxis axis = resizeAxis(4, 2, ResizeAxis::Mode::Cubic, ResizeAxis::Coordinates::HalfPixel);
  expectColumns(axis, {{0.5f, 0.59375f, -0.09375f, 0},   // -.09375 + .59375 at 0
                       {0, -0.09375f, 0.59375f, 0.5f}}); // source 2.5, mirrored
  // ... or, with exclude_outside, weighs nothing and the rest are divided by 1.09375.
  axis.excludeOutside = true;
  const float k = 1.0f / 1.09375f;
  expectColumns(axis, {{0.59375f * k, 0.59375f * k, -0.09375f * k, 0},
                       {0, -0.09375f * k, 0.59375f * k, 0.59375f * k}});
}

TEST(ResizeMatrix, WholeFactorsAgreeWithTheUpsampling) {
  // The general matrix and buildUpsample's transposed convolution interpolate alike.
  std::mt19937 gen(11);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  for (int64_t s = 1; s <= 4; ++s)
    for (int64_t n = 1; n <= 6; ++n) {
      std::vector<double> x(static_cast<size_t>(n));
      for (double &v : x)
        v = value(gen);
      const std::vector<double> want = transposedConvolution(
          upsampleAxis(UpsampleInterpolation::Linear, SourceCoordinates::HalfPixel, s), x);
      const std::vector<float> m = resizeMatrix(
          resizeAxis(n, n * s, ResizeAxis::Mode::Linear, ResizeAxis::Coordinates::HalfPixel));
      for (int64_t o = 0; o < n * s; ++o) {
        double got = 0;
        for (int64_t i = 0; i < n; ++i)
          got += double(m[size_t(i * n * s + o)]) * x[size_t(i)];
        EXPECT_NEAR(got, want[size_t(o)], 1e-6) << "scale " << s << " length " << n;
      }
    }
}

} // namespace
