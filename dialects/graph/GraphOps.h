// The graph dialect: declarations of the dialect and its ops (generated from GraphOps.td).
#pragma once

#include <vector>

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

#include "dialects/graph/GraphDialect.h.inc"
#include "dialects/graph/GraphEnums.h.inc"

namespace graphc::graph {
/// Verifies that the floating-point tensors an op reads and writes, scalars aside (the step
/// counter), share one element type: an op runs in f32 or in one 16-bit type, never mixed.
mlir::LogicalResult verifySameFloatElementType(mlir::Operation *op);

template <typename ConcreteType>
class SameFloatElementType : public mlir::OpTrait::TraitBase<ConcreteType, SameFloatElementType> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifySameFloatElementType(op);
  }
};
} // namespace graphc::graph

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.h.inc"

namespace graphc::graph {

/// The function-argument and result attributes that carry a tensor's role through the pipeline.
constexpr llvm::StringLiteral kKindAttr = "graph.kind";   // parameter|optimizer_state|input|...
constexpr llvm::StringLiteral kNameAttr = "graph.name";   // user-visible name (ONNX name)
constexpr llvm::StringLiteral kRoleAttr = "graph.role";   // data|labels|step (inputs only)
// "host" on an optimizer_state argument: the state lives in host memory outside the device
// arena (--offload=optimizer); only the optimizer's update ops read and write it.
constexpr llvm::StringLiteral kMemorySpaceAttr = "graph.memory_space";
constexpr llvm::StringLiteral kInitAttr = "graph.init";   // initial value of a parameter
constexpr llvm::StringLiteral kTiedArgAttr = "graph.tied_to_arg"; // result i updates arg j
constexpr llvm::StringLiteral kTrainableAttr = "graph.trainable"; // false: a frozen parameter

/// Where each of `values` begins in the flat layout of graph.rank_shard and
/// graph.all_gather_into: `starts` when set, else one after the other.
llvm::SmallVector<int64_t> layoutStarts(mlir::ValueRange values,
                                        std::optional<llvm::ArrayRef<int64_t>> starts);

/// Output spatial size of a convolution or pooling window along one axis.
int64_t convOutputSize(int64_t in, int64_t window, int64_t stride, int64_t padBegin,
                       int64_t padEnd, int64_t dilation);

/// The little-endian f32 bytes of a parameter's initial value (graph.init: a dense_resource
/// blob or a dense attribute), or failure when it is neither or its size is wrong.
mlir::FailureOr<std::vector<char>> initialValueBytes(mlir::Attribute init);

/// The enumerator of runtime/include/graphc/runtime/random_affine.h's RandomAffineParams that
/// graph.random_affine's `kind` (FlipHorizontal, ..., Translate) or `fill_mode` (Reflect,
/// Nearest, Constant) names; empty when it names none.
llvm::StringRef randomAffineKindEnumerator(llvm::StringRef kind);
llvm::StringRef randomAffineFillEnumerator(llvm::StringRef fillMode);

/// The logits behind `prediction` when a loss of `kind` can absorb the activation that made
/// it (softmax over classes for the categorical losses, sigmoid for binary crossentropy), so
/// that the loss works in log space; null otherwise.
mlir::Value getLossLogits(LossKind kind, mlir::Value prediction);

} // namespace graphc::graph
