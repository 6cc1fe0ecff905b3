// Emits the C++ source of a planned training step for the CPU runtime (runtime/).
#pragma once

#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace graphc {

struct EmittedProgram {
  std::string source;          // one C++ translation unit defining graphc_program
  std::vector<char> initBlob;  // initial parameter values, embedded by .incbin
};

struct EmitOptions {
  std::string modelName;
  std::string initBlobPath;    // absolute path the generated .incbin directive reads
  uint64_t dropoutSeed = 0;    // graphc --seed: keys the counter-based dropout masks
  // --target=cuda, --cuda-row-kernels=thread: attention and layer-norm rows by one thread each
  // (the kernels before the warp-per-row ones, kept so that a GPU run can measure both).
  bool cudaThreadRows = false;
};

/// Emits `func` (planned by graphc-plan-memory) as C++ calling runtime/kernels.h with
/// pointers into the arena. Fails with a diagnostic on an op without a CPU kernel.
mlir::LogicalResult emitCpuProgram(mlir::func::FuncOp func, const EmitOptions &options,
                                   EmittedProgram &out);

} // namespace graphc
