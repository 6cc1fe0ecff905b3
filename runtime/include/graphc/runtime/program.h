// The contract between a compiled training step and the runtime that drives it.
//
// graphc emits one C++ (or CUDA) source file per model. That file defines `graphc_program`, a
// constant `Program` describing the arena, the tensors the runtime must touch (parameters,
// optimizer state, the data and label inputs, the step counter, the loss) and a function that
// runs one training step on the arena. The runtime (train_main.cpp) owns everything else: the
// command line, the one arena allocation, data loading, the loop, and saving weights.
#pragma once

#include <cstdint>

namespace graphc::rt {

/// What a tensor is for; mirrors the "kind" field of the plan JSON.
enum class TensorKind : uint8_t {
  Parameter = 0,
  Gradient = 1,
  OptimizerState = 2,
  Activation = 3,
  Temporary = 4,
  Workspace = 5,
  Input = 6,
};

enum class DType : uint8_t { F32 = 0, I64 = 1 };

/// What the runtime does with a tensor before and after each step.
enum class TensorRole : uint8_t {
  None = 0,      // internal: listed for --describe only
  Parameter = 1, // initialised from the init blob (or --init-weights), saved by --save-weights
  State = 2,     // optimizer state: zero at start, persists across steps
  // The runtime copies the batch of --data here before each step: a model with several data
  // inputs has one Data tensor per input, fed by one --data each in the order they are listed.
  Data = 3,
  Labels = 4, // the runtime copies the batch of --labels here before each step
  Step = 5,   // f32 scalar: the 1-based step number (Adam's bias correction)
  Loss = 6,   // f32 scalar: the mean loss of the step, read after it
  // f32 [batch, ...]: what the loss compared with the labels (the logits, before the folded
  // Softmax/Sigmoid), still valid when the step returns. Optional; with it the runtime reports
  // accuracy and checks class indices against the number of classes (product of dims[1:]).
  Prediction = 7,
  // --target=cuda: room in the device arena for the next batch's data and labels, uploaded
  // while the step before runs (graphc/runtime/staging.h). The CPU main ignores it.
  Staging = 8,
  // f32 [batch]: one weight per sample (graphc --sample-weights), the batch of the binary's
  // --sample-weights (1 for every sample without it) copied here before each step, gathered
  // from the same rows as the data and labels. In the staging region it follows the data
  // inputs as one more of them (staging.h).
  SampleWeights = 9,
};

constexpr int kMaxRank = 8;

struct TensorInfo {
  const char *name;       // ONNX initializer / input name for parameters and inputs
  TensorKind kind;
  TensorRole role;
  DType dtype;
  int32_t rank;
  int64_t dims[kMaxRank];
  uint64_t offset;        // byte offset in the arena
  uint64_t bytes;         // exact byte size (product of dims * element size)
  int64_t initOffset;     // byte offset of the initial value in the init blob, or -1
  // Data inputs that an embedding reads (token ids): when > 0 the runtime refuses data holding
  // anything but whole numbers in [0, indexLimit) before step 1 (the smallest vocabulary of the
  // embeddings reading it). 0 for every other tensor.
  int64_t indexLimit = 0;
};

enum class LossKind : uint8_t {
  SparseCategoricalCrossentropy = 0,
  CategoricalCrossentropy = 1,
  BinaryCrossentropy = 2,
  MeanSquaredError = 3,
};

/// The batch that the next call of Program::trainStep will receive in its arena image: the
/// data and labels in the tensors' layout (the bytes of the Data and Labels tensors).
struct NextBatch {
  const unsigned char *data = nullptr, *labels = nullptr;
};
/// Called by a step while it runs: blocks until the main's prefetch thread has the next step's
/// batch, fills `batch` and returns true; returns false when no step follows (or its batch could
/// not be read: the main reports that itself). The pointers stay valid until the calling step
/// returns.
using NextBatchSource = bool (*)(void *context, NextBatch &batch);

struct Program {
  const char *modelName;
  uint64_t arenaBytes;        // the single allocation, exactly the planned size
  uint64_t alignment;         // every offset is a multiple of this
  int64_t batch;
  LossKind loss;
  const TensorInfo *tensors;
  int32_t numTensors;
  const unsigned char *initBlob; // concatenated initial parameter values (little endian)
  uint64_t initBlobBytes;
  void (*trainStep)(unsigned char *arena); // runs one step; never allocates
  // Seed of the counter-based dropout masks (kernels.h: dropoutKeep), which the generated
  // step passes to its dropout kernels: graphc's --seed, fixed at compile time.
  uint64_t seed;
  // Data parallelism (graphc --data-parallel --world-size=N): the number of ranks the step was
  // compiled for; each runs it on `batch` rows of a global batch of batch * worldSize and the step
  // averages the gradients over them (comm.h). 0 or 1: a single-process binary.
  int32_t worldSize;
  // Optimizer-state sharding (ZeRO): each rank holds its own shard of the optimizer state, so
  // every rank checkpoints its own (DIR/rank-R-of-N/) and rank 0 writes DIR/manifest.json.
  bool shardedOptimizerState;
  // The gradient buckets the step all-reduces (graph.all_reduce bucket ids 0..n-1), so that a
  // backend can prepare one in-flight slot per bucket before step 1 (the CUDA target's NCCL
  // events). 0 where unknown (the CPU target's backend sizes its requests as buckets start).
  int32_t allReduceBuckets;
  // Optimizer state kept in host memory (graphc --offload): a second region of this many bytes
  // right after the arena's `arenaBytes`; tensor offsets in [arenaBytes, arenaBytes +
  // hostArenaBytes) lie in it. The CPU target allocates both together; --budget counts only the
  // arena. 0: everything is in the arena.
  uint64_t hostArenaBytes;
  // Targets whose step can take the next batch ahead of time (--target=cuda uploads it into
  // the planned "next_batch_staging" buffer while the step before runs): the main hands over a
  // source of upcoming batches once, before step 1. Null where the step needs none.
  void (*setNextBatchSource)(NextBatchSource source, void *context);
  // The loss's ignored label (graphc --ignore-index; SparseCategoricalCrossentropy): labels
  // equal to it are allowed outside [0, classes), add nothing to the loss and are not counted
  // in the accuracy.
  bool hasIgnoreIndex;
  int64_t ignoreIndex;
  // The loss weighs its rows by a mask the step computes (a Keras output's mask_zero or
  // Masking mask): the runtime cannot tell which positions count, so it reports no accuracy.
  bool maskedLoss;
};

} // namespace graphc::rt

/// Defined by the generated source of each model.
extern "C" const graphc::rt::Program graphc_program;
