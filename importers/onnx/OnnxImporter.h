// Imports an ONNX model (as PyTorch exports it) into a graph-dialect forward function.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace graphc {

struct OnnxImportOptions {
  int64_t batch = 0; // > 0 overrides the data input's first dimension
  // An export without its parameters (export_params=False) has them as graph inputs: the data
  // inputs are `dataInput` (--data-input, comma-separated), or else those not named like a
  // parameter; the others get PyTorch's default initial values, drawn from `seed`
  // (importers/onnx/ParameterInputs.h).
  std::string dataInput;
  // The graph output to train (--train-output): with it, a model with several outputs (GoogLeNet's
  // auxiliary heads in training mode) trains that one, and the nodes and parameters only the
  // others read are dropped. Empty: the graph must have exactly one output.
  std::string output;
  uint64_t seed = 0;
  int64_t maxParameterInputElements = int64_t{1} << 32; // 16 GiB of float32 in all
};

/// What the import did that the user should hear about.
struct OnnxImportSummary {
  int initialisedParameters = 0; // parameter inputs given initial values (export_params=False)
  std::vector<std::string> initialisationRules; // "name: rule", one per such parameter
};

/// What importing the same file again can reuse: the parsed file, its initializers, and their
/// initial values as attributes of one context. The driver imports a model at many batch sizes
/// (the trial compiles of --max-batch and of the infeasible error); without it each import
/// parsed and copied every weight again, and each copy stayed in the context for good.
class OnnxImportCache {
public:
  OnnxImportCache();
  ~OnnxImportCache();
  struct State;
  std::unique_ptr<State> state; // null until a file is imported through it
};

/// The ONNX ops the importer supports, for --verbose.
const char *onnxSupportedOps();

/// Reads `path` and builds `func.func @forward`. Parameters (initializers) become arguments
/// tagged graph.kind = "parameter" with their ONNX name and initial value (graph.init, a
/// dense_resource). On failure returns null and sets `error` to one line naming the file and
/// the node, e.g. `model.onnx: node "Conv_3" (LeakyRelu) is not supported; ...`. With `cache`,
/// a later import of the same file with the same options reuses what this one read.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxFile(const std::string &path, mlir::MLIRContext &context,
               const OnnxImportOptions &options, std::string &error,
               OnnxImportSummary *summary = nullptr, OnnxImportCache *cache = nullptr);

} // namespace graphc
