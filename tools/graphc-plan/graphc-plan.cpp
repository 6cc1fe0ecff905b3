// graphc-plan: the planner core on MiniMalloc's command line, so that the planner can be run and
// compared on MiniMalloc's benchmark problems without the rest of the compiler.
//
//   graphc-plan --input=problem.csv [--capacity=N] [--output=solution.csv] [--alignment=A]
//       [--time-limit=SECONDS] [--node-limit=N] [--heuristic-only] [--search-stats]
//       solves the problem with planNearOptimal (multi-order best fit, then a MiniMalloc-style
//       exact search within the time limit when that misses the lower bound or the capacity),
//       prints a one-line summary, and writes the solution (.csv, a .json/.txt dump or an .html
//       picture) unless it does not fit the capacity: then it exits 1 with a message and leaves
//       no output file behind. With --capacity the search stops at the first plan that fits;
//       without, it minimises the height. --heuristic-only gives the best-fit baseline;
//       --order=size only planBestFit (one greedy best fit, largest first: TFLite's order).
//   graphc-plan --verify=solution.csv [--capacity=N] [--alignment=A]
//   graphc-plan --verify=plan.json [--capacity=N]
//       checks a finished solution with the planner's independent verifier.
#include "planner/PlanHtml.h"
#include "planner/PlanIO.h"
#include "planner/Planner.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>

using namespace graphc::plan;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("graphc-plan options");

// Options live in main's frame (llvm::cl registers them globally while they exist); see main.
struct Options {
  cl::opt<std::string> input{"input", cl::desc("MiniMalloc problem CSV (id,lower,upper,size)"),
                             cl::value_desc("file"), cl::cat(category)};
  cl::opt<std::string> output{"output",
                              cl::desc("where to write the solution (.csv, .json, .txt or .html)"),
                              cl::value_desc("file"), cl::cat(category)};
  cl::opt<uint64_t> capacity{"capacity", cl::desc("arena capacity in bytes the solution must fit"),
                             cl::value_desc("bytes"), cl::cat(category)};
  cl::opt<uint64_t> alignment{"alignment",
                              cl::desc("offset alignment in bytes (MiniMalloc sizes are exact: 1)"),
                              cl::init(1), cl::cat(category)};
  cl::opt<double> timeLimit{"time-limit",
                            cl::desc("seconds the exact search may take (default 10)"),
                            cl::value_desc("seconds"), cl::init(10.0), cl::cat(category)};
  cl::opt<uint64_t> nodeLimit{"node-limit",
                              cl::desc("search nodes the exact search may visit (0: no limit)"),
                              cl::init(0), cl::cat(category)};
  cl::opt<bool> heuristicOnly{"heuristic-only",
                              cl::desc("only the multi-order best-fit heuristic (no search)"),
                              cl::cat(category)};
  cl::opt<std::string> order{"order",
                             cl::desc("all: planNearOptimal (default); size: only greedy best "
                                      "fit, largest buffer first (planBestFit)"),
                             cl::init("all"), cl::cat(category)};
  cl::opt<bool> stats{"search-stats",
                      cl::desc("print a second line with the planner's statistics"),
                      cl::cat(category)};
  cl::opt<std::string> verify{"verify",
                              cl::desc("verify a solution CSV or a JSON plan instead of solving"),
                              cl::value_desc("file"), cl::cat(category)};
};

int fail(const llvm::Twine &msg) {
  llvm::errs() << "graphc-plan: " << msg << "\n";
  return 1;
}

int solve(const Options &opts) {
  CsvProblem problem;
  if (std::string err = readMiniMallocCsv(opts.input, problem); !err.empty())
    return fail(err);
  if (opts.alignment == 0)
    return fail("--alignment must be at least 1");
  Plan plan;
  plan.buffers = std::move(problem.buffers);
  plan.alignment = opts.alignment;

  if (!(opts.timeLimit >= 0))
    return fail("--time-limit must be at least 0");
  bool hasCapacity = opts.capacity.getNumOccurrences() > 0;
  PlanOptions options;
  options.timeLimitSeconds = opts.timeLimit;
  options.nodeLimit = opts.nodeLimit;
  options.heuristicOnly = opts.heuristicOnly;
  // Capacity 0 means "minimise" to the planner; a zero capacity only fits an empty problem,
  // which the heuristic alone decides.
  options.capacity = hasCapacity ? opts.capacity : 0;
  if (hasCapacity && opts.capacity == 0)
    options.heuristicOnly = true;
  if (opts.order != "all" && opts.order != "size")
    return fail("--order must be all or size");

  auto start = std::chrono::steady_clock::now();
  PlanStats stats;
  if (opts.order == "size") {
    planBestFit(plan);
    stats.lowerBound = lowerBound(plan.buffers, plan.alignment);
    stats.heuristic = "planBestFit";
    stats.heuristicHeight = stats.height = plan.arenaBytes;
  } else {
    stats = planNearOptimal(plan, options);
  }
  uint64_t lower = stats.lowerBound;
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count();
  // The planner's own result is checked too: a wrong solution must never be written.
  if (std::string err = verifyPlan(plan); !err.empty())
    return fail(opts.input + ": internal error: planner produced an invalid plan: " + err);

  bool fits = !hasCapacity || plan.arenaBytes <= opts.capacity;
  llvm::outs() << "buffers=" << plan.buffers.size() << " lower_bound=" << lower
               << " height=" << plan.arenaBytes << " capacity="
               << (hasCapacity ? std::to_string(opts.capacity) : std::string("none"))
               << " fit=" << (fits ? "yes" : "no") << " time_ms=" << llvm::format("%.3f", ms)
               << "\n";
  if (opts.stats)
    llvm::outs() << "stats: heuristic=" << stats.heuristic
                 << " heuristic_height=" << stats.heuristicHeight
                 << " searched=" << (stats.searched ? "yes" : "no")
                 << " optimal=" << (stats.optimal ? "yes" : "no")
                 << " infeasible=" << (stats.infeasible ? "yes" : "no")
                 << " nodes=" << stats.nodes << "\n";
  llvm::outs().flush();
  if (!fits) {
    // Remove a stale solution from an earlier run so that no file claims a fit.
    if (!opts.output.empty())
      llvm::sys::fs::remove(opts.output);
    return fail(opts.input + ": does not fit: best height " + llvm::Twine(plan.arenaBytes) +
                " > capacity " + llvm::Twine(uint64_t(opts.capacity)) + " (lower bound " +
                llvm::Twine(lower) + ")");
  }
  if (!opts.output.empty() && llvm::sys::path::extension(opts.output) == ".html") {
    // The picture of the plan; the capacity, when given, is drawn as the budget line.
    std::error_code ec;
    llvm::raw_fd_ostream os(opts.output, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return fail(opts.output + ": " + ec.message());
    std::optional<uint64_t> budget;
    if (hasCapacity)
      budget = opts.capacity;
    writePlanHtml(os, plan, {}, budget, lower, llvm::sys::path::filename(opts.input));
    os.close();
    if (os.has_error()) {
      std::string msg = opts.output + ": " + os.error().message();
      os.clear_error();
      return fail(msg);
    }
  } else if (!opts.output.empty()) {
    if (std::string err = writePlanFile(opts.output, plan, {}, std::nullopt, CsvIds::Name);
        !err.empty())
      return fail(err);
  }
  return 0;
}

int verify(const Options &opts) {
  llvm::StringRef path = opts.verify;
  bool hasCapacity = opts.capacity.getNumOccurrences() > 0;
  Plan plan;
  if (llvm::sys::path::extension(path) == ".json") {
    JsonPlan json;
    if (std::string err = readPlanJson(path, json); !err.empty())
      return fail(err);
    plan = std::move(json.plan);
    if (hasCapacity && plan.arenaBytes > opts.capacity)
      return fail(path + ": does not fit: arena_bytes " + llvm::Twine(plan.arenaBytes) +
                  " > capacity " + llvm::Twine(uint64_t(opts.capacity)));
  } else {
    CsvProblem csv;
    if (std::string err = readMiniMallocCsv(path, csv); !err.empty())
      return fail(err);
    if (!csv.hasOffsets)
      return fail(path + ": no 'offset' column: not a solution");
    if (opts.alignment == 0)
      return fail("--alignment must be at least 1");
    plan.buffers = std::move(csv.buffers);
    plan.alignment = opts.alignment;
    if (hasCapacity) {
      plan.arenaBytes = opts.capacity;
    } else {
      for (const Buffer &b : plan.buffers)
        plan.arenaBytes = std::max(plan.arenaBytes, b.offset + b.bytes);
    }
  }
  if (std::string err = verifyPlan(plan); !err.empty()) {
    llvm::errs() << err << "\n";
    return 1;
  }
  uint64_t used = 0; // of the device arena (host buffers lie after it)
  for (const Buffer &b : plan.buffers)
    if (!b.host)
      used = std::max(used, b.offset + b.bytes);
  llvm::outs() << "plan ok: " << path << ": buffers=" << plan.buffers.size()
               << " height=" << used << " arena=" << plan.arenaBytes
               << " lower_bound=" << lowerBound(plan.buffers, plan.alignment)
               << " alignment=" << plan.alignment;
  if (plan.hostArenaBytes)
    llvm::outs() << " host_arena=" << plan.hostArenaBytes;
  llvm::outs() << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  Options opts;
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "graphc-plan: solve or verify static memory allocation problems "
                              "(MiniMalloc CSV) and graphc plans\n");
  if (!opts.verify.empty()) {
    if (!opts.input.empty() || !opts.output.empty())
      return fail("--verify cannot be combined with --input or --output");
    return verify(opts);
  }
  if (opts.input.empty())
    return fail("no --input problem given (or --verify=FILE); see --help");
  return solve(opts);
}
