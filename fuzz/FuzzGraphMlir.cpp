// libFuzzer target for graph-dialect textual IR: parse with the graph and func dialects
// registered, then verify. The parser itself is upstream MLIR (libMLIR.so, not instrumented);
// the graph dialect's custom syntax and verifiers are compiled into this binary with the
// sanitizers.
#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::DialectRegistry registry;
  registry.insert<graphc::graph::GraphDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  // MLIR's lexer reads up to a NUL after the buffer's end, as every MemoryBuffer from a file or
  // a std::string has; libFuzzer's bytes have none, so copy them into a string.
  const std::string text(reinterpret_cast<const char *>(data), size);
  mlir::ParserConfig config(&context, /*verifyAfterParse=*/false);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, config, "fuzz.mlir");
  if (module)
    (void)mlir::verify(*module);
  return 0;
}
