// libFuzzer target for the JSON plan reader (planner/PlanIO.cpp, compiled into this binary with
// the sanitizers). Malformed text must give an error line, never a crash; a parsed plan is
// checked with plan::verifyPlan, as `graphc-plan --verify` does.
#include "planner/PlanIO.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace graphc::plan;
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  JsonPlan json;
  std::string error = parsePlanJson(text, "fuzz.json", json);
  if (!error.empty())
    return 0;
  (void)verifyPlan(json.plan);
  return 0;
}
