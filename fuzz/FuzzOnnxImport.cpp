// libFuzzer target for the ONNX importer (importers/onnx/OnnxImporter.cpp, compiled into this
// binary with the sanitizers). importOnnxFile reads a path, so each input is written to a
// per-process temporary file first, and removed again after the import. For garbage the
// expected outcome is a null module and a non-empty error line; anything else must verify.
#include "importers/onnx/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

static const std::string &tempPath() {
  static const std::string path = [] {
    const char *dir = getenv("TMPDIR");
    std::string d = dir && *dir ? dir : "/tmp";
    std::string p = d + "/graphc-fuzz-onnx-" + std::to_string(getpid()) + ".onnx";
    return p;
  }();
  return path;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = tempPath();
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    abort();
  if (size && std::fwrite(data, 1, size, f) != size)
    abort();
  std::fclose(f);

  // A fresh context per input: nothing (uniqued attributes, resource blobs) accumulates.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  graphc::OnnxImportOptions options;
  // Parameter inputs declare their shapes for free: keep their values within -rss_limit_mb.
  options.maxParameterInputElements = int64_t{1} << 24;
  // Exercise the batch override on half of the inputs (chosen by a byte of the input): batch 3,
  // or batch 1 (whose import first runs one at batch 2 to rebase baked shapes) on a quarter.
  if (size && (data[size - 1] & 1))
    options.batch = (data[size - 1] & 2) ? 1 : 3;
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      graphc::importOnnxFile(path, context, options, error);
  // Removed after every input (libFuzzer may end the process with _Exit, skipping atexit); only
  // a crash leaves the file behind, and libFuzzer saves that input anyway.
  std::remove(path.c_str());
  if (!module) {
    if (error.empty())
      abort(); // a failure must say why
    return 0;
  }
  // A module that comes back must be valid IR.
  if (mlir::failed(mlir::verify(*module)))
    abort();
  return 0;
}
