// Plan dumps and readers. A finished plan is written in one of three formats, chosen by the
// caller from the output file's extension: `.json` (the full plan with the schedule's steps,
// read back by `graphc-plan --verify`), `.csv` (MiniMalloc's `id,lower,upper,size,offset`, so
// that external solvers and graphc-plan can exchange problems and solutions) and `.txt` (a
// human table sorted by offset). The readers turn MiniMalloc CSV files and JSON plans back into
// Plans; malformed input gives an error string naming the file and line, never a crash.
#pragma once

#include "planner/Planner.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace graphc::plan {

/// One step of the schedule, for the JSON dump: its index, the op executed, and its location.
struct Step {
  int64_t index = 0;
  std::string op;
  std::string loc;
};

/// "512 B", "1.50 KiB", "1.50 MiB", "2.00 GiB": binary units with two decimals.
std::string humanBytes(uint64_t bytes);

/// JSON dump (schema: arena_bytes, lower_bound_bytes, budget_bytes|null, alignment,
/// steps[{index, op, loc}], buffers[{name, bytes, offset, first, last, kind}]).
void writePlanJson(llvm::raw_ostream &os, const Plan &plan, const std::vector<Step> &steps,
                   std::optional<uint64_t> budget);

/// What the `id` column of a written CSV holds.
enum class CsvIds {
  Index, // position in plan.buffers (safe for any buffer name)
  Name,  // Buffer::name, for round-tripping MiniMalloc files whose ids are names
};

/// MiniMalloc solution CSV: `id,lower,upper,size,offset` with lower = first,
/// upper = last + 1 (half-open) and size = alignTo(bytes, alignment).
void writePlanCsv(llvm::raw_ostream &os, const Plan &plan, CsvIds ids = CsvIds::Index);

/// Human table: a header (arena, lower bound, budget, alignment, bytes by kind), then one row
/// per buffer sorted by offset then first step.
void writePlanText(llvm::raw_ostream &os, const Plan &plan, std::optional<uint64_t> budget);

/// Writes `plan` to `path` in the format its extension names (.json, .csv or .txt). Returns an
/// empty string, or an error line naming the path.
std::string writePlanFile(llvm::StringRef path, const Plan &plan, const std::vector<Step> &steps,
                          std::optional<uint64_t> budget, CsvIds ids = CsvIds::Index);

/// A MiniMalloc problem or solution read from CSV. Buffer::name holds the `id` column; bytes is
/// `size`, first = lower and last = upper - 1. Offsets are filled when the file has them.
struct CsvProblem {
  std::vector<Buffer> buffers;
  bool hasOffsets = false;
};

/// Parses MiniMalloc CSV text: a header naming the columns id, lower, upper, size and
/// optionally offset (in any order), then one row per buffer. Blank lines are ignored.
/// Returns an empty string on success, else `fileName:line: message`.
std::string parseMiniMallocCsv(llvm::StringRef text, llvm::StringRef fileName, CsvProblem &out);
std::string readMiniMallocCsv(llvm::StringRef path, CsvProblem &out);

/// A plan read back from its JSON dump.
struct JsonPlan {
  Plan plan;
  std::vector<Step> steps;
  std::optional<uint64_t> budget;
  uint64_t lowerBoundBytes = 0;
};

/// Parses a JSON plan (the writePlanJson schema). Returns an empty string on success, else
/// `fileName: message` (with the line and column for syntax errors).
std::string parsePlanJson(llvm::StringRef text, llvm::StringRef fileName, JsonPlan &out);
std::string readPlanJson(llvm::StringRef path, JsonPlan &out);

} // namespace graphc::plan
