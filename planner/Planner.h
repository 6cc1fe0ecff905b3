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
};

struct Plan {
  std::vector<Buffer> buffers;
  uint64_t alignment = 256;
  uint64_t arenaBytes = 0;
};

inline uint64_t alignTo(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// Largest sum of aligned sizes of buffers live at the same step. No placement with
/// aligned offsets can use fewer bytes. O(n log n) sweep over range endpoints.
uint64_t lowerBound(const std::vector<Buffer> &buffers, uint64_t alignment);

/// Best-fit placement, buffers taken largest first (TFLite's arena planner order): each buffer
/// goes into the smallest gap between already placed buffers that overlap it in time, or on
/// top. Fills Buffer::offset and Plan::arenaBytes. O(n^2).
void planBestFit(Plan &plan);

/// Every buffer gets its own bytes, in input order (for testing the planner against itself).
void planNoReuse(Plan &plan);

/// Independent check of a finished plan. Returns an empty string when the plan is valid, or
/// one line naming the first problem found: two buffers live at the same step whose byte ranges
/// overlap, a buffer that ends past arenaBytes, a misaligned offset, or an empty live range.
std::string verifyPlan(const Plan &plan);

} // namespace graphc::plan
