// Where the batch lies in an imported value's shape, so that the ONNX importer can rebase the
// shape constants a static export baked its batch into (x.view(T, B * H, D) in a sequence-first
// attention) when the model is imported at another batch (--batch, a micro-batch, a batch
// search). A value's batch location is the axis that holds the batch and the number of
// elements one batch step moves within that axis (`inner`: H for a [T, B x H, D] axis merged
// batch-major). A row-major Reshape keeps every element's flat position, so the batch's flat
// stride (`inner` times the sizes of the axes after its axis) is the same before and after it:
// that is what locates the batch in the reshaped shape.
#pragma once

#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <optional>

namespace graphc::onnx_import {

struct BatchLocation {
  enum class Kind {
    Unknown, // not traced (an op the analysis does not model), or the batch split over axes
    Free,    // no batch: a parameter, a constant, a fill
    At,      // dimension `axis` = outer x batch x inner
  };
  Kind kind = Kind::Unknown;
  int64_t axis = 0, inner = 1;

  static BatchLocation unknown() { return {}; }
  static BatchLocation free() { return {Kind::Free, 0, 1}; }
  static BatchLocation at(int64_t axis, int64_t inner) { return {Kind::At, axis, inner}; }
  bool isAt() const { return kind == Kind::At; }
};

/// The axis of `shape` that holds a batch of `batch` steps whose flat stride is `stride`
/// elements (each step moves `stride` elements in the row-major order), or Unknown when the
/// batch would straddle two axes or is 1 and fits several; given `guessed`, the latter case
/// picks the axis the batch fills most and sets *guessed. O(rank).
BatchLocation locateBatchByStride(llvm::ArrayRef<int64_t> shape, int64_t stride, int64_t batch,
                                  bool *guessed = nullptr);

/// The product of `dims`, or -1 when it overflows int64 (a malformed file's shapes).
int64_t checkedProduct(llvm::ArrayRef<int64_t> dims);

/// The flat stride of the batch in `shape` at `location` (inner times the later axes), or -1
/// when it overflows int64.
int64_t batchStride(llvm::ArrayRef<int64_t> shape, const BatchLocation &location);

/// Batch locations of the graph dialect values an importer built at batch `batch`: the data
/// inputs (function arguments of graph.kind "input") lead with it, and each op maps its
/// operands' locations to its result's. Memoized: each value is located once, O(ops).
class BatchLocator {
public:
  explicit BatchLocator(int64_t batch) : batch(batch) {}
  BatchLocation locate(mlir::Value value);
  /// Records `value`'s location, known better by its builder (a reshape rebased from the
  /// exported batch, where a batch of 1 leaves the stride rule several axes to choose from).
  void remember(mlir::Value value, BatchLocation location);
  /// Drops what is known of `value`, before its op is erased (a later value may reuse its
  /// storage).
  void forget(mlir::Value value) { cache.erase(value); }

private:
  BatchLocation compute(mlir::Value value);
  int64_t batch;
  llvm::DenseMap<mlir::Value, BatchLocation> cache;
};

} // namespace graphc::onnx_import
