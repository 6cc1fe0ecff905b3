// The graphc driver. Phases, each a stopping point for --compile-to:
//   import   model file -> graph dialect forward function
//   training + autodiff, loss and optimizer -> @train_step
//   planned  + liveness, offsets in one arena, independent plan verification
//   source   + C++ for the CPU runtime
//   binary   + the system C++ compiler links it with runtime/ into a training binary
// Every compile prints a fit report (arena, lower bound, budget, bytes by kind). Errors are one
// line naming the file and what to do, with a non-zero exit, and leave no output behind:
// outputs are written to temporary files and renamed into place only when all succeeded.
#include "tools/graphc/Driver.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "dialects/graph/GraphOps.h"
#include "fit/BatchSearch.h"
#include "fit/BinaryProgram.h"
#include "importers/common/InitialValueCache.h"
#include "importers/keras/KerasImporter.h"
#include "importers/onnx/OnnxImporter.h"
#include "passes/CostModel.h"
#include "passes/Liveness.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "planner/PlanHtml.h"
#include "planner/PlanIO.h"
#include "targets/cpu/EmitCpp.h"
#include "targets/cuda/EmitCuda.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace graphc {
namespace {

enum class Phase { Import, Training, Planned, Source, Binary };
enum ExitCode { kOk = 0, kBadInput = 1, kOverBudget = 3, kToolchain = 4 };

/// Micro-batches are unrolled into the step, so the automatic searches stop at this many.
constexpr int64_t kMaxMicroBatches = 16;

/// How many times a batch search's trial compile that misses the budget costs one that fits,
/// with recomputation: on ResNet-50 at 80 GB (bf16), 14x on the rematerialization row (7.7 s
/// against 0.55 s) and 5x on the micro-batching row (10.7 s against 2.1 s); 8 is about their
/// geometric mean, and makes the bisection probe at 0.19 of its range.
constexpr double kMissesCostFits = 8;

struct Options {
  std::string model, output, loss, optimizer, target, budget, compileTo, cudaArch;
  // --target=cuda: the most bytes one convolution's cuDNN workspace grows to, in arena bytes
  // free at its step (graphc-grow-workspaces); "0": one im2col tile, what graphc's kernels need.
  std::string cudnnWorkspaceLimit = "1GiB";
  // --target=cuda: the blocks a batch norm's or bias gradient's kernels aim for, channels times
  // blocks per channel (graphc-split-channel-reductions); 0: one block per channel.
  int64_t cudaReductionBlocks = 528;
  // --target=cuda: "warp" (a warp per attention or layer-norm row) or "thread" (a thread each).
  std::string cudaRowKernels = "warp";
  double lr = 0.01, momentum = 0.9;
  int64_t batch = 0;
  bool batchSet = false;  // --batch was given (0 and negative values are refused)
  bool budgetSet = false; // --budget was given (an empty one is refused)
  std::vector<std::string> planOut;
  bool noReuse = false, quiet = false, printPlan = false, noSchedule = false, noRemat = false,
       noFuseAttention = false, noSplitDataGradients = false, noSplitFilterGradients = false,
       maxBatch = false, noMicroBatching = false, noStageNextBatch = false;
  int64_t microBatches = 1;
  int64_t attentionQueryBlock = 0; // 0: graphc-fuse-attention's default
  // --data-parallel --world-size=N: --batch is the global batch, N ranks share it equally and
  // --budget is what each rank's device may use.
  bool dataParallel = false;
  int64_t worldSize = 0; // 0 unless --data-parallel
  std::string bucketSize = "25MiB";
  bool bucketSizeGiven = false; // --bucket-size was on the command line (no bucket cure then)
  // --gradient-as-bucket-view: auto (when --budget needs it) | on | off.
  std::string bucketView = "auto";
  std::string zero = "auto"; // --zero: 0 | 1 | auto (shard the optimizer state when --budget needs it)
  // --offload: none | optimizer (keep momentum/Adam state in host memory) | auto (only when
  // nothing else fits --budget)
  std::string offload = "none";
  std::string device;
  std::string precision = "fp32"; // fp32 | bf16 | fp16 | auto
  int64_t lossScaleGrowthInterval = 2000; // fp16: clean steps before the loss scale doubles
  std::string remat = "heuristic"; // --remat: graphc-fit-budget's solver
  double rematTimeLimit = 60;
  bool rematSegments = true; // segment recomputation (--no-remat-segments turns it off)
  bool rematSplit = true;    // split recomputations (--no-remat-split turns them off)
  bool rematCheapLate = true;   // cheap late recomputations (--no-remat-cheap-late turns them off)
  bool rematLocalSearch = true; // the local search after it (--no-remat-local-search)
  bool rematSeeds = true;       // exact seeds for the heuristic (--no-remat-seeds)
  // Keras (.json): --weights, --input-shape, --seed, --verbose; which training flags were given
  // (compile_config supplies the others).
  std::string weights;
  std::vector<std::string> inputShapes; // --input-shape, once per Keras data input
  std::string dataInput;   // ONNX exported with export_params=False: the data inputs' names (a,b)
  std::string trainOutput; // ONNX with several outputs: the one to train (--train-output)
  std::string freeze;      // parameters whose names match this regex stay fixed (--freeze)
  bool fromLogits = false; // the model outputs logits: the crossentropy applies the softmax
  // Sparse crossentropy's ignored label (--ignore-index, or a Keras compile_config's
  // ignore_class): labels equal to it add nothing, and the mean is over the others.
  std::optional<int64_t> ignoreIndex;
  // The crossentropies' label smoothing (--label-smoothing, or a Keras compile_config's).
  std::optional<double> labelSmoothing;
  // Sparse crossentropy's per-class weights (--class-weights).
  std::vector<double> classWeights;
  // Binary crossentropy's positive weight(s) (--pos-weight).
  std::vector<double> posWeight;
  // The step takes one weight per sample (--sample-weights), fed by the binary's
  // --sample-weights.
  bool sampleWeights = false;
  // ... one per label row ([batch, positions...]) instead (--temporal-sample-weights).
  bool temporalSampleWeights = false;
  uint64_t seed = 0;
  bool verbose = false, lossSet = false, optimizerSet = false, lrSet = false, momentumSet = false;
};

/// The forward function's prediction type (its first result), or null.
static RankedTensorType forwardPrediction(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.getNumResults() < 1)
    return {};
  return dyn_cast<RankedTensorType>(forward.getResultTypes()[0]);
}

/// `value` as the user would write it (%g: 0.1, 1.5, 1e-05).
static std::string shortest(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

/// A failure already explained to the user in one line.
struct Failure {
  int code;
};

[[noreturn]] void fail(int code, const llvm::Twine &message) {
  llvm::errs() << "graphc: error: " << message << "\n";
  throw Failure{code};
}

/// "123", "64KiB", "1.5 GiB", "2GB", "1TiB": binary suffixes are powers of 1024, decimal ones of
/// 1000; none past 2^63 bytes.
std::optional<uint64_t> parseSize(llvm::StringRef text) {
  text = text.trim();
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  double value;
  if (digits == 0 || text.take_front(digits).getAsDouble(value))
    return std::nullopt;
  llvm::StringRef unit = text.drop_front(digits).trim().lower() == "" ? "" : text.drop_front(digits).trim();
  std::string u = unit.lower();
  double scale = 1;
  if (u == "" || u == "b")
    scale = 1;
  else if (u == "k" || u == "kib")
    scale = 1024.0;
  else if (u == "m" || u == "mib")
    scale = 1024.0 * 1024;
  else if (u == "g" || u == "gib")
    scale = 1024.0 * 1024 * 1024;
  else if (u == "kb")
    scale = 1e3;
  else if (u == "mb")
    scale = 1e6;
  else if (u == "gb")
    scale = 1e9;
  else if (u == "t" || u == "tib")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (u == "tb")
    scale = 1e12;
  else
    return std::nullopt;
  if (!(value * scale < 9.2e18)) // past 2^63 bytes: no device, and the cast would saturate
    return std::nullopt;
  return static_cast<uint64_t>(value * scale);
}

/// Writes what `write` prints to `path` through a temporary file in the same directory and a
/// rename, so that a failure never leaves a partial file behind. The text is streamed: an IR
/// dump holds every weight, in hex, and is not built in memory first. A path that exists and is
/// not a regular file (/dev/null, a pipe) is written in place: renaming over it would replace
/// the device or the pipe with a file.
void writeFileAtomically(llvm::StringRef path,
                         llvm::function_ref<void(llvm::raw_ostream &)> write) {
  llvm::sys::fs::file_status status;
  bool inPlace = !llvm::sys::fs::status(path, status) && llvm::sys::fs::exists(status) &&
                 !llvm::sys::fs::is_regular_file(status) && !llvm::sys::fs::is_directory(status);
  llvm::SmallString<256> temp;
  int fd;
  if (inPlace) {
    if (std::error_code ec = llvm::sys::fs::openFileForWrite(path, fd))
      fail(kBadInput, path + ": cannot open the output: " + ec.message());
  } else if (std::error_code ec = llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, temp)) {
    fail(kBadInput, path + ": cannot create the output file: " + ec.message());
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    write(os);
    os.close();
    if (os.has_error()) {
      os.clear_error();
      if (!inPlace)
        llvm::sys::fs::remove(temp);
      fail(kBadInput, path + ": cannot write the output file");
    }
  }
  if (inPlace)
    return;
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    fail(kBadInput, path + ": cannot write the output file: " + ec.message());
  }
}
void writeFileAtomically(llvm::StringRef path, llvm::StringRef contents) {
  writeFileAtomically(path, [&](llvm::raw_ostream &os) { os << contents; });
}

/// What a SIGINT, SIGTERM or SIGHUP (a kill, a timeout, a CI cancel) must undo while the binary
/// phase runs: the compiler child, which would go on writing, and the phase's temporary
/// directory (graphc's source, weights blob and compiler log, and the linked binary, which is
/// moved to -o only once complete), plus the copy next to -o while a binary crosses file
/// systems. LLVM's RemoveFileOnSignal removes single regular files and cannot stop a child, so
/// the phase installs interruptHandler. A signal handler reaches only globals: activeInterrupt
/// is the one, pointing at the running phase's record (null outside the phase).
struct InterruptCleanup {
  char dir[4096] = {};
  char copy[4096] = {};
  volatile sig_atomic_t child = 0;
};
InterruptCleanup *volatile activeInterrupt = nullptr;

/// Removes the files of a flat directory and the directory (only async-signal-safe calls, bar
/// readdir, which is safe here: nothing else reads this directory stream).
void removeFlatDirectory(const char *dir) {
  for (int attempt = 0; attempt < 2; ++attempt) { // a file the dying child created meanwhile
    if (DIR *d = ::opendir(dir)) {
      while (dirent *entry = ::readdir(d)) {
        if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0)
          continue;
        char path[8192];
        std::snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name);
        ::unlink(path);
      }
      ::closedir(d);
    }
    if (::rmdir(dir) == 0 || errno == ENOENT)
      return;
  }
}

extern "C" void interruptHandler(int signal) {
  if (InterruptCleanup *cleanup = activeInterrupt) {
    if (cleanup->child > 0) {
      ::kill(cleanup->child, SIGTERM); // the compiler drivers remove their own temporaries
      ::waitpid(cleanup->child, nullptr, 0);
    }
    if (cleanup->copy[0])
      ::unlink(cleanup->copy);
    if (cleanup->dir[0])
      removeFlatDirectory(cleanup->dir);
  }
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

/// The binary phase's temporary directory: removed when the phase ends, however it ends
/// (interruptHandler for the signals above, installed for the phase's lifetime).
struct TempFiles {
  std::vector<std::string> paths;
  InterruptCleanup cleanup;
  struct sigaction previous[3];
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  TempFiles() {
    activeInterrupt = &cleanup;
    struct sigaction action = {};
    action.sa_handler = interruptHandler;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < 3; ++i) {
      ::sigaction(kSignals[i], nullptr, &previous[i]);
      if (previous[i].sa_handler != SIG_IGN) // nohup, or a background job's SIGINT, stays ignored
        ::sigaction(kSignals[i], &action, nullptr);
    }
  }
  TempFiles(const TempFiles &) = delete;
  TempFiles &operator=(const TempFiles &) = delete;
  /// Takes `dir` (flat) as the phase's temporary directory.
  void adopt(const std::string &dir) {
    paths.push_back(dir);
    std::snprintf(cleanup.dir, sizeof(cleanup.dir), "%s", dir.c_str());
  }
  ~TempFiles() {
    for (int i = 0; i < 3; ++i)
      ::sigaction(kSignals[i], &previous[i], nullptr);
    activeInterrupt = nullptr;
    for (const std::string &p : paths)
      llvm::sys::fs::remove_directories(p, /*IgnoreErrors=*/true);
  }
};

class Driver {
public:
  explicit Driver(Options options) : opts(std::move(options)) {}

  int run() {
    Phase phase = parsePhase();
    if (llvm::any_of(opts.classWeights, [](double w) { return !(w >= 0.0) || std::isinf(w); }) ||
        (!opts.classWeights.empty() &&
         llvm::all_of(opts.classWeights, [](double w) { return w == 0.0; })))
      fail(kBadInput, "--class-weights must be finite, not negative, and not all 0");
    if (llvm::any_of(opts.posWeight, [](double w) { return !(w >= 0.0) || std::isinf(w); }))
      fail(kBadInput, "--pos-weight must be finite and not negative");
    if (opts.labelSmoothing && !(*opts.labelSmoothing >= 0.0 && *opts.labelSmoothing < 1.0))
      fail(kBadInput, "--label-smoothing=" + shortest(*opts.labelSmoothing) +
                          " must lie in [0, 1), e.g. --label-smoothing=0.1");
    std::optional<uint64_t> budget;
    if (!opts.budget.empty() || opts.budgetSet) {
      budget = parseSize(opts.budget);
      if (!budget)
        fail(kBadInput, "--budget=" + opts.budget +
                            " is not a size; use bytes or a KiB/MiB/GiB/TiB suffix, e.g. "
                            "--budget=8GiB");
      if (*budget == 0)
        fail(kBadInput, "--budget=" + opts.budget + " must be at least 1 byte");
    }
    if (opts.target != "cpu" && opts.target != "cuda")
      fail(kBadInput, "--target=" + opts.target + " is unknown; use cpu or cuda");
    if (opts.target == "cuda")
      cudaArchs = parseCudaArchs(opts.cudaArch);
    else if (!opts.cudaArch.empty())
      fail(kBadInput, "--cuda-arch=" + opts.cudaArch + " needs --target=cuda");
    if (opts.cudaReductionBlocks < 0)
      fail(kBadInput, "--cuda-reduction-blocks must be at least 0 (0: one block per channel)");
    if (opts.cudaRowKernels != "warp" && opts.cudaRowKernels != "thread")
      fail(kBadInput, "--cuda-row-kernels=" + opts.cudaRowKernels + ": expected warp or thread");
    if (auto limit = opts.cudnnWorkspaceLimit == "0" ? std::optional<uint64_t>(0)
                                                     : parseSize(opts.cudnnWorkspaceLimit))
      cudnnWorkspaceLimit = *limit;
    else
      fail(kBadInput, "--cudnn-workspace-limit=" + opts.cudnnWorkspaceLimit +
                          " is not a size; use bytes or a KiB/MiB/GiB suffix, e.g. 1GiB, or 0");
    if (phase == Phase::Binary && opts.output.empty() && !opts.maxBatch)
      fail(kBadInput, "a training binary needs an output path: pass -o OUT (or --compile-to=source)");
    if (opts.batchSet && opts.batch < 1)
      fail(kBadInput, "--batch=" + std::to_string(opts.batch) +
                          " must be at least 1 (leave it out for the model's own batch)");
    if (!opts.output.empty() && !opts.maxBatch)
      refuseClobberingOutput(opts.output, "-o", phase == Phase::Binary);
    for (const std::string &p : opts.planOut) {
      refuseClobberingOutput(p, "--plan-out", /*binary=*/false);
      llvm::StringRef ext = llvm::sys::path::extension(p);
      if (ext != ".txt" && ext != ".json" && ext != ".csv" && ext != ".html")
        fail(kBadInput, "--plan-out=" + p + ": unknown format; use .txt, .json, .csv or .html");
    }

    if (opts.microBatches < 1)
      fail(kBadInput, "--micro-batches must be at least 1");
    if (opts.attentionQueryBlock < 0)
      fail(kBadInput, "--attention-query-block must be at least 1 (or 0: the default)");
    if (std::string why; !opts.freeze.empty() && !llvm::Regex(opts.freeze).isValid(why))
      fail(kBadInput, "--freeze='" + opts.freeze + "' is not a valid regular expression: " + why);
    if (opts.dataParallel && opts.worldSize < 1)
      fail(kBadInput, "--data-parallel needs --world-size=N, N >= 1: the number of ranks the "
                      "binary will run as (mpirun -np N)");
    if (!opts.dataParallel && opts.zero != "auto")
      fail(kBadInput, "--zero=" + opts.zero + " needs --data-parallel");
    if (!opts.dataParallel && opts.worldSize != 0)
      fail(kBadInput, "--world-size=" + std::to_string(opts.worldSize) +
                          " needs --data-parallel");
    if (opts.dataParallel) {
      auto bytes = parseSize(opts.bucketSize);
      if (!bytes || *bytes < 4)
        fail(kBadInput, "--bucket-size=" + opts.bucketSize +
                            " is not a size; use bytes or a KiB/MiB suffix, e.g. 25MiB");
      bucketBytes = *bytes;
#ifndef GRAPHC_HAVE_NCCL
      // The .cu (NCCL calls included) can still be written; a binary needs the NCCL backend.
      if (opts.target == "cuda" && phase == Phase::Binary)
        fail(kToolchain, "--target=cuda --data-parallel: graphc was built without its NCCL "
                         "backend (it needs the CUDA toolkit with cuDNN and NCCL, and MPI: "
                         "libopenmpi-dev); rebuild graphc where they are installed, stop at "
                         "--compile-to=source, or use --target=cpu, which runs over MPI");
#endif
#ifndef GRAPHC_HAVE_MPI
      if (phase == Phase::Binary)
        fail(kToolchain, "--data-parallel: graphc was built without MPI; install libopenmpi-dev "
                         "(scripts/setup.sh) and rebuild, or stop at --compile-to=source");
#endif
      if (opts.zero != "0" && opts.zero != "1" && opts.zero != "auto")
        fail(kBadInput, "--zero=" + opts.zero + " is unknown; use 0, 1 or auto");
      shardState = opts.zero == "1";
      if (opts.bucketView != "auto" && opts.bucketView != "on" && opts.bucketView != "off")
        fail(kBadInput,
             "--gradient-as-bucket-view=" + opts.bucketView + " is unknown; use auto, on or off");
      bucketViews = opts.bucketView == "on";
    }
    if (!opts.dataParallel && opts.bucketView != "auto")
      fail(kBadInput, "--gradient-as-bucket-view=" + opts.bucketView + " needs --data-parallel");
    if (opts.precision == "f16")
      opts.precision = "fp16";
    if (opts.precision != "fp32" && opts.precision != "bf16" && opts.precision != "fp16" &&
        opts.precision != "auto")
      fail(kBadInput,
           "--precision=" + opts.precision + " is unknown; use fp32, bf16, fp16 or auto");
    if (opts.lossScaleGrowthInterval < 1)
      fail(kBadInput, "--loss-scale-growth-interval must be at least 1");
    if (opts.offload != "none" && opts.offload != "optimizer" && opts.offload != "auto")
      fail(kBadInput, "--offload=" + opts.offload + " is unknown; use none, optimizer or auto");
    offloadState = opts.offload == "optimizer";
    // auto starts in fp32 and moves to bf16 only when the budget needs it (run, below).
    precision = opts.precision == "auto" ? "fp32" : opts.precision;
    if (opts.remat != "heuristic" && opts.remat != "exact" && opts.remat != "auto")
      fail(kBadInput, "--remat=" + opts.remat + " is unknown; use heuristic, exact or auto");
    if (!(opts.rematTimeLimit > 0))
      fail(kBadInput, "--remat-time-limit must be positive");
    if (opts.maxBatch && !budget)
      fail(kBadInput, "--max-batch needs --budget=SIZE: the budget the batch has to fit");
    device = findDeviceProfile(opts.device.empty() ? (opts.target == "cuda" ? "h100" : "cpu")
                                                   : llvm::StringRef(opts.device));
    if (!device)
      fail(kBadInput, "--device=" + opts.device + " is unknown; use h100, h200, a100-80gb or cpu");

    MLIRContext context;
    context.loadDialect<graph::GraphDialect, func::FuncDialect>();
    // Diagnostics from passes become one line each: graphc: error: <location>: <message>.
    // Trial compiles (--max-batch, suggestions) stay silent.
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Error || silent)
        return success();
      std::string loc;
      llvm::raw_string_ostream los(loc);
      if (auto name = dyn_cast<NameLoc>(diag.getLocation()))
        los << opts.model << ": node \"" << name.getName().strref() << "\": ";
      else if (auto file = dyn_cast<FileLineColLoc>(diag.getLocation()))
        los << file.getFilename().strref() << ":" << file.getLine() << ":" << file.getColumn()
            << ": ";
      else
        los << opts.model << ": ";
      llvm::errs() << "graphc: error: " << loc << diag.str() << "\n";
      return success();
    });

    if (opts.maxBatch)
      return printMaxBatch(context, *budget);

    microBatches = opts.microBatches;
    Compiled compiled = compile(context, opts.batch, budget, phase, /*trial=*/false);
    if (phase == Phase::Import || phase == Phase::Training)
      return emitIR(*compiled.module);
    // Data parallelism: sharding the optimizer state over the ranks moves no more bytes than the
    // all-reduce it replaces (a reduce-scatter plus an all-gather), so it is the first cure.
    if (budget && canShardOptimizerState() && opts.zero == "auto" &&
        (compiled.planned.plan.arenaBytes > *budget || compiled.rematOps > 0)) {
      shardState = true;
      compiled = compile(context, opts.batch, budget, phase, /*trial=*/false);
      compiled.shardChosenForBudget = true;
    }
    // Data parallelism: a bucket of several gradients is their concatenation, a copy, so it
    // costs up to its bytes again while it is packed and averaged, and the averages are copied
    // out again. Planning the gradients inside their bucket (DDP's gradient_as_bucket_view)
    // removes both copies but holds the whole bucket from its first gradient on, which costs
    // more where the copies are not at the peak (the examples' MLP and CNN), so it is a cure,
    // taken when it fits where the copies do not, or fits with fewer extra FLOPs.
    if (budget && opts.dataParallel && opts.bucketView == "auto" &&
        (compiled.planned.plan.arenaBytes > *budget || compiled.rematOps > 0)) {
      bucketViews = true;
      Compiled viewed = compile(context, opts.batch, budget, phase, /*trial=*/false);
      if (betterForBudget(viewed, compiled, *budget)) {
        viewed.bucketViewsFrom = compiled.planned.plan.arenaBytes;
        viewed.shardChosenForBudget = compiled.shardChosenForBudget;
        compiled = std::move(viewed);
      } else {
        bucketViews = false;
      }
    }
    // Buckets of one gradient are reshape views averaged in place: no copy, for one collective
    // per gradient (the same bytes moved, more calls). The next cure, unless --bucket-size was
    // given.
    if (budget && opts.dataParallel && !opts.bucketSizeGiven &&
        (compiled.planned.plan.arenaBytes > *budget || compiled.rematOps > 0)) {
      uint64_t given = bucketBytes;
      bucketBytes = 4; // below any gradient: one per bucket
      Compiled split = compile(context, opts.batch, budget, phase, /*trial=*/false);
      if (betterForBudget(split, compiled, *budget)) {
        uint64_t bucketsBefore = 0;
        compiled.step->walk([&](Operation *op) {
          bucketsBefore += isa<graph::AllReduceOp, graph::ReduceScatterOp>(op);
        });
        split.bucketsSplitFrom = {bucketsBefore, compiled.planned.plan.arenaBytes};
        split.shardChosenForBudget = compiled.shardChosenForBudget;
        compiled = std::move(split);
      } else {
        bucketBytes = given;
      }
    }
    // --precision=auto: bf16 is the next cure after static reuse, so it is taken as soon as
    // reuse alone misses the budget; rematerialization and micro-batching then work on it.
    if (budget && opts.precision == "auto" &&
        (compiled.planned.plan.arenaBytes > *budget || compiled.rematOps > 0)) {
      precision = "bf16";
      compiled = compile(context, opts.batch, budget, phase, /*trial=*/false);
      compiled.precisionChosenForBudget = true;
    }
    // A later cure recompiles the step; the report still says why the earlier ones were taken
    // (ZeRO-1 and bf16 stay on: shardState and precision carry over to the recompile).
    auto takeCure = [](Compiled &from, Compiled &&to) {
      to.shardChosenForBudget = from.shardChosenForBudget;
      to.precisionChosenForBudget = from.precisionChosenForBudget;
      from = std::move(to);
    };
    if (budget && opts.microBatches == 1 && !opts.noMicroBatching &&
        (compiled.planned.plan.arenaBytes > *budget || compiled.rematOps > 0))
      if (auto split = tryMicroBatching(context, *budget, compiled))
        takeCure(compiled, std::move(*split));
    // --offload=auto: the last cure, for a budget that nothing above meets (the parameters,
    // gradients and optimizer state alone can exceed it). It costs host-link traffic every
    // step, so it is taken only when needed, and the cures above are chosen again on top of it.
    if (budget && opts.offload == "auto" && !offloadState &&
        compiled.planned.plan.arenaBytes > *budget) {
      offloadState = true;
      microBatches = opts.microBatches;
      Compiled offloaded = compile(context, opts.batch, budget, phase, /*trial=*/false);
      if (offloaded.offloadedBytes == 0) {
        offloadState = false; // nothing to offload (SGD): keep the first result
      } else {
        takeCure(compiled, std::move(offloaded));
        if (opts.microBatches == 1 && !opts.noMicroBatching &&
            (compiled.planned.plan.arenaBytes > *budget || compiled.rematOps > 0))
          if (auto split = tryMicroBatching(context, *budget, compiled))
            takeCure(compiled, std::move(*split));
        compiled.offloadChosenForBudget = true;
      }
    }
    OwningOpRef<ModuleOp> &module = compiled.module;
    func::FuncOp step = compiled.step;
    const PlannedStep *planned = &compiled.planned;
    if (budget && planned->plan.arenaBytes > *budget)
      reportInfeasible(context, compiled, *budget);
    report(compiled, budget);
    writePlanDumps(*planned, budget);
    if (phase == Phase::Planned)
      return emitIR(*module);

    EmitOptions emit;
    emit.modelName = llvm::sys::path::filename(opts.model).str();
    emit.dropoutSeed = opts.seed;
    emit.cudaThreadRows = opts.cudaRowKernels == "thread";
    if (phase == Phase::Source) {
      // The weights go to OUT.weights.bin beside the source; written to stdout ("-" or no
      // -o), a source with weights has no place for them.
      const bool toStdout = opts.output.empty() || opts.output == "-";
      std::string blobPath = toStdout ? "" : absolute(opts.output + ".weights.bin");
      emit.initBlobPath = blobPath;
      EmittedProgram program = emitProgram(step, emit);
      if (!program.initBlob.empty() && blobPath.empty())
        fail(kBadInput, "the source embeds its initial weights from a side file, OUT.weights.bin: "
                        "pass -o OUT.cpp (not stdout)");
      if (!program.initBlob.empty())
        writeFileAtomically(blobPath, llvm::StringRef(program.initBlob.data(), program.initBlob.size()));
      return emitText([&](llvm::raw_ostream &os) { os << program.source; });
    }
    return opts.target == "cuda" ? buildCudaBinary(step, emit) : buildBinary(step, emit);
  }

private:
  /// What one run of the pipeline produced.
  struct Compiled {
    OwningOpRef<ModuleOp> module;
    func::FuncOp step;
    PlannedStep planned;
    int64_t batch = 0;
    int64_t microBatches = 1;
    uint64_t rematOps = 0; // per-value recomputations and segments, each counted once
    uint64_t rematSegments = 0, rematSegmentOps = 0;
    uint64_t rematSplit = 0; // values recomputed twice, around the widest gap of their readers
    /// "3 ops", "2 segments (14 ops)" or "3 ops and 2 segments (14 ops)".
    std::string rematSummary() const {
      uint64_t single = rematOps - rematSegments;
      std::string segments = llvm::formatv("{0} segment{1} ({2} ops)", rematSegments,
                                           rematSegments == 1 ? "" : "s", rematSegmentOps);
      std::string ops = llvm::formatv("{0} op{1}", single, single == 1 ? "" : "s");
      if (!rematSegments)
        return ops;
      return single ? ops + " and " + segments : segments;
    }
    double extraFlops = 0; // fraction of the step's FLOPs added by rematerialization
    // Convolutions whose im2col the fit tiled, and [largest whole-image workspace, largest tile].
    uint64_t tiledConvs = 0;
    uint64_t splitFilterGradients = 0; // filter gradients split over a concatenation's parts
    // The extra FLOPs (fraction) of the unsplit plan that fit too, when the split was cheaper.
    std::optional<double> unsplitExtraFlops;
    std::pair<uint64_t, uint64_t> tiledWorkspace{0, 0};
    // graphc-grow-workspaces: convolutions whose cuDNN workspace grew, and their workspaces'
    // bytes before and after.
    std::array<uint64_t, 3> grownWorkspaces{0, 0, 0};
    uint64_t peakBeforeRemat = 0;
    // The local search after the remat search: remats dropped, remats swapped for cheaper
    // ones, and the extra FLOPs before it.
    uint64_t localDropped = 0, localSwapped = 0, localRejoined = 0;
    // Recomputations whose late readers got a cheap recomputation of their own.
    uint64_t rematCheapLate = 0;
    // Bytes of the arena left unused so that it stays monotone in the budget (PlanMemory).
    uint64_t arenaPadding = 0;
    double extraFlopsSearched = 0;
    // An exact seed kept (FitBudget's improveWithSeeds): its level (fraction of the
    // activations), the extra FLOPs before it (-1: nothing fit) and with it.
    std::optional<double> exactSeedLevel;
    double extraFlopsBeforeSeed = 0, extraFlopsSeeded = 0;
    std::string rematSolver, exactStatus;   // who chose the remats; the exact solve's status
    std::optional<double> rematLowerBound;  // the exact model's bound on extraFlops
    // The instant bound on any recomputation's extra FLOPs, CBC's status and seconds.
    std::optional<double> instantBound;
    std::string instantBoundStatus, instantBoundAt; // CBC's status; the op where it binds
    // No recomputation of the step fits in fewer bytes: while memoryFloorAt runs, what must
    // be live takes that much (fit/BoundaryBound.h, minimumHeldBytes).
    std::optional<uint64_t> memoryFloor;
    std::string memoryFloorAt;
    double instantBoundSeconds = 0;
    double rematSolveSeconds = 0;
    double fitSeconds = 0;     // the whole graphc-fit-budget pass
    double chenExtraFlops = 0; // Chen et al.'s sqrt(n) checkpointing, same cost model
    std::optional<std::pair<uint64_t, uint64_t>> scheduleBounds;
    std::string precision = "fp32";
    bool precisionChosenForBudget = false; // --precision=auto moved to bf16
    bool shardChosenForBudget = false;     // --zero=auto sharded the optimizer state
    // One gradient per bucket because --budget needed it: the bucket count and arena before.
    std::optional<std::pair<uint64_t, uint64_t>> bucketsSplitFrom;
    // The gradient-as-bucket-view cure: the arena before it.
    std::optional<uint64_t> bucketViewsFrom;
    bool offloadChosenForBudget = false;   // --offload=auto moved the optimizer state to the host
    uint64_t offloadedBytes = 0;           // optimizer state in host memory
    unsigned casts = 0;                    // graph.cast ops in the step
  };

  /// Whether a compile with one more cure beats `current` for `budget`: it fits where
  /// `current` does not, or fits with fewer extra FLOPs, or both miss and it misses by less.
  static bool betterForBudget(const Compiled &cured, const Compiled &current, uint64_t budget) {
    bool fitsNow = cured.planned.plan.arenaBytes <= budget;
    bool fitsBefore = current.planned.plan.arenaBytes <= budget;
    return (fitsNow && (!fitsBefore || cured.extraFlops < current.extraFlops)) ||
           (!fitsNow && !fitsBefore &&
            cured.planned.plan.arenaBytes < current.planned.plan.arenaBytes);
  }

  /// Runs the pipeline up to `stopAfter` (at most the plan). With a budget, and unless
  /// --no-remat, rematerialization tries to bring the plan under it. A trial compile returns
  /// nullopt instead of failing, and prints nothing.
  std::optional<Compiled> tryCompile(MLIRContext &context, int64_t batch,
                                     std::optional<uint64_t> budget, Phase stopAfter, bool trial) {
    silent = trial;
    Compiled out;
    // With k micro-batches the model is imported at the micro-batch size; the step takes
    // the whole batch. (A graph-dialect model's forward function is the micro-batch.)
    int64_t importBatch = batch;
    llvm::StringRef extension = llvm::sys::path::extension(opts.model);
    // 0: no data parallelism; 1: the data-parallel code path on one rank (it all-reduces over a
    // world of one, e.g. to check the NCCL path on one GPU).
    int64_t ranks = opts.dataParallel ? opts.worldSize : 0;
    if (((microBatches > 1 && batchIsImported()) || (ranks > 1 && extension != ".mlir")) &&
        batch == 0) {
      // The whole batch is the model's own: read it off a plain import.
      OwningOpRef<ModuleOp> probe = importModel(context, 0, trial);
      if (!probe)
        return std::nullopt;
      for (auto f : probe->getOps<func::FuncOp>())
        for (BlockArgument arg : f.getArguments())
          if (auto kind = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kKindAttr);
              kind && kind.getValue() == "input" && batch == 0)
            batch = cast<RankedTensorType>(arg.getType()).getDimSize(0);
    }
    // Data parallelism: each rank's step trains on batch / ranks rows (a graph-dialect model's
    // forward function is already one rank's).
    int64_t rankBatch = batch;
    if (ranks > 1 && batch > 0) {
      if (batch % ranks != 0) {
        if (trial)
          return std::nullopt;
        fail(kBadInput, llvm::formatv("--batch={0} does not split over --world-size={1} ranks: "
                                      "use a global batch that {1} divides, e.g. --batch={2}",
                                      batch, ranks, (batch / ranks + 1) * ranks)
                            .str());
      }
      rankBatch = batch / ranks;
      importBatch = rankBatch;
    }
    if (microBatches > 1 && rankBatch > 0) {
      if (rankBatch % microBatches != 0) {
        if (trial)
          return std::nullopt;
        fail(kBadInput, llvm::formatv("--batch={0} does not split into --micro-batches={1} "
                                      "equal micro-batches{2}",
                                      rankBatch, microBatches,
                                      ranks > 1 ? " (the batch of one rank)" : "")
                            .str());
      }
      importBatch = rankBatch / microBatches;
    }
    out.microBatches = microBatches;
    out.module = importModel(context, importBatch, trial);
    if (!out.module)
      return std::nullopt;
    checkLossFlags(*out.module);
    freezeParameters(*out.module);
    if (std::optional<std::string> huge = oversizedTensor(*out.module)) {
      if (trial)
        return std::nullopt;
      fail(kBadInput,
           opts.model + ": " + *huge +
               (batch > 0 ? " at --batch=" + std::to_string(batch) + "; use a smaller --batch"
                          : "; export the model with smaller dimensions"));
    }
    if (stopAfter == Phase::Import)
      return out;
    PassManager pm(&context);
    out.precision = precision;
    if (!opts.noFuseAttention) {
      FuseAttentionOptions fuseOptions;
      fuseOptions.queryBlock = opts.attentionQueryBlock;
      pm.addNestedPass<func::FuncOp>(createFuseAttention(fuseOptions));
    }
    if (precision != "fp32") {
      InsertCastsOptions castOptions;
      castOptions.precision = precision;
      pm.addNestedPass<func::FuncOp>(createInsertCasts(castOptions));
    }
    pm.addPass(createCanonicalizerPass());
    BuildTrainStepOptions trainOptions;
    trainOptions.loss = opts.loss;
    trainOptions.optimizer = opts.optimizer;
    trainOptions.learningRate = opts.lr;
    trainOptions.momentum = opts.momentum;
    trainOptions.microBatches = microBatches;
    // fp16's 5-bit exponent flushes small gradients to zero: scale the loss (bf16 shares
    // f32's exponent range and needs no scaling).
    trainOptions.lossScaling = precision == "fp16";
    trainOptions.lossScaleGrowthInterval = opts.lossScaleGrowthInterval;
    trainOptions.fromLogits = opts.fromLogits;
    trainOptions.ignoreLabels = opts.ignoreIndex.has_value();
    trainOptions.ignoreIndex = opts.ignoreIndex.value_or(-100);
    trainOptions.labelSmoothing = opts.labelSmoothing.value_or(0.0);
    trainOptions.classWeights = opts.classWeights;
    trainOptions.posWeight = opts.posWeight;
    trainOptions.sampleWeights = opts.sampleWeights || opts.temporalSampleWeights;
    trainOptions.temporalSampleWeights = opts.temporalSampleWeights;
    pm.addPass(createBuildTrainStep(trainOptions));
    if (!opts.noSplitDataGradients)
      pm.addNestedPass<func::FuncOp>(createSplitDataGradients());
    if (ranks > 0) {
      AllReduceGradientsOptions reduceOptions;
      reduceOptions.ranks = ranks;
      reduceOptions.bucketBytes = int64_t(bucketBytes);
      reduceOptions.gradientAsBucketView = bucketViews;
      reduceOptions.shardOptimizerState = shardState;
      pm.addNestedPass<func::FuncOp>(createAllReduceGradients(reduceOptions));
    }
    if (offloadState)
      pm.addNestedPass<func::FuncOp>(createOffloadOptimizerState());
    if (failed(pm.run(*out.module))) {
      if (trial)
        return std::nullopt;
      fail(kBadInput, opts.model + ": building the training step failed (see above)");
    }
    if (stopAfter == Phase::Training)
      return out;

    if (auto step = out.module->lookupSymbol<func::FuncOp>("train_step")) {
      // The CUDA runtime uploads batch t+1 while step t runs, into a buffer of the plan.
      if (opts.target == "cuda" && !opts.noStageNextBatch)
        step->setAttr(kStageNextBatchAttr, UnitAttr::get(&context));
      // The CPU kernels run pointwise convolutions without an im2col workspace; cuDNN's 16-bit
      // convolutions need room for their layout transforms.
      if (opts.target != "cuda")
        step->setAttr(kDirectPointwiseConvsAttr, UnitAttr::get(&context));
      else
        step->setAttr(kCudnnConvsAttr, UnitAttr::get(&context));
    }
    PassManager plan(&context);
    // CUDA: a batch norm with few channels sums each over several blocks, whose partial sums
    // are planned (graphc-split-channel-reductions).
    if (opts.target == "cuda" && opts.cudaReductionBlocks > 0) {
      SplitChannelReductionsOptions splitOptions;
      splitOptions.blocks = opts.cudaReductionBlocks;
      plan.addNestedPass<func::FuncOp>(createSplitChannelReductions(splitOptions));
    }
    if (!opts.noSchedule)
      plan.addNestedPass<func::FuncOp>(createScheduleOps());
    if (budget && !opts.noRemat && !opts.noReuse) {
      FitBudgetOptions fitOptions;
      fitOptions.budget = int64_t(*budget);
      // Trial compiles (micro-batch and batch-size searches) run many times: heuristic only.
      fitOptions.solver = trial ? std::string("heuristic") : opts.remat;
      fitOptions.timeLimit = opts.rematTimeLimit;
      fitOptions.segments = opts.rematSegments;
      fitOptions.splitShapes = opts.rematSplit;
      fitOptions.cheapSplits = opts.rematCheapLate;
      fitOptions.splitFilterGradients = !opts.noSplitFilterGradients;
      fitOptions.localSearch = opts.rematLocalSearch;
      if (!opts.rematSeeds)
        fitOptions.seedLevels = 0;
      // Whether the step fits does not depend on which fitting sequence or seed is kept.
      fitOptions.questionOnly = trial && fitQuestionOnly;
      fitOptions.instantBound = !trial; // for the report only
      plan.addNestedPass<func::FuncOp>(createFitBudget(fitOptions));
    }
    PlanMemoryOptions planOptions;
    planOptions.noReuse = opts.noReuse;
    if (trial)
      planOptions.searchWork /= 10;
    plan.addNestedPass<func::FuncOp>(createPlanMemory(planOptions));
    // cuDNN's faster algorithms need more workspace than graphc's kernels: on the CUDA target
    // each convolution's grows into the arena bytes free at its step (the arena is unchanged).
    if (opts.target == "cuda" && cudnnWorkspaceLimit > 0 && !trial) {
      GrowWorkspacesOptions growOptions;
      growOptions.maxBytes = int64_t(cudnnWorkspaceLimit);
      plan.addNestedPass<func::FuncOp>(createGrowWorkspaces(growOptions));
    }
    plan.addNestedPass<func::FuncOp>(createVerifyPlan());
    if (failed(plan.run(*out.module))) {
      if (trial)
        return std::nullopt;
      fail(kBadInput, opts.model + ": memory planning failed (see above)");
    }
    out.step = out.module->lookupSymbol<func::FuncOp>("train_step");
    auto planned = readPlannedStep(out.step);
    if (failed(planned)) {
      if (trial)
        return std::nullopt;
      fail(kBadInput, opts.model + ": cannot read the memory plan back");
    }
    out.planned = std::move(*planned);
    out.batch = modelBatch(out);
    auto intAttr = [&](llvm::StringRef name) -> std::optional<uint64_t> {
      if (auto a = out.step->getAttrOfType<IntegerAttr>(name))
        return uint64_t(a.getInt());
      return std::nullopt;
    };
    if (auto before = intAttr("graph.schedule_bound_before"))
      out.scheduleBounds = {*before, *intAttr("graph.schedule_bound_after")};
    out.rematOps = intAttr("graph.fit_remat_ops").value_or(0);
    out.rematSegments = intAttr("graph.fit_remat_segments").value_or(0);
    out.rematSegmentOps = intAttr("graph.fit_remat_segment_ops").value_or(0);
    out.rematSplit = intAttr("graph.fit_remat_split").value_or(0);
    out.tiledConvs = intAttr("graph.fit_tiled_convs").value_or(0);
    out.splitFilterGradients = intAttr("graph.fit_split_filter_gradients").value_or(0);
    if (auto unsplit = out.step->getAttrOfType<FloatAttr>("graph.fit_split_extra_flops_unsplit"))
      out.unsplitExtraFlops = unsplit.getValueAsDouble();
    if (auto sizes = out.step->getAttrOfType<DenseI64ArrayAttr>("graph.fit_tiled_workspace");
        sizes && sizes.size() == 2)
      out.tiledWorkspace = {uint64_t(sizes[0]), uint64_t(sizes[1])};
    if (auto grown = out.step->getAttrOfType<DenseI64ArrayAttr>("graph.workspaces_grown");
        grown && grown.size() == 3)
      out.grownWorkspaces = {uint64_t(grown[0]), uint64_t(grown[1]), uint64_t(grown[2])};
    out.offloadedBytes = intAttr("graph.offloaded_state_bytes").value_or(0);
    out.step.walk([&](graph::CastOp) { ++out.casts; });
    out.peakBeforeRemat = intAttr("graph.fit_peak_before").value_or(0);
    out.arenaPadding = intAttr("graph.arena_padding").value_or(0);
    if (auto local = out.step->getAttrOfType<DenseI64ArrayAttr>("graph.fit_local_search");
        local && local.size() >= 2) {
      out.localDropped = uint64_t(local[0]);
      out.localSwapped = uint64_t(local[1]);
      out.localRejoined = local.size() > 2 ? uint64_t(local[2]) : 0;
    }
    out.rematCheapLate = intAttr("graph.fit_remat_cheap_late").value_or(0);
    if (auto level = out.step->getAttrOfType<FloatAttr>("graph.fit_exact_seed_level"))
      out.exactSeedLevel = level.getValueAsDouble();
    if (auto before = out.step->getAttrOfType<FloatAttr>("graph.fit_extra_flops_before_seed"))
      out.extraFlopsBeforeSeed = before.getValueAsDouble();
    if (auto seeded = out.step->getAttrOfType<FloatAttr>("graph.fit_extra_flops_seeded"))
      out.extraFlopsSeeded = seeded.getValueAsDouble();
    if (auto searched = out.step->getAttrOfType<FloatAttr>("graph.fit_extra_flops_searched"))
      out.extraFlopsSearched = searched.getValueAsDouble();
    if (auto extra = out.step->getAttrOfType<FloatAttr>("graph.fit_extra_flops"))
      out.extraFlops = extra.getValueAsDouble();
    if (auto solver = out.step->getAttrOfType<StringAttr>("graph.fit_solver"))
      out.rematSolver = solver.str();
    if (auto status = out.step->getAttrOfType<StringAttr>("graph.fit_solver_status"))
      out.exactStatus = status.str();
    if (auto bound = out.step->getAttrOfType<FloatAttr>("graph.fit_lower_bound"))
      out.rematLowerBound = bound.getValueAsDouble();
    if (auto secs = out.step->getAttrOfType<FloatAttr>("graph.fit_solve_seconds"))
      out.rematSolveSeconds = secs.getValueAsDouble();
    if (auto bound = out.step->getAttrOfType<FloatAttr>("graph.fit_instant_bound"))
      out.instantBound = bound.getValueAsDouble();
    if (auto status = out.step->getAttrOfType<StringAttr>("graph.fit_instant_bound_status"))
      out.instantBoundStatus = status.str();
    if (auto secs = out.step->getAttrOfType<FloatAttr>("graph.fit_instant_bound_seconds"))
      out.instantBoundSeconds = secs.getValueAsDouble();
    if (auto at = out.step->getAttrOfType<StringAttr>("graph.fit_instant_bound_at"))
      out.instantBoundAt = at.str();
    out.step->removeAttr("graph.fit_instant_bound_seconds");
    if (auto floor = out.step->getAttrOfType<IntegerAttr>("graph.fit_memory_floor"))
      out.memoryFloor = uint64_t(floor.getInt());
    if (auto at = out.step->getAttrOfType<StringAttr>("graph.fit_memory_floor_at"))
      out.memoryFloorAt = at.str();
    if (auto secs = out.step->getAttrOfType<FloatAttr>("graph.fit_seconds"))
      out.fitSeconds = secs.getValueAsDouble();
    // Wall times differ from run to run; keep the emitted IR reproducible.
    out.step->removeAttr("graph.fit_seconds");
    out.step->removeAttr("graph.fit_solve_seconds");
    if (auto chen = out.step->getAttrOfType<FloatAttr>("graph.fit_chen_extra_flops"))
      out.chenExtraFlops = chen.getValueAsDouble();
    silent = false;
    return out;
  }

  static bool hasTrainingBatchNorm(func::FuncOp step) {
    bool found = false;
    step.walk([&](graph::BatchNormOp bn) { found = found || bn.getTraining(); });
    return found;
  }

  /// The budget is missed, or met only by recomputing: try splitting the batch into k
  /// micro-batches (k = 2, 4, ... dividing the batch), first without rematerialization, and
  /// keep the split if it fits and the cost model predicts it faster than what we have.
  /// ONNX and Keras models only (batchIsImported).
  std::optional<Compiled> tryMicroBatching(MLIRContext &context, uint64_t budget,
                                           const Compiled &current) {
    if (!batchIsImported())
      return std::nullopt;
    int64_t batch = opts.batch > 0 ? opts.batch : modelBatch(current);
    bool currentFits = current.planned.plan.arenaBytes <= budget;
    // Micro-batching changes what a training batch norm computes (each micro-batch normalized
    // with its own statistics); rematerialization does not. So when recomputing fits, a model
    // with batch norm keeps the full-batch step whatever the cost model says.
    if (currentFits && hasTrainingBatchNorm(current.step))
      return std::nullopt;
    double currentSeconds = currentFits ? predictedStepSeconds(current.step) : 0;
    bool savedRemat = opts.noRemat;
    smallestSplit.reset();
    std::optional<Compiled> best;
    uint64_t rowBytes = inputBytesPerRow(current);
    // With recomputation, a k of 4 or more whose stand-in (trialFits) misses is not compiled
    // for real: a real trial that misses runs the whole search on a step of k micro-batches
    // (ResNet-50, 16 micro-batches: minutes). When no k fits, the real trials run after all,
    // for the error's smallest split.
    bool standIns = rowBytes > 0;
    int64_t ranks = opts.dataParallel ? opts.worldSize : 1;
    // Passes: without recomputation; with it (k >= 4 vetted by stand-ins); with it, real
    // trials for the k >= 4 that the stand-ins skipped.
    for (int pass = 0; pass < 3; ++pass) {
      bool remat = pass > 0;
      if ((remat && (savedRemat || currentFits)) || (pass == 2 && !standIns))
        break;
      opts.noRemat = !remat;
      for (int64_t k = pass == 2 ? 4 : 2; k <= std::min(batch, kMaxMicroBatches) && !best; k *= 2) {
        if (batch % k)
          continue;
        if (pass == 1 && standIns && k > 2 &&
            !trialFits(context, batch / ranks, k, budget, rowBytes))
          continue;
        microBatches = k;
        // With recomputation the step does not fit unsplit (currentFits is false), so a trial
        // only asks whether the split fits: the one that does is compiled again below, and a
        // miss reports the same arena as a full search (question-only).
        bool question = fitQuestionOnly;
        fitQuestionOnly = question || remat;
        auto trial = tryCompile(context, batch, budget, Phase::Planned, /*trial=*/true);
        fitQuestionOnly = question;
        if (trial && (!smallestSplit || trial->planned.plan.arenaBytes < smallestSplit->first))
          smallestSplit = {trial->planned.plan.arenaBytes, k};
        if (!trial || trial->planned.plan.arenaBytes > budget)
          continue;
        if (currentFits && predictedStepSeconds(trial->step) >= currentSeconds)
          break; // recomputing is cheaper than splitting further
        best = std::move(trial);
      }
      if (best)
        break;
    }
    opts.noRemat = savedRemat;
    int64_t chosen = best ? best->microBatches : 1;
    microBatches = 1;
    if (!best)
      return std::nullopt;
    // Recompile for real (diagnostics on) with the chosen split.
    microBatches = chosen;
    bool noRematForChosen = best->rematOps == 0;
    std::swap(opts.noRemat, noRematForChosen);
    Compiled chosenCompile = compile(context, batch, budget, Phase::Planned, false);
    std::swap(opts.noRemat, noRematForChosen);
    microBatches = 1;
    return chosenCompile;
  }

  /// Input (and staging) bytes per row of `compiled`'s batch (one rank's).
  uint64_t inputBytesPerRow(const Compiled &compiled) {
    int64_t rows = modelBatch(compiled);
    uint64_t bytes = 0;
    for (const plan::Buffer &b : compiled.planned.plan.buffers)
      if (b.kind == "input" || b.kind == "input_staging")
        bytes += b.bytes;
    return rows > 0 ? bytes / uint64_t(rows) : 0;
  }

  /// Whether `batch` (one rank's) split into k micro-batches fits `budget`, by a trial compile
  /// that only asks whether it fits. With `rowBytes` (input bytes per row) and k > 2, the
  /// trial compiles a stand-in (see largestBatch): 2 micro-batches of the same size, within
  /// the budget less the input rows that it lacks; otherwise the step itself.
  bool trialFits(MLIRContext &context, int64_t batch, int64_t k, uint64_t budget,
                 uint64_t rowBytes) {
    bool standIn = k > 2 && rowBytes > 0;
    int64_t compiled = standIn ? 2 * batch / k : batch;
    uint64_t missing = uint64_t(batch - compiled) * rowBytes;
    if (missing >= budget)
      return false;
    int64_t ranks = opts.dataParallel ? opts.worldSize : 1;
    int64_t savedMicroBatches = microBatches;
    // Restored, not cleared: reportInfeasible's later trials ask only whether they fit too.
    bool question = fitQuestionOnly;
    microBatches = standIn ? 2 : k;
    fitQuestionOnly = true;
    auto c = tryCompileWithBucketCures(context, compiled * ranks, budget - missing);
    fitQuestionOnly = question;
    microBatches = savedMicroBatches;
    return c && c->planned.plan.arenaBytes <= budget - missing && withinCudnnLimits(*c);
  }

  /// A trial compile (Phase::Planned) that also takes the data-parallel bucket cures that run()
  /// takes when the budget needs them, unless the flags fix them: the gradients planned inside
  /// their buckets, buckets of one gradient, and both. The first that fits is returned (else the
  /// plain compile); the settings are restored. Without data parallelism, one plain compile.
  /// (--max-batch's rows used to search without them, and named a smaller batch than a plain
  /// compile at the budget fits.)
  std::optional<Compiled> tryCompileWithBucketCures(MLIRContext &context, int64_t batch,
                                                    uint64_t budget) {
    auto fitsBudget = [&](const std::optional<Compiled> &c) {
      return c && c->planned.plan.arenaBytes <= budget;
    };
    std::optional<Compiled> plain = tryCompile(context, batch, budget, Phase::Planned, true);
    if (!opts.dataParallel || fitsBudget(plain))
      return plain;
    const bool savedViews = bucketViews;
    const uint64_t savedBucketBytes = bucketBytes;
    const bool viewsOpen = opts.bucketView == "auto" && !bucketViews;
    const bool splitOpen = !opts.bucketSizeGiven && bucketBytes > 4;
    std::optional<Compiled> cured;
    for (auto [views, split] : {std::pair{true, false}, {false, true}, {true, true}}) {
      if ((views && !viewsOpen) || (split && !splitOpen))
        continue;
      bucketViews = savedViews || views;
      bucketBytes = split ? 4 : savedBucketBytes;
      cured = tryCompile(context, batch, budget, Phase::Planned, true);
      if (fitsBudget(cured))
        break;
      cured.reset();
    }
    bucketViews = savedViews;
    bucketBytes = savedBucketBytes;
    return cured ? std::move(cured) : std::move(plain);
  }

  /// The smallest arena among tryMicroBatching's last trials, and its micro-batch count. When
  /// no split fits, it is the budget the infeasible error names, once a compile at that budget
  /// has fitted (reportInfeasible).
  std::optional<std::pair<uint64_t, int64_t>> smallestSplit;

  Compiled compile(MLIRContext &context, int64_t batch, std::optional<uint64_t> budget,
                   Phase stopAfter, bool trial) {
    Phase until = stopAfter == Phase::Import || stopAfter == Phase::Training ? stopAfter
                                                                             : Phase::Planned;
    auto compiled = tryCompile(context, batch, budget, until, trial);
    if (!compiled)
      fail(kBadInput, opts.model + ": compilation failed");
    return std::move(*compiled);
  }

  /// Whether the batch is an import option: ONNX and Keras models are imported at any batch
  /// (micro-batches, the searches' trial batches); a graph-dialect model's batch is its forward
  /// function's.
  bool batchIsImported() const {
    llvm::StringRef ext = llvm::sys::path::extension(opts.model);
    return ext == ".onnx" || ext == ".json";
  }

  /// The batch of the model as imported (for searches around it).
  int64_t modelBatch(const Compiled &compiled) {
    func::FuncOp step = compiled.step;
    for (BlockArgument arg : step.getArguments())
      if (auto role = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::kRoleAttr);
          role && role.getValue() == "data")
        return cast<RankedTensorType>(arg.getType()).getDimSize(0);
    return 0;
  }

  /// Largest batch whose plan fits `budget` (0 if none), by exponential then binary search
  /// over trial compiles; never by running anything.
  /// ZeRO-1 applies: data parallel and an optimizer with state (momentum, Adam). Both targets
  /// emit the sharded collectives (MPI on the CPU, NCCL on CUDA).
  bool canShardOptimizerState() const { return opts.dataParallel && opts.optimizer != "sgd"; }

  /// --target=cuda: every tensor that a cuDNN descriptor describes (convolutions and their
  /// gradients, max pooling) counts at most 2^31-1 elements, or the CUDA emitter refuses the
  /// step. A batch search takes this as a limit like the budget (monotone in the batch).
  bool withinCudnnLimits(const Compiled &compiled) const {
    if (opts.target != "cuda")
      return true;
    bool ok = true;
    func::FuncOp step = compiled.step;
    step.walk([&](Operation *op) {
      llvm::StringRef name = op->getName().getStringRef();
      if (!name.contains("conv2d") && !name.contains("max_pool2d"))
        return;
      auto large = [](Type type) {
        auto tensor = dyn_cast<RankedTensorType>(type);
        return tensor && tensor.hasStaticShape() &&
               tensor.getNumElements() > std::numeric_limits<int32_t>::max();
      };
      for (Type t : op->getOperandTypes())
        ok = ok && !large(t);
      for (Type t : op->getResultTypes())
        ok = ok && !large(t);
    });
    return ok;
  }

  /// What a batch search found: the largest batch that fits (0 if none), the micro-batch
  /// count it fits with, and the smallest batch found not to fit with one micro-batch (0 if
  /// none was tried).
  struct BatchSearch {
    int64_t batch = 0, microBatches = 1, wholeMissesFrom = 0;
  };

  /// With `split`, a batch fits when some power-of-two number k of micro-batches makes it
  /// fit. A k that missed at some batch is not tried again at a larger one: the search
  /// already takes "fits" to be monotone in the batch (a larger batch at the same k only adds
  /// bytes), and on ResNet-50 the misses at k = 1..8 were 437 s of a 520 s --max-batch run.
  /// `whole` passes on what a search without micro-batches under the same cures found (its
  /// largest batch that fitted and its first batch that missed), for k = 1.
  ///
  /// With `rowBytes` (the input and staging bytes of one row of the batch), a trial of k > 2
  /// micro-batches compiles a stand-in: 2 micro-batches of the same size, within the budget
  /// less the input rows that the stand-in lacks. The micro-batches after the first hold the
  /// same values (the gradient accumulators and one micro-batch's activations, recomputed
  /// alike), the last one also the update, and the whole batch's input is live throughout, so
  /// the stand-in peaks where the step does, at k/2 times fewer ops: on ResNet-50 a trial of
  /// 16 micro-batches that missed took over 10 minutes. The caller compiles the batch found
  /// with its real micro-batches; `below` (a batch found not to fit that way) bounds a search
  /// again.
  BatchSearch largestBatch(MLIRContext &context, uint64_t budget, bool remat, int64_t start,
                           bool split = false, const BatchSearch *whole = nullptr,
                           uint64_t rowBytes = 0, int64_t below = 0) {
    bool saved = opts.noRemat;
    opts.noRemat = !remat;
    // Data parallelism: `batch` is one rank's (trialFits compiles the global batch).
    std::map<int64_t, int64_t> missesFrom; // k -> the smallest batch that missed with k
    std::map<int64_t, int64_t> fitsUpTo;   // k -> the largest batch that fitted with k
    if (whole && whole->wholeMissesFrom > 0)
      missesFrom[1] = whole->wholeMissesFrom;
    BatchSearch found;
    // fits(b): some k fits the batch b rounded up to a multiple of k, so some batch >= b
    // fits. Unlike "k divides b and b fits", this is monotone in b (a smaller b rounds to a
    // batch no larger, for every k), as the search needs: before, a b that no tried k divided
    // counted as a miss, and the search lost every batch above it. The largest b it holds for
    // is the largest batch that fits with some k, and a multiple of that k.
    // --micro-batches=K fixes the split: every trial uses K (the search then ranges over
    // multiples of K). Otherwise k = 1, or with `split` every power of two up to the cap.
    const int64_t fixedSplit = opts.microBatches > 1 ? opts.microBatches : 0;
    auto fits = [&](int64_t b) {
      const int64_t kFirst = fixedSplit ? fixedSplit : 1;
      const int64_t kLast = fixedSplit ? fixedSplit : split ? std::min(b, kMaxMicroBatches) : 1;
      for (int64_t k = kFirst; k <= kLast; k *= 2) {
        int64_t batch = (b + k - 1) / k * k;
        if (below > 0 && batch >= below)
          continue;
        if (k == 1 && whole && batch <= whole->batch) {
          found = {std::max(found.batch, batch), 1, found.wholeMissesFrom};
          return true;
        }
        if (auto known = missesFrom.find(k); known != missesFrom.end() && batch >= known->second)
          continue;
        // A micro-batch of batch/k rows needs at least what the whole step at batch/k needs
        // (the same forward and backward pass, plus the gradient accumulators and the whole
        // batch's input): k is not tried where batch/k already missed without micro-batches.
        if (auto alone = missesFrom.find(1);
            k > 1 && alone != missesFrom.end() && batch / k >= alone->second)
          continue;
        // A batch at most one that fitted with k fits (the same monotony): b and its
        // neighbours round up to the same batch near the end of a bisection.
        if (auto known = fitsUpTo.find(k); known != fitsUpTo.end() && batch <= known->second)
          return true;
        if (trialFits(context, batch, k, budget, rowBytes)) {
          if (batch > found.batch)
            found = {batch, k, found.wholeMissesFrom};
          fitsUpTo[k] = std::max(fitsUpTo[k], batch);
          return true;
        }
        int64_t &from = missesFrom.try_emplace(k, batch).first->second;
        from = std::min(from, batch);
        if (k == 1)
          found.wholeMissesFrom = from;
      }
      return false;
    };
    // Where the bisection probes (fit/BatchSearch.h): with recomputation a trial that misses
    // runs every remat sequence and the exact seeds, one that fits stops at its first fitting
    // sequence, so misses cost kMissesCostFits times fits and the probe goes nearer the side
    // that fits. A constant, not this run's timings, so that the search probes the same
    // batches on any machine.
    const double probeAt = remat ? remat::bisectionSplit(kMissesCostFits, 1) : 0.5;
    int64_t lo = 0, hi = 0; // lo fits (or 0), hi does not (or 0 = unknown)
    for (int64_t b = std::max<int64_t>(start, 1); b <= (int64_t{1} << 24); b *= 2) {
      if (fits(b)) {
        lo = b;
      } else {
        hi = b;
        break;
      }
    }
    if (lo == 0 && hi > 1) { // even the starting batch fails: search below it
      for (int64_t b = hi / 2; b >= 1; b /= 2)
        if (fits(b)) {
          lo = b;
          break;
        } else {
          hi = b;
        }
    }
    while (lo > 0 && hi > lo + 1) {
      int64_t mid = lo + std::clamp<int64_t>(int64_t(double(hi - lo) * probeAt), 1, hi - lo - 1);
      (fits(mid) ? lo : hi) = mid;
    }
    opts.noRemat = saved;
    silent = false;
    return found; // found.batch == lo: the largest batch that fitted
  }

  /// Host-link time of the offloaded optimizer state: each update reads and writes every state
  /// byte over the link; counted one direction at a time (no credit for full duplex).
  double offloadSeconds(const Compiled &compiled) const {
    if (!compiled.offloadedBytes || device->hostLinkBytesPerSecond <= 0)
      return 0;
    return 2.0 * double(compiled.offloadedBytes) / device->hostLinkBytesPerSecond;
  }

  double predictedStepSeconds(func::FuncOp step) {
    double seconds = 0;
    for (Operation &op : step.getBody().front().without_terminator())
      seconds += predictSeconds(estimateOpCost(&op), *device);
    return seconds;
  }

  int printMaxBatch(MLIRContext &context, uint64_t budget) {
    if (!batchIsImported())
      fail(kBadInput, "--max-batch changes the batch of the model's data input; " + opts.model +
                          " is graph-dialect MLIR, whose batch is its forward function's: "
                          "give the ONNX or Keras model instead");
    Compiled base = compile(context, opts.batch, std::nullopt, Phase::Planned, false);
    int64_t start = modelBatch(base);
    llvm::raw_ostream &os = llvm::outs();
    os << "largest batch of " << llvm::sys::path::filename(opts.model) << " within "
       << plan::humanBytes(budget) << " (" << device->name << " cost model):\n";
    os.flush();
    // The cures accumulate row by row, cheapest first: optimizer-state sharding (data parallel,
    // momentum or Adam), 16-bit storage (when --precision allows it), then rematerialization,
    // then micro-batching. With --data-parallel the batches are global (ranks x per rank).
    std::string low = opts.precision == "fp16" ? "fp16" : "bf16";
    bool lowAllowed = opts.precision != "fp32";
    bool zeroAllowed = canShardOptimizerState() && opts.zero != "0";
    int64_t ranks = opts.dataParallel ? opts.worldSize : 1;
    if (opts.dataParallel)
      os << llvm::formatv("  (data parallel: {0} ranks; --batch is global, the budget per rank)\n",
                          ranks);
    bool offloadAllowed = opts.offload != "none";
    bool offloadForced = opts.offload == "optimizer"; // then every row keeps the state on the host
    struct Row {
      std::string label;
      bool zero, low, remat, split, offload;
    } rows[] = {{"reuse only", opts.zero == "1", false, false, false, offloadForced},
                {"+ ZeRO-1", true, false, false, false, offloadForced},
                {"+ " + low, zeroAllowed, true, false, false, offloadForced},
                {"+ rematerialization", zeroAllowed, lowAllowed, true, false, offloadForced},
                {"+ micro-batching", zeroAllowed, lowAllowed, true, true, offloadForced},
                {"+ offload", zeroAllowed, lowAllowed, true, true, true}};
    // What the rematerialization row found, for the next row with the same cures and
    // micro-batches.
    BatchSearch rematSearch;
    const Row *rematRow = nullptr;
    uint64_t rowBytes = inputBytesPerRow(base); // for largestBatch's stand-ins
    for (const Row &row : rows) {
      // --no-remat leaves out the rematerialization row; the rows after it keep their other
      // cures (micro-batching without recomputation).
      if ((row.remat && !row.split && opts.noRemat) ||
          (row.split && (opts.noMicroBatching || opts.microBatches > 1)) ||
          (row.low && !lowAllowed) || (row.zero && !zeroAllowed) ||
          (row.label == "+ ZeRO-1" && opts.zero == "1") ||
          (row.label == "+ offload" && opts.offload != "auto"))
        continue;
      bool remat = row.remat && !opts.noRemat;
      precision = row.low ? low : "fp32";
      shardState = row.zero;
      offloadState = row.offload;
      trialImportError.clear();
      bool sameCures = rematRow && row.split && rematRow->zero == row.zero &&
                       rematRow->low == row.low && rematRow->offload == row.offload;
      const BatchSearch *whole = sameCures ? &rematSearch : nullptr;
      BatchSearch search = largestBatch(context, budget, remat, start, row.split, whole, rowBytes);
      if (row.remat && !row.split) {
        rematRow = &row;
        rematSearch = search;
      }
      if (search.batch == 0) {
        std::string blocked = importBlocksBatchSearch();
        os << llvm::formatv("  {0,-22} none: {1}\n", row.label,
                            blocked.empty() ? "even --batch=1 needs more than the budget"
                                            : blocked);
        continue;
      }
      // Compiled again with the micro-batches it fitted with, as a compile that also asks
      // for its FLOPs (the local search runs). A batch that a stand-in passed but that misses
      // so bounds a search with real micro-batches (slow, and not seen on the benchmarks).
      std::optional<Compiled> found;
      int64_t batch = 0;
      while (search.batch > 0) {
        batch = search.batch;
        bool userNoRemat = opts.noRemat; // restored: it skips the later rows' recomputation
        opts.noRemat = !remat;
        int64_t savedMicroBatches = microBatches;
        microBatches = search.microBatches;
        found = tryCompileWithBucketCures(context, batch * ranks, budget);
        microBatches = savedMicroBatches;
        opts.noRemat = userNoRemat;
        if (found && found->planned.plan.arenaBytes <= budget && withinCudnnLimits(*found))
          break;
        found.reset();
        search = largestBatch(context, budget, remat, start, row.split, whole,
                              /*rowBytes=*/0, /*below=*/batch);
      }
      if (!found) {
        os << llvm::formatv("  {0,-22} none: even --batch=1 needs more than the budget\n",
                            row.label);
        continue;
      }
      Compiled &c = *found;
      double seconds = predictedStepSeconds(c.step) + offloadSeconds(c);
      os << llvm::formatv(
          "  {0,-22} --batch={1,-6} arena {2}, +{3:F1}% FLOPs, predicted "
          "{4:F2} ms/step, {5:F1} us/sample{6}{7}\n",
          row.label, batch * ranks, plan::humanBytes(c.planned.plan.arenaBytes),
          100.0 * c.extraFlops, seconds * 1e3,
          seconds * 1e6 / double(batch * ranks), // the ranks run side by side
          c.microBatches > 1 ? llvm::formatv(" ({0} micro-batches)", c.microBatches).str()
                             : std::string(),
          ranks > 1 ? llvm::formatv(" ({0} per rank)", batch).str() : std::string());
      // A larger batch that failed to import bounded the search, not the budget: say so.
      if (!trialImportError.empty() && trialImportBatch > batch)
        os << llvm::formatv("  {0,-22} (bounded by the import, not the budget: {1})\n", "",
                            importBlocksBatchSearch());
      os.flush(); // each row as it is found: a search takes minutes on a large model
    }
    precision = "fp32";
    shardState = opts.zero == "1";
    offloadState = offloadForced;
    if (opts.microBatches > 1)
      os << llvm::formatv("  (every row in {0} micro-batches, as --micro-batches={0} fixes; leave "
                          "it out to let graphc choose)\n",
                          opts.microBatches);
    if (!lowAllowed)
      os << "  (16-bit storage not allowed: pass --precision=auto to include bf16)\n";
    if (opts.target == "cuda")
      os << "  (--target=cuda: every convolution and pooling tensor also stays within cuDNN's "
            "2^31-1 elements)\n";
    if (!offloadAllowed)
      os << "  (optimizer state kept on the device: pass --offload=auto to include host memory)\n";
    return kOk;
  }

  /// The budget cannot be met: say why and what would fit, then exit with code 3.
  [[noreturn]] void reportInfeasible(MLIRContext &context, const Compiled &compiled,
                                     uint64_t budget) {
    const plan::Plan &p = compiled.planned.plan;
    fitQuestionOnly = true; // every trial below asks whether something fits; this exits
    // What the step needs at this batch: the full-batch plan, or the smallest split tried.
    uint64_t needed = p.arenaBytes;
    // The compiled step's own split (--micro-batches=K) unless a smaller split came closer.
    int64_t neededSplit = compiled.microBatches;
    std::string neededWith;
    if (smallestSplit && smallestSplit->first < needed) {
      needed = smallestSplit->first;
      neededSplit = smallestSplit->second;
      neededWith = llvm::formatv(" (with --micro-batches={0})", neededSplit).str();
    }
    uint64_t persistent = 0;
    for (const plan::Buffer &b : p.buffers)
      if (b.kind == "parameter" || b.kind == "optimizer_state" || b.kind == "batch_stats")
        persistent += b.bytes;
    std::string fitsAt;
    if (batchIsImported()) {
      trialImportError.clear();
      int64_t batch = largestBatch(context, budget, !opts.noRemat, modelBatch(compiled)).batch;
      int64_t ranks = opts.dataParallel ? opts.worldSize : 1;
      std::string blocked = importBlocksBatchSearch();
      // The persistent bytes explain "no batch fits" only when they exceed the budget.
      std::string noBatch =
          persistent > budget ? "; no batch fits: the parameters and optimizer state alone take " +
                                    plan::humanBytes(persistent)
                              : llvm::formatv("; no batch fits, not even --batch={0}{1}", ranks,
                                              ranks > 1 ? " (one row per rank)" : "")
                                    .str();
      fitsAt = batch > 0          ? llvm::formatv("; fits at --batch={0}", batch * ranks).str()
               : !blocked.empty() ? "; no smaller batch fits: " + blocked
                                  : noBatch;
    }
    // Would 16-bit storage fit where fp32 does not? (Only worth saying when it was not tried.)
    if (precision == "fp32" && opts.precision == "fp32") {
      precision = "bf16";
      auto trial = tryCompile(context, opts.batch, budget, Phase::Planned, /*trial=*/true);
      precision = "fp32";
      if (trial && trial->planned.plan.arenaBytes <= budget)
        fitsAt += "; fits with --precision=bf16 (or --precision=auto)";
    }
    // Would keeping the optimizer state in host memory fit? (Only when it was not tried.)
    if (!offloadState && opts.offload == "none") {
      offloadState = true;
      auto trial = tryCompile(context, opts.batch, budget, Phase::Planned, /*trial=*/true);
      if (trial && trial->offloadedBytes && trial->planned.plan.arenaBytes > budget &&
          opts.microBatches == 1 && !opts.noMicroBatching) {
        silent = true;
        auto split = tryMicroBatching(context, budget, *trial);
        silent = false;
        if (split)
          trial = std::move(split);
      }
      offloadState = false;
      if (trial && trial->offloadedBytes && trial->planned.plan.arenaBytes <= budget)
        fitsAt += llvm::formatv("; fits with --offload=auto (the optimizer state, {0}, in host "
                                "memory{1})",
                                plan::humanBytes(trial->offloadedBytes),
                                trial->microBatches > 1
                                    ? llvm::formatv(", and {0} micro-batches", trial->microBatches)
                                          .str()
                                    : std::string())
                      .str();
    }
    // Would sharding the optimizer state over the ranks fit? (When --zero=0 kept it whole.)
    if (canShardOptimizerState() && !shardState) {
      shardState = true;
      auto trial = tryCompile(context, opts.batch, budget, Phase::Planned, /*trial=*/true);
      shardState = false;
      if (trial && trial->planned.plan.arenaBytes <= budget)
        fitsAt += "; fits with --zero=1 (shard the optimizer state over the ranks)";
    }
    // Would buckets of one gradient each (no bucket copies) fit? (Only when --bucket-size
    // kept them larger.)
    if (opts.dataParallel && opts.bucketSizeGiven && bucketBytes > 4) {
      uint64_t given = bucketBytes;
      bucketBytes = 4;
      auto trial = tryCompile(context, opts.batch, budget, Phase::Planned, /*trial=*/true);
      bucketBytes = given;
      if (trial && trial->planned.plan.arenaBytes <= budget)
        fitsAt += "; fits with one gradient per bucket (leave out --bucket-size, or "
                  "--bucket-size=4: each gradient averaged in place, no bucket copy)";
    }
    // Would the gradients planned inside their buckets fit? (When --gradient-as-bucket-view=off
    // kept them out; auto has tried them already.)
    if (opts.dataParallel && opts.bucketView == "off") {
      bucketViews = true;
      auto trial = tryCompile(context, opts.batch, budget, Phase::Planned, /*trial=*/true);
      bucketViews = false;
      if (trial && trial->planned.plan.arenaBytes <= budget)
        fitsAt += "; fits with --gradient-as-bucket-view=on (the gradients planned inside their "
                  "buckets, no copy in or out)";
    }
    // A proof rather than a search result (fit/BoundaryBound.h): while that op runs, what must
    // be live, however the step is recomputed, takes the floor (over the budget: nothing fits).
    // The floor is the compiled step's: the whole batch unless it was split.
    std::string floor;
    if (compiled.memoryFloor)
      floor =
          llvm::formatv("; {0}no recomputation fits below {1} ({2} bytes): while {3} runs, "
                        "what must be live takes that much",
                        compiled.microBatches > 1
                            ? llvm::formatv("with {0} micro-batches, ", compiled.microBatches).str()
                        : neededSplit > 1 ? "without micro-batching, "
                                          : "",
                        plan::humanBytes(*compiled.memoryFloor), *compiled.memoryFloor,
                        compiled.memoryFloorAt)
              .str();
    else if (compiled.instantBoundStatus == "infeasible")
      floor = "; no recomputation can fit this budget: while " + compiled.instantBoundAt +
              " runs, what must be live exceeds it";
    // The smallest arena found is a search result, not a proof: say that it fits only after
    // compiling at that budget (the search at a budget it can reach may take another path).
    std::string closest =
        fitsAtBudget(context, needed, neededSplit)
            ? llvm::formatv("Fits at --budget={0}{1}", needed, neededWith).str()
            : llvm::formatv("The closest plan found takes {0} bytes{1}, but a compile at that "
                            "budget does not fit",
                            needed, neededWith)
                  .str();
    fail(kOverBudget,
         llvm::formatv(
             "{0}: the training step needs {1} ({2} bytes) but --budget is {3} ({4} "
             "bytes); by kind: {5}{6}. {7}{8}{9}.",
             opts.model, plan::humanBytes(p.arenaBytes), p.arenaBytes, plan::humanBytes(budget),
             budget, kindSummary(p),
             compiled.rematOps
                 ? llvm::formatv("; that plan rematerializes {0}", compiled.rematSummary()).str()
                 : std::string(),
             closest, floor, fitsAt)
             .str());
  }

  /// Whether the step, split into `k` micro-batches, compiles within `budget`: a trial that
  /// only asks whether it fits.
  bool fitsAtBudget(MLIRContext &context, uint64_t budget, int64_t k) {
    int64_t savedMicroBatches = microBatches;
    microBatches = k;
    auto trial = tryCompile(context, opts.batch, budget, Phase::Planned, /*trial=*/true);
    microBatches = savedMicroBatches;
    return trial && trial->planned.plan.arenaBytes <= budget;
  }

  Phase parsePhase() {
    if (opts.compileTo == "import")
      return Phase::Import;
    if (opts.compileTo == "training")
      return Phase::Training;
    if (opts.compileTo == "planned")
      return Phase::Planned;
    if (opts.compileTo == "source")
      return Phase::Source;
    if (opts.compileTo == "binary")
      return Phase::Binary;
    fail(kBadInput, "--compile-to=" + opts.compileTo +
                        " is unknown; use import, training, planned, source or binary");
  }

  static std::string absolute(llvm::StringRef path) {
    llvm::SmallString<256> abs(path);
    llvm::sys::fs::make_absolute(abs);
    return abs.str().str();
  }

  /// A Keras model JSON with optional --weights. Its compile_config supplies --loss,
  /// --optimizer, --lr and --momentum where they were not given (--lr and --momentum only
  /// for the optimizer compile_config names).
  OwningOpRef<ModuleOp> importKeras(MLIRContext &context, int64_t batch, bool trial) {
    KerasImportOptions importOptions;
    importOptions.batch = batch;
    importOptions.weightsPath = opts.weights;
    importOptions.seed = opts.seed;
    importOptions.usesCompileLoss = !opts.lossSet;
    importOptions.initialValues = &kerasInitialValues;
    for (const std::string &text : opts.inputShapes) {
      llvm::SmallVector<llvm::StringRef> parts;
      llvm::StringRef(text).split(parts, llvm::is_contained(text, 'x') ? 'x' : ',');
      std::vector<int64_t> &dims = importOptions.inputShapes.emplace_back();
      for (llvm::StringRef p : parts) {
        int64_t d;
        if (p.trim().getAsInteger(10, d) || d < 1 || d > (int64_t{1} << 31))
          fail(kBadInput, "--input-shape=" + text +
                              " is not a list of positive dims after the batch, e.g. "
                              "--input-shape=32,32,3");
        dims.push_back(d);
      }
    }
    if (!opts.weights.empty() && !llvm::sys::fs::exists(opts.weights))
      fail(kBadInput, opts.weights + ": no such file");
    KerasTrainingDefaults defaults;
    std::string error;
    auto module = importKerasFile(opts.model, context, importOptions, defaults, error);
    if (!module) {
      if (trial)
        return module;
      if (opts.verbose) {
        llvm::errs() << "graphc: error: " << error << "\n"
                     << "graphc: note: supported Keras layers: " << kerasSupportedLayers()
                     << "\n";
        throw Failure{kBadInput};
      }
      fail(kBadInput, error);
    }
    std::string applied;
    if (!opts.lossSet && defaults.loss) {
      opts.loss = *defaults.loss;
      applied += " loss " + opts.loss;
      if (defaults.ignoreClass && !opts.ignoreIndex) {
        opts.ignoreIndex = defaults.ignoreClass;
        applied += " ignore_class " + std::to_string(*defaults.ignoreClass);
      }
      if (defaults.labelSmoothing && !opts.labelSmoothing) {
        opts.labelSmoothing = defaults.labelSmoothing;
        applied += " label_smoothing " + shortest(*defaults.labelSmoothing);
      }
    } else if (!opts.lossSet && !defaults.lossProblem.empty()) {
      fail(kBadInput, opts.model + ": " + defaults.lossProblem + "; pass --loss");
    }
    if (!opts.optimizerSet && !defaults.optimizerProblem.empty())
      fail(kBadInput, opts.model + ": " + defaults.optimizerProblem + "; pass --optimizer and --lr");
    bool sameOptimizer = defaults.optimizer && (!opts.optimizerSet || opts.optimizer == *defaults.optimizer);
    if (!opts.optimizerSet && defaults.optimizer) {
      opts.optimizer = *defaults.optimizer;
      applied += " optimizer " + opts.optimizer;
    }
    if (sameOptimizer && !opts.lrSet && defaults.lr) {
      opts.lr = *defaults.lr;
      applied += " lr " + std::to_string(opts.lr).erase(std::to_string(opts.lr).find_last_not_of('0') + 1);
    }
    if (sameOptimizer && !opts.momentumSet && defaults.momentum) {
      opts.momentum = *defaults.momentum;
      applied += " momentum " + std::to_string(opts.momentum).erase(std::to_string(opts.momentum).find_last_not_of('0') + 1);
    }
    if (!applied.empty() && !opts.quiet && !trial && !kerasNoted) {
      llvm::errs() << "graphc: note: from " << llvm::sys::path::filename(opts.model)
                   << "'s compile_config:" << applied << "\n";
      kerasNoted = true;
    }
    return module;
  }
  bool kerasNoted = false, onnxNoted = false, logitsNoted = false;

  /// The loss flags against the loss and the imported model's prediction (its last axis: the
  /// classes), before anything is built.
  void checkLossFlags(ModuleOp module) {
    auto pred = forwardPrediction(module);
    const int64_t lastAxis = pred ? pred.getShape().back() : -1;
    const std::string model = llvm::sys::path::filename(opts.model).str();
    if (!opts.posWeight.empty() && opts.loss != "binary_crossentropy")
      fail(kBadInput, "--pos-weight applies to --loss=binary_crossentropy, not " + opts.loss);
    if (opts.posWeight.size() > 1 && lastAxis >= 0 && int64_t(opts.posWeight.size()) != lastAxis)
      fail(kBadInput, "--pos-weight gives " + std::to_string(opts.posWeight.size()) +
                          " values, but " + model + "'s prediction has " +
                          std::to_string(lastAxis) +
                          " on its last axis; give one value or that many");
    if (!opts.classWeights.empty() && opts.loss != "sparse_categorical_crossentropy")
      fail(kBadInput, "--class-weights applies to --loss=sparse_categorical_crossentropy (class "
                      "indices), not " +
                          opts.loss);
    if (!opts.classWeights.empty() && lastAxis >= 0 &&
        int64_t(opts.classWeights.size()) != lastAxis)
      fail(kBadInput, "--class-weights gives " + std::to_string(opts.classWeights.size()) +
                          " weights, but " + model + " predicts " + std::to_string(lastAxis) +
                          " classes; give one weight per class");
    if (opts.labelSmoothing && opts.loss == "mse")
      fail(kBadInput, "--label-smoothing applies to the crossentropy losses, not --loss=mse");
    if (opts.ignoreIndex && opts.loss != "sparse_categorical_crossentropy")
      fail(kBadInput, "--ignore-index=" + std::to_string(*opts.ignoreIndex) +
                          " applies to --loss=sparse_categorical_crossentropy (class indices), "
                          "not " +
                          opts.loss);
  }

  /// A crossentropy over an ONNX model whose output is no Softmax (Sigmoid for binary) reads it
  /// as probabilities, as Keras's losses do; PyTorch models mostly output logits (their
  /// CrossEntropyLoss applies log-softmax), which would then train on a wrong loss without a
  /// word. Says so once, and what to pass.
  void warnIfLogitsReadAsProbabilities(ModuleOp module) {
    if (opts.fromLogits || opts.loss == "mse")
      return;
    auto kind = graph::symbolizeLossKind(opts.loss);
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!kind || !forward || forward.getNumResults() != 1)
      return;
    auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
    if (graph::getLossLogits(*kind, ret.getOperand(0)))
      return;
    llvm::errs() << "graphc: warning: " << llvm::sys::path::filename(opts.model)
                 << ": the model's output is not a "
                 << (*kind == graph::LossKind::binary_crossentropy ? "Sigmoid" : "Softmax")
                 << ", so " << opts.loss
                 << " reads it as probabilities; if it outputs logits (PyTorch's "
                 << (*kind == graph::LossKind::binary_crossentropy ? "BCEWithLogitsLoss"
                                                                   : "CrossEntropyLoss")
                 << " convention), pass --from-logits\n";
    logitsNoted = true;
  }
  /// --freeze=REGEX: every parameter whose name the regex matches (anywhere in it, POSIX
  /// extended syntax, llvm::Regex) is marked graph.trainable = false, as a Keras layer with
  /// trainable: false is: graphc-build-train-step reads it as a constant, so it gets no
  /// gradient, update or optimizer state, and keeps its initial value (a backbone frozen for
  /// fine-tuning; a fixed buffer PyTorch exports as an initializer, such as a sinusoidal
  /// position table). A pattern that matches no parameter, or every one, is an error: a typo
  /// must not silently train everything, and a step that trains nothing is not a training step.
  void freezeParameters(ModuleOp module) {
    if (opts.freeze.empty())
      return;
    llvm::Regex pattern(opts.freeze);
    std::vector<std::string> names;
    int64_t frozen = 0, trained = 0;
    for (auto f : module.getOps<func::FuncOp>())
      for (BlockArgument arg : f.getArguments()) {
        unsigned i = arg.getArgNumber();
        auto kind = f.getArgAttrOfType<StringAttr>(i, graph::kKindAttr);
        auto name = f.getArgAttrOfType<StringAttr>(i, graph::kNameAttr);
        if (!kind || kind.getValue() != "parameter" || !name)
          continue;
        names.push_back(name.str());
        auto trainable = f.getArgAttrOfType<BoolAttr>(i, graph::kTrainableAttr);
        if (pattern.match(name.getValue())) {
          f.setArgAttr(i, graph::kTrainableAttr, BoolAttr::get(module.getContext(), false));
          ++frozen;
        } else if (!trainable || trainable.getValue()) {
          ++trained;
        }
      }
    if (frozen == 0) {
      std::string list;
      for (size_t i = 0; i < names.size() && i < 8; ++i)
        list += (i ? ", " : "") + names[i];
      fail(kBadInput, opts.model + ": --freeze='" + opts.freeze + "' matches none of its " +
                          std::to_string(names.size()) + " parameters (" + list +
                          (names.size() > 8 ? ", ..." : "") + ")");
    }
    if (trained == 0)
      fail(kBadInput, opts.model + ": --freeze='" + opts.freeze + "' matches all " +
                          std::to_string(names.size()) +
                          " of its trainable parameters; nothing would train");
  }

  OnnxImportCache onnxCache; // the model's parsed file and weights, shared by every import
  InitialValueCache kerasInitialValues; // a Keras model's weights, shared by every import

  OwningOpRef<ModuleOp> importModel(MLIRContext &context, int64_t batch, bool trial) {
    if (!llvm::sys::fs::exists(opts.model))
      fail(kBadInput, opts.model + ": no such file");
    llvm::StringRef ext = llvm::sys::path::extension(opts.model);
    if (ext == ".onnx") {
      std::string error;
      OnnxImportOptions importOptions;
      importOptions.batch = batch;
      importOptions.dataInput = opts.dataInput;
      importOptions.output = opts.trainOutput;
      importOptions.seed = opts.seed;
      OnnxImportSummary summary;
      auto module = importOnnxFile(opts.model, context, importOptions, error, &summary, &onnxCache);
      if (!module && !trial) {
        if (opts.verbose) {
          llvm::errs() << "graphc: error: " << error << "\n"
                       << "graphc: note: supported ONNX ops: " << onnxSupportedOps() << "\n";
          throw Failure{kBadInput};
        }
        fail(kBadInput, error);
      }
      if (!module) {
        trialImportError = error;
        trialImportBatch = batch;
      }
      if (module && summary.initialisedParameters && !opts.quiet && !trial && !onnxNoted) {
        llvm::errs() << "graphc: note: " << llvm::sys::path::filename(opts.model) << " has "
                     << summary.initialisedParameters
                     << " parameters as graph inputs (export_params=False); they start from "
                        "PyTorch's default initialisation, drawn with --seed="
                     << opts.seed
                     << (opts.verbose ? ":" : " (--verbose lists how each was drawn)") << "\n";
        if (opts.verbose)
          for (const std::string &rule : summary.initialisationRules)
            llvm::errs() << "graphc: note:   " << rule << "\n";
        onnxNoted = true;
      }
      if (module && !opts.quiet && !trial && !logitsNoted)
        warnIfLogitsReadAsProbabilities(*module);
      return module;
    }
    if (ext == ".mlir") {
      llvm::SourceMgr sourceMgr;
      auto file = llvm::MemoryBuffer::getFile(opts.model);
      if (!file)
        fail(kBadInput, opts.model + ": cannot read the file");
      sourceMgr.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
      OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
      if (!module)
        fail(kBadInput, opts.model + ": not a valid graph-dialect MLIR file (see above)");
      return module;
    }
    if (ext == ".json")
      return importKeras(context, batch, trial);
    fail(kBadInput, opts.model + ": unknown model format '" + ext +
                        "'; graphc reads .onnx, .json (Keras) and .mlir");
  }

  /// Bytes of the plan by buffer kind: the schema's kinds in order, then any other kind.
  static std::vector<std::pair<std::string, uint64_t>> bytesByKind(const plan::Plan &p) {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (const char *k : {"parameter", "gradient", "optimizer_state", "batch_stats", "activation",
                          "temporary", "workspace", "input"})
      out.push_back({k, 0});
    for (const plan::Buffer &b : p.buffers) {
      std::string kind = b.host ? b.kind + " (host)" : b.kind;
      auto it = llvm::find_if(out, [&](const auto &entry) { return entry.first == kind; });
      if (it == out.end())
        out.push_back({kind, b.bytes});
      else
        it->second += b.bytes;
    }
    return out;
  }

  static std::string kindSummary(const plan::Plan &p) {
    std::string s;
    for (auto &[kind, bytes] : bytesByKind(p))
      if (bytes)
        s += (s.empty() ? "" : ", ") + kind + " " + plan::humanBytes(bytes);
    return s;
  }

  llvm::raw_ostream &reportStream() {
    // IR and source on stdout must stay clean, so the report goes to stderr then.
    return opts.output.empty() ? llvm::errs() : llvm::outs();
  }

  void report(const Compiled &compiled, std::optional<uint64_t> budget) {
    if (opts.quiet)
      return;
    const PlannedStep &planned = compiled.planned;
    const plan::Plan &p = planned.plan;
    // The comparison point: every value in its own bytes (no in-place sharing either).
    func::FuncOp stepFunc = compiled.step;
    plan::Plan separate;
    if (auto live = computeStepLiveness(stepFunc, /*reuseDyingOperands=*/false);
        succeeded(live)) {
      separate = planProblemFromLiveness(*live, p.alignment);
      plan::planWithHostBuffers(separate, [](plan::Plan &q) { plan::planNoReuse(q); });
    }
    llvm::raw_ostream &os = reportStream();
    double gap = planned.lowerBound
                     ? 100.0 * (double(p.arenaBytes) - double(planned.lowerBound)) /
                           double(planned.lowerBound)
                     : 0.0;
    os << "graphc fit report: " << llvm::sys::path::filename(opts.model) << " (target "
       << opts.target << ", " << opts.optimizer << ", " << opts.loss << ")\n";
    os << llvm::formatv("  arena        {0,12} ({1} bytes, one allocation, {2} buffers, {3} steps)\n",
                        plan::humanBytes(p.arenaBytes), p.arenaBytes, p.buffers.size(),
                        planned.steps.size());
    os << llvm::formatv("  lower bound  {0,12} (gap {1:F1}%)\n", plan::humanBytes(planned.lowerBound), gap);
    if (compiled.scheduleBounds)
      os << llvm::formatv("  schedule     lower bound {0} before reordering, {1} after\n",
                          plan::humanBytes(compiled.scheduleBounds->first),
                          plan::humanBytes(compiled.scheduleBounds->second));
    os << llvm::formatv("  no reuse     {0,12} (reuse saves {1:F1}%)\n",
                        plan::humanBytes(separate.arenaBytes),
                        separate.arenaBytes ? 100.0 * (1.0 - double(p.arenaBytes) /
                                                                 double(separate.arenaBytes))
                                            : 0.0);
    if (budget)
      os << llvm::formatv("  budget       {0,12} (fits, {1:F1}% used)\n", plan::humanBytes(*budget),
                          100.0 * double(p.arenaBytes) / double(*budget));
    else
      os << "  budget               none (pass --budget=SIZE to check a device limit)\n";
    if (opts.dataParallel) {
      // Gradient bytes per step, and what a ring moves per rank: an all-reduce sends
      // 2 (w-1)/w of its buffer, a reduce-scatter and an all-gather (w-1)/w each.
      uint64_t reduced = 0, largest = 0, buckets = 0, padding = 0;
      uint64_t stateUnsharded = 0, stateSharded = 0;
      int64_t w = opts.worldSize;
      func::FuncOp stepFunc = compiled.step;
      stepFunc.walk([&](Operation *op) {
        if (!isa<graph::AllReduceOp, graph::ReduceScatterOp>(op))
          return;
        uint64_t bytes = tensorBytes(op->getOperand(0).getType());
        reduced += bytes;
        largest = std::max(largest, bytes);
        ++buckets;
      });
      stepFunc.walk([&](graph::AllGatherIntoOp gather) {
        uint64_t whole = 0;
        for (Value p : gather.getParams())
          whole += tensorBytes(p.getType());
        uint64_t shard = tensorBytes(gather.getShard().getType());
        padding += shard * uint64_t(w) - whole;
        // The update of the shard has one (momentum) or two (Adam) state shards.
        unsigned states = opts.optimizer == "adam" ? 2 : 1;
        stateUnsharded += states * whole;
        stateSharded += states * shard;
      });
      double ring = double(w - 1) / double(w);
      os << llvm::formatv("  data parallel {0} rank{3} over {4}: global batch {1}, {2} per rank; "
                          "the arena and --budget are per rank\n",
                          w, compiled.batch * w, compiled.batch, w == 1 ? "" : "s",
                          opts.target == "cuda" ? "NCCL" : "MPI");
      os << llvm::formatv("  gradients    {0} averaged per step in {1} planned bucket{2} (largest "
                          "{3}); ring traffic {4} sent per rank per step\n",
                          plan::humanBytes(reduced - padding), buckets, buckets == 1 ? "" : "s",
                          plan::humanBytes(largest),
                          plan::humanBytes(uint64_t(2.0 * ring * double(reduced))));
      if (stateUnsharded > 0)
        os << llvm::formatv("  cures        optimizer state sharded over {0} ranks (ZeRO-1){1}: "
                            "{2} per rank instead of {3}, saves {4} per rank; reduce-scatter + "
                            "all-gather move what the all-reduce moved, +{5} of padding\n",
                            w,
                            compiled.shardChosenForBudget ? " because --budget needs it" : "",
                            plan::humanBytes(stateSharded), plan::humanBytes(stateUnsharded),
                            plan::humanBytes(stateUnsharded - stateSharded),
                            plan::humanBytes(uint64_t(2.0 * ring * double(padding))));
      if (compiled.bucketViewsFrom)
        os << llvm::formatv(
            "  cures        gradients planned inside their buckets because --budget "
            "needs it: no copy into a bucket or out of it ({0} -> {1})\n",
            plan::humanBytes(*compiled.bucketViewsFrom), plan::humanBytes(p.arenaBytes));
      if (compiled.bucketsSplitFrom)
        os << llvm::formatv("  cures        one gradient per bucket because --budget needs it: "
                            "averaged in place, with no bucket copy ({0} -> {1}); {2} collectives "
                            "per step instead of {3}, moving the same bytes\n",
                            plan::humanBytes(compiled.bucketsSplitFrom->second),
                            plan::humanBytes(p.arenaBytes), buckets,
                            compiled.bucketsSplitFrom->first);
    }
    os << "  by kind:\n";
    for (auto &[kind, bytes] : bytesByKind(p))
      os << llvm::formatv("    {0,-16} {1,12}\n", kind, plan::humanBytes(bytes));
    if (auto [count, before, after] = compiled.grownWorkspaces; count)
      os << llvm::formatv(
          "  workspaces   {0} cuDNN convolution workspace{1} grown into arena bytes "
          "free at {2} step{1}, up to {3} each (--cudnn-workspace-limit): {4} -> "
          "{5} in all; the arena is unchanged\n",
          count, count == 1 ? "" : "s", count == 1 ? "its" : "their",
          plan::humanBytes(cudnnWorkspaceLimit), plan::humanBytes(before), plan::humanBytes(after));
    if (compiled.precision != "fp32")
      os << llvm::formatv("  precision    {0}: matmul and convolution in 16 bit, the rest f32; "
                          "f32 master weights; {1} casts{2}\n",
                          compiled.precision, compiled.casts,
                          compiled.precisionChosenForBudget
                              ? " (--precision=auto: fp32 needs more than the budget)"
                              : "");
    if (compiled.precision == "fp16")
      os << llvm::formatv("  loss scale   dynamic: 65536 at the start, halved and the update "
                          "skipped on overflow, doubled after {0} clean steps (checkpointed)\n",
                          opts.lossScaleGrowthInterval);
    if (uint64_t scratch = halfEmulationScratchBytes(compiled.step); scratch && opts.target == "cpu")
      os << llvm::formatv("  host scratch {0,12} (CPU only: f32 copies that emulate 16-bit "
                          "storage; not device memory, not in the arena)\n",
                          plan::humanBytes(scratch));
    if (compiled.offloadedBytes)
      os << llvm::formatv("  cures        optimizer state in host memory{0}: {1} in a host arena "
                          "of {2} bytes after the device arena, not counted by --budget; the "
                          "updates move {3} over the host link per step ({4})\n",
                          compiled.offloadChosenForBudget ? " because --budget needs it" : "",
                          plan::humanBytes(compiled.offloadedBytes), p.hostArenaBytes,
                          plan::humanBytes(2 * compiled.offloadedBytes),
                          device->hostLinkBytesPerSecond > 0
                              ? llvm::formatv("+{0:F3} ms predicted on {1}",
                                              offloadSeconds(compiled) * 1e3, device->name)
                                    .str()
                              : std::string("the CPU target's host memory is its own: no "
                                            "link cost"));
    if (compiled.microBatches > 1)
      os << llvm::formatv("  cures        {0} micro-batches of {1} with gradient "
                          "accumulation{2}\n",
                          compiled.microBatches, compiled.batch / compiled.microBatches,
                          hasTrainingBatchNorm(compiled.step)
                              ? " (batch norm: each micro-batch normalized with its own "
                                "statistics, running statistics updated per micro-batch)"
                              : "");
    if (compiled.splitFilterGradients)
      os << llvm::formatv("  cures        split {0} filter gradient{1} over the parts of the "
                          "concatenation it reads (no extra FLOPs): the concatenation dies "
                          "after the forward pass{2}\n",
                          compiled.splitFilterGradients,
                          compiled.splitFilterGradients == 1 ? "" : "s",
                          compiled.unsplitExtraFlops
                              ? llvm::formatv(", so less is recomputed (unsplit, the plan fits "
                                              "at +{0:F2}% FLOPs)",
                                              *compiled.unsplitExtraFlops * 100)
                                    .str()
                              : std::string());
    if (compiled.tiledConvs)
      os << llvm::formatv("  cures        im2col tiled on {0} convolution{1} (no extra FLOPs): "
                          "largest workspace {2} -> {3}{4}\n",
                          compiled.tiledConvs, compiled.tiledConvs == 1 ? "" : "s",
                          plan::humanBytes(compiled.tiledWorkspace.first),
                          plan::humanBytes(compiled.tiledWorkspace.second),
                          compiled.rematOps ? ""
                                            : llvm::formatv("; peak {0} -> {1}",
                                                            plan::humanBytes(compiled.peakBeforeRemat),
                                                            plan::humanBytes(p.arenaBytes))
                                                  .str());
    if (compiled.rematOps)
      os << llvm::formatv("  cures        rematerialized {0}: peak {1} -> {2}, +{3:F2}% FLOPs\n",
                          compiled.rematSummary(), plan::humanBytes(compiled.peakBeforeRemat),
                          plan::humanBytes(p.arenaBytes), 100.0 * compiled.extraFlops);
    if (compiled.rematCheapLate)
      os << llvm::formatv("  cures        {0} of them recomputed again for the "
                          "backward readers after the "
                          "widest gap between them, by cheap ops from values "
                          "live there (no value held "
                          "across the gap)\n",
                          compiled.rematCheapLate);
    if (compiled.rematSplit)
      os << llvm::formatv(
          "  cures        {0} of them recomputed twice: once for the backward readers "
          "before the widest gap between them, once for those after it (nothing "
          "else fits)\n",
          compiled.rematSplit);
    if (!compiled.rematSolver.empty()) {
      os << llvm::formatv("  remat        {0} solver chose ({1:F2} s in all, {2} ops)",
                          compiled.rematSolver, compiled.fitSeconds,
                          func::FuncOp(compiled.step).getBody().front().getOperations().size() - 1);
      // The gap is measured against the exact model's lower bound (CBC's best bound, at least
      // the LP relaxation's); the model itself approximates the planned arena (docs/fitting.md).
      if (!compiled.exactStatus.empty())
        os << llvm::formatv("; exact solve {0} in {1:F2} s", compiled.exactStatus,
                            compiled.rematSolveSeconds);
      if (compiled.rematLowerBound) {
        double gap = compiled.extraFlops > 0
                         ? std::max(0.0, 1.0 - *compiled.rematLowerBound / compiled.extraFlops)
                         : 0.0;
        os << llvm::formatv(", lower bound +{0:F2}% FLOPs, remat optimality gap {1:F1}%",
                            100.0 * *compiled.rematLowerBound, 100.0 * gap);
      }
      os << llvm::formatv("; Chen sqrt(n) checkpointing: +{0:F2}% FLOPs\n",
                          100.0 * compiled.chenExtraFlops);
      if (compiled.exactSeedLevel)
        os << llvm::formatv(
            "  exact seed   the exact program's choice at {0:F1}% of the "
            "activations, completed by the heuristic, fits at +{1:F2}% FLOPs "
            "(the heuristic's own search: {2})\n",
            100.0 * *compiled.exactSeedLevel, 100.0 * compiled.extraFlopsSeeded,
            compiled.extraFlopsBeforeSeed < 0
                ? std::string("no fit")
                : llvm::formatv("+{0:F2}%", 100.0 * compiled.extraFlopsBeforeSeed).str());
      if (compiled.localDropped || compiled.localSwapped || compiled.localRejoined)
        os << llvm::formatv(
            "  local search {0} remat{1} dropped, {2} swapped for cheaper "
            "ones{3}: "
            "+{4:F2}% -> +{5:F2}% FLOPs\n",
            compiled.localDropped, compiled.localDropped == 1 ? "" : "s", compiled.localSwapped,
            compiled.localRejoined
                ? llvm::formatv(", {0} cheap late recomputation{1} undone", compiled.localRejoined,
                                compiled.localRejoined == 1 ? "" : "s")
                      .str()
                : std::string(),
            100.0 * compiled.extraFlopsSearched, 100.0 * compiled.extraFlops);
      if (compiled.arenaPadding)
        os << llvm::formatv("  monotone     {0} of the arena left unused: a cheaper choice that "
                            "plans below the arena of the one it replaced keeps that arena, so "
                            "that no smaller budget gets a larger one\n",
                            plan::humanBytes(compiled.arenaPadding));
      // A proof about every recomputation of this step, not a property of the solver's model.
      if (compiled.instantBound && compiled.instantBoundStatus != "infeasible") {
        // Both are sums of op FLOPs, the bound's rounded by its solver: a plan within 0.005
        // points meets it (never printed as a negative distance).
        double above = 100.0 * (compiled.extraFlops - *compiled.instantBound);
        std::string distance = above < 0.005
                                   ? std::string("meets it")
                                   : llvm::formatv("is within {0:F2} points of it", above).str();
        os << llvm::formatv("  remat bound  any recomputation that fits this budget adds >= "
                            "+{0:F2}% FLOPs (instant bound at {5}, {1} in {2:F2} s): the applied "
                            "+{3:F2}% {4}\n",
                            100.0 * *compiled.instantBound, compiled.instantBoundStatus,
                            compiled.instantBoundSeconds, 100.0 * compiled.extraFlops, distance,
                            compiled.instantBoundAt);
      }
    } else if (compiled.microBatches == 1 && !compiled.precisionChosenForBudget &&
               !compiled.shardChosenForBudget && !compiled.offloadedBytes &&
               !compiled.bucketsSplitFrom && !compiled.bucketViewsFrom)
      os << "  cures        none needed (static reuse only)\n";
    double flops = 0;
    func::FuncOp step = compiled.step;
    for (Operation &op : step.getBody().front().without_terminator())
      flops += estimateOpCost(&op).flops;
    os << llvm::formatv(
        "  cost model   {0:F3} GFLOP/step, predicted {1:F3} ms/step on {2}{3}\n", flops / 1e9,
        (predictedStepSeconds(step) + offloadSeconds(compiled)) * 1e3, device->name,
        device->calibration
            ? llvm::formatv(" (calibrated: {0:F0}% of peak FLOP/s, {1:F0}% of "
                            "the bandwidth, {2:F1} us per op{4}; {3})",
                            100.0 * device->computeEfficiency, 100.0 * device->bandwidthEfficiency,
                            1e6 * device->secondsPerOp, device->calibration,
                            device->halfComputeEfficiency > 0
                                ? llvm::formatv(", 16-bit ops {0:F1}% of the 16-bit peak",
                                                100.0 * device->halfComputeEfficiency)
                                      .str()
                                : std::string())
                  .str()
            : std::string(" (nominal datasheet roofline)"));
    RooflineSplit split;
    for (Operation &op : step.getBody().front().without_terminator())
      addToRooflineSplit(&op, *device, split);
    os << llvm::formatv("  roofline     at the nominal peak: {0:F3} ms in compute-bound ops, "
                        "{1:F3} ms in memory-bound ops, {2} ops ({3:F3} ms of the compute-bound "
                        "in 16-bit ops)\n",
                        split.computeBoundSeconds * 1e3, split.memoryBoundSeconds * 1e3, split.ops,
                        split.halfComputeBoundSeconds * 1e3);
    if (opts.target == "cuda")
      printRuntimeReserve(os, p.arenaBytes);
    if (opts.printPlan)
      plan::writePlanText(os, p, budget);
    os.flush();
  }

  /// The device memory a CUDA binary uses outside its arena, as measured on an H100 with
  /// CUDA 13.0, cuDNN 9.19 and NCCL 2.28 (2026-11-22, docs/benchmarks.md): the CUDA context,
  /// then the cuBLAS/cuDNN handles, streams and the captured CUDA graph, then (data parallel)
  /// the NCCL communicator. Other GPUs and versions differ; the binary prints its own measured
  /// figures at start-up, and refuses to start when the arena plus 64 MiB is not free.
  void printRuntimeReserve(llvm::raw_ostream &os, uint64_t arenaBytes) {
    constexpr uint64_t kContext = 527ull << 20, kHandles = 84ull << 20,
                       kNccl = 1151336448ull; // 1.07 GiB
    const uint64_t reserve = kContext + kHandles + (opts.dataParallel ? kNccl : 0);
    os << llvm::formatv(
        "  runtime reserve {0} outside the arena (CUDA context {1}, cuBLAS/cuDNN "
        "handles and the CUDA graph {2}{3}; measured on an H100 with CUDA 13.0): "
        "the device needs about {4}\n",
        plan::humanBytes(reserve), plan::humanBytes(kContext), plan::humanBytes(kHandles),
        opts.dataParallel ? ", NCCL communicator " + plan::humanBytes(kNccl) : std::string(),
        plan::humanBytes(arenaBytes + reserve));
  }

  void writePlanDumps(const PlannedStep &planned, std::optional<uint64_t> budget) {
    for (const std::string &path : opts.planOut) {
      std::string text;
      llvm::raw_string_ostream os(text);
      llvm::StringRef ext = llvm::sys::path::extension(path);
      if (ext == ".json")
        plan::writePlanJson(os, planned.plan, planned.steps, budget);
      else if (ext == ".csv")
        plan::writePlanCsv(os, planned.plan);
      else if (ext == ".html")
        plan::writePlanHtml(os, planned.plan, planned.steps, budget, planned.lowerBound,
                            llvm::sys::path::filename(opts.model).str() + " training step");
      else
        plan::writePlanText(os, planned.plan, budget);
      os.flush();
      writeFileAtomically(path, text);
    }
  }

  /// Writes what `write` prints to -o, or to stdout without one.
  int emitText(llvm::function_ref<void(llvm::raw_ostream &)> write) {
    if (opts.output.empty() || opts.output == "-") {
      write(llvm::outs());
      llvm::outs().flush();
    } else {
      writeFileAtomically(opts.output, write);
    }
    return kOk;
  }

  int emitIR(ModuleOp module) {
    return emitText([&](llvm::raw_ostream &os) { module.print(os); });
  }

  EmittedProgram emitProgram(func::FuncOp step, const EmitOptions &emit) {
    EmittedProgram program;
    if (opts.target == "cuda") {
      if (failed(emitCudaProgram(step, emit, program)))
        fail(kBadInput, opts.model + ": emitting CUDA failed (see above)");
      return program;
    }
    if (failed(emitCpuProgram(step, emit, program)))
      fail(kBadInput, opts.model + ": emitting C++ failed (see above)");
    return program;
  }

  /// The first tensor of the imported model whose bytes pass kMaxTensorBytes (or 2^64, where
  /// they would wrap around), described for the error; none when every tensor is smaller.
  /// The cap keeps every byte count and offset sum of the plan far from overflow (2^19
  /// tensors of 16 TiB still fit in 63 bits), and no device holds such a tensor anyway.
  static constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 44;
  static std::optional<std::string> oversizedTensor(ModuleOp module) {
    std::optional<std::string> found;
    auto check = [&](Value v) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (found || !type || !type.hasStaticShape())
        return;
      uint64_t bytes = std::max<uint64_t>(1, type.getElementTypeBitWidth() / 8);
      bool overflow = false;
      for (int64_t dim : type.getShape())
        bytes = llvm::SaturatingMultiply(bytes, uint64_t(dim), &overflow);
      if (!overflow && bytes <= kMaxTensorBytes)
        return;
      std::string shape;
      for (int64_t dim : type.getShape())
        shape += (shape.empty() ? "" : "x") + std::to_string(dim);
      Operation *owner = v.getDefiningOp() ? v.getDefiningOp() : v.getParentBlock()->getParentOp();
      found = "a tensor of shape " + shape + " (" + owner->getName().getStringRef().str() +
              ") would take more than 16 TiB";
    };
    module.walk([&](Operation *op) {
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            check(arg);
      for (Value result : op->getResults())
        check(result);
    });
    return found;
  }

  /// Refuses, before anything is compiled, an output path that would destroy something: the
  /// input model or its weights (the same file by another name too), or, for a training binary
  /// (renamed into place), an existing device, FIFO or socket. MLIR, source and plan outputs
  /// to such a file (/dev/null, /dev/stdout) are written in place, so they stay allowed. A
  /// missing directory is named now rather than by the linker after the whole compile.
  void refuseClobberingOutput(const std::string &path, llvm::StringRef flag, bool binary) {
    for (const std::string &input : {opts.model, opts.weights})
      if (!input.empty() && llvm::sys::fs::equivalent(path, input))
        fail(kBadInput, flag + " " + path + " is the input " +
                            (input == opts.model ? "model" : "weights file") +
                            "; writing there would destroy it: name another output file");
    llvm::sys::fs::file_status status;
    if (!llvm::sys::fs::status(path, status)) {
      if (llvm::sys::fs::is_directory(status))
        fail(kBadInput,
             flag + " " + path + " is a directory; name a file (e.g. " + path + "/train)");
      if (binary && !llvm::sys::fs::is_regular_file(status))
        fail(kBadInput, flag + " " + path +
                            " exists and is not a regular file (a device, FIFO or socket); "
                            "name a new file for the training binary");
      return;
    }
    llvm::StringRef parent = llvm::sys::path::parent_path(path);
    if (!parent.empty() && !llvm::sys::fs::is_directory(parent))
      fail(kBadInput,
           flag + " " + path + ": the directory " + parent + " does not exist; create it first");
    if (!llvm::sys::fs::can_write(parent.empty() ? "." : parent))
      fail(kBadInput, flag + " " + path + ": the directory " + (parent.empty() ? "." : parent) +
                          " is not writable");
  }

  /// Runs a compiler that writes `outputTemp`, then renames it to -o; on failure reports the
  /// first line of its log and leaves nothing behind.
  void runToolchain(const std::string &program, const std::vector<std::string> &argv,
                    const std::string &log, const std::string &outputTemp, const std::string &what,
                    TempFiles &temps) {
    std::vector<llvm::StringRef> args(argv.begin(), argv.end());
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                  llvm::StringRef(log)};
    std::string error;
    bool notStarted = false;
    llvm::sys::ProcessInfo child =
        llvm::sys::ExecuteNoWait(program, args, std::nullopt, redirects, 0, &error, &notStarted);
    int rc = -1;
    if (!notStarted) {
      temps.cleanup.child = child.Pid; // an interrupt stops it (interruptHandler)
      rc = llvm::sys::Wait(child, std::nullopt, &error).ReturnCode;
      temps.cleanup.child = 0;
    }
    if (rc != 0) {
      auto text = llvm::MemoryBuffer::getFile(log);
      std::string first = text ? (*text)->getBuffer().split('\n').first.str() : error;
      fail(kToolchain, "compiling " + what + " with " + program + " failed: " + first);
    }
    moveIntoPlace(outputTemp, temps);
  }

  /// Moves the linked binary from the temporary directory to -o: a rename on one file system;
  /// across file systems a copy next to -o, then a rename, so that -o never holds a partial
  /// binary.
  void moveIntoPlace(const std::string &built, TempFiles &temps) {
    if (!llvm::sys::fs::rename(built, opts.output))
      return;
    llvm::SmallString<256> copy;
    int fd;
    if (std::error_code ec = llvm::sys::fs::createUniqueFile(opts.output + ".tmp-%%%%%%", fd, copy))
      fail(kToolchain, opts.output + ": cannot write the training binary: " + ec.message());
    ::close(fd);
    std::snprintf(temps.cleanup.copy, sizeof(temps.cleanup.copy), "%s", copy.c_str());
    std::error_code ec = llvm::sys::fs::copy_file(built, copy);
    if (!ec)
      ec = llvm::sys::fs::setPermissions(copy, llvm::sys::fs::all_read | llvm::sys::fs::all_exe |
                                                   llvm::sys::fs::owner_write);
    if (!ec)
      ec = llvm::sys::fs::rename(copy, opts.output);
    if (ec)
      llvm::sys::fs::remove(copy);
    temps.cleanup.copy[0] = 0;
    if (ec)
      fail(kToolchain, opts.output + ": cannot write the training binary: " + ec.message());
  }

  /// Emits the step into a fresh temporary directory (removed with `temps`): the source file
  /// `sourceName` and the weight blob it embeds.
  void stageProgram(func::FuncOp step, EmitOptions &emit, llvm::StringRef prefix,
                    llvm::StringRef sourceName, TempFiles &temps, std::string &dir,
                    std::string &source) {
    llvm::SmallString<128> path;
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(prefix, path))
      fail(kToolchain, "cannot create a temporary directory: " + ec.message());
    dir = path.str().str();
    temps.adopt(dir);
    source = dir + "/" + sourceName.str();
    emit.initBlobPath = dir + "/weights.bin";
    EmittedProgram program = emitProgram(step, emit);
    std::error_code ec;
    {
      llvm::raw_fd_ostream s(source, ec);
      s << program.source;
    }
    if (!ec) {
      llvm::raw_fd_ostream w(emit.initBlobPath, ec, llvm::sys::fs::OF_None);
      w.write(program.initBlob.data(), program.initBlob.size());
    }
    if (ec)
      fail(kToolchain, "cannot write temporary files in " + dir + ": " + ec.message());
  }

  int buildBinary(func::FuncOp step, EmitOptions emit) {
    TempFiles temps;
    std::string dir, source;
    stageProgram(step, emit, "graphc", "step.cpp", temps, dir, source);

    const char *cxxEnv = std::getenv("GRAPHC_CXX");
    auto cxx = llvm::sys::findProgramByName(cxxEnv ? cxxEnv : "c++");
    if (!cxx)
      fail(kToolchain, "no C++ compiler found (looked for " +
                           std::string(cxxEnv ? cxxEnv : "c++") +
                           "); install g++ or set GRAPHC_CXX");
    std::string include = GRAPHC_RUNTIME_INCLUDE_DIR, libDir = GRAPHC_RUNTIME_LIB_DIR;
    if (const char *root = std::getenv("GRAPHC_RUNTIME_DIR")) {
      include = std::string(root) + "/include";
      libDir = std::string(root) + "/lib";
    }
    std::string outputTemp = dir + "/train"; // moved to -o once linked (moveIntoPlace)
    std::vector<std::string> argv = {*cxx, "-O2", "-std=c++17", "-I" + include, source,
                                     libDir + "/libgraphc_runtime_main.a",
                                     libDir + "/libgraphc_runtime.a"};
#ifdef GRAPHC_HAVE_MPI
    // --data-parallel: the MPI backend of comm.h (pulled in by the step's all-reduce calls), and
    // MPI itself.
    if (opts.dataParallel) {
      argv.push_back(libDir + "/libgraphc_runtime_mpi.a");
      llvm::SmallVector<llvm::StringRef> mpiLibs;
      llvm::StringRef(GRAPHC_MPI_LIBRARIES).split(mpiLibs, '|', -1, false);
      for (llvm::StringRef lib : mpiLibs)
        argv.push_back(lib.str());
    }
#endif
    for (const char *tail : {"-lopenblas", "-lpthread", "-lm", "-o"})
      argv.push_back(tail);
    argv.push_back(outputTemp);
    runToolchain(*cxx, argv, dir + "/cxx.log", outputTemp, "the training binary", temps);
    if (!opts.quiet)
      reportStream() << "wrote " << opts.output
                     << (opts.dataParallel
                             ? " (run it with mpirun -np " + std::to_string(opts.worldSize) +
                                   " " + opts.output + " --data X.npy --labels Y.npy)\n"
                             : std::string(" (run it with --data X.npy --labels Y.npy)\n"));
    return kOk;
  }

  /// --cuda-arch: "sm_90" (default), "90", or a comma-separated list such as "sm_80,sm_90".
  static std::vector<int> parseCudaArchs(llvm::StringRef text) {
    if (text.empty())
      text = "sm_90";
    llvm::SmallVector<llvm::StringRef> parts;
    text.split(parts, ',');
    std::vector<int> archs;
    for (llvm::StringRef part : parts) {
      llvm::StringRef digits = part.trim();
      digits.consume_front("sm_") || digits.consume_front("compute_");
      int arch = 0;
      if (digits.getAsInteger(10, arch) || arch < 75 || arch > 999)
        fail(kBadInput, "--cuda-arch=" + text.str() + ": '" + part.str() +
                            "' is not a CUDA architecture; use e.g. sm_90 or sm_80,sm_90 (CUDA 13 "
                            "builds sm_75 and newer)");
      archs.push_back(arch);
    }
    return archs;
  }

  /// nvcc: GRAPHC_NVCC, else nvcc on PATH, else /usr/local/cuda/bin/nvcc.
  static std::optional<std::string> findNvcc() {
    if (const char *env = std::getenv("GRAPHC_NVCC"))
      return llvm::sys::fs::can_execute(env) ? std::optional<std::string>(env) : std::nullopt;
    if (auto path = llvm::sys::findProgramByName("nvcc"))
      return *path;
    if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/nvcc"))
      return std::string("/usr/local/cuda/bin/nvcc");
    return std::nullopt;
  }

  /// --target=cuda: the emitted .cu through nvcc (SASS for each --cuda-arch, PTX for the
  /// newest), linked with the CPU target's main() (same command line) and runtime/cuda.
  int buildCudaBinary(func::FuncOp step, EmitOptions emit) {
    std::optional<std::string> nvcc = findNvcc();
    if (!nvcc)
      fail(kToolchain, std::string("--target=cuda needs the CUDA toolkit, and nvcc was not found") +
                           (std::getenv("GRAPHC_NVCC") ? " (GRAPHC_NVCC=" +
                                                             std::string(std::getenv("GRAPHC_NVCC")) +
                                                             " is not executable)"
                                                       : " (looked on PATH and in /usr/local/cuda/bin)") +
                           ": install the CUDA toolkit or set GRAPHC_NVCC; --compile-to=source "
                           "writes the .cu without it");
    std::string include = GRAPHC_RUNTIME_INCLUDE_DIR, libDir = GRAPHC_RUNTIME_LIB_DIR;
    std::string cudaInclude = include + "/../cuda/include";
    if (const char *root = std::getenv("GRAPHC_RUNTIME_DIR")) {
      include = cudaInclude = std::string(root) + "/include";
      libDir = std::string(root) + "/lib";
    }
    std::string cudaLib = libDir + "/libgraphc_cuda_runtime.a";
    if (!llvm::sys::fs::exists(cudaLib))
      fail(kToolchain, "--target=cuda: " + cudaLib +
                           " is missing: graphc was built without the CUDA toolkit (or cuDNN); "
                           "rebuild graphc where both are installed");

    TempFiles temps;
    std::string dir, source;
    stageProgram(step, emit, "graphc-cuda", "step.cu", temps, dir, source);
    std::string outputTemp = dir + "/train"; // moved to -o once linked (moveIntoPlace)
    std::vector<std::string> argv = {*nvcc, "-O2", "-std=c++17"};
    for (int arch : cudaArchs)
      argv.push_back(llvm::formatv("-gencode=arch=compute_{0},code=sm_{0}", arch).str());
    int newest = *std::max_element(cudaArchs.begin(), cudaArchs.end());
    argv.push_back(llvm::formatv("-gencode=arch=compute_{0},code=compute_{0}", newest).str());
    for (std::string arg : {"-I" + include, "-I" + cudaInclude, source,
                            libDir + "/libgraphc_runtime_main.a", cudaLib,
                            libDir + "/libgraphc_cuda_common.a", libDir + "/libgraphc_runtime.a",
                            std::string("-lcublas"), std::string("-lcudnn")})
      argv.push_back(arg);
#ifdef GRAPHC_HAVE_NCCL
    // --data-parallel: the NCCL backend (pulled in by the step's all-reduce calls), the MPI side
    // it shares with the CPU target (libgraphc_runtime_mpi.a's comm_mpi_job.o), NCCL and MPI.
    if (opts.dataParallel) {
      argv.push_back(libDir + "/libgraphc_cuda_nccl.a");
      argv.push_back(libDir + "/libgraphc_runtime_mpi.a");
      argv.push_back(GRAPHC_NCCL_LIBRARY);
      llvm::SmallVector<llvm::StringRef> mpiLibs;
      llvm::StringRef(GRAPHC_MPI_LIBRARIES).split(mpiLibs, '|', -1, false);
      for (llvm::StringRef lib : mpiLibs)
        argv.push_back(lib.str());
    }
#endif
    for (const char *tail : {"-lopenblas", "-lpthread", "-o"})
      argv.push_back(tail);
    argv.push_back(outputTemp);
    runToolchain(*nvcc, argv, dir + "/nvcc.log", outputTemp, "the CUDA training binary", temps);
    if (!opts.quiet)
      reportStream() << "wrote " << opts.output << " (CUDA, sm_" << newest
                     << (opts.dataParallel
                             ? "; run it with mpirun -np " + std::to_string(opts.worldSize) +
                                   ", one rank per GPU, " + opts.output +
                                   " --data X.npy --labels Y.npy)\n"
                             : std::string("; run it on a GPU with --data X.npy --labels Y.npy)\n"));
    return kOk;
  }

  Options opts;
  const DeviceProfile *device = nullptr;
  std::vector<int> cudaArchs; // --cuda-arch, parsed
  uint64_t cudnnWorkspaceLimit = 0; // --cudnn-workspace-limit, parsed
  int64_t microBatches = 1; // the split the next compile uses
  uint64_t bucketBytes = 25u << 20; // --bucket-size, parsed
  bool shardState = false;          // the next compile shards the optimizer state (ZeRO)
  bool bucketViews = false;         // the next compile plans gradients inside their buckets
  bool offloadState = false;        // the next compile keeps the optimizer state in host memory
  std::string precision = "fp32"; // the precision the next compile uses (auto may switch)
  bool silent = false; // trial compiles print no diagnostics
  // The next trial compiles only ask whether the step fits (batch searches, the infeasible
  // error's alternatives): the remat local search, which only lowers the FLOPs of a plan that
  // fits already, is skipped (ResNet-50 at 30% with --no-remat-segments: minutes otherwise).
  bool fitQuestionOnly = false;
  // Why the last trial import failed (an export whose Reshape constants fix the batch fails to
  // import at any other batch), so that a batch search can say so instead of "nothing fits".
  std::string trialImportError;
  int64_t trialImportBatch = 0; // the batch it was imported at
  /// The reason a batch search found nothing, when the import failed rather than the budget.
  std::string importBlocksBatchSearch() const {
    if (trialImportError.empty())
      return "";
    llvm::StringRef why = trialImportError;
    if (why.starts_with(opts.model + ": "))
      why = why.drop_front(opts.model.size() + 2);
    return llvm::formatv("the model does not import at --batch={0} ({1})", trialImportBatch, why)
        .str();
  }
};

} // namespace

int runGraphcDriver(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  remat::useOneBlasThread();
  cl::OptionCategory category("graphc options");
  cl::opt<std::string> model(cl::Positional, cl::desc("<model.onnx|model.mlir>"), cl::Required,
                             cl::cat(category));
  cl::opt<std::string> output("o", cl::desc("output file (training binary, or IR/source for "
                                            "earlier phases; stdout when absent)"),
                              cl::value_desc("OUT"), cl::cat(category));
  cl::opt<std::string> loss("loss", cl::desc("sparse_categorical_crossentropy | "
                                             "categorical_crossentropy | binary_crossentropy | mse"),
                            cl::init("sparse_categorical_crossentropy"), cl::cat(category));
  cl::opt<std::string> optimizer("optimizer", cl::desc("sgd | momentum | adam"), cl::init("sgd"),
                                 cl::cat(category));
  cl::opt<double> lr("lr", cl::desc("learning rate"), cl::init(0.01), cl::cat(category));
  cl::opt<double> momentum("momentum", cl::desc("momentum factor (--optimizer=momentum)"),
                           cl::init(0.9), cl::cat(category));
  cl::opt<int64_t> batch("batch", cl::desc("batch size (overrides the model's first input dimension)"),
                         cl::init(0), cl::cat(category));
  cl::opt<std::string> target("target", cl::desc("cpu | cuda"), cl::init("cpu"), cl::cat(category));
  cl::opt<std::string> budget("budget",
                              cl::desc("device memory the plan may use: bytes, or with "
                                       "a KiB/MiB/GiB/TiB suffix"),
                              cl::cat(category));
  cl::opt<std::string> compileTo("compile-to", cl::desc("import | training | planned | source | binary"),
                                 cl::init("binary"), cl::cat(category));
  cl::list<std::string> planOut(
      "plan-out", cl::desc("write the memory plan (.txt, .json, .csv, .html); repeatable"),
      cl::cat(category));
  cl::opt<bool> noReuse("no-reuse", cl::desc("give every buffer its own bytes (testing)"),
                        cl::cat(category));
  cl::opt<bool> noSchedule("no-schedule", cl::desc("keep the autodiff op order (no memory-aware "
                                                  "reordering)"),
                           cl::cat(category));
  cl::opt<bool> noFuseAttention(
      "no-fuse-attention",
      cl::desc("keep attention as batch_matmul / softmax / dropout / batch_matmul, whose "
               "probabilities stay alive until the backward pass (testing, comparisons)"),
      cl::cat(category));
  cl::opt<bool> noSplitFilterGradients(
      "no-split-filter-gradients",
      cl::desc("--budget: never split a filter gradient that reads a channel concatenation "
               "over its parts (the split adds the same sums in another order, so the step "
               "is no longer bit-identical to the unbudgeted one)"),
      cl::cat(category));
  cl::opt<bool> noSplitDataGradients(
      "no-split-data-gradients",
      cl::desc("keep a convolution's data gradient whole when only channel slices read it (the "
               "backward of a concatenation), instead of one data gradient per slice (testing, "
               "comparisons)"),
      cl::cat(category));
  cl::opt<bool> noStageNextBatch(
      "no-stage-next-batch",
      cl::desc("--target=cuda: do not plan a staging buffer for the next batch; its upload then "
               "precedes each step instead of overlapping the one before"),
      cl::cat(category));
  cl::opt<int64_t> attentionQueryBlock(
      "attention-query-block",
      cl::desc("query rows per block of the fused attention kernels (default: the most rows "
               "whose scores are no larger than the attention's output)"),
      cl::init(0), cl::cat(category));
  cl::opt<bool> noRemat("no-remat", cl::desc("do not rematerialize to fit --budget"),
                        cl::cat(category));
  cl::opt<std::string> remat("remat", cl::desc("how to choose what to recompute for --budget: "
                                               "heuristic | exact (0/1 program, CBC) | auto "
                                               "(exact for small graphs)"),
                             cl::init("heuristic"), cl::cat(category));
  cl::opt<double> rematTimeLimit("remat-time-limit",
                                 cl::desc("seconds the exact remat solver may take (default 60)"),
                                 cl::init(60), cl::cat(category));
  cl::opt<bool> noRematSegments(
      "no-remat-segments",
      cl::desc("recompute values one by one only, never whole segments (blocks recomputed "
               "from their inputs)"),
      cl::cat(category));
  cl::opt<bool> noRematSplit(
      "no-remat-split",
      cl::desc("never recompute a value twice (once for the backward readers before the widest "
               "gap between them, once for those after it), even when nothing else fits"),
      cl::cat(category));
  cl::opt<bool> noRematCheapLate(
      "no-remat-cheap-late",
      cl::desc("hold a recomputed value for all its backward readers, even "
               "where those after "
               "the widest gap between them could have it recomputed by cheap "
               "ops from values "
               "live there"),
      cl::cat(category));
  cl::opt<bool> noRematSeeds(
      "no-remat-seeds",
      cl::desc("the remat heuristic does not try the exact program's choices at fixed levels "
               "(its exact seeds) after its own search"),
      cl::cat(category));
  cl::opt<bool> noRematLocalSearch(
      "no-remat-local-search",
      cl::desc("keep the remat search's result as it is: no local search dropping the remats "
               "it no longer needs or swapping the dearest for cheaper ones"),
      cl::cat(category));
  cl::opt<int64_t> microBatchCount("micro-batches",
                                   cl::desc("split each batch into N micro-batches with gradient "
                                            "accumulation (default: chosen to fit --budget)"),
                                   cl::init(1), cl::cat(category));
  cl::opt<bool> noMicroBatching("no-micro-batching",
                                cl::desc("never split the batch to fit --budget"),
                                cl::cat(category));
  cl::opt<bool> maxBatch("max-batch", cl::desc("print the largest batch that fits --budget, "
                                               "with each allowed cure, and exit"),
                         cl::cat(category));
  cl::opt<std::string> deviceName("device", cl::desc("cost-model profile: h100 | h200 | "
                                                     "a100-80gb | cpu (default: by --target)"),
                                  cl::cat(category));
  cl::opt<std::string> precision(
      "precision",
      cl::desc("fp32 | bf16 | fp16 | auto: run matmul and convolution in 16 bit (auto: bf16 "
               "only when --budget needs it)"),
      cl::init("fp32"), cl::cat(category));
  cl::opt<int64_t> lossScaleGrowthInterval(
      "loss-scale-growth-interval",
      cl::desc("--precision=fp16: clean steps after which the loss scale doubles"),
      cl::init(2000), cl::cat(category));
  cl::opt<bool> printPlan("print-plan", cl::desc("print the plan table after the fit report"),
                          cl::cat(category));
  cl::opt<bool> quiet("quiet", cl::desc("no fit report"), cl::cat(category));
  cl::opt<std::string> weights("weights", cl::desc("Keras weights: model.weights.h5 (Keras 3) or "
                                                   "a tf.keras 2 .h5"),
                               cl::value_desc("FILE"), cl::cat(category));
  cl::list<std::string> inputShape(
      "input-shape",
      cl::desc("Keras: the input's dims after the batch, channels last (for None dims), e.g. "
               "32,32,3; once per input, in input order, for a model with several"),
      cl::cat(category));
  cl::opt<std::string> offload(
      "offload",
      cl::desc("none (default) | optimizer: keep the momentum/Adam state in host memory, outside "
               "the device arena and --budget | auto: only when nothing else fits --budget"),
      cl::init("none"), cl::cat(category));
  cl::opt<std::string> freeze(
      "freeze",
      cl::desc("keep the parameters whose names match this regex (POSIX extended, matched "
               "anywhere in the name) at their initial values: no gradient, update or optimizer "
               "state, e.g. --freeze='^net\\.layer[12]\\.' to fine-tune the rest, or a fixed "
               "buffer exported as an initializer"),
      cl::value_desc("REGEX"), cl::cat(category));
  cl::opt<std::string> dataInput(
      "data-input",
      cl::desc("ONNX exported with export_params=False: the graph inputs that are data, "
               "comma-separated (the other inputs without an initializer are parameters; "
               "default: those not named like a parameter)"),
      cl::value_desc("NAME[,NAME...]"), cl::cat(category));
  cl::opt<bool> fromLogits("from-logits", cl::cat(category),
                           cl::desc("the model outputs logits (PyTorch's CrossEntropyLoss "
                                    "convention): the crossentropy applies the softmax itself"));
  cl::opt<int64_t> ignoreIndex(
      "ignore-index",
      cl::desc("--loss=sparse_categorical_crossentropy: labels equal to N add nothing to the "
               "loss, which is the mean over the other labels (PyTorch's "
               "CrossEntropyLoss(ignore_index=N), e.g. -100 for padding; Keras's ignore_class)"),
      cl::value_desc("N"), cl::cat(category));
  cl::list<double> classWeights(
      "class-weights", cl::CommaSeparated,
      cl::desc("--loss=sparse_categorical_crossentropy: one weight per class, W0,W1,...: each "
               "label's loss is weighted by its class's, and the mean divided by the weights of "
               "the batch's labels (PyTorch's CrossEntropyLoss(weight=...))"),
      cl::value_desc("W0,W1,..."), cl::cat(category));
  cl::list<double> posWeight(
      "pos-weight", cl::CommaSeparated,
      cl::desc("--loss=binary_crossentropy: the weight of the positive targets, one value or one "
               "per index of the prediction's last axis: -(P y log p + (1 - y) log(1 - p)) "
               "(PyTorch's BCEWithLogitsLoss(pos_weight=P))"),
      cl::value_desc("P[,P...]"), cl::cat(category));
  cl::opt<bool> sampleWeights(
      "sample-weights", cl::cat(category),
      cl::desc("the training binary takes one weight per sample (its --sample-weights W.npy, "
               "1 for every sample without it): each sample's loss is scaled by its weight and "
               "the mean's divisor stays the same (Keras's fit(sample_weight=W), PyTorch's "
               "(loss(reduction='none') * W).mean())"));
  cl::opt<bool> temporalSampleWeights(
      "temporal-sample-weights", cl::cat(category),
      cl::desc("as --sample-weights with one weight per label position: the binary's "
               "--sample-weights W.npy is [N, positions...] for a [batch, positions..., classes] "
               "prediction (Keras's temporal sample weights, a per-token weight)"));
  cl::opt<double> labelSmoothing(
      "label-smoothing",
      cl::desc("the crossentropy losses' label smoothing F in [0, 1): class targets become "
               "(1 - F) t + F / classes, binary targets (1 - F) t + F / 2 (PyTorch's "
               "CrossEntropyLoss(label_smoothing=F), Keras's label_smoothing)"),
      cl::value_desc("F"), cl::cat(category));
  cl::opt<std::string> trainOutput(
      "train-output",
      cl::desc("ONNX with several graph outputs (GoogLeNet's auxiliary heads in training mode): "
               "the one to train; the nodes and parameters only the others need are dropped"),
      cl::value_desc("NAME"), cl::cat(category));
  cl::opt<uint64_t> seed("seed", cl::desc("seed of the dropout masks (counter-based: a recomputed dropout "
                                  "repeats its mask), and of the initial weights of Keras models "
                                  "without --weights and ONNX parameter inputs"),
                         cl::init(0), cl::cat(category));
  cl::opt<bool> verbose("verbose", cl::desc("list the supported Keras layers or ONNX ops with an "
                                            "import error"),
                        cl::cat(category));
  cl::opt<bool> dataParallel("data-parallel",
                             cl::desc("data parallelism: a binary that runs as --world-size ranks "
                                      "(mpirun -np N), each on its share of --batch, averaging "
                                      "gradients"),
                             cl::cat(category));
  cl::opt<int64_t> worldSize("world-size", cl::desc("--data-parallel: the number of ranks"),
                             cl::init(0), cl::cat(category));
  cl::opt<std::string> bucketSize("bucket-size",
                                  cl::desc("--data-parallel: most bytes of one gradient bucket "
                                           "(default 25MiB)"),
                                  cl::init("25MiB"), cl::cat(category));
  cl::opt<std::string> bucketView(
      "gradient-as-bucket-view",
      cl::desc("--data-parallel: plan the gradients inside their buckets, so that nothing is "
               "copied into a bucket or out of it (DDP's gradient_as_bucket_view): auto (when "
               "--budget needs it) | on | off"),
      cl::init("auto"), cl::cat(category));
  cl::opt<std::string> zero("zero",
                            cl::desc("--data-parallel: shard the momentum/Adam state over the "
                                     "ranks (ZeRO-1): 0 | 1 | auto (when --budget needs it)"),
                            cl::init("auto"), cl::cat(category));
  cl::opt<std::string> cudaArch("cuda-arch", cl::desc("--target=cuda: GPU architectures, e.g. "
                                                      "sm_90 (default) or sm_80,sm_90"),
                                cl::cat(category));
  cl::opt<std::string> cudnnWorkspaceLimit(
      "cudnn-workspace-limit",
      cl::desc("--target=cuda: the most bytes one convolution's cuDNN workspace may grow to, "
               "taken from arena bytes free at its step, so the arena does not grow (default "
               "1GiB; 0: one im2col tile, what graphc's own kernels need)"),
      cl::init("1GiB"), cl::cat(category));
  cl::opt<int64_t> cudaReductionBlocks(
      "cuda-reduction-blocks",
      cl::desc("--target=cuda: the blocks that a batch norm's or bias gradient's kernels aim "
               "for, each channel's sum spread over several (default 528: 4 per multiprocessor "
               "of an H100; 0: one block per channel)"),
      cl::init(528), cl::cat(category));
  cl::opt<std::string> cudaRowKernels(
      "cuda-row-kernels",
      cl::desc("--target=cuda: how the fused attention's softmax rows and layer norms' rows are "
               "computed: warp (default: a warp per row, coalesced) or thread (a thread per row, "
               "the older kernels, to measure against)"),
      cl::init("warp"), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "graphc " GRAPHC_VERSION " (MLIR/LLVM " LLVM_VERSION_STRING ")\n";
  });
  if (!cl::ParseCommandLineOptions(argc, argv, "graphc: compile a model's training step for a "
                                               "memory budget\n",
                                   &llvm::errs()))
    return kBadInput;

  Options opts;
  opts.model = model;
  opts.output = output;
  opts.loss = loss;
  opts.optimizer = optimizer;
  opts.lr = lr;
  opts.momentum = momentum;
  opts.batch = batch;
  opts.batchSet = batch.getNumOccurrences() > 0;
  opts.budgetSet = budget.getNumOccurrences() > 0;
  opts.target = target;
  opts.budget = budget;
  opts.compileTo = compileTo;
  opts.planOut.assign(planOut.begin(), planOut.end());
  opts.noReuse = noReuse;
  opts.printPlan = printPlan;
  opts.noSchedule = noSchedule;
  opts.noFuseAttention = noFuseAttention;
  opts.noSplitDataGradients = noSplitDataGradients;
  opts.noSplitFilterGradients = noSplitFilterGradients;
  opts.noStageNextBatch = noStageNextBatch;
  opts.attentionQueryBlock = attentionQueryBlock;
  opts.noRemat = noRemat;
  opts.remat = remat;
  opts.rematTimeLimit = rematTimeLimit;
  opts.rematSegments = !noRematSegments;
  opts.rematSplit = !noRematSplit;
  opts.rematCheapLate = !noRematCheapLate;
  opts.rematLocalSearch = !noRematLocalSearch;
  opts.rematSeeds = !noRematSeeds;
  opts.maxBatch = maxBatch;
  opts.microBatches = microBatchCount;
  opts.noMicroBatching = noMicroBatching;
  opts.device = deviceName;
  opts.precision = precision;
  opts.lossScaleGrowthInterval = lossScaleGrowthInterval;
  opts.quiet = quiet;
  opts.weights = weights;
  opts.inputShapes.assign(inputShape.begin(), inputShape.end());
  opts.dataInput = dataInput;
  opts.trainOutput = trainOutput;
  opts.freeze = freeze;
  opts.fromLogits = fromLogits;
  if (ignoreIndex.getNumOccurrences() > 0)
    opts.ignoreIndex = ignoreIndex;
  if (labelSmoothing.getNumOccurrences() > 0)
    opts.labelSmoothing = labelSmoothing;
  opts.classWeights.assign(classWeights.begin(), classWeights.end());
  opts.posWeight.assign(posWeight.begin(), posWeight.end());
  opts.sampleWeights = sampleWeights;
  opts.temporalSampleWeights = temporalSampleWeights;
  opts.offload = offload;
  opts.seed = seed;
  opts.verbose = verbose;
  opts.lossSet = loss.getNumOccurrences() > 0;
  opts.optimizerSet = optimizer.getNumOccurrences() > 0;
  opts.lrSet = lr.getNumOccurrences() > 0;
  opts.momentumSet = momentum.getNumOccurrences() > 0;
  opts.cudaArch = cudaArch;
  opts.cudnnWorkspaceLimit = cudnnWorkspaceLimit;
  opts.cudaReductionBlocks = cudaReductionBlocks;
  opts.cudaRowKernels = cudaRowKernels;
  opts.dataParallel = dataParallel;
  opts.worldSize = worldSize;
  opts.bucketSize = bucketSize;
  opts.bucketView = bucketView;
  opts.bucketSizeGiven = bucketSize.getNumOccurrences() > 0;
  opts.zero = zero;
  try {
    return Driver(std::move(opts)).run();
  } catch (const Failure &f) {
    return f.code;
  }
}

} // namespace graphc
