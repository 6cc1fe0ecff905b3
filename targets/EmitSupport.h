// Small helpers shared by the CPU and CUDA emitters: shapes of values and spellings of
// strings and runtime enums in generated source.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include "dialects/graph/GraphOps.h"

namespace graphc {

inline std::vector<int64_t> tensorDims(mlir::Value v) {
  auto s = mlir::cast<mlir::RankedTensorType>(v.getType()).getShape();
  return {s.begin(), s.end()};
}

inline int64_t tensorElements(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getNumElements();
}

/// runtime/include/graphc/runtime/random_affine.h's RandomAffineParams of `op` as a C++
/// aggregate, its floats spelt by `literal` (each emitter's own float spelling).
inline std::string randomAffineParamsLiteral(graph::RandomAffineOp op,
                                             llvm::function_ref<std::string(float)> literal) {
  const std::string params = "::graphc::rt::RandomAffineParams";
  return params + "{" + params + "::" + graph::randomAffineKindEnumerator(op.getKind()).str() +
         ", " + literal(op.getLow0().convertToFloat()) + ", " +
         literal(op.getHigh0().convertToFloat()) + ", " + literal(op.getLow1().convertToFloat()) +
         ", " + literal(op.getHigh1().convertToFloat()) + ", " + params +
         "::" + graph::randomAffineFillEnumerator(op.getFillMode()).str() + ", " +
         literal(op.getFillValue().convertToFloat()) + ", " +
         (op.getInterpolation() == "nearest" ? "1" : "0") + "}";
}

/// The rows and classes a loss kernel walks over `prediction`: the categorical crossentropies
/// take the class axis last and average over every other position ([B, S, V] predictions are
/// B*S rows: a language model's mean loss over its tokens, as F.cross_entropy of the
/// flattened logits); binary crossentropy and mse average over every element of [B, ...].
/// A C++ literal of `value` (INT64_MIN has none: its minus would apply to an out-of-range
/// literal).
inline std::string int64Literal(int64_t value) {
  if (value == std::numeric_limits<int64_t>::min())
    return "(-9223372036854775807ll - 1)";
  return std::to_string(value) + "ll";
}

/// The runtime loss kernels' [rows, classes] view of a prediction: the categorical losses' (and
/// every weighted loss's: one weight per row) rows are the prediction without its last axis,
/// binary crossentropy's and mse's the samples.
inline std::pair<int64_t, int64_t> lossRowsAndClasses(graph::LossKind kind, mlir::Value prediction,
                                                      bool weighted = false) {
  std::vector<int64_t> dims = tensorDims(prediction);
  const int64_t elements = tensorElements(prediction);
  if ((weighted || kind == graph::LossKind::sparse_categorical_crossentropy ||
       kind == graph::LossKind::categorical_crossentropy) &&
      dims.size() >= 2 && dims.back() > 0)
    return {elements / dims.back(), dims.back()};
  return {dims[0], dims[0] > 0 ? elements / dims[0] : 0};
}

/// The collectives of an emitted data-parallel step that are in flight: each starts at its op
/// (the emitter writes the start call and reports it here) and is waited for just before the
/// first op that reads its result, directly or through reshape views (a view reads nothing), so
/// the ops in between overlap the communication. The emitter supplies how to write a wait.
class InFlightCollectives {
public:
  void started(mlir::Operation *collective) {
    pending[collective->getResult(0)] = collective;
    order.push_back(collective);
  }
  /// Before emitting `op`: waits for the collectives it is the first reader of.
  template <typename Wait> void beforeOp(mlir::Operation *op, Wait wait) {
    if (auto view = mlir::dyn_cast<graph::ReshapeOp>(op); view && pending.count(view.getInput())) {
      pending[view.getResult()] = pending.lookup(view.getInput());
      return;
    }
    for (mlir::Value operand : op->getOperands())
      waitFor(operand, wait);
  }
  /// At the end of the step: waits for the collectives nothing read, in the order they started.
  template <typename Wait> void finish(Wait wait) {
    for (mlir::Operation *collective : order)
      waitFor(collective->getResult(0), wait);
  }

private:
  template <typename Wait> void waitFor(mlir::Value value, Wait wait) {
    mlir::Operation *collective = pending.lookup(value);
    if (collective && waited.insert(collective).second)
      wait(collective);
  }
  llvm::DenseMap<mlir::Value, mlir::Operation *> pending; // results and their views
  llvm::DenseSet<mlir::Operation *> waited;
  llvm::SmallVector<mlir::Operation *> order;
};

/// `s` as a C++ string literal (control characters dropped).
inline std::string cppString(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20)
      continue;
    out += c;
  }
  return out + "\"";
}

/// The graphc::rt::LossKind enumerator for a graph-dialect loss kind, as C++ source.
inline const char *runtimeLossKindName(graph::LossKind kind) {
  switch (kind) {
  case graph::LossKind::sparse_categorical_crossentropy:
    return "graphc::rt::LossKind::SparseCategoricalCrossentropy";
  case graph::LossKind::categorical_crossentropy:
    return "graphc::rt::LossKind::CategoricalCrossentropy";
  case graph::LossKind::binary_crossentropy:
    return "graphc::rt::LossKind::BinaryCrossentropy";
  case graph::LossKind::mse:
    return "graphc::rt::LossKind::MeanSquaredError";
  }
  return "";
}

/// The graphc::rt::Activation enumerator (runtime/elementwise_math.h) of an activation kind.
inline const char *runtimeActivationName(graph::ActivationKind kind) {
  switch (kind) {
  case graph::ActivationKind::gelu:
    return "graphc::rt::Activation::Gelu";
  case graph::ActivationKind::gelu_tanh:
    return "graphc::rt::Activation::GeluTanh";
  case graph::ActivationKind::elu:
    return "graphc::rt::Activation::Elu";
  case graph::ActivationKind::selu:
    return "graphc::rt::Activation::Selu";
  case graph::ActivationKind::silu:
    return "graphc::rt::Activation::Silu";
  case graph::ActivationKind::softplus:
    return "graphc::rt::Activation::Softplus";
  case graph::ActivationKind::softsign:
    return "graphc::rt::Activation::Softsign";
  case graph::ActivationKind::leaky_relu:
    return "graphc::rt::Activation::LeakyRelu";
  case graph::ActivationKind::exp:
    return "graphc::rt::Activation::Exp";
  case graph::ActivationKind::log:
    return "graphc::rt::Activation::Log";
  case graph::ActivationKind::pow:
    return "graphc::rt::Activation::Pow";
  case graph::ActivationKind::abs:
    return "graphc::rt::Activation::Abs";
  case graph::ActivationKind::equal:
    return "graphc::rt::Activation::Equal";
  case graph::ActivationKind::greater:
    return "graphc::rt::Activation::Greater";
  }
  return "";
}

/// Bytes of the host arena after the device arena (offloaded optimizer state), or 0.
inline int64_t hostArenaBytes(mlir::func::FuncOp func) {
  auto attr = func->getAttrOfType<mlir::IntegerAttr>("graph.host_arena_bytes");
  return attr ? attr.getInt() : 0;
}

/// The smallest vocabulary of the embeddings that read data argument `dataArg` (through
/// micro-batch slices and reshapes), or 0 when none does: the runtime checks the ids against it.
inline int64_t embeddingIndexLimit(mlir::func::FuncOp func, mlir::BlockArgument dataArg) {
  int64_t limit = 0;
  func.walk([&](graph::EmbeddingOp embedding) {
    mlir::Value v = embedding.getIndices();
    while (mlir::Operation *def = v.getDefiningOp()) {
      if (!mlir::isa<graph::BatchSliceOp, graph::ReshapeOp>(def))
        return;
      v = def->getOperand(0);
    }
    if (v != dataArg)
      return;
    int64_t vocabulary =
        mlir::cast<mlir::RankedTensorType>(embedding.getTable().getType()).getDimSize(0);
    limit = limit == 0 ? vocabulary : std::min(limit, vocabulary);
  });
  return limit;
}

/// Appends the initial value (graph.init) of argument `index` of `func` to `blob`, 64-byte
/// aligned, and returns its offset there; -1 when the argument has no initial value. Fails
/// with a diagnostic naming the argument when the value cannot be read.
inline mlir::FailureOr<int64_t> appendInitialValue(mlir::func::FuncOp func, unsigned index,
                                                   llvm::StringRef name,
                                                   std::vector<char> &blob) {
  mlir::Attribute init = func.getArgAttr(index, graph::kInitAttr);
  if (!init)
    return int64_t{-1};
  auto bytes = graph::initialValueBytes(init);
  if (mlir::failed(bytes))
    return func.emitError() << "'" << name << "' has an initial value graphc cannot read";
  while (blob.size() % 64)
    blob.push_back(0);
  int64_t offset = int64_t(blob.size());
  blob.insert(blob.end(), bytes->begin(), bytes->end());
  return offset;
}

} // namespace graphc
