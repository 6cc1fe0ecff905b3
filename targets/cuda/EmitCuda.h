// Emits the CUDA C++ source of a planned training step for the CUDA runtime (runtime/cuda/).
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "targets/cpu/EmitCpp.h" // EmittedProgram, EmitOptions

namespace graphc {

/// Emits `func` (planned by graphc-plan-memory) as one .cu file: generated kernels for the
/// elementwise ops (adjacent chains fused into one kernel), reductions and backward ops, cuBLAS
/// for dense/matmul, cuDNN for convolutions and max pooling, every tensor `arena + offset`, and
/// the program descriptor (runtime/program.fbs) as an embedded byte array. The same file builds
/// for the host with -DGRAPHC_HOST_SHIM (see runtime/cuda/include/graphc/runtime/cuda/step.h).
/// Fails with a diagnostic naming the op for ops the CUDA target does not support yet.
mlir::LogicalResult emitCudaProgram(mlir::func::FuncOp func, const EmitOptions &options,
                                    EmittedProgram &out);

} // namespace graphc
