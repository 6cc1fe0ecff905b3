// The thin adapter between a training step's IR and the MLIR-free planner core: turns
// liveness into a planner problem, writes the chosen offsets onto the IR as attributes, and
// reads them back for plan dumps and the fit report.
#pragma once

#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "passes/Liveness.h"
#include "planner/PlanIO.h"
#include "planner/Planner.h"

namespace graphc {

constexpr llvm::StringLiteral kArenaBytesAttr = "graph.arena_bytes";
constexpr llvm::StringLiteral kHostArenaBytesAttr = "graph.host_arena_bytes"; // offloaded state
constexpr llvm::StringLiteral kLowerBoundAttr = "graph.lower_bound_bytes";
constexpr llvm::StringLiteral kAlignmentAttr = "graph.alignment";
constexpr llvm::StringLiteral kOffsetAttr = "graph.offset";           // on arguments
constexpr llvm::StringLiteral kOffsetsAttr = "graph.offsets";         // on ops, one per result
constexpr llvm::StringLiteral kWorkspaceOffsetAttr = "graph.workspace_offset";
constexpr llvm::StringLiteral kInPlaceAttr = "graph.in_place"; // dying operands were reused

/// One planner buffer per live buffer, in the same order.
plan::Plan planProblemFromLiveness(const StepLiveness &live, uint64_t alignment);

/// The plan graphc-fit-budget measures a budgeted step with, and graphc-plan-memory falls back
/// to when its own (time-limited, minimising) plan is above the arena the fit promised: the
/// best-fit heuristics, then, when they miss `capacity`, the exact search stopped at the first
/// plan within it. The search is limited by nodes, not time, so both passes get the same plan
/// on any machine. Host buffers go above the arena (plan::planWithHostBuffers).
void planToCapacity(plan::Plan &plan, uint64_t capacity);
/// The search's node limit for n buffers: kCapacitySearchNodes, and at most
/// kCapacitySearchWork / n (each node scans the group's unplaced buffers), but at least 4 n.
/// On ResNet-18's 8 micro-batches (2263 buffers) the searches that fit a trial took 2.1k to
/// 2.3k nodes, while each that missed ran its whole limit, 5 s at 200k nodes: 49 of them were
/// 98% of a 4-minute fit.
constexpr uint64_t kCapacitySearchNodes = 200000;
constexpr uint64_t kCapacitySearchWork = 100000000;
constexpr uint64_t capacitySearchNodes(uint64_t buffers) {
  uint64_t byWork = kCapacitySearchWork / (buffers ? buffers : 1);
  uint64_t floor = 4 * buffers;
  return byWork < kCapacitySearchNodes ? (byWork > floor ? byWork : floor) : kCapacitySearchNodes;
}

/// Writes plan offsets (same order as live.buffers) and arena figures onto the function.
void annotatePlan(mlir::func::FuncOp func, const StepLiveness &live, const plan::Plan &plan,
                  bool inPlace);

/// Offset of a value in a planned function (argument attribute or op attribute), or -1.
int64_t plannedOffset(mlir::Value value);

/// Whether `part`, the slice [offset, offset + its extent) of `whole` along `axis`, is planned
/// inside `whole`'s storage at exactly that place, so that a concat or slice between them moves
/// nothing (kBucketViewAttr): only when the slice is contiguous (every dimension before `axis`
/// is 1).
bool plannedInPlace(mlir::Value whole, mlir::Value part, int64_t axis, int64_t offset);

struct PlannedStep {
  plan::Plan plan;
  std::vector<plan::Step> steps;
  uint64_t lowerBound = 0;
  /// Per buffer of `plan`: the op whose workspace it is, or null.
  std::vector<mlir::Operation *> workspaceOf;
};

/// Reads a function planned by graphc-plan-memory back into planner form for dumps.
mlir::FailureOr<PlannedStep> readPlannedStep(mlir::func::FuncOp func);

} // namespace graphc
