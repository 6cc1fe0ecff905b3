// ONNX importer: protobuf graph -> graph dialect forward function.
//
// One pass over the nodes in file order (ONNX requires topological order). Values are tracked
// by name: SSA values for activations, and host-side constant tensors (initializers and
// Constant nodes) for weights and shape operands. An initializer that feeds a layer's weight or
// bias becomes a function argument (a parameter, with its initial value attached); one that
// feeds a shape operand (Reshape) is read at import time. Anything outside the supported op
// set stops the import with a line naming the node.
#include "importers/onnx/OnnxImporter.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "google/protobuf/unknown_field_set.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "onnx/onnx_pb.h"
#include "llvm/Support/MemoryBuffer.h"

#include "dialects/graph/GraphOps.h"
#include "importers/common/ImageOps.h"
#include "importers/common/InitialValueCache.h"
#include "importers/common/RecurrentUnroll.h"
#include "importers/onnx/BatchLocation.h"
#include "importers/onnx/ParameterInputs.h"

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;
using namespace graphc::onnx_import;

namespace graphc::onnx_import {

/// A constant tensor read from an initializer or a Constant node.
struct HostTensor {
  std::vector<int64_t> dims;
  int32_t dataType = 0;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<bool> bools;
};

} // namespace graphc::onnx_import

using graphc::onnx_import::HostTensor;

/// What importing the same file again reuses (OnnxImportCache).
struct graphc::OnnxImportCache::State {
  // The options the initializers depend on: the file, and how parameter inputs are drawn.
  std::string path, dataInput;
  uint64_t seed = 0;
  int64_t maxParameterInputElements = 0;
  onnx::ModelProto model; // the initializers' data cleared once read into `initializerTensors`
  bool initializersRead = false;
  std::map<std::string, HostTensor> initializerTensors; // initializers and parameter inputs
  int initialisedParameters = 0;
  std::vector<std::string> initialisationRules;
  graphc::InitialValueCache initialValues; // the parameters' attributes, made once

  bool sameFile(const std::string &p, const OnnxImportOptions &o) const {
    return path == p && dataInput == o.dataInput && seed == o.seed &&
           maxParameterInputElements == o.maxParameterInputElements;
  }
};

graphc::OnnxImportCache::OnnxImportCache() = default;
graphc::OnnxImportCache::~OnnxImportCache() = default;

namespace {

/// The default domain's opsets graphc reads. 18 to 28 changed the ops graphc imports only by
/// what the importer handles (Reduce* and Pad take axes as inputs, Split's num_outputs,
/// Resize's axes, antialias and keep_aspect_ratio_policy, AveragePool's dilations) or by
/// element types graphc does not train in (float8, int4, float4, bfloat16 for more ops), and
/// added GroupNormalization, Mish, Gelu, RMSNormalization, Swish, Attention, RotaryEmbedding
/// and SwiGLU, which it imports (ONNX's docs/Changelog.md). A later opset may change an op's
/// meaning, so it is refused.
constexpr int64_t kMinOpset = 11, kMaxOpset = 28;

/// The most nodes a graph may have once its local functions are inlined.
constexpr int kMaxInlinedNodes = 1 << 20;

constexpr const char *kSupportedOps =
    "Add, Attention, AveragePool, BatchNormalization, Cast, Celu, Clip, Concat, Constant, "
    "ConstantOfShape (of constant shapes), Conv, ConvTranspose, Cos, Sin, Range (of constants), "
    "CumSum, Einsum, DepthToSpace, Div, Dropout, Elu, Equal (of constants), Exp, Expand, Flatten, "
    "Gather, "
    "Gelu, Gemm, GlobalAveragePool, GlobalMaxPool, GroupNormalization, GRU, HardSigmoid, "
    "HardSwish, Identity, InstanceNormalization, LayerNormalization, LeakyRelu, Log, LogSoftmax, "
    "LSTM, MatMul, MaxPool, Mean, Mish, Mul, Neg, Pad, Pow (to a constant exponent), PRelu, "
    "Reciprocal, ReduceL2, ReduceLogSumExp, ReduceMax, ReduceMean, ReduceMin, ReduceSum, "
    "ReduceSumSquare, Relu, Reshape, Resize, RMSNormalization, RotaryEmbedding, Selu, Shape, "
    "RandomNormal, RandomNormalLike, RandomUniform, RandomUniformLike, "
    "Sigmoid, Slice, Softmax, Softplus, Softsign, SpaceToDepth, Split, Sqrt, Squeeze, Sub, Sum, "
    "Swish, SwiGLU, Tanh, Tile, Transpose, Trilu (of constants), Unsqueeze, Where (of constants; "
    "of "
    "attention scores as a masked_fill; of a computed condition), Abs, Max and Min (of two "
    "tensors), Not, Equal, Greater, Less, GreaterOrEqual and LessOrEqual (of a computed tensor "
    "and a scalar) (Erf within a GELU)";

struct ImportError {
  std::string message;
};

/// Host constants by name: this import's own (Constant nodes, folded shape arithmetic) over the
/// file's initializers, which are shared with later imports of the file and never copied.
class ConstantTable {
public:
  explicit ConstantTable(const std::map<std::string, HostTensor> &initializers)
      : initializers(initializers) {}
  const HostTensor *lookup(const std::string &name) const {
    if (auto it = own.find(name); it != own.end())
      return &it->second;
    if (auto it = initializers.find(name); it != initializers.end())
      return &it->second;
    return nullptr;
  }
  bool count(const std::string &name) const { return lookup(name) != nullptr; }
  /// A constant known to exist.
  const HostTensor &at(const std::string &name) const { return *lookup(name); }
  /// This import's constant `name`, to be written.
  HostTensor &operator[](const std::string &name) { return own[name]; }

private:
  const std::map<std::string, HostTensor> &initializers;
  std::map<std::string, HostTensor> own;
};

/// How a Reshape's baked shape was rebased: its shape at the exported batch and the batch's
/// location in it (reshapedDims), learned by an import at batch 2 for one at batch 1.
struct ReshapeRebase {
  std::vector<int64_t> baked;
  BatchLocation location;
};

class Importer {
public:
  Importer(MLIRContext &ctx, std::string path, const OnnxImportOptions &options,
           OnnxImportCache::State &file)
      : ctx(ctx), b(&ctx), path(std::move(path)), options(options), file(file),
        constants(file.initializerTensors) {}

  OwningOpRef<ModuleOp> run(const onnx::ModelProto &model, std::string &error) {
    try {
      return build(model);
    } catch (const ImportError &e) {
      error = path + ": " + e.message;
      return nullptr;
    }
  }

private:
  [[noreturn]] void fail(const std::string &message) { throw ImportError{message}; }

  std::string nodeLabel(const onnx::NodeProto &node) {
    return "node \"" + (node.name().empty() ? node.output_size() ? node.output(0) : "?" : node.name()) +
           "\" (" + node.op_type() + ")";
  }

  /// A tensor's values. narrowDouble: a float64 tensor is read as float32 (the constants that
  /// torch writes as doubles and casts to float32 at once, such as F.normalize's epsilon);
  /// a float64 weight is refused instead.
  HostTensor readTensor(const onnx::TensorProto &t, bool narrowDouble = false) {
    HostTensor h;
    h.dims.assign(t.dims().begin(), t.dims().end());
    h.dataType = t.data_type();
    int64_t count = 1;
    for (int64_t d : h.dims) {
      if (d < 0)
        fail("tensor \"" + t.name() + "\" has a negative dimension");
      // 2^40 elements is far beyond any weight graphc can hold; it also keeps count from
      // overflowing.
      if (__builtin_mul_overflow(count, d, &count) || count > (int64_t{1} << 40))
        fail("tensor \"" + t.name() + "\" has an impossibly large shape");
    }
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      fail("tensor \"" + t.name() + "\" uses external data, which is not supported; re-export "
           "with the weights inside the .onnx file");
    const std::string &raw = t.raw_data();
    switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (!raw.empty()) {
        if (raw.size() != size_t(count) * 4)
          fail("tensor \"" + t.name() + "\" holds " + std::to_string(raw.size()) +
               " bytes but its shape needs " + std::to_string(count * 4) +
               " (the file may be truncated)");
        h.floats.resize(count);
        std::memcpy(h.floats.data(), raw.data(), raw.size());
      } else {
        if (t.float_data_size() != count)
          fail("tensor \"" + t.name() + "\" has " + std::to_string(t.float_data_size()) +
               " values but its shape needs " + std::to_string(count));
        h.floats.assign(t.float_data().begin(), t.float_data().end());
      }
      break;
    case onnx::TensorProto::INT64:
      if (!raw.empty()) {
        if (raw.size() != size_t(count) * 8)
          fail("tensor \"" + t.name() + "\" holds " + std::to_string(raw.size()) +
               " bytes but its shape needs " + std::to_string(count * 8));
        h.ints.resize(count);
        std::memcpy(h.ints.data(), raw.data(), raw.size());
      } else {
        if (t.int64_data_size() != count)
          fail("tensor \"" + t.name() + "\" has " + std::to_string(t.int64_data_size()) +
               " values but its shape needs " + std::to_string(count));
        h.ints.assign(t.int64_data().begin(), t.int64_data().end());
      }
      break;
    case onnx::TensorProto::INT32: // (torch exports CumSum's axis as int32): widened to int64
      h.dataType = onnx::TensorProto::INT64;
      if (!raw.empty()) {
        if (raw.size() != size_t(count) * 4)
          fail("tensor \"" + t.name() + "\" holds " + std::to_string(raw.size()) +
               " bytes but its shape needs " + std::to_string(count * 4));
        for (size_t i = 0; i < raw.size(); i += 4) {
          int32_t v;
          std::memcpy(&v, raw.data() + i, 4);
          h.ints.push_back(v);
        }
      } else {
        if (t.int32_data_size() != count)
          fail("tensor \"" + t.name() + "\" has " + std::to_string(t.int32_data_size()) +
               " values but its shape needs " + std::to_string(count));
        h.ints.assign(t.int32_data().begin(), t.int32_data().end());
      }
      break;
    case onnx::TensorProto::DOUBLE:
      if (!narrowDouble)
        fail("tensor \"" + t.name() +
             "\" has ONNX data type 11 (float64); only float32 weights "
             "are supported: export the model in float32");
      h.dataType = onnx::TensorProto::FLOAT;
      if (!raw.empty()) {
        if (raw.size() != size_t(count) * 8)
          fail("tensor \"" + t.name() + "\" holds " + std::to_string(raw.size()) +
               " bytes but its shape needs " + std::to_string(count * 8));
        for (size_t i = 0; i < raw.size(); i += 8) {
          double v;
          std::memcpy(&v, raw.data() + i, 8);
          h.floats.push_back(float(v));
        }
      } else {
        if (t.double_data_size() != count)
          fail("tensor \"" + t.name() + "\" has " + std::to_string(t.double_data_size()) +
               " values but its shape needs " + std::to_string(count));
        for (double v : t.double_data())
          h.floats.push_back(float(v));
      }
      break;
    case onnx::TensorProto::BOOL:
      if (!raw.empty()) {
        if (raw.size() != size_t(count))
          fail("tensor \"" + t.name() + "\" holds " + std::to_string(raw.size()) +
               " bytes but its shape needs " + std::to_string(count));
        for (char c : raw)
          h.bools.push_back(c != 0);
      } else {
        if (t.int32_data_size() != count)
          fail("tensor \"" + t.name() + "\" has " + std::to_string(t.int32_data_size()) +
               " values but its shape needs " + std::to_string(count));
        for (int32_t v : t.int32_data())
          h.bools.push_back(v != 0);
      }
      break;
    default:
      fail("tensor \"" + t.name() + "\" has ONNX data type " + std::to_string(t.data_type()) +
           "; only float32 weights and int64 (or int32) shapes are supported");
    }
    return h;
  }

  const onnx::AttributeProto *findAttr(const onnx::NodeProto &node, const std::string &name) {
    for (const auto &a : node.attribute())
      if (a.name() == name)
        return &a;
    return nullptr;
  }
  int64_t intAttr(const onnx::NodeProto &node, const std::string &name, int64_t dflt) {
    auto *a = findAttr(node, name);
    return a ? a->i() : dflt;
  }
  float floatAttr(const onnx::NodeProto &node, const std::string &name, float dflt) {
    auto *a = findAttr(node, name);
    return a ? a->f() : dflt;
  }
  std::vector<int64_t> intsAttr(const onnx::NodeProto &node, const std::string &name,
                                std::vector<int64_t> dflt) {
    auto *a = findAttr(node, name);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : dflt;
  }
  void refuseAttr(const onnx::NodeProto &node, const std::string &name, const std::string &why) {
    fail(nodeLabel(node) + ": attribute " + name + " " + why);
  }
  /// The elements of a constant folded at import with dimensions `dims` (Expand,
  /// ConstantOfShape); a negative dimension, or more than 2^26 elements (256 MiB of float32:
  /// folding copies a constant a few times, and a crafted file must not take gigabytes), fails
  /// with `tooLarge`.
  int64_t foldedElementCount(const onnx::NodeProto &node, const std::vector<int64_t> &dims,
                             const std::string &tooLarge) {
    int64_t count = 1;
    for (int64_t d : dims)
      if (d < 0 || __builtin_mul_overflow(count, d, &count) || count > (int64_t{1} << 26))
        fail(nodeLabel(node) + ": " + tooLarge);
    return count;
  }
  /// Mul of two computed tensors: elementwise when their shapes agree (SiLU as x * sigmoid(x),
  /// hardswish as x * hardsigmoid(x)); a tensor times a gate of the same rank that agrees
  /// with it up to some axis k and is 1 after (squeeze-and-excitation's [N, C, 1, 1] on
  /// [N, C, H, W], a per-row [B, S, 1] on [B, S, D]), either order, as a batch_matmul of the
  /// [P, R, 1] and [P, 1, 1] views (P the product of the dimensions before k, R of those
  /// after), whose gradients are the products and the sums over each gate's elements, with
  /// no copy of the gate; other broadcasts by broadcastBinary.
  Value productOfComputed(const onnx::NodeProto &node, Location loc) {
    Value lhs = valueOf(node, 0), rhs = valueOf(node, 1);
    if (lhs.getType() == rhs.getType())
      return b.create<MulOp>(loc, lhs.getType(), lhs, rhs);
    auto ls = shapeOf(lhs), rs = shapeOf(rhs);
    // The axis k from which `gate` is 1 while agreeing with `full` before it (0: none).
    auto gateAxis = [](const std::vector<int64_t> &full, const std::vector<int64_t> &gate) {
      if (full.size() != gate.size())
        return size_t{0};
      size_t k = 0;
      while (k < full.size() && gate[k] == full[k])
        ++k;
      if (k == full.size() ||
          !std::all_of(gate.begin() + k, gate.end(), [](int64_t d) { return d == 1; }))
        return size_t{0};
      return k;
    };
    size_t k = gateAxis(ls, rs);
    if (k == 0) {
      k = gateAxis(rs, ls);
      if (k == 0)
        return broadcastBinary(node, loc);
      std::swap(lhs, rhs), std::swap(ls, rs);
    }
    int64_t rows = std::accumulate(ls.begin(), ls.begin() + k, int64_t{1}, std::multiplies<>());
    int64_t inner = std::accumulate(ls.begin() + k, ls.end(), int64_t{1}, std::multiplies<>());
    Value full = b.create<ReshapeOp>(loc, f32({rows, inner, 1}), lhs);
    Value gate = b.create<ReshapeOp>(loc, f32({rows, 1, 1}), rhs);
    Value product =
        b.create<BatchMatmulOp>(loc, f32({rows, inner, 1}), full, gate, UnitAttr(), UnitAttr());
    return b.create<ReshapeOp>(loc, f32(ls), product);
  }

  /// The mean of `x` over the reduction node's axes (its `axes` attribute, or its second input
  /// as ReduceSum has it from opset 13 and every reduction from opset 18; none: all of them,
  /// unless noop_with_empty_axes), which must be consecutive. Over [first, last] of
  /// [pre, n, post] (n the product of those extents) it is an avg_pool2d with an [n, 1] window
  /// on the [pre, 1, n, post] view: PyTorch's x.mean(dim=1) over a sequence, x.mean([2, 3]),
  /// the global average pooling of ShuffleNet, MnasNet and squeeze-and-excitation blocks, and
  /// a norm's sum over the last axis. Returns the mean (keepdims as the node says) and n;
  /// with `maximum`, the maximum instead (a max_pool2d with that window: its backward routes
  /// each gradient to the window's first largest element). keepDims: the reduced axes kept as
  /// 1 whatever the node's keepdims (the node's own output shape is returned too).
  struct Reduction {
    Value value;                   // the mean (or maximum), keepdims as asked
    int64_t count;                 // the elements each output reduces
    std::vector<int64_t> nodeDims; // the node's output shape (its own keepdims)
  };
  Reduction reduceOverAxes(const onnx::NodeProto &node, Location loc, Value x, bool maximum = false,
                           bool keepDims = false) {
    auto xs = shapeOf(x);
    int64_t rank = xs.size();
    std::optional<std::vector<int64_t>> named = reductionAxes(node);
    if (!named)
      fail(nodeLabel(node) + ": the axes input must be an int64 constant");
    std::vector<int64_t> axes = *named;
    const std::string listed = "= " + listText(axes) + " ";
    if (axes.empty()) {
      if (intAttr(node, "noop_with_empty_axes", 0) != 0)
        return {x, 1, xs};
      for (int64_t d = 0; d < rank; ++d)
        axes.push_back(d);
    }
    for (int64_t &a : axes) {
      if (a < -rank || a >= rank)
        refuseAttr(node, "axes", listed + "is out of range for rank " + std::to_string(rank));
      a = a < 0 ? a + rank : a;
    }
    std::sort(axes.begin(), axes.end());
    for (size_t i = 1; i < axes.size(); ++i)
      if (axes[i] != axes[i - 1] + 1)
        refuseAttr(node, "axes",
                   listed + "must name consecutive axes (a repeated or "
                            "separated axis is not supported)");
    int64_t first = axes.front(), last = axes.back();
    int64_t pre = std::accumulate(xs.begin(), xs.begin() + first, int64_t{1}, std::multiplies<>());
    int64_t post =
        std::accumulate(xs.begin() + last + 1, xs.end(), int64_t{1}, std::multiplies<>());
    int64_t n =
        std::accumulate(xs.begin() + first, xs.begin() + last + 1, int64_t{1}, std::multiplies<>());
    Value view = b.create<ReshapeOp>(loc, f32({pre, 1, n, post}), x);
    Value pooled =
        maximum
            ? b.create<MaxPool2dOp>(loc, f32({pre, 1, 1, post}), view,
                                    b.getDenseI64ArrayAttr({n, 1}), b.getDenseI64ArrayAttr({1, 1}),
                                    b.getDenseI64ArrayAttr({0, 0, 0, 0}))
                  .getResult()
            : b.create<AvgPool2dOp>(loc, f32({pre, 1, 1, post}), view,
                                    b.getDenseI64ArrayAttr({n, 1}), b.getDenseI64ArrayAttr({1, 1}),
                                    b.getDenseI64ArrayAttr({0, 0, 0, 0}), UnitAttr())
                  .getResult();
    std::vector<int64_t> kept, nodeDims;
    const bool keep = intAttr(node, "keepdims", 1) != 0;
    for (int64_t d = 0; d < rank; ++d) {
      const bool reduced = d >= first && d <= last;
      kept.push_back(reduced ? 1 : xs[d]);
      if (!reduced || keep)
        nodeDims.push_back(reduced ? 1 : xs[d]);
    }
    return {b.create<ReshapeOp>(loc, f32(keepDims ? kept : nodeDims), pooled), n, nodeDims};
  }

  /// `node` (a Mul or Div) reading, in place of an operand that an Expand of a computed tensor
  /// produced to the other operand's shape (F.normalize's x / norm.expand_as(x)), the tensor
  /// before the Expand, which the product broadcasts itself: as a trailing gate without copies
  /// (productOfComputed), where the Expand would have copied it to the full shape and the
  /// reciprocal and the gradients would have been of that size. The Expand's ops, left without
  /// readers, are erased by the canonicalizer.
  onnx::NodeProto withUnexpandedOperands(const onnx::NodeProto &node) {
    onnx::NodeProto rewritten = node;
    for (int index : {0, 1}) {
      auto p = producer.find(node.input(index));
      if (p == producer.end() || !values.count(node.input(1 - index)))
        continue;
      const onnx::NodeProto &expand = graph->node(p->second);
      if (expand.op_type() != "Expand" || expand.input_size() < 1 ||
          !values.count(expand.input(0)) || !values.count(node.input(index)))
        continue;
      auto full = shapeOf(values.at(node.input(1 - index)));
      auto before = shapeOf(values.at(expand.input(0)));
      if (shapeOf(values.at(node.input(index))) != full || before.size() > full.size())
        continue;
      bool broadcasts = true; // numpy's rule, right-aligned: each extent 1 or the full one
      for (size_t i = 0; i < before.size(); ++i) {
        int64_t f = full[full.size() - before.size() + i];
        broadcasts &= before[i] == 1 || before[i] == f;
      }
      if (broadcasts) {
        // One operand only: the other keeps the full shape, and so the product's result does
        // (two expanded [B, 1] would multiply to [B, 1]).
        rewritten.set_input(index, expand.input(0));
        break;
      }
    }
    return rewritten;
  }

  /// Where(cond, x, y) with a computed condition (a mask of 0 and 1, as graphc holds bools:
  /// masked_fill(pad[:, None, None, :], -inf) of attention scores with pad from the token ids):
  /// x * cond + y * (1 - cond), each branch a computed tensor, a float32 initializer or a
  /// scalar constant (a constant's product a graph.scale of the mask), numpy broadcasting as
  /// Mul's and Add's. An infinite constant becomes the largest finite float of its sign, so that
  /// 0 * inf cannot make a NaN: a Softmax turns -3.4e38 into 0 as it does -inf (a row masked
  /// whole is uniform where PyTorch's is NaN). The gradient of a branch is its mask, as
  /// PyTorch's.
  Value computedSelect(const onnx::NodeProto &node, Location loc) {
    Value cond = valueOf(node, 0);
    const std::string base = node.output(0) + "@select";
    values[base + "-true"] = cond;
    values[base + "-false"] = oneMinus(loc, cond);
    auto term = [&](int branch, const std::string &weight) -> std::string {
      const std::string name = base + "-term" + std::to_string(branch);
      const std::string &input = node.input(branch);
      if (!values.count(input) && !computedOrFloatInitializer(node, branch)) {
        const HostTensor &c = constantOf(node, branch);
        if (c.dataType != onnx::TensorProto::FLOAT || c.floats.size() != 1)
          fail(nodeLabel(node) + ": Where's branches must be computed tensors, float32 "
                                 "initializers or float32 scalar constants");
        const float v = std::clamp(c.floats[0], -std::numeric_limits<float>::max(),
                                   std::numeric_limits<float>::max());
        Value w = values.at(weight);
        values[name] = b.create<ScaleOp>(loc, w.getType(), w, b.getF32FloatAttr(v));
        return name;
      }
      onnx::NodeProto product = derivedNode(node, "Mul", input, weight, name);
      values[name] =
          values.count(input) ? productOfComputed(product, loc) : broadcastBinary(product, loc);
      return name;
    };
    const std::string whenTrue = term(1, base + "-true"), whenFalse = term(2, base + "-false");
    return broadcastBinary(derivedNode(node, "Add", whenTrue, whenFalse, node.output(0)), loc);
  }

  /// 1 - x: a mask's complement (Not, a bool cast, Where's other branch).
  Value oneMinus(Location loc, Value x) {
    return b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(-1.f), b.getF32FloatAttr(1.f));
  }

  /// A binary node `op`(lhs, rhs) -> output that graphc builds to reuse Mul's, Add's or Sub's
  /// import on names it defined itself, named after `origin` for messages.
  static onnx::NodeProto derivedNode(const onnx::NodeProto &origin, const std::string &op,
                                     const std::string &lhs, const std::string &rhs,
                                     const std::string &output) {
    onnx::NodeProto node;
    node.set_op_type(op);
    node.set_name(origin.name());
    node.add_input(lhs);
    node.add_input(rhs);
    node.add_output(output);
    return node;
  }

  /// A mean over `count` elements times `count`: their sum.
  Value sumFromMean(Location loc, Value mean, int64_t count) {
    return count == 1
               ? mean
               : b.create<ScaleOp>(loc, mean.getType(), mean, b.getF32FloatAttr(float(count)))
                     .getResult();
  }

  /// graph.activation `kind` of `x`, `alpha` its parameter (pow's exponent, equal's value).
  Value elementwise(Location loc, ActivationKind kind, Value x, float alpha = 1.0f) {
    return b.create<ActivationOp>(loc, x.getType(), ActivationKindAttr::get(b.getContext(), kind),
                                  x, b.getF32FloatAttr(alpha));
  }

  /// Div whose divisor is computed, a trained initializer or a constant table (a hand-written
  /// normalization x / norm, x / (1 + exp(-x)), a learned temperature, (x - mean) / std with
  /// graph-computed statistics), as the product with the divisor's reciprocal: a graph.activation
  /// pow with exponent -1 (a table's reciprocal folded at import, so it stays a frozen table).
  /// The product then takes the Mul paths (same shapes, a trailing gate without copies, numpy
  /// broadcasting), and a scalar constant numerator c a graph.scale by c. Returns false when
  /// the divisor is a scalar constant, which the Mul/Div-by-a-scalar path takes.
  bool importDivision(const onnx::NodeProto &original, Location loc) {
    const onnx::NodeProto node = withUnexpandedOperands(original);
    const std::string &numerator = node.input(0), &divisor = node.input(1);
    const std::string reciprocalName = node.output(0) + "@reciprocal";
    if (isConstantTable(divisor)) {
      HostTensor reciprocal = *constants.lookup(divisor);
      for (float &v : reciprocal.floats)
        v = 1.0f / v;
      constants[reciprocalName] = std::move(reciprocal);
    } else if (values.count(divisor) || computedOrFloatInitializer(node, 1)) {
      // (A scalar initializer, such as a folded sqrt(head size), stays a constant scale.)
      Value y = computedOrParameter(node, 1);
      values[reciprocalName] = elementwise(loc, ActivationKind::pow, y, -1.0f);
    } else {
      return false;
    }
    if (!values.count(numerator) && !computedOrFloatInitializer(node, 0)) {
      const HostTensor &c = constantOf(node, 0);
      if (c.dataType != onnx::TensorProto::FLOAT || c.floats.size() != 1 ||
          !values.count(reciprocalName))
        fail(nodeLabel(node) + ": a constant numerator must be a float32 scalar");
      Value r = values.at(reciprocalName);
      define(node, c.floats[0] == 1.0f
                       ? r
                       : b.create<ScaleOp>(loc, r.getType(), r, b.getF32FloatAttr(c.floats[0])));
      return true;
    }
    onnx::NodeProto product = node;
    product.set_op_type("Mul");
    product.set_input(1, reciprocalName);
    if (values.count(numerator) && values.count(reciprocalName))
      define(node, productOfComputed(product, loc));
    else if (computedOrFloatInitializer(product, 0) && computedOrFloatInitializer(product, 1))
      define(node, broadcastBinary(product, loc));
    else
      fail(nodeLabel(node) + ": Div is supported of a computed tensor by a computed tensor, a "
                             "float32 initializer or constant, and of a scalar constant by a "
                             "computed tensor");
    return true;
  }

  /// "[a, b, c]", for the messages that name an attribute's values.
  static std::string listText(const std::vector<int64_t> &values) {
    std::string text;
    for (int64_t x : values)
      text += (text.empty() ? "" : ", ") + std::to_string(x);
    return "[" + text + "]";
  }

  /// A convolution's or pooling's window attributes (2 strides, 4 pads, 2 dilations, and a
  /// pooling's kernel) are refused by name when out of range, before the output size they would
  /// give is taken for "does not fit its input".
  void refuseBadWindow(const onnx::NodeProto &node, const std::vector<int64_t> &strides,
                       const std::vector<int64_t> &pads, const std::vector<int64_t> &dilations,
                       const std::vector<int64_t> &kernel = {1, 1}) {
    if (llvm::any_of(strides, [](int64_t s) { return s < 1; }))
      refuseAttr(node, "strides", "= " + listText(strides) + " must be positive");
    if (llvm::any_of(dilations, [](int64_t d) { return d < 1; }))
      refuseAttr(node, "dilations", "= " + listText(dilations) + " must be positive");
    if (llvm::any_of(kernel, [](int64_t k) { return k < 1; }))
      refuseAttr(node, "kernel_shape", "= " + listText(kernel) + " must be positive");
    if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
      refuseAttr(node, "pads", "= " + listText(pads) + " must not be negative");
  }
  /// The `axis` attribute (default 0) for an input of rank `rank`, negative counted from the
  /// end; out of range is refused.
  int64_t axisAttr(const onnx::NodeProto &node, int64_t rank) {
    int64_t axis = intAttr(node, "axis", 0);
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      refuseAttr(node, "axis", "is out of range");
    return axis;
  }

  Value valueOf(const onnx::NodeProto &node, int index) {
    if (index >= node.input_size() || node.input(index).empty())
      fail(nodeLabel(node) + " is missing input " + std::to_string(index));
    const std::string &name = node.input(index);
    if (auto it = values.find(name); it != values.end())
      return it->second;
    if (constants.count(name))
      fail(nodeLabel(node) + ": input \"" + name +
           "\" is a constant where graphc needs a computed tensor");
    fail(nodeLabel(node) + " reads \"" + name +
         "\", which no earlier node or graph input defines (the file may be truncated)");
  }

  const HostTensor &constantOf(const onnx::NodeProto &node, int index) {
    if (index >= node.input_size())
      fail(nodeLabel(node) + " is missing input " + std::to_string(index));
    const HostTensor *known = constants.lookup(node.input(index));
    if (!known)
      fail(nodeLabel(node) + ": input \"" + node.input(index) +
           "\" must be an initializer or a constant");
    return *known;
  }

  /// The parameter argument for initializer input `index` of `node`, created on first use.
  Value parameterOf(const onnx::NodeProto &node, int index) {
    if (index >= node.input_size() || node.input(index).empty())
      fail(nodeLabel(node) + " is missing input " + std::to_string(index));
    return parameterNamed(node, node.input(index));
  }
  /// The parameter argument for initializer `name`, read by `node`.
  Value parameterNamed(const onnx::NodeProto &node, const std::string &name) {
    if (auto it = values.find(name); it != values.end())
      return it->second;
    if (auto view = initializerViews.find(name); view != initializerViews.end()) {
      Value parameter = parameterNamed(node, view->second);
      Value reshaped = b.create<ReshapeOp>(NameLoc::get(b.getStringAttr(name)),
                                           f32(constants.at(name).dims), parameter);
      values[name] = reshaped;
      return reshaped;
    }
    const HostTensor *found = constants.lookup(name);
    if (!found)
      fail(nodeLabel(node) + ": input \"" + name + "\" must be an initializer or a constant");
    const HostTensor &h = *found;
    if (h.dataType != onnx::TensorProto::FLOAT)
      fail(nodeLabel(node) + ": parameter \"" + name + "\" must be float32");
    if (h.floats.empty())
      fail(nodeLabel(node) + ": parameter \"" + name + "\" has no elements");
    auto type = RankedTensorType::get(h.dims, b.getF32Type());
    DenseResourceElementsAttr init = initialValue(name, h);
    SmallVector<NamedAttribute> attrs = {
        b.getNamedAttr(kKindAttr, b.getStringAttr("parameter")),
        b.getNamedAttr(kNameAttr, b.getStringAttr(name)),
        b.getNamedAttr(kInitAttr, init)};
    unsigned argIndex = func.getNumArguments();
    func.insertArgument(argIndex, type, b.getDictionaryAttr(attrs), b.getUnknownLoc());
    Value arg = func.getArgument(argIndex);
    values[name] = arg;
    return arg;
  }

  /// Input `index` of `node` as a value: a computed tensor, or a float32 initializer as a
  /// trained parameter (the exporter slices and concatenates recurrent weights into ONNX's gate
  /// order in the graph when it does not fold constants).
  Value computedOrParameter(const onnx::NodeProto &node, int index) {
    if (index < node.input_size() && values.count(node.input(index)) == 0 &&
        (initializers.count(node.input(index)) || initializerViews.count(node.input(index))) &&
        constants.at(node.input(index)).dataType == onnx::TensorProto::FLOAT)
      return parameterOf(node, index);
    if (index < node.input_size() && isConstantTable(node.input(index)))
      return constantTable(node, node.input(index));
    return valueOf(node, index);
  }

  /// Whether `name` is a float32 constant of more than one element that the graph computes
  /// itself (a Constant node, or constant arithmetic folded at import) rather than an
  /// initializer: a table of the model, such as the cos/sin tables of rotary position
  /// embeddings computed in the forward pass from torch.arange.
  bool isConstantTable(const std::string &name) {
    if (values.count(name) || initializers.count(name) || initializerViews.count(name))
      return false;
    const HostTensor *h = constants.lookup(name);
    return h && h->dataType == onnx::TensorProto::FLOAT && h->floats.size() > 1;
  }
  /// Whether float32 host tensor `h`'s slices along `axis` are all equal. O(elements).
  static bool slicesEqualAlong(const HostTensor &h, size_t axis) {
    const int64_t extent = h.dims[axis];
    const int64_t inner =
        std::accumulate(h.dims.begin() + axis + 1, h.dims.end(), int64_t{1}, std::multiplies<>());
    const int64_t outer = extent * inner ? int64_t(h.floats.size()) / (extent * inner) : 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 1; e < extent; ++e)
        if (!std::equal(h.floats.begin() + (o * extent + e) * inner,
                        h.floats.begin() + (o * extent + e + 1) * inner,
                        h.floats.begin() + o * extent * inner))
          return false;
    return true;
  }
  /// `h` without all but the first slice along `axis` (its extent there 1). O(elements).
  static void keepFirstSliceAlong(HostTensor &h, size_t axis) {
    const int64_t extent = h.dims[axis];
    const int64_t inner =
        std::accumulate(h.dims.begin() + axis + 1, h.dims.end(), int64_t{1}, std::multiplies<>());
    const int64_t outer = extent * inner ? int64_t(h.floats.size()) / (extent * inner) : 0;
    std::vector<float> kept;
    for (int64_t o = 0; o < outer; ++o)
      kept.insert(kept.end(), h.floats.begin() + o * extent * inner,
                  h.floats.begin() + (o * extent + 1) * inner);
    h.floats = std::move(kept);
    h.dims[axis] = 1;
  }

  /// A float32 constant table that a static export baked its batch into (torch's zeros_like of
  /// nn.MultiheadAttention's [batch x heads, 1, keys] mask), read by `node` with a computed
  /// operand, when the model is imported at another batch: where the computed operand holds
  /// the batch (BatchLocator), the table's aligned axis has the exported batch's extent and
  /// equal slices along it (it does not vary with the sample), it is kept with that axis 1,
  /// which broadcasting then gives this batch's extent. Anything else is left as it is (and
  /// fails to broadcast, naming the node).
  void unbakeTableBatch(const onnx::NodeProto &node) {
    if (exportedBatch <= 0 || options.batch <= 0 || exportedBatch == options.batch ||
        node.input_size() != 2)
      return;
    for (int index : {0, 1}) {
      const std::string &name = node.input(index);
      auto other = values.find(node.input(1 - index));
      if (!isConstantTable(name) || other == values.end())
        continue;
      BatchLocation where = batchLocator().locate(other->second);
      auto computed = shapeOf(other->second);
      HostTensor h = *constants.lookup(name);
      const int64_t axis = where.axis - (int64_t(computed.size()) - int64_t(h.dims.size()));
      int64_t exportedExtent = 0;
      if (!where.isAt() || axis < 0 ||
          __builtin_mul_overflow(computed[where.axis] / options.batch, exportedBatch,
                                 &exportedExtent) ||
          h.dims[size_t(axis)] != exportedExtent || h.dims[size_t(axis)] == computed[where.axis] ||
          !slicesEqualAlong(h, size_t(axis)))
        continue;
      keepFirstSliceAlong(h, size_t(axis));
      constants[name] = std::move(h);
    }
  }

  /// The constant table `name` as a tensor operand: a parameter argument that does not train
  /// (graph.trainable = false), so that it is a persistent buffer of the arena, initialised
  /// from its values at start-up and saved with the weights, and nothing computes its
  /// gradient. An initializer read so trains instead: PyTorch exports parameters and buffers
  /// alike as initializers (--freeze keeps a buffer fixed).
  /// A table whose slices along an axis are all equal (Hugging Face's rotary cos/sin, expanded
  /// to the batch before the product: [B, 1, S, d] of B equal [S, d] slices) is kept with
  /// that axis 1, under `name` + "@dedup": the product broadcasts it back, and a factor left
  /// with leading 1s only multiplies without copies (broadcast_mul). O(elements x rank).
  Value constantTable(const onnx::NodeProto &node, const std::string &name,
                      const std::vector<int64_t> &resultDims = {}) {
    HostTensor h = *constants.lookup(name);
    bool reduced = false;
    // Only axes along which the result has the table's extent (the product's other operand
    // broadcasts there too), so that the result's shape is unchanged.
    const size_t offset =
        resultDims.size() >= h.dims.size() ? resultDims.size() - h.dims.size() : 0;
    for (size_t axis = 0; axis < h.dims.size() && resultDims.size() >= h.dims.size(); ++axis) {
      const int64_t extent = h.dims[axis];
      if (extent <= 1 || resultDims[offset + axis] != extent || !slicesEqualAlong(h, axis))
        continue;
      keepFirstSliceAlong(h, axis);
      reduced = true;
    }
    std::string key = name;
    if (reduced) {
      key = name + "@dedup";
      if (!constants.lookup(key))
        constants[key] = std::move(h);
    }
    Value table = parameterNamed(node, key);
    func.setArgAttr(cast<BlockArgument>(table).getArgNumber(), kTrainableAttr,
                    b.getBoolAttr(false));
    return table;
  }

  /// A frozen table the importer computed (a resampling filter, rotary tables, an additive
  /// attention mask): float32 `values` of shape `dims`, registered as constant `name` and
  /// read as constantTable reads it.
  Value frozenTable(const onnx::NodeProto &node, const std::string &name, std::vector<int64_t> dims,
                    std::vector<float> values) {
    HostTensor table;
    table.dims = std::move(dims);
    table.dataType = onnx::TensorProto::FLOAT;
    table.floats = std::move(values);
    constants[name] = std::move(table);
    return constantTable(node, name);
  }

  /// The persistent, untrained state argument (kind "batch_stats": BatchNormalization's
  /// running statistics) for initializer input `index` of `node`, created on first use.
  Value stateOf(const onnx::NodeProto &node, int index) {
    const std::string &name = node.input(index);
    if (auto it = values.find(name); it != values.end())
      return it->second;
    const HostTensor &h = constantOf(node, index);
    if (h.dataType != onnx::TensorProto::FLOAT)
      fail(nodeLabel(node) + ": \"" + name + "\" must be float32");
    if (h.floats.empty())
      fail(nodeLabel(node) + ": \"" + name + "\" has no elements");
    auto type = RankedTensorType::get(h.dims, b.getF32Type());
    DenseResourceElementsAttr init = initialValue(name, h);
    SmallVector<NamedAttribute> attrs = {
        b.getNamedAttr(kKindAttr, b.getStringAttr("batch_stats")),
        b.getNamedAttr(kNameAttr, b.getStringAttr(name)),
        b.getNamedAttr(kInitAttr, init)};
    unsigned argIndex = func.getNumArguments();
    func.insertArgument(argIndex, type, b.getDictionaryAttr(attrs), b.getUnknownLoc());
    Value arg = func.getArgument(argIndex);
    values[name] = arg;
    return arg;
  }

  /// The f32 scalar step-number input that training-mode dropout reads (graph.role = "step"),
  /// created on first use; graphc-build-train-step feeds it from the runtime's step counter.
  Value stepInput() {
    if (stepArg)
      return stepArg;
    SmallVector<NamedAttribute> attrs = {
        b.getNamedAttr(kKindAttr, b.getStringAttr("input")),
        b.getNamedAttr(kNameAttr, b.getStringAttr("step")),
        b.getNamedAttr(kRoleAttr, b.getStringAttr("step"))};
    unsigned argIndex = func.getNumArguments();
    func.insertArgument(argIndex, f32({}), b.getDictionaryAttr(attrs), b.getUnknownLoc());
    stepArg = func.getArgument(argIndex);
    return stepArg;
  }

  /// A host constant's value as one float (Clip bounds, Dropout ratio); `dflt` when the input
  /// is absent.
  float scalarInput(const onnx::NodeProto &node, int index, float dflt) {
    if (index >= node.input_size() || node.input(index).empty())
      return dflt;
    const HostTensor &h = constantOf(node, index);
    if (h.dataType == onnx::TensorProto::FLOAT && h.floats.size() == 1)
      return h.floats[0];
    if (h.dataType == onnx::TensorProto::INT64 && h.ints.size() == 1)
      return float(h.ints[0]);
    fail(nodeLabel(node) + ": input " + std::to_string(index) + " must be a scalar constant");
  }
  bool boolInput(const onnx::NodeProto &node, int index, bool dflt) {
    if (index >= node.input_size() || node.input(index).empty())
      return dflt;
    const HostTensor *known = constants.lookup(node.input(index));
    if (!known)
      fail(nodeLabel(node) + ": input " + std::to_string(index) + " must be a constant");
    const HostTensor &h = *known;
    if (!h.ints.empty())
      return h.ints[0] != 0;
    if (!h.floats.empty())
      return h.floats[0] != 0.f;
    if (!h.bools.empty())
      return h.bools[0];
    fail(nodeLabel(node) + ": input " + std::to_string(index) + " must be a scalar constant");
  }
  bool isConstant(const std::string &name) { return constants.count(name) != 0; }

  /// A host int64 tensor (shape arithmetic folded at import).
  HostTensor intTensor(std::vector<int64_t> dims, std::vector<int64_t> ints) {
    HostTensor h;
    h.dims = std::move(dims);
    h.dataType = onnx::TensorProto::INT64;
    h.ints = std::move(ints);
    return h;
  }

  /// Output spatial size and the bottom/right padding that makes floor division give it;
  /// with ceil_mode, PyTorch's rule (the last window must start inside the input or the
  /// top/left padding), realised as extra bottom/right padding.
  std::pair<int64_t, int64_t> poolExtent(int64_t in, int64_t kernel, int64_t stride,
                                         int64_t padBegin, int64_t padEnd, bool ceilMode) {
    int64_t span = in + padBegin + padEnd - kernel;
    if (span < 0 || stride <= 0)
      return {-1, padEnd};
    int64_t out = span / stride + 1;
    if (ceilMode) {
      int64_t ceilOut = (span + stride - 1) / stride + 1;
      if ((ceilOut - 1) * stride >= in + padBegin)
        --ceilOut;
      if (ceilOut > out) {
        int64_t need = (ceilOut - 1) * stride + kernel - (in + padBegin);
        return {ceilOut, std::max(padEnd, need)};
      }
    }
    return {out, padEnd};
  }

  static std::string typeString(Type t) {
    std::string text;
    llvm::raw_string_ostream os(text);
    t.print(os);
    return text;
  }

  static std::vector<int64_t> shapeOf(Value v) {
    auto s = cast<RankedTensorType>(v.getType()).getShape();
    return {s.begin(), s.end()};
  }
  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }

  /// Reads the initializers, and draws the parameter inputs' initial values, into the file's
  /// state, once per file: later imports of the file (other batch sizes) share them.
  void readInitializers(const onnx::GraphProto &graph) {
    for (const auto &init : graph.initializer())
      file.initializerTensors[init.name()] = readTensor(init);
    // Parameters exported as inputs become initializers with PyTorch's default initial values.
    ParameterInputs parameterInputs;
    std::string parameterError;
    if (!initialiseParameterInputs(graph, options.dataInput, options.seed,
                                   options.maxParameterInputElements, parameterInputs,
                                   parameterError))
      fail(parameterError);
    for (auto &p : parameterInputs.parameters) {
      file.initialisationRules.push_back(p.name + ": " + p.rule);
      HostTensor h;
      h.dims = p.dims;
      h.dataType = p.dataType;
      h.floats = std::move(p.floats);
      h.ints = std::move(p.ints);
      file.initializerTensors[p.name] = std::move(h);
    }
    file.initialisedParameters = int(parameterInputs.parameters.size());
    // Their bytes now live in initializerTensors: the parsed copy is freed (a cleared string
    // keeps its capacity, so it is swapped out).
    for (auto &init : *file.model.mutable_graph()->mutable_initializer()) {
      std::string().swap(*init.mutable_raw_data());
      init.clear_float_data();
      init.clear_int64_data();
      init.clear_int32_data();
    }
    file.initializersRead = true;
  }

  /// The initial value of parameter or state `name` as an attribute, shared with the file's
  /// other imports (InitialValueCache.h).
  DenseResourceElementsAttr initialValue(const std::string &name, const HostTensor &h) {
    return file.initialValues.get(RankedTensorType::get(h.dims, b.getF32Type()), name, h.floats);
  }

  OwningOpRef<ModuleOp> build(const onnx::ModelProto &model) {
    if (!model.has_graph())
      fail("the model has no graph (the file may be truncated or not an ONNX model)");
    int64_t opset = 0;
    for (const auto &o : model.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx")
        opset = o.version();
    if (opset < kMinOpset || opset > kMaxOpset)
      fail("opset " + std::to_string(opset) + " is not supported; graphc reads opsets " +
           std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
           ": export with an opset_version in that range");
    this->opset = opset;
    if (!file.initializersRead)
      readInitializers(model.graph());
    const onnx::GraphProto &graph = withFunctionsInlined(model);

    for (const auto &[name, tensor] : file.initializerTensors)
      initializers.insert(name);
    initialisationRules = file.initialisationRules;
    initialisedParameters = file.initialisedParameters;

    OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module->getBody());
    func = b.create<func::FuncOp>(NameLoc::get(b.getStringAttr(path)), "forward",
                                  b.getFunctionType({}, {}));
    Block *entry = func.addEntryBlock();

    // Data inputs: graph inputs without an initializer, fed per step in graph order (a
    // transformer's input_ids and attention_mask, an image and its metadata).
    int dataInputs = 0;
    for (const auto &input : graph.input()) {
      if (constants.count(input.name()))
        continue;
      ++dataInputs;
      const auto &tensorType = input.type().tensor_type();
      // Integer inputs (nn.Embedding's token ids, an attention mask of 0 and 1): graphc carries
      // them as exact float32 values, as the Keras importer does (integerValued below).
      const bool integer = tensorType.elem_type() == onnx::TensorProto::INT64 ||
                           tensorType.elem_type() == onnx::TensorProto::INT32;
      if (tensorType.elem_type() != onnx::TensorProto::FLOAT && !integer)
        fail("graph input \"" + input.name() +
             "\" must be float32, or int64/int32 (token ids, a mask)");
      if (integer) {
        integerInputs.insert(input.name());
        integerValued[input.name()] = input.name();
      }
      std::vector<int64_t> dims;
      for (int i = 0; i < tensorType.shape().dim_size(); ++i) {
        const auto &d = tensorType.shape().dim(i);
        if (i == 0 && d.has_dim_value() && d.dim_value() > 0 && exportedBatch == 0) {
          exportedBatch = d.dim_value();
          batchedInput = input.name();
        }
        if (i == 0 && options.batch > 0) {
          dims.push_back(options.batch);
        } else if (d.has_dim_value() && d.dim_value() > 0) {
          dims.push_back(d.dim_value());
        } else if (d.has_dim_value()) {
          fail("graph input \"" + input.name() + "\" has dimension " + std::to_string(i) +
               " of size " + std::to_string(d.dim_value()) + "; sizes must be positive");
        } else if (i == 0) {
          fail("graph input \"" + input.name() +
               "\" has a dynamic batch dimension; pass --batch=N");
        } else {
          fail("graph input \"" + input.name() + "\" has a dynamic dimension " +
               std::to_string(i) + "; graphc needs static shapes");
        }
      }
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr(kKindAttr, b.getStringAttr("input")),
          b.getNamedAttr(kNameAttr, b.getStringAttr(input.name()))};
      // After the data inputs before it (parameters are appended later).
      const unsigned position = unsigned(dataInputs - 1);
      func.insertArgument(position, f32(dims), b.getDictionaryAttr(attrs), b.getUnknownLoc());
      values[input.name()] = func.getArgument(position);
    }
    if (dataInputs == 0)
      fail("the graph has no data input");

    b.setInsertionPointToEnd(entry);
    this->graph = &graph;
    for (int i = 0; i < graph.node_size(); ++i) {
      for (const auto &in : graph.node(i).input())
        readers[in].push_back(i);
      for (const auto &out : graph.node(i).output())
        producer[out] = i;
    }
    for (const auto &out : graph.output())
      readers[out.name()].push_back(-1);
    for (int i = 0; i < graph.node_size(); ++i)
      if (!absorbed.count(i))
        importNode(graph.node(i), i);

    std::string outputs;
    for (const auto &o : graph.output())
      outputs += (outputs.empty() ? "\"" : ", \"") + o.name() + "\"";
    std::string trained = options.output;
    if (trained.empty()) {
      if (graph.output_size() != 1)
        fail("the graph has " + std::to_string(graph.output_size()) + " outputs (" + outputs +
             "); graphc trains one: name it with --train-output=NAME");
      trained = graph.output(0).name();
    } else if (llvm::none_of(graph.output(), [&](const auto &o) { return o.name() == trained; })) {
      fail("--train-output=" + trained + " is not a graph output (outputs: " + outputs + ")");
    }
    auto out = values.find(trained);
    if (out == values.end())
      fail("graph output \"" + trained + "\" is not computed by any node");
    b.create<func::ReturnOp>(b.getUnknownLoc(), out->second);
    checkGuessedRebases(out->second);
    if (graph.output_size() > 1)
      dropUnusedForOutput(func);
    func.setType(b.getFunctionType(func.getArgumentTypes(), {out->second.getType()}));
    if (failed(mlir::verify(*module)))
      fail("the imported graph does not verify (see the diagnostic above)");
    return module;
  }

  /// With --train-output on a model of several outputs: erases the ops whose results nothing reads
  /// (the other outputs' heads; the graph ops are pure), last first, then the parameters and
  /// batch statistics no op reads any more, so that they are neither planned nor trained.
  void dropUnusedForOutput(func::FuncOp func) {
    Block &body = func.getBody().front();
    for (Operation *op = body.getTerminator()->getPrevNode(); op;) {
      Operation *previous = op->getPrevNode();
      if (op->use_empty())
        op->erase();
      op = previous;
    }
    llvm::BitVector unused(func.getNumArguments());
    for (BlockArgument arg : func.getArguments()) {
      auto kind = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "graph.kind");
      if (arg.use_empty() && kind && kind.getValue() != "input")
        unused.set(arg.getArgNumber());
    }
    (void)func.eraseArguments(unused);
  }

  /// x [..., K] times the 2-D weight w (+ bias): a dense on x viewed as [rows, K], viewed back
  /// as [..., N].
  Value denseOnRows(Location loc, Value x, Value w, Value bias, bool transposed) {
    auto xs = shapeOf(x), ws = shapeOf(w);
    int64_t n = transposed ? ws[0] : ws[1];
    if (xs.size() == 2)
      return b.create<DenseOp>(loc, f32({xs[0], n}), x, w, bias, transposed);
    int64_t rows = std::accumulate(xs.begin(), xs.end() - 1, int64_t{1}, std::multiplies<>());
    Value flat = b.create<ReshapeOp>(loc, f32({rows, xs.back()}), x);
    Value y = b.create<DenseOp>(loc, f32({rows, n}), flat, w, bias, transposed);
    auto ys = xs;
    ys.back() = n;
    return b.create<ReshapeOp>(loc, f32(ys), y);
  }

  /// MatMul of two computed tensors [..., M, K] x [..., K, N] with equal leading axes: a
  /// batch_matmul on [B, M, K] x [B, K, N] views (no broadcasting of the leading axes).
  Value importBatchMatmul(const onnx::NodeProto &node, Location loc, Value a, Value c) {
    auto as = shapeOf(a), cs = shapeOf(c);
    if (as.size() < 2 || as.size() != cs.size() ||
        !std::equal(as.begin(), as.end() - 2, cs.begin()) || as.back() != cs[cs.size() - 2])
      fail(nodeLabel(node) + ": MatMul of two computed tensors needs [..., M, K] x [..., K, N] "
                             "with the same leading axes, got " +
           typeString(a.getType()) + " x " + typeString(c.getType()));
    int64_t batch = std::accumulate(as.begin(), as.end() - 2, int64_t{1}, std::multiplies<>());
    int64_t m = as[as.size() - 2], k = as.back(), n = cs.back();
    auto view = [&](Value v, std::vector<int64_t> dims) -> Value {
      return shapeOf(v) == dims ? v : b.create<ReshapeOp>(loc, f32(dims), v).getResult();
    };
    Value y = b.create<BatchMatmulOp>(loc, f32({batch, m, n}), view(a, {batch, m, k}),
                                      view(c, {batch, k, n}), false, false);
    auto ys = as;
    ys.back() = n;
    return view(y, ys);
  }

  /// The numpy broadcast of host constants' dimensions (ONNX's multidirectional broadcasting);
  /// each operand's elements must match its shape (a malformed file can disagree) and the
  /// result stays within foldedElementCount's cap.
  std::vector<int64_t> broadcastDims(const onnx::NodeProto &node,
                                     ArrayRef<const HostTensor *> operands) {
    std::vector<std::vector<int64_t>> shapes;
    for (const HostTensor *h : operands) {
      int64_t elements = foldedElementCount(node, h->dims, "an operand is too large to fold");
      size_t held = h->dataType == onnx::TensorProto::FLOAT   ? h->floats.size()
                    : h->dataType == onnx::TensorProto::INT64 ? h->ints.size()
                                                              : h->bools.size();
      if (int64_t(held) != elements)
        fail(nodeLabel(node) + ": a constant's shape " + listText(h->dims) +
             " does not match its " + std::to_string(held) + " elements");
      shapes.push_back(h->dims);
    }
    std::vector<int64_t> out = broadcastShapes(node, shapes);
    foldedElementCount(node, out, "the folded constant is too large");
    return out;
  }
  /// The numpy broadcast of `shapes`, refused naming the node when two disagree.
  std::vector<int64_t> broadcastShapes(const onnx::NodeProto &node,
                                       ArrayRef<std::vector<int64_t>> shapes) {
    size_t rank = 0;
    for (const std::vector<int64_t> &dims : shapes)
      rank = std::max(rank, dims.size());
    std::vector<int64_t> out(rank, 1);
    for (const std::vector<int64_t> &dims : shapes)
      for (size_t d = 0; d < dims.size(); ++d) {
        int64_t &o = out[rank - dims.size() + d], dim = dims[d];
        if (dim != 1 && o != 1 && dim != o)
          fail(nodeLabel(node) + ": cannot broadcast " + listText(dims) + " to " + listText(out));
        o = dim == 1 ? o : dim;
      }
    return out;
  }
  /// The flat index into a tensor of dimensions `in`, broadcast to `out`, of flat output
  /// element `flat` (O(rank)).
  static int64_t broadcastSource(const std::vector<int64_t> &in, const std::vector<int64_t> &out,
                                 int64_t flat) {
    int64_t src = 0, stride = 1;
    for (size_t d = out.size(); d-- > 0;) {
      const int64_t coord = flat % out[d];
      flat /= out[d];
      const size_t back = out.size() - d;
      if (back <= in.size()) {
        const int64_t dim = in[in.size() - back];
        src += (dim == 1 ? 0 : coord) * stride;
        stride *= dim;
      }
    }
    return src;
  }

  /// `v` broadcast to `dims` (numpy's rule: v's dimensions, left-padded with 1s, are 1 or
  /// equal to dims'). graphc has no broadcasting op, so each maximal block of axes
  /// [k1, k2) along which v is 1 is copied by a product with a column of ones, last block
  /// first: with P = prod(dims[:k1]), R = prod(dims[k1:k2]) and N = prod(of the axes after),
  /// - P = 1 (a leading block: a learned position embedding [1, S, D] added to [B, S, D],
  ///   ViT's class token [1, 1, D] expanded to [B, 1, D], a per-feature scale [D]):
  ///   dense(ones [R, 1], v as [1, N]);
  /// - N = 1 (a trailing block: a per-row [B, S, 1] to [B, S, D]): dense(v as [P, 1],
  ///   ones [1, R]);
  /// - otherwise (an inner block: grouped-query attention's repeat_kv, [B, Hkv, 1, S, d]
  ///   expanded to [B, Hkv, n_rep, S, d]): batch_matmul(ones [P, R, 1], v as [P, 1, N]).
  /// Their backward gives v's gradient as the sum over the copies (ones^T dY), on every target,
  /// and recomputation and 16-bit casts treat them as any dense or batch_matmul. O(rank^2) to
  /// find the blocks; the copies cost one multiply-add per result element.
  Value broadcastTo(Location loc, Value v, const std::vector<int64_t> &dims) {
    auto vs = shapeOf(v);
    if (vs.size() > dims.size())
      return Value();
    std::vector<int64_t> padded(dims.size() - vs.size(), 1);
    padded.insert(padded.end(), vs.begin(), vs.end());
    for (size_t i = 0; i < dims.size(); ++i)
      if (padded[i] != dims[i] && padded[i] != 1)
        return Value();
    if (padded != dims) {
      // The last block [k1, k2) of axes where v is 1 and dims is not (axes where both are 1
      // join the block).
      size_t k2 = dims.size();
      while (padded[k2 - 1] == dims[k2 - 1])
        --k2;
      size_t k1 = k2 - 1;
      while (k1 > 0 && padded[k1 - 1] == 1)
        --k1;
      auto product = [&](size_t from, size_t to) {
        return std::accumulate(dims.begin() + from, dims.begin() + to, int64_t{1},
                               std::multiplies<>());
      };
      const int64_t r = product(k1, k2), n = product(k2, dims.size());
      // Earlier blocks keep v's extent: the result of this copy has dims[k1:k2] only.
      std::vector<int64_t> copied = padded;
      std::copy(dims.begin() + k1, dims.begin() + k2, copied.begin() + k1);
      const int64_t pv =
          std::accumulate(padded.begin(), padded.begin() + k1, int64_t{1}, std::multiplies<>());
      Value copies;
      if (pv == 1) {
        Value ones = b.create<FillOp>(loc, f32({r, 1}), b.getF32FloatAttr(1.0f));
        Value row = vs == std::vector<int64_t>{1, n} ? v : b.create<ReshapeOp>(loc, f32({1, n}), v);
        copies = b.create<DenseOp>(loc, f32({r, n}), ones, row, Value(), false);
      } else if (n == 1) {
        // A trailing block: the outer product with a row of ones, dense(v as [P, 1],
        // ones [1, R]), whose ones are R elements only.
        Value ones = b.create<FillOp>(loc, f32({1, r}), b.getF32FloatAttr(1.0f));
        Value column = b.create<ReshapeOp>(loc, f32({pv, 1}), v);
        copies = b.create<DenseOp>(loc, f32({pv, r}), column, ones, Value(), false);
      } else {
        Value ones = b.create<FillOp>(loc, f32({pv, r, 1}), b.getF32FloatAttr(1.0f));
        Value rows = b.create<ReshapeOp>(loc, f32({pv, 1, n}), v);
        copies = b.create<BatchMatmulOp>(loc, f32({pv, r, n}), ones, rows, UnitAttr(), UnitAttr());
      }
      v = shapeOf(copies) == copied ? copies : b.create<ReshapeOp>(loc, f32(copied), copies);
      return broadcastTo(loc, v, dims);
    }
    return vs == dims ? v : b.create<ReshapeOp>(loc, f32(dims), v).getResult();
  }
  /// `operand` of `node` (a computed tensor, a float32 initializer as a trained parameter, or a
  /// constant table) broadcast to `dims` (broadcastTo); an operand that does not broadcast so
  /// is refused naming the node and `what` (the operands' types).
  Value broadcastOperand(const onnx::NodeProto &node, Location loc, Value operand,
                         const std::vector<int64_t> &dims, const std::string &what) {
    Value out = broadcastTo(loc, operand, dims);
    if (!out)
      fail(nodeLabel(node) + ": broadcasting " + node.op_type() + " " + what +
           " is not supported: the operand's dimensions must be 1 or equal to the result's");
    return out;
  }

  /// Whether input `index` of `node` is a computed tensor, a float32 initializer (a trained
  /// parameter when read as an operand of Add, Sub, Mul or Expand) or a constant table
  /// (isConstantTable: a frozen one).
  bool computedOrFloatInitializer(const onnx::NodeProto &node, int index) {
    if (index >= node.input_size())
      return false;
    const std::string &name = node.input(index);
    return values.count(name) || isConstantTable(name) ||
           ((initializers.count(name) || initializerViews.count(name)) &&
            constants.at(name).dataType == onnx::TensorProto::FLOAT &&
            constants.at(name).floats.size() > 1);
  }
  /// Add, Sub or Mul of two operands of different shapes (a learned position embedding
  /// [1, S, D] added to [B, S, D], a per-feature scale [D], a per-row shift [B, S, 1]): each
  /// broadcast to their numpy shape (broadcastTo), then the elementwise op.
  Value broadcastBinary(const onnx::NodeProto &node, Location loc) {
    unbakeTableBatch(node);
    // The result's shape from the operands' (a constant table's from its host tensor), then
    // the operands, a table kept without the axes along which it repeats (constantTable).
    auto shapeOfInput = [&](int index) {
      return isConstantTable(node.input(index)) ? constants.at(node.input(index)).dims
                                                : shapeOf(computedOrParameter(node, index));
    };
    std::vector<int64_t> dims = broadcastShapes(node, {shapeOfInput(0), shapeOfInput(1)});
    auto operand = [&](int index) {
      return isConstantTable(node.input(index)) ? constantTable(node, node.input(index), dims)
                                                : computedOrParameter(node, index);
    };
    Value lhs = operand(0), rhs = operand(1);
    // A factor or shift per channel ([C, 1, 1] or [1, C, 1, 1]: an image normalisation's mean
    // and std, nn.GroupNorm's exported weight and bias) of an [N, C, H, W] image: a depthwise
    // 1x1 convolution (buildPerChannelAffine), which keeps the C values, not a copy per pixel.
    const std::string &opType = node.op_type();
    if ((opType == "Mul" || opType == "Add" || opType == "Sub") && dims.size() == 4 && dims[1] > 1)
      for (int side : {0, 1}) {
        Value full = side ? rhs : lhs, channel = side ? lhs : rhs;
        auto cs = shapeOf(channel);
        if ((opType == "Sub" && side == 1) || shapeOf(full) != dims || cs.size() > 4)
          continue;
        std::vector<int64_t> padded(4 - cs.size(), 1);
        padded.insert(padded.end(), cs.begin(), cs.end());
        if (padded != std::vector<int64_t>{1, dims[1], 1, 1})
          continue;
        if (opType == "Sub")
          channel = b.create<ScaleOp>(loc, channel.getType(), channel, b.getF32FloatAttr(-1.f));
        if (opType == "Mul")
          return buildPerChannelAffine(b, loc, full, channel, Value());
        // A shift of a per-channel product that nothing else reads (nn.GroupNorm's weight,
        // then its bias): that one convolution, with the shift as its bias.
        auto product = full.getDefiningOp<Conv2dOp>();
        auto readersOfFull = readers.find(node.input(side));
        if (opType == "Add" && product && product->use_empty() && !product.getBias() &&
            product.getGroups() == dims[1] &&
            shapeOf(product.getFilter()) == std::vector<int64_t>{dims[1], 1, 1, 1} &&
            readersOfFull != readers.end() && readersOfFull->second.size() == 1) {
          Value affine =
              buildPerChannelAffine(b, loc, product.getInput(), product.getFilter(), channel);
          values[node.input(side)] = affine; // (read by nothing else)
          if (locator)
            locator->forget(product.getResult());
          product->erase();
          return affine;
        }
        return buildPerChannelAffine(b, loc, full, Value(), channel);
      }
    // A factor broadcast over leading axes only (a rotary table [S, d] on [B, H, S, d], a
    // per-feature scale [D]) multiplies without a copy: broadcast_mul keeps the factor as it
    // is for the backward pass, where a copied one would keep the activation's size.
    if (opType == "Mul")
      for (auto [full, factor] : {std::pair{lhs, rhs}, std::pair{rhs, lhs}}) {
        if (shapeOf(full) != dims)
          continue;
        auto fs = shapeOf(factor);
        size_t k = fs.size();
        while (k > 0 && fs[k - 1] == dims[dims.size() - fs.size() + k - 1])
          --k;
        if (!std::all_of(fs.begin(), fs.begin() + k, [](int64_t d) { return d == 1; }))
          continue;
        std::vector<int64_t> trailing(fs.begin() + k, fs.end());
        if (trailing.empty() || trailing == dims)
          continue; // a scalar factor, or no broadcast
        Value rows = trailing == fs ? factor : b.create<ReshapeOp>(loc, f32(trailing), factor);
        return b.create<BroadcastMulOp>(loc, full.getType(), full, rows);
      }
    const std::string types =
        "of " + typeString(lhs.getType()) + " and " + typeString(rhs.getType());
    lhs = broadcastOperand(node, loc, lhs, dims, types);
    rhs = broadcastOperand(node, loc, rhs, dims, types);
    if (opType == "Mul")
      return b.create<MulOp>(loc, lhs.getType(), lhs, rhs);
    if (opType == "Sub")
      rhs = b.create<ScaleOp>(loc, rhs.getType(), rhs, b.getF32FloatAttr(-1.f),
                              b.getF32FloatAttr(0.f));
    return b.create<AddOp>(loc, lhs.getType(), lhs, rhs);
  }

  /// Whether every reader of `name` compares it (Equal), directly or through views and casts
  /// (Slice, Reshape, Unsqueeze, Squeeze, Transpose, Cast): a float32 buffer read only so, as
  /// nanoGPT's tril(ones) causal mask (`bias[:, :, :T, :T] == 0`), is a constant of the graph,
  /// not a trained parameter. Views nested deeper than 8 are not followed.
  bool readAsMask(const std::string &name, int depth) {
    auto it = readers.find(name);
    if (it == readers.end() || it->second.empty() || depth > 8)
      return false;
    for (int reader : it->second) {
      if (reader < 0)
        return false; // a graph output
      const onnx::NodeProto &n = graph->node(reader);
      const std::string &type = n.op_type();
      if (type == "Equal")
        continue;
      const bool view = type == "Slice" || type == "Reshape" || type == "Unsqueeze" ||
                        type == "Squeeze" || type == "Transpose" || type == "Cast";
      if (!view || n.input_size() < 1 || n.input(0) != name || n.output_size() < 1 ||
          !readAsMask(n.output(0), depth + 1))
        return false;
    }
    return true;
  }

  /// How a constant attention mask of dimensions `maskDims` hides the positions of `scores`
  /// [..., queries, keys] read by Softmax node `softmax`: `hidden(i * keys + j)` is 1 where
  /// position (i, j) is hidden, 0 where it is open, -1 where it is neither (a mask value graphc
  /// cannot apply). The mask must be [queries, keys] with leading 1s (else `badShape` is
  /// refused); nullopt when the Softmax is not over the keys. O(queries x keys).
  enum class MaskPattern { None, Causal, Other };
  std::optional<MaskPattern> maskPattern(const onnx::NodeProto &node, int softmax, Value scores,
                                         const std::vector<int64_t> &maskDims, size_t elements,
                                         llvm::function_ref<int(int64_t)> hidden,
                                         llvm::function_ref<void()> badShape) {
    const std::vector<int64_t> ss = shapeOf(scores);
    const size_t rank = ss.size();
    const int64_t axis = intAttr(graph->node(softmax), "axis", opset >= 13 ? -1 : 1);
    if (rank < 2 || (axis != -1 && axis != int64_t(rank) - 1))
      return std::nullopt;
    const int64_t queries = ss[rank - 2], keys = ss[rank - 1];
    const size_t maskRank = maskDims.size();
    if (maskRank < 2 || maskRank > rank || maskDims[maskRank - 2] != queries ||
        maskDims[maskRank - 1] != keys ||
        !std::all_of(maskDims.begin(), maskDims.end() - 2, [](int64_t d) { return d == 1; }) ||
        int64_t(elements) != queries * keys)
      badShape();
    bool none = true, causal = queries == keys;
    for (int64_t i = 0; i < queries; ++i)
      for (int64_t j = 0; j < keys; ++j) {
        const int h = hidden(i * keys + j);
        none = none && h == 0;
        causal = causal && h == (j > i ? 1 : 0);
      }
    return none ? MaskPattern::None : causal ? MaskPattern::Causal : MaskPattern::Other;
  }

  /// Where(mask, fill, scores) (or Where(mask, scores, fill)) right before a Softmax over the
  /// keys, `mask` a bool constant and `fill` a float32 scalar constant of -inf (or at most
  /// -1e9): Tensor.masked_fill(mask, -inf), nanoGPT's causal attention. The scores are filled
  /// where the Softmax must see nothing; filled exactly above the diagonal, the Softmax is a
  /// causal one (as importAttentionMask), nowhere, the scores are kept as they are. Anything
  /// else is refused naming the node.
  void importMaskedFill(const onnx::NodeProto &node) {
    const int softmax = soleReader(node.output(0), "Softmax");
    const int scoresIndex = values.count(node.input(1)) ? 1 : 2, fillIndex = 3 - scoresIndex;
    auto refuse = [&](const std::string &why) {
      fail(nodeLabel(node) +
           ": Where of a computed tensor is supported as a masked_fill of "
           "attention scores with -inf before a Softmax over the keys (" +
           why + ")");
    };
    if (!isConstant(node.input(0)) || !isConstant(node.input(fillIndex)) ||
        !values.count(node.input(scoresIndex)))
      refuse("the condition and the fill value must be constants");
    const HostTensor &cond = constantOf(node, 0), &fill = constantOf(node, fillIndex);
    if (cond.dataType != onnx::TensorProto::BOOL || fill.dataType != onnx::TensorProto::FLOAT ||
        fill.floats.size() != 1 || !(fill.floats[0] <= -1e9f))
      refuse("a bool condition and a fill of -inf");
    Value scores = valueOf(node, scoresIndex);
    if (softmax < 0)
      refuse("its one reader must be the Softmax");
    // Position (i, j) is hidden when the condition selects the fill.
    const bool fillWhen = fillIndex == 1;
    std::optional<MaskPattern> pattern = maskPattern(
        node, softmax, scores, cond.dims, cond.bools.size(),
        [&](int64_t at) { return cond.bools[size_t(at)] == fillWhen ? 1 : 0; },
        [&] { refuse("the condition must be [queries, keys], or that with leading 1s"); });
    if (!pattern)
      refuse("the Softmax must be over the last axis");
    if (*pattern == MaskPattern::Other)
      refuse("the filled positions are neither none nor those above the diagonal, a causal "
             "mask; graphc's softmax masks causally only");
    if (*pattern == MaskPattern::Causal)
      causalScores.insert(node.output(0));
    define(node, scores);
  }

  /// An additive attention mask before a Softmax over the keys, Softmax(scores + M) with M a
  /// float32 constant [.., queries, keys] (nn.MultiheadAttention's attn_mask: a buffer, or
  /// generate_square_subsequent_mask traced into a constant; torch 1.13 exports its baddbmm
  /// as Add(Mul(scores, 1), Mul(M, 1)), the second folded). M all zeros is the scores
  /// themselves. M zero on and below the diagonal and -inf (or at most -1e9, which exp turns
  /// into 0 as it does -inf) above it makes the Softmax a graph.softmax {causal}, whose masked
  /// probabilities are exactly 0, as PyTorch's are. Any other mask is refused naming the node:
  /// graphc would otherwise train it as a parameter. False when `node` is not such an Add.
  bool importAttentionMask(const onnx::NodeProto &node) {
    const int softmax = soleReader(node.output(0), "Softmax");
    if (softmax < 0)
      return false;
    for (int maskIndex : {1, 0}) {
      if (!isConstant(node.input(maskIndex)) || !values.count(node.input(1 - maskIndex)))
        continue;
      const HostTensor &mask = constantOf(node, maskIndex);
      if (mask.dataType != onnx::TensorProto::FLOAT || mask.dims.size() < 2)
        continue; // (a scalar shift or a bias vector: the Add's own paths)
      Value scores = valueOf(node, 1 - maskIndex);
      // 0 opens a position; -inf, or at most -1e9 (which exp turns into 0 as it does -inf),
      // hides it; any other value is neither.
      std::optional<MaskPattern> pattern = maskPattern(
          node, softmax, scores, mask.dims, mask.floats.size(),
          [&](int64_t at) {
            const float v = mask.floats[size_t(at)];
            return v == 0.0f ? 0 : v <= -1e9f ? 1 : -1;
          },
          [&] {
            fail(nodeLabel(node) + ": an attention mask " + listText(mask.dims) +
                 " added to scores " + typeString(scores.getType()) +
                 " before a Softmax must be [queries, keys], or that with leading 1s");
          });
      if (!pattern)
        return false;
      if (*pattern == MaskPattern::Other)
        fail(nodeLabel(node) + ": the attention mask added before Softmax node \"" +
             graph->node(softmax).name() + "\" is neither causal (0 on and below the diagonal, " +
             "-inf above: nn.Transformer.generate_square_subsequent_mask) nor all zeros; " +
             "graphc's softmax masks causally only");
      if (*pattern == MaskPattern::Causal)
        causalScores.insert(node.output(0));
      define(node, scores);
      return true;
    }
    return false;
  }

  /// Trilu of a host constant (torch.tril(torch.ones(T, T)) built in the forward pass, a causal
  /// mask): the last two axes' elements (i, j) kept where j - i <= k (lower, upper = 0) or
  /// j - i >= k (upper), zero elsewhere; k from input 1 (default 0). O(elements).
  void foldTrilu(const onnx::NodeProto &node) {
    if (!isConstant(node.input(0)))
      fail(nodeLabel(node) + ": Trilu is supported of constants only (a mask built at export "
                             "time); graphc does not mask computed tensors this way");
    const HostTensor &in = constantOf(node, 0);
    int64_t k = 0;
    if (node.input_size() > 1 && !node.input(1).empty()) {
      const HostTensor &kt = constantOf(node, 1);
      if (kt.dataType != onnx::TensorProto::INT64 || kt.ints.size() != 1)
        fail(nodeLabel(node) + ": k must be an int64 scalar constant");
      k = kt.ints[0];
    }
    const bool upper = intAttr(node, "upper", 1) != 0;
    const size_t rank = in.dims.size();
    if (rank < 2)
      fail(nodeLabel(node) + ": the input must have at least 2 axes, got " + listText(in.dims));
    std::vector<int64_t> dims = broadcastDims(node, {&in}); // (checks the element count)
    const int64_t rows = dims[rank - 2], cols = dims[rank - 1];
    const int64_t count =
        std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
    HostTensor out = in;
    for (int64_t e = 0; e < count; ++e) {
      const int64_t i = (e / cols) % rows, j = e % cols;
      if (upper ? j - i >= k : j - i <= k)
        continue;
      if (out.dataType == onnx::TensorProto::FLOAT)
        out.floats[size_t(e)] = 0.0f;
      else if (out.dataType == onnx::TensorProto::INT64)
        out.ints[size_t(e)] = 0;
      else
        out.bools[size_t(e)] = false;
    }
    constants[node.output(0)] = std::move(out);
  }

  /// Equal and Where of host constants, with numpy broadcasting: the shape arithmetic of
  /// torch's exported Tensor.expand(-1, ...) (Where(Equal(shape, -1), 1, shape)), folded at
  /// import. O(elements).
  void foldEqualOrWhere(const onnx::NodeProto &node) {
    const bool where = node.op_type() == "Where";
    const int arity = where ? 3 : 2;
    if (node.input_size() != arity)
      fail(nodeLabel(node) + " needs " + std::to_string(arity) + " inputs");
    std::vector<const HostTensor *> in;
    for (int i = 0; i < arity; ++i) {
      if (!isConstant(node.input(i)))
        fail(nodeLabel(node) + ": " + node.op_type() +
             " is supported only of constants (shape arithmetic, folded at import); graphc does "
             "not compare or select computed tensors");
      in.push_back(&constantOf(node, i));
    }
    const HostTensor &lhs = *in[where ? 1 : 0], &rhs = *in[where ? 2 : 1];
    if (lhs.dataType != rhs.dataType ||
        (lhs.dataType != onnx::TensorProto::INT64 && lhs.dataType != onnx::TensorProto::FLOAT))
      fail(nodeLabel(node) + ": the compared or selected constants must both be int64 or both "
                             "float32");
    if (where && in[0]->dataType != onnx::TensorProto::BOOL)
      fail(nodeLabel(node) + ": the condition must be a bool constant");
    std::vector<int64_t> dims = broadcastDims(node, in);
    const int64_t count =
        std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
    HostTensor out;
    out.dims = dims;
    out.dataType = where ? lhs.dataType : int32_t(onnx::TensorProto::BOOL);
    const bool ints = lhs.dataType == onnx::TensorProto::INT64;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t l = broadcastSource(lhs.dims, dims, i), r = broadcastSource(rhs.dims, dims, i);
      if (!where)
        out.bools.push_back(ints ? lhs.ints[l] == rhs.ints[r] : lhs.floats[l] == rhs.floats[r]);
      else if (in[0]->bools[broadcastSource(in[0]->dims, dims, i)])
        ints ? out.ints.push_back(lhs.ints[l]) : out.floats.push_back(lhs.floats[l]);
      else
        ints ? out.ints.push_back(rhs.ints[r]) : out.floats.push_back(rhs.floats[r]);
    }
    constants[node.output(0)] = std::move(out);
  }

  /// A float32 unary op of a host constant (Cos, Sin, Neg, Reciprocal, Sqrt, Exp, Log), in float32
  /// as ONNX computes it: the cos/sin tables of rotary position embeddings, which a forward
  /// pass computes from torch.arange and a frequency buffer, are constants of the graph. O(n).
  void foldFloatUnary(const onnx::NodeProto &node) {
    HostTensor out = constantOf(node, 0);
    if (out.dataType != onnx::TensorProto::FLOAT)
      fail(nodeLabel(node) + ": only " + node.op_type() +
           " of a float32 constant is folded at "
           "import");
    const std::string &op = node.op_type();
    for (float &v : out.floats)
      v = op == "Cos"          ? std::cos(v)
          : op == "Sin"        ? std::sin(v)
          : op == "Neg"        ? -v
          : op == "Reciprocal" ? 1.0f / v
          : op == "Sqrt"       ? std::sqrt(v)
          : op == "Log"        ? std::log(v)
                               : std::exp(v);
    constants[node.output(0)] = std::move(out);
  }

  /// Einsum of computed tensors or trained initializers (torch.einsum in attention:
  /// "bqhd,bkhd->bhqk", "bhqk,bkhd->bqhd"; a projection "bsd,ed->bse"), one or two operands.
  /// Letters are classed by where they occur: in both operands and the output (batch), in
  /// both but not the output (contracted), in one operand and the output (free). Each operand
  /// is transposed to [batch, free, contracted] (the right one [batch, contracted, free]) and
  /// viewed as [B, M, K] and [B, K, N], one graph.batch_matmul, and the [batch, free, free]
  /// result viewed and transposed into the output's order. One operand: a transpose, and the
  /// letters absent from the output summed (moved last: an average pool times the count).
  /// An ellipsis stands for the same leading axes in each term ("...ij,...jk->...ik"); an
  /// implicit output is numpy's (the ellipsis, then the letters that occur once, sorted). A
  /// letter repeated within a term (a diagonal or trace) or summed from one operand of two is
  /// refused. Transposes, views and one product: O(elements).
  Value einsum(const onnx::NodeProto &node, Location loc) {
    auto *attr = findAttr(node, "equation");
    std::string equation;
    for (char c : attr ? attr->s() : std::string())
      if (c != ' ')
        equation += c;
    const size_t arrow = equation.find("->");
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(equation).substr(0, arrow).split(parts, ',');
    if (node.input_size() < 1 || node.input_size() > 2 || int(parts.size()) != node.input_size())
      refuseAttr(node, "equation",
                 "= \"" + equation +
                     "\" is not supported: graphc imports an Einsum of one or two "
                     "computed operands (the equation naming each)");
    std::vector<Value> operands;
    std::vector<std::vector<int64_t>> dims;
    for (int i = 0; i < node.input_size(); ++i) {
      operands.push_back(computedOrParameter(node, i));
      dims.push_back(shapeOf(operands.back()));
    }
    // Each term as one character per axis; an ellipsis becomes '0', '1', ... for the
    // trailing ones of its axes, right-aligned across the terms.
    size_t ellipsisAxes = 0;
    auto expand = [&](llvm::StringRef term, size_t rank, bool output) -> std::string {
      const size_t dots = term.find("...");
      std::string letters = term.str();
      if (dots == llvm::StringRef::npos) {
        if (!output && letters.size() != rank)
          fail(nodeLabel(node) + ": term \"" + letters + "\" names " +
               std::to_string(letters.size()) + " axes of a rank-" + std::to_string(rank) +
               " operand");
        return letters;
      }
      const size_t named = letters.size() - 3;
      const size_t count = output ? ellipsisAxes : rank - std::min(rank, named);
      if (!output && named > rank)
        fail(nodeLabel(node) + ": term \"" + letters + "\" names more axes than its operand's " +
             std::to_string(rank));
      if (!output && ellipsisAxes != 0 && count != ellipsisAxes)
        refuseAttr(node, "equation",
                   "= \"" + equation +
                       "\" has ellipses of different numbers of axes, which "
                       "graphc does not broadcast");
      ellipsisAxes = std::max(ellipsisAxes, count);
      std::string middle;
      for (size_t k = ellipsisAxes - count; k < ellipsisAxes; ++k)
        middle += char('0' + k);
      return letters.substr(0, dots) + middle + letters.substr(dots + 3);
    };
    std::vector<std::string> terms;
    for (size_t i = 0; i < parts.size(); ++i)
      terms.push_back(expand(parts[i], dims[i].size(), false));
    std::map<char, int64_t> extent;
    std::map<char, int> occurrences;
    for (size_t i = 0; i < terms.size(); ++i) {
      std::set<char> seen;
      for (size_t a = 0; a < terms[i].size(); ++a) {
        const char letter = terms[i][a];
        if (!std::isalnum(static_cast<unsigned char>(letter)) || !seen.insert(letter).second)
          refuseAttr(node, "equation",
                     "= \"" + equation +
                         "\" is not supported (letters, an ellipsis, no letter "
                         "twice in one term)");
        auto [it, fresh] = extent.emplace(letter, dims[i][a]);
        if (!fresh && it->second != dims[i][a])
          fail(nodeLabel(node) + ": '" + std::string(1, letter) + "' has extents " +
               std::to_string(it->second) + " and " + std::to_string(dims[i][a]));
        ++occurrences[letter];
      }
    }
    std::string output;
    if (arrow != std::string::npos) {
      output = expand(llvm::StringRef(equation).substr(arrow + 2), 0, true);
    } else { // numpy's implicit output: the ellipsis axes, then the letters used once, sorted
      for (size_t k = 0; k < ellipsisAxes; ++k)
        output += char('0' + k);
      for (const auto &[letter, n] : occurrences)
        if (n == 1 && std::isalpha(static_cast<unsigned char>(letter)))
          output += letter;
    }
    for (char letter : output)
      if (!extent.count(letter) || std::count(output.begin(), output.end(), letter) != 1)
        refuseAttr(node, "equation",
                   "= \"" + equation +
                       "\" has an output letter no operand "
                       "names, or one twice");
    auto extentsOf = [&](const std::string &letters) {
      std::vector<int64_t> out;
      for (char letter : letters)
        out.push_back(extent[letter]);
      return out;
    };
    auto product = [&](const std::string &letters) {
      int64_t n = 1;
      for (char letter : letters)
        n *= extent[letter];
      return n;
    };
    // x (axes named by `from`) transposed so its axes are named by `to` (a permutation).
    auto arrange = [&](Value x, const std::string &from, const std::string &to) -> Value {
      if (from == to)
        return x;
      std::vector<int64_t> perm;
      for (char letter : to)
        perm.push_back(int64_t(from.find(letter)));
      return b.create<TransposeOp>(loc, f32(extentsOf(to)), x, b.getDenseI64ArrayAttr(perm));
    };
    auto view = [&](Value x, std::vector<int64_t> shape) -> Value {
      return shapeOf(x) == shape ? x : b.create<ReshapeOp>(loc, f32(shape), x).getResult();
    };
    auto has = [](const std::string &s, char c) { return s.find(c) != std::string::npos; };
    if (terms.size() == 1) {
      const std::string &in = terms[0];
      std::string summed;
      for (char letter : in)
        if (!has(output, letter))
          summed += letter;
      Value x = arrange(operands[0], in, output + summed);
      if (!summed.empty()) {
        const int64_t rows = product(output), n = product(summed);
        Value pooled = b.create<AvgPool2dOp>(
            loc, f32({rows, 1, 1, 1}), view(x, {rows, 1, n, 1}), b.getDenseI64ArrayAttr({n, 1}),
            b.getDenseI64ArrayAttr({1, 1}), b.getDenseI64ArrayAttr({0, 0, 0, 0}), UnitAttr());
        x = view(sumFromMean(loc, pooled, n), extentsOf(output));
      }
      return x;
    }
    const std::string &lhs = terms[0], &rhs = terms[1];
    auto refuseOneSidedSum = [&](char letter) {
      refuseAttr(node, "equation",
                 "= \"" + equation + "\" sums '" + std::string(1, letter) +
                     "' over one operand only, which graphc does not import");
    };
    std::string batch, contracted, leftFree, rightFree;
    for (char letter : lhs) {
      if (has(rhs, letter))
        (has(output, letter) ? batch : contracted) += letter;
      else if (has(output, letter))
        leftFree += letter;
      else
        refuseOneSidedSum(letter);
    }
    for (char letter : rhs)
      if (!has(lhs, letter)) {
        if (!has(output, letter))
          refuseOneSidedSum(letter);
        rightFree += letter;
      }
    const int64_t bs = product(batch), m = product(leftFree), k = product(contracted),
                  n = product(rightFree);
    const std::string produced = batch + leftFree + rightFree;
    if (batch.empty() && (rhs == contracted + rightFree || rhs == rightFree + contracted)) {
      // A projection by a weight laid out [K, N] or [N, K] ("bsd,ed->bse"): one graph.dense
      // of the [M, K] rows, the weight read as it is stored.
      Value rows = view(arrange(operands[0], lhs, leftFree + contracted), {m, k});
      Value weight = view(operands[1], rhs == contracted + rightFree ? std::vector<int64_t>{k, n}
                                                                     : std::vector<int64_t>{n, k});
      Value result =
          b.create<DenseOp>(loc, f32({m, n}), rows, weight, Value(), rhs != contracted + rightFree);
      return arrange(view(result, extentsOf(produced)), produced, output);
    }
    Value left = view(arrange(operands[0], lhs, batch + leftFree + contracted), {bs, m, k});
    Value right = view(arrange(operands[1], rhs, batch + contracted + rightFree), {bs, k, n});
    Value result =
        b.create<BatchMatmulOp>(loc, f32({bs, m, n}), left, right, UnitAttr(), UnitAttr());
    return arrange(view(result, extentsOf(produced)), produced, output);
  }

  /// Einsum of float32 host constants (torch.outer(t, inv_freq) exports "i,j->ij"): every
  /// output element is the sum over the letters absent from the output of the product of
  /// the operands' elements, in float32, the summed letters in row-major order. Explicit
  /// output ("->") and letters only; an ellipsis is refused. O(product of all extents).
  void foldEinsum(const onnx::NodeProto &node) {
    auto *attr = findAttr(node, "equation");
    std::string equation;
    for (char c : attr ? attr->s() : std::string())
      if (c != ' ')
        equation += c;
    size_t arrow = equation.find("->");
    if (arrow == std::string::npos || equation.find('.') != std::string::npos)
      refuseAttr(node, "equation",
                 "= \"" + equation +
                     "\" is not folded: graphc folds an Einsum of constants "
                     "with an explicit output (\"->\") and no ellipsis");
    std::vector<std::string> terms;
    llvm::StringRef inputs(equation.data(), arrow);
    llvm::SmallVector<llvm::StringRef> parts;
    inputs.split(parts, ',');
    for (llvm::StringRef term : parts)
      terms.push_back(term.str());
    const std::string output = equation.substr(arrow + 2);
    if (int(terms.size()) != node.input_size())
      refuseAttr(node, "equation",
                 "names " + std::to_string(terms.size()) + " operands, the node has " +
                     std::to_string(node.input_size()));
    std::map<char, int64_t> extent;
    std::vector<const HostTensor *> operands;
    for (int i = 0; i < node.input_size(); ++i) {
      const HostTensor &h = constantOf(node, i);
      if (h.dataType != onnx::TensorProto::FLOAT || h.dims.size() != terms[i].size())
        fail(nodeLabel(node) + ": operand " + std::to_string(i) +
             " must be a float32 constant "
             "of rank " +
             std::to_string(terms[i].size()));
      for (size_t a = 0; a < terms[i].size(); ++a) {
        char letter = terms[i][a];
        if (!std::isalpha(static_cast<unsigned char>(letter)))
          refuseAttr(node, "equation", "has a character other than a letter");
        auto [it, fresh] = extent.emplace(letter, h.dims[a]);
        if (!fresh && it->second != h.dims[a])
          fail(nodeLabel(node) + ": letter '" + std::string(1, letter) + "' has extents " +
               std::to_string(it->second) + " and " + std::to_string(h.dims[a]));
      }
      operands.push_back(&h);
    }
    std::vector<int64_t> dims;
    for (char letter : output) {
      if (!extent.count(letter) || output.find(letter) != output.rfind(letter))
        refuseAttr(node, "equation",
                   "has an output letter that is repeated or names no input "
                   "axis");
      dims.push_back(extent[letter]);
    }
    std::string summed;
    for (auto [letter, size] : extent)
      if (output.find(letter) == std::string::npos)
        summed += letter;
    std::vector<int64_t> summedDims;
    for (char letter : summed)
      summedDims.push_back(extent[letter]);
    const int64_t count = foldedElementCount(node, dims, "the folded constant is too large");
    const int64_t terms2 = foldedElementCount(node, summedDims, "the folded Einsum is too large");
    if (count * terms2 > (int64_t{1} << 28))
      fail(nodeLabel(node) + ": the folded Einsum is too large");
    // Row-major strides of each operand, per letter.
    std::vector<std::map<char, int64_t>> strides(operands.size());
    for (size_t i = 0; i < operands.size(); ++i) {
      int64_t stride = 1;
      for (size_t a = terms[i].size(); a-- > 0;) {
        strides[i][terms[i][a]] += stride;
        stride *= operands[i]->dims[a];
      }
    }
    HostTensor out;
    out.dims = dims;
    out.dataType = onnx::TensorProto::FLOAT;
    out.floats.resize(size_t(count));
    std::map<char, int64_t> at;
    for (int64_t o = 0; o < count; ++o) {
      for (int64_t rest = o, a = int64_t(output.size()) - 1; a >= 0; --a) {
        at[output[a]] = rest % dims[a];
        rest /= dims[a];
      }
      float sum = 0.f;
      for (int64_t t = 0; t < terms2; ++t) {
        for (int64_t rest = t, a = int64_t(summed.size()) - 1; a >= 0; --a) {
          at[summed[a]] = rest % summedDims[a];
          rest /= summedDims[a];
        }
        float product = 1.f;
        for (size_t i = 0; i < operands.size(); ++i) {
          int64_t offset = 0;
          for (auto [letter, stride] : strides[i])
            offset += at[letter] * stride;
          product *= operands[i]->floats[offset];
        }
        sum += product;
      }
      out.floats[o] = sum;
    }
    constants[node.output(0)] = std::move(out);
  }

  /// MatMul of two float32 host constants that the graph computes (Hugging Face's rotary
  /// frequencies, inv_freq[None, :, None] @ position_ids[:, None, :] of a position_ids built
  /// by torch.arange), as numpy's matmul: the last two axes multiply, the leading ones
  /// broadcast; a 1-D operand is a row (left) or a column (right) that the result drops.
  /// Sums in float32 in k order. O(batch x M x N x K).
  void foldMatMul(const onnx::NodeProto &node) {
    HostTensor a = constantOf(node, 0), bt = constantOf(node, 1);
    if (a.dataType != onnx::TensorProto::FLOAT || bt.dataType != onnx::TensorProto::FLOAT ||
        a.dims.empty() || bt.dims.empty())
      fail(nodeLabel(node) + ": only MatMul of float32 constants of rank 1 or more is folded at "
                             "import");
    const bool rowVector = a.dims.size() == 1, columnVector = bt.dims.size() == 1;
    if (rowVector)
      a.dims.insert(a.dims.begin(), 1);
    if (columnVector)
      bt.dims.push_back(1);
    const int64_t m = a.dims[a.dims.size() - 2], k = a.dims.back(), n = bt.dims.back();
    if (bt.dims[bt.dims.size() - 2] != k)
      fail(nodeLabel(node) + ": cannot multiply " + listText(a.dims) + " by " + listText(bt.dims));
    const std::vector<int64_t> aBatch(a.dims.begin(), a.dims.end() - 2),
        bBatch(bt.dims.begin(), bt.dims.end() - 2);
    std::vector<int64_t> batch = broadcastShapes(node, {aBatch, bBatch});
    std::vector<int64_t> dims = batch;
    if (!rowVector)
      dims.push_back(m);
    if (!columnVector)
      dims.push_back(n);
    const int64_t batches = foldedElementCount(node, batch, "the folded MatMul is too large");
    foldedElementCount(node, {batches, m, n}, "the folded MatMul is too large");
    if (double(batches) * double(m) * double(n) * double(k) > double(int64_t{1} << 30))
      fail(nodeLabel(node) + ": the folded MatMul is too large");
    HostTensor out;
    out.dims = dims;
    out.dataType = onnx::TensorProto::FLOAT;
    out.floats.assign(size_t(batches * m * n), 0.f);
    for (int64_t bi = 0; bi < batches; ++bi) {
      const int64_t ai = broadcastSource(aBatch, batch, bi),
                    bj = broadcastSource(bBatch, batch, bi);
      const float *pa = a.floats.data() + ai * m * k, *pb = bt.floats.data() + bj * k * n;
      float *po = out.floats.data() + bi * m * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          float sum = 0.f;
          for (int64_t t = 0; t < k; ++t)
            sum += pa[i * k + t] * pb[t * n + j];
          po[i * n + j] = sum;
        }
    }
    constants[node.output(0)] = std::move(out);
  }

  /// Concat of float32 host constants of one rank along `axis` (the cos/sin tables of rotary
  /// embeddings, cat((freqs, freqs), -1)). O(elements).
  void foldFloatConcat(const onnx::NodeProto &node) {
    const HostTensor &first = constantOf(node, 0);
    int64_t rank = first.dims.size(), axis = axisAttr(node, rank);
    std::vector<int64_t> dims = first.dims;
    dims[axis] = 0;
    for (int i = 0; i < node.input_size(); ++i) {
      const HostTensor &h = constantOf(node, i);
      bool same = h.dataType == onnx::TensorProto::FLOAT && int64_t(h.dims.size()) == rank;
      for (int64_t a = 0; same && a < rank; ++a)
        same = a == axis || h.dims[a] == first.dims[a];
      if (!same)
        fail(nodeLabel(node) + ": only constants of one dtype and of equal dimensions off the "
                               "axis are concatenated at import");
      dims[axis] += h.dims[axis];
    }
    foldedElementCount(node, dims, "the folded constant is too large");
    const int64_t outer =
        std::accumulate(dims.begin(), dims.begin() + axis, int64_t{1}, std::multiplies<>());
    HostTensor out;
    out.dims = dims;
    out.dataType = onnx::TensorProto::FLOAT;
    for (int64_t o = 0; o < outer; ++o)
      for (int i = 0; i < node.input_size(); ++i) {
        const HostTensor &h = constantOf(node, i);
        const int64_t block = int64_t(h.floats.size()) / std::max<int64_t>(outer, 1);
        out.floats.insert(out.floats.end(), h.floats.begin() + o * block,
                          h.floats.begin() + (o + 1) * block);
      }
    constants[node.output(0)] = std::move(out);
  }

  /// Add/Sub/Mul/Div/Pow of two float32 host constants with numpy broadcasting, in float32 as
  /// ONNX computes them (Pow: a rotary frequency table, base ** (-2i/d)): torch's exported baddbmm
  /// scales an attention mask by beta = 1 (a Cast of the constant 1), folded here so that the mask
  /// stays a constant. O(elements).
  void foldFloatArithmetic(const onnx::NodeProto &node, const HostTensor &l, const HostTensor &r) {
    std::vector<int64_t> dims = broadcastDims(node, {&l, &r});
    const int64_t count =
        std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
    const std::string &op = node.op_type();
    HostTensor out;
    out.dims = dims;
    out.dataType = onnx::TensorProto::FLOAT;
    out.floats.resize(size_t(count));
    for (int64_t i = 0; i < count; ++i) {
      const float x = l.floats[broadcastSource(l.dims, dims, i)],
                  y = r.floats[broadcastSource(r.dims, dims, i)];
      out.floats[i] = op == "Add"   ? x + y
                      : op == "Sub" ? x - y
                      : op == "Mul" ? x * y
                      : op == "Pow" ? std::pow(x, y)
                                    : x / y;
    }
    constants[node.output(0)] = std::move(out);
  }

  /// Add/Sub/Mul/Div of two int64 host constants (shape arithmetic, e.g. the split points of
  /// a fused Q/K/V projection), with numpy broadcasting of a scalar.
  void foldIntArithmetic(const onnx::NodeProto &node) {
    const HostTensor &l = constantOf(node, 0), &r = constantOf(node, 1);
    if (l.dataType == onnx::TensorProto::FLOAT && r.dataType == onnx::TensorProto::FLOAT) {
      foldFloatArithmetic(node, l, r);
      return;
    }
    if (l.dataType != onnx::TensorProto::INT64 || r.dataType != onnx::TensorProto::INT64 ||
        (l.ints.size() != r.ints.size() && l.ints.size() != 1 && r.ints.size() != 1))
      fail(nodeLabel(node) +
           ": only arithmetic on two int64 or two float32 constants is folded at import");
    const std::string &op = node.op_type();
    size_t n = std::max(l.ints.size(), r.ints.size());
    std::vector<int64_t> out(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t x = l.ints[l.ints.size() == 1 ? 0 : i], y = r.ints[r.ints.size() == 1 ? 0 : i];
      if (op == "Div" && y == 0)
        fail(nodeLabel(node) + ": division by zero");
      // ONNX Div on integers truncates, as C++ does. A result beyond int64 (a malformed file)
      // is refused, not wrapped.
      bool overflow = op == "Add"   ? __builtin_add_overflow(x, y, &out[i])
                      : op == "Sub" ? __builtin_sub_overflow(x, y, &out[i])
                      : op == "Mul" ? __builtin_mul_overflow(x, y, &out[i])
                                    : (x == std::numeric_limits<int64_t>::min() && y == -1);
      if (overflow)
        fail(nodeLabel(node) + ": " + std::to_string(x) + " " + op + " " + std::to_string(y) +
             " overflows int64");
      if (op == "Div")
        out[i] = x / y;
    }
    // numpy broadcasting: the larger operand's shape; of two one-element operands, the one of
    // higher rank (8 - [4] is [4], as torch's exported F.pad computes its pads).
    const bool left = l.ints.size() != r.ints.size() ? l.ints.size() > r.ints.size()
                                                     : l.dims.size() >= r.dims.size();
    constants[node.output(0)] = intTensor(left ? l.dims : r.dims, out);
  }

  /// An export without a dynamic batch axis bakes its batch into shape constants (x.view(B, T,
  /// H, D), mask.expand(B, 1, T, T)); imported at another batch (--batch, a micro-batch, a batch
  /// search) the leading dimension `dims[0]` = k * the exported batch becomes the input's own
  /// k * this batch, when the input leads with that (the batch stays the leading axis). Returns
  /// whether it did; anything else (a sequence-first layout's [T, B * H, D]) is left to fail.
  bool rebaseBakedBatch(std::vector<int64_t> &dims, const std::vector<int64_t> &xs) const {
    const int64_t exported = exportedBatch, now = options.batch;
    if (exported <= 0 || now <= 0 || exported == now || dims.empty() || xs.empty() ||
        dims[0] % exported != 0 || xs[0] % now != 0 || xs[0] / now != dims[0] / exported)
      return false;
    dims[0] = xs[0];
    return true;
  }

  /// After an import that guessed where a batch-1 export's batch goes (reshapedDims), the
  /// trained output must hold the batch in its leading axis with no op between mixing the
  /// samples (BatchLocator: a product or a softmax over the batch, a reshape that splits it,
  /// loses it); a wrong guess does, and the import stops naming the first guessed node.
  void checkGuessedRebases(Value output) {
    if (firstGuessedRebase.empty())
      return;
    BatchLocation where = batchLocator().locate(output);
    if (where.isAt() && where.axis == 0 && where.inner * options.batch == shapeOf(output)[0])
      return;
    fail(firstGuessedRebase +
         ": the export's batch of 1 does not say which axis of this shape holds the batch, and "
         "graphc's guess mixes the samples by the output; export at a batch above 1 or with a "
         "dynamic batch axis, torch.onnx.export(..., dynamic_axes={\"" +
         batchedInput + "\": {0: \"batch\"}}), or train at --batch=1");
  }

  /// Concat `node`'s `inputs` at a batch other than the exported one: an input that expanded a
  /// batch-free tensor to the exported batch (bakedExpands) along the axis where another input
  /// holds this batch (BatchLocator) is expanded again to that input's extent there. A
  /// concatenation along the batch axis itself is left alone.
  void rebaseExpandedInputs(const onnx::NodeProto &node, Location loc, SmallVector<Value> &inputs) {
    if (bakedExpands.empty())
      return;
    std::optional<BatchLocation> where;
    Value located;
    for (Value v : inputs)
      if (BatchLocation at = batchLocator().locate(v); at.isAt() && !where) {
        where = at;
        located = v;
      }
    if (!where)
      return;
    const int64_t rank = int64_t(shapeOf(located).size()), axis = axisAttr(node, rank);
    if (axis == where->axis)
      return;
    const int64_t extent = shapeOf(located)[where->axis];
    for (int i = 0; i < node.input_size(); ++i) {
      auto baked = bakedExpands.find(node.input(i));
      std::vector<int64_t> dims = shapeOf(inputs[i]);
      int64_t exportedExtent = 0;
      if (baked == bakedExpands.end() || int64_t(dims.size()) != rank ||
          dims[where->axis] == extent ||
          __builtin_mul_overflow(extent / options.batch, exportedBatch, &exportedExtent) ||
          dims[where->axis] != exportedExtent)
        continue;
      dims[where->axis] = extent;
      inputs[i] =
          broadcastOperand(node, loc, baked->second, dims,
                           "of " + typeString(baked->second.getType()) + " to " + listText(dims));
    }
  }

  /// Why a shape may have failed when the model is imported at a batch other than the one its
  /// static export baked into its shape constants, and what to do; empty otherwise.
  std::string bakedBatchHint() const {
    if (exportedBatch <= 0 || options.batch <= 0 || exportedBatch == options.batch)
      return "";
    const std::string why =
        exportedBatch == 1 || options.batch == 1
            ? "a batch of 1 leaves it unknowable which axis of this shape holds the batch (a "
              "sequence-first attention's [seq, batch x heads, width] or [seq x batch, heads, "
              "width])"
            : "graphc cannot locate the batch in this shape";
    return " (the export bakes its batch " + std::to_string(exportedBatch) +
           " into this shape, and " + why + " to rebase it to batch " +
           std::to_string(options.batch) +
           "; export with a dynamic batch axis, torch.onnx.export(..., dynamic_axes={\"" +
           batchedInput +
           "\": {0: \"batch\"}}), or train at --batch=" + std::to_string(exportedBatch) + ")";
  }

  /// The dimensions shape constant `ints` of Reshape node `node` gives an input of dimensions
  /// `xs`: 0 copies the input's dimension and one -1 is inferred. Their product is not checked.
  std::vector<int64_t> resolvedShape(const onnx::NodeProto &node, const std::vector<int64_t> &ints,
                                     const std::vector<int64_t> &xs) {
    const int64_t total = std::accumulate(xs.begin(), xs.end(), int64_t{1}, std::multiplies<>());
    std::vector<int64_t> dims;
    int64_t known = 1, inferred = -1;
    for (size_t i = 0; i < ints.size(); ++i) {
      int64_t d = ints[i];
      if (d == 0) {
        if (i >= xs.size())
          fail(nodeLabel(node) + ": shape copies a dimension the input does not have");
        d = xs[i];
      }
      if (d == -1) {
        if (inferred >= 0)
          fail(nodeLabel(node) + ": shape has more than one -1");
        inferred = i;
      } else if (d <= 0) {
        fail(nodeLabel(node) + ": shape has an invalid dimension " + std::to_string(d));
      } else if (__builtin_mul_overflow(known, d, &known)) {
        fail(nodeLabel(node) + ": cannot reshape " + std::to_string(total) +
             " elements to a shape of more than 2^63 elements");
      }
      dims.push_back(d);
    }
    if (inferred >= 0)
      dims[inferred] = known ? total / known : 0;
    return dims;
  }

  /// The dimensions Reshape node `node` gives an input `input` of dimensions `xs` (`input` null
  /// for a host constant's): its int64 shape constant resolved by resolvedShape; a shape that
  /// does not hold the input's elements fails naming the node.
  ///
  /// Imported at a batch other than the one a static export baked into its shape constants, the
  /// constant is rebased: where the batch lies in the input is known (BatchLocator), the shape
  /// is resolved against the input at the exported batch, and the batch found in it by its
  /// flat stride, which a row-major reshape keeps (x.view(T, B * H, D) of a [T, B, E] input:
  /// axis 1, B * H -> this batch * H). A shape that already holds the input with the batch in
  /// one axis is kept (one computed by folded Shape arithmetic at this batch). Where the batch
  /// is not located, a leading axis k * the exported batch becomes k * this batch
  /// (rebaseBakedBatch).
  std::vector<int64_t> reshapedDims(const onnx::NodeProto &node, const std::vector<int64_t> &xs,
                                    Value input = Value(), BatchLocation *resultBatch = nullptr) {
    const HostTensor &shape = constantOf(node, 1);
    if (shape.dataType != onnx::TensorProto::INT64)
      fail(nodeLabel(node) + ": the shape must be int64");
    if (intAttr(node, "allowzero", 0) != 0)
      refuseAttr(node, "allowzero", "= 1 is not supported");
    const int64_t total = std::accumulate(xs.begin(), xs.end(), int64_t{1}, std::multiplies<>());
    std::vector<int64_t> dims = resolvedShape(node, shape.ints, xs);
    int64_t count = std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
    const bool batchMoved =
        exportedBatch > 0 && options.batch > 0 && exportedBatch != options.batch;
    BatchLocation where = input && batchMoved ? batchLocator().locate(input) : BatchLocation();
    // At batch 1, where the batch lies is often unknowable from the shapes alone: the batch-2
    // import's decision for this node is followed when it holds this input.
    if (learnedRebases && batchMoved && options.batch == 1)
      if (auto learned = learnedRebases->find(node.output(0)); learned != learnedRebases->end()) {
        std::vector<int64_t> rebased = learned->second.baked;
        rebased[learned->second.location.axis] /= exportedBatch;
        if (checkedProduct(rebased) == total) {
          if (resultBatch)
            *resultBatch = learned->second.location;
          return rebased;
        }
      }
    if (where.isAt() && batchStride(xs, where) > 0) {
      const int64_t stride = batchStride(xs, where), now = options.batch;
      // Two readings: the shape as it is (computed by folded Shape arithmetic at this batch,
      // or a -1 that absorbed the batch) and the shape as exported, rebased.
      BatchLocation kept =
          count == total ? locateBatchByStride(dims, stride, now) : BatchLocation();
      // (Every product checked: a malformed file's shapes may overflow int64.)
      std::vector<int64_t> exported = xs;
      int64_t wanted = 0, have = 0;
      bool fits =
          !__builtin_mul_overflow(xs[where.axis] / now, exportedBatch, &exported[where.axis]);
      std::vector<int64_t> baked = fits ? resolvedShape(node, shape.ints, exported) : dims;
      const int64_t bakedCount = checkedProduct(baked);
      fits = fits && bakedCount >= 0 && !__builtin_mul_overflow(bakedCount, now, &have) &&
             !__builtin_mul_overflow(total, exportedBatch, &wanted) && have == wanted;
      // Exported at batch 1, the shapes cannot say which axis the batch went to: the likeliest
      // one is taken, and the import is checked at its end to keep the samples apart
      // (checkGuessedRebases).
      bool guessed = false;
      BatchLocation found = fits ? locateBatchByStride(baked, stride, exportedBatch,
                                                       exportedBatch == 1 ? &guessed : nullptr)
                                 : BatchLocation();
      // Where both readings hold, the one that keeps the batch where the input has it (a
      // batch-first view's): x.view(x.size(0), -1) as it is; ShuffleNet's baked
      // x.view(1, -1, H, W), which as it is would put the batch into the channels, as exported.
      auto same = [&](const BatchLocation &l) {
        return l.isAt() && l.axis == where.axis && l.inner == where.inner;
      };
      const bool useKept = kept.isAt() && (same(kept) || !same(found));
      if (useKept) {
        if (resultBatch)
          *resultBatch = kept;
        return dims;
      }
      // (A guess of the leading axis for an input that leads with the batch, k times it in
      // both, is what graphc did before it located batches: batch-first views, left unchecked.)
      const bool leadingAsBefore = found.isAt() && found.axis == 0 && where.axis == 0 &&
                                   xs[0] / now == baked[0] / exportedBatch;
      if (found.isAt() && guessed && !leadingAsBefore && firstGuessedRebase.empty())
        firstGuessedRebase = nodeLabel(node);
      if (found.isAt()) {
        if (recordRebases)
          (*recordRebases)[node.output(0)] = {baked, found};
        baked[found.axis] = baked[found.axis] / exportedBatch * now;
        if (resultBatch)
          *resultBatch = found;
        return baked;
      }
    } else if (count != total && batchMoved && !dims.empty() && dims[0] > 0 && !xs.empty()) {
      // (A baked leading batch is rebased when that alone makes the shape hold the input.)
      int64_t rebased = 0;
      if (shape.ints[0] != -1 && !__builtin_mul_overflow(count / dims[0], xs[0], &rebased) &&
          rebased == total && rebaseBakedBatch(dims, xs))
        count = total;
    }
    if (count != total)
      fail(nodeLabel(node) + ": cannot reshape " + std::to_string(total) + " elements to " +
           std::to_string(count) + bakedBatchHint());
    return dims;
  }

  /// Reshape, Slice (any steps, negative ones included) or Transpose of an int64 host constant:
  /// shape arithmetic folded at import (torch's exported F.pad computes its pads with a Reshape
  /// to [-1, 2], a Slice reversing the rows and a Transpose); or of a float32 one that only a
  /// comparison reads (readAsMask: nanoGPT's tril buffer). O(elements).
  void foldIntShapeOp(const onnx::NodeProto &node) {
    const HostTensor &in = constantOf(node, 0);
    const std::string &op = node.op_type();
    const int64_t rank = int64_t(in.dims.size());
    // The shape must hold exactly the constant's elements (a malformed file can disagree).
    const bool isFloat = in.dataType == onnx::TensorProto::FLOAT;
    const int64_t count = int64_t(isFloat ? in.floats.size() : in.ints.size());
    int64_t elements = 1;
    bool fits = true;
    for (int64_t d : in.dims) {
      fits = fits && d >= 0 && (d == 0 || elements <= count / d);
      elements = fits ? elements * d : 0;
    }
    if (!fits || elements != count)
      fail(nodeLabel(node) + ": the constant's shape " + listText(in.dims) +
           " does not match its " + std::to_string(count) + " elements");
    // Row-major strides of `dims`.
    auto stridesOf = [](const std::vector<int64_t> &dims) {
      std::vector<int64_t> strides(dims.size(), 1);
      for (int64_t d = int64_t(dims.size()) - 2; d >= 0; --d)
        strides[d] = strides[d + 1] * dims[d + 1];
      return strides;
    };
    if (op == "Reshape") {
      HostTensor out = in;
      out.dims = reshapedDims(node, in.dims);
      constants[node.output(0)] = std::move(out);
      return;
    }
    // Slice and Transpose: out[i] = in[first + sum_d index_d * step_d].
    std::vector<int64_t> outDims = in.dims, first(size_t(rank), 0), step = stridesOf(in.dims);
    if (op == "Transpose") {
      std::vector<int64_t> perm = intsAttr(node, "perm", {});
      if (perm.empty())
        for (int64_t d = rank - 1; d >= 0; --d)
          perm.push_back(d);
      if (int64_t(perm.size()) != rank)
        fail(nodeLabel(node) + ": perm " + listText(perm) + " does not match rank " +
             std::to_string(rank));
      std::vector<int64_t> inStrides = step;
      for (int64_t d = 0; d < rank; ++d) {
        if (perm[d] < 0 || perm[d] >= rank)
          fail(nodeLabel(node) + ": perm " + listText(perm) + " is out of range");
        outDims[d] = in.dims[perm[d]];
        step[d] = inStrides[perm[d]];
      }
    } else { // Slice (opset >= 10: starts, ends, axes, steps as inputs)
      if (opset < 10)
        fail(nodeLabel(node) + ": Slice before opset 10 is not supported");
      const std::vector<int64_t> &starts = constantOf(node, 1).ints,
                                 &ends = constantOf(node, 2).ints;
      std::vector<int64_t> axes, steps;
      if (node.input_size() > 3 && !node.input(3).empty())
        axes = constantOf(node, 3).ints;
      else
        for (size_t i = 0; i < starts.size(); ++i)
          axes.push_back(int64_t(i));
      if (node.input_size() > 4 && !node.input(4).empty())
        steps = constantOf(node, 4).ints;
      else
        steps.assign(starts.size(), 1);
      if (axes.size() != starts.size() || ends.size() != starts.size() ||
          steps.size() != starts.size())
        fail(nodeLabel(node) + ": starts, ends, axes and steps differ in length");
      const std::vector<int64_t> inStrides = step;
      for (size_t i = 0; i < axes.size(); ++i) {
        const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (axis < 0 || axis >= rank)
          fail(nodeLabel(node) + ": axis " + std::to_string(axes[i]) + " is out of range");
        const int64_t dim = in.dims[axis], st = steps[i];
        if (st == 0 || st < -(int64_t(1) << 40) || st > (int64_t(1) << 40))
          fail(nodeLabel(node) + ": step " + std::to_string(st) + " is not supported");
        // ONNX's clamping: [0, dim] for a positive step, [-1, dim - 1] for a negative one.
        auto clampTo = [&](int64_t v, int64_t lo, int64_t hi) {
          if (v < 0)
            v = v < -dim ? lo : v + dim; // (also INT64_MIN-like "to the start" ends)
          return std::clamp(v, lo, hi);
        };
        const int64_t start = st > 0 ? clampTo(starts[i], 0, dim) : clampTo(starts[i], 0, dim - 1);
        const int64_t end = st > 0 ? clampTo(ends[i], 0, dim) : clampTo(ends[i], -1, dim - 1);
        const int64_t count = st > 0 ? std::max<int64_t>(0, (end - start + st - 1) / st)
                                     : std::max<int64_t>(0, (start - end - st - 1) / -st);
        outDims[axis] = count;
        first[axis] = start;
        step[axis] = inStrides[axis] * st;
      }
    }
    int64_t base = 0;
    const std::vector<int64_t> inStrides = stridesOf(in.dims);
    if (op == "Slice")
      for (int64_t d = 0; d < rank; ++d)
        base += first[d] * inStrides[d];
    const int64_t total =
        std::accumulate(outDims.begin(), outDims.end(), int64_t{1}, std::multiplies<>());
    HostTensor out;
    out.dims = outDims;
    out.dataType = in.dataType;
    (isFloat ? out.floats.reserve(size_t(total)) : out.ints.reserve(size_t(total)));
    std::vector<int64_t> index(size_t(rank), 0); // an odometer over outDims
    for (int64_t e = 0; e < total; ++e) {
      int64_t at = base;
      for (int64_t d = 0; d < rank; ++d)
        at += index[d] * step[d];
      if (isFloat)
        out.floats.push_back(in.floats[size_t(at)]);
      else
        out.ints.push_back(in.ints[size_t(at)]);
      for (int64_t d = rank - 1; d >= 0 && ++index[d] == outDims[d]; --d)
        index[d] = 0;
    }
    constants[node.output(0)] = std::move(out);
  }

  /// The single reader of value `name` when it is a node of type `opType` (else -1). The
  /// patterns read the node's output(0), and a binary op's two inputs: a malformed node
  /// without them (no output, one input of an Add) is no reader here, and its own import
  /// refuses it.
  int soleReader(const std::string &name, const std::string &opType) {
    auto it = readers.find(name);
    if (it == readers.end() || it->second.size() != 1 || it->second[0] < 0)
      return -1;
    const onnx::NodeProto &n = graph->node(it->second[0]);
    const bool binary =
        opType == "Add" || opType == "Sub" || opType == "Mul" || opType == "Div" || opType == "Pow";
    if (n.op_type() != opType || n.output_size() < 1 || n.output(0).empty() ||
        (binary && n.input_size() != 2))
      return -1;
    return it->second[0];
  }

  /// The float32 scalar `name` holds, when it is a known constant or the output of a Constant
  /// node not imported yet (exporters place them just before their reader, after the node a
  /// pattern starts from); false otherwise.
  bool lookaheadScalar(const std::string &name, float &v) {
    std::optional<HostTensor> h = lookaheadConstant(name);
    if (!h || h->floats.size() != 1)
      return false;
    v = h->floats[0];
    return true;
  }

  /// The constant `name` (an initializer, a constant already imported, or a Constant node
  /// placed later in the graph, which a chain being matched may read); none otherwise.
  std::optional<HostTensor> lookaheadConstant(const std::string &name) {
    if (const HostTensor *known = constants.lookup(name))
      return *known;
    if (auto p = producer.find(name); p != producer.end()) {
      const auto &n = graph->node(p->second);
      auto *value = findAttr(n, "value");
      if (n.op_type() == "Constant" && value && value->has_t())
        return readTensor(value->t());
    }
    return std::nullopt;
  }

  /// `axes` (each in [-rank, rank)) as distinct axes counted from the front; none when one is
  /// out of range or repeated.
  static std::optional<std::vector<int64_t>> distinctAxes(std::vector<int64_t> axes, int64_t rank) {
    std::vector<bool> seen(size_t(rank), false);
    for (int64_t &a : axes) {
      if (a < -rank || a >= rank || seen[size_t(a < 0 ? a + rank : a)])
        return std::nullopt;
      a = a < 0 ? a + rank : a;
      seen[size_t(a)] = true;
    }
    return axes;
  }

  /// The axes a reduction node names: its `axes` attribute, or its second input (ReduceSum's
  /// from opset 13, every reduction's from 18), looked ahead as lookaheadConstant does; none
  /// when that input is not an int64 constant. Empty: no axes given.
  std::optional<std::vector<int64_t>> reductionAxes(const onnx::NodeProto &node) {
    if (node.input_size() > 1 && !node.input(1).empty()) {
      std::optional<HostTensor> given = lookaheadConstant(node.input(1));
      if (!given || given->dataType != onnx::TensorProto::INT64)
        return std::nullopt;
      return given->ints;
    }
    return intsAttr(node, "axes", {});
  }

  /// The sole reader of `name` when it is an `opType` node whose other input is the scalar
  /// constant `expected` (lookaheadScalar); -1 otherwise.
  int soleReaderWithScalar(const std::string &name, const std::string &opType, float expected) {
    int reader = soleReader(name, opType);
    float value = 0.f;
    if (reader < 0 || !lookaheadScalar(otherInput(graph->node(reader), name), value) ||
        value != expected)
      return -1;
    return reader;
  }

  /// The input of binary node `n` other than `name`, or "" when `name` is neither input.
  static std::string otherInput(const onnx::NodeProto &n, const std::string &name) {
    if (n.input_size() != 2)
      return "";
    return n.input(0) == name ? n.input(1) : n.input(1) == name ? n.input(0) : "";
  }

  /// torch (opset 13) exports nn.Softsign as Div(x, Add(Abs(x), 1)). From the Abs node, matches
  /// that chain (each intermediate read only inside it) and imports it as one softsign
  /// activation. False when it does not match.
  bool importDecomposedSoftsign(const onnx::NodeProto &abs, Location loc) {
    if (!values.count(abs.input(0)))
      return false;
    const std::string &x = abs.input(0);
    int add = soleReaderWithScalar(abs.output(0), "Add", 1.0f);
    if (add < 0)
      return false;
    int div = soleReader(graph->node(add).output(0), "Div");
    if (div < 0 || graph->node(div).input(0) != x ||
        graph->node(div).input(1) != graph->node(add).output(0))
      return false;
    defineActivation(graph->node(div), ActivationKind::softsign, values[x], 1.0f, loc);
    absorbed.insert({add, div});
    return true;
  }

  /// Defines `node`'s output as graph.activation `kind` of x.
  void defineActivation(const onnx::NodeProto &node, ActivationKind kind, Value x, float alpha,
                        Location loc) {
    define(node, b.create<ActivationOp>(loc, x.getType(), ActivationKindAttr::get(&ctx, kind), x,
                                        b.getF32FloatAttr(alpha)));
  }

  /// torch (opset 13) exports nn.GELU() (the exact, erf form) as
  ///   Mul(Mul(x, Add(Erf(Div(x, sqrt(2))), 1)), 0.5).
  /// From the Div node, matches that chain and imports it as one gelu activation, whose
  /// backward reads x alone (the chain would keep x, the erf term and their products). False
  /// when it does not match.
  bool importDecomposedGelu(const onnx::NodeProto &div, Location loc) {
    if (!values.count(div.input(0)))
      return false;
    const std::string &x = div.input(0);
    float root = 0.f;
    if (!lookaheadScalar(div.input(1), root) || std::fabs(root - 1.41421356f) > 1e-6f)
      return false;
    int erf = soleReader(div.output(0), "Erf");
    int add = erf < 0 ? -1 : soleReaderWithScalar(graph->node(erf).output(0), "Add", 1.0f);
    int product = add < 0 ? -1 : soleReader(graph->node(add).output(0), "Mul");
    if (product < 0 || otherInput(graph->node(product), graph->node(add).output(0)) != x)
      return false;
    int scaled = soleReaderWithScalar(graph->node(product).output(0), "Mul", 0.5f);
    if (scaled < 0)
      return false;
    defineActivation(graph->node(scaled), ActivationKind::gelu, values[x], 1.0f, loc);
    absorbed.insert({erf, add, product, scaled});
    return true;
  }

  /// Whether ReduceMean node `n` averages the last axis of a rank-`rank` input, keeping it
  /// (the statistic of a decomposed LayerNorm or RMSNorm).
  bool lastAxisMean(const onnx::NodeProto &n, int64_t rank) {
    std::optional<std::vector<int64_t>> axes = reductionAxes(n);
    return axes && axes->size() == 1 && ((*axes)[0] == -1 || (*axes)[0] == rank - 1) &&
           intAttr(n, "keepdims", 1) == 1;
  }

  /// PyTorch (opset < 17) exports LayerNorm over the last axis as
  ///   mean = ReduceMean(x), d = Sub(x, mean), var = ReduceMean(Pow(d, 2)),
  ///   y = Add(Mul(Div(d, Sqrt(Add(var, eps))), weight), bias).
  /// Starting from the first ReduceMean (node `index`), matches that chain (each intermediate
  /// read only inside it) and imports it as one graph.layer_norm: one pass over the data and
  /// its saved statistics instead of eight ops and their gradients. False when it does not match.
  bool importDecomposedLayerNorm(const onnx::NodeProto &node, int index, Location loc) {
    if (!values.count(node.input(0)))
      return false;
    Value x = values[node.input(0)];
    int64_t rank = shapeOf(x).size();
    if (!lastAxisMean(node, rank))
      return false;
    const std::string &meanOut = node.output(0);
    int sub = soleReader(meanOut, "Sub");
    if (sub < 0 || graph->node(sub).input(0) != node.input(0) || graph->node(sub).input(1) != meanOut)
      return false;
    const std::string &dev = graph->node(sub).output(0);
    auto devReaders = readers[dev];
    if (devReaders.size() != 2)
      return false;
    int pow = -1, div = -1;
    for (int r : devReaders) {
      if (r >= 0 && graph->node(r).op_type() == "Pow" && graph->node(r).input(0) == dev)
        pow = r;
      else if (r >= 0 && graph->node(r).op_type() == "Div" && graph->node(r).input(0) == dev)
        div = r;
    }
    if (pow < 0 || div < 0)
      return false;
    // The exponent and epsilon are Constant nodes placed after this node, not yet imported.
    float exponent = 0.f, epsilon = 0.f;
    if (!lookaheadScalar(graph->node(pow).input(1), exponent) || exponent != 2.f)
      return false;
    int var = soleReader(graph->node(pow).output(0), "ReduceMean");
    if (var < 0 || !lastAxisMean(graph->node(var), rank))
      return false;
    int addEps = soleReader(graph->node(var).output(0), "Add");
    if (addEps < 0 || !lookaheadScalar(graph->node(addEps).input(1), epsilon))
      return false;
    int sqrt = soleReader(graph->node(addEps).output(0), "Sqrt");
    if (sqrt < 0 || soleReader(graph->node(sqrt).output(0), "Div") != div ||
        graph->node(div).input(1) != graph->node(sqrt).output(0))
      return false;
    int mul = soleReader(graph->node(div).output(0), "Mul");
    if (mul < 0)
      return false;
    const auto &mulNode = graph->node(mul);
    int weightIndex = mulNode.input(0) == graph->node(div).output(0) ? 1 : 0;
    int add = soleReader(mulNode.output(0), "Add");
    if (add < 0)
      return false;
    const auto &addNode = graph->node(add);
    int biasIndex = addNode.input(0) == mulNode.output(0) ? 1 : 0;
    int64_t d = shapeOf(x).back();
    for (auto [n, i] : {std::pair{&mulNode, weightIndex}, std::pair{&addNode, biasIndex}}) {
      const HostTensor *known = constants.lookup(n->input(i));
      if (!known || known->dims != std::vector<int64_t>{d})
        return false;
    }
    Value scale = parameterOf(mulNode, weightIndex), bias = parameterOf(addNode, biasIndex);
    define(addNode, layerNorm(loc, x, scale, bias, epsilon));
    absorbed.insert({sub, pow, var, addEps, sqrt, div, mul, add});
    (void)index;
    return true;
  }

  /// Rotary embeddings as LLaMA and Hugging Face write them, x * cos + rotate_half(x) * sin
  /// with rotate_half(x) = cat((-x2, x1), -1), imported as broadcast_mul(x, cos) +
  /// broadcast_mul(concat(scale(slice(x, d/2:), -1), slice(x, :d/2)), sin) over the last axis,
  /// with cos and sin frozen tables (constants of the step): one graph.rotary, whose backward is
  /// one op too, so no rotate_half temporaries and a recomputation reaches through it. The
  /// ops matched stay behind, unread, and canonicalization erases them. Null when
  /// `lhs + rhs` is not that sum (either order).
  Value fusedRotary(Location loc, Value lhs, Value rhs) {
    auto frozen = [&](Value table) {
      if (auto view = table.getDefiningOp<ReshapeOp>()) // a [1, 1, S, d] table's [S, d] view
        table = view.getInput();
      auto arg = dyn_cast<BlockArgument>(table);
      if (!arg)
        return false;
      auto trainable = func.getArgAttrOfType<BoolAttr>(arg.getArgNumber(), kTrainableAttr);
      return trainable && !trainable.getValue();
    };
    for (auto [direct, rotatedProduct] : {std::pair{lhs, rhs}, std::pair{rhs, lhs}}) {
      auto byCos = direct.getDefiningOp<BroadcastMulOp>();
      auto bySin = rotatedProduct.getDefiningOp<BroadcastMulOp>();
      if (!byCos || !bySin || !frozen(byCos.getRhs()) || !frozen(bySin.getRhs()) ||
          byCos.getRhs().getType() != bySin.getRhs().getType())
        continue;
      Value x = byCos.getLhs();
      auto xs = shapeOf(x);
      auto concat = bySin.getLhs().getDefiningOp<ConcatOp>();
      if (xs.empty() || xs.back() % 2 != 0 || !concat || concat.getInputs().size() != 2 ||
          concat.getAxis() != int64_t(xs.size()) - 1)
        continue;
      const int64_t half = xs.back() / 2, axis = int64_t(xs.size()) - 1;
      auto negated = concat.getInputs()[0].getDefiningOp<ScaleOp>();
      auto firstHalf = concat.getInputs()[1].getDefiningOp<SliceOp>();
      auto secondHalf = negated ? negated.getInput().getDefiningOp<SliceOp>() : SliceOp();
      auto isHalf = [&](SliceOp slice, int64_t offset) {
        return slice && slice.getInput() == x && slice.getAxis() == axis &&
               int64_t(slice.getOffset()) == offset && shapeOf(slice.getResult()).back() == half;
      };
      if (!negated || negated.getFactor().convertToFloat() != -1.f ||
          negated.getOffset().convertToFloat() != 0.f || !isHalf(secondHalf, half) ||
          !isHalf(firstHalf, 0))
        continue;
      return b.create<RotaryOp>(loc, x.getType(), x, byCos.getRhs(), bySin.getRhs(), false);
    }
    return Value();
  }

  /// LLaMA-style models (PyTorch before 2.4 has no RMSNorm module) write
  ///   x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight,
  /// which torch exports as Pow(x, 2), ReduceMean(last axis, keepdims), Add(eps), Sqrt, then
  /// Div(1, root) (rsqrt; Reciprocal(root) from other exporters) and Mul(x, .), or
  /// Div(x, root) (x / torch.sqrt(..)); then Mul by the [D] weight, either order, possibly
  /// after a Cast to float (Hugging Face's `weight * h.to(dtype)`); without a weight Mul the
  /// scale is ones. From the Pow node, matches that chain (each intermediate read only inside
  /// it) and imports it as one graph.rms_norm: one pass over the rows and a saved [rows]
  /// statistic, instead of seven ops whose broadcasts graphc does not import. False when it
  /// does not match.
  bool importDecomposedRmsNorm(const onnx::NodeProto &pow, Location loc) {
    if (pow.input_size() != 2 || !values.count(pow.input(0)))
      return false;
    const std::string &xName = pow.input(0);
    Value x = values[xName];
    auto xs = shapeOf(x);
    int64_t rank = xs.size();
    float exponent = 0.f, epsilon = 0.f, one = 0.f;
    if (rank < 1 || !lookaheadScalar(pow.input(1), exponent) || exponent != 2.f)
      return false;
    int mean = soleReader(pow.output(0), "ReduceMean");
    if (mean < 0)
      return false;
    if (!lastAxisMean(graph->node(mean), rank))
      return false;
    const std::string &meanOut = graph->node(mean).output(0);
    int addEps = soleReader(meanOut, "Add");
    if (addEps < 0 || !lookaheadScalar(otherInput(graph->node(addEps), meanOut), epsilon) ||
        !(epsilon >= 0.f))
      return false;
    int sqrt = soleReader(graph->node(addEps).output(0), "Sqrt");
    if (sqrt < 0)
      return false;
    std::vector<int> chain = {mean, addEps, sqrt};
    const std::string &root = graph->node(sqrt).output(0);
    std::string normalized;
    if (int div = soleReader(root, "Div"); div >= 0 && graph->node(div).input(1) == root) {
      chain.push_back(div);
      const std::string &numerator = graph->node(div).input(0);
      if (numerator == xName) {
        normalized = graph->node(div).output(0); // x / sqrt(mean(x^2) + eps)
      } else if (lookaheadScalar(numerator, one) && one == 1.f) {
        normalized = graph->node(div).output(0); // the reciprocal, then Mul(x, .) below
      } else {
        return false;
      }
    } else if (int reciprocal = soleReader(root, "Reciprocal"); reciprocal >= 0) {
      chain.push_back(reciprocal);
      normalized = graph->node(reciprocal).output(0);
      one = 1.f;
    } else {
      return false;
    }
    if (one == 1.f) { // x times the reciprocal root
      int mul = soleReader(normalized, "Mul");
      if (mul < 0 || otherInput(graph->node(mul), normalized) != xName)
        return false;
      chain.push_back(mul);
      normalized = graph->node(mul).output(0);
    }
    if (int cast = soleReader(normalized, "Cast");
        cast >= 0 && intAttr(graph->node(cast), "to", 0) == onnx::TensorProto::FLOAT) {
      chain.push_back(cast);
      normalized = graph->node(cast).output(0);
    }
    const int64_t d = xs.back();
    Value scale;
    const onnx::NodeProto *last = &graph->node(chain.back());
    if (int mul = soleReader(normalized, "Mul"); mul >= 0) {
      const std::string weight = otherInput(graph->node(mul), normalized);
      const HostTensor *known = constants.lookup(weight);
      if (known && known->dims == std::vector<int64_t>{d}) {
        scale = parameterNamed(graph->node(mul), weight);
        chain.push_back(mul);
        last = &graph->node(mul);
      }
    }
    if (!scale)
      scale = b.create<FillOp>(loc, f32({d}), b.getF32FloatAttr(1.0f));
    int64_t rows = std::accumulate(xs.begin(), xs.end() - 1, int64_t{1}, std::multiplies<>());
    define(*last, b.create<RmsNormOp>(loc, TypeRange{x.getType(), f32({rows})}, x, scale,
                                      b.getF32FloatAttr(epsilon))
                      .getResult());
    absorbed.insert(chain.begin(), chain.end());
    return true;
  }

  Value layerNorm(Location loc, Value x, Value scale, Value bias, float epsilon) {
    auto xs = shapeOf(x);
    int64_t rows = std::accumulate(xs.begin(), xs.end() - 1, int64_t{1}, std::multiplies<>());
    Type stat = f32({rows});
    return b.create<LayerNormOp>(loc, TypeRange{x.getType(), stat, stat}, x, scale, bias,
                                 b.getF32FloatAttr(epsilon))
        .getResult();
  }

  /// ConvTranspose as graph.conv2d_backward_data: the transpose of the convolution whose
  /// filter is the ConvTranspose weight as it is ([C_in, C_out / group, kH, kW]), with the begin
  /// pads as its top/left padding. Output size (ONNX): s (in - 1) + output_padding + d (k - 1) + 1
  /// - pad_begin - pad_end; the end padding of that convolution is whatever makes it map the
  /// output back to `in` rows, so output_padding rows nothing reads come out zero (plus bias).
  Value convTranspose(const onnx::NodeProto &node, Location loc) {
    Value x = valueOf(node, 0);
    Value w = parameterOf(node, 1);
    Value bias = node.input_size() > 2 && !node.input(2).empty() ? parameterOf(node, 2) : Value();
    if (auto *a = findAttr(node, "auto_pad"); a && a->s() != "NOTSET")
      refuseAttr(node, "auto_pad", "= " + a->s() + " is not supported; export explicit pads");
    if (findAttr(node, "output_shape"))
      refuseAttr(node, "output_shape", "is not supported; export pads and output_padding");
    const int64_t groups = intAttr(node, "group", 1);
    auto xs = shapeOf(x), ws = shapeOf(w);
    if (xs.size() != 4 || ws.size() != 4)
      fail(nodeLabel(node) +
           ": only 1-D, 2-D and 3-D transposed convolutions ([N, C, L], [N, C, H, W] or [N, C, D, "
           "H, W] input with a weight of the same rank) are supported");
    if (xs[1] != ws[0])
      fail(nodeLabel(node) + ": input " + typeString(x.getType()) + " and weight " +
           typeString(w.getType()) + " disagree on the input channels");
    // Grouped (nn.ConvTranspose2d(groups=g)): the weight is [C_in, C_out / g, kH, kW], as the
    // filter of the grouped convolution it transposes.
    if (groups < 1 || ws[0] % groups != 0 || ws[1] > std::numeric_limits<int64_t>::max() / groups)
      refuseAttr(node, "group",
                 "= " + std::to_string(groups) + " does not divide the " + std::to_string(ws[0]) +
                     " input channels");
    auto strides = intsAttr(node, "strides", {1, 1});
    auto pads = intsAttr(node, "pads", {0, 0, 0, 0});
    auto dilations = intsAttr(node, "dilations", {1, 1});
    auto outPad = intsAttr(node, "output_padding", {0, 0});
    auto kernel = intsAttr(node, "kernel_shape", {ws[2], ws[3]});
    if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2 || outPad.size() != 2)
      fail(nodeLabel(node) + ": expects 2 strides, 4 pads, 2 dilations and 2 output_padding");
    if (kernel != std::vector<int64_t>{ws[2], ws[3]})
      refuseAttr(node, "kernel_shape", "does not match the weight " + typeString(w.getType()));
    std::vector<int64_t> out = {xs[0], ws[1] * groups, 0, 0}, convPads = pads;
    for (size_t a = 0; a < 2; ++a) {
      if (strides[a] < 1 || dilations[a] < 1 || pads[a] < 0 || pads[a + 2] < 0 || outPad[a] < 0)
        fail(nodeLabel(node) + ": strides and dilations must be positive, pads and "
                               "output_padding non-negative");
      if (outPad[a] - pads[a + 2] >= strides[a])
        refuseAttr(node, "output_padding", "= " + std::to_string(outPad[a]) + " at stride " +
                                               std::to_string(strides[a]) + " and end pad " +
                                               std::to_string(pads[a + 2]) +
                                               " is not supported (it adds rows no input "
                                               "reaches)");
      out[2 + a] = strides[a] * (xs[2 + a] - 1) + outPad[a] + dilations[a] * (ws[2 + a] - 1) + 1 -
                   pads[a] - pads[a + 2];
      convPads[a + 2] = std::max<int64_t>(pads[a + 2] - outPad[a], 0);
    }
    if (out[2] <= 0 || out[3] <= 0)
      fail(nodeLabel(node) + ": the pads leave no output");
    return b.create<Conv2dBackwardDataOp>(
        loc, f32(out), x, w, bias, b.getDenseI64ArrayAttr(strides),
        b.getDenseI64ArrayAttr(convPads), b.getDenseI64ArrayAttr(dilations),
        b.getI64IntegerAttr(groups));
  }

  std::string strAttr(const onnx::NodeProto &node, const std::string &name,
                      const std::string &dflt) {
    auto *a = findAttr(node, name);
    return a ? a->s() : dflt;
  }

  /// Resize of the spatial axes of an [N, C, H, W] image (or the last axis of [N, C, L]).
  /// Whole factors with the common modes (nearest that repeats each pixel, linear with
  /// half_pixel, pytorch_half_pixel or asymmetric coordinates) enlarge as buildUpsample's
  /// depthwise transposed convolution and shrink as resizeDown's strided one; anything else
  /// (fractional factors, an axis shrunk while another grows, cubic, align_corners,
  /// half_pixel_symmetric, any nearest rounding, exclude_outside) is resizeAny's interpolation
  /// matrices. tf_crop_and_resize, antialias when shrinking and the batch and channel axes are
  /// refused naming the node. (graphc reads opsets 11 to 28, so Upsample and Resize-10 never
  /// occur.)
  /// A volume [N, C, D, H, W] resized (nn.Upsample and F.interpolate on 5-D: nearest,
  /// trilinear, tricubic): every mode and coordinate transform is separable, so it is the
  /// image resize of (H, W) on the [N, C * D, H, W] view, then of depth on the
  /// [N, C, D, H' * W'] view (its width kept), each a Resize node derived from this one with
  /// its scales (or, when the node gives sizes, its sizes) for those axes.
  Value resizeVolume(const onnx::NodeProto &node, Location loc, Value x,
                     const std::vector<double> &factors, const std::vector<int64_t> &outs,
                     bool byScales) {
    const std::vector<int64_t> xs = shapeOf(x);
    const std::string out = node.output(0);
    auto pass = [&](const std::string &tag, Value input, std::vector<double> scales,
                    std::vector<int64_t> sizes) {
      const std::string inputName = out + "@" + tag + ".in", target = out + "@" + tag + ".to";
      values[inputName] = input;
      HostTensor table;
      table.dims = {4};
      if (byScales) {
        table.dataType = onnx::TensorProto::FLOAT;
        for (double f : scales)
          table.floats.push_back(float(f));
      } else {
        table.dataType = onnx::TensorProto::INT64;
        table.ints = sizes;
      }
      constants[target] = table;
      onnx::NodeProto derived = node;
      derived.clear_input();
      derived.add_input(inputName);
      derived.add_input("");
      derived.add_input(byScales ? target : "");
      if (!byScales)
        derived.add_input(target);
      derived.clear_output();
      derived.add_output(out + "@" + tag);
      for (int i = derived.attribute_size() - 1; i >= 0; --i)
        if (derived.attribute(i).name() == "axes" ||
            derived.attribute(i).name() == "keep_aspect_ratio_policy")
          derived.mutable_attribute()->DeleteSubrange(i, 1);
      return resize(derived, loc);
    };
    const int64_t n = xs[0], c = xs[1], d = xs[2];
    Value planes = pass("hw", b.create<ReshapeOp>(loc, f32({n, c * d, xs[3], xs[4]}), x),
                        {1.0, 1.0, factors[3], factors[4]}, {n, c * d, outs[3], outs[4]});
    const int64_t area = outs[3] * outs[4];
    Value deep = pass("d", b.create<ReshapeOp>(loc, f32({n, c, d, area}), planes),
                      {1.0, 1.0, factors[2], 1.0}, {n, c, outs[2], area});
    return b.create<ReshapeOp>(loc, f32({n, c, outs[2], outs[3], outs[4]}), deep);
  }

  Value resize(const onnx::NodeProto &node, Location loc) {
    Value x = valueOf(node, 0);
    const auto xs = shapeOf(x);
    const size_t rank = xs.size();
    if (rank != 3 && rank != 4 && rank != 5)
      fail(nodeLabel(node) +
           ": only [N, C, D, H, W] volumes, [N, C, H, W] images and [N, C, L] sequences can be "
           "resized; the input is " +
           typeString(x.getType()));
    const std::string mode = strAttr(node, "mode", "nearest");
    if (mode != "nearest" && mode != "linear" && mode != "cubic")
      refuseAttr(node, "mode", "= " + mode + " is not one of nearest, linear and cubic");
    std::string coordinates = strAttr(node, "coordinate_transformation_mode", "half_pixel");
    const std::string statedCoordinates = coordinates;
    if (coordinates == "tf_crop_and_resize")
      refuseAttr(node, "coordinate_transformation_mode",
                 "= tf_crop_and_resize is not supported (it reads a region of interest)");
    // Opset 19's half_pixel_symmetric shifts half_pixel's source positions by
    // center * (1 - output_width_int / output_width), which is 0 at the whole factors graphc
    // supports (every output width is exact).
    if (coordinates == "half_pixel_symmetric")
      coordinates = "half_pixel";
    // Opset 18's `axes`: scales and sizes name these axes only; the others keep their size.
    // (Its `antialias` acts only when shrinking, which resizeDown refuses.)
    std::vector<int64_t> axes(rank);
    std::iota(axes.begin(), axes.end(), int64_t{0});
    if (findAttr(node, "axes")) {
      std::optional<std::vector<int64_t>> named =
          distinctAxes(intsAttr(node, "axes", {}), int64_t(rank));
      if (!named)
        refuseAttr(node, "axes",
                   "must name distinct axes of the rank-" + std::to_string(rank) + " input");
      axes = *named;
    }
    // The factor of each axis: from scales (floats), else from sizes (int64). Either may be
    // an empty name or an empty tensor when the other is given.
    auto present = [&](int index) {
      return index < node.input_size() && !node.input(index).empty() &&
             !constantOf(node, index).dims.empty() && constantOf(node, index).dims[0] > 0;
    };
    std::vector<double> factors(rank, 1.0);
    std::vector<int64_t> outs(xs.begin(), xs.end()); // each axis's output length
    auto refuseCount = [&](size_t given, const char *what) {
      fail(nodeLabel(node) + ": " + std::to_string(given) + " " + what + " for " +
           (findAttr(node, "axes") ? std::to_string(axes.size()) + " axes"
                                   : "an input of rank " + std::to_string(rank)));
    };
    if (present(2)) {
      const HostTensor &scales = constantOf(node, 2);
      if (scales.dataType != onnx::TensorProto::FLOAT)
        fail(nodeLabel(node) + ": scales must be float32");
      if (scales.floats.size() != axes.size())
        refuseCount(scales.floats.size(), "scales");
      for (size_t i = 0; i < axes.size(); ++i) {
        factors[axes[i]] = scales.floats[i];
        // ONNX: floor(input x scale) elements.
        const double length = std::floor(double(xs[axes[i]]) * double(scales.floats[i]));
        outs[axes[i]] = length >= 1 && length < 0x1p40 ? int64_t(length) : 0;
      }
    } else if (present(3)) {
      const HostTensor &sizes = constantOf(node, 3);
      if (sizes.ints.size() != axes.size())
        refuseCount(sizes.ints.size(), "sizes");
      std::vector<int64_t> to(rank);
      for (size_t i = 0; i < axes.size(); ++i) {
        // The batch axis as exported (a static export's sizes bake its batch) follows --batch.
        const bool batchAxis = axes[i] == 0 && exportedBatch > 0 && sizes.ints[i] == exportedBatch;
        to[i] = batchAxis ? xs[0] : sizes.ints[i];
      }
      // Opset 18's keep_aspect_ratio_policy: one scale for every named axis, the smallest
      // (not_larger) or largest (not_smaller) of sizes / input, each size then rounded.
      const std::string policy = strAttr(node, "keep_aspect_ratio_policy", "stretch");
      if (policy == "not_larger" || policy == "not_smaller") {
        double kept = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
        for (size_t i = 0; i < axes.size(); ++i) {
          const double ratio = double(to[i]) / double(xs[axes[i]]);
          kept = policy == "not_larger" ? std::min(kept, ratio) : std::max(kept, ratio);
        }
        for (size_t i = 0; i < axes.size(); ++i) {
          const double rounded = std::floor(kept * double(xs[axes[i]]) + 0.5);
          to[i] = rounded >= 0 && rounded < 0x1p40 ? int64_t(rounded) : -1; // -1: refused below
        }
      } else if (policy != "stretch") {
        refuseAttr(node, "keep_aspect_ratio_policy",
                   "= " + policy + " is not one of stretch, not_larger and not_smaller");
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        const int64_t in = xs[axes[i]];
        factors[axes[i]] =
            to[i] > 0 && to[i] % in == 0 ? double(to[i] / in) : double(to[i]) / double(in);
        outs[axes[i]] = to[i];
      }
    } else {
      fail(nodeLabel(node) + " has neither scales nor sizes");
    }
    for (size_t a = 0; a < rank; ++a)
      if (outs[a] < 1 || outs[a] > (int64_t{1} << 24))
        fail(nodeLabel(node) + ": axis " + std::to_string(a) + " of " + std::to_string(xs[a]) +
             " elements would have " + std::to_string(outs[a]) +
             " (ONNX's floor of input x scale, or sizes); an axis needs 1 to 2^24");
    if (outs[0] != xs[0] || outs[1] != xs[1])
      fail(nodeLabel(node) + ": resizing the batch or channel axis is not supported");
    const bool anyShrinks = llvm::any_of(factors, [](double f) { return f < 1; });
    if (intAttr(node, "antialias", 0) != 0 && anyShrinks)
      refuseAttr(node, "antialias", "= 1 is not supported when shrinking");
    if (rank == 5)
      return resizeVolume(node, loc, x, factors, outs, present(2));
    // The strided convolutions below cover whole factors with the common modes; anything else
    // (fractional factors, cubic, align_corners, a nearest rounding that does not repeat each
    // element, an axis shrunk while another grows) is resizeAny's interpolation matrices.
    const std::string rounding = strAttr(node, "nearest_mode", "round_prefer_floor");
    const bool commonCoordinates = coordinates == "half_pixel" ||
                                   coordinates == "pytorch_half_pixel" ||
                                   coordinates == "asymmetric";
    const bool commonRounding = rounding == "round_prefer_floor" ||
                                rounding == "round_prefer_ceil" || rounding == "floor" ||
                                rounding == "ceil";
    // Shrinking by whole factors (every factor 1 / k): a strided depthwise convolution.
    const bool shrinks =
        anyShrinks && llvm::all_of(factors, [](double f) {
          const double k = 1.0 / f;
          return f > 0 && f <= 1 && k <= 65536.0 && std::fabs(k - std::round(k)) < 1e-4;
        });
    const bool whole = llvm::all_of(
        factors, [](double f) { return f >= 1.0 && f <= 65536.0 && f == std::floor(f); });
    bool common = mode != "cubic" && commonCoordinates && commonRounding && (shrinks || whole);
    if (common && whole && mode == "nearest")
      for (size_t a = 2; a < rank; ++a)
        common =
            common && nearestRepeatsEachElement(coordinates, rounding, xs[a], int64_t(factors[a]));
    if (!common)
      return resizeAny(node, loc, x, factors, outs, mode, statedCoordinates, rounding);
    if (shrinks)
      return resizeDown(node, loc, x, factors, mode, coordinates);
    // Enlarging by whole factors with the common modes (checked above).
    const int64_t sh = rank == 4 ? int64_t(factors[2]) : 1, sw = int64_t(factors[rank - 1]);
    const UpsampleInterpolation interpolation =
        mode == "nearest" ? UpsampleInterpolation::Nearest : UpsampleInterpolation::Linear;
    const SourceCoordinates source = mode == "linear" && coordinates != "asymmetric"
                                         ? SourceCoordinates::HalfPixel
                                         : SourceCoordinates::Asymmetric;
    const UpsampleAxis h = upsampleAxis(interpolation, source, sh),
                       w = upsampleAxis(interpolation, source, sw);
    Value image = rank == 4 ? x : b.create<ReshapeOp>(loc, f32({xs[0], xs[1], 1, xs[2]}), x);
    Value up = buildUpsample(b, loc, image, h, w, [&](RankedTensorType type, ArrayRef<float> taps) {
      return frozenTable(node, node.output(0) + "@upsample_filter",
                         {type.getShape().begin(), type.getShape().end()},
                         {taps.begin(), taps.end()});
    });
    return rank == 4 ? up : b.create<ReshapeOp>(loc, f32({xs[0], xs[1], xs[2] * sw}), up);
  }

  /// CumSum of a computed tensor along a constant axis (position ids from a padding mask,
  /// mask.cumsum(-1)): a graph.dense of the rows, the axis moved last by transposes when it is
  /// not, by a frozen [L, L] triangle of ones: output o sums inputs i <= o (`exclusive`: i <
  /// o; `reverse`: i >= o, or i > o). Exact for the integers graphc holds as float32; its
  /// backward is the transposed triangle. O(rows L^2). The batch axis is refused.
  Value cumSum(const onnx::NodeProto &node, Location loc) {
    if (node.input_size() != 2)
      fail(nodeLabel(node) + " needs two inputs");
    if (!values.count(node.input(0)))
      fail(nodeLabel(node) + ": CumSum of a computed tensor is supported, not of a constant");
    Value x = valueOf(node, 0);
    std::vector<int64_t> xs = shapeOf(x);
    const int64_t rank = int64_t(xs.size());
    const HostTensor &axisTensor = constantOf(node, 1);
    if (axisTensor.ints.size() != 1)
      fail(nodeLabel(node) + ": the axis must be one int constant");
    int64_t axis = axisTensor.ints[0];
    if (axis < 0)
      axis += rank;
    if (axis < 1 || axis >= rank)
      fail(nodeLabel(node) + ": axis " + std::to_string(axisTensor.ints[0]) +
           " is not supported (a non-batch axis of the rank-" + std::to_string(rank) + " input)");
    const int64_t length = xs[size_t(axis)];
    if (length > 65536)
      fail(nodeLabel(node) + ": an axis of " + std::to_string(length) +
           " elements is too long for graphc's triangle (65536 at most)");
    const bool exclusive = intAttr(node, "exclusive", 0) != 0,
               reverse = intAttr(node, "reverse", 0) != 0;
    std::vector<float> triangle(size_t(length * length), 0.0f);
    for (int64_t i = 0; i < length; ++i)
      for (int64_t o = 0; o < length; ++o) {
        const bool summed = reverse ? (exclusive ? i > o : i >= o) : (exclusive ? i < o : i <= o);
        triangle[size_t(i * length + o)] = summed ? 1.0f : 0.0f;
      }
    Value table = frozenTable(node, node.output(0) + "@cumsum", {length, length}, triangle);
    // The axis last: a transpose swapping it with the last one (its own inverse).
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), int64_t{0});
    std::swap(perm[size_t(axis)], perm.back());
    std::vector<int64_t> moved = xs;
    std::swap(moved[size_t(axis)], moved.back());
    Value last =
        axis == rank - 1
            ? x
            : b.create<TransposeOp>(loc, f32(moved), x, b.getDenseI64ArrayAttr(perm)).getResult();
    const int64_t rows =
        std::accumulate(moved.begin(), moved.end() - 1, int64_t{1}, std::multiplies<int64_t>());
    Value summed = b.create<DenseOp>(loc, f32({rows, length}),
                                     b.create<ReshapeOp>(loc, f32({rows, length}), last), table,
                                     Value(), UnitAttr());
    Value back = b.create<ReshapeOp>(loc, f32(moved), summed);
    return axis == rank - 1
               ? back
               : b.create<TransposeOp>(loc, f32(xs), back, b.getDenseI64ArrayAttr(perm))
                     .getResult();
  }

  /// Greater, Less, GreaterOrEqual and LessOrEqual of a computed tensor and a scalar constant
  /// (either side): a 0/1 mask, as graphc holds bools, from graph.activation greater (x >
  /// alpha; no gradient, as PyTorch's comparisons have none): x > c, x < c as -x > -c, and
  /// the non-strict forms as 1 minus the opposite strict one.
  Value compareWithScalar(const onnx::NodeProto &node, Location loc) {
    const std::string &op = node.op_type();
    const int computed = values.count(node.input(0)) ? 0 : 1;
    if (!isConstant(node.input(1 - computed)))
      fail(nodeLabel(node) + ": " + op +
           " of a computed tensor is supported with a scalar "
           "constant");
    const float c = scalarInput(node, 1 - computed, 0.f);
    Value x = valueOf(node, computed);
    // With the constant first, the comparison reads the other way round.
    bool greater = op == "Greater" || op == "GreaterOrEqual";
    if (computed == 1)
      greater = !greater;
    const bool strict = op == "Greater" || op == "Less";
    // x > c, or x < c as -x > -c; a non-strict comparison is 1 minus the opposite strict one.
    const bool strictGreater = strict ? greater : !greater;
    Value compared =
        strictGreater
            ? elementwise(loc, ActivationKind::greater, x, c)
            : elementwise(loc, ActivationKind::greater,
                          b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(-1.0f)), -c);
    return strict ? compared : oneMinus(loc, compared);
  }

  /// Tile (torch's x.repeat) of a computed tensor or a trained initializer by constant
  /// repeats: per axis repeated r times, the graph.concat of r copies along it (its backward
  /// sums the copies' gradients into the one value). A constant is tiled at import. The batch
  /// axis of a computed tensor is not tiled (that would change the batch).
  Value tile(const onnx::NodeProto &node, Location loc) {
    if (node.input_size() != 2)
      fail(nodeLabel(node) + " needs two inputs");
    const HostTensor &repeats = constantOf(node, 1);
    if (repeats.dataType != onnx::TensorProto::INT64 || repeats.dims.size() != 1)
      fail(nodeLabel(node) + ": repeats must be a 1-D int64 constant");
    auto checkRepeats = [&](size_t rank) {
      if (repeats.ints.size() != rank)
        fail(nodeLabel(node) + ": " + std::to_string(repeats.ints.size()) +
             " repeats for an input of rank " + std::to_string(rank));
      for (int64_t r : repeats.ints)
        if (r < 1 || r > 65536)
          fail(nodeLabel(node) + ": repeats " + listText(repeats.ints) +
               " must be 1 to 65536 each");
    };
    if (!values.count(node.input(0)) && !initializerViews.count(node.input(0)) &&
        isConstant(node.input(0)) &&
        !(initializers.count(node.input(0)) &&
          constantOf(node, 0).dataType == onnx::TensorProto::FLOAT)) {
      // A constant (an int64 index table, say): numpy's tile, at import.
      const HostTensor &in = constantOf(node, 0);
      checkRepeats(in.dims.size());
      HostTensor out;
      out.dataType = in.dataType;
      out.dims = in.dims;
      int64_t count = 1;
      for (size_t a = 0; a < in.dims.size(); ++a) {
        out.dims[a] *= repeats.ints[a];
        count *= out.dims[a];
      }
      if (count > (int64_t{1} << 24))
        fail(nodeLabel(node) + ": the tiled constant would have " + std::to_string(count) +
             " elements");
      std::vector<int64_t> index(out.dims.size(), 0);
      for (int64_t i = 0; i < count; ++i) {
        // Output element i reads input element (each index modulo the input's size).
        int64_t rest = i, source = 0;
        for (size_t a = out.dims.size(); a-- > 0;) {
          index[a] = rest % out.dims[a];
          rest /= out.dims[a];
        }
        for (size_t a = 0; a < in.dims.size(); ++a)
          source = source * in.dims[a] + index[a] % in.dims[a];
        if (!in.floats.empty())
          out.floats.push_back(in.floats[size_t(source)]);
        else if (!in.ints.empty())
          out.ints.push_back(in.ints[size_t(source)]);
        else if (!in.bools.empty())
          out.bools.push_back(in.bools[size_t(source)]);
      }
      constants[node.output(0)] = out;
      return Value();
    }
    Value x = computedOrParameter(node, 0);
    const std::vector<int64_t> xs = shapeOf(x);
    checkRepeats(xs.size());
    if (repeats.ints[0] != 1 && values.count(node.input(0)))
      fail(nodeLabel(node) + ": tiling the batch axis " + std::to_string(repeats.ints[0]) +
           " times is not supported (it would change the batch)");
    std::vector<int64_t> dims = xs;
    for (size_t a = 0; a < xs.size(); ++a) {
      if (repeats.ints[a] == 1)
        continue;
      SmallVector<Value> copies(size_t(repeats.ints[a]), x);
      dims[a] *= repeats.ints[a];
      x = b.create<ConcatOp>(loc, f32(dims), copies, b.getI64IntegerAttr(int64_t(a)));
    }
    return x;
  }

  /// Resize to any length per spatial axis, with any of ONNX's modes (nearest with its four
  /// roundings, linear, cubic with cubic_coeff_a and exclude_outside) and coordinate modes but
  /// tf_crop_and_resize: buildResize's graph.dense per axis by a frozen resizeMatrix
  /// (<output>@resize_rows, <output>@resize_columns), whose backward carries the gradient.
  /// The source step is 1 / scale in float32, as PyTorch computes it. No antialiasing.
  Value resizeAny(const onnx::NodeProto &node, Location loc, Value x,
                  const std::vector<double> &factors, const std::vector<int64_t> &outs,
                  const std::string &mode, const std::string &coordinates,
                  const std::string &rounding) {
    const auto xs = shapeOf(x);
    const size_t rank = xs.size();
    ResizeAxis base;
    base.mode = mode == "nearest"  ? ResizeAxis::Mode::Nearest
                : mode == "linear" ? ResizeAxis::Mode::Linear
                                   : ResizeAxis::Mode::Cubic;
    using Coordinates = ResizeAxis::Coordinates;
    using Rounding = ResizeAxis::Rounding;
    const auto coordinateMode = llvm::StringSwitch<std::optional<Coordinates>>(coordinates)
                                    .Case("half_pixel", Coordinates::HalfPixel)
                                    .Case("half_pixel_symmetric", Coordinates::HalfPixelSymmetric)
                                    .Case("pytorch_half_pixel", Coordinates::PytorchHalfPixel)
                                    .Case("align_corners", Coordinates::AlignCorners)
                                    .Case("asymmetric", Coordinates::Asymmetric)
                                    .Default(std::nullopt);
    if (!coordinateMode)
      refuseAttr(node, "coordinate_transformation_mode",
                 "= " + coordinates + " is not a coordinate mode ONNX defines");
    const auto roundingMode = llvm::StringSwitch<std::optional<Rounding>>(rounding)
                                  .Case("round_prefer_floor", Rounding::RoundPreferFloor)
                                  .Case("round_prefer_ceil", Rounding::RoundPreferCeil)
                                  .Case("floor", Rounding::Floor)
                                  .Case("ceil", Rounding::Ceil)
                                  .Default(std::nullopt);
    if (!roundingMode)
      refuseAttr(node, "nearest_mode", "= " + rounding + " is not a rounding ONNX defines");
    base.coordinates = *coordinateMode;
    base.rounding = *roundingMode;
    base.cubicA = float(floatAttr(node, "cubic_coeff_a", -0.75f));
    base.excludeOutside = intAttr(node, "exclude_outside", 0) != 0;
    auto axis = [&](size_t a) {
      // The interpolation along an axis is a frozen [out, in] matrix: refuse one that no
      // model needs (a malformed size) before allocating it.
      constexpr int64_t kMaxMatrix = int64_t(1) << 26;
      const bool kept = outs[a] == xs[a] && factors[a] == 1.0; // (no matrix: buildResize)
      if (outs[a] < 1 || xs[a] < 1 || (!kept && outs[a] > kMaxMatrix / xs[a]))
        fail(nodeLabel(node) + ": resizing axis " + std::to_string(a) + " from " +
             std::to_string(xs[a]) + " to " + std::to_string(outs[a]) +
             " needs an interpolation matrix of more than 2^26 elements; resize in steps");
      ResizeAxis r = base;
      r.in = xs[a];
      r.out = outs[a];
      r.scale = factors[a];
      r.inverseScale = float(1.0 / factors[a]);
      return r;
    };
    ResizeAxis h = base;
    h.in = h.out = 1; // a sequence's missing height
    if (rank == 4)
      h = axis(2);
    const ResizeAxis w = axis(rank - 1);
    Value image = rank == 4 ? x : b.create<ReshapeOp>(loc, f32({xs[0], xs[1], 1, xs[2]}), x);
    Value resized = buildResize(
        b, loc, image, h, w, [&](int index, ArrayRef<int64_t> shape, ArrayRef<float> values) {
          return frozenTable(node,
                             node.output(0) + (index == 0 ? "@resize_rows" : "@resize_columns"),
                             {shape.begin(), shape.end()}, {values.begin(), values.end()});
        });
    return rank == 4 ? resized
                     : b.create<ReshapeOp>(loc, f32({xs[0], xs[1], w.out}), resized).getResult();
  }

  /// Resize shrinking each spatial axis by a whole factor k (scales 1 / k, sizes in / k).
  /// Output o of an axis reads source position o k + c, c = 0 (asymmetric) or (k - 1) / 2
  /// (half_pixel, pytorch_half_pixel): nearest takes the element its nearest_mode rounds
  /// that to, linear weighs the two around it (0.5 each when c is a half, else the one
  /// element), no antialiasing (that filter is refused). Per axis that is `taps` (1 or 2)
  /// from offset `start`, every k-th: a slice, then one depthwise graph.conv2d of stride
  /// (kh, kw) by the outer product of the two axes' taps (a fill of ones, or a frozen table).
  /// The sources never leave the input, so nothing is clamped. O(output x taps).
  Value resizeDown(const onnx::NodeProto &node, Location loc, Value x,
                   const std::vector<double> &factors, const std::string &mode,
                   const std::string &coordinates) {
    const auto xs = shapeOf(x);
    const size_t rank = xs.size();
    if (factors[0] != 1.0 || factors[1] != 1.0)
      fail(nodeLabel(node) + ": resizing the batch or channel axis is not supported");
    if (intAttr(node, "antialias", 0) != 0)
      refuseAttr(node, "antialias", "= 1 is not supported when shrinking");
    if (coordinates != "asymmetric" && coordinates != "half_pixel" &&
        coordinates != "pytorch_half_pixel")
      refuseAttr(node, "coordinate_transformation_mode",
                 "= " + coordinates +
                     " is not supported when shrinking (half_pixel, "
                     "pytorch_half_pixel and asymmetric are)");
    const std::string rounding = strAttr(node, "nearest_mode", "round_prefer_floor");
    struct Axis {
      int64_t k = 1, start = 0, taps = 1, out = 1;
      float weight = 1.0f; // of each tap
    };
    Value image = rank == 4 ? x : b.create<ReshapeOp>(loc, f32({xs[0], xs[1], 1, xs[2]}), x);
    std::vector<int64_t> dims = shapeOf(image);
    std::array<Axis, 2> axes;
    for (int i = 0; i < 2; ++i) {
      const size_t a = rank == 4 ? 2 + i : (i == 0 ? 0 : 2); // H (none for [N, C, L]), W
      Axis &axis = axes[i];
      axis.k = a == 0 ? 1 : int64_t(std::llround(1.0 / factors[a]));
      const int64_t in = dims[2 + i];
      axis.out = in / axis.k;
      if (axis.out < 1)
        fail(nodeLabel(node) + ": shrinking " + std::to_string(in) + " elements " +
             std::to_string(axis.k) + " times leaves none");
      const bool half = coordinates != "asymmetric" && axis.k % 2 == 0;
      const int64_t centre = coordinates == "asymmetric" ? 0 : (axis.k - 1) / 2;
      axis.start = centre;
      if (half && mode == "nearest") {
        // Position o k + centre + 1/2: rounded down or up.
        if (rounding == "round_prefer_ceil" || rounding == "ceil")
          axis.start = centre + 1;
        else if (rounding != "round_prefer_floor" && rounding != "floor")
          refuseAttr(node, "nearest_mode", "= " + rounding + " is not a rounding ONNX defines");
      } else if (half) {
        axis.taps = 2;
        axis.weight = 0.5f;
      }
      if (axis.start + (axis.out - 1) * axis.k + axis.taps > in)
        fail(nodeLabel(node) + ": shrinking reads past the input's " + std::to_string(in) +
             " elements");
    }
    // The slice each axis reads, then the strided depthwise convolution.
    for (int i = 0; i < 2; ++i) {
      const Axis &axis = axes[i];
      const int64_t length = (axis.out - 1) * axis.k + axis.taps;
      // (From offset 0 the convolution ignores a tail shorter than its stride.)
      if (axis.start == 0 && (dims[2 + i] - axis.taps) / axis.k + 1 == axis.out)
        continue;
      dims[2 + i] = length;
      image = b.create<SliceOp>(loc, f32(dims), image, b.getI64IntegerAttr(2 + i),
                                b.getI64IntegerAttr(axis.start));
    }
    const int64_t channels = dims[1];
    auto filterType = f32({channels, 1, axes[0].taps, axes[1].taps});
    const float tap = axes[0].weight * axes[1].weight;
    Value filter = tap == 1.0f
                       ? b.create<FillOp>(loc, filterType, b.getF32FloatAttr(1.0f)).getResult()
                       : frozenTable(node, node.output(0) + "@shrink_filter",
                                     {filterType.getShape().begin(), filterType.getShape().end()},
                                     std::vector<float>(size_t(filterType.getNumElements()), tap));
    Value shrunk = b.create<Conv2dOp>(
        loc, f32({dims[0], channels, axes[0].out, axes[1].out}), image, filter, Value(),
        b.getDenseI64ArrayAttr({axes[0].k, axes[1].k}), b.getDenseI64ArrayAttr({0, 0, 0, 0}),
        b.getDenseI64ArrayAttr({1, 1}), b.getI64IntegerAttr(channels));
    return rank == 4
               ? shrunk
               : b.create<ReshapeOp>(loc, f32({xs[0], xs[1], axes[1].out}), shrunk).getResult();
  }

  /// InstanceNormalization and GroupNormalization of [N, C, D1, ...]: each sample's `groups`
  /// blocks of channels normalised over their own elements (buildGroupNorm; InstanceNorm is a
  /// group per channel), then the scale and B (buildPerChannelAffine). Those are per channel,
  /// except in GroupNormalization before opset 21, whose scale and bias have one element per
  /// group (ONNX changed that in 21): the normalised [N, G, C / G * ...] view is then scaled
  /// as G channels. torch exports nn.GroupNorm as an InstanceNormalization over [N, G,
  /// C / G * ...] with Constant ones and zeros of G elements, which are the identity and are
  /// skipped; a scale or B from an initializer trains (nn.InstanceNorm2d(affine=True)).
  Value groupNorm(const onnx::NodeProto &node, Location loc, bool instance) {
    Value x = valueOf(node, 0);
    const auto xs = shapeOf(x);
    if (xs.size() < (instance ? 3u : 2u))
      fail(nodeLabel(node) + ": expects an [N, C, D1, ...] input, not " + typeString(x.getType()));
    if (node.input_size() < 3 || node.input(1).empty() || node.input(2).empty())
      fail(nodeLabel(node) +
           (instance ? " needs its scale and B inputs" : " needs its scale and bias inputs"));
    const int64_t channels = xs[1];
    const int64_t groups = instance ? channels : intAttr(node, "num_groups", 0);
    if (groups < 1 || channels % groups != 0)
      refuseAttr(node, "num_groups",
                 "= " + std::to_string(groups) + " must divide the " + std::to_string(channels) +
                     " channels");
    const int64_t affineCount = instance || opset >= 21 ? channels : groups;
    const std::string what = instance ? "scale and B" : "scale and bias";
    // Input `index`, or null where it is a Constant (not an initializer) of `identity`s.
    auto affine = [&](int index, float identity) -> Value {
      const std::string &name = node.input(index);
      const HostTensor *known = values.count(name) ? nullptr : constants.lookup(name);
      if (known && (known->dataType != onnx::TensorProto::FLOAT ||
                    int64_t(known->floats.size()) != affineCount))
        fail(nodeLabel(node) + ": " + what + " must be float32 [" + std::to_string(affineCount) +
             "]" + (affineCount == groups && !instance ? " (one per group before opset 21)" : ""));
      if (known && !initializers.count(name) &&
          std::all_of(known->floats.begin(), known->floats.end(),
                      [&](float v) { return v == identity; }))
        return Value();
      Value v = computedOrParameter(node, index);
      if (shapeOf(v) != std::vector<int64_t>{affineCount})
        fail(nodeLabel(node) + ": " + what + " must be [" + std::to_string(affineCount) +
             "], not " + typeString(v.getType()));
      return v;
    };
    Value scale = affine(1, 1.0f), shift = affine(2, 0.0f);
    Value normalized = buildGroupNorm(b, loc, x, groups, floatAttr(node, "epsilon", 1e-5f));
    if (!scale && !shift)
      return normalized;
    const int64_t rest = std::accumulate(xs.begin() + 2, xs.end(), int64_t{1}, std::multiplies<>());
    const int64_t perUnit = channels / affineCount * rest;
    const bool image = xs.size() == 4 && affineCount == channels;
    Value units = image
                      ? normalized
                      : b.create<ReshapeOp>(loc, f32({xs[0], affineCount, 1, perUnit}), normalized);
    Value out = buildPerChannelAffine(b, loc, units, scale, shift);
    return image ? out : b.create<ReshapeOp>(loc, x.getType(), out).getResult();
  }

  /// Opset 23's RotaryEmbedding of X [B, H, S, D] or [B, S, H * D] (num_heads H): the first
  /// rotary_embedding_dim (default D) features of each head rotated by the cos and sin
  /// caches, in halves (x1, x2) or interleaved (even and odd features): (cos x1 - sin x2,
  /// sin x1 + cos x2). That is graph.rotary's rotate_half form with the tables cat(cos, cos)
  /// and cat(sin, sin), frozen constants of [S, rotary_embedding_dim] ([S, H, ...] for 3-D X,
  /// the same for every head); interleaved features are viewed as halves and back (a
  /// transpose of the [.., rotary_embedding_dim / 2, 2] pairs), the rest are concatenated
  /// after. The caches must be constants: [max position + 1, rotary_embedding_dim / 2] read at
  /// constant position_ids, or [B, S, rotary_embedding_dim / 2] without them, the same for
  /// every sample in either case (the rotation then does not depend on the batch, which
  /// micro-batches and --batch change).
  Value onnxRotary(const onnx::NodeProto &node, Location loc) {
    Value x = valueOf(node, 0);
    const auto xs = shapeOf(x);
    if (xs.size() != 3 && xs.size() != 4)
      fail(nodeLabel(node) + ": X must be [B, H, S, D] or [B, S, H * D], not " +
           typeString(x.getType()));
    const bool packed = xs.size() == 3;
    const int64_t heads = packed ? intAttr(node, "num_heads", 0) : xs[1];
    if (packed && (heads < 1 || xs[2] % heads != 0))
      refuseAttr(node, "num_heads",
                 "= " + std::to_string(heads) + " must divide the hidden size " +
                     std::to_string(xs[2]));
    const int64_t seq = packed ? xs[1] : xs[2], depth = packed ? xs[2] / heads : xs[3];
    int64_t rot = intAttr(node, "rotary_embedding_dim", 0);
    if (rot == 0)
      rot = depth;
    if (rot < 2 || rot > depth || rot % 2 != 0)
      refuseAttr(node, "rotary_embedding_dim",
                 "= " + std::to_string(rot) + " must be even and at most the head size " +
                     std::to_string(depth));
    const int64_t half = rot / 2;
    // The [S, half] rows of cache `index` that every sample reads.
    auto rows = [&](int index) {
      const std::string &name = node.input(index);
      const HostTensor *cache = values.count(name) ? nullptr : constants.lookup(name);
      if (!cache || cache->dataType != onnx::TensorProto::FLOAT)
        fail(nodeLabel(node) + ": the cos and sin caches must be float32 constants");
      std::vector<float> out;
      const bool positioned = node.input_size() > 3 && !node.input(3).empty();
      if (positioned) {
        const HostTensor &pos = constantOf(node, 3);
        if (pos.dataType != onnx::TensorProto::INT64 || pos.dims.size() != 2 ||
            pos.dims[1] != seq || cache->dims.size() != 2 || cache->dims[1] != half)
          fail(nodeLabel(node) + ": position_ids must be an int64 constant [B, " +
               std::to_string(seq) + "] and the caches [positions, " + std::to_string(half) + "]");
        for (int64_t sample = 1; sample < pos.dims[0]; ++sample)
          if (!std::equal(pos.ints.begin(), pos.ints.begin() + seq,
                          pos.ints.begin() + sample * seq))
            fail(nodeLabel(node) + ": position_ids differ between samples; graphc takes one "
                                   "row of positions for every sample");
        for (int64_t i = 0; i < seq; ++i) {
          const int64_t p = pos.ints[size_t(i)];
          if (p < 0 || p >= cache->dims[0])
            fail(nodeLabel(node) + ": position id " + std::to_string(p) +
                 " is outside the caches' " + std::to_string(cache->dims[0]) + " positions");
          out.insert(out.end(), cache->floats.begin() + p * half,
                     cache->floats.begin() + (p + 1) * half);
        }
        return out;
      }
      if (cache->dims.size() != 3 || cache->dims[1] != seq || cache->dims[2] != half)
        fail(nodeLabel(node) + ": without position_ids the caches must be [B, " +
             std::to_string(seq) + ", " + std::to_string(half) + "]");
      const size_t rowSize = size_t(seq * half);
      for (int64_t sample = 1; sample < cache->dims[0]; ++sample)
        if (!std::equal(cache->floats.begin(), cache->floats.begin() + rowSize,
                        cache->floats.begin() + sample * rowSize))
          fail(nodeLabel(node) + ": the caches differ between samples; graphc takes one "
                                 "rotation for every sample");
      out.assign(cache->floats.begin(), cache->floats.begin() + rowSize);
      return out;
    };
    // The full-width table cat(c, c), per head for 3-D X: [S, (H,) rot].
    auto table = [&](int index, const char *suffix) {
      const std::vector<float> c = rows(index);
      std::vector<float> full;
      for (int64_t i = 0; i < seq; ++i)
        for (int64_t h = 0; h < (packed ? heads : 1); ++h)
          for (int copy = 0; copy < 2; ++copy)
            full.insert(full.end(), c.begin() + i * half, c.begin() + (i + 1) * half);
      return frozenTable(node, node.output(0) + suffix,
                         packed ? std::vector<int64_t>{seq, heads, rot}
                                : std::vector<int64_t>{seq, rot},
                         std::move(full));
    };
    Value cosTable = table(1, "@cos"), sinTable = table(2, "@sin");
    // X as [B, H, S, D] or [B, S, H, D]: the head's features last.
    std::vector<int64_t> viewDims =
        packed ? std::vector<int64_t>{xs[0], seq, heads, depth} : std::vector<int64_t>(xs);
    Value view = packed ? b.create<ReshapeOp>(loc, f32(viewDims), x).getResult() : x;
    const int64_t last = int64_t(viewDims.size()) - 1;
    std::vector<int64_t> partDims = viewDims;
    partDims[last] = rot;
    Value part = rot == depth ? view
                              : b.create<SliceOp>(loc, f32(partDims), view,
                                                  b.getI64IntegerAttr(last), b.getI64IntegerAttr(0))
                                    .getResult();
    const bool interleaved = intAttr(node, "interleaved", 0) != 0;
    const int64_t pairs =
        std::accumulate(partDims.begin(), partDims.end() - 1, int64_t{1}, std::multiplies<>());
    // Interleaved pairs (x[2i], x[2i+1]) as halves: [N, half, 2] transposed to [N, 2, half].
    auto regroup = [&](Value v, std::vector<int64_t> from, std::vector<int64_t> to) -> Value {
      Value grouped = b.create<ReshapeOp>(loc, f32({pairs, from[0], from[1]}), v);
      Value swapped = b.create<TransposeOp>(loc, f32({pairs, to[0], to[1]}), grouped,
                                            b.getDenseI64ArrayAttr({0, 2, 1}));
      return b.create<ReshapeOp>(loc, f32(partDims), swapped);
    };
    if (interleaved)
      part = regroup(part, {half, 2}, {2, half});
    Value rotated = b.create<RotaryOp>(loc, part.getType(), part, cosTable, sinTable, false);
    if (interleaved)
      rotated = regroup(rotated, {2, half}, {half, 2});
    Value out = rotated;
    if (rot < depth) {
      std::vector<int64_t> restDims = viewDims;
      restDims[last] = depth - rot;
      Value rest = b.create<SliceOp>(loc, f32(restDims), view, b.getI64IntegerAttr(last),
                                     b.getI64IntegerAttr(rot));
      out = b.create<ConcatOp>(loc, f32(viewDims), ValueRange{rotated, rest},
                               b.getI64IntegerAttr(last));
    }
    return packed ? b.create<ReshapeOp>(loc, x.getType(), out).getResult() : out;
  }

  /// An Attention node's attn_mask (input 3), seen as [batch, 1, queries, keys] with batch 1
  /// or B and queries 1 or S: `value` that mask (null when there is none or it is causal),
  /// `fills` when it is a computed bool mask (true: attend) rather than an additive one.
  struct AttentionMask {
    Value value;
    int64_t batch = 1, queries = 1;
    bool fills = false, causal = false;
  };
  AttentionMask attentionMask(const onnx::NodeProto &node, int64_t samples, int64_t queries,
                              int64_t keys) {
    AttentionMask mask;
    if (node.input_size() < 4 || node.input(3).empty())
      return mask;
    const std::string &name = node.input(3);
    const HostTensor *known = values.count(name) ? nullptr : constants.lookup(name);
    std::vector<int64_t> dims = known ? known->dims : shapeOf(valueOf(node, 3));
    const std::string shapeText = listText(dims);
    if (dims.size() > 4)
      fail(nodeLabel(node) + ": attn_mask " + shapeText + " has more than 4 axes");
    dims.insert(dims.begin(), 4 - dims.size(), 1);
    const int64_t batch = dims[0];
    if ((batch != 1 && batch != samples) || dims[1] != 1 || (dims[2] != 1 && dims[2] != queries) ||
        dims[3] != keys)
      fail(nodeLabel(node) + ": attn_mask " + shapeText + " is not supported; graphc takes " +
           "masks shared by the heads, [" + std::to_string(samples) + " or 1, 1, " +
           std::to_string(queries) + " or 1, " + std::to_string(keys) + "] and their broadcasts");
    mask.batch = batch;
    mask.queries = dims[2];
    if (known) {
      // A constant: the causal pattern (attend on and below the diagonal; a float mask's
      // masked entries -inf or at most -1e9) makes the softmax causal; else it is added,
      // a bool one as 0 and the lowest float, infinities as the largest finite floats.
      const bool isBool = known->dataType == onnx::TensorProto::BOOL;
      if (!isBool && known->dataType != onnx::TensorProto::FLOAT)
        fail(nodeLabel(node) + ": attn_mask must be bool or float32");
      const size_t count = size_t(batch * dims[2] * keys);
      if ((isBool ? known->bools.size() : known->floats.size()) != count)
        fail(nodeLabel(node) + ": attn_mask " + shapeText + " does not hold " +
             std::to_string(count) + " values");
      std::vector<float> additive(count);
      for (size_t i = 0; i < count; ++i) {
        const float v = isBool ? 0.0f : known->floats[i];
        additive[i] = isBool ? (known->bools[i] ? 0.0f : std::numeric_limits<float>::lowest())
                      : std::isinf(v) ? (v > 0 ? std::numeric_limits<float>::max()
                                               : std::numeric_limits<float>::lowest())
                                      : v;
      }
      bool causalPattern = batch == 1 && dims[2] == queries && queries == keys;
      for (int64_t i = 0; causalPattern && i < queries; ++i)
        for (int64_t j = 0; causalPattern && j < keys; ++j) {
          const float v = additive[size_t(i * keys + j)];
          causalPattern = j <= i ? v == 0.0f : v <= -1e9f;
        }
      if (causalPattern) {
        mask.causal = true;
        return mask;
      }
      mask.value =
          frozenTable(node, name + "@additive", {batch, dims[2], keys}, std::move(additive));
      return mask;
    }
    mask.value = valueOf(node, 3);
    mask.fills = producesBool(name);
    return mask;
  }

  /// Whether computed value `name` is a bool tensor (held as 0 and 1): the output of a
  /// comparison, Not, or a Cast to bool, through views that keep its values.
  bool producesBool(std::string name) {
    for (;;) {
      auto p = producer.find(name);
      if (p == producer.end())
        return false;
      const onnx::NodeProto &n = graph->node(p->second);
      const std::string &op = n.op_type();
      if (op == "Equal" || op == "Not" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
          op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor")
        return true;
      if (op == "Cast")
        return intAttr(n, "to", 0) == onnx::TensorProto::BOOL;
      if ((op != "Reshape" && op != "Unsqueeze" && op != "Squeeze" && op != "Identity" &&
           op != "Expand" && op != "Flatten") ||
          n.input_size() < 1)
        return false;
      name = n.input(0);
    }
  }

  /// Opset 23's Attention: softmax(scale Q K^T) V per head, as the chain the importer builds
  /// for an exported attention (batch_matmul of Q and K^T, scale, softmax over the keys,
  /// batch_matmul by V), which graphc-fuse-attention turns into one graph.attention. Q, K, V
  /// are [B, H, S, D] or, with q_num_heads and kv_num_heads, [B, S, H * D] (viewed as [B, H,
  /// S, D]); fewer key/value heads than query heads (grouped-query and multi-query attention)
  /// repeat each key/value head for H_q / H_kv consecutive query heads (broadcastTo, whose
  /// gradient sums the copies); `scale` defaults to 1 / sqrt(D); `is_causal` (queries and keys
  /// of one length) masks the later keys, and so does an attn_mask constant whose pattern
  /// is causal. Any other attn_mask shared by the heads ([S, L], [B, 1, S, L], [B, 1, 1, L]
  /// and other broadcasts of them) is added to the scaled scores (a float mask; a constant
  /// bool one as 0 and the lowest float) or, computed and bool (a padding mask from the token
  /// ids), fills the scores where it is false with the lowest float: the broadcasts the
  /// importers build for exported masks, which graph.attention takes as its bias. A
  /// key/value cache (past_key, past_value, nonpad_kv_seqlen), `softcap`, a mask per head
  /// and the outputs after Y are refused.
  Value onnxAttention(const onnx::NodeProto &node, Location loc) {
    for (int i = 4; i < node.input_size(); ++i)
      if (!node.input(i).empty())
        fail(nodeLabel(node) + ": input " + std::to_string(i) +
             " (a key/value cache) is not supported: it belongs to inference");
    for (int i = 1; i < node.output_size(); ++i)
      if (!node.output(i).empty() && readers.count(node.output(i)))
        fail(nodeLabel(node) + ": output " + std::to_string(i) +
             " (present_key, present_value or qk_matmul_output) is not supported");
    if (floatAttr(node, "softcap", 0.0f) != 0.0f)
      refuseAttr(node, "softcap", "is not supported");
    Value q = valueOf(node, 0), k = valueOf(node, 1), v = valueOf(node, 2);
    auto qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
    const bool packed = qs.size() == 3;
    if (qs.size() != ks.size() || qs.size() != vs.size() || (qs.size() != 3 && qs.size() != 4))
      fail(nodeLabel(node) + ": Q, K and V must all be [B, H, S, D] or all [B, S, H * D], not " +
           typeString(q.getType()) + ", " + typeString(k.getType()) + ", " +
           typeString(v.getType()));
    // [B, S, H * D] as [B, H, S, D].
    auto heads = [&](Value x, const char *attr) -> Value {
      auto xs = shapeOf(x);
      const int64_t h = intAttr(node, attr, 0);
      if (h < 1 || xs[2] % h != 0)
        refuseAttr(node, attr,
                   "= " + std::to_string(h) + " must divide the hidden size " +
                       std::to_string(xs[2]) + " of the 3-D inputs");
      Value split = b.create<ReshapeOp>(loc, f32({xs[0], xs[1], h, xs[2] / h}), x);
      return b.create<TransposeOp>(loc, f32({xs[0], h, xs[1], xs[2] / h}), split,
                                   b.getDenseI64ArrayAttr({0, 2, 1, 3}));
    };
    if (packed) {
      q = heads(q, "q_num_heads");
      k = heads(k, "kv_num_heads");
      v = heads(v, "kv_num_heads");
      qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
    }
    const int64_t batch = qs[0], qHeads = qs[1], queries = qs[2], depth = qs[3];
    const int64_t kvHeads = ks[1], keys = ks[2], valueDepth = vs[3];
    if (ks[0] != batch || vs[0] != batch || vs[1] != kvHeads || vs[2] != keys || ks[3] != depth ||
        kvHeads < 1 || qHeads % kvHeads != 0)
      fail(nodeLabel(node) + ": Q " + typeString(q.getType()) + ", K " + typeString(k.getType()) +
           " and V " + typeString(v.getType()) +
           " do not agree (one batch, key/value heads dividing the query heads, one head "
           "size for Q and K, one length for K and V)");
    bool causal = intAttr(node, "is_causal", 0) != 0;
    AttentionMask mask = attentionMask(node, batch, queries, keys);
    if (mask.causal)
      causal = true;
    if (causal && queries != keys)
      refuseAttr(node, "is_causal",
                 "with " + std::to_string(queries) + " queries and " + std::to_string(keys) +
                     " keys is not supported (a causal mask over one sequence only)");
    const float scale = floatAttr(node, "scale", 1.0f / std::sqrt(float(depth)));
    // Each key/value head repeated for its H_q / H_kv query heads: [B, H_kv, 1, L, D] to
    // [B, H_kv, n_rep, L, D], viewed as [B, H_q, L, D].
    auto repeated = [&](Value x, int64_t width) -> Value {
      if (qHeads == kvHeads)
        return x;
      Value one = b.create<ReshapeOp>(loc, f32({batch, kvHeads, 1, keys, width}), x);
      Value copies = broadcastTo(loc, one, {batch, kvHeads, qHeads / kvHeads, keys, width});
      return b.create<ReshapeOp>(loc, f32({batch, qHeads, keys, width}), copies);
    };
    const int64_t slices = batch * qHeads;
    Value query = b.create<ReshapeOp>(loc, f32({slices, queries, depth}), q);
    Value key = b.create<ReshapeOp>(loc, f32({slices, keys, depth}), repeated(k, depth));
    Value value =
        b.create<ReshapeOp>(loc, f32({slices, keys, valueDepth}), repeated(v, valueDepth));
    Value scores = b.create<BatchMatmulOp>(loc, f32({slices, queries, keys}), query, key,
                                           UnitAttr(), b.getUnitAttr());
    Value scaled = b.create<ScaleOp>(loc, scores.getType(), scores, b.getF32FloatAttr(scale));
    if (mask.value) {
      // The mask [mb, 1, ms, L] copied to every head (and sample, where mb = 1) of the
      // [B H, S, L] scores: batch_matmul(ones [mb, B / mb H (S / ms), 1], mask as [mb, 1,
      // ms L]), the form graphc-fuse-attention takes as graph.attention's bias.
      auto broadcastToScores = [&](Value m) -> Value {
        const int64_t rows = batch / mask.batch * qHeads * (queries / mask.queries);
        Value ones = b.create<FillOp>(loc, f32({mask.batch, rows, 1}), b.getF32FloatAttr(1.0f));
        Value row = b.create<ReshapeOp>(loc, f32({mask.batch, 1, mask.queries * keys}), m);
        Value copies = b.create<BatchMatmulOp>(loc, f32({mask.batch, rows, mask.queries * keys}),
                                               ones, row, UnitAttr(), UnitAttr());
        return b.create<ReshapeOp>(loc, scaled.getType(), copies);
      };
      if (!mask.fills) {
        scaled = b.create<AddOp>(loc, scaled.getType(), scaled, broadcastToScores(mask.value));
      } else {
        // scores * keep + lowest * (1 - keep): the masked_fill as the importers hold it.
        const float lowest = std::numeric_limits<float>::lowest();
        Value keep = mask.value;
        Value masked = b.create<ScaleOp>(loc, keep.getType(), keep, b.getF32FloatAttr(-1.0f),
                                         b.getF32FloatAttr(1.0f));
        Value fill = b.create<ScaleOp>(loc, keep.getType(), masked, b.getF32FloatAttr(lowest));
        Value kept = b.create<MulOp>(loc, scaled.getType(), scaled, broadcastToScores(keep));
        scaled = b.create<AddOp>(loc, scaled.getType(), broadcastToScores(fill), kept);
      }
    }
    Value probabilities = b.create<SoftmaxOp>(loc, scaled.getType(), scaled, b.getI64IntegerAttr(2),
                                              causal ? b.getUnitAttr() : UnitAttr());
    Value out = b.create<BatchMatmulOp>(loc, f32({slices, queries, valueDepth}), probabilities,
                                        value, UnitAttr(), UnitAttr());
    Value perHead = b.create<ReshapeOp>(loc, f32({batch, qHeads, queries, valueDepth}), out);
    if (!packed)
      return perHead;
    Value bySequence = b.create<TransposeOp>(loc, f32({batch, queries, qHeads, valueDepth}),
                                             perHead, b.getDenseI64ArrayAttr({0, 2, 1, 3}));
    return b.create<ReshapeOp>(loc, f32({batch, queries, qHeads * valueDepth}), bySequence);
  }

  /// The model's graph with every call of a model-local function (ModelProto.functions, IR 8:
  /// what onnxscript and the dynamo exporter write when they do not inline, and nested calls
  /// inside functions) replaced by the function's body, as the ONNX IR defines a call: the
  /// body's inputs and outputs are the caller's, its other values renamed apart (a prefix per
  /// call), and an attribute that refers to a function attribute (ref_attr_name) takes the
  /// caller's value, else the function's default, else is left out. The graph itself when
  /// there are no functions; the copy keeps the graph's inputs and outputs but not its
  /// initializers (read from the model). O(nodes after inlining).
  const onnx::GraphProto &withFunctionsInlined(const onnx::ModelProto &model) {
    if (model.functions_size() == 0)
      return model.graph();
    std::map<std::pair<std::string, std::string>, const onnx::FunctionProto *> functions;
    for (const auto &f : model.functions()) {
      for (const auto &o : f.opset_import())
        if ((o.domain().empty() || o.domain() == "ai.onnx") && o.version() != opset)
          fail("local function \"" + f.name() + "\" imports opset " + std::to_string(o.version()) +
               " where the model imports " + std::to_string(opset) +
               "; graphc reads one opset: export with one opset_version");
      if (!functions.emplace(std::pair{f.domain(), f.name()}, &f).second)
        fail("local function \"" + f.name() +
             "\" is defined twice (overloads, IR 10, are not "
             "supported)");
    }
    inlined.Clear();
    inlined.set_name(model.graph().name());
    *inlined.mutable_input() = model.graph().input();
    *inlined.mutable_output() = model.graph().output();
    int calls = 0;
    std::function<void(const onnx::NodeProto &, int)> emit = [&](const onnx::NodeProto &node,
                                                                 int depth) {
      auto it = functions.find({node.domain(), node.op_type()});
      if (it == functions.end()) {
        // (Calls nested d deep can multiply the nodes by their fan-out to the d-th power.)
        if (inlined.node_size() >= kMaxInlinedNodes)
          fail("inlining the local functions gives more than " + std::to_string(kMaxInlinedNodes) +
               " nodes");
        *inlined.add_node() = node;
        return;
      }
      const onnx::FunctionProto &f = *it->second;
      if (depth >= 32)
        fail("local function \"" + f.name() +
             "\" nests more than 32 calls deep (a function that calls itself?)");
      if (node.input_size() > f.input_size() || node.output_size() > f.output_size())
        fail(nodeLabel(node) + " passes " + std::to_string(node.input_size()) + " inputs and " +
             std::to_string(node.output_size()) + " outputs to local function \"" + f.name() +
             "\", which has " + std::to_string(f.input_size()) + " and " +
             std::to_string(f.output_size()));
      const std::string prefix =
          (node.name().empty() ? node.output_size() > 0 ? node.output(0) : node.op_type()
                               : node.name()) +
          "/" + f.name() + "#" + std::to_string(calls++) + "/";
      std::map<std::string, std::string> rename;
      for (int i = 0; i < f.input_size(); ++i)
        rename[f.input(i)] = i < node.input_size() ? node.input(i) : "";
      for (int i = 0; i < f.output_size(); ++i)
        if (i < node.output_size() && !node.output(i).empty())
          rename[f.output(i)] = node.output(i);
      auto renamed = [&](const std::string &name) {
        if (name.empty())
          return name;
        auto r = rename.find(name);
        return r != rename.end() ? r->second : prefix + name;
      };
      std::map<std::string, const onnx::AttributeProto *> given;
      for (const auto &a : node.attribute())
        given[a.name()] = &a;
      const std::map<std::string, onnx::AttributeProto> defaults = functionDefaults(f);
      for (const auto &bodyNode : f.node()) {
        onnx::NodeProto copy = bodyNode;
        copy.set_name(prefix + (bodyNode.name().empty() ? bodyNode.op_type() : bodyNode.name()));
        for (auto &in : *copy.mutable_input())
          in = renamed(in);
        for (auto &out : *copy.mutable_output())
          out = renamed(out);
        copy.clear_attribute();
        for (const auto &a : bodyNode.attribute()) {
          if (a.ref_attr_name().empty()) {
            *copy.add_attribute() = a;
            continue;
          }
          auto value = given.find(a.ref_attr_name());
          auto fallback = defaults.find(a.ref_attr_name());
          const onnx::AttributeProto *from = value != given.end()         ? value->second
                                             : fallback != defaults.end() ? &fallback->second
                                                                          : nullptr;
          if (!from)
            continue;
          onnx::AttributeProto *set = copy.add_attribute();
          *set = *from;
          set->set_name(a.name());
        }
        emit(copy, depth + 1);
      }
    };
    for (const auto &node : model.graph().node())
      emit(node, 0);
    return inlined;
  }

  /// Function `f`'s attribute defaults: FunctionProto.attribute_proto (field 11, IR 9), which
  /// the IR 8 schema graphc is built with keeps among the unknown fields.
  static std::map<std::string, onnx::AttributeProto>
  functionDefaults(const onnx::FunctionProto &f) {
    std::map<std::string, onnx::AttributeProto> defaults;
    const google::protobuf::UnknownFieldSet &unknown = f.GetReflection()->GetUnknownFields(f);
    for (int i = 0; i < unknown.field_count(); ++i) {
      const google::protobuf::UnknownField &field = unknown.field(i);
      onnx::AttributeProto a;
      if (field.number() == 11 &&
          field.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED &&
          a.ParseFromString(field.length_delimited()))
        defaults[a.name()] = a;
    }
    return defaults;
  }

  void define(const onnx::NodeProto &node, Value v) {
    if (node.output_size() < 1)
      fail(nodeLabel(node) + " has no output");
    values[node.output(0)] = v;
  }

  /// The [start, end) ranges of a Slice node over an input of shape `dims`, one per sliced
  /// axis (starts/ends/axes constants, step 1; negative and out-of-range indices clamped as
  /// ONNX says).
  struct SliceRange {
    int64_t axis, start, end;
  };
  std::vector<SliceRange> sliceRanges(const onnx::NodeProto &node,
                                      const std::vector<int64_t> &dims) {
    if (opset < 10)
      fail(nodeLabel(node) + ": Slice before opset 10 is not supported");
    const HostTensor &starts = constantOf(node, 1), &ends = constantOf(node, 2);
    std::vector<int64_t> axes;
    if (node.input_size() > 3 && !node.input(3).empty())
      axes = constantOf(node, 3).ints;
    else
      for (size_t i = 0; i < starts.ints.size(); ++i)
        axes.push_back(int64_t(i));
    if (node.input_size() > 4 && !node.input(4).empty())
      for (int64_t st : constantOf(node, 4).ints)
        if (st != 1)
          fail(nodeLabel(node) + ": only step 1 is supported");
    if (axes.size() != starts.ints.size() || axes.size() != ends.ints.size())
      fail(nodeLabel(node) + ": starts, ends and axes differ in length");
    int64_t rank = dims.size();
    std::vector<SliceRange> ranges;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
      if (axis < 0 || axis >= rank)
        fail(nodeLabel(node) + ": axis " + std::to_string(axes[i]) + " is out of range");
      int64_t dim = dims[axis];
      auto clampIndex = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + dim : v, 0, dim); };
      int64_t start = clampIndex(starts.ints[i]), end = clampIndex(ends.ints[i]);
      if (end <= start)
        fail(nodeLabel(node) + ": empty slice along axis " + std::to_string(axis));
      ranges.push_back({axis, start, end});
    }
    return ranges;
  }

  /// nn.Embedding as PyTorch exports it: Gather(weight, token_ids) along axis 0, where the
  /// weight is a float32 initializer (a trained parameter, shared by every Gather that reads
  /// it) and the ids are an integer graph input. Becomes graph.embedding; the training binary
  /// checks each id against the table's rows before step 1.
  void importEmbedding(const onnx::NodeProto &node, Location loc) {
    if (intAttr(node, "axis", 0) != 0)
      refuseAttr(node, "axis", "must be 0 when gathering rows of an embedding table");
    const std::string &tableName = node.input(0);
    if (!values.count(tableName) && (!initializers.count(tableName) ||
                                     constants.at(tableName).dataType != onnx::TensorProto::FLOAT))
      fail(nodeLabel(node) + ": the embedding table \"" + tableName +
           "\" must be a float32 initializer (the indices are the integer graph input \"" +
           node.input(1) + "\")");
    Value table = parameterNamed(node, tableName);
    auto tableShape = shapeOf(table);
    if (tableShape.size() != 2)
      fail(nodeLabel(node) + ": the embedding table \"" + tableName +
           "\" must be [vocabulary, features], got rank " + std::to_string(tableShape.size()));
    if (tableShape[0] > (int64_t{1} << 24))
      fail(nodeLabel(node) + ": the embedding table \"" + tableName + "\" has " +
           std::to_string(tableShape[0]) +
           " rows; graphc supports at most 2^24 (token ids are exact float32 values)");
    Value ids = values.at(node.input(1));
    auto rows = shapeOf(ids);
    rows.push_back(tableShape[1]);
    define(node, b.create<EmbeddingOp>(loc, f32(rows), ids, table));
  }

  /// ONNX LSTM and GRU (layout 0: X is [steps, batch, features]), unrolled by
  /// importers/common/RecurrentUnroll. Gate blocks are ONNX's (LSTM i, o, f, c; GRU z, r, h),
  /// which is how PyTorch exports nn.LSTM / nn.GRU. Outputs: Y [steps, directions, batch,
  /// hidden], Y_h (and LSTM's Y_c) [directions, batch, hidden], each built only when read.
  void importRecurrent(const onnx::NodeProto &node, Location loc) {
    bool lstm = node.op_type() == "LSTM";
    int64_t gates = lstm ? 4 : 3;
    int64_t hidden = intAttr(node, "hidden_size", 0);
    if (hidden < 1)
      refuseAttr(node, "hidden_size", "must be positive");
    if (intAttr(node, "layout", 0) != 0)
      refuseAttr(node, "layout", "= 1 is not supported (PyTorch exports layout 0)");
    if (findAttr(node, "clip"))
      refuseAttr(node, "clip", "is not supported");
    if (lstm && intAttr(node, "input_forget", 0) != 0)
      refuseAttr(node, "input_forget", "= 1 is not supported");
    std::string direction = "forward";
    if (auto *a = findAttr(node, "direction"))
      direction = a->s();
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
      refuseAttr(node, "direction", "= " + direction + " is not supported");
    int64_t dirs = direction == "bidirectional" ? 2 : 1;
    // activations: f (gates), g (candidate), and for LSTM h (= g here) per direction.
    std::vector<std::string> acts;
    if (auto *a = findAttr(node, "activations"))
      for (const std::string &name : a->strings())
        acts.push_back(name);
    size_t perDir = lstm ? 3 : 2;
    if (acts.empty()) // the defaults, per direction
      for (int64_t d = 0; d < dirs; ++d)
        for (size_t i = 0; i < perDir; ++i)
          acts.push_back(i == 0 ? "Sigmoid" : "Tanh");
    if (acts.size() != perDir * size_t(dirs))
      refuseAttr(node, "activations", "must list " + std::to_string(perDir * dirs) + " names");
    for (size_t i = 0; i < acts.size(); ++i) {
      if (acts[i] != "Sigmoid" && acts[i] != "Tanh" && acts[i] != "Relu")
        refuseAttr(node, "activations", "= " + acts[i] + " is not supported (Sigmoid, Tanh, Relu)");
      if (i % perDir == 2 && acts[i] != acts[i - 1])
        refuseAttr(node, "activations", "must use one function for the cell input and output");
      if (acts[i] != acts[i % perDir])
        refuseAttr(node, "activations", "must be the same in both directions");
    }
    auto activation = [](std::string name) -> RecurrentActivation {
      return [name](OpBuilder &b, Location loc, Value x) -> Value {
        if (name == "Sigmoid")
          return b.create<SigmoidOp>(loc, x.getType(), x);
        if (name == "Relu")
          return b.create<ReluOp>(loc, x.getType(), x);
        return b.create<TanhOp>(loc, x.getType(), x);
      };
    };
    for (int i : {4, lstm ? 7 : -1})
      if (i > 0 && node.input_size() > i && !node.input(i).empty())
        fail(nodeLabel(node) + ": input " + std::to_string(i) +
             (i == 4 ? " (sequence_lens) is not supported: every sequence has the full length"
                     : " (peepholes) is not supported"));
    for (int i : {5, lstm ? 6 : -1}) {
      if (i < 0 || node.input_size() <= i || node.input(i).empty())
        continue;
      if (!isConstant(node.input(i)))
        fail(nodeLabel(node) + ": input " + std::to_string(i) +
             " (initial state) must be a constant zero tensor; graphc starts from zeros");
      for (float v : constants.at(node.input(i)).floats)
        if (v != 0.0f)
          fail(nodeLabel(node) + ": input " + std::to_string(i) +
               " (initial state) must be zero; graphc starts from zeros");
    }

    Value x = valueOf(node, 0);
    auto xs = shapeOf(x);
    if (xs.size() != 3)
      fail(nodeLabel(node) + ": X must be [steps, batch, features], got " +
           typeString(x.getType()));
    int64_t steps = xs[0], batch = xs[1], features = xs[2];
    Value w = computedOrParameter(node, 1), r = computedOrParameter(node, 2);
    Value bias = node.input_size() > 3 && !node.input(3).empty() ? computedOrParameter(node, 3)
                                                                 : Value();
    auto expect = [&](Value v, std::vector<int64_t> shape, const char *what) {
      if (shapeOf(v) != shape)
        fail(nodeLabel(node) + ": " + what + " is " + typeString(v.getType()) +
             ", expected " + typeString(f32(shape)));
    };
    expect(w, {dirs, gates * hidden, features}, "W");
    expect(r, {dirs, gates * hidden, hidden}, "R");
    if (bias)
      expect(bias, {dirs, 2 * gates * hidden}, "B");
    // Direction d's block of a [dirs, ...] weight, as a [...] tensor.
    auto perDirection = [&](Value v, int64_t d) -> Value {
      auto vs = shapeOf(v);
      std::vector<int64_t> one = vs, rest(vs.begin() + 1, vs.end());
      one[0] = 1;
      Value part = dirs == 1 ? v
                             : b.create<SliceOp>(loc, f32(one), v, b.getI64IntegerAttr(0),
                                                 b.getI64IntegerAttr(d))
                                   .getResult();
      return b.create<ReshapeOp>(loc, f32(rest), part);
    };

    bool wantY = !node.output(0).empty() && !readers[node.output(0)].empty();
    Value batchMajor = b.create<TransposeOp>(loc, f32({batch, steps, features}), x,
                                             b.getDenseI64ArrayAttr({1, 0, 2}));
    SmallVector<Value> ys, hs, cs;
    for (int64_t d = 0; d < dirs; ++d) {
      RecurrentLayer spec;
      spec.cell = lstm ? RecurrentCell::Lstm : RecurrentCell::Gru;
      spec.units = hidden;
      spec.gateSlots = lstm ? std::array<int, 4>{0, 2, 3, 1} : std::array<int, 4>{0, 1, 2, 0};
      spec.kernel = perDirection(w, d);
      spec.recurrentKernel = perDirection(r, d);
      spec.transposedKernels = true;
      if (bias) {
        Value both = perDirection(bias, d); // [Wb; Rb]
        spec.bias = b.create<SliceOp>(loc, f32({gates * hidden}), both, b.getI64IntegerAttr(0),
                                      b.getI64IntegerAttr(0));
        spec.recurrentBias = b.create<SliceOp>(loc, f32({gates * hidden}), both,
                                               b.getI64IntegerAttr(0),
                                               b.getI64IntegerAttr(gates * hidden));
      }
      spec.resetAfter = !lstm && intAttr(node, "linear_before_reset", 0) != 0;
      spec.gate = activation(acts[0]);
      spec.candidate = activation(acts[1]);
      spec.reverse = direction == "reverse" || d == 1;
      spec.returnSequences = wantY;
      spec.sequenceInInputOrder = true;
      spec.name = node.name().empty() ? node.output(0) : node.name();
      if (dirs == 2)
        spec.name += d == 0 ? "/forward" : "/backward";
      RecurrentOutputs out = unrollRecurrent(b, spec, batchMajor);
      if (wantY) {
        Value timeMajor = b.create<TransposeOp>(loc, f32({steps, batch, hidden}), out.sequence,
                                                b.getDenseI64ArrayAttr({1, 0, 2}));
        ys.push_back(b.create<ReshapeOp>(loc, f32({steps, 1, batch, hidden}), timeMajor));
      }
      hs.push_back(b.create<ReshapeOp>(loc, f32({1, batch, hidden}), out.lastH));
      if (out.lastC)
        cs.push_back(b.create<ReshapeOp>(loc, f32({1, batch, hidden}), out.lastC));
    }
    auto join = [&](ArrayRef<Value> parts, int64_t axis) -> Value {
      if (parts.size() == 1)
        return parts[0];
      auto shape = shapeOf(parts[0]);
      shape[axis] *= int64_t(parts.size());
      return b.create<ConcatOp>(loc, f32(shape), parts, b.getI64IntegerAttr(axis));
    };
    if (wantY)
      values[node.output(0)] = join(ys, 1);
    if (node.output_size() > 1 && !node.output(1).empty())
      values[node.output(1)] = join(hs, 0);
    if (lstm && node.output_size() > 2 && !node.output(2).empty())
      values[node.output(2)] = join(cs, 0);
  }

  /// The rank of a convolution's, transposed convolution's or pooling's computed input (one
  /// with an output); 0 for any other node.
  size_t spatialInputRank(const onnx::NodeProto &node) {
    static const std::set<std::string> kSpatial = {
        "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"};
    if (!kSpatial.count(node.op_type()) || node.input_size() < 1 || !values.count(node.input(0)) ||
        node.output_size() < 1 || node.output(0).empty())
      return 0;
    return shapeOf(values.at(node.input(0))).size();
  }

  /// A 1-D convolution, transposed convolution or pooling (PyTorch's nn.Conv1d,
  /// ConvTranspose1d, MaxPool1d, AvgPool1d, AdaptiveAvgPool1d(1) and AdaptiveMaxPool1d(1): an
  /// [N, C, L] input) as the 2-D node on the height-1 view [N, C, 1, L]: kernel, stride and
  /// dilation 1 and no padding on the new axis, whose output [N, C', 1, L'] is viewed back as
  /// [N, C', L']. The views are reshapes (free), and a weight keeps its ONNX shape [O, I, K]
  /// (its .npy file too), read through an [O, I, 1, K] view, so the 2-D kernels and their
  /// gradients do the work. Returns false for anything else.
  bool importOneD(const onnx::NodeProto &node, int index) {
    if (spatialInputRank(node) != 3)
      return false;
    const std::string &op = node.op_type();
    Location loc = NameLoc::get(b.getStringAttr(node.name().empty() ? op : node.name()));
    auto heightOne = [&](const std::string &name, Value v) {
      std::vector<int64_t> dims = shapeOf(v);
      dims.insert(dims.begin() + 2, 1);
      const std::string viewed = name + "@2d";
      values[viewed] = b.create<ReshapeOp>(loc, f32(dims), v);
      return viewed;
    };
    onnx::NodeProto twoD = node;
    twoD.set_input(0, heightOne(node.input(0), valueOf(node, 0)));
    if ((op == "Conv" || op == "ConvTranspose") && node.input_size() > 1) {
      Value w = parameterOf(node, 1);
      if (shapeOf(w).size() != 3)
        fail(nodeLabel(node) + ": a 1-D input needs an [O, I, K] weight, got " +
             typeString(w.getType()));
      twoD.set_input(1, heightOne(node.input(1), w));
    }
    twoD.set_output(0, node.output(0) + "@2d");
    // Each per-axis attribute gains the new axis first (pads: begin and end of each axis).
    for (onnx::AttributeProto &a : *twoD.mutable_attribute()) {
      const std::string &attr = a.name();
      const bool perAxis = attr == "kernel_shape" || attr == "strides" || attr == "dilations" ||
                           attr == "output_padding" || attr == "output_shape";
      if (!perAxis && attr != "pads")
        continue;
      std::vector<int64_t> old(a.ints().begin(), a.ints().end()), widened;
      if (perAxis) {
        widened = {attr == "output_padding" ? 0 : 1};
        widened.insert(widened.end(), old.begin(), old.end());
      } else if (old.size() == 2) {
        widened = {0, old[0], 0, old[1]};
      } else {
        refuseAttr(node, "pads",
                   "has " + std::to_string(old.size()) + " values; a 1-D input takes 2");
      }
      a.clear_ints();
      for (int64_t v : widened)
        a.add_ints(v);
    }
    importNode(twoD, index);
    Value out = values.at(twoD.output(0));
    std::vector<int64_t> dims = shapeOf(out);
    dims.erase(dims.begin() + 2);
    define(node, b.create<ReshapeOp>(loc, f32(dims), out));
    return true;
  }

  /// A node derived from `origin` (its name, so errors name it): op `op` reading `inputs`,
  /// writing `output`, with the integer-list attributes `lists` and the integer attributes
  /// `ints`.
  static onnx::NodeProto
  derivedSpatialNode(const onnx::NodeProto &origin, const std::string &op,
                     std::vector<std::string> inputs, const std::string &output,
                     const std::map<std::string, std::vector<int64_t>> &lists,
                     const std::map<std::string, int64_t> &ints = {}) {
    onnx::NodeProto node;
    node.set_op_type(op);
    node.set_name(origin.name());
    for (const std::string &in : inputs)
      node.add_input(in);
    node.add_output(output);
    for (const auto &[name, values] : lists) {
      onnx::AttributeProto *a = node.add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : values)
        a->add_ints(v);
    }
    for (const auto &[name, value] : ints) {
      onnx::AttributeProto *a = node.add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(value);
    }
    return node;
  }

  /// nn.ConvTranspose3d on `x` [N, C, D, H, W] (see importThreeD).
  void convTransposeThreeD(const onnx::NodeProto &node, int index, Value x,
                           const std::vector<int64_t> &strides,
                           const std::vector<int64_t> &dilations,
                           const std::vector<int64_t> &pads) {
    Location loc =
        NameLoc::get(b.getStringAttr(node.name().empty() ? "ConvTranspose" : node.name()));
    const std::string out = node.output(0);
    const std::vector<int64_t> xs = shapeOf(x);
    const int64_t n = xs[0], c = xs[1], d = xs[2];
    Value weight = parameterOf(node, 1);
    const std::vector<int64_t> ws = shapeOf(weight); // [C_in, C_out / g, kd, kh, kw]
    const int64_t groups = intAttr(node, "group", 1);
    if (ws.size() != 5 || ws[0] != c)
      fail(nodeLabel(node) + ": a 3-D input " + typeString(x.getType()) +
           " needs a [C_in, C_out / g, kD, kH, kW] weight, got " + typeString(weight.getType()));
    if (groups < 1 || c % groups != 0)
      refuseAttr(node, "group",
                 "= " + std::to_string(groups) + " does not divide the " + std::to_string(c) +
                     " input channels");
    if (findAttr(node, "output_shape"))
      refuseAttr(node, "output_shape", "is not supported; export pads and output_padding");
    if (intsAttr(node, "kernel_shape", {ws[2], ws[3], ws[4]}) !=
        std::vector<int64_t>{ws[2], ws[3], ws[4]})
      refuseAttr(node, "kernel_shape", "does not match the weight " + typeString(weight.getType()));
    const std::vector<int64_t> outPad = intsAttr(node, "output_padding", {0, 0, 0});
    if (outPad.size() != 3)
      refuseAttr(node, "output_padding",
                 "has " + std::to_string(outPad.size()) + " values; a 3-D input takes 3");
    const int64_t kd = ws[2], sd = strides[0], dd = dilations[0];
    if (sd < 1 || dd < 1 || pads[0] < 0 || pads[3] < 0 || outPad[0] < 0 ||
        outPad[0] >= std::max(sd, dd))
      fail(nodeLabel(node) + ": depth stride and dilation must be at least 1, its pads not "
                             "negative, its output_padding below the stride or dilation");
    const int64_t reach = dd * (kd - 1);
    const int64_t depth = (d - 1) * sd + 1 + reach - pads[0] - pads[3] + outPad[0];
    if (depth < 1)
      fail(nodeLabel(node) + ": its pads leave no output depth");
    const std::string in2 = out + "@3d.in", w2 = out + "@3d.w";
    values[in2] = transposedDepthTaps(b, loc, x, kd, sd, dd, pads[0], depth, groups);
    values[w2] = transposedDepthFilter(b, loc, weight, groups);
    convOverDepth(node, index, "ConvTranspose", in2, w2,
                  {{"strides", {strides[1], strides[2]}},
                   {"pads", {pads[1], pads[2], pads[4], pads[5]}},
                   {"dilations", {dilations[1], dilations[2]}},
                   {"output_padding", {outPad[1], outPad[2]}},
                   {"kernel_shape", {ws[3], ws[4]}}},
                  groups, n, depth, loc);
  }

  /// The 2-D `op` (Conv or ConvTranspose) derived from `node`, with `planar` attributes, on
  /// the stacked depth taps `stacked` [N * depth, ...] and the filter view `filter` (and the
  /// node's bias); defines the node's output as its [N * depth, O, H', W'] result moved to
  /// [N, O, depth, H', W'].
  void convOverDepth(const onnx::NodeProto &node, int index, const std::string &op,
                     const std::string &stacked, const std::string &filter,
                     const std::map<std::string, std::vector<int64_t>> &planar, int64_t groups,
                     int64_t n, int64_t depth, Location loc) {
    const std::string out = node.output(0);
    std::vector<std::string> inputs = {stacked, filter};
    if (node.input_size() > 2 && !node.input(2).empty())
      inputs.push_back(node.input(2));
    importNode(derivedSpatialNode(node, op, inputs, out + "@3d", planar, {{"group", groups}}),
               index);
    const std::vector<int64_t> planes = shapeOf(values.at(out + "@3d")); // [N D', O, H', W']
    Value split = b.create<ReshapeOp>(loc, f32({n, depth, planes[1], planes[2], planes[3]}),
                                      values.at(out + "@3d"));
    values[out] = b.create<TransposeOp>(loc, f32({n, planes[1], depth, planes[2], planes[3]}),
                                        split, b.getDenseI64ArrayAttr({0, 2, 1, 3, 4}));
  }

  /// 3-D convolutions and pooling (PyTorch's nn.Conv3d, MaxPool3d, AvgPool3d and
  /// AdaptiveAvg/MaxPool3d(1): an [N, C, D, H, W] input) from the 2-D ops, so that their
  /// kernels, gradients and plans serve volumes too:
  /// - pooling is separable: the 2-D pool over (H, W) on the [N, C * D, H, W] view, then over
  ///   D by a (kd, 1) window on the [N, C, D, H' * W'] view. A box's maximum is the maximum over
  ///   its depth of the (H, W) windows' maxima; its average the average of their averages, the
  ///   divisor without padding (count_include_pad = 0) being the product of the per-axis valid
  ///   counts, which is the box's.
  /// - a convolution stacks, for each of the kd depth taps, the input's depth slice that tap
  ///   reads for every output depth (zero-padded, strided, dilated), with the channels grouped
  ///   as (group, tap, channel), into [N * D', kd * C, H, W], and runs one 2-D convolution with
  ///   the filter viewed as [O, kd * C / g, kh, kw] (a transpose of the [O, C / g, kd, kh, kw]
  ///   weight, which keeps its ONNX shape); its output [N * D', O, H', W'] is transposed to
  ///   [N, O, D', H', W']. The stack holds kd copies of the (depth-strided) input: im2col
  ///   along depth only, the 2-D convolution doing the rest.
  /// - a transposed convolution (nn.ConvTranspose3d) is, along depth, the stride-1 convolution
  ///   with the flipped taps of the input spread by the stride (zeros between its depths) and
  ///   padded by dd (kd - 1) - pads (cropped where negative), output_padding more at the back;
  ///   its taps are stacked as above under one 2-D transposed convolution, whose filter is the
  ///   [C_in, C_out / g, kd, kh, kw] weight with its taps reversed, viewed as
  ///   [kd * C_in, C_out / g, kh, kw] (rows as group, tap, channel).
  /// Returns false for anything else.
  bool importThreeD(const onnx::NodeProto &node, int index) {
    if (spatialInputRank(node) != 5)
      return false;
    const std::string &op = node.op_type();
    Location loc = NameLoc::get(b.getStringAttr(node.name().empty() ? op : node.name()));
    if (node.output_size() > 1 && !node.output(1).empty())
      fail(nodeLabel(node) + ": the Indices output is not supported");
    Value x = valueOf(node, 0);
    const std::vector<int64_t> xs = shapeOf(x);
    const int64_t n = xs[0], c = xs[1], d = xs[2], h = xs[3], w = xs[4];
    auto view = [&](const std::string &name, Value v, std::vector<int64_t> dims) {
      values[name] = b.create<ReshapeOp>(loc, f32(dims), v);
      return name;
    };
    const std::string out = node.output(0);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
      importNode(derivedSpatialNode(node, op, {view(out + "@3d.in", x, {n, c, d, h * w})},
                                    out + "@3d", {}),
                 index);
      values[out] = b.create<ReshapeOp>(loc, f32({n, c, 1, 1, 1}), values.at(out + "@3d"));
      return true;
    }
    if (auto *a = findAttr(node, "auto_pad"); a && a->s() != "NOTSET")
      refuseAttr(node, "auto_pad", "= " + a->s() + " is not supported; export explicit pads");
    auto three = [&](const char *name, int64_t dflt) {
      std::vector<int64_t> v = intsAttr(node, name, {dflt, dflt, dflt});
      if (v.size() != 3)
        refuseAttr(node, name, "has " + std::to_string(v.size()) + " values; a 3-D input takes 3");
      return v;
    };
    const std::vector<int64_t> strides = three("strides", 1), dilations = three("dilations", 1);
    const std::vector<int64_t> pads = intsAttr(node, "pads", {0, 0, 0, 0, 0, 0});
    if (pads.size() != 6)
      refuseAttr(node, "pads",
                 "has " + std::to_string(pads.size()) + " values; a 3-D input takes 6");
    if (op == "MaxPool" || op == "AveragePool") {
      const std::vector<int64_t> kernel = intsAttr(node, "kernel_shape", {});
      if (kernel.size() != 3)
        refuseAttr(node, "kernel_shape", "must have 3 values for a 3-D input");
      std::map<std::string, int64_t> flags;
      for (const char *flag : {"ceil_mode", "count_include_pad", "storage_order"})
        if (findAttr(node, flag))
          flags[flag] = intAttr(node, flag, 0);
      auto twoD = [&](int64_t first, int64_t second) {
        return std::vector<int64_t>{first, second};
      };
      std::map<std::string, std::vector<int64_t>> planar = {
          {"kernel_shape", twoD(kernel[1], kernel[2])},
          {"strides", twoD(strides[1], strides[2])},
          {"pads", {pads[1], pads[2], pads[4], pads[5]}}};
      std::map<std::string, std::vector<int64_t>> deep = {{"kernel_shape", twoD(kernel[0], 1)},
                                                          {"strides", twoD(strides[0], 1)},
                                                          {"pads", {pads[0], 0, pads[3], 0}}};
      if (findAttr(node, "dilations")) {
        planar["dilations"] = twoD(dilations[1], dilations[2]);
        deep["dilations"] = twoD(dilations[0], 1);
      }
      importNode(derivedSpatialNode(node, op, {view(out + "@3d.in", x, {n, c * d, h, w})},
                                    out + "@3d.hw", planar, flags),
                 index);
      const std::vector<int64_t> hw = shapeOf(values.at(out + "@3d.hw"));
      importNode(derivedSpatialNode(
                     node, op,
                     {view(out + "@3d.d", values.at(out + "@3d.hw"), {n, c, d, hw[2] * hw[3]})},
                     out + "@3d", deep, flags),
                 index);
      const std::vector<int64_t> pooled = shapeOf(values.at(out + "@3d"));
      values[out] =
          b.create<ReshapeOp>(loc, f32({n, c, pooled[2], hw[2], hw[3]}), values.at(out + "@3d"));
      return true;
    }

    if (op == "ConvTranspose")
      return convTransposeThreeD(node, index, x, strides, dilations, pads), true;

    // Conv.
    Value weight = parameterOf(node, 1);
    const std::vector<int64_t> ws = shapeOf(weight);
    const int64_t groups = intAttr(node, "group", 1);
    if (ws.size() != 5)
      fail(nodeLabel(node) + ": a 3-D input needs an [O, I, kD, kH, kW] weight, got " +
           typeString(weight.getType()));
    if (groups < 1 || ws[0] % groups != 0 || c != ws[1] * groups)
      refuseAttr(node, "group",
                 "= " + std::to_string(groups) + " does not fit input channels " +
                     std::to_string(c) + " and filter " + typeString(weight.getType()));
    if (intsAttr(node, "kernel_shape", {ws[2], ws[3], ws[4]}) !=
        std::vector<int64_t>{ws[2], ws[3], ws[4]})
      refuseAttr(node, "kernel_shape", "does not match the weight " + typeString(weight.getType()));
    const int64_t kd = ws[2], sd = strides[0], dd = dilations[0];
    if (sd < 1 || dd < 1 || pads[0] < 0 || pads[3] < 0)
      fail(nodeLabel(node) + ": depth stride and dilation must be at least 1 and its pads not "
                             "negative");
    const int64_t depth = convOutputSize(d, kd, sd, pads[0], pads[3], dd); // D'
    if (depth < 1)
      fail(nodeLabel(node) + ": filter does not fit its input");
    const std::string in2 = out + "@3d.in", w2 = out + "@3d.w";
    values[in2] = convDepthTaps(b, loc, x, kd, sd, dd, pads[0], pads[3], groups);
    values[w2] = convDepthFilter(b, loc, weight);
    convOverDepth(node, index, "Conv", in2, w2,
                  {{"strides", {strides[1], strides[2]}},
                   {"pads", {pads[1], pads[2], pads[4], pads[5]}},
                   {"dilations", {dilations[1], dilations[2]}},
                   {"kernel_shape", {ws[3], ws[4]}}},
                  groups, n, depth, loc);
    return true;
  }

  void importNode(const onnx::NodeProto &node, int index) {
    if (importOneD(node, index) || importThreeD(node, index))
      return;
    std::string name = node.name().empty() ? node.op_type() + "_" + std::to_string(index)
                                           : node.name();
    Location loc = NameLoc::get(b.getStringAttr(name));
    const std::string &op = node.op_type();
    if (node.output_size() < 1 || node.output(0).empty())
      fail(nodeLabel(node) + " has no output");
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      fail(nodeLabel(node) + " is in domain \"" + node.domain() +
           "\", which is not supported");
    // The operator schemas' input counts (the most over the opsets graphc reads: Dropout's
    // ratio and training_mode since 12, ReduceMean's axes since 18): an input past them makes a
    // malformed node, refused rather than ignored. Concat takes any number.
    static const std::map<std::string, int> kMaxInputs = {{"Add", 2},
                                                          {"AveragePool", 1},
                                                          {"BatchNormalization", 5},
                                                          {"Cast", 1},
                                                          {"Clip", 3},
                                                          {"Constant", 0},
                                                          {"Conv", 3},
                                                          {"ConvTranspose", 3},
                                                          {"DepthToSpace", 1},
                                                          {"SpaceToDepth", 1},
                                                          {"Div", 2},
                                                          {"Dropout", 3},
                                                          {"Expand", 2},
                                                          {"Tile", 2},
                                                          {"CumSum", 2},
                                                          {"Flatten", 1},
                                                          {"GRU", 6},
                                                          {"Gather", 2},
                                                          {"Gemm", 3},
                                                          {"Abs", 1},
                                                          {"Max", 2},
                                                          {"Not", 1},
                                                          {"Min", 2},
                                                          {"Cos", 1},
                                                          {"Elu", 1},
                                                          {"Equal", 2},
                                                          {"Erf", 1},
                                                          {"Exp", 1},
                                                          {"GlobalAveragePool", 1},
                                                          {"GlobalMaxPool", 1},
                                                          {"HardSigmoid", 1},
                                                          {"HardSwish", 1},
                                                          {"Identity", 1},
                                                          {"InstanceNormalization", 3},
                                                          {"GroupNormalization", 3},
                                                          {"RMSNormalization", 2},
                                                          {"Gelu", 1},
                                                          {"Attention", 7},
                                                          {"RotaryEmbedding", 4},
                                                          {"Mish", 1},
                                                          {"PRelu", 2},
                                                          {"Swish", 1},
                                                          {"SwiGLU", 2},
                                                          {"Celu", 1},
                                                          {"LSTM", 8},
                                                          {"LayerNormalization", 3},
                                                          {"LeakyRelu", 1},
                                                          {"Log", 1},
                                                          {"MatMul", 2},
                                                          {"MaxPool", 1},
                                                          {"Mul", 2},
                                                          {"Neg", 1},
                                                          {"Pad", 4},
                                                          {"Pow", 2},
                                                          {"Range", 3},
                                                          {"Reciprocal", 1},
                                                          {"ReduceL2", 2},
                                                          {"ReduceLogSumExp", 2},
                                                          {"ReduceMax", 2},
                                                          {"ReduceMean", 2},
                                                          {"ReduceMin", 2},
                                                          {"ReduceSum", 2},
                                                          {"ReduceSumSquare", 2},
                                                          {"Relu", 1},
                                                          {"Reshape", 2},
                                                          {"Resize", 4},
                                                          {"Selu", 1},
                                                          {"Shape", 1},
                                                          {"Sigmoid", 1},
                                                          {"Sin", 1},
                                                          {"Slice", 5},
                                                          {"Softmax", 1},
                                                          {"LogSoftmax", 1},
                                                          {"Softplus", 1},
                                                          {"Softsign", 1},
                                                          {"Split", 2},
                                                          {"Sqrt", 1},
                                                          {"Squeeze", 2},
                                                          {"Sub", 2},
                                                          {"Tanh", 1},
                                                          {"Transpose", 1},
                                                          {"Trilu", 2},
                                                          {"Unsqueeze", 2},
                                                          {"Where", 3},
                                                          {"RandomNormalLike", 1},
                                                          {"RandomUniformLike", 1}};
    if (auto known = kMaxInputs.find(op); known != kMaxInputs.end()) {
      if (node.input_size() > known->second)
        fail(nodeLabel(node) + " has " + std::to_string(node.input_size()) + " inputs; " + op +
             " takes at most " + std::to_string(known->second));
      // Each of them but Constant reads its first input (a fuzzed Transpose without one
      // reached node.input(0)).
      if (op != "Constant" && (node.input_size() < 1 || node.input(0).empty()))
        fail(nodeLabel(node) + " is missing input 0");
    }

    // Integer tensors (integer graph inputs and what is computed from them) are exact float32
    // values here, which computes them as integers do except for division, which truncates.
    // They stay integers up to a Cast to a float type, a comparison, or an embedding lookup.
    const std::string *integerOperand = nullptr;
    for (const auto &in : node.input())
      if (integerValued.count(in) && values.count(in)) // (shape arithmetic folds as integers)
        integerOperand = &in;
    if (integerOperand) {
      const std::string &from = integerValued.at(*integerOperand);
      if (op == "Div")
        fail(nodeLabel(node) + " divides the integer tensor \"" + *integerOperand +
             "\" (computed from the integer graph input \"" + from +
             "\"), which graphc holds as float32 and would not truncate; cast it to float "
             "before dividing (x.float() in PyTorch)");
      const int64_t to = op == "Cast" ? intAttr(node, "to", 0) : 0;
      const bool endsInteger =
          (op == "Cast" && to != onnx::TensorProto::INT64 && to != onnx::TensorProto::INT32) ||
          op == "Equal" || op == "Greater" || op == "Less" || op == "GreaterOrEqual" ||
          op == "LessOrEqual" || op == "Not" ||
          (op == "Gather" && node.input_size() == 2 && !integerValued.count(node.input(0)));
      if (!endsInteger)
        for (const auto &out : node.output())
          integerValued[out] = from;
    }

    if (op == "Constant") {
      auto *value = findAttr(node, "value");
      if (!value || !value->has_t())
        fail(nodeLabel(node) + ": only the 'value' tensor form of Constant is supported");
      constants[node.output(0)] = readTensor(value->t(), /*narrowDouble=*/true);
      return;
    }
    if (op == "Identity") {
      if (node.input_size() < 1)
        fail(nodeLabel(node) + " is missing input 0");
      if (constants.count(node.input(0))) {
        constants[node.output(0)] = constants.at(node.input(0));
        return;
      }
      define(node, valueOf(node, 0));
      return;
    }
    if (op == "Pad") {
      // Constant padding becomes graph.fill blocks concatenated before and after the input on
      // each padded axis (what PyTorch's F.pad and TensorFlow's exported SAME paddings compute:
      // the padded tensor, then the next op). Autodiff slices the gradient of the input back
      // out of the concatenation. torch exports AvgPool2d (DenseNet's transitions) as a Pad of
      // zero widths before the AveragePool: the identity. The other modes concatenate slices
      // of the input itself: `edge` (nn.ReplicationPad2d) its first and last element along the
      // axis, once per padded position; `reflect` (nn.ReflectionPad2d) its elements mirrored
      // about the edges, one slice per padded position (x[p], ..., x[1], x, x[n-2], ...);
      // `wrap` (opset 19, circular padding) its last and first elements. Their gradients add
      // the copies back into the elements they read. O(padded positions) slices per axis.
      std::vector<int64_t> pads =
          opset >= 11 ? (node.input_size() > 1 && !node.input(1).empty() ? constantOf(node, 1).ints
                                                                         : std::vector<int64_t>{})
                      : intsAttr(node, "pads", {});
      const std::string mode = strAttr(node, "mode", "constant");
      if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
        refuseAttr(node, "mode", "= " + mode + " is not one of constant, edge, reflect and wrap");
      float padValue = opset >= 11 ? 0.0f : floatAttr(node, "value", 0.0f);
      if (opset >= 11 && node.input_size() > 2 && !node.input(2).empty()) {
        const HostTensor &value = constantOf(node, 2);
        if (value.floats.size() != 1)
          fail(nodeLabel(node) + ": Pad's constant_value must be one float (got " +
               std::to_string(value.floats.size()) + " values)");
        padValue = value.floats[0];
      }
      Value x = valueOf(node, 0);
      std::vector<int64_t> shape = shapeOf(x);
      const size_t rank = shape.size();
      if (node.input_size() > 3 && !node.input(3).empty()) {
        // Opset 18's axes: the pads [begin of axes[0], ..., end of axes[0], ...] name only
        // these axes; spread them over every axis, the others unpadded.
        const HostTensor &axes = constantOf(node, 3);
        if (axes.dataType != onnx::TensorProto::INT64 || axes.dims.size() != 1)
          fail(nodeLabel(node) + ": Pad's axes must be a 1-D int64 constant");
        if (pads.size() != 2 * axes.ints.size())
          fail(nodeLabel(node) + ": Pad has " + std::to_string(pads.size()) + " pads for " +
               std::to_string(axes.ints.size()) + " axes; expected " +
               std::to_string(2 * axes.ints.size()));
        std::optional<std::vector<int64_t>> named = distinctAxes(axes.ints, int64_t(rank));
        if (!named)
          fail(nodeLabel(node) + ": Pad's axes " + listText(axes.ints) +
               " must name distinct axes of the rank-" + std::to_string(rank) + " input");
        std::vector<int64_t> all(2 * rank, 0);
        for (size_t i = 0; i < named->size(); ++i) {
          all[(*named)[i]] = pads[i];
          all[(*named)[i] + rank] = pads[i + named->size()];
        }
        pads = std::move(all);
      }
      if (!pads.empty() && pads.size() != 2 * rank)
        fail(nodeLabel(node) + ": Pad has " + std::to_string(pads.size()) + " pads for a rank-" +
             std::to_string(rank) + " input; expected " + std::to_string(2 * rank));
      if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
        fail(nodeLabel(node) + ": Pad with negative pads (cropping) is not supported (got pads " +
             listText(pads) + "); use a Slice");
      if (llvm::any_of(pads, [](int64_t p) { return p > (int64_t(1) << 31); }))
        fail(nodeLabel(node) + ": Pad widths beyond 2^31 (got pads " + listText(pads) + ")");
      for (size_t axis = 0; axis < pads.size() / 2; ++axis) {
        const int64_t before = pads[axis], after = pads[axis + rank];
        if (before == 0 && after == 0)
          continue;
        SmallVector<Value> parts;
        const int64_t n = shape[axis];
        if (mode == "reflect" && (before > n - 1 || after > n - 1))
          fail(nodeLabel(node) + ": reflect padding of " + std::to_string(std::max(before, after)) +
               " on axis " + std::to_string(axis) + " of " + std::to_string(n) +
               " elements; it must be smaller than the axis");
        if (mode == "wrap" && (before > n || after > n))
          fail(nodeLabel(node) + ": wrap padding of " + std::to_string(std::max(before, after)) +
               " on axis " + std::to_string(axis) + " of " + std::to_string(n) +
               " elements; it must be at most the axis");
        // Element i of x along the axis, one slice per element however often it is copied
        // (graphc's gradient of slices needs them disjoint; copies of one value add up).
        std::map<int64_t, Value> elements;
        auto element = [&](int64_t i) {
          Value &e = elements[i];
          if (!e) {
            std::vector<int64_t> sliceShape = shape;
            sliceShape[axis] = 1;
            e = b.create<SliceOp>(loc, f32(sliceShape), x, b.getI64IntegerAttr(int64_t(axis)),
                                  b.getI64IntegerAttr(i));
          }
          parts.push_back(e);
        };
        // The `width` elements padded before (or after) x.
        auto block = [&](int64_t width, bool atStart) {
          if (mode == "constant") {
            std::vector<int64_t> blockShape = shape;
            blockShape[axis] = width;
            parts.push_back(
                b.create<FillOp>(loc, f32(blockShape), b.getF32FloatAttr(padValue)).getResult());
            return;
          }
          for (int64_t j = 0; j < width; ++j) // position j of the block
            element(mode == "edge"   ? (atStart ? 0 : n - 1)
                    : mode == "wrap" ? (atStart ? n - width + j : j)
                                     : (atStart ? width - j : n - 2 - j));
        };
        if (before > 0)
          block(before, true);
        parts.push_back(x);
        if (after > 0)
          block(after, false);
        shape[axis] += before + after;
        x = b.create<ConcatOp>(loc, f32(shape), parts, b.getI64IntegerAttr(int64_t(axis)));
      }
      define(node, x);
      return;
    }
    if (op == "Cast") {
      // Shape arithmetic on constants (a dynamic-batch export's head-size division is cast
      // back to int64) is folded; a cast of a float32 tensor to float32 is the identity.
      int64_t to = intAttr(node, "to", 0);
      if (node.input_size() > 0 && isConstant(node.input(0))) {
        const HostTensor &in = constantOf(node, 0);
        HostTensor out;
        out.dims = in.dims;
        out.dataType = int32_t(to);
        if (to == onnx::TensorProto::INT64 && in.dataType == onnx::TensorProto::INT64)
          out.ints = in.ints;
        else if (to == onnx::TensorProto::INT64 && in.dataType == onnx::TensorProto::FLOAT)
          for (float f : in.floats)
            out.ints.push_back(int64_t(f)); // ONNX casts float to int by truncation
        else if (to == onnx::TensorProto::FLOAT && in.dataType == onnx::TensorProto::INT64)
          for (int64_t i : in.ints)
            out.floats.push_back(float(i));
        else if (to == onnx::TensorProto::FLOAT && in.dataType == onnx::TensorProto::FLOAT)
          out.floats = in.floats;
        else if (to == onnx::TensorProto::BOOL && in.dataType == onnx::TensorProto::BOOL)
          out.bools = in.bools; // (torch's masked_fill casts its comparison to bool again)
        else
          refuseAttr(node, "to", "= " + std::to_string(to) +
                                     " is not supported for constants (float32 and int64 only)");
        constants[node.output(0)] = std::move(out);
        return;
      }
      if (to == onnx::TensorProto::BOOL) {
        // A mask (graphc's bools are float 0 and 1): nonzero is true, 1 - (x == 0).
        define(node,
               oneMinus(loc, elementwise(loc, ActivationKind::equal, valueOf(node, 0), 0.0f)));
        return;
      }
      if (to != onnx::TensorProto::FLOAT)
        refuseAttr(node, "to",
                   "= " + std::to_string(to) +
                       " is not supported on a computed tensor (graphc computes in "
                       "float32 and holds bools as 0 and 1)");
      define(node, valueOf(node, 0));
      return;
    }
    if (op == "Gemm") {
      Value x = valueOf(node, 0);
      if (intAttr(node, "transA", 0) != 0)
        refuseAttr(node, "transA", "= 1 is not supported");
      if (floatAttr(node, "alpha", 1.f) != 1.f || floatAttr(node, "beta", 1.f) != 1.f)
        refuseAttr(node, "alpha/beta", "other than 1 is not supported");
      bool transB = intAttr(node, "transB", 0) != 0;
      Value w = parameterOf(node, 1);
      Value bias = node.input_size() > 2 && !node.input(2).empty() ? parameterOf(node, 2) : Value();
      auto xs = shapeOf(x), ws = shapeOf(w);
      if (xs.size() != 2 || ws.size() != 2)
        fail(nodeLabel(node) + ": expects rank-2 input and weight");
      int64_t out = transB ? ws[0] : ws[1];
      define(node, b.create<DenseOp>(loc, f32({xs[0], out}), x, w, bias, transB));
      return;
    }
    if (op == "MatMul") {
      if (node.input_size() != 2)
        fail(nodeLabel(node) + " needs two inputs");
      if (isConstant(node.input(0)) && !initializers.count(node.input(0)) &&
          isConstant(node.input(1)) && !initializers.count(node.input(1))) {
        foldMatMul(node);
        return;
      }
      Value x = valueOf(node, 0);
      auto xs = shapeOf(x);
      if (values.count(node.input(1)) && !transposedParams.count(node.input(1))) {
        define(node, importBatchMatmul(node, loc, x, valueOf(node, 1)));
        return;
      }
      // x [..., K] times a 2-D weight: a dense layer on x flattened to [rows, K].
      bool transposed = transposedParams.count(node.input(1)) != 0;
      Value w = transposed ? parameterNamed(node, transposedParams[node.input(1)])
                           : parameterOf(node, 1);
      auto ws = shapeOf(w);
      if (xs.size() < 2 || ws.size() != 2 || xs.back() != ws[transposed ? 1 : 0])
        fail(nodeLabel(node) + ": cannot multiply " + typeString(x.getType()) + " by the " +
             (transposed ? "transposed " : "") + "weight " + typeString(w.getType()));
      define(node, denseOnRows(loc, x, w, Value(), transposed));
      return;
    }
    // Views of constants fold: int64 shape arithmetic; a float32 buffer read only as a mask;
    // a float32 table the graph computes itself (Hugging Face's rotary frequencies,
    // (inv_freq @ positions).transpose(1, 2)). A float32 initializer is a parameter instead.
    if ((op == "Reshape" || op == "Slice" || op == "Transpose") && node.input_size() > 0 &&
        isConstant(node.input(0)) &&
        (constantOf(node, 0).dataType == onnx::TensorProto::INT64 ||
         (constantOf(node, 0).dataType == onnx::TensorProto::FLOAT &&
          (readAsMask(node.output(0), 0) || !initializers.count(node.input(0)))))) {
      foldIntShapeOp(node);
      return;
    }
    if (op == "Transpose") {
      std::vector<int64_t> perm = intsAttr(node, "perm", {});
      if (isConstant(node.input(0))) {
        const HostTensor &h = constantOf(node, 0);
        if (h.dims.size() != 2 || (!perm.empty() && perm != std::vector<int64_t>{1, 0}))
          fail(nodeLabel(node) + ": only the transpose of a 2-D weight is supported on constants");
        for (int reader : readers[node.output(0)])
          if (reader < 0 || graph->node(reader).op_type() != "MatMul" ||
              graph->node(reader).input(1) != node.output(0))
            fail(nodeLabel(node) + ": a transposed weight must only be the right-hand side of "
                                   "MatMul");
        transposedParams[node.output(0)] = node.input(0);
        return;
      }
      Value x = valueOf(node, 0);
      auto xs = shapeOf(x);
      if (perm.empty()) // ONNX's default: reverse the axes
        for (int64_t i = int64_t(xs.size()) - 1; i >= 0; --i)
          perm.push_back(i);
      std::vector<int64_t> dims;
      std::vector<bool> seen(xs.size(), false);
      for (int64_t p : perm) {
        if (p < 0 || p >= int64_t(xs.size()) || seen[p] || perm.size() != xs.size())
          refuseAttr(node, "perm", "is not a permutation of the input's axes");
        seen[p] = true;
        dims.push_back(xs[p]);
      }
      define(node, b.create<TransposeOp>(loc, f32(dims), x, b.getDenseI64ArrayAttr(perm)));
      return;
    }
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
      if (node.input_size() != 2)
        fail(nodeLabel(node) + " needs two inputs");
      if (isConstant(node.input(0)) && isConstant(node.input(1))) {
        foldIntArithmetic(node);
        return;
      }
    }
    if (op == "Add" && importAttentionMask(node))
      return;
    if (op == "Div" && importDecomposedGelu(node, loc))
      return;
    if (op == "Abs" && importDecomposedSoftsign(node, loc))
      return;
    if (op == "Abs") { // of a computed tensor (outside a softsign): graph.activation abs
      define(node, elementwise(loc, ActivationKind::abs, valueOf(node, 0)));
      return;
    }
    if (op == "Erf")
      fail(nodeLabel(node) +
           ": Erf is supported only within a GELU exported as Mul(Mul(x, Add(Erf(Div(x, "
           "sqrt(2))), 1)), 0.5)");
    if (op == "Max" || op == "Min") {
      // torch.maximum / torch.minimum of two tensors (computed, or a computed tensor and a
      // float32 initializer or constant): max(a, b) = b + relu(a - b), min(a, b) =
      // a - relu(a - b), numpy broadcasting as Sub's; at a tie the gradient goes to b (max) or
      // a (min) whole, where PyTorch splits it in halves.
      if (node.input_size() != 2)
        fail(nodeLabel(node) + ": " + op + " is supported of two tensors");
      if (!values.count(node.input(0)) && !values.count(node.input(1)))
        fail(nodeLabel(node) + ": " + op + " needs a computed operand");
      for (int constIndex : {0, 1}) {
        // With a float32 scalar constant c (torch.maximum(x, torch.tensor(0.5))):
        // max(x, c) = c + relu(x - c), min(x, c) = x - relu(x - c).
        // (A scalar initializer too, as torch writes torch.tensor(0.5): a constant, as Div's.)
        if (computedOrFloatInitializer(node, constIndex) || !isConstant(node.input(constIndex)))
          continue;
        const HostTensor &c = constantOf(node, constIndex);
        if (c.dataType != onnx::TensorProto::FLOAT || c.floats.size() != 1)
          fail(nodeLabel(node) + ": " + op + "'s constant operand must be a float32 scalar");
        Value x = valueOf(node, 1 - constIndex);
        Value excess =
            b.create<ReluOp>(loc, x.getType(),
                             b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(1.f),
                                               b.getF32FloatAttr(-c.floats[0])));
        Value result = op == "Max"
                           ? b.create<ScaleOp>(loc, x.getType(), excess, b.getF32FloatAttr(1.f),
                                               b.getF32FloatAttr(c.floats[0]))
                                 .getResult()
                           : b.create<AddOp>(loc, x.getType(), x,
                                             b.create<ScaleOp>(loc, x.getType(), excess,
                                                               b.getF32FloatAttr(-1.f)))
                                 .getResult();
        define(node, result);
        return;
      }
      onnx::NodeProto difference = node;
      difference.set_op_type("Sub");
      difference.set_output(0, node.output(0) + "@difference");
      Value d = broadcastBinary(difference, loc);
      Value excess = b.create<ReluOp>(loc, d.getType(), d);
      // The operand kept whole, broadcast to the result's shape as Add's are.
      values[node.output(0) + "@excess"] = excess;
      define(node, broadcastBinary(derivedNode(node, op == "Max" ? "Add" : "Sub",
                                               node.input(op == "Max" ? 1 : 0),
                                               node.output(0) + "@excess", node.output(0)),
                                   loc));
      return;
    }
    if (op == "Mul" && values.count(node.input(0)) && values.count(node.input(1))) {
      define(node, productOfComputed(withUnexpandedOperands(node), loc));
      return;
    }
    if (op == "Mul" && computedOrFloatInitializer(node, 0) && computedOrFloatInitializer(node, 1)) {
      // A computed tensor times a trained initializer (a per-feature scale, as LayerScale's):
      // broadcast (broadcastTo).
      define(node, broadcastBinary(node, loc));
      return;
    }
    if (op == "Div" && importDivision(node, loc))
      return;
    if (op == "Mul" || op == "Div") {
      // Scaling by a scalar constant (attention's 1 / sqrt(head size)).
      int constIndex = isConstant(node.input(1)) ? 1 : op == "Mul" && isConstant(node.input(0)) ? 0 : -1;
      if (constIndex < 0)
        fail(nodeLabel(node) + ": only " + op + " by a scalar constant is supported (or within "
                               "a LayerNorm)");
      const HostTensor &c = constantOf(node, constIndex);
      if (c.dataType != onnx::TensorProto::FLOAT || c.floats.size() != 1)
        fail(nodeLabel(node) + ": only " + op + " by a float32 scalar constant is supported");
      Value x = valueOf(node, 1 - constIndex);
      float factor = op == "Mul" ? c.floats[0] : float(1.0 / double(c.floats[0]));
      if (factor == 1.0f) { // (baddbmm's beta and alpha of 1: no pass over the scores)
        define(node, x);
        return;
      }
      define(node, b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(factor)));
      return;
    }
    if (op == "Add" || op == "Sub") {
      // A float32 scalar constant and a computed tensor (the tanh GELU's 1 + tanh(..), a shift
      // of the input): one graph.scale, x + c, x - c or c - x.
      for (int constIndex : {1, 0}) {
        if (!isConstant(node.input(constIndex)) || !values.count(node.input(1 - constIndex)))
          continue;
        const HostTensor &c = constantOf(node, constIndex);
        if (c.dataType != onnx::TensorProto::FLOAT || c.floats.size() != 1)
          break; // (a bias vector: below)
        Value x = valueOf(node, 1 - constIndex);
        const bool negated = op == "Sub" && constIndex == 0; // c - x
        const float offset = op == "Sub" && constIndex == 1 ? -c.floats[0] : c.floats[0];
        define(node, b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(negated ? -1.f : 1.f),
                                       b.getF32FloatAttr(offset)));
        return;
      }
    }
    if (op == "Sub") {
      // Two computed tensors of the same shape: x + (-1) y.
      if (values.count(node.input(0)) && values.count(node.input(1)) &&
          valueOf(node, 0).getType() == valueOf(node, 1).getType()) {
        Value lhs = valueOf(node, 0), rhs = valueOf(node, 1);
        Value negated = b.create<ScaleOp>(loc, rhs.getType(), rhs, b.getF32FloatAttr(-1.f),
                                          b.getF32FloatAttr(0.f));
        define(node, b.create<AddOp>(loc, lhs.getType(), lhs, negated));
        return;
      }
      // Broadcasting (numpy's rule), of computed tensors, a trained initializer or a table.
      if (computedOrFloatInitializer(node, 0) && computedOrFloatInitializer(node, 1)) {
        define(node, broadcastBinary(node, loc));
        return;
      }
      fail(nodeLabel(node) + ": Sub is supported on constants, of a float32 scalar and a computed "
                             "tensor, of two computed tensors (or a computed tensor and a float32 "
                             "initializer) of the same or broadcast shapes, and "
                             "within a LayerNorm");
    }
    if (op == "Add") {
      // The bias of MatMul + Add, as exported for Linear layers on some paths (either operand
      // order; through the reshape back of a dense on flattened rows).
      for (int biasIndex : {1, 0}) {
        auto it = values.find(node.input(1 - biasIndex));
        if (it == values.end() || !isConstant(node.input(biasIndex)) ||
            constants.at(node.input(biasIndex)).dims.size() != 1)
          continue;
        Value out = it->second;
        auto reshape = out.getDefiningOp<ReshapeOp>();
        DenseOp dense = (reshape ? reshape.getInput() : out).getDefiningOp<DenseOp>();
        if (!dense || dense.getBias())
          continue;
        Value bias = parameterOf(node, biasIndex);
        // With the reshape back, dense reads the rows of a reshape of the original input.
        Value x = reshape ? dense.getInput().getDefiningOp<ReshapeOp>().getInput()
                          : dense.getInput();
        define(node, denseOnRows(loc, x, dense.getWeight(), bias, dense.getTransposeWeight()));
        return;
      }
      if (node.input_size() == 2 && values.count(node.input(0)) && values.count(node.input(1)))
        if (Value rotary = fusedRotary(loc, valueOf(node, 0), valueOf(node, 1))) {
          define(node, rotary);
          return;
        }
      // A residual connection: two computed tensors of the same shape.
      if (node.input_size() == 2 && values.count(node.input(0)) && values.count(node.input(1)) &&
          valueOf(node, 0).getType() == valueOf(node, 1).getType()) {
        Value lhs = valueOf(node, 0), rhs = valueOf(node, 1);
        define(node, b.create<AddOp>(loc, lhs.getType(), lhs, rhs));
        return;
      }
      // Broadcasting (numpy's rule), of computed tensors, a trained initializer (a learned
      // position embedding) or a table.
      if (computedOrFloatInitializer(node, 0) && computedOrFloatInitializer(node, 1)) {
        define(node, broadcastBinary(node, loc));
        return;
      }
      fail(nodeLabel(node) +
           " is supported between two computed tensors (or a computed tensor and a float32 "
           "initializer) of the same or broadcast shapes, of a float32 scalar "
           "and a computed tensor, or as the bias of a MatMul");
    }
    if (op == "Conv") {
      Value x = valueOf(node, 0);
      Value w = parameterOf(node, 1);
      Value bias = node.input_size() > 2 && !node.input(2).empty() ? parameterOf(node, 2) : Value();
      int64_t groups = intAttr(node, "group", 1);
      if (auto *a = findAttr(node, "auto_pad"); a && a->s() != "NOTSET")
        refuseAttr(node, "auto_pad", "= " + a->s() + " is not supported; export explicit pads");
      auto xs = shapeOf(x), ws = shapeOf(w);
      if (xs.size() != 4 || ws.size() != 4)
        fail(nodeLabel(node) +
             ": only 1-D, 2-D and 3-D convolutions ([N, C, L], [N, C, H, W] or [N, C, D, H, W] "
             "input with a weight of the same rank) are supported");
      auto strides = intsAttr(node, "strides", {1, 1});
      auto pads = intsAttr(node, "pads", {0, 0, 0, 0});
      auto dilations = intsAttr(node, "dilations", {1, 1});
      if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2)
        fail(nodeLabel(node) + ": expects 2 strides, 4 pads and 2 dilations");
      if (intsAttr(node, "kernel_shape", {ws[2], ws[3]}) != std::vector<int64_t>{ws[2], ws[3]})
        refuseAttr(node, "kernel_shape", "does not match the weight " + typeString(w.getType()));
      refuseBadWindow(node, strides, pads, dilations);
      int64_t oh = convOutputSize(xs[2], ws[2], strides[0], pads[0], pads[2], dilations[0]);
      int64_t ow = convOutputSize(xs[3], ws[3], strides[1], pads[1], pads[3], dilations[1]);
      if (groups < 1 || ws[0] % groups != 0 || xs[1] != ws[1] * groups)
        refuseAttr(node, "group", "= " + std::to_string(groups) + " does not fit input channels " +
                                      std::to_string(xs[1]) + " and filter " +
                                      typeString(w.getType()));
      if (oh <= 0 || ow <= 0)
        fail(nodeLabel(node) + ": filter does not fit its input");
      define(node, b.create<Conv2dOp>(loc, f32({xs[0], ws[0], oh, ow}), x, w, bias,
                                      b.getDenseI64ArrayAttr(strides),
                                      b.getDenseI64ArrayAttr(pads),
                                      b.getDenseI64ArrayAttr(dilations),
                                      b.getI64IntegerAttr(groups)));
      return;
    }
    if (op == "ConvTranspose") {
      define(node, convTranspose(node, loc));
      return;
    }
    if (op == "Resize") {
      define(node, resize(node, loc));
      return;
    }
    if (op == "InstanceNormalization" || op == "GroupNormalization") {
      define(node, groupNorm(node, loc, op == "InstanceNormalization"));
      return;
    }
    if (op == "MaxPool") {
      Value x = valueOf(node, 0);
      if (node.output_size() > 1 && !node.output(1).empty())
        fail(nodeLabel(node) + ": the Indices output is not supported");
      bool ceilMode = intAttr(node, "ceil_mode", 0) != 0;
      if (intAttr(node, "storage_order", 0) != 0)
        refuseAttr(node, "storage_order", "= 1 is not supported");
      auto dil = intsAttr(node, "dilations", {1, 1});
      if (dil != std::vector<int64_t>{1, 1})
        refuseAttr(node, "dilations", "other than 1 is not supported");
      if (auto *a = findAttr(node, "auto_pad"); a && a->s() != "NOTSET")
        refuseAttr(node, "auto_pad", "= " + a->s() + " is not supported; export explicit pads");
      auto kernel = intsAttr(node, "kernel_shape", {});
      auto strides = intsAttr(node, "strides", {1, 1});
      auto pads = intsAttr(node, "pads", {0, 0, 0, 0});
      auto xs = shapeOf(x);
      if (xs.size() != 4 || kernel.size() != 2 || strides.size() != 2 || pads.size() != 4)
        fail(nodeLabel(node) + ": only 1-D, 2-D and 3-D max pooling ([N, C, L], [N, C, H, W] or "
                               "[N, C, D, H, W] input) is supported");
      refuseBadWindow(node, strides, pads, {1, 1}, kernel);
      // ceil_mode = 1 becomes extra bottom/right padding: padded cells never win the max.
      auto [oh, padBottom] = poolExtent(xs[2], kernel[0], strides[0], pads[0], pads[2], ceilMode);
      auto [ow, padRight] = poolExtent(xs[3], kernel[1], strides[1], pads[1], pads[3], ceilMode);
      pads[2] = padBottom;
      pads[3] = padRight;
      if (oh <= 0 || ow <= 0)
        fail(nodeLabel(node) + ": window does not fit its input");
      define(node, b.create<MaxPool2dOp>(loc, f32({xs[0], xs[1], oh, ow}), x,
                                         b.getDenseI64ArrayAttr(kernel),
                                         b.getDenseI64ArrayAttr(strides),
                                         b.getDenseI64ArrayAttr(pads)));
      return;
    }
    if (op == "DepthToSpace") {
      // F.pixel_shuffle (torch exports mode CRD): [N, C r^2, H, W] viewed as
      // [N, C, r, r, H, W], transposed to [N, C, H, r, W, r], viewed as [N, C, H r, W r].
      // Mode DCR (TensorFlow's depth_to_space, tf2onnx's default) takes the blocks first:
      // [N, r, r, C, H, W] transposed to [N, C, H, r, W, r].
      Value x = valueOf(node, 0);
      const auto xs = shapeOf(x);
      const int64_t r = intAttr(node, "blocksize", 0);
      const std::string mode = strAttr(node, "mode", "DCR");
      if (mode != "CRD" && mode != "DCR")
        refuseAttr(node, "mode", "= " + mode + " is not one of DCR and CRD");
      if (xs.size() != 4 || r < 1 || r > 65536 || xs[1] % (r * r) != 0)
        fail(nodeLabel(node) +
             ": needs an [N, C, H, W] input whose channels divide by blocksize^2 "
             "(blocksize " +
             std::to_string(r) + ", input " + typeString(x.getType()) + ")");
      const int64_t c = xs[1] / (r * r);
      const bool crd = mode == "CRD";
      Value blocks =
          b.create<ReshapeOp>(loc,
                              f32(crd ? std::vector<int64_t>{xs[0], c, r, r, xs[2], xs[3]}
                                      : std::vector<int64_t>{xs[0], r, r, c, xs[2], xs[3]}),
                              x);
      Value moved =
          b.create<TransposeOp>(loc, f32({xs[0], c, xs[2], r, xs[3], r}), blocks,
                                b.getDenseI64ArrayAttr(crd ? ArrayRef<int64_t>{0, 1, 4, 2, 5, 3}
                                                           : ArrayRef<int64_t>{0, 3, 4, 1, 5, 2}));
      define(node, b.create<ReshapeOp>(loc, f32({xs[0], c, xs[2] * r, xs[3] * r}), moved));
      return;
    }
    if (op == "SpaceToDepth") {
      // The inverse of DepthToSpace in DCR order (TensorFlow's space_to_depth): [N, C, H, W]
      // viewed as [N, C, H / r, r, W / r, r], transposed to [N, r, r, C, H / r, W / r],
      // viewed as [N, r^2 C, H / r, W / r].
      Value x = valueOf(node, 0);
      const auto xs = shapeOf(x);
      const int64_t r = intAttr(node, "blocksize", 0);
      if (xs.size() != 4 || r < 1 || r > 65536 || xs[2] % r != 0 || xs[3] % r != 0)
        fail(nodeLabel(node) +
             ": needs an [N, C, H, W] input whose height and width divide by blocksize "
             "(blocksize " +
             std::to_string(r) + ", input " + typeString(x.getType()) + ")");
      const int64_t h = xs[2] / r, w = xs[3] / r;
      Value blocks = b.create<ReshapeOp>(loc, f32({xs[0], xs[1], h, r, w, r}), x);
      Value moved = b.create<TransposeOp>(loc, f32({xs[0], r, r, xs[1], h, w}), blocks,
                                          b.getDenseI64ArrayAttr({0, 3, 5, 1, 2, 4}));
      define(node, b.create<ReshapeOp>(loc, f32({xs[0], r * r * xs[1], h, w}), moved));
      return;
    }
    if (op == "Flatten") {
      Value x = valueOf(node, 0);
      auto xs = shapeOf(x);
      int64_t axis = intAttr(node, "axis", 1);
      if (axis < 0)
        axis += xs.size();
      if (axis < 0 || axis > int64_t(xs.size()))
        refuseAttr(node, "axis", "is out of range");
      int64_t outer = std::accumulate(xs.begin(), xs.begin() + axis, int64_t{1}, std::multiplies<>());
      int64_t inner = std::accumulate(xs.begin() + axis, xs.end(), int64_t{1}, std::multiplies<>());
      define(node, b.create<ReshapeOp>(loc, f32({outer, inner}), x));
      return;
    }
    if (op == "Reshape") {
      Value x = valueOf(node, 0);
      BatchLocation batchAt;
      Value reshaped =
          b.create<ReshapeOp>(loc, f32(reshapedDims(node, shapeOf(x), x, &batchAt)), x);
      if (batchAt.isAt())
        batchLocator().remember(reshaped, batchAt);
      define(node, reshaped);
      return;
    }
    if (op == "BatchNormalization") {
      Value x = valueOf(node, 0);
      auto xs = shapeOf(x);
      if (xs.size() < 2)
        fail(nodeLabel(node) + ": expects an [N, C, ...] input");
      // Training mode: opset >= 14 says so with training_mode; before, the exporter marks it by
      // the extra outputs (running mean/var, saved mean/var).
      bool training = opset >= 14 ? intAttr(node, "training_mode", 0) != 0
                                  : node.output_size() > 1;
      // Outputs 3 and 4 (saved mean/var, opset < 14) are not produced; exported graphs never
      // read them, and a node that does fails as reading an undefined input.
      Value scale = parameterOf(node, 1), bias = parameterOf(node, 2);
      Value mean = stateOf(node, 3), var = stateOf(node, 4);
      for (Value v : {scale, bias, mean, var})
        if (shapeOf(v) != std::vector<int64_t>{xs[1]})
          fail(nodeLabel(node) + ": scale, bias, mean and var must be [" +
               std::to_string(xs[1]) + "]");
      // ONNX's momentum weighs the old statistic; PyTorch's the batch one. Recover the decimal
      // the exporter wrote (0.9 -> 0.1) rather than 1 - 0.89999998.
      char text[32];
      std::snprintf(text, sizeof(text), "%.7g", floatAttr(node, "momentum", 0.9f));
      float momentum = float(1.0 - std::strtod(text, nullptr));
      float epsilon = floatAttr(node, "epsilon", 1e-5f);
      Type c = f32({xs[1]});
      auto bn = b.create<BatchNormOp>(loc, TypeRange{x.getType(), c, c, c, c}, x, scale, bias,
                                      mean, var, b.getF32FloatAttr(epsilon),
                                      b.getF32FloatAttr(momentum),
                                      training ? b.getUnitAttr() : UnitAttr());
      define(node, bn.getResult());
      if (training && node.output_size() > 1 && !node.output(1).empty())
        values[node.output(1)] = bn.getNewRunningMean();
      if (training && node.output_size() > 2 && !node.output(2).empty())
        values[node.output(2)] = bn.getNewRunningVar();
      return;
    }
    if (op == "Clip") {
      Value x = valueOf(node, 0);
      float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
      if (opset >= 11) {
        lo = scalarInput(node, 1, lo);
        hi = scalarInput(node, 2, hi);
      } else {
        lo = floatAttr(node, "min", lo);
        hi = floatAttr(node, "max", hi);
      }
      if (!(lo <= hi))
        fail(nodeLabel(node) + ": min exceeds max");
      define(node, b.create<ClipOp>(loc, x.getType(), x, b.getF32FloatAttr(lo),
                                    b.getF32FloatAttr(hi)));
      return;
    }
    if (op == "GlobalMaxPool") { // nn.AdaptiveMaxPool2d(1): a max pool over the whole image
      Value x = valueOf(node, 0);
      auto xs = shapeOf(x);
      if (xs.size() != 4)
        fail(nodeLabel(node) + ": only 1-D, 2-D and 3-D pooling ([N, C, L], [N, C, H, W] or [N, C, "
                               "D, H, W] input) is supported");
      define(node, b.create<MaxPool2dOp>(
                       loc, f32({xs[0], xs[1], 1, 1}), x, b.getDenseI64ArrayAttr({xs[2], xs[3]}),
                       b.getDenseI64ArrayAttr({1, 1}), b.getDenseI64ArrayAttr({0, 0, 0, 0})));
      return;
    }
    if (op == "Sum" || op == "Mean") {
      // Variadic elementwise sum (and mean: times 1 / n) with numpy broadcasting, as tf2onnx
      // and Keras converters write a merge of several branches: Add after Add.
      for (int i = 0; i < std::max(node.input_size(), 1); ++i)
        if (i >= node.input_size() || node.input(i).empty())
          fail(nodeLabel(node) + " is missing input " + std::to_string(i));
      std::string accumulated = node.input(0);
      for (int i = 1; i < node.input_size(); ++i) {
        const std::string partial = i + 1 == node.input_size() && op == "Sum"
                                        ? node.output(0)
                                        : node.output(0) + "@partial" + std::to_string(i);
        values[partial] =
            broadcastBinary(derivedNode(node, "Add", accumulated, node.input(i), partial), loc);
        accumulated = partial;
      }
      Value total = node.input_size() > 1 ? values[accumulated] : computedOrParameter(node, 0);
      define(node, op == "Mean" && node.input_size() > 1
                       ? b.create<ScaleOp>(loc, total.getType(), total,
                                           b.getF32FloatAttr(1.0f / float(node.input_size())))
                             .getResult()
                       : total);
      return;
    }
    if (op == "GlobalAveragePool" || op == "AveragePool") {
      Value x = valueOf(node, 0);
      auto xs = shapeOf(x);
      if (xs.size() != 4)
        fail(nodeLabel(node) + ": only 1-D, 2-D and 3-D pooling ([N, C, L], [N, C, H, W] or [N, C, "
                               "D, H, W] input) is supported");
      std::vector<int64_t> kernel = {xs[2], xs[3]}, strides = {1, 1}, pads = {0, 0, 0, 0};
      bool countIncludePad = false;
      if (op == "AveragePool") {
        kernel = intsAttr(node, "kernel_shape", {});
        strides = intsAttr(node, "strides", {1, 1});
        pads = intsAttr(node, "pads", {0, 0, 0, 0});
        countIncludePad = intAttr(node, "count_include_pad", 0) != 0;
        if (intAttr(node, "ceil_mode", 0) != 0)
          refuseAttr(node, "ceil_mode", "= 1 is not supported for AveragePool");
        if (auto dilations = intsAttr(node, "dilations", {});
            llvm::any_of(dilations, [](int64_t d) { return d != 1; }))
          refuseAttr(node, "dilations",
                     "= " + listText(dilations) + " is not supported for AveragePool (opset 19)");
        if (auto *a = findAttr(node, "auto_pad"); a && a->s() != "NOTSET")
          refuseAttr(node, "auto_pad", "= " + a->s() + " is not supported; export explicit pads");
        if (kernel.size() != 2 || strides.size() != 2 || pads.size() != 4)
          fail(nodeLabel(node) + ": expects a 2-D kernel, 2 strides and 4 pads");
        refuseBadWindow(node, strides, pads, {1, 1}, kernel);
      }
      int64_t oh = convOutputSize(xs[2], kernel[0], strides[0], pads[0], pads[2], 1);
      int64_t ow = convOutputSize(xs[3], kernel[1], strides[1], pads[1], pads[3], 1);
      if (oh <= 0 || ow <= 0)
        fail(nodeLabel(node) + ": window does not fit its input");
      define(node, b.create<AvgPool2dOp>(loc, f32({xs[0], xs[1], oh, ow}), x,
                                         b.getDenseI64ArrayAttr(kernel),
                                         b.getDenseI64ArrayAttr(strides),
                                         b.getDenseI64ArrayAttr(pads),
                                         countIncludePad ? b.getUnitAttr() : UnitAttr()));
      return;
    }
    if (op == "Dropout") {
      Value x = valueOf(node, 0);
      float ratio = opset >= 12 ? scalarInput(node, 1, 0.5f) : floatAttr(node, "ratio", 0.5f);
      bool training = opset >= 12 ? boolInput(node, 2, false) : intAttr(node, "is_test", 0) == 0;
      // The mask output is not produced; a node reading it fails as an undefined input.
      if (!(ratio >= 0.f && ratio < 1.f))
        fail(nodeLabel(node) + ": ratio must be in [0, 1)");
      if (!training || ratio == 0.f) {
        define(node, x); // inference, or nothing dropped: the identity
        return;
      }
      define(node, b.create<DropoutOp>(loc, x.getType(), x, stepInput(),
                                       b.getF32FloatAttr(ratio), b.getI64IntegerAttr(index),
                                       b.getI64IntegerAttr(0)));
      return;
    }
    if (op == "RandomNormal" || op == "RandomNormalLike" || op == "RandomUniform" ||
        op == "RandomUniformLike") {
      // torch.randn_like / rand_like (and randn / rand of a fixed shape): graphc's
      // counter-based noise, keyed by (--seed, the node, the step); `seed` is ignored, as
      // Dropout's. The values differ from onnxruntime's generator, the distribution does not.
      const bool like = llvm::StringRef(op).ends_with("Like");
      const bool normal = llvm::StringRef(op).starts_with("RandomNormal");
      if (const auto *dtype = findAttr(node, "dtype");
          dtype && dtype->i() != onnx::TensorProto::FLOAT)
        refuseAttr(node, "dtype",
                   "= " + std::to_string(dtype->i()) +
                       " is not supported; graphc draws float32 noise");
      std::vector<int64_t> shape;
      if (like) {
        const bool integerInput = isConstant(node.input(0))
                                      ? constantOf(node, 0).dataType != onnx::TensorProto::FLOAT
                                      : integerValued.count(node.input(0)) != 0;
        if (integerInput && !findAttr(node, "dtype"))
          fail(nodeLabel(node) + ": takes the type of an integer input; give dtype = FLOAT "
                                 "(graphc draws float32 noise)");
        if (isConstant(node.input(0))) {
          shape = constantOf(node, 0).dims;
        } else {
          auto dims = cast<RankedTensorType>(valueOf(node, 0).getType()).getShape();
          shape.assign(dims.begin(), dims.end());
        }
      } else {
        if (node.input_size() != 0)
          fail(nodeLabel(node) + " has " + std::to_string(node.input_size()) + " inputs; " + op +
               " takes none");
        if (!findAttr(node, "shape"))
          fail(nodeLabel(node) + ": needs its shape attribute");
        shape = intsAttr(node, "shape", {});
      }
      int64_t count = 1;
      for (int64_t d : shape)
        if (d <= 0 || __builtin_mul_overflow(count, d, &count) || count > (int64_t{1} << 31))
          fail(nodeLabel(node) + ": shape " + listText(shape) + " is empty or too large");
      const float first = floatAttr(node, normal ? "mean" : "low", 0.0f),
                  second = floatAttr(node, normal ? "scale" : "high", 1.0f);
      if (!std::isfinite(first) || !std::isfinite(second) || (normal ? second < 0 : second < first))
        fail(nodeLabel(node) + (normal ? ": needs a finite mean and a finite scale >= 0"
                                       : ": needs finite bounds with low <= high"));
      Type type = f32(shape);
      if (normal)
        define(node, b.create<RandomNormalOp>(loc, type, stepInput(), b.getF32FloatAttr(first),
                                              b.getF32FloatAttr(second), b.getI64IntegerAttr(index),
                                              b.getI64IntegerAttr(0)));
      else
        define(node, b.create<RandomUniformOp>(loc, type, stepInput(), b.getF32FloatAttr(first),
                                               b.getF32FloatAttr(second),
                                               b.getI64IntegerAttr(index), b.getI64IntegerAttr(0)));
      return;
    }
    if (op == "Concat") {
      bool allConstant = node.input_size() > 0;
      for (const auto &in : node.input())
        allConstant = allConstant && isConstant(in);
      if (allConstant && constantOf(node, 0).dataType == onnx::TensorProto::FLOAT) {
        foldFloatConcat(node);
        return;
      }
      if (allConstant) {
        // Shape arithmetic: 1-D int64 host tensors.
        std::vector<int64_t> ints;
        for (int i = 0; i < node.input_size(); ++i) {
          const HostTensor &h = constantOf(node, i);
          if (h.dataType != onnx::TensorProto::INT64 || h.dims.size() != 1)
            fail(nodeLabel(node) + ": only 1-D int64 constants are concatenated at import");
          ints.insert(ints.end(), h.ints.begin(), h.ints.end());
        }
        constants[node.output(0)] = intTensor({int64_t(ints.size())}, ints);
        return;
      }
      SmallVector<Value> inputs;
      for (int i = 0; i < node.input_size(); ++i)
        inputs.push_back(valueOf(node, i));
      rebaseExpandedInputs(node, loc, inputs);
      auto shape = shapeOf(inputs[0]);
      int64_t rank = shape.size(), axis = axisAttr(node, rank);
      shape[axis] = 0;
      for (Value v : inputs) {
        auto vs = shapeOf(v);
        if (int64_t(vs.size()) != rank)
          fail(nodeLabel(node) + ": inputs of different ranks");
        shape[axis] += vs[axis];
      }
      define(node, b.create<ConcatOp>(loc, f32(shape), inputs, b.getI64IntegerAttr(axis)));
      return;
    }
    if (op == "Shape") {
      // Static shapes: the shape is a host constant, and so is the arithmetic on it.
      std::vector<int64_t> dims;
      if (isConstant(node.input(0)))
        dims = constantOf(node, 0).dims;
      else
        dims = shapeOf(valueOf(node, 0));
      int64_t rank = dims.size();
      int64_t start = intAttr(node, "start", 0), end = intAttr(node, "end", rank);
      if (start < 0)
        start += rank;
      if (end < 0)
        end += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      end = std::clamp<int64_t>(end, start, rank);
      std::vector<int64_t> out(dims.begin() + start, dims.begin() + end);
      constants[node.output(0)] = intTensor({int64_t(out.size())}, out);
      return;
    }
    if (op == "Gather" && node.input_size() == 2 && integerInputs.count(node.input(1))) {
      importEmbedding(node, loc);
      return;
    }
    if (op == "Gather" && values.count(node.input(0))) {
      // One constant index along an axis of a computed tensor (`out[:, -1]`): a slice, and
      // for a scalar index a reshape dropping the axis.
      Value data = valueOf(node, 0);
      const HostTensor &indices = constantOf(node, 1);
      auto xs = shapeOf(data);
      int64_t rank = xs.size(), axis = axisAttr(node, rank);
      if (indices.dataType != onnx::TensorProto::INT64 || indices.ints.size() != 1 ||
          indices.dims.size() > 1)
        fail(nodeLabel(node) + ": only one constant int64 index is supported when gathering "
                               "from a computed tensor");
      int64_t i = indices.ints[0];
      if (i < -xs[axis] || i >= xs[axis])
        fail(nodeLabel(node) + ": index " + std::to_string(i) + " is out of range");
      if (i < 0)
        i += xs[axis];
      auto ys = xs;
      ys[axis] = 1;
      Value picked = xs[axis] == 1 ? data
                                   : b.create<SliceOp>(loc, f32(ys), data,
                                                       b.getI64IntegerAttr(axis),
                                                       b.getI64IntegerAttr(i))
                                         .getResult();
      if (indices.dims.empty()) {
        ys.erase(ys.begin() + axis);
        picked = b.create<ReshapeOp>(loc, f32(ys), picked);
      }
      define(node, picked);
      return;
    }
    if (op == "ConstantOfShape") {
      // The zero initial state a dynamic-batch export builds for a recurrent layer, from the
      // input's Shape: with static shapes the shape is a host constant, and so is the result.
      if (!isConstant(node.input(0)))
        fail(nodeLabel(node) + ": the shape must be a constant (graphc needs static shapes)");
      const HostTensor &shape = constantOf(node, 0);
      if (shape.dataType != onnx::TensorProto::INT64 || shape.dims.size() != 1)
        fail(nodeLabel(node) + ": the shape must be a 1-D int64 constant");
      int64_t count = foldedElementCount(node, shape.ints,
                                         "the constant's shape is negative or "
                                         "too large");
      HostTensor out;
      out.dims = shape.ints;
      out.dataType = onnx::TensorProto::FLOAT; // the schema's default: float 0
      float fill = 0.0f;
      if (auto *value = findAttr(node, "value")) {
        if (!value->has_t())
          refuseAttr(node, "value", "must be a one-element tensor");
        HostTensor v = readTensor(value->t());
        out.dataType = v.dataType;
        if (v.dataType == onnx::TensorProto::FLOAT && v.floats.size() == 1)
          fill = v.floats[0];
        else if (v.dataType == onnx::TensorProto::INT64 && v.ints.size() == 1)
          out.ints.assign(size_t(count), v.ints[0]);
        else
          refuseAttr(node, "value", "must be one float32 or int64 element");
      }
      if (out.dataType == onnx::TensorProto::FLOAT)
        out.floats.assign(size_t(count), fill);
      constants[node.output(0)] = std::move(out);
      return;
    }
    if (op == "Where" && node.input_size() == 3 && values.count(node.input(0))) {
      define(node, computedSelect(node, loc));
      return;
    }
    if (op == "Where" && node.input_size() == 3 &&
        (values.count(node.input(1)) || values.count(node.input(2)))) {
      importMaskedFill(node);
      return;
    }
    if (op == "Equal" && node.input_size() == 2 &&
        (values.count(node.input(0)) || values.count(node.input(1)))) {
      // A computed tensor compared with a scalar constant (pad = tokens == 0): the mask
      // graph.activation equal, 1 where equal and 0 elsewhere, as graphc holds bools.
      const int computed = values.count(node.input(0)) ? 0 : 1;
      if (!isConstant(node.input(1 - computed)))
        fail(nodeLabel(node) + ": Equal of a computed tensor is supported with a scalar constant");
      // (Token ids too, exact as float32 below 2^24, where the embedding checks them.)
      Value x = valueOf(node, computed);
      define(node,
             elementwise(loc, ActivationKind::equal, x, scalarInput(node, 1 - computed, 0.f)));
      return;
    }
    if ((op == "Greater" || op == "Less" || op == "GreaterOrEqual" || op == "LessOrEqual") &&
        node.input_size() == 2 && (values.count(node.input(0)) || values.count(node.input(1)))) {
      define(node, compareWithScalar(node, loc));
      return;
    }
    if (op == "Not") { // of a mask: 1 - x
      define(node, oneMinus(loc, valueOf(node, 0)));
      return;
    }
    if (op == "Equal" || op == "Where") {
      foldEqualOrWhere(node);
      return;
    }
    if (op == "Trilu") {
      foldTrilu(node);
      return;
    }
    if (op == "CumSum") {
      define(node, cumSum(node, loc));
      return;
    }
    if (op == "Tile") {
      if (Value tiled = tile(node, loc)) // (a constant is tiled into `constants`)
        define(node, tiled);
      return;
    }
    if (op == "Expand") {
      if (node.input_size() != 2)
        fail(nodeLabel(node) + " needs two inputs");
      // Of a computed tensor or a trained float32 initializer (ViT's class token, [1, 1, D]
      // expanded to the batch; grouped-query attention's repeat_kv): broadcastTo.
      if (values.count(node.input(0)) ||
          (initializers.count(node.input(0)) &&
           constantOf(node, 0).dataType == onnx::TensorProto::FLOAT)) {
        const HostTensor &shape = constantOf(node, 1);
        if (shape.dataType != onnx::TensorProto::INT64 || shape.dims.size() != 1)
          fail(nodeLabel(node) + ": the shape must be a 1-D int64 constant");
        if (llvm::any_of(shape.ints, [](int64_t d) { return d < 0; }))
          fail(nodeLabel(node) + ": the shape " + listText(shape.ints) +
               " has a negative dimension");
        Value x = computedOrParameter(node, 0);
        std::vector<int64_t> target = shape.ints;
        if (target.size() == shapeOf(x).size() && !target.empty() && target[0] != shapeOf(x)[0])
          rebaseBakedBatch(target, shapeOf(x));
        std::vector<int64_t> dims = broadcastShapes(node, {shapeOf(x), target});
        define(node,
               broadcastOperand(node, loc, x, dims,
                                "of " + typeString(x.getType()) + " to " + listText(shape.ints)));
        // A batch-free tensor expanded to the exported batch (ViT's class token expanded to
        // x.shape[0], baked): kept, so that a Concat with this batch's tensors can expand it
        // again (rebaseExpandedInputs).
        if (exportedBatch > 0 && options.batch > 0 && exportedBatch != options.batch &&
            batchLocator().locate(x).kind == BatchLocation::Kind::Free)
          bakedExpands[node.output(0)] = x;
        return;
      }
      // Of a constant (the zero initial state the exporter builds for a recurrent layer):
      // numpy broadcasting, at import.
      if (!isConstant(node.input(0)))
        fail(nodeLabel(node) + " reads \"" + node.input(0) +
             "\", which no earlier node or graph input defines");
      const HostTensor &in = constantOf(node, 0);
      const HostTensor &shape = constantOf(node, 1);
      if (shape.dataType != onnx::TensorProto::INT64 || shape.dims.size() != 1)
        fail(nodeLabel(node) + ": the shape must be a 1-D int64 constant");
      size_t rank = std::max(in.dims.size(), shape.ints.size());
      std::vector<int64_t> inDims(rank, 1), outDims(rank, 1);
      std::copy(in.dims.begin(), in.dims.end(), inDims.begin() + (rank - in.dims.size()));
      for (size_t d = 0; d < rank; ++d) {
        int64_t want = d + shape.ints.size() >= rank ? shape.ints[d + shape.ints.size() - rank] : 1;
        if (inDims[d] != 1 && want != 1 && want != inDims[d])
          fail(nodeLabel(node) + ": cannot broadcast the input's dim " + std::to_string(inDims[d]) +
               " to " + std::to_string(want));
        outDims[d] = std::max(inDims[d], want);
      }
      int64_t count = foldedElementCount(node, outDims, "the expanded constant is too large");
      HostTensor out;
      out.dims = outDims;
      out.dataType = in.dataType;
      for (int64_t flat = 0; flat < count; ++flat) {
        int64_t rest = flat, src = 0, stride = 1;
        for (size_t d = rank; d-- > 0;) {
          int64_t coord = rest % outDims[d];
          rest /= outDims[d];
          src += (inDims[d] == 1 ? 0 : coord) * stride;
          stride *= inDims[d];
        }
        if (in.dataType == onnx::TensorProto::FLOAT)
          out.floats.push_back(in.floats[size_t(src)]);
        else if (in.dataType == onnx::TensorProto::INT64)
          out.ints.push_back(in.ints[size_t(src)]);
        else
          fail(nodeLabel(node) + ": only float32 and int64 constants are expanded");
      }
      constants[node.output(0)] = std::move(out);
      return;
    }
    if (op == "LSTM" || op == "GRU") {
      importRecurrent(node, loc);
      return;
    }
    if (op == "Gather") {
      const HostTensor &data = constantOf(node, 0);
      const HostTensor &indices = constantOf(node, 1);
      if (data.dataType != onnx::TensorProto::INT64 || data.dims.size() != 1 ||
          indices.dataType != onnx::TensorProto::INT64 || indices.dims.size() > 1 ||
          intAttr(node, "axis", 0) != 0)
        fail(nodeLabel(node) + ": only Gather of 1-D int64 constants (shape arithmetic) is "
                               "supported");
      std::vector<int64_t> out;
      for (int64_t i : indices.ints) {
        int64_t n = data.ints.size();
        if (i < -n || i >= n)
          fail(nodeLabel(node) + ": index " + std::to_string(i) + " is out of range");
        out.push_back(data.ints[i < 0 ? i + n : i]);
      }
      constants[node.output(0)] =
          intTensor(indices.dims.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(out.size())},
                    out);
      return;
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
      std::vector<int64_t> axes;
      if (opset >= 13) {
        if (node.input_size() > 1 && !node.input(1).empty())
          axes = constantOf(node, 1).ints;
      } else {
        axes = intsAttr(node, "axes", {});
      }
      bool host = isConstant(node.input(0));
      std::vector<int64_t> dims = host ? constantOf(node, 0).dims : shapeOf(valueOf(node, 0));
      std::vector<int64_t> out;
      if (op == "Unsqueeze") {
        int64_t rank = dims.size() + axes.size();
        std::vector<bool> inserted(rank, false);
        for (int64_t a : axes) {
          if (a < 0)
            a += rank;
          if (a < 0 || a >= rank || inserted[a])
            refuseAttr(node, "axes", "is out of range or repeated");
          inserted[a] = true;
        }
        size_t next = 0;
        for (int64_t d = 0; d < rank; ++d)
          out.push_back(inserted[d] ? 1 : dims[next++]);
      } else {
        int64_t rank = dims.size();
        std::vector<bool> removed(rank, axes.empty());
        for (int64_t a : axes) {
          if (a < 0)
            a += rank;
          if (a < 0 || a >= rank || dims[a] != 1)
            refuseAttr(node, "axes", "must name dimensions of size 1");
          removed[a] = true;
        }
        for (int64_t d = 0; d < rank; ++d)
          if (!(removed[d] && dims[d] == 1))
            out.push_back(dims[d]);
      }
      if (host) {
        HostTensor h = constantOf(node, 0);
        h.dims = out;
        if (h.dataType == onnx::TensorProto::FLOAT) {
          const std::string &in = node.input(0);
          if (initializers.count(in))
            initializerViews[node.output(0)] = in;
          else if (auto view = initializerViews.find(in); view != initializerViews.end())
            initializerViews[node.output(0)] = view->second;
        }
        constants[node.output(0)] = h;
      } else {
        define(node, b.create<ReshapeOp>(loc, f32(out), valueOf(node, 0)));
      }
      return;
    }
    if (op == "Slice" && isConstant(node.input(0)) && !initializers.count(node.input(0))) {
      // Of a Constant node (the exporter's zero initial state of a stacked LSTM, one layer's
      // part): folded at import, along any axes with step 1.
      HostTensor in = constantOf(node, 0);
      for (const SliceRange &range : sliceRanges(node, in.dims)) {
        int64_t axis = range.axis, start = range.start, end = range.end, dim = in.dims[axis];
        int64_t rank = in.dims.size();
        int64_t outer = 1, inner = 1;
        for (int64_t d = 0; d < axis; ++d)
          outer *= in.dims[d];
        for (int64_t d = axis + 1; d < rank; ++d)
          inner *= in.dims[d];
        HostTensor out = in;
        out.dims[axis] = end - start;
        out.floats.clear();
        out.ints.clear();
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t k = start; k < end; ++k)
            for (int64_t j = 0; j < inner; ++j) {
              size_t at = size_t((o * dim + k) * inner + j);
              if (in.dataType == onnx::TensorProto::FLOAT)
                out.floats.push_back(in.floats[at]);
              else if (in.dataType == onnx::TensorProto::INT64)
                out.ints.push_back(in.ints[at]);
              else
                fail(nodeLabel(node) + ": only float32 and int64 constants are sliced at import");
            }
        in = std::move(out);
      }
      constants[node.output(0)] = std::move(in);
      return;
    }
    if (op == "Slice") {
      // Static slices along one axis with step 1 (the exporter's split of a fused Q/K/V
      // projection, of recurrent weights into gates); starts/ends are host constants after
      // shape folding.
      Value x = computedOrParameter(node, 0);
      auto xs = shapeOf(x);
      Value result = x;
      for (const SliceRange &range : sliceRanges(node, xs)) {
        int64_t axis = range.axis, start = range.start, end = range.end, dim = xs[axis];
        if (start == 0 && end == dim)
          continue;
        if (result != x)
          fail(nodeLabel(node) + ": slicing more than one axis is not supported");
        auto ys = xs;
        ys[axis] = end - start;
        result = b.create<SliceOp>(loc, f32(ys), x, b.getI64IntegerAttr(axis),
                                   b.getI64IntegerAttr(start));
      }
      define(node, result);
      return;
    }
    if (op == "Split") {
      // torch.split / chunk along one axis: one slice per output. Sizes from the `split`
      // input (opset >= 13) or attribute; else, from opset 18, `num_outputs` parts of
      // ceil(d / num_outputs), the last one smaller when they do not divide d (torch.chunk's
      // rule); else equal parts.
      Value x = computedOrParameter(node, 0);
      auto xs = shapeOf(x);
      int64_t rank = xs.size(), axis = axisAttr(node, rank);
      std::vector<int64_t> sizes;
      if (node.input_size() > 1 && !node.input(1).empty()) {
        const HostTensor &split = constantOf(node, 1);
        if (split.dataType != onnx::TensorProto::INT64 || split.dims.size() != 1)
          fail(nodeLabel(node) + ": the split sizes must be a 1-D int64 constant");
        sizes = split.ints;
      } else if (findAttr(node, "split")) {
        sizes = intsAttr(node, "split", {});
      } else if (findAttr(node, "num_outputs")) {
        const int64_t parts = intAttr(node, "num_outputs", 0);
        if (parts < 1 || parts != node.output_size())
          refuseAttr(node, "num_outputs",
                     "= " + std::to_string(parts) + " does not match the node's " +
                         std::to_string(node.output_size()) + " outputs");
        const int64_t chunk = (xs[axis] + parts - 1) / parts;
        if (chunk * (parts - 1) >= xs[axis])
          fail(nodeLabel(node) + ": cannot split dimension " + std::to_string(xs[axis]) + " into " +
               std::to_string(parts) + " parts of " + std::to_string(chunk) +
               " (the last one would be empty)");
        sizes.assign(size_t(parts - 1), chunk);
        sizes.push_back(xs[axis] - chunk * (parts - 1));
      } else {
        int64_t parts = node.output_size();
        if (parts < 1 || xs[axis] % parts != 0)
          fail(nodeLabel(node) + ": cannot split dimension " + std::to_string(xs[axis]) +
               " into " + std::to_string(parts) + " equal parts");
        sizes.assign(size_t(parts), xs[axis] / parts);
      }
      if (int64_t(sizes.size()) != node.output_size())
        fail(nodeLabel(node) + ": " + std::to_string(sizes.size()) + " split sizes for " +
             std::to_string(node.output_size()) + " outputs");
      int64_t start = 0;
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] < 1 || start + sizes[i] > xs[axis])
          fail(nodeLabel(node) + ": split sizes must be positive and add up to dimension " +
               std::to_string(xs[axis]) + " of axis " + std::to_string(axis));
        auto ys = xs;
        ys[axis] = sizes[i];
        if (!node.output(int(i)).empty())
          values[node.output(int(i))] =
              sizes[i] == xs[axis] ? x
                                   : b.create<SliceOp>(loc, f32(ys), x, b.getI64IntegerAttr(axis),
                                                       b.getI64IntegerAttr(start))
                                         .getResult();
        start += sizes[i];
      }
      if (start != xs[axis])
        fail(nodeLabel(node) + ": split sizes add up to " + std::to_string(start) +
             ", not dimension " + std::to_string(xs[axis]) + " of axis " + std::to_string(axis));
      return;
    }
    if (op == "LayerNormalization" || op == "RMSNormalization") {
      // Over the axes from `axis` to the last (opset 17's LayerNormalization, opset 23's
      // RMSNormalization): one graph.layer_norm or graph.rms_norm of the [rows, width] view,
      // with the scale (and bias) of the normalised shape as [width] rows.
      const bool rms = op == "RMSNormalization";
      Value x = valueOf(node, 0);
      auto xs = shapeOf(x);
      const int64_t rank = xs.size();
      int64_t axis = intAttr(node, "axis", -1);
      if (axis < -rank || axis >= rank)
        refuseAttr(node, "axis",
                   "= " + std::to_string(axis) + " is out of range for rank " +
                       std::to_string(rank));
      axis = axis < 0 ? axis + rank : axis;
      if (axis == 0)
        refuseAttr(node, "axis",
                   "= 0 normalises across the batch, which graphc does not "
                   "support (normalise each sample: axis >= 1)");
      for (int i = 1; i < node.output_size(); ++i)
        if (!node.output(i).empty() && readers.count(node.output(i)))
          fail(nodeLabel(node) + ": the Mean and InvStdDev outputs are not supported");
      const std::vector<int64_t> normalized(xs.begin() + axis, xs.end());
      const int64_t width =
          std::accumulate(normalized.begin(), normalized.end(), int64_t{1}, std::multiplies<>());
      const int64_t rows =
          std::accumulate(xs.begin(), xs.begin() + axis, int64_t{1}, std::multiplies<>());
      auto withoutLeadingOnes = [](std::vector<int64_t> dims) {
        dims.erase(dims.begin(),
                   std::find_if(dims.begin(), dims.end(), [](int64_t d) { return d != 1; }));
        return dims;
      };
      // Input `index` as [width]: it must have the normalised shape (leading 1s aside).
      auto rowParameter = [&](int index, const char *what) -> Value {
        Value v = parameterOf(node, index);
        if (withoutLeadingOnes(shapeOf(v)) != withoutLeadingOnes(normalized))
          fail(nodeLabel(node) + ": " + what + " must have the normalised shape " +
               typeString(f32(normalized)) + " (axes " + std::to_string(axis) + " to " +
               std::to_string(rank - 1) + " of the input), not " + typeString(v.getType()));
        return shapeOf(v) == std::vector<int64_t>{width}
                   ? v
                   : b.create<ReshapeOp>(loc, f32({width}), v).getResult();
      };
      Value scale = rowParameter(1, "the scale");
      Value bias;
      if (!rms)
        bias = node.input_size() > 2 && !node.input(2).empty()
                   ? rowParameter(2, "the bias")
                   : b.create<FillOp>(loc, f32({width}), b.getF32FloatAttr(0.0f)).getResult();
      const bool flat = axis == rank - 1;
      Value view = flat ? x : b.create<ReshapeOp>(loc, f32({rows, width}), x).getResult();
      const float epsilon = floatAttr(node, "epsilon", 1e-5f);
      Value y = rms ? b.create<RmsNormOp>(loc, TypeRange{view.getType(), f32({rows})}, view, scale,
                                          b.getF32FloatAttr(epsilon))
                          .getResult()
                    : layerNorm(loc, view, scale, bias, epsilon);
      define(node, flat ? y : b.create<ReshapeOp>(loc, x.getType(), y).getResult());
      return;
    }
    if (op == "ReduceMean" && importDecomposedLayerNorm(node, index, loc))
      return;
    if (op == "ReduceMax" || op == "ReduceMin") {
      // x.amax(dim) (a hand-written softmax's or logsumexp's shift), and amin as -max(-x).
      Value x = valueOf(node, 0);
      if (op == "ReduceMin")
        x = b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(-1.f));
      Value extreme = reduceOverAxes(node, loc, x, /*maximum=*/true).value;
      if (op == "ReduceMin")
        extreme = b.create<ScaleOp>(loc, extreme.getType(), extreme, b.getF32FloatAttr(-1.f));
      define(node, extreme);
      return;
    }
    if (op == "ReduceLogSumExp") {
      // log(sum(exp(x - m))) + m with m the maximum (torch.logsumexp's shift, so that exp never
      // overflows), m broadcast back over the reduced axes as a Sub's operand.
      Value x = valueOf(node, 0);
      Reduction maximum = reduceOverAxes(node, loc, x, /*maximum=*/true, /*keepDims=*/true);
      Value shift = maximum.value;
      values[node.output(0) + "@shift"] = shift;
      Value centred =
          broadcastBinary(derivedNode(node, "Sub", node.input(0), node.output(0) + "@shift",
                                      node.output(0) + "@centred"),
                          loc);
      Value exps = elementwise(loc, ActivationKind::exp, centred);
      Value mean = reduceOverAxes(node, loc, exps, /*maximum=*/false, /*keepDims=*/true).value;
      Value logSum = elementwise(loc, ActivationKind::log, sumFromMean(loc, mean, maximum.count));
      Value result = b.create<AddOp>(loc, logSum.getType(), logSum, shift);
      if (shapeOf(result) != maximum.nodeDims)
        result = b.create<ReshapeOp>(loc, f32(maximum.nodeDims), result);
      define(node, result);
      return;
    }
    if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceSumSquare" || op == "ReduceL2") {
      // Each a mean over consecutive axes (reduceOverAxes), of x or of x^2 (a graph.activation
      // pow 2), scaled by the count for the sums, and the L2 norm its square root.
      Value x = valueOf(node, 0);
      if (op == "ReduceSumSquare" || op == "ReduceL2")
        x = elementwise(loc, ActivationKind::pow, x, 2.0f);
      auto [mean, count, dims] = reduceOverAxes(node, loc, x);
      Value result = op == "ReduceMean" ? mean : sumFromMean(loc, mean, count);
      if (op == "ReduceL2")
        result = elementwise(loc, ActivationKind::pow, result, 0.5f);
      define(node, result);
      return;
    }
    if (op == "Pow" && node.input_size() == 2 && isConstant(node.input(0)) &&
        isConstant(node.input(1))) {
      const HostTensor &base = constantOf(node, 0), &exponent = constantOf(node, 1);
      if (base.dataType != onnx::TensorProto::FLOAT ||
          exponent.dataType != onnx::TensorProto::FLOAT)
        fail(nodeLabel(node) + ": only Pow of float32 constants is folded at import");
      foldFloatArithmetic(node, base, exponent);
      return;
    }
    if ((op == "Cos" || op == "Sin" || op == "Neg" || op == "Reciprocal" || op == "Sqrt" ||
         op == "Exp" || op == "Log") &&
        node.input_size() == 1 && isConstant(node.input(0))) {
      foldFloatUnary(node);
      return;
    }
    if (op == "Range") {
      // torch.arange(T) with T from the input's shape (a dynamic-batch export): of scalar
      // constants, folded, int64 or float32 as its inputs; ONNX's count,
      // max(ceil((limit - start) / delta), 0).
      if (node.input_size() != 3)
        fail(nodeLabel(node) + " needs three inputs");
      const HostTensor &start = constantOf(node, 0), &limit = constantOf(node, 1),
                       &delta = constantOf(node, 2);
      const bool ints = start.dataType == onnx::TensorProto::INT64;
      auto scalar = [&](const HostTensor &h) {
        if (h.dataType != start.dataType || (ints ? h.ints.size() : h.floats.size()) != 1)
          fail(nodeLabel(node) + ": start, limit and delta must be scalars of one type, int64 "
                                 "or float32");
        return ints ? double(h.ints[0]) : double(h.floats[0]);
      };
      if (!ints && start.dataType != onnx::TensorProto::FLOAT)
        fail(nodeLabel(node) + ": start, limit and delta must be int64 or float32");
      const double first = scalar(start), last = scalar(limit), step = scalar(delta);
      if (step == 0 || !std::isfinite(first) || !std::isfinite(last) || !std::isfinite(step))
        fail(nodeLabel(node) + ": delta must be non-zero and the bounds finite");
      const double count = std::max(std::ceil((last - first) / step), 0.0);
      foldedElementCount(node, {count > double(int64_t{1} << 40) ? -1 : int64_t(count)},
                         "the folded range is too large");
      HostTensor out;
      out.dims = {int64_t(count)};
      out.dataType = start.dataType;
      for (int64_t i = 0; i < int64_t(count); ++i)
        if (ints)
          out.ints.push_back(start.ints[0] + i * delta.ints[0]);
        else
          out.floats.push_back(start.floats[0] + float(i) * delta.floats[0]);
      constants[node.output(0)] = std::move(out);
      return;
    }
    if (op == "Einsum") {
      bool allConstant = true;
      for (int i = 0; i < node.input_size(); ++i)
        allConstant = allConstant && isConstant(node.input(i));
      // (All constants, initializers included: folded, a frozen table, as a rotary
      // embedding's torch.outer(t, inv_freq) of a buffer exports.)
      if (allConstant)
        foldEinsum(node);
      else
        define(node, einsum(node, loc));
      return;
    }
    if (op == "Pow" && importDecomposedRmsNorm(node, loc))
      return;
    if (op == "Exp" || op == "Log" || op == "Sqrt" || op == "Reciprocal") {
      // Elementwise math of a computed tensor: graph.activation exp, log, or pow with exponent
      // 0.5 or -1 (computed as sqrt and 1 / x).
      Value x = valueOf(node, 0);
      define(node, op == "Exp"    ? elementwise(loc, ActivationKind::exp, x)
                   : op == "Log"  ? elementwise(loc, ActivationKind::log, x)
                   : op == "Sqrt" ? elementwise(loc, ActivationKind::pow, x, 0.5f)
                                  : elementwise(loc, ActivationKind::pow, x, -1.0f));
      return;
    }
    if (op == "Pow") {
      // A computed tensor to a float32 scalar constant power (x.pow(2), x ** 0.75).
      if (node.input_size() != 2 || !values.count(node.input(0)) || !isConstant(node.input(1)))
        fail(nodeLabel(node) + ": Pow is supported of a computed tensor to a constant scalar "
                               "exponent, and of constants");
      const HostTensor &e = constantOf(node, 1);
      if (e.dataType != onnx::TensorProto::FLOAT || e.floats.size() != 1 ||
          !std::isfinite(e.floats[0]))
        fail(nodeLabel(node) + ": the exponent must be a finite float32 scalar constant");
      Value x = valueOf(node, 0);
      define(node, e.floats[0] == 1.0f ? x : elementwise(loc, ActivationKind::pow, x, e.floats[0]));
      return;
    }
    if (op == "Neg") {
      Value x = valueOf(node, 0);
      define(node, b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(-1.f)));
      return;
    }
    if (op == "Relu") {
      Value x = valueOf(node, 0);
      define(node, b.create<ReluOp>(loc, x.getType(), x));
      return;
    }
    if (op == "LeakyRelu" || op == "Elu" || op == "Selu" || op == "Softplus" || op == "Softsign") {
      // graph.activation, in PyTorch's formulas (elementwise_math.h); LeakyRelu's slope and
      // Elu's scale of the negative part come from `alpha` (ONNX's defaults 0.01 and 1).
      Value x = valueOf(node, 0);
      ActivationKind kind = op == "LeakyRelu"  ? ActivationKind::leaky_relu
                            : op == "Elu"      ? ActivationKind::elu
                            : op == "Selu"     ? ActivationKind::selu
                            : op == "Softplus" ? ActivationKind::softplus
                                               : ActivationKind::softsign;
      float alpha = op == "LeakyRelu" ? floatAttr(node, "alpha", 0.01f)
                    : op == "Elu"     ? floatAttr(node, "alpha", 1.0f)
                                      : 1.0f;
      if (op == "Selu") { // graph's selu has the fixed constants of torch.nn.SELU
        if (std::fabs(floatAttr(node, "alpha", 1.67326319f) - 1.67326319f) > 1e-6f ||
            std::fabs(floatAttr(node, "gamma", 1.05070102f) - 1.05070102f) > 1e-6f)
          refuseAttr(node, "alpha", "and gamma must be SELU's constants (1.67326, 1.05070)");
      }
      defineActivation(node, kind, x, alpha, loc);
      return;
    }
    if (op == "HardSigmoid" || op == "HardSwish") {
      // max(0, min(1, alpha x + beta)) as scale + clip (ONNX's defaults 0.2 and 0.5; PyTorch's
      // hardsigmoid exports 1/6 and 0.5); HardSwish (opset 14) is x times it with 1/6 and 0.5.
      // (torch at opset 13 exports hardswish as HardSigmoid and Mul: see productOfComputed.)
      Value x = valueOf(node, 0);
      bool swish = op == "HardSwish";
      float alpha = swish ? 1.0f / 6.0f : floatAttr(node, "alpha", 0.2f);
      float beta = swish ? 0.5f : floatAttr(node, "beta", 0.5f);
      Value affine =
          b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(alpha), b.getF32FloatAttr(beta));
      Value gate = b.create<ClipOp>(loc, x.getType(), affine, b.getF32FloatAttr(0.0f),
                                    b.getF32FloatAttr(1.0f));
      define(node, swish ? b.create<MulOp>(loc, x.getType(), x, gate).getResult() : gate);
      return;
    }
    if (op == "Sigmoid") {
      Value x = valueOf(node, 0);
      // x * sigmoid(x), read by nothing else (F.silu and nn.SiLU as torch exports them before
      // opset 14, EfficientNet's swish, diffusion U-Nets' blocks): one activation silu, whose
      // backward reads x alone, so the sigmoid is neither a second pass nor kept for the
      // backward pass.
      if (int mul = soleReader(node.output(0), "Mul"); mul >= 0) {
        const onnx::NodeProto &product = graph->node(mul);
        const int gateIndex = product.input(0) == node.output(0) ? 0 : 1;
        if (product.input(1 - gateIndex) == node.input(0) &&
            product.input(gateIndex) == node.output(0)) {
          defineActivation(product, ActivationKind::silu, x, 1.0f, loc);
          absorbed.insert(mul);
          return;
        }
      }
      define(node, b.create<SigmoidOp>(loc, x.getType(), x));
      return;
    }
    if (op == "Tanh") {
      Value x = valueOf(node, 0);
      define(node, b.create<TanhOp>(loc, x.getType(), x));
      return;
    }
    if (op == "RotaryEmbedding") { // opset 23
      define(node, onnxRotary(node, loc));
      return;
    }
    if (op == "Attention") { // opset 23
      define(node, onnxAttention(node, loc));
      return;
    }
    if (op == "Gelu") { // opset 20
      const std::string approximate = strAttr(node, "approximate", "none");
      if (approximate != "none" && approximate != "tanh")
        refuseAttr(node, "approximate", "= " + approximate + " is not one of none and tanh");
      defineActivation(node,
                       approximate == "tanh" ? ActivationKind::gelu_tanh : ActivationKind::gelu,
                       valueOf(node, 0), 1.0f, loc);
      return;
    }
    if (op == "Swish" || op == "SwiGLU") {
      // Swish (opset 24): x * sigmoid(alpha x), one activation silu when alpha is 1.
      // SwiGLU (opset 28): Swish(A) * B, A and B of one shape.
      Value x = valueOf(node, 0);
      const float alpha = floatAttr(node, "alpha", 1.0f);
      Value swish;
      if (alpha == 1.0f) {
        swish = elementwise(loc, ActivationKind::silu, x);
      } else {
        Value scaled = b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(alpha));
        Value gate = b.create<SigmoidOp>(loc, x.getType(), scaled);
        swish = b.create<MulOp>(loc, x.getType(), x, gate);
      }
      if (op == "SwiGLU") {
        Value linear = valueOf(node, 1);
        if (linear.getType() != x.getType())
          fail(nodeLabel(node) + ": A " + typeString(x.getType()) + " and B " +
               typeString(linear.getType()) + " must have one shape (SwiGLU does not broadcast)");
        swish = b.create<MulOp>(loc, x.getType(), swish, linear);
      }
      define(node, swish);
      return;
    }
    if (op == "Celu") { // alpha * elu(x / alpha), ELU's alpha 1
      Value x = valueOf(node, 0);
      const float alpha = floatAttr(node, "alpha", 1.0f);
      if (!(alpha > 0.0f) || !std::isfinite(alpha))
        refuseAttr(node, "alpha", "must be positive");
      Value in =
          alpha == 1.0f
              ? x
              : b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(1.0f / alpha)).getResult();
      Value elu = elementwise(loc, ActivationKind::elu, in, 1.0f);
      define(node,
             alpha == 1.0f
                 ? elu
                 : b.create<ScaleOp>(loc, x.getType(), elu, b.getF32FloatAttr(alpha)).getResult());
      return;
    }
    if (op == "PRelu") {
      // nn.PReLU: relu(x) - slope * relu(-x), the slope trained; one slope per channel (axis 1
      // of [N, C, ...], as torch exports nn.PReLU(C)'s weight unsqueezed to [C, 1, 1]; a
      // vector's [F]) or one for all (nn.PReLU()): a depthwise 1x1 convolution of relu(-x)'s
      // [N, C, elements, 1] (or [N, 1, elements, 1]) view by the slope, whose gradient the
      // convolution gives.
      Value x = valueOf(node, 0);
      Value slope = computedOrParameter(node, 1);
      const auto xs = shapeOf(x);
      const auto ss = shapeOf(slope);
      if (ss.size() > xs.size())
        fail(nodeLabel(node) + ": slope " + typeString(slope.getType()) + " has more axes than X " +
             typeString(x.getType()));
      std::vector<int64_t> padded(xs.size() - ss.size(), 1);
      padded.insert(padded.end(), ss.begin(), ss.end());
      const bool single = llvm::all_of(padded, [](int64_t d) { return d == 1; });
      bool perChannel = !single && xs.size() >= 2 && padded[1] == xs[1];
      for (size_t a = 0; a < padded.size() && perChannel; ++a)
        perChannel = a == 1 || padded[a] == 1;
      if (!single && !perChannel)
        fail(nodeLabel(node) + ": slope " + typeString(slope.getType()) + " for X " +
             typeString(x.getType()) +
             " is not supported (one slope, or one per channel: axis "
             "1, [C, 1, 1] for an image)");
      const int64_t all = std::accumulate(xs.begin(), xs.end(), int64_t{1}, std::multiplies<>());
      const int64_t channels = single ? 1 : xs[1];
      const int64_t samples = xs.empty() ? 1 : xs[0]; // (the batch stays the leading axis)
      Value positive = b.create<ReluOp>(loc, x.getType(), x);
      Value flipped = b.create<ScaleOp>(loc, x.getType(), x, b.getF32FloatAttr(-1.0f));
      Value negative = b.create<ReluOp>(loc, x.getType(), flipped);
      Value view = b.create<ReshapeOp>(loc, f32({samples, channels, all / (samples * channels), 1}),
                                       negative);
      Value sloped = buildPerChannelAffine(b, loc, view, slope, Value());
      Value back = b.create<ReshapeOp>(loc, x.getType(), sloped);
      Value subtracted = b.create<ScaleOp>(loc, x.getType(), back, b.getF32FloatAttr(-1.0f));
      define(node, b.create<AddOp>(loc, x.getType(), positive, subtracted));
      return;
    }
    if (op == "Mish") { // opset 18: x * tanh(softplus(x))
      Value x = valueOf(node, 0);
      Value softplus = elementwise(loc, ActivationKind::softplus, x);
      Value gate = b.create<TanhOp>(loc, x.getType(), softplus);
      define(node, b.create<MulOp>(loc, x.getType(), x, gate));
      return;
    }
    if (op == "Softmax" || op == "LogSoftmax") {
      Value x = valueOf(node, 0);
      int64_t rank = shapeOf(x).size();
      int64_t axis = intAttr(node, "axis", opset >= 13 ? -1 : 1);
      if (axis < 0)
        axis += rank;
      // Before opset 13 Softmax flattens to 2-D at `axis`; that equals a softmax over `axis`
      // only when it is the last axis.
      if (axis < 0 || axis >= rank || (opset < 13 && axis != rank - 1))
        refuseAttr(node, "axis", "= " + std::to_string(axis) + " is not supported for rank " +
                                     std::to_string(rank));
      // Scores with a causal mask added (importAttentionMask): the causal softmax.
      const bool causal = causalScores.count(node.input(0)) != 0;
      Value probabilities = b.create<SoftmaxOp>(loc, x.getType(), x, b.getI64IntegerAttr(axis),
                                                causal ? b.getUnitAttr() : UnitAttr());
      // LogSoftmax (a PyTorch classifier trained with NLLLoss): the log of the softmax. As the
      // model's output, a categorical crossentropy reads it as log-probabilities, PyTorch's
      // NLLLoss, and folds into a crossentropy from the logits (graph::getLossLogits), so the
      // log of a rounded probability is never taken in training.
      define(node, op == "Softmax" ? probabilities
                                   : elementwise(loc, ActivationKind::log, probabilities));
      return;
    }
    fail(nodeLabel(node) + " is not supported (--verbose lists the supported ops)");
  }

  MLIRContext &ctx;
  OpBuilder b;
  const onnx::GraphProto *graph = nullptr;
  onnx::GraphProto inlined; // the graph with its local functions inlined (withFunctionsInlined)
  // Node indices reading each value name (-1: a graph output), for pattern matching.
  std::map<std::string, std::vector<int>> readers;
  std::map<std::string, int> producer; // value name -> the node index that writes it
  // Nodes folded into an earlier node's op (a decomposed LayerNorm), skipped by the walk.
  std::set<int> absorbed;
  // Transpose outputs of 2-D initializers -> the initializer's name: PyTorch's Linear on a
  // rank-3 input exports MatMul(x, Transpose(W)), which becomes a dense with transpose_weight
  // on the parameter W itself.
  std::map<std::string, std::string> transposedParams;
  // Unsqueeze/Squeeze outputs of float32 initializers (nn.GroupNorm's exported
  // weight.unsqueeze(1).unsqueeze(2)), folded on the host like any constant view -> the
  // initializer: read as an operand they are views of its parameter (parameterNamed), so
  // that it trains, while constant arithmetic on them (a rotary inv_freq buffer) still folds.
  std::map<std::string, std::string> initializerViews;
  std::string path;
  OnnxImportOptions options;
  int64_t opset = 0;
  func::FuncOp func;
  Value stepArg;
  std::map<std::string, Value> values;
  OnnxImportCache::State &file; // the file's initializers, shared with its other imports
  ConstantTable constants;
  std::set<std::string> initializers; // the names of the graph's initializers (weights)
  // Outputs of a causal attention mask's Add or Where (importAttentionMask, importMaskedFill):
  // the scores, which the Softmax reading them masks causally.
  std::set<std::string> causalScores;
  // The data inputs' declared (static) batch, 0 for a dynamic one: reshapedDims rebases the
  // shape constants an export baked it into.
  int64_t exportedBatch = 0;
  // Where the batch lies in the values built so far (reshapedDims), made on first use.
  std::optional<BatchLocator> locator;
  BatchLocator &batchLocator() {
    if (!locator)
      locator.emplace(options.batch);
    return *locator;
  }
  std::string batchedInput; // the data input that declared the exported batch (for hints)
  std::string firstGuessedRebase; // the first Reshape whose batch axis a batch-1 export left open

public:
  // Rebased Reshapes by output name: recorded when `recordRebases` is set (the batch-2 import
  // that importOnnxFile runs ahead of one at batch 1), followed when `learnedRebases` is.
  std::map<std::string, ReshapeRebase> *recordRebases = nullptr;
  const std::map<std::string, ReshapeRebase> *learnedRebases = nullptr;
  int64_t exportedBatchOf() const { return exportedBatch; }

private:
  // Expand results of batch-free tensors (by ONNX name) to their sources, when the batch moved.
  std::map<std::string, Value> bakedExpands;
  std::set<std::string> integerInputs; // integer graph inputs (token ids, masks), as exact float32
  // Integer tensors computed from them (a mask's Unsqueeze, 1 - mask) by name, with the graph
  // input each derives from: float32 computes them exactly, except integer division.
  std::map<std::string, std::string> integerValued;

public:
  int initialisedParameters = 0; // parameter inputs given PyTorch's initial values
  std::vector<std::string> initialisationRules; // "name: rule" of each
};

} // namespace

OwningOpRef<ModuleOp> graphc::importOnnxFile(const std::string &path, MLIRContext &context,
                                             const OnnxImportOptions &options, std::string &error,
                                             OnnxImportSummary *summary, OnnxImportCache *cache) {
  OnnxImportCache once;
  OnnxImportCache &reuse = cache ? *cache : once;
  if (!reuse.state || !reuse.state->sameFile(path, options)) {
    reuse.state.reset();
    // Mapped, not copied: protobuf copies each tensor's bytes out of it once.
    auto bytes = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
    if (!bytes) {
      error = path + ": cannot open the file";
      return nullptr;
    }
    auto state = std::make_unique<OnnxImportCache::State>();
    llvm::StringRef data = (*bytes)->getBuffer();
    if (data.empty() || data.size() > size_t(std::numeric_limits<int>::max()) ||
        !state->model.ParseFromArray(data.data(), int(data.size()))) {
      error = path + ": not a valid ONNX model (protobuf parsing failed; the file may be "
                     "truncated or corrupted)";
      return nullptr;
    }
    state->path = path;
    state->dataInput = options.dataInput;
    state->seed = options.seed;
    state->maxParameterInputElements = options.maxParameterInputElements;
    reuse.state = std::move(state);
  }
  context.loadDialect<GraphDialect, func::FuncDialect>();
  // At batch 1 a baked batch's axis is often unknowable from the shapes (a [T, 1 x H, D] view
  // is also [T x 1, H, D]): an import at batch 2 (3 for an export at 2), thrown away, decides
  // each baked Reshape, and the batch-1 import follows it. One more import, at batch 1 only.
  std::map<std::string, ReshapeRebase> rebases;
  if (options.batch == 1)
    for (int64_t shadowBatch : {2, 3}) {
      OnnxImportOptions shadowOptions = options;
      shadowOptions.batch = shadowBatch;
      Importer shadow(context, path, shadowOptions, *reuse.state);
      shadow.recordRebases = &rebases;
      std::string ignored;
      (void)shadow.run(reuse.state->model, ignored);
      if (shadow.exportedBatchOf() != shadowBatch)
        break;
    }
  Importer importer(context, path, options, *reuse.state);
  if (!rebases.empty())
    importer.learnedRebases = &rebases;
  auto module = importer.run(reuse.state->model, error);
  if (!module) {
    reuse.state.reset(); // a later import reads the file again, and fails the same way
    return nullptr;
  }
  if (summary) {
    summary->initialisedParameters = importer.initialisedParameters;
    summary->initialisationRules = importer.initialisationRules;
  }
  return module;
}

const char *graphc::onnxSupportedOps() { return kSupportedOps; }
