// The random image transforms of graph.random_affine (Keras's RandomFlip, RandomRotation,
// RandomZoom, RandomTranslation, and RandomCrop's offset), one definition for the CPU kernel
// (runtime/lib/kernels.cpp) and the generated CUDA kernels (targets/cuda/EmitCuda.cpp, through
// step.h), so that both targets sample the very same pixels.
//
// Each sample s draws two uniforms, draws 2 (s + sampleOffset) and 2 (s + sampleOffset) + 1 of
// the op's counter-based key (dropout_mask.h), and maps every output pixel (x, y) (pixel
// centres at integer coordinates) to the input point x' = a0 x + a1 y + a2, y' = b0 x + b1 y +
// b2, as TensorFlow's ImageProjectiveTransform does for Keras: the transforms below are
// tf.keras's rotation, zoom and translation matrices about the centre ((W - 1) / 2, (H - 1) /
// 2). The point is then read with TensorFlow's fill modes (reflect: d c b a | a b c d | d c b
// a; nearest: the edge pixel; constant: fill_value for every neighbour outside the image) and
// bilinear or nearest interpolation. No state, so a recomputed op samples the same pixels.
#pragma once

#include <cstdint>
#include <math.h>

#include "graphc/runtime/dropout_mask.h"
#include "graphc/runtime/host_device.h"

namespace graphc::rt {

/// What a graph.random_affine op draws and how it samples.
struct RandomAffineParams {
  enum Kind : int32_t {
    FlipHorizontal = 0, // mirror x with probability 1/2
    FlipVertical = 1,   // mirror y with probability 1/2
    FlipBoth = 2,       // each, with its own draw
    Rotate = 3,         // by 2 pi (low0 + (high0 - low0) u0) radians
    Zoom = 4,           // y by 1 + low0 + (high0 - low0) u0, x by 1 + low1 + (high1 - low1) u1
    ZoomUniform = 5,    // both by the first (the aspect ratio kept)
    Translate = 6,      // y by H (low0 + ...), x by W (low1 + ...), in pixels
    CropOffset = 7,     // up by a whole oy < high0, left by ox < high1, one draw per batch
  };
  enum Fill : int32_t { Reflect = 0, Nearest = 1, Constant = 2 };
  int32_t kind;
  float low0, high0, low1, high1;
  int32_t fill;
  float fillValue;
  int32_t nearestInterpolation; // 0: bilinear
};

/// The output-to-input map of sample `sample` (already offset): {a0, a1, a2, b0, b1, b2}.
GRAPHC_HD void randomAffineMap(const RandomAffineParams &p, uint64_t key, int64_t sample,
                               int64_t height, int64_t width, float *m) {
  const float u0 = uniformDraw(key, 2 * sample), u1 = uniformDraw(key, 2 * sample + 1);
  const float cx = 0.5f * float(width - 1), cy = 0.5f * float(height - 1);
  m[0] = 1.0f, m[1] = 0.0f, m[2] = 0.0f, m[3] = 0.0f, m[4] = 1.0f, m[5] = 0.0f;
  switch (p.kind) {
  case RandomAffineParams::FlipHorizontal:
  case RandomAffineParams::FlipVertical:
  case RandomAffineParams::FlipBoth: {
    const bool flipX = p.kind != RandomAffineParams::FlipVertical && u0 < 0.5f;
    const bool flipY = p.kind == RandomAffineParams::FlipVertical
                           ? u0 < 0.5f
                           : p.kind == RandomAffineParams::FlipBoth && u1 < 0.5f;
    if (flipX)
      m[0] = -1.0f, m[2] = float(width - 1);
    if (flipY)
      m[4] = -1.0f, m[5] = float(height - 1);
    break;
  }
  case RandomAffineParams::Rotate: {
    const float angle = 6.28318530717958647692f * (p.low0 + (p.high0 - p.low0) * u0);
    const float c = cosf(angle), s = sinf(angle);
    // tf.keras's rotation matrix: x' - cx = cos (x - cx) - sin (y - cy), and so on.
    m[0] = c, m[1] = -s, m[2] = cx - c * cx + s * cy;
    m[3] = s, m[4] = c, m[5] = cy - s * cx - c * cy;
    break;
  }
  case RandomAffineParams::Zoom:
  case RandomAffineParams::ZoomUniform: {
    const float zy = 1.0f + p.low0 + (p.high0 - p.low0) * u0;
    const float zx =
        p.kind == RandomAffineParams::ZoomUniform ? zy : 1.0f + p.low1 + (p.high1 - p.low1) * u1;
    m[0] = zx, m[2] = cx - zx * cx;
    m[4] = zy, m[5] = cy - zy * cy;
    break;
  }
  case RandomAffineParams::CropOffset: {
    // RandomCrop crops every image of a batch at one place: draws 0 and 1 whatever the sample
    // (and whichever micro-batch), a whole offset uniform over the high0 (high1) positions.
    const float uy = uniformDraw(key, 0), ux = uniformDraw(key, 1);
    m[5] = fminf(floorf(uy * p.high0), p.high0 - 1.0f);
    m[2] = fminf(floorf(ux * p.high1), p.high1 - 1.0f);
    break;
  }
  case RandomAffineParams::Translate:
    m[5] = -float(height) * (p.low0 + (p.high0 - p.low0) * u0);
    m[2] = -float(width) * (p.low1 + (p.high1 - p.low1) * u1);
    break;
  default:
    break;
  }
}

/// TensorFlow's map of a coordinate outside [0, len - 1] back into the image (reflect about
/// the edges, or clamp to the edge pixel); constant leaves it, and the reads fill.
GRAPHC_HD float randomAffineCoordinate(float in, int64_t len, int32_t fill) {
  const float last = float(len - 1);
  if (fill == RandomAffineParams::Reflect) {
    if (len <= 1)
      return 0.0f;
    const float period = 2.0f * float(len);
    if (in < 0.0f) {
      if (in < -period)
        in += period * floorf(-in / period);
      in = in < -float(len) ? in + period : -in - 1.0f;
    } else if (in > last) {
      in -= period * floorf(in / period);
      if (in >= float(len))
        in = period - in - 1.0f;
    }
    return fminf(fmaxf(in, 0.0f), last);
  }
  if (fill == RandomAffineParams::Nearest)
    return fminf(fmaxf(in, 0.0f), last);
  return in;
}

/// Pixel (y, x) of one channel plane, or the fill value outside the image.
GRAPHC_HD float randomAffineRead(const float *plane, int64_t height, int64_t width, int64_t y,
                                 int64_t x, float fillValue) {
  return y >= 0 && y < height && x >= 0 && x < width ? plane[y * width + x] : fillValue;
}

/// Output pixel (y, x) of one channel plane under the map m.
GRAPHC_HD float randomAffinePixel(const RandomAffineParams &p, const float *m, const float *plane,
                                  int64_t height, int64_t width, int64_t y, int64_t x) {
  const float fx = float(x), fy = float(y);
  // A point far outside (a wild zoom) stays finite in float and reads the fill.
  const float inX = randomAffineCoordinate(m[0] * fx + m[1] * fy + m[2], width, p.fill);
  const float inY = randomAffineCoordinate(m[3] * fx + m[4] * fy + m[5], height, p.fill);
  if (!(fabsf(inX) < 1e9f) || !(fabsf(inY) < 1e9f))
    return p.fillValue;
  if (p.nearestInterpolation)
    return randomAffineRead(plane, height, width, int64_t(roundf(inY)), int64_t(roundf(inX)),
                            p.fillValue);
  const float x0 = floorf(inX), y0 = floorf(inY);
  const int64_t ix = int64_t(x0), iy = int64_t(y0);
  const float wx = inX - x0, wy = inY - y0;
  const float top = (1.0f - wx) * randomAffineRead(plane, height, width, iy, ix, p.fillValue) +
                    wx * randomAffineRead(plane, height, width, iy, ix + 1, p.fillValue);
  const float bottom =
      (1.0f - wx) * randomAffineRead(plane, height, width, iy + 1, ix, p.fillValue) +
      wx * randomAffineRead(plane, height, width, iy + 1, ix + 1, p.fillValue);
  return (1.0f - wy) * top + wy * bottom;
}

} // namespace graphc::rt
