// main() of every training binary graphc produces. The generated code contributes only
// `graphc_program` (program.h); this file owns the rest: the command line, the one arena
// allocation, parameter initialisation (init blob, glorot-uniform or --init-weights), opening
// and validating the data before any step runs, a prefetch thread that gathers and converts the
// next batch from memory-mapped .npy files while the current step runs, the step loop with
// progress output (a redrawn bar on a terminal, plain lines otherwise) and --log-json records,
// held-out evaluation, checkpoints and --resume, and --save-weights.
//
// Exit codes: 0 success (also --help and --describe), 2 bad command line, input files or
// checkpoint, 3 internal or I/O failure (inconsistent program, arena allocation, writing weights
// or checkpoints), 4 a non-finite loss.
//
// Allocation discipline: everything is allocated before step 1 (the arena, two staging buffers,
// the snapshot buffer for evaluation, the permutation); the loop itself allocates nothing unless
// --log-json (one small JSON record per step) or --checkpoint (the encoded checkpoint) is given.
#include "graphc/runtime/arena_poison.h"
#include "graphc/runtime/checkpoint.h"
#include "graphc/runtime/comm.h"
#include "graphc/runtime/device.h"
#include "graphc/runtime/format_bytes.h"
#include "graphc/runtime/kernels.h"
#include "graphc/runtime/npy.h"
#include "graphc/runtime/parallel.h"
#include "graphc/runtime/program.h"
#include "graphc/runtime/staging.h"

#include <nlohmann/json.hpp>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace graphc::rt;

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitInternal = 3;
constexpr int kExitNonFinite = 4;

const char *kUsage =
    "usage: %s --data X.npy --labels Y.npy [--epochs N | --steps N] [--seed S] [--shuffle]\n"
    "          [--last-batch=drop|pad] [--validation-split F | --validation-data X.npy\n"
    "          --validation-labels Y.npy] [--checkpoint DIR [--checkpoint-every N] [--keep K]\n"
    "          [--resume]] [--log-json FILE] [--save-weights DIR] [--init-weights DIR]\n"
    "          [--sample-weights W.npy [--validation-sample-weights W.npy]]\n"
    "          [--collective-timeout S] [--describe] [--help]\n"
    "\n"
    "Trains model '%s' (batch %" PRId64 ") with its compiled training step.\n"
    "  --data X.npy         samples [N, ...sample dims]: float32, or float16/float64/int64/\n"
    "                       int32/uint8 converted per batch; memory-mapped, never read whole.\n"
    "                       A model with several data inputs takes one --data per input, in\n"
    "                       the order --describe lists them (--validation-data likewise)\n"
    "  --labels Y.npy       labels with N rows: class indices (int64/int32/uint8; one per\n"
    "                       sample, or per position for a [batch, S.., classes] prediction)\n"
    "                       or targets\n"
    "  --epochs N           run N passes over the data (default 1); one line (or a progress\n"
    "                       bar on a terminal) per epoch\n"
    "  --steps N            run exactly N steps instead; prints 'step T/N loss L'\n"
    "  --seed S             seed of glorot initialisation and --shuffle (default 0)\n"
    "  --shuffle            visit the samples of each epoch in a random order (else file order)\n"
    "  --last-batch=MODE    drop (default): skip a partial last batch; pad: fill it with samples\n"
    "                       from the start of the epoch (they count in the loss)\n"
    "  --validation-split F hold out the last fraction F of the samples; evaluated per epoch\n"
    "  --validation-data X.npy, --validation-labels Y.npy   a separate held-out set instead\n"
    "  --sample-weights W.npy   binaries compiled with graphc --sample-weights: one weight per\n"
    "                       sample [N] (Keras's fit(sample_weight)); each sample's loss is\n"
    "                       scaled by it, the mean's divisor unchanged. Without it every\n"
    "                       weight is 1. --validation-split holds out its last rows too\n"
    "  --validation-sample-weights W.npy   the weights of --validation-data (else 1)\n"
    "  --checkpoint DIR     write checkpoints to DIR (after every epoch, and at the end)\n"
    "  --checkpoint-every N ...every N steps instead\n"
    "  --keep K             keep the newest K checkpoints (default 3)\n"
    "  --resume             continue from the newest valid checkpoint in DIR\n"
    "  --log-json FILE      append one JSON record per step, epoch and checkpoint to FILE\n"
    "  --save-weights DIR   write every parameter to DIR/<name>.npy after training\n"
    "  --init-weights DIR   read every parameter from DIR/<name>.npy instead of the defaults\n"
    "  --collective-timeout S   data-parallel binaries: abort the job when a collective waits\n"
    "                       longer than S seconds for the other ranks (default 300)\n"
    "  --describe           print the arena layout and exit\n"
    "  --help               print this help and exit\n";

struct Options {
  std::vector<std::string> data, valData; // one file per data input, in the program's order
  std::string labels, saveDir, initDir;
  std::string valLabels, checkpointDir, logJson;
  std::string sampleWeights, valSampleWeights; // --sample-weights, --validation-sample-weights
  int64_t epochs = 1, steps = 0, checkpointEvery = 0, keep = 3;
  double valSplit = 0.0;
  double collectiveTimeout = 300.0;
  bool collectiveTimeoutGiven = false;
  bool stepsMode = false, epochsGiven = false, padLastBatch = false, resume = false;
  uint64_t seed = 0;
  bool shuffle = false, describe = false, help = false;
};

bool parseUnsigned(const std::string &text, uint64_t &out) {
  if (text.empty() || text.size() > 20)
    return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    const uint64_t next = v * 10 + static_cast<uint64_t>(c - '0');
    if (next / 10 != v)
      return false;
    v = next;
  }
  out = v;
  return true;
}

bool parsePositive(const std::string &flag, const std::string &text, int64_t &out,
                   std::string &error) {
  uint64_t v;
  if (!parseUnsigned(text, v) || v == 0 || v > static_cast<uint64_t>(INT32_MAX)) {
    error = flag + " expects a positive integer, got '" + text + "'";
    return false;
  }
  out = static_cast<int64_t>(v);
  return true;
}

/// A fraction strictly between 0 and 1, as plain decimal text ("0.2", ".25").
bool parseFraction(const std::string &text, double &out) {
  if (text.empty() || text.size() > 32)
    return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || c == '.'))
      return false;
  char *end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (!end || *end != '\0' || !(v > 0.0 && v < 1.0))
    return false;
  out = v;
  return true;
}

bool parseArgs(int argc, char **argv, Options &opt, std::string &error) {
  bool everyGiven = false, keepGiven = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool hasInlineValue = false;
    if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        hasInlineValue = true;
      }
    }
    auto needValue = [&](std::string &dst) {
      if (hasInlineValue) {
        dst = value;
      } else if (i + 1 < argc) {
        dst = argv[++i];
      } else {
        error = arg + " needs a value";
        return false;
      }
      if (dst.empty()) {
        error = arg + " needs a non-empty value";
        return false;
      }
      return true;
    };
    auto noValue = [&]() {
      if (hasInlineValue) {
        error = arg + " takes no value";
        return false;
      }
      return true;
    };
    std::string v;
    if (arg == "--help" || arg == "-h") {
      opt.help = true;
    } else if (arg == "--data") {
      if (!needValue(v))
        return false;
      opt.data.push_back(v);
    } else if (arg == "--labels") {
      if (!needValue(opt.labels))
        return false;
    } else if (arg == "--validation-data") {
      if (!needValue(v))
        return false;
      opt.valData.push_back(v);
    } else if (arg == "--validation-labels") {
      if (!needValue(opt.valLabels))
        return false;
    } else if (arg == "--sample-weights") {
      if (!needValue(opt.sampleWeights))
        return false;
    } else if (arg == "--validation-sample-weights") {
      if (!needValue(opt.valSampleWeights))
        return false;
    } else if (arg == "--collective-timeout") {
      if (!needValue(v))
        return false;
      char *end = nullptr;
      opt.collectiveTimeout = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(opt.collectiveTimeout > 0) ||
          !std::isfinite(opt.collectiveTimeout)) {
        error = "--collective-timeout expects a positive number of seconds, got '" + v + "'";
        return false;
      }
      opt.collectiveTimeoutGiven = true;
    } else if (arg == "--validation-split") {
      if (!needValue(v))
        return false;
      if (!parseFraction(v, opt.valSplit)) {
        error = "--validation-split expects a fraction between 0 and 1 (exclusive), got '" + v +
                "'";
        return false;
      }
    } else if (arg == "--last-batch") {
      if (!needValue(v))
        return false;
      if (v != "drop" && v != "pad") {
        error = "--last-batch expects 'drop' or 'pad', got '" + v + "'";
        return false;
      }
      opt.padLastBatch = v == "pad";
    } else if (arg == "--checkpoint") {
      if (!needValue(opt.checkpointDir))
        return false;
    } else if (arg == "--checkpoint-every") {
      if (!needValue(v) || !parsePositive(arg, v, opt.checkpointEvery, error))
        return false;
      everyGiven = true;
    } else if (arg == "--keep") {
      if (!needValue(v) || !parsePositive(arg, v, opt.keep, error))
        return false;
      keepGiven = true;
    } else if (arg == "--resume") {
      if (!noValue())
        return false;
      opt.resume = true;
    } else if (arg == "--log-json") {
      if (!needValue(opt.logJson))
        return false;
    } else if (arg == "--save-weights") {
      if (!needValue(opt.saveDir))
        return false;
    } else if (arg == "--init-weights") {
      if (!needValue(opt.initDir))
        return false;
    } else if (arg == "--epochs") {
      if (!needValue(v) || !parsePositive(arg, v, opt.epochs, error))
        return false;
      opt.epochsGiven = true;
    } else if (arg == "--steps") {
      if (!needValue(v) || !parsePositive(arg, v, opt.steps, error))
        return false;
      opt.stepsMode = true;
    } else if (arg == "--seed") {
      if (!needValue(v))
        return false;
      if (!parseUnsigned(v, opt.seed)) {
        error = "--seed expects a non-negative integer, got '" + v + "'";
        return false;
      }
    } else if (arg == "--shuffle") {
      if (!noValue())
        return false;
      opt.shuffle = true;
    } else if (arg == "--describe") {
      if (!noValue())
        return false;
      opt.describe = true;
    } else if (arg.rfind("-", 0) == 0) {
      error = "unknown option '" + arg + "' (see --help)";
      return false;
    } else {
      error = "unexpected argument '" + arg + "' (see --help)";
      return false;
    }
  }
  if (opt.stepsMode && opt.epochsGiven) {
    error = "--epochs and --steps are mutually exclusive";
    return false;
  }
  if (opt.valSplit > 0 && (!opt.valData.empty() || !opt.valLabels.empty())) {
    error = "--validation-split and --validation-data/--validation-labels are mutually exclusive";
    return false;
  }
  if (!opt.valSampleWeights.empty() && opt.valData.empty()) {
    error = "--validation-sample-weights needs --validation-data (with --validation-split the "
            "held-out samples keep their --sample-weights)";
    return false;
  }
  if (opt.valData.empty() != opt.valLabels.empty()) {
    error = opt.valData.empty() ? "--validation-labels needs --validation-data"
                                : "--validation-data needs --validation-labels";
    return false;
  }
  if (opt.checkpointDir.empty() && (everyGiven || keepGiven || opt.resume)) {
    error = std::string(opt.resume ? "--resume" : everyGiven ? "--checkpoint-every" : "--keep") +
            " needs --checkpoint DIR";
    return false;
  }
  return true;
}

const char *kindName(TensorKind k) {
  switch (k) {
  case TensorKind::Parameter: return "parameter";
  case TensorKind::Gradient: return "gradient";
  case TensorKind::OptimizerState: return "optimizer_state";
  case TensorKind::Activation: return "activation";
  case TensorKind::Temporary: return "temporary";
  case TensorKind::Workspace: return "workspace";
  case TensorKind::Input: return "input";
  }
  return "?";
}

const char *roleName(TensorRole r) {
  switch (r) {
  case TensorRole::None: return "-";
  case TensorRole::Parameter: return "parameter";
  case TensorRole::State: return "state";
  case TensorRole::Data: return "data";
  case TensorRole::Labels: return "labels";
  case TensorRole::Step: return "step";
  case TensorRole::Loss: return "loss";
  case TensorRole::Prediction: return "prediction";
  case TensorRole::Staging:
    return "staging";
  case TensorRole::SampleWeights:
    return "sample_weights";
  }
  return "?";
}
const char *lossName(LossKind k) {
  switch (k) {
  case LossKind::SparseCategoricalCrossentropy: return "sparse_categorical_crossentropy";
  case LossKind::CategoricalCrossentropy: return "categorical_crossentropy";
  case LossKind::BinaryCrossentropy: return "binary_crossentropy";
  case LossKind::MeanSquaredError: return "mean_squared_error";
  }
  return "?";
}

const char *dtypeName(DType d) { return d == DType::F32 ? "float32" : "int64"; }
size_t elementSize(DType d) { return d == DType::F32 ? 4 : 8; }

std::vector<int64_t> dimsOf(const TensorInfo &t) {
  const int rank = t.rank < 0 ? 0 : (t.rank > kMaxRank ? kMaxRank : t.rank);
  return std::vector<int64_t>(t.dims, t.dims + rank);
}

int64_t product(const std::vector<int64_t> &v, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i)
    p *= v[i];
  return p;
}

/// Parameter names become file names: '/' and anything outside [A-Za-z0-9._:-] turn into '_'.
std::string sanitize(const char *name) {
  std::string s = name ? name : "";
  for (char &c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok)
      c = '_';
  }
  return s;
}

/// A data file's expected shape: any number of samples, then the tensor's sample dimensions.
std::string expectedShape(const std::vector<int64_t> &dims) {
  std::string s = "[*";
  for (size_t i = 1; i < dims.size(); ++i)
    s += "," + std::to_string(dims[i]);
  return s + "]";
}

/// The data inputs in the order --data takes them: "input_ids [*,16] (token ids < 100),
/// attention_mask [*,16]".
std::string dataInputsText(const Program &prog) {
  std::string text;
  for (int i = 0; i < prog.numTensors; ++i) {
    const TensorInfo &t = prog.tensors[i];
    if (t.role != TensorRole::Data)
      continue;
    text += (text.empty() ? "" : ", ") + std::string(t.name ? t.name : "?") + " " +
            expectedShape(dimsOf(t));
    if (t.indexLimit > 0)
      text += " (token ids < " + std::to_string(t.indexLimit) + ")";
  }
  return text;
}

int describe(const Program &prog) {
  struct Row {
    std::string cols[7];
  };
  std::vector<Row> rows;
  rows.push_back({{"name", "kind", "role", "dtype", "shape", "offset", "bytes"}});
  for (int i = 0; i < prog.numTensors; ++i) {
    const TensorInfo &t = prog.tensors[i];
    rows.push_back({{t.name ? t.name : "", kindName(t.kind), roleName(t.role), dtypeName(t.dtype),
                     formatShape(dimsOf(t)), std::to_string(t.offset), std::to_string(t.bytes)}});
  }
  size_t width[7] = {};
  for (const Row &r : rows)
    for (int c = 0; c < 7; ++c)
      width[c] = std::max(width[c], r.cols[c].size());
  std::printf("model %s  batch %" PRId64 "  loss %s  tensors %d\n", prog.modelName, prog.batch,
              lossName(prog.loss), prog.numTensors);
  for (const Row &r : rows) {
    // Text columns left-aligned, offsets and sizes right-aligned.
    for (int c = 0; c < 7; ++c) {
      const int w = static_cast<int>(width[c]);
      if (c < 5)
        std::printf("%-*s  ", w, r.cols[c].c_str());
      else
        std::printf(c == 6 ? "%*s" : "%*s  ", w, r.cols[c].c_str());
    }
    std::printf("\n");
  }
  std::printf("arena %" PRIu64 " bytes (alignment %" PRIu64 ")\n", prog.arenaBytes,
              prog.alignment);
  std::printf("data inputs (one --data each, in this order): %s\n", dataInputsText(prog).c_str());
  for (int i = 0; i < prog.numTensors; ++i)
    if (prog.tensors[i].role == TensorRole::SampleWeights)
      std::printf("sample weights (--sample-weights, 1 each without it): %s %s float32\n",
                  prog.tensors[i].name, expectedShape(dimsOf(prog.tensors[i])).c_str());
  if (prog.hostArenaBytes)
    std::printf("host arena %" PRIu64 " bytes after it (offloaded optimizer state)\n",
                prog.hostArenaBytes);
  std::fflush(stdout);
  return 0;
}

/// Checks what the runtime relies on; a failure means the generated code is broken.
bool validateProgram(const Program &prog, std::string &error) {
  for (int i = 0; i < prog.numTensors; ++i) {
    const TensorInfo &t = prog.tensors[i];
    const std::string name = t.name ? t.name : "<unnamed>";
    if (t.rank < 0 || t.rank > kMaxRank) {
      error = "tensor '" + name + "' has invalid rank " + std::to_string(t.rank);
      return false;
    }
    const std::vector<int64_t> dims = dimsOf(t);
    for (int64_t d : dims)
      if (d < 0) {
        error = "tensor '" + name + "' has a negative dimension";
        return false;
      }
    if (t.role == TensorRole::None)
      continue;
    if (static_cast<uint64_t>(product(dims)) * elementSize(t.dtype) != t.bytes) {
      error = "tensor '" + name + "' has " + std::to_string(t.bytes) + " bytes, its shape " +
              formatShape(dims) + " needs " +
              std::to_string(product(dims) * static_cast<int64_t>(elementSize(t.dtype)));
      return false;
    }
    // The host arena (offloaded optimizer state) follows the arena in the same allocation.
    const uint64_t total = prog.arenaBytes + prog.hostArenaBytes;
    if (prog.hostArenaBytes > UINT64_MAX - prog.arenaBytes || t.offset > total ||
        t.bytes > total - t.offset) {
      error = "tensor '" + name + "' lies outside the arena";
      return false;
    }
    if (t.offset >= prog.arenaBytes && t.bytes && t.role != TensorRole::State) {
      error = "tensor '" + name + "' lies in the host arena but is not optimizer state";
      return false;
    }
    if (t.role == TensorRole::Parameter && t.initOffset >= 0 &&
        (static_cast<uint64_t>(t.initOffset) > prog.initBlobBytes ||
         t.bytes > prog.initBlobBytes - static_cast<uint64_t>(t.initOffset))) {
      error = "parameter '" + name + "' lies outside the init blob";
      return false;
    }
  }
  return true;
}

/// mkdir -p.
bool makeDirs(const std::string &path, std::string &error) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/')
      continue;
    const std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      error = prefix + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = path + ": not a directory";
    return false;
  }
  return true;
}

/// Glorot/Xavier uniform: U(-a, a), a = sqrt(6 / (fan_in + fan_out)). Rank 2 is [out, in];
/// rank >= 3 is [out, in, ...receptive field] (OIHW for convolutions); rank <= 1 is zero.
void glorotUniform(const TensorInfo &t, float *dst, std::mt19937_64 &gen) {
  const std::vector<int64_t> dims = dimsOf(t);
  const int64_t n = product(dims);
  if (dims.size() < 2 || t.dtype != DType::F32) {
    std::memset(dst, 0, t.bytes);
    return;
  }
  const int64_t receptive = product(dims, 2);
  const double fanIn = static_cast<double>(dims[1] * receptive);
  const double fanOut = static_cast<double>(dims[0] * receptive);
  const double limit = std::sqrt(6.0 / (fanIn + fanOut));
  for (int64_t i = 0; i < n; ++i) {
    // 24 random bits give a uniform float in [0, 1) the same way on every standard library
    // (std::uniform_real_distribution is implementation-defined).
    const double u = static_cast<double>(gen() >> 40) * 0x1p-24;
    dst[i] = static_cast<float>((2.0 * u - 1.0) * limit);
  }
}

// ---------------------------------------------------------------------------------------------
// Data: one memory-mapped .npy file per source, converted row by row into the tensor's dtype.

struct Source {
  NpyFile file;
  std::string flag;       // "--data", "--labels", "--validation-data", "--validation-labels"
  // Sample weights without a file: every sample's weight is 1 (no file is open).
  bool ones = false;
  bool toI64 = false;     // class-index labels; otherwise float32
  int64_t rowElems = 0;   // elements per sample in the tensor
  size_t dstRowBytes = 0; // bytes per sample in the tensor
  std::string display() const { return flag + " " + file.path(); }
};

bool isFloatCompatible(NpyDType d) {
  return d == NpyDType::F32 || d == NpyDType::F16 || d == NpyDType::F64 || d == NpyDType::I64 ||
         d == NpyDType::I32 || d == NpyDType::U8;
}

/// Whether a file of shape `shape` holds samples of the tensor `dims`: [N, ...dims[1:]].
bool hasSampleShape(const std::vector<int64_t> &shape, const std::vector<int64_t> &dims) {
  bool ok = shape.size() == dims.size() && !dims.empty();
  for (size_t i = 1; ok && i < dims.size(); ++i)
    ok = shape[i] == dims[i];
  return ok;
}

/// Opens a float source: file shape [N, ...dims[1:]] of a dtype that converts to float32.
bool openFloatSource(const std::string &flag, const std::string &path, const TensorInfo &t,
                     Source &out, std::string &error) {
  out.flag = flag;
  if (!out.file.open(path, error)) {
    error = flag + " " + error;
    return false;
  }
  const std::vector<int64_t> dims = dimsOf(t);
  const std::vector<int64_t> &shape = out.file.shape();
  if (!hasSampleShape(shape, dims) || !isFloatCompatible(out.file.dtype())) {
    error = flag + " " + path + ": expected shape " + expectedShape(dims) + " float32, got " +
            formatShape(shape) + " " + npyDTypeName(out.file.dtype());
    return false;
  }
  out.rowElems = product(dims, 1);
  out.dstRowBytes = static_cast<size_t>(out.rowElems) * sizeof(float);
  return true;
}

/// Opens class-index labels: file shape [N] or [N,1] (a class per sample), or [N, ...dims[1:]]
/// (a class per position: a language model's token labels [N, S]), int64/int32/uint8.
bool openIndexSource(const std::string &flag, const std::string &path, const TensorInfo &t,
                     Source &out, std::string &error) {
  out.flag = flag;
  out.toI64 = true;
  if (!out.file.open(path, error)) {
    error = flag + " " + error;
    return false;
  }
  const std::vector<int64_t> dims = dimsOf(t);
  const std::vector<int64_t> &shape = out.file.shape();
  const NpyDType d = out.file.dtype();
  const int64_t perSample = product(dims, 1);
  const bool shapeOk = perSample == 1 ? shape.size() == 1 || (shape.size() == 2 && shape[1] == 1)
                                      : hasSampleShape(shape, dims);
  const bool dtypeOk = d == NpyDType::I64 || d == NpyDType::I32 || d == NpyDType::U8;
  if (!shapeOk || !dtypeOk) {
    error = flag + " " + path + ": expected shape " +
            (perSample == 1 ? std::string("[*] or [*,1]") : expectedShape(dims)) +
            " int64 (or int32/uint8), got " + formatShape(shape) + " " + npyDTypeName(d);
    return false;
  }
  out.rowElems = perSample;
  out.dstRowBytes = static_cast<size_t>(perSample) * sizeof(int64_t);
  return true;
}

/// Converts one sample of src into dst (dstRowBytes bytes).
bool convertRow(Source &src, int64_t row, unsigned char *dst, std::string &error) {
  if (src.ones) {
    std::fill_n(reinterpret_cast<float *>(dst), static_cast<size_t>(src.rowElems), 1.0f);
    return true;
  }
  const unsigned char *p = src.file.rowsAt(row, 1, error);
  if (!p)
    return false;
  const size_t n = static_cast<size_t>(src.rowElems);
  const bool ok = src.toI64 ? convertToI64(src.file.dtype(), p, n, reinterpret_cast<int64_t *>(dst))
                            : convertToF32(src.file.dtype(), p, n, reinterpret_cast<float *>(dst));
  if (!ok)
    error = src.display() + ": cannot convert " + npyDTypeName(src.file.dtype());
  return ok;
}

/// Every class index must lie in [0, classes) (classes <= 0: only the lower bound is known)
/// or be the ignored label.
bool checkLabelRange(Source &src, int64_t classes, std::optional<int64_t> ignored,
                     std::string &error) {
  const int64_t rows = src.file.rows(), perRow = std::max<int64_t>(src.rowElems, 1);
  const int64_t kChunk = std::max<int64_t>((int64_t{1} << 16) / perRow, 1); // rows at a time
  std::vector<int64_t> values(static_cast<size_t>(std::min(rows, kChunk) * perRow));
  // "at index 7", or "at sample 7, position 3" for a label per position.
  auto where = [&](int64_t flat) {
    return perRow == 1 ? "index " + std::to_string(flat)
                       : "sample " + std::to_string(flat / perRow) + ", position " +
                             std::to_string(flat % perRow);
  };
  for (int64_t first = 0; first < rows; first += kChunk) {
    const int64_t count = std::min(kChunk, rows - first);
    const unsigned char *p = src.file.rowsAt(first, count, error);
    if (!p)
      return false;
    convertToI64(src.file.dtype(), p, static_cast<size_t>(count * perRow), values.data());
    for (int64_t i = 0; i < count * perRow; ++i) {
      const int64_t v = values[static_cast<size_t>(i)];
      if (ignored && v == *ignored)
        continue;
      if (v < 0) {
        error = src.display() + ": label " + std::to_string(v) + " at " +
                where(first * perRow + i) + " is negative" +
                (ignored ? std::string()
                         : " (a label to ignore, as PyTorch's ignore_index? compile with graphc "
                           "--ignore-index=" +
                               std::to_string(v) + ")");
        return false;
      }
      if (classes > 0 && v >= classes) {
        error = src.display() + ": label " + std::to_string(v) + " at " +
                where(first * perRow + i) + " is out of range: expected 0 <= label < " +
                std::to_string(classes) + " (the model predicts " + std::to_string(classes) +
                " classes)";
        return false;
      }
    }
  }
  return true;
}

/// Token ids (Program::dataIndexLimit): every value of the data must be a whole number in
/// [0, limit), the rows of the embeddings that read it.
bool checkIndexRange(Source &src, int64_t limit, std::string &error) {
  auto text = [](float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    return std::string(buf);
  };
  const int64_t rows = src.file.rows();
  const int64_t perRow = src.rowElems;
  std::vector<float> row(static_cast<size_t>(perRow));
  for (int64_t r = 0; r < rows; ++r) {
    if (!convertRow(src, r, reinterpret_cast<unsigned char *>(row.data()), error))
      return false;
    for (int64_t i = 0; i < perRow; ++i) {
      const float v = row[static_cast<size_t>(i)];
      if (!(v >= 0.0f && v < static_cast<float>(limit) && std::floor(v) == v)) {
        error = src.display() + ": token id " + text(v) + " at sample " +
                std::to_string(r) + ", position " + std::to_string(i) +
                " is not a whole number in [0, " + std::to_string(limit) +
                ") (the model's embedding has " + std::to_string(limit) + " rows)";
        return false;
      }
    }
  }
  return true;
}

/// A contiguous range of rows of the data sources (one per data input) and a labels source.
struct Split {
  std::vector<Source> *xs = nullptr;
  Source *y = nullptr;
  int64_t first = 0, count = 0;
};

/// The order of epoch E of a --shuffle run: Fisher-Yates with an explicit modulo (the same on
/// every standard library) drawing from mt19937_64(seed + E). Returns the generator afterwards.
std::mt19937_64 drawOrder(uint64_t seed, int64_t epoch, std::vector<int64_t> &order) {
  std::mt19937_64 gen(seed + static_cast<uint64_t>(epoch));
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  for (size_t i = order.size(); i-- > 1;)
    std::swap(order[i], order[gen() % (i + 1)]);
  return gen;
}

std::string rngText(const std::mt19937_64 &gen) {
  std::ostringstream s;
  s << gen;
  return s.str();
}

// ---------------------------------------------------------------------------------------------
// The batch sequence and the prefetch thread.

/// What the run does, in order: training batch t = 1..T, and after the last batch of each epoch
/// the validation batches of that epoch. A pure function of these numbers (and the seed), so
/// the main thread and the prefetch thread walk it in lockstep.
struct Schedule {
  int64_t batch = 0; // the global batch (all ranks)
  // The rows of each global batch this rank reads: [shardFirst, shardFirst + shardRows); the
  // whole batch in a single-process run.
  int64_t shardFirst = 0, shardRows = 0;
  int64_t trainCount = 0, valCount = 0;
  int64_t stepsPerEpoch = 0, valBatches = 0, totalSteps = 0;
  bool shuffle = false;
  uint64_t seed = 0;
  int64_t epochOf(int64_t t) const { return (t - 1) / stepsPerEpoch + 1; }
  int64_t batchOf(int64_t t) const { return (t - 1) % stepsPerEpoch; }
  bool endsEpoch(int64_t t) const { return batchOf(t) == stepsPerEpoch - 1; }
};

/// A staged batch: converted samples in the tensors' layout, and where they belong. `data`
/// holds every data input's batch, input i at Prefetcher's dataOffsets[i].
struct Slot {
  unsigned char *data = nullptr, *labels = nullptr;
  bool ready = false;
  bool isValidation = false;
  int64_t step = 0; // the training step (for validation: the step it follows)
  std::mt19937_64 orderGen; // data-order generator after drawing this epoch (with --shuffle)
  std::string error;        // set if the batch could not be read (the run stops, exit 3)
  // The first sample of the batch whose float values (data, or float targets) hold a NaN or an
  // Inf, named in the error when the loss then turns non-finite; empty when there is none.
  std::string nonFinite;
};

/// Whether `n` floats are all finite (a plain loop: the prefetch thread runs it, off the step).
bool allFinite(const float *values, size_t n) {
  bool finite = true;
  for (size_t i = 0; i < n; ++i)
    finite &= std::isfinite(values[i]);
  return finite;
}

/// Fills two pinned (mlock'ed where RLIMIT_MEMLOCK allows) staging buffers, allocated at
/// start-up, one batch ahead of the step that runs: gathering the batch's rows from the mapped
/// files, shuffled or not, padded or not, and converting them to the tensors' dtypes.
class Prefetcher {
public:
  /// `dataOffsets[i]`: where data input i's batch starts in a slot's data; `dataBytes`: the
  /// bytes of them all.
  Prefetcher(const Schedule &s, const Split &train, const Split &val,
             std::vector<size_t> dataOffsets, size_t dataBytes, size_t labelsBytes)
      : s_(s), train_(train), val_(val), dataOffsets_(std::move(dataOffsets)),
        dataBytes_(dataBytes), labelsBytes_(labelsBytes) {}
  ~Prefetcher() { stop(); }

  bool allocate(std::string &error) {
    const size_t bytes = (dataBytes_ + labelsBytes_ + 4095) / 4096 * 4096 + 4096;
    for (int i = 0; i < 2; ++i) {
      staging_[i].reset(static_cast<unsigned char *>(std::aligned_alloc(4096, bytes)));
      if (!staging_[i]) {
        error = "cannot allocate a staging buffer of " + std::to_string(bytes) + " bytes";
        return false;
      }
      std::memset(staging_[i].get(), 0, bytes);
      (void)::mlock(staging_[i].get(), bytes); // best effort: "pinned" where allowed
      slots_[i].data = staging_[i].get();
      slots_[i].labels = staging_[i].get() + (dataBytes_ + 63) / 64 * 64;
    }
    if (s_.shuffle) {
      try {
        order_.resize(static_cast<size_t>(train_.count));
      } catch (const std::bad_alloc &) {
        error = "--shuffle: cannot allocate the permutation of " + std::to_string(train_.count) +
                " samples (" + std::to_string(train_.count * 8) + " bytes)";
        return false;
      }
    }
    return true;
  }

  /// Starts producing the items that follow step `done` (0: from the beginning).
  void start(int64_t done) {
    total_ = 0;
    for (int64_t t = done + 1; t <= s_.totalSteps; ++t)
      total_ += 1 + (s_.valBatches > 0 && s_.endsEpoch(t) ? s_.valBatches : 0);
    thread_ = std::thread([this, done] { run(done); });
  }

  /// The item the next acquire() will return, once staged, without consuming it; null when the
  /// run has no further item. Main thread only (as acquire and release).
  Slot *peek() { return consumed_ < total_ ? &acquire() : nullptr; }

  /// A NextBatchSource (program.h) over peek(), for a step that uploads its successor's batch
  /// while it runs. A failed batch is not handed out: the main reports it on acquire().
  static bool nextBatch(void *self, NextBatch &batch) {
    Slot *slot = static_cast<Prefetcher *>(self)->peek();
    if (!slot || !slot->error.empty())
      return false;
    batch.data = slot->data;
    batch.labels = slot->labels;
    return true;
  }

  /// The next item in schedule order; blocks until it is staged.
  Slot &acquire() {
    Slot &slot = slots_[consumed_ % 2];
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return slot.ready; });
    return slot;
  }
  /// Hands the slot of acquire() back for refilling.
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slots_[consumed_ % 2].ready = false;
    }
    ++consumed_;
    cv_.notify_all();
  }

  void stop() {
    if (!thread_.joinable())
      return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

private:
  struct FreeDeleter {
    void operator()(unsigned char *p) const { std::free(p); }
  };

  // Waits for slot k%2 to be free, fills it with fill(slot), publishes it. False on stop.
  template <typename Fill> bool produce(Fill fill) {
    Slot &slot = slots_[produced_ % 2];
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !slot.ready; });
      if (stopping_)
        return false;
    }
    fill(slot);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slot.ready = true;
    }
    ++produced_;
    cv_.notify_all();
    return true;
  }

  // Gathers rows of a split: position p of the batch is sample (b*B + p) mod count of the
  // epoch's order, so a padded last batch repeats samples from the start of the order.
  bool gather(const Split &split, const int64_t *order, int64_t b, Slot &slot) {
    slot.nonFinite.clear();
    for (int64_t j = 0; j < s_.shardRows; ++j) {
      const int64_t pos = (b * s_.batch + s_.shardFirst + j) % split.count;
      const int64_t row = split.first + (order ? order[pos] : pos);
      // Each data input, then the labels (no allocation: this runs for every sample).
      for (size_t i = 0; i <= split.xs->size(); ++i) {
        const bool isLabels = i == split.xs->size();
        Source *source = isLabels ? split.y : &(*split.xs)[i];
        unsigned char *values =
            (isLabels ? slot.labels : slot.data + dataOffsets_[i]) + j * source->dstRowBytes;
        if (!convertRow(*source, row, values, slot.error))
          return false;
        if (slot.nonFinite.empty() && !source->toI64 &&
            !allFinite(reinterpret_cast<const float *>(values), size_t(source->rowElems)))
          slot.nonFinite =
              "sample " + std::to_string(row) + " of " + source->display() + " holds NaN or Inf";
      }
    }
    return true;
  }

  void run(int64_t done) {
    std::mt19937_64 gen;
    int64_t orderEpoch = 0;
    for (int64_t t = done + 1; t <= s_.totalSteps; ++t) {
      const int64_t epoch = s_.epochOf(t), b = s_.batchOf(t);
      if (s_.shuffle && orderEpoch != epoch) {
        gen = drawOrder(s_.seed, epoch, order_);
        orderEpoch = epoch;
      }
      bool ok = true;
      if (!produce([&](Slot &slot) {
            slot.error.clear();
            slot.isValidation = false;
            slot.step = t;
            slot.orderGen = gen;
            ok = gather(train_, s_.shuffle ? order_.data() : nullptr, b, slot);
          }))
        return;
      if (!ok)
        return; // the main thread reports slot.error and stops
      if (s_.valBatches > 0 && s_.endsEpoch(t))
        for (int64_t vb = 0; vb < s_.valBatches; ++vb) {
          if (!produce([&](Slot &slot) {
                slot.error.clear();
                slot.isValidation = true;
                slot.step = t;
                ok = gather(val_, nullptr, vb, slot);
              }))
            return;
          if (!ok)
            return;
        }
    }
  }

  const Schedule &s_;
  Split train_, val_;
  std::vector<size_t> dataOffsets_;
  size_t dataBytes_, labelsBytes_;
  std::unique_ptr<unsigned char, FreeDeleter> staging_[2];
  Slot slots_[2];
  std::vector<int64_t> order_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int64_t total_ = 0; // items from start() to the end of the run
  bool stopping_ = false;
  int64_t produced_ = 0, consumed_ = 0;
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------------
// Accuracy, from the Prediction tensor (if the program has one).

struct AccuracyCounter {
  LossKind loss;
  int64_t batch = 0, predElems = 0; // per sample
  // Class indices per sample (sparse crossentropy): 1, or a language model's positions, each
  // scored on its own row of predElems / labelsPerSample classes.
  int64_t labelsPerSample = 1;
  // Sparse crossentropy's ignored label (Program::ignoreIndex): neither correct nor counted.
  std::optional<int64_t> ignoredLabel;
  /// Adds the correct and counted predictions of one batch.
  void add(const float *pred, const unsigned char *labels, double &correct, double &seen) const {
    auto argmax = [](const float *v, int64_t n) {
      int64_t best = 0;
      for (int64_t i = 1; i < n; ++i)
        if (v[i] > v[best])
          best = i;
      return best;
    };
    for (int64_t j = 0; j < batch; ++j) {
      const float *p = pred + j * predElems;
      switch (loss) {
      case LossKind::SparseCategoricalCrossentropy: {
        const int64_t classes = predElems / labelsPerSample;
        for (int64_t k = 0; k < labelsPerSample; ++k) {
          int64_t label;
          std::memcpy(&label, labels + (j * labelsPerSample + k) * sizeof(int64_t), sizeof(label));
          if (ignoredLabel && label == *ignoredLabel)
            continue;
          correct += argmax(p + k * classes, classes) == label;
          seen += 1;
        }
        break;
      }
      case LossKind::CategoricalCrossentropy: {
        const float *y = reinterpret_cast<const float *>(labels) + j * predElems;
        correct += argmax(p, predElems) == argmax(y, predElems);
        seen += 1;
        break;
      }
      case LossKind::BinaryCrossentropy: {
        // The prediction is a logit: p > 0 is probability > 0.5.
        const float *y = reinterpret_cast<const float *>(labels) + j * predElems;
        for (int64_t k = 0; k < predElems; ++k)
          correct += (p[k] > 0.0f) == (y[k] > 0.5f);
        seen += static_cast<double>(predElems);
        break;
      }
      case LossKind::MeanSquaredError:
        break;
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Progress output: a Keras-like bar redrawn with '\r' on a terminal, plain lines otherwise.

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// "12s", "3:07", "1:02:03".
void formatDuration(double seconds, char *buf, size_t size) {
  const long long s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600)
    std::snprintf(buf, size, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  else if (s >= 60)
    std::snprintf(buf, size, "%lld:%02lld", s / 60, s % 60);
  else
    std::snprintf(buf, size, "%llds", s);
}

class Progress {
public:
  Progress(bool tty, bool stepsMode, bool hasAccuracy, int64_t batch)
      : tty_(tty), stepsMode_(stepsMode), hasAccuracy_(hasAccuracy), batch_(batch) {}

  /// Starts a bar of `total` units with `done` already behind it (a resumed epoch).
  void begin(const char *title, int64_t done, int64_t total) {
    done0_ = done;
    total_ = total;
    start_ = Clock::now();
    lastDraw_ = start_ - std::chrono::seconds(1);
    lastWidth_ = 0;
    if (tty_ && title && *title) {
      std::printf("%s\n", title);
      std::fflush(stdout);
    }
  }

  /// One unit done; on a terminal redraws at most every 0.1 s (and always at the end).
  void update(int64_t done, double loss, double accuracy) {
    if (!tty_ || (done == total_ && !stepsMode_)) // an epoch's last frame is epochEnd's
      return;
    const Clock::time_point now = Clock::now();
    if (done != total_ && std::chrono::duration<double>(now - lastDraw_).count() < 0.1)
      return;
    lastDraw_ = now;
    const double elapsed = secondsSince(start_);
    const int64_t ran = done - done0_;
    char eta[32] = "";
    if (done < total_ && ran > 0)
      formatDuration(elapsed / static_cast<double>(ran) * static_cast<double>(total_ - done),
                     eta, sizeof(eta));
    char line[512];
    int n = drawBar(line, sizeof(line), done);
    if (done < total_)
      n += std::snprintf(line + n, sizeof(line) - n, " - ETA: %s", ran > 0 ? eta : "?");
    appendMetrics(line, sizeof(line), n, loss, accuracy, elapsed, ran);
    redraw(line, n);
    if (done == total_ && stepsMode_)
      finishLine();
  }

  /// The epoch's summary: the finished bar on a terminal, one plain line otherwise.
  void epochEnd(int64_t epoch, int64_t epochs, double loss, double accuracy, bool hasVal,
                double valLoss, double valAccuracy) {
    const double elapsed = secondsSince(start_);
    const int64_t ran = total_ - done0_;
    char line[512];
    int n;
    if (tty_) {
      n = drawBar(line, sizeof(line), total_);
      char took[32];
      formatDuration(elapsed, took, sizeof(took));
      n += std::snprintf(line + n, sizeof(line) - n, " - %s", took);
      n += std::snprintf(line + n, sizeof(line) - n, " - loss: %.4f", loss);
      if (hasAccuracy_)
        n += std::snprintf(line + n, sizeof(line) - n, " - accuracy: %.4f", accuracy);
      if (hasVal) {
        n += std::snprintf(line + n, sizeof(line) - n, " - val_loss: %.4f", valLoss);
        if (hasAccuracy_)
          n += std::snprintf(line + n, sizeof(line) - n, " - val_accuracy: %.4f", valAccuracy);
      }
      n += std::snprintf(line + n, sizeof(line) - n, " - %.0f samples/s", rate(elapsed, ran));
      redraw(line, n);
      finishLine();
      return;
    }
    n = std::snprintf(line, sizeof(line), "epoch %" PRId64 "/%" PRId64 " loss %.9g", epoch,
                      epochs, loss);
    if (hasAccuracy_)
      n += std::snprintf(line + n, sizeof(line) - n, " accuracy %.4f", accuracy);
    if (hasVal) {
      n += std::snprintf(line + n, sizeof(line) - n, " val_loss %.9g", valLoss);
      if (hasAccuracy_)
        n += std::snprintf(line + n, sizeof(line) - n, " val_accuracy %.4f", valAccuracy);
    }
    std::snprintf(line + n, sizeof(line) - n, " - %.1fs %.0f samples/s", elapsed,
                  rate(elapsed, ran));
    std::printf("%s\n", line);
    std::fflush(stdout);
  }

  /// A line of its own (validation in --steps mode); on a terminal the bar is redrawn after it.
  void message(const char *text) {
    if (tty_ && lastWidth_ > 0) {
      std::printf("\r%*s\r", lastWidth_, "");
      lastWidth_ = 0;
      lastDraw_ = Clock::now() - std::chrono::seconds(1);
    }
    std::printf("%s\n", text);
    std::fflush(stdout);
  }

  void finishLine() {
    if (tty_ && lastWidth_ > 0) {
      std::printf("\n");
      std::fflush(stdout);
      lastWidth_ = 0;
    }
  }

  double samplesPerSecond() const {
    return rate(secondsSince(start_), total_ - done0_);
  }

private:
  double rate(double elapsed, int64_t units) const {
    return elapsed > 0 ? static_cast<double>(units * batch_) / elapsed : 0.0;
  }

  int drawBar(char *line, size_t size, int64_t done) const {
    constexpr int kWidth = 30;
    char bar[kWidth + 1];
    const int filled = total_ > 0 ? static_cast<int>(kWidth * done / total_) : kWidth;
    for (int i = 0; i < kWidth; ++i)
      bar[i] = i < filled ? '=' : '.';
    if (filled > 0 && done < total_)
      bar[filled - 1] = '>';
    else if (filled == 0 && done < total_)
      bar[0] = '>';
    bar[kWidth] = '\0';
    const int digits = std::snprintf(nullptr, 0, "%" PRId64, total_);
    return std::snprintf(line, size, "%*" PRId64 "/%" PRId64 " [%s]", digits, done, total_, bar);
  }

  void appendMetrics(char *line, size_t size, int &n, double loss, double accuracy,
                     double elapsed, int64_t ran) const {
    n += std::snprintf(line + n, size - n, " - loss: %.4f", loss);
    if (hasAccuracy_)
      n += std::snprintf(line + n, size - n, " - accuracy: %.4f", accuracy);
    n += std::snprintf(line + n, size - n, " - %.0f samples/s", rate(elapsed, ran));
  }

  void redraw(const char *line, int n) {
    // '\r', the new text, and blanks over whatever the previous, longer frame left.
    const int pad = lastWidth_ > n ? lastWidth_ - n : 0;
    std::printf("\r%s%*s", line, pad, "");
    std::fflush(stdout);
    lastWidth_ = n;
  }

  bool tty_, stepsMode_, hasAccuracy_;
  int64_t batch_;
  int64_t done0_ = 0, total_ = 0;
  Clock::time_point start_, lastDraw_;
  int lastWidth_ = 0;
};

// ---------------------------------------------------------------------------------------------
// --log-json: JSON Lines, one record per step, epoch and checkpoint, flushed as written.

class JsonLog {
public:
  bool open(const std::string &path, bool append, std::string &error) {
    if (path.empty())
      return true;
    file_ = std::fopen(path.c_str(), append ? "ab" : "wb");
    if (!file_) {
      error = "--log-json " + path + ": " + std::strerror(errno);
      return false;
    }
    return true;
  }
  ~JsonLog() {
    if (file_)
      std::fclose(file_);
  }
  bool enabled() const { return file_ != nullptr; }
  void write(const nlohmann::json &record) {
    if (!file_)
      return;
    const std::string text = record.dump() + "\n";
    std::fwrite(text.data(), 1, text.size(), file_);
    std::fflush(file_);
  }

private:
  FILE *file_ = nullptr;
};

/// A float as JSON: the number, or null if it is not finite (JSON has no NaN).
nlohmann::json jsonNumber(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

const TensorInfo *findRole(const Program &prog, TensorRole role, int &count) {
  const TensorInfo *found = nullptr;
  count = 0;
  for (int i = 0; i < prog.numTensors; ++i)
    if (prog.tensors[i].role == role) {
      found = &prog.tensors[i];
      ++count;
    }
  return found;
}

/// The host arena: anonymous private pages, zero until first touched. On the CPU the step
/// touches all of them; with a device target (where this is the host image of the device's
/// arena) only parameters, optimizer state and the step's inputs and outputs are ever touched,
/// so the host holds those bytes and not the whole plan (a 74 GiB ResNet-50 arena on an H100
/// used to cost 74 GiB of host RAM and a memset of it at start-up).
struct HostArena {
  unsigned char *data = nullptr;
  uint64_t bytes = 0;
  HostArena() = default;
  HostArena(const HostArena &) = delete;
  HostArena &operator=(const HostArena &) = delete;
  ~HostArena() {
    if (data)
      munmap(data, bytes);
  }
  bool allocate(uint64_t size) {
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return false;
    data = static_cast<unsigned char *>(p);
    bytes = size;
    return true;
  }
};

/// What this machine can give the arena: MemAvailable plus SwapFree from /proc/meminfo (what
/// can be had without taking pages from other processes), capped by a cgroup v2 memory limit
/// (memory.max less memory.current: containers and CI runners, whose limit /proc/meminfo does
/// not show). `known` is false where /proc/meminfo cannot be read, and nothing is checked.
struct HostMemory {
  bool known = false;
  uint64_t available = 0, total = 0, cgroupLimit = 0;
};

HostMemory readHostMemory() {
  HostMemory m;
  if (FILE *f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    uint64_t availableKiB = 0, totalKiB = 0, swapKiB = 0;
    int found = 0;
    while (std::fgets(line, sizeof(line), f)) {
      found += std::sscanf(line, "MemAvailable: %" SCNu64 " kB", &availableKiB) == 1;
      found += std::sscanf(line, "MemTotal: %" SCNu64 " kB", &totalKiB) == 1;
      std::sscanf(line, "SwapFree: %" SCNu64 " kB", &swapKiB);
    }
    std::fclose(f);
    m.known = found == 2;
    m.available = (availableKiB + swapKiB) * 1024;
    m.total = totalKiB * 1024;
  }
  uint64_t limit = 0, current = 0;
  FILE *maxFile = std::fopen("/sys/fs/cgroup/memory.max", "r");
  FILE *currentFile = std::fopen("/sys/fs/cgroup/memory.current", "r");
  if (maxFile && currentFile && std::fscanf(maxFile, "%" SCNu64, &limit) == 1 &&
      std::fscanf(currentFile, "%" SCNu64, &current) == 1) { // "max" (no limit) fails the scan
    m.cgroupLimit = limit;
    m.available = std::min(m.available, limit > current ? limit - current : 0);
  }
  if (maxFile)
    std::fclose(maxFile);
  if (currentFile)
    std::fclose(currentFile);
  return m;
}

/// On the CPU the step touches every page of the arena, so an arena larger than the memory
/// the machine can give is refused before step 1, with the figures and a budget that fits, as
/// the CUDA runtime refuses one that the GPU cannot hold (a plan of 92 GB used to start, then
/// die to the kernel's OOM killer mid-step).
bool hostArenaFits(uint64_t arenaBytes) {
  const HostMemory m = readHostMemory();
  if (!m.known || arenaBytes <= m.available)
    return true;
  const uint64_t suggestion = m.available / (1ull << 20);
  std::fprintf(
      stderr,
      "error: the planned arena does not fit in this machine's memory: it needs %s (%" PRIu64
      " bytes), and %s (%" PRIu64 " bytes) is available (free RAM and swap%s) of %s of "
      "RAM\n",
      formatBytes(arenaBytes).c_str(), arenaBytes, formatBytes(m.available).c_str(), m.available,
      m.cgroupLimit ? ", within this cgroup's memory.max" : "", formatBytes(m.total).c_str());
  if (suggestion > 0)
    std::fprintf(stderr,
                 "  suggestion: recompile with --budget=%" PRIu64
                 "MiB (graphc rematerializes to fit it, or names the largest batch that fits; see "
                 "--max-batch), or free the memory other processes hold\n",
                 suggestion);
  else
    std::fprintf(stderr, "  suggestion: free the memory other processes hold\n");
  return false;
}

} // namespace

int trainMain(int argc, char **argv) {
  const Program &prog = graphc_program;
  Options opt;
  std::string error;
  // --help wins over everything else on the line, including mistakes.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0)
      opt.help = true;
  if (!opt.help && !parseArgs(argc, argv, opt, error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return kExitUsage;
  }
  if (opt.help) {
    std::printf(kUsage, argc > 0 ? argv[0] : "train", prog.modelName, prog.batch);
    std::printf("\nData inputs of this model (one --data each, in this order): %s\n",
                dataInputsText(prog).c_str());
    return 0;
  }
  if (opt.describe)
    return describe(prog);

  if (!validateProgram(prog, error)) {
    std::fprintf(stderr, "error: program '%s' is inconsistent: %s\n", prog.modelName,
                 error.c_str());
    return kExitInternal;
  }
  int nLabels, nLoss, nStep, nPred;
  std::vector<const TensorInfo *> dataTs; // every data input, in --data order
  for (int i = 0; i < prog.numTensors; ++i)
    if (prog.tensors[i].role == TensorRole::Data)
      dataTs.push_back(&prog.tensors[i]);
  const TensorInfo *dataT = dataTs.empty() ? nullptr : dataTs.front(); // (all share its batch)
  const bool dataConsistent = std::all_of(dataTs.begin(), dataTs.end(), [&](const TensorInfo *t) {
    return t->rank >= 1 && t->dtype == DType::F32 && t->dims[0] == dataT->dims[0] &&
           t->indexLimit >= 0;
  });
  const TensorInfo *labelsT = findRole(prog, TensorRole::Labels, nLabels);
  const TensorInfo *lossT = findRole(prog, TensorRole::Loss, nLoss);
  const TensorInfo *stepT = findRole(prog, TensorRole::Step, nStep);
  const TensorInfo *predT = findRole(prog, TensorRole::Prediction, nPred);
  int nSampleWeights;
  const TensorInfo *sampleWeightsT = findRole(prog, TensorRole::SampleWeights, nSampleWeights);
  if (nSampleWeights > 1 ||
      (sampleWeightsT && (sampleWeightsT->dtype != DType::F32 || sampleWeightsT->rank < 1 ||
                          dataTs.empty() || sampleWeightsT->dims[0] != dataTs[0]->dims[0]))) {
    std::fprintf(stderr,
                 "error: program '%s' is inconsistent: it may take one float32 [batch, ...] "
                 "tensor of sample weights\n",
                 prog.modelName);
    return kExitInternal;
  }
  if (!sampleWeightsT && (!opt.sampleWeights.empty() || !opt.valSampleWeights.empty())) {
    std::fprintf(stderr,
                 "error: %s: model '%s' was compiled without sample weights; compile it with "
                 "graphc --sample-weights\n",
                 opt.sampleWeights.empty() ? "--validation-sample-weights" : "--sample-weights",
                 prog.modelName);
    return kExitUsage;
  }
  if (dataTs.empty() || !dataConsistent || nLabels != 1 || nLoss != 1 || nStep > 1 || nPred > 1 ||
      labelsT->rank < 1 || lossT->dtype != DType::F32 || lossT->bytes < sizeof(float) ||
      dataT->dims[0] != labelsT->dims[0] || dataT->dims[0] < 1 ||
      (predT &&
       (predT->dtype != DType::F32 || predT->rank < 1 || predT->dims[0] != dataT->dims[0]))) {
    std::fprintf(stderr,
                 "error: program '%s' is inconsistent: it needs float32 data tensors and one "
                 "labels tensor with the same batch, one float32 loss, at most one step and "
                 "at most one float32 prediction with the same batch\n",
                 prog.modelName);
    return kExitInternal;
  }
  // The one arena allocation (below) is this many bytes. Offloaded optimizer state (graphc
  // --offload) is a host arena right after the arena's bytes, in the same allocation: on the CPU
  // both are host memory, and --budget counted only the first.
  const uint64_t arenaSize =
      (std::max<uint64_t>(prog.arenaBytes + prog.hostArenaBytes, 1) + 4095) / 4096 * 4096;
  // The CPU runs the step in the host arena: refuse one the machine cannot hold before anything
  // is read. (A device target's host arena is an image of which little is touched.)
  if (!&graphc_device_runtime && !hostArenaFits(arenaSize))
    return kExitInternal;
  // Data parallelism: `batch` is this rank's share of the global batch. Join the job before any
  // input is read, so that a wrong launch is refused first and by one rank.
  const int64_t localBatch = dataT->dims[0];
  const int32_t compiledRanks = prog.worldSize > 1 ? prog.worldSize : 1;
  const CommRuntime *comm = &graphc_comm_runtime;
  if (compiledRanks > 1 && !comm) {
    std::fprintf(stderr, "error: program '%s' is inconsistent: it was compiled for %d ranks but "
                 "linked without a communication backend\n", prog.modelName, compiledRanks);
    return kExitInternal;
  }
  if (opt.collectiveTimeoutGiven && !comm) {
    std::fprintf(stderr, "error: --collective-timeout: this binary runs one process; it was not "
                 "compiled with --data-parallel\n");
    return kExitUsage;
  }
  int rank = 0, worldSize = 1;
  if (comm)
    if (int rc = comm->start(&argc, &argv, prog, opt.collectiveTimeout, rank, worldSize))
      return rc;
  const bool leader = rank == 0;
  if (!leader) // one rank reports progress; errors still come from every rank (stderr)
    if (!std::freopen("/dev/null", "w", stdout))
      std::fclose(stdout);
  const int64_t batch = localBatch * worldSize; // the global batch
  const bool indexLabels = labelsT->dtype == DType::I64;
  // Accuracy needs the predictions; class counts come from them too.
  AccuracyCounter accuracy{prog.loss, localBatch, predT ? product(dimsOf(*predT), 1) : 0,
                           indexLabels ? product(dimsOf(*labelsT), 1) : 1};
  if (prog.hasIgnoreIndex)
    accuracy.ignoredLabel = prog.ignoreIndex;
  // Class indices: one per sample, or one per position of [batch, positions..., classes]
  // predictions (labels [batch, positions...]), the classes on the last axis.
  const bool indexRowsMatch =
      predT && indexLabels && predT->rank >= 2 &&
      product(dimsOf(*predT), 1) == accuracy.labelsPerSample * predT->dims[predT->rank - 1];
  const bool hasAccuracy =
      predT && prog.loss != LossKind::MeanSquaredError && !prog.maskedLoss &&
      (indexLabels ? indexRowsMatch : product(dimsOf(*labelsT), 1) == accuracy.predElems);
  const int64_t numClasses = predT && prog.loss == LossKind::SparseCategoricalCrossentropy
                                 ? accuracy.predElems / accuracy.labelsPerSample
                                 : 0;

  if (opt.data.empty() || opt.labels.empty()) {
    std::fprintf(stderr, "error: %s is required (see --help)\n",
                 opt.data.empty() ? "--data" : "--labels");
    return kExitUsage;
  }
  // One file per data input, in the program's order; the same for a separate validation set.
  for (const auto &[flag, files] :
       {std::pair<const char *, const std::vector<std::string> *>{"--data", &opt.data},
        {"--validation-data", &opt.valData}})
    if (!files->empty() && files->size() != dataTs.size()) {
      std::fprintf(stderr,
                   "error: %s given %zu time%s, but model '%s' has %zu data input%s: pass %s "
                   "once for each, in this order: %s\n",
                   flag, files->size(), files->size() == 1 ? "" : "s", prog.modelName,
                   dataTs.size(), dataTs.size() == 1 ? "" : "s", flag,
                   dataInputsText(prog).c_str());
      return kExitUsage;
    }

  // Names must map to distinct files before any weights are read or written.
  if (!opt.saveDir.empty() || !opt.initDir.empty()) {
    std::vector<std::string> seen;
    for (int i = 0; i < prog.numTensors; ++i) {
      if (prog.tensors[i].role != TensorRole::Parameter)
        continue;
      const std::string s = sanitize(prog.tensors[i].name);
      for (const std::string &other : seen)
        if (other == s) {
          std::fprintf(stderr, "error: two parameters share the weight file name '%s.npy'\n",
                       s.c_str());
          return kExitInternal;
        }
      seen.push_back(s);
    }
  }

  // Open and check every input before touching the arena or running anything: shapes, dtypes,
  // sample counts and class indices, each with the expected and the actual value.
  // (one more of each for the sample weights: a Source cannot move)
  const size_t sources = dataTs.size() + (sampleWeightsT ? 1 : 0);
  std::vector<Source> data(sources), valData(sources);
  Source labels, valLabels;
  auto openSet = [&](const std::string &dflag, const std::vector<std::string> &dpaths,
                     const std::string &lflag, const std::string &lpath, std::vector<Source> &ds,
                     Source &l) {
    if (!(indexLabels ? openIndexSource(lflag, lpath, *labelsT, l, error)
                      : openFloatSource(lflag, lpath, *labelsT, l, error)))
      return false;
    for (size_t i = 0; i < dataTs.size(); ++i) {
      // With several data inputs the flag names the input it feeds.
      const std::string flag = dataTs.size() == 1 ? dflag : dflag + " (" + dataTs[i]->name + ")";
      if (!openFloatSource(flag, dpaths[i], *dataTs[i], ds[i], error))
        return false;
      if (l.file.rows() != ds[i].file.rows()) {
        error = lflag + " " + lpath + ": " + std::to_string(l.file.rows()) + " samples, but " +
                flag + " " + dpaths[i] + " has " + std::to_string(ds[i].file.rows());
        return false;
      }
      if (dataTs[i]->indexLimit > 0 && !checkIndexRange(ds[i], dataTs[i]->indexLimit, error))
        return false;
    }
    return !indexLabels ||
           checkLabelRange(l, numClasses,
                           prog.hasIgnoreIndex ? std::optional<int64_t>(prog.ignoreIndex)
                                               : std::nullopt,
                           error);
  };
  const bool separateVal = !opt.valData.empty();
  if (!openSet("--data", opt.data, "--labels", opt.labels, data, labels) ||
      (separateVal && !openSet("--validation-data", opt.valData, "--validation-labels",
                               opt.valLabels, valData, valLabels))) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return kExitUsage;
  }
  // The sample weights travel as one more data input (after the others: staging.h's layout),
  // gathered from the same rows: a file's, or 1 for every sample without one.
  if (sampleWeightsT) {
    auto openWeights = [&](const std::string &flag, const std::string &path, const Source &rows,
                           Source &out) {
      if (path.empty()) {
        out.flag = flag;
        out.ones = true;
        out.rowElems = product(dimsOf(*sampleWeightsT), 1);
        out.dstRowBytes = static_cast<size_t>(out.rowElems) * sizeof(float);
        return true;
      }
      if (!openFloatSource(flag, path, *sampleWeightsT, out, error))
        return false;
      if (out.file.rows() != rows.file.rows()) {
        error = flag + " " + path + ": " + std::to_string(out.file.rows()) + " samples, but " +
                rows.display() + " has " + std::to_string(rows.file.rows());
        return false;
      }
      return true;
    };
    if (!openWeights("--sample-weights", opt.sampleWeights, labels, data.back()) ||
        (separateVal && !openWeights("--validation-sample-weights", opt.valSampleWeights, valLabels,
                                     valData.back()))) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return kExitUsage;
    }
    dataTs.push_back(sampleWeightsT);
  }
  const int64_t samples = labels.file.rows();
  Split train{&data, &labels, 0, samples}, val;
  if (separateVal) {
    val = Split{&valData, &valLabels, 0, valLabels.file.rows()};
  } else if (opt.valSplit > 0) {
    const int64_t held = static_cast<int64_t>(std::floor(opt.valSplit * static_cast<double>(samples)));
    if (held < 1 || held >= samples) {
      std::fprintf(stderr, "error: --validation-split %g of %" PRId64 " samples leaves %s\n",
                   opt.valSplit, samples, held < 1 ? "no validation sample" : "no training sample");
      return kExitUsage;
    }
    train.count = samples - held;
    val = Split{&data, &labels, samples - held, held};
  }
  const bool hasVal = val.count > 0;
  if (!opt.padLastBatch && train.count < batch) {
    if (train.count == samples)
      std::fprintf(stderr,
                   "error: --data %s: %" PRId64 " samples, fewer than the batch size %" PRId64 "\n",
                   opt.data[0].c_str(), samples, batch);
    else
      std::fprintf(stderr,
                   "error: --data %s: %" PRId64 " training samples after "
                   "--validation-split, fewer than the batch size %" PRId64
                   " (or use --last-batch=pad)\n",
                   opt.data[0].c_str(), train.count, batch);
    return kExitUsage;
  }
  if (train.count < 1 || (hasVal && !opt.padLastBatch && val.count < batch)) {
    std::fprintf(stderr,
                 "error: %s: %" PRId64 " validation samples, fewer than the batch size %" PRId64
                 " (or use --last-batch=pad)\n",
                 separateVal ? ("--validation-data " + opt.valData[0]).c_str()
                             : "--validation-split",
                 val.count, batch);
    return kExitUsage;
  }

  Schedule sched;
  sched.batch = batch;
  sched.shardFirst = rank * localBatch;
  sched.shardRows = localBatch;
  sched.trainCount = train.count;
  sched.valCount = val.count;
  sched.shuffle = opt.shuffle;
  sched.seed = opt.seed;
  sched.stepsPerEpoch = opt.padLastBatch ? (train.count + batch - 1) / batch : train.count / batch;
  sched.valBatches = !hasVal ? 0 : opt.padLastBatch ? (val.count + batch - 1) / batch
                                                    : val.count / batch;
  sched.totalSteps = opt.stepsMode ? opt.steps : opt.epochs * sched.stepsPerEpoch;
  const int64_t epochs =
      opt.stepsMode ? (sched.totalSteps + sched.stepsPerEpoch - 1) / sched.stepsPerEpoch
                    : opt.epochs;

  // A device target (CUDA, device.h) finds its device and allocates the real arena now; the one
  // below is then its host image. Null for the CPU.
  const DeviceRuntime *device = &graphc_device_runtime;
  if (device)
    if (int rc = device->start(prog))
      return rc;

  // The one arena allocation (arenaSize, above); everything after this reuses it.
  HostArena arenaOwner;
  if (!arenaOwner.allocate(arenaSize)) {
    std::fprintf(stderr, "error: cannot allocate the arena of %" PRIu64 " bytes: %s\n", arenaSize,
                 std::strerror(errno));
    return kExitInternal;
  }
  unsigned char *arena = arenaOwner.data; // zero-filled by the kernel, page by page
  // GRAPHC_POISON_ARENA=1 (arena_poison.h): the scratch bytes are NaN before every step. A
  // device target poisons its own arena (this one is then the host image, mostly untouched).
  std::vector<std::pair<uint64_t, uint64_t>> poisonRanges;
  std::string poisonError;
  if (poisonArenaRequested(poisonError)) {
    if (!device)
      poisonRanges = arenaScratchRanges(prog);
  } else if (!poisonError.empty()) {
    std::fprintf(stderr, "error: %s\n", poisonError.c_str());
    return kExitUsage;
  }
  auto poisonScratch = [&] {
    for (const auto &[begin, end] : poisonRanges)
      std::memset(arena + begin, 0xFF, end - begin);
  };

  std::mt19937_64 initGen(opt.seed);
  for (int i = 0; i < prog.numTensors; ++i) {
    const TensorInfo &t = prog.tensors[i];
    unsigned char *dst = arena + t.offset;
    if (t.role == TensorRole::State) {
      std::memset(dst, 0, t.bytes);
    } else if (t.role == TensorRole::Parameter) {
      if (!opt.initDir.empty()) {
        const std::string path = opt.initDir + "/" + sanitize(t.name) + ".npy";
        NpyArray arr;
        if (!readNpy(path, arr, error)) {
          std::fprintf(stderr, "error: --init-weights %s\n", error.c_str());
          return kExitUsage;
        }
        const NpyDType want = t.dtype == DType::F32 ? NpyDType::F32 : NpyDType::I64;
        if (arr.shape != dimsOf(t) || arr.dtype != want || arr.data.size() != t.bytes) {
          std::fprintf(stderr, "error: --init-weights %s: expected shape %s %s, got %s %s\n",
                       path.c_str(), formatShape(dimsOf(t)).c_str(), dtypeName(t.dtype),
                       formatShape(arr.shape).c_str(), npyDTypeName(arr.dtype));
          return kExitUsage;
        }
        std::memcpy(dst, arr.data.data(), t.bytes);
      } else if (t.initOffset >= 0) {
        std::memcpy(dst, prog.initBlob + t.initOffset, t.bytes);
      } else {
        glorotUniform(t, reinterpret_cast<float *>(dst), initGen);
      }
    }
  }

  // A parameter that starts with a NaN or an Inf makes every loss non-finite: name it, and where
  // it came from, before step 1.
  for (int i = 0; i < prog.numTensors; ++i) {
    const TensorInfo &t = prog.tensors[i];
    if (t.role != TensorRole::Parameter || t.dtype != DType::F32 ||
        allFinite(reinterpret_cast<const float *>(arena + t.offset), t.bytes / sizeof(float)))
      continue;
    const std::string source =
        !opt.initDir.empty() ? "--init-weights " + opt.initDir + "/" + sanitize(t.name) + ".npy"
                             : std::string("the model's initial values");
    std::fprintf(stderr,
                 "error: parameter '%s' holds NaN or Inf (from %s); training it would "
                 "give a non-finite loss\n",
                 t.name, source.c_str());
    return kExitUsage;
  }

  // Where a run continues: --resume takes the newest checkpoint that verifies; a torn or
  // corrupted one is reported and skipped, one of another model or run is refused.
  int64_t done = 0; // steps completed
  double epochLossSum = 0.0, epochCorrect = 0.0, epochSeen = 0.0;
  const uint64_t fingerprint = programFingerprint(prog);
  std::string resumedFrom;
  // With a sharded optimizer state each rank's checkpoint differs: rank R writes its own into
  // DIR/rank-R-of-N, and once every rank has written step T, rank 0 records T in
  // DIR/manifest.json, the only step a resumed run takes (so a run killed while writing resumes
  // from the last step every rank completed).
  const bool shardedCheckpoint = comm && prog.shardedOptimizerState;
  const std::string rankDir =
      !shardedCheckpoint ? opt.checkpointDir
                         : opt.checkpointDir + "/rank-" + std::to_string(rank) + "-of-" +
                               std::to_string(worldSize);
  const bool writesCheckpoints = leader || shardedCheckpoint;
  if (!opt.checkpointDir.empty()) {
    if (!makeDirs(rankDir, error)) {
      std::fprintf(stderr, "error: --checkpoint %s\n", error.c_str());
      return kExitInternal;
    }
    if (writesCheckpoints)
      removeStaleTemporaries(rankDir);
  }
  // --save-weights writes after the last step: a directory that cannot be made or written is
  // refused now, not after the whole run.
  if (leader && !opt.saveDir.empty()) {
    error.clear();
    if (makeDirs(opt.saveDir, error) && ::access(opt.saveDir.c_str(), W_OK) != 0)
      error = opt.saveDir + ": " + std::strerror(errno);
    if (!error.empty()) {
      std::fprintf(stderr, "error: --save-weights %s\n", error.c_str());
      return kExitUsage;
    }
  }
  int64_t manifestStep = -1; // sharded: the step of DIR/manifest.json (-1: none)
  if (opt.resume && shardedCheckpoint) {
    std::vector<uint8_t> bytes;
    const std::string manifest = opt.checkpointDir + "/manifest.json";
    if (readWholeFile(manifest, bytes, error)) {
      nlohmann::json m = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
      if (m.is_discarded() || !m.is_object() || !m.contains("step") ||
          !m["step"].is_number_integer() || !m.contains("world_size") ||
          !m["world_size"].is_number_integer()) {
        std::fprintf(stderr, "error: --resume: %s is not a graphc checkpoint manifest\n",
                     manifest.c_str());
        return kExitUsage;
      }
      if (m["world_size"].get<int64_t>() != worldSize) {
        std::fprintf(stderr, "error: --resume: %s was written by a run on %" PRId64 " ranks, this "
                     "binary runs on %d; resume with the world size that wrote it (a sharded "
                     "checkpoint is not resharded)\n", manifest.c_str(),
                     m["world_size"].get<int64_t>(), worldSize);
        return kExitUsage;
      }
      manifestStep = m["step"].get<int64_t>();
    }
  }
  if (opt.resume) {
    std::vector<uint8_t> bytes;
    CheckpointState st;
    std::vector<CheckpointTensor> tensors;
    bool found = false;
    for (const auto &candidate : listCheckpoints(rankDir)) {
      const int64_t step = candidate.first;
      const std::string &path = candidate.second;
      if (shardedCheckpoint && step != manifestStep)
        continue; // not (yet) complete on every rank
      if (!readWholeFile(path, bytes, error)) {
        std::fprintf(stderr, "warning: --resume: skipping %s\n", error.c_str());
        continue;
      }
      if (!decodeCheckpoint(bytes.data(), bytes.size(), st, tensors, error)) {
        std::fprintf(stderr, "warning: --resume: skipping %s: %s\n", path.c_str(), error.c_str());
        continue;
      }
      if (st.step != step) {
        std::fprintf(stderr, "warning: --resume: skipping %s: it holds step %" PRId64
                     ", not the step of its name\n", path.c_str(), st.step);
        continue;
      }
      if (!checkpointMatchesProgram(st, tensors, prog, error)) {
        std::fprintf(stderr, "error: --resume: %s belongs to a different model or plan: %s\n",
                     path.c_str(), error.c_str());
        return kExitUsage;
      }
      // The data order must be the same for the continued run to be the same run.
      auto mismatch = [&](const std::string &what, const std::string &in,
                          const std::string &here) {
        std::fprintf(stderr, "error: --resume: %s was written with %s %s, this run has %s\n",
                     path.c_str(), what.c_str(), in.c_str(), here.c_str());
        return kExitUsage;
      };
      auto yesNo = [](bool b) { return std::string(b ? "on" : "off"); };
      if (st.shuffle != opt.shuffle)
        return mismatch("--shuffle", yesNo(st.shuffle), yesNo(opt.shuffle));
      if (st.shuffle && st.seed != opt.seed)
        return mismatch("--seed", std::to_string(st.seed), std::to_string(opt.seed));
      if (st.padLastBatch != opt.padLastBatch)
        return mismatch("--last-batch", st.padLastBatch ? "pad" : "drop",
                        opt.padLastBatch ? "pad" : "drop");
      if (st.trainSamples != train.count)
        return mismatch("training samples", std::to_string(st.trainSamples),
                        std::to_string(train.count));
      if (st.validationSamples != val.count)
        return mismatch("validation samples", std::to_string(st.validationSamples),
                        std::to_string(val.count));
      if (st.stepsPerEpoch != sched.stepsPerEpoch || st.step < 0 ||
          st.nextEpoch != st.step / sched.stepsPerEpoch + 1 ||
          st.nextBatchInEpoch != st.step % sched.stepsPerEpoch)
        return mismatch("steps per epoch", std::to_string(st.stepsPerEpoch),
                        std::to_string(sched.stepsPerEpoch));
      if (st.shuffle && st.step > 0) {
        // Re-derive the order of the checkpoint's last epoch: the generator must land in the
        // stored state, or this binary orders the data differently from the one that wrote it.
        std::vector<int64_t> order;
        try {
          order.resize(static_cast<size_t>(train.count));
        } catch (const std::bad_alloc &) {
          std::fprintf(stderr, "error: --shuffle: cannot allocate the permutation of %" PRId64
                       " samples\n", train.count);
          return kExitInternal;
        }
        const std::string state = rngText(drawOrder(opt.seed, sched.epochOf(st.step), order));
        if (state != st.dataOrderRng) {
          std::fprintf(stderr, "error: --resume: %s: the data-order generator state differs "
                       "from the one this binary derives for epoch %" PRId64 "\n",
                       path.c_str(), sched.epochOf(st.step));
          return kExitUsage;
        }
      }
      restoreCheckpointTensors(tensors, prog, arena);
      done = st.step;
      epochLossSum = st.epochLossSum;
      epochCorrect = st.epochCorrect;
      epochSeen = st.epochSeen;
      resumedFrom = path;
      found = true;
      if (leader)
        std::fprintf(stderr, "resuming from %s (step %" PRId64 ", epoch %" PRId64 ")\n",
                   path.c_str(), done, st.nextEpoch);
      break;
    }
    if (!found && shardedCheckpoint && manifestStep >= 0) {
      std::fprintf(stderr, "error: rank %d: --resume: %s/manifest.json names step %" PRId64
                   " but %s holds no valid checkpoint of it\n", rank,
                   opt.checkpointDir.c_str(), manifestStep, rankDir.c_str());
      return kExitUsage;
    }
    if (!found && leader)
      std::fprintf(stderr, "note: --resume: no usable checkpoint in %s; starting from step 1\n",
                   opt.checkpointDir.c_str());
  }
  if (comm) {
    // Every rank starts from rank 0's parameters (as PyTorch DDP does), and all must have
    // resumed from the same step (a checkpoint directory every rank sees). Optimizer state is
    // not broadcast: it starts at zero everywhere, and with sharding (ZeRO) each rank's differs.
    double resumed[2] = {static_cast<double>(done), static_cast<double>(done) * done};
    comm->allReduceSum(resumed, 2, "the resumed step");
    if (resumed[0] * resumed[0] != resumed[1] * worldSize) {
      std::fprintf(stderr, "error: rank %d: --resume: the ranks resumed from different steps "
                   "(this one from %" PRId64 "): --checkpoint must be a directory every rank "
                   "sees, such as a shared filesystem\n", rank, done);
      return kExitUsage;
    }
    for (int i = 0; i < prog.numTensors; ++i)
      if (prog.tensors[i].role == TensorRole::Parameter)
        comm->broadcast(arena + prog.tensors[i].offset, prog.tensors[i].bytes,
                        "the broadcast of the initial parameters");
  }
  if (device)
    device->pushPersistent(prog, arena);
  const int64_t checkpointEvery =
      opt.checkpointEvery > 0 ? opt.checkpointEvery : sched.stepsPerEpoch;

  // Everything the loop needs, allocated now: staging buffers (in the prefetcher), the snapshot
  // of parameters and optimizer state for evaluation, and the labels of the running batch.
  // A slot holds the data inputs one after the other in staging.h's layout, which a step
  // staging the next batch (NextBatch) copies whole.
  std::vector<size_t> dataOffsets;
  size_t dataBytes = 0;
  for (const TensorInfo *t : dataTs) {
    dataBytes = static_cast<size_t>(stagedDataOffset(dataBytes));
    dataOffsets.push_back(dataBytes);
    dataBytes += static_cast<size_t>(t->bytes);
  }
  Prefetcher prefetch(sched, train, val, dataOffsets, dataBytes,
                      static_cast<size_t>(labelsT->bytes));
  if (!prefetch.allocate(error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return kExitInternal;
  }
  struct Range {
    uint64_t offset, bytes;
  };
  std::vector<Range> persistent;
  uint64_t persistentBytes = 0;
  for (int i = 0; i < prog.numTensors; ++i)
    if (prog.tensors[i].role == TensorRole::Parameter || prog.tensors[i].role == TensorRole::State) {
      persistent.push_back({prog.tensors[i].offset, prog.tensors[i].bytes});
      persistentBytes += prog.tensors[i].bytes;
    }
  std::vector<unsigned char> snapshot(hasVal ? static_cast<size_t>(persistentBytes) : 0);
  std::vector<unsigned char> batchLabels(static_cast<size_t>(labelsT->bytes));
  std::vector<uint8_t> checkpointBytes;

  JsonLog log;
  if (!log.open(leader ? opt.logJson : std::string(), !resumedFrom.empty(), error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return kExitUsage;
  }

  unsigned char *labelsDst = arena + labelsT->offset;
  const float *lossPtr = reinterpret_cast<const float *>(arena + lossT->offset);
  const float *predPtr = predT ? reinterpret_cast<const float *>(arena + predT->offset) : nullptr;
  auto setStep = [&](int64_t t) {
    if (!stepT)
      return;
    if (stepT->dtype == DType::F32) {
      const float step = static_cast<float>(t);
      std::memcpy(arena + stepT->offset, &step, sizeof(step));
    } else {
      std::memcpy(arena + stepT->offset, &t, sizeof(t));
    }
  };
  // The step's loss is the mean over this rank's rows; the global batch's is the mean over the
  // ranks (equal shares), and accuracy counts add up.
  auto reduceMetrics = [&](float &loss, double &correct, double &seen) {
    if (!comm)
      return;
    double metrics[3] = {static_cast<double>(loss), correct, seen};
    comm->allReduceSum(metrics, 3, "the all-reduce of the step's loss");
    loss = static_cast<float>(metrics[0] / worldSize);
    correct = metrics[1];
    seen = metrics[2];
  };
  auto loadBatch = [&](Slot &slot) {
    for (size_t i = 0; i < dataTs.size(); ++i)
      std::memcpy(arena + dataTs[i]->offset, slot.data + dataOffsets[i], dataTs[i]->bytes);
    std::memcpy(labelsDst, slot.labels, labelsT->bytes);
    std::memcpy(batchLabels.data(), slot.labels, labelsT->bytes);
  };

  // mpirun hands every rank a pseudo-terminal whatever its own output is: a data-parallel run
  // prints plain lines.
  const bool tty = !comm && ::isatty(STDOUT_FILENO) == 1;
  Progress progress(tty, opt.stepsMode, hasAccuracy, batch);
  const int64_t T = sched.totalSteps, S = sched.stepsPerEpoch;
  if (opt.stepsMode)
    progress.begin(nullptr, done, T);
  std::mt19937_64 currentOrderGen;
  bool haveOrderGen = false;

  auto writeCheckpoint = [&](int64_t t) -> bool {
    CheckpointState st;
    st.modelName = prog.modelName ? prog.modelName : "";
    st.fingerprint = fingerprint;
    st.batch = localBatch;
    st.worldSize = worldSize;
    st.step = t;
    st.epoch = t / S;
    st.seed = opt.seed;
    st.shuffle = opt.shuffle;
    st.padLastBatch = opt.padLastBatch;
    st.trainSamples = train.count;
    st.validationSamples = val.count;
    st.stepsPerEpoch = S;
    st.nextEpoch = t / S + 1;
    st.nextBatchInEpoch = t % S;
    st.dataOrderRng = opt.shuffle && haveOrderGen ? rngText(currentOrderGen) : "";
    st.lossScale = 1.0f;
    st.epochLossSum = epochLossSum;
    st.epochCorrect = epochCorrect;
    st.epochSeen = epochSeen;
    const std::string leaf = checkpointFileName(t);
    if (device)
      device->pullPersistent(prog, arena);
    if (!encodeCheckpoint(prog, arena, st, checkpointBytes, error) ||
        !writeFileAtomic(rankDir, leaf, checkpointBytes.data(), checkpointBytes.size(),
                         error) ||
        !pruneCheckpoints(rankDir, opt.keep, error)) {
      std::fprintf(stderr, "error: --checkpoint %s\n", error.c_str());
      return false;
    }
    if (shardedCheckpoint) {
      // Every rank has its shard of step t on disk once this sum completes; then, and only
      // then, the manifest moves to t.
      double written = 1.0;
      comm->allReduceSum(&written, 1, "the checkpoint barrier");
      if (leader) {
        const std::string manifest =
            nlohmann::json{{"format", "graphc sharded checkpoint"}, {"step", t},
                           {"world_size", worldSize}, {"file", leaf}}
                .dump();
        if (!writeFileAtomic(opt.checkpointDir, "manifest.json", manifest.data(), manifest.size(),
                             error)) {
          std::fprintf(stderr, "error: --checkpoint %s\n", error.c_str());
          return false;
        }
      }
    }
    if (log.enabled())
      log.write({{"event", "checkpoint"}, {"step", t}, {"path", rankDir + "/" + leaf},
                 {"bytes", checkpointBytes.size()}});
    return true;
  };

  if (log.enabled())
    log.write({{"event", "start"},
               {"model", prog.modelName ? prog.modelName : ""},
               {"batch", batch},
               {"steps", T},
               {"epochs", epochs},
               {"steps_per_epoch", S},
               {"train_samples", train.count},
               {"validation_samples", val.count},
               {"seed", opt.seed},
               {"shuffle", opt.shuffle},
               {"resumed_from_step", done},
               {"kernel_threads", device ? 0 : kernelThreads()},
               {"blas_core", device ? std::string() : blasCore()}});
  if (done >= T && leader)
    std::fprintf(stderr, "note: the checkpoint is at step %" PRId64 " of %" PRId64
                 "; nothing left to train\n", done, T);

  if (!device) // the CPU kernels' threads (a device target's step runs on the device)
    startKernelThreads();
  prefetch.start(done);
  if (prog.setNextBatchSource)
    prog.setNextBatchSource(&Prefetcher::nextBatch, &prefetch);
  const Clock::time_point runStart = Clock::now();
  for (int64_t t = done + 1; t <= T; ++t) {
    const int64_t epoch = sched.epochOf(t), b = sched.batchOf(t);
    if (!opt.stepsMode && (b == 0 || t == done + 1)) {
      char title[64];
      std::snprintf(title, sizeof(title), "Epoch %" PRId64 "/%" PRId64, epoch, epochs);
      progress.begin(title, b, S);
    }
    Slot &slot = prefetch.acquire();
    if (!slot.error.empty()) {
      std::fprintf(stderr, "error: %s\n", slot.error.c_str());
      return kExitInternal;
    }
    loadBatch(slot);
    const std::string batchNonFinite = slot.nonFinite;
    currentOrderGen = slot.orderGen;
    haveOrderGen = true;
    prefetch.release();
    setStep(t);
    if (comm)
      comm->setStep(t);

    poisonScratch();
    const Clock::time_point stepStart = Clock::now();
    prog.trainStep(arena);
    const double stepSeconds = secondsSince(stepStart);

    float loss = *lossPtr;
    double correct = 0.0, seen = 0.0;
    if (hasAccuracy)
      accuracy.add(predPtr, batchLabels.data(), correct, seen);
    reduceMetrics(loss, correct, seen);
    const bool finite = std::isfinite(loss);
    epochLossSum += loss;
    epochCorrect += correct;
    epochSeen += seen;
    const double epochLoss = epochLossSum / static_cast<double>(b + 1);
    const double epochAcc = epochSeen > 0 ? epochCorrect / epochSeen : 0.0;
    if (opt.stepsMode) {
      if (!tty) {
        std::printf("step %" PRId64 "/%" PRId64 " loss %.9g\n", t, T, static_cast<double>(loss));
        std::fflush(stdout);
      } else {
        progress.update(t, loss, seen > 0 ? correct / seen : 0.0);
      }
    } else {
      progress.update(b + 1, epochLoss, epochAcc);
    }
    if (log.enabled()) {
      nlohmann::json rec = {{"event", "step"}, {"step", t}, {"epoch", epoch}, {"batch", b},
                            {"loss", jsonNumber(loss)},
                            {"time_s", secondsSince(runStart)},
                            {"step_ms", 1e3 * stepSeconds}};
      if (hasAccuracy)
        rec["accuracy"] = seen > 0 ? correct / seen : 0.0;
      log.write(rec);
    }
    if (!finite) {
      if (!opt.stepsMode) // the epoch's line still comes out (its mean is then non-finite)
        progress.epochEnd(epoch, epochs, epochLoss, epochAcc, false, 0.0, 0.0);
      else
        progress.finishLine();
      std::fprintf(stderr, "error: loss became non-finite at step %" PRId64 "%s%s\n", t,
                   batchNonFinite.empty() ? "" : ": ", batchNonFinite.c_str());
      return kExitNonFinite;
    }

    if (sched.endsEpoch(t)) {
      // Held-out evaluation. The program has only a training step, so: snapshot parameters and
      // optimizer state, run the step on each validation batch, read its loss (computed before
      // the update), and restore the snapshot, which undoes the update exactly.
      double valLossSum = 0.0, valCorrect = 0.0, valSeen = 0.0;
      std::string valNonFinite; // the first validation sample with a NaN or Inf, if any
      if (hasVal) {
        if (device)
          device->pullPersistent(prog, arena);
        size_t pos = 0;
        for (const Range &r : persistent) {
          std::memcpy(snapshot.data() + pos, arena + r.offset, r.bytes);
          pos += r.bytes;
        }
        for (int64_t vb = 0; vb < sched.valBatches; ++vb) {
          Slot &vslot = prefetch.acquire();
          if (!vslot.error.empty()) {
            std::fprintf(stderr, "error: %s\n", vslot.error.c_str());
            return kExitInternal;
          }
          loadBatch(vslot);
          if (valNonFinite.empty())
            valNonFinite = vslot.nonFinite;
          prefetch.release();
          setStep(t + 1);
          poisonScratch();
          prog.trainStep(arena);
          float vloss = *lossPtr;
          double vcorrect = 0.0, vseen = 0.0;
          if (hasAccuracy)
            accuracy.add(predPtr, batchLabels.data(), vcorrect, vseen);
          reduceMetrics(vloss, vcorrect, vseen);
          valLossSum += vloss;
          valCorrect += vcorrect;
          valSeen += vseen;
          pos = 0;
          for (const Range &r : persistent) {
            std::memcpy(arena + r.offset, snapshot.data() + pos, r.bytes);
            pos += r.bytes;
          }
          if (device)
            device->pushPersistent(prog, arena);
        }
      }
      const double valLoss = hasVal ? valLossSum / static_cast<double>(sched.valBatches) : 0.0;
      const double valAcc = valSeen > 0 ? valCorrect / valSeen : 0.0;
      if (!opt.stepsMode) {
        progress.epochEnd(epoch, epochs, epochLoss, epochAcc, hasVal, valLoss, valAcc);
      } else if (hasVal) {
        char line[256];
        int n = std::snprintf(line, sizeof(line), "validation after step %" PRId64 "/%" PRId64
                              " val_loss %.9g", t, T, valLoss);
        if (hasAccuracy)
          std::snprintf(line + n, sizeof(line) - n, " val_accuracy %.4f", valAcc);
        progress.message(line);
      }
      // Validation changes no weight, so a non-finite val_loss does not stop the run; the
      // sample that caused it is named once per evaluation.
      if (hasVal && !std::isfinite(valLoss) && leader)
        std::fprintf(stderr, "warning: val_loss is not finite after step %" PRId64 "%s%s\n", t,
                     valNonFinite.empty() ? "" : ": ", valNonFinite.c_str());
      if (log.enabled()) {
        nlohmann::json rec = {{"event", "epoch"}, {"epoch", epoch}, {"step", t},
                              {"loss", jsonNumber(epochLoss)},
                              {"samples_per_s", progress.samplesPerSecond()},
                              {"time_s", secondsSince(runStart)},
                            {"step_ms", 1e3 * stepSeconds}};
        if (hasAccuracy)
          rec["accuracy"] = epochAcc;
        if (hasVal) {
          rec["val_loss"] = jsonNumber(valLoss);
          if (hasAccuracy)
            rec["val_accuracy"] = valAcc;
        }
        log.write(rec);
      }
      epochLossSum = epochCorrect = epochSeen = 0.0;
    }

    if (writesCheckpoints && !opt.checkpointDir.empty() && (t % checkpointEvery == 0 || t == T) &&
        !writeCheckpoint(t))
      return kExitInternal;
  }
  prefetch.stop();
  progress.finishLine();

  if (device && !opt.saveDir.empty())
    device->pullPersistent(prog, arena);
  if (leader && !opt.saveDir.empty()) {
    if (!makeDirs(opt.saveDir, error)) {
      std::fprintf(stderr, "error: --save-weights %s\n", error.c_str());
      return kExitInternal;
    }
    for (int i = 0; i < prog.numTensors; ++i) {
      const TensorInfo &t = prog.tensors[i];
      if (t.role != TensorRole::Parameter)
        continue;
      const std::string path = opt.saveDir + "/" + sanitize(t.name) + ".npy";
      const NpyDType dtype = t.dtype == DType::F32 ? NpyDType::F32 : NpyDType::I64;
      if (!writeNpy(path, dtype, dimsOf(t), arena + t.offset, error)) {
        std::fprintf(stderr, "error: --save-weights %s\n", error.c_str());
        return kExitInternal;
      }
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  const int rc = trainMain(argc, argv);
  // A data-parallel run ends every rank together: MPI_Finalize on success, MPI_Abort otherwise
  // (one failed rank must not leave the others waiting in a collective).
  if (&graphc_comm_runtime)
    graphc_comm_runtime.finish(rc);
  return rc;
}
