// Image layers lowered onto graph-dialect ops (see ImageOps.h).
//
// Linear upsampling as a transposed convolution: with the input extended by one edge copy on
// each side (padded index p = i + 1), output o reads padded input p with weight
// max(0, 1 - |src(o) + 1 - p|), src(o) = (o + a) / s - b (a = b = 0.5 for half_pixel, 0 for
// asymmetric). With d = o - s p that weight is max(0, 1 - |(d + a) / s + 1 - b|): a function of
// d alone, so the whole axis is the transposed convolution of stride s whose tap k is the
// weight at d = dLo + k, cropped by -dLo outputs before. An output whose source lies past an
// edge reads the edge copy and the edge with weights summing to 1: the edge value, as ONNX
// and PyTorch clamp it.
#include "importers/common/ImageOps.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "mlir/IR/BuiltinTypes.h"

#include "dialects/graph/GraphOps.h"

using namespace mlir;
using namespace graphc::graph;

namespace graphc {
namespace {

RankedTensorType f32(OpBuilder &b, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, b.getF32Type());
}

std::vector<int64_t> dimsOf(Value v) {
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  return {shape.begin(), shape.end()};
}

/// `x` with one copy of its first and last slice along `axis` added before and after.
Value replicateEdges(OpBuilder &b, Location loc, Value x, int64_t axis) {
  std::vector<int64_t> dims = dimsOf(x), edge = dims, padded = dims;
  edge[axis] = 1;
  padded[axis] += 2;
  Value first =
      b.create<SliceOp>(loc, f32(b, edge), x, b.getI64IntegerAttr(axis), b.getI64IntegerAttr(0));
  Value last = b.create<SliceOp>(loc, f32(b, edge), x, b.getI64IntegerAttr(axis),
                                 b.getI64IntegerAttr(dims[axis] - 1));
  return b.create<ConcatOp>(loc, f32(b, padded), ValueRange{first, x, last},
                            b.getI64IntegerAttr(axis));
}

} // namespace

UpsampleAxis upsampleAxis(UpsampleInterpolation interpolation, SourceCoordinates coordinates,
                          int64_t scale) {
  UpsampleAxis axis;
  axis.scale = scale;
  if (scale <= 1)
    return axis; // the identity
  if (interpolation == UpsampleInterpolation::Nearest) {
    axis.taps.assign(size_t(scale), 1.0f);
    return axis;
  }
  const double a = coordinates == SourceCoordinates::HalfPixel ? 0.5 : 0.0, shift = a;
  const double s = double(scale);
  auto weight = [&](int64_t d) {
    return std::max(0.0, 1.0 - std::fabs((double(d) + a) / s + 1.0 - shift));
  };
  // The weight is positive for (d + a) / s + 1 - shift in (-1, 1).
  const int64_t from = int64_t(std::floor(s * (shift - 2.0) - a)),
                to = int64_t(std::ceil(s * shift - a));
  int64_t dLo = to + 1;
  std::vector<float> taps;
  for (int64_t d = from; d <= to; ++d) {
    const double w = weight(d);
    if (w <= 0.0)
      continue;
    if (taps.empty())
      dLo = d;
    taps.resize(size_t(d - dLo + 1), 0.0f);
    taps.back() = float(w);
  }
  axis.taps = std::move(taps);
  axis.replicateEdges = true;
  // The transposed convolution of the padded input (in + 2 elements) has s (in + 1) + K
  // outputs; keep s * in of them, from -dLo on.
  axis.cropBefore = -dLo;
  axis.cropAfter = scale + int64_t(axis.taps.size()) - axis.cropBefore;
  return axis;
}

bool nearestRepeatsEachElement(const std::string &coordinates, const std::string &nearestMode,
                               int64_t inputSize, int64_t scale) {
  if (inputSize < 1 || scale < 1)
    return false;
  const int64_t outputSize = inputSize * scale;
  for (int64_t o = 0; o < outputSize; ++o) {
    double source;
    if (coordinates == "asymmetric")
      source = double(o) / double(scale);
    else if (coordinates == "half_pixel" || (coordinates == "pytorch_half_pixel" && outputSize > 1))
      source = (double(o) + 0.5) / double(scale) - 0.5;
    else if (coordinates == "pytorch_half_pixel")
      source = 0.0;
    else if (coordinates == "tf_half_pixel_for_nn")
      source = (double(o) + 0.5) / double(scale);
    else if (coordinates == "align_corners")
      source = outputSize == 1 ? 0.0 : double(o) * double(inputSize - 1) / double(outputSize - 1);
    else
      return false;
    double index;
    const double below = std::floor(source), fraction = source - below;
    if (nearestMode == "floor")
      index = below;
    else if (nearestMode == "ceil")
      index = std::ceil(source);
    else if (nearestMode == "round_prefer_floor")
      index = fraction <= 0.5 ? below : below + 1.0;
    else if (nearestMode == "round_prefer_ceil")
      index = fraction < 0.5 ? below : below + 1.0;
    else
      return false;
    index = std::clamp(index, 0.0, double(inputSize - 1));
    if (int64_t(index) != o / scale)
      return false;
  }
  return true;
}

Value buildUpsample(OpBuilder &b, Location loc, Value x, const UpsampleAxis &h,
                    const UpsampleAxis &w,
                    function_ref<Value(RankedTensorType, ArrayRef<float>)> constantFilter) {
  const std::vector<int64_t> xs = dimsOf(x);
  if (h.scale <= 1 && w.scale <= 1)
    return x;
  if (h.replicateEdges)
    x = replicateEdges(b, loc, x, 2);
  if (w.replicateEdges)
    x = replicateEdges(b, loc, x, 3);
  const int64_t channels = xs[1], kh = int64_t(h.taps.size()), kw = int64_t(w.taps.size());
  auto filterType = f32(b, {channels, 1, kh, kw});
  std::vector<float> kernel;
  for (float th : h.taps)
    for (float tw : w.taps)
      kernel.push_back(th * tw);
  Value filter;
  if (std::all_of(kernel.begin(), kernel.end(), [](float v) { return v == 1.0f; })) {
    filter = b.create<FillOp>(loc, filterType, b.getF32FloatAttr(1.0f));
  } else {
    std::vector<float> perChannel;
    perChannel.reserve(size_t(channels) * kernel.size());
    for (int64_t c = 0; c < channels; ++c)
      perChannel.insert(perChannel.end(), kernel.begin(), kernel.end());
    filter = constantFilter(filterType, perChannel);
  }
  return b.create<Conv2dBackwardDataOp>(
      loc, f32(b, {xs[0], channels, xs[2] * h.scale, xs[3] * w.scale}), x, filter, Value(),
      b.getDenseI64ArrayAttr({h.scale, w.scale}),
      b.getDenseI64ArrayAttr({h.cropBefore, w.cropBefore, h.cropAfter, w.cropAfter}),
      b.getDenseI64ArrayAttr({1, 1}), b.getI64IntegerAttr(channels));
}

std::vector<float> resizeMatrix(const ResizeAxis &axis) {
  using Mode = ResizeAxis::Mode;
  using Coordinates = ResizeAxis::Coordinates;
  const int64_t in = axis.in, out = axis.out;
  std::vector<float> matrix(size_t(in * out), 0.0f);
  const float outputWidth = float(axis.scale * double(in)); // ONNX's (fractional) output width
  for (int64_t o = 0; o < out; ++o) {
    const float centre = float(o) + 0.5f;
    float x = 0.0f;
    switch (axis.coordinates) {
    case Coordinates::HalfPixel:
      x = centre * axis.inverseScale - 0.5f;
      break;
    case Coordinates::HalfPixelSymmetric: {
      const float adjustment = float(out) / outputWidth, middle = 0.5f * float(in);
      x = middle * (1.0f - adjustment) + centre * axis.inverseScale - 0.5f;
      break;
    }
    case Coordinates::PytorchHalfPixel:
      x = outputWidth == 1.0f ? -0.5f : centre * axis.inverseScale - 0.5f;
      break;
    case Coordinates::AlignCorners:
      // (PyTorch multiplies by the step (in - 1) / (out - 1) in float32.)
      x = outputWidth == 1.0f ? 0.0f : float(o) * (float(in - 1) / (outputWidth - 1.0f));
      break;
    case Coordinates::Asymmetric:
      x = float(o) * axis.inverseScale;
      break;
    }
    // The element left of x (x itself counts as right of it) and the distance to x in (0, 1].
    const float base = std::ceil(x) - 1.0f, ratio = x - base;
    std::vector<float> coeffs;
    int64_t first = int64_t(base); // the index of coeffs[0]
    switch (axis.mode) {
    case Mode::Nearest: {
      bool right = true; // ratio 1 (x whole) takes x itself
      if (ratio < 1.0f) {
        switch (axis.rounding) {
        case ResizeAxis::Rounding::RoundPreferFloor:
          right = ratio > 0.5f;
          break;
        case ResizeAxis::Rounding::RoundPreferCeil:
          right = ratio >= 0.5f;
          break;
        case ResizeAxis::Rounding::Floor:
          right = false;
          break;
        case ResizeAxis::Rounding::Ceil:
          right = true;
          break;
        }
      }
      coeffs = {right ? 0.0f : 1.0f, right ? 1.0f : 0.0f};
      break;
    }
    case Mode::Linear:
      coeffs = {1.0f - ratio, ratio};
      break;
    case Mode::Cubic: {
      const float a = axis.cubicA, r = ratio, s = 1.0f - ratio;
      coeffs = {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                ((a + 2) * r - (a + 3)) * r * r + 1, ((a + 2) * s - (a + 3)) * s * s + 1,
                ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
      first -= 1;
      break;
    }
    }
    if (axis.excludeOutside) {
      float kept = 0.0f;
      for (size_t j = 0; j < coeffs.size(); ++j) {
        const int64_t index = first + int64_t(j);
        if (index < 0 || index >= in)
          coeffs[j] = 0.0f;
        kept += coeffs[j];
      }
      if (kept != 0.0f)
        for (float &c : coeffs)
          c /= kept;
    }
    for (size_t j = 0; j < coeffs.size(); ++j) {
      const int64_t index = std::clamp<int64_t>(first + int64_t(j), 0, in - 1);
      matrix[size_t(index * out + o)] += coeffs[j];
    }
  }
  return matrix;
}

/// Whether `matrix`, an axis's [in, out] resizeMatrix, keeps every element where it is.
/// An axis kept as it is (scale 1, every mode and coordinate transform maps output o to input
/// o), known without building its matrix.
static bool keptAxis(const ResizeAxis &axis) { return axis.in == axis.out && axis.scale == 1.0; }

static bool isIdentity(const ResizeAxis &axis, const std::vector<float> &matrix) {
  if (axis.in != axis.out)
    return false;
  for (int64_t i = 0; i < axis.in; ++i)
    for (int64_t o = 0; o < axis.out; ++o)
      if (matrix[size_t(i * axis.out + o)] != (i == o ? 1.0f : 0.0f))
        return false;
  return true;
}

Value buildResize(OpBuilder &b, Location loc, Value x, const ResizeAxis &h, const ResizeAxis &w,
                  function_ref<Value(int, ArrayRef<int64_t>, ArrayRef<float>)> matrix) {
  const std::vector<int64_t> xs = dimsOf(x);
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  // Rows of `in` elements times the [in, out] matrix: rows of `out`.
  auto resizeRows = [&](Value v, const ResizeAxis &axis, ArrayRef<float> values,
                        int index) -> Value {
    const std::vector<int64_t> shape = dimsOf(v);
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i)
      rows *= shape[i];
    Value taps = matrix(index, {axis.in, axis.out}, values);
    Value flat = b.create<ReshapeOp>(loc, f32(b, {rows, axis.in}), v);
    return b.create<DenseOp>(loc, f32(b, {rows, axis.out}), flat, taps, Value(), UnitAttr());
  };
  const std::vector<float> rowTaps = keptAxis(h) ? std::vector<float>() : resizeMatrix(h),
                           columnTaps = keptAxis(w) ? std::vector<float>() : resizeMatrix(w);
  Value v = b.create<ReshapeOp>(loc, f32(b, {N * C, H, W}), x);
  if (!keptAxis(w) && !isIdentity(w, columnTaps))
    v = b.create<ReshapeOp>(loc, f32(b, {N * C, H, w.out}), resizeRows(v, w, columnTaps, 1));
  if (!keptAxis(h) && !isIdentity(h, rowTaps)) {
    Value heightLast =
        b.create<TransposeOp>(loc, f32(b, {N * C, w.out, H}), v, b.getDenseI64ArrayAttr({0, 2, 1}));
    Value resized = b.create<ReshapeOp>(loc, f32(b, {N * C, w.out, h.out}),
                                        resizeRows(heightLast, h, rowTaps, 0));
    v = b.create<TransposeOp>(loc, f32(b, {N * C, h.out, w.out}), resized,
                              b.getDenseI64ArrayAttr({0, 2, 1}));
  }
  return b.create<ReshapeOp>(loc, f32(b, {N, C, h.out, w.out}), v);
}

Value buildGroupNorm(OpBuilder &b, Location loc, Value x, int64_t groups, float epsilon) {
  const std::vector<int64_t> xs = dimsOf(x);
  const int64_t elements = std::accumulate(xs.begin(), xs.end(), int64_t{1}, std::multiplies<>());
  const int64_t rows = xs[0] * groups, width = elements / rows;
  Value grouped = b.create<ReshapeOp>(loc, f32(b, {rows, width}), x);
  Value ones = b.create<FillOp>(loc, f32(b, {width}), b.getF32FloatAttr(1.0f));
  Value zeros = b.create<FillOp>(loc, f32(b, {width}), b.getF32FloatAttr(0.0f));
  auto stat = f32(b, {rows});
  Value normalized = b.create<LayerNormOp>(loc, TypeRange{grouped.getType(), stat, stat}, grouped,
                                           ones, zeros, b.getF32FloatAttr(epsilon))
                         .getResult();
  return b.create<ReshapeOp>(loc, x.getType(), normalized);
}

Value buildPerChannelAffine(OpBuilder &b, Location loc, Value x, Value scale, Value shift) {
  const std::vector<int64_t> xs = dimsOf(x);
  const int64_t channels = xs[1];
  auto filterType = f32(b, {channels, 1, 1, 1});
  Value filter = scale ? (dimsOf(scale) == std::vector<int64_t>{channels, 1, 1, 1}
                              ? scale
                              : b.create<ReshapeOp>(loc, filterType, scale).getResult())
                       : b.create<FillOp>(loc, filterType, b.getF32FloatAttr(1.0f)).getResult();
  Value bias;
  if (shift)
    bias = dimsOf(shift) == std::vector<int64_t>{channels}
               ? shift
               : b.create<ReshapeOp>(loc, f32(b, {channels}), shift).getResult();
  return b.create<Conv2dOp>(loc, x.getType(), x, filter, bias, b.getDenseI64ArrayAttr({1, 1}),
                            b.getDenseI64ArrayAttr({0, 0, 0, 0}), b.getDenseI64ArrayAttr({1, 1}),
                            b.getI64IntegerAttr(channels));
}

Value stackDepthTaps(OpBuilder &b, Location loc, Value volume, int64_t kd, int64_t dd, int64_t sd,
                     int64_t depth, int64_t groups) {
  const std::vector<int64_t> vs = dimsOf(volume);
  const int64_t n = vs[0], c = vs[1], h = vs[3], w = vs[4], perGroup = c / groups;
  SmallVector<Value> taps;
  for (int64_t k = 0; k < kd; ++k) {
    Value tap = b.create<SliceOp>(loc, f32(b, {n, c, sd * depth, h, w}), volume,
                                  b.getI64IntegerAttr(2), b.getI64IntegerAttr(k * dd));
    if (sd > 1) {
      tap = b.create<ReshapeOp>(loc, f32(b, {n, c, depth, sd, h, w}), tap);
      tap = b.create<SliceOp>(loc, f32(b, {n, c, depth, 1, h, w}), tap, b.getI64IntegerAttr(3),
                              b.getI64IntegerAttr(0));
    }
    taps.push_back(b.create<ReshapeOp>(loc, f32(b, {n, groups, 1, perGroup, depth, h, w}), tap));
  }
  Value stacked = taps.size() == 1
                      ? taps.front()
                      : b.create<ConcatOp>(loc, f32(b, {n, groups, kd, perGroup, depth, h, w}),
                                           taps, b.getI64IntegerAttr(2))
                            .getResult();
  return b.create<TransposeOp>(loc, f32(b, {n, depth, groups, kd, perGroup, h, w}), stacked,
                               b.getDenseI64ArrayAttr({0, 4, 1, 2, 3, 5, 6}));
}

Value padDepth(OpBuilder &b, Location loc, Value x, int64_t front, int64_t back) {
  std::vector<int64_t> xs = dimsOf(x);
  auto withDepth = [&](int64_t depth) {
    std::vector<int64_t> dims = xs;
    dims[2] = depth;
    return f32(b, dims);
  };
  if (front < 0 || back < 0) {
    const int64_t keep = xs[2] + std::min<int64_t>(front, 0) + std::min<int64_t>(back, 0);
    x = b.create<SliceOp>(loc, withDepth(keep), x, b.getI64IntegerAttr(2),
                          b.getI64IntegerAttr(std::max<int64_t>(-front, 0)));
    xs[2] = keep;
  }
  SmallVector<Value> parts;
  if (front > 0)
    parts.push_back(b.create<FillOp>(loc, withDepth(front), b.getF32FloatAttr(0)));
  parts.push_back(x);
  if (back > 0)
    parts.push_back(b.create<FillOp>(loc, withDepth(back), b.getF32FloatAttr(0)));
  if (parts.size() == 1)
    return x;
  return b.create<ConcatOp>(
      loc, withDepth(xs[2] + std::max<int64_t>(front, 0) + std::max<int64_t>(back, 0)), parts,
      b.getI64IntegerAttr(2));
}

Value convDepthTaps(OpBuilder &b, Location loc, Value x, int64_t kd, int64_t sd, int64_t dd,
                    int64_t padBefore, int64_t padAfter, int64_t groups) {
  const std::vector<int64_t> xs = dimsOf(x);
  const int64_t d = xs[2];
  const int64_t depth = graph::convOutputSize(d, kd, sd, padBefore, padAfter, dd);
  // Zeros pad the front, and the back up to the last tap's strided slice's end.
  const int64_t length = dd * (kd - 1) + sd * depth;
  const int64_t back = padAfter + std::max<int64_t>(0, length - (d + padBefore + padAfter));
  Value stacked =
      stackDepthTaps(b, loc, padDepth(b, loc, x, padBefore, back), kd, dd, sd, depth, groups);
  return b.create<ReshapeOp>(loc, f32(b, {xs[0] * depth, kd * xs[1], xs[3], xs[4]}), stacked);
}

Value convDepthFilter(OpBuilder &b, Location loc, Value filter) {
  const std::vector<int64_t> ws = dimsOf(filter);
  Value moved = b.create<TransposeOp>(loc, f32(b, {ws[0], ws[2], ws[1], ws[3], ws[4]}), filter,
                                      b.getDenseI64ArrayAttr({0, 2, 1, 3, 4}));
  return b.create<ReshapeOp>(loc, f32(b, {ws[0], ws[2] * ws[1], ws[3], ws[4]}), moved);
}

Value buildConv3d(OpBuilder &b, Location loc, Value x, Value filter, Value bias,
                  ArrayRef<int64_t> strides, ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                  int64_t groups) {
  const std::vector<int64_t> xs = dimsOf(x), ws = dimsOf(filter);
  const int64_t n = xs[0], h = xs[3], w = xs[4];
  const int64_t depth =
      graph::convOutputSize(xs[2], ws[2], strides[0], pads[0], pads[3], dilations[0]);
  Value images =
      convDepthTaps(b, loc, x, ws[2], strides[0], dilations[0], pads[0], pads[3], groups);
  Value planar = convDepthFilter(b, loc, filter);
  const int64_t oh = graph::convOutputSize(h, ws[3], strides[1], pads[1], pads[4], dilations[1]);
  const int64_t ow = graph::convOutputSize(w, ws[4], strides[2], pads[2], pads[5], dilations[2]);
  Value y = b.create<Conv2dOp>(loc, f32(b, {n * depth, ws[0], oh, ow}), images, planar, bias,
                               b.getDenseI64ArrayAttr({strides[1], strides[2]}),
                               b.getDenseI64ArrayAttr({pads[1], pads[2], pads[4], pads[5]}),
                               b.getDenseI64ArrayAttr({dilations[1], dilations[2]}),
                               b.getI64IntegerAttr(groups));
  Value split = b.create<ReshapeOp>(loc, f32(b, {n, depth, ws[0], oh, ow}), y);
  return b.create<TransposeOp>(loc, f32(b, {n, ws[0], depth, oh, ow}), split,
                               b.getDenseI64ArrayAttr({0, 2, 1, 3, 4}));
}

Value buildPool3d(OpBuilder &b, Location loc, Value x, bool max, ArrayRef<int64_t> kernel,
                  ArrayRef<int64_t> strides, ArrayRef<int64_t> pads, bool countIncludePad) {
  const std::vector<int64_t> xs = dimsOf(x);
  const int64_t n = xs[0], c = xs[1], d = xs[2];
  auto pool = [&](Value v, RankedTensorType type, ArrayRef<int64_t> k, ArrayRef<int64_t> s,
                  ArrayRef<int64_t> p) -> Value {
    if (max)
      return b.create<MaxPool2dOp>(loc, type, v, b.getDenseI64ArrayAttr(k),
                                   b.getDenseI64ArrayAttr(s), b.getDenseI64ArrayAttr(p));
    return b.create<AvgPool2dOp>(loc, type, v, b.getDenseI64ArrayAttr(k), b.getDenseI64ArrayAttr(s),
                                 b.getDenseI64ArrayAttr(p),
                                 countIncludePad ? b.getUnitAttr() : UnitAttr());
  };
  const int64_t oh = graph::convOutputSize(xs[3], kernel[1], strides[1], pads[1], pads[4], 1);
  const int64_t ow = graph::convOutputSize(xs[4], kernel[2], strides[2], pads[2], pads[5], 1);
  const int64_t od = graph::convOutputSize(d, kernel[0], strides[0], pads[0], pads[3], 1);
  Value planes = pool(b.create<ReshapeOp>(loc, f32(b, {n, c * d, xs[3], xs[4]}), x),
                      f32(b, {n, c * d, oh, ow}), {kernel[1], kernel[2]}, {strides[1], strides[2]},
                      {pads[1], pads[2], pads[4], pads[5]});
  Value deep =
      pool(b.create<ReshapeOp>(loc, f32(b, {n, c, d, oh * ow}), planes),
           f32(b, {n, c, od, oh * ow}), {kernel[0], 1}, {strides[0], 1}, {pads[0], 0, pads[3], 0});
  return b.create<ReshapeOp>(loc, f32(b, {n, c, od, oh, ow}), deep);
}

Value transposedDepthTaps(OpBuilder &b, Location loc, Value x, int64_t kd, int64_t sd, int64_t dd,
                          int64_t front, int64_t depth, int64_t groups) {
  const std::vector<int64_t> xs = dimsOf(x);
  const int64_t n = xs[0], c = xs[1], d = xs[2], h = xs[3], w = xs[4];
  // The input spread by the stride: [N, C, (D - 1) sd + 1, H, W].
  Value spread = x;
  if (sd > 1 && d > 1) {
    Value column = b.create<ReshapeOp>(loc, f32(b, {n, c, d, 1, h, w}), x);
    Value zeros = b.create<FillOp>(loc, f32(b, {n, c, d, sd - 1, h, w}), b.getF32FloatAttr(0));
    Value interleaved = b.create<ConcatOp>(loc, f32(b, {n, c, d, sd, h, w}),
                                           ValueRange{column, zeros}, b.getI64IntegerAttr(3));
    spread = b.create<SliceOp>(
        loc, f32(b, {n, c, (d - 1) * sd + 1, h, w}),
        b.create<ReshapeOp>(loc, f32(b, {n, c, d * sd, h, w}), interleaved).getResult(),
        b.getI64IntegerAttr(2), b.getI64IntegerAttr(0));
  }
  const int64_t reach = dd * (kd - 1), spreadDepth = (d - 1) * sd + 1;
  const int64_t before = reach - front, after = depth + reach - spreadDepth - before;
  Value volume = padDepth(b, loc, spread, before, after);
  return b.create<ReshapeOp>(loc, f32(b, {n * depth, kd * c, h, w}),
                             stackDepthTaps(b, loc, volume, kd, dd, 1, depth, groups));
}

Value transposedDepthFilter(OpBuilder &b, Location loc, Value weight, int64_t groups) {
  const std::vector<int64_t> ws = dimsOf(weight);
  const int64_t kd = ws[2], perGroup = ws[0] / groups;
  Value flipped = weight;
  if (kd > 1) {
    SmallVector<Value> reversed;
    for (int64_t k = kd - 1; k >= 0; --k)
      reversed.push_back(b.create<SliceOp>(loc, f32(b, {ws[0], ws[1], 1, ws[3], ws[4]}), weight,
                                           b.getI64IntegerAttr(2), b.getI64IntegerAttr(k)));
    flipped = b.create<ConcatOp>(loc, f32(b, ws), reversed, b.getI64IntegerAttr(2));
  }
  Value grouped =
      b.create<ReshapeOp>(loc, f32(b, {groups, perGroup, ws[1], kd, ws[3], ws[4]}), flipped);
  Value moved = b.create<TransposeOp>(loc, f32(b, {groups, kd, perGroup, ws[1], ws[3], ws[4]}),
                                      grouped, b.getDenseI64ArrayAttr({0, 3, 1, 2, 4, 5}));
  return b.create<ReshapeOp>(loc, f32(b, {kd * ws[0], ws[1], ws[3], ws[4]}), moved);
}

Value buildConvTranspose3d(OpBuilder &b, Location loc, Value x, Value weight, Value bias,
                           ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                           ArrayRef<int64_t> dilations, ArrayRef<int64_t> out, int64_t groups) {
  const std::vector<int64_t> xs = dimsOf(x), ws = dimsOf(weight);
  const int64_t n = xs[0], outC = ws[1] * groups;
  Value images =
      transposedDepthTaps(b, loc, x, ws[2], strides[0], dilations[0], pads[0], out[0], groups);
  Value y = b.create<Conv2dBackwardDataOp>(
      loc, f32(b, {n * out[0], outC, out[1], out[2]}), images,
      transposedDepthFilter(b, loc, weight, groups), bias,
      b.getDenseI64ArrayAttr({strides[1], strides[2]}),
      b.getDenseI64ArrayAttr({pads[1], pads[2], pads[4], pads[5]}),
      b.getDenseI64ArrayAttr({dilations[1], dilations[2]}), b.getI64IntegerAttr(groups));
  Value split = b.create<ReshapeOp>(loc, f32(b, {n, out[0], outC, out[1], out[2]}), y);
  return b.create<TransposeOp>(loc, f32(b, {n, outC, out[0], out[1], out[2]}), split,
                               b.getDenseI64ArrayAttr({0, 2, 1, 3, 4}));
}

} // namespace graphc
