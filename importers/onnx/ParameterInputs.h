// Parameters exported as graph inputs (torch.onnx.export(..., export_params=False)): which
// input is the data, and initial values for the others, as PyTorch's modules initialise them.
//
// Kept free of MLIR: it reads the ONNX graph only, and the importer turns its result into
// initializers before importing the nodes as usual.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class GraphProto;
}

namespace graphc {

/// One parameter input and the initial value graphc gives it.
struct ParameterInputInit {
  std::string name;
  std::vector<int64_t> dims;
  int32_t dataType = 0;       // onnx::TensorProto::FLOAT, or INT64 (num_batches_tracked)
  std::vector<float> floats;  // FLOAT
  std::vector<int64_t> ints;  // INT64 (zeros)
  std::string rule;           // how it was initialised, e.g. "kaiming_uniform(a=sqrt 5), fan_in 27"
};

struct ParameterInputs {
  std::vector<std::string> dataInputs;        // empty when nothing lacks an initializer
  std::vector<ParameterInputInit> parameters; // the other inputs without an initializer
};

/// True for names such as "fc.weight" or "layer1.0.bn1.running_mean": a dot followed by an
/// identifier, as PyTorch names state_dict entries. "input", "x" and "input.1" (the exporter's
/// debug names for data) are not.
bool looksLikeParameterName(const std::string &name);

/// Splits the graph inputs that have no initializer into the data inputs and parameters.
/// `dataInputFlag` (--data-input) names the data inputs, comma-separated; when empty, the inputs
/// not named like a parameter are (a single input without an initializer is the data input
/// whatever its name).
/// Each parameter gets PyTorch's default initial value for the role in which the graph reads it
/// (through views: Transpose, Slice, Concat, Unsqueeze, ...), drawn from `seed`:
///   Conv, ConvTranspose, Gemm and MatMul weights: kaiming_uniform(a = sqrt 5), i.e.
///     U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with PyTorch's fan_in = dims[1] * prod(dims[2:]);
///   their biases (Conv/Gemm input 2, or an Add with a MatMul): U(+-1/sqrt(fan_in of the weight));
///   nn.MultiheadAttention's in_proj_weight (q/k/v_proj_weight): xavier_uniform; in_proj_bias and
///     out_proj.bias: zeros;
///   BatchNormalization scale/var: ones, bias/mean: zeros; LayerNormalization (or the Mul/Add of
///     its decomposed form) ones/zeros;
///   LSTM/GRU/RNN W, R, B: U(-1/sqrt(hidden_size), 1/sqrt(hidden_size));
///   an embedding table (Gather input 0 with computed indices): N(0, 1);
///   int64 parameters (num_batches_tracked): zeros.
/// Returns false with `error` set (one line, without the file name) when the data input cannot be
/// told apart, a parameter's shape or type is unusable, or a parameter is read in a role above
/// none of.
/// `maxElements` bounds the elements initialised in all (a file declares shapes for free).
bool initialiseParameterInputs(const onnx::GraphProto &graph, const std::string &dataInputFlag,
                               uint64_t seed, int64_t maxElements, ParameterInputs &out,
                               std::string &error);

} // namespace graphc
