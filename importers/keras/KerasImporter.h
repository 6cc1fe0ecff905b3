// Imports a Keras model (the JSON of model.to_json() or a .keras archive's config.json;
// tf.keras 2.x and Keras 3) with optional weights (.weights.h5 or tf.keras 2 .h5) into a
// graph-dialect forward function. docs/supported-ops.md lists the layers and their limits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace graphc {

class InitialValueCache; // importers/common/InitialValueCache.h

struct KerasImportOptions {
  int64_t batch = 0;               // > 0: the batch dimension (needed when the model's is None)
  // --input-shape, once per data input in input order: the dims after the batch, Keras order.
  std::vector<std::vector<int64_t>> inputShapes;
  std::string weightsPath;         // --weights; empty: initialise as Keras does, from `seed`
  uint64_t seed = 0;
  /// The driver trains with compile_config's loss (no --loss): a loss with from_logits = true
  /// then gets the softmax (sigmoid) appended to the forward function, since graphc's
  /// convention is a forward function that returns probabilities.
  bool usesCompileLoss = true;
  int64_t maxParameterElements = int64_t{1} << 30; // larger weights are refused (fuzzing: less)
  /// Initial values shared with the model's earlier imports (the driver's trial compiles); null:
  /// each import makes its own.
  InitialValueCache *initialValues = nullptr;
};

/// compile_config (or a legacy file's training_config): what --loss, --optimizer, --lr and
/// --momentum default to for this model. A setting graphc cannot follow leaves the value
/// empty and says why in the matching `...Problem` (the driver reports it only when the
/// flag is absent).
struct KerasTrainingDefaults {
  std::optional<std::string> loss, optimizer;
  std::optional<double> lr, momentum;
  std::optional<int64_t> ignoreClass; // SparseCategoricalCrossentropy's ignore_class
  std::optional<double> labelSmoothing; // the crossentropies' label_smoothing (nonzero)
  std::string lossProblem, optimizerProblem;
};

/// On failure returns null and sets `error` to one line naming the file and the layer, e.g.
/// `model.json: layer "lstm" (LSTM) is not supported: graphc has no recurrent op yet`.
mlir::OwningOpRef<mlir::ModuleOp> importKerasFile(const std::string &path,
                                                  mlir::MLIRContext &context,
                                                  const KerasImportOptions &options,
                                                  KerasTrainingDefaults &defaults,
                                                  std::string &error);

/// The same from JSON text already in memory (`path` only names it in messages).
mlir::OwningOpRef<mlir::ModuleOp> importKerasJson(const std::string &text, const std::string &path,
                                                  mlir::MLIRContext &context,
                                                  const KerasImportOptions &options,
                                                  KerasTrainingDefaults &defaults,
                                                  std::string &error);

/// The supported layers, for --verbose.
const char *kerasSupportedLayers();

} // namespace graphc
