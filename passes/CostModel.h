// The cost model: FLOPs and bytes moved per op, and device profiles that turn them into time.
//
// Time per op is a roofline estimate: max(FLOPs / peak FLOP/s, bytes / memory bandwidth).
// Profiles hold nominal datasheet figures (docs/cost-model.md), which is enough to rank cures
// (rematerialization against micro-batching against lower precision) and to predict their
// relative cost; absolute step times are estimates, not measurements.
#pragma once

#include <string>
#include <vector>

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

namespace graphc {

struct OpCost {
  double flops = 0;
  double bytes = 0;          // bytes read and written
  bool halfPrecision = false; // a 16-bit op: its FLOPs run at the device's bf16/fp16 rate
};

struct DeviceProfile {
  const char *name;
  double fp32FlopsPerSecond;  // CUDA-core fp32 (TF32 off), or the CPU's vector peak
  double bf16FlopsPerSecond;  // dense tensor-core bf16/fp16
  double bytesPerSecond;      // memory bandwidth
  double memoryBytes;         // device memory
  const char *source;         // where the figures come from
  double hostLinkBytesPerSecond; // host <-> device, one direction (offloaded optimizer state)
};

/// Every known profile (h100, h200, a100-80gb, cpu).
llvm::ArrayRef<DeviceProfile> deviceProfiles();
/// The profile called `name`, or null.
const DeviceProfile *findDeviceProfile(llvm::StringRef name);

/// FLOPs and bytes of one graph-dialect op (0 for views and unknown ops).
OpCost estimateOpCost(mlir::Operation *op);

/// Roofline time of `cost` on `device`, in seconds.
double predictSeconds(const OpCost &cost, const DeviceProfile &device);

} // namespace graphc
