// libFuzzer target for the Keras importer (importers/keras/KerasImporter.cpp, compiled into
// this binary with the sanitizers): model JSON text in memory, no weights file (parameters are
// initialised from the seed, capped small so that a huge declared layer is refused instead of
// exhausting memory). The expected outcome for garbage is a null module and a non-empty error
// line; anything else must verify.
#include "importers/keras/KerasImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  graphc::KerasImportOptions options;
  options.maxParameterElements = int64_t{1} << 20;
  // Half of the inputs get a batch (most fixtures need one), some an --input-shape too.
  if (size && (data[size - 1] & 1))
    options.batch = 2;
  if (size && (data[size - 1] & 2))
    options.inputShapes = {{8, 8, 3}};
  options.usesCompileLoss = size && (data[0] & 1);
  graphc::KerasTrainingDefaults defaults;
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      graphc::importKerasJson(text, "fuzz.json", context, options, defaults, error);
  if (!module) {
    if (error.empty())
      abort(); // a failure must say why
    return 0;
  }
  if (mlir::failed(mlir::verify(*module)))
    abort();
  return 0;
}
