// The seam between the runtime's main() (train_main.cpp) and a device target.
//
// A device target (CUDA: runtime/cuda/cuda_runtime.cpp) keeps the real arena on the device; the
// main() keeps working on a host-side image of the arena for everything it does between steps
// (initial values, checkpoints, the validation snapshot, --save-weights) and calls these hooks at
// the points where the two must agree. `Program::trainStep` of such a target takes the host image:
// it copies the per-step inputs (data, labels, step) to the device, runs the step there and copies
// the loss and the prediction back.
//
// A CPU binary does not define `graphc_device_runtime` (a weak symbol), so its main() sees null
// and nothing changes for it.
#pragma once

#include "graphc/runtime/program.h"

namespace graphc::rt {

struct DeviceRuntime {
  const char *name; // "CUDA"
  /// Called once, where the CPU main allocates its arena (after every input was checked): finds
  /// the device, allocates the device arena, creates the library handles. Returns 0, or an exit
  /// code after printing why (no device, the arena does not fit, ...).
  int (*start)(const Program &prog);
  /// Copies the persistent tensors (roles Parameter and State) from the host image to the device
  /// (after initialisation, --resume, or restoring the validation snapshot).
  void (*pushPersistent)(const Program &prog, const unsigned char *hostArena);
  /// Copies them back (before a checkpoint, the validation snapshot, --save-weights).
  void (*pullPersistent)(const Program &prog, unsigned char *hostArena);
};

} // namespace graphc::rt

/// Defined by a device target's runtime only; null (weak) in CPU binaries.
extern "C" const graphc::rt::DeviceRuntime graphc_device_runtime __attribute__((weak));
