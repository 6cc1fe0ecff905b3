// The graphc driver. Phases, each a stopping point for --compile-to:
//   import   model file -> graph dialect forward function
//   training + autodiff, loss and optimizer -> @train_step
//   planned  + liveness, offsets in one arena, independent plan verification
//   source   + C++ for the CPU runtime
//   binary   + the system C++ compiler links it with runtime/ into a training binary
// Every compile prints a fit report (arena, lower bound, budget, bytes by kind). Errors are one
// line naming the file and what to do, with a non-zero exit, and leave no output behind:
// outputs are written to temporary files and renamed into place only when all succeeded.
#include "tools/graphc/Driver.h"

#include <cctype>
#include <optional>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "dialects/graph/GraphOps.h"
#include "importers/onnx/OnnxImporter.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "planner/PlanHtml.h"
#include "planner/PlanIO.h"
#include "targets/cpu/EmitCpp.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace graphc {
namespace {

enum class Phase { Import, Training, Planned, Source, Binary };
enum ExitCode { kOk = 0, kBadInput = 1, kOverBudget = 3, kToolchain = 4 };

struct Options {
  std::string model, output, loss, optimizer, target, budget, compileTo, cudaArch;
  double lr = 0.01, momentum = 0.9;
  int64_t batch = 0;
  std::vector<std::string> planOut;
  bool noReuse = false, quiet = false, printPlan = false, noSchedule = false;
};

/// A failure already explained to the user in one line.
struct Failure {
  int code;
};

[[noreturn]] void fail(int code, const llvm::Twine &message) {
  llvm::errs() << "graphc: error: " << message << "\n";
  throw Failure{code};
}

/// "123", "64KiB", "1.5 GiB", "2GB": binary suffixes are powers of 1024, decimal ones of 1000.
std::optional<uint64_t> parseSize(llvm::StringRef text) {
  text = text.trim();
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  double value;
  if (digits == 0 || text.take_front(digits).getAsDouble(value))
    return std::nullopt;
  llvm::StringRef unit = text.drop_front(digits).trim().lower() == "" ? "" : text.drop_front(digits).trim();
  std::string u = unit.lower();
  double scale = 1;
  if (u == "" || u == "b")
    scale = 1;
  else if (u == "k" || u == "kib")
    scale = 1024.0;
  else if (u == "m" || u == "mib")
    scale = 1024.0 * 1024;
  else if (u == "g" || u == "gib")
    scale = 1024.0 * 1024 * 1024;
  else if (u == "kb")
    scale = 1e3;
  else if (u == "mb")
    scale = 1e6;
  else if (u == "gb")
    scale = 1e9;
  else
    return std::nullopt;
  return static_cast<uint64_t>(value * scale);
}

/// Writes `contents` to `path` through a temporary file in the same directory and a rename,
/// so that a failure never leaves a partial file behind.
void writeFileAtomically(llvm::StringRef path, llvm::StringRef contents) {
  llvm::SmallString<256> temp;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, temp))
    fail(kBadInput, path + ": cannot create the output file: " + ec.message());
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << contents;
    os.close();
    if (os.has_error()) {
      llvm::sys::fs::remove(temp);
      fail(kBadInput, path + ": cannot write the output file");
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    fail(kBadInput, path + ": cannot write the output file: " + ec.message());
  }
}

/// Removes a set of paths unless released (the binary phase's temporaries).
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const std::string &p : paths)
      llvm::sys::fs::remove_directories(p, /*IgnoreErrors=*/true);
  }
};

class Driver {
public:
  explicit Driver(Options options) : opts(std::move(options)) {}

  int run() {
    Phase phase = parsePhase();
    std::optional<uint64_t> budget;
    if (!opts.budget.empty()) {
      budget = parseSize(opts.budget);
      if (!budget || *budget == 0)
        fail(kBadInput, "--budget=" + opts.budget +
                            " is not a size; use bytes or a KiB/MiB/GiB suffix, e.g. --budget=8GiB");
    }
    if (opts.target != "cpu" && opts.target != "cuda")
      fail(kBadInput, "--target=" + opts.target + " is unknown; use cpu or cuda");
    if (opts.target == "cuda")
      fail(kBadInput, "--target=cuda is not implemented yet in this build; use --target=cpu");
    if (phase == Phase::Binary && opts.output.empty())
      fail(kBadInput, "a training binary needs an output path: pass -o OUT (or --compile-to=source)");
    for (const std::string &p : opts.planOut) {
      llvm::StringRef ext = llvm::sys::path::extension(p);
      if (ext != ".txt" && ext != ".json" && ext != ".csv" && ext != ".html")
        fail(kBadInput, "--plan-out=" + p + ": unknown format; use .txt, .json, .csv or .html");
    }

    MLIRContext context;
    context.loadDialect<graph::GraphDialect, func::FuncDialect>();
    // Diagnostics from passes become one line each: graphc: error: <location>: <message>.
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Error)
        return success();
      std::string loc;
      llvm::raw_string_ostream los(loc);
      if (auto name = dyn_cast<NameLoc>(diag.getLocation()))
        los << opts.model << ": node \"" << name.getName().strref() << "\": ";
      else if (auto file = dyn_cast<FileLineColLoc>(diag.getLocation()))
        los << file.getFilename().strref() << ":" << file.getLine() << ":" << file.getColumn()
            << ": ";
      else
        los << opts.model << ": ";
      llvm::errs() << "graphc: error: " << loc << diag.str() << "\n";
      return success();
    });

    OwningOpRef<ModuleOp> module = importModel(context);
    if (phase == Phase::Import)
      return emitIR(*module);

    PassManager pm(&context);
    pm.addPass(createCanonicalizerPass());
    BuildTrainStepOptions trainOptions;
    trainOptions.loss = opts.loss;
    trainOptions.optimizer = opts.optimizer;
    trainOptions.learningRate = opts.lr;
    trainOptions.momentum = opts.momentum;
    pm.addPass(createBuildTrainStep(trainOptions));
    if (failed(pm.run(*module)))
      fail(kBadInput, opts.model + ": building the training step failed (see above)");
    if (phase == Phase::Training)
      return emitIR(*module);

    PassManager plan(&context);
    PlanMemoryOptions planOptions;
    planOptions.noReuse = opts.noReuse;
    if (!opts.noSchedule)
      plan.addNestedPass<func::FuncOp>(createScheduleOps());
    plan.addNestedPass<func::FuncOp>(createPlanMemory(planOptions));
    plan.addNestedPass<func::FuncOp>(createVerifyPlan());
    if (failed(plan.run(*module)))
      fail(kBadInput, opts.model + ": memory planning failed (see above)");
    func::FuncOp step = module->lookupSymbol<func::FuncOp>("train_step");
    auto planned = readPlannedStep(step);
    if (failed(planned))
      fail(kBadInput, opts.model + ": cannot read the memory plan back");
    if (auto before = step->getAttrOfType<IntegerAttr>("graph.schedule_bound_before"))
      scheduleBounds = {uint64_t(before.getInt()),
                        uint64_t(step->getAttrOfType<IntegerAttr>("graph.schedule_bound_after").getInt())};
    checkBudget(*planned, budget);
    report(*planned, budget);
    writePlanDumps(*planned, budget);
    if (phase == Phase::Planned)
      return emitIR(*module);

    EmitOptions emit;
    emit.modelName = llvm::sys::path::filename(opts.model).str();
    if (phase == Phase::Source) {
      std::string blobPath = opts.output.empty() ? "" : absolute(opts.output + ".weights.bin");
      emit.initBlobPath = blobPath;
      EmittedProgram program = emitProgram(step, emit);
      if (!program.initBlob.empty() && blobPath.empty())
        fail(kBadInput, "the source embeds weights from a side file: pass -o OUT.cpp");
      if (!program.initBlob.empty())
        writeFileAtomically(blobPath, llvm::StringRef(program.initBlob.data(), program.initBlob.size()));
      return emitText(program.source);
    }
    return buildBinary(step, emit);
  }

private:
  Phase parsePhase() {
    if (opts.compileTo == "import")
      return Phase::Import;
    if (opts.compileTo == "training")
      return Phase::Training;
    if (opts.compileTo == "planned")
      return Phase::Planned;
    if (opts.compileTo == "source")
      return Phase::Source;
    if (opts.compileTo == "binary")
      return Phase::Binary;
    fail(kBadInput, "--compile-to=" + opts.compileTo +
                        " is unknown; use import, training, planned, source or binary");
  }

  static std::string absolute(llvm::StringRef path) {
    llvm::SmallString<256> abs(path);
    llvm::sys::fs::make_absolute(abs);
    return abs.str().str();
  }

  OwningOpRef<ModuleOp> importModel(MLIRContext &context) {
    if (!llvm::sys::fs::exists(opts.model))
      fail(kBadInput, opts.model + ": no such file");
    llvm::StringRef ext = llvm::sys::path::extension(opts.model);
    if (ext == ".onnx") {
      std::string error;
      OnnxImportOptions importOptions;
      importOptions.batch = opts.batch;
      auto module = importOnnxFile(opts.model, context, importOptions, error);
      if (!module)
        fail(kBadInput, error);
      return module;
    }
    if (ext == ".mlir") {
      llvm::SourceMgr sourceMgr;
      auto file = llvm::MemoryBuffer::getFile(opts.model);
      if (!file)
        fail(kBadInput, opts.model + ": cannot read the file");
      sourceMgr.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
      OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
      if (!module)
        fail(kBadInput, opts.model + ": not a valid graph-dialect MLIR file (see above)");
      return module;
    }
    fail(kBadInput, opts.model + ": unknown model format '" + ext +
                        "'; graphc reads .onnx and .mlir (Keras .json support is planned)");
  }

  /// Bytes of the plan by buffer kind, in schema order.
  static std::vector<std::pair<std::string, uint64_t>> bytesByKind(const plan::Plan &p) {
    static const char *kinds[] = {"parameter", "gradient", "optimizer_state", "activation",
                                  "temporary", "workspace", "input"};
    std::vector<std::pair<std::string, uint64_t>> out;
    for (const char *k : kinds) {
      uint64_t sum = 0;
      for (const plan::Buffer &b : p.buffers)
        if (b.kind == k)
          sum += b.bytes;
      out.push_back({k, sum});
    }
    return out;
  }

  static std::string kindSummary(const plan::Plan &p) {
    std::string s;
    for (auto &[kind, bytes] : bytesByKind(p))
      if (bytes)
        s += (s.empty() ? "" : ", ") + kind + " " + plan::humanBytes(bytes);
    return s;
  }

  void checkBudget(const PlannedStep &planned, std::optional<uint64_t> budget) {
    if (!budget || planned.plan.arenaBytes <= *budget)
      return;
    fail(kOverBudget,
         llvm::formatv("{0}: the training step needs {1} ({2} bytes) but --budget is {3} ({4} "
                       "bytes); by kind: {5}; lower bound {6}. Raise --budget to at least {2} "
                       "or lower --batch.",
                       opts.model, plan::humanBytes(planned.plan.arenaBytes),
                       planned.plan.arenaBytes, plan::humanBytes(*budget), *budget,
                       kindSummary(planned.plan), plan::humanBytes(planned.lowerBound))
             .str());
  }

  llvm::raw_ostream &reportStream() {
    // IR and source on stdout must stay clean, so the report goes to stderr then.
    return opts.output.empty() ? llvm::errs() : llvm::outs();
  }

  void report(const PlannedStep &planned, std::optional<uint64_t> budget) {
    if (opts.quiet)
      return;
    const plan::Plan &p = planned.plan;
    plan::Plan separate = p;
    plan::planNoReuse(separate);
    llvm::raw_ostream &os = reportStream();
    double gap = planned.lowerBound
                     ? 100.0 * (double(p.arenaBytes) - double(planned.lowerBound)) /
                           double(planned.lowerBound)
                     : 0.0;
    os << "graphc fit report: " << llvm::sys::path::filename(opts.model) << " (target "
       << opts.target << ", " << opts.optimizer << ", " << opts.loss << ")\n";
    os << llvm::formatv("  arena        {0,12} ({1} bytes, one allocation, {2} buffers, {3} steps)\n",
                        plan::humanBytes(p.arenaBytes), p.arenaBytes, p.buffers.size(),
                        planned.steps.size());
    os << llvm::formatv("  lower bound  {0,12} (gap {1:F1}%)\n", plan::humanBytes(planned.lowerBound), gap);
    if (scheduleBounds)
      os << llvm::formatv("  schedule     lower bound {0} before reordering, {1} after\n",
                          plan::humanBytes(scheduleBounds->first),
                          plan::humanBytes(scheduleBounds->second));
    os << llvm::formatv("  no reuse     {0,12} (reuse saves {1:F1}%)\n",
                        plan::humanBytes(separate.arenaBytes),
                        separate.arenaBytes ? 100.0 * (1.0 - double(p.arenaBytes) /
                                                                 double(separate.arenaBytes))
                                            : 0.0);
    if (budget)
      os << llvm::formatv("  budget       {0,12} (fits, {1:F1}% used)\n", plan::humanBytes(*budget),
                          100.0 * double(p.arenaBytes) / double(*budget));
    else
      os << "  budget               none (pass --budget=SIZE to check a device limit)\n";
    os << "  by kind:\n";
    for (auto &[kind, bytes] : bytesByKind(p))
      os << llvm::formatv("    {0,-16} {1,12}\n", kind, plan::humanBytes(bytes));
    os << "  cures applied: none needed (static reuse only)\n";
    if (opts.printPlan)
      plan::writePlanText(os, p, budget);
    os.flush();
  }

  void writePlanDumps(const PlannedStep &planned, std::optional<uint64_t> budget) {
    for (const std::string &path : opts.planOut) {
      std::string text;
      llvm::raw_string_ostream os(text);
      llvm::StringRef ext = llvm::sys::path::extension(path);
      if (ext == ".json")
        plan::writePlanJson(os, planned.plan, planned.steps, budget);
      else if (ext == ".csv")
        plan::writePlanCsv(os, planned.plan);
      else if (ext == ".html")
        plan::writePlanHtml(os, planned.plan, planned.steps, budget, planned.lowerBound,
                            llvm::sys::path::filename(opts.model).str() + " training step");
      else
        plan::writePlanText(os, planned.plan, budget);
      os.flush();
      writeFileAtomically(path, text);
    }
  }

  int emitText(llvm::StringRef text) {
    if (opts.output.empty() || opts.output == "-") {
      llvm::outs() << text;
      llvm::outs().flush();
    } else {
      writeFileAtomically(opts.output, text);
    }
    return kOk;
  }

  int emitIR(ModuleOp module) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module.print(os);
    os.flush();
    return emitText(text);
  }

  EmittedProgram emitProgram(func::FuncOp step, const EmitOptions &emit) {
    EmittedProgram program;
    if (failed(emitCpuProgram(step, emit, program)))
      fail(kBadInput, opts.model + ": emitting C++ failed (see above)");
    return program;
  }

  int buildBinary(func::FuncOp step, EmitOptions emit) {
    llvm::SmallString<128> dir;
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("graphc", dir))
      fail(kToolchain, "cannot create a temporary directory: " + ec.message());
    TempFiles temps;
    temps.paths.push_back(dir.str().str());
    std::string source = (dir + "/step.cpp").str(), blob = (dir + "/weights.bin").str();
    emit.initBlobPath = blob;
    EmittedProgram program = emitProgram(step, emit);
    {
      std::error_code ec;
      llvm::raw_fd_ostream s(source, ec);
      s << program.source;
      llvm::raw_fd_ostream w(blob, ec, llvm::sys::fs::OF_None);
      w.write(program.initBlob.data(), program.initBlob.size());
      if (ec)
        fail(kToolchain, "cannot write temporary files in " + dir + ": " + ec.message());
    }

    const char *cxxEnv = std::getenv("GRAPHC_CXX");
    auto cxx = llvm::sys::findProgramByName(cxxEnv ? cxxEnv : "c++");
    if (!cxx)
      fail(kToolchain, "no C++ compiler found (looked for " +
                           std::string(cxxEnv ? cxxEnv : "c++") +
                           "); install g++ or set GRAPHC_CXX");
    std::string include = GRAPHC_RUNTIME_INCLUDE_DIR, libDir = GRAPHC_RUNTIME_LIB_DIR;
    if (const char *root = std::getenv("GRAPHC_RUNTIME_DIR")) {
      include = std::string(root) + "/include";
      libDir = std::string(root) + "/lib";
    }
    std::string outputTemp = opts.output + ".tmp-link";
    std::vector<std::string> argv = {*cxx,
                                     "-O2",
                                     "-std=c++17",
                                     "-I" + include,
                                     source,
                                     libDir + "/libgraphc_runtime_main.a",
                                     libDir + "/libgraphc_runtime.a",
                                     "-lopenblas",
                                     "-lpthread",
                                     "-lm",
                                     "-o",
                                     outputTemp};
    std::vector<llvm::StringRef> args(argv.begin(), argv.end());
    std::string log = (dir + "/cxx.log").str();
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                  llvm::StringRef(log)};
    std::string error;
    int rc = llvm::sys::ExecuteAndWait(*cxx, args, std::nullopt, redirects, 0, 0, &error);
    if (rc != 0) {
      llvm::sys::fs::remove(outputTemp);
      auto text = llvm::MemoryBuffer::getFile(log);
      std::string first = text ? (*text)->getBuffer().split('\n').first.str() : error;
      fail(kToolchain, "compiling the training binary with " + *cxx + " failed: " + first);
    }
    if (std::error_code ec = llvm::sys::fs::rename(outputTemp, opts.output)) {
      llvm::sys::fs::remove(outputTemp);
      fail(kToolchain, opts.output + ": cannot write the training binary: " + ec.message());
    }
    if (!opts.quiet)
      reportStream() << "wrote " << opts.output << " (run it with --data X.npy --labels Y.npy)\n";
    return kOk;
  }

  Options opts;
  std::optional<std::pair<uint64_t, uint64_t>> scheduleBounds;
};

} // namespace

int runGraphcDriver(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::OptionCategory category("graphc options");
  cl::opt<std::string> model(cl::Positional, cl::desc("<model.onnx|model.mlir>"), cl::Required,
                             cl::cat(category));
  cl::opt<std::string> output("o", cl::desc("output file (training binary, or IR/source for "
                                            "earlier phases; stdout when absent)"),
                              cl::value_desc("OUT"), cl::cat(category));
  cl::opt<std::string> loss("loss", cl::desc("sparse_categorical_crossentropy | "
                                             "categorical_crossentropy | binary_crossentropy | mse"),
                            cl::init("sparse_categorical_crossentropy"), cl::cat(category));
  cl::opt<std::string> optimizer("optimizer", cl::desc("sgd | momentum | adam"), cl::init("sgd"),
                                 cl::cat(category));
  cl::opt<double> lr("lr", cl::desc("learning rate"), cl::init(0.01), cl::cat(category));
  cl::opt<double> momentum("momentum", cl::desc("momentum factor (--optimizer=momentum)"),
                           cl::init(0.9), cl::cat(category));
  cl::opt<int64_t> batch("batch", cl::desc("batch size (overrides the model's first input dimension)"),
                         cl::init(0), cl::cat(category));
  cl::opt<std::string> target("target", cl::desc("cpu | cuda"), cl::init("cpu"), cl::cat(category));
  cl::opt<std::string> budget("budget", cl::desc("device memory the plan may use: bytes, or with "
                                                 "a KiB/MiB/GiB suffix"),
                              cl::cat(category));
  cl::opt<std::string> compileTo("compile-to", cl::desc("import | training | planned | source | binary"),
                                 cl::init("binary"), cl::cat(category));
  cl::list<std::string> planOut("plan-out", cl::desc("write the memory plan (.txt, .json, .csv); repeatable"),
                                cl::cat(category));
  cl::opt<bool> noReuse("no-reuse", cl::desc("give every buffer its own bytes (testing)"),
                        cl::cat(category));
  cl::opt<bool> noSchedule("no-schedule", cl::desc("keep the autodiff op order (no memory-aware "
                                                  "reordering)"),
                           cl::cat(category));
  cl::opt<bool> printPlan("print-plan", cl::desc("print the plan table after the fit report"),
                          cl::cat(category));
  cl::opt<bool> quiet("quiet", cl::desc("no fit report"), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(argc, argv, "graphc: compile a model's training step for a "
                                               "memory budget\n",
                                   &llvm::errs()))
    return kBadInput;

  Options opts;
  opts.model = model;
  opts.output = output;
  opts.loss = loss;
  opts.optimizer = optimizer;
  opts.lr = lr;
  opts.momentum = momentum;
  opts.batch = batch;
  opts.target = target;
  opts.budget = budget;
  opts.compileTo = compileTo;
  opts.planOut.assign(planOut.begin(), planOut.end());
  opts.noReuse = noReuse;
  opts.printPlan = printPlan;
  opts.noSchedule = noSchedule;
  opts.quiet = quiet;
  try {
    return Driver(std::move(opts)).run();
  } catch (const Failure &f) {
    return f.code;
  }
}

} // namespace graphc
