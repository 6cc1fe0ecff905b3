// Parameters exported as graph inputs: the data inputs, and PyTorch's default initial values for
// the rest, chosen by the role in which the graph reads each one.
//
// PyTorch initialises a parameter in its module's reset_parameters(); an export without the
// parameters keeps only their names (the state_dict keys) and shapes. The module is recovered
// from the op that reads the parameter: a breadth-first walk over the uses, through ops that only
// move values (Transpose, Slice, Concat, ...), finds the nearest op that computes with it. Every
// walk visits each node at most once, so the whole pass is O(parameters x nodes) at worst.
#include "importers/onnx/ParameterInputs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <set>

#include "onnx/onnx_pb.h"

namespace graphc {
namespace {

/// Ops through which a parameter reaches the op that uses it without being computed on.
const std::set<std::string> &viewOps() {
  static const std::set<std::string> ops = {"Identity", "Transpose", "Slice",   "Split",
                                            "Concat",   "Unsqueeze", "Squeeze", "Reshape",
                                            "Cast",     "Flatten",   "Expand"};
  return ops;
}

struct Use {
  int node;
  int input;
};

class Initialiser {
public:
  Initialiser(const onnx::GraphProto &graph, uint64_t seed, int64_t maxElements)
      : graph(graph), seed(seed), elementsLeft(maxElements) {
    for (int i = 0; i < graph.node_size(); ++i) {
      const auto &node = graph.node(i);
      for (int k = 0; k < node.input_size(); ++k)
        uses[node.input(k)].push_back({i, k});
      for (const auto &out : node.output())
        producer[out] = i;
    }
    for (const auto &init : graph.initializer())
      sourceDims[init.name()].assign(init.dims().begin(), init.dims().end());
  }

  bool run(const std::string &dataInputFlag, ParameterInputs &out, std::string &error) {
    std::set<std::string> initialised;
    for (const auto &init : graph.initializer())
      initialised.insert(init.name());
    std::vector<const onnx::ValueInfoProto *> free;
    for (const auto &input : graph.input())
      if (!initialised.count(input.name()))
        free.push_back(&input);

    if (!dataInputFlag.empty()) {
      // A comma-separated list: input_ids,attention_mask.
      for (size_t begin = 0; begin <= dataInputFlag.size();) {
        size_t end = std::min(dataInputFlag.find(',', begin), dataInputFlag.size());
        const std::string name = dataInputFlag.substr(begin, end - begin);
        bool found = false;
        for (const auto *input : free)
          found |= input->name() == name;
        if (!found) {
          error = "--data-input=" + dataInputFlag + ": \"" + name +
                  "\" is no graph input without an initializer" + inputList(free);
          return false;
        }
        out.dataInputs.push_back(name);
        begin = end + 1;
      }
    } else if (free.size() == 1) {
      out.dataInputs = {free[0]->name()};
    } else {
      std::vector<std::string> dataLike;
      for (const auto *input : free)
        if (!looksLikeParameterName(input->name()))
          dataLike.push_back(input->name());
      if (free.empty()) {
        error = "the graph has no input without an initializer, so nothing to feed the data to; "
                "export the model with its data input (torch.onnx.export's args)";
        return false;
      }
      if (dataLike.empty()) {
        error = "every graph input without an initializer is named like a parameter; name the "
                "data inputs with --data-input=NAME[,NAME...]" +
                inputList(free);
        return false;
      }
      out.dataInputs = dataLike; // (input_ids and attention_mask: several data inputs)
    }
    dataInputs.insert(out.dataInputs.begin(), out.dataInputs.end());

    for (const auto *input : free) {
      if (dataInputs.count(input->name()))
        continue;
      const auto &type = input->type().tensor_type();
      std::vector<int64_t> dims;
      for (const auto &d : type.shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() <= 0) {
          error = "parameter input \"" + input->name() +
                  "\" has a dynamic or empty dimension; graphc needs the parameter's shape to "
                  "initialise it (export with export_params=True, or name the data input with "
                  "--data-input=NAME)";
          return false;
        }
        dims.push_back(d.dim_value());
      }
      sourceDims[input->name()] = dims;
      if (type.elem_type() != onnx::TensorProto::FLOAT &&
          type.elem_type() != onnx::TensorProto::INT64) {
        error = "parameter input \"" + input->name() +
                "\" is neither float32 nor int64; graphc initialises float32 parameters (and "
                "int64 counters such as num_batches_tracked)";
        return false;
      }
      out.parameters.push_back({input->name(), dims, type.elem_type(), {}, {}, ""});
      parameterNames.insert(input->name());
    }
    for (auto &p : out.parameters)
      if (!initialise(p, error))
        return false;
    return true;
  }

private:
  static std::string inputList(const std::vector<const onnx::ValueInfoProto *> &free) {
    std::string list = " (inputs without an initializer:";
    size_t shown = 0;
    for (const auto *input : free) {
      if (shown++ == 8) {
        list += " ... " + std::to_string(free.size()) + " in all";
        break;
      }
      list += " \"" + input->name() + "\"";
    }
    return list + ")";
  }

  std::string nodeLabel(int index) const {
    const auto &node = graph.node(index);
    return "node \"" + (node.name().empty() ? node.output_size() ? node.output(0) : "?" : node.name()) +
           "\" (" + node.op_type() + ")";
  }

  static bool endsWith(const std::string &s, const std::string &suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  }

  /// The tensor that `name` is a view of (through viewOps, input 0), or `name` itself.
  std::string viewRoot(std::string name) const {
    for (int hops = 0; hops < graph.node_size() + 1; ++hops) {
      auto it = producer.find(name);
      if (it == producer.end())
        return name;
      const auto &node = graph.node(it->second);
      if (!viewOps().count(node.op_type()) || node.input_size() == 0)
        return name;
      name = node.input(0);
    }
    return name;
  }

  /// Whether `name` is a data input, or a view of one.
  bool derivesFromData(const std::string &name) const {
    return dataInputs.count(viewRoot(name)) > 0;
  }

  /// The shape of the parameter or initializer that `name` is a view of, or null.
  const std::vector<int64_t> *sourceOf(const std::string &name) const {
    auto it = sourceDims.find(viewRoot(name));
    return it == sourceDims.end() ? nullptr : &it->second;
  }

  /// PyTorch's fan_in of a weight (torch.nn.init._calculate_fan_in_and_fan_out): dims[1] times
  /// the receptive field.
  static double fanIn(const std::vector<int64_t> &dims) {
    if (dims.size() < 2)
      return dims.empty() ? 1.0 : double(dims[0]);
    double fan = double(dims[1]);
    for (size_t i = 2; i < dims.size(); ++i)
      fan *= double(dims[i]);
    return fan;
  }

  /// The nearest use of `name` by an op that computes with it, through views; {-1, -1} if none.
  Use firstComputingUse(const std::string &name) const {
    std::deque<std::string> queue = {name};
    std::set<int> visited;
    while (!queue.empty()) {
      std::string current = queue.front();
      queue.pop_front();
      auto it = uses.find(current);
      if (it == uses.end())
        continue;
      for (const Use &u : it->second) {
        if (!visited.insert(u.node).second)
          continue;
        const auto &node = graph.node(u.node);
        const std::string &op = node.op_type();
        bool embeddingGather = op == "Gather" && u.input == 0 && node.input_size() > 1 &&
                               derivesFromData(node.input(1));
        bool view = (viewOps().count(op) && (u.input == 0 || op == "Concat")) ||
                    (op == "Gather" && u.input == 0 && !embeddingGather);
        if (view) {
          for (const auto &o : node.output())
            queue.push_back(o);
          continue;
        }
        return u;
      }
    }
    return {-1, -1};
  }

  bool initialise(ParameterInputInit &p, std::string &error) {
    int64_t count = 1;
    for (int64_t d : p.dims)
      if (__builtin_mul_overflow(count, d, &count) || count > elementsLeft) {
        error = "parameter input \"" + p.name + "\" is too large to initialise (the parameter "
                "inputs may hold " + std::to_string(elementsLeft) + " more elements); export with "
                "export_params=True";
        return false;
      }
    elementsLeft -= count;
    if (p.dataType == onnx::TensorProto::INT64) {
      p.ints.assign(size_t(count), 0);
      p.rule = "zeros (a counter)";
      return true;
    }
    p.floats.assign(size_t(count), 0.f);
    // A stream per parameter, keyed by its name: the values do not depend on the input order.
    uint64_t h = 1469598103934665603ull;
    for (char c : p.name)
      h = (h ^ uint8_t(c)) * 1099511628211ull;
    std::mt19937_64 gen(seed ^ h);
    auto unit = [&] { return (double(gen() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };
    auto uniform = [&](double bound) {
      for (float &x : p.floats)
        x = float((2.0 * unit() - 1.0) * bound);
    };
    auto fill = [&](float value) { std::fill(p.floats.begin(), p.floats.end(), value); };
    char text[96];

    // nn.MultiheadAttention's own reset: xavier_uniform projections, zero biases (its out_proj
    // is a Linear whose bias it zeroes).
    if (endsWith(p.name, "in_proj_weight") || endsWith(p.name, "q_proj_weight") ||
        endsWith(p.name, "k_proj_weight") || endsWith(p.name, "v_proj_weight")) {
      if (p.dims.size() == 2) {
        double bound = std::sqrt(6.0 / double(p.dims[0] + p.dims[1]));
        uniform(bound);
        std::snprintf(text, sizeof text, "xavier_uniform, bound %.6g", bound);
        p.rule = text;
        return true;
      }
    }
    if (endsWith(p.name, "in_proj_bias")) {
      p.rule = "zeros (MultiheadAttention)";
      return true;
    }
    if (endsWith(p.name, "out_proj.bias")) {
      std::string attention = p.name.substr(0, p.name.size() - std::string("out_proj.bias").size());
      if (parameterNames.count(attention + "in_proj_weight") ||
          parameterNames.count(attention + "q_proj_weight")) {
        p.rule = "zeros (MultiheadAttention)";
        return true;
      }
    }

    Use use = firstComputingUse(p.name);
    if (use.node < 0) {
      p.rule = "zeros (not read)";
      return true;
    }
    const auto &node = graph.node(use.node);
    const std::string &op = node.op_type();
    auto biasOf = [&](const std::string &weight) {
      const std::vector<int64_t> *w = sourceOf(weight);
      if (!w)
        return false;
      double bound = 1.0 / std::sqrt(fanIn(*w));
      uniform(bound);
      std::snprintf(text, sizeof text, "U(-b, b), b = 1/sqrt(fan_in %.0f)", fanIn(*w));
      p.rule = text;
      return true;
    };
    if ((op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul") &&
        use.input == 1 && p.dims.size() >= 2) {
      double bound = 1.0 / std::sqrt(fanIn(p.dims));
      uniform(bound);
      std::snprintf(text, sizeof text, "kaiming_uniform(a=sqrt 5), fan_in %.0f", fanIn(p.dims));
      p.rule = text;
      return true;
    }
    if ((op == "Conv" || op == "ConvTranspose" || op == "Gemm") && use.input == 2 &&
        biasOf(node.input(1)))
      return true;
    if (op == "BatchNormalization" && use.input >= 1 && use.input <= 4) {
      fill(use.input == 1 || use.input == 4 ? 1.f : 0.f);
      p.rule = use.input == 1 || use.input == 4 ? "ones (BatchNorm)" : "zeros (BatchNorm)";
      return true;
    }
    if (op == "LayerNormalization" && (use.input == 1 || use.input == 2)) {
      fill(use.input == 1 ? 1.f : 0.f);
      p.rule = use.input == 1 ? "ones (LayerNorm)" : "zeros (LayerNorm)";
      return true;
    }
    if ((op == "LSTM" || op == "GRU" || op == "RNN") && use.input >= 1 && use.input <= 3) {
      int64_t hidden = 0;
      for (const auto &a : node.attribute())
        if (a.name() == "hidden_size")
          hidden = a.i();
      if (hidden > 0) {
        uniform(1.0 / std::sqrt(double(hidden)));
        std::snprintf(text, sizeof text, "U(-b, b), b = 1/sqrt(hidden_size %lld)",
                      static_cast<long long>(hidden));
        p.rule = text;
        return true;
      }
    }
    if (op == "Gather" && use.input == 0) {
      for (float &x : p.floats)
        x = float(std::sqrt(-2.0 * std::log(unit())) * std::cos(2.0 * M_PI * unit()));
      p.rule = "N(0, 1) (Embedding)";
      return true;
    }
    // The op computing the other operand of a binary `node` ("" for a graph input or an
    // initializer: a module-specific parameter such as ViT's position embedding, whose
    // initial value no generic rule knows).
    auto otherProducer = [&]() -> std::string {
      auto it = producer.find(node.input(1 - use.input));
      return it == producer.end() ? "" : graph.node(it->second).op_type();
    };
    if (op == "Add" && node.input_size() == 2) {
      // A Linear's bias after its MatMul, or the shift of a decomposed LayerNorm (after the
      // Mul by its scale).
      const std::string other = otherProducer();
      if (other == "MatMul" || other == "Gemm") {
        const auto &matmul = graph.node(producer.at(node.input(1 - use.input)));
        if (matmul.input_size() > 1 && biasOf(matmul.input(1)))
          return true;
      } else if (other == "Mul") {
        p.rule = "zeros (LayerNorm shift)";
        return true;
      }
    }
    if (op == "Mul" && node.input_size() == 2 && otherProducer() == "Div") {
      // The scale of a decomposed LayerNorm, Mul(Div(x - mean, std), weight), or of a T5-style
      // RMSNorm, Mul(Div(x, Sqrt(..)), weight).
      fill(1.f);
      p.rule = "ones (LayerNorm/RMSNorm scale)";
      return true;
    }
    if (op == "Mul" && node.input_size() == 2 && otherProducer() == "Mul") {
      // The scale of a LLaMA-style RMSNorm: Mul(Mul(x, Div(1, Sqrt(..))), weight) (or
      // Reciprocal for the rsqrt).
      const auto &normalized = graph.node(producer.at(node.input(1 - use.input)));
      for (const std::string &in : normalized.input()) {
        auto it = producer.find(in);
        if (it == producer.end())
          continue;
        const auto &inverse = graph.node(it->second);
        if ((inverse.op_type() == "Div" || inverse.op_type() == "Reciprocal") &&
            inverse.input_size() >= 1) {
          auto root = producer.find(inverse.input(inverse.input_size() - 1));
          if (root != producer.end() && graph.node(root->second).op_type() == "Sqrt") {
            fill(1.f);
            p.rule = "ones (RMSNorm scale)";
            return true;
          }
        }
      }
    }
    error = "parameter input \"" + p.name + "\" is read by " + nodeLabel(use.node) +
            " as input " + std::to_string(use.input) +
            ", for which graphc knows no PyTorch initial value; export with export_params=True";
    return false;
  }

  const onnx::GraphProto &graph;
  uint64_t seed;
  int64_t elementsLeft; // of the bound on all initialised elements
  std::set<std::string> dataInputs;
  std::map<std::string, std::vector<Use>> uses;
  std::map<std::string, int> producer;
  std::map<std::string, std::vector<int64_t>> sourceDims; // parameters and initializers
  std::set<std::string> parameterNames;
};

} // namespace

bool looksLikeParameterName(const std::string &name) {
  size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 == name.size())
    return false;
  char first = name[dot + 1];
  return std::isalpha(static_cast<unsigned char>(first)) || first == '_';
}

bool initialiseParameterInputs(const onnx::GraphProto &graph, const std::string &dataInputFlag,
                               uint64_t seed, int64_t maxElements, ParameterInputs &out,
                               std::string &error) {
  return Initialiser(graph, seed, maxElements).run(dataInputFlag, out, error);
}

} // namespace graphc
