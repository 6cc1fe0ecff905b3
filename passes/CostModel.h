// The cost model: FLOPs and bytes moved per op, and device profiles that turn them into time.
//
// Time per op is a roofline estimate: max(FLOPs / peak FLOP/s, bytes / memory bandwidth).
// Profiles hold nominal datasheet figures (docs/fitting.md), which is enough to rank cures
// (rematerialization against micro-batching against lower precision) and to predict their
// relative cost. A profile calibrated against measured steps (h100) also scales the roofline by
// the efficiencies graphc's binaries achieve, so that its absolute step times are predictions
// of the binary's.
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
  // Calibration against measured steps (bench/calibrate_cost_model.py): the fractions of the
  // peak FLOP/s and of the bandwidth that graphc's binaries achieve, and a fixed time per op
  // (a kernel launch, a library call's set-up). 1, 1, 0: the nominal roofline.
  double computeEfficiency = 1.0;
  double bandwidthEfficiency = 1.0;
  double secondsPerOp = 0.0;
  const char *calibration = nullptr; // what the efficiencies were fitted on; null: nominal
  // The fraction of the 16-bit (tensor-core) peak that graphc's 16-bit ops achieve, fitted
  // separately on --precision=bf16 binaries (they run other kernels: cuDNN's NHWC copies, cuBLAS
  // GemmEx); 0: not fitted, computeEfficiency applies.
  double halfComputeEfficiency = 0.0;
};

/// A step's cost at the nominal roofline, split by what bounds each op: the inputs of the
/// calibration fit (measured seconds ~ (computeBound - halfComputeBound) / computeEfficiency +
/// halfComputeBound / halfComputeEfficiency + memoryBound / bandwidthEfficiency + ops *
/// secondsPerOp).
struct RooflineSplit {
  double computeBoundSeconds = 0; // ops whose FLOPs at peak take longer than their bytes
  double memoryBoundSeconds = 0;  // the others, at the nominal bandwidth
  int64_t ops = 0;                // ops that run a kernel (views excluded)
  double halfComputeBoundSeconds =
      0; // of computeBoundSeconds, the 16-bit ops' (at the 16-bit peak)
};

/// Every known profile (h100, h200, a100-80gb, cpu).
llvm::ArrayRef<DeviceProfile> deviceProfiles();
/// The profile called `name`, or null.
const DeviceProfile *findDeviceProfile(llvm::StringRef name);

/// FLOPs and bytes of one graph-dialect op (0 for views and unknown ops).
OpCost estimateOpCost(mlir::Operation *op);

/// Time of `cost` on `device` in seconds: the roofline at the calibrated rates,
/// max(FLOPs / (peak x computeEfficiency), bytes / (bandwidth x bandwidthEfficiency)), plus
/// secondsPerOp for an op that runs a kernel; a 16-bit op's FLOPs at the 16-bit peak times
/// halfComputeEfficiency where the profile has one.
double predictSeconds(const OpCost &cost, const DeviceProfile &device);

/// Adds one op to `split` (nominal rates, no calibration).
void addToRooflineSplit(mlir::Operation *op, const DeviceProfile &device, RooflineSplit &split);

} // namespace graphc
