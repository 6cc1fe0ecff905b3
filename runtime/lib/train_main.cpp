// main() of every training binary graphc produces. The generated code contributes only
// `graphc_program` (program.h); this file owns the rest: the command line, the one arena
// allocation, parameter initialisation (init blob, glorot-uniform or --init-weights), loading
// and validating --data/--labels before any step runs, the step loop with per-step or per-epoch
// loss lines on stdout, and --save-weights. Exit codes: 0 success (also --help and --describe),
// 2 bad command line or input files, 3 internal or I/O failure (inconsistent program, arena
// allocation, writing weights), 4 a non-finite loss.
#include "graphc/runtime/npy.h"
#include "graphc/runtime/program.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace graphc::rt;

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitInternal = 3;
constexpr int kExitNonFinite = 4;

const char *kUsage =
    "usage: %s --data X.npy --labels Y.npy [--epochs N | --steps N] [--seed S] [--shuffle]\n"
    "          [--save-weights DIR] [--init-weights DIR] [--describe] [--help]\n"
    "\n"
    "Trains model '%s' (batch %" PRId64 ") with its compiled training step.\n"
    "  --data X.npy         float32 samples [N, ...sample dims] (float64/float16 converted)\n"
    "  --labels Y.npy       labels with N rows: class indices (int64/int32/uint8) or targets\n"
    "  --epochs N           run N passes over floor(N_samples / batch) batches (default 1);\n"
    "                       prints 'epoch E/N loss L' with the mean step loss of each epoch\n"
    "  --steps N            run exactly N steps instead; prints 'step T/N loss L'\n"
    "  --seed S             seed of glorot initialisation and --shuffle (default 0)\n"
    "  --shuffle            visit the samples of each epoch in a random order\n"
    "  --save-weights DIR   write every parameter to DIR/<name>.npy after training\n"
    "  --init-weights DIR   read every parameter from DIR/<name>.npy instead of the defaults\n"
    "  --describe           print the arena layout and exit\n"
    "  --help               print this help and exit\n";

struct Options {
  std::string data, labels, saveDir, initDir;
  int64_t epochs = 1, steps = 0;
  bool stepsMode = false, epochsGiven = false;
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

bool parseArgs(int argc, char **argv, Options &opt, std::string &error) {
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
      if (!needValue(opt.data))
        return false;
    } else if (arg == "--labels") {
      if (!needValue(opt.labels))
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
    if (t.offset > prog.arenaBytes || t.bytes > prog.arenaBytes - t.offset) {
      error = "tensor '" + name + "' lies outside the arena";
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

/// The samples of --data or --labels, converted to the tensor's dtype.
struct HostArray {
  int64_t samples = 0;
  size_t sampleBytes = 0;
  std::vector<float> f32;
  std::vector<int64_t> i64;
  const unsigned char *row(int64_t i) const {
    const unsigned char *base = f32.empty() ? reinterpret_cast<const unsigned char *>(i64.data())
                                            : reinterpret_cast<const unsigned char *>(f32.data());
    return base + static_cast<size_t>(i) * sampleBytes;
  }
};

std::string expectedShape(const std::vector<int64_t> &dims) {
  std::string s = "[*";
  for (size_t i = 1; i < dims.size(); ++i)
    s += "," + std::to_string(dims[i]);
  return s + "]";
}

/// Loads a float tensor's samples: file shape [N, ...dims[1:]], float32 (float64/float16
/// converted; float16 only where allowF16).
bool loadFloatSamples(const std::string &flag, const std::string &path, const TensorInfo &t,
                      bool allowF16, HostArray &out, std::string &error) {
  NpyArray arr;
  if (!readNpy(path, arr, error)) {
    error = flag + " " + error;
    return false;
  }
  const std::vector<int64_t> dims = dimsOf(t);
  bool ok = arr.shape.size() == dims.size() && !dims.empty();
  for (size_t i = 1; ok && i < dims.size(); ++i)
    ok = arr.shape[i] == dims[i];
  ok = ok && (arr.dtype == NpyDType::F32 || arr.dtype == NpyDType::F64 ||
              (allowF16 && arr.dtype == NpyDType::F16));
  if (!ok) {
    error = flag + " " + path + ": expected shape " + expectedShape(dims) + " float32, got " +
            formatShape(arr.shape) + " " + npyDTypeName(arr.dtype);
    return false;
  }
  npyToF32(arr, out.f32);
  out.samples = arr.shape[0];
  out.sampleBytes = static_cast<size_t>(product(dims, 1)) * sizeof(float);
  return true;
}

/// Loads class-index labels: file shape [N] or [N,1], int64/int32/uint8, converted to int64.
bool loadIndexLabels(const std::string &path, const TensorInfo &t, HostArray &out,
                     std::string &error) {
  NpyArray arr;
  if (!readNpy(path, arr, error)) {
    error = "--labels " + error;
    return false;
  }
  const bool shapeOk = arr.shape.size() == 1 || (arr.shape.size() == 2 && arr.shape[1] == 1);
  const bool dtypeOk =
      arr.dtype == NpyDType::I64 || arr.dtype == NpyDType::I32 || arr.dtype == NpyDType::U8;
  if (!shapeOk || !dtypeOk || product(dimsOf(t), 1) != 1) {
    error = "--labels " + path + ": expected shape [*] or [*,1] int64 (or int32/uint8), got " +
            formatShape(arr.shape) + " " + npyDTypeName(arr.dtype);
    return false;
  }
  npyToI64(arr, out.i64);
  for (size_t i = 0; i < out.i64.size(); ++i)
    if (out.i64[i] < 0) {
      error = "--labels " + path + ": label " + std::to_string(out.i64[i]) + " at index " +
              std::to_string(i) + " is negative";
      return false;
    }
  out.samples = arr.shape[0];
  out.sampleBytes = sizeof(int64_t);
  return true;
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

struct FreeDeleter {
  void operator()(unsigned char *p) const { std::free(p); }
};

} // namespace

int main(int argc, char **argv) {
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
    return 0;
  }
  if (opt.describe)
    return describe(prog);

  if (!validateProgram(prog, error)) {
    std::fprintf(stderr, "error: program '%s' is inconsistent: %s\n", prog.modelName,
                 error.c_str());
    return kExitInternal;
  }
  int nData, nLabels, nLoss, nStep;
  const TensorInfo *dataT = findRole(prog, TensorRole::Data, nData);
  const TensorInfo *labelsT = findRole(prog, TensorRole::Labels, nLabels);
  const TensorInfo *lossT = findRole(prog, TensorRole::Loss, nLoss);
  const TensorInfo *stepT = findRole(prog, TensorRole::Step, nStep);
  if (nData != 1 || nLabels != 1 || nLoss != 1 || nStep > 1 || dataT->rank < 1 ||
      labelsT->rank < 1 || dataT->dtype != DType::F32 || lossT->dtype != DType::F32 ||
      lossT->bytes < sizeof(float) || dataT->dims[0] != labelsT->dims[0] || dataT->dims[0] < 1) {
    std::fprintf(stderr,
                 "error: program '%s' is inconsistent: it needs exactly one float32 data tensor, "
                 "one labels tensor with the same batch, one float32 loss and at most one step\n",
                 prog.modelName);
    return kExitInternal;
  }
  const int64_t batch = dataT->dims[0];

  if (opt.data.empty() || opt.labels.empty()) {
    std::fprintf(stderr, "error: %s is required (see --help)\n",
                 opt.data.empty() ? "--data" : "--labels");
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

  // Load and validate the inputs before touching the arena or running anything.
  HostArray data, labels;
  if (!loadFloatSamples("--data", opt.data, *dataT, /*allowF16=*/true, data, error) ||
      !(labelsT->dtype == DType::I64
            ? loadIndexLabels(opt.labels, *labelsT, labels, error)
            : loadFloatSamples("--labels", opt.labels, *labelsT, /*allowF16=*/true, labels,
                               error))) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return kExitUsage;
  }
  if (labels.samples != data.samples) {
    std::fprintf(stderr, "error: --labels %s: %" PRId64 " samples, but --data %s has %" PRId64 "\n",
                 opt.labels.c_str(), labels.samples, opt.data.c_str(), data.samples);
    return kExitUsage;
  }
  if (data.samples < batch) {
    std::fprintf(stderr, "error: --data %s: %" PRId64 " samples, fewer than the batch size %" PRId64
                 "\n", opt.data.c_str(), data.samples, batch);
    return kExitUsage;
  }

  // The one arena allocation; everything after this reuses it.
  const uint64_t arenaSize = (std::max<uint64_t>(prog.arenaBytes, 1) + 4095) / 4096 * 4096;
  std::unique_ptr<unsigned char, FreeDeleter> arenaOwner(
      static_cast<unsigned char *>(std::aligned_alloc(4096, arenaSize)));
  if (!arenaOwner) {
    std::fprintf(stderr, "error: cannot allocate the arena of %" PRIu64 " bytes\n", arenaSize);
    return kExitInternal;
  }
  unsigned char *arena = arenaOwner.get();
  std::memset(arena, 0, arenaSize);

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

  const int64_t stepsPerEpoch = data.samples / batch;
  const int64_t totalSteps = opt.stepsMode ? opt.steps : opt.epochs * stepsPerEpoch;
  // Allocated once here: the loop itself only copies.
  std::vector<int64_t> order(opt.shuffle ? static_cast<size_t>(data.samples) : 0);
  unsigned char *dataDst = arena + dataT->offset;
  unsigned char *labelsDst = arena + labelsT->offset;
  const float *lossPtr = reinterpret_cast<const float *>(arena + lossT->offset);
  double epochSum = 0.0;

  for (int64_t t = 1; t <= totalSteps; ++t) {
    const int64_t epoch = (t - 1) / stepsPerEpoch + 1; // 1-based, as printed
    const int64_t b = (t - 1) % stepsPerEpoch;
    if (opt.shuffle && b == 0) {
      // Fisher-Yates with an explicit modulo so the order is the same on every standard
      // library; epoch E draws from mt19937_64(seed + E).
      std::mt19937_64 gen(opt.seed + static_cast<uint64_t>(epoch));
      for (size_t i = 0; i < order.size(); ++i)
        order[i] = static_cast<int64_t>(i);
      for (size_t i = order.size() - 1; i > 0; --i)
        std::swap(order[i], order[gen() % (i + 1)]);
    }
    if (opt.shuffle) {
      for (int64_t j = 0; j < batch; ++j) {
        const int64_t src = order[static_cast<size_t>(b * batch + j)];
        std::memcpy(dataDst + j * data.sampleBytes, data.row(src), data.sampleBytes);
        std::memcpy(labelsDst + j * labels.sampleBytes, labels.row(src), labels.sampleBytes);
      }
    } else {
      std::memcpy(dataDst, data.row(b * batch), batch * data.sampleBytes);
      std::memcpy(labelsDst, labels.row(b * batch), batch * labels.sampleBytes);
    }
    if (stepT) {
      if (stepT->dtype == DType::F32) {
        const float step = static_cast<float>(t);
        std::memcpy(arena + stepT->offset, &step, sizeof(step));
      } else {
        std::memcpy(arena + stepT->offset, &t, sizeof(t));
      }
    }

    prog.trainStep(arena);

    const float loss = *lossPtr;
    const bool finite = std::isfinite(loss);
    if (opt.stepsMode) {
      std::printf("step %" PRId64 "/%" PRId64 " loss %.9g\n", t, totalSteps,
                  static_cast<double>(loss));
      std::fflush(stdout);
    } else {
      epochSum += loss;
      if (b == stepsPerEpoch - 1 || !finite) {
        // On a non-finite loss the epoch's line still comes out (its mean is then non-finite).
        std::printf("epoch %" PRId64 "/%" PRId64 " loss %.9g\n", epoch, opt.epochs,
                    epochSum / static_cast<double>(b + 1));
        std::fflush(stdout);
        epochSum = 0.0;
      }
    }
    if (!finite) {
      std::fprintf(stderr, "error: loss became non-finite at step %" PRId64 "\n", t);
      return kExitNonFinite;
    }
  }

  if (!opt.saveDir.empty()) {
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
