// Parameters' and running statistics' initial values as dense_resource attributes, shared by
// the imports of one model into one MLIR context.
//
// A dense_resource's blob belongs to the context's resource manager and lives as long as the
// context, not the module. The driver imports a model again at every batch size it tries (the
// trial compiles of --max-batch, micro-batching and the infeasible error), so without sharing
// every import left one more copy of every weight behind: VGG-16's 528 MiB of weights, 13
// trial imports, 7 GiB. A value is reused only when its name, type and bytes all match, so a
// weight that differs between imports (none does today) still gets its own blob.
#pragma once

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

namespace graphc {

class InitialValueCache {
public:
  /// The attribute holding `values` as `type`, named `name` in the resource manager: the one
  /// made by an earlier call when name, context, type and bytes match, else a new one.
  mlir::DenseResourceElementsAttr get(mlir::RankedTensorType type, llvm::StringRef name,
                                      llvm::ArrayRef<float> values);

private:
  mlir::MLIRContext *context = nullptr;
  llvm::StringMap<mlir::DenseResourceElementsAttr> byName;
};

} // namespace graphc
