// Liveness of a scheduled training step: which bytes each step needs.
//
// The schedule is the op order of the function body (the terminator is not a step). A
// "buffer" is a set of values that share storage: a reshape result is a view of its operand,
// and an optimizer update writes its parameter and state in place. Each buffer is live from
// the step that defines its first value to the last step that uses any of its values;
// parameters and optimizer state persist across training steps and so are live throughout,
// and the returned values live to the end. Kernels that need scratch space add a workspace
// buffer live at their step only. O(ops + uses).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace graphc {

struct LiveBuffer {
  std::string name;
  std::string kind;     // parameter|gradient|optimizer_state|activation|temporary|workspace|input
  std::string op;       // mnemonic of the defining op ("arg" for function arguments)
  uint64_t bytes = 0;
  int64_t first = 0;
  int64_t last = 0;
  llvm::SmallVector<mlir::Value, 2> values; // empty for workspaces
  mlir::Operation *workspaceOf = nullptr;   // the op whose scratch this is
  bool host = false; // an argument with graph.memory_space = "host": outside the device arena
  bool staging = false; // the next-batch staging region (kStageNextBatchAttr)
};

struct StepLiveness {
  llvm::SmallVector<mlir::Operation *> steps;
  std::vector<LiveBuffer> buffers;
  /// Values that sit at a byte offset inside their buffer (kBucketViewAttr); absent: 0.
  llvm::DenseMap<mlir::Value, uint64_t> byteOffsetOf;
  llvm::DenseMap<mlir::Operation *, unsigned> workspaceBufferOf;
  std::optional<unsigned> stagingBuffer; // index of the next-batch staging region, if any

  /// The index of the buffer that holds `value` (an argument of the step or a result of one
  /// of its steps); nullopt for any other value.
  std::optional<unsigned> bufferOf(mlir::Value value) const;

  // Values are numbered rather than hashed (the fit pass computes liveness thousands of
  // times): argument i is value i, result r of step s is value resultBase[s] + r.
  mlir::Block *body = nullptr;
  llvm::DenseMap<mlir::Operation *, unsigned> stepOf;
  std::vector<unsigned> resultBase;
  std::vector<unsigned> bufferOfValue; // by value number
  /// The number of `value`, or nullopt when it is neither an argument nor a step's result.
  std::optional<unsigned> valueNumber(mlir::Value value) const;
};

/// Unit attribute on a training step whose target uploads the next batch while the step runs
/// (--target=cuda, graphc-plan-memory's staging): the plan then holds one more buffer,
/// "next_batch_staging" of kind "input_staging", live for the whole step, with room for one
/// batch of data and labels (graphc/runtime/staging.h), and graphc-plan-memory records its
/// offset in kStagingOffsetAttr.
constexpr llvm::StringLiteral kStageNextBatchAttr = "graph.stage_next_batch";
constexpr llvm::StringLiteral kStagingOffsetAttr = "graph.staging_offset";

/// Unit attribute on a gradient bucket's graph.concat (rank 1) and on the graph.slice ops that
/// read the averaged bucket back (graphc-all-reduce-gradients with gradient-as-bucket-view):
/// when each gradient's storage dies at the concat and covers it whole, the gradients are
/// planned inside the bucket, at their offsets, so the concat moves nothing; a slice of a
/// rank-1 value is a view of it at its offset. As DDP's gradient_as_bucket_view: the gradient
/// is computed straight into the bucket and the optimizer reads it there, with no copy in or
/// out. Where the conditions fail, the concat and slices copy as usual.
constexpr llvm::StringLiteral kBucketViewAttr = "graph.bucket_view";

/// Bytes of the next-batch staging region of `func`: 0 without kStageNextBatchAttr, else one
/// batch of its data and labels arguments in the runtime's layout.
uint64_t nextBatchStagingBytes(mlir::func::FuncOp func);

/// The buffers of a step's arguments without names, kept between calls of computeStepLiveness
/// on one function: reading them from the argument attributes costs a cache miss or two per
/// argument, and the fit pass computes liveness thousands of times on a step of thousands of
/// arguments. Valid while the function's body, type and argument attributes (uniqued, so
/// compared by pointer) stay the same.
struct ArgumentBuffers {
  mlir::Block *body = nullptr;
  mlir::Type functionType;
  mlir::ArrayAttr argAttrs;
  std::vector<LiveBuffer> buffers; // argument i's is buffers[i]
  std::vector<bool> pinned;        // no result takes the buffer over (reuseDyingOperands)
  std::vector<bool> persistent;    // live to the last step, whatever the number of steps
  size_t stepsHint = 0;            // the number of steps at the last call (to reserve for)
};

/// Computes the buffers of a single-block function. Fails (with a diagnostic) on IR it cannot
/// plan: dynamic shapes, or an in-place update whose operand is still used after it.
/// With `reuseDyingOperands`, an elementwise op whose operand dies at that op writes its result
/// into the operand's buffer (see reusableOperandsOf).
/// Without `withNames` the buffers' name and op strings, and the kinds of all but argument
/// buffers, stay empty (rematerialization measures thousands of variants and reads only sizes
/// and ranges); `arguments`, when given, then keeps the arguments' buffers between calls.
mlir::FailureOr<StepLiveness> computeStepLiveness(mlir::func::FuncOp func,
                                                  bool reuseDyingOperands = true,
                                                  bool withNames = true,
                                                  ArgumentBuffers *arguments = nullptr);

/// Operands whose buffer an elementwise op may overwrite with its result when they die at that
/// op: the kernels (add, activations, activation backwards) read and write element i together,
/// so output aliasing any input is safe. Same type as the result by construction.
llvm::SmallVector<unsigned, 2> reusableOperandsOf(mlir::Operation *op);

/// Bytes of a statically shaped tensor type.
uint64_t tensorBytes(mlir::Type type);

/// Scratch bytes the CPU and CUDA kernels of `op` need (0 for most ops), planned in the arena.
/// A convolution's is one im2col tile: all output rows, or kIm2colRowsAttr of them; none for a
/// pointwise one in a step with kDirectPointwiseConvsAttr.
uint64_t kernelWorkspaceBytes(mlir::Operation *op);

/// Unit attribute on a training step whose target runs 1x1 convolutions at stride 1 without
/// padding on the tensors themselves (the CPU target: each image is its own im2col matrix,
/// rt::conv2dIsPointwise), so that they need no workspace and none is planned. The CUDA
/// target leaves it off: its pointwise convolutions keep the workspace as cuDNN's limit.
constexpr llvm::StringLiteral kDirectPointwiseConvsAttr = "graph.direct_pointwise_convs";

/// Unit attribute on a training step whose convolutions run on cuDNN's legacy API (the CUDA
/// target). cuDNN 9 runs a 16-bit NCHW convolution on NHWC tensor-core kernels only, every
/// algorithm copying the image, the output side and the filter transposed, their channels
/// padded to a multiple of 8, into its workspace (measured on an H200 with cuDNN 9.19: ResNet-18's
/// first bf16 convolution at batch 64 asks exactly those 154190848 bytes, plus 16). Each 16-bit
/// convolution's workspace is at least that (cudnnHalfTransformBytes), so that the plan holds
/// what cuDNN will ask for.
constexpr llvm::StringLiteral kCudnnConvsAttr = "graph.cudnn_convs";

/// The workspace a 16-bit convolution of a kCudnnConvsAttr step needs for cuDNN's layout
/// transforms: the image side, output side and filter in 16 bits with their channels rounded
/// up to a multiple of 8, the filter once more in f32, and 1 MiB for cuDNN's own bookkeeping;
/// for a filter gradient also its split-K partial sums (64 f32 filters, capped at the larger of
/// 32 MiB and 8 filters; 3 to 61 partials, at most 16.8 MB, were measured on an H200). 0 for
/// an f32 convolution.
uint64_t cudnnHalfTransformBytes(const struct ConvTensors &conv, bool filterGradient);

/// The tensors of a convolution op, whichever way it runs: the image side (the forward input, or
/// the data gradient's result), the filter (or the filter gradient's result) and the output side
/// (the forward result, or the backward ops' incoming gradient), with its strides and padding.
struct ConvTensors {
  mlir::Value image, filter, output;
  llvm::ArrayRef<int64_t> strides, padding;
};
/// `op`'s ConvTensors when it is a conv2d or one of its backward ops, else nullopt.
std::optional<ConvTensors> convTensorsOf(mlir::Operation *op);

/// Whether `op` is a convolution (forward or backward) that reads its tensors directly, as
/// kDirectPointwiseConvsAttr says: it has no im2col matrix to tile and no workspace.
bool isDirectPointwiseConv(mlir::Operation *op);

/// On a convolution of a planned CUDA step: the bytes of its workspace when
/// graphc-grow-workspaces gave it more than the kernel needs (free arena bytes at its step,
/// where cuDNN may run a faster algorithm).
constexpr llvm::StringLiteral kWorkspaceBytesAttr = "graph.workspace_bytes";

/// On a batch norm or batch-norm backward for the CUDA target: its kernels sum each channel in
/// this many blocks (graphc-split-channel-reductions), whose partial sums, two doubles per
/// block, are the op's workspace.
constexpr llvm::StringLiteral kBlockSplitsAttr = "graph.block_splits";

/// The bytes planned for `op`'s workspace: kWorkspaceBytesAttr when set, else
/// kernelWorkspaceBytes.
uint64_t workspaceBytes(mlir::Operation *op);

/// Output rows per im2col tile of a convolution (conv2d and its two backward ops), set by
/// graphc-fit-budget when the whole-image workspace does not fit; absent: all rows.
constexpr llvm::StringLiteral kIm2colRowsAttr = "graph.im2col_rows";

/// The im2col tile rows of a convolution op: its kIm2colRowsAttr, or 0 (all rows).
int64_t im2colTileRows(mlir::Operation *op);

/// On each forward op of a micro-batched step (BuildTrainStep, micro-batches > 1): the op's
/// index in the forward function, the same on its copy in every micro-batch. graphc-fit-budget
/// recomputes the copies together, so that every micro-batch's peak drops at once.
constexpr llvm::StringLiteral kMicroBatchOpAttr = "graph.micro_batch_op";

/// Query rows per block of graph.attention and its backward op, when set (tests, tuning).
constexpr llvm::StringLiteral kQueryBlockAttr = "graph.query_block";

/// The query rows per block of an attention op (forward or backward): its kQueryBlockAttr, or
/// the most rows whose [batch, rows, keys] scores are no larger than the op's [batch, queries,
/// value width] output, so that the workspace stays within the activations' size (at least 1).
int64_t attentionQueryBlock(mlir::Operation *op);
/// The argmax workspace of a max-pool backward on the CUDA target (kernelWorkspaceBytes): one
/// byte per output window (4 when a window holds 255 elements or more), or 0 when the windows
/// do not overlap.
uint64_t maxPoolArgmaxBytes(llvm::ArrayRef<int64_t> kernel, llvm::ArrayRef<int64_t> strides,
                            uint64_t outputs);

/// How the CPU target emulates 16-bit storage (bf16, f16) for an op that computes on such
/// tensors: each distinct 16-bit operand is widened into an f32 copy, the op's f32 kernel
/// runs on the copies, and each 16-bit result is narrowed from its f32 copy. The copies live
/// in a host-only scratch buffer outside the arena (a GPU reads 16-bit tensors directly, so
/// the arena stays the device's plan); the fit report states its size.
struct HalfEmulation {
  llvm::SmallVector<std::pair<mlir::Value, uint64_t>, 4> copies; // value -> offset of its f32 copy
  uint64_t scratchBytes = 0;
};
/// The emulation of `op`, or nullopt when it touches no 16-bit tensor, or needs no f32 copy
/// (casts, reshape views and batch slices move bits, whatever the type).
std::optional<HalfEmulation> halfEmulationOf(mlir::Operation *op);

/// The host scratch the CPU target needs for 16-bit emulation: the largest op's.
uint64_t halfEmulationScratchBytes(mlir::func::FuncOp func);

/// For an op that writes some results in place: the operand index that result `i` reuses,
/// or -1. Reshape is a view; optimizer updates overwrite their parameter and state.
int64_t inPlaceOperandOf(mlir::Operation *op, unsigned resultIndex);

/// The value the runtime reads back after the step to report accuracy: the prediction of the
/// step's only loss op, when its argmax (or sign, for binary logits) is meaningful; null with
/// micro-batching or MSE. It stays live to the end of the step.
mlir::Value reportedPrediction(mlir::func::FuncOp func);

/// A readable name for a value: the function argument's graph.name, or the defining op's
/// location name (with #i for the i-th of several results), or mnemonic_step.
std::string valueName(mlir::Value value, int64_t step);

} // namespace graphc
