// Keras importer: model JSON (llvm::json) + optional HDF5 weights -> graph dialect forward
// function.
//
// Layout. Keras is channels-last (NHWC activations, HWIO kernels); graphc is NCHW/OIHW. An
// image-shaped (rank 4) model input is declared NCHW, so the training binary reads NCHW data
// (and a rank-5 input of frames (batch, time, C, H, W), held as N * T images for the
// TimeDistributed layers);
// every Conv2D/DepthwiseConv2D kernel is transposed to OIHW at import. Values carry their
// Keras meaning alongside (struct Tensor): `image` says the value is NCHW where Keras sees
// NHWC; a Flatten of an image is a plain reshape in graphc's (C, H, W) order, so it remembers
// that order (`flat`), and the Dense layer that reads it gets its kernel rows permuted at
// import (free) so that it computes exactly what Keras computes. A ZeroPadding2D is folded into
// the padding of the conv or pool that reads it. A 1-D feature map (Conv1D and 1-D pooling
// outputs, `seq`) is a height-1 image [N, C, 1, L] where Keras sees [N, L, C]; a rank-3 input
// stays in Keras's order and is transposed once where a 1-D layer first reads it.
// Conv2DTranspose is graph.conv2d_backward_data, the adjoint of the convolution it undoes.
//
// Weights keep Keras's names (`<layer>/<variable>`, e.g. `conv2d/kernel`) in graphc's layout.
//
// Anything outside the supported set stops the import with one line naming the file, the
// layer and its class or attribute.
#include "importers/keras/KerasImporter.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "dialects/graph/GraphOps.h"
#include "importers/common/ImageOps.h"
#include "importers/common/InitialValueCache.h"
#include "importers/common/RecurrentUnroll.h"
#include "importers/keras/KerasWeights.h"

// LAPACK (OpenBLAS exports it): QR factorisation for the orthogonal initializer.
extern "C" void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau,
                        double *work, const int *lwork, int *info);
extern "C" void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda,
                        const double *tau, double *work, const int *lwork, int *info);

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;
namespace json = llvm::json;

namespace {

constexpr const char *kSupported =
    "InputLayer (rank 2 to 4; rank 5: a volume for the 3-D layers, or frames for "
    "TimeDistributed), Conv3D, Conv3DTranspose, MaxPooling3D, AveragePooling3D, "
    "GlobalAveragePooling3D, GlobalMaxPooling3D, UpSampling3D, ZeroPadding3D, Cropping3D, "
    "SpatialDropout3D, Dense, EinsumDense (dense "
    "products), Conv2D, DepthwiseConv2D, MaxPooling2D, AveragePooling2D, "
    "GlobalAveragePooling2D, GlobalMaxPooling2D, Flatten, Reshape, Activation (relu, relu6, "
    "sigmoid, hard_sigmoid, tanh, softmax, gelu, elu, selu, swish/silu, softplus, softsign, "
    "leaky_relu, hard_silu, exponential, mish, linear), ReLU, LeakyReLU, ELU, PReLU, Softmax, "
    "Dropout (noise_shape), SpatialDropout1D, SpatialDropout2D, AlphaDropout, GaussianNoise, "
    "GaussianDropout, RandomFlip, RandomRotation, RandomZoom, RandomTranslation, RandomCrop, "
    "RandomContrast, RandomBrightness, RandomGrayscale, RandomInvert (of the input image), "
    "BatchNormalization, Rescaling, Normalization, "
    "ZeroPadding2D (folded into the next Conv2D/DepthwiseConv2D/pooling), "
    "ZeroPadding1D (folded into the next Conv1D/1-D pooling), Cropping1D, Cropping2D, "
    "CenterCrop, Resizing (nearest, bilinear; crop_to_aspect_ratio), UpSampling1D, "
    "UpSampling2D (nearest, bilinear), "
    "Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate, Dot, RepeatVector, "
    "Identity, Masking, Conv1D, SeparableConv1D, DepthwiseConv1D, MaxPooling1D, "
    "AveragePooling1D, GlobalAveragePooling1D, GlobalMaxPooling1D, Conv2DTranspose, "
    "Conv1DTranspose, "
    "SeparableConv2D, Permute, LayerNormalization, RMSNormalization and UnitNormalization (last "
    "axis), GroupNormalization (channels), MultiHeadAttention and GroupedQueryAttention (causal "
    "mask, attention_mask, the inputs' masks), "
    "Attention (dot or concat scores, use_scale, causal mask, masks, dropout), "
    "AdditiveAttention, "
    "Embedding (mask_zero), LSTM, GRU, SimpleRNN (dropout; LSTM and SimpleRNN "
    "recurrent_dropout), Bidirectional, "
    "TimeDistributed (Dense, Dropout, activations; over frames any single-input layer), "
    "keras.applications' LayerScale and StochasticDepth, Keras 3 operations (Add, Subtract, "
    "Multiply, Maximum, Minimum; by a number also Divide, TrueDivide), and nested "
    "Sequential/Functional models";

struct ImportError {
  std::string message;
};

/// A value with its Keras meaning (see the file comment).
struct Tensor {
  Value v;
  bool image = false;        // v is [N, C, H, W]; Keras sees [N, H, W, C]
  bool seq = false;          // with image: v is [N, C, 1, L], Keras sees [N, L, C] (a 1-D
                             // feature map as a height-1 image, for conv2d and the pools)
  int64_t flat[3] = {0, 0, 0}; // v is [N, C*H*W] in (C, H, W) order; Keras's is (H, W, C)
  int64_t pad[4] = {0, 0, 0, 0}; // pending ZeroPadding2D/1D [top, left, bottom, right]
  bool nonNegative = false;  // relu/relu6/sigmoid/softmax output (zero padding = -inf padding
                             // for a max pool)
  Value mask;                // [N, steps]: 1 where a step is real, 0 where it is padding (an
                             // Embedding's mask_zero), for the recurrent layers that read it
  int64_t timeSteps = 0;     // nonzero: v holds N * timeSteps rows (frames of a (batch, time,
                             // ...) tensor, sample-major) for TimeDistributed layers
  bool volume = false;       // v is [N, C, D, H, W]; Keras sees [N, D, H, W, C] (the 3-D
                             // layers' volumes)
  bool hasFlat() const { return flat[0] != 0; }
  bool padded() const { return pad[0] || pad[1] || pad[2] || pad[3]; }
};

/// One layer entry of a model's "layers" list.
struct Layer {
  const json::Object *obj = nullptr;
  const json::Object *config = nullptr;
  std::string name, cls;
  std::string module;         // Keras 3's "module" of the class ("" when the file has none)
  std::string registeredName; // Keras 3's "registered_name" ("package>Class" for custom ones)
  std::string k3path;      // Keras 3 weights group, by class-derived names
  std::string k3namePath;  // the same with layer names (older writers)
  std::vector<std::string> legacyPath; // layer names from the top model down to this one
  std::string scope;       // unique key prefix of the model holding it
  bool trainable = true;
};

/// One (layer, node) reference: ["name", node, tensor].
struct Ref {
  std::string layer;
  int64_t node = 0, tensor = 0;
};

/// "1st", "2nd", "3rd", "4th", ... for messages.
std::string ordinal(size_t n) {
  const char *suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return std::to_string(n) + suffix;
}

/// "once", "twice", "3 times", ... for messages.
std::string times(size_t n) {
  return n == 1 ? "once" : n == 2 ? "twice" : std::to_string(n) + " times";
}

/// Keras's naming.to_snake_case, as the Keras 3 weights file uses it for container paths.
std::string toSnakeCase(const std::string &name) {
  std::string s;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_')
      s += c;
  // (.)([A-Z][a-z]+) -> \1_\2
  std::string a;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && std::isupper(static_cast<unsigned char>(s[i])) && i + 1 < s.size() &&
        std::islower(static_cast<unsigned char>(s[i + 1])))
      a += '_';
    a += s[i];
  }
  // ([a-z])([A-Z]) -> \1_\2, then lower
  std::string b;
  for (size_t i = 0; i < a.size(); ++i) {
    if (i > 0 && std::isupper(static_cast<unsigned char>(a[i])) &&
        std::islower(static_cast<unsigned char>(a[i - 1])))
      b += '_';
    b += char(std::tolower(static_cast<unsigned char>(a[i])));
  }
  return b;
}

bool isModelClass(llvm::StringRef cls) {
  return cls == "Sequential" || cls == "Functional" || cls == "Model";
}

/// Nesting depth of JSON text (outside strings): llvm::json's parser recurses.
bool tooDeep(llvm::StringRef text, int limit) {
  int depth = 0;
  bool inString = false, escape = false;
  for (char c : text) {
    if (inString) {
      if (escape)
        escape = false;
      else if (c == '\\')
        escape = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"')
      inString = true;
    else if (c == '[' || c == '{') {
      if (++depth > limit)
        return true;
    } else if (c == ']' || c == '}')
      --depth;
  }
  return false;
}

class Importer {
public:
  Importer(MLIRContext &ctx, std::string path, const KerasImportOptions &options,
           KerasTrainingDefaults &defaults)
      : ctx(ctx), b(&ctx), path(std::move(path)), options(options), defaults(defaults) {}

  OwningOpRef<ModuleOp> run(const json::Value &root, std::string &error) {
    try {
      return build(root);
    } catch (const ImportError &e) {
      // Problems of the weights file name that file instead of the model.
      bool weightsFile = !options.weightsPath.empty() &&
                         e.message.rfind(options.weightsPath + ": ", 0) == 0;
      error = weightsFile ? e.message : path + ": " + e.message;
      return nullptr;
    }
  }

private:
  [[noreturn]] void fail(const std::string &message) { throw ImportError{message}; }
  static std::string label(const Layer &l) { return "layer \"" + l.name + "\" (" + l.cls + ")"; }
  [[noreturn]] void failLayer(const Layer &l, const std::string &message) {
    fail(label(l) + ": " + message);
  }
  [[noreturn]] void refuseAttr(const Layer &l, const std::string &attr, const std::string &why) {
    fail(label(l) + ": attribute " + attr + " " + why);
  }

  //===--------------------------------------------------------------------===//
  // JSON accessors
  //===--------------------------------------------------------------------===//

  static std::string str(const json::Value *v) {
    if (!v)
      return "";
    if (auto s = v->getAsString())
      return s->str();
    return "";
  }
  static std::optional<int64_t> integer(const json::Value *v) {
    if (!v)
      return std::nullopt;
    if (auto i = v->getAsInteger())
      return *i;
    if (auto d = v->getAsNumber(); d && std::isfinite(*d) && *d == std::floor(*d) &&
                                   std::fabs(*d) < 9e15)
      return int64_t(*d);
    return std::nullopt;
  }
  static std::string show(const json::Value *v) {
    if (!v)
      return "absent";
    std::string text;
    llvm::raw_string_ostream os(text);
    os << *v;
    os.flush();
    if (text.size() > 60)
      text = text.substr(0, 57) + "...";
    return text;
  }

  int64_t intAttr(const Layer &l, llvm::StringRef key, int64_t dflt) {
    const json::Value *v = l.config->get(key);
    if (!v || v->getAsNull())
      return dflt;
    auto i = integer(v);
    if (!i)
      refuseAttr(l, key.str(), "= " + show(v) + " is not an integer");
    return *i;
  }
  double numAttr(const Layer &l, llvm::StringRef key, double dflt) {
    const json::Value *v = l.config->get(key);
    if (!v || v->getAsNull())
      return dflt;
    auto d = v->getAsNumber();
    if (!d || !std::isfinite(*d))
      refuseAttr(l, key.str(), "= " + show(v) + " is not a number");
    return *d;
  }
  bool boolAttr(const Layer &l, llvm::StringRef key, bool dflt) {
    const json::Value *v = l.config->get(key);
    if (!v || v->getAsNull())
      return dflt;
    auto x = v->getAsBoolean();
    if (!x)
      refuseAttr(l, key.str(), "= " + show(v) + " is not true or false");
    return *x;
  }
  std::string strAttr(const Layer &l, llvm::StringRef key, const std::string &dflt) {
    const json::Value *v = l.config->get(key);
    if (!v || v->getAsNull())
      return dflt;
    auto s = v->getAsString();
    if (!s)
      refuseAttr(l, key.str(), "= " + show(v) + " is not a string");
    return s->str();
  }
  /// An int or a list of `n` ints (kernel_size, strides, ...), each at least `min`.
  std::vector<int64_t> intsAttr(const Layer &l, llvm::StringRef key, size_t n,
                                std::vector<int64_t> dflt, int64_t min = 1) {
    const json::Value *v = l.config->get(key);
    std::vector<int64_t> out;
    if (!v || v->getAsNull()) {
      out = dflt;
    } else if (auto i = integer(v)) {
      out.assign(n, *i);
    } else if (auto *a = v->getAsArray()) {
      for (const json::Value &e : *a) {
        auto i = integer(&e);
        if (!i)
          refuseAttr(l, key.str(), "= " + show(v) + " is not a list of integers");
        out.push_back(*i);
      }
    } else {
      refuseAttr(l, key.str(), "= " + show(v) + " is not an integer or a list of integers");
    }
    if (out.size() != n)
      refuseAttr(l, key.str(), "= " + show(v) + " must have " + std::to_string(n) + " values");
    for (int64_t x : out)
      if (x < min || x > (int64_t{1} << 24))
        refuseAttr(l, key.str(), "= " + show(v) + " is out of range");
    return out;
  }

  //===--------------------------------------------------------------------===//
  // Types, parameters
  //===--------------------------------------------------------------------===//

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }
  static std::vector<int64_t> shapeOf(Value v) {
    auto s = cast<RankedTensorType>(v.getType()).getShape();
    return {s.begin(), s.end()};
  }
  /// The shape as Keras sees it.
  static std::vector<int64_t> kerasShape(const Tensor &t) {
    auto s = shapeOf(t.v);
    std::vector<int64_t> k = s;
    if (t.image && t.seq)
      k = {s[0], s[3], s[1]};
    else if (t.image)
      k = {s[0], s[2], s[3], s[1]};
    else if (t.volume)
      k = {s[0], s[2], s[3], s[4], s[1]};
    if (t.timeSteps) { // (batch * time, ...) seen as (batch, time, ...)
      k[0] /= t.timeSteps;
      k.insert(k.begin() + 1, t.timeSteps);
    }
    return k;
  }
  static std::string shapeText(const std::vector<int64_t> &s) {
    std::string text = "(";
    for (size_t i = 0; i < s.size(); ++i)
      text += (i ? ", " : "") + (s[i] < 0 ? std::string("None") : std::to_string(s[i]));
    return text + (s.size() == 1 ? ",)" : ")");
  }
  static int64_t product(ArrayRef<int64_t> s) {
    return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
  }
  void checkSize(const Layer &l, ArrayRef<int64_t> shape) {
    int64_t count = 1;
    for (int64_t d : shape)
      if (d <= 0 || __builtin_mul_overflow(count, d, &count) ||
          count > options.maxParameterElements)
        failLayer(l, "weight shape " + shapeText({shape.begin(), shape.end()}) +
                         " is empty or too large");
  }

  Value argument(RankedTensorType type, std::vector<NamedAttribute> attrs) {
    unsigned index = func.getNumArguments();
    func.insertArgument(index, type, b.getDictionaryAttr(attrs), b.getUnknownLoc());
    return func.getArgument(index);
  }

  /// A parameter (or, with kind "batch_stats", persistent state) argument holding `values`
  /// in `shape` (graphc's layout), named `<layer>/<var>`; created once per layer and var, so
  /// that a shared layer reads the same argument at every call.
  Value persistent(const Layer &l, const std::string &var, ArrayRef<int64_t> shape,
                   const std::vector<float> &values, bool trainable, llvm::StringRef kind) {
    std::string key = l.scope + l.name + "/" + var;
    if (auto it = params.find(key); it != params.end())
      return it->second;
    std::string name = l.name + "/" + var;
    if (usedNames.count(name))
      name = l.scope + name;
    while (usedNames.count(name))
      name += "_";
    usedNames.insert(name);
    auto type = f32(shape);
    // Shared with the model's other imports when the driver passes its cache.
    InitialValueCache &cache = options.initialValues ? *options.initialValues : ownInitialValues;
    DenseResourceElementsAttr init = cache.get(type, name, values);
    std::vector<NamedAttribute> attrs = {b.getNamedAttr(kKindAttr, b.getStringAttr(kind)),
                                         b.getNamedAttr(kNameAttr, b.getStringAttr(name)),
                                         b.getNamedAttr(kInitAttr, init)};
    if (kind == "parameter" && !trainable)
      attrs.push_back(b.getNamedAttr(kTrainableAttr, b.getBoolAttr(false)));
    Value arg = argument(type, attrs);
    params[key] = arg;
    if (kind == "parameter" && trainable)
      trainedArgs.insert(arg);
    return arg;
  }

  /// Whether `v` is computed from a trained parameter (so it needs a gradient): a walk over
  /// its producers, each visited once.
  bool readsTrained(Value v) {
    llvm::DenseSet<Value> seen;
    SmallVector<Value> stack{v};
    while (!stack.empty()) {
      Value u = stack.pop_back_val();
      if (!seen.insert(u).second)
        continue;
      if (trainedArgs.contains(u))
        return true;
      if (Operation *op = u.getDefiningOp())
        for (Value operand : op->getOperands())
          stack.push_back(operand);
    }
    return false;
  }

  Value stepInput() {
    if (!stepArg)
      stepArg = argument(f32({}), {b.getNamedAttr(kKindAttr, b.getStringAttr("input")),
                                   b.getNamedAttr(kNameAttr, b.getStringAttr("step")),
                                   b.getNamedAttr(kRoleAttr, b.getStringAttr("step"))});
    return stepArg;
  }

  //===--------------------------------------------------------------------===//
  // Weights: read from the file, or initialised as Keras initialises them
  //===--------------------------------------------------------------------===//

  struct VarSpec {
    std::string name;            // Keras variable name: kernel, bias, gamma, ...
    std::vector<int64_t> shape;  // Keras layout
    std::string initKey;         // config key of its initializer
    std::string initDefault;     // when the config has none
    double fanIn = 1, fanOut = 1;
  };

  std::vector<float> initialise(const Layer &l, const VarSpec &v) {
    const json::Value *spec = l.config->get(v.initKey);
    std::string kind = v.initDefault;
    const json::Object *cfg = nullptr;
    if (spec && !spec->getAsNull()) {
      if (auto s = spec->getAsString()) {
        kind = s->str();
      } else if (auto *o = spec->getAsObject()) {
        kind = str(o->get("class_name"));
        cfg = o->getObject("config");
      } else {
        refuseAttr(l, v.initKey, "= " + show(spec) + " is not an initializer");
      }
    }
    std::string k = toSnakeCase(kind);
    int64_t n = product(v.shape);
    std::vector<float> out(size_t(n), 0.f);
    // A stream per parameter: the values do not depend on the order of the layers.
    uint64_t h = 1469598103934665603ull;
    for (char c : l.scope + l.name + "/" + v.name)
      h = (h ^ uint8_t(c)) * 1099511628211ull;
    std::mt19937_64 gen(options.seed ^ h);
    auto uniform = [&](double limit) {
      for (float &x : out)
        x = float((double(gen() >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0) * limit);
    };
    if (k == "zeros")
      return out;
    if (k == "ones") {
      std::fill(out.begin(), out.end(), 1.f);
      return out;
    }
    if (k == "init_values") { // LayerScale's: the config's init_values everywhere
      std::fill(out.begin(), out.end(), float(numAttr(l, "init_values", 0.0)));
      return out;
    }
    if (k == "constant") {
      double value = 0;
      if (cfg)
        if (auto d = cfg->getNumber("value"))
          value = *d;
      std::fill(out.begin(), out.end(), float(value));
      return out;
    }
    if (k == "glorot_uniform") {
      uniform(std::sqrt(6.0 / (v.fanIn + v.fanOut)));
      return out;
    }
    if (k == "he_uniform") {
      uniform(std::sqrt(6.0 / v.fanIn));
      return out;
    }
    if (k == "lecun_uniform") {
      uniform(std::sqrt(3.0 / v.fanIn));
      return out;
    }
    if (k == "orthogonal") {
      double gain = cfg ? cfg->getNumber("gain").value_or(1.0) : 1.0;
      orthogonal(out, v.shape, gain, gen);
      return out;
    }
    if (k == "random_uniform" || k == "uniform") {
      double lo = -0.05, hi = 0.05;
      if (cfg) {
        lo = cfg->getNumber("minval").value_or(lo);
        hi = cfg->getNumber("maxval").value_or(hi);
      }
      for (float &x : out)
        x = float(lo + (hi - lo) * (double(gen() >> 11) * (1.0 / 9007199254740992.0)));
      return out;
    }
    refuseAttr(l, v.initKey, "= " + kind +
                                 " is not supported without --weights (supported: "
                                 "GlorotUniform, HeUniform, LecunUniform, RandomUniform, "
                                 "Orthogonal, Zeros, Ones, Constant)");
  }

  /// Keras's Orthogonal initializer: the Q factor of a [max(r, c), min(r, c)] standard normal
  /// matrix (r = product of the leading dims, c = the last), its columns' signs fixed by R's
  /// diagonal, transposed when r < c, times `gain`. LAPACK's Householder QR, O(r c min(r, c)).
  static void orthogonal(std::vector<float> &out, const std::vector<int64_t> &shape, double gain,
                         std::mt19937_64 &gen) {
    int64_t cols = shape.empty() ? 1 : shape.back();
    int64_t rows = cols ? int64_t(out.size()) / cols : 0;
    int m = int(std::max(rows, cols)), n = int(std::min(rows, cols));
    if (m == 0 || n == 0)
      return;
    // Column-major m x n standard normal draws (Box-Muller on 53-bit uniforms: the same on
    // every standard library).
    std::vector<double> a(size_t(m) * size_t(n));
    auto unit = [&] { return (double(gen() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = std::sqrt(-2.0 * std::log(unit())) * std::cos(2.0 * M_PI * unit());
    std::vector<double> tau(static_cast<size_t>(n));
    int info = 0, lwork = -1;
    double query = 0;
    dgeqrf_(&m, &n, a.data(), &m, tau.data(), &query, &lwork, &info);
    lwork = std::max(1, int(query));
    std::vector<double> work(static_cast<size_t>(lwork));
    dgeqrf_(&m, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
    std::vector<double> sign(static_cast<size_t>(n));
    for (int j = 0; j < n; ++j)
      sign[size_t(j)] = a[size_t(j) * size_t(m) + size_t(j)] < 0 ? -1.0 : 1.0;
    lwork = -1;
    dorgqr_(&m, &n, &n, a.data(), &m, tau.data(), &query, &lwork, &info);
    lwork = std::max(1, int(query));
    work.assign(size_t(lwork), 0.0);
    dorgqr_(&m, &n, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
    // q[i][j] = a[j * m + i]; the result is q (rows >= cols) or q^T, row-major [rows, cols].
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        int64_t i = rows >= cols ? r : c, j = rows >= cols ? c : r;
        out[size_t(r * cols + c)] =
            float(gain * sign[size_t(j)] * a[size_t(j) * size_t(m) + size_t(i)]);
      }
  }

  /// The arrays of `vars` for layer `l`, in Keras layout and in the order of `vars`.
  /// `k3sub`: the sub-object holding the variables in a Keras 3 file ("cell" for recurrent
  /// layers, whose variables belong to their cell).
  std::vector<KerasArray> layerWeights(const Layer &l, const std::vector<VarSpec> &vars,
                                       const std::string &k3sub = "") {
    std::vector<KerasArray> out;
    if (!weights) {
      for (const VarSpec &v : vars)
        out.push_back({v.shape, initialise(l, v)});
      return out;
    }
    std::string error;
    bool found = false;
    if (weights->layout() == KerasWeightFile::Layout::Keras3) {
      std::string sub = k3sub.empty() ? "" : "/" + k3sub;
      std::vector<std::string> candidates = {l.k3path + sub, l.k3namePath + sub};
      for (const std::string &c : std::vector<std::string>(candidates)) {
        std::string alt = c;
        if (alt.rfind("layers", 0) == 0)
          candidates.push_back("_layer_checkpoint_dependencies" + alt.substr(6));
      }
      for (const std::string &candidate : candidates) {
        if (!weights->readVars(candidate, out, found, error))
          fail(options.weightsPath + ": " + label(l) + ": " + error);
        if (found && !out.empty())
          break;
      }
      if (!found || out.empty())
        fail(options.weightsPath + ": no weights for " + label(l) + " (looked for group " +
             l.k3path + sub + "/vars)");
      if (out.size() != vars.size())
        fail(options.weightsPath + ": " + label(l) + " has " + std::to_string(out.size()) +
             " variables in " + l.k3path + sub + "/vars, expected " +
             std::to_string(vars.size()));
    } else {
      std::vector<std::pair<std::string, KerasArray>> group;
      const std::string &top = l.legacyPath.front();
      if (!weights->readLegacyGroup(top, group, found, error))
        fail(options.weightsPath + ": " + label(l) + ": " + error);
      if (!found)
        fail(options.weightsPath + ": no weights for " + label(l) + " (no group \"" + top +
             "\")");
      for (const VarSpec &v : vars) {
        std::string want = l.name + "/" + v.name;
        const KerasArray *match = nullptr;
        for (auto &[name, array] : group)
          if (name == want || (name.size() > want.size() &&
                               name.compare(name.size() - want.size() - 1, std::string::npos,
                                            "/" + want) == 0)) {
            match = &array;
            break;
          }
        if (!match) {
          // Variables of a layer's cell or wrapped layer carry other path components
          // ("lstm/lstm_cell/kernel", "bidirectional/forward_lstm/lstm_cell/kernel",
          // "time_distributed/kernel" for "time_distributed/dense"): take the one weight
          // under the layer's own name, else under its wrapper's, that ends with the
          // variable's name.
          SmallVector<llvm::StringRef> parts;
          llvm::StringRef(l.name).split(parts, '/');
          for (auto leaf = parts.rbegin(); leaf != parts.rend() && !match; ++leaf) {
            for (auto &[name, array] : group) {
              bool under = ("/" + name).find("/" + leaf->str() + "/") != std::string::npos;
              bool ends = name.size() > v.name.size() &&
                          name.compare(name.size() - v.name.size() - 1, std::string::npos,
                                       "/" + v.name) == 0;
              if (under && ends) {
                if (match)
                  fail(options.weightsPath + ": two weights match \"" + leaf->str() +
                       "/.../" + v.name + "\" for " + label(l) + " in group \"" + top + "\"");
                match = &array;
              }
            }
          }
        }
        if (!match && vars.size() == 1) {
          // A layer of one variable takes the one weight under its name, whatever that
          // weight's own name (tf.keras 2's LayerScale holds an unnamed tf.Variable, saved
          // as "<layer>/Variable:0").
          const KerasArray *only = nullptr;
          size_t count = 0;
          for (auto &[name, array] : group)
            if (llvm::StringRef(name).starts_with(l.name + "/") ||
                ("/" + name).find("/" + l.name + "/") != std::string::npos) {
              only = &array;
              ++count;
            }
          if (count == 1)
            match = only;
        }
        if (!match)
          fail(options.weightsPath + ": no weight \"" + want + "\" for " + label(l) +
               " in group \"" + top + "\"");
        out.push_back(*match);
      }
    }
    for (size_t i = 0; i < vars.size(); ++i)
      if (out[i].dims != vars[i].shape)
        fail(options.weightsPath + ": " + label(l) + ": " + vars[i].name + " has shape " +
             shapeText(out[i].dims) + ", the model needs " + shapeText(vars[i].shape));
    return out;
  }

  //===--------------------------------------------------------------------===//
  // Layers
  //===--------------------------------------------------------------------===//

  void checkCommon(const Layer &l) {
    // dtype: a string or a (Keras 3 / mixed precision) policy object.
    if (const json::Value *d = l.config->get("dtype"); d && !d->getAsNull()) {
      std::string name = str(d);
      if (auto *o = d->getAsObject())
        if (auto *c = o->getObject("config"))
          name = str(c->get("name"));
      if (name != "float32")
        refuseAttr(l, "dtype", "= " + (name.empty() ? show(d) : name) +
                                   " is not supported; graphc trains float32");
    }
    for (const auto &kv : *l.config) {
      llvm::StringRef key = kv.first;
      if ((key.ends_with("_regularizer") || key.ends_with("_constraint")) &&
          !kv.second.getAsNull())
        refuseAttr(l, key.str(), "= " + show(&kv.second) +
                                     " is not supported (it changes the loss or the update)");
    }
    if (const json::Value *df = l.config->get("data_format");
        df && !df->getAsNull() && str(df) != "channels_last")
      refuseAttr(l, "data_format", "= " + show(df) + " is not supported; use channels_last");
  }

  Tensor needImage(const Layer &l, const Tensor &t) {
    if (!t.image || t.seq)
      failLayer(l, "expects a 4-D (batch, height, width, channels) input, got shape " +
                       shapeText(kerasShape(t)));
    return t;
  }
  static const char *paddingLayer(const Tensor &t) {
    return t.seq ? "ZeroPadding1D" : "ZeroPadding2D";
  }
  void noPadding(const Layer &l, const Tensor &t) {
    if (!t.padded())
      return;
    if (t.seq)
      failLayer(l, "reads a ZeroPadding1D output; graphc folds ZeroPadding1D only into a "
                   "following Conv1D, MaxPooling1D or AveragePooling1D layer");
    failLayer(l, "reads a ZeroPadding2D output; graphc folds ZeroPadding2D only into a "
                 "following Conv2D, DepthwiseConv2D or pooling layer");
  }
  void noFlat(const Layer &l, const Tensor &t) {
    if (t.hasFlat())
      failLayer(l, "reads a flattened feature map; graphc keeps it in (channels, height, "
                   "width) order and only a Dense layer (after Dropout, noise or Activation "
                   "layers at most) can read it");
  }

  /// Keras's hard_sigmoid: clip(x / 6 + 1/2, 0, 1) in Keras 3 (relu6(x + 3) / 6), clip(0.2 x
  /// + 0.5, 0, 1) in tf.keras 2.
  Value hardSigmoid(Value x, Location loc) {
    float slope = keras3 ? 1.0f / 6.0f : 0.2f;
    Value affine = b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(slope),
                                     b.getF32FloatAttr(0.5f));
    return b.create<ClipOp>(loc, x.getType(), affine, b.getF32FloatAttr(0.f),
                            b.getF32FloatAttr(1.f));
  }

  /// The op(s) of Keras activation `name` (not softmax, which needs the layout) applied to x;
  /// refuses an unsupported name as attribute `key` of layer l.
  Value activationOp(const Layer &l, const std::string &key, const std::string &name, Value x,
                     Location loc, bool &nonNegative) {
    Type type = x.getType();
    nonNegative = false;
    auto kind = [&](ActivationKind k, float alpha = 1.0f) -> Value {
      return b.create<ActivationOp>(loc, type, ActivationKindAttr::get(&ctx, k), x,
                                    b.getF32FloatAttr(alpha));
    };
    if (name == "linear")
      return x;
    if (name == "relu") {
      nonNegative = true;
      return b.create<ReluOp>(loc, type, x);
    }
    if (name == "relu6") {
      nonNegative = true;
      return b.create<ClipOp>(loc, type, x, b.getF32FloatAttr(0.f), b.getF32FloatAttr(6.f));
    }
    if (name == "sigmoid") {
      nonNegative = true;
      return b.create<SigmoidOp>(loc, type, x);
    }
    if (name == "hard_sigmoid") {
      nonNegative = true;
      return hardSigmoid(x, loc);
    }
    if (name == "tanh")
      return b.create<TanhOp>(loc, type, x);
    if (name == "gelu")
      return kind(ActivationKind::gelu); // approximate = False, Keras's default
    if (name == "elu")
      return kind(ActivationKind::elu, 1.0f);
    if (name == "selu")
      return kind(ActivationKind::selu);
    if (name == "swish" || name == "silu")
      return kind(ActivationKind::silu);
    if (name == "softplus") {
      nonNegative = true;
      return kind(ActivationKind::softplus);
    }
    if (name == "softsign")
      return kind(ActivationKind::softsign);
    if (name == "leaky_relu")
      return kind(ActivationKind::leaky_relu, 0.2f); // keras.activations.leaky_relu's default
    if (name == "hard_silu" || name == "hard_swish")
      return b.create<MulOp>(loc, type, x, hardSigmoid(x, loc));
    if (name == "exponential") {
      nonNegative = true;
      return kind(ActivationKind::exp);
    }
    if (name == "mish") { // x * tanh(softplus(x))
      Value smooth = kind(ActivationKind::softplus);
      return b.create<MulOp>(loc, type, x, b.create<TanhOp>(loc, type, smooth));
    }
    refuseActivation(l, key, name);
  }
  static bool isActivationName(const std::string &name) {
    static const std::set<std::string> names = {
        "linear",   "relu",       "relu6",     "sigmoid",    "hard_sigmoid", "tanh",
        "gelu",     "elu",        "selu",      "swish",      "silu",         "softplus",
        "softsign", "leaky_relu", "hard_silu", "hard_swish", "exponential",  "mish"};
    return names.count(name) != 0;
  }
  [[noreturn]] void refuseActivation(const Layer &l, const std::string &key,
                                     const std::string &name) {
    refuseAttr(l, key,
               "= " + name +
                   " is not supported (supported: relu, relu6, sigmoid, hard_sigmoid, "
                   "tanh, softmax, gelu, elu, selu, swish/silu, softplus, softsign, "
                   "leaky_relu, hard_silu, exponential, mish, linear)");
  }

  Tensor activation(const Layer &l, Tensor t, const std::string &name, Location loc) {
    Tensor out = t;
    if (name == "linear" || name.empty())
      return t;
    if (name == "softmax") {
      noFlat(l, t);
      int64_t axis = int64_t(shapeOf(t.v).size()) - 1;
      if (t.image)
        axis = 1; // Keras's last axis is the channels
      out.v = b.create<SoftmaxOp>(loc, t.v.getType(), t.v, b.getI64IntegerAttr(axis), UnitAttr());
      out.nonNegative = true;
      return out;
    }
    out.v = activationOp(l, "activation", name, t.v, loc, out.nonNegative);
    return out;
  }
  Tensor layerActivation(const Layer &l, Tensor t, Location loc) {
    const json::Value *a = l.config->get("activation");
    if (!a || a->getAsNull())
      return t;
    auto s = a->getAsString();
    if (!s)
      refuseAttr(l, "activation", "= " + show(a) + " is not supported (only built-in names)");
    return activation(l, t, s->str(), loc);
  }

  /// TF's SAME padding along one axis: [before, after].
  static std::pair<int64_t, int64_t> samePadding(int64_t in, int64_t k, int64_t s, int64_t d) {
    int64_t effective = (k - 1) * d + 1;
    int64_t out = (in + s - 1) / s;
    int64_t total = std::max<int64_t>((out - 1) * s + effective - in, 0);
    return {total / 2, total - total / 2};
  }

  /// Padding of a conv or pool: the folded ZeroPadding2D plus SAME padding if asked for.
  std::vector<int64_t> windowPadding(const Layer &l, const Tensor &t, const std::string &mode,
                                     ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                     ArrayRef<int64_t> dilations) {
    auto s = shapeOf(t.v);
    std::vector<int64_t> pad(t.pad, t.pad + 4);
    if (mode == "same") {
      auto [top, bottom] = samePadding(s[2] + pad[0] + pad[2], kernel[0], strides[0], dilations[0]);
      auto [left, right] = samePadding(s[3] + pad[1] + pad[3], kernel[1], strides[1], dilations[1]);
      pad[0] += top;
      pad[1] += left;
      pad[2] += bottom;
      pad[3] += right;
    } else if (mode != "valid") {
      refuseAttr(l, "padding", "= " + mode + " is not supported (valid or same)");
    }
    return pad;
  }

  /// A window attribute (kernel_size, strides, ...) as [h, w]. A 1-D layer has one value: the
  /// width of a height-1 window (graphc runs 1-D layers as height-1 images).
  std::vector<int64_t> windowAttr(const Layer &l, llvm::StringRef key, bool oneD,
                                  std::vector<int64_t> dflt) {
    if (!oneD)
      return intsAttr(l, key, 2, dflt);
    return {1, intsAttr(l, key, 1, dflt.empty() ? dflt : std::vector<int64_t>{dflt[1]})[0]};
  }

  /// A Keras kernel (H, W, I, O) as graphc's OIHW filter; depthwise: (H, W, C, M) as
  /// (C·M, 1, H, W), output channel c·M + m as Keras numbers them.
  static std::vector<float> kernelToOihw(const std::vector<float> &k, int64_t kh, int64_t kw,
                                         int64_t in, int64_t out, bool depthwise) {
    std::vector<float> filter(k.size());
    int64_t inPerGroup = depthwise ? 1 : in;
    for (int64_t h = 0; h < kh; ++h)
      for (int64_t x = 0; x < kw; ++x)
        for (int64_t i = 0; i < in; ++i)
          for (int64_t o = 0; o < out; ++o) {
            float value = k[size_t(((h * kw + x) * in + i) * out + o)];
            int64_t oo = depthwise ? i * out + o : o, ii = depthwise ? 0 : i;
            filter[size_t(((oo * inPerGroup + ii) * kh + h) * kw + x)] = value;
          }
    return filter;
  }

  void noStridedDilation(const Layer &l, ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations) {
    if ((strides[0] > 1 || strides[1] > 1) && (dilations[0] > 1 || dilations[1] > 1))
      refuseAttr(l, "dilation_rate", "> 1 together with strides > 1 is not supported (Keras "
                                     "refuses it too)");
  }
  int64_t depthMultiplier(const Layer &l) {
    int64_t mult = intAttr(l, "depth_multiplier", 1);
    if (mult < 1 || mult > 65536)
      refuseAttr(l, "depth_multiplier", "must be positive");
    return mult;
  }

  /// A convolution's filter `var` (in graphc's layout `shape`) and its bias (null without
  /// `biasValues`) as the layer's persistent parameters.
  std::pair<Value, Value> convParameters(const Layer &l, const std::string &var,
                                         ArrayRef<int64_t> shape, const std::vector<float> &filter,
                                         const std::vector<float> *biasValues) {
    Value f = persistent(l, var, shape, filter, l.trainable, "parameter");
    Value bias;
    if (biasValues)
      bias = persistent(l, "bias", {shape[0]}, *biasValues, l.trainable, "parameter");
    return {f, bias};
  }

  /// Conv2D, DepthwiseConv2D, and with `oneD` Conv1D (on the [N, C, 1, L] view asSequence
  /// gives; its kernel (K, I, O) is the (1, K, I, O) HWIO kernel of a height-1 window).
  Tensor conv(const Layer &l, const Tensor &in, bool depthwise, Location loc, bool oneD = false) {
    if (!oneD)
      needImage(l, in);
    auto xs = shapeOf(in.v); // N C H W
    int64_t c = xs[1];
    auto kernel = windowAttr(l, "kernel_size", oneD, {});
    auto strides = windowAttr(l, "strides", oneD, {1, 1});
    auto dilations = windowAttr(l, "dilation_rate", oneD, {1, 1});
    noStridedDilation(l, strides, dilations);
    std::string mode = strAttr(l, "padding", "valid");
    bool useBias = boolAttr(l, "use_bias", true);
    int64_t groups, outC;
    std::vector<VarSpec> vars;
    double receptive = double(kernel[0] * kernel[1]);
    if (depthwise) {
      int64_t mult = depthMultiplier(l);
      groups = c;
      outC = c * mult;
      std::vector<int64_t> shape = {kernel[0], kernel[1], c, mult};
      if (oneD) // DepthwiseConv1D's (K, C, M)
        shape.erase(shape.begin());
      vars.push_back({"depthwise_kernel", shape, "depthwise_initializer", "glorot_uniform",
                      receptive * c, receptive * mult});
    } else {
      int64_t filters = intAttr(l, "filters", 0);
      groups = intAttr(l, "groups", 1);
      if (filters < 1 || filters > (int64_t{1} << 24))
        refuseAttr(l, "filters", "must be positive");
      if (groups < 1 || c % groups || filters % groups)
        refuseAttr(l, "groups", "= " + std::to_string(groups) + " must divide the " +
                                    std::to_string(c) + " input channels and the filters");
      outC = filters;
      std::vector<int64_t> shape = {kernel[0], kernel[1], c / groups, filters};
      if (oneD)
        shape.erase(shape.begin());
      vars.push_back({"kernel", shape, "kernel_initializer", "glorot_uniform",
                      receptive * double(c / groups), receptive * double(filters)});
    }
    if (useBias)
      vars.push_back({"bias", {outC}, "bias_initializer", "zeros"});
    checkSize(l, vars[0].shape);
    if (oneD && mode != "valid" && mode != "same" && mode != "causal")
      refuseAttr(l, "padding", "= " + mode + " is not supported (valid, same or causal)");
    // Causal (1-D only): every output sees only the current and earlier steps, i.e. all the
    // padding on the left (after a folded ZeroPadding1D's).
    auto pad = oneD && mode == "causal"
                   ? std::vector<int64_t>{0, in.pad[1] + (kernel[1] - 1) * dilations[1], 0,
                                          in.pad[3]}
                   : windowPadding(l, in, mode, kernel, strides, dilations);
    int64_t oh = convOutputSize(xs[2], kernel[0], strides[0], pad[0], pad[2], dilations[0]);
    int64_t ow = convOutputSize(xs[3], kernel[1], strides[1], pad[1], pad[3], dilations[1]);
    if (oh <= 0 || ow <= 0)
      failLayer(l, "the kernel does not fit the input of shape " + shapeText(kerasShape(in)));
    auto w = layerWeights(l, vars);
    int64_t inPerGroup = depthwise ? 1 : c / groups;
    auto filter = kernelToOihw(w[0].values, kernel[0], kernel[1], depthwise ? c : inPerGroup,
                               depthwise ? outC / c : outC, depthwise);
    auto [f, bias] = convParameters(l, vars[0].name, {outC, inPerGroup, kernel[0], kernel[1]},
                                    filter, useBias ? &w[1].values : nullptr);
    Tensor out;
    out.image = true;
    out.seq = oneD;
    out.v = b.create<Conv2dOp>(loc, f32({xs[0], outC, oh, ow}), in.v, f, bias,
                               b.getDenseI64ArrayAttr(strides), b.getDenseI64ArrayAttr(pad),
                               b.getDenseI64ArrayAttr(dilations), b.getI64IntegerAttr(groups));
    return layerActivation(l, out, loc);
  }

  Tensor dense(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    auto xs = shapeOf(in.v);
    if (in.image && !in.seq) {
      // Over an image's channels (pointwise, as ConvNeXt's and MLP-Mixer's blocks use it): the
      // NCHW image transposed to its (batch, pixels, channels) rows, the Dense on them (its
      // kernel in Keras's (in, units) layout), and the result back to channels first.
      Tensor rows;
      rows.v = b.create<ReshapeOp>(loc, f32({xs[0], xs[2] * xs[3], xs[1]}),
                                   transposed(in.v, {0, 2, 3, 1}, loc));
      Tensor out = dense(l, rows, loc);
      const int64_t units = shapeOf(out.v).back();
      out.image = true;
      out.v = transposed(b.create<ReshapeOp>(loc, f32({xs[0], xs[2], xs[3], units}), out.v),
                         {0, 3, 1, 2}, loc);
      return out;
    }
    if (in.image || (xs.size() != 2 && xs.size() != 3))
      failLayer(l, "expects a (batch, features), (batch, steps, features) or image input, got "
                   "shape " +
                       shapeText(kerasShape(in)));
    // Over (batch, steps, features), Keras's Dense maps the last axis: a dense on the rows.
    std::vector<int64_t> outerDims(xs.begin(), xs.end() - 1);
    Value rows = in.v;
    if (xs.size() == 3) {
      rows = b.create<ReshapeOp>(loc, f32({xs[0] * xs[1], xs[2]}), in.v);
      xs = {xs[0] * xs[1], xs[2]};
    }
    int64_t units = intAttr(l, "units", 0);
    if (units < 1 || units > (int64_t{1} << 24))
      refuseAttr(l, "units", "must be positive");
    bool useBias = boolAttr(l, "use_bias", true);
    int64_t inF = xs[1];
    std::vector<VarSpec> vars = {{"kernel", {inF, units}, "kernel_initializer", "glorot_uniform",
                                  double(inF), double(units)}};
    if (useBias)
      vars.push_back({"bias", {units}, "bias_initializer", "zeros"});
    checkSize(l, vars[0].shape);
    // A shared Dense must see the same feature order at every call.
    std::string order = in.hasFlat() ? std::to_string(in.flat[0]) + "x" + std::to_string(in.flat[1]) +
                                           "x" + std::to_string(in.flat[2])
                                     : "";
    std::string key = l.scope + l.name;
    if (auto it = denseOrder.find(key); it != denseOrder.end() && it->second != order)
      failLayer(l, "is shared between a flattened feature map and another input; graphc "
                   "cannot give one kernel both row orders");
    denseOrder[key] = order;
    auto w = layerWeights(l, vars);
    std::vector<float> kernel = w[0].values;
    if (in.hasFlat()) {
      // graphc's row c*H*W + h*W + x is Keras's row (h*W + x)*C + c.
      int64_t C = in.flat[0], H = in.flat[1], W = in.flat[2];
      for (int64_t c = 0; c < C; ++c)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t x = 0; x < W; ++x) {
            int64_t g = (c * H + h) * W + x, k = (h * W + x) * C + c;
            std::copy_n(w[0].values.begin() + k * units, units, kernel.begin() + g * units);
          }
    }
    Value wv = persistent(l, "kernel", {inF, units}, kernel, l.trainable, "parameter");
    Value bias;
    if (useBias)
      bias = persistent(l, "bias", {units}, w[1].values, l.trainable, "parameter");
    Tensor out;
    out.v = b.create<DenseOp>(loc, f32({xs[0], units}), rows, wv, bias, UnitAttr());
    if (outerDims.size() == 2)
      out.v = b.create<ReshapeOp>(loc, f32({outerDims[0], outerDims[1], units}), out.v);
    return layerActivation(l, out, loc);
  }

  /// EinsumDense(equation, output_shape, bias_axes, activation) on a (batch, features) or
  /// (batch, steps, features) input (a 1-D feature map read as its steps), for the equations
  /// that are a dense: the input's subscripts are its free axes then the contracted ones, the
  /// kernel's the contracted ones (in the same order) then its free ones, the output's the
  /// input's free axes then the kernel's free ones ("ab,bc->ac", "abc,cd->abd",
  /// "ab,bcd->acd", "...b,bc->...c"). Then it is one graph.dense of the input's rows
  /// [rows, contracted] by the kernel viewed as [contracted, kernel's free] (Keras's layout,
  /// row-major), with `bias_axes` naming all the kernel's free axes as its bias, reshaped to
  /// the output's rank-2 or rank-3 shape. Other equations, bias axes and ranks are refused
  /// naming the layer.
  Tensor einsumDense(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    noFlat(l, in);
    Tensor x = asSteps(in, loc);
    const std::vector<int64_t> xs = shapeOf(x.v);
    if (x.image || (xs.size() != 2 && xs.size() != 3))
      failLayer(l, "expects a (batch, features) or (batch, steps, features) input, got shape " +
                       shapeText(kerasShape(in)));
    std::string equation = strAttr(l, "equation", "");
    equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
    const size_t comma = equation.find(','), arrow = equation.find("->");
    if (comma == std::string::npos || arrow == std::string::npos || arrow < comma)
      refuseAttr(l, "equation", "= \"" + equation + "\" is not \"input,kernel->output\"");
    std::string xSub = equation.substr(0, comma),
                kSub = equation.substr(comma + 1, arrow - comma - 1),
                oSub = equation.substr(arrow + 2);
    // An ellipsis stands for the input's leading axes: fresh capital letters.
    const bool ellipsis = xSub.rfind("...", 0) == 0;
    if (ellipsis != (oSub.rfind("...", 0) == 0) || kSub.find("...") != std::string::npos)
      refuseAttr(l, "equation",
                 "= \"" + equation +
                     "\" is not supported (an ellipsis leads the input and the "
                     "output only)");
    if (ellipsis) {
      const int64_t named = int64_t(xSub.size()) - 3, lead = int64_t(xs.size()) - named;
      if (lead < 1)
        refuseAttr(l, "equation", "= \"" + equation + "\" names more axes than the input has");
      std::string leading;
      for (int64_t i = 0; i < lead; ++i)
        leading += char('A' + i);
      xSub = leading + xSub.substr(3);
      oSub = leading + oSub.substr(3);
    }
    auto refuse = [&](const std::string &why) {
      refuseAttr(l, "equation", "= \"" + strAttr(l, "equation", "") + "\" " + why);
    };
    if (xSub.size() != xs.size())
      refuse("names " + std::to_string(xSub.size()) + " input axes; the input has " +
             std::to_string(xs.size()));
    std::string contracted, xFree, kFree;
    for (char c : xSub)
      (kSub.find(c) != std::string::npos && oSub.find(c) == std::string::npos ? contracted
                                                                              : xFree) += c;
    for (char c : kSub)
      if (oSub.find(c) != std::string::npos)
        kFree += c;
    if (contracted.empty() || xSub != xFree + contracted || kSub != contracted + kFree ||
        oSub != xFree + kFree)
      refuse("is not supported: graphc imports an EinsumDense that contracts the input's last "
             "axes with the kernel's first ones, in order, and keeps the rest in order "
             "(\"abc,cd->abd\")");
    if (oSub.size() != 2 && oSub.size() != 3)
      refuse("gives a rank-" + std::to_string(oSub.size()) +
             " output; graphc imports rank 2 and 3 (batch, features) or (batch, steps, "
             "features)");
    // The kernel's free sizes from output_shape: its entries follow the output's axes after
    // the batch (after the ellipsis's axes with one).
    std::vector<int64_t> outputShape;
    if (const json::Value *v = l.config->get("output_shape")) {
      if (auto one = integer(v)) {
        outputShape = {*one};
      } else if (const json::Array *a = v->getAsArray()) {
        for (const json::Value &e : *a)
          outputShape.push_back(integer(&e).value_or(-1));
      }
    }
    std::map<char, int64_t> size;
    for (size_t i = 0; i < xSub.size(); ++i)
      size[xSub[i]] = xs[i];
    // output_shape leaves out the batch, or the ellipsis's axes (capitals here).
    const size_t leading = ellipsis
                               ? size_t(std::count_if(oSub.begin(), oSub.end(),
                                                      [](char c) { return c >= 'A' && c <= 'Z'; }))
                               : 1;
    if (outputShape.size() != oSub.size() - leading)
      refuseAttr(l, "output_shape",
                 "= " + show(l.config->get("output_shape")) + " must give " +
                     std::to_string(oSub.size() - leading) + " sizes (the output's axes after " +
                     (ellipsis ? "the ellipsis" : "the batch") + ")");
    for (size_t i = leading; i < oSub.size(); ++i) {
      const int64_t given = outputShape[i - leading];
      const char c = oSub[i];
      if (size.count(c)) {
        if (given != -1 && given != size[c])
          refuseAttr(l, "output_shape",
                     "= " + show(l.config->get("output_shape")) +
                         " does not match the input's size " + std::to_string(size[c]) +
                         " of axis " + c);
      } else if (given < 1 || given > (int64_t{1} << 24)) {
        refuseAttr(l, "output_shape",
                   "= " + show(l.config->get("output_shape")) +
                       " must give a positive size for axis " + c);
      } else {
        size[c] = given;
      }
    }
    std::vector<int64_t> kernelShape, outShape;
    int64_t inner = 1, units = 1, rows = 1;
    for (char c : kSub)
      kernelShape.push_back(size[c]);
    for (char c : contracted)
      inner *= size[c];
    for (char c : kFree)
      units *= size[c];
    for (char c : xFree)
      rows *= size[c];
    for (char c : oSub)
      outShape.push_back(size[c]);
    if (const json::Value *lora = l.config->get("lora_rank"); lora && !lora->getAsNull())
      refuseAttr(l, "lora_rank", "is not supported");
    std::string biasAxes = strAttr(l, "bias_axes", "");
    if (!biasAxes.empty() && biasAxes != kFree)
      refuseAttr(l, "bias_axes",
                 "= \"" + biasAxes +
                     "\" is not supported (none, or all the "
                     "kernel's output axes, \"" +
                     kFree + "\")");
    // Keras's fans of an N-D kernel: receptive field = all but the last two axes.
    double receptive = 1;
    for (size_t i = 0; i + 2 < kernelShape.size(); ++i)
      receptive *= double(kernelShape[i]);
    const double fanIn = double(kernelShape[kernelShape.size() - 2]) * receptive,
                 fanOut = double(kernelShape.back()) * receptive;
    std::vector<VarSpec> vars = {
        {"kernel", kernelShape, "kernel_initializer", "glorot_uniform", fanIn, fanOut}};
    std::vector<int64_t> biasShape;
    for (char c : kFree)
      biasShape.push_back(size[c]);
    if (!biasAxes.empty())
      vars.push_back({"bias", biasShape, "bias_initializer", "zeros"});
    checkSize(l, {inner, units});
    auto w = layerWeights(l, vars);
    Value kernel = persistent(l, "kernel", {inner, units}, w[0].values, l.trainable, "parameter");
    Value bias = biasAxes.empty()
                     ? Value()
                     : persistent(l, "bias", {units}, w[1].values, l.trainable, "parameter");
    Value flat = b.create<ReshapeOp>(loc, f32({rows, inner}), x.v);
    Tensor out;
    out.v = b.create<ReshapeOp>(
        loc, f32(outShape),
        b.create<DenseOp>(loc, f32({rows, units}), flat, kernel, bias, UnitAttr()).getResult());
    return layerActivation(l, out, loc);
  }

  /// MaxPooling2D/AveragePooling2D, and with `oneD` their 1-D forms (on asSequence's view).
  Tensor pool(const Layer &l, const Tensor &in, bool max, Location loc, bool oneD = false) {
    if (!oneD)
      needImage(l, in);
    auto xs = shapeOf(in.v);
    auto kernel = windowAttr(l, "pool_size", oneD, {2, 2});
    const json::Value *sv = l.config->get("strides");
    auto strides = (!sv || sv->getAsNull()) ? kernel : windowAttr(l, "strides", oneD, kernel);
    std::string mode = strAttr(l, "padding", "valid");
    bool countIncludePad = false;
    if (in.padded()) {
      if (max && !in.nonNegative)
        failLayer(l, std::string("reads a ") + paddingLayer(in) +
                         " output of values that may be negative; folding the zeros into a max "
                         "pool is exact only after relu, relu6, sigmoid or softmax");
      if (!max) {
        if (mode != "valid")
          failLayer(l, std::string("reads a ") + paddingLayer(in) +
                           " output with padding = same; only valid pooling can absorb the zeros");
        countIncludePad = true; // the zeros count in every window, as in Keras
      }
    }
    std::vector<int64_t> ones = {1, 1};
    auto pad = windowPadding(l, in, mode, kernel, strides, ones);
    int64_t oh = convOutputSize(xs[2], kernel[0], strides[0], pad[0], pad[2], 1);
    int64_t ow = convOutputSize(xs[3], kernel[1], strides[1], pad[1], pad[3], 1);
    if (oh <= 0 || ow <= 0)
      failLayer(l, "the window does not fit the input of shape " + shapeText(kerasShape(in)));
    Tensor out;
    out.image = true;
    out.seq = oneD;
    out.nonNegative = in.nonNegative;
    auto type = f32({xs[0], xs[1], oh, ow});
    if (max)
      out.v = b.create<MaxPool2dOp>(loc, type, in.v, b.getDenseI64ArrayAttr(kernel),
                                    b.getDenseI64ArrayAttr(strides), b.getDenseI64ArrayAttr(pad));
    else
      out.v = b.create<AvgPool2dOp>(loc, type, in.v, b.getDenseI64ArrayAttr(kernel),
                                    b.getDenseI64ArrayAttr(strides), b.getDenseI64ArrayAttr(pad),
                                    countIncludePad ? b.getUnitAttr() : UnitAttr());
    return out;
  }

  /// GlobalAveragePooling2D/GlobalMaxPooling2D, and with `oneD` the 1-D forms (the window is
  /// then the whole [1, L] of asSequence's view).
  Tensor globalPool(const Layer &l, const Tensor &in, bool max, Location loc, bool oneD = false) {
    if (!oneD)
      needImage(l, in);
    noPadding(l, in);
    auto xs = shapeOf(in.v);
    std::vector<int64_t> kernel = {xs[2], xs[3]}, strides = {1, 1}, pad = {0, 0, 0, 0};
    auto type = f32({xs[0], xs[1], 1, 1});
    Value pooled =
        max ? b.create<MaxPool2dOp>(loc, type, in.v, b.getDenseI64ArrayAttr(kernel),
                                    b.getDenseI64ArrayAttr(strides), b.getDenseI64ArrayAttr(pad))
                  .getResult()
            : b.create<AvgPool2dOp>(loc, type, in.v, b.getDenseI64ArrayAttr(kernel),
                                    b.getDenseI64ArrayAttr(strides), b.getDenseI64ArrayAttr(pad),
                                    UnitAttr())
                  .getResult();
    Tensor out;
    out.nonNegative = in.nonNegative;
    if (boolAttr(l, "keepdims", false)) {
      out.image = true;
      out.seq = oneD;
      out.v = pooled;
      return out;
    }
    out.v = b.create<ReshapeOp>(loc, f32({xs[0], xs[1]}), pooled);
    return out;
  }

  Tensor flatten(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    auto xs = shapeOf(in.v);
    Tensor out;
    out.nonNegative = in.nonNegative;
    if (xs.size() == 2)
      return in;
    int64_t n = xs[0], f = product(xs) / n;
    out.v = b.create<ReshapeOp>(loc, f32({n, f}), in.v);
    if (in.image && xs[1] > 1 && xs[2] * xs[3] > 1) {
      out.flat[0] = xs[1];
      out.flat[1] = xs[2];
      out.flat[2] = xs[3];
    }
    return out;
  }

  Tensor reshape(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    const json::Value *ts = l.config->get("target_shape");
    const json::Array *arr = ts ? ts->getAsArray() : nullptr;
    if (!arr || arr->empty() || arr->size() > 3)
      refuseAttr(l, "target_shape", "= " + show(ts) + " is not supported (1 to 3 dims)");
    auto ks = kerasShape(in);
    int64_t n = ks[0], total = product(ks) / n;
    std::vector<int64_t> target;
    int64_t known = 1, inferred = -1;
    for (size_t i = 0; i < arr->size(); ++i) {
      auto d = integer(&(*arr)[i]);
      if (!d || (*d < 1 && *d != -1) || *d > (int64_t{1} << 31))
        refuseAttr(l, "target_shape", "= " + show(ts) + " has an invalid dimension");
      if (*d == -1) {
        if (inferred >= 0)
          refuseAttr(l, "target_shape", "has more than one -1");
        inferred = int64_t(i);
      } else {
        known *= *d;
      }
      target.push_back(*d);
    }
    if (inferred >= 0)
      target[size_t(inferred)] = total / known;
    if (product(target) != total)
      failLayer(l, "cannot reshape " + shapeText(ks) + " to " + shapeText(target));
    Tensor out;
    out.nonNegative = in.nonNegative;
    if (target.size() == 1) { // a flatten
      Tensor t = flatten(l, in, loc);
      t.nonNegative = in.nonNegative;
      return t;
    }
    bool sameOrder = !in.hasFlat() && (!in.image || ks.back() == 1);
    // (An image keeps Keras's element order only when it has one pixel: [N, C, 1, 1].)
    const bool onePixel = in.image && product(ArrayRef<int64_t>(ks).slice(1, ks.size() - 2)) == 1;
    if (target.size() == 3 && target[0] == 1 && target[1] == 1 && !in.hasFlat() &&
        (!in.image || onePixel)) {
      // A vector to a (1, 1, C) image (the squeeze-and-excitation of Keras's EfficientNet):
      // graphc's [N, C, 1, 1] holds the same elements in the same order.
      out.image = true;
      out.v = b.create<ReshapeOp>(loc, f32({n, target[2], 1, 1}), in.v);
      return out;
    }
    if (target.size() == 3) {
      // To a channels-last image: NCHW keeps the same element order only with one channel.
      if (!sameOrder || target[2] != 1)
        failLayer(l, "reshaping " + shapeText(ks) + " to " + shapeText(target) +
                         " needs a transpose to graphc's channels-first layout, which graphc "
                         "does not have (only one-channel images can be reshaped)");
      out.image = true;
      out.v = b.create<ReshapeOp>(loc, f32({n, 1, target[0], target[1]}), in.v);
      return out;
    }
    if (!sameOrder)
      failLayer(l, "reshaping " + shapeText(ks) + " to " + shapeText(target) +
                       " needs a transpose to graphc's channels-first layout, which graphc "
                       "does not have");
    out.v = b.create<ReshapeOp>(loc, f32({n, target[0], target[1]}), in.v);
    return out;
  }

  /// The weights of a normalization over `c` features whose only variables are gamma (when
  /// `scale`) and beta (when `center`), in that order (LayerNormalization, GroupNormalization).
  std::vector<KerasArray> gammaBetaWeights(const Layer &l, int64_t c, bool scale, bool center) {
    std::vector<VarSpec> vars;
    if (scale)
      vars.push_back({"gamma", {c}, "gamma_initializer", "ones"});
    if (center)
      vars.push_back({"beta", {c}, "beta_initializer", "zeros"});
    return vars.empty() ? std::vector<KerasArray>() : layerWeights(l, vars);
  }

  /// A normalization's gamma and beta, read from `w` at `i` on, or frozen ones / zeros when
  /// the layer has scale = false / center = false.
  std::pair<Value, Value> gammaBeta(const Layer &l, int64_t c, bool scale, bool center,
                                    const std::vector<KerasArray> &w, size_t &i) {
    Value gamma = scale ? persistent(l, "gamma", {c}, w[i++].values, l.trainable, "parameter")
                        : persistent(l, "gamma", {c}, std::vector<float>(size_t(c), 1.f), false,
                                     "parameter");
    Value beta = center ? persistent(l, "beta", {c}, w[i++].values, l.trainable, "parameter")
                        : persistent(l, "beta", {c}, std::vector<float>(size_t(c), 0.f), false,
                                     "parameter");
    return {gamma, beta};
  }

  Tensor batchNorm(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    noFlat(l, in);
    auto xs = shapeOf(in.v);
    int64_t rank = kerasShape(in).size(); // a 1-D feature map is rank 3 to Keras
    const json::Value *av = l.config->get("axis");
    int64_t axis = -1;
    if (av) {
      if (auto *a = av->getAsArray()) {
        if (a->size() != 1 || !integer(&(*a)[0]))
          refuseAttr(l, "axis", "= " + show(av) + " is not supported (one axis)");
        axis = *integer(&(*a)[0]);
      } else if (auto i = integer(av)) {
        axis = *i;
      } else {
        refuseAttr(l, "axis", "= " + show(av) + " is not an axis");
      }
    }
    if (axis < 0)
      axis += rank;
    if (rank < 2 || axis != rank - 1 || (!in.image && !in.volume && rank != 2))
      refuseAttr(l, "axis",
                 "= " + show(av) +
                     " is not supported: only the channels (last) "
                     "axis of a 2-D, 4-D or 5-D input");
    if (boolAttr(l, "renorm", false))
      refuseAttr(l, "renorm", "= true is not supported");
    if (const json::Value *v = l.config->get("virtual_batch_size"); v && !v->getAsNull())
      refuseAttr(l, "virtual_batch_size", "is not supported");
    if (const json::Value *v = l.config->get("adjustment"); v && !v->getAsNull())
      refuseAttr(l, "adjustment", "is not supported");
    int64_t c = xs[1];
    bool center = boolAttr(l, "center", true), scale = boolAttr(l, "scale", true);
    double momentum = numAttr(l, "momentum", 0.99), epsilon = numAttr(l, "epsilon", 1e-3);
    if (!(momentum >= 0 && momentum <= 1) || !(epsilon > 0))
      refuseAttr(l, "momentum", "or epsilon is out of range");
    std::vector<VarSpec> vars;
    if (scale)
      vars.push_back({"gamma", {c}, "gamma_initializer", "ones"});
    if (center)
      vars.push_back({"beta", {c}, "beta_initializer", "zeros"});
    vars.push_back({"moving_mean", {c}, "moving_mean_initializer", "zeros"});
    vars.push_back({"moving_variance", {c}, "moving_variance_initializer", "ones"});
    std::string key = l.scope + l.name;
    if (!bnUsed.insert(key).second)
      failLayer(l, "is applied more than once; a shared BatchNormalization (two updates of "
                   "one set of moving statistics) is not supported");
    auto w = layerWeights(l, vars);
    size_t i = 0;
    auto [gamma, beta] = gammaBeta(l, c, scale, center, w, i);
    Value mean = persistent(l, "moving_mean", {c}, w[i++].values, false, "batch_stats");
    Value var = persistent(l, "moving_variance", {c}, w[i++].values, false, "batch_stats");
    // Keras: moving = moving * momentum + batch * (1 - momentum); graphc's momentum weighs the
    // batch statistic. A frozen BatchNormalization runs in inference mode, as in Keras.
    Type ct = f32({c});
    auto bn = b.create<BatchNormOp>(loc, TypeRange{in.v.getType(), ct, ct, ct, ct}, in.v, gamma,
                                    beta, mean, var, b.getF32FloatAttr(float(epsilon)),
                                    b.getF32FloatAttr(float(1.0 - momentum)),
                                    l.trainable ? b.getUnitAttr() : UnitAttr());
    Tensor out;
    out.image = in.image;
    out.seq = in.seq;
    out.volume = in.volume;
    out.v = bn.getResult();
    return out;
  }

  /// graphc's axis of Keras axis `axis` (> 0) of `t`: an image is NCHW where Keras sees NHWC,
  /// a 1-D feature map [N, C, 1, L] where Keras sees [N, L, C].
  static int64_t graphAxisOf(const Tensor &t, int64_t axis) {
    if (t.image && t.seq)
      return axis == 2 ? 1 : 3; // L C -> C 1 L
    if (t.image)
      return axis == 3 ? 1 : axis + 1; // H W C -> C H W
    return axis;
  }

  /// graph.dropout's mask broadcast ({mask_repeat, mask_inner}) for a Keras mask that shares
  /// one draw along the Keras axes `shared` of `in`: in graphc's layout those axes (size-1
  /// axes aside) must be consecutive, and the batch's is never one of them (micro-batches draw
  /// their own rows of the mask).
  std::pair<int64_t, int64_t> maskBroadcast(const Layer &l, const Tensor &in,
                                            const std::vector<bool> &shared,
                                            const std::string &what) {
    auto gs = shapeOf(in.v);
    auto ks = kerasShape(in);
    if (shared[0] && ks[0] > 1)
      failLayer(l, what + " shares the mask across the batch; graphc draws it per sample");
    std::vector<bool> graphShared(gs.size(), false);
    for (size_t k = 1; k < shared.size(); ++k)
      if (shared[k])
        graphShared[graphAxisOf(in, int64_t(k))] = true;
    int64_t first = -1, last = -1;
    for (int64_t g = 0; g < int64_t(gs.size()); ++g)
      if (graphShared[g] && gs[g] > 1) {
        first = first < 0 ? g : first;
        last = g;
      }
    if (first < 0)
      return {1, 1};
    for (int64_t g = first; g <= last; ++g)
      if (!graphShared[g] && gs[g] > 1)
        failLayer(l, what +
                         " shares the mask along axes that are not adjacent in graphc's "
                         "channels-first layout of the input " +
                         shapeText(ks) + "; graphc supports one run of them");
    return {product(ArrayRef<int64_t>(gs).slice(first, last - first + 1)),
            product(ArrayRef<int64_t>(gs).drop_front(last + 1))};
  }

  /// The axes a Keras `noise_shape` shares a draw along (its 1s where the input is wider).
  std::vector<bool> noiseShapeAxes(const Layer &l, const Tensor &in) {
    auto ks = kerasShape(in);
    std::vector<bool> shared(ks.size(), false);
    const json::Value *v = l.config->get("noise_shape");
    if (!v || v->getAsNull())
      return shared;
    const json::Array *dims = v->getAsArray();
    if (!dims || dims->size() != ks.size())
      refuseAttr(l, "noise_shape",
                 "= " + show(v) + " must list one size per axis of the input " + shapeText(ks));
    for (size_t i = 0; i < ks.size(); ++i) {
      const json::Value &d = (*dims)[i];
      if (d.getAsNull())
        continue;
      auto size = integer(&d);
      if (!size || (*size != ks[i] && *size != 1))
        refuseAttr(l, "noise_shape",
                   "= " + show(v) + " must hold, per axis, the input's size " + shapeText(ks) +
                       ", 1 or None");
      shared[i] = *size == 1 && ks[i] > 1;
    }
    return shared;
  }

  /// Dropout, SpatialDropout1D/2D and AlphaDropout's rate, in [0, 1).
  double dropoutRate(const Layer &l) {
    double rate = numAttr(l, "rate", 0.5);
    if (!(rate >= 0 && rate < 1))
      refuseAttr(l, "rate", "must be in [0, 1)");
    return rate;
  }

  /// x * keep / (1 - rate), the mask graphc's counter-based one (drawn over graphc's element
  /// order), shared along the Keras axes `shared`.
  Value dropoutOf(const Layer &l, const Tensor &in, double rate, const std::vector<bool> &shared,
                  const std::string &what, Value x, Location loc) {
    auto [repeat, inner] = maskBroadcast(l, in, shared, what);
    return b.create<DropoutOp>(loc, x.getType(), x, stepInput(), b.getF32FloatAttr(float(rate)),
                               b.getI64IntegerAttr(dropoutOps++), b.getI64IntegerAttr(0),
                               b.getI64IntegerAttr(repeat), b.getI64IntegerAttr(inner));
  }

  /// Dropout (with `noise_shape`), SpatialDropout1D (one draw per sample and feature, shared
  /// along the steps) and SpatialDropout2D (per sample and channel, shared over the image).
  Tensor dropout(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    double rate = dropoutRate(l);
    std::vector<bool> shared;
    std::string what = "noise_shape";
    if (l.cls == "Dropout") {
      shared = noiseShapeAxes(l, in);
    } else {
      size_t rank = l.cls == "SpatialDropout1D" ? 3 : 4;
      if (kerasShape(in).size() != rank || in.hasFlat())
        failLayer(
            l, std::string("expects a ") +
                   (rank == 3 ? "(batch, steps, features)" : "(batch, height, width, channels)") +
                   " input, got shape " + shapeText(kerasShape(in)));
      shared.assign(rank, true);
      shared[0] = shared[rank - 1] = false;
      what = "its mask";
    }
    if (rate == 0)
      return in;
    Tensor out = in;
    out.v = dropoutOf(l, in, rate, shared, what, in.v, loc);
    return out;
  }

  /// Masking(mask_value): step t of a sample is padding when every feature equals mask_value;
  /// Keras zeroes those steps and passes the mask on (to the recurrent layers and the masked
  /// mean, as an Embedding's mask_zero). The mask [N, T] from graph ops without a gradient: a
  /// graph.activation equal per element, their count per step (a dense by a column of ones)
  /// equal to the feature count marks padding, 1 - that is real. The output is x times the
  /// mask repeated over the features, or x itself when mask_value is 0 (a padding step is
  /// zeros already).
  Tensor masking(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    noFlat(l, in);
    Tensor x = asSteps(in, loc);
    auto xs = shapeOf(x.v);
    if (x.image || xs.size() != 3)
      failLayer(l,
                "expects a (batch, steps, features) input, got shape " + shapeText(kerasShape(in)));
    const double value = numAttr(l, "mask_value", 0.0);
    if (!std::isfinite(value))
      refuseAttr(l, "mask_value", "must be a finite number");
    const int64_t N = xs[0], T = xs[1], F = xs[2];
    auto equal = [&](Value v, double to) -> Value {
      return b.create<ActivationOp>(loc, v.getType(),
                                    ActivationKindAttr::get(&ctx, ActivationKind::equal), v,
                                    b.getF32FloatAttr(float(to)));
    };
    Value rows = b.create<ReshapeOp>(loc, f32({N * T, F}), equal(x.v, value));
    Value ones = b.create<FillOp>(loc, f32({F, 1}), b.getF32FloatAttr(1.0f));
    Value count = b.create<DenseOp>(loc, f32({N * T, 1}), rows, ones, Value(), UnitAttr());
    Value real = b.create<ScaleOp>(loc, count.getType(), equal(count, double(F)),
                                   b.getF32FloatAttr(-1.0f), b.getF32FloatAttr(1.0f));
    Tensor out = x;
    out.mask = b.create<ReshapeOp>(loc, f32({N, T}), real);
    if (value != 0) {
      Value onesRow = b.create<FillOp>(loc, f32({1, F}), b.getF32FloatAttr(1.0f));
      Value repeated = b.create<DenseOp>(loc, f32({N * T, F}), real, onesRow, Value(), UnitAttr());
      Value kept = b.create<MulOp>(loc, f32({N * T, F}),
                                   b.create<ReshapeOp>(loc, f32({N * T, F}), x.v), repeated);
      out.v = b.create<ReshapeOp>(loc, x.v.getType(), kept);
      out.nonNegative = false;
    }
    return out;
  }

  /// PReLU: relu(x) - alpha relu(-x), alpha trainable with the input's shape but the batch,
  /// each of `shared_axes` (Keras's, from 1) of size 1: one alpha for all (a dense by a [1, 1]
  /// weight), one per image channel (shared over the height and width: a depthwise 1x1
  /// graph.conv2d), or alpha over the trailing axes (an image's whole [H, W, C], saved as
  /// graphc's [C, H, W]; a sequence's [T, F] or [1, F]; a vector's [F]: graph.broadcast_mul).
  /// Other sharings are refused naming the layer.
  Tensor prelu(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    noFlat(l, in);
    Tensor x = in.image && in.seq ? asSteps(in, loc) : in;
    std::vector<int64_t> ks = kerasShape(x);
    std::vector<int64_t> alphaShape(ks.begin() + 1, ks.end());
    if (const json::Value *v = l.config->get("shared_axes"); v && !v->getAsNull()) {
      std::vector<int64_t> axes;
      if (auto one = integer(v))
        axes = {*one};
      else if (const json::Array *a = v->getAsArray())
        for (const json::Value &e : *a)
          axes.push_back(integer(&e).value_or(0));
      for (int64_t axis : axes) {
        if (axis < 1 || axis >= int64_t(ks.size()))
          refuseAttr(l, "shared_axes",
                     "= " + show(v) + " must name non-batch axes of the rank-" +
                         std::to_string(ks.size()) + " input");
        alphaShape[size_t(axis - 1)] = 1;
      }
    }
    const int64_t count = product(alphaShape);
    auto w = layerWeights(l, {{"alpha", alphaShape, "alpha_initializer", "zeros"}});
    Type type = x.v.getType();
    Value negative =
        b.create<ReluOp>(loc, type, b.create<ScaleOp>(loc, type, x.v, b.getF32FloatAttr(-1.0f)));
    Value scaled;
    const bool perChannel =
        x.image && alphaShape.size() == 3 && alphaShape[0] == 1 && alphaShape[1] == 1;
    if (count == 1) {
      Value alpha = persistent(l, "alpha", {1, 1}, w[0].values, l.trainable, "parameter");
      scaled = timesScalar(negative, alpha, loc);
    } else if (perChannel) {
      Value alpha = persistent(l, "alpha", {alphaShape[2]}, w[0].values, l.trainable, "parameter");
      scaled = buildPerChannelAffine(b, loc, negative, alpha, Value());
    } else if (x.image && count == product(ArrayRef<int64_t>(ks).drop_front())) {
      // Keras's (H, W, C) alpha as graphc's (C, H, W).
      const int64_t H = alphaShape[0], W = alphaShape[1], C = alphaShape[2];
      std::vector<float> chw(static_cast<size_t>(count));
      for (int64_t h = 0; h < H; ++h)
        for (int64_t wi = 0; wi < W; ++wi)
          for (int64_t c = 0; c < C; ++c)
            chw[size_t((c * H + h) * W + wi)] = w[0].values[size_t((h * W + wi) * C + c)];
      Value alpha = persistent(l, "alpha", {C, H, W}, chw, l.trainable, "parameter");
      scaled = b.create<BroadcastMulOp>(loc, type, negative, alpha);
    } else if (!x.image) {
      // Trailing axes of a sequence or vector: drop the leading shared (size-1) ones.
      std::vector<int64_t> trailing = alphaShape;
      while (trailing.size() > 1 && trailing.front() == 1)
        trailing.erase(trailing.begin());
      const std::vector<int64_t> xs = shapeOf(x.v);
      if (!std::equal(trailing.begin(), trailing.end(), xs.end() - int64_t(trailing.size())) ||
          llvm::is_contained(trailing, 1))
        refuseAttr(l, "shared_axes",
                   "= " + show(l.config->get("shared_axes")) +
                       " is not supported (none, all, or the leading axes)");
      Value alpha = persistent(l, "alpha", trailing, w[0].values, l.trainable, "parameter");
      scaled = b.create<BroadcastMulOp>(loc, type, negative, alpha);
    } else {
      refuseAttr(l, "shared_axes",
                 "= " + show(l.config->get("shared_axes")) +
                     " is not supported on an image (none, [1, 2] or all)");
    }
    Tensor out = x;
    out.nonNegative = false;
    out.v = b.create<AddOp>(loc, type, b.create<ReluOp>(loc, type, x.v),
                            b.create<ScaleOp>(loc, type, scaled, b.getF32FloatAttr(-1.0f)));
    return out;
  }

  /// keras.applications' ConvNeXt layers are Keras's own code though not keras.layers: the
  /// class must come from there (or from a file that names no module).
  void needConvNextModule(const Layer &l) {
    if (!l.module.empty() &&
        llvm::StringRef(l.module).find("applications.convnext") == llvm::StringRef::npos)
      fail(label(l) + " is a custom layer from module \"" + l.module +
           "\": graphc imports keras.applications' ConvNeXt LayerScale and StochasticDepth "
           "only");
  }

  /// StochasticDepth(drop_path_rate) of keras.applications' ConvNeXt: floor(keep + u) with u
  /// uniform per sample, x / keep times that, i.e. dropout with rate drop_path_rate and one
  /// mask bit per sample (graphc's counter-based draws; a graph.dropout whose mask_repeat is
  /// the sample's element count).
  Tensor stochasticDepth(const Layer &l, const Tensor &in, Location loc) {
    needConvNextModule(l);
    noPadding(l, in);
    const double rate = numAttr(l, "drop_path_rate", -1);
    if (!(rate >= 0 && rate < 1))
      refuseAttr(l, "drop_path_rate", "must be given, in [0, 1)");
    if (rate == 0)
      return in;
    std::vector<bool> shared(kerasShape(in).size(), true);
    shared[0] = false;
    Tensor out = in;
    out.v = dropoutOf(l, in, rate, shared, "its mask", in.v, loc);
    return out;
  }

  /// LayerScale(init_values, projection_dim) of keras.applications' ConvNeXt: x times a
  /// trainable per-feature gamma [projection_dim] (init_values everywhere when graphc
  /// initialises it) over the last axis: a graph.broadcast_mul of (batch, ..., features)
  /// rows, or for an image (channels first in graphc) one depthwise 1x1 graph.conv2d
  /// (buildPerChannelAffine).
  Tensor layerScale(const Layer &l, const Tensor &in, Location loc) {
    needConvNextModule(l);
    noPadding(l, in);
    noFlat(l, in);
    auto ks = kerasShape(in);
    const int64_t features = ks.back(), dim = intAttr(l, "projection_dim", -1);
    if (dim != features)
      refuseAttr(l, "projection_dim",
                 "= " + show(l.config->get("projection_dim")) + " must be the input's " +
                     std::to_string(features) + " features");
    if (!l.config->get("init_values") || !l.config->get("init_values")->getAsNumber())
      refuseAttr(l, "init_values", "must be a number");
    auto w = layerWeights(l, {{"gamma", {features}, "", "init_values"}});
    Value gamma = persistent(l, "gamma", {features}, w[0].values, l.trainable, "parameter");
    Tensor out = in;
    out.nonNegative = false;
    if (in.image) {
      out.v = buildPerChannelAffine(b, loc, in.v, gamma, Value());
    } else {
      out.v = b.create<BroadcastMulOp>(loc, in.v.getType(), in.v, gamma);
    }
    return out;
  }

  /// AlphaDropout (SELU networks): a * (keep ? x : alpha') + b with alpha' = -SELU's
  /// scale * alpha, a = ((1 - rate)(1 + rate alpha'^2))^-1/2 and b = -a alpha' rate, as Keras.
  /// keep ? x : alpha' is dropout(x - alpha') * (1 - rate) + alpha', so the layer is two
  /// `scale`s around one graph.dropout.
  Tensor alphaDropout(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    double rate = dropoutRate(l);
    std::vector<bool> shared = noiseShapeAxes(l, in);
    if (rate == 0)
      return in;
    const double alphaPrime =
        -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946;
    const double a = 1.0 / std::sqrt((1 - rate) * (1 + rate * alphaPrime * alphaPrime));
    const double shift = -a * alphaPrime * rate;
    Type type = in.v.getType();
    Value centred = b.create<ScaleOp>(loc, type, in.v, b.getF32FloatAttr(1.0f),
                                      b.getF32FloatAttr(float(-alphaPrime)));
    Value dropped = dropoutOf(l, in, rate, shared, "noise_shape", centred, loc);
    Tensor out = in;
    out.v = b.create<ScaleOp>(loc, type, dropped, b.getF32FloatAttr(float(a * (1 - rate))),
                              b.getF32FloatAttr(float(a * alphaPrime + shift)));
    out.nonNegative = false;
    return out;
  }

  /// GaussianNoise (x + stddev * z) and GaussianDropout (x * (1 + sqrt(rate / (1 - rate)) z)),
  /// z graphc's counter-based standard normal (graph.random_normal, drawn over graphc's
  /// element order); the identity at stddev or rate 0.
  Tensor gaussianNoise(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    const bool additive = l.cls == "GaussianNoise";
    double mean = 0, scale = 0;
    if (additive) {
      scale = numAttr(l, "stddev", -1);
      if (!(scale >= 0))
        refuseAttr(l, "stddev", "must be given, >= 0");
    } else {
      double rate = dropoutRate(l);
      mean = 1;
      scale = std::sqrt(rate / (1 - rate));
    }
    if (scale == 0)
      return in;
    Type type = in.v.getType();
    Value noise = b.create<RandomNormalOp>(
        loc, type, stepInput(), b.getF32FloatAttr(float(mean)), b.getF32FloatAttr(float(scale)),
        b.getI64IntegerAttr(dropoutOps++), b.getI64IntegerAttr(0));
    Tensor out = in;
    out.v = additive ? b.create<AddOp>(loc, type, in.v, noise).getResult()
                     : b.create<MulOp>(loc, type, in.v, noise).getResult();
    out.nonNegative = false;
    return out;
  }

  /// The random augmentation layers have no input gradient: they must read the model's input
  /// (through untrained layers at most), never a trained layer's output.
  void augmentsInputOnly(const Layer &l, const Tensor &in) {
    if (readsTrained(in.v))
      failLayer(l, "reads the output of a trained layer; graphc augments the model's input "
                   "images only (the transform has no gradient): put it before every trained "
                   "layer");
  }

  /// A Keras augmentation factor: a number f is the range [-f, f], a pair [low, high] itself.
  std::pair<double, double> factorRange(const Layer &l, llvm::StringRef key) {
    const json::Value *v = l.config->get(key);
    if (!v)
      refuseAttr(l, key.str(), "must be given");
    if (auto f = v->getAsNumber(); f && std::isfinite(*f))
      return {-std::fabs(*f), std::fabs(*f)};
    if (const json::Array *pair = v->getAsArray(); pair && pair->size() == 2) {
      auto low = (*pair)[0].getAsNumber(), high = (*pair)[1].getAsNumber();
      if (low && high && std::isfinite(*low) && std::isfinite(*high) && *low <= *high)
        return {*low, *high};
    }
    refuseAttr(l, key.str(),
               "= " + show(v) +
                   " must be a number or a pair [low, high] with low "
                   "<= high");
  }

  /// RandomFlip, RandomRotation, RandomZoom, RandomTranslation: one graph.random_affine each
  /// (its draws graphc's, per sample; TensorFlow's transform and fill semantics). The image
  /// must be the data (the op has no input gradient).
  Tensor randomAffine(const Layer &l, const Tensor &in, Location loc) {
    needImage(l, in);
    augmentsInputOnly(l, in);
    std::string kind;
    std::pair<double, double> first{0, 0}, second{0, 0};
    if (l.cls == "RandomFlip") {
      std::string mode =
          l.config->get("mode") ? str(l.config->get("mode")) : "horizontal_and_vertical";
      kind = mode == "horizontal"                ? "flip_horizontal"
             : mode == "vertical"                ? "flip_vertical"
             : mode == "horizontal_and_vertical" ? "flip_both"
                                                 : "";
      if (kind.empty())
        refuseAttr(l, "mode",
                   "= " + show(l.config->get("mode")) +
                       " is not one of horizontal, vertical, horizontal_and_vertical");
    } else if (l.cls == "RandomRotation") {
      kind = "rotate";
      first = factorRange(l, "factor");
    } else {
      const bool zoom = l.cls == "RandomZoom";
      first = factorRange(l, "height_factor");
      const json::Value *width = l.config->get("width_factor");
      if (zoom && (!width || width->getAsNull())) {
        kind = "zoom_uniform";
      } else {
        kind = zoom ? "zoom" : "translate";
        second = factorRange(l, "width_factor");
      }
      if (zoom && (first.first <= -1 || second.first <= -1))
        refuseAttr(l, "height_factor",
                   "and width_factor must stay above -1 (a zoom by 1 + "
                   "factor > 0)");
      if (!zoom && (std::fabs(first.first) > 1 || std::fabs(first.second) > 1 ||
                    std::fabs(second.first) > 1 || std::fabs(second.second) > 1))
        refuseAttr(l, "height_factor",
                   "and width_factor must lie in [-1, 1] (fractions of "
                   "the image)");
    }
    std::string fill = "reflect", interpolation = "bilinear";
    if (l.cls != "RandomFlip") {
      if (const json::Value *v = l.config->get("fill_mode"); v && !v->getAsNull())
        fill = str(v);
      if (fill != "reflect" && fill != "nearest" && fill != "constant")
        refuseAttr(l, "fill_mode",
                   "= " + show(l.config->get("fill_mode")) +
                       " is not supported (reflect, nearest, constant)");
      if (const json::Value *v = l.config->get("interpolation"); v && !v->getAsNull())
        interpolation = str(v);
      if (interpolation != "bilinear" && interpolation != "nearest")
        refuseAttr(l, "interpolation",
                   "= " + show(l.config->get("interpolation")) +
                       " is not supported (bilinear, nearest)");
    }
    Tensor out = in;
    auto f = [&](double v) { return b.getF32FloatAttr(float(v)); };
    out.v = b.create<RandomAffineOp>(
        loc, in.v.getType(), in.v, stepInput(), b.getStringAttr(kind), f(first.first),
        f(first.second), f(second.first), f(second.second), b.getStringAttr(fill),
        f(numAttr(l, "fill_value", 0.0)), b.getStringAttr(interpolation),
        b.getI64IntegerAttr(dropoutOps++), b.getI64IntegerAttr(0));
    out.nonNegative = in.nonNegative && (fill != "constant" || numAttr(l, "fill_value", 0.0) >= 0);
    return out;
  }
  /// RandomGrayscale (with probability `factor` an image becomes its luma 0.2989 R + 0.5870 G
  /// + 0.1140 B in every channel, as Keras's rgb_to_grayscale) and RandomInvert (with
  /// probability E[U(factor)] = (low + high) / 2, Keras's draw of a threshold below a
  /// probability drawn from `factor`, an image becomes value_range[1] - x): per sample, x (1 -
  /// a) + y a with a exactly 0 or 1 from graphc's counter-based draws (a graph.dropout of ones
  /// with one draw per sample, compared to 0). Of the model's input only (no gradient).
  Tensor randomSwap(const Layer &l, const Tensor &in, Location loc) {
    needImage(l, in);
    noPadding(l, in);
    augmentsInputOnly(l, in);
    auto xs = shapeOf(in.v);
    const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
    Type type = in.v.getType();
    double probability = 0;
    Value swapped;
    if (l.cls == "RandomGrayscale") {
      probability = numAttr(l, "factor", 0.5);
      if (!(probability >= 0 && probability <= 1))
        refuseAttr(l, "factor", "must be in [0, 1]");
      if (C != 3)
        failLayer(l, "expects RGB images (3 channels), got shape " + shapeText(kerasShape(in)));
      Value weights = persistent(l, "luma", {1, 3, 1, 1}, {0.2989f, 0.5870f, 0.1140f},
                                 /*trainable=*/false, "parameter");
      Value gray =
          b.create<Conv2dOp>(loc, f32({N, 1, H, W}), in.v, weights, Value(),
                             b.getDenseI64ArrayAttr({1, 1}), b.getDenseI64ArrayAttr({0, 0, 0, 0}),
                             b.getDenseI64ArrayAttr({1, 1}), b.getI64IntegerAttr(1));
      swapped = b.create<ConcatOp>(loc, type, ValueRange{gray, gray, gray}, b.getI64IntegerAttr(1));
    } else {
      std::pair<double, double> factor{0.0, 1.0};
      if (const json::Value *v = l.config->get("factor"); v && !v->getAsNull()) {
        if (auto f = v->getAsNumber())
          factor = {0.0, *f};
        else
          factor = factorRange(l, "factor");
      }
      if (!(factor.first >= 0 && factor.second <= 1 && factor.first <= factor.second))
        refuseAttr(l, "factor",
                   "= " + show(l.config->get("factor")) +
                       " must be a probability or a range of them in [0, 1]");
      probability = 0.5 * (factor.first + factor.second);
      double top = 255.0;
      if (const json::Value *v = l.config->get("value_range"); v && !v->getAsNull()) {
        const json::Array *pair = v->getAsArray();
        auto high = pair && pair->size() == 2 ? (*pair)[1].getAsNumber() : std::nullopt;
        if (!high || !std::isfinite(*high))
          refuseAttr(l, "value_range", "= " + show(v) + " must be a pair [low, high]");
        top = *high;
      }
      swapped = b.create<ScaleOp>(loc, type, in.v, b.getF32FloatAttr(-1.0f),
                                  b.getF32FloatAttr(float(top)));
    }
    Tensor out = in;
    out.nonNegative = false;
    if (probability == 0)
      return in;
    Value apply;
    if (probability >= 1) {
      apply = b.create<FillOp>(loc, type, b.getF32FloatAttr(1.0f));
    } else {
      // One draw per sample: a dropout of ones keeping with the probability, 0 where dropped.
      Value ones = b.create<FillOp>(loc, type, b.getF32FloatAttr(1.0f));
      Value kept = b.create<DropoutOp>(loc, type, ones, stepInput(),
                                       b.getF32FloatAttr(float(1.0 - probability)),
                                       b.getI64IntegerAttr(dropoutOps++), b.getI64IntegerAttr(0),
                                       b.getI64IntegerAttr(C * H * W), b.getI64IntegerAttr(1));
      Value dropped =
          b.create<ActivationOp>(loc, type, ActivationKindAttr::get(&ctx, ActivationKind::equal),
                                 kept, b.getF32FloatAttr(0.0f));
      apply =
          b.create<ScaleOp>(loc, type, dropped, b.getF32FloatAttr(-1.0f), b.getF32FloatAttr(1.0f));
    }
    Value keep =
        b.create<ScaleOp>(loc, type, apply, b.getF32FloatAttr(-1.0f), b.getF32FloatAttr(1.0f));
    out.v = b.create<AddOp>(loc, type, b.create<MulOp>(loc, type, in.v, keep),
                            b.create<MulOp>(loc, type, swapped, apply));
    return out;
  }

  /// RandomContrast ((x - m) * f + m, m each image's per-channel mean, f per sample in
  /// [1 - lower, 1 + upper]) and RandomBrightness (x + d, d per sample in [lower, upper] of
  /// the value range), both clipped to `value_range` (0 to 255), as Keras 3 computes them;
  /// the per-sample draws are a graph.random_uniform whose runs of C * H * W elements share
  /// one draw, the mean an average pool over the image broadcast back by a nearest upsample.
  Tensor randomColor(const Layer &l, const Tensor &in, Location loc) {
    needImage(l, in);
    noPadding(l, in);
    std::pair<double, double> range{0.0, 255.0};
    if (const json::Value *v = l.config->get("value_range"); v && !v->getAsNull()) {
      const json::Array *pair = v->getAsArray();
      auto low = pair && pair->size() == 2 ? (*pair)[0].getAsNumber() : std::nullopt;
      auto high = pair && pair->size() == 2 ? (*pair)[1].getAsNumber() : std::nullopt;
      if (!low || !high || !std::isfinite(*low) || !std::isfinite(*high) || *low >= *high)
        refuseAttr(l, "value_range", "= " + show(v) + " must be a pair [low, high], low < high");
      range = {*low, *high};
    }
    const bool contrast = l.cls == "RandomContrast";
    auto factor = factorRange(l, "factor");
    if (contrast) {
      // A number f, or a pair (lower, upper), gives factors in [1 - lower, 1 + upper].
      const json::Value *v = l.config->get("factor");
      if (v->getAsArray())
        factor.first = -factor.first;
      if (factor.first > 0 || factor.first < -1 || factor.second < 0)
        refuseAttr(l, "factor", "= " + show(v) + " must hold lower in [0, 1] and upper >= 0");
    } else if (factor.first < -1 || factor.second > 1) {
      refuseAttr(l, "factor", "= " + show(l.config->get("factor")) + " must lie in [-1, 1]");
    }
    auto xs = shapeOf(in.v);
    Type type = in.v.getType();
    const double span = range.second - range.first;
    const double low = contrast ? 1.0 + factor.first : factor.first * span;
    const double high = contrast ? 1.0 + factor.second : factor.second * span;
    Value draws = b.create<RandomUniformOp>(
        loc, type, stepInput(), b.getF32FloatAttr(float(low)), b.getF32FloatAttr(float(high)),
        b.getI64IntegerAttr(dropoutOps++), b.getI64IntegerAttr(0),
        b.getI64IntegerAttr(xs[1] * xs[2] * xs[3]));
    Value out;
    if (contrast) {
      Value mean = b.create<AvgPool2dOp>(
          loc, f32({xs[0], xs[1], 1, 1}), in.v, b.getDenseI64ArrayAttr({xs[2], xs[3]}),
          b.getDenseI64ArrayAttr({xs[2], xs[3]}), b.getDenseI64ArrayAttr({0, 0, 0, 0}), UnitAttr());
      Value spread = buildUpsample(
          b, loc, mean,
          upsampleAxis(UpsampleInterpolation::Nearest, SourceCoordinates::HalfPixel, xs[2]),
          upsampleAxis(UpsampleInterpolation::Nearest, SourceCoordinates::HalfPixel, xs[3]),
          [&](RankedTensorType, ArrayRef<float>) -> Value {
            fail(label(l) + ": internal error: a nearest upsample asked for a filter table");
          });
      Value negated =
          b.create<ScaleOp>(loc, type, spread, b.getF32FloatAttr(-1.0f), b.getF32FloatAttr(0.0f));
      Value deviation = b.create<AddOp>(loc, type, in.v, negated);
      Value scaled = b.create<MulOp>(loc, type, deviation, draws);
      out = b.create<AddOp>(loc, type, scaled, spread);
    } else {
      out = b.create<AddOp>(loc, type, in.v, draws);
    }
    Tensor result = in;
    result.v = b.create<ClipOp>(loc, type, out, b.getF32FloatAttr(float(range.first)),
                                b.getF32FloatAttr(float(range.second)));
    result.nonNegative = range.first >= 0;
    return result;
  }

  /// The `padding` / `cropping` of the ZeroPadding and Cropping layers: [before, after] for
  /// each of `axes` spatial axes (height then width): an int for every edge, a pair per axis,
  /// or (2-D) a pair of pairs; each edge 0 to 65536.
  std::vector<std::array<int64_t, 2>> edgesAttr(const Layer &l, const std::string &key,
                                                size_t axes, int64_t dflt) {
    const json::Value *p = l.config->get(key);
    auto bad = [&]() { refuseAttr(l, key, "= " + show(p) + " is not a valid " + key); };
    auto pairOf = [&](const json::Value *v) -> std::optional<std::array<int64_t, 2>> {
      if (auto i = integer(v))
        return std::array<int64_t, 2>{*i, *i};
      if (auto *a = v->getAsArray(); a && a->size() == 2 && integer(&(*a)[0]) &&
                                     integer(&(*a)[1]))
        return std::array<int64_t, 2>{*integer(&(*a)[0]), *integer(&(*a)[1])};
      return std::nullopt;
    };
    std::vector<std::array<int64_t, 2>> out;
    if (!p || p->getAsNull()) {
      out.assign(axes, {dflt, dflt});
    } else if (auto i = integer(p)) {
      out.assign(axes, {*i, *i});
    } else if (axes == 1) {
      auto q = pairOf(p);
      if (!q || p->getAsArray() == nullptr)
        bad();
      out.push_back(*q);
    } else if (auto *a = p->getAsArray(); a && a->size() == axes) {
      for (const json::Value &e : *a) {
        auto q = pairOf(&e);
        if (!q)
          bad();
        out.push_back(*q);
      }
    } else {
      bad();
    }
    for (const auto &q : out)
      if (q[0] < 0 || q[0] > 65536 || q[1] < 0 || q[1] > 65536)
        bad();
    return out;
  }

  Tensor zeroPadding(const Layer &l, const Tensor &in) {
    needImage(l, in);
    auto e = edgesAttr(l, "padding", 2, 1);
    Tensor out = in;
    out.pad[0] += e[0][0];
    out.pad[2] += e[0][1];
    out.pad[1] += e[1][0];
    out.pad[3] += e[1][1];
    return out;
  }

  /// Rescaling (Keras's preprocessing layer, `Rescaling(1. / 255)` before an image model):
  /// x * scale + offset, one graph.scale; a scale or offset given per channel (a list) is
  /// refused.
  Tensor rescaling(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    // A number, or a list of one number or of one per channel (feature): the last Keras axis.
    const int64_t features = kerasShape(in).back();
    auto values = [&](llvm::StringRef key, double dflt) {
      const json::Value *v = l.config->get(key);
      if (!v || v->getAsNull())
        return std::vector<double>{dflt};
      if (!v->getAsArray())
        return std::vector<double>{numAttr(l, key, dflt)};
      std::vector<double> list;
      for (const json::Value &e : *v->getAsArray()) {
        auto d = e.getAsNumber();
        if (!d || !std::isfinite(*d))
          refuseAttr(l, key.str(), "= " + show(v) + " is not a list of numbers");
        list.push_back(*d);
      }
      if (list.size() != 1 && int64_t(list.size()) != features)
        refuseAttr(l, key.str(),
                   "= " + show(v) + " must hold one number or one per channel (" +
                       std::to_string(features) + ")");
      return list;
    };
    const std::vector<double> scale = values("scale", 1.0), offset = values("offset", 0.0);
    Tensor out = in;
    out.nonNegative = in.nonNegative && llvm::all_of(scale, [](double d) { return d >= 0; }) &&
                      llvm::all_of(offset, [](double d) { return d >= 0; });
    if (scale.size() == 1 && offset.size() == 1) {
      out.v = b.create<ScaleOp>(loc, in.v.getType(), in.v, b.getF32FloatAttr(float(scale[0])),
                                b.getF32FloatAttr(float(offset[0])));
      return out;
    }
    // Per channel (EfficientNet's 1 / stddev of ImageNet's RGB): frozen [C] tables as a
    // depthwise 1x1 convolution of the image, or of the [rows, features, 1, 1] view.
    noFlat(l, in);
    auto table = [&](const std::string &name, const std::vector<double> &v) {
      std::vector<float> full(static_cast<size_t>(features), static_cast<float>(v[0]));
      if (v.size() > 1)
        std::transform(v.begin(), v.end(), full.begin(), [](double d) { return float(d); });
      return persistent(l, name, {features}, full, /*trainable=*/false, "parameter");
    };
    Value scaleArg = table("scale", scale), offsetArg = table("offset", offset);
    auto xs = shapeOf(in.v);
    const int64_t rows = in.image ? 0 : product(ArrayRef<int64_t>(xs).drop_back());
    Value image =
        in.image ? in.v : b.create<ReshapeOp>(loc, f32({rows, features, 1, 1}), in.v).getResult();
    Value affine = buildPerChannelAffine(b, loc, image, scaleArg, offsetArg);
    out.v = in.image ? affine : b.create<ReshapeOp>(loc, in.v.getType(), affine).getResult();
    return out;
  }

  /// Normalization (Keras's preprocessing layer, adapted to the data): (x - mean) /
  /// max(sqrt(variance), 1e-7), or with `invert` mean + x max(sqrt(variance), 1e-7). Over the
  /// last axis (a feature, or an image's channel) the mean and variance are frozen parameters
  /// `<layer>/mean` and `<layer>/variance` (from the weights file, vars 0 and 1 of an adapted
  /// layer; count, var 2, unused; or the config's `mean` and `variance`), the scale
  /// variance^-1/2 (the variance clipped below at 1e-14) and the shift -mean times it computed
  /// in the step, and applied as one depthwise 1x1 graph.conv2d (buildPerChannelAffine) of
  /// the image or of the [rows, features, 1, 1] view. With `axis` None, one mean and variance:
  /// a graph.scale of the values read at import.
  Tensor normalization(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    noFlat(l, in);
    const auto ks = kerasShape(in);
    const json::Value *av = l.config->get("axis");
    bool global = !av || av->getAsNull();
    if (!global) {
      const json::Array *axes = av->getAsArray();
      std::optional<int64_t> single = axes ? std::optional<int64_t>() : integer(av);
      if (axes && axes->empty())
        global = true;
      else if (axes && axes->size() == 1)
        single = integer(&(*axes)[0]);
      if (!global && (!single || (*single != -1 && *single != int64_t(ks.size()) - 1)))
        refuseAttr(l, "axis", "= " + show(av) + " is not supported (the last axis, or None)");
    }
    const bool invert = boolAttr(l, "invert", false);
    const int64_t features = global ? 1 : ks.back();
    // The config's mean and variance (numbers or lists), else the weights.
    auto configured = [&](llvm::StringRef key) -> std::optional<std::vector<float>> {
      const json::Value *v = l.config->get(key);
      if (!v || v->getAsNull())
        return std::nullopt;
      std::vector<float> values;
      if (auto d = v->getAsNumber())
        values.assign(size_t(features), float(*d));
      else if (const json::Array *list = v->getAsArray())
        for (const json::Value &e : *list)
          if (auto d = e.getAsNumber())
            values.push_back(float(*d));
      if (int64_t(values.size()) != features)
        refuseAttr(l, key.str(),
                   "= " + show(v) + " is not " + std::to_string(features) + " numbers");
      return values;
    };
    std::optional<std::vector<float>> mean = configured("mean"), variance = configured("variance");
    if (mean.has_value() != variance.has_value())
      failLayer(l, "gives one of mean and variance in its config, not both");
    if (!mean) {
      std::vector<int64_t> shape = global ? std::vector<int64_t>{} : std::vector<int64_t>{features};
      auto w = layerWeights(l, {{"mean", shape, "", "zeros"},
                                {"variance", shape, "", "ones"},
                                {"count", {}, "", "zeros"}});
      mean = w[0].values;
      variance = w[1].values;
    }
    constexpr float kKerasEpsilon = 1e-7f; // keras.backend.epsilon()
    Tensor out = in;
    out.nonNegative = false;
    if (global) {
      const float deviation = std::max(std::sqrt((*variance)[0]), kKerasEpsilon);
      const float factor = invert ? deviation : 1.0f / deviation;
      const float offset = invert ? (*mean)[0] : -(*mean)[0] / deviation;
      out.v = b.create<ScaleOp>(loc, in.v.getType(), in.v, b.getF32FloatAttr(factor),
                                b.getF32FloatAttr(offset));
      return out;
    }
    Value meanArg = persistent(l, "mean", {features}, *mean, false, "parameter");
    Value varianceArg = persistent(l, "variance", {features}, *variance, false, "parameter");
    Type type = f32({features});
    Value clipped =
        b.create<ClipOp>(loc, type, varianceArg, b.getF32FloatAttr(kKerasEpsilon * kKerasEpsilon),
                         b.getF32FloatAttr(std::numeric_limits<float>::max()));
    Value factor =
        b.create<ActivationOp>(loc, type, ActivationKindAttr::get(&ctx, ActivationKind::pow),
                               clipped, b.getF32FloatAttr(invert ? 0.5f : -0.5f));
    Value shift = meanArg;
    if (!invert) {
      Value scaledMean = b.create<MulOp>(loc, type, meanArg, factor);
      shift = b.create<ScaleOp>(loc, type, scaledMean, b.getF32FloatAttr(-1.0f));
    }
    auto xs = shapeOf(in.v);
    const int64_t rows =
        in.image ? 0 : std::accumulate(xs.begin(), xs.end() - 1, int64_t{1}, std::multiplies<>());
    Value image =
        in.image ? in.v : b.create<ReshapeOp>(loc, f32({rows, features, 1, 1}), in.v).getResult();
    Value affine = buildPerChannelAffine(b, loc, image, factor, shift);
    out.v = in.image ? affine : b.create<ReshapeOp>(loc, in.v.getType(), affine).getResult();
    return out;
  }

  Tensor leakyRelu(const Tensor &in, double slope, Location loc) {
    Tensor out = in;
    out.v = b.create<ActivationOp>(loc, in.v.getType(),
                                   ActivationKindAttr::get(&ctx, ActivationKind::leaky_relu),
                                   in.v, b.getF32FloatAttr(float(slope)));
    out.nonNegative = false;
    return out;
  }

  /// Multiply of an image [N, C, H, W] by a per-channel gate [N, C, 1, 1] (Keras's
  /// squeeze-and-excitation blocks: `multiply([x, se])`, broadcast over the pixels), either
  /// order: one graph.batch_matmul of the [N * C, H * W, 1] and [N * C, 1, 1] views, whose
  /// backward gives both gradients without a broadcast copy of the gate. None for other shapes.
  std::optional<Tensor> gateProduct(const Tensor &a, const Tensor &g, Location loc) {
    if (!a.image || !g.image || a.padded() || g.padded())
      return std::nullopt;
    auto as = shapeOf(a.v), gs = shapeOf(g.v);
    if (as[0] != gs[0] || as[1] != gs[1] || gs[2] != 1 || gs[3] != 1 || as[2] * as[3] == 1)
      return std::nullopt;
    const int64_t rows = as[0] * as[1], pixels = as[2] * as[3];
    Value image = b.create<ReshapeOp>(loc, f32({rows, pixels, 1}), a.v);
    Value gate = b.create<ReshapeOp>(loc, f32({rows, 1, 1}), g.v);
    Value product =
        b.create<BatchMatmulOp>(loc, f32({rows, pixels, 1}), image, gate, UnitAttr(), UnitAttr());
    Tensor out = a;
    out.v = b.create<ReshapeOp>(loc, a.v.getType(), product);
    out.nonNegative = a.nonNegative && g.nonNegative;
    return out;
  }

  /// Add, Subtract, Multiply, Average, Maximum and Minimum: elementwise over inputs of one
  /// shape (an image times a per-channel gate aside: gateProduct). max(a, b) = b + relu(a - b) and
  /// min(a, b) = a - relu(a - b), folded left over the inputs (at a tie the gradient goes whole to
  /// one input, where TensorFlow gives it to the first).
  Tensor merge(const Layer &l, const std::vector<Tensor> &ins, Location loc) {
    const std::string &c = l.cls;
    if (ins.size() < 2)
      failLayer(l, "needs at least two inputs");
    if (c == "Multiply" && ins.size() == 2) {
      if (auto gated = gateProduct(ins[0], ins[1], loc))
        return *gated;
      if (auto gated = gateProduct(ins[1], ins[0], loc))
        return *gated;
    }
    if (c == "Subtract" && ins.size() != 2)
      failLayer(l, "needs exactly two inputs, got " + std::to_string(ins.size()));
    Tensor acc = ins[0];
    for (size_t i = 1; i < ins.size(); ++i) {
      const Tensor &t = ins[i];
      noPadding(l, t);
      noPadding(l, acc);
      if (t.v.getType() != acc.v.getType() || t.image != acc.image || t.seq != acc.seq ||
          !std::equal(t.flat, t.flat + 3, acc.flat))
        failLayer(l, "merges inputs of different shapes " + shapeText(kerasShape(acc)) +
                         " and " + shapeText(kerasShape(t)) + " (no broadcasting)");
      Tensor next = acc;
      Type type = acc.v.getType();
      auto minus = [&](Value lhs, Value rhs) -> Value {
        Value negated = b.create<ScaleOp>(loc, type, rhs, b.getF32FloatAttr(-1.0f));
        return b.create<AddOp>(loc, type, lhs, negated);
      };
      if (c == "Multiply") {
        next.v = b.create<MulOp>(loc, type, acc.v, t.v);
      } else if (c == "Maximum" || c == "Minimum") {
        Value excess = b.create<ReluOp>(loc, type, minus(acc.v, t.v));
        next.v = c == "Maximum" ? b.create<AddOp>(loc, type, t.v, excess).getResult()
                                : minus(acc.v, excess);
      } else if (c == "Subtract") {
        next.v = minus(acc.v, t.v);
      } else {
        next.v = b.create<AddOp>(loc, type, acc.v, t.v);
      }
      next.nonNegative = c == "Maximum" ? acc.nonNegative || t.nonNegative
                                        : c != "Subtract" && acc.nonNegative && t.nonNegative;
      acc = next;
    }
    if (c == "Average")
      acc.v = b.create<ScaleOp>(loc, acc.v.getType(), acc.v,
                                b.getF32FloatAttr(float(1.0 / double(ins.size()))));
    return acc;
  }

  //===--------------------------------------------------------------------===//
  // Embedding, recurrent layers and their wrappers
  //===--------------------------------------------------------------------===//

  Tensor embedding(const Layer &l, const Tensor &in, Location loc) {
    auto xs = shapeOf(in.v);
    if (in.image || xs.size() != 2)
      failLayer(l, "expects a (batch, sequence) input of token ids, got shape " +
                       shapeText(kerasShape(in)));

    if (const json::Value *sparse = l.config->get("sparse"); sparse && sparse->getAsBoolean().value_or(false))
      refuseAttr(l, "sparse", "= true is not supported");
    int64_t vocabulary = intAttr(l, "input_dim", 0), features = intAttr(l, "output_dim", 0);
    if (vocabulary < 1 || vocabulary > (int64_t{1} << 24))
      refuseAttr(l, "input_dim", "must be in [1, 2^24] (token ids are exact float32 values)");
    if (features < 1)
      refuseAttr(l, "output_dim", "must be positive");
    std::vector<VarSpec> vars = {{"embeddings", {vocabulary, features}, "embeddings_initializer",
                                  "random_uniform", double(vocabulary), double(features)}};
    checkSize(l, vars[0].shape);
    auto w = layerWeights(l, vars);
    Value table = persistent(l, "embeddings", {vocabulary, features}, w[0].values, l.trainable,
                             "parameter");
    Tensor out;
    out.v = b.create<EmbeddingOp>(loc, f32({xs[0], xs[1], features}), in.v, table);
    if (boolAttr(l, "mask_zero", false)) {
      // Keras's mask: step t of a sample is real unless its token id is 0 (1 - (id == 0)).
      Value padding = b.create<ActivationOp>(loc, in.v.getType(),
                                             ActivationKindAttr::get(&ctx, ActivationKind::equal),
                                             in.v, b.getF32FloatAttr(0.0f));
      out.mask = b.create<ScaleOp>(loc, in.v.getType(), padding, b.getF32FloatAttr(-1.0f),
                                   b.getF32FloatAttr(1.0f));
    }
    return out;
  }

  /// GlobalAveragePooling1D of a masked (batch, steps, features) sequence, as Keras computes it:
  /// the sum of the real steps over their count, sum(x m) / sum(m). The masked sum is one
  /// product, mask row [N, 1, T] times x [N, T, F]; the count's reciprocal (pow -1; a sample of
  /// padding only gives inf and NaN, as in Keras) scales it by another product.
  Tensor maskedMean(const Layer &l, const Tensor &in, Location loc) {
    auto xs = shapeOf(in.v);
    if (in.image || xs.size() != 3)
      failLayer(l,
                "expects a (batch, steps, features) input, got shape " + shapeText(kerasShape(in)));
    const int64_t n = xs[0], steps = xs[1], features = xs[2];
    Value row = b.create<ReshapeOp>(loc, f32({n, 1, steps}), in.mask);
    Value sum =
        b.create<BatchMatmulOp>(loc, f32({n, 1, features}), row, in.v, UnitAttr(), UnitAttr());
    Value ones = b.create<FillOp>(loc, f32({steps, 1}), b.getF32FloatAttr(1.0f));
    Value count = b.create<DenseOp>(loc, f32({n, 1}), in.mask, ones, Value(), UnitAttr());
    Value reciprocal = b.create<ActivationOp>(loc, count.getType(),
                                              ActivationKindAttr::get(&ctx, ActivationKind::pow),
                                              count, b.getF32FloatAttr(-1.0f));
    Value factor = b.create<ReshapeOp>(loc, f32({n, 1, 1}), reciprocal);
    Value mean =
        b.create<BatchMatmulOp>(loc, f32({n, 1, features}), factor, sum, UnitAttr(), UnitAttr());
    Tensor out;
    out.v = boolAttr(l, "keepdims", false)
                ? mean
                : b.create<ReshapeOp>(loc, f32({n, features}), mean).getResult();
    out.nonNegative = in.nonNegative;
    return out;
  }

  /// The recurrent activation named by attribute `key` of l, as a cell's callback.
  RecurrentActivation cellActivation(const Layer &l, const std::string &key,
                                     const std::string &dflt) {
    std::string name = strAttr(l, key, dflt);
    if (name == "softmax")
      refuseAttr(l, key, "= softmax is not supported in a recurrent cell");
    if (!isActivationName(name))
      refuseActivation(l, key, name);
    return [this, &l, key, name](OpBuilder &, Location loc, Value x) {
      bool nonNegative = false;
      return activationOp(l, key, name, x, loc, nonNegative);
    };
  }

  /// LSTM, GRU and SimpleRNN, unrolled (importers/common/RecurrentUnroll.h). `flip` reverses
  /// go_backwards and `inputOrder` returns a reversed layer's sequence in the input's time order
  /// (both for Bidirectional's backward half).
  Tensor recurrentLayer(const Layer &l, const Tensor &in, bool flip = false,
                        bool inputOrder = false) {
    const std::string &c = l.cls;
    auto xs = shapeOf(in.v);
    if (in.image || xs.size() != 3)
      failLayer(l, "expects a (batch, steps, features) input, got shape " +
                       shapeText(kerasShape(in)));
    // Keras's cell dropout (implementation 2, the default): one mask per sample and input
    // feature for every step (`dropout`), and one per sample and unit on the state before the
    // recurrent kernel (`recurrent_dropout`, LSTM and SimpleRNN); graphc's counter-based draws.
    const double inputRate = numAttr(l, "dropout", 0.0),
                 stateRate = numAttr(l, "recurrent_dropout", 0.0);
    for (const auto &[key, rate] :
         {std::pair{"dropout", inputRate}, {"recurrent_dropout", stateRate}})
      if (!(rate >= 0 && rate < 1))
        refuseAttr(l, key, "= " + show(l.config->get(key)) + " must be in [0, 1)");
    if (stateRate != 0 && c == "GRU")
      refuseAttr(l, "recurrent_dropout",
                 "!= 0 is not supported on a GRU (Keras 3's default GRU cell ignores it, "
                 "tf.keras 2's also drops the carried state; put a Dropout layer before or "
                 "after)");
    if ((inputRate != 0 || stateRate != 0) && c != "SimpleRNN" &&
        intAttr(l, "implementation", 2) != 2)
      refuseAttr(l, "implementation",
                 "= 1 with dropout is not supported (a mask per gate); "
                 "implementation 2, the default, is");
    for (const char *key : {"return_state", "stateful", "time_major"})
      if (boolAttr(l, key, false))
        refuseAttr(l, key, "= true is not supported");
    int64_t units = intAttr(l, "units", 0);
    if (units < 1 || units > (int64_t{1} << 20))
      refuseAttr(l, "units", "must be positive");
    RecurrentLayer spec;
    spec.cell = c == "LSTM" ? RecurrentCell::Lstm
                : c == "GRU" ? RecurrentCell::Gru
                             : RecurrentCell::SimpleRnn;
    int64_t gates = c == "LSTM" ? 4 : c == "GRU" ? 3 : 1;
    bool useBias = boolAttr(l, "use_bias", true);
    spec.resetAfter = c == "GRU" && boolAttr(l, "reset_after", true);
    int64_t features = xs[2];
    std::vector<VarSpec> vars = {
        {"kernel", {features, gates * units}, "kernel_initializer", "glorot_uniform",
         double(features), double(gates * units)},
        {"recurrent_kernel", {units, gates * units}, "recurrent_initializer", "orthogonal",
         double(units), double(gates * units)}};
    if (useBias) {
      std::vector<int64_t> biasShape = {gates * units};
      if (spec.resetAfter)
        biasShape = {2, gates * units}; // input and recurrent biases
      vars.push_back({"bias", biasShape, "bias_initializer", "zeros"});
    }
    checkSize(l, vars[0].shape);
    checkSize(l, vars[1].shape);
    auto w = layerWeights(l, vars, "cell");
    if (useBias && c == "LSTM" && !weights && boolAttr(l, "unit_forget_bias", true))
      std::fill_n(w[2].values.begin() + units, units, 1.0f); // the forget gate's block
    spec.units = units;
    spec.kernel = persistent(l, "kernel", vars[0].shape, w[0].values, l.trainable, "parameter");
    spec.recurrentKernel =
        persistent(l, "recurrent_kernel", vars[1].shape, w[1].values, l.trainable, "parameter");
    Location loc = NameLoc::get(b.getStringAttr(l.name));
    if (useBias) {
      Value bias = persistent(l, "bias", vars[2].shape, w[2].values, l.trainable, "parameter");
      if (spec.resetAfter) {
        // Rows 0 and 1 of the one [2, G*units] variable (slices that tile it).
        auto row = [&](int64_t r) -> Value {
          Value slice = b.create<SliceOp>(loc, f32({1, gates * units}), bias,
                                          b.getI64IntegerAttr(0), b.getI64IntegerAttr(r));
          return b.create<ReshapeOp>(loc, f32({gates * units}), slice);
        };
        spec.bias = row(0);
        spec.recurrentBias = row(1);
      } else {
        spec.bias = bias;
      }
    }
    spec.candidate = cellActivation(l, "activation", "tanh");
    if (c != "SimpleRNN")
      spec.gate = cellActivation(l, "recurrent_activation", "sigmoid");
    spec.reverse = boolAttr(l, "go_backwards", false) != flip;
    spec.returnSequences = boolAttr(l, "return_sequences", false);
    spec.sequenceInInputOrder = inputOrder;
    spec.name = l.name;
    spec.stepMask = in.mask; // padding steps carry the states over, as Keras's masked RNN
    Value x = in.v;
    if (inputRate > 0)
      x = dropoutOf(l, in, inputRate, {false, true, false}, "its input mask", in.v, loc);
    if (stateRate > 0) {
      Type rows = f32({xs[0], units});
      Value ones = b.create<FillOp>(loc, rows, b.getF32FloatAttr(1.0f));
      spec.stateDropMask =
          b.create<DropoutOp>(loc, rows, ones, stepInput(), b.getF32FloatAttr(float(stateRate)),
                              b.getI64IntegerAttr(dropoutOps++), b.getI64IntegerAttr(0));
    }
    Tensor out;
    RecurrentOutputs outputs = unrollRecurrent(b, spec, x);
    out.v = spec.returnSequences ? outputs.sequence : outputs.lastH;
    if (spec.returnSequences)
      out.mask = in.mask; // (Keras passes the mask on with the sequence)
    return out;
  }

  /// The layer object `key` of wrapper l (Bidirectional's layer/backward_layer,
  /// TimeDistributed's layer), named `prefix` + its own name under l.
  Layer wrappedLayer(const Layer &l, const std::string &key, const std::string &prefix,
                     const std::string &k3sub) {
    const json::Object *spec = l.config->getObject(key);
    if (!spec)
      failLayer(l, "has no " + key + " object");
    Layer in = l;
    in.obj = spec;
    in.cls = str(spec->get("class_name"));
    in.module = str(spec->get("module"));
    in.registeredName = str(spec->get("registered_name"));
    in.config = spec->getObject("config");
    if (in.cls.empty() || !in.config)
      refuseAttr(l, key, "is not a layer object");
    std::string own = str(in.config->get("name"));
    in.name = l.name + "/" + prefix + (own.empty() ? in.cls : own);
    in.k3path = l.k3path + "/" + k3sub;
    in.k3namePath = l.k3namePath + "/" + k3sub;
    if (const json::Value *t = in.config->get("trainable"))
      in.trainable = l.trainable && t->getAsBoolean().value_or(true);
    if (isModelClass(in.cls) || !isKnownLayer(in.cls))
      refuseLayer(in);
    checkCommon(in);
    return in;
  }

  Tensor bidirectional(const Layer &l, const Tensor &in, Location loc) {
    Layer forward = wrappedLayer(l, "layer", "forward_", "forward_layer");
    if (forward.cls != "LSTM" && forward.cls != "GRU" && forward.cls != "SimpleRNN")
      failLayer(l, "wraps a " + forward.cls + "; graphc supports LSTM, GRU and SimpleRNN");
    std::string mode = strAttr(l, "merge_mode", "concat");
    Tensor fw = recurrentLayer(forward, in);
    Tensor bw;
    if (l.config->getObject("backward_layer")) {
      Layer backward = wrappedLayer(l, "backward_layer", "", "backward_layer");
      if (backward.cls != forward.cls)
        failLayer(l, "has a " + backward.cls + " backward layer and a " + forward.cls +
                         " forward layer");
      if (boolAttr(backward, "go_backwards", false) == boolAttr(forward, "go_backwards", false))
        refuseAttr(backward, "go_backwards", "must differ from the forward layer's");
      bw = recurrentLayer(backward, in, false, true);
    } else {
      Layer backward = forward;
      backward.name = l.name + "/backward_" + str(forward.config->get("name"));
      backward.k3path = l.k3path + "/backward_layer";
      backward.k3namePath = l.k3namePath + "/backward_layer";
      bw = recurrentLayer(backward, in, true, true);
    }
    auto shape = shapeOf(fw.v);
    Tensor out;
    Type type = fw.v.getType();
    if (mode == "concat") {
      shape.back() *= 2;
      out.v = b.create<ConcatOp>(loc, f32(shape), ValueRange{fw.v, bw.v},
                                 b.getI64IntegerAttr(int64_t(shape.size()) - 1));
    } else if (mode == "sum") {
      out.v = b.create<AddOp>(loc, type, fw.v, bw.v);
    } else if (mode == "mul") {
      out.v = b.create<MulOp>(loc, type, fw.v, bw.v);
    } else if (mode == "ave") {
      Value sum = b.create<AddOp>(loc, type, fw.v, bw.v);
      out.v = b.create<ScaleOp>(loc, type, sum, b.getF32FloatAttr(0.5f));
    } else {
      refuseAttr(l, "merge_mode", "= " + (mode.empty() ? std::string("None") : mode) +
                                      " is not supported (concat, sum, mul, ave; None returns "
                                      "two outputs)");
    }
    out.mask = fw.mask;
    return out;
  }

  /// TimeDistributed: the wrapped layer applied to (batch * steps, ...) rows.
  /// TimeDistributed over frames (a (batch, time, H, W, C) input, or what TimeDistributed
  /// layers made of it): the wrapped layer on the N * T frames as one batch of NCHW images (a
  /// Conv2D, pooling, BatchNormalization over every frame's pixels as Keras's, Dropout, ...),
  /// the result still frames. Flatten takes each frame in Keras's (H, W, C) order (a transpose
  /// first), so that a recurrent layer after it reads Keras's features.
  Tensor timeDistributedFrames(const Layer &l, const Layer &inner, const Tensor &in, Location loc) {
    Tensor frames = in;
    frames.timeSteps = 0;
    Tensor mapped;
    if (inner.cls == "Flatten" && frames.image && !frames.seq) {
      noPadding(inner, frames);
      auto xs = shapeOf(frames.v);
      Value hwc = transposed(frames.v, {0, 2, 3, 1}, loc);
      mapped.v = b.create<ReshapeOp>(loc, f32({xs[0], xs[2] * xs[3] * xs[1]}), hwc);
      mapped.nonNegative = frames.nonNegative;
    } else {
      if (inner.cls == "TimeDistributed" || isModelClass(inner.cls))
        failLayer(l, "wraps a " + inner.cls + ", which graphc does not apply per frame");
      mapped = applyLayer(inner, {frames});
    }
    if (shapeOf(mapped.v)[0] != shapeOf(in.v)[0])
      failLayer(l, "wraps a " + inner.cls + " that changes the number of frames");
    mapped.timeSteps = in.timeSteps;
    return mapped;
  }

  /// A tensor of frames as a non-TimeDistributed layer sees it: (batch * time, features) rows
  /// as a (batch, time, features) sequence; frames that are still images are refused (graphc
  /// applies only TimeDistributed layers to them).
  Tensor fromFrames(const Layer &l, const Tensor &t, Location loc) {
    if (!t.timeSteps)
      return t;
    auto s = shapeOf(t.v);
    if (t.image || s.size() != 2 || t.hasFlat())
      failLayer(l, "reads frames of shape " + shapeText(kerasShape(t)) +
                       "; graphc applies TimeDistributed layers to frames, and other layers to "
                       "the (batch, time, features) sequence a TimeDistributed Flatten or "
                       "GlobalAveragePooling2D makes of them");
    Tensor seq;
    seq.v = b.create<ReshapeOp>(loc, f32({s[0] / t.timeSteps, t.timeSteps, s[1]}), t.v);
    seq.nonNegative = t.nonNegative;
    return seq;
  }

  Tensor timeDistributed(const Layer &l, const Tensor &in, Location loc) {
    Layer inner = wrappedLayer(l, "layer", "", "layer");
    if (in.timeSteps)
      return timeDistributedFrames(l, inner, in, loc);
    static const std::set<std::string> rowwise = {"Dense", "Dropout", "Activation", "ReLU",
                                                  "LeakyReLU", "ELU", "Softmax"};
    if (!rowwise.count(inner.cls))
      failLayer(l, "wraps a " + inner.cls +
                       "; graphc supports TimeDistributed over Dense, Dropout and activations");
    auto xs = shapeOf(in.v);
    if (in.image || xs.size() != 3)
      failLayer(l, "expects a (batch, steps, features) input, got shape " +
                       shapeText(kerasShape(in)));
    Tensor rows;
    rows.v = b.create<ReshapeOp>(loc, f32({xs[0] * xs[1], xs[2]}), in.v);
    Tensor mapped = applyLayer(inner, {rows});
    auto ys = shapeOf(mapped.v);
    Tensor out = mapped;
    out.v = b.create<ReshapeOp>(loc, f32({xs[0], xs[1], ys[1]}), mapped.v);
    return out;
  }

  Tensor concatenate(const Layer &l, const std::vector<Tensor> &ins, Location loc) {
    if (ins.empty())
      failLayer(l, "has no inputs");
    int64_t rank = kerasShape(ins[0]).size();
    int64_t axis = intAttr(l, "axis", -1);
    if (axis < 0)
      axis += rank;
    if (axis <= 0 || axis >= rank)
      refuseAttr(l, "axis", "= " + std::to_string(axis) + " is out of range");
    int64_t graphAxis = graphAxisOf(ins[0], axis);
    SmallVector<Value> values;
    auto shape = shapeOf(ins[0].v);
    shape[graphAxis] = 0;
    bool nonNegative = true;
    for (const Tensor &t : ins) {
      noPadding(l, t);
      noFlat(l, t);
      auto s = shapeOf(t.v);
      auto ref = shapeOf(ins[0].v);
      bool ok = t.image == ins[0].image && t.seq == ins[0].seq && s.size() == ref.size();
      for (size_t d = 0; ok && d < s.size(); ++d)
        ok = int64_t(d) == graphAxis || s[d] == ref[d];
      if (!ok)
        failLayer(l, "concatenates inputs of incompatible shapes " +
                         shapeText(kerasShape(ins[0])) + " and " + shapeText(kerasShape(t)));
      shape[graphAxis] += s[graphAxis];
      values.push_back(t.v);
      nonNegative = nonNegative && t.nonNegative;
    }
    Tensor out;
    out.image = ins[0].image;
    out.seq = ins[0].seq;
    out.nonNegative = nonNegative;
    out.v = b.create<ConcatOp>(loc, f32(shape), values, b.getI64IntegerAttr(graphAxis));
    return out;
  }

  //===--------------------------------------------------------------------===//
  // 1-D feature maps, transposed and separable convolutions, Permute, LayerNormalization
  //===--------------------------------------------------------------------===//

  /// The layers of this section, with their Keras aliases.
  static const std::set<std::string> &convFamily() {
    static const std::set<std::string> names = {"Conv1D",
                                                "Convolution1D",
                                                "MaxPooling1D",
                                                "MaxPool1D",
                                                "AveragePooling1D",
                                                "AvgPool1D",
                                                "GlobalAveragePooling1D",
                                                "GlobalAvgPool1D",
                                                "GlobalMaxPooling1D",
                                                "GlobalMaxPool1D",
                                                "Conv2DTranspose",
                                                "Conv1DTranspose",
                                                "Convolution1DTranspose",
                                                "Convolution2DTranspose",
                                                "SeparableConv2D",
                                                "SeparableConvolution2D",
                                                "SeparableConv1D",
                                                "SeparableConvolution1D",
                                                "DepthwiseConv1D",
                                                "Permute",
                                                "LayerNormalization",
                                                "RMSNormalization",
                                                "UnitNormalization",
                                                "GroupNormalization"};
    return names;
  }

  Tensor applyConvFamily(const Layer &l, const Tensor &in, Location loc) {
    const std::string &c = l.cls;
    if (c == "Conv1D" || c == "Convolution1D")
      return conv(l, asSequence(l, in, loc), false, loc, /*oneD=*/true);
    if (c == "MaxPooling1D" || c == "MaxPool1D" || c == "AveragePooling1D" || c == "AvgPool1D")
      return pool(l, asSequence(l, in, loc), c.rfind("Max", 0) == 0, loc, /*oneD=*/true);
    if ((c == "GlobalAveragePooling1D" || c == "GlobalAvgPool1D") && in.mask)
      return maskedMean(l, in, loc);
    if (c == "GlobalAveragePooling1D" || c == "GlobalAvgPool1D")
      return globalPool(l, asSequence(l, in, loc), false, loc, /*oneD=*/true);
    if (c == "GlobalMaxPooling1D" || c == "GlobalMaxPool1D")
      return globalPool(l, asSequence(l, in, loc), true, loc, /*oneD=*/true);
    if (c == "Conv2DTranspose" || c == "Convolution2DTranspose")
      return convTranspose(l, in, loc);
    if (c == "Conv1DTranspose" || c == "Convolution1DTranspose")
      return convTranspose(l, asSequence(l, in, loc), loc, /*oneD=*/true);
    if (c == "SeparableConv1D" || c == "SeparableConvolution1D")
      return separableConv(l, asSequence(l, in, loc), loc, /*oneD=*/true);
    if (c == "DepthwiseConv1D")
      return conv(l, asSequence(l, in, loc), true, loc, /*oneD=*/true);
    if (c == "SeparableConv2D" || c == "SeparableConvolution2D")
      return separableConv(l, in, loc);
    if (c == "Permute")
      return permute(l, in, loc);
    if (c == "RMSNormalization")
      return rmsNormalization(l, in, loc);
    if (c == "UnitNormalization")
      return unitNormalization(l, in, loc);
    if (c == "GroupNormalization")
      return groupNormalization(l, in, loc);
    return layerNormalization(l, in, loc);
  }

  /// Which Keras axis each axis of graphView(t) holds.
  static std::vector<int64_t> kerasAxes(const Tensor &t) {
    if (t.image && t.seq)
      return {0, 2, 1};
    if (t.image)
      return {0, 3, 1, 2};
    std::vector<int64_t> axes(shapeOf(t.v).size());
    std::iota(axes.begin(), axes.end(), int64_t{0});
    return axes;
  }
  static std::vector<int64_t> inverse(const std::vector<int64_t> &perm) {
    std::vector<int64_t> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inv[size_t(perm[i])] = int64_t(i);
    return inv;
  }
  /// t.v, with a 1-D feature map's height-1 axis dropped ([N, C, L]).
  Value graphView(const Tensor &t, Location loc) {
    if (!(t.image && t.seq))
      return t.v;
    auto s = shapeOf(t.v);
    return b.create<ReshapeOp>(loc, f32({s[0], s[1], s[3]}), t.v);
  }
  /// `v` with result axis i = axis perm[i]; `v` itself for the identity.
  Value transposed(Value v, const std::vector<int64_t> &perm, Location loc) {
    std::vector<int64_t> s = shapeOf(v), shape;
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) {
      identity = identity && perm[i] == int64_t(i);
      shape.push_back(s[size_t(perm[i])]);
    }
    if (identity)
      return v;
    return b.create<TransposeOp>(loc, f32(shape), v, b.getDenseI64ArrayAttr(perm));
  }

  /// A (batch, steps, channels) tensor as graphc's 1-D feature map [N, C, 1, L], a height-1
  /// image that conv2d and the pools run on. A plain rank-3 value (the model input, a Reshape
  /// or Permute output) is transposed once; Conv1D and 1-D pooling outputs already are one.
  Tensor asSequence(const Layer &l, const Tensor &t, Location loc) {
    if (t.image && t.seq)
      return t;
    auto s = shapeOf(t.v);
    if (t.image || s.size() != 3)
      failLayer(l, "expects a 3-D (batch, steps, channels) input, got shape " +
                       shapeText(kerasShape(t)));
    Tensor out;
    out.image = out.seq = true;
    out.nonNegative = t.nonNegative;
    out.v = b.create<ReshapeOp>(loc, f32({s[0], s[2], 1, s[1]}), transposed(t.v, {0, 2, 1}, loc));
    return out;
  }

  /// The inverse of asSequence: a 1-D feature map ([N, C, 1, L]) back in Keras's own
  /// (batch, steps, channels) order, for the layers that read steps (Dense over steps, the
  /// recurrent layers, TimeDistributed); other tensors unchanged.
  Tensor asSteps(const Tensor &t, Location loc) {
    if (!(t.image && t.seq))
      return t;
    auto s = shapeOf(t.v); // [N, C, 1, L]
    Value channelsFirst = b.create<ReshapeOp>(loc, f32({s[0], s[1], s[3]}), t.v);
    Tensor out;
    out.nonNegative = t.nonNegative;
    out.v = transposed(channelsFirst, {0, 2, 1}, loc);
    return out;
  }

  /// Permute(dims): one transpose from the input's graphc layout straight to the output's (an
  /// image when the output has rank 4, Keras's own axis order otherwise).
  Tensor permute(const Layer &l, const Tensor &in, Location loc) {
    auto ks = kerasShape(in);
    size_t rank = ks.size();
    const json::Value *dv = l.config->get("dims");
    const json::Array *arr = dv ? dv->getAsArray() : nullptr;
    std::vector<int64_t> perm = {0}; // Keras output axis j is input axis perm[j]
    for (size_t j = 0; arr && j < arr->size(); ++j)
      perm.push_back(integer(&(*arr)[j]).value_or(-1));
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t j = 0; j < rank; ++j)
      if (sorted.size() != rank || sorted[j] != int64_t(j))
        refuseAttr(l, "dims", "= " + show(dv) + " is not a permutation of the " +
                                  std::to_string(rank - 1) + " non-batch axes of " +
                                  shapeText(ks));
    Tensor out;
    out.image = rank == 4;
    out.nonNegative = in.nonNegative;
    std::vector<int64_t> outAxes(rank); // graphc axis h of the output holds Keras axis outAxes[h]
    std::iota(outAxes.begin(), outAxes.end(), int64_t{0});
    if (out.image)
      outAxes = {0, 3, 1, 2};
    auto where = inverse(kerasAxes(in)); // Keras axis -> graphc axis of the input
    std::vector<int64_t> graphPerm;
    for (int64_t a : outAxes)
      graphPerm.push_back(where[size_t(perm[size_t(a)])]);
    out.v = transposed(graphView(in, loc), graphPerm, loc);
    return out;
  }

  /// A normalization's `axis` (an integer, or a one-element list as a built layer saves it;
  /// absent or null: the last) must be the last of the input's `rank` Keras axes.
  void refuseUnlessLastAxis(const Layer &l, int64_t rank) {
    int64_t axis = -1;
    const json::Value *av = l.config->get("axis");
    if (av && !av->getAsNull()) {
      const json::Value *one = av;
      if (auto *a = av->getAsArray())
        one = a->size() == 1 ? &(*a)[0] : nullptr;
      axis = (one ? integer(one) : std::nullopt).value_or(rank); // rank: refused below
    }
    if (axis < 0)
      axis += rank;
    if (axis != rank - 1)
      refuseAttr(l, "axis", "= " + show(av) + " is not supported: graphc normalizes over the "
                                              "last axis only");
  }

  /// `x` (graphView(in)) in Keras's axis order, normalized over its last axis by `normalize`,
  /// then back in graphc's order: graph.layer_norm and graph.rms_norm normalize the last axis
  /// of their operand, so an image or 1-D feature map (channels first in graphc) is transposed
  /// to channels last and back around them.
  Tensor normalizedOverLastKerasAxis(const Tensor &in, Location loc,
                                     llvm::function_ref<Value(Value)> normalize) {
    auto axes = kerasAxes(in);
    Value x = transposed(graphView(in, loc), inverse(axes), loc); // Keras's axis order
    Tensor out = in;
    out.nonNegative = false;
    out.v = transposed(normalize(x), axes, loc);
    if (in.image && in.seq)
      out.v = b.create<ReshapeOp>(loc, in.v.getType(), out.v);
    return out;
  }

  /// RMSNormalization (Keras 3.9) over the last Keras axis: one graph.rms_norm,
  /// x / sqrt(mean(x^2) + epsilon) * scale, Keras's formula (epsilon 1e-6 by default); the
  /// [features] scale starts at ones, and is read from the layer's vars (Keras's `scale`).
  Tensor rmsNormalization(const Layer &l, const Tensor &in, Location loc) {
    auto ks = kerasShape(in);
    refuseUnlessLastAxis(l, int64_t(ks.size()));
    double epsilon = numAttr(l, "epsilon", 1e-6);
    if (!(epsilon > 0))
      refuseAttr(l, "epsilon", "must be positive");
    int64_t d = ks.back(), rows = product(ks) / d;
    std::vector<KerasArray> w = layerWeights(l, {{"scale", {d}, "scale_initializer", "ones"}});
    Value scale = persistent(l, "scale", {d}, w[0].values, l.trainable, "parameter");
    return normalizedOverLastKerasAxis(in, loc, [&](Value x) {
      return b
          .create<RmsNormOp>(loc, TypeRange{x.getType(), f32({rows})}, x, scale,
                             b.getF32FloatAttr(float(epsilon)))
          .getResult();
    });
  }

  /// UnitNormalization (Keras 3; tf.keras 2.15) over the last Keras axis: x * rsqrt(max(sum(x^2),
  /// 1e-12)), as ops.normalize and tf.math.l2_normalize compute it. Built from graph ops, each
  /// with its gradient: the squares, their row sums (a product with a column of ones), the
  /// clip below at 1e-12, the power -1/2, and each row's factor copied over the features (a
  /// product with a row of ones) times x. No weights. O(rows x features).
  Tensor unitNormalization(const Layer &l, const Tensor &in, Location loc) {
    auto ks = kerasShape(in);
    refuseUnlessLastAxis(l, int64_t(ks.size()));
    const int64_t d = ks.back(), rows = product(ks) / d;
    return normalizedOverLastKerasAxis(in, loc, [&](Value x) {
      Value flat = b.create<ReshapeOp>(loc, f32({rows, d}), x);
      return b.create<ReshapeOp>(loc, x.getType(), l2NormalizedRows(flat, loc)).getResult();
    });
  }

  /// Each row of `flat` [rows, d] times rsqrt(max(sum of its squares, 1e-12)) (ops.normalize,
  /// tf.math.l2_normalize), from graph ops with their gradients: the squares, their row sums (a
  /// product with a column of ones), the clip below at 1e-12, the power -1/2, and each row's
  /// factor copied over the features (a product with a row of ones) times the row.
  Value l2NormalizedRows(Value flat, Location loc) {
    auto shape = shapeOf(flat);
    const int64_t rows = shape[0], d = shape[1];
    auto activation = [&](Value x, ActivationKind kind, float alpha) -> Value {
      return b.create<ActivationOp>(loc, x.getType(), ActivationKindAttr::get(&ctx, kind), x,
                                    b.getF32FloatAttr(alpha));
    };
    Value squares = activation(flat, ActivationKind::pow, 2.0f);
    Value onesColumn = b.create<FillOp>(loc, f32({d, 1}), b.getF32FloatAttr(1.0f));
    Value sums = b.create<DenseOp>(loc, f32({rows, 1}), squares, onesColumn, Value(), UnitAttr());
    Value floored = b.create<ClipOp>(loc, sums.getType(), sums, b.getF32FloatAttr(1e-12f),
                                     b.getF32FloatAttr(std::numeric_limits<float>::infinity()));
    Value factors = activation(floored, ActivationKind::pow, -0.5f);
    Value onesRow = b.create<FillOp>(loc, f32({1, d}), b.getF32FloatAttr(1.0f));
    Value copies = b.create<DenseOp>(loc, f32({rows, d}), factors, onesRow, Value(), UnitAttr());
    return b.create<MulOp>(loc, flat.getType(), flat, copies);
  }

  /// The attention layers' probabilities of their [batch, queries, keys] scores: softmax over
  /// the keys (causal when the layer is called with use_causal_mask: query i sees keys 0..i,
  /// Keras's mask whatever the two lengths), then `rate` dropout (graphc's counter-based mask).
  Value attentionProbabilities(const Layer &l, Value scores, double rate, Location loc) {
    const bool causal = causalAttention.count(l.scope + l.name) != 0;
    Value probs = b.create<SoftmaxOp>(loc, scores.getType(), scores, b.getI64IntegerAttr(2),
                                      causal ? b.getUnitAttr() : UnitAttr());
    if (rate > 0)
      probs = b.create<DropoutOp>(loc, probs.getType(), probs, stepInput(),
                                  b.getF32FloatAttr(float(rate)), b.getI64IntegerAttr(dropoutOps++),
                                  b.getI64IntegerAttr(0));
    return probs;
  }

  /// A trainable scalar times x, as a dense by a [1, 1] weight on x as one column (so that
  /// the scalar trains, its gradient the sum over x of x times x's gradient).
  Value timesScalar(Value x, Value scalar, Location loc) {
    auto shape = shapeOf(x);
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    const bool column = shape.size() == 2 && shape[1] == 1;
    Value rows = column ? x : b.create<ReshapeOp>(loc, f32({count, 1}), x).getResult();
    Value scaled = b.create<DenseOp>(loc, f32({count, 1}), rows, scalar, Value(), UnitAttr());
    return column ? scaled : b.create<ReshapeOp>(loc, f32(shape), scaled).getResult();
  }

  /// Bahdanau's additive scores of a query [N, T, D] and a key [N, S, D]:
  /// scores[n, t, s] = sum_d weight[d] * tanh(inner * (query[n, t, d] + key[n, s, d])), times
  /// `outer`. Every (t, s) pair's sum is materialised as [N*T*S, D]: the query's rows are
  /// repeated S times and the key's T times, each as a product with a column of ones
  /// (graph.batch_matmul, whose backward sums the copies' gradients), and the weighted sum over
  /// d is a dense by `weight` [D, 1]. `inner` and `outer` are [1, 1] trainable scalars or null.
  /// O(N T S D) time and memory, as in Keras, which broadcasts the same sum.
  Value additiveScores(Value q, Value k, Value inner, Value weight, Value outer, Location loc) {
    auto qs = shapeOf(q), ks = shapeOf(k);
    const int64_t N = qs[0], T = qs[1], S = ks[1], D = qs[2];
    Value onesS = b.create<FillOp>(loc, f32({N * T, S, 1}), b.getF32FloatAttr(1.0f));
    Value qRows = b.create<ReshapeOp>(loc, f32({N * T, 1, D}), q);
    Value qCopies =
        b.create<BatchMatmulOp>(loc, f32({N * T, S, D}), onesS, qRows, UnitAttr(), UnitAttr());
    Value onesT = b.create<FillOp>(loc, f32({N, T, 1}), b.getF32FloatAttr(1.0f));
    Value kRow = b.create<ReshapeOp>(loc, f32({N, 1, S * D}), k);
    Value kCopies =
        b.create<BatchMatmulOp>(loc, f32({N, T, S * D}), onesT, kRow, UnitAttr(), UnitAttr());
    Type pairs = f32({N * T * S, D});
    Value sum = b.create<AddOp>(loc, pairs, b.create<ReshapeOp>(loc, pairs, qCopies),
                                b.create<ReshapeOp>(loc, pairs, kCopies));
    if (inner)
      sum = timesScalar(sum, inner, loc);
    Value th = b.create<TanhOp>(loc, pairs, sum);
    Value scores = b.create<DenseOp>(loc, f32({N * T * S, 1}), th, weight, Value(), UnitAttr());
    if (outer)
      scores = timesScalar(scores, outer, loc);
    return b.create<ReshapeOp>(loc, f32({N, T, S}), scores);
  }

  /// Keras's attention layers called on [query, value] or [query, value, key] sequences:
  /// - Attention with score_mode dot (Luong): scores = query key^T [N, T, S], times the
  ///   trainable scalar `scale` with `use_scale`;
  /// - Attention with score_mode concat: concat_score_weight * sum_d tanh(scale * (q + k))
  ///   (additiveScores; `scale` a scalar, present with use_scale);
  /// - AdditiveAttention (Bahdanau): sum_d scale[d] * tanh(q + k), `scale` a trainable [D]
  ///   with use_scale, else ones;
  /// then softmax over the keys (causal with use_causal_mask: query i sees keys 0..i),
  /// `dropout` of the probabilities (graphc's counter-based mask), times the value.
  Tensor dotProductAttention(const Layer &l, const std::vector<Tensor> &ins, Location loc) {
    if (ins.size() != 2 && ins.size() != 3)
      failLayer(l, "takes [query, value] or [query, value, key], got " +
                       std::to_string(ins.size()) + " inputs");
    std::vector<Tensor> seqs;
    for (const Tensor &t : ins) {
      noPadding(l, t);
      noFlat(l, t);
      seqs.push_back(asSteps(t, loc));
      if (seqs.back().image || shapeOf(seqs.back().v).size() != 3)
        failLayer(l,
                  "takes (batch, steps, features) inputs, got shape " + shapeText(kerasShape(t)));
    }
    Value q = seqs[0].v, v = seqs[1].v, k = seqs.size() == 3 ? seqs[2].v : seqs[1].v;
    auto qs = shapeOf(q), vs = shapeOf(v), ks = shapeOf(k);
    if (qs[0] != vs[0] || ks[0] != qs[0] || qs[2] != ks[2] || ks[1] != vs[1])
      failLayer(l, "needs a query (batch, T, D), a key (batch, S, D) and a value (batch, S, "
                   "Dv), got " +
                       shapeText(qs) + ", " + shapeText(ks) + " and " + shapeText(vs));
    const bool additive = l.cls == "AdditiveAttention";
    const std::string mode = additive ? "concat" : strAttr(l, "score_mode", "dot");
    if (mode != "dot" && mode != "concat")
      refuseAttr(l, "score_mode", "= " + mode + " is not supported (dot, concat)");
    double rate = numAttr(l, "dropout", 0.0);
    if (!(rate >= 0 && rate < 1))
      refuseAttr(l, "dropout", "must be in [0, 1)");
    const int64_t N = qs[0], T = qs[1], S = ks[1], D = qs[2], Dv = vs[2];
    const bool useScale = boolAttr(l, "use_scale", additive);
    Value scores;
    if (additive) {
      Value weight;
      if (useScale) {
        // Keras's glorot_uniform on a [D] vector: fan in = fan out = D.
        auto w = layerWeights(l, {{"scale", {D}, "", "glorot_uniform", double(D), double(D)}});
        weight = persistent(l, "scale", {D, 1}, w[0].values, l.trainable, "parameter");
      } else {
        weight = b.create<FillOp>(loc, f32({D, 1}), b.getF32FloatAttr(1.0f));
      }
      scores = additiveScores(q, k, Value(), weight, Value(), loc);
    } else if (mode == "concat") {
      std::vector<VarSpec> vars;
      if (useScale)
        vars.push_back({"scale", {}, "", "ones"});
      vars.push_back({"concat_score_weight", {}, "", "ones"});
      auto w = layerWeights(l, vars);
      Value inner;
      if (useScale)
        inner = persistent(l, "scale", {1, 1}, w[0].values, l.trainable, "parameter");
      Value outer =
          persistent(l, "concat_score_weight", {1, 1}, w.back().values, l.trainable, "parameter");
      Value ones = b.create<FillOp>(loc, f32({D, 1}), b.getF32FloatAttr(1.0f));
      scores = additiveScores(q, k, inner, ones, outer, loc);
    } else {
      scores = b.create<BatchMatmulOp>(loc, f32({N, T, S}), q, k, UnitAttr(), b.getUnitAttr());
      if (useScale) {
        auto w = layerWeights(l, {{"scale", {}, "", "ones"}});
        Value scale = persistent(l, "scale", {1, 1}, w[0].values, l.trainable, "parameter");
        scores = timesScalar(scores, scale, loc);
      }
    }
    // Keras's masks (an Embedding's mask_zero or a Masking layer): a padding value step's
    // score loses 1e9 for every query ([N, 1, S] copied over the queries by a product with
    // ones), a padding query's output is zeroed, and the output carries the query's mask.
    if (Value valueMask = ins[1].mask) {
      Value adder = b.create<ScaleOp>(loc, valueMask.getType(), valueMask, b.getF32FloatAttr(1e9f),
                                      b.getF32FloatAttr(-1e9f));
      Value ones = b.create<FillOp>(loc, f32({N, T, 1}), b.getF32FloatAttr(1.0f));
      Value row = b.create<ReshapeOp>(loc, f32({N, 1, S}), adder);
      Value perQuery =
          b.create<BatchMatmulOp>(loc, f32({N, T, S}), ones, row, UnitAttr(), UnitAttr());
      scores = b.create<AddOp>(loc, scores.getType(), scores, perQuery);
    }
    Value probs = attentionProbabilities(l, scores, rate, loc);
    Tensor out;
    out.v = b.create<BatchMatmulOp>(loc, f32({N, T, Dv}), probs, v, UnitAttr(), UnitAttr());
    if (Value queryMask = ins[0].mask) {
      Value column = b.create<ReshapeOp>(loc, f32({N, T, 1}), queryMask);
      Value ones = b.create<FillOp>(loc, f32({N, 1, Dv}), b.getF32FloatAttr(1.0f));
      Value perFeature =
          b.create<BatchMatmulOp>(loc, f32({N, T, Dv}), column, ones, UnitAttr(), UnitAttr());
      out.v = b.create<MulOp>(loc, out.v.getType(), out.v, perFeature);
      out.mask = queryMask;
    }
    return out;
  }

  /// RepeatVector(n): (batch, features) to (batch, n, features), each row copied n times as
  /// the product of a column of n ones and the row (graph.batch_matmul; its backward sums the
  /// copies' gradients).
  Tensor repeatVector(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    noFlat(l, in);
    auto xs = shapeOf(in.v);
    if (in.image || xs.size() != 2)
      failLayer(l, "expects a (batch, features) input, got shape " + shapeText(kerasShape(in)));
    const int64_t n = intAttr(l, "n", -1);
    if (n < 1 || n > 65536)
      refuseAttr(l, "n", "= " + show(l.config->get("n")) + " must be a count from 1 to 65536");
    Value ones = b.create<FillOp>(loc, f32({xs[0], n, 1}), b.getF32FloatAttr(1.0f));
    Value row = b.create<ReshapeOp>(loc, f32({xs[0], 1, xs[1]}), in.v);
    Tensor out;
    out.v = b.create<BatchMatmulOp>(loc, f32({xs[0], n, xs[1]}), ones, row, UnitAttr(), UnitAttr());
    out.nonNegative = in.nonNegative;
    return out;
  }

  /// Dot(axes, normalize) of two (batch, features) or two (batch, steps, features) tensors
  /// (Keras's batch_dot): one graph.batch_matmul contracting axis axes[0] of the first with
  /// axis axes[1] of the second (vectors: [N, 1, F] by [N, 1, F] transposed, giving (batch, 1));
  /// with `normalize`, each input is first L2-normalised along its contracted axis (cosine
  /// similarity), supported where that axis is the features.
  Tensor dot(const Layer &l, const std::vector<Tensor> &ins, Location loc) {
    if (ins.size() != 2)
      failLayer(l, "needs exactly two inputs, got " + std::to_string(ins.size()));
    Tensor a = asSteps(ins[0], loc), c = asSteps(ins[1], loc);
    for (const Tensor &t : {a, c}) {
      noPadding(l, t);
      noFlat(l, t);
      if (t.image || (shapeOf(t.v).size() != 2 && shapeOf(t.v).size() != 3))
        failLayer(l, "takes (batch, features) or (batch, steps, features) inputs, got shape " +
                         shapeText(kerasShape(t)));
    }
    auto as = shapeOf(a.v), cs = shapeOf(c.v);
    const int64_t rank = int64_t(as.size());
    if (int64_t(cs.size()) != rank || as[0] != cs[0])
      failLayer(l, "takes inputs of one rank and batch, got shapes " + shapeText(kerasShape(a)) +
                       " and " + shapeText(kerasShape(c)));
    std::array<int64_t, 2> axes{-1, -1};
    if (const json::Value *v = l.config->get("axes"); v && !v->getAsNull()) {
      if (auto one = integer(v)) {
        axes = {*one, *one};
      } else if (const json::Array *pair = v->getAsArray();
                 pair && pair->size() == 2 && integer(&(*pair)[0]) && integer(&(*pair)[1])) {
        axes = {*integer(&(*pair)[0]), *integer(&(*pair)[1])};
      } else {
        refuseAttr(l, "axes", "= " + show(v) + " must be an axis or a pair of axes");
      }
    }
    for (int64_t &axis : axes) {
      if (axis < 0)
        axis += rank;
      if (axis < 1 || axis >= rank)
        refuseAttr(l, "axes",
                   "= " + show(l.config->get("axes")) + " must name non-batch axes of the rank-" +
                       std::to_string(rank) + " inputs");
    }
    if (as[size_t(axes[0])] != cs[size_t(axes[1])])
      failLayer(l, "contracts axis " + std::to_string(axes[0]) + " of " + shapeText(kerasShape(a)) +
                       " with axis " + std::to_string(axes[1]) + " of " + shapeText(kerasShape(c)) +
                       ", of different sizes");
    Value lhs = a.v, rhs = c.v;
    if (boolAttr(l, "normalize", false)) {
      if (axes[0] != rank - 1 || axes[1] != rank - 1)
        refuseAttr(l, "normalize",
                   "= true is supported only when both contracted axes are "
                   "the features (the last)");
      auto rows = [&](Value v, const std::vector<int64_t> &shape) -> Value {
        const int64_t d = shape.back(), count = product(shape) / d;
        Value flat = b.create<ReshapeOp>(loc, f32({count, d}), v);
        return b.create<ReshapeOp>(loc, v.getType(), l2NormalizedRows(flat, loc));
      };
      lhs = rows(lhs, as);
      rhs = rows(rhs, cs);
    }
    const int64_t n = as[0];
    if (rank == 2) {
      lhs = b.create<ReshapeOp>(loc, f32({n, 1, as[1]}), lhs);
      rhs = b.create<ReshapeOp>(loc, f32({n, 1, cs[1]}), rhs);
      Value product =
          b.create<BatchMatmulOp>(loc, f32({n, 1, 1}), lhs, rhs, UnitAttr(), b.getUnitAttr());
      Tensor out;
      out.v = b.create<ReshapeOp>(loc, f32({n, 1}), product);
      return out;
    }
    // [N, T, F]: contracting F (axis 2) uses it as is, contracting T (axis 1) transposed.
    const bool transposeLhs = axes[0] == 1, transposeRhs = axes[1] == 2;
    const int64_t rowsOut = transposeLhs ? as[2] : as[1], colsOut = transposeRhs ? cs[1] : cs[2];
    Tensor out;
    out.v = b.create<BatchMatmulOp>(loc, f32({n, rowsOut, colsOut}), lhs, rhs,
                                    transposeLhs ? b.getUnitAttr() : UnitAttr(),
                                    transposeRhs ? b.getUnitAttr() : UnitAttr());
    return out;
  }

  /// LayerNormalization over the last Keras axis. graph.layer_norm normalizes the last axis of
  /// its operand, so an image or 1-D feature map (channels first in graphc) is transposed to
  /// channels last and back around it.
  Tensor layerNormalization(const Layer &l, const Tensor &in, Location loc) {
    auto ks = kerasShape(in);
    refuseUnlessLastAxis(l, int64_t(ks.size()));
    if (boolAttr(l, "rms_scaling", false))
      refuseAttr(l, "rms_scaling", "= true is not supported");
    double epsilon = numAttr(l, "epsilon", 1e-3);
    if (!(epsilon > 0))
      refuseAttr(l, "epsilon", "must be positive");
    bool center = boolAttr(l, "center", true), scale = boolAttr(l, "scale", true);
    int64_t d = ks.back(), rows = product(ks) / d;
    const std::vector<KerasArray> w = gammaBetaWeights(l, d, scale, center);
    size_t i = 0;
    // (Plain values, not structured bindings: the lambda below captures them.)
    Value gamma, beta;
    std::tie(gamma, beta) = gammaBeta(l, d, scale, center, w, i);
    return normalizedOverLastKerasAxis(in, loc, [&](Value x) {
      return b
          .create<LayerNormOp>(loc, TypeRange{x.getType(), f32({rows}), f32({rows})}, x, gamma,
                               beta, b.getF32FloatAttr(float(epsilon)))
          .getResult();
    });
  }

  /// One axis of a Conv2DTranspose as TensorFlow computes it: the adjoint of the SAME or VALID
  /// convolution that maps Keras's output length back to the input length `in`. Returns that
  /// length and the convolution's [before, after] padding, or nothing where TensorFlow cannot
  /// run it (the convolution would not give `in` outputs).
  static std::optional<std::array<int64_t, 3>> transposedAxis(int64_t in, int64_t k, int64_t s,
                                                              int64_t d, bool same,
                                                              std::optional<int64_t> outPad) {
    int64_t eff = (k - 1) * d + 1, len; // Keras's compute_conv_transpose_output_shape
    if (same)
      len = outPad ? (in - 1) * s + eff % 2 + *outPad : in * s;
    else
      len = (in - 1) * s + (outPad ? eff + *outPad : std::max(eff, s));
    if (same) {
      if ((len + s - 1) / s != in)
        return std::nullopt;
      auto [before, after] = samePadding(len, k, s, d);
      return std::array<int64_t, 3>{len, before, after};
    }
    if (len < eff || (len - eff) / s + 1 != in)
      return std::nullopt;
    return std::array<int64_t, 3>{len, 0, 0};
  }

  /// transposedAxis for spatial axis `a` of a transposed-convolution layer reading `in` (an
  /// axis of `length`), its output_padding checked against the stride; refused, naming the
  /// layer, where TensorFlow cannot compute it.
  std::array<int64_t, 3> layerTransposedAxis(const Layer &l, const Tensor &in, int64_t length,
                                             int64_t k, int64_t s, int64_t d,
                                             const std::string &mode,
                                             const std::optional<std::vector<int64_t>> &outPad,
                                             size_t a) {
    if (outPad && (*outPad)[a] >= s)
      refuseAttr(l, "output_padding",
                 "= " + show(l.config->get("output_padding")) +
                     " must be less than the strides (Keras refuses it "
                     "too)");
    auto axis = transposedAxis(length, k, s, d, mode == "same",
                               outPad ? std::optional<int64_t>((*outPad)[a]) : std::nullopt);
    if (!axis)
      failLayer(l, "TensorFlow cannot compute it on an input of shape " +
                       shapeText(kerasShape(in)) +
                       ": its output length would not map back "
                       "to the input under " +
                       mode + " padding");
    return *axis;
  }

  /// Conv2DTranspose as graph.conv2d_backward_data: the transpose of the convolution whose
  /// filter [C, filters, H, W] is the Keras kernel (H, W, filters, C) read as HWIO.
  /// With `oneD`, Conv1DTranspose on the 1-D feature map [N, C, 1, L]: the same with a
  /// height-1 window (its kernel (K, filters, C) read as (1, K, filters, C)).
  Tensor convTranspose(const Layer &l, const Tensor &in, Location loc, bool oneD = false) {
    if (!oneD)
      needImage(l, in);
    auto xs = shapeOf(in.v);
    int64_t c = xs[1];
    int64_t filters = intAttr(l, "filters", 0);
    if (filters < 1 || filters > (int64_t{1} << 24))
      refuseAttr(l, "filters", "must be positive");
    if (int64_t groups = intAttr(l, "groups", 1); groups != 1)
      refuseAttr(l, "groups", "= " + std::to_string(groups) + " is not supported (1)");
    auto kernel = windowAttr(l, "kernel_size", oneD, {});
    auto strides = windowAttr(l, "strides", oneD, {1, 1});
    auto dilations = windowAttr(l, "dilation_rate", oneD, {1, 1});
    noStridedDilation(l, strides, dilations);
    std::string mode = strAttr(l, "padding", "valid");
    if (mode != "valid" && mode != "same")
      refuseAttr(l, "padding", "= " + mode + " is not supported (valid or same)");
    std::optional<std::vector<int64_t>> outPad;
    if (const json::Value *v = l.config->get("output_padding"); v && !v->getAsNull()) {
      outPad = intsAttr(l, "output_padding", oneD ? 1 : 2, {}, /*min=*/0);
      if (oneD)
        outPad->insert(outPad->begin(), 0);
    }
    bool useBias = boolAttr(l, "use_bias", true);
    std::vector<int64_t> outShape = {xs[0], filters, 0, 0}, pad(4, 0);
    for (size_t a = 0; a < 2; ++a) {
      const auto axis = layerTransposedAxis(l, in, xs[2 + a], kernel[a], strides[a], dilations[a],
                                            mode, outPad, a);
      outShape[2 + a] = axis[0];
      pad[a] = axis[1];
      pad[2 + a] = axis[2];
    }
    double receptive = double(kernel[0] * kernel[1]);
    // Keras's fans read (H, W, filters, C) as HWIO too: fan_in = H·W·filters.
    std::vector<int64_t> kernelShape = {kernel[0], kernel[1], filters, c};
    if (oneD)
      kernelShape.erase(kernelShape.begin());
    std::vector<VarSpec> vars = {{"kernel", kernelShape, "kernel_initializer", "glorot_uniform",
                                  receptive * double(filters), receptive * double(c)}};
    if (useBias)
      vars.push_back({"bias", {filters}, "bias_initializer", "zeros"});
    checkSize(l, vars[0].shape);
    auto w = layerWeights(l, vars);
    auto filter = kernelToOihw(w[0].values, kernel[0], kernel[1], filters, c, false);
    Value f = persistent(l, "kernel", {c, filters, kernel[0], kernel[1]}, filter, l.trainable,
                         "parameter");
    Value bias;
    if (useBias)
      bias = persistent(l, "bias", {filters}, w[1].values, l.trainable, "parameter");
    Tensor out;
    out.image = true;
    out.seq = oneD;
    out.v = b.create<Conv2dBackwardDataOp>(loc, f32(outShape), in.v, f, bias,
                                           b.getDenseI64ArrayAttr(strides),
                                           b.getDenseI64ArrayAttr(pad),
                                           b.getDenseI64ArrayAttr(dilations),
                                           b.getI64IntegerAttr(1));
    return layerActivation(l, out, loc);
  }

  /// SeparableConv2D, as Keras's separable_conv2d: a depthwise conv2d (strides, padding,
  /// dilation; channel c·M + m) then a 1x1 conv2d with the bias; with `oneD` SeparableConv1D
  /// on the 1-D feature map (kernels (K, C, M) and (1, C·M, filters)).
  Tensor separableConv(const Layer &l, const Tensor &in, Location loc, bool oneD = false) {
    if (!oneD)
      needImage(l, in);
    auto xs = shapeOf(in.v);
    int64_t c = xs[1];
    auto kernel = windowAttr(l, "kernel_size", oneD, {});
    auto strides = windowAttr(l, "strides", oneD, {1, 1});
    auto dilations = windowAttr(l, "dilation_rate", oneD, {1, 1});
    noStridedDilation(l, strides, dilations);
    std::string mode = strAttr(l, "padding", "valid");
    int64_t mult = depthMultiplier(l), filters = intAttr(l, "filters", 0);
    if (filters < 1 || filters > (int64_t{1} << 24))
      refuseAttr(l, "filters", "must be positive");
    if (int64_t groups = intAttr(l, "groups", 1); groups != 1)
      refuseAttr(l, "groups", "= " + std::to_string(groups) + " is not supported (1)");
    bool useBias = boolAttr(l, "use_bias", true);
    double receptive = double(kernel[0] * kernel[1]);
    std::vector<VarSpec> vars = {
        {"depthwise_kernel", {kernel[0], kernel[1], c, mult}, "depthwise_initializer",
         "glorot_uniform", receptive * double(c), receptive * double(mult)},
        {"pointwise_kernel", {1, 1, c * mult, filters}, "pointwise_initializer", "glorot_uniform",
         double(c * mult), double(filters)}};
    if (oneD) // SeparableConv1D's (K, C, M) and (1, C·M, filters)
      for (VarSpec &v : vars)
        if (v.name != "bias")
          v.shape.erase(v.shape.begin());
    if (useBias)
      vars.push_back({"bias", {filters}, "bias_initializer", "zeros"});
    checkSize(l, vars[0].shape);
    checkSize(l, vars[1].shape);
    auto pad = windowPadding(l, in, mode, kernel, strides, dilations);
    int64_t oh = convOutputSize(xs[2], kernel[0], strides[0], pad[0], pad[2], dilations[0]);
    int64_t ow = convOutputSize(xs[3], kernel[1], strides[1], pad[1], pad[3], dilations[1]);
    if (oh <= 0 || ow <= 0)
      failLayer(l, "the kernel does not fit the input of shape " + shapeText(kerasShape(in)));
    auto w = layerWeights(l, vars);
    Value depthwise = persistent(l, "depthwise_kernel", {c * mult, 1, kernel[0], kernel[1]},
                                 kernelToOihw(w[0].values, kernel[0], kernel[1], c, mult, true),
                                 l.trainable, "parameter");
    Value pointwise = persistent(l, "pointwise_kernel", {filters, c * mult, 1, 1},
                                 kernelToOihw(w[1].values, 1, 1, c * mult, filters, false),
                                 l.trainable, "parameter");
    Value bias;
    if (useBias)
      bias = persistent(l, "bias", {filters}, w[2].values, l.trainable, "parameter");
    Value mid = b.create<Conv2dOp>(loc, f32({xs[0], c * mult, oh, ow}), in.v, depthwise, Value(),
                                   b.getDenseI64ArrayAttr(strides), b.getDenseI64ArrayAttr(pad),
                                   b.getDenseI64ArrayAttr(dilations), b.getI64IntegerAttr(c));
    Tensor out;
    out.image = true;
    out.seq = oneD;
    out.v = b.create<Conv2dOp>(NameLoc::get(b.getStringAttr(l.name + ".pointwise")),
                               f32({xs[0], filters, oh, ow}), mid, pointwise, bias,
                               b.getDenseI64ArrayAttr({1, 1}),
                               b.getDenseI64ArrayAttr({0, 0, 0, 0}),
                               b.getDenseI64ArrayAttr({1, 1}), b.getI64IntegerAttr(1));
    return layerActivation(l, out, loc);
  }

  //===--------------------------------------------------------------------===//
  // ZeroPadding1D, Cropping1D/2D, UpSampling1D/2D
  //===--------------------------------------------------------------------===//

  /// ZeroPadding1D: pending padding of the 1-D feature map, folded (as ZeroPadding2D's) into
  /// the next Conv1D or 1-D pool.
  Tensor zeroPadding1D(const Layer &l, const Tensor &in, Location loc) {
    auto e = edgesAttr(l, "padding", 1, 1);
    Tensor out = asSequence(l, in, loc);
    out.pad[1] += e[0][0];
    out.pad[3] += e[0][1];
    return out;
  }

  /// v without `before` leading and `after` trailing entries along `axis` (axis > 0): one
  /// graph.slice of a reshape that puts the axis (times the inner dims) last, so that the
  /// slice is the only reader of its input (slice's gradient needs that) whatever else reads v.
  Value cropAxis(Value v, int64_t axis, int64_t before, int64_t after, Location loc) {
    if (before == 0 && after == 0)
      return v;
    auto s = shapeOf(v);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 1; d < axis; ++d)
      outer *= s[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < s.size(); ++d)
      inner *= s[d];
    int64_t kept = s[size_t(axis)] - before - after;
    Value view = b.create<ReshapeOp>(loc, f32({s[0], outer, s[size_t(axis)] * inner}), v);
    Value slice = b.create<SliceOp>(loc, f32({s[0], outer, kept * inner}), view,
                                    b.getI64IntegerAttr(2), b.getI64IntegerAttr(before * inner));
    s[size_t(axis)] = kept;
    return b.create<ReshapeOp>(loc, f32(s), slice);
  }

  /// Cropping2D (height and width of an image) and Cropping1D (the steps of a (batch, steps,
  /// features) tensor or of a 1-D feature map).
  Tensor cropping(const Layer &l, const Tensor &in, bool oneD, Location loc) {
    if (!oneD)
      needImage(l, in);
    auto xs = shapeOf(in.v);
    bool seqView = in.image && in.seq;
    if (oneD && !seqView && (in.image || xs.size() != 3))
      failLayer(l, "expects a 3-D (batch, steps, features) input, got shape " +
                       shapeText(kerasShape(in)));
    auto e = edgesAttr(l, "cropping", oneD ? 1 : 2, oneD ? 1 : 0);
    // The graphc axes of Keras's cropped axes: H, W of [N, C, H, W]; L of [N, C, 1, L] or of
    // a plain [N, L, F].
    std::vector<int64_t> axes = oneD ? std::vector<int64_t>{seqView ? 3 : 1}
                                     : std::vector<int64_t>{2, 3};
    Tensor out = in;
    for (size_t i = 0; i < axes.size(); ++i) {
      if (e[i][0] + e[i][1] >= xs[size_t(axes[i])])
        refuseAttr(l, "cropping", "= " + show(l.config->get("cropping")) +
                                      " leaves nothing of the input of shape " +
                                      shapeText(kerasShape(in)));
      out.v = cropAxis(out.v, axes[i], e[i][0], e[i][1], loc);
    }
    return out;
  }

  /// The output `height` and `width` of Resizing and CenterCrop, on an image.
  std::pair<int64_t, int64_t> targetSize(const Layer &l, const Tensor &in) {
    needImage(l, in);
    noPadding(l, in);
    const int64_t height = intAttr(l, "height", -1), width = intAttr(l, "width", -1);
    if (height < 1 || width < 1)
      refuseAttr(l, "height", "and width must be positive");
    return {height, width};
  }

  /// Resizing(height, width): nothing at the same size; by whole factors (the same size or
  /// larger) the nearest or bilinear upsampling of UpSampling2D; any other size resizeImage's
  /// frozen interpolation matrices (shrinking too: tf.image.resize without antialiasing, as
  /// Keras's default antialias = false). crop_to_aspect_ratio first crops Keras's centred
  /// window of the target's aspect ratio (aspectWindow). pad_to_aspect_ratio, antialias on a
  /// shrinking axis and other interpolations are refused naming the layer.
  Tensor resizing(const Layer &l, const Tensor &in, Location loc) {
    const auto [height, width] = targetSize(l, in);
    if (boolAttr(l, "pad_to_aspect_ratio", false))
      refuseAttr(l, "pad_to_aspect_ratio", "= true is not supported");
    const std::string mode = strAttr(l, "interpolation", "bilinear");
    if (mode != "bilinear" && mode != "nearest")
      refuseAttr(l, "interpolation", "= " + mode + " is not supported (nearest, bilinear)");
    Tensor x = in;
    if (boolAttr(l, "crop_to_aspect_ratio", false))
      x = aspectWindow(in, height, width, loc);
    auto xs = shapeOf(x.v);
    if (boolAttr(l, "antialias", false) && (height < xs[2] || width < xs[3]))
      refuseAttr(l, "antialias",
                 "= true is not supported when shrinking (graphc resizes as "
                 "tf.image.resize without antialiasing)");
    if (height == xs[2] && width == xs[3])
      return x;
    Tensor out = x;
    if (height % xs[2] != 0 || width % xs[3] != 0) {
      out.v = resizeImage(l, x.v, height, width, mode == "nearest", loc);
      return out;
    }
    const UpsampleInterpolation interpolation =
        mode == "bilinear" ? UpsampleInterpolation::Linear : UpsampleInterpolation::Nearest;
    out.v = buildUpsample(
        b, loc, x.v, upsampleAxis(interpolation, SourceCoordinates::HalfPixel, height / xs[2]),
        upsampleAxis(interpolation, SourceCoordinates::HalfPixel, width / xs[3]),
        [&](RankedTensorType type, ArrayRef<float> taps) {
          return persistent(l, "bilinear_filter", type.getShape(), {taps.begin(), taps.end()},
                            /*trainable=*/false, "parameter");
        });
    return out;
  }

  /// An NCHW image resized to height x width as tf.image.resize does without antialiasing
  /// (half-pixel centres; bilinear, or nearest rounding halves up: floor((o + 0.5) in / out)),
  /// the source step in / out in float32 as TensorFlow and PyTorch compute it: buildResize's
  /// graph.dense per axis by a frozen matrix (<layer>/resize_rows, <layer>/resize_columns).
  Value resizeImage(const Layer &l, Value x, int64_t height, int64_t width, bool nearest,
                    Location loc) {
    auto xs = shapeOf(x);
    auto axis = [&](int64_t in, int64_t out) {
      ResizeAxis a;
      a.in = in;
      a.out = out;
      a.scale = double(out) / double(in);
      a.inverseScale = float(in) / float(out);
      a.mode = nearest ? ResizeAxis::Mode::Nearest : ResizeAxis::Mode::Linear;
      a.rounding = ResizeAxis::Rounding::RoundPreferCeil;
      return a;
    };
    return buildResize(b, loc, x, axis(xs[2], height), axis(xs[3], width),
                       [&](int index, ArrayRef<int64_t> shape, ArrayRef<float> values) {
                         return persistent(l, index == 0 ? "resize_rows" : "resize_columns", shape,
                                           {values.begin(), values.end()},
                                           /*trainable=*/false, "parameter");
                       });
  }

  /// Keras's centred window of the target's aspect ratio (smart_resize's, and Resizing's
  /// crop_to_aspect_ratio): int(W target_h / target_w) rows at most H (at least 1) and
  /// int(H target_w / target_h) columns at most W, from row (H - rows) / 2 and column
  /// (W - columns) / 2 rounded down.
  struct Window {
    int64_t top, left, rows, cols;
  };
  static Window aspectBox(int64_t H, int64_t W, int64_t height, int64_t width) {
    const int64_t rows = std::max<int64_t>(std::min(H, int64_t(double(W * height) / width)), 1);
    const int64_t cols = std::max<int64_t>(std::min(W, int64_t(double(H * width) / height)), 1);
    return {(H - rows) / 2, (W - cols) / 2, rows, cols};
  }
  Tensor aspectWindow(const Tensor &in, int64_t height, int64_t width, Location loc) {
    auto xs = shapeOf(in.v);
    const int64_t H = xs[2], W = xs[3];
    const auto [top, left, rows, cols] = aspectBox(H, W, height, width);
    Tensor out = in;
    out.v = cropAxis(in.v, 2, top, H - rows - top, loc);
    out.v = cropAxis(out.v, 3, left, W - cols - left, loc);
    return out;
  }

  /// Keras's smart_resize (CenterCrop and tf.keras 2's RandomCrop of an image smaller than
  /// the target): aspectWindow, then a bilinear resizeImage to the target.
  Tensor smartResize(const Layer &l, const Tensor &in, int64_t height, int64_t width,
                     Location loc) {
    Tensor out = aspectWindow(in, height, width, loc);
    auto xs = shapeOf(out.v);
    if (xs[2] != height || xs[3] != width)
      out.v = resizeImage(l, out.v, height, width, /*nearest=*/false, loc);
    return out;
  }

  /// CenterCrop(height, width): the centred window, (H - height) / 2 rows from the top and
  /// (W - width) / 2 columns from the left (rounded down), as Keras crops an image at least as
  /// large (Cropping2D's slices); a smaller one Keras smart-resizes (smartResize).
  Tensor centerCrop(const Layer &l, const Tensor &in, Location loc) {
    auto xs = shapeOf(in.v);
    const auto [height, width] = targetSize(l, in);
    if (height > xs[2] || width > xs[3])
      return smartResize(l, in, height, width, loc);
    const int64_t top = (xs[2] - height) / 2, left = (xs[3] - width) / 2;
    Tensor out = in;
    out.v = cropAxis(in.v, 2, top, xs[2] - height - top, loc);
    out.v = cropAxis(out.v, 3, left, xs[3] - width - left, loc);
    return out;
  }

  /// RandomCrop(height, width) as it trains: every image of the batch cropped at one random
  /// place where the image is larger both ways (Keras 3), or not smaller either way (tf.keras
  /// 2): a graph.random_affine crop_offset (whole offsets below H - height + 1 and W - width +
  /// 1, drawn once per batch with graphc's counter-based draws) and its top-left window (two
  /// graph.slice). Keras 3 crops an image exactly as high or as wide as the target at the
  /// centre of its largest window of the target's aspect ratio, which is CenterCrop's window.
  /// A smaller image Keras resizes without a draw: tf.keras 2 smart-resizes it, Keras 3 slices
  /// from its aspect window's corner and resizes that (resizeImage).
  Tensor randomCrop(const Layer &l, const Tensor &in, Location loc) {
    auto xs = shapeOf(in.v);
    const auto [height, width] = targetSize(l, in);
    const int64_t H = xs[2], W = xs[3];
    if ((height > H || width > W) && !keras3)
      return smartResize(l, in, height, width, loc);
    if (height > H || width > W) {
      // Keras 3 slices target-sized rows and columns from its centred aspect window's corner
      // (fewer where the image ends), then resizes the slice to the target.
      const Window box = aspectBox(H, W, height, width);
      const int64_t top = box.top, left = box.left;
      Tensor out = in;
      out.v = cropAxis(in.v, 2, top, std::max<int64_t>(H - top - height, 0), loc);
      out.v = cropAxis(out.v, 3, left, std::max<int64_t>(W - left - width, 0), loc);
      auto os = shapeOf(out.v);
      if (os[2] != height || os[3] != width)
        out.v = resizeImage(l, out.v, height, width, /*nearest=*/false, loc);
      return out;
    }
    if (keras3 && (H == height || W == width))
      return centerCrop(l, in, loc);
    if (H == height && W == width)
      return in;
    augmentsInputOnly(l, in);
    auto f = [&](double v) { return b.getF32FloatAttr(float(v)); };
    Value shifted = b.create<RandomAffineOp>(
        loc, in.v.getType(), in.v, stepInput(), b.getStringAttr("crop_offset"), f(0),
        f(double(H - height + 1)), f(0), f(double(W - width + 1)), b.getStringAttr("constant"),
        f(0), b.getStringAttr("nearest"), b.getI64IntegerAttr(dropoutOps++),
        b.getI64IntegerAttr(0));
    Tensor out = in;
    out.v = cropAxis(shifted, 2, 0, H - height, loc);
    out.v = cropAxis(out.v, 3, 0, W - width, loc);
    return out;
  }

  /// UpSampling2D and UpSampling1D: every pixel (step) repeated size times along each axis
  /// (nearest), or UpSampling2D's bilinear resize with half-pixel centres (tf.image.resize,
  /// Keras 3's ops.image.resize), each a depthwise transposed convolution (buildUpsample): of
  /// a constant all-ones [C, 1, sh, sw] filter (graph.fill) for nearest, of the edges
  /// replicated and a frozen triangle filter for bilinear. Its input gradient is the strided
  /// depthwise convolution that sums what each input pixel contributed.
  Tensor upSampling(const Layer &l, const Tensor &in, bool oneD, Location loc) {
    std::vector<int64_t> size;
    Tensor x = in;
    UpsampleInterpolation interpolation = UpsampleInterpolation::Nearest;
    if (oneD) {
      x = asSequence(l, in, loc);
      size = {1, intAttr(l, "size", 2)};
    } else {
      needImage(l, in);
      size = intsAttr(l, "size", 2, {2, 2});
      std::string mode = strAttr(l, "interpolation", "nearest");
      if (mode == "bilinear")
        interpolation = UpsampleInterpolation::Linear;
      else if (mode != "nearest")
        refuseAttr(l, "interpolation",
                   "= " + mode + " is not supported (nearest and bilinear are)");
    }
    if (size[0] < 1 || size[1] < 1 || size[0] > 65536 || size[1] > 65536)
      refuseAttr(l, "size", "= " + show(l.config->get("size")) + " is not a positive size");
    Tensor out = x; // (non-negative stays so: repeats and convex combinations of the inputs)
    out.v = buildUpsample(
        b, loc, x.v, upsampleAxis(interpolation, SourceCoordinates::HalfPixel, size[0]),
        upsampleAxis(interpolation, SourceCoordinates::HalfPixel, size[1]),
        [&](RankedTensorType type, ArrayRef<float> taps) {
          return persistent(l, "bilinear_filter", type.getShape(), {taps.begin(), taps.end()},
                            /*trainable=*/false, "parameter");
        });
    return out;
  }

  /// GroupNormalization (Keras 3) over the channels (axis -1) of an image, a 1-D feature map
  /// or a (batch, steps, features) sequence (as a 1-D feature map), or of (batch, features)
  /// vectors: each sample's `groups` blocks of C / groups channels normalised by their own
  /// mean and biased variance (buildGroupNorm), then gamma and beta per channel
  /// (buildPerChannelAffine). graphc holds images channels first, so a group's channels and
  /// positions are one contiguous row of the layer norm.
  Tensor groupNormalization(const Layer &l, const Tensor &in, Location loc) {
    noPadding(l, in);
    noFlat(l, in);
    Tensor x = in;
    if (!in.image && shapeOf(in.v).size() == 3)
      x = asSequence(l, in, loc);
    const auto ks = kerasShape(x);
    if (!x.image && ks.size() != 2)
      failLayer(l, "normalizes images, 1-D feature maps, sequences and vectors; got shape " +
                       shapeText(ks));
    refuseUnlessLastAxis(l, int64_t(ks.size()));
    const int64_t channels = ks.back(), groups = intAttr(l, "groups", 32);
    if (groups < 1 || channels % groups != 0)
      refuseAttr(l, "groups",
                 "= " + std::to_string(groups) + " does not divide the " +
                     std::to_string(channels) + " channels");
    const double epsilon = numAttr(l, "epsilon", 1e-3);
    if (!(epsilon > 0))
      refuseAttr(l, "epsilon", "must be positive");
    const bool scale = boolAttr(l, "scale", true), center = boolAttr(l, "center", true);
    const std::vector<KerasArray> w = gammaBetaWeights(l, channels, scale, center);
    size_t i = 0;
    Value gamma = scale
                      ? persistent(l, "gamma", {channels}, w[i++].values, l.trainable, "parameter")
                      : Value();
    Value beta = center ? persistent(l, "beta", {channels}, w[i++].values, l.trainable, "parameter")
                        : Value();
    auto xs = shapeOf(x.v);
    Value image = x.image ? x.v : b.create<ReshapeOp>(loc, f32({xs[0], xs[1], 1, 1}), x.v);
    Value normalized = buildGroupNorm(b, loc, image, groups, float(epsilon));
    if (gamma || beta)
      normalized = buildPerChannelAffine(b, loc, normalized, gamma, beta);
    Tensor out = x;
    out.nonNegative = false;
    out.v = x.image ? normalized : b.create<ReshapeOp>(loc, x.v.getType(), normalized).getResult();
    return out;
  }

  /// MultiHeadAttention over (batch, steps, features) inputs, Keras's own computation in graph
  /// ops: the query, key and value EinsumDense projections (kernels [features, heads, head
  /// size], Keras's layout, each a dense on its input's rows as [features, heads * head size]),
  /// the query scaled by 1 / sqrt(key_dim), per head Q K^T (batch_matmul over batch * heads),
  /// softmax over the keys, dropout on the probabilities, the product with V, and the output
  /// EinsumDense (kernel [heads, value_dim, query features]). The inputs are query, value and
  /// key (the value when absent): self-attention when they are one tensor, cross-attention
  /// otherwise (a key/value sequence of its own length). graphc-fuse-attention may then fuse
  /// the scores, softmax, dropout and product (unless an attention_mask, a fourth input, adds
  /// Keras's -1e9 bias to the scores). Other masks, attention_axes and output_shape are
  /// refused by name.
  /// MultiHeadAttention whose inputs carry masks (an Embedding's mask_zero or a Masking layer):
  /// Keras's automatic attention mask, query t may attend to key s when both are real
  /// (query_mask[t] and value_mask[s] and key_mask[s]; a [B, T, S] product of the [B, T, 1]
  /// and [B, 1, S] masks, ones where an input has none), given to multiHeadAttention as its
  /// attention_mask; the output carries the query's mask on, as Keras does. Together with an
  /// explicit attention_mask it is refused naming the layer.
  Tensor maskedMultiHeadAttention(const Layer &l, const std::vector<Tensor> &ins, Location loc) {
    const bool explicitMask = maskedAttention.count(l.scope + l.name) != 0;
    const size_t sequences = explicitMask ? ins.size() - 1 : ins.size();
    bool anyMask = false;
    for (size_t i = 0; i < sequences && i < ins.size(); ++i)
      anyMask = anyMask || ins[i].mask;
    if (!anyMask)
      return multiHeadAttention(l, ins, loc);
    if (explicitMask)
      failLayer(l, "is given an attention_mask and inputs that carry masks (an Embedding's "
                   "mask_zero or a Masking layer), which Keras combines; graphc does not");
    if (ins.size() < 2 || ins.size() > 3)
      failLayer(l, "expects query, value and optionally key inputs, got " +
                       std::to_string(ins.size()));
    const Tensor &query = ins[0], &value = ins[1];
    const int64_t B = shapeOf(query.v)[0];
    const int64_t T = kerasShape(query)[1], S = kerasShape(value)[1];
    // The keys' mask: value's and key's, multiplied.
    Value keys = value.mask;
    if (ins.size() == 3 && ins[2].mask)
      keys =
          keys ? b.create<MulOp>(loc, keys.getType(), keys, ins[2].mask).getResult() : ins[2].mask;
    // A mask viewed as `shape`, or ones where the input has none.
    auto view = [&](Value mask, ArrayRef<int64_t> shape) -> Value {
      if (!mask)
        return b.create<FillOp>(loc, f32(shape), b.getF32FloatAttr(1.0f));
      return b.create<ReshapeOp>(loc, f32(shape), mask);
    };
    Value queries = view(query.mask, {B, T, 1});
    Value keyRow = view(keys, {B, 1, S});
    std::vector<Tensor> withMask(ins.begin(), ins.end());
    Tensor mask;
    mask.v = b.create<BatchMatmulOp>(loc, f32({B, T, S}), queries, keyRow, UnitAttr(), UnitAttr());
    if (withMask.size() == 2)
      withMask.push_back(withMask[1]); // the key is the value
    withMask.push_back(mask);
    Tensor out = multiHeadAttention(l, withMask, loc, /*autoMask=*/true);
    out.mask = query.mask;
    return out;
  }

  Tensor multiHeadAttention(const Layer &l, const std::vector<Tensor> &ins, Location loc,
                            bool autoMask = false) {
    const bool masked = autoMask || maskedAttention.count(l.scope + l.name) != 0;
    if (masked ? ins.size() != 4 : ins.size() < 2 || ins.size() > 3)
      failLayer(l, "expects query, value and optionally key inputs" +
                       std::string(masked ? " and an attention_mask" : "") + ", got " +
                       std::to_string(ins.size()));
    const Tensor &query = ins[0], &value = ins[1], &key = ins.size() > 2 ? ins[2] : ins[1];
    std::vector<int64_t> shapes[3];
    const Tensor *inputs[3] = {&query, &value, &key};
    for (int i = 0; i < 3; ++i) {
      noPadding(l, *inputs[i]);
      noFlat(l, *inputs[i]);
      shapes[i] = shapeOf(inputs[i]->v);
      if (inputs[i]->image || shapes[i].size() != 3)
        failLayer(l, std::string("expects a (batch, steps, features) ") +
                         (i == 0   ? "query"
                          : i == 1 ? "value"
                                   : "key") +
                         ", got shape " + shapeText(kerasShape(*inputs[i])));
    }
    const auto &qs = shapes[0], &vs = shapes[1], &ks = shapes[2];
    if (vs[1] != ks[1])
      failLayer(l, "has a value of " + std::to_string(vs[1]) + " steps and a key of " +
                       std::to_string(ks[1]) + "; they must be equal");
    if (const json::Value *a = l.config->get("attention_axes"); a && !a->getAsNull()) {
      const json::Array *axes = a->getAsArray();
      if (!axes || axes->size() != 1 || !integer(&(*axes)[0]) ||
          (*integer(&(*axes)[0]) != 1 && *integer(&(*axes)[0]) != -2))
        refuseAttr(l, "attention_axes", "= " + show(a) + " is not supported (the steps axis only)");
    }
    if (const json::Value *o = l.config->get("output_shape"); o && !o->getAsNull()) {
      const json::Array *shape = o->getAsArray();
      const std::optional<int64_t> single =
          shape && shape->size() == 1 ? integer(&(*shape)[0]) : integer(o);
      if (!single || *single != qs[2])
        refuseAttr(l, "output_shape",
                   "= " + show(o) +
                       " is not supported (only the query's "
                       "features)");
    }
    const int64_t B = qs[0], T = qs[1], D = qs[2], S = vs[1];
    // GroupedQueryAttention (Keras 3): num_query_heads query heads share num_key_value_heads
    // key and value heads, each repeated for num_query_heads / num_key_value_heads consecutive
    // query heads (ops.repeat); head_dim for keys and values alike.
    const bool grouped = l.cls == "GroupedQueryAttention";
    const int64_t H = intAttr(l, grouped ? "num_query_heads" : "num_heads", 0),
                  Dk = intAttr(l, grouped ? "head_dim" : "key_dim", 0);
    const int64_t Hkv = grouped ? intAttr(l, "num_key_value_heads", 0) : H;
    int64_t Dv = Dk;
    if (const json::Value *v = l.config->get("value_dim"); !grouped && v && !v->getAsNull())
      Dv = intAttr(l, "value_dim", Dk);
    if (H < 1 || H > 4096)
      refuseAttr(l, grouped ? "num_query_heads" : "num_heads", "must be 1 to 4096");
    if (Hkv < 1 || H % Hkv != 0)
      refuseAttr(l, "num_key_value_heads", "must divide num_query_heads = " + std::to_string(H));
    if (Dk < 1 || Dk > 65536 || Dv < 1 || Dv > 65536)
      refuseAttr(l, grouped ? "head_dim" : "key_dim", "and value_dim must be 1 to 65536");
    const double rate = numAttr(l, "dropout", 0.0);
    if (!(rate >= 0 && rate < 1))
      refuseAttr(l, "dropout", "must be in [0, 1)");
    const bool useBias = boolAttr(l, "use_bias", true);
    // One EinsumDense as a dense on `rows` rows of `in` features. Keras's glorot_uniform fans
    // of its rank-3 kernel: fan_in = shape[1] x shape[0], fan_out = shape[2] x shape[0].
    auto projection = [&](const std::string &sub, const std::string &k3sub, Value rows,
                          int64_t count, int64_t in, int64_t out,
                          const std::vector<int64_t> &kernelShape,
                          const std::vector<int64_t> &biasShape) {
      const double lead = double(kernelShape[0]);
      std::vector<VarSpec> vars = {{sub + "/kernel", kernelShape, "kernel_initializer",
                                    "glorot_uniform", double(kernelShape[1]) * lead,
                                    double(kernelShape[2]) * lead}};
      if (useBias)
        vars.push_back({sub + "/bias", biasShape, "bias_initializer", "zeros"});
      checkSize(l, {in, out});
      auto w = layerWeights(l, vars, k3sub);
      Value kernel =
          persistent(l, sub + "/kernel", {in, out}, w[0].values, l.trainable, "parameter");
      Value bias = useBias
                       ? persistent(l, sub + "/bias", {out}, w[1].values, l.trainable, "parameter")
                       : Value();
      return b.create<DenseOp>(loc, f32({count, out}), rows, kernel, bias, UnitAttr()).getResult();
    };
    auto rowsOf = [&](const Tensor &t, const std::vector<int64_t> &shape) {
      return b.create<ReshapeOp>(loc, f32({shape[0] * shape[1], shape[2]}), t.v).getResult();
    };
    // [B*L, n*E] -> [B*n, L, E]: (batch, step, head, e) to (batch, head, step, e).
    auto heads = [&](Value v, int64_t L, int64_t E, int64_t n) {
      Value split = b.create<ReshapeOp>(loc, f32({B, L, n, E}), v);
      Value moved = transposed(split, {0, 2, 1, 3}, loc);
      return b.create<ReshapeOp>(loc, f32({B * n, L, E}), moved).getResult();
    };
    // The key/value heads [B*Hkv, L, E], each repeated for H / Hkv consecutive query heads: a
    // product with a column of ones (its backward sums the copies' gradients).
    auto sharedHeads = [&](Value v, int64_t L, int64_t E) -> Value {
      Value perHead = heads(v, L, E, Hkv);
      if (Hkv == H)
        return perHead;
      const int64_t copies = H / Hkv;
      Value ones = b.create<FillOp>(loc, f32({B * Hkv, copies, 1}), b.getF32FloatAttr(1.0f));
      Value row = b.create<ReshapeOp>(loc, f32({B * Hkv, 1, L * E}), perHead);
      Value repeated = b.create<BatchMatmulOp>(loc, f32({B * Hkv, copies, L * E}), ones, row,
                                               UnitAttr(), UnitAttr());
      return b.create<ReshapeOp>(loc, f32({B * H, L, E}), repeated);
    };
    Value queryRows = rowsOf(query, qs);
    Value valueRows = value.v == query.v ? queryRows : rowsOf(value, vs);
    Value keyRows = key.v == query.v ? queryRows : key.v == value.v ? valueRows : rowsOf(key, ks);
    Value q = projection("query", "query_dense", queryRows, B * T, D, H * Dk, {D, H, Dk}, {H, Dk});
    q = b.create<ScaleOp>(loc, q.getType(), q,
                          b.getF32FloatAttr(float(1.0 / std::sqrt(double(Dk)))),
                          b.getF32FloatAttr(0.f));
    Value k = projection("key", "key_dense", keyRows, B * S, ks[2], Hkv * Dk, {ks[2], Hkv, Dk},
                         {Hkv, Dk});
    Value v = projection("value", "value_dense", valueRows, B * S, vs[2], Hkv * Dv,
                         {vs[2], Hkv, Dv}, {Hkv, Dv});
    Value scores = b.create<BatchMatmulOp>(loc, f32({B * H, T, S}), heads(q, T, Dk, H),
                                           sharedHeads(k, S, Dk), UnitAttr(), b.getUnitAttr());
    // attention_mask [B, T or 1, S]: Keras's Softmax adds (1 - bool(mask)) * -1e9 to the scores
    // of every head (nonzero is true): the mask's zeros scaled by -1e9, copied to the heads
    // (and the queries) by a product with ones, exact.
    if (masked) {
      auto ms = shapeOf(ins[3].v);
      if (ins[3].image || ms.size() != 3 || ms[0] != B || (ms[1] != T && ms[1] != 1) || ms[2] != S)
        failLayer(l, "expects an attention_mask of shape (batch, " + std::to_string(T) + " or 1, " +
                         std::to_string(S) + "), got " + shapeText(kerasShape(ins[3])));
      const int64_t copies = H * (T / ms[1]), n = ms[1] * S;
      Value zeros = b.create<ActivationOp>(loc, ins[3].v.getType(),
                                           ActivationKindAttr::get(&ctx, ActivationKind::equal),
                                           ins[3].v, b.getF32FloatAttr(0.f));
      Value adder = b.create<ScaleOp>(loc, zeros.getType(), zeros, b.getF32FloatAttr(-1e9f),
                                      b.getF32FloatAttr(0.f));
      Value ones = b.create<FillOp>(loc, f32({B, copies, 1}), b.getF32FloatAttr(1.0f));
      Value rows = b.create<ReshapeOp>(loc, f32({B, 1, n}), adder);
      Value perHead =
          b.create<BatchMatmulOp>(loc, f32({B, copies, n}), ones, rows, UnitAttr(), UnitAttr());
      scores = b.create<AddOp>(loc, scores.getType(), scores,
                               b.create<ReshapeOp>(loc, f32({B * H, T, S}), perHead));
    }
    Value probs = attentionProbabilities(l, scores, rate, loc);
    Value context = b.create<BatchMatmulOp>(loc, f32({B * H, T, Dv}), probs, sharedHeads(v, S, Dv),
                                            UnitAttr(), UnitAttr());
    // [B*H, T, Dv] -> [B*T, H*Dv]: (batch, head, step, e) back to (batch, step, head, e).
    Value merged =
        transposed(b.create<ReshapeOp>(loc, f32({B, H, T, Dv}), context), {0, 2, 1, 3}, loc);
    Value mergedRows = b.create<ReshapeOp>(loc, f32({B * T, H * Dv}), merged);
    Value outRows = projection("attention_output", "output_dense", mergedRows, B * T, H * Dv, D,
                               {H, Dv, D}, {D});
    Tensor out;
    out.v = b.create<ReshapeOp>(loc, f32({B, T, D}), outRows);
    return out;
  }

  static bool isKnownLayer(const std::string &c) {
    static const std::set<std::string> known = {"Dense",
                                                "Conv3D",
                                                "Convolution3D",
                                                "MaxPooling3D",
                                                "MaxPool3D",
                                                "AveragePooling3D",
                                                "AvgPool3D",
                                                "GlobalAveragePooling3D",
                                                "GlobalAvgPool3D",
                                                "GlobalMaxPooling3D",
                                                "GlobalMaxPool3D",
                                                "SpatialDropout3D",
                                                "Conv3DTranspose",
                                                "Convolution3DTranspose",
                                                "UpSampling3D",
                                                "ZeroPadding3D",
                                                "Cropping3D",
                                                "Conv2D",
                                                "Convolution2D",
                                                "DepthwiseConv2D",
                                                "MaxPooling2D",
                                                "MaxPool2D",
                                                "AveragePooling2D",
                                                "AvgPool2D",
                                                "GlobalAveragePooling2D",
                                                "GlobalAvgPool2D",
                                                "GlobalMaxPooling2D",
                                                "GlobalMaxPool2D",
                                                "Flatten",
                                                "Reshape",
                                                "Activation",
                                                "ReLU",
                                                "Softmax",
                                                "Dropout",
                                                "SpatialDropout1D",
                                                "SpatialDropout2D",
                                                "AlphaDropout",
                                                "GaussianNoise",
                                                "GaussianDropout",
                                                "RandomFlip",
                                                "RandomRotation",
                                                "RandomZoom",
                                                "RandomTranslation",
                                                "RandomContrast",
                                                "RandomBrightness",
                                                "RandomGrayscale",
                                                "RandomInvert",
                                                "RepeatVector",
                                                "CenterCrop",
                                                "RandomCrop",
                                                "Resizing",
                                                "Dot",
                                                "Attention",
                                                "AdditiveAttention",
                                                "LayerScale",
                                                "Masking",
                                                "PReLU",
                                                "EinsumDense",
                                                "StochasticDepth",
                                                "Identity",
                                                "BatchNormalization",
                                                "ZeroPadding2D",
                                                "Add",
                                                "Concatenate",
                                                "Subtract",
                                                "Multiply",
                                                "Average",
                                                "Maximum",
                                                "Minimum",
                                                "Rescaling",
                                                "Normalization",
                                                "LeakyReLU",
                                                "ELU",
                                                "Embedding",
                                                "LSTM",
                                                "GRU",
                                                "SimpleRNN",
                                                "Bidirectional",
                                                "TimeDistributed",
                                                "ZeroPadding1D",
                                                "Cropping1D",
                                                "Cropping2D",
                                                "UpSampling1D",
                                                "UpSampling2D",
                                                "MultiHeadAttention",
                                                "GroupedQueryAttention"};
    return known.count(c) != 0 || convFamily().count(c) != 0;
  }

  /// Keras's own classes only. A custom one (Keras 3 writes a registered class as
  /// "package>Class", and any class's Python module) runs its own code, which graphc never
  /// runs: refused naming the layer, before its class name could pass for a Keras layer's.
  void checkOrigin(const Layer &l) {
    if (l.registeredName.find('>') != std::string::npos)
      fail(label(l) + " is a custom layer (registered as \"" + l.registeredName +
           "\"): graphc imports Keras's own layers only and never runs code from a model file");
    llvm::StringRef module(l.module);
    const bool keras = module.empty() || module == "keras" || module.starts_with("keras.") ||
                       module == "tf_keras" || module.starts_with("tf_keras.") ||
                       module.starts_with("tensorflow.keras") ||
                       module.starts_with("tensorflow.python.keras");
    if (!keras)
      fail(label(l) + " is a custom layer from module \"" + l.module +
           "\": graphc imports Keras's own layers only and never runs code from a model file");
  }

  static bool isKerasOp(const Layer &l) {
    return llvm::StringRef(l.module).starts_with("keras.src.ops.");
  }

  /// A Keras 3 operation in a Functional model (module keras.src.ops.*: `x + y`, `x * 0.5` on
  /// symbolic tensors): Add, Subtract, Multiply, Maximum and Minimum of two tensors are the
  /// merge layers of the same names; Add, Subtract, Multiply, Divide and TrueDivide of a
  /// tensor and a number are a graph.scale (x + c, x - c, c - x, c x, x / c). The call's
  /// numbers come from its inbound node's args. Other ops are refused naming them.
  Tensor kerasOp(const Layer &l, const std::vector<Tensor> &ins, Location loc) {
    const std::string &c = l.cls;
    static const std::set<std::string> binary = {"Add", "Subtract", "Multiply", "Maximum",
                                                 "Minimum"};
    static const std::set<std::string> scalar = {"Add", "Subtract", "Multiply", "Divide",
                                                 "TrueDivide"};
    if (!binary.count(c) && !scalar.count(c))
      fail(label(l) + " is a Keras operation (" + l.module +
           ") that graphc does not import "
           "(it imports Add, Subtract, Multiply, Maximum and Minimum of two tensors, and Add, "
           "Subtract, Multiply, Divide and TrueDivide of a tensor and a number)");
    if (ins.size() == 2 && binary.count(c))
      return merge(l, ins, loc);
    // A tensor and a number: the number is the call's one numeric positional argument.
    const json::Array *nodes = l.obj->getArray("inbound_nodes");
    const json::Object *node = nodes && nodes->size() == 1 ? (*nodes)[0].getAsObject() : nullptr;
    const json::Array *args = node ? node->getArray("args") : nullptr;
    std::optional<double> number;
    bool numberFirst = false;
    if (ins.size() == 1 && args && args->size() == 2 && scalar.count(c))
      for (size_t i = 0; i < 2; ++i)
        if (auto d = (*args)[i].getAsNumber()) {
          number = *d;
          numberFirst = i == 0;
        }
    if (!number || !std::isfinite(*number))
      failLayer(l, "takes " + std::to_string(ins.size()) +
                       " tensor(s); graphc imports this operation on two tensors" +
                       std::string(scalar.count(c) ? " or on a tensor and a finite number" : ""));
    noPadding(l, ins[0]);
    double factor = 1, offset = 0;
    if (c == "Add") {
      offset = *number;
    } else if (c == "Subtract") {
      factor = numberFirst ? -1 : 1;
      offset = numberFirst ? *number : -*number;
    } else if (c == "Multiply") {
      factor = *number;
    } else {
      if (numberFirst || *number == 0)
        failLayer(l, "divides " +
                         std::string(numberFirst ? "a number by a tensor" : "a tensor by zero") +
                         ", which graphc does not import (it divides a tensor by a nonzero "
                         "number)");
      factor = 1 / *number;
    }
    Tensor out = ins[0];
    out.v = b.create<ScaleOp>(loc, ins[0].v.getType(), ins[0].v, b.getF32FloatAttr(float(factor)),
                              b.getF32FloatAttr(float(offset)));
    out.nonNegative = ins[0].nonNegative && factor >= 0 && offset >= 0;
    return out;
  }

  [[noreturn]] void refuseLayer(const Layer &l) {
    static const std::set<std::string> recurrent = {
        "RNN", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "LSTMCell", "GRUCell",
        "SimpleRNNCell", "StackedRNNCells", "CuDNNLSTM", "CuDNNGRU"};
    if (l.cls == "Lambda" || l.cls == "TFOpLambda" || l.cls == "SlicingOpLambda")
      fail(label(l) + " is not supported: graphc never runs code from a model file");
    if (recurrent.count(l.cls))
      fail(label(l) + " is not supported: graphc supports the LSTM, GRU and SimpleRNN layers "
                      "(optionally in Bidirectional), not other recurrent layers or bare cells");
    fail(label(l) + " is not supported: graphc has no op for it yet");
  }

  /// A volume [N, C, D, H, W] as the image [N, C, D, H * W] that per-channel and element-wise
  /// layers treat alike (Keras sees (batch, D, H * W, C)), and back.
  Tensor volumeAsImage(const Tensor &t, Location loc) {
    auto xs = shapeOf(t.v);
    Tensor image;
    image.image = true;
    image.nonNegative = t.nonNegative;
    image.v = b.create<ReshapeOp>(loc, f32({xs[0], xs[1], xs[2], xs[3] * xs[4]}), t.v);
    return image;
  }
  Tensor imageAsVolume(const Layer &l, const Tensor &image, ArrayRef<int64_t> like, Location loc) {
    auto ys = shapeOf(image.v);
    if (!image.image || image.seq || ys.size() != 4 || ys[2] != like[2] ||
        ys[3] != like[3] * like[4])
      failLayer(l, "changes the shape of a 3-D volume in a way graphc does not follow");
    Tensor out;
    out.volume = true;
    out.nonNegative = image.nonNegative;
    out.v = b.create<ReshapeOp>(loc, f32({ys[0], ys[1], like[2], like[3], like[4]}), image.v);
    return out;
  }

  /// The pads (d, h, w before, then after) of a 3-D window on `xs` [N, C, D, H, W].
  std::vector<int64_t> volumePadding(const Layer &l, ArrayRef<int64_t> xs, ArrayRef<int64_t> kernel,
                                     ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations) {
    const std::string mode = strAttr(l, "padding", "valid");
    if (mode != "valid" && mode != "same")
      refuseAttr(l, "padding", "= " + mode + " is not supported (valid or same)");
    std::vector<int64_t> pads(6, 0);
    if (mode == "same")
      for (size_t a = 0; a < 3; ++a)
        std::tie(pads[a], pads[a + 3]) =
            samePadding(xs[2 + a], kernel[a], strides[a], dilations[a]);
    return pads;
  }

  /// A 3-D convolution's kernel_size, strides and dilation_rate (strides and dilation both
  /// above 1 refused, as Keras does).
  std::array<std::vector<int64_t>, 3> window3d(const Layer &l) {
    auto kernel = intsAttr(l, "kernel_size", 3, {});
    auto strides = intsAttr(l, "strides", 3, {1, 1, 1});
    auto dilations = intsAttr(l, "dilation_rate", 3, {1, 1, 1});
    if (llvm::any_of(strides, [](int64_t v) { return v > 1; }) &&
        llvm::any_of(dilations, [](int64_t v) { return v > 1; }))
      refuseAttr(l, "dilation_rate",
                 "> 1 together with strides > 1 is not supported (Keras "
                 "refuses it too)");
    return {kernel, strides, dilations};
  }

  /// A Keras 3-D kernel (kd, kh, kw, A, B) as graphc's (B, A, kd, kh, kw): the taps last.
  static std::vector<float> tapsLastKernel(const std::vector<float> &k, int64_t taps, int64_t a,
                                           int64_t b) {
    std::vector<float> out(k.size());
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t i = 0; i < a; ++i)
        for (int64_t o = 0; o < b; ++o)
          out[size_t((o * a + i) * taps + t)] = k[size_t((t * a + i) * b + o)];
    return out;
  }

  /// Conv3D on a volume: buildConv3d (importers/common/ImageOps.h) with the Keras kernel
  /// (kd, kh, kw, I / g, O) as the OIDHW filter.
  Tensor conv3d(const Layer &l, const Tensor &in, Location loc) {
    auto xs = shapeOf(in.v); // N C D H W
    const int64_t c = xs[1];
    const auto [kernel, strides, dilations] = window3d(l);
    const int64_t filters = intAttr(l, "filters", 0), groups = intAttr(l, "groups", 1);
    if (filters < 1 || filters > (int64_t{1} << 24))
      refuseAttr(l, "filters", "must be positive");
    if (groups < 1 || c % groups || filters % groups)
      refuseAttr(l, "groups",
                 "= " + std::to_string(groups) + " must divide the " + std::to_string(c) +
                     " input channels and the filters");
    const bool useBias = boolAttr(l, "use_bias", true);
    const int64_t perGroup = c / groups;
    const double receptive = double(kernel[0] * kernel[1] * kernel[2]);
    std::vector<VarSpec> vars = {{"kernel",
                                  {kernel[0], kernel[1], kernel[2], perGroup, filters},
                                  "kernel_initializer",
                                  "glorot_uniform",
                                  receptive * double(perGroup),
                                  receptive * double(filters)}};
    if (useBias)
      vars.push_back({"bias", {filters}, "bias_initializer", "zeros"});
    checkSize(l, vars[0].shape);
    const auto pads = volumePadding(l, xs, kernel, strides, dilations);
    for (size_t a = 0; a < 3; ++a)
      if (xs[2 + a] + pads[a] + pads[a + 3] < (kernel[a] - 1) * dilations[a] + 1)
        failLayer(l, "the kernel does not fit the input of shape " + shapeText(kerasShape(in)));
    auto w = layerWeights(l, vars);
    const auto filter =
        tapsLastKernel(w[0].values, kernel[0] * kernel[1] * kernel[2], perGroup, filters);
    auto [f, bias] =
        convParameters(l, "kernel", {filters, perGroup, kernel[0], kernel[1], kernel[2]}, filter,
                       useBias ? &w[1].values : nullptr);
    Tensor out;
    out.volume = true;
    out.v = buildConv3d(b, loc, in.v, f, bias, strides, pads, dilations, groups);
    return imageAsVolume(l, layerActivation(l, volumeAsImage(out, loc), loc), shapeOf(out.v), loc);
  }

  /// Conv3DTranspose: buildConvTranspose3d (importers/common/ImageOps.h), the transpose of the
  /// convolution whose filter [C, filters, kd, kh, kw] is the Keras kernel (kd, kh, kw,
  /// filters, C); each axis's output length and padding as Conv2DTranspose's (transposedAxis).
  Tensor convTranspose3d(const Layer &l, const Tensor &in, Location loc) {
    auto xs = shapeOf(in.v);
    const int64_t c = xs[1], filters = intAttr(l, "filters", 0);
    if (filters < 1 || filters > (int64_t{1} << 24))
      refuseAttr(l, "filters", "must be positive");
    if (int64_t groups = intAttr(l, "groups", 1); groups != 1)
      refuseAttr(l, "groups", "= " + std::to_string(groups) + " is not supported (1)");
    const auto [kernel, strides, dilations] = window3d(l);
    const std::string mode = strAttr(l, "padding", "valid");
    if (mode != "valid" && mode != "same")
      refuseAttr(l, "padding", "= " + mode + " is not supported (valid or same)");
    std::optional<std::vector<int64_t>> outPad;
    if (const json::Value *v = l.config->get("output_padding"); v && !v->getAsNull())
      outPad = intsAttr(l, "output_padding", 3, {}, /*min=*/0);
    std::vector<int64_t> out(3), pads(6);
    for (size_t a = 0; a < 3; ++a) {
      const auto axis = layerTransposedAxis(l, in, xs[2 + a], kernel[a], strides[a], dilations[a],
                                            mode, outPad, a);
      out[a] = axis[0];
      pads[a] = axis[1];
      pads[a + 3] = axis[2];
    }
    const bool useBias = boolAttr(l, "use_bias", true);
    const int64_t taps = kernel[0] * kernel[1] * kernel[2];
    std::vector<VarSpec> vars = {{"kernel",
                                  {kernel[0], kernel[1], kernel[2], filters, c},
                                  "kernel_initializer",
                                  "glorot_uniform",
                                  double(taps) * double(filters),
                                  double(taps) * double(c)}};
    if (useBias)
      vars.push_back({"bias", {filters}, "bias_initializer", "zeros"});
    checkSize(l, vars[0].shape);
    auto w = layerWeights(l, vars);
    // (kd, kh, kw, filters, C) -> (C, filters, kd, kh, kw), the bias [filters].
    Value weight =
        persistent(l, "kernel", {c, filters, kernel[0], kernel[1], kernel[2]},
                   tapsLastKernel(w[0].values, taps, filters, c), l.trainable, "parameter");
    Value bias;
    if (useBias)
      bias = persistent(l, "bias", {filters}, w[1].values, l.trainable, "parameter");
    Tensor result;
    result.volume = true;
    result.v = buildConvTranspose3d(b, loc, in.v, weight, bias, strides, pads, dilations, out, 1);
    return imageAsVolume(l, layerActivation(l, volumeAsImage(result, loc), loc), shapeOf(result.v),
                         loc);
  }

  /// MaxPooling3D and AveragePooling3D: buildPool3d; with "same", padded cells never win a
  /// maximum and the average's divisor counts only input cells (TensorFlow's rule).
  Tensor pool3d(const Layer &l, const Tensor &in, bool max, Location loc) {
    auto xs = shapeOf(in.v);
    const auto kernel = intsAttr(l, "pool_size", 3, {2, 2, 2});
    const json::Value *sv = l.config->get("strides");
    const auto strides = (!sv || sv->getAsNull()) ? kernel : intsAttr(l, "strides", 3, kernel);
    const auto pads = volumePadding(l, xs, kernel, strides, {1, 1, 1});
    for (size_t a = 0; a < 3; ++a)
      if (xs[2 + a] + pads[a] + pads[a + 3] < kernel[a])
        failLayer(l, "the window does not fit the input of shape " + shapeText(kerasShape(in)));
    Tensor out;
    out.volume = true;
    out.nonNegative = in.nonNegative;
    out.v = buildPool3d(b, loc, in.v, max, kernel, strides, pads, /*countIncludePad=*/false);
    return out;
  }

  /// A layer reading 3-D volumes (Keras's [N, D, H, W, C], graphc's [N, C, D, H, W]): the 3-D
  /// convolution and pools, their global forms, Flatten (Keras's (D, H, W, C) order),
  /// Concatenate, BatchNormalization; per-channel and element-wise layers (activations,
  /// Dropout, SpatialDropout3D as SpatialDropout2D over (D, H * W), noise, the merges) on the
  /// [N, C, D, H * W] image view. Anything else is refused, naming the layer.
  Tensor volumeLayer(const Layer &l, const std::vector<Tensor> &ins, Location loc) {
    const std::string &c = l.cls;
    for (const Tensor &t : ins)
      if (!t.volume)
        failLayer(l, "mixes a 3-D volume with a tensor of shape " + shapeText(kerasShape(t)) +
                         ", which graphc does not support");
    const Tensor &in = ins[0];
    auto xs = shapeOf(in.v);
    if (c == "Concatenate") {
      int64_t axis = intAttr(l, "axis", -1);
      if (axis < 0)
        axis += 5;
      if (axis <= 0 || axis >= 5)
        refuseAttr(l, "axis", "= " + std::to_string(axis) + " is out of range");
      const int64_t graphAxis = axis == 4 ? 1 : axis + 1;
      SmallVector<Value> parts;
      std::vector<int64_t> shape = xs;
      shape[graphAxis] = 0;
      Tensor out;
      out.volume = true;
      out.nonNegative = true;
      for (const Tensor &t : ins) {
        auto ts = shapeOf(t.v);
        for (size_t d = 0; d < 5; ++d)
          if (int64_t(d) != graphAxis && ts[d] != xs[d])
            failLayer(l, "concatenates inputs of incompatible shapes " + shapeText(kerasShape(in)) +
                             " and " + shapeText(kerasShape(t)));
        shape[graphAxis] += ts[graphAxis];
        parts.push_back(t.v);
        out.nonNegative = out.nonNegative && t.nonNegative;
      }
      out.v = b.create<ConcatOp>(loc, f32(shape), parts, b.getI64IntegerAttr(graphAxis));
      return out;
    }
    if (ins.size() != 1 && c != "Add" && c != "Subtract" && c != "Multiply" && c != "Average" &&
        c != "Maximum" && c != "Minimum")
      failLayer(l, "expects one input, got " + std::to_string(ins.size()));
    if (c == "Conv3D" || c == "Convolution3D")
      return conv3d(l, in, loc);
    if (c == "MaxPooling3D" || c == "MaxPool3D")
      return pool3d(l, in, true, loc);
    if (c == "AveragePooling3D" || c == "AvgPool3D")
      return pool3d(l, in, false, loc);
    if (c == "GlobalAveragePooling3D" || c == "GlobalAvgPool3D" || c == "GlobalMaxPooling3D" ||
        c == "GlobalMaxPool3D") {
      if (boolAttr(l, "keepdims", false))
        refuseAttr(l, "keepdims", "= true is not supported on a volume");
      const bool max = c.find("Max") != std::string::npos;
      auto kernel = b.getDenseI64ArrayAttr({xs[2], xs[3] * xs[4]});
      auto ones = b.getDenseI64ArrayAttr({1, 1});
      auto none = b.getDenseI64ArrayAttr({0, 0, 0, 0});
      Value view = b.create<ReshapeOp>(loc, f32({xs[0], xs[1], xs[2], xs[3] * xs[4]}), in.v);
      auto type = f32({xs[0], xs[1], 1, 1});
      Value pooled =
          max ? b.create<MaxPool2dOp>(loc, type, view, kernel, ones, none).getResult()
              : b.create<AvgPool2dOp>(loc, type, view, kernel, ones, none, UnitAttr()).getResult();
      Tensor out;
      out.nonNegative = in.nonNegative;
      out.v = b.create<ReshapeOp>(loc, f32({xs[0], xs[1]}), pooled);
      return out;
    }
    if (c == "Flatten") {
      Tensor out;
      out.nonNegative = in.nonNegative;
      out.v = b.create<ReshapeOp>(loc, f32({xs[0], xs[1] * xs[2] * xs[3] * xs[4]}),
                                  transposed(in.v, {0, 2, 3, 4, 1}, loc));
      return out;
    }
    if (c == "BatchNormalization")
      return batchNorm(l, in, loc);
    if (c == "Conv3DTranspose" || c == "Convolution3DTranspose")
      return convTranspose3d(l, in, loc);
    if (c == "UpSampling3D") {
      // Nearest (Keras's only mode): (H, W) on the [N, C * D, H, W] view, then depth on the
      // [N, C, D, H' * W'] view, each buildUpsample's repeat.
      const auto size = intsAttr(l, "size", 3, {2, 2, 2});
      if (llvm::any_of(size, [](int64_t v) { return v > 65536; }))
        refuseAttr(l, "size", "= " + show(l.config->get("size")) + " is too large");
      auto repeat = [&](int64_t k) {
        return upsampleAxis(UpsampleInterpolation::Nearest, SourceCoordinates::HalfPixel, k);
      };
      auto noTable = [&](RankedTensorType, ArrayRef<float>) -> Value {
        failLayer(l, "needs an interpolation table, which nearest upsampling never does");
      };
      Value planes = buildUpsample(
          b, loc, b.create<ReshapeOp>(loc, f32({xs[0], xs[1] * xs[2], xs[3], xs[4]}), in.v),
          repeat(size[1]), repeat(size[2]), noTable);
      const int64_t h = xs[3] * size[1], w = xs[4] * size[2];
      Value deep =
          buildUpsample(b, loc, b.create<ReshapeOp>(loc, f32({xs[0], xs[1], xs[2], h * w}), planes),
                        repeat(size[0]), repeat(1), noTable);
      Tensor out;
      out.volume = true;
      out.nonNegative = in.nonNegative;
      out.v = b.create<ReshapeOp>(loc, f32({xs[0], xs[1], xs[2] * size[0], h, w}), deep);
      return out;
    }
    if (c == "ZeroPadding3D" || c == "Cropping3D") {
      const bool pad = c == "ZeroPadding3D";
      auto e = edgesAttr(l, pad ? "padding" : "cropping", 3, pad ? 1 : 0);
      Tensor out = in;
      for (int64_t a = 0; a < 3; ++a) {
        const int64_t axis = 2 + a, before = e[size_t(a)][0], after = e[size_t(a)][1];
        if (!pad) {
          if (before + after >= xs[size_t(axis)])
            refuseAttr(l, "cropping",
                       "= " + show(l.config->get("cropping")) +
                           " leaves nothing of the input of shape " + shapeText(kerasShape(in)));
          out.v = cropAxis(out.v, axis, before, after, loc);
          continue;
        }
        SmallVector<Value> parts;
        std::vector<int64_t> dims = shapeOf(out.v), zeros = dims;
        for (int64_t width : {before, int64_t(-1), after}) {
          if (width < 0) {
            parts.push_back(out.v);
          } else if (width > 0) {
            zeros[size_t(axis)] = width;
            parts.push_back(b.create<FillOp>(loc, f32(zeros), b.getF32FloatAttr(0)));
          }
        }
        dims[size_t(axis)] += before + after;
        if (parts.size() > 1)
          out.v = b.create<ConcatOp>(loc, f32(dims), parts, b.getI64IntegerAttr(axis));
      }
      return out;
    }
    // (Dense maps the channels, Keras's last axis: per voxel, as over an image's pixels.)
    static const std::set<std::string> perElement = {
        "Dense",    "Activation",        "ReLU",          "LeakyReLU",       "ELU",
        "Dropout",  "SpatialDropout3D",  "GaussianNoise", "GaussianDropout", "Add",
        "Subtract", "Multiply",          "Average",       "Maximum",         "Minimum",
        "Identity", "LayerNormalization"};
    if (perElement.count(c)) {
      std::vector<Tensor> images;
      for (const Tensor &t : ins)
        images.push_back(volumeAsImage(t, loc));
      Layer asImage = l;
      if (c == "SpatialDropout3D")
        asImage.cls = "SpatialDropout2D"; // one draw per sample and channel over (D, H * W)
      return imageAsVolume(l, applyLayer(asImage, images), xs, loc);
    }
    failLayer(
        l, "on a 3-D volume " + shapeText(kerasShape(in)) +
               " is not supported (graphc supports Conv3D, Conv3DTranspose, MaxPooling3D, "
               "AveragePooling3D, their global forms, UpSampling3D, ZeroPadding3D, "
               "Cropping3D, BatchNormalization, LayerNormalization, Flatten, Dense, Concatenate, "
               "activations, "
               "Dropout, SpatialDropout3D, noise and the merge layers on volumes)");
  }

  /// Applies a (non-model) layer to its inputs.
  Tensor applyLayer(const Layer &l, const std::vector<Tensor> &ins) {
    Location loc = NameLoc::get(b.getStringAttr(l.name));
    const std::string &c = l.cls;
    checkOrigin(l);
    const bool op = isKerasOp(l);
    if (!op && !isKnownLayer(c))
      refuseLayer(l);
    checkCommon(l);
    if (c != "TimeDistributed")
      for (const Tensor &t : ins)
        if (t.timeSteps) {
          std::vector<Tensor> sequences;
          for (const Tensor &u : ins)
            sequences.push_back(fromFrames(l, u, loc));
          return applyLayer(l, sequences);
        }
    // An Embedding's mask_zero or a Masking layer's mask: the recurrent layers and the
    // masked mean apply it; the dropout, noise and per-step layers pass it on (Keras's
    // supports_masking), a Masking layer replaces it; any other reader would need to apply it.
    static const std::set<std::string> passesMask = {"Dense", "Activation", "LayerNormalization"};
    if (ins.size() == 1 && ins[0].mask && passesMask.count(c)) {
      Tensor unmasked = ins[0];
      unmasked.mask = Value();
      Tensor out = applyLayer(l, {unmasked});
      out.mask = ins[0].mask;
      return out;
    }
    static const std::set<std::string> readsMask = {"Masking",
                                                    "MultiHeadAttention",
                                                    "GroupedQueryAttention",
                                                    "Attention",
                                                    "AdditiveAttention",
                                                    "Add",
                                                    "Subtract",
                                                    "Multiply",
                                                    "Average",
                                                    "Maximum",
                                                    "Minimum",
                                                    "LSTM",
                                                    "GRU",
                                                    "SimpleRNN",
                                                    "Bidirectional",
                                                    "Dropout",
                                                    "SpatialDropout1D",
                                                    "GaussianNoise",
                                                    "GaussianDropout",
                                                    "GlobalAveragePooling1D",
                                                    "GlobalAvgPool1D"};
    for (const Tensor &t : ins)
      if (t.mask && !readsMask.count(c))
        failLayer(l, "reads a masked sequence (an Embedding's mask_zero or a Masking layer), "
                     "which graphc applies only in the LSTM, GRU, SimpleRNN, Bidirectional, "
                     "attention and GlobalAveragePooling1D layers that read it (after "
                     "Dropout, SpatialDropout1D, noise, Dense, Activation, LayerNormalization "
                     "or merge layers, which pass it on)");
    if (llvm::any_of(ins, [](const Tensor &t) { return t.volume; }))
      return volumeLayer(l, ins, loc);
    if (op)
      return kerasOp(l, ins, loc);
    if (c == "MultiHeadAttention" || c == "GroupedQueryAttention")
      return maskedMultiHeadAttention(l, ins, loc);
    bool elementwise = c == "Add" || c == "Subtract" || c == "Multiply" || c == "Average" ||
                       c == "Maximum" || c == "Minimum";
    if (c == "Attention" || c == "AdditiveAttention")
      return dotProductAttention(l, ins, loc);
    bool multi = elementwise || c == "Concatenate" || c == "Dot";
    if (!multi && ins.size() != 1)
      failLayer(l, "expects one input, got " + std::to_string(ins.size()));
    if (elementwise) {
      // Keras's merge layers AND their inputs' masks.
      Tensor out = merge(l, ins, loc);
      for (const Tensor &t : ins)
        if (t.mask && t.mask != out.mask)
          out.mask = out.mask ? b.create<MulOp>(loc, t.mask.getType(), out.mask, t.mask).getResult()
                              : t.mask;
      return out;
    }
    if (c == "Dot")
      return dot(l, ins, loc);
    if (c == "Concatenate")
      return concatenate(l, ins, loc);
    const Tensor &in = ins[0];
    static const std::set<std::string> readsPadding = {
        "ZeroPadding2D", "Conv2D", "Convolution2D", "DepthwiseConv2D", "MaxPooling2D",
        "MaxPool2D", "AveragePooling2D", "AvgPool2D", "ZeroPadding1D", "Conv1D",
        "Convolution1D", "MaxPooling1D", "MaxPool1D", "AveragePooling1D", "AvgPool1D"};
    if (!readsPadding.count(c))
      noPadding(l, in);
    // (Element-wise layers keep a flattened image's order for the Dense after them.)
    static const std::set<std::string> readsFlat = {
        "Dense",      "Dropout", "AlphaDropout", "GaussianNoise", "GaussianDropout",
        "Activation", "ReLU",    "Flatten",      "Reshape",       "Identity"};
    if (!readsFlat.count(c))
      noFlat(l, in);
    if (convFamily().count(c))
      return applyConvFamily(l, in, loc);
    if (c == "Dense")
      return dense(l, asSteps(in, loc), loc);
    if (c == "EinsumDense")
      return einsumDense(l, in, loc);
    if (c == "Conv2D" || c == "Convolution2D")
      return conv(l, in, false, loc);
    if (c == "DepthwiseConv2D")
      return conv(l, in, true, loc);
    if (c == "MaxPooling2D" || c == "MaxPool2D")
      return pool(l, in, true, loc);
    if (c == "AveragePooling2D" || c == "AvgPool2D")
      return pool(l, in, false, loc);
    if (c == "GlobalAveragePooling2D" || c == "GlobalAvgPool2D")
      return globalPool(l, in, false, loc);
    if (c == "GlobalMaxPooling2D" || c == "GlobalMaxPool2D")
      return globalPool(l, in, true, loc);
    if (c == "Flatten")
      return flatten(l, in, loc);
    if (c == "Reshape")
      return reshape(l, in, loc);
    if (c == "Activation")
      return layerActivation(l, in, loc);
    if (c == "ReLU") {
      double maxValue = numAttr(l, "max_value", -1);
      double slope = numAttr(l, "negative_slope", 0);
      if (numAttr(l, "threshold", 0) != 0)
        refuseAttr(l, "threshold", "!= 0 is not supported");
      Tensor out = in;
      if (slope != 0) {
        out = leakyRelu(in, slope, loc);
        if (maxValue >= 0)
          out.v = b.create<ClipOp>(loc, in.v.getType(), out.v,
                                   b.getF32FloatAttr(-std::numeric_limits<float>::infinity()),
                                   b.getF32FloatAttr(float(maxValue)));
        return out;
      }
      if (maxValue < 0)
        return activation(l, in, "relu", loc);
      out.v = b.create<ClipOp>(loc, in.v.getType(), in.v, b.getF32FloatAttr(0.f),
                               b.getF32FloatAttr(float(maxValue)));
      out.nonNegative = true;
      return out;
    }
    if (c == "PReLU")
      return prelu(l, in, loc);
    if (c == "LeakyReLU") // tf.keras 2 calls the slope alpha, Keras 3 negative_slope
      return leakyRelu(in, numAttr(l, keras3 ? "negative_slope" : "alpha",
                                   numAttr(l, "negative_slope", numAttr(l, "alpha", 0.3))),
                       loc);
    if (c == "ELU") {
      Tensor out = in;
      out.v = b.create<ActivationOp>(loc, in.v.getType(),
                                     ActivationKindAttr::get(&ctx, ActivationKind::elu), in.v,
                                     b.getF32FloatAttr(float(numAttr(l, "alpha", 1.0))));
      out.nonNegative = false;
      return out;
    }
    if (c == "Embedding")
      return embedding(l, in, loc);
    if (c == "LSTM" || c == "GRU" || c == "SimpleRNN")
      return recurrentLayer(l, asSteps(in, loc));
    if (c == "Bidirectional")
      return bidirectional(l, asSteps(in, loc), loc);
    if (c == "TimeDistributed")
      return timeDistributed(l, asSteps(in, loc), loc);
    if (c == "Softmax") {
      if (intAttr(l, "axis", -1) != -1 && intAttr(l, "axis", -1) != int64_t(kerasShape(in).size()) - 1)
        refuseAttr(l, "axis", "must be the last axis");
      return activation(l, in, "softmax", loc);
    }
    if (c == "Dropout" || c == "SpatialDropout1D" || c == "SpatialDropout2D")
      return dropout(l, in, loc);
    if (c == "AlphaDropout")
      return alphaDropout(l, in, loc);
    if (c == "StochasticDepth")
      return stochasticDepth(l, in, loc);
    if (c == "Masking")
      return masking(l, in, loc);
    if (c == "LayerScale")
      return layerScale(l, in, loc);
    if (c == "RandomFlip" || c == "RandomRotation" || c == "RandomZoom" || c == "RandomTranslation")
      return randomAffine(l, in, loc);
    if (c == "RandomGrayscale" || c == "RandomInvert")
      return randomSwap(l, in, loc);
    if (c == "RandomContrast" || c == "RandomBrightness")
      return randomColor(l, in, loc);
    if (c == "RepeatVector")
      return repeatVector(l, in, loc);
    if (c == "Identity") {
      noPadding(l, in);
      return in;
    }
    if (c == "GaussianNoise" || c == "GaussianDropout")
      return gaussianNoise(l, in, loc);
    if (c == "Rescaling")
      return rescaling(l, in, loc);
    if (c == "Normalization")
      return normalization(l, in, loc);
    if (c == "BatchNormalization")
      return batchNorm(l, in, loc);
    if (c == "ZeroPadding2D")
      return zeroPadding(l, in);
    if (c == "ZeroPadding1D")
      return zeroPadding1D(l, in, loc);
    if (c == "CenterCrop")
      return centerCrop(l, in, loc);
    if (c == "RandomCrop")
      return randomCrop(l, in, loc);
    if (c == "Resizing")
      return resizing(l, in, loc);
    if (c == "Cropping1D" || c == "Cropping2D")
      return cropping(l, in, c == "Cropping1D", loc);
    if (c == "UpSampling1D" || c == "UpSampling2D")
      return upSampling(l, in, c == "UpSampling1D", loc);
    refuseLayer(l);
  }

  //===--------------------------------------------------------------------===//
  // Models
  //===--------------------------------------------------------------------===//

  /// The layers of a model object, with their weight paths.
  std::vector<Layer> layersOf(const json::Object &model, const Layer *self,
                              const std::string &k3prefix, const std::string &k3namePrefix,
                              const std::vector<std::string> &legacyPrefix,
                              const std::string &scope, bool trainable) {
    const json::Value *cv = model.get("config");
    const json::Array *list = nullptr;
    if (cv && cv->getAsArray())
      list = cv->getAsArray(); // Keras 2.0-2.2 Sequential: the config is the layer list
    else if (auto *cfg = cv ? cv->getAsObject() : nullptr)
      list = cfg->getArray("layers");
    if (!list)
      fail((self ? label(*self) + ": " : std::string()) + "the model config has no layers list");
    std::vector<Layer> out;
    std::map<std::string, int> used;
    std::set<std::string> names;
    for (const json::Value &v : *list) {
      const json::Object *o = v.getAsObject();
      if (!o)
        fail("a layer entry is not an object");
      Layer l;
      l.obj = o;
      l.cls = str(o->get("class_name"));
      l.module = str(o->get("module"));
      l.registeredName = str(o->get("registered_name"));
      l.config = o->getObject("config");
      if (l.cls.empty() || !l.config)
        fail("a layer entry lacks class_name or config");
      l.name = str(l.config->get("name"));
      if (l.name.empty())
        l.name = str(o->get("name"));
      if (l.name.empty())
        fail("a " + l.cls + " layer has no name");
      if (!names.insert(l.name).second)
        fail("two layers are named \"" + l.name + "\"");
      std::string snake = toSnakeCase(l.cls == "Model" ? "Functional" : l.cls);
      auto it = used.find(snake);
      if (it == used.end()) {
        used[snake] = 0;
      } else {
        snake += "_" + std::to_string(++it->second);
      }
      l.k3path = k3prefix + "/" + snake;
      l.k3namePath = k3namePrefix + "/" + l.name;
      l.legacyPath = legacyPrefix;
      l.legacyPath.push_back(l.name);
      l.scope = scope;
      l.trainable = trainable;
      if (const json::Value *t = l.config->get("trainable"))
        if (auto x = t->getAsBoolean())
          l.trainable = trainable && *x;
      // Keras 1 spelled several attributes differently.
      // (Embedding still has output_dim.)
      for (const char *k1 : {"nb_filter", "border_mode", "output_dim", "nb_row", "W_regularizer",
                             "subsample"})
        if (l.config->get(k1) && !(l.cls == "Embedding" && llvm::StringRef(k1) == "output_dim"))
          fail(label(l) + ": Keras 1 format is not supported (attribute " + k1 +
               "); re-save the model with Keras 2 or 3");
      // Refuse an unsupported layer before anything else goes wrong around it.
      checkOrigin(l);
      if (!isModelClass(l.cls) && l.cls != "InputLayer" && !isKerasOp(l) && !isKnownLayer(l.cls))
        refuseLayer(l);
      out.push_back(l);
    }
    return out;
  }

  static std::string modelClass(const json::Object &model) { return str(model.get("class_name")); }

  /// Builds the model `model` (a Sequential/Functional object) on `inputs`; at the top level
  /// `inputs` is empty and the model's input layer defines the data argument.
  std::vector<Tensor> buildModel(const json::Object &model, const Layer *self,
                                 std::vector<Tensor> inputs, const std::string &k3prefix,
                                 const std::string &k3namePrefix,
                                 const std::vector<std::string> &legacyPrefix,
                                 const std::string &scope, bool trainable, int depth) {
    if (depth > 64)
      fail("models are nested too deeply");
    std::string cls = modelClass(model);
    auto layers = layersOf(model, self, k3prefix, k3namePrefix, legacyPrefix, scope, trainable);
    if (cls == "Sequential") {
      if (!self) {
        // The data input: an InputLayer first, or batch_input_shape on the first layer.
        const json::Value *shape = nullptr;
        std::string inputName = "input";
        if (!layers.empty()) {
          const Layer &first = layers.front();
          shape = first.config->get("batch_input_shape");
          if (!shape)
            shape = first.config->get("batch_shape");
          inputName = first.cls == "InputLayer" ? first.name : first.name + "_input";
          if (first.cls == "InputLayer")
            checkInputDtype(first);
        }
        const json::Object *cfg = model.getObject("config");
        if (!shape && cfg)
          shape = cfg->get("build_input_shape");
        if (!shape)
          if (auto *bc = model.getObject("build_config"))
            shape = bc->get("input_shape");
        if (!shape || shape->getAsNull())
          fail("the Sequential model declares no input shape (no InputLayer, "
               "batch_input_shape or build_input_shape)");
        if (options.inputShapes.size() > 1)
          fail("--input-shape is given " + times(options.inputShapes.size()) +
               " but the Sequential model has one input");
        inputs = {dataInput(inputName, shape)};
      }
      if (inputs.size() != 1)
        fail((self ? label(*self) : std::string("the model")) + " is Sequential but gets " +
             std::to_string(inputs.size()) + " inputs");
      Tensor t = inputs[0];
      for (size_t i = 0; i < layers.size(); ++i) {
        const Layer &l = layers[i];
        if (l.cls == "InputLayer") {
          if (i != 0)
            failLayer(l, "appears after the first layer");
          continue;
        }
        t = applyAny(l, {t}, depth);
      }
      return {t};
    }
    if (cls != "Functional" && cls != "Model")
      fail("model class " + cls + " is not supported (Sequential or Functional)");
    return buildFunctional(model, self, layers, inputs, depth);
  }

  Tensor applyAny(const Layer &l, std::vector<Tensor> ins, int depth) {
    if (isModelClass(l.cls)) {
      auto outs = buildModel(*l.obj, &l, ins, l.k3path + "/layers", l.k3namePath + "/layers",
                             l.legacyPath, l.scope + l.name + "/", l.trainable, depth + 1);
      if (outs.size() != 1)
        failLayer(l, "has " + std::to_string(outs.size()) + " outputs where one is read");
      return outs[0];
    }
    return applyLayer(l, ins);
  }

  void checkInputDtype(const Layer &l) {
    // Integer inputs (token ids) are read as float32, exact up to 2^24.
    static const std::set<std::string> accepted = {"float32", "int32", "int64", "int16",
                                                   "int8", "uint8", "uint16"};
    std::string dtype = str(l.config->get("dtype"));
    if (!dtype.empty() && !accepted.count(dtype))
      refuseAttr(l, "dtype", "= " + dtype +
                                 " is not supported; graphc's data input is float32 (integer "
                                 "token ids are read as float32)");
    if (l.config->get("sparse") && l.config->get("sparse")->getAsBoolean().value_or(false))
      refuseAttr(l, "sparse", "= true is not supported");
    if (l.config->get("ragged") && l.config->get("ragged")->getAsBoolean().value_or(false))
      refuseAttr(l, "ragged", "= true is not supported");
  }

  /// The function's data argument for a Keras input shape (batch first), data input `index`
  /// of `count` (its --input-shape is the index-th).
  Tensor dataInput(const std::string &name, const json::Value *shapeValue, size_t index = 0,
                   size_t inputCount = 1) {
    const json::Array *a = shapeValue->getAsArray();
    if (!a || a->size() < 2 || a->size() > 5)
      fail("input \"" + name + "\" has shape " + show(shapeValue) +
           "; graphc supports inputs of rank 2 to 5 (batch first; rank 5: frames (batch, "
           "time, height, width, channels) for TimeDistributed layers)");
    std::vector<int64_t> dims;
    for (const json::Value &d : *a) {
      if (d.getAsNull()) {
        dims.push_back(-1);
        continue;
      }
      auto i = integer(&d);
      if (!i || *i < 1 || *i > (int64_t{1} << 31))
        fail("input \"" + name + "\" has an invalid dimension in " + show(shapeValue));
      dims.push_back(*i);
    }
    std::vector<int64_t> given(dims.begin() + 1, dims.end());
    // (Which --input-shape, when there are several inputs: "the 2nd --input-shape".)
    const std::string flag = inputCount > 1 ? "the " + ordinal(index + 1) + " --input-shape"
                                            : std::string("--input-shape");
    if (index < options.inputShapes.size()) {
      const std::vector<int64_t> &shape = options.inputShapes[index];
      if (shape.size() != given.size())
        fail(flag + " has " + std::to_string(shape.size()) + " dims but input \"" + name +
             "\" has " + std::to_string(given.size()) + " after the batch: " + shapeText(dims));
      for (size_t i = 0; i < given.size(); ++i) {
        if (given[i] >= 0 && given[i] != shape[i])
          fail(flag + " dim " + std::to_string(i + 1) + " = " + std::to_string(shape[i]) +
               " contradicts input \"" + name + "\" of shape " + shapeText(dims));
        dims[i + 1] = shape[i];
      }
    }
    for (size_t i = 1; i < dims.size(); ++i)
      if (dims[i] < 0)
        fail("input \"" + name + "\" has shape " + shapeText(dims) +
             " with a variable (None) dimension; pass " +
             (inputCount > 1 ? "--input-shape once per input, in input order, this input's "
                               "with the "
                             : "--input-shape with the ") +
             std::to_string(dims.size() - 1) +
             " dims after the batch (channels last, as Keras has them), e.g. --input-shape=" + [&] {
               std::string s;
               for (size_t j = 1; j < dims.size(); ++j)
                 s += (j > 1 ? "," : "") + (dims[j] < 0 ? std::string("32") : std::to_string(dims[j]));
               return s;
             }());
    if (options.batch > 0)
      dims[0] = options.batch;
    if (dims[0] < 0)
      fail("input \"" + name + "\" has a variable (None) batch dimension; pass --batch=N");
    Tensor t;
    std::vector<int64_t> shape = dims;
    if (dims.size() == 4) {
      shape = {dims[0], dims[3], dims[1], dims[2]}; // declared NCHW
      t.image = true;
    }
    // Rank 5: a volume (batch, D, H, W, C), declared (batch, C, D, H, W), unless the model
    // has TimeDistributed layers, which read frames (batch, time, H, W, C), declared
    // (batch, time, C, H, W).
    const bool volume = dims.size() == 5 && !framesModel;
    if (volume)
      shape = {dims[0], dims[4], dims[1], dims[2], dims[3]};
    else if (dims.size() == 5)
      shape = {dims[0], dims[1], dims[4], dims[2], dims[3]};
    int64_t count = 1;
    for (int64_t d : shape)
      if (__builtin_mul_overflow(count, d, &count) || count > (int64_t{1} << 34))
        fail("input \"" + name + "\" is too large");
    t.v = argument(f32(shape), {b.getNamedAttr(kKindAttr, b.getStringAttr("input")),
                                b.getNamedAttr(kNameAttr, b.getStringAttr(name))});
    t.volume = volume;
    if (dims.size() == 5 && !volume) { // the frames as one batch of N * T NCHW images
      t.v = b.create<ReshapeOp>(b.getUnknownLoc(),
                                f32({shape[0] * shape[1], shape[2], shape[3], shape[4]}), t.v);
      t.image = true;
      t.timeSteps = shape[1];
    }
    return t;
  }

  /// Tensors read by one inbound node (both serialization formats).
  std::vector<Ref> nodeRefs(const Layer &l, const json::Value &node) {
    std::vector<Ref> refs;
    auto refOf = [&](const json::Value &v) -> std::optional<Ref> {
      // tf.keras 2: ["name", node, tensor, {kwargs}]; Keras 3: keras_history [name, node, tensor].
      const json::Array *a = v.getAsArray();
      if (!a || a->size() < 3 || !(*a)[0].getAsString() || !integer(&(*a)[1]) ||
          !integer(&(*a)[2]))
        return std::nullopt;
      return Ref{(*a)[0].getAsString()->str(), *integer(&(*a)[1]), *integer(&(*a)[2])};
    };
    std::function<void(const json::Value &, int)> walk = [&](const json::Value &v, int d) {
      if (d > 16)
        failLayer(l, "has an inbound node nested too deeply");
      if (auto *o = v.getAsObject()) {
        if (str(o->get("class_name")) == "__keras_tensor__") {
          const json::Object *cfg = o->getObject("config");
          const json::Value *h = cfg ? cfg->get("keras_history") : nullptr;
          auto r = h ? refOf(*h) : std::nullopt;
          if (!r)
            failLayer(l, "has a __keras_tensor__ input without a valid keras_history");
          refs.push_back(*r);
        }
        return; // other objects (kwargs values, constants) are not tensors
      }
      if (auto *a = v.getAsArray())
        for (const json::Value &e : *a)
          walk(e, d + 1);
    };
    // MultiHeadAttention's call: query, value and key may come as keyword arguments (Keras 3
    // `mha(query=x, value=x)`, tf.keras 2 always for value and key); they are read in that
    // order. Its masks and options that change the computation are refused.
    const bool attention = l.cls == "MultiHeadAttention" || l.cls == "GroupedQueryAttention";
    const bool dotAttention = l.cls == "Attention" || l.cls == "AdditiveAttention";
    // Both attention layers: one output, and use_causal_mask the same at every call.
    auto causalAndScores = [&](const json::Object &kwargs) {
      if (const json::Value *v = kwargs.get("return_attention_scores");
          v && v->getAsBoolean().value_or(false))
        failLayer(l, "is called with return_attention_scores = true, which is not supported (one "
                     "output per layer)");
      if (const json::Value *v = kwargs.get("use_causal_mask"); v && v->getAsBoolean()) {
        const std::string key = l.scope + l.name;
        const bool causal = *v->getAsBoolean();
        if (causalAttention.count(key) != causal && causalCallSeen.count(key))
          failLayer(l, "is called both with and without use_causal_mask, which is not supported");
        causalCallSeen.insert(key);
        if (causal)
          causalAttention.insert(key);
      }
    };
    auto attentionKwargs = [&](const json::Object &kwargs,
                               const std::function<void(const json::Value &)> &read) {
      for (const char *key : {"query", "value", "key"})
        if (const json::Value *v = kwargs.get(key); v && !v->getAsNull())
          read(*v);
      causalAndScores(kwargs);
      bool masked = false;
      for (const auto &kv : kwargs) {
        llvm::StringRef key = kv.first;
        if (key == "query" || key == "value" || key == "key")
          continue;
        if (key == "attention_mask" && !kv.second.getAsNull()) {
          // The mask follows query, value and key (the value again when the key is absent),
          // which the reads above have all taken.
          std::optional<Ref> mask = refOf(kv.second);
          size_t before = refs.size();
          if (!mask) {
            walk(kv.second, 0);
            if (refs.size() == before + 1) {
              mask = refs.back();
              refs.pop_back();
            }
          }
          if (!mask || refs.size() < 2 || refs.size() > 3)
            failLayer(l, "passes an attention_mask that is not one tensor after the query and "
                         "value, which is not supported");
          if (refs.size() == 2)
            refs.push_back(refs[1]);
          refs.push_back(*mask);
          masked = true;
          continue;
        }
        size_t before = refs.size();
        walk(kv.second, 0);
        if (refs.size() != before || refOf(kv.second))
          failLayer(l, "passes a tensor as keyword argument " + key.str() +
                           ", which is not supported (graphc's attention takes attention_mask "
                           "only)");
      }
      const std::string layerKey = l.scope + l.name;
      if (maskCallSeen.count(layerKey) && maskedAttention.count(layerKey) != masked)
        failLayer(l, "is called both with and without attention_mask, which is not supported");
      maskCallSeen.insert(layerKey);
      if (masked)
        maskedAttention.insert(layerKey);
    };
    if (auto *o = node.getAsObject()) { // Keras 3: {"args": [...], "kwargs": {...}}
      if (const json::Value *args = o->get("args"))
        walk(*args, 0);
      if (const json::Object *kwargs = o->getObject("kwargs")) {
        if (attention) {
          attentionKwargs(*kwargs, [&](const json::Value &v) { walk(v, 0); });
          return refs;
        }
        if (dotAttention)
          causalAndScores(*kwargs);
        for (const auto &kv : *kwargs) {
          size_t before = refs.size();
          walk(kv.second, 0);
          if (refs.size() != before)
            failLayer(l, "passes a tensor as keyword argument " + kv.first.str() +
                             ", which is not supported");
        }
      }
      return refs;
    }
    const json::Array *a = node.getAsArray();
    if (!a)
      failLayer(l, "has an inbound node that is neither a list nor an object");
    for (const json::Value &e : *a) {
      auto r = refOf(e);
      if (!r)
        failLayer(l, "has an inbound node entry " + show(&e) + " that is not [layer, node, tensor]");
      refs.push_back(*r);
      // tf.keras 2: ["query", 0, 0, {"value": ["value", 0, 0], ...}].
      const json::Array *entry = e.getAsArray();
      if (dotAttention && entry->size() > 3)
        if (const json::Object *kwargs = (*entry)[3].getAsObject())
          causalAndScores(*kwargs);
      if (attention && entry->size() > 3)
        if (const json::Object *kwargs = (*entry)[3].getAsObject())
          attentionKwargs(*kwargs, [&](const json::Value &v) {
            auto kr = refOf(v);
            if (!kr)
              failLayer(l,
                        "has a keyword tensor " + show(&v) + " that is not [layer, node, tensor]");
            refs.push_back(*kr);
          });
    }
    return refs;
  }

  std::vector<Ref> endpoints(const json::Object &cfg, llvm::StringRef key) {
    const json::Array *a = cfg.getArray(key);
    if (!a)
      fail("the Functional model has no " + key.str());
    std::vector<Ref> out;
    auto one = [&](const json::Array &e) {
      if (e.size() < 3 || !e[0].getAsString() || !integer(&e[1]) || !integer(&e[2]))
        fail("the Functional model's " + key.str() + " entry is not [layer, node, tensor]");
      out.push_back({e[0].getAsString()->str(), *integer(&e[1]), *integer(&e[2])});
    };
    if (!a->empty() && (*a)[0].getAsString()) { // Keras 3 writes a single one flat
      one(*a);
      return out;
    }
    for (const json::Value &v : *a) {
      auto *e = v.getAsArray();
      if (!e)
        fail("the Functional model's " + key.str() + " entry is not [layer, node, tensor]");
      one(*e);
    }
    return out;
  }

  std::vector<Tensor> buildFunctional(const json::Object &model, const Layer *self,
                                      const std::vector<Layer> &layers, std::vector<Tensor> inputs,
                                      int depth) {
    const json::Object *cfg = model.getObject("config");
    if (!cfg)
      fail("the Functional model has no config");
    std::map<std::string, size_t> byName;
    for (size_t i = 0; i < layers.size(); ++i)
      byName[layers[i].name] = i;
    auto ins = endpoints(*cfg, "input_layers");
    auto outs = endpoints(*cfg, "output_layers");
    std::string who = self ? label(*self) : std::string("the model");
    // A model with several inputs (a text and its metadata) takes one data argument each, in
    // input_layers order: the training binary's --data order.
    if (!self && !options.inputShapes.empty() && options.inputShapes.size() != ins.size())
      fail("--input-shape is given " + times(options.inputShapes.size()) + " but the model has " +
           std::to_string(ins.size()) + " inputs: give it once per input, in input order (" +
           [&] {
             std::string names;
             for (const Ref &ref : ins)
               names += (names.empty() ? "" : ", ") + ref.layer;
             return names;
           }() +
           ")");
    if (self && ins.size() != inputs.size())
      fail(who + " has " + std::to_string(ins.size()) + " inputs but is called with " +
           std::to_string(inputs.size()));

    // Values by (layer, node); the input layers' node 0 is the model's input.
    std::map<std::pair<size_t, int64_t>, std::vector<Tensor>> values;
    for (size_t i = 0; i < ins.size(); ++i) {
      auto it = byName.find(ins[i].layer);
      if (it == byName.end() || layers[it->second].cls != "InputLayer")
        fail(who + ": input_layers names \"" + ins[i].layer + "\", which is not an InputLayer");
      const Layer &il = layers[it->second];
      if (!self) {
        checkInputDtype(il);
        const json::Value *shape = il.config->get("batch_input_shape");
        if (!shape)
          shape = il.config->get("batch_shape");
        if (!shape)
          fail(label(il) + " declares no batch_input_shape / batch_shape");
        inputs.push_back(dataInput(il.name, shape, i, ins.size()));
      }
      values[{it->second, 0}] = {inputs[i]};
    }

    // Every (layer, node) to compute, with the ones it reads; Kahn's order.
    struct Node {
      size_t layer;
      int64_t index;
      std::vector<Ref> refs;
    };
    std::vector<Node> nodes;
    std::map<std::pair<size_t, int64_t>, size_t> nodeId;
    for (size_t i = 0; i < layers.size(); ++i) {
      const Layer &l = layers[i];
      if (l.cls == "InputLayer")
        continue;
      const json::Array *inbound = l.obj->getArray("inbound_nodes");
      if (!inbound)
        failLayer(l, "has no inbound_nodes");
      for (size_t n = 0; n < inbound->size(); ++n) {
        nodeId[{i, int64_t(n)}] = nodes.size();
        nodes.push_back({i, int64_t(n), nodeRefs(l, (*inbound)[n])});
      }
    }
    std::vector<std::vector<size_t>> dependents(nodes.size());
    std::vector<size_t> missing(nodes.size(), 0);
    auto resolve = [&](const Ref &r, const std::string &reader) -> std::pair<size_t, int64_t> {
      auto it = byName.find(r.layer);
      if (it == byName.end())
        fail(reader + " reads layer \"" + r.layer + "\", which the model does not define");
      return {it->second, r.node};
    };
    for (size_t id = 0; id < nodes.size(); ++id)
      for (const Ref &r : nodes[id].refs) {
        auto key = resolve(r, label(layers[nodes[id].layer]));
        if (values.count(key))
          continue;
        auto it = nodeId.find(key);
        if (it == nodeId.end())
          fail(label(layers[nodes[id].layer]) + " reads node " + std::to_string(r.node) +
               " of layer \"" + r.layer + "\", which does not exist");
        dependents[it->second].push_back(id);
        ++missing[id];
      }
    std::vector<size_t> ready;
    for (size_t id = 0; id < nodes.size(); ++id)
      if (!missing[id])
        ready.push_back(id);
    size_t done = 0;
    // Process in file order among the ready nodes, so that op order follows the file.
    std::set<size_t> queue(ready.begin(), ready.end());
    while (!queue.empty()) {
      size_t id = *queue.begin();
      queue.erase(queue.begin());
      ++done;
      const Node &node = nodes[id];
      const Layer &l = layers[node.layer];
      std::vector<Tensor> args;
      for (const Ref &r : node.refs) {
        auto &vals = values[resolve(r, label(l))];
        if (r.tensor < 0 || r.tensor >= int64_t(vals.size()))
          failLayer(l, "reads output " + std::to_string(r.tensor) + " of layer \"" + r.layer +
                           "\", which does not exist");
        args.push_back(vals[size_t(r.tensor)]);
      }
      values[{node.layer, node.index}] = {applyAny(l, args, depth)};
      for (size_t d : dependents[id])
        if (--missing[d] == 0)
          queue.insert(d);
    }
    if (done != nodes.size())
      fail(who + ": the layer graph has a cycle");
    std::vector<Tensor> result;
    for (const Ref &r : outs) {
      auto key = resolve(r, who + "'s output_layers");
      auto it = values.find(key);
      if (it == values.end() || r.tensor < 0 || r.tensor >= int64_t(it->second.size()))
        fail(who + ": output_layers names node " + std::to_string(r.node) + " of \"" + r.layer +
             "\", which is not computed");
      result.push_back(it->second[size_t(r.tensor)]);
    }
    return result;
  }

  //===--------------------------------------------------------------------===//
  // compile_config
  //===--------------------------------------------------------------------===//

  void readTrainingConfig(const json::Object &root) {
    const json::Object *cc = root.getObject("compile_config");
    const json::Value *loss = nullptr, *opt = nullptr;
    if (cc) {
      loss = cc->get("loss");
      opt = cc->get("optimizer");
    } else if (const json::Object *tc = root.getObject("training_config")) {
      loss = tc->get("loss");
      opt = tc->get("optimizer_config");
    }
    if (loss && !loss->getAsNull())
      readLoss(*loss);
    if (opt && !opt->getAsNull())
      readOptimizer(*opt);
  }

  void readLoss(const json::Value &loss) {
    std::string name;
    bool fromLogits = false;
    if (auto s = loss.getAsString()) {
      name = s->str();
    } else if (auto *o = loss.getAsObject()) {
      name = str(o->get("class_name"));
      if (const json::Object *c = o->getObject("config")) {
        fromLogits = c->getBoolean("from_logits").value_or(false);
        // ignore_class (Keras 2.11+): those labels add nothing, the mean is over the others.
        if (const json::Value *ignore = c->get("ignore_class"); ignore && !ignore->getAsNull()) {
          if (!ignore->getAsInteger()) {
            defaults.lossProblem =
                "compile_config's loss has ignore_class " + show(ignore) + ", not an integer";
            return;
          }
          defaults.ignoreClass = *ignore->getAsInteger();
        }
        // label_smoothing (CategoricalCrossentropy, BinaryCrossentropy): smoothed targets.
        if (double eps = c->getNumber("label_smoothing").value_or(0); eps != 0) {
          if (!(eps > 0 && eps < 1)) {
            defaults.lossProblem = "compile_config's loss has label_smoothing " +
                                   show(c->get("label_smoothing")) + ", outside [0, 1)";
            return;
          }
          defaults.labelSmoothing = eps;
        }
        if (name == "function")
          name = str(o->get("config"));
      } else if (name == "function") {
        name = str(o->get("config"));
      }
    } else {
      defaults.lossProblem = "compile_config's loss " + show(&loss) +
                             " is not supported (one loss for one output)";
      return;
    }
    std::string k = toSnakeCase(name);
    if (k == "mean_squared_error" || k == "mse")
      k = "mse";
    if (k != "sparse_categorical_crossentropy" && k != "categorical_crossentropy" &&
        k != "binary_crossentropy" && k != "mse") {
      defaults.lossProblem = "compile_config's loss " + name +
                             " is not supported (sparse_categorical_crossentropy, "
                             "categorical_crossentropy, binary_crossentropy, mse)";
      return;
    }
    defaults.loss = k;
    lossFromLogits = fromLogits && k != "mse";
  }

  void readOptimizer(const json::Value &opt) {
    std::string name;
    const json::Object *c = nullptr;
    if (auto s = opt.getAsString()) {
      name = s->str();
    } else if (auto *o = opt.getAsObject()) {
      name = str(o->get("class_name"));
      c = o->getObject("config");
    }
    std::string k = toSnakeCase(name);
    auto problem = [&](const std::string &why) {
      defaults.optimizerProblem = "compile_config's optimizer " + name + ": " + why;
    };
    double lr = k == "adam" ? 0.001 : 0.01;
    if (c) {
      const json::Value *lv = c->get("learning_rate");
      if (!lv)
        lv = c->get("lr");
      if (lv && lv->getAsNumber())
        lr = *lv->getAsNumber();
      else if (lv && !lv->getAsNull())
        return problem("a learning-rate schedule is not supported; pass --lr");
      for (const char *key : {"clipnorm", "clipvalue", "global_clipnorm"})
        if (const json::Value *v = c->get(key); v && !v->getAsNull())
          return problem(std::string(key) + " is not supported");
      if (c->getNumber("weight_decay").value_or(0) != 0 || c->getNumber("decay").value_or(0) != 0)
        return problem("weight decay is not supported");
      if (c->getBoolean("use_ema").value_or(false))
        return problem("use_ema is not supported");
    }
    if (k == "sgd") {
      double momentum = c ? c->getNumber("momentum").value_or(0) : 0;
      if (c && c->getBoolean("nesterov").value_or(false))
        return problem("nesterov momentum is not supported");
      if (momentum != 0) {
        defaults.optimizer = "momentum";
        defaults.momentum = momentum;
      } else {
        defaults.optimizer = "sgd";
      }
    } else if (k == "adam") {
      if (c && (c->getNumber("beta_1").value_or(0.9) != 0.9 ||
                c->getNumber("beta_2").value_or(0.999) != 0.999))
        return problem("beta_1/beta_2 other than 0.9/0.999 are not supported");
      if (c && c->getBoolean("amsgrad").value_or(false))
        return problem("amsgrad is not supported");
      defaults.optimizer = "adam";
    } else {
      return problem("is not supported (SGD, SGD with momentum, Adam)");
    }
    defaults.lr = lr;
  }

  //===--------------------------------------------------------------------===//

  OwningOpRef<ModuleOp> build(const json::Value &rootValue) {
    const json::Object *root = rootValue.getAsObject();
    if (!root)
      fail("not a Keras model: the JSON is not an object");
    std::string kv = str(root->get("keras_version"));
    if (kv.rfind("1.", 0) == 0)
      fail("Keras 1 format is not supported (keras_version " + kv +
           "); re-save the model with Keras 2 or 3");
    std::string cls = modelClass(*root);
    if (cls.empty())
      fail("not a Keras model: no class_name at the top level");
    if (!isModelClass(cls))
      fail("the top-level object is a " + cls + ", not a Sequential or Functional model");
    readTrainingConfig(*root);
    // Keras 3 differs in a few definitions (hard_sigmoid); its files say so by their version,
    // or by the Keras-3-only __keras_tensor__ inbound nodes and DTypePolicy dtypes.
    keras3 = kv.rfind("3.", 0) == 0 ||
             (kv.empty() && (mentions(rootValue, "__keras_tensor__") ||
                             mentions(rootValue, "DTypePolicy")));
    framesModel = mentions(rootValue, "TimeDistributed");

    if (!options.weightsPath.empty()) {
      std::string error;
      weights = KerasWeightFile::open(options.weightsPath, error);
      if (!weights)
        fail(options.weightsPath + ": " + error);
    }

    OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module->getBody());
    func = b.create<func::FuncOp>(NameLoc::get(b.getStringAttr(path)), "forward",
                                  b.getFunctionType({}, {}));
    Block *entry = func.addEntryBlock();
    b.setInsertionPointToEnd(entry);

    bool trainable = true;
    if (const json::Object *cfg = root->getObject("config"))
      trainable = cfg->getBoolean("trainable").value_or(true);
    auto outs = buildModel(*root, nullptr, {}, "layers", "layers", {}, "", trainable, 0);
    if (outs.size() != 1)
      fail("the model has " + std::to_string(outs.size()) +
           " outputs; graphc trains models with one output");
    Tensor out = outs[0];
    if (out.timeSteps) { // per-frame outputs: (batch, time, features)
      auto os = shapeOf(out.v);
      if (out.image || os.size() != 2)
        fail("the model's output is frames of shape " + shapeText(kerasShape(out)) +
             "; graphc trains per-frame outputs of (batch, time, features) only");
      out.v = b.create<ReshapeOp>(b.getUnknownLoc(),
                                  f32({os[0] / out.timeSteps, out.timeSteps, os[1]}), out.v);
      out.timeSteps = 0;
    }
    // A masked output (an Embedding's mask_zero or a Masking layer, carried through the
    // sequence layers): Keras weighs each position's loss by the mask and divides by the mask's
    // sum. The forward function returns the mask as its loss weights, one per row.
    Value lossWeights = out.mask;
    if (out.padded())
      fail(std::string("the model's output is a ") + paddingLayer(out) +
           " output, which graphc folds away");
    if (out.hasFlat())
      fail("the model's output is a flattened feature map, which graphc keeps in (channels, "
           "height, width) order, not Keras's");
    Value result = out.v;
    if (out.seq) { // a 1-D feature map leaves as [N, C, L], channels first like an image
      auto s = shapeOf(result);
      result = b.create<ReshapeOp>(b.getUnknownLoc(), f32({s[0], s[1], s[3]}), result);
    }
    // compile_config's loss with from_logits = true: graphc's forward returns probabilities,
    // and the loss folds the activation back into a stable log-space loss.
    if (options.usesCompileLoss && lossFromLogits && defaults.loss) {
      Location loc = NameLoc::get(b.getStringAttr("from_logits"));
      if (*defaults.loss == "binary_crossentropy")
        result = b.create<SigmoidOp>(loc, result.getType(), result);
      else
        result = b.create<SoftmaxOp>(
            loc, result.getType(), result,
            b.getI64IntegerAttr(out.image ? 1 : shapeOf(result).size() - 1), UnitAttr());
    }
    if (lossWeights) {
      auto rows = shapeOf(result);
      rows.pop_back();
      if (shapeOf(lossWeights) != rows)
        fail("the model's output " + shapeText(kerasShape(out)) +
             " is masked per step, but graphc weighs the loss's rows (the output without its "
             "last axis) only; remove the mask (mask_zero, Masking) or pool the sequence");
      b.create<func::ReturnOp>(b.getUnknownLoc(), ValueRange{result, lossWeights});
      func.setType(
          b.getFunctionType(func.getArgumentTypes(), {result.getType(), lossWeights.getType()}));
      func.setResultAttr(1, kKindAttr, b.getStringAttr("loss_weights"));
    } else {
      b.create<func::ReturnOp>(b.getUnknownLoc(), result);
      func.setType(b.getFunctionType(func.getArgumentTypes(), {result.getType()}));
    }
    // The data input first, as the ONNX importer has it (parameters were appended in order).
    if (failed(mlir::verify(*module)))
      fail("the imported graph does not verify (see the diagnostic above)");
    return module;
  }

  /// Whether a class_name anywhere in v is `cls`.
  static bool mentions(const json::Value &v, llvm::StringRef cls) {
    if (const json::Object *o = v.getAsObject()) {
      if (auto name = o->getString("class_name"); name && *name == cls)
        return true;
      for (const auto &kv : *o)
        if (mentions(kv.second, cls))
          return true;
    } else if (const json::Array *a = v.getAsArray()) {
      for (const json::Value &e : *a)
        if (mentions(e, cls))
          return true;
    }
    return false;
  }

  MLIRContext &ctx;
  OpBuilder b;
  bool keras3 = false;
  // The model has TimeDistributed layers: a rank-5 input is frames, not a volume.
  bool framesModel = false;
  std::string path;
  const KerasImportOptions &options;
  KerasTrainingDefaults &defaults;
  std::unique_ptr<KerasWeightFile> weights;
  func::FuncOp func;
  Value stepArg;
  int64_t dropoutOps = 0;
  // MultiHeadAttention layers (scope + name) called with use_causal_mask = true, and those
  // whose calls said either way (a layer called both ways is refused).
  std::set<std::string> causalAttention, causalCallSeen;
  // Those called with an attention_mask tensor (their fourth input), and those called at all.
  std::set<std::string> maskedAttention, maskCallSeen;
  bool lossFromLogits = false;
  std::map<std::string, Value> params;
  llvm::DenseSet<Value> trainedArgs; // trainable parameters (readsTrained)
  std::set<std::string> usedNames, bnUsed;
  InitialValueCache ownInitialValues; // without the driver's cache: this import's own
  std::map<std::string, std::string> denseOrder;
};

} // namespace

const char *graphc::kerasSupportedLayers() { return kSupported; }

OwningOpRef<ModuleOp> graphc::importKerasJson(const std::string &text, const std::string &path,
                                              MLIRContext &context,
                                              const KerasImportOptions &options,
                                              KerasTrainingDefaults &defaults,
                                              std::string &error) {
  if (tooDeep(text, 256)) {
    error = path + ": not a valid Keras model JSON (nested more than 256 levels deep)";
    return nullptr;
  }
  llvm::Expected<json::Value> root = json::parse(text);
  if (!root) {
    std::string why = llvm::toString(root.takeError());
    error = path + ": not valid JSON (" + why + "; the file may be truncated)";
    return nullptr;
  }
  context.loadDialect<GraphDialect, func::FuncDialect>();
  return Importer(context, path, options, defaults).run(*root, error);
}

OwningOpRef<ModuleOp> graphc::importKerasFile(const std::string &path, MLIRContext &context,
                                              const KerasImportOptions &options,
                                              KerasTrainingDefaults &defaults,
                                              std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = path + ": cannot open the file";
    return nullptr;
  }
  return importKerasJson((*buffer)->getBuffer().str(), path, context, options, defaults, error);
}
