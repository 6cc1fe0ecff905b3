// libFuzzer target for the MiniMalloc CSV reader (planner/PlanIO.cpp, compiled into this binary
// with the sanitizers). Malformed text must give an error line, never a crash. A parsed problem
// is also planned and verified, as graphc-plan does with a CSV file.
#include "planner/PlanIO.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace graphc::plan;
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  CsvProblem problem;
  std::string error = parseMiniMallocCsv(text, "fuzz.csv", problem);
  if (!error.empty())
    return 0;
  Plan plan;
  plan.buffers = problem.buffers;
  plan.alignment = 1;
  if (problem.hasOffsets) {
    for (const Buffer &b : plan.buffers)
      plan.arenaBytes = std::max(plan.arenaBytes, b.offset + b.bytes);
    (void)verifyPlan(plan);
  }
  // Keep the planner's O(n^2) best fit cheap: only small problems.
  if (plan.buffers.size() <= 256) {
    (void)lowerBound(plan.buffers, plan.alignment);
    planBestFit(plan);
    (void)verifyPlan(plan);
  }
  return 0;
}
