// Image layers that the ONNX and Keras importers both lower onto existing graph-dialect ops:
// upsampling by integer factors (nearest and bilinear) as depthwise transposed convolutions,
// group and instance normalization as layer norms of channel groups, and per-channel affine
// maps (a scale and a shift per channel) as depthwise 1x1 convolutions, and 3-D convolutions
// and pooling over [N, C, D, H, W] volumes as 2-D ones (see buildConv3d and buildPool3d).
//
// Lowering rather than new ops keeps every target, autodiff, liveness, the planner and the fit
// as they are: a transposed convolution's backward is a strided convolution, a layer norm's is
// layer_norm_backward, and nothing is copied per sample (a per-channel factor broadcast by
// copies would hold a [N, C, H, W] tensor of copies until the backward pass).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace graphc {

enum class UpsampleInterpolation { Nearest, Linear };

/// Where output position o of an axis upsampled s times reads its input (ONNX Resize's
/// coordinate_transformation_mode): HalfPixel (o + 0.5) / s - 0.5 (PyTorch's align_corners =
/// False, TensorFlow 2's and Keras's resize), Asymmetric o / s (TensorFlow 1's). Positions
/// outside [0, in - 1] read the edge.
enum class SourceCoordinates { HalfPixel, Asymmetric };

/// One axis of an upsampling by the integer factor `scale` as a transposed convolution of
/// stride `scale`: its `taps` along the axis, and how many outputs it crops before and after
/// (the transposed convolution's padding) from the input extended by one edge copy on each
/// side when `replicateEdges` (linear interpolation, which reads a neighbour past the edge).
struct UpsampleAxis {
  int64_t scale = 1;
  std::vector<float> taps = {1.0f};
  int64_t cropBefore = 0, cropAfter = 0;
  bool replicateEdges = false;
};

/// The transposed convolution that computes `interpolation` at `scale` (>= 1) along one axis.
/// Nearest repeats each element `scale` times (taps of ones); linear weighs the two inputs
/// around each output's source position by 1 - distance, a triangle of taps whose position
/// depends only on o mod scale. O(scale).
UpsampleAxis upsampleAxis(UpsampleInterpolation interpolation, SourceCoordinates coordinates,
                          int64_t scale);

/// Whether ONNX Resize's nearest rounding (`nearestMode`: round_prefer_floor,
/// round_prefer_ceil, floor, ceil) of `coordinates` ("asymmetric", "half_pixel",
/// "pytorch_half_pixel", "align_corners", ...) reads input floor(o / scale) for every output o
/// of an axis of `inputSize` elements upsampled `scale` times: the repeat that upsampleAxis
/// computes. O(inputSize x scale).
bool nearestRepeatsEachElement(const std::string &coordinates, const std::string &nearestMode,
                               int64_t inputSize, int64_t scale);

/// `x` [N, C, H, W] upsampled to [N, C, H * h.scale, W * w.scale]: the edges replicated where
/// an axis asks (slices and a concat), then one depthwise graph.conv2d_backward_data with the
/// filter outer(h.taps, w.taps) per channel: a graph.fill when every tap is 1, else
/// `constantFilter` ([C, 1, KH, KW] of these values: the importer's frozen table, which trains
/// nothing). Its gradient is the strided depthwise convolution that sums what each input
/// element contributed.
mlir::Value buildUpsample(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, const UpsampleAxis &h,
    const UpsampleAxis &w,
    llvm::function_ref<mlir::Value(mlir::RankedTensorType, llvm::ArrayRef<float>)> constantFilter);

/// How one axis is resized to any length, in ONNX Resize's terms (opset 11 to 19); Keras's
/// tf.image.resize is half_pixel linear, or half_pixel nearest rounding halves up.
struct ResizeAxis {
  enum class Mode { Nearest, Linear, Cubic };
  enum class Coordinates {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric
  };
  enum class Rounding { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };
  int64_t in = 1, out = 1;
  /// out / in as the op states it (ONNX's scale, which need not be out / in exactly), and
  /// in / out as the framework computes the source step in float32 (PyTorch and TensorFlow
  /// multiply by it).
  double scale = 1;
  float inverseScale = 1;
  Mode mode = Mode::Linear;
  Coordinates coordinates = Coordinates::HalfPixel;
  Rounding rounding = Rounding::RoundPreferFloor;
  float cubicA = -0.75f;       // Keys's cubic coefficient (PyTorch's bicubic)
  bool excludeOutside = false; // zero (and renormalise) the taps that fall outside the input
};

/// The [in, out] matrix whose column o holds output o's weights on the input elements, as
/// ONNX's reference Resize computes them: the source position x of output o by the
/// coordinate mode (in float32), its left element base = ceil(x) - 1 and ratio = x - base in
/// (0, 1]; nearest takes base or base + 1 by the rounding, linear both by 1 - ratio and ratio,
/// cubic base - 1 .. base + 2 by Keys's kernel; an element outside the input reads the edge
/// (or, with excludeOutside, weighs nothing and the rest are renormalised). No antialiasing.
/// O(in * out).
std::vector<float> resizeMatrix(const ResizeAxis &axis);

/// `x` [N, C, H, W] resized to [N, C, h.out, w.out]: for each axis that changes, one
/// graph.dense of the rows by its frozen resizeMatrix (`matrix(axisIndex, [in, out], values)`,
/// 0 for the height, 1 for the width; the height transposed to the last axis and back). The
/// dense's backward carries the input gradient. O(N C H W w.out + N C w.out H h.out).
mlir::Value buildResize(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, const ResizeAxis &h, const ResizeAxis &w,
    llvm::function_ref<mlir::Value(int, llvm::ArrayRef<int64_t>, llvm::ArrayRef<float>)> matrix);

/// `x` [N, C, ...] with each sample's `groups` blocks of C / groups channels normalised by
/// their own mean and biased variance (GroupNorm without its affine map; groups = C is
/// InstanceNorm): x viewed as [N * groups, elements per group], one graph.layer_norm with a
/// unit scale and zero bias (fills: nothing trains), viewed back. C % groups must be 0.
mlir::Value buildGroupNorm(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, int64_t groups,
                           float epsilon);

/// `x` [N, C, H, W] times `scale` plus `shift` per channel (either may be null, not both;
/// each has C elements in any shape: [C], [C, 1, 1], [1, C, 1, 1]): one depthwise 1x1
/// graph.conv2d, with `shift` as its bias (and a filter of ones when there is no scale). The
/// backward pass keeps x and the C factors, not a broadcast copy.
mlir::Value buildPerChannelAffine(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                                  mlir::Value scale, mlir::Value shift);

/// The depth taps of a convolution over `volume` [N, C, Dp, H, W] (already padded): for tap
/// k < kd the depths k dd + sd j, j < `depth` (the slice [k dd, k dd + sd depth) viewed as
/// [depth, sd], its first column), stacked as [N, depth, groups, kd, C / groups, H, W]: one 2-D
/// image per output depth whose channels are grouped as (group, tap, channel). The caller pads
/// Dp to at least dd (kd - 1) + sd depth. The stack holds kd copies of the strided input.
mlir::Value stackDepthTaps(mlir::OpBuilder &b, mlir::Location loc, mlir::Value volume, int64_t kd,
                           int64_t dd, int64_t sd, int64_t depth, int64_t groups);

/// `x` [N, C, D, H, W] with `front` and `back` depths of zeros added (or, where negative, that
/// many depths cropped).
mlir::Value padDepth(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, int64_t front,
                     int64_t back);

/// A 3-D convolution's input as 2-D images: the depth taps (stackDepthTaps) of `x`
/// [N, C, D, H, W] zero-padded by `pads` (d before, d after), for kd taps spaced dd apart at
/// stride sd, as [N * D', kd * C, H, W]; D' the output depth (at least 1: the caller checks
/// that the window fits).
mlir::Value convDepthTaps(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, int64_t kd,
                          int64_t sd, int64_t dd, int64_t padBefore, int64_t padAfter,
                          int64_t groups);

/// The filter of convDepthTaps's images: `filter` [O, C / g, kd, kh, kw] transposed and viewed
/// as [O, kd * C / g, kh, kw] (channels as tap, channel).
mlir::Value convDepthFilter(mlir::OpBuilder &b, mlir::Location loc, mlir::Value filter);

/// A 3-D convolution of `x` [N, C, D, H, W] by `filter` [O, C / groups, kd, kh, kw] (and `bias`
/// [O], or null): `strides` and `dilations` (d, h, w), `pads` (d, h, w before, then after).
/// The depth taps (stackDepthTaps) of the zero-padded input, as [N * D', kd * C, H, W], under
/// one graph.conv2d whose filter is `filter` transposed and viewed as [O, kd * C / g, kh, kw];
/// its [N * D', O, H', W'] output transposed to [N, O, D', H', W']. The caller checks that
/// the window fits (D' >= 1).
mlir::Value buildConv3d(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value filter,
                        mlir::Value bias, llvm::ArrayRef<int64_t> strides,
                        llvm::ArrayRef<int64_t> pads, llvm::ArrayRef<int64_t> dilations,
                        int64_t groups);

/// A 3-D max or average pool of `x` [N, C, D, H, W], separably: the 2-D pool over (H, W) of
/// the [N, C * D, H, W] view, then over depth by a (kd, 1) window on the [N, C, D, H' * W']
/// view. A box's maximum is the maximum over its depths of the (H, W) windows' maxima; its
/// average the average of theirs, the divisor without `countIncludePad` the product of the
/// per-axis counts of input cells, which is the box's. `kernel`, `strides` (d, h, w), `pads`
/// (d, h, w before, then after).
mlir::Value buildPool3d(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, bool max,
                        llvm::ArrayRef<int64_t> kernel, llvm::ArrayRef<int64_t> strides,
                        llvm::ArrayRef<int64_t> pads, bool countIncludePad);

/// A 3-D transposed convolution's input as 2-D images: along depth it is the stride-1
/// convolution, with its taps reversed, of `x` [N, C, D, H, W] spread by the stride `sd` (zeros
/// between its depths) and padded by dd (kd - 1) - `front` in front (cropped where negative)
/// and as much at the back as `depth` outputs need; its taps (stackDepthTaps) as
/// [N * depth, kd * C, H, W]. `front` is the forward convolution's depth padding before.
mlir::Value transposedDepthTaps(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, int64_t kd,
                                int64_t sd, int64_t dd, int64_t front, int64_t depth,
                                int64_t groups);

/// The filter of transposedDepthTaps's images: `weight` [C_in, C_out / g, kd, kh, kw] with its
/// taps reversed, rows as (group, tap, channel): [kd * C_in, C_out / g, kh, kw].
mlir::Value transposedDepthFilter(mlir::OpBuilder &b, mlir::Location loc, mlir::Value weight,
                                  int64_t groups);

/// A 3-D transposed convolution of `x` [N, C, D, H, W] by `weight` [C, C_out / g, kd, kh, kw]
/// (and `bias`): the transpose of the convolution with `strides`, `dilations` and `pads` (d, h,
/// w before, then after) whose input is [N, C_out, out...]; `out` the (D', H', W') it produces.
/// transposedDepthTaps's images under one graph.conv2d_backward_data by
/// transposedDepthFilter's filter, the result transposed to [N, C_out, D', H', W'].
mlir::Value buildConvTranspose3d(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                                 mlir::Value weight, mlir::Value bias,
                                 llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> pads,
                                 llvm::ArrayRef<int64_t> dilations, llvm::ArrayRef<int64_t> out,
                                 int64_t groups);

} // namespace graphc
