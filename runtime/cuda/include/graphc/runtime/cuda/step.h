// What a generated CUDA step (targets/cuda/EmitCuda.cpp) includes.
//
// The same generated file builds two ways:
//  - with nvcc for the GPU: kernels launch on the step's compute stream, matmuls go to cuBLAS,
//    convolutions and max pooling to cuDNN, and every status is checked naming the call and op;
//  - with a host C++ compiler and -DGRAPHC_HOST_SHIM: the generated kernels run through
//    host_shim.h, and each cuBLAS/cuDNN call is replaced by the CPU runtime's kernel
//    (runtime/kernels.h) on the same arena offsets. The CPU-only CI trains with this host build
//    and compares it with the CPU target (test/cuda/).
#pragma once

#include <math.h>

#include <cstdint>
#ifdef GRAPHC_HOST_SHIM
#include <functional>
#include <vector>
#endif

#include "graphc/runtime/attention_rows.h"
#include "graphc/runtime/cuda/half.h"
#include "graphc/runtime/dropout_mask.h"
#include "graphc/runtime/elementwise_math.h"
#include "graphc/runtime/pool_window.h"
#include "graphc/runtime/program.h"
#include "graphc/runtime/random_affine.h"
#include "graphc/runtime/workspace.h"

#ifdef GRAPHC_HOST_SHIM
#include "graphc/runtime/cuda/host_shim.h"
#include "graphc/runtime/kernels.h"
#else
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#endif

namespace graphc::rt::cuda {

#ifdef GRAPHC_HOST_SHIM
/// The host build's stand-in for a cuBLAS or cuDNN call on 16-bit tensors: the f32 pointer the
/// CPU kernel takes. A float tensor passes through; a 16-bit one is widened into a copy, and an
/// output (F32Out) is rounded back when the full expression holding the call ends. That is the
/// CPU target's emulation around its kernels (runtime/kernels.h: widenHalf, narrowHalf), so the
/// host build computes its values bit for bit. Host-only test code: the copies are allocated.
class F32In {
public:
  F32In(const float *p, int64_t) : data_(const_cast<float *>(p)) {}
  template <typename T> F32In(const T *p, int64_t n) : copy_(static_cast<size_t>(n)) {
    for (int64_t i = 0; i < n; ++i)
      copy_[static_cast<size_t>(i)] = static_cast<float>(p[i]);
    data_ = copy_.data();
  }
  operator float *() const { return data_; }

protected:
  std::vector<float> copy_;
  float *data_ = nullptr;
};
class F32Out : public F32In {
public:
  F32Out(float *p, int64_t n) : F32In(p, n) {}
  template <typename T>
  F32Out(T *p, int64_t n)
      : F32In(static_cast<const T *>(p), n), narrow_([p, n](const float *src) {
          for (int64_t i = 0; i < n; ++i)
            p[i] = T(src[i]);
        }) {}
  F32Out(const F32Out &) = delete;
  ~F32Out() {
    if (narrow_)
      narrow_(data_);
  }

private:
  std::function<void(const float *)> narrow_;
};
#endif

enum class ConvDirection : int32_t { Forward = 0, BackwardData = 1, BackwardFilter = 2 };
/// A convolution's storage type: f32, or 16 bit under --precision=bf16|fp16 (half.h).
enum class DataType : int32_t { F32 = 0, BF16 = 1, F16 = 2 };

/// One convolution op of the step, for the cuDNN descriptors and the algorithm choice at
/// start-up. Shapes as in runtime/kernels.h's Conv2dShape (padding symmetric: top = bottom).
struct ConvSpec {
  const char *op; // the op's name (ONNX node) for messages
  ConvDirection direction;
  int64_t n, c, h, w, k, r, s, oh, ow;
  int64_t strideH, strideW, padH, padW, dilationH, dilationW, groups;
  uint64_t workspaceLimit; // the bytes planned for this op's workspace buffer
  DataType dataType = DataType::F32; // of x, w and y alike
};

/// One max-pooling op done by cuDNN.
struct PoolSpec {
  const char *op;
  int64_t n, c, h, w, oh, ow, kernelH, kernelW, strideH, strideW, padH, padW;
};

#ifdef GRAPHC_HOST_SHIM
struct StepContext {}; // the host build calls the CPU kernels and needs no handles
#else
/// cuDNN state of one ConvSpec: descriptors and the algorithm chosen at start-up.
struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algo = 0;               // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t by direction
  size_t workspaceBytes = 0;  // what that algorithm needs, <= ConvSpec::workspaceLimit
  // When cuDNN needs more workspace for the whole batch than the plan holds, the op runs in
  // `chunks` calls over consecutive images (the descriptors then describe one chunk): each
  // call's x (dx) and y (dy) start xChunkBytes and yChunkBytes further on. 1: one call.
  int64_t chunks = 1;
  uint64_t xChunkBytes = 0, yChunkBytes = 0;
};
struct PoolPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
};
struct StepContext {
  cudaStream_t stream;
  cublasHandle_t cublas;
  cudnnHandle_t cudnn;
  const ConvPlan *conv;
  const PoolPlan *pool;
};

/// The convolution calls of the generated step: ConvPlan `index`'s descriptors and algorithm,
/// over the batch in ConvPlan::chunks calls (one, unless chooseConv in cuda_runtime.cpp had to
/// split the batch to stay within the planned workspace). The first failing status is returned.
/// A filter gradient sums its chunks' contributions (beta = 1 after the first chunk).
inline const void *chunkAt(const void *base, uint64_t bytes, int64_t chunk) {
  return static_cast<const unsigned char *>(base) + bytes * uint64_t(chunk);
}
inline void *chunkAt(void *base, uint64_t bytes, int64_t chunk) {
  return static_cast<unsigned char *>(base) + bytes * uint64_t(chunk);
}
inline cudnnStatus_t convForward(const StepContext *ctx, int index, const void *x, const void *w,
                                 void *workspace, const float *beta, void *y) {
  static const float one = 1.0f;
  const ConvPlan &c = ctx->conv[index];
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  for (int64_t k = 0; k < c.chunks && status == CUDNN_STATUS_SUCCESS; ++k)
    status = cudnnConvolutionForward(ctx->cudnn, &one, c.x, chunkAt(x, c.xChunkBytes, k), c.w, w,
                                     c.conv, cudnnConvolutionFwdAlgo_t(c.algo), workspace,
                                     c.workspaceBytes, beta, c.y, chunkAt(y, c.yChunkBytes, k));
  return status;
}
inline cudnnStatus_t convBackwardData(const StepContext *ctx, int index, const void *w,
                                      const void *dy, void *workspace, const float *beta,
                                      void *dx) {
  static const float one = 1.0f;
  const ConvPlan &c = ctx->conv[index];
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  for (int64_t k = 0; k < c.chunks && status == CUDNN_STATUS_SUCCESS; ++k)
    status =
        cudnnConvolutionBackwardData(ctx->cudnn, &one, c.w, w, c.y, chunkAt(dy, c.yChunkBytes, k),
                                     c.conv, cudnnConvolutionBwdDataAlgo_t(c.algo), workspace,
                                     c.workspaceBytes, beta, c.x, chunkAt(dx, c.xChunkBytes, k));
  return status;
}
inline cudnnStatus_t convBackwardFilter(const StepContext *ctx, int index, const void *x,
                                        const void *dy, void *workspace, void *dw) {
  static const float one = 1.0f, zero = 0.0f;
  const ConvPlan &c = ctx->conv[index];
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  for (int64_t k = 0; k < c.chunks && status == CUDNN_STATUS_SUCCESS; ++k)
    status = cudnnConvolutionBackwardFilter(ctx->cudnn, &one, c.x, chunkAt(x, c.xChunkBytes, k),
                                            c.y, chunkAt(dy, c.yChunkBytes, k), c.conv,
                                            cudnnConvolutionBwdFilterAlgo_t(c.algo), workspace,
                                            c.workspaceBytes, k == 0 ? &zero : &one, c.w, dw);
  return status;
}

[[noreturn]] void failCuda(cudaError_t status, const char *call, const char *op);
[[noreturn]] void failCublas(cublasStatus_t status, const char *call, const char *op);
[[noreturn]] void failCudnn(cudnnStatus_t status, const char *call, const char *op);
#endif

/// What the generated file defines as `graphc_generated`; the runtime (cuda_runtime.cpp, or
/// host_main.cpp for the host build) turns it into `graphc_program`.
struct GeneratedProgram {
  const unsigned char *descriptor; // program.fbs FlatBuffer (verified before use)
  uint64_t descriptorBytes;
  const unsigned char *initBlob;   // initial parameter values
  uint64_t initBlobBytes;
  const ConvSpec *convs;
  int32_t numConvs;
  const PoolSpec *pools;
  int32_t numPools;
  /// Runs one step on the arena: on the GPU enqueues it on ctx->stream (capturable into a CUDA
  /// graph: no allocation, no synchronisation); on the host runs it.
  void (*step)(unsigned char *arena, const StepContext *ctx);
  /// Steps with optimizer state in host memory (graphc --offload): tells the update kernels
  /// where the host arena is, as the device sees it (a mapped pinned address on the GPU, the
  /// plain address in the host build). Null when the step keeps everything in the arena.
  void (*setHostArena)(unsigned char *hostArena);
};

// ---- device helpers of the generated kernels (the same formulas as runtime/kernels.cpp) ----

/// The CPU kernels' sigmoid (elementwise_math.h), one definition for both targets.
__device__ __forceinline__ float sigmoidStable(float x) { return ::graphc::rt::sigmoidOf(x); }
__device__ __forceinline__ bool isNaN(float x) { return x != x; }
__device__ __forceinline__ bool isInf(float x) { return x == INFINITY || x == -INFINITY; }
/// max + log(sum(exp(row - max))) accumulated in double, as runtime/kernels.cpp's logSumExp.
__device__ __forceinline__ double logSumExpRow(const float *row, int64_t n) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j)
    mx = mx < row[j] ? row[j] : mx; // std::max(mx, row[j]): a NaN never becomes the max
  if (isInf(mx))
    return mx;
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j)
    sum += exp(static_cast<double>(row[j]) - mx);
  return mx + log(sum);
}
constexpr float kProbEps = 1e-7f;
__device__ __forceinline__ float clipProb(float p) {
  const float lo = p < kProbEps ? kProbEps : p;
  return lo > 1.0f - kProbEps ? 1.0f - kProbEps : lo;
}
__device__ __forceinline__ bool probInRange(float p) { return p >= kProbEps && p <= 1.0f - kProbEps; }

/// Index (within the h*w plane) of the first maximum of a pooling window, row-major with a NaN
/// always winning, or -1 for a window entirely in the padding (runtime/kernels.cpp's rule).
template <typename T>
__device__ __forceinline__ int64_t poolArgmax(const T *img, int64_t h, int64_t w, int64_t y0,
                                              int64_t x0, int64_t kh, int64_t kw) {
  const int64_t yb = y0 < 0 ? 0 : y0, ye = y0 + kh < h ? y0 + kh : h;
  const int64_t xb = x0 < 0 ? 0 : x0, xe = x0 + kw < w ? x0 + kw : w;
  int64_t best = -1;
  float bestVal = -INFINITY;
  for (int64_t iy = yb; iy < ye; ++iy)
    for (int64_t ix = xb; ix < xe; ++ix) {
      const float v = img[iy * w + ix];
      if (best < 0 || v > bestVal || isNaN(v)) {
        best = iy * w + ix;
        bestVal = v;
      }
    }
  return best;
}

} // namespace graphc::rt::cuda

/// Defined by every generated step.
extern "C" const graphc::rt::cuda::GeneratedProgram graphc_generated;

// ---- how generated code launches kernels and checks statuses ----
// Block kernels (host_shim.h): phases of all threads of a block separated by barriers, and
// arrays shared by a block's threads. A phase's local variables end with it; whatever the next
// phase needs goes through a GRAPHC_BLOCK_SHARED array. GRAPHC_BLOCK_SUM(part) adds part[0..256)
// into part[0] by a fixed tree (the same order on the GPU and on the host: deterministic).
#define GRAPHC_BLOCK_SIZE 256
#define GRAPHC_BLOCK_SUM(part)                                                                     \
  for (int graphc_stride_ = GRAPHC_BLOCK_SIZE / 2; graphc_stride_ > 0; graphc_stride_ >>= 1)       \
    GRAPHC_BLOCK_THREADS(graphc_t_) {                                                              \
      if (graphc_t_ < graphc_stride_)                                                              \
        (part)[graphc_t_] += (part)[graphc_t_ + graphc_stride_];                                   \
    }
#ifdef GRAPHC_HOST_SHIM
#define GRAPHC_LAUNCH(kernel, blocks, threads, op, ...)                                            \
  ::graphc::rt::cuda::hostLaunch(kernel, dim3(blocks), dim3(threads), __VA_ARGS__)
#define GRAPHC_LAUNCH_BLOCKS(kernel, blocks, op, ...)                                              \
  ::graphc::rt::cuda::hostLaunchBlocks(kernel, dim3(blocks), dim3(GRAPHC_BLOCK_SIZE), __VA_ARGS__)
#define GRAPHC_BLOCK_SHARED
// (One phase's threads in the launch order of host_shim.h: reversed on request.)
#define GRAPHC_BLOCK_THREADS(t)                                                                    \
  for (int graphc_lane_ = 0; graphc_lane_ < GRAPHC_BLOCK_SIZE; ++graphc_lane_)                     \
    if (const int t = int(::graphc::rt::cuda::hostLaunchIndex(graphc_lane_, GRAPHC_BLOCK_SIZE));   \
        true)
#else
#define GRAPHC_BLOCK_SHARED __shared__
#define GRAPHC_BLOCK_THREADS(t)                                                                    \
  for (int t = threadIdx.x, graphc_once_ = 1; graphc_once_; graphc_once_ = 0, __syncthreads())
#define GRAPHC_CUDA(call, name, op)                                                                \
  do {                                                                                             \
    cudaError_t graphc_status_ = (call);                                                           \
    if (graphc_status_ != cudaSuccess)                                                             \
      ::graphc::rt::cuda::failCuda(graphc_status_, name, op);                                      \
  } while (0)
#define GRAPHC_CUBLAS(call, name, op)                                                              \
  do {                                                                                             \
    cublasStatus_t graphc_status_ = (call);                                                        \
    if (graphc_status_ != CUBLAS_STATUS_SUCCESS)                                                   \
      ::graphc::rt::cuda::failCublas(graphc_status_, name, op);                                    \
  } while (0)
#define GRAPHC_CUDNN(call, name, op)                                                               \
  do {                                                                                             \
    cudnnStatus_t graphc_status_ = (call);                                                         \
    if (graphc_status_ != CUDNN_STATUS_SUCCESS)                                                    \
      ::graphc::rt::cuda::failCudnn(graphc_status_, name, op);                                     \
  } while (0)
#define GRAPHC_LAUNCH(kernel, blocks, threads, op, ...)                                            \
  do {                                                                                             \
    kernel<<<(blocks), (threads), 0, ctx->stream>>>(__VA_ARGS__);                                  \
    GRAPHC_CUDA(cudaGetLastError(), "launch of " #kernel, op);                                     \
  } while (0)
#define GRAPHC_LAUNCH_BLOCKS(kernel, blocks, op, ...)                                              \
  GRAPHC_LAUNCH(kernel, blocks, GRAPHC_BLOCK_SIZE, op, __VA_ARGS__)
#endif
