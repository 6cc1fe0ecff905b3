// FLOP and byte counts per op, and nominal device profiles; see CostModel.h.
#include "passes/CostModel.h"

#include <algorithm>

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

#include "dialects/graph/GraphOps.h"
#include "graphc/runtime/workspace.h"
#include "passes/Liveness.h"

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

namespace {
const DeviceProfile kProfiles[] = {
    // The efficiencies are bench/calibrate_cost_model.py's fit to 7 graphc binaries measured
    // on an H100 80GB HBM3 on 2026-11-22 (docs/gpu-results/, docs/benchmarks.md): 7.1% rms
    // relative error, the worst -17% (the unfused transformer).
    {"h100", 67e12, 989e12, 3.35e12, 80e9,
     "NVIDIA H100 SXM5 datasheet: 67 TFLOPS fp32, 989 TFLOPS dense bf16, 3.35 TB/s HBM3; PCIe Gen5 "
     "x16 64 GB/s",
     64e9, 0.2677, 0.4319, 19.8e-6, "fitted to 7 graphc binaries measured on an H100, 2026-11-22",
     // No bf16 binary has run on an H100: the 16-bit efficiency is the H200's (below), the same
     // Hopper tensor cores running the same cuBLAS and cuDNN kernels.
     0.0227},
    // The efficiencies are bench/calibrate_cost_model.py's fit to the 7 fp32 graphc binaries
    // measured on an H200 on 2026-11-28 (docs/gpu-results/2026-11-28-h200-*.json,
    // docs/benchmarks.md): 18.7% rms relative error, the worst -38% (the transformer at batch
    // 987, whose fused attention runs on CUDA cores). The 16-bit efficiency is then fitted, those
    // held, to the run's 4 bf16 binaries (3 transformers, cnn64): 2.27% of the bf16 peak, 32.9%
    // rms relative error. It is low because it absorbs what the roofline does not model in
    // those steps (cuDNN's NCHW-to-NHWC copies, the f32 attention's share growing as the GEMMs
    // around it shrink); without it the model priced the bf16 transformer at 0.23x to 0.45x
    // its measured step, with it at 0.77x to 1.37x, so --precision=auto no longer takes bf16
    // for a speed-up it does not give.
    {"h200", 67e12, 989e12, 4.8e12, 141e9,
     "NVIDIA H200 SXM datasheet: 67 TFLOPS fp32, 989 TFLOPS dense bf16, 4.8 TB/s HBM3e; PCIe Gen5 "
     "x16 64 GB/s",
     64e9, 0.3286, 0.3998, 16.7e-6,
     "fitted to 7 fp32 and 4 bf16 graphc binaries measured on an H200, 2026-11-28", 0.0227},
    {"a100-80gb", 19.5e12, 312e12, 2.039e12, 80e9,
     "NVIDIA A100 80GB SXM datasheet: 19.5 TFLOPS fp32, 312 TFLOPS bf16, 2.039 TB/s HBM2e; PCIe "
     "Gen4 x16 32 GB/s",
     32e9},
    // Fitted by bench/calibrate_cost_model.py --cpu-results to 6 graphc CPU binaries (the
    // users' three CNNs, ResNet-18, MobileNetV2, the 6-layer transformer) timed by
    // bench/cpu_step_time.py on the 2-core CI machine (AMD EPYC, AVX2) on 2026-11-27, after
    // the GEMMs moved to graphc's threads, pointwise convolutions lost their im2col and the
    // masked gradients and batch-norm sums stopped stalling (docs/cpu-results/*-session30.json,
    // docs/benchmarks.md): 8.0% rms relative error, the worst +13% (MobileNetV2). The per-op
    // time, 464 us in the first fit, fitted to zero: it had stood for those stalls.
    {"cpu", 160e9, 160e9, 20e9, 24e9,
     "2-core x86 AVX2 at 2.5 GHz: 2 x 2 FMA x 8 lanes x 2 flops x 2.5e9 = 160 GFLOP/s, ~20 GB/s "
     "DRAM (host memory is its own: no link)",
     0, 0.6147, 0.3063, 0.0,
     "fitted to 6 graphc CPU binaries timed on the 2-core CI machine, 2026-11-27"},
};

double elements(Value v) {
  return double(cast<RankedTensorType>(v.getType()).getNumElements());
}
double bytesOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return double(t.getNumElements()) * double(t.getElementTypeBitWidth() / 8);
}
/// The scores an attention op's kernels compute: batch x queries x keys, or, causal, the sum
/// over its query blocks of the block's rows x the keys it reaches (rt::attentionBlockKeys:
/// about half). O(blocks).
double attentionScores(Operation *op, Value query, Value key, bool causal) {
  auto q = cast<RankedTensorType>(query.getType()).getShape();
  const int64_t batch = q[0], queries = q[1];
  const int64_t keys = cast<RankedTensorType>(key.getType()).getDimSize(1);
  if (!causal)
    return double(batch) * double(queries) * double(keys);
  const int64_t block = rt::attentionBlockRows(attentionQueryBlock(op), queries);
  double scores = 0.0;
  for (int64_t first = 0; first < queries; first += block) {
    const int64_t rows = std::min(block, queries - first);
    scores += double(rows) * double(rt::attentionBlockKeys(true, first, rows, keys));
  }
  return double(batch) * scores;
}
} // namespace

llvm::ArrayRef<DeviceProfile> graphc::deviceProfiles() { return kProfiles; }

const DeviceProfile *graphc::findDeviceProfile(llvm::StringRef name) {
  for (const DeviceProfile &p : kProfiles)
    if (name == p.name)
      return &p;
  return nullptr;
}

OpCost graphc::estimateOpCost(Operation *op) {
  OpCost cost;
  if (isa<ReshapeOp>(op))
    return cost; // a view
  for (Value v : op->getOperands())
    cost.bytes += bytesOf(v);
  for (Value v : op->getResults())
    cost.bytes += bytesOf(v);
  auto shape = [](Value v) { return cast<RankedTensorType>(v.getType()).getShape(); };
  // Tensor cores run an op whose tensors are all 16-bit (casts aside: they only move bytes).
  cost.halfPrecision = !isa<CastOp>(op) && op->getNumResults() > 0 &&
                       llvm::all_of(op->getResultTypes(), [](Type t) {
                         return cast<RankedTensorType>(t).getElementTypeBitWidth() == 16;
                       });
  cost.flops = llvm::TypeSwitch<Operation *, double>(op)
                   .Case([&](DenseOp d) {
                     auto x = shape(d.getInput());
                     return 2.0 * elements(d.getResult()) * double(x[1]);
                   })
                   .Case([&](MatmulOp m) {
                     auto a = shape(m.getLhs());
                     double k = double(m.getTransposeLhs() ? a[0] : a[1]);
                     return 2.0 * elements(m.getResult()) * k;
                   })
                   .Case([&](BatchMatmulOp m) {
                     auto a = shape(m.getLhs());
                     double k = double(m.getTransposeLhs() ? a[1] : a[2]);
                     return 2.0 * elements(m.getResult()) * k;
                   })
                   // Forward: two GEMMs (Q K^T, P V) and a softmax per score. Backward:
                   // five GEMMs (the scores again, dO V^T, dV, dQ, dK) and two row passes.
                   .Case([&](AttentionOp a) {
                     auto q = shape(a.getQuery()), v = shape(a.getValue());
                     double scores = attentionScores(a, a.getQuery(), a.getKey(), a.getCausal());
                     cost.bytes += 3.0 * 4.0 * scores; // the block written, read, read again
                     return scores * (2.0 * double(q[2]) + 2.0 * double(v[2]) + 5.0);
                   })
                   .Case([&](AttentionBackwardOp a) {
                     auto q = shape(a.getQuery()), v = shape(a.getValue());
                     double scores = attentionScores(a, a.getQuery(), a.getKey(), a.getCausal());
                     cost.bytes += 8.0 * 4.0 * scores;
                     return scores * (6.0 * double(q[2]) + 4.0 * double(v[2]) + 10.0);
                   })
                   .Case<LayerNormOp, LayerNormBackwardOp>(
                       // Two passes for the statistics, one to normalise (three for backward).
                       [&](Operation *) { return 8.0 * elements(op->getOperand(0)); })
                   .Case<RmsNormOp, RmsNormBackwardOp>(
                       // One pass for the mean square, one to normalise (two for backward).
                       [&](Operation *) { return 5.0 * elements(op->getOperand(0)); })
                   .Case([&](Conv2dOp c) {
                     auto w = shape(c.getFilter());
                     return 2.0 * elements(c.getResult()) * double(w[1] * w[2] * w[3]);
                   })
                   .Case([&](Conv2dBackwardDataOp c) {
                     auto w = shape(c.getFilter());
                     return 2.0 * elements(c.getGrad()) * double(w[1] * w[2] * w[3]);
                   })
                   .Case([&](Conv2dBackwardFilterOp c) {
                     auto w = shape(c.getResult());
                     return 2.0 * elements(c.getGrad()) * double(w[1] * w[2] * w[3]);
                   })
                   .Case([&](MaxPool2dOp p) {
                     auto k = p.getKernel();
                     return elements(p.getResult()) * double(k[0] * k[1]);
                   })
                   .Case([&](MaxPool2dBackwardOp p) {
                     auto k = p.getKernel();
                     return elements(p.getGrad()) * double(k[0] * k[1]);
                   })
                   .Case<ActivationOp, ActivationBackwardOp>(
                       // erf/exp/tanh and a few multiplies per element.
                       [&](Operation *) { return 8.0 * elements(op->getResult(0)); })
                   // A splitmix64 hash per element, and Box-Muller's log, sqrt and cos.
                   .Case([&](RandomNormalOp r) { return 20.0 * elements(r.getResult()); })
                   .Case([&](RandomUniformOp r) { return 8.0 * elements(r.getResult()); })
                   // Per pixel: its sample's map (two draws, a cos and a sin) and 4 taps.
                   .Case([&](RandomAffineOp r) { return 30.0 * elements(r.getResult()); })
                   .Case<SigmoidOp, TanhOp, SigmoidBackwardOp, TanhBackwardOp>(
                       [&](Operation *) { return 4.0 * elements(op->getResult(0)); })
                   .Case<SoftmaxOp, SoftmaxBackwardOp, LossOp, LossBackwardOp>(
                       [&](Operation *) { return 5.0 * elements(op->getOperand(0)); })
                   .Case([&](BatchNormApplyOp a) { return 2.0 * elements(a.getResult()); })
                   .Case([&](SgdUpdateOp u) { return 2.0 * elements(u.getParam()); })
                   .Case([&](MomentumUpdateOp u) { return 4.0 * elements(u.getParam()); })
                   .Case([&](AdamUpdateOp u) { return 12.0 * elements(u.getParam()); })
                   .Default([&](Operation *) {
                     // Elementwise and reductions: about one flop per element touched.
                     return op->getNumResults() ? elements(op->getResult(0)) : 0.0;
                   });
  return cost;
}

namespace {
double peakFlops(const OpCost &cost, const DeviceProfile &device) {
  return cost.halfPrecision ? device.bf16FlopsPerSecond : device.fp32FlopsPerSecond;
}
/// Whether an op runs a kernel of its own: views and empty ops do not.
bool runsKernel(Operation *op, const OpCost &cost) {
  return !isa<ReshapeOp>(op) && (cost.flops > 0 || cost.bytes > 0);
}
} // namespace

double graphc::predictSeconds(const OpCost &cost, const DeviceProfile &device) {
  if (cost.flops <= 0 && cost.bytes <= 0)
    return 0.0;
  const double efficiency = cost.halfPrecision && device.halfComputeEfficiency > 0
                                ? device.halfComputeEfficiency
                                : device.computeEfficiency;
  return std::max(cost.flops / (peakFlops(cost, device) * efficiency),
                  cost.bytes / (device.bytesPerSecond * device.bandwidthEfficiency)) +
         device.secondsPerOp;
}

void graphc::addToRooflineSplit(Operation *op, const DeviceProfile &device, RooflineSplit &split) {
  OpCost cost = estimateOpCost(op);
  if (!runsKernel(op, cost))
    return;
  const double compute = cost.flops / peakFlops(cost, device),
               memory = cost.bytes / device.bytesPerSecond;
  (compute > memory ? split.computeBoundSeconds : split.memoryBoundSeconds) +=
      std::max(compute, memory);
  if (compute > memory && cost.halfPrecision)
    split.halfComputeBoundSeconds += compute;
  ++split.ops;
}
