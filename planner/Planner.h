// The offset planner core: given buffers with sizes and inclusive live ranges over the steps
// of a schedule, assign every buffer a byte offset in one arena so that no two buffers live at
// the same step overlap. Free of MLIR so that it can be unit-tested with hand-written problems
// and driven from graphc-plan on MiniMalloc's CSV files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace graphc::plan {

struct Buffer {
  std::string name;
  uint64_t bytes = 0;   // exact size; the planner reserves alignTo(bytes, alignment)
  int64_t first = 0;    // first step at which the buffer is live (inclusive)
  int64_t last = 0;     // last step at which the buffer is live (inclusive)
  uint64_t offset = 0;  // output of the planner
  std::string kind;     // parameter|gradient|optimizer_state|activation|temporary|workspace|input
  std::string op;       // the op that defines it, for dumps
  bool host = false;    // lives in host memory (offloaded optimizer state), not the device arena
};

/// The arena is device memory [0, arenaBytes); host-resident buffers (offloaded optimizer
/// state) follow it at [arenaBytes, arenaBytes + hostArenaBytes), a second allocation that the
/// device budget does not count. Offsets of both are relative to the arena's start.
struct Plan {
  std::vector<Buffer> buffers;
  uint64_t alignment = 256;
  uint64_t arenaBytes = 0;
  uint64_t hostArenaBytes = 0;
};

inline uint64_t alignTo(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// Largest sum of aligned sizes of device buffers (host ones are skipped) live at the same
/// step. No placement with aligned offsets can use fewer bytes. O(n log n) sweep over range
/// endpoints.
uint64_t lowerBound(const std::vector<Buffer> &buffers, uint64_t alignment);

/// Best-fit placement, buffers taken largest first (TFLite's arena planner order): each buffer
/// goes into the smallest gap between already placed buffers that overlap it in time, or on
/// top. Fills Buffer::offset and Plan::arenaBytes. O(n^2).
void planBestFit(Plan &plan);

/// Options of planNearOptimal.
struct PlanOptions {
  /// Wall-clock budget of the exact search (the heuristics always run to completion). A search
  /// cut by time returns the best plan found so far, so only then can the result depend on the
  /// machine's speed; everything else is deterministic.
  double timeLimitSeconds = 1.0;
  /// 0: minimise the arena height. Otherwise: stop as soon as a plan fits in `capacity` bytes
  /// (the search only runs when the heuristics do not fit).
  uint64_t capacity = 0;
  /// Upper bound on search nodes over the whole call; 0 = no limit besides the time. A node
  /// limit makes the result independent of the machine.
  uint64_t nodeLimit = 0;
  /// Run only the multi-order best-fit heuristic (the baseline of the benchmarks).
  bool heuristicOnly = false;
  /// The exact search keeps O(n^2) overlap lists; above this many buffers it is skipped.
  size_t maxSearchBuffers = 4000;
  /// From this many buffers on, the best-fit orders after the first run on threads of their
  /// own (the plan is the same either way).
  size_t parallelOrdersFrom = 1024;
};

/// What planNearOptimal did.
struct PlanStats {
  uint64_t lowerBound = 0;      // lowerBound(buffers, alignment)
  uint64_t heuristicHeight = 0; // best height of the best-fit orders
  std::string heuristic;        // the order that gave it (size, duration, area, first, conflict)
  uint64_t height = 0;          // the returned plan's arenaBytes
  bool optimal = false;         // height proven minimal (it equals the lower bound, or the
                                // search exhausted every canonical plan below it)
  bool fits = true;             // capacity == 0 or height <= capacity
  bool infeasible = false;      // capacity != 0 and proven impossible (below the lower bound,
                                // or the search exhausted every canonical plan)
  bool searched = false;        // the exact search ran
  uint64_t nodes = 0;           // search nodes visited
  double seconds = 0;           // wall time of the whole call
};

/// A planner near the lower bound (docs in planner/PlanSearch.cpp):
///  1. best fit under five orders (size, duration, area, first step, conflict), keeping the
///     lowest; O(n^2) per order with a sweep over placed buffers sorted by offset;
///  2. when that misses the lower bound (or `capacity`), MiniMalloc's search over canonical
///     plans (Moffitt, ASPLOS 2023) with section-sum pruning, dominance, inference of section
///     floors and dynamic decomposition, inside a binary search on the height.
/// Never returns a plan worse than step 1. Fills Buffer::offset and Plan::arenaBytes.
PlanStats planNearOptimal(Plan &plan, const PlanOptions &options = {});

/// Every buffer gets its own bytes, in input order (for testing the planner against itself).
void planNoReuse(Plan &plan);

/// Plans the device buffers with `planDevice` (one of the planners above, on a plan holding
/// only them), then lays the host buffers out one after another above the arena; they are all
/// persistent, so no reuse is possible among them. Fills offsets, arenaBytes, hostArenaBytes.
/// Without host buffers this is planDevice(plan). O(n) besides planDevice.
template <typename PlanDevice> void planWithHostBuffers(Plan &plan, PlanDevice planDevice);

/// A buffer that works at any size from its own up to `maxBytes`, and better when larger: a
/// cuDNN convolution's workspace, where more bytes let faster algorithms run.
struct Growable {
  size_t buffer = 0;     // index into Plan::buffers
  uint64_t maxBytes = 0; // never grown past this
};

/// Grows each growable buffer, in order, into the device bytes that no other buffer uses while
/// it is live, without moving the arena's end: the buffer moves to the lowest of the largest
/// free gaps of [0, arenaBytes) over its live range and takes the largest power of two within
/// that gap and `maxBytes`, when that is more than its aligned size (a few distinct sizes, so
/// that a runtime that times algorithms per problem and workspace size times fewer). Other
/// buffers keep their offsets; a grown buffer counts as used for the growables after it.
/// Returns how many grew. O(g n log n) for g growables and n buffers.
size_t growIntoFreeBytes(Plan &plan, const std::vector<Growable> &growables);

/// Independent check of a finished plan. Returns an empty string when the plan is valid, or
/// one line naming the first problem found: two buffers live at the same step whose byte ranges
/// overlap, a device buffer that ends past arenaBytes, a host buffer outside [arenaBytes,
/// arenaBytes + hostArenaBytes), a misaligned offset, or an empty live range.
std::string verifyPlan(const Plan &plan);

template <typename PlanDevice> void planWithHostBuffers(Plan &plan, PlanDevice planDevice) {
  Plan device;
  device.alignment = plan.alignment;
  std::vector<size_t> deviceIndex, hostIndex;
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    (plan.buffers[i].host ? hostIndex : deviceIndex).push_back(i);
  if (hostIndex.empty()) {
    planDevice(plan);
    plan.hostArenaBytes = 0;
    return;
  }
  for (size_t i : deviceIndex)
    device.buffers.push_back(plan.buffers[i]);
  planDevice(device);
  for (size_t k = 0; k < deviceIndex.size(); ++k)
    plan.buffers[deviceIndex[k]].offset = device.buffers[k].offset;
  plan.arenaBytes = alignTo(device.arenaBytes, plan.alignment ? plan.alignment : 1);
  uint64_t next = plan.arenaBytes;
  for (size_t i : hostIndex) {
    plan.buffers[i].offset = next;
    next += alignTo(plan.buffers[i].bytes, plan.alignment ? plan.alignment : 1);
  }
  plan.hostArenaBytes = next - plan.arenaBytes;
}

} // namespace graphc::plan
