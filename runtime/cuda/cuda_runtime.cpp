// The CUDA runtime of a graphc training binary: defines `graphc_program` (from the embedded
// program descriptor) and `graphc_device_runtime` (device.h), so that the CPU target's main()
// (train_main.cpp) drives a step that runs on the GPU with the same command line.
//
// Start-up (DeviceRuntime::start, before step 1): cudaGetDeviceCount (any error: "no CUDA
// device"), the context, one compute and one copy stream, the cuBLAS and cuDNN handles, the
// cuDNN descriptors and algorithms of every convolution (chosen under the op's planned workspace,
// see chooseConv), then cudaMemGetInfo and the fit decision (fit.h), then ONE cudaMalloc of
// exactly the planned arena. Nothing is allocated on the device after that: cuBLAS runs without
// a workspace (cublasSetWorkspace(nullptr, 0)), cuDNN in the planned workspace buffers.
//
// A step (cudaTrainStep): the inputs (data, labels, step) go from the host image of the arena
// through a pinned staging buffer to the device on the copy stream; the compute stream waits for
// that copy, runs the step (eagerly the first time, then as a captured CUDA graph), and copies
// the loss and the prediction back. With a planned next-batch staging region (the default; see
// staging.h), once the step is launched the main's prefetcher hands over the next batch, which
// goes to that region on the copy stream while the step computes; the next step then starts
// with a device-to-device copy into its data and labels instead of waiting for the host link.
// See docs/cuda.md.
//
// Data-parallel binaries (graphc --data-parallel) also link the NCCL backend (comm_nccl.cpp),
// which starts first: it sets this rank's GPU as the current device (used here instead of device
// 0), owns the communicator and the communication stream, and replaces the end-of-step
// cudaStreamSynchronize by a wait that watches NCCL's errors and the collective timeout. This
// file only refers to it weakly, so single-process binaries do not link NCCL or MPI.
#include "graphc/runtime/cuda/step.h"

#include "graphc/runtime/arena_poison.h"
#include "graphc/runtime/comm.h"
#include "graphc/runtime/cuda/descriptor.h"
#include "graphc/runtime/cuda/fit.h"
#include "graphc/runtime/device.h"
#include "graphc/runtime/staging.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace graphc::rt::cuda {

constexpr int kExitDevice = 3;

// From comm_nccl.cpp (comm_nccl.h), present only in data-parallel binaries.
void synchronizeStep(cudaStream_t compute) __attribute__((weak));
uint64_t collectiveDeviceReserve() __attribute__((weak));

/// Ends a failed run: in a data-parallel job every rank with it (CommRuntime::finish aborts the
/// NCCL communicator and the MPI job), so that no peer waits for this one until its timeout.
[[noreturn]] void exitDevice() {
  std::fflush(stderr);
  if (&graphc_comm_runtime)
    graphc_comm_runtime.finish(kExitDevice);
  std::exit(kExitDevice);
}

void failCuda(cudaError_t status, const char *call, const char *op) {
  std::fprintf(stderr, "error: CUDA: %s failed in %s: %s (%s)\n", call, op,
               cudaGetErrorName(status), cudaGetErrorString(status));
  exitDevice();
}
void failCublas(cublasStatus_t status, const char *call, const char *op) {
  std::fprintf(stderr, "error: cuBLAS: %s failed in %s: %s (%s)\n", call, op,
               cublasGetStatusName(status), cublasGetStatusString(status));
  exitDevice();
}
void failCudnn(cudnnStatus_t status, const char *call, const char *op) {
  std::fprintf(stderr, "error: cuDNN: %s failed in %s: %s\n", call, op,
               cudnnGetErrorString(status));
  exitDevice();
}

} // namespace graphc::rt::cuda

namespace {

using namespace graphc::rt;
using namespace graphc::rt::cuda;

struct Range {
  uint64_t offset, bytes;
};

struct State {
  DecodedProgram decoded;
  unsigned char *arena = nullptr; // the device arena
  cudaStream_t compute = nullptr, copy = nullptr;
  cudaEvent_t inputsCopied = nullptr;
  // Next-batch staging (StagingLayout): the batch of the next step, uploaded during this one.
  StagingLayout staging;
  bool stageNext = false;              // a region is planned and GRAPHC_CUDA_STAGE_NEXT is not 0
  bool staged = false;                 // the region holds the batch of the next cudaTrainStep
  unsigned char *pinnedNext = nullptr; // pinned source of that upload
  cudaEvent_t stagedCopied = nullptr;  // copy stream: the upload has landed
  cudaEvent_t stagingRead = nullptr;   // compute stream: the region has been copied out
  NextBatchSource nextSource = nullptr;
  void *nextContext = nullptr;
  // GRAPHC_POISON_ARENA=1 (arena_poison.h): the device arena's scratch ranges, set to 0xFF on
  // the compute stream before every step; empty otherwise.
  std::vector<std::pair<uint64_t, uint64_t>> poison;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  std::vector<ConvPlan> convs;
  std::vector<PoolPlan> pools;
  StepContext ctx{};
  std::vector<Range> inputs, outputs, persistent;
  bool hostArenaMapped = false; // the offloaded optimizer state, registered with CUDA
  unsigned char *pinned = nullptr; // staging: inputs then outputs
  uint64_t inputBytes = 0;
  cudaGraphExec_t graph = nullptr;
  int64_t stepsRun = 0;
  bool deterministic = false; // GRAPHC_CUDA_DETERMINISTIC=1: only deterministic cuDNN algorithms
  bool useGraph = true;
  bool verbose = false;
  // GRAPHC_CUDA_TIMING=1: time each step's kernels on the compute stream with CUDA events
  // (from after the inputs arrive to before the outputs leave) and print it per step, so that
  // benchmarks compare the step itself with a framework's step on data already on the device.
  bool timing = false;
  cudaEvent_t stepBegin = nullptr, stepEnd = nullptr;
  size_t freeAfterHandles = 0, total = 0;
  uint64_t handleReserve = 0; // bytes the handles, streams and descriptors took
};

State &state() {
  static State s;
  return s;
}

/// First algorithm of cuDNN's heuristic ranking that succeeded, needs at most `limit` bytes and
/// uses FMA (or default) math, preferring deterministic ones (and accepting only those when
/// `deterministicOnly`); -1 if none.
template <typename Perf>
int pickAlgorithm(const Perf *perf, int count, uint64_t limit, bool deterministicOnly) {
  for (int pass = 0; pass < (deterministicOnly ? 1 : 2); ++pass)
    for (int i = 0; i < count; ++i) {
      const Perf &p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > limit)
        continue;
      if (p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH)
        continue;
      if (pass == 0 && p.determinism != CUDNN_DETERMINISTIC)
        continue;
      return static_cast<int>(p.algo);
    }
  return -1;
}

const char *directionName(ConvDirection d) {
  switch (d) {
  case ConvDirection::Forward:
    return "forward";
  case ConvDirection::BackwardData:
    return "backward-data";
  case ConvDirection::BackwardFilter:
    return "backward-filter";
  }
  return "?";
}

/// cuDNN's type for a tensor of `type`: the 16-bit ones of --precision=bf16|fp16 compute in
/// float (the convolution descriptor's compute type stays CUDNN_DATA_FLOAT).
cudnnDataType_t cudnnTypeOf(DataType type) {
  switch (type) {
  case DataType::BF16:
    return CUDNN_DATA_BFLOAT16;
  case DataType::F16:
    return CUDNN_DATA_HALF;
  case DataType::F32:
    break;
  }
  return CUDNN_DATA_FLOAT;
}

/// cuDNN descriptors of one convolution op and its algorithm: the best of
/// cudnnGetConvolution*Algorithm_v7 whose workspace fits the buffer graphc planned for the op,
/// else the zero-workspace algorithm (IMPLICIT_GEMM forward, ALGO_0 backward); when even that
/// needs more than planned, the same over chunks of the batch (ConvPlan::chunks).
void chooseConv(cudnnHandle_t h, const ConvSpec &sp, ConvPlan &pl) {
  const char *op = sp.op;
  const cudnnDataType_t data = cudnnTypeOf(sp.dataType);
  GRAPHC_CUDNN(cudnnCreateTensorDescriptor(&pl.x), "cudnnCreateTensorDescriptor", op);
  GRAPHC_CUDNN(cudnnCreateTensorDescriptor(&pl.y), "cudnnCreateTensorDescriptor", op);
  GRAPHC_CUDNN(cudnnCreateFilterDescriptor(&pl.w), "cudnnCreateFilterDescriptor", op);
  GRAPHC_CUDNN(cudnnCreateConvolutionDescriptor(&pl.conv), "cudnnCreateConvolutionDescriptor", op);
  GRAPHC_CUDNN(cudnnSetTensor4dDescriptor(pl.x, CUDNN_TENSOR_NCHW, data, int(sp.n), int(sp.c),
                                          int(sp.h), int(sp.w)),
               "cudnnSetTensor4dDescriptor", op);
  GRAPHC_CUDNN(cudnnSetTensor4dDescriptor(pl.y, CUDNN_TENSOR_NCHW, data, int(sp.n), int(sp.k),
                                          int(sp.oh), int(sp.ow)),
               "cudnnSetTensor4dDescriptor", op);
  GRAPHC_CUDNN(cudnnSetFilter4dDescriptor(pl.w, data, CUDNN_TENSOR_NCHW, int(sp.k),
                                          int(sp.c / sp.groups), int(sp.r), int(sp.s)),
               "cudnnSetFilter4dDescriptor", op);
  GRAPHC_CUDNN(cudnnSetConvolution2dDescriptor(pl.conv, int(sp.padH), int(sp.padW),
                                               int(sp.strideH), int(sp.strideW),
                                               int(sp.dilationH), int(sp.dilationW),
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
               "cudnnSetConvolution2dDescriptor", op);
  GRAPHC_CUDNN(cudnnSetConvolutionGroupCount(pl.conv, int(sp.groups)),
               "cudnnSetConvolutionGroupCount", op);
  // f32: FMA kernels only, no TF32 tensor-core math, so results stay within float rounding of
  // the CPU target. 16 bit: tensor cores, float accumulation.
  GRAPHC_CUDNN(cudnnSetConvolutionMathType(
                   pl.conv, sp.dataType == DataType::F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
               "cudnnSetConvolutionMathType", op);
  int n, k, oh, ow;
  GRAPHC_CUDNN(cudnnGetConvolution2dForwardOutputDim(pl.conv, pl.x, pl.w, &n, &k, &oh, &ow),
               "cudnnGetConvolution2dForwardOutputDim", op);
  if (n != sp.n || k != sp.k || oh != sp.oh || ow != sp.ow) {
    std::fprintf(stderr, "error: cuDNN computes a %dx%dx%dx%d output for op '%s', the plan has "
                 "%" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64 "\n", n, k, oh, ow, op, sp.n,
                 sp.k, sp.oh, sp.ow);
    exitDevice();
  }
  // The algorithm for `images` images per call (the descriptors' batch): the best whose
  // workspace fits the plan, else the zero-workspace fallback; and its workspace.
  auto selectFor = [&](int64_t images, int &algo, size_t &ws) {
    GRAPHC_CUDNN(cudnnSetTensor4dDescriptor(pl.x, CUDNN_TENSOR_NCHW, data, int(images), int(sp.c),
                                            int(sp.h), int(sp.w)),
                 "cudnnSetTensor4dDescriptor", op);
    GRAPHC_CUDNN(cudnnSetTensor4dDescriptor(pl.y, CUDNN_TENSOR_NCHW, data, int(images), int(sp.k),
                                            int(sp.oh), int(sp.ow)),
                 "cudnnSetTensor4dDescriptor", op);
    int returned = 0;
    algo = -1;
    ws = 0;
    switch (sp.direction) {
    case ConvDirection::Forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      GRAPHC_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h, pl.x, pl.w, pl.conv, pl.y,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                          &returned, perf),
                   "cudnnGetConvolutionForwardAlgorithm_v7", op);
      algo = pickAlgorithm(perf, returned, sp.workspaceLimit, state().deterministic);
      if (algo < 0)
        algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM; // deterministic
      GRAPHC_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(h, pl.x, pl.w, pl.conv, pl.y,
                                                           cudnnConvolutionFwdAlgo_t(algo), &ws),
                   "cudnnGetConvolutionForwardWorkspaceSize", op);
      break;
    }
    case ConvDirection::BackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      GRAPHC_CUDNN(
          cudnnGetConvolutionBackwardDataAlgorithm_v7(
              h, pl.w, pl.y, pl.conv, pl.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7", op);
      algo = pickAlgorithm(perf, returned, sp.workspaceLimit, state().deterministic);
      if (algo < 0) // ALGO_0 accumulates with atomics; ALGO_1 is the deterministic fallback
        algo = state().deterministic ? CUDNN_CONVOLUTION_BWD_DATA_ALGO_1
                                     : CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
      GRAPHC_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(
                       h, pl.w, pl.y, pl.conv, pl.x, cudnnConvolutionBwdDataAlgo_t(algo), &ws),
                   "cudnnGetConvolutionBackwardDataWorkspaceSize", op);
      break;
    }
    case ConvDirection::BackwardFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      GRAPHC_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                       h, pl.x, pl.y, pl.conv, pl.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                       &returned, perf),
                   "cudnnGetConvolutionBackwardFilterAlgorithm_v7", op);
      algo = pickAlgorithm(perf, returned, sp.workspaceLimit, state().deterministic);
      if (algo < 0)
        algo = state().deterministic ? CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1
                                     : CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
      GRAPHC_CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                       h, pl.x, pl.y, pl.conv, pl.w, cudnnConvolutionBwdFilterAlgo_t(algo), &ws),
                   "cudnnGetConvolutionBackwardFilterWorkspaceSize", op);
      break;
    }
    }
  };
  // cuDNN may want more workspace for the whole batch than the plan holds (a cuDNN version or
  // device whose algorithms graphc's plan did not anticipate): then the op runs over chunks of
  // the batch, the largest that fits (convChunkImages), rather than refuse to train; slower,
  // and still inside the arena. GRAPHC_CUDA_CONV_CHUNK=N caps the images per call (to check the
  // split on a GPU).
  int64_t atMost = 0;
  if (const char *chunkEnv = std::getenv("GRAPHC_CUDA_CONV_CHUNK"); chunkEnv && *chunkEnv) {
    char *end = nullptr;
    atMost = std::strtoll(chunkEnv, &end, 10);
    if (*end != '\0' || atMost < 1) {
      std::fprintf(stderr,
                   "error: GRAPHC_CUDA_CONV_CHUNK=%s: expected a positive number of "
                   "images per convolution call\n",
                   chunkEnv);
      exitDevice();
    }
  }
  int algo = -1;
  size_t ws = 0;
  size_t wholeBatch = 0;
  const int64_t images =
      convChunkImages(sp.n, atMost, sp.workspaceLimit, [&](int64_t candidate) -> uint64_t {
        selectFor(candidate, algo, ws);
        if (candidate == sp.n || wholeBatch == 0)
          wholeBatch = ws;
        return ws;
      });
  if (images == 0) {
    std::fprintf(stderr,
                 "error: cuDNN has no %s algorithm for op '%s' within its planned "
                 "workspace of %" PRIu64 " bytes (the fallback needs %zu for the batch of %" PRId64
                 ", %zu for one image)\n",
                 directionName(sp.direction), op, sp.workspaceLimit, wholeBatch, sp.n, ws);
    exitDevice();
  }
  if (images < sp.n && atMost <= 0)
    std::fprintf(stderr,
                 "warning: cuDNN needs %zu bytes of workspace for op '%s' %s over the "
                 "batch of %" PRId64 ", more than the %" PRIu64 " planned: it runs in %" PRId64
                 " calls of %" PRId64 " images (slower; the arena is unchanged)\n",
                 wholeBatch, op, directionName(sp.direction), sp.n, sp.workspaceLimit,
                 sp.n / images, images);
  const uint64_t elementBytes = sp.dataType == DataType::F32 ? 4 : 2;
  pl.chunks = sp.n / images;
  pl.xChunkBytes = uint64_t(images * sp.c * sp.h * sp.w) * elementBytes;
  pl.yChunkBytes = uint64_t(images * sp.k * sp.oh * sp.ow) * elementBytes;
  pl.algo = algo;
  pl.workspaceBytes = ws;
  if (state().verbose)
    std::fprintf(stderr, "cuda: op '%s' %s: cuDNN algorithm %d, workspace %zu of %" PRIu64
                 " planned bytes\n", op, directionName(sp.direction), algo, ws, sp.workspaceLimit);
}

/// One algorithm that cudnnFind*AlgorithmEx timed for a convolution problem and that graphc may
/// use (it ran, and with FMA or default math: no TF32), in cuDNN's order, fastest first.
struct TimedAlgorithm {
  int algo;
  size_t workspace;
};

template <typename Perf> std::vector<TimedAlgorithm> usableAlgorithms(const Perf *perf, int count) {
  std::vector<TimedAlgorithm> usable;
  for (int i = 0; i < count; ++i) {
    const Perf &p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS)
      continue;
    if (p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH)
      continue;
    usable.push_back({static_cast<int>(p.algo), p.memory});
  }
  return usable;
}

/// The fastest of `timed` within `limit` bytes of workspace, or nullptr.
const TimedAlgorithm *fastestWithin(const std::vector<TimedAlgorithm> &timed, uint64_t limit) {
  for (const TimedAlgorithm &t : timed)
    if (t.workspace <= limit)
      return &t;
  return nullptr;
}

/// Times cuDNN's algorithms for one convolution problem on this device (cudnnFind*AlgorithmEx)
/// within `limit` bytes of workspace, the largest that any convolution of this problem has
/// (graphc-grow-workspaces gives repeated blocks different ones): each then takes the fastest
/// within its own (fastestWithin), in place of the heuristic's choice. An algorithm's time does
/// not depend on the workspace offered beyond what it needs, so one timing serves them all. The
/// buffers are scratch regions of the arena, before anything lives in it: disjoint where x, w,
/// y and the workspace fit side by side, else overlapping (the values are garbage either way;
/// only the times matter). The Ex variants allocate nothing.
std::vector<TimedAlgorithm> findConv(cudnnHandle_t h, const ConvSpec &sp, const ConvPlan &pl,
                                     uint64_t limit, unsigned char *arena, uint64_t arenaBytes) {
  const char *op = sp.op;
  auto align = [](uint64_t b) { return (b + 255) / 256 * 256; };
  const uint64_t xBytes = align(uint64_t(sp.n * sp.c * sp.h * sp.w) * 4),
                 yBytes = align(uint64_t(sp.n * sp.k * sp.oh * sp.ow) * 4),
                 wBytes = align(uint64_t(sp.k * (sp.c / sp.groups) * sp.r * sp.s) * 4);
  const bool apart = xBytes + yBytes + wBytes + limit <= arenaBytes;
  unsigned char *x = arena, *y = apart ? arena + xBytes : arena,
                *w = apart ? arena + xBytes + yBytes : arena,
                *ws = apart ? arena + xBytes + yBytes + wBytes : arena;
  const size_t bytes = size_t(limit);
  int returned = 0;
  switch (sp.direction) {
  case ConvDirection::Forward: {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    GRAPHC_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(h, pl.x, x, pl.w, w, pl.conv, pl.y, y,
                                                        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                                        perf, bytes ? ws : nullptr, bytes),
                 "cudnnFindConvolutionForwardAlgorithmEx", op);
    return usableAlgorithms(perf, returned);
  }
  case ConvDirection::BackwardData: {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    GRAPHC_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(
                     h, pl.w, w, pl.y, y, pl.conv, pl.x, x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                     &returned, perf, bytes ? ws : nullptr, bytes),
                 "cudnnFindConvolutionBackwardDataAlgorithmEx", op);
    return usableAlgorithms(perf, returned);
  }
  case ConvDirection::BackwardFilter: {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    GRAPHC_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(
                     h, pl.x, x, pl.y, y, pl.conv, pl.w, w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                     &returned, perf, bytes ? ws : nullptr, bytes),
                 "cudnnFindConvolutionBackwardFilterAlgorithmEx", op);
    return usableAlgorithms(perf, returned);
  }
  }
  return {};
}

/// Replaces the heuristic's algorithm of `pl` by the fastest timed one within the convolution's
/// planned workspace; keeps it when none fits.
void takeFastest(const ConvSpec &sp, ConvPlan &pl, const std::vector<TimedAlgorithm> &timed) {
  const TimedAlgorithm *fastest = fastestWithin(timed, sp.workspaceLimit);
  if (!fastest)
    return; // nothing timed within the workspace: keep the heuristic's choice
  pl.algo = fastest->algo;
  pl.workspaceBytes = fastest->workspace;
  if (state().verbose)
    std::fprintf(
        stderr,
        "cuda: op '%s' %s: timed, cuDNN algorithm %d, workspace %zu of %" PRIu64 " planned bytes\n",
        sp.op, directionName(sp.direction), fastest->algo, fastest->workspace, sp.workspaceLimit);
}

void createPool(const PoolSpec &sp, PoolPlan &pl) {
  const char *op = sp.op;
  GRAPHC_CUDNN(cudnnCreateTensorDescriptor(&pl.x), "cudnnCreateTensorDescriptor", op);
  GRAPHC_CUDNN(cudnnCreateTensorDescriptor(&pl.y), "cudnnCreateTensorDescriptor", op);
  GRAPHC_CUDNN(cudnnCreatePoolingDescriptor(&pl.pool), "cudnnCreatePoolingDescriptor", op);
  GRAPHC_CUDNN(cudnnSetTensor4dDescriptor(pl.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(sp.n),
                                          int(sp.c), int(sp.h), int(sp.w)),
               "cudnnSetTensor4dDescriptor", op);
  GRAPHC_CUDNN(cudnnSetTensor4dDescriptor(pl.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(sp.n),
                                          int(sp.c), int(sp.oh), int(sp.ow)),
               "cudnnSetTensor4dDescriptor", op);
  GRAPHC_CUDNN(cudnnSetPooling2dDescriptor(pl.pool, CUDNN_POOLING_MAX_DETERMINISTIC,
                                           CUDNN_PROPAGATE_NAN, int(sp.kernelH), int(sp.kernelW),
                                           int(sp.padH), int(sp.padW), int(sp.strideH),
                                           int(sp.strideW)),
               "cudnnSetPooling2dDescriptor", op);
}

int startDevice(const Program &prog) {
  State &S = state();
  S.verbose = std::getenv("GRAPHC_CUDA_VERBOSE") != nullptr;
  const char *deterministicEnv = std::getenv("GRAPHC_CUDA_DETERMINISTIC");
  S.deterministic = deterministicEnv && std::strcmp(deterministicEnv, "0") != 0;
  const char *graphEnv = std::getenv("GRAPHC_CUDA_GRAPH");
  S.useGraph = !(graphEnv && std::strcmp(graphEnv, "0") == 0);
  const char *timingEnv = std::getenv("GRAPHC_CUDA_TIMING");
  S.timing = timingEnv && std::strcmp(timingEnv, "0") != 0;
  // GRAPHC_CUDA_STAGE_NEXT=0 uploads each batch before its step instead (comparisons).
  const char *stageEnv = std::getenv("GRAPHC_CUDA_STAGE_NEXT");
  S.staging = S.decoded.staging;
  S.stageNext = S.staging.present && !(stageEnv && std::strcmp(stageEnv, "0") == 0);
  std::string poisonError; // a bad value is reported by the main before step 1
  if (poisonArenaRequested(poisonError))
    S.poison = arenaScratchRanges(prog);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count < 1) {
    if (status != cudaSuccess)
      std::fprintf(stderr, "error: no CUDA device: cudaGetDeviceCount failed: %s (%s, error %d)\n",
                   cudaGetErrorName(status), cudaGetErrorString(status), int(status));
    else
      std::fprintf(stderr, "error: no CUDA device: cudaGetDeviceCount found none\n");
    return kExitDevice;
  }
  const char *startup = "start-up";
  // The current device: 0, or the one a data-parallel rank's NCCL backend chose from its local
  // rank (it starts before this).
  int device = 0;
  GRAPHC_CUDA(cudaGetDevice(&device), "cudaGetDevice", startup);
  GRAPHC_CUDA(cudaSetDevice(device), "cudaSetDevice", startup); // creates the primary context
  cudaDeviceProp props{};
  GRAPHC_CUDA(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties", startup);
  size_t freeAfterContext = 0, total = 0;
  GRAPHC_CUDA(cudaMemGetInfo(&freeAfterContext, &total), "cudaMemGetInfo", startup);

  GRAPHC_CUDA(cudaStreamCreateWithFlags(&S.compute, cudaStreamNonBlocking),
              "cudaStreamCreateWithFlags", startup);
  GRAPHC_CUDA(cudaStreamCreateWithFlags(&S.copy, cudaStreamNonBlocking),
              "cudaStreamCreateWithFlags", startup);
  GRAPHC_CUDA(cudaEventCreateWithFlags(&S.inputsCopied, cudaEventDisableTiming),
              "cudaEventCreateWithFlags", startup);
  GRAPHC_CUDA(cudaEventCreateWithFlags(&S.stagedCopied, cudaEventDisableTiming),
              "cudaEventCreateWithFlags", startup);
  GRAPHC_CUDA(cudaEventCreateWithFlags(&S.stagingRead, cudaEventDisableTiming),
              "cudaEventCreateWithFlags", startup);
  if (S.timing) {
    GRAPHC_CUDA(cudaEventCreate(&S.stepBegin), "cudaEventCreate", startup);
    GRAPHC_CUDA(cudaEventCreate(&S.stepEnd), "cudaEventCreate", startup);
  }
  GRAPHC_CUBLAS(cublasCreate(&S.cublas), "cublasCreate", startup);
  GRAPHC_CUBLAS(cublasSetStream(S.cublas, S.compute), "cublasSetStream", startup);
  // No cuBLAS workspace: cuBLAS would otherwise allocate its own outside the plan.
  GRAPHC_CUBLAS(cublasSetWorkspace(S.cublas, nullptr, 0), "cublasSetWorkspace", startup);
  GRAPHC_CUBLAS(cublasSetMathMode(S.cublas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode", startup);
  GRAPHC_CUDNN(cudnnCreate(&S.cudnn), "cudnnCreate", startup);
  GRAPHC_CUDNN(cudnnSetStream(S.cudnn, S.compute), "cudnnSetStream", startup);

  size_t freeBytes = 0;
  GRAPHC_CUDA(cudaMemGetInfo(&freeBytes, &total), "cudaMemGetInfo", startup);
  S.freeAfterHandles = freeBytes;
  S.handleReserve = freeAfterContext > freeBytes ? freeAfterContext - freeBytes : 0;
  S.total = total;
  const ArenaFit fit = decideArenaFit(prog.arenaBytes, freeBytes, total);
  if (!fit.fits) {
    std::fprintf(stderr, "%s\n", fit.message.c_str());
    return kExitDevice;
  }
  // The cuDNN descriptors and algorithms after the arena check, so that a plan too large for
  // this device is refused as such, whatever cuDNN would say of its shapes.
  const GeneratedProgram &gen = graphc_generated;
  S.convs.resize(static_cast<size_t>(gen.numConvs));
  for (int32_t i = 0; i < gen.numConvs; ++i)
    chooseConv(S.cudnn, gen.convs[i], S.convs[static_cast<size_t>(i)]);
  S.pools.resize(static_cast<size_t>(gen.numPools));
  for (int32_t i = 0; i < gen.numPools; ++i)
    createPool(gen.pools[i], S.pools[static_cast<size_t>(i)]);
  S.ctx = StepContext{S.compute, S.cublas, S.cudnn, S.convs.data(), S.pools.data()};
  // The one device allocation.
  const cudaError_t alloc = cudaMalloc(reinterpret_cast<void **>(&S.arena),
                                       std::max<uint64_t>(prog.arenaBytes, 1));
  if (alloc != cudaSuccess) {
    std::fprintf(stderr, "error: cudaMalloc of the arena (%" PRIu64 " bytes) failed: %s; "
                 "%zu bytes were free of %zu\n", prog.arenaBytes, cudaGetErrorString(alloc),
                 freeBytes, total);
    return kExitDevice;
  }
  GRAPHC_CUDA(cudaMemset(S.arena, 0, prog.arenaBytes), "cudaMemset", startup);
  // Time the convolutions' algorithms on this device within their planned workspaces (as
  // PyTorch's cudnn.benchmark does), unless only deterministic algorithms are wanted: the
  // timed choice can differ between runs, the heuristic's cannot. GRAPHC_CUDA_FIND=0 keeps the
  // heuristic's choice.
  const char *findEnv = std::getenv("GRAPHC_CUDA_FIND");
  if (!S.deterministic && !(findEnv && std::strcmp(findEnv, "0") == 0)) {
    // Convolutions of the same direction and shape (a ResNet's repeated blocks) are timed
    // once, within the largest of their workspaces: at ResNet-50's largest batches each timing
    // takes seconds.
    auto sameProblem = [](const ConvSpec &a, const ConvSpec &b) {
      return a.direction == b.direction && a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w &&
             a.k == b.k && a.r == b.r && a.s == b.s && a.oh == b.oh && a.ow == b.ow &&
             a.strideH == b.strideH && a.strideW == b.strideW && a.padH == b.padH &&
             a.padW == b.padW && a.dilationH == b.dilationH && a.dilationW == b.dilationW &&
             a.groups == b.groups && a.dataType == b.dataType;
    };
    // A convolution split over its batch (chooseConv) keeps the heuristic's algorithm: its
    // descriptors describe one chunk, and its workspace was already too small to choose.
    std::vector<bool> timed(static_cast<size_t>(gen.numConvs), false);
    for (int32_t i = 0; i < gen.numConvs; ++i)
      timed[size_t(i)] = S.convs[size_t(i)].chunks > 1;
    for (int32_t i = 0; i < gen.numConvs; ++i) {
      if (timed[size_t(i)])
        continue;
      std::vector<int32_t> same;
      uint64_t limit = 0;
      for (int32_t j = i; j < gen.numConvs; ++j)
        if (!timed[size_t(j)] && sameProblem(gen.convs[i], gen.convs[j])) {
          same.push_back(j);
          limit = std::max(limit, gen.convs[j].workspaceLimit);
        }
      std::vector<TimedAlgorithm> algorithms =
          findConv(S.cudnn, gen.convs[i], S.convs[size_t(i)], limit, S.arena, prog.arenaBytes);
      for (int32_t j : same) {
        timed[size_t(j)] = true;
        takeFastest(gen.convs[j], S.convs[size_t(j)], algorithms);
      }
    }
    GRAPHC_CUDA(cudaMemset(S.arena, 0, prog.arenaBytes), "cudaMemset", startup);
  }

  // The per-step traffic: inputs in, loss and prediction out, through one pinned buffer.
  uint64_t outputBytes = 0;
  S.inputs.clear();
  S.outputs.clear();
  S.persistent.clear();
  for (int32_t i = 0; i < prog.numTensors; ++i) {
    const TensorInfo &t = prog.tensors[i];
    if (t.role == TensorRole::Data || t.role == TensorRole::Labels ||
        t.role == TensorRole::SampleWeights || t.role == TensorRole::Step) {
      S.inputs.push_back({t.offset, t.bytes});
      S.inputBytes += t.bytes;
    } else if (t.role == TensorRole::Loss || t.role == TensorRole::Prediction) {
      S.outputs.push_back({t.offset, t.bytes});
      outputBytes += t.bytes;
    } else if ((t.role == TensorRole::Parameter || t.role == TensorRole::State) &&
               t.offset < prog.arenaBytes) {
      // (State in the host arena stays where it is: the update kernels reach it mapped.)
      S.persistent.push_back({t.offset, t.bytes});
    }
  }
  GRAPHC_CUDA(cudaHostAlloc(reinterpret_cast<void **>(&S.pinned),
                            std::max<uint64_t>(S.inputBytes + outputBytes, 1), cudaHostAllocDefault),
              "cudaHostAlloc (pinned staging buffer)", startup);
  if (S.stageNext)
    GRAPHC_CUDA(cudaHostAlloc(reinterpret_cast<void **>(&S.pinnedNext),
                              stagingBytes(S.staging.dataBytes, S.staging.labelsBytes),
                              cudaHostAllocDefault),
                "cudaHostAlloc (pinned buffer of the next batch)", startup);

  size_t freeNow = 0;
  GRAPHC_CUDA(cudaMemGetInfo(&freeNow, &total), "cudaMemGetInfo", startup);
  std::fprintf(stderr,
               "cuda: %s (sm_%d%d), arena %s (%" PRIu64 " bytes, one cudaMalloc), %s free of %s\n"
               "runtime reserve: %s (%zu bytes) outside the arena for the cuBLAS and cuDNN handles, "
               "streams and descriptors (cudaMemGetInfo before and after creating them); the CUDA "
               "context and other processes held %s before that\n",
               props.name, props.major, props.minor, formatBytes(prog.arenaBytes).c_str(),
               prog.arenaBytes, formatBytes(freeNow).c_str(), formatBytes(total).c_str(),
               formatBytes(S.handleReserve).c_str(), size_t(S.handleReserve),
               formatBytes(total - freeAfterContext).c_str());
  if (S.stageNext)
    std::fprintf(stderr,
                 "cuda: each next batch is uploaded while the step before runs, into "
                 "the planned next_batch_staging buffer (%s at offset %" PRIu64 ")\n",
                 formatBytes(stagingBytes(S.staging.dataBytes, S.staging.labelsBytes)).c_str(),
                 S.staging.offset);
  if (collectiveDeviceReserve) {
    // Measured by the NCCL backend around its communicator (peers connected at start-up, see
    // comm_nccl.cpp), so it is part of what "held before" above counts too.
    const uint64_t nccl = collectiveDeviceReserve();
    std::fprintf(stderr, "runtime reserve: %s (%" PRIu64 " bytes) of that for the NCCL "
                 "communicator, its stream and events (cudaMemGetInfo before and after creating "
                 "them)\n", formatBytes(nccl).c_str(), nccl);
  }
  return 0;
}

void copyPersistent(const unsigned char *host, unsigned char *hostOut, bool toDevice) {
  State &S = state();
  for (const Range &r : S.persistent) {
    if (toDevice)
      GRAPHC_CUDA(cudaMemcpyAsync(S.arena + r.offset, host + r.offset, r.bytes,
                                  cudaMemcpyHostToDevice, S.compute),
                  "cudaMemcpyAsync (parameters to the device)", "between steps");
    else
      GRAPHC_CUDA(cudaMemcpyAsync(hostOut + r.offset, S.arena + r.offset, r.bytes,
                                  cudaMemcpyDeviceToHost, S.compute),
                  "cudaMemcpyAsync (parameters to the host)", "between steps");
  }
  GRAPHC_CUDA(cudaStreamSynchronize(S.compute), "cudaStreamSynchronize", "between steps");
}

void pushPersistent(const Program &prog, const unsigned char *hostArena) {
  State &S = state();
  if (prog.hostArenaBytes && !S.hostArenaMapped) {
    // Optimizer state kept in host memory (graphc --offload): the host image's tail is the
    // state itself, pinned and mapped into the device's address space once, so the update
    // kernels read and write it over the host link and nothing copies it between steps.
    unsigned char *tail = const_cast<unsigned char *>(hostArena) + prog.arenaBytes;
    const char *op = "mapping the host arena (offloaded optimizer state)";
    GRAPHC_CUDA(cudaHostRegister(tail, prog.hostArenaBytes, cudaHostRegisterMapped),
                "cudaHostRegister", op);
    void *devicePointer = nullptr;
    GRAPHC_CUDA(cudaHostGetDevicePointer(&devicePointer, tail, 0), "cudaHostGetDevicePointer", op);
    if (!graphc_generated.setHostArena) {
      std::fprintf(stderr, "error: the program has a host arena but its step cannot reach it\n");
      std::exit(kExitDevice);
    }
    graphc_generated.setHostArena(static_cast<unsigned char *>(devicePointer));
    S.hostArenaMapped = true;
    std::fprintf(stderr, "cuda: host arena %s (%" PRIu64 " bytes of optimizer state) pinned and "
                 "mapped; the update kernels reach it over the host link\n",
                 formatBytes(prog.hostArenaBytes).c_str(), prog.hostArenaBytes);
  }
  copyPersistent(hostArena, nullptr, true);
}
void pullPersistent(const Program &, unsigned char *hostArena) {
  copyPersistent(nullptr, hostArena, false);
}

void captureGraph() {
  State &S = state();
  const char *op = "CUDA graph capture";
  cudaGraph_t graph = nullptr;
  GRAPHC_CUDA(cudaStreamBeginCapture(S.compute, cudaStreamCaptureModeThreadLocal),
              "cudaStreamBeginCapture", op);
  graphc_generated.step(S.arena, &S.ctx);
  GRAPHC_CUDA(cudaStreamEndCapture(S.compute, &graph), "cudaStreamEndCapture", op);
  GRAPHC_CUDA(cudaGraphInstantiate(&S.graph, graph, 0), "cudaGraphInstantiate", op);
  size_t nodes = 0;
  GRAPHC_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes), "cudaGraphGetNodes", op);
  GRAPHC_CUDA(cudaGraphDestroy(graph), "cudaGraphDestroy", op);
  size_t freeBytes = 0, total = 0;
  GRAPHC_CUDA(cudaMemGetInfo(&freeBytes, &total), "cudaMemGetInfo", op);
  // Since the handles were measured: the arena plus whatever the graph and the libraries'
  // first calls took.
  const uint64_t used = S.freeAfterHandles > freeBytes ? S.freeAfterHandles - freeBytes : 0;
  const uint64_t arena = state().decoded.program.arenaBytes;
  const uint64_t reserve = S.handleReserve + (used > arena ? used - arena : 0);
  std::fprintf(stderr, "cuda: the step is captured as a CUDA graph of %zu nodes and replayed; "
               "runtime reserve now %s (%" PRIu64 " bytes) outside the arena\n", nodes,
               formatBytes(reserve).c_str(), reserve);
}

void setNextBatchSource(NextBatchSource source, void *context) {
  state().nextSource = source;
  state().nextContext = context;
}

/// Uploads the next step's batch into the staging region on the copy stream, once the compute
/// stream has copied the region out for this step (stagingRead). The host copies into pinned
/// memory while the device computes.
void stageNextBatch() {
  State &S = state();
  NextBatch next;
  if (!S.stageNext || !S.nextSource || !S.nextSource(S.nextContext, next))
    return;
  const char *op = "staging the next batch";
  const StagingLayout &l = S.staging;
  // The previous upload from pinnedNext finished before this step started (the step waited for
  // it); this returns at once, and guards the buffer if that ever changes.
  GRAPHC_CUDA(cudaEventSynchronize(S.stagedCopied), "cudaEventSynchronize", op);
  std::memcpy(S.pinnedNext, next.data, l.dataBytes);
  std::memcpy(S.pinnedNext + stagedLabelsOffset(l.dataBytes), next.labels, l.labelsBytes);
  GRAPHC_CUDA(cudaStreamWaitEvent(S.copy, S.stagingRead, 0), "cudaStreamWaitEvent", op);
  GRAPHC_CUDA(cudaMemcpyAsync(S.arena + l.offset, S.pinnedNext,
                              stagingBytes(l.dataBytes, l.labelsBytes), cudaMemcpyHostToDevice,
                              S.copy),
              "cudaMemcpyAsync", op);
  GRAPHC_CUDA(cudaEventRecord(S.stagedCopied, S.copy), "cudaEventRecord", op);
  S.staged = true;
}

void cudaTrainStep(unsigned char *hostArena) {
  State &S = state();
  const char *op = "the step's inputs";
  const StagingLayout &l = S.staging;
  const bool staged = S.staged; // this step's data and labels are in the staging region
  S.staged = false;
  uint64_t pos = 0;
  for (const Range &r : S.inputs) {
    if (staged && (l.stagesData(r.offset) || r.offset == l.labelsOffset))
      continue;
    std::memcpy(S.pinned + pos, hostArena + r.offset, r.bytes);
    GRAPHC_CUDA(cudaMemcpyAsync(S.arena + r.offset, S.pinned + pos, r.bytes,
                                cudaMemcpyHostToDevice, S.copy),
                "cudaMemcpyAsync", op);
    pos += r.bytes;
  }
  GRAPHC_CUDA(cudaEventRecord(S.inputsCopied, S.copy), "cudaEventRecord", op);
  GRAPHC_CUDA(cudaStreamWaitEvent(S.compute, S.inputsCopied, 0), "cudaStreamWaitEvent", op);
  if (staged)
    GRAPHC_CUDA(cudaStreamWaitEvent(S.compute, S.stagedCopied, 0), "cudaStreamWaitEvent", op);
  for (const auto &[begin, end] : S.poison) // (not timed; outside the captured graph)
    GRAPHC_CUDA(cudaMemsetAsync(S.arena + begin, 0xFF, end - begin, S.compute),
                "cudaMemsetAsync (GRAPHC_POISON_ARENA)", op);
  if (S.timing) // the device-to-device copy of a staged batch is part of the step's time
    GRAPHC_CUDA(cudaEventRecord(S.stepBegin, S.compute), "cudaEventRecord", "the step");
  if (staged) {
    for (const StagingLayout::Data &d : l.data)
      GRAPHC_CUDA(cudaMemcpyAsync(S.arena + d.arenaOffset, S.arena + l.offset + d.stagedOffset,
                                  d.bytes, cudaMemcpyDeviceToDevice, S.compute),
                  "cudaMemcpyAsync (the staged data)", op);
    GRAPHC_CUDA(cudaMemcpyAsync(S.arena + l.labelsOffset,
                                S.arena + l.offset + stagedLabelsOffset(l.dataBytes), l.labelsBytes,
                                cudaMemcpyDeviceToDevice, S.compute),
                "cudaMemcpyAsync (the staged labels)", op);
  }
  if (S.stageNext)
    GRAPHC_CUDA(cudaEventRecord(S.stagingRead, S.compute), "cudaEventRecord", op);
  if (!S.useGraph || S.stepsRun < 1) {
    graphc_generated.step(S.arena, &S.ctx); // warm-up: library initialisation happens here
  } else {
    if (!S.graph)
      captureGraph();
    GRAPHC_CUDA(cudaGraphLaunch(S.graph, S.compute), "cudaGraphLaunch", "the step");
  }
  if (S.timing)
    GRAPHC_CUDA(cudaEventRecord(S.stepEnd, S.compute), "cudaEventRecord", "the step");
  op = "the step's outputs";
  pos = S.inputBytes;
  for (const Range &r : S.outputs) {
    GRAPHC_CUDA(cudaMemcpyAsync(S.pinned + pos, S.arena + r.offset, r.bytes,
                                cudaMemcpyDeviceToHost, S.compute),
                "cudaMemcpyAsync", op);
    pos += r.bytes;
  }
  stageNextBatch(); // the host's copy and the upload overlap the step just launched
  // Errors of asynchronous kernels surface here. A data-parallel step's collectives are joined
  // into the compute stream; waiting for them is bounded by the collective timeout.
  if (synchronizeStep)
    synchronizeStep(S.compute);
  else
    GRAPHC_CUDA(cudaStreamSynchronize(S.compute), "cudaStreamSynchronize", "the step");
  pos = S.inputBytes;
  for (const Range &r : S.outputs) {
    std::memcpy(hostArena + r.offset, S.pinned + pos, r.bytes);
    pos += r.bytes;
  }
  if (S.timing) {
    float ms = 0.0f;
    GRAPHC_CUDA(cudaEventElapsedTime(&ms, S.stepBegin, S.stepEnd), "cudaEventElapsedTime",
                "the step");
    std::fprintf(stderr, "cuda: step %" PRId64 " device time %.4f ms%s\n", S.stepsRun + 1,
                 double(ms), S.useGraph && S.stepsRun >= 1 ? " (graph replay)" : " (eager)");
  }
  ++S.stepsRun;
}

Program loadProgram() {
  State &S = state();
  std::string error;
  if (!decodeProgramDescriptor(graphc_generated.descriptor, graphc_generated.descriptorBytes,
                               graphc_generated.initBlob, graphc_generated.initBlobBytes,
                               S.decoded, error)) {
    std::fprintf(stderr, "error: the program descriptor embedded in this binary is invalid: %s\n",
                 error.c_str());
    exitDevice();
  }
  S.decoded.program.trainStep = cudaTrainStep;
  S.decoded.program.setNextBatchSource = setNextBatchSource;
  return S.decoded.program;
}

} // namespace

// Both in this one object file, so that linking the archive for graphc_program also brings the
// (weakly referenced) device runtime.
extern "C" const graphc::rt::Program graphc_program = loadProgram();
extern "C" const graphc::rt::DeviceRuntime graphc_device_runtime = {"CUDA", startDevice,
                                                                   pushPersistent, pullPersistent};
