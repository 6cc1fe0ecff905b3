// The average-pooling window rule (graph.avg_pool2d), one definition for the CPU kernels
// (runtime/lib/kernels.cpp) and the generated CUDA kernels (targets/cuda/EmitCuda.cpp, through
// step.h), so both targets divide by the same count.
#pragma once

#include <cstdint>

#include "graphc/runtime/host_device.h"

namespace graphc::rt {

/// The input cells [yBegin, yEnd) x [xBegin, xEnd) of one output's window and its divisor.
struct AvgPoolWindow {
  int64_t yBegin, yEnd, xBegin, xEnd, divisor;
};

/// Output (oy, ox)'s window of an average pooling of an h x w image into oh x ow outputs
/// (PyTorch's avg_pool2d rule): padding top/left is given, bottom/right is what oh/ow imply
/// (ceil mode); with countIncludePad the divisor is the window clipped to the padded input,
/// otherwise the number of input cells in it (a window entirely in the padding has no cells:
/// its loops run zero times).
GRAPHC_HD AvgPoolWindow avgPoolWindow(int64_t h, int64_t w, int64_t oh, int64_t ow,
                                      int64_t kernelH, int64_t kernelW, int64_t strideH,
                                      int64_t strideW, int64_t padTop, int64_t padLeft,
                                      int64_t oy, int64_t ox, bool countIncludePad) {
  const int64_t bottom = (oh - 1) * strideH + kernelH - h - padTop;
  const int64_t right = (ow - 1) * strideW + kernelW - w - padLeft;
  const int64_t padBottom = bottom > 0 ? bottom : 0, padRight = right > 0 ? right : 0;
  const int64_t y0 = oy * strideH - padTop, x0 = ox * strideW - padLeft;
  const int64_t y1 = y0 + kernelH < h + padBottom ? y0 + kernelH : h + padBottom;
  const int64_t x1 = x0 + kernelW < w + padRight ? x0 + kernelW : w + padRight;
  AvgPoolWindow win;
  win.yBegin = y0 > 0 ? y0 : 0;
  win.xBegin = x0 > 0 ? x0 : 0;
  win.yEnd = y1 < h ? y1 : h;
  win.xEnd = x1 < w ? x1 : w;
  win.divisor = countIncludePad ? (y1 - y0) * (x1 - x0)
                                : (win.yEnd - win.yBegin) * (win.xEnd - win.xBegin);
  return win;
}

} // namespace graphc::rt
