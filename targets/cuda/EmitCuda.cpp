// CUDA emission of a planned training step (docs/cuda.md).
//
// Every tensor is `arena + offset` in the one device allocation (offsets from
// graphc-plan-memory); kernels get the arena pointer and bake offsets and sizes in as literals, so
// the step allocates nothing and can be captured into a CUDA graph. Per op:
//  - elementwise ops (add, activations and their backward ops, optimizer updates, the bias of
//    dense/conv) become nodes of generated kernels; a node joins the kernel of the node before
//    it when the two are adjacent in the planned order, consume one another's result, have the
//    same element count and the planned bytes make it safe (fuseHazard), so a chain such as
//    bias + relu or relu_backward + ... runs as one kernel and its intermediates stay in
//    registers;
//  - reductions and the other backward ops (bias_grad, softmax, the loss and its gradient,
//    max-pool backward, batch and layer norm and their backward ops, average pooling and its
//    backward) get one generated kernel each, written without shared memory or atomics (one
//    thread per output row/channel/element, the CPU kernel's summation order), which keeps them
//    deterministic, lets the host shim run them and makes them match the CPU target bit for bit;
//  - dropout is an elementwise node whose mask comes from dropout_mask.h, shared with the CPU;
//  - dense/matmul/batch_matmul call cuBLAS, convolutions and max pooling forward call cuDNN
//    (descriptors and algorithms are made at start-up by the runtime from the ConvSpec/PoolSpec
//    tables emitted here, under each op's planned workspace).
// Under GRAPHC_HOST_SHIM each library call is replaced by the CPU runtime's kernel on the same
// offsets, so the CPU-only CI can train with the generated kernels and compare with the CPU
// target.
#include "targets/cuda/EmitCuda.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>

#include "flatbuffers/flatbuffers.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include "dialects/graph/GraphOps.h"
#include "graphc/runtime/program.h"
#include "graphc/runtime/program_generated.h"
#include "passes/Liveness.h"
#include "passes/MemoryPlan.h"
#include "targets/EmitSupport.h"

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

namespace {

/// The 16-bit storage formats of --precision=bf16|fp16 (runtime/cuda/half.h).
enum class HalfStorage { BF16, F16 };

constexpr uint32_t kDescriptorVersion = 1; // runtime/cuda descriptor.h kProgramDescriptorVersion
constexpr int64_t kThreads = 256; // also a block kernel's threads, GRAPHC_BLOCK_SIZE (step.h)
constexpr int64_t kRowsPerBlock = kThreads / 32; // a warp-per-row kernel's rows at a time
// Layer-norm rows at least this wide get a block of threads each instead of a warp: a group
// norm's rows (C / G channels times the image: 40960 floats at 64x64 with 10 channels a group)
// are few and long, and a warp per row would leave most of the GPU idle and each lane 1280
// elements to walk. A block's 256 threads then own 16 or more elements each.
constexpr int64_t kBlockRowWidth = 4096;
constexpr int64_t kMaxBlocks = 4096;

int64_t blocksFor(int64_t work) {
  return std::max<int64_t>(1, std::min(kMaxBlocks, (work + kThreads - 1) / kThreads));
}

std::string list(ArrayRef<int64_t> values) {
  std::string s;
  for (auto [i, v] : llvm::enumerate(values))
    s += (i ? ", " : "") + std::to_string(v);
  return s;
}

std::string floatLiteral(float f) {
  if (std::isinf(f))
    return f > 0 ? "INFINITY" : "(-INFINITY)";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.9g", f);
  std::string s = buffer;
  if (s.find_first_of(".en") == std::string::npos)
    s += ".0";
  return "(" + s + "f)";
}
std::string doubleLiteral(double d) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", d);
  std::string s = buffer;
  if (s.find_first_of(".en") == std::string::npos)
    s += ".0";
  return "(" + s + ")";
}
/// The double a user meant by a float hyperparameter (runtime/kernels.cpp's intendedDouble).
double intendedDouble(float f) {
  if (!std::isfinite(f))
    return f;
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf) - 1, f);
  if (res.ec != std::errc())
    return f;
  *res.ptr = '\0';
  return std::strtod(buf, nullptr);
}
float attrFloat(APFloat v) { return v.convertToFloat(); }

/// One operand of an elementwise node: the whole tensor at element i, a per-channel vector at
/// (i / inner) % channels (a bias), or a scalar.
struct EwIn {
  Value v;
  enum Mode { Full, Channel, Scalar } mode = Full;
  int64_t channels = 1, inner = 1;
  bool raw = false; // read the value's bytes even if a node of the kernel defines it (the bias
                    // epilogue reads the GEMM/convolution output in place)
};

/// An elementwise op (or the bias epilogue of dense/conv2d) as a kernel node.
struct EwNode {
  Operation *op;
  std::string label;
  int64_t n;
  SmallVector<EwIn, 4> ins;
  SmallVector<Value, 3> outs;
  /// Code before the element loop (per-step scalars); `k` makes its names unique.
  std::function<std::string(const std::string &k)> prologue;
  /// Statements computing the outputs `out[j]` (declared `float out[j] = ...;`) from `in[j]`.
  std::function<std::string(ArrayRef<std::string> in, ArrayRef<std::string> out,
                            const std::string &k)>
      code;
};

struct Item {
  bool isEw = false;
  EwNode ew;
  std::string code; // step code of a non-elementwise op
  int64_t step = 0;
};

class CudaEmitter {
public:
  CudaEmitter(func::FuncOp func, const EmitOptions &options, EmittedProgram &out)
      : func(func), options(options), out(out) {}

  LogicalResult run() {
    if (!func->hasAttr(kArenaBytesAttr))
      return func.emitError("the CUDA emitter needs a planned function (run graphc-plan-memory)");
    int64_t step = 0;
    for (Operation &op : func.getBody().front().without_terminator()) {
      for (Value r : op.getResults())
        if (plannedOffset(r) < 0)
          return op.emitError("result has no planned offset");
      currentStep = step++;
      // A gradient all-reduce runs on the communication stream from its op to the first op that
      // reads its result (through reshape views), which waits for it: the backward ops in
      // between overlap it (EmitSupport.h's InFlightCollectives, with events as the waits).
      if (auto reduce = dyn_cast<AllReduceOp>(&op)) {
        if (failed(allReduceStart(reduce)))
          return failure();
        continue;
      }
      if (auto scatter = dyn_cast<ReduceScatterOp>(&op)) {
        if (failed(reduceScatterStart(scatter)))
          return failure();
        continue;
      }
      collectives.beforeOp(&op, [&](Operation *collective) { emitWait(collective); });
      if (failed(emitOp(&op)))
        return failure();
    }
    // Nothing read it: still join it within the step (a captured CUDA graph must end with every
    // forked stream joined back into the compute stream).
    collectives.finish([&](Operation *collective) { emitWait(collective); });
    if (failed(collectTensors()))
      return failure();
    std::string body = renderItems();
    writeFile(body);
    return success();
  }

private:
  // ---------------------------------------------------------------- operands and labels

  static std::string f32(int64_t offset) { return "F32(" + std::to_string(offset) + ")"; }
  /// The 16-bit storage format of `v` (--precision=bf16|fp16), or nullopt.
  static std::optional<HalfStorage> halfStorageOf(Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return std::nullopt;
    if (type.getElementType().isBF16())
      return HalfStorage::BF16;
    if (type.getElementType().isF16())
      return HalfStorage::F16;
    return std::nullopt;
  }
  /// The device pointer of `v`, typed by its storage (float, or half.h's Bf16 or F16): in the
  /// arena, or for optimizer state kept in host memory (graphc --offload; read only by update
  /// kernels) in the mapped host arena.
  std::string ptr(Value v) {
    int64_t offset = plannedOffset(v);
    int64_t arena = func->getAttrOfType<IntegerAttr>(kArenaBytesAttr).getInt();
    if (hostArenaBytes(func) > 0 && offset >= arena)
      return "HF32(" + std::to_string(offset - arena) + ")";
    if (auto half = halfStorageOf(v)) {
      usesHalf = true;
      return (*half == HalfStorage::BF16 ? "BF16(" : "F16(") + std::to_string(offset) + ")";
    }
    return f32(offset);
  }
  static uint64_t elementBytes(Value v) { return halfStorageOf(v) ? 2 : 4; }
  /// The C++ type of one element of `v` in the generated code.
  static std::string elementType(Value v) {
    auto half = halfStorageOf(v);
    return !half                        ? "float"
           : *half == HalfStorage::BF16 ? "::graphc::rt::cuda::Bf16"
                                        : "::graphc::rt::cuda::F16";
  }
  /// `v` as the f32 pointer a CPU kernel takes in the host build: the pointer itself for a float
  /// tensor, else a widened copy that an output (`output`) rounds back after the call
  /// (step.h: F32In, F32Out).
  std::string hostPtr(Value v, bool output = false) {
    if (!halfStorageOf(v))
      return ptr(v);
    return std::string("::graphc::rt::cuda::") + (output ? "F32Out(" : "F32In(") + ptr(v) + ", " +
           std::to_string(tensorElements(v)) + ")";
  }
  std::string label(Operation *op) {
    std::string s;
    if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      s = name.getName().str();
    else
      s = op->getName().stripDialect().str() + "@" + std::to_string(currentStep);
    return s;
  }
  /// A C string naming the op in status checks: "op 'fc1' (graph.dense, step 3)".
  std::string opRef(Operation *op) {
    return cppString("op '" + label(op) + "' (" + op->getName().getStringRef().str() + ", step " +
                     std::to_string(currentStep) + ")");
  }
  std::string workspace(Operation *op) {
    return f32(op->getAttrOfType<IntegerAttr>(kWorkspaceOffsetAttr).getInt());
  }
  std::string kernelName(StringRef what) {
    return ("graphc_" + what + "_" + std::to_string(kernelCount++)).str();
  }

  void addCode(std::string code) {
    Item item;
    item.code = std::move(code);
    item.step = currentStep;
    items.push_back(std::move(item));
  }
  void addEw(EwNode node) {
    Item item;
    item.isEw = true;
    item.ew = std::move(node);
    item.step = currentStep;
    items.push_back(std::move(item));
  }
  /// A launch of a dedicated kernel over `work` threads.
  std::string launch(const std::string &kernel, int64_t work, Operation *op) {
    return "  GRAPHC_LAUNCH(" + kernel + ", " + std::to_string(blocksFor(work)) + ", " +
           std::to_string(kThreads) + ", " + opRef(op) + ", arena);\n";
  }
  static std::string hostOrDevice(const std::string &host, const std::string &device) {
    return "#ifdef GRAPHC_HOST_SHIM\n" + host + "#else\n" + device + "#endif\n";
  }
  /// A grid-stride loop of `var` over [0, bound).
  static std::string gridLoop(const char *var, const std::string &bound) {
    return std::string("  for (int64_t ") + var +
           " = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; " + var + " < " + bound + "; " +
           var + " += int64_t(blockDim.x) * gridDim.x) {\n";
  }

  // ---------------------------------------------------------------- elementwise nodes

  EwNode unaryNode(Operation *op, Value x, Value y, std::function<std::string(const std::string &)> f) {
    EwNode n;
    n.op = op;
    n.label = label(op);
    n.n = tensorElements(y);
    n.ins.push_back({x});
    n.outs.push_back(y);
    n.code = [f](ArrayRef<std::string> in, ArrayRef<std::string> o, const std::string &) {
      return "      const float " + o[0] + " = " + f(in[0]) + ";\n";
    };
    return n;
  }
  EwNode binaryNode(Operation *op, Value a, Value b, Value y,
                    std::function<std::string(const std::string &, const std::string &)> f) {
    EwNode n;
    n.op = op;
    n.label = label(op);
    n.n = tensorElements(y);
    n.ins.push_back({a});
    n.ins.push_back({b});
    n.outs.push_back(y);
    n.code = [f](ArrayRef<std::string> in, ArrayRef<std::string> o, const std::string &) {
      return "      const float " + o[0] + " = " + f(in[0], in[1]) + ";\n";
    };
    return n;
  }
  /// y (already holding x*W or the convolution) += bias[(i / inner) % channels].
  EwNode biasNode(Operation *op, Value y, Value bias, int64_t channels, int64_t inner) {
    EwNode n;
    n.op = op;
    n.label = label(op) + " bias";
    n.n = tensorElements(y);
    EwIn acc{y};
    acc.raw = true;
    EwIn b{bias, EwIn::Channel, channels, inner};
    n.ins.push_back(acc);
    n.ins.push_back(b);
    n.outs.push_back(y);
    n.code = [](ArrayRef<std::string> in, ArrayRef<std::string> o, const std::string &) {
      return "      const float " + o[0] + " = " + in[0] + " + " + in[1] + ";\n";
    };
    return n;
  }

  /// A 16-bit dense or convolution output with a bias is rounded once, as the CPU target
  /// (and PyTorch's addmm) do: this node first writes the bias into every row of y, then the
  /// product accumulates onto it in float (beta = 1) and stores once. Returns the bias when it
  /// did so, or null (no bias, or an f32 output: its bias node adds after the product).
  Value prefillBias(Operation *op, Value y, Value bias, int64_t channels, int64_t inner) {
    if (!bias || !halfStorageOf(y))
      return Value();
    EwNode n;
    n.op = op;
    n.label = label(op) + " bias";
    n.n = tensorElements(y);
    n.ins.push_back(EwIn{bias, EwIn::Channel, channels, inner});
    n.outs.push_back(y);
    n.code = [](ArrayRef<std::string> in, ArrayRef<std::string> o, const std::string &) {
      return "      const float " + o[0] + " = " + in[0] + ";\n";
    };
    addEw(std::move(n));
    return bias;
  }

  // ---------------------------------------------------------------- ops

  LogicalResult emitOp(Operation *op) {
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](DenseOp d) {
          auto xs = tensorDims(d.getInput());
          int64_t out = tensorDims(d.getResult())[1];
          Value prefilled = prefillBias(op, d.getResult(), d.getBias(), out, 1);
          auto code =
              gemm(op, d.getInput(), d.getWeight(), d.getResult(), xs[0], out, xs[1], false,
                   d.getTransposeWeight(),
                   "  graphc::rt::dense(" + hostPtr(d.getInput()) + ", " + hostPtr(d.getWeight()) +
                       ", " + (prefilled ? hostPtr(prefilled) : "nullptr") + ", " +
                       hostPtr(d.getResult(), true) + ", " + list({xs[0], xs[1], out}) + ", " +
                       (d.getTransposeWeight() ? "true" : "false") + ");\n",
                   1, /*accumulate=*/bool(prefilled));
          if (failed(code))
            return failure();
          addCode(*code);
          if (d.getBias() && !prefilled)
            addEw(biasNode(op, d.getResult(), d.getBias(), out, 1));
          return success();
        })
        .Case([&](MatmulOp m) {
          auto ys = tensorDims(m.getResult()), as = tensorDims(m.getLhs());
          int64_t k = m.getTransposeLhs() ? as[0] : as[1];
          auto code =
              gemm(op, m.getLhs(), m.getRhs(), m.getResult(), ys[0], ys[1], k, m.getTransposeLhs(),
                   m.getTransposeRhs(),
                   "  graphc::rt::matmul(" + hostPtr(m.getLhs()) + ", " + hostPtr(m.getRhs()) +
                       ", " + hostPtr(m.getResult(), true) + ", " + list({ys[0], ys[1], k}) + ", " +
                       (m.getTransposeLhs() ? "true" : "false") + ", " +
                       (m.getTransposeRhs() ? "true" : "false") + ");\n");
          if (failed(code))
            return failure();
          addCode(*code);
          return success();
        })
        .Case([&](BatchMatmulOp m) {
          auto ys = tensorDims(m.getResult()), as = tensorDims(m.getLhs());
          int64_t k = m.getTransposeLhs() ? as[1] : as[2];
          auto code =
              gemm(op, m.getLhs(), m.getRhs(), m.getResult(), ys[1], ys[2], k, m.getTransposeLhs(),
                   m.getTransposeRhs(),
                   "  graphc::rt::batchMatmul(" + hostPtr(m.getLhs()) + ", " + hostPtr(m.getRhs()) +
                       ", " + hostPtr(m.getResult(), true) + ", " + list({ys[0], ys[1], ys[2], k}) +
                       ", " + (m.getTransposeLhs() ? "true" : "false") + ", " +
                       (m.getTransposeRhs() ? "true" : "false") + ");\n",
                   ys[0]);
          if (failed(code))
            return failure();
          addCode(*code);
          return success();
        })
        .Case([&](BiasGradOp g) { return biasGrad(g); })
        .Case([&](RankShardOp shard) { return rankShard(shard); })
        .Case([&](AllGatherIntoOp gather) { return allGatherInto(gather); })
        .Case([&](Conv2dOp c) -> LogicalResult {
          auto ys = tensorDims(c.getResult());
          Value prefilled = prefillBias(op, c.getResult(), c.getBias(), ys[1], ys[2] * ys[3]);
          if (failed(conv(op, rt_cuda_forward, c.getInput(), c.getFilter(), c.getResult(),
                          c.getStrides(), c.getPadding(), c.getDilations(),
                          static_cast<int64_t>(c.getGroups()), prefilled)))
            return failure();
          if (c.getBias() && !prefilled)
            addEw(biasNode(op, c.getResult(), c.getBias(), ys[1], ys[2] * ys[3]));
          return success();
        })
        .Case([&](Conv2dBackwardDataOp c) -> LogicalResult {
          // A transposed convolution's bias, as conv2d's.
          auto xs = tensorDims(c.getResult());
          Value prefilled = prefillBias(op, c.getResult(), c.getBias(), xs[1], xs[2] * xs[3]);
          if (failed(conv(op, rt_cuda_backward_data, c.getResult(), c.getFilter(), c.getGrad(),
                          c.getStrides(), c.getPadding(), c.getDilations(),
                          static_cast<int64_t>(c.getGroups()), prefilled)))
            return failure();
          if (c.getBias() && !prefilled)
            addEw(biasNode(op, c.getResult(), c.getBias(), xs[1], xs[2] * xs[3]));
          return success();
        })
        .Case([&](Conv2dBackwardFilterOp c) {
          return conv(op, rt_cuda_backward_filter, c.getInput(), c.getResult(), c.getGrad(),
                      c.getStrides(), c.getPadding(), c.getDilations(),
                      static_cast<int64_t>(c.getGroups()));
        })
        .Case([&](MaxPool2dOp p) { return maxPool(p); })
        .Case([&](MaxPool2dBackwardOp p) { return maxPoolBackward(p); })
        .Case([&](AvgPool2dOp p) { return avgPool(p); })
        .Case([&](AvgPool2dBackwardOp p) { return avgPoolBackward(p); })
        .Case([&](BatchNormOp bn) { return batchNorm(bn); })
        .Case([&](BatchNormBackwardOp bn) { return batchNormBackward(bn); })
        .Case([&](BatchNormApplyOp bn) { return batchNormApply(bn); })
        .Case([&](LayerNormOp ln) { return layerNorm(ln); })
        .Case([&](LayerNormBackwardOp ln) { return layerNormBackward(ln); })
        .Case([&](RmsNormOp rn) { return rmsNorm(rn); })
        .Case([&](RmsNormBackwardOp rn) { return rmsNormBackward(rn); })
        .Case([&](AttentionOp a) {
          return attention(op, a.getQuery(), a.getKey(), a.getValue(), a.getStep(), a.getScale(),
                           a.getDropoutRatio(), a.getOpId(), a.getIndexOffset(), a.getBias(),
                           a.getBiasFills());
        })
        .Case([&](AttentionBackwardOp a) {
          return attention(op, a.getQuery(), a.getKey(), a.getValue(), a.getStep(), a.getScale(),
                           a.getDropoutRatio(), a.getOpId(), a.getIndexOffset(), a.getBias(),
                           a.getBiasFills());
        })
        .Case([&](DropoutOp d) {
          addEw(dropoutNode(op, d.getInput(), d.getResult(), d.getStep(), d.getRatio(), d.getOpId(),
                            d.getIndexOffset(), d.getMaskRepeat(), d.getMaskInner()));
          return success();
        })
        .Case([&](DropoutBackwardOp d) {
          addEw(dropoutNode(op, d.getGrad(), d.getResult(), d.getStep(), d.getRatio(), d.getOpId(),
                            d.getIndexOffset(), d.getMaskRepeat(), d.getMaskInner()));
          return success();
        })
        .Case([&](RandomAffineOp r) { return randomAffine(r); })
        .Case([&](RandomNormalOp r) {
          const std::string mean = floatLiteral(attrFloat(r.getMean())),
                            scale = floatLiteral(attrFloat(r.getScale()));
          addEw(randomNode(op, r.getResult(), r.getStep(), r.getOpId(), r.getIndexOffset(),
                           [=](const std::string &key, const std::string &index) {
                             return mean + " + " + scale + " * ::graphc::rt::normalDraw(" + key +
                                    ", " + index + ")";
                           }));
          return success();
        })
        .Case([&](RandomUniformOp r) {
          const std::string low = floatLiteral(attrFloat(r.getLow())),
                            width = floatLiteral(attrFloat(r.getHigh()) - attrFloat(r.getLow()));
          addEw(randomNode(
              op, r.getResult(), r.getStep(), r.getOpId(), r.getIndexOffset(),
              [=](const std::string &key, const std::string &index) {
                return low + " + " + width + " * ::graphc::rt::uniformDraw(" + key + ", " + index +
                       ")";
              },
              r.getRepeat()));
          return success();
        })
        .Case([&](BatchSliceOp b) { return batchSlice(b); })
        .Case([&](ReshapeOp r) -> LogicalResult {
          if (plannedOffset(r.getInput()) != plannedOffset(r.getResult()))
            return r.emitError("reshape must be planned as a view of its operand");
          addCode("  // " + label(op) + ": a reshape is a view, no code\n");
          return success();
        })
        .Case([&](AddOp a) {
          addEw(binaryNode(op, a.getLhs(), a.getRhs(), a.getResult(),
                           [](auto &x, auto &y) { return x + " + " + y; }));
          return success();
        })
        .Case([&](MulOp m) {
          addEw(binaryNode(op, m.getLhs(), m.getRhs(), m.getResult(),
                           [](auto &x, auto &y) { return x + " * " + y; }));
          return success();
        })
        .Case([&](RotaryOp ro) { return rotary(ro); })
        .Case([&](BroadcastMulOp m) {
          // The factor read at i % N (a per-channel operand with inner size 1).
          EwNode n = binaryNode(op, m.getLhs(), m.getRhs(), m.getResult(),
                                [](auto &x, auto &y) { return x + " * " + y; });
          n.ins[1] = EwIn{m.getRhs(), EwIn::Channel, tensorElements(m.getRhs()), 1};
          addEw(std::move(n));
          return success();
        })
        .Case([&](ScaleOp sc) {
          std::string factor = floatLiteral(attrFloat(sc.getFactor())),
                      offset = floatLiteral(attrFloat(sc.getOffset()));
          addEw(unaryNode(op, sc.getInput(), sc.getResult(), [=](auto &x) {
            return factor + " * " + x + " + " + offset;
          }));
          return success();
        })
        .Case([&](ClipOp c) {
          // NaN passes through (both comparisons are false), as the CPU kernel's.
          std::string lo = floatLiteral(attrFloat(c.getMin())), hi = floatLiteral(attrFloat(c.getMax()));
          addEw(unaryNode(op, c.getInput(), c.getResult(), [=](auto &x) {
            return x + " < " + lo + " ? " + lo + " : (" + x + " > " + hi + " ? " + hi + " : " + x + ")";
          }));
          return success();
        })
        .Case([&](ClipBackwardOp c) {
          std::string lo = floatLiteral(attrFloat(c.getMin())), hi = floatLiteral(attrFloat(c.getMax()));
          addEw(binaryNode(op, c.getGrad(), c.getOutput(), c.getResult(), [=](auto &dy, auto &y) {
            return "(" + y + " > " + lo + " && " + y + " < " + hi + ") ? " + dy + " : 0.0f";
          }));
          return success();
        })
        .Case([&](ActivationOp a) {
          std::string kind = runtimeActivationName(a.getKind()),
                      alpha = floatLiteral(attrFloat(a.getAlpha()));
          addEw(unaryNode(op, a.getInput(), a.getResult(), [=](auto &x) {
            return "::graphc::rt::activationValue(" + kind + ", " + alpha + ", " + x + ")";
          }));
          return success();
        })
        .Case([&](ActivationBackwardOp a) {
          std::string kind = runtimeActivationName(a.getKind()),
                      alpha = floatLiteral(attrFloat(a.getAlpha()));
          addEw(binaryNode(op, a.getGrad(), a.getInput(), a.getResult(), [=](auto &dy, auto &x) {
            return dy + " * ::graphc::rt::activationDerivative(" + kind + ", " + alpha + ", " + x + ")";
          }));
          return success();
        })
        .Case([&](LossScaleOp l) {
          // 2^(16 - halvings), or its inverse: exact, as runtime/kernels.cpp's lossScale.
          const bool inverse = l.getInverse();
          EwNode n = unaryNode(op, l.getInput(), l.getResult(), [](auto &x) { return x; });
          n.ins.push_back(EwIn{l.getHalvings(), EwIn::Scalar});
          n.code = [inverse](ArrayRef<std::string> in, ArrayRef<std::string> o,
                             const std::string &) {
            std::string exponent = inverse ? "int(" + in[1] + ") - 16" : "16 - int(" + in[1] + ")";
            return "      const float " + o[0] + " = " + in[0] + " * ldexpf(1.0f, " + exponent +
                   ");\n";
          };
          addEw(std::move(n));
          return success();
        })
        .Case([&](AllFiniteOp a) { return allFinite(a); })
        .Case([&](UpdateLossScaleOp u) { return updateLossScale(u); })
        .Case([&](CastOp c) {
          // The load widens the source's storage to float and the store rounds to the result's
          // (f32, bf16, f16): a cast is the identity in between.
          addEw(unaryNode(op, c.getInput(), c.getResult(), [](auto &x) { return x; }));
          return success();
        })
        .Case([&](FillOp f) { return fill(op, f.getResult(), attrFloat(f.getValue())); })
        .Case([&](SliceOp sl) {
          if (plannedInPlace(sl.getInput(), sl.getResult(), sl.getAxis(), sl.getOffset())) {
            addCode("  // " + label(op) + ": a view of the bucket (graph.bucket_view), no code\n");
            return success();
          }
          return copyAlongAxis(op, sl.getInput(), sl.getResult(), sl.getAxis(), sl.getOffset(),
                               /*intoWhole=*/false);
        })
        .Case([&](ConcatOp c) {
          int64_t offset = 0;
          for (Value in : c.getInputs()) {
            if (plannedInPlace(c.getResult(), in, c.getAxis(), offset))
              addCode("  // " + label(op) +
                      ": an operand planned inside the bucket (graph.bucket_view), no copy\n");
            else if (failed(copyAlongAxis(op, in, c.getResult(), c.getAxis(), offset, true)))
              return failure();
            offset += tensorDims(in)[c.getAxis()];
          }
          return success();
        })
        .Case([&](TransposeOp t) { return transpose(t); })
        .Case([&](EmbeddingOp e) { return embedding(e); })
        .Case([&](EmbeddingBackwardOp e) { return embeddingBackward(e); })
        .Case([&](ReluOp u) {
          addEw(unaryNode(op, u.getInput(), u.getResult(),
                          [](auto &x) { return x + " < 0.0f ? 0.0f : " + x; }));
          return success();
        })
        .Case([&](SigmoidOp u) {
          addEw(unaryNode(op, u.getInput(), u.getResult(), [](auto &x) {
            return "::graphc::rt::cuda::sigmoidStable(" + x + ")";
          }));
          return success();
        })
        .Case([&](TanhOp u) {
          addEw(unaryNode(op, u.getInput(), u.getResult(),
                          [](auto &x) { return "tanhf(" + x + ")"; }));
          return success();
        })
        .Case([&](ReluBackwardOp u) {
          addEw(binaryNode(op, u.getGrad(), u.getOutput(), u.getResult(), [](auto &dy, auto &y) {
            return y + " > 0.0f ? " + dy + " : 0.0f";
          }));
          return success();
        })
        .Case([&](SigmoidBackwardOp u) {
          addEw(binaryNode(op, u.getGrad(), u.getOutput(), u.getResult(), [](auto &dy, auto &y) {
            return dy + " * " + y + " * (1.0f - " + y + ")";
          }));
          return success();
        })
        .Case([&](TanhBackwardOp u) {
          addEw(binaryNode(op, u.getGrad(), u.getOutput(), u.getResult(), [](auto &dy, auto &y) {
            return dy + " * (1.0f - " + y + " * " + y + ")";
          }));
          return success();
        })
        .Case([&](SoftmaxOp u) {
          return softmax(op, u.getInput(), Value(), u.getResult(), u.getAxis(), u.getCausal());
        })
        .Case([&](SoftmaxBackwardOp u) {
          return softmax(op, u.getGrad(), u.getOutput(), u.getResult(), u.getAxis());
        })
        .Case([&](LossOp l) { return lossForward(l); })
        .Case([&](LossBackwardOp l) { return lossBackward(l); })
        .Case([&](SgdUpdateOp u) {
          std::string alpha = floatLiteral(-attrFloat(u.getLr()));
          addEw(guardUpdate(
              binaryNode(op, u.getParam(), u.getGrad(), u.getResult(),
                         [alpha](auto &p, auto &g) { return p + " + " + alpha + " * " + g; }),
              u.getApply(), {0}));
          return success();
        })
        .Case([&](MomentumUpdateOp u) {
          EwNode n;
          n.op = op;
          n.label = label(op);
          n.n = tensorElements(u.getParam());
          n.ins = {{u.getParam()}, {u.getGrad()}, {u.getVelocity()}};
          n.outs = {op->getResult(0), op->getResult(1)};
          std::string alpha = floatLiteral(-attrFloat(u.getLr()));
          std::string mom = floatLiteral(attrFloat(u.getMomentum()));
          n.code = [alpha, mom](ArrayRef<std::string> in, ArrayRef<std::string> o,
                                const std::string &) {
            // PyTorch: buf.mul_(momentum).add_(grad); param.add_(buf, alpha=-lr)
            return "      const float " + o[1] + " = " + in[2] + " * " + mom + " + " + in[1] +
                   ";\n      const float " + o[0] + " = " + in[0] + " + " + alpha + " * " + o[1] +
                   ";\n";
          };
          addEw(guardUpdate(std::move(n), u.getApply(), {0, 2}));
          return success();
        })
        .Case([&](AdamUpdateOp u) {
          EwNode n;
          n.op = op;
          n.label = label(op);
          n.n = tensorElements(u.getParam());
          n.ins = {{u.getParam()}, {u.getGrad()}, {u.getM()}, {u.getV()}};
          n.outs = {op->getResult(0), op->getResult(1), op->getResult(2)};
          const float lr = attrFloat(u.getLr()), b1 = attrFloat(u.getBeta1()),
                      b2 = attrFloat(u.getBeta2()), eps = attrFloat(u.getEpsilon());
          const std::string stepPtr = ptr(u.getStep());
          n.prologue = [=](const std::string &k) {
            // Scalars in double as PyTorch's Python side computes them (runtime/kernels.cpp).
            return "  const double bc1_" + k + " = 1.0 - pow(" + doubleLiteral(intendedDouble(b1)) +
                   ", static_cast<double>(" + stepPtr + "[0]));\n  const double bc2_" + k +
                   " = 1.0 - pow(" + doubleLiteral(intendedDouble(b2)) + ", static_cast<double>(" +
                   stepPtr + "[0]));\n  const float negStepSize_" + k + " = static_cast<float>(-(" +
                   doubleLiteral(intendedDouble(lr)) + " / bc1_" + k + "));\n  const float bc2Sqrt_" +
                   k + " = static_cast<float>(sqrt(bc2_" + k + "));\n";
          };
          const std::string fb1 = floatLiteral(b1), fb2 = floatLiteral(b2),
                            omb1 = floatLiteral(static_cast<float>(1.0 - intendedDouble(b1))),
                            omb2 = floatLiteral(static_cast<float>(1.0 - intendedDouble(b2))),
                            feps = floatLiteral(eps);
          n.code = [=](ArrayRef<std::string> in, ArrayRef<std::string> o, const std::string &k) {
            return "      const float " + o[1] + " = " + in[2] + " * " + fb1 + " + " + omb1 +
                   " * " + in[1] + ";\n      const float " + o[2] + " = " + in[3] + " * " + fb2 +
                   " + " + omb2 + " * " + in[1] + " * " + in[1] + ";\n      const float denom_" +
                   k + " = sqrtf(" + o[2] + ") / bc2Sqrt_" + k + " + " + feps +
                   ";\n      const float " + o[0] + " = " + in[0] + " + negStepSize_" + k + " * " +
                   o[1] + " / denom_" + k + ";\n";
          };
          addEw(guardUpdate(std::move(n), u.getApply(), {0, 2, 3}));
          return success();
        })
        .Default([&](Operation *other) {
          return other->emitError()
                 << "'" << other->getName()
                 << "' is not supported on --target=cuda yet (the CUDA target covers dense, "
                    "matmul, batch_matmul, bias_grad, conv2d and its backward ops, max_pool2d, "
                    "avg_pool2d, batch_norm, layer_norm, rms_norm, dropout and their backward ops, "
                    "batch_norm_apply, reshape, transpose, slice, batch_slice, concat, fill, "
                    "add, mul, broadcast_mul, rotary, scale, "
                    "clip, relu/sigmoid/tanh/softmax and the other activations and their "
                    "backward ops, embedding and its backward, the losses and the "
                    "sgd/momentum/adam updates; use --target=cpu)";
        });
  }

  // ---------------------------------------------------------------- dynamic loss scaling

  /// An optimizer update skipped when its `apply` flag (graph.all_finite's result) is 0: every
  /// output keeps the input it overwrites in place (`kept[j]` for output j), which is the CPU
  /// target's skipped call. Without a flag the node is unchanged.
  EwNode guardUpdate(EwNode node, Value apply, SmallVector<unsigned, 3> kept) {
    if (!apply)
      return node;
    const size_t flag = node.ins.size();
    node.ins.push_back(EwIn{apply, EwIn::Scalar});
    auto update = node.code;
    node.code = [update, flag, kept](ArrayRef<std::string> in, ArrayRef<std::string> o,
                                     const std::string &k) {
      SmallVector<std::string, 3> updated;
      for (const std::string &name : o)
        updated.push_back(name + "u");
      std::string code = update(in.take_front(flag), updated, k);
      for (auto [j, name] : llvm::enumerate(o))
        code += "      const float " + name + " = " + in[flag] + " != 0.0f ? " + updated[j] +
                " : " + in[kept[j]] + ";\n";
      return code;
    };
    return node;
  }

  /// graph.all_finite: the flag is set to 1, then every thread that reads a NaN or an infinity
  /// in any operand (one thread per element of their concatenation) writes 0. Concurrent
  /// writers all write 0, so the result is deterministic without atomics.
  LogicalResult allFinite(AllFiniteOp a) {
    Operation *op = a;
    const std::string flag = ptr(a.getResult());
    std::string set = kernelName("all_finite_set");
    kernels += "// " + label(op) + ": the overflow flag starts at 1\n__global__ void " + set +
               "(unsigned char *arena) {\n  if (blockIdx.x == 0 && threadIdx.x == 0)\n    " + flag +
               "[0] = 1.0f;\n}\n\n";
    int64_t total = 0;
    std::string chain;
    for (Value in : a.getInputs()) {
      const int64_t n = tensorElements(in);
      chain += "    " + std::string(total ? "else " : "") + "if (e < " + num(total + n) +
               ")\n      v = " + ptr(in) + "[e - " + num(total) + "];\n";
      total += n;
    }
    std::string k = kernelName("all_finite");
    kernels += "// " + label(op) + ": 0 when a gradient overflowed\n__global__ void " + k +
               "(unsigned char *arena) {\n" + gridLoop("e", num(total)) + "    float v = 0.0f;\n" +
               chain +
               "    if (::graphc::rt::cuda::isNaN(v) || ::graphc::rt::cuda::isInf(v))\n      " +
               flag + "[0] = 0.0f;\n  }\n}\n\n";
    addCode(launch(set, 1, op) + launch(k, std::max<int64_t>(total, 1), op));
    return success();
  }

  /// graph.update_loss_scale, in place on its state by one thread: runtime/kernels.cpp's
  /// updateLossScale (PyTorch's GradScaler with factors of 2).
  LogicalResult updateLossScale(UpdateLossScaleOp u) {
    Operation *op = u;
    if (plannedOffset(u.getNewHalvings()) != plannedOffset(u.getHalvings()) ||
        plannedOffset(u.getNewCleanSteps()) != plannedOffset(u.getCleanSteps()) ||
        plannedOffset(u.getNewSkippedSteps()) != plannedOffset(u.getSkippedSteps()))
      return u.emitError("update_loss_scale must be planned in place on its state");
    std::string k = kernelName("update_loss_scale");
    kernels += "// " + label(op) + ": halve the loss scale on overflow, double it after " +
               num(u.getGrowthInterval()) + " clean steps\n__global__ void " + k +
               "(unsigned char *arena) {\n  if (blockIdx.x != 0 || threadIdx.x != 0)\n    return;\n"
               "  float *halvings = " +
               ptr(u.getHalvings()) + ", *clean = " + ptr(u.getCleanSteps()) +
               ", *skipped = " + ptr(u.getSkippedSteps()) + ";\n  if (" + ptr(u.getFinite()) +
               "[0] == 0.0f) {\n    *halvings += 1.0f;\n    *clean = 0.0f;\n    *skipped += 1.0f;\n"
               "    return;\n  }\n  *clean += 1.0f;\n  if (*clean >= " +
               floatLiteral(static_cast<float>(u.getGrowthInterval())) +
               ") {\n    *halvings = *halvings - 1.0f < -8.0f ? -8.0f : *halvings - 1.0f;\n"
               "    *clean = 0.0f;\n  }\n}\n\n";
    addCode(launch(k, 1, op));
    return success();
  }

  // ---------------------------------------------------------------- gradient all-reduce

  /// Starts averaging the bucket over the ranks: NCCL in place (ncclAvg, float32) on the
  /// communication stream after the compute stream's work so far (an event fork); the host build
  /// maps it to the CPU target's MPI backend (graphc/runtime/cuda/comm_nccl.h).
  LogicalResult allReduceStart(AllReduceOp reduce) {
    const int64_t count = tensorElements(reduce.getInput());
    return startCollective(reduce, reduce.getBucket(), reduce.getInput(), reduce.getResult(),
                           ": average gradient bucket " + std::to_string(reduce.getBucket()) +
                               " (" + std::to_string(count) +
                               " floats) over the ranks on the communication stream",
                           "allReduceMeanStart", count,
                           "graph.all_reduce must be planned in place (its result at its "
                           "operand's offset)");
  }
  /// ZeRO-1: this rank's averaged shard of a gradient bucket, in place at the bucket's start
  /// (comm_nccl.h: ncclReduceScatter on the communication stream, then the slice's copy).
  LogicalResult reduceScatterStart(ReduceScatterOp scatter) {
    const int64_t count = tensorElements(scatter.getResult());
    return startCollective(scatter, scatter.getBucket(), scatter.getInput(), scatter.getResult(),
                           ": this rank's shard of the mean of gradient bucket " +
                               std::to_string(scatter.getBucket()) + " (" +
                               std::to_string(count) +
                               " floats per rank) on the communication stream",
                           "reduceScatterMeanStart", count,
                           "graph.reduce_scatter must be planned in place (its shard at its "
                           "bucket's offset)");
  }
  /// The fork of a bucket's collective, run until the first reader of its result (emitWait):
  /// the call `call(bucket, input, count, ctx)` after a comment naming the op.
  LogicalResult startCollective(Operation *op, int64_t bucket, Value input, Value result,
                                const std::string &comment, const char *call, int64_t count,
                                const char *notInPlace) {
    if (plannedOffset(input) != plannedOffset(result))
      return op->emitError(notInPlace);
    allReduceBuckets = std::max<int64_t>(allReduceBuckets, bucket + 1);
    addCode("  // " + label(op) + comment + "\n  ::graphc::rt::cuda::" + call + "(" +
            std::to_string(bucket) + ", " + ptr(input) + ", " + std::to_string(count) +
            ", ctx);\n");
    collectives.started(op);
    return success();
  }
  /// The join of a collective started above (graph.all_reduce or graph.reduce_scatter), before
  /// the first op reading its result: the compute stream waits for the bucket's "done" event
  /// (an event join). Nothing blocks the host.
  void emitWait(Operation *collective) {
    const int64_t bucket = collective->getAttrOfType<IntegerAttr>("bucket").getInt();
    Value result = collective->getResult(0);
    addCode("  // the compute stream waits for gradient bucket " + std::to_string(bucket) + " (" +
            label(collective) + ")\n" + "  ::graphc::rt::cuda::" +
            (isa<AllReduceOp>(collective) ? "allReduceMeanWait(" : "reduceScatterMeanWait(") +
            std::to_string(bucket) + ", " + ptr(result) + ", " +
            std::to_string(tensorElements(result)) + ", ctx);\n");
  }

  /// graph.rank_shard: elements [rank S, (rank + 1) S) of the inputs' flat concatenation, zero
  /// past its end; one thread per shard element, the rank a kernel argument (the process's,
  /// ::graphc::rt::commRank(), fixed for the job, so a captured graph may keep it).
  LogicalResult rankShard(RankShardOp shard) {
    Operation *op = shard;
    const int64_t count = tensorElements(shard.getResult());
    std::string k = kernelName("rank_shard");
    std::string body = "    int64_t g = rank * " + num(count) + " + e;\n    float v = 0.0f;\n";
    std::string chain;
    for (auto [in, start] :
         llvm::zip(shard.getInputs(), layoutStarts(shard.getInputs(), shard.getStarts()))) {
      const int64_t n = tensorElements(in);
      chain += "    if (g >= " + num(start) + " && g < " + num(start + n) +
               ")\n      v = " + ptr(in) + "[g - " + num(start) + "];\n";
    }
    kernels += "// " + label(op) +
               ": this rank's shard of the parameters' concatenation\n"
               "__global__ void " +
               k + "(unsigned char *arena, int64_t rank) {\n" + gridLoop("e", num(count)) + body +
               chain + "    " + ptr(shard.getResult()) + "[e] = v;\n  }\n}\n\n";
    addCode("  GRAPHC_LAUNCH(" + k + ", " + num(blocksFor(count)) + ", " + num(kThreads) + ", " +
            opRef(op) + ", arena, int64_t(::graphc::rt::commRank()));\n");
    return success();
  }

  /// graph.all_gather_into: every rank's shard into the op's workspace (ncclAllGather), then
  /// the concatenation back over the parameters, one thread per element.
  LogicalResult allGatherInto(AllGatherIntoOp gather) {
    Operation *op = gather;
    if (!op->hasAttr(kWorkspaceOffsetAttr))
      return op->emitError("graph.all_gather_into without a planned workspace");
    const int64_t shardCount = tensorElements(gather.getShard());
    int64_t total = 0; // the layout's end
    std::string chain;
    for (auto [param, out, start] :
         llvm::zip(gather.getParams(), gather.getNewParams(),
                   layoutStarts(gather.getParams(), gather.getStarts()))) {
      if (plannedOffset(param) != plannedOffset(out))
        return op->emitError("graph.all_gather_into must write its parameters in place");
      const int64_t n = tensorElements(out);
      chain += "    if (e >= " + num(start) + " && e < " + num(start + n) + ")\n      " + ptr(out) +
               "[e - " + num(start) + "] = gathered[e];\n";
      total = start + n;
    }
    std::string k = kernelName("scatter_gathered");
    kernels += "// " + label(op) + ": the gathered parameters back in place\n__global__ void " + k +
               "(unsigned char *arena) {\n  const float *gathered = " + workspace(op) + ";\n" +
               gridLoop("e", num(total)) + chain + "  }\n}\n\n";
    addCode("  // " + label(op) +
            ": every rank's updated shard, in rank order\n"
            "  ::graphc::rt::cuda::allGather(" +
            num(gather.getBucket()) + ", " + ptr(gather.getShard()) + ", " + workspace(op) + ", " +
            num(shardCount) + ", ctx);\n" + launch(k, total, op));
    return success();
  }

  // Direction tags for conv(); plain ints so that the emitter does not need the runtime header.
  static constexpr int rt_cuda_forward = 0, rt_cuda_backward_data = 1, rt_cuda_backward_filter = 2;

  /// C[m,n] = op(A)[m,k] op(B)[k,n] row-major with cuBLAS (column-major): C^T = op(B)^T op(A)^T.
  /// With batch > 1, `batch` such products of consecutive [m,k], [k,n] and [m,n] matrices in
  /// one strided-batched call (no workspace either: cublasSetWorkspace(nullptr, 0)). Float
  /// tensors go to cublasSgemm; 16-bit ones (all three the same storage) to cublasGemmEx with
  /// float accumulation (CUBLAS_COMPUTE_32F), which may use the tensor cores.
  FailureOr<std::string> gemm(Operation *op, Value a, Value b, Value c, int64_t m, int64_t n,
                              int64_t k, bool transA, bool transB, const std::string &host,
                              int64_t batch = 1, bool accumulate = false) {
    auto half = halfStorageOf(c);
    if (halfStorageOf(a) != half || halfStorageOf(b) != half)
      return op->emitError("a matrix product whose operands and result are not all f32, all "
                           "bf16 or all f16 is not supported on --target=cuda; use --target=cpu");
    ++cublasCalls;
    const bool batched = batch > 1;
    std::string call = batched ? "cublasSgemmStridedBatched" : "cublasSgemm";
    std::string dataType;
    if (half) {
      call = batched ? "cublasGemmStridedBatchedEx" : "cublasGemmEx";
      dataType = *half == HalfStorage::BF16 ? ", CUDA_R_16BF" : ", CUDA_R_16F";
    }
    auto stride = [&](int64_t elements) {
      return batched ? ", " + std::to_string(elements) + "ll" : std::string();
    };
    std::string device =
        "  GRAPHC_CUBLAS(" + call + "(ctx->cublas, " + (transB ? "CUBLAS_OP_T" : "CUBLAS_OP_N") +
        ", " + (transA ? "CUBLAS_OP_T" : "CUBLAS_OP_N") + ", " + list({n, m, k}) + ", &kOne, " +
        ptr(b) + dataType + ", " + std::to_string(transB ? k : n) + stride(k * n) + ", " + ptr(a) +
        dataType + ", " + std::to_string(transA ? m : k) + stride(m * k) +
        (accumulate ? ", &kOne, " : ", &kZero, ") + ptr(c) + dataType + ", " + std::to_string(n) +
        stride(m * n) + (batched ? ", " + std::to_string(batch) : std::string()) +
        (half ? ", CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT" : "") + "),\n               \"" + call +
        "\", " + opRef(op) + ");\n";
    return hostOrDevice(host, device);
  }

  /// C_i = alpha op(A_i) op(B_i) + beta C_i for i < batch, the matrices `strideX` floats apart:
  /// one cublasSgemmStridedBatched (row-major through C^T = op(B)^T op(A)^T, as gemm()), or
  /// on the host the CPU's stridedBatchMatmul. Pointers and m, n, k are C++ expressions, so that
  /// a loop over attention's query blocks can offset them.
  std::string stridedGemm(Operation *op, const std::string &a, int64_t strideA,
                          const std::string &b, int64_t strideB, const std::string &c,
                          int64_t strideC, int64_t batch, const std::string &m,
                          const std::string &n, const std::string &k, bool transA, bool transB,
                          const std::string &alpha, const std::string &beta) {
    ++cublasCalls;
    auto ll = [](int64_t v) { return std::to_string(v) + "ll"; };
    std::string host = "    ::graphc::rt::stridedBatchMatmul(" + a + ", " + ll(strideA) + ", " + b +
                       ", " + ll(strideB) + ", " + c + ", " + ll(strideC) + ", " + ll(batch) +
                       ", " + m + ", " + n + ", " + k + ", " + (transA ? "true" : "false") + ", " +
                       (transB ? "true" : "false") + ", " + alpha + ", " + beta + ");\n";
    std::string device =
        "    {\n      const float alpha = " + alpha + ", beta = " + beta +
        ";\n      GRAPHC_CUBLAS(cublasSgemmStridedBatched(ctx->cublas, " +
        (transB ? "CUBLAS_OP_T" : "CUBLAS_OP_N") + ", " + (transA ? "CUBLAS_OP_T" : "CUBLAS_OP_N") +
        ", int(" + n + "), int(" + m + "), int(" + k + "), &alpha, " + b + ", int(" +
        (transB ? k : n) + "), " + ll(strideB) + ", " + a + ", int(" + (transA ? m : k) + "), " +
        ll(strideA) + ", &beta, " + c + ", int(" + n + "), " + ll(strideC) + ", int(" +
        std::to_string(batch) + ")),\n                    \"cublasSgemmStridedBatched\", " +
        opRef(op) + ");\n    }\n";
    return hostOrDevice(host, device);
  }

  /// A warp-per-row block kernel (step.h): warp w of a block owns row g0 + w of `total` rows
  /// and lane t % 32 (`lane`) every 32nd element of it, so a warp reads its row in 128-byte
  /// lines; blocks stride over the rows kRowsPerBlock at a time. Each of `phases` is one
  /// barrier-separated phase of the block's threads, run for rows r < total after `rowDecls`;
  /// `prologue` declares the block-shared arrays in which the phases pass the lanes' partial
  /// results on (row_lanes.h combines them in lane order), and what every thread shares.
  static std::string warpRowKernel(const std::string &name, const std::string &params,
                                   const std::string &comment, const std::string &prologue,
                                   const std::string &total, const std::string &rowDecls,
                                   ArrayRef<std::string> phases) {
    const std::string warps = std::to_string(kRowsPerBlock);
    std::string code = comment + "__global__ void " + name + params + prologue +
                       "  const int64_t total = " + total +
                       ";\n  for (int64_t g0 = int64_t(blockIdx.x) * " + warps +
                       "; g0 < total; g0 += int64_t(gridDim.x) * " + warps + ") {\n";
    for (const std::string &work : phases)
      code += "    GRAPHC_BLOCK_THREADS(t) {\n      const int64_t r = g0 + t / 32;\n"
              "      const int lane = t % 32;\n      if (r < total) {\n" +
              rowDecls + work + "      }\n    }\n";
    return code + "  }\n}\n\n";
  }
  /// A block-per-row kernel (step.h) for rows of at least kBlockRowWidth elements: block b
  /// owns rows b, b + gridDim.x, ... of `total`, and thread t every 256th element of its row
  /// (`t`, read in 1 KiB lines). Each phase runs for the row after `rowDecls`, followed by the
  /// block sums (GRAPHC_BLOCK_SUM: a fixed tree, the same order on the GPU and the host) of
  /// the shared arrays it names, whose totals (element 0) later phases read; `prologue`
  /// declares them.
  static std::string
  blockRowKernel(const std::string &name, const std::string &params, const std::string &comment,
                 const std::string &prologue, const std::string &total, const std::string &rowDecls,
                 ArrayRef<std::pair<std::string, std::vector<std::string>>> phases) {
    std::string code = comment + "__global__ void " + name + params + prologue +
                       "  const int64_t total = " + total +
                       ";\n  for (int64_t r = blockIdx.x; r < total; r += gridDim.x) {\n";
    for (const auto &[work, sums] : phases) {
      code += "    GRAPHC_BLOCK_THREADS(t) {\n" + rowDecls + work + "    }\n";
      for (const std::string &sum : sums)
        code += "    GRAPHC_BLOCK_SUM(" + sum + ")\n";
    }
    return code + "  }\n}\n\n";
  }
  /// How a row kernel of rows `d` wide splits a row: between a warp's 32 lanes (`lane`, the
  /// partial sums added in lane order by row_lanes.h's laneSum), or, from kBlockRowWidth
  /// elements, between a block's 256 threads (`t`, added by GRAPHC_BLOCK_SUM's tree, whose
  /// total is element 0).
  struct RowSplit {
    bool block;
    std::string first, step, per;
    /// The code of the sum of the partial sums in shared array `parts`.
    std::string total(const std::string &parts) const {
      return block ? parts + "[0]" : "::graphc::rt::laneSum(" + parts + " + t - lane)";
    }
    /// The launch's blocks for `rows` rows (at most kMaxBlocks).
    int64_t blocks(int64_t rows) const {
      return block ? std::clamp<int64_t>(rows, 1, kMaxBlocks) : warpRowBlocks(rows);
    }
  };
  static RowSplit rowSplit(int64_t d) {
    if (d >= kBlockRowWidth)
      return {true, "t", "GRAPHC_BLOCK_SIZE", "a block per row"};
    return {false, "lane", "32", "a warp per row"};
  }

  /// The launch of a warp-per-row kernel over `rows` rows (at most kMaxBlocks blocks).
  static int64_t warpRowBlocks(int64_t rows) {
    return std::clamp<int64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock, 1, kMaxBlocks);
  }

  /// graph.attention (forward) or graph.attention_backward, a block of query rows at a time
  /// as the CPU kernels (runtime/lib/kernels.cpp): strided-batched GEMMs over all batch slices
  /// around generated row kernels, a warp per row of the block (a thread per row with
  /// --cuda-row-kernels=thread), calling attention_rows.h's lane functions, so both targets
  /// compute the same probabilities and masks.
  LogicalResult attention(Operation *op, Value q, Value k, Value v, Value step, APFloat scaleAttr,
                          APFloat ratioAttr, uint64_t opId, int64_t indexOffset, Value scoreBias,
                          bool biasFills) {
    if (!op->hasAttr(kWorkspaceOffsetAttr))
      return op->emitError("attention without a planned workspace");
    auto backward = dyn_cast<AttentionBackwardOp>(op);
    auto qs = tensorDims(q), ks = tensorDims(k), vs = tensorDims(v);
    const int64_t B = qs[0], M = qs[1], N = ks[1], D = qs[2], E = vs[2];
    const int64_t block = attentionQueryBlock(op);
    const float ratio = attrFloat(ratioAttr);
    const std::string scale = floatLiteral(attrFloat(scaleAttr)), S = num(B * block * N);
    auto at = [](const std::string &base, int64_t rowWidth) {
      return base + " + i0 * " + std::to_string(rowWidth);
    };
    // Row r of the launch (r < B * rows) is row r % rows of slice r / rows of the block; slices
    // are block * N floats apart in the workspace (the GEMMs' stride), also in a last block of
    // fewer rows, and a slice's rows `cols` apart (the keys the block reaches: all but in a
    // causal block). `first` is the row's first element in the unfused [B, M, N] scores.
    const std::string ws = workspace(op), g = ws + " + " + S;
    const std::string rowOf = "(r / rows) * " + num(block * N) + " + (r % rows) * cols";
    const std::string firstOf =
        "((r / rows) * " + num(M) + " + i0 + r % rows) * " + num(N) + " + " + num(indexOffset);
    // The keys row r sees: 0..i for query i = i0 + r % rows of a causal attention, else all.
    const bool causal = backward ? backward.getCausal() : cast<AttentionOp>(op).getCausal();
    const std::string visible = causal ? "(i0 + r % rows + 1)" : "cols";
    // The bias row of launch row r as the lane functions' last argument (none without a
    // bias): row slice / heads of [batch, N], or that row's query row of [batch, M, N].
    const bool perQuery = scoreBias && tensorDims(scoreBias).size() == 3;
    const std::string biasRow =
        scoreBias ? "((r / rows) / " + num(B / tensorDims(scoreBias)[0]) + ")" : std::string();
    const std::string biasRowPtr =
        scoreBias
            ? ", " + ptr(scoreBias) + " + " +
                  (perQuery ? "(" + biasRow + " * " + num(M) + " + i0 + r % rows)" : biasRow) +
                  " * " + num(N)
            : std::string();
    // The probability rows take the row and whether it fills; the gradient rows take it only
    // when it fills (their dS is 0 where a filled bias is non-zero).
    const std::string bias = biasRowPtr + (biasFills ? ", true" : ""),
                      filledBias = biasFills ? biasRowPtr : std::string();
    const std::string key = ratio > 0.0f ? "key" : "0", dropout = ratio > 0.0f ? "true" : "false",
                      ratioText = floatLiteral(ratio);
    const std::string keyDecl =
        ratio > 0.0f ? "  const uint64_t key = ::graphc::rt::dropoutKey(" +
                           std::to_string(options.dropoutSeed) + "ull, " + std::to_string(opId) +
                           "ull, static_cast<int64_t>(" + ptr(step) + "[0]));\n"
                     : std::string();
    const std::string head = "(unsigned char *arena, int64_t i0, int64_t rows, int64_t cols) {\n";
    std::string kname = kernelName(backward ? "attention_grad_rows" : "attention_rows"), probs;
    std::string rowLaunchArgs;
    if (options.cudaThreadRows) {
      // One thread per row (--cuda-row-kernels=thread, kept to measure the warp kernels
      // against): thread r runs attention_rows.h's whole row, its lanes one after the other.
      const std::string loop = gridLoop("r", "int64_t(" + num(B) + ") * rows") +
                               "    const int64_t row = " + rowOf + ";\n";
      std::string body = "// " + label(op) + ": " + num(N) + " keys per row, a thread per row\n" +
                         "__global__ void " + kname + head + keyDecl + loop +
                         "    const int64_t first = " + firstOf + ";\n";
      if (!backward)
        body += "    ::graphc::rt::attentionProbabilityRow(" + ws + " + row, cols, " + scale +
                ", " + dropout + ", " + key + ", first, " + ratioText + ", " + visible + bias +
                ");\n";
      else
        body += "    ::graphc::rt::attentionGradientRow(" + ws + " + row, " + g + " + row, cols, " +
                dropout + ", " + key + ", first, " + ratioText + filledBias + ");\n";
      kernels += body + "  }\n}\n\n";
      if (backward) { // the undropped probabilities first: the same kernel without dropout
        probs = kernelName("attention_rows");
        kernels += "// " + label(op) + ": the probabilities again\n__global__ void " + probs +
                   head + loop + "    ::graphc::rt::attentionProbabilityRow(" + ws +
                   " + row, cols, " + scale + ", false, 0, 0, 0.0f, " + visible + bias +
                   ");\n  }\n}\n\n";
      }
      rowLaunchArgs = num(blocksFor(B * block)) + ", " + num(kThreads);
    } else {
      // A warp per row (a block kernel, step.h): warp w of a block owns row g0 + w of the
      // launch, lane t % 32 its keys j = lane (mod 32), read in 128-byte lines; each pass of
      // attention_rows.h is a phase, and the lanes' partial maxima and sums meet in shared
      // memory between phases. Blocks stride over the launch's rows, 8 at a time.
      const std::string rowDecls = "        const int64_t row = " + rowOf + ", first = " + firstOf +
                                   ";\n        (void)first;\n";
      const std::string maxShared = "  GRAPHC_BLOCK_SHARED float maxParts[GRAPHC_BLOCK_SIZE];\n",
                        sumShared = "  GRAPHC_BLOCK_SHARED double sumParts[GRAPHC_BLOCK_SIZE];\n";
      const std::string total = "int64_t(" + num(B) + ") * rows";
      auto rowsKernel = [&](const std::string &name, const std::string &comment,
                            ArrayRef<std::string> phases, bool withKey) {
        return warpRowKernel(name, head,
                             "// " + label(op) + ": " + comment + ", " + num(N) +
                                 " keys per row, a warp per row\n",
                             (backward && name == kname ? "" : maxShared) + sumShared +
                                 (withKey ? keyDecl : std::string()),
                             total, rowDecls, phases);
      };
      auto probabilityPhases = [&](bool withDropout) {
        const std::string d = withDropout ? dropout : "false", k = withDropout ? key : "0",
                          ratioHere = withDropout ? ratioText : "0.0f";
        return std::vector<std::string>{
            "        maxParts[t] = ::graphc::rt::attentionScaleMaxLane(" + ws + " + row, cols, " +
                scale + ", lane, " + visible + bias + ");\n",
            "        sumParts[t] = ::graphc::rt::attentionExpSumLane(" + ws +
                " + row, cols, ::graphc::rt::laneMax(maxParts + t - lane), lane);\n",
            "        ::graphc::rt::attentionNormalizeLane(" + ws +
                " + row, cols, static_cast<float>(1.0 / ::graphc::rt::laneSum(sumParts + t - "
                "lane)), lane, " +
                d + ", " + k + ", first, " + ratioHere + ");\n"};
      };
      if (!backward) {
        kernels += rowsKernel(kname, "softmax and dropout of the scores", probabilityPhases(true),
                              ratio > 0.0f);
      } else {
        kernels += rowsKernel(
            kname, "the score gradients",
            {"        sumParts[t] = ::graphc::rt::attentionGradDotLane(" + ws + " + row, " + g +
                 " + row, cols, lane, " + dropout + ", " + key + ", first, " + ratioText + ");\n",
             "        ::graphc::rt::attentionGradApplyLane(" + ws + " + row, " + g +
                 " + row, cols, static_cast<float>(::graphc::rt::laneSum(sumParts + t - lane)), " +
                 "lane, " + dropout + ", " + key + ", first, " + ratioText + filledBias + ");\n"},
            ratio > 0.0f);
        // The undropped probabilities first: the forward's phases without dropout.
        probs = kernelName("attention_rows");
        kernels += rowsKernel(probs, "the probabilities again", probabilityPhases(false), false);
      }
      rowLaunchArgs = num(warpRowBlocks(B * block));
    }
    auto rowLaunch = [&](const std::string &kernel) {
      return "    GRAPHC_LAUNCH" + std::string(options.cudaThreadRows ? "" : "_BLOCKS") + "(" +
             kernel + ", " + rowLaunchArgs + ", " + opRef(op) + ", arena, i0, rows, cols);\n";
    };
    // The blocks as the CPU kernels run them (runtime/lib/kernels.cpp): a causal block reaches
    // `cols` = attentionBlockKeys keys, its rows `cols` apart, and the backward pass runs the
    // blocks in attentionBlockOrder, its first block writing dK and dV.
    const int64_t blocks = (M + block - 1) / block;
    std::string code = "  // " + label(op) + ": " + (backward ? "backward, " : "") + num(B) +
                       " slices, blocks of " + num(block) + " of " + num(M) + " query rows" +
                       (causal ? ", causal" : "") + "\n  for (int64_t n = 0; n < " + num(blocks) +
                       "; ++n) {\n    const int64_t i0 = ::graphc::rt::attentionBlockOrder(" +
                       (causal && backward ? "true" : "false") + ", n, " + num(blocks) + ") * " +
                       num(block) + ";\n    const int64_t rows = " + num(M) + " - i0 < " +
                       num(block) + " ? " + num(M) + " - i0 : " + num(block) +
                       ";\n    const int64_t cols = ::graphc::rt::attentionBlockKeys(" +
                       (causal ? "true" : "false") + ", i0, rows, " + num(N) + ");\n";
    if (!backward) {
      code += stridedGemm(op, at(ptr(q), D), M * D, ptr(k), N * D, ws, block * N, B, "rows", "cols",
                          num(D), false, true, "1.0f", "0.0f");
      code += rowLaunch(kname);
      code += stridedGemm(op, ws, block * N, ptr(v), N * E, at(ptr(op->getResult(0)), E), M * E, B,
                          "rows", num(E), "cols", false, false, "1.0f", "0.0f");
    } else {
      Value dout = backward.getGrad();
      std::string dq = ptr(backward.getGradQuery()), dk = ptr(backward.getGradKey()),
                  dv = ptr(backward.getGradValue());
      code += "    const float accumulate = n == 0 ? 0.0f : 1.0f;\n";
      code += stridedGemm(op, at(ptr(q), D), M * D, ptr(k), N * D, ws, block * N, B, "rows", "cols",
                          num(D), false, true, "1.0f", "0.0f");
      code += rowLaunch(probs);
      code += stridedGemm(op, at(ptr(dout), E), M * E, ptr(v), N * E, g, block * N, B, "rows",
                          "cols", num(E), false, true, "1.0f", "0.0f");
      code += rowLaunch(kname);
      code += stridedGemm(op, ws, block * N, at(ptr(dout), E), M * E, dv, N * E, B, "cols", num(E),
                          "rows", true, false, "1.0f", "accumulate");
      code += stridedGemm(op, g, block * N, ptr(k), N * D, at(dq, D), M * D, B, "rows", num(D),
                          "cols", false, false, scale, "0.0f");
      code += stridedGemm(op, g, block * N, at(ptr(q), D), M * D, dk, N * D, B, "cols", num(D),
                          "rows", true, false, scale, "accumulate");
    }
    addCode(code + "  }\n");
    return success();
  }

  /// cuDNN's tensor descriptors count elements in 32 bits: refuse, at compile time and naming
  /// the op, a tensor it cannot describe (cudnnSetTensor4dDescriptor would fail at start-up).
  LogicalResult checkCudnnSize(Operation *op, std::initializer_list<Value> values) {
    for (Value v : values) {
      const int64_t elements = tensorElements(v);
      if (elements > std::numeric_limits<int32_t>::max())
        return op->emitError() << "a tensor of [" << list(tensorDims(v)) << "] (" << elements
                               << " elements) is beyond cuDNN's 2^31-1 elements per tensor on "
                                  "--target=cuda; use a smaller --batch, --micro-batches=N, or "
                                  "--target=cpu";
    }
    return success();
  }

  /// x: the convolution's input (dx for backward data), w: its filter (dw for backward filter),
  /// y: its output (dy for the backward ops).
  LogicalResult conv(Operation *op, int direction, Value x, Value w, Value y,
                     ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
                     ArrayRef<int64_t> dilations, int64_t groups, Value prefilledBias = Value()) {
    auto xs = tensorDims(x), ws = tensorDims(w), ys = tensorDims(y);
    auto half = halfStorageOf(x);
    if (halfStorageOf(w) != half || halfStorageOf(y) != half)
      return op->emitError("a convolution whose tensors are not all f32, all bf16 or all f16 is "
                           "not supported on --target=cuda; use --target=cpu");
    // cuDNN pads symmetrically; the plan's output size must be what top/left padding gives.
    auto outDim = [](int64_t in, int64_t pad, int64_t dil, int64_t kernel, int64_t stride) {
      return (in + 2 * pad - (dil * (kernel - 1) + 1)) / stride + 1;
    };
    if (outDim(xs[2], padding[0], dilations[0], ws[2], strides[0]) != ys[2] ||
        outDim(xs[3], padding[1], dilations[1], ws[3], strides[1]) != ys[3])
      return op->emitError() << "'" << op->getName() << "' with asymmetric padding ["
                             << list(padding) << "] is not supported on --target=cuda yet (cuDNN "
                                                 "pads symmetrically); use --target=cpu";
    if (failed(checkCudnnSize(op, {x, w, y})))
      return failure();
    if (!op->hasAttr(kWorkspaceOffsetAttr))
      return op->emitError("convolution without a planned workspace");
    uint64_t limit = workspaceBytes(op);
    int index = numConvs++;
    const char *dirName[] = {"Forward", "BackwardData", "BackwardFilter"};
    convTable += "    {" + cppString(label(op)) +
                 ", graphc::rt::cuda::ConvDirection::" + dirName[direction] + ", " +
                 list({xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], ys[2], ys[3], strides[0],
                       strides[1], padding[0], padding[1], dilations[0], dilations[1], groups}) +
                 ", " + std::to_string(limit) + "ull" +
                 (!half                        ? ""
                  : *half == HalfStorage::BF16 ? ", graphc::rt::cuda::DataType::BF16"
                                               : ", graphc::rt::cuda::DataType::F16") +
                 "},\n";
    std::string shape =
        "graphc::rt::Conv2dShape{" +
        list({xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], ys[2], ys[3], strides[0], strides[1],
              padding[0], padding[1], dilations[0], dilations[1], groups, im2colTileRows(op)}) +
        "}";
    std::string ref = opRef(op), host, device;
    ++cudnnCalls;
    // With a prefilled bias (16 bit) cuDNN blends onto it (beta = 1) and rounds once; the host
    // build passes the bias to the CPU kernel, which adds it in float before its one rounding.
    const std::string beta = prefilledBias ? "&kOne" : "&kZero";
    if (direction == rt_cuda_forward) {
      host = "  graphc::rt::conv2d(" + hostPtr(x) + ", " + hostPtr(w) + ", " +
             (prefilledBias ? hostPtr(prefilledBias) : "nullptr") + ", " + hostPtr(y, true) + ", " +
             shape + ", " + workspace(op) + ");\n";
      device = "  GRAPHC_CUDNN(::graphc::rt::cuda::convForward(ctx, " + std::to_string(index) +
               ", " + ptr(x) + ", " + ptr(w) + ", " + workspace(op) + ", " + beta + ", " + ptr(y) +
               "),\n               \"cudnnConvolutionForward\", " + ref + ");\n";
    } else if (direction == rt_cuda_backward_data) {
      host = "  graphc::rt::conv2dBackwardData(" + hostPtr(y) + ", " + hostPtr(w) + ", " +
             hostPtr(x, true) + ", " + shape + ", " + workspace(op) +
             (prefilledBias ? ", " + hostPtr(prefilledBias) : std::string()) + ");\n";
      device = "  GRAPHC_CUDNN(::graphc::rt::cuda::convBackwardData(ctx, " + std::to_string(index) +
               ", " + ptr(w) + ", " + ptr(y) + ", " + workspace(op) + ", " + beta + ", " + ptr(x) +
               "),\n               \"cudnnConvolutionBackwardData\", " + ref + ");\n";
    } else {
      host = "  graphc::rt::conv2dBackwardFilter(" + hostPtr(y) + ", " + hostPtr(x) + ", " +
             hostPtr(w, true) + ", " + shape + ", " + workspace(op) + ");\n";
      device = "  GRAPHC_CUDNN(::graphc::rt::cuda::convBackwardFilter(ctx, " +
               std::to_string(index) + ", " + ptr(x) + ", " + ptr(y) + ", " + workspace(op) + ", " +
               ptr(w) + "),\n               \"cudnnConvolutionBackwardFilter\", " + ref + ");\n";
    }
    addCode(hostOrDevice(host, device));
    return success();
  }

  std::string poolShape(Value x, Value y, ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> padding) {
    auto xs = tensorDims(x), ys = tensorDims(y);
    return "graphc::rt::Pool2dShape{" +
           list({xs[0], xs[1], xs[2], xs[3], ys[2], ys[3], kernel[0], kernel[1], strides[0],
                 strides[1], padding[0], padding[1]}) +
           "}";
  }

  LogicalResult maxPool(MaxPool2dOp p) {
    Operation *op = p;
    auto xs = tensorDims(p.getInput()), ys = tensorDims(p.getResult());
    auto kernel = p.getKernel(), strides = p.getStrides(), padding = p.getPadding();
    bool symmetric = (xs[2] + 2 * padding[0] - kernel[0]) / strides[0] + 1 == ys[2] &&
                     (xs[3] + 2 * padding[1] - kernel[1]) / strides[1] + 1 == ys[3] &&
                     padding[0] < kernel[0] && padding[1] < kernel[1] &&
                     !halfStorageOf(p.getInput()); // 16 bit: the generated kernel below
    std::string host = "  graphc::rt::maxPool2d(" + ptr(p.getInput()) + ", " + ptr(p.getResult()) +
                       ", " + poolShape(p.getInput(), p.getResult(), kernel, strides, padding) +
                       ");\n";
    if (symmetric) {
      if (failed(checkCudnnSize(op, {p.getInput(), p.getResult()})))
        return failure();
      int index = numPools++;
      poolTable += "    {" + cppString(label(op)) + ", " +
                   list({xs[0], xs[1], xs[2], xs[3], ys[2], ys[3], kernel[0], kernel[1],
                         strides[0], strides[1], padding[0], padding[1]}) +
                   "},\n";
      std::string c = "ctx->pool[" + std::to_string(index) + "]";
      ++cudnnCalls;
      addCode(hostOrDevice(host, "  GRAPHC_CUDNN(cudnnPoolingForward(ctx->cudnn, " + c +
                                     ".pool, &kOne, " + c + ".x, " + ptr(p.getInput()) +
                                     ", &kZero, " + c + ".y, " + ptr(p.getResult()) +
                                     "),\n               \"cudnnPoolingForward\", " + opRef(op) +
                                     ");\n"));
      return success();
    }
    // Ceil-mode or bottom/right-padded windows, or 16-bit tensors: a generated kernel, one
    // thread per output (the CPU kernel's first-maximum rule, poolArgmax).
    std::string k = kernelName("max_pool");
    int64_t total = tensorElements(p.getResult());
    kernels += "// " + label(op) +
               ": max pooling (a window cuDNN cannot express, or 16 bit)\n__global__ void " + k +
               "(unsigned char *arena) {\n" + gridLoop("o", std::to_string(total)) +
               "    const int64_t ox = o % " + std::to_string(ys[3]) + ", oy = (o / " +
               std::to_string(ys[3]) + ") % " + std::to_string(ys[2]) + ", nc = o / " +
               std::to_string(ys[2] * ys[3]) + ";\n    const " + elementType(p.getInput()) +
               " *img = " + ptr(p.getInput()) + " + nc * " + std::to_string(xs[2] * xs[3]) +
               ";\n    const int64_t arg = ::graphc::rt::cuda::poolArgmax(img, " +
               list({xs[2], xs[3]}) + ", oy * " + std::to_string(strides[0]) + " - " +
               std::to_string(padding[0]) + ", ox * " + std::to_string(strides[1]) + " - " +
               std::to_string(padding[1]) + ", " + list({kernel[0], kernel[1]}) + ");\n    " +
               ptr(p.getResult()) +
               "[o] = arg < 0 ? -INFINITY : static_cast<float>(img[arg]);\n  }\n}\n\n";
    addCode(launch(k, total, op)); // the host build runs this kernel too
    return success();
  }

  /// dx from dy and x, gathered: one thread per input element sums dy over the windows whose
  /// first maximum it is, in the CPU kernel's order (windows row-major), without atomics. cuDNN's
  /// cudnnPoolingBackward is not used: it needs the forward output y, which the plan does not keep
  /// alive for the backward op.
  LogicalResult maxPoolBackward(MaxPool2dBackwardOp p) {
    Operation *op = p;
    auto xs = tensorDims(p.getInput()), gs = tensorDims(p.getGrad());
    auto kernel = p.getKernel(), strides = p.getStrides(), padding = p.getPadding();
    std::string k = kernelName("max_pool_backward");
    int64_t total = tensorElements(p.getInput());
    auto S = [](int64_t v) { return std::to_string(v); };
    // The start of a kernel with one thread per output window o: its coordinates, its
    // top-left corner (y0, x0) and `best`, its argmax in the input plane (poolArgmax, the CPU
    // kernel's first-maximum rule; -1 for a window entirely in the padding).
    const std::string perWindow =
        gridLoop("o", S(tensorElements(p.getGrad()))) + "    const int64_t ox = o % " + S(gs[3]) +
        ", oy = (o / " + S(gs[3]) + ") % " + S(gs[2]) + ", nc = o / " + S(gs[2] * gs[3]) +
        ";\n    const int64_t y0 = oy * " + S(strides[0]) + " - " + S(padding[0]) + ", x0 = ox * " +
        S(strides[1]) + " - " + S(padding[1]) +
        ";\n    const int64_t best = ::graphc::rt::cuda::poolArgmax(" + ptr(p.getInput()) +
        " + nc * " + S(xs[2] * xs[3]) + ", " + list({xs[2], xs[3]}) + ", y0, x0, " +
        list({kernel[0], kernel[1]}) + ");\n";
    if (strides[0] >= kernel[0] && strides[1] >= kernel[1] && padding[0] < strides[0] &&
        padding[1] < strides[1]) {
      // Windows that do not overlap (2x2 stride 2): every input element lies in at most one
      // window, so one thread per window finds its argmax (poolArgmax, the CPU's first-maximum
      // rule) and writes its whole stride cell, [oy s - pad, (oy + 1) s - pad) by the same in x
      // (the last cell of a row or column reaching the input's end), dy at the argmax and 0
      // elsewhere. The cells tile the input, so each element is written once, with what the
      // gather below would add (0 + dy, or nothing). A quarter of the gather's index
      // arithmetic for 2x2 windows, and no window scanned four times.
      kernels += "// " + label(op) +
                 ": max-pool backward, one thread per window (no overlap)\n"
                 "__global__ void " +
                 k + "(unsigned char *arena) {\n" + perWindow +
                 "    const float g = 0.0f + static_cast<float>(" + ptr(p.getGrad()) +
                 "[o]);\n    const int64_t ya = y0 < 0 ? 0 : y0, yb = oy == " + S(gs[2] - 1) +
                 " || y0 + " + S(strides[0]) + " > " + S(xs[2]) + " ? " + S(xs[2]) + " : y0 + " +
                 S(strides[0]) +
                 ";\n    const int64_t xa = x0 < 0 ? 0 : x0, xb = ox == " + S(gs[3] - 1) +
                 " || x0 + " + S(strides[1]) + " > " + S(xs[3]) + " ? " + S(xs[3]) + " : x0 + " +
                 S(strides[1]) + ";\n    " + elementType(p.getResult()) +
                 " *dx = " + ptr(p.getResult()) + " + nc * " + S(xs[2] * xs[3]) +
                 ";\n    for (int64_t iy = ya; iy < yb; ++iy)\n"
                 "      for (int64_t ix = xa; ix < xb; ++ix)\n        dx[iy * " +
                 S(xs[3]) + " + ix] = iy * " + S(xs[3]) + " + ix == best ? g : 0.0f;\n  }\n}\n\n";
      addCode(launch(k, tensorElements(p.getGrad()), op));
      return success();
    }
    if (workspaceBytes(op) > 0 && op->hasAttr(kWorkspaceOffsetAttr)) {
      // Overlapping windows (Liveness.cpp, maxPoolArgmaxBytes): one thread per output records
      // its window's argmax (poolArgmax, the CPU kernel's first-maximum rule) as its position
      // in the window; then one thread per input element adds dy of the windows whose recorded
      // position is its own, in the same window order as the gather below: the same sums, with
      // a byte read per window instead of a scan of it.
      const bool wide = kernel[0] * kernel[1] >= 255;
      const std::string posType = wide ? "int32_t" : "uint8_t", none = wide ? "-1" : "255",
                        argmax = "reinterpret_cast<" + posType + " *>(arena + " +
                                 S(op->getAttrOfType<IntegerAttr>(kWorkspaceOffsetAttr).getInt()) +
                                 ")";
      std::string record = kernelName("max_pool_argmax");
      kernels += "// " + label(op) + ": max-pool backward, each window's argmax\n__global__ void " +
                 record + "(unsigned char *arena) {\n" + perWindow + "    " + argmax +
                 "[o] = best < 0 ? " + none + " : static_cast<" + posType + ">((best / " +
                 S(xs[3]) + " - y0) * " + S(kernel[1]) + " + best % " + S(xs[3]) +
                 " - x0);\n  }\n}\n\n";
      kernels += "// " + label(op) +
                 ": max-pool backward, gathered by the recorded argmaxes\n"
                 "__global__ void " +
                 k + "(unsigned char *arena) {\n" + gridLoop("e", S(total)) +
                 windowsHolding(xs, gs, kernel, strides, padding, p.getGrad()) + "    const " +
                 posType + " *pos = " + argmax + " + nc * " + S(gs[2] * gs[3]) +
                 ";\n    float sum = 0.0f;\n    for (int64_t oy = oy0; oy <= oy1; ++oy)\n"
                 "      for (int64_t ox = ox0; ox <= ox1; ++ox)\n"
                 "        if (int64_t(pos[oy * " +
                 S(gs[3]) + " + ox]) == (iy - (oy * " + S(strides[0]) + " - " + S(padding[0]) +
                 ")) * " + S(kernel[1]) + " + ix - (ox * " + S(strides[1]) + " - " + S(padding[1]) +
                 "))\n          sum += dy[oy * " + S(gs[3]) + " + ox];\n    " + ptr(p.getResult()) +
                 "[e] = sum;\n  }\n}\n\n";
      addCode(launch(record, tensorElements(p.getGrad()), op) + launch(k, total, op));
      return success();
    }
    kernels += "// " + label(op) + ": max-pool backward\n__global__ void " + k +
               "(unsigned char *arena) {\n" + gridLoop("e", S(total)) +
               windowsHolding(xs, gs, kernel, strides, padding, p.getGrad()) + "    const " +
               elementType(p.getInput()) + " *img = " + ptr(p.getInput()) + " + nc * " +
               S(xs[2] * xs[3]) + ";\n    const int64_t self = iy * " + S(xs[3]) +
               " + ix;\n    float sum = 0.0f;\n    for (int64_t oy = oy0; oy <= oy1; ++oy)\n"
               "      for (int64_t ox = ox0; ox <= ox1; ++ox)\n"
               "        if (::graphc::rt::cuda::poolArgmax(img, " +
               list({xs[2], xs[3]}) + ", oy * " + S(strides[0]) + " - " + S(padding[0]) +
               ", ox * " + S(strides[1]) + " - " + S(padding[1]) + ", " +
               list({kernel[0], kernel[1]}) + ") == self)\n          sum += dy[oy * " + S(gs[3]) +
               " + ox];\n    " + ptr(p.getResult()) + "[e] = sum;\n  }\n}\n\n";
    addCode(launch(k, total, op));
    return success();
  }

  /// The start of a pooling gradient's gather over input element `e` of an [n, c, xs[2], xs[3]]
  /// input: its coordinates (ix, iy, nc), `dy` at its plane of the [.., gs[2], gs[3]] gradient,
  /// and the windows that can hold it, [oy0, oy1] x [ox0, ox1] (clipped to the outputs).
  std::string windowsHolding(ArrayRef<int64_t> xs, ArrayRef<int64_t> gs, ArrayRef<int64_t> kernel,
                             ArrayRef<int64_t> strides, ArrayRef<int64_t> padding, Value dy) {
    auto first = [&](const char *near, int64_t stride) {
      return std::string(near) + " <= 0 ? 0 : (" + near + " + " + num(stride - 1) + ") / " +
             num(stride);
    };
    auto last = [&](const char *coord, int64_t pad, int64_t stride, int64_t outputs) {
      std::string window = "(" + std::string(coord) + " + " + num(pad) + ") / " + num(stride);
      return window + " < " + num(outputs - 1) + " ? " + window + " : " + num(outputs - 1);
    };
    return "    const int64_t ix = e % " + num(xs[3]) + ", iy = (e / " + num(xs[3]) + ") % " +
           num(xs[2]) + ", nc = e / " + num(xs[2] * xs[3]) + ";\n    const " + elementType(dy) +
           " *dy = " + ptr(dy) + " + nc * " + num(gs[2] * gs[3]) +
           ";\n    const int64_t ny = iy + " + num(padding[0]) + " - " + num(kernel[0]) +
           " + 1, nx = ix + " + num(padding[1]) + " - " + num(kernel[1]) +
           " + 1;\n    const int64_t oy0 = " + first("ny", strides[0]) +
           ", ox0 = " + first("nx", strides[1]) +
           ";\n    const int64_t oy1 = " + last("iy", padding[0], strides[0], gs[2]) +
           ";\n    const int64_t ox1 = " + last("ix", padding[1], strides[1], gs[3]) + ";\n";
  }

  static std::string num(int64_t v) { return std::to_string(v); }
  static std::string boolText(bool b) { return b ? "true" : "false"; }
  /// `sum / count` as the CPU kernels write `count > 0 ? sum / double(count) : 0.0`.
  static std::string meanOf(const std::string &sum, int64_t count) {
    return count > 0 ? sum + " / " + num(count) + ".0" : "0.0";
  }

  /// Average pooling, one thread per output: the window and divisor of pool_window.h (shared
  /// with the CPU kernel, so count_include_pad, ceil mode and padding-only windows divide as
  /// there), summed in float row by row as the CPU kernel does. cuDNN's average pooling is not
  /// used: its divisors differ from PyTorch's for ceil-mode windows.
  LogicalResult avgPool(AvgPool2dOp p) {
    Operation *op = p;
    Value x = p.getInput(), y = p.getResult();
    const bool countIncludePad = p.getCountIncludePad();
    auto xs = tensorDims(x), ys = tensorDims(y);
    int64_t total = tensorElements(y);
    std::string k = kernelName("avg_pool");
    kernels +=
        "// " + label(op) + ": average pooling" + (countIncludePad ? " (count_include_pad)" : "") +
        ", one thread per output\n__global__ void " + k + "(unsigned char *arena) {\n" +
        gridLoop("o", num(total)) + "    const int64_t ox = o % " + num(ys[3]) + ", oy = (o / " +
        num(ys[3]) + ") % " + num(ys[2]) + ", nc = o / " + num(ys[2] * ys[3]) + ";\n    const " +
        elementType(x) + " *img = " + ptr(x) + " + nc * " + num(xs[2] * xs[3]) +
        ";\n    const ::graphc::rt::AvgPoolWindow win = " +
        avgWindowCall(xs, ys, p.getKernel(), p.getStrides(), p.getPadding(), countIncludePad) +
        ";\n    float sum = 0.0f;\n"
        "    for (int64_t iy = win.yBegin; iy < win.yEnd; ++iy)\n"
        "      for (int64_t ix = win.xBegin; ix < win.xEnd; ++ix)\n"
        "        sum += img[iy * " +
        num(xs[3]) + " + ix];\n    " + ptr(y) +
        "[o] = win.divisor > 0 ? sum / static_cast<float>(win.divisor) : 0.0f;\n  }\n}\n\n";
    addCode(launch(k, total, op));
    return success();
  }
  std::string avgWindowCall(ArrayRef<int64_t> xs, ArrayRef<int64_t> ys, ArrayRef<int64_t> kernel,
                            ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
                            bool countIncludePad) {
    return "::graphc::rt::avgPoolWindow(" +
           list({xs[2], xs[3], ys[2], ys[3], kernel[0], kernel[1], strides[0], strides[1],
                 padding[0], padding[1]}) +
           ", oy, ox, " + boolText(countIncludePad) + ")";
  }

  /// dx gathered: one thread per input element adds dy / divisor of every window holding it, in
  /// the order the CPU kernel's scatter adds them (windows row-major), so without atomics and
  /// bit for bit.
  LogicalResult avgPoolBackward(AvgPool2dBackwardOp p) {
    Operation *op = p;
    auto xs = tensorDims(p.getResult()), gs = tensorDims(p.getGrad());
    int64_t total = tensorElements(p.getResult());
    std::string k = kernelName("avg_pool_backward");
    kernels += "// " + label(op) + ": average-pool backward, one thread per input element\n"
               "__global__ void " + k + "(unsigned char *arena) {\n" + gridLoop("e", num(total)) +
               windowsHolding(xs, gs, p.getKernel(), p.getStrides(), p.getPadding(), p.getGrad()) +
               "    float sum = 0.0f;\n    for (int64_t oy = oy0; oy <= oy1; ++oy)\n"
               "      for (int64_t ox = ox0; ox <= ox1; ++ox) {\n"
               "        const ::graphc::rt::AvgPoolWindow win = " +
               avgWindowCall(xs, gs, p.getKernel(), p.getStrides(), p.getPadding(),
                             p.getCountIncludePad()) +
               ";\n        if (win.divisor > 0 && iy >= win.yBegin && iy < win.yEnd && "
               "ix >= win.xBegin && ix < win.xEnd)\n          sum += dy[oy * " + num(gs[3]) +
               " + ox] / static_cast<float>(win.divisor);\n      }\n    " + ptr(p.getResult()) +
               "[e] = sum;\n  }\n}\n\n";
    addCode(launch(k, total, op));
    return success();
  }

  /// A loop running `body` for every element i of channel `c` of tensors viewed as [n, c, inner],
  /// in the CPU kernels' order; each of `planes` ({"const float *p", base}) points at the
  /// current sample's plane of channel c of its tensor.
  static std::string forEachInChannel(int64_t n, int64_t c, int64_t inner,
                                      ArrayRef<std::pair<std::string, std::string>> planes,
                                      const std::string &body) {
    std::string s = "    for (int64_t b = 0; b < " + num(n) + "; ++b) {\n";
    for (auto &[decl, base] : planes)
      s += "      " + decl + " = " + base + " + (b * " + num(c) + " + c) * " + num(inner) + ";\n";
    return s + "      for (int64_t i = 0; i < " + num(inner) + "; ++i)" + body + "    }\n";
  }

  /// Inside a block kernel's phase (GRAPHC_BLOCK_THREADS(t), step.h): thread t's share of
  /// channel c's elements of an [n, channels, inner] tensor, `off` each one's offset.
  /// Consecutive threads take consecutive elements (coalesced loads); the walk is a fixed
  /// function of t, so the sums are deterministic. O(n inner / 256) per thread. With `splits`
  /// blocks per channel (graph.block_splits), block s of the channel takes samples
  /// [s n / splits, (s + 1) n / splits) (the kernel defines s).
  static std::string channelShare(int64_t n, int64_t channels, int64_t inner,
                                  const std::string &body, int64_t splits = 1) {
    if (splits > 1) {
      const int64_t rows = n / splits;
      if (inner >= kThreads)
        return "    for (int64_t b = s * " + num(rows) + "; b < (s + 1) * " + num(rows) +
               "; ++b)\n      for (int64_t i = t; i < " + num(inner) +
               "; i += GRAPHC_BLOCK_SIZE) {\n        const int64_t off = (b * " + num(channels) +
               " + c) * " + num(inner) + " + i;\n" + body + "      }\n";
      return "    for (int64_t j = t; j < " + num(rows * inner) +
             "; j += GRAPHC_BLOCK_SIZE) {\n        const int64_t r = j / " + num(inner) +
             ", b = s * " + num(rows) + " + r, off = (b * " + num(channels) + " + c) * " +
             num(inner) + " + (j - r * " + num(inner) + ");\n" + body + "      }\n";
    }
    if (inner >= kThreads)
      return "    for (int64_t b = 0; b < " + num(n) + "; ++b)\n      for (int64_t i = t; i < " +
             num(inner) + "; i += GRAPHC_BLOCK_SIZE) {\n        const int64_t off = (b * " +
             num(channels) + " + c) * " + num(inner) + " + i;\n" + body + "      }\n";
    return "    for (int64_t j = t; j < " + num(n * inner) +
           "; j += GRAPHC_BLOCK_SIZE) {\n        const int64_t b = j / " + num(inner) +
           ", off = (b * " + num(channels) + " + c) * " + num(inner) + " + (j - b * " + num(inner) +
           ");\n" + body + "      }\n";
  }
  /// A launch of a block kernel: one block of GRAPHC_BLOCK_SIZE threads per channel.
  std::string launchBlocks(const std::string &kernel, int64_t blocks, Operation *op) {
    return "  GRAPHC_LAUNCH_BLOCKS(" + kernel + ", " + num(std::max<int64_t>(blocks, 1)) + ", " +
           opRef(op) + ", arena);\n";
  }

  /// Batch normalization, one block per channel (a block kernel, step.h): the statistics are
  /// summed in double, each thread over its share of the channel and then by a fixed tree (so
  /// the same every run, though not in the CPU kernel's order: the sums agree to double
  /// rounding, which the float statistics almost never show), then thread 0 derives the
  /// statistics as the CPU kernel does and y = x alpha + beta with alpha and beta from the
  /// saved float statistics through batchNormAffine (elementwise_math.h), like the CPU. In
  /// training the running statistics are written in place over the old ones (thread 0 reads
  /// its channel's before writing them), once per run of the op: once per step, or once per
  /// micro-batch with --micro-batches, as on the CPU. cuDNN's batch norm is not used: its
  /// reductions are not the CPU's. O(n inner / 256) per thread plus log2(256) barrier steps.
  LogicalResult batchNorm(BatchNormOp bn) {
    Operation *op = bn;
    auto xs = tensorDims(bn.getInput());
    const int64_t n = xs[0], c = xs[1], inner = tensorElements(bn.getInput()) / (n * c),
                  count = n * inner;
    const bool training = bn.getTraining();
    const std::string x = ptr(bn.getInput()), rm = ptr(bn.getRunningMean()),
                      rv = ptr(bn.getRunningVar());
    if (training && blockSplits(op) > 1 && n % blockSplits(op) == 0)
      return batchNormSplit(bn, n, c, inner, blockSplits(op));
    std::string reduce, stats;
    if (training) {
      reduce = "  GRAPHC_BLOCK_THREADS(t) {\n    double sum = 0.0;\n" +
               channelShare(n, c, inner, "        sum += " + x + "[off];\n") +
               "    part[t] = sum;\n  }\n  GRAPHC_BLOCK_SUM(part)\n"
               "  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0)\n      stat[0] = " +
               meanOf("part[0]", count) +
               ";\n  }\n"
               "  GRAPHC_BLOCK_THREADS(t) {\n    const double mean = stat[0];\n"
               "    double varSum = 0.0;\n" +
               channelShare(n, c, inner,
                            "        const double d = " + x +
                                "[off] - mean;\n"
                                "        varSum += d * d;\n") +
               "    part[t] = varSum;\n  }\n  GRAPHC_BLOCK_SUM(part)\n";
      stats = "    const double mean = stat[0], varSum = part[0];\n"
              "    const double var = " +
              meanOf("varSum", count) + ";\n" + runningStatsUpdate(bn, count, "    ");
    } else {
      stats = "    const double mean = " + rm + "[c], var = " + rv + "[c];\n    " +
              ptr(bn.getNewRunningMean()) + "[c] = " + rm + "[c];\n    " +
              ptr(bn.getNewRunningVar()) + "[c] = " + rv + "[c];\n";
    }
    std::string k = kernelName("batch_norm");
    kernels +=
        "// " + label(op) + ": batch normalization" +
        (training ? " (training: batch statistics, running statistics updated)"
                  : " (running statistics)") +
        ", one block per channel\n__global__ void " + k +
        "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double part[GRAPHC_BLOCK_SIZE];\n"
        "  GRAPHC_BLOCK_SHARED double stat[1];\n  GRAPHC_BLOCK_SHARED float affine[2];\n"
        "  const int64_t c = blockIdx.x;\n" +
        reduce + "  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0) {\n" + stats +
        "    const double invstd = 1.0 / sqrt(var + static_cast<double>(" +
        floatLiteral(attrFloat(bn.getEpsilon())) + "));\n    " + ptr(bn.getSavedMean()) +
        "[c] = static_cast<float>(mean);\n    " + ptr(bn.getSavedInvstd()) +
        "[c] = static_cast<float>(invstd);\n" +
        channelAffine(bn.getSavedMean(), bn.getSavedInvstd(), bn.getScale(), bn.getBias()) +
        "    affine[0] = alpha;\n    affine[1] = beta;\n    }\n  }\n"
        "  GRAPHC_BLOCK_THREADS(t) {\n    const float alpha = affine[0], beta = affine[1];\n" +
        channelShare(n, c, inner,
                     "        " + ptr(bn.getResult()) + "[off] = " + x +
                         "[off] * alpha + beta;\n") +
        "  }\n}\n\n";
    addCode(launchBlocks(k, c, op));
    return success();
  }

  /// A training batch norm's running statistics updated from `mean`, `var` and `varSum`
  /// (variables in scope), in place over the old ones, each line indented by `indent`.
  std::string runningStatsUpdate(BatchNormOp bn, int64_t count, const std::string &indent) {
    return indent + "const double unbiased = " +
           (count > 1 ? "varSum / " + num(count - 1) + ".0" : std::string("var")) + ";\n" + indent +
           "const double m = static_cast<double>(" + floatLiteral(attrFloat(bn.getMomentum())) +
           ");\n" + indent + "const double oldMean = " + ptr(bn.getRunningMean()) +
           "[c], oldVar = " + ptr(bn.getRunningVar()) + "[c];\n" + indent +
           ptr(bn.getNewRunningMean()) +
           "[c] = static_cast<float>(m * mean + (1.0 - m) * oldMean);\n" + indent +
           ptr(bn.getNewRunningVar()) +
           "[c] = static_cast<float>(m * unbiased + (1.0 - m) * oldVar);\n";
  }

  /// A training batch norm over `splits` blocks per channel (graph.block_splits), in three
  /// kernels: each block sums its samples' share of its channel, then (every block adding the
  /// channel's partial sums in block order for the mean) the squared deviations, then each
  /// block derives the statistics from the partials the same way and normalizes its share;
  /// block 0 of each channel writes the saved and running statistics. The partials are the
  /// op's workspace. The statistics are batchNorm's up to the order of double additions.
  LogicalResult batchNormSplit(BatchNormOp bn, int64_t n, int64_t c, int64_t inner,
                               int64_t splits) {
    Operation *op = bn;
    const int64_t count = n * inner;
    const std::string x = ptr(bn.getInput()), rm = ptr(bn.getRunningMean()),
                      rv = ptr(bn.getRunningVar()), sums = partials(op, c, splits, 0),
                      varSums = partials(op, c, splits, 1);
    const std::string head = "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double "
                             "part[GRAPHC_BLOCK_SIZE];\n  const int64_t c = blockIdx.x / " +
                             num(splits) + ", s = blockIdx.x % " + num(splits) + ";\n";
    const std::string what = "// " + label(op) + ": batch normalization (training), " +
                             num(splits) + " blocks per channel: ";
    std::string sumKernel = kernelName("batch_norm_sum");
    kernels += what + "partial sums\n__global__ void " + sumKernel + head +
               "  GRAPHC_BLOCK_THREADS(t) {\n    double sum = 0.0;\n" +
               channelShare(n, c, inner, "        sum += " + x + "[off];\n", splits) +
               "    part[t] = sum;\n  }\n  GRAPHC_BLOCK_SUM(part)\n"
               "  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0)\n      " +
               sums + "[blockIdx.x] = part[0];\n  }\n}\n\n";
    std::string varKernel = kernelName("batch_norm_var");
    kernels += what + "partial sums of squared deviations\n__global__ void " + varKernel + head +
               "  GRAPHC_BLOCK_THREADS(t) {\n" + sumPartials("total", sums, splits) +
               "    const double mean = " + meanOf("total", count) +
               ";\n    double varSum = 0.0;\n" +
               channelShare(n, c, inner,
                            "        const double d = " + x +
                                "[off] - mean;\n"
                                "        varSum += d * d;\n",
                            splits) +
               "    part[t] = varSum;\n  }\n  GRAPHC_BLOCK_SUM(part)\n"
               "  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0)\n      " +
               varSums + "[blockIdx.x] = part[0];\n  }\n}\n\n";
    std::string applyKernel = kernelName("batch_norm");
    kernels +=
        what + "statistics and y = x alpha + beta\n__global__ void " + applyKernel +
        "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED float affine[2];\n"
        "  const int64_t c = blockIdx.x / " +
        num(splits) + ", s = blockIdx.x % " + num(splits) +
        ";\n  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0) {\n" + sumPartials("total", sums, splits) +
        sumPartials("varSum", varSums, splits) +
        "    const double mean = " + meanOf("total", count) +
        ";\n    const double var = " + meanOf("varSum", count) +
        ";\n    const double invstd = 1.0 / sqrt(var + static_cast<double>(" +
        floatLiteral(attrFloat(bn.getEpsilon())) +
        "));\n    const float savedMean = static_cast<float>(mean), savedInvstd = "
        "static_cast<float>(invstd);\n    if (s == 0) {\n" +
        runningStatsUpdate(bn, count, "      ") + "      " + ptr(bn.getSavedMean()) +
        "[c] = savedMean;\n      " + ptr(bn.getSavedInvstd()) + "[c] = savedInvstd;\n    }\n" +
        channelAffineOf("savedMean", "savedInvstd", bn.getScale(), bn.getBias()) +
        "    affine[0] = alpha;\n    affine[1] = beta;\n    }\n  }\n"
        "  GRAPHC_BLOCK_THREADS(t) {\n    const float alpha = affine[0], beta = affine[1];\n" +
        channelShare(n, c, inner,
                     "        " + ptr(bn.getResult()) + "[off] = " + x + "[off] * alpha + beta;\n",
                     splits) +
        "  }\n}\n\n";
    for (const std::string &k : {sumKernel, varKernel, applyKernel})
      addCode(launchBlocks(k, c * splits, op));
    return success();
  }

  /// Channel c's y = x alpha + beta coefficients from the saved statistics (batchNormAffine,
  /// elementwise_math.h): one definition for the forward and the recomputation.
  std::string channelAffine(Value savedMean, Value savedInvstd, Value scale, Value bias) {
    return channelAffineOf(ptr(savedMean) + "[c]", ptr(savedInvstd) + "[c]", scale, bias);
  }
  /// The same from the float statistics `mean` and `invstd` (expressions).
  std::string channelAffineOf(const std::string &mean, const std::string &invstd, Value scale,
                              Value bias) {
    return "    float alpha, beta;\n    ::graphc::rt::batchNormAffine(" + mean + ", " + invstd +
           ", " + ptr(scale) + "[c], " + ptr(bias) + "[c], &alpha, &beta);\n";
  }

  /// The partial sums of an op split over blocks (graph.block_splits): `part` arrays of
  /// channels x splits doubles in its planned workspace, array `index` of them.
  std::string partials(Operation *op, int64_t channels, int64_t splits, int index) {
    int64_t offset = op->getAttrOfType<IntegerAttr>(kWorkspaceOffsetAttr).getInt() +
                     int64_t(sizeof(double)) * index * channels * splits;
    return "reinterpret_cast<double *>(arena + " + num(offset) + ")";
  }
  static int64_t blockSplits(Operation *op) {
    auto splits = op->getAttrOfType<IntegerAttr>(kBlockSplitsAttr);
    return splits ? std::max<int64_t>(splits.getInt(), 1) : 1;
  }
  /// The sum of channel c's `splits` partials in `array`, in block order (deterministic), as a
  /// statement declaring `name`.
  static std::string sumPartials(const std::string &name, const std::string &array,
                                 int64_t splits) {
    return "    double " + name + " = 0.0;\n    for (int64_t j = 0; j < " + num(splits) +
           "; ++j)\n      " + name + " += " + array + "[c * " + num(splits) + " + j];\n";
  }

  /// A batch norm's output recomputed from its saved statistics (rematerialization): one thread
  /// per element, y = x alpha + beta with the channel's alpha and beta from batchNormAffine,
  /// as the forward kernel computed them, so the values are the forward's bit for bit.
  LogicalResult batchNormApply(BatchNormApplyOp bn) {
    Operation *op = bn;
    auto xs = tensorDims(bn.getInput());
    const int64_t total = tensorElements(bn.getInput()), c = xs[1],
                  inner = total / (xs[0] * xs[1]);
    std::string k = kernelName("batch_norm_apply");
    kernels += "// " + label(op) +
               ": batch norm output recomputed from its saved statistics\n__global__ void " + k +
               "(unsigned char *arena) {\n" + gridLoop("i", num(total)) +
               "    const int64_t c = (i / " + num(inner) + ") % " + num(c) + ";\n" +
               channelAffine(bn.getSavedMean(), bn.getSavedInvstd(), bn.getScale(),
                             bn.getBias()) +
               "    " + ptr(bn.getResult()) + "[i] = " + ptr(bn.getInput()) +
               "[i] * alpha + beta;\n  }\n}\n\n";
    addCode(launch(k, total, op));
    return success();
  }

  /// One block per channel (a block kernel, step.h): dy and (x - mean) dy summed in double,
  /// each thread over its share and then by a fixed tree, into grad_bias and grad_scale, then
  /// dx by PyTorch's formula from those double sums (the CPU kernel's formula; see batchNorm
  /// for the order of the sums). O(n inner / 256) per thread.
  LogicalResult batchNormBackward(BatchNormBackwardOp bn) {
    Operation *op = bn;
    auto xs = tensorDims(bn.getInput());
    const int64_t n = xs[0], c = xs[1], inner = tensorElements(bn.getInput()) / (n * c),
                  count = n * inner;
    const std::string dy = ptr(bn.getGrad()), x = ptr(bn.getInput()), dx = ptr(bn.getGradInput());
    const int64_t splits = blockSplits(op) > 1 && n % blockSplits(op) == 0 ? blockSplits(op) : 1;
    std::string dxCode;
    if (bn.getTraining() && count > 0)
      dxCode = "    // PyTorch: k = dot invstd^2 / N; dx = (dy - sum/N - (x - mean) k) invstd w.\n"
               "    const double mean = stat[0], invstd = stat[1], w = stat[2];\n"
               "    const double k = stat[4] * invstd * invstd / " +
               num(count) + ".0;\n    const double gradMean = stat[3] / " + num(count) + ".0;\n" +
               channelShare(n, c, inner,
                            "        " + dx + "[off] = static_cast<float>((" + dy +
                                "[off] - gradMean - (" + x + "[off] - mean) * k) * invstd * w);\n",
                            splits);
    else
      dxCode =
          "    const float f = static_cast<float>(stat[1] * stat[2]);\n" +
          channelShare(n, c, inner, "        " + dx + "[off] = " + dy + "[off] * f;\n", splits);
    // Thread 0's: the statistics that dx needs (stat[0..4]) from the channel's sums `sum` of
    // dy and `dot` of (x - mean) dy, and the bias and scale gradients (with `firstBlockWrites`,
    // by block 0 of the channel only).
    auto finishStats = [&](const std::string &sum, const std::string &dot, bool firstBlockWrites) {
      const std::string grads = ptr(bn.getGradBias()) + "[c] = static_cast<float>(" + sum +
                                ");\n      " + ptr(bn.getGradScale()) +
                                "[c] = static_cast<float>(" + dot + " * stat[1]);\n";
      return "      stat[0] = " + ptr(bn.getSavedMean()) +
             "[c];\n      stat[1] = " + ptr(bn.getSavedInvstd()) +
             "[c];\n      stat[2] = " + ptr(bn.getScale()) + "[c];\n      stat[3] = " + sum +
             ";\n      stat[4] = " + dot + ";\n      " +
             (firstBlockWrites ? "if (s == 0) {\n      " + grads + "      }\n" : grads);
    };
    // The sums of dy and (x - mean) dy of thread t's share, into part and partDot.
    const std::string shareSums =
        "  GRAPHC_BLOCK_THREADS(t) {\n    const double mean = " + ptr(bn.getSavedMean()) +
        "[c];\n    double sum = 0.0, dot = 0.0;\n" +
        channelShare(n, c, inner,
                     "        const double g = " + dy +
                         "[off];\n        sum += g;\n"
                         "        dot += (" +
                         x + "[off] - mean) * g;\n",
                     splits) +
        "    part[t] = sum;\n    partDot[t] = dot;\n  }\n  GRAPHC_BLOCK_SUM(part)\n"
        "  GRAPHC_BLOCK_SUM(partDot)\n";
    if (splits > 1) {
      // Two kernels: each block's partial sums, then each block adds its channel's in block
      // order, block 0 writes grad_bias and grad_scale, and every block computes dx over its
      // share.
      const std::string sums = partials(op, c, splits, 0), dots = partials(op, c, splits, 1),
                        index = "  const int64_t c = blockIdx.x / " + num(splits) +
                                ", s = blockIdx.x % " + num(splits) + ";\n",
                        what = "// " + label(op) + ": batch-norm backward" +
                               (bn.getTraining() ? " (training)" : "") + ", " + num(splits) +
                               " blocks per channel: ";
      std::string sumKernel = kernelName("batch_norm_backward_sum");
      kernels += what + "partial sums\n__global__ void " + sumKernel +
                 "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double part[GRAPHC_BLOCK_SIZE];\n"
                 "  GRAPHC_BLOCK_SHARED double partDot[GRAPHC_BLOCK_SIZE];\n" +
                 index + shareSums + "  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0) {\n      " +
                 sums + "[blockIdx.x] = part[0];\n      " + dots +
                 "[blockIdx.x] = partDot[0];\n    }\n  }\n}\n\n";
      std::string k = kernelName("batch_norm_backward");
      kernels += what + "gradients\n__global__ void " + k +
                 "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double stat[5];\n" + index +
                 "  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0) {\n" +
                 sumPartials("sum", sums, splits) + sumPartials("dot", dots, splits) +
                 finishStats("sum", "dot", /*firstBlockWrites=*/true) +
                 "    }\n  }\n  GRAPHC_BLOCK_THREADS(t) {\n" + dxCode + "  }\n}\n\n";
      addCode(launchBlocks(sumKernel, c * splits, op));
      addCode(launchBlocks(k, c * splits, op));
      return success();
    }
    std::string k = kernelName("batch_norm_backward");
    kernels += "// " + label(op) + ": batch-norm backward" +
               (bn.getTraining() ? " (training)" : "") +
               ", one block per channel\n__global__ void " + k +
               "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double part[GRAPHC_BLOCK_SIZE];\n"
               "  GRAPHC_BLOCK_SHARED double partDot[GRAPHC_BLOCK_SIZE];\n"
               "  GRAPHC_BLOCK_SHARED double stat[5];\n  const int64_t c = blockIdx.x;\n" +
               shareSums + "  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0) {\n" +
               finishStats("part[0]", "partDot[0]", /*firstBlockWrites=*/false) +
               "    }\n  }\n  GRAPHC_BLOCK_THREADS(t) {\n" + dxCode + "  }\n}\n\n";
    addCode(launchBlocks(k, c, op));
    return success();
  }

  /// Layer normalization, statistics in double: a warp per row (a block per row from
  /// kBlockRowWidth elements), or with --cuda-row-kernels=thread one thread per row in the CPU
  /// kernel's order (bit for bit).
  LogicalResult layerNorm(LayerNormOp ln) {
    Operation *op = ln;
    const int64_t d = tensorDims(ln.getInput()).back(), rows = tensorElements(ln.getInput()) / d;
    std::string k = kernelName("layer_norm");
    if (!options.cudaThreadRows) {
      // A warp per row (lane l owns the elements l, l + 32, ...; the lanes' sums meet in lane
      // order, row_lanes.h), or from kBlockRowWidth elements a block per row (thread t owns
      // t, t + 256, ...; the block's fixed tree adds the sums): the sums of x, then of
      // (x - mean)^2, in double, then every lane normalizes its elements. Equal to the CPU's
      // sequential sums to double rounding.
      const RowSplit split = rowSplit(d);
      const std::string x = ptr(ln.getInput()), y = ptr(ln.getResult()),
                        stats = "        const double mean = " + split.total("sumParts") + " / " +
                                num(d) + ".0;\n";
      const std::string comment = "// " + label(op) + ": layer normalization of " + num(d) +
                                  " elements per row, " + split.per + "\n";
      const std::string prologue = "  GRAPHC_BLOCK_SHARED double sumParts[GRAPHC_BLOCK_SIZE];\n"
                                   "  GRAPHC_BLOCK_SHARED double varParts[GRAPHC_BLOCK_SIZE];\n";
      const std::string rowDecls =
          "        const " + elementType(ln.getInput()) + " *p = " + x + " + r * " + num(d) + ";\n";
      const std::string sums =
          "        double sum = 0.0;\n        for (int64_t i = " + split.first + "; i < " + num(d) +
          "; i += " + split.step + ")\n          sum += p[i];\n        sumParts[t] = sum;\n";
      const std::string deviations =
          stats + "        double varSum = 0.0;\n        for (int64_t i = " + split.first +
          "; i < " + num(d) + "; i += " + split.step +
          ") {\n          const double dev = p[i] - mean;\n"
          "          varSum += dev * dev;\n        }\n        varParts[t] = varSum;\n";
      const std::string normalize =
          stats + "        const double var = " + split.total("varParts") + " / " + num(d) +
          ".0;\n        const double invstd = 1.0 / sqrt(var + static_cast<double>(" +
          floatLiteral(attrFloat(ln.getEpsilon())) + "));\n        if (" + split.first +
          " == 0) {\n          " + ptr(ln.getSavedMean()) +
          "[r] = static_cast<float>(mean);\n          " + ptr(ln.getSavedInvstd()) +
          "[r] = static_cast<float>(invstd);\n        }\n        " + elementType(ln.getResult()) +
          " *q = " + y + " + r * " + num(d) + ";\n        for (int64_t i = " + split.first +
          "; i < " + num(d) + "; i += " + split.step +
          ")\n          q[i] = static_cast<float>((p[i] - mean) * invstd * " + ptr(ln.getScale()) +
          "[i] + " + ptr(ln.getBias()) + "[i]);\n";
      if (split.block)
        kernels +=
            blockRowKernel(k, "(unsigned char *arena) {\n", comment, prologue, num(rows), rowDecls,
                           {{sums, {"sumParts"}}, {deviations, {"varParts"}}, {normalize, {}}});
      else
        kernels += warpRowKernel(k, "(unsigned char *arena) {\n", comment, prologue, num(rows),
                                 rowDecls, {sums, deviations, normalize});
      addCode(launchBlocks(k, split.blocks(rows), op));
      return success();
    }
    kernels += "// " + label(op) + ": layer normalization, one thread per row\n__global__ void " +
               k + "(unsigned char *arena) {\n" + gridLoop("r", num(rows)) + "    const " +
               elementType(ln.getInput()) + " *p = " + ptr(ln.getInput()) + " + r * " + num(d) +
               ";\n    " + elementType(ln.getResult()) + " *q = " + ptr(ln.getResult()) +
               " + r * " + num(d) + ";\n    double sum = 0.0;\n    for (int64_t i = 0; i < " +
               num(d) + "; ++i)\n      sum += p[i];\n    const double mean = " + meanOf("sum", d) +
               ";\n    double varSum = 0.0;\n    for (int64_t i = 0; i < " + num(d) +
               "; ++i) {\n      const double dev = p[i] - mean;\n"
               "      varSum += dev * dev;\n    }\n"
               "    const double var = " +
               meanOf("varSum", d) +
               ";\n    const double invstd = 1.0 / sqrt(var + static_cast<double>(" +
               floatLiteral(attrFloat(ln.getEpsilon())) + "));\n    " + ptr(ln.getSavedMean()) +
               "[r] = static_cast<float>(mean);\n    " + ptr(ln.getSavedInvstd()) +
               "[r] = static_cast<float>(invstd);\n    for (int64_t i = 0; i < " + num(d) +
               "; ++i)\n      q[i] = static_cast<float>((p[i] - mean) * invstd * " +
               ptr(ln.getScale()) + "[i] + " + ptr(ln.getBias()) + "[i]);\n  }\n}\n\n";
    addCode(launch(k, rows, op));
    return success();
  }

  /// The scale and bias gradients, when read, by one block per column (a block kernel, step.h: each
  /// thread sums its rows in double, then a fixed tree adds the threads' sums; deterministic, equal
  /// to the CPU's sums to double rounding), then dx by a warp per row (one thread per row with
  /// --cuda-row-kernels=thread, in the CPU kernel's order).
  LogicalResult layerNormBackward(LayerNormBackwardOp ln) {
    Operation *op = ln;
    const int64_t d = tensorDims(ln.getInput()).back(), rows = tensorElements(ln.getInput()) / d;
    const std::string dy = ptr(ln.getGrad()), x = ptr(ln.getInput()),
                      mean = ptr(ln.getSavedMean()), invstd = ptr(ln.getSavedInvstd()),
                      scale = ptr(ln.getScale());
    // Scale and bias gradients nothing reads (a group norm's fills) are not computed.
    const bool parameterGradients = !ln.getGradScale().use_empty() || !ln.getGradBias().use_empty();
    std::string columns = kernelName("layer_norm_backward_columns");
    if (parameterGradients) {
      kernels += "// " + label(op) +
                 ": layer-norm scale and bias gradients, one block per "
                 "column\n__global__ void " +
                 columns +
                 "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double part[GRAPHC_BLOCK_SIZE];\n"
                 "  GRAPHC_BLOCK_SHARED double partXhat[GRAPHC_BLOCK_SIZE];\n"
                 "  const int64_t i = blockIdx.x;\n  GRAPHC_BLOCK_THREADS(t) {\n"
                 "    double sumDy = 0.0, sumDyXhat = 0.0;\n    for (int64_t r = t; r < " +
                 num(rows) + "; r += GRAPHC_BLOCK_SIZE) {\n      const double g = " + dy + "[r * " +
                 num(d) + " + i];\n      sumDy += g;\n      sumDyXhat += g * (" + x + "[r * " +
                 num(d) + " + i] - static_cast<double>(" + mean + "[r])) * " + invstd +
                 "[r];\n    }\n    part[t] = sumDy;\n    partXhat[t] = sumDyXhat;\n  }\n"
                 "  GRAPHC_BLOCK_SUM(part)\n  GRAPHC_BLOCK_SUM(partXhat)\n"
                 "  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0) {\n      " +
                 ptr(ln.getGradScale()) + "[i] = static_cast<float>(partXhat[0]);\n      " +
                 ptr(ln.getGradBias()) + "[i] = static_cast<float>(part[0]);\n    }\n  }\n}\n\n";
      addCode(launchBlocks(columns, d, op));
    }
    std::string k = kernelName("layer_norm_backward_rows");
    if (!options.cudaThreadRows) {
      // dx by a warp per row (a block per row from kBlockRowWidth elements, rowSplit): the
      // sums of g and g * xhat in double, then every lane its elements.
      const RowSplit split = rowSplit(d);
      const std::string rowDecls =
          "        const " + elementType(ln.getGrad()) + " *g = " + dy + " + r * " + num(d) +
          ";\n        const " + elementType(ln.getInput()) + " *p = " + x + " + r * " + num(d) +
          ";\n        const double mean = " + mean + "[r], invstd = " + invstd + "[r];\n";
      const std::string comment =
          "// " + label(op) + ": layer-norm input gradient, " + split.per + "\n";
      const std::string prologue = "  GRAPHC_BLOCK_SHARED double sumParts[GRAPHC_BLOCK_SIZE];\n"
                                   "  GRAPHC_BLOCK_SHARED double dotParts[GRAPHC_BLOCK_SIZE];\n";
      const std::string sums =
          "        double sumG = 0.0, sumGXhat = 0.0;\n        for (int64_t i = " + split.first +
          "; i < " + num(d) + "; i += " + split.step +
          ") {\n          const double xhat = (p[i] - mean) * invstd;\n"
          "          const double gi = static_cast<double>(g[i]) * " +
          scale +
          "[i];\n          sumG += gi;\n          sumGXhat += gi * xhat;\n        }\n"
          "        sumParts[t] = sumG;\n        dotParts[t] = sumGXhat;\n";
      const std::string apply =
          "        const double meanG = " + split.total("sumParts") + " / " + num(d) +
          ".0, meanGXhat = " + split.total("dotParts") + " / " + num(d) + ".0;\n        " +
          elementType(ln.getGradInput()) + " *q = " + ptr(ln.getGradInput()) + " + r * " + num(d) +
          ";\n        for (int64_t i = " + split.first + "; i < " + num(d) +
          "; i += " + split.step +
          ") {\n          const double xhat = (p[i] - mean) * invstd;\n"
          "          q[i] = static_cast<float>(invstd * (static_cast<double>(g[i]) * " +
          scale + "[i] - meanG - xhat * meanGXhat));\n        }\n";
      if (split.block)
        kernels += blockRowKernel(k, "(unsigned char *arena) {\n", comment, prologue, num(rows),
                                  rowDecls, {{sums, {"sumParts", "dotParts"}}, {apply, {}}});
      else
        kernels += warpRowKernel(k, "(unsigned char *arena) {\n", comment, prologue, num(rows),
                                 rowDecls, {sums, apply});
      addCode(launchBlocks(k, split.blocks(rows), op));
      return success();
    }
    kernels += "// " + label(op) +
               ": layer-norm input gradient, one thread per row\n"
               "__global__ void " +
               k + "(unsigned char *arena) {\n" + gridLoop("r", num(rows)) + "    const " +
               elementType(ln.getGrad()) + " *g = " + dy + " + r * " + num(d) + ";\n    const " +
               elementType(ln.getInput()) + " *p = " + x + " + r * " + num(d) + ";\n    " +
               elementType(ln.getGradInput()) + " *q = " + ptr(ln.getGradInput()) + " + r * " +
               num(d) + ";\n    const double mean = " + mean + "[r], invstd = " + invstd +
               "[r];\n    double sumG = 0.0, sumGXhat = 0.0;\n    for (int64_t i = 0; i < " +
               num(d) +
               "; ++i) {\n      const double xhat = (p[i] - mean) * invstd;\n"
               "      const double gi = static_cast<double>(g[i]) * " +
               scale +
               "[i];\n      sumG += gi;\n      sumGXhat += gi * xhat;\n    }\n"
               "    const double meanG = " +
               meanOf("sumG", d) + ", meanGXhat = " + meanOf("sumGXhat", d) +
               ";\n    for (int64_t i = 0; i < " + num(d) +
               "; ++i) {\n      const double xhat = (p[i] - mean) * invstd;\n"
               "      q[i] = static_cast<float>(invstd * (static_cast<double>(g[i]) * " +
               scale + "[i] - meanG - xhat * meanGXhat));\n    }\n  }\n}\n\n";
    addCode(launch(k, rows, op));
    return success();
  }

  /// graph.rotary, one thread per element: its partner in the other half of the last axis is
  /// read, so it is a kernel of its own rather than an elementwise node; the CPU kernel's
  /// formula and order.
  LogicalResult rotary(RotaryOp ro) {
    Operation *op = ro;
    const int64_t total = tensorElements(ro.getInput()), n = tensorElements(ro.getCos()),
                  d = tensorDims(ro.getInput()).back(), half = d / 2;
    const std::string k = kernelName("rotary"), x = ptr(ro.getInput()), c = ptr(ro.getCos()),
                      s = ptr(ro.getSin()), h = num(half);
    const std::string rotated = ro.getTranspose()
                                    ? "(first ? float(" + x + "[i + " + h + "]) * float(" + s +
                                          "[t + " + h + "]) : -(float(" + x + "[i - " + h +
                                          "]) * float(" + s + "[t - " + h + "])))"
                                    : "(first ? -float(" + x + "[i + " + h + "]) : float(" + x +
                                          "[i - " + h + "])) * float(" + s + "[t])";
    kernels += "// " + label(op) + ": rotary embedding" + (ro.getTranspose() ? " (adjoint)" : "") +
               ", one thread per element\n__global__ void " + k + "(unsigned char *arena) {\n" +
               gridLoop("i", num(total)) + "    const int64_t t = i % " + num(n) +
               ";\n    const bool first = i % " + num(d) + " < " + h +
               ";\n    const float rotated = " + rotated + ";\n    " + ptr(ro.getResult()) +
               "[i] = float(" + x + "[i]) * float(" + c + "[t]) + rotated;\n  }\n}\n\n";
    addCode(launch(k, total, op));
    return success();
  }

  /// RMS normalization, the mean square in double: a warp per row, or with
  /// --cuda-row-kernels=thread one thread per row in the CPU kernel's order (bit for bit).
  LogicalResult rmsNorm(RmsNormOp rn) {
    Operation *op = rn;
    const int64_t d = tensorDims(rn.getInput()).back(), rows = tensorElements(rn.getInput()) / d;
    const std::string k = kernelName("rms_norm"), x = ptr(rn.getInput()), y = ptr(rn.getResult()),
                      scale = ptr(rn.getScale()),
                      epsilon = floatLiteral(attrFloat(rn.getEpsilon()));
    const std::string normalize = "static_cast<float>(v * invstd * " + scale + "[i]);\n";
    if (!options.cudaThreadRows) {
      // A warp per row: the lanes' sums of squares in double (row_lanes.h), then every lane
      // normalizes its elements. Equal to the CPU's sequential sum to double rounding.
      kernels += warpRowKernel(
          k, "(unsigned char *arena) {\n",
          "// " + label(op) + ": RMS normalization of " + num(d) +
              " elements per row, a warp per row\n",
          "  GRAPHC_BLOCK_SHARED double squareParts[GRAPHC_BLOCK_SIZE];\n", num(rows),
          "        const " + elementType(rn.getInput()) + " *p = " + x + " + r * " + num(d) + ";\n",
          {"        double squares = 0.0;\n        for (int64_t i = lane; i < " + num(d) +
               "; i += 32) {\n          const double v = p[i];\n          squares += v * v;\n"
               "        }\n        squareParts[t] = squares;\n",
           "        const double invstd = 1.0 / sqrt(::graphc::rt::laneSum(squareParts + t - "
           "lane) / " +
               num(d) + ".0 + static_cast<double>(" + epsilon +
               "));\n        if (lane == 0)\n          " + ptr(rn.getSavedInvstd()) +
               "[r] = static_cast<float>(invstd);\n        " + elementType(rn.getResult()) +
               " *q = " + y + " + r * " + num(d) + ";\n        for (int64_t i = lane; i < " +
               num(d) + "; i += 32) {\n          const double v = p[i];\n          q[i] = " +
               normalize + "        }\n"});
      addCode(launchBlocks(k, warpRowBlocks(rows), op));
      return success();
    }
    kernels += "// " + label(op) + ": RMS normalization, one thread per row\n__global__ void " + k +
               "(unsigned char *arena) {\n" + gridLoop("r", num(rows)) + "    const " +
               elementType(rn.getInput()) + " *p = " + x + " + r * " + num(d) + ";\n    " +
               elementType(rn.getResult()) + " *q = " + y + " + r * " + num(d) +
               ";\n    double squares = 0.0;\n    for (int64_t i = 0; i < " + num(d) +
               "; ++i) {\n      const double v = p[i];\n      squares += v * v;\n    }\n"
               "    const double invstd = 1.0 / sqrt(" +
               meanOf("squares", d) + " + static_cast<double>(" + epsilon + "));\n    " +
               ptr(rn.getSavedInvstd()) +
               "[r] = static_cast<float>(invstd);\n"
               "    for (int64_t i = 0; i < " +
               num(d) + "; ++i) {\n      const double v = p[i];\n      q[i] = " + normalize +
               "    }\n  }\n}\n\n";
    addCode(launch(k, rows, op));
    return success();
  }

  /// The scale gradient by one block per column (deterministic block sums, as
  /// layerNormBackward), then dx by a warp per row (a thread per row with
  /// --cuda-row-kernels=thread, in the CPU kernel's order).
  LogicalResult rmsNormBackward(RmsNormBackwardOp rn) {
    Operation *op = rn;
    const int64_t d = tensorDims(rn.getInput()).back(), rows = tensorElements(rn.getInput()) / d;
    const std::string dy = ptr(rn.getGrad()), x = ptr(rn.getInput()),
                      invstd = ptr(rn.getSavedInvstd()), scale = ptr(rn.getScale());
    std::string columns = kernelName("rms_norm_backward_columns");
    kernels += "// " + label(op) +
               ": RMS-norm scale gradient, one block per column\n__global__ void " + columns +
               "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double part[GRAPHC_BLOCK_SIZE];\n"
               "  const int64_t i = blockIdx.x;\n  GRAPHC_BLOCK_THREADS(t) {\n"
               "    double sumDyXhat = 0.0;\n    for (int64_t r = t; r < " +
               num(rows) + "; r += GRAPHC_BLOCK_SIZE)\n      sumDyXhat += static_cast<double>(" +
               dy + "[r * " + num(d) + " + i]) * " + x + "[r * " + num(d) + " + i] * " + invstd +
               "[r];\n    part[t] = sumDyXhat;\n  }\n  GRAPHC_BLOCK_SUM(part)\n"
               "  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0)\n      " +
               ptr(rn.getGradScale()) + "[i] = static_cast<float>(part[0]);\n  }\n}\n\n";
    addCode(launchBlocks(columns, d, op));
    std::string k = kernelName("rms_norm_backward_rows");
    const std::string gradXhat = "static_cast<double>(g[i]) * " + scale + "[i] * (v * invstd)",
                      dx = "static_cast<float>(invstd * (static_cast<double>(g[i]) * " + scale +
                           "[i] - v * invstd * meanGXhat));\n";
    if (!options.cudaThreadRows) {
      const std::string rowDecls = "        const " + elementType(rn.getGrad()) + " *g = " + dy +
                                   " + r * " + num(d) + ";\n        const " +
                                   elementType(rn.getInput()) + " *p = " + x + " + r * " + num(d) +
                                   ";\n        const double invstd = " + invstd + "[r];\n";
      kernels += warpRowKernel(
          k, "(unsigned char *arena) {\n",
          "// " + label(op) + ": RMS-norm input gradient, a warp per row\n",
          "  GRAPHC_BLOCK_SHARED double dotParts[GRAPHC_BLOCK_SIZE];\n", num(rows), rowDecls,
          {"        double sumGXhat = 0.0;\n        for (int64_t i = lane; i < " + num(d) +
               "; i += 32) {\n          const double v = p[i];\n          sumGXhat += " + gradXhat +
               ";\n        }\n        dotParts[t] = sumGXhat;\n",
           "        const double meanGXhat = ::graphc::rt::laneSum(dotParts + t - lane) / " +
               num(d) + ".0;\n        " + elementType(rn.getGradInput()) +
               " *q = " + ptr(rn.getGradInput()) + " + r * " + num(d) +
               ";\n        for (int64_t i = lane; i < " + num(d) +
               "; i += 32) {\n          const double v = p[i];\n          q[i] = " + dx +
               "        }\n"});
      addCode(launchBlocks(k, warpRowBlocks(rows), op));
      return success();
    }
    kernels += "// " + label(op) +
               ": RMS-norm input gradient, one thread per row\n__global__ void " + k +
               "(unsigned char *arena) {\n" + gridLoop("r", num(rows)) + "    const " +
               elementType(rn.getGrad()) + " *g = " + dy + " + r * " + num(d) + ";\n    const " +
               elementType(rn.getInput()) + " *p = " + x + " + r * " + num(d) + ";\n    " +
               elementType(rn.getGradInput()) + " *q = " + ptr(rn.getGradInput()) + " + r * " +
               num(d) + ";\n    const double invstd = " + invstd +
               "[r];\n    double sumGXhat = 0.0;\n    for (int64_t i = 0; i < " + num(d) +
               "; ++i) {\n      const double v = p[i];\n      sumGXhat += " + gradXhat +
               ";\n    }\n    const double meanGXhat = " + meanOf("sumGXhat", d) +
               ";\n    for (int64_t i = 0; i < " + num(d) +
               "; ++i) {\n      const double v = p[i];\n      q[i] = " + dx + "    }\n  }\n}\n\n";
    addCode(launch(k, rows, op));
    return success();
  }

  /// dropout and dropout_backward (y = keep ? x / (1 - ratio) : 0): an elementwise node whose
  /// mask is dropout_mask.h's, keyed as the CPU target keys it (graphc --seed, the op id, the
  /// step counter read from the arena), so the masks are the CPU's bit for bit.
  /// The key of a counter-based draw (dropout_mask.h) at this step, computed once per thread.
  std::function<std::string(const std::string &)> drawKeyPrologue(Value step, uint64_t opId) {
    const std::string stepPtr = ptr(step), seed = std::to_string(options.dropoutSeed) + "ull",
                      id = std::to_string(opId) + "ull";
    return [=](const std::string &k) {
      return "  const uint64_t dropKey_" + k + " = ::graphc::rt::dropoutKey(" + seed + ", " + id +
             ", static_cast<int64_t>(" + stepPtr + "[0]));\n";
    };
  }

  EwNode dropoutNode(Operation *op, Value x, Value y, Value step, APFloat ratioAttr, uint64_t opId,
                     int64_t indexOffset, int64_t maskRepeat, int64_t maskInner) {
    EwNode n = unaryNode(op, x, y, nullptr); // with its own code, which names the key
    const std::string ratio = floatLiteral(attrFloat(ratioAttr));
    n.prologue = drawKeyPrologue(step, opId);
    std::string draw = maskRepeat == 1
                           ? "i"
                           : "::graphc::rt::maskDrawIndex(i, " + std::to_string(maskRepeat) + ", " +
                                 std::to_string(maskInner) + ")";
    if (indexOffset)
      draw += " + " + std::to_string(indexOffset);
    n.code = [=](ArrayRef<std::string> in, ArrayRef<std::string> o, const std::string &k) {
      return "      const float " + o[0] + " = ::graphc::rt::dropoutKeeps(dropKey_" + k + ", " +
             draw + ", " + ratio + ") ? " + in[0] + " * (1.0f / (1.0f - " + ratio + ")) : 0.0f;\n";
    };
    return n;
  }

  /// Counter-based noise (graph.random_normal, graph.random_uniform): no input, so it fuses
  /// into the kernel of the op that reads it; `draw(key, index)` is its element's expression.
  EwNode randomNode(Operation *op, Value y, Value step, uint64_t opId, int64_t indexOffset,
                    std::function<std::string(const std::string &, const std::string &)> draw,
                    int64_t repeat = 1) {
    EwNode n;
    n.op = op;
    n.label = label(op);
    n.n = tensorElements(y);
    n.outs.push_back(y);
    n.prologue = drawKeyPrologue(step, opId);
    std::string index = repeat == 1 ? "i" : "i / " + std::to_string(repeat);
    if (indexOffset)
      index += " + " + std::to_string(indexOffset);
    n.code = [=](ArrayRef<std::string>, ArrayRef<std::string> o, const std::string &k) {
      return "      const float " + o[0] + " = " + draw("dropKey_" + k, index) + ";\n";
    };
    return n;
  }

  /// graph.random_affine: a thread per output pixel, each computing its sample's map from the
  /// sample's two draws (random_affine.h, shared with the CPU kernel).
  LogicalResult randomAffine(RandomAffineOp r) {
    Operation *op = r;
    auto d = tensorDims(r.getInput());
    const int64_t n = tensorElements(r.getResult()), plane = d[2] * d[3];
    auto S = [](int64_t v) { return std::to_string(v); };
    std::string k = kernelName("random_affine");
    kernels +=
        "// " + label(op) + ": a random " + r.getKind().str() + " of each image\n" +
        "__global__ void " + k + "(unsigned char *arena) {\n" +
        "  const ::graphc::rt::RandomAffineParams params = " +
        randomAffineParamsLiteral(r, [](float f) { return floatLiteral(f); }) + ";\n" +
        "  const uint64_t key = ::graphc::rt::dropoutKey(" + std::to_string(options.dropoutSeed) +
        "ull, " + S(r.getOpId()) + "ull, static_cast<int64_t>(" + ptr(r.getStep()) + "[0]));\n" +
        gridLoop("i", S(n)) + "    const int64_t p = i / " + S(plane) + ", yx = i % " + S(plane) +
        ";\n" + "    float m[6];\n" + "    ::graphc::rt::randomAffineMap(params, key, p / " +
        S(d[1]) + " + " + S(r.getSampleOffset()) + ", " + S(d[2]) + ", " + S(d[3]) + ", m);\n" +
        "    " + ptr(r.getResult()) + "[i] = ::graphc::rt::randomAffinePixel(params, m, " +
        ptr(r.getInput()) + " + p * " + S(plane) + ", " + S(d[2]) + ", " + S(d[3]) + ", yx / " +
        S(d[3]) + ", yx % " + S(d[3]) + ");\n  }\n}\n\n";
    addCode(launch(k, n, op));
    return success();
  }

  /// A micro-batch's rows of the data or labels (f32 or int64): a copy in 32-bit words.
  LogicalResult batchSlice(BatchSliceOp b) {
    Operation *op = b;
    const uint64_t bytes = tensorBytes(b.getResult().getType());
    if (bytes % 4)
      return op->emitError("graph.batch_slice of a tensor whose size is not a multiple of 4 "
                           "bytes is not supported on --target=cuda yet; use --target=cpu");
    const int64_t from = plannedOffset(b.getInput()) + int64_t(b.getIndex() * bytes),
                  words = int64_t(bytes / 4);
    std::string k = kernelName("batch_slice");
    kernels += "// " + label(op) + ": micro-batch " + num(b.getIndex()) + " of " +
               num(b.getCount()) + "\n__global__ void " + k + "(unsigned char *arena) {\n" +
               gridLoop("i", num(words)) + "    reinterpret_cast<uint32_t *>(arena + " +
               num(plannedOffset(b.getResult())) +
               ")[i] = reinterpret_cast<const uint32_t *>(arena + " + num(from) +
               ")[i];\n  }\n}\n\n";
    addCode(launch(k, words, op));
    return success();
  }

  /// y[i] = value: the zero initial state of recurrent layers, a slice gradient's padding.
  LogicalResult fill(Operation *op, Value y, float value) {
    int64_t n = tensorElements(y);
    std::string k = kernelName("fill");
    kernels += "// " + label(op) + "\n__global__ void " + k + "(unsigned char *arena) {\n" +
               gridLoop("i", std::to_string(n)) + "    " + ptr(y) + "[i] = " +
               floatLiteral(value) + ";\n  }\n}\n\n";
    addCode(launch(k, n, op));
    return success();
  }

  /// A slice (part = the result, read from `whole` at `offset` along `axis`) or one input of a
  /// concat (part = the input, written into `whole`): a copy over the part's elements.
  LogicalResult copyAlongAxis(Operation *op, Value from, Value to, int64_t axis, int64_t offset,
                              bool intoWhole) {
    Value part = intoWhole ? from : to, whole = intoWhole ? to : from;
    auto pd = tensorDims(part), wd = tensorDims(whole);
    int64_t inner = 1;
    for (size_t i = axis + 1; i < pd.size(); ++i)
      inner *= pd[i];
    int64_t partRows = pd[axis] * inner, wholeRows = wd[axis] * inner, n = tensorElements(part);
    auto S = [](int64_t v) { return std::to_string(v); };
    std::string wholeIndex = "(i / " + S(partRows) + ") * " + S(wholeRows) + " + " +
                             S(offset * inner) + " + i % " + S(partRows);
    std::string k = kernelName(intoWhole ? "concat" : "slice");
    std::string assign = intoWhole ? ptr(whole) + "[" + wholeIndex + "] = " + ptr(part) + "[i]"
                                   : ptr(part) + "[i] = " + ptr(whole) + "[" + wholeIndex + "]";
    kernels += "// " + label(op) + "\n__global__ void " + k + "(unsigned char *arena) {\n" +
               gridLoop("i", S(n)) + "    " + assign + ";\n  }\n}\n\n";
    addCode(launch(k, n, op));
    return success();
  }

  /// One thread per output element: its coordinates (row-major over the result's dims) read
  /// the input at the permuted coordinates.
  LogicalResult transpose(TransposeOp t) {
    Operation *op = t;
    auto in = tensorDims(t.getInput()), outDims = tensorDims(t.getResult());
    ArrayRef<int64_t> perm = t.getPerm();
    size_t rank = in.size();
    std::vector<int64_t> inStride(rank, 1);
    for (size_t d = rank - 1; d-- > 0;)
      inStride[d] = inStride[d + 1] * in[d + 1];
    auto S = [](int64_t v) { return std::to_string(v); };
    int64_t n = tensorElements(t.getResult());
    std::string body = "    int64_t rest = i, src = 0;\n";
    for (size_t d = rank; d-- > 0;)
      body += "    src += (rest % " + S(outDims[d]) + ") * " + S(inStride[perm[d]]) +
              ";\n    rest /= " + S(outDims[d]) + ";\n";
    std::string k = kernelName("transpose");
    kernels += "// " + label(op) + "\n__global__ void " + k + "(unsigned char *arena) {\n" +
               gridLoop("i", S(n)) + body + "    " + ptr(t.getResult()) + "[i] = " +
               ptr(t.getInput()) + "[src];\n  }\n}\n\n";
    addCode(launch(k, n, op));
    return success();
  }

  /// One thread per (index, feature); an index that is not a row reads zeros (embeddingRow).
  LogicalResult embedding(EmbeddingOp e) {
    Operation *op = e;
    auto table = tensorDims(e.getTable());
    int64_t count = tensorElements(e.getIndices()), features = table[1];
    auto S = [](int64_t v) { return std::to_string(v); };
    std::string k = kernelName("embedding");
    kernels += "// " + label(op) + "\n__global__ void " + k + "(unsigned char *arena) {\n" +
               gridLoop("i", S(count * features)) + "    const int64_t row = "
               "::graphc::rt::embeddingRow(" + ptr(e.getIndices()) + "[i / " + S(features) +
               "], " + S(table[0]) + ");\n    " + ptr(e.getResult()) +
               "[i] = row < 0 ? 0.0f : " + ptr(e.getTable()) + "[row * " + S(features) +
               " + i % " + S(features) + "];\n  }\n}\n\n";
    addCode(launch(k, count * features, op));
    return success();
  }

  /// The table gradient without atomics, deterministic and in the CPU kernel's order: zero it,
  /// then one thread per feature column adds the gradient rows in index order (O(count) per
  /// thread, `features`-wide parallelism).
  LogicalResult embeddingBackward(EmbeddingBackwardOp e) {
    Operation *op = e;
    auto table = tensorDims(e.getResult());
    int64_t count = tensorElements(e.getIndices()), vocabulary = table[0], features = table[1];
    auto S = [](int64_t v) { return std::to_string(v); };
    if (failed(fill(op, e.getResult(), 0.0f)))
      return failure();
    std::string k = kernelName("embedding_backward");
    kernels += "// " + label(op) + "\n__global__ void " + k + "(unsigned char *arena) {\n" +
               gridLoop("f", S(features)) + "    for (int64_t i = 0; i < " + S(count) +
               "; ++i) {\n      const int64_t row = ::graphc::rt::embeddingRow(" +
               ptr(e.getIndices()) + "[i], " + S(vocabulary) + ");\n      if (row >= 0)\n        " +
               ptr(e.getResult()) + "[row * " + S(features) + " + f] += " + ptr(e.getGrad()) +
               "[i * " + S(features) + " + f];\n    }\n  }\n}\n\n";
    addCode(launch(k, features, op));
    return success();
  }

  LogicalResult biasGrad(BiasGradOp g) {
    Operation *op = g;
    auto d = tensorDims(g.getGrad());
    int64_t axis = g.getAxis(), outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i)
      outer *= d[i];
    for (size_t i = axis + 1; i < d.size(); ++i)
      inner *= d[i];
    int64_t channels = d[axis];
    if (int64_t splits = blockSplits(op); splits > 1 && outer % splits == 0) {
      // graph.block_splits: each of S blocks per channel sums outer / S rows of it into a
      // partial (the op's workspace), then one thread per channel adds its S partials in
      // block order.
      const std::string sums = partials(op, channels, splits, 0);
      std::string sumKernel = kernelName("bias_grad_sum");
      kernels += "// " + label(op) + ": bias gradient, " + num(splits) +
                 " blocks per channel: partial sums\n__global__ void " + sumKernel +
                 "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double part[GRAPHC_BLOCK_SIZE];\n"
                 "  const int64_t c = blockIdx.x / " +
                 num(splits) + ", s = blockIdx.x % " + num(splits) +
                 ";\n  GRAPHC_BLOCK_THREADS(t) {\n    double sum = 0.0;\n" +
                 channelShare(outer, channels, inner,
                              "        sum += " + ptr(g.getGrad()) + "[off];\n", splits) +
                 "    part[t] = sum;\n  }\n  GRAPHC_BLOCK_SUM(part)\n  GRAPHC_BLOCK_THREADS(t) {\n"
                 "    if (t == 0)\n      " +
                 sums + "[blockIdx.x] = part[0];\n  }\n}\n\n";
      std::string k = kernelName("bias_grad");
      kernels += "// " + label(op) + ": bias gradient, " + num(splits) +
                 " blocks per channel: the partials added in block order\n__global__ void " + k +
                 "(unsigned char *arena) {\n" + gridLoop("c", num(channels)) +
                 sumPartials("sum", sums, splits) + "    " + ptr(g.getResult()) +
                 "[c] = static_cast<float>(sum);\n  }\n}\n\n";
      addCode(launchBlocks(sumKernel, channels * splits, op));
      addCode(launch(k, channels, op));
      return success();
    }
    std::string k = kernelName("bias_grad");
    kernels +=
        "// " + label(op) +
        ": bias gradient, one block per channel: each thread sums its share in double, "
        "then a fixed tree adds the shares\n__global__ void " +
        k +
        "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double part[GRAPHC_BLOCK_SIZE];\n"
        "  const int64_t c = blockIdx.x;\n  GRAPHC_BLOCK_THREADS(t) {\n    double sum = 0.0;\n" +
        channelShare(outer, channels, inner, "        sum += " + ptr(g.getGrad()) + "[off];\n") +
        "    part[t] = sum;\n  }\n  GRAPHC_BLOCK_SUM(part)\n  GRAPHC_BLOCK_THREADS(t) {\n"
        "    if (t == 0)\n      " +
        ptr(g.getResult()) + "[c] = static_cast<float>(part[0]);\n  }\n}\n\n";
    addCode(launchBlocks(k, channels, op));
    return success();
  }

  /// Softmax (y unset) or its backward over the middle axis of [outer, dim, inner]: one thread per
  /// (outer, inner) row.
  /// Softmax (or, with `y`, its backward) along `axis`; `causal` (the forward over the last
  /// axis of [..., queries, keys] scores) gives row r only its keys 0..r % queries and zeros
  /// the others, as the CPU's softmaxCausal.
  LogicalResult softmax(Operation *op, Value x, Value y, Value out, int64_t axis,
                        bool causal = false) {
    auto d = tensorDims(x);
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i)
      outer *= d[i];
    for (size_t i = axis + 1; i < d.size(); ++i)
      inner *= d[i];
    int64_t dim = d[axis];
    auto S = [](int64_t v) { return std::to_string(v); };
    std::string k = kernelName(y ? "softmax_backward" : "softmax");
    if (inner == 1 && dim >= 32 && !options.cudaThreadRows) {
      // Over the last axis and at least a warp wide: a warp per row (warpRowKernel), its lanes'
      // maxima and double sums meeting in shared memory; the same terms as the CPU kernel,
      // added in lane order (equal to its sequential sums to double rounding).
      // (causal: `seen`, the row's unmasked keys, bounds the passes; the rest is zeroed.)
      const std::string seen = causal ? "        const int64_t seen = r % " + S(d[d.size() - 2]) +
                                            " + 1 < " + S(dim) + " ? r % " + S(d[d.size() - 2]) +
                                            " + 1 : " + S(dim) + ";\n"
                                      : std::string();
      const std::string rowDecls = "        const int64_t base = r * " + S(dim) + ";\n" + seen;
      const std::string loop = "        for (int64_t j = lane; j < " +
                               (causal ? std::string("seen") : S(dim)) + "; j += 32)";
      const std::string comment = "// " + label(op) + ": " + S(dim) + " per row, a warp per row\n";
      if (!y) {
        const std::string xs = ptr(x) + "[base + j]", ys = ptr(out) + "[base + j]";
        kernels += warpRowKernel(
            k, "(unsigned char *arena) {\n", comment,
            "  GRAPHC_BLOCK_SHARED float maxParts[GRAPHC_BLOCK_SIZE];\n"
            "  GRAPHC_BLOCK_SHARED double sumParts[GRAPHC_BLOCK_SIZE];\n",
            S(outer), rowDecls,
            {"        float mx = -INFINITY;\n" + loop + "\n          mx = mx < " + xs + " ? " + xs +
                 " : mx;\n        maxParts[t] = mx;\n",
             "        const float mx = ::graphc::rt::laneMax(maxParts + t - lane);\n"
             "        double sum = 0.0;\n" +
                 loop + " {\n          const float e = expf(" + xs + " - mx);\n          " + ys +
                 " = e;\n          sum += e;\n        }\n        sumParts[t] = sum;\n",
             "        const float inv = static_cast<float>(1.0 / ::graphc::rt::laneSum(sumParts + "
             "t - lane));\n" +
                 loop + "\n          " + ys + " *= inv;\n" +
                 (causal ? "        for (int64_t j = seen + lane; j < " + S(dim) +
                               "; j += 32)\n          " + ys + " = 0.0f;\n"
                         : std::string())});
      } else {
        const std::string dy = ptr(x) + "[base + j]", ys = ptr(y) + "[base + j]",
                          dx = ptr(out) + "[base + j]";
        kernels += warpRowKernel(
            k, "(unsigned char *arena) {\n", comment,
            "  GRAPHC_BLOCK_SHARED double sumParts[GRAPHC_BLOCK_SIZE];\n", S(outer), rowDecls,
            {"        double dot = 0.0;\n" + loop + "\n          dot += static_cast<double>(" + dy +
                 ") * " + ys + ";\n        sumParts[t] = dot;\n",
             "        const float fdot = static_cast<float>(::graphc::rt::laneSum(sumParts + t - "
             "lane));\n" +
                 loop + "\n          " + dx + " = " + ys + " * (" + dy + " - fdot);\n"});
      }
      addCode(launchBlocks(k, warpRowBlocks(outer), op));
      return success();
    }
    std::string head = "// " + label(op) + "\n__global__ void " + k + "(unsigned char *arena) {\n" +
                       gridLoop("r", S(outer * inner)) + "    const int64_t base = (r / " +
                       S(inner) + ") * " + S(dim * inner) + " + r % " + S(inner) + ";\n";
    std::string bodyText;
    if (!y) {
      // (causal: inner is 1, and `seen` bounds the passes; the rest of the row is zeroed.)
      const std::string Q = causal ? S(d[d.size() - 2]) : std::string(),
                        bound = causal ? std::string("seen") : S(dim);
      bodyText =
          "    const float *xs = " + ptr(x) + " + base;\n    float *ys = " + ptr(out) +
          " + base;\n" +
          (causal ? "    const int64_t seen = r % " + Q + " + 1 < " + S(dim) + " ? r % " + Q +
                        " + 1 : " + S(dim) + ";\n"
                  : std::string()) +
          "    float mx = -INFINITY;\n    for (int64_t d = 0; d < " + bound +
          "; ++d)\n      mx = mx < xs[d * " + S(inner) + "] ? xs[d * " + S(inner) +
          "] : mx;\n    double sum = 0.0;\n    for (int64_t d = 0; d < " + bound +
          "; ++d) {\n      const float e = expf(xs[d * " + S(inner) + "] - mx);\n      ys[d * " +
          S(inner) +
          "] = e;\n      sum += e;\n    }\n    const float inv = "
          "static_cast<float>(1.0 / sum);\n    for (int64_t d = 0; d < " +
          bound + "; ++d)\n      ys[d * " + S(inner) + "] *= inv;\n" +
          (causal ? "    for (int64_t d = seen; d < " + S(dim) + "; ++d)\n      ys[d] = 0.0f;\n"
                  : std::string());
    } else {
      bodyText = "    const float *dy = " + ptr(x) + " + base, *y = " + ptr(y) +
                 " + base;\n    float *dx = " + ptr(out) + " + base;\n    double dot = 0.0;\n"
                 "    for (int64_t d = 0; d < " + S(dim) + "; ++d)\n      dot += "
                 "static_cast<double>(dy[d * " + S(inner) + "]) * y[d * " + S(inner) +
                 "];\n    const float fdot = static_cast<float>(dot);\n    for (int64_t d = 0; d < " +
                 S(dim) + "; ++d)\n      dx[d * " + S(inner) + "] = y[d * " + S(inner) +
                 "] * (dy[d * " + S(inner) + "] - fdot);\n";
    }
    kernels += head + bodyText + "  }\n}\n\n";
    addCode(launch(k, outer * inner, op));
    return success();
  }

  std::string labelsPtr(Value labels, bool indices) {
    return indices ? "reinterpret_cast<const int64_t *>(arena + " +
                         std::to_string(plannedOffset(labels)) + ")"
                   : ptr(labels);
  }

  /// `target` label-smoothed by `smoothing` ε, as runtime/kernels.cpp's Smoothing: target *
  /// (1 - ε) + ε / classes (binary: ε / 2), in double; `target` itself when there is none.
  static std::string smoothed(const std::string &target, std::optional<APFloat> smoothing,
                              LossKind kind, int64_t classes) {
    if (!smoothing || smoothing->isZero())
      return "static_cast<double>(" + target + ")";
    const double eps = smoothing->convertToDouble();
    const double add = kind == LossKind::binary_crossentropy ? eps / 2.0
                       : classes > 0                         ? eps / double(classes)
                                                             : 0.0;
    char buffer[96];
    std::snprintf(buffer, sizeof(buffer), " * %.17g + %.17g)", 1.0 - eps, add);
    return "(static_cast<double>(" + target + ")" + buffer;
  }

  /// The code of a sparse crossentropy row's label-smoothed loss into `loss` (runtime/kernels.cpp
  /// rowLoss): sum_j t'_j (lse - x_j), or -t'_j log p_j from probabilities, t' the smoothed
  /// one-hot target of class y.
  /// With class weights (`classTable`) each term is also weighted by its class's weight.
  static std::string smoothedSparseRowLoss(bool logits, const std::string &C, APFloat smoothing,
                                           int64_t classes, const std::string &classTable = "") {
    const std::string target =
        (classTable.empty() ? "" : "static_cast<double>(" + classTable + "[j]) * ") +
        smoothed("(j == y ? 1.0 : 0.0)", smoothing, LossKind::sparse_categorical_crossentropy,
                 classes);
    return (logits ? "    const double lse = ::graphc::rt::cuda::logSumExpRow(row, " + C + ");\n"
                   : std::string()) +
           "    for (int64_t j = 0; j < " + C + "; ++j)\n      loss += " + target + " * " +
           (logits ? "(lse - row[j]);\n"
                   : "-log(static_cast<double>(::graphc::rt::cuda::clipProb(row[j])));\n");
  }

  /// The mean loss (runtime/kernels.cpp lossForward) by one block: each thread adds the losses
  /// of its rows (every row's own terms in the CPU kernel's order) in double, then a fixed tree
  /// adds the threads' totals (deterministic; equal to the CPU's to double rounding).
  LogicalResult lossForward(LossOp l) {
    Operation *op = l;
    lossKind = l.getKind();
    ignoreIndex = l.getIgnoreIndex();
    maskedLoss = bool(l.getWeights());
    batch = tensorDims(l.getPrediction())[0];
    if (l.getWeights() || l.getSampleWeights())
      return weightedLossForward(l);
    auto [rows, classes] = lossRowsAndClasses(l.getKind(), l.getPrediction());
    bool logits = l.getFromLogits();
    std::optional<int64_t> ignored = l.getIgnoreIndex();
    std::optional<APFloat> smoothing = l.getLabelSmoothing();
    if (smoothing && smoothing->isZero())
      smoothing.reset();
    // An ignored label or class weights: the mean divides by the counted labels' weight.
    const bool counting = ignored || l.getClassWeights();
    auto S = [](int64_t v) { return std::to_string(v); };
    std::string k = kernelName("loss");
    std::string b =
        "// " + label(op) + ": " + stringifyLossKind(l.getKind()).str() +
        (logits ? " from logits" : "") + ", one block (a fixed summation order)\n__global__ void " +
        k + "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double part[GRAPHC_BLOCK_SIZE];\n" +
        (counting ? "  GRAPHC_BLOCK_SHARED double counted[GRAPHC_BLOCK_SIZE];\n" : "") +
        "  const float *pred = " + ptr(l.getPrediction()) +
        ";\n  GRAPHC_BLOCK_THREADS(t) {\n  double total = 0.0;\n";
    int64_t count = rows;
    const std::string C = S(classes), B = S(rows);
    const std::string table = weightTable(l.getClassWeights(), k + "_class_weights", b);
    const std::string positive = weightTable(l.getPosWeight(), k + "_pos_weight", b);
    const std::string positiveCount =
        std::to_string(l.getPosWeight() ? l.getPosWeight()->size() : 1);
    const std::string classWeight = table.empty() ? "" : "static_cast<double>(" + table + "[y]) * ";
    switch (l.getKind()) {
    case LossKind::sparse_categorical_crossentropy:
      if (counting)
        b += countRows(l.getIgnoreIndex(), l.getLabels(), l.getWeights(), l.getCount(), table,
                       classes);
      b += "  const int64_t *idx = " + labelsPtr(l.getLabels(), true) +
           ";\n  for (int64_t b = t; b < " + B +
           "; b += GRAPHC_BLOCK_SIZE) {\n    const float *row = pred + b * " + C +
           ";\n    const int64_t y = idx[b];\n" +
           (ignored ? "    if (y == " + int64Literal(*ignored) + ")\n      continue;\n" : "") +
           "    if (y < 0 || y >= " + C + ") {\n      total = NAN;\n      continue;\n    }\n" +
           (smoothing ? "    double loss = 0.0;\n" +
                            smoothedSparseRowLoss(logits, C, *smoothing, classes, table) +
                            "    total += loss;\n"
            : logits ? "    total += " + classWeight + "(::graphc::rt::cuda::logSumExpRow(row, " +
                           C + ") - row[y]);\n"
                     : "    total -= " + classWeight +
                           "log(static_cast<double>(::graphc::rt::cuda::clipProb(row[y])));\n") +
           "  }\n";
      break;
    case LossKind::categorical_crossentropy:
      b += "  const float *target = " + ptr(l.getLabels()) + ";\n  for (int64_t b = t; b < " + B +
           "; b += GRAPHC_BLOCK_SIZE) {\n    const float *row = pred + b * " + C +
           ", *t = target + b * " + C + ";\n" +
           (logits ? "    const double lse = ::graphc::rt::cuda::logSumExpRow(row, " + C +
                         ");\n    for (int64_t j = 0; j < " + C + "; ++j)\n      total += " +
                         smoothed("t[j]", smoothing, l.getKind(), classes) + " * (lse - row[j]);\n"
                   : "    for (int64_t j = 0; j < " + C + "; ++j)\n      total -= " +
                         smoothed("t[j]", smoothing, l.getKind(), classes) +
                         " * log(static_cast<double>(::graphc::rt::cuda::clipProb(row[j])));\n") +
           "  }\n";
      break;
    case LossKind::binary_crossentropy:
      count = rows * classes;
      b += "  const float *target = " + ptr(l.getLabels()) + ";\n  for (int64_t i = t; i < " +
           S(rows * classes) + "; i += GRAPHC_BLOCK_SIZE) {\n    const double x = pred[i], y = " +
           smoothed("target[i]", smoothing, l.getKind(), classes) + ";\n" +
           (!positive.empty()
                ? "    const double positive = " + positive + "[i % " + positiveCount + "];\n" +
                      (logits ? std::string("    total += (1.0 - y) * x + (1.0 + (positive - 1.0) "
                                            "* y) * (log1p(exp(-fabs(x))) + fmax(-x, 0.0));\n")
                              : "    const double p = ::graphc::rt::cuda::clipProb(pred[i]);\n    "
                                "total -= positive * y * log(p) + (1.0 - y) * log(1.0 - p);\n")
            : logits
                ? "    total += (x < 0.0 ? 0.0 : x) - x * y + log1p(exp(-fabs(x)));\n"
                : "    const double p = ::graphc::rt::cuda::clipProb(pred[i]);\n    total -= y * "
                  "log(p) + (1.0 - y) * log(1.0 - p);\n") +
           "  }\n";
      break;
    case LossKind::mse:
      count = rows * classes;
      b += "  const float *target = " + ptr(l.getLabels()) + ";\n  for (int64_t i = t; i < " +
           S(rows * classes) +
           "; i += GRAPHC_BLOCK_SIZE) {\n    const double d = static_cast<double>(pred[i]) - "
           "target[i];\n    total += "
           "d * d;\n  }\n";
      break;
    }
    std::string mean = counting
                           ? "counted[0] > 0.0 ? static_cast<float>(part[0] / counted[0]) : 0.0f"
                       : count > 0 ? "static_cast<float>(part[0] / " + S(count) + ".0)"
                                   : std::string("0.0f");
    b += "  part[t] = total;\n  }\n  GRAPHC_BLOCK_SUM(part)\n" +
         std::string(counting ? "  GRAPHC_BLOCK_SUM(counted)\n" : "") +
         "  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0)\n      " + ptr(l.getResult()) +
         "[0] = " + mean + ";\n  }\n}\n\n";
    kernels += b;
    addCode(launchBlocks(k, 1, op));
    return success();
  }

  /// d(mean loss)/d(pred): one thread per sample row (runtime/kernels.cpp lossBackward).
  LogicalResult lossBackward(LossBackwardOp l) {
    Operation *op = l;
    const bool weighted = bool(l.getWeights());
    // Sample weights: each row's gradient also scales by its sample's weight (0: zero rows).
    const bool sampled = bool(l.getSampleWeights());
    auto [n, classes] = lossRowsAndClasses(l.getKind(), l.getPrediction(), weighted || sampled);
    bool logits = l.getFromLogits();
    std::optional<int64_t> ignored = l.getIgnoreIndex();
    // An ignored label or class weights: divided by the counted labels' weight.
    const bool counting = ignored || l.getClassWeights();
    const bool selective = counting || weighted;
    std::optional<APFloat> smoothing = l.getLabelSmoothing();
    auto smooth = [&, numClasses = classes](const std::string &target) {
      return smoothed(target, smoothing, l.getKind(), numClasses);
    };
    auto S = [](int64_t v) { return std::to_string(v); };
    const std::string C = S(classes);
    std::string k = kernelName("loss_backward");
    std::string b = "// " + label(op) + ": gradient of " + stringifyLossKind(l.getKind()).str() +
                    (logits ? " from logits" : "") + ", one thread per sample";
    const std::string table = weightTable(l.getClassWeights(), k + "_class_weights", b);
    const std::string positive = weightTable(l.getPosWeight(), k + "_pos_weight", b);
    const std::string positiveCount =
        std::to_string(l.getPosWeight() ? l.getPosWeight()->size() : 1);
    if (selective) {
      // A block kernel: each block first counts the labels that are not ignored (sums their
      // class weights, or the weights; every block the same count, by the same fixed tree as
      // the loss), then takes its rows.
      b += std::string(counting ? " (every block counts the labels first)"
                                : " (every block sums the weights first)") +
           "\n__global__ void " + k +
           "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double counted[GRAPHC_BLOCK_SIZE];\n"
           "  GRAPHC_BLOCK_THREADS(t) {\n" +
           countRows(l.getIgnoreIndex(), l.getLabels(), l.getWeights(), l.getCount(), table,
                     classes) +
           "  }\n  GRAPHC_BLOCK_SUM(counted)\n  GRAPHC_BLOCK_THREADS(t) {\n  for (int64_t b = "
           "int64_t(blockIdx.x) * GRAPHC_BLOCK_SIZE + t; b < " +
           S(n) + "; b += int64_t(gridDim.x) * GRAPHC_BLOCK_SIZE) {\n";
    } else {
      b += "\n__global__ void " + k + "(unsigned char *arena) {\n" + gridLoop("b", S(n));
    }
    b += "    const float *row = " + ptr(l.getPrediction()) + " + b * " + C +
         ";\n    float *drow = " + ptr(l.getResult()) + " + b * " + C + ";\n";
    // A weighted row: its weight over the weights' sum (of weight 0, or nothing counted: 0).
    if (weighted)
      b += "    const double weight = " + ptr(l.getWeights()) +
           "[b];\n    if (weight == 0.0 || counted[0] <= 0.0) {\n      for (int64_t j = 0; j < " +
           C + "; ++j)\n        drow[j] = 0.0f;\n      continue;\n    }\n";
    // A row of a sample of weight 0 is zero too (whatever it holds: the CPU kernel skips it).
    if (sampled) {
      const int64_t samples = tensorElements(l.getSampleWeights());
      b += "    const double sample = " + ptr(l.getSampleWeights()) + "[b / " +
           S(samples > 0 ? n / samples : 1) +
           "];\n    if (sample == 0.0) {\n      for (int64_t j = 0; j < " + C +
           "; ++j)\n        drow[j] = 0.0f;\n      continue;\n    }\n";
    }
    const std::string sampleFactor = sampled ? "sample * " : "";
    auto scale = [&](const std::string &unweighted, const std::string &factor) {
      return weighted
                 ? "    const double scale = " + sampleFactor + factor + "weight / counted[0];\n"
                 : "    const double scale = " + sampleFactor + "(" + unweighted + ");\n";
    };
    switch (l.getKind()) {
    case LossKind::sparse_categorical_crossentropy:
      b += (counting ? "    const double scale = " + sampleFactor +
                           "(counted[0] > 0.0 ? 1.0 / counted[0] : 0.0);\n"
                     : scale("1.0 / " + S(n) + ".0", "")) +
           "    const int64_t y = " + labelsPtr(l.getLabels(), true) + "[b];\n" +
           (ignored
                ? "    if (y == " + int64Literal(*ignored) + ") {\n      for (int64_t j = 0; j < " +
                      C + "; ++j)\n        drow[j] = 0.0f;\n      continue;\n    }\n"
                : "") +
           "    if (y < 0 || y >= " + C + ") {\n      for (int64_t j = 0; j < " + C +
           "; ++j)\n        drow[j] = NAN;\n"
           "      continue;\n    }\n" +
           (!table.empty() ? weightedClassGradient(logits, C, table, smooth("(j == y ? 1.0 : 0.0)"))
            : logits       ? "    const double lse = ::graphc::rt::cuda::logSumExpRow(row, " + C +
                           ");\n    for (int64_t j = 0; j < " + C +
                           "; ++j)\n      drow[j] = static_cast<float>((exp(row[j] - lse) - " +
                           (smoothing ? smooth("(j == y ? 1.0 : 0.0)") : "(j == y ? 1.0 : 0.0)") +
                           ") * scale);\n"
            : smoothing ? "    for (int64_t j = 0; j < " + C +
                              "; ++j)\n      drow[j] = ::graphc::rt::cuda::probInRange(row[j]) ? "
                              "static_cast<float>(-" +
                              smooth("(j == y ? 1.0 : 0.0)") + " * scale / row[j]) : 0.0f;\n"
                        : "    for (int64_t j = 0; j < " + C +
                              "; ++j)\n      drow[j] = 0.0f;\n    if "
                              "(::graphc::rt::cuda::probInRange(row[y]))\n      drow[y] = "
                              "static_cast<float>(-scale / row[y]);\n");
      break;
    case LossKind::categorical_crossentropy:
      b += scale("1.0 / " + S(n) + ".0", "") + "    const float *t = " + ptr(l.getLabels()) +
           " + b * " + C + ";\n" +
           (logits ? "    const double lse = ::graphc::rt::cuda::logSumExpRow(row, " + C +
                         ");\n    double tsum = 0.0;\n    for (int64_t j = 0; j < " + C +
                         "; ++j)\n      tsum += " + smooth("t[j]") +
                         ";\n    for (int64_t j = 0; j < " + C +
                         "; ++j)\n      drow[j] = static_cast<float>((exp(row[j] - lse) * tsum - " +
                         smooth("t[j]") + ") * scale);\n"
                   : "    for (int64_t j = 0; j < " + C +
                         "; ++j)\n      drow[j] = ::graphc::rt::cuda::probInRange(row[j]) ? "
                         "static_cast<float>(-" +
                         smooth("t[j]") + " * scale / row[j]) : 0.0f;\n");
      break;
    case LossKind::binary_crossentropy:
      b += scale("1.0 / " + S(n * classes) + ".0", "1.0 / " + C + ".0 * ") +
           "    const float *t = " + ptr(l.getLabels()) + " + b * " + C +
           ";\n    for (int64_t j = 0; j < " + C +
           "; ++j) {\n      const double y = " + smooth("t[j]") + ";\n" +
           (positive.empty() ? std::string()
                             : "      const double positive = " + positive + "[(b * " + C +
                                   " + j) % " + positiveCount + "];\n") +
           (logits ? "      const double x = row[j];\n      const double s = x >= 0 ? 1.0 / (1.0 + "
                     "exp(-x)) : exp(x) / (1.0 + exp(x));\n      drow[j] = static_cast<float>(" +
                         std::string(positive.empty()
                                         ? "(s - y)"
                                         : "((1.0 + (positive - 1.0) * y) * s - positive * y)") +
                         " * scale);\n"
                   : "      const double p = row[j];\n      drow[j] = "
                     "::graphc::rt::cuda::probInRange(row[j]) ? static_cast<float>((" +
                         std::string(positive.empty() ? "-y" : "-positive * y") +
                         " / p + (1.0 - y) / (1.0 - p)) * scale) : 0.0f;\n") +
           "    }\n";
      break;
    case LossKind::mse:
      b += scale("2.0 / " + S(n * classes) + ".0", "2.0 / " + C + ".0 * ") +
           "    const float *t = " + ptr(l.getLabels()) + " + b * " + C +
           ";\n    for (int64_t j = 0; j < " + C +
           "; ++j)\n      drow[j] = static_cast<float>((static_cast<double>(row[j]) - t[j]) * "
           "scale);\n";
      break;
    }
    b += selective ? "  }\n  }\n}\n\n" : "  }\n}\n\n";
    kernels += b;
    addCode(selective ? launchBlocks(k, blocksFor(n), op) : launch(k, n, op));
    return success();
  }

  /// A block phase's code that sets counted[t] to thread t's share of what a selective loss
  /// divides by: the count of labels not equal to `index`, or the sum of the weights, among
  /// `count` (the loss's own labels or weights when null).
  /// With class weights (the table `classTable` of `classes` weights) a counted label adds its
  /// class's weight (NaN outside the classes).
  std::string countRows(std::optional<int64_t> index, Value labels, Value weights, Value count,
                        const std::string &classTable = "", int64_t classes = 0) {
    Value counted = count ? count : weights ? weights : labels;
    const std::string n = std::to_string(tensorElements(counted));
    if (!weights) {
      const std::string C = std::to_string(classes);
      const std::string weight = classTable.empty()
                                     ? "1.0"
                                     : "(all[i] >= 0 && all[i] < " + C + " ? static_cast<double>(" +
                                           classTable + "[all[i]]) : NAN)";
      return "  {\n    const int64_t *all = " + labelsPtr(counted, true) +
             ";\n    double n = 0.0;\n    for (int64_t i = t; i < " + n +
             "; i += GRAPHC_BLOCK_SIZE)\n      n += " +
             (index ? "all[i] != " + int64Literal(*index) + " ? " + weight + " : 0.0" : weight) +
             ";\n    counted[t] = n;\n  }\n";
    }
    return "  {\n    const float *all = " + ptr(counted) +
           ";\n    double n = 0.0;\n    for (int64_t i = t; i < " + n +
           "; i += GRAPHC_BLOCK_SIZE)\n      n += all[i];\n    counted[t] = n;\n  }\n";
  }

  /// The gradient rows of a class-weighted sparse crossentropy (runtime/kernels.cpp
  /// rowLossBackward): from logits (mass p_j - w_j t_j) scale with mass = sum_j w_j t_j, from
  /// probabilities -w_j t_j scale / p_j; t the (smoothed) target `target` of class y.
  static std::string weightedClassGradient(bool logits, const std::string &C,
                                           const std::string &table, const std::string &target) {
    const std::string term = "static_cast<double>(" + table + "[j]) * " + target;
    if (logits)
      return "    const double lse = ::graphc::rt::cuda::logSumExpRow(row, " + C +
             ");\n    double mass = 0.0;\n    for (int64_t j = 0; j < " + C +
             "; ++j)\n      mass += " + term + ";\n    for (int64_t j = 0; j < " + C +
             "; ++j)\n      drow[j] = static_cast<float>((exp(row[j] - lse) * mass - " + term +
             ") * scale);\n";
    return "    for (int64_t j = 0; j < " + C +
           "; ++j)\n      drow[j] = ::graphc::rt::cuda::probInRange(row[j]) ? "
           "static_cast<float>(-(" +
           term + ") * scale / row[j]) : 0.0f;\n";
  }

  /// A file-scope table `name` of `values` prepended to `b`; its name ("" without values).
  static std::string weightTable(std::optional<ArrayRef<float>> values, const std::string &name,
                                 std::string &b) {
    if (!values)
      return "";
    std::string table = "__device__ const float " + name + "[] = {";
    for (auto [i, w] : llvm::enumerate(*values))
      table += (i ? ", " : "") + floatLiteral(w);
    b = table + "};\n" + b;
    return name;
  }

  /// A mean over weighted rows (runtime/kernels.cpp lossForward's per-row path) by one block:
  /// each thread adds w_r times the loss of its rows r of weight w_r != 0 (the crossentropies'
  /// sum over the row's classes, binary crossentropy's and mse's mean), w_r the row's weight
  /// times its sample's (0 for an ignored label), and its share of the divisor (the counted
  /// weights or labels) in double; fixed trees add the threads' totals; thread 0 divides by the
  /// divisor, or by the rows when nothing is counted (sample weights alone).
  LogicalResult weightedLossForward(LossOp l) {
    Operation *op = l;
    auto [rows, classes] = lossRowsAndClasses(l.getKind(), l.getPrediction(), true);
    const bool logits = l.getFromLogits();
    std::optional<APFloat> smoothing = l.getLabelSmoothing();
    if (smoothing && smoothing->isZero())
      smoothing.reset();
    auto smooth = [&, numClasses = classes](const std::string &target) {
      return smoothed(target, smoothing, l.getKind(), numClasses);
    };
    std::optional<int64_t> ignored = l.getIgnoreIndex();
    const bool counting = l.getWeights() || ignored || l.getClassWeights();
    const std::string C = std::to_string(classes), R = std::to_string(rows);
    std::string k = kernelName("loss");
    std::string b = "// " + label(op) + ": " + stringifyLossKind(l.getKind()).str() +
                    (logits ? " from logits" : "") +
                    ", weighted rows, one block (a fixed summation order)\n";
    const std::string table = weightTable(l.getClassWeights(), k + "_class_weights", b);
    const std::string positive = weightTable(l.getPosWeight(), k + "_pos_weight", b);
    const std::string positiveCount =
        std::to_string(l.getPosWeight() ? l.getPosWeight()->size() : 1);
    b += "__global__ void " + k +
         "(unsigned char *arena) {\n  GRAPHC_BLOCK_SHARED double part[GRAPHC_BLOCK_SIZE];\n" +
         (counting ? "  GRAPHC_BLOCK_SHARED double counted[GRAPHC_BLOCK_SIZE];\n" : "") +
         "  const float *pred = " + ptr(l.getPrediction()) +
         ";\n  GRAPHC_BLOCK_THREADS(t) {\n  double total = 0.0;\n" +
         (counting ? countRows(ignored, l.getLabels(), l.getWeights(), l.getCount(), table, classes)
                   : std::string()) +
         "  for (int64_t r = t; r < " + R + "; r += GRAPHC_BLOCK_SIZE) {\n" +
         rowWeight(l.getWeights(), l.getSampleWeights(), rows, ignored, l.getLabels()) +
         "    if (weight == 0.0)\n      continue;\n    const float *row = pred + r * " + C +
         ";\n    double loss = 0.0;\n";
    const std::string lse = "::graphc::rt::cuda::logSumExpRow(row, " + C + ")";
    const std::string clip = "::graphc::rt::cuda::clipProb";
    const std::string classWeight = table.empty() ? "" : "static_cast<double>(" + table + "[y]) * ";
    switch (l.getKind()) {
    case LossKind::sparse_categorical_crossentropy:
      b += "    const int64_t y = " + labelsPtr(l.getLabels(), true) +
           "[r];\n    if (y < 0 || y >= " + C + ")\n      loss = NAN;\n    else" +
           (smoothing
                ? " {\n" + smoothedSparseRowLoss(logits, C, *smoothing, classes, table) + "    }\n"
                : "\n      loss = " + classWeight +
                      (logits ? "(" + lse + " - row[y]);\n"
                              : "-log(static_cast<double>(" + clip + "(row[y])));\n"));
      break;
    case LossKind::categorical_crossentropy:
      b += "    const float *t = " + ptr(l.getLabels()) + " + r * " + C + ";\n" +
           (logits ? "    const double lse = " + lse + ";\n    for (int64_t j = 0; j < " + C +
                         "; ++j)\n      loss += " + smooth("t[j]") + " * (lse - row[j]);\n"
                   : "    for (int64_t j = 0; j < " + C + "; ++j)\n      loss += -" +
                         smooth("t[j]") + " * log(static_cast<double>(" + clip + "(row[j])));\n");
      break;
    case LossKind::binary_crossentropy:
      b += "    const float *t = " + ptr(l.getLabels()) + " + r * " + C +
           ";\n    for (int64_t j = 0; j < " + C +
           "; ++j) {\n      const double x = row[j], y = " + smooth("t[j]") + ";\n" +
           (!positive.empty()
                ? "      const double positive = " + positive + "[j % " + positiveCount + "];\n" +
                      (logits ? std::string("      loss += (1.0 - y) * x + (1.0 + (positive - "
                                            "1.0) * y) * (log1p(exp(-fabs(x))) + fmax(-x, 0.0));\n")
                              : "      const double p = " + clip +
                                    "(row[j]);\n      loss -= positive * y * log(p) + (1.0 - y) "
                                    "* log(1.0 - p);\n")
            : logits ? "      loss += (x < 0.0 ? 0.0 : x) - x * y + log1p(exp(-fabs(x)));\n"
                     : "      const double p = " + clip +
                           "(row[j]);\n      loss -= y * log(p) + (1.0 - y) * log(1.0 - p);\n") +
           "    }\n    loss /= " + C + ".0;\n";
      break;
    case LossKind::mse:
      b += "    const float *t = " + ptr(l.getLabels()) + " + r * " + C +
           ";\n    for (int64_t j = 0; j < " + C +
           "; ++j) {\n      const double d = static_cast<double>(row[j]) - t[j];\n      loss "
           "+= d * d;\n    }\n    loss /= " +
           C + ".0;\n";
      break;
    }
    const std::string mean =
        counting ? "counted[0] > 0.0 ? static_cast<float>(part[0] / counted[0]) : 0.0f"
                 : "static_cast<float>(part[0] / " + R + ".0)";
    b += "    total += weight * loss;\n  }\n  part[t] = total;\n  }\n  GRAPHC_BLOCK_SUM(part)\n" +
         std::string(counting ? "  GRAPHC_BLOCK_SUM(counted)\n" : "") +
         "  GRAPHC_BLOCK_THREADS(t) {\n    if (t == 0)\n      " + ptr(l.getResult()) +
         "[0] = " + mean + ";\n  }\n}\n\n";
    kernels += b;
    addCode(launchBlocks(k, 1, op));
    return success();
  }

  /// The code declaring `weight`, row r's factor on the per-row path (runtime/kernels.cpp
  /// rowWeight): its weight in `weights` times its sample's in `sampleWeights` (rows / samples
  /// rows each), 0 for a label equal to `ignored`; `r` names the row.
  std::string rowWeight(Value weights, Value sampleWeights, int64_t rows,
                        std::optional<int64_t> ignored, Value labels, const std::string &r = "r") {
    std::string weight = weights ? "static_cast<double>(" + ptr(weights) + "[" + r + "])" : "";
    if (sampleWeights) {
      const int64_t samples = tensorElements(sampleWeights);
      const std::string perSample = std::to_string(samples > 0 ? rows / samples : 1);
      weight += (weight.empty() ? "" : " * ") + std::string("static_cast<double>(") +
                ptr(sampleWeights) + "[" + r + " / " + perSample + "])";
    }
    if (weight.empty())
      weight = "1.0";
    if (ignored)
      weight = labelsPtr(labels, true) + "[" + r + "] == " + int64Literal(*ignored) +
               " ? 0.0 : " + weight;
    return "    const double weight = " + weight + ";\n";
  }

  // ---------------------------------------------------------------- fusion

  struct Access {
    int64_t offset;
    uint64_t bytes;
    bool full; // element i touches byte range [si, si+s) only, s its element's bytes
  };

  /// Loads and stores of a candidate kernel made of `group`.
  void accesses(ArrayRef<const EwNode *> group, std::vector<Access> &loads,
                std::vector<Access> &stores) {
    llvm::DenseSet<Value> defined;
    llvm::DenseSet<Operation *> ops;
    for (const EwNode *n : group)
      ops.insert(n->op);
    for (const EwNode *n : group) {
      for (const EwIn &in : n->ins)
        if (in.raw || !defined.contains(in.v)) {
          uint64_t bytes = in.mode == EwIn::Full      ? tensorBytes(in.v.getType())
                           : in.mode == EwIn::Channel ? uint64_t(in.channels) * elementBytes(in.v)
                                                      : elementBytes(in.v);
          loads.push_back({plannedOffset(in.v), bytes, in.mode == EwIn::Full});
        }
      for (Value v : n->outs) {
        defined.insert(v);
        if (mustStore(v, ops))
          stores.push_back({plannedOffset(v), tensorBytes(v.getType()), true});
      }
    }
  }
  /// A value computed in a kernel goes to memory unless every use is inside the kernel.
  static bool mustStore(Value v, const llvm::DenseSet<Operation *> &ops) {
    if (v.use_empty())
      return true;
    for (Operation *user : v.getUsers())
      if (!ops.contains(user))
        return true;
    return false;
  }
  /// Whether running `group` as one kernel (every thread loads its element of every operand,
  /// computes, then stores) could read a byte another thread writes: each store must be
  /// disjoint from every load and store, or the very same bytes read element by element.
  bool fuseHazard(ArrayRef<const EwNode *> group) {
    std::vector<Access> loads, stores;
    accesses(group, loads, stores);
    auto disjoint = [](const Access &a, const Access &b) {
      return uint64_t(a.offset) + a.bytes <= uint64_t(b.offset) ||
             uint64_t(b.offset) + b.bytes <= uint64_t(a.offset);
    };
    for (size_t i = 0; i < stores.size(); ++i) {
      for (const Access &l : loads)
        if (!disjoint(stores[i], l) &&
            !(l.full && l.offset == stores[i].offset && l.bytes == stores[i].bytes))
          return true;
      for (size_t j = i + 1; j < stores.size(); ++j)
        if (!disjoint(stores[i], stores[j]))
          return true;
    }
    return false;
  }
  bool canJoin(ArrayRef<const EwNode *> group, const EwNode &next) {
    if (group.empty() || group.front()->n != next.n)
      return false;
    bool consumes = false;
    for (const EwNode *n : group)
      for (Value v : n->outs)
        for (const EwIn &in : next.ins)
          if (!in.raw && in.v == v)
            consumes = true;
    if (!consumes)
      return false;
    SmallVector<const EwNode *> candidate(group.begin(), group.end());
    candidate.push_back(&next);
    return !fuseHazard(candidate);
  }

  /// One generated kernel for `group`, and its launch.
  std::string renderGroup(ArrayRef<const EwNode *> group, int64_t firstStep, int64_t lastStep) {
    std::string k = kernelName(group.size() > 1 ? "fused" : "ew");
    llvm::DenseSet<Operation *> ops;
    for (const EwNode *n : group)
      ops.insert(n->op);
    std::string labels, prologue, loads, compute, stores;
    llvm::DenseMap<Value, std::string> reg;
    std::map<std::string, std::string> loaded; // load expression -> variable
    int var = 0;
    for (auto [ni, n] : llvm::enumerate(group)) {
      labels += (ni ? " -> " : "") + n->label + " (" + n->op->getName().stripDialect().str() + ")";
      std::string key = std::to_string(ni);
      if (n->prologue)
        prologue += n->prologue(key);
      SmallVector<std::string, 4> in, outNames;
      for (const EwIn &i : n->ins) {
        if (!i.raw && reg.count(i.v)) {
          in.push_back(reg[i.v]);
          continue;
        }
        std::string index = i.mode == EwIn::Full      ? "i"
                             : i.mode == EwIn::Channel ? "(i / " + std::to_string(i.inner) + ") % " +
                                                             std::to_string(i.channels)
                                                       : "0";
        std::string expr = ptr(i.v) + "[" + index + "]";
        auto it = loaded.find(expr);
        if (it == loaded.end()) {
          std::string name = "a" + std::to_string(var++);
          loads += "      const float " + name + " = " + expr + ";\n";
          it = loaded.emplace(expr, name).first;
        }
        in.push_back(it->second);
      }
      for (size_t o = 0; o < n->outs.size(); ++o)
        outNames.push_back("v" + std::to_string(var++));
      compute += n->code(in, outNames, key);
      for (auto [o, v] : llvm::enumerate(n->outs)) {
        if (halfStorageOf(v)) { // a later node reads what the tensor would hold
          std::string rounded = outNames[o] + "r";
          compute += "      const float " + rounded + " = ::graphc::rt::cuda::roundedAs<" +
                     elementType(v) + ">(" + outNames[o] + ");\n";
          outNames[o] = rounded;
        }
        reg[v] = outNames[o];
        if (mustStore(v, ops))
          stores += "      " + ptr(v) + "[i] = " + outNames[o] + ";\n";
      }
    }
    int64_t n = group.front()->n;
    kernels += "// " + std::string(group.size() > 1 ? "fused: " : "") + labels + "\n__global__ void " +
               k + "(unsigned char *arena) {\n" + prologue + gridLoop("i", std::to_string(n)) +
               loads + compute + stores + "  }\n}\n\n";
    if (group.size() > 1) {
      ++fusedKernels;
      fusedOps += group.size();
    }
    ++ewKernels;
    std::string steps = firstStep == lastStep ? "step " + std::to_string(firstStep)
                                              : "steps " + std::to_string(firstStep) + "-" +
                                                    std::to_string(lastStep);
    std::string opsText = group.size() > 1 ? "fused " + labels : labels;
    return "  // " + steps + ": " + opsText + "\n  GRAPHC_LAUNCH(" + k + ", " +
           std::to_string(blocksFor(n)) + ", " + std::to_string(kThreads) + ", " +
           cppString("kernel " + k + " of " + labels) + ", arena);\n";
  }

  std::string renderItems() {
    std::string body;
    SmallVector<const EwNode *> group;
    int64_t first = 0, last = 0;
    auto flush = [&]() {
      if (!group.empty())
        body += renderGroup(group, first, last);
      group.clear();
    };
    for (const Item &item : items) {
      if (!item.isEw) {
        flush();
        body += "  // step " + std::to_string(item.step) + "\n" + item.code;
        continue;
      }
      if (!canJoin(group, item.ew)) {
        flush();
        first = item.step;
      }
      group.push_back(&item.ew);
      last = item.step;
    }
    flush();
    return body;
  }

  // ---------------------------------------------------------------- tensor table, descriptor

  struct Row {
    std::string name;
    rt::TensorKind kind;
    rt::TensorRole role;
    Value value; // null for the staging region, which is no value of the step
    int64_t initOffset;
  };

  LogicalResult collectTensors() {
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto kind = func.getArgAttrOfType<StringAttr>(i, kKindAttr);
      auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr);
      auto role = func.getArgAttrOfType<StringAttr>(i, kRoleAttr);
      if (!kind || !name)
        return func.emitError() << "argument " << i << " lacks graph.kind or graph.name";
      if (cast<RankedTensorType>(arg.getType()).getRank() > rt::kMaxRank)
        return func.emitError() << "argument " << i << " has rank above " << rt::kMaxRank;
      if (kind.getValue() == "parameter" || kind.getValue() == "batch_stats") {
        auto initOffset = appendInitialValue(func, i, name.getValue(), out.initBlob);
        if (failed(initOffset))
          return failure();
        rows.push_back({name.str(),
                        kind.getValue() == "parameter" ? rt::TensorKind::Parameter
                                                       : rt::TensorKind::OptimizerState,
                        rt::TensorRole::Parameter, arg, *initOffset});
      } else if (kind.getValue() == "optimizer_state") {
        rows.push_back({name.str(), rt::TensorKind::OptimizerState, rt::TensorRole::State, arg, -1});
      } else if (role && role.getValue() == "data") {
        rows.push_back({name.str(), rt::TensorKind::Input, rt::TensorRole::Data, arg, -1});
      } else if (role && role.getValue() == "labels") {
        rows.push_back({name.str(), rt::TensorKind::Input, rt::TensorRole::Labels, arg, -1});
      } else if (role && role.getValue() == "sample_weights") {
        rows.push_back({name.str(), rt::TensorKind::Input, rt::TensorRole::SampleWeights, arg, -1});
      } else if (role && role.getValue() == "step") {
        rows.push_back({name.str(), rt::TensorKind::Input, rt::TensorRole::Step, arg, -1});
      } else {
        return func.emitError() << "argument '" << name.getValue()
                                << "' has no role the runtime can feed";
      }
    }
    Operation *ret = func.getBody().front().getTerminator();
    if (ret->getNumOperands() < 1)
      return func.emitError("train_step must return the loss first");
    rows.push_back({"loss", rt::TensorKind::Activation, rt::TensorRole::Loss, ret->getOperand(0), -1});
    // What the loss compared with the labels, kept live to the end of the step: the runtime
    // copies it back with the loss and reports accuracy (as the CPU target does).
    if (Value prediction = reportedPrediction(func))
      rows.push_back({"prediction", rt::TensorKind::Activation, rt::TensorRole::Prediction,
                      prediction, -1});
    // The next batch's upload target (graph.stage_next_batch): data then labels, in
    // graphc/runtime/staging.h's layout, listed as f32 words.
    if (nextBatchStagingBytes(func)) {
      if (!func->getAttrOfType<IntegerAttr>(kStagingOffsetAttr))
        return func.emitError("the step stages the next batch but has no graph.staging_offset");
      rows.push_back(
          {"next_batch_staging", rt::TensorKind::Input, rt::TensorRole::Staging, Value(), -1});
    }
    return success();
  }

  std::vector<uint8_t> descriptor() {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<desc::Tensor>> tensors;
    std::vector<uint32_t> parameters, inputs;
    for (auto [i, r] : llvm::enumerate(rows)) {
      if (!r.value) { // the staging region
        uint64_t bytes = nextBatchStagingBytes(func);
        std::vector<int64_t> shape{int64_t(bytes / 4)};
        tensors.push_back(desc::CreateTensorDirect(
            fbb, r.name.c_str(), static_cast<desc::TensorKind>(r.kind),
            static_cast<desc::TensorRole>(r.role), desc::DType_F32, &shape,
            uint64_t(func->getAttrOfType<IntegerAttr>(kStagingOffsetAttr).getInt()), bytes, -1));
        continue;
      }
      auto type = cast<RankedTensorType>(r.value.getType());
      std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
      tensors.push_back(desc::CreateTensorDirect(
          fbb, r.name.c_str(), static_cast<desc::TensorKind>(r.kind),
          static_cast<desc::TensorRole>(r.role),
          type.getElementType().isInteger(64) ? desc::DType_I64 : desc::DType_F32, &shape,
          uint64_t(plannedOffset(r.value)), tensorBytes(type), r.initOffset,
          r.role == rt::TensorRole::Data ? embeddingIndexLimit(func, cast<BlockArgument>(r.value))
                                         : 0));
      if (r.role == rt::TensorRole::Parameter)
        parameters.push_back(uint32_t(i));
      if (r.role == rt::TensorRole::Data || r.role == rt::TensorRole::Labels ||
          r.role == rt::TensorRole::SampleWeights || r.role == rt::TensorRole::Step)
        inputs.push_back(uint32_t(i));
    }
    desc::LossKind loss = desc::LossKind_SparseCategoricalCrossentropy;
    switch (lossKind) {
    case LossKind::sparse_categorical_crossentropy:
      loss = desc::LossKind_SparseCategoricalCrossentropy;
      break;
    case LossKind::categorical_crossentropy:
      loss = desc::LossKind_CategoricalCrossentropy;
      break;
    case LossKind::binary_crossentropy:
      loss = desc::LossKind_BinaryCrossentropy;
      break;
    case LossKind::mse:
      loss = desc::LossKind_MeanSquaredError;
      break;
    }
    auto root = desc::CreateProgramDirect(
        fbb, kDescriptorVersion, options.modelName.c_str(), "cuda",
        uint64_t(func->getAttrOfType<IntegerAttr>(kArenaBytesAttr).getInt()),
        uint64_t(func->getAttrOfType<IntegerAttr>(kAlignmentAttr).getInt()), batch, loss, &tensors,
        &parameters, &inputs, out.initBlob.size(), worldSize(), int32_t(allReduceBuckets),
        uint64_t(hostArenaBytes(func)), func->hasAttr("graph.sharded_buckets"),
        ignoreIndex ? flatbuffers::Optional<int64_t>(*ignoreIndex) : flatbuffers::nullopt,
        maskedLoss);
    desc::FinishProgramBuffer(fbb, root);
    return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
  }

  /// graphc --data-parallel --world-size=N: N (also 1); 0 for a single-process step.
  int32_t worldSize() {
    auto ranks = func->getAttrOfType<IntegerAttr>("graph.data_parallel_ranks");
    return ranks ? int32_t(ranks.getInt()) : 0;
  }

  // ---------------------------------------------------------------- the file

  void writeFile(const std::string &body) {
    llvm::raw_string_ostream os(out.source);
    int64_t arena = func->getAttrOfType<IntegerAttr>(kArenaBytesAttr).getInt();
    os << "// Generated by graphc from " << options.modelName
       << ": one training step on a CUDA GPU (--target=cuda).\n"
       << "// Every tensor is `arena + offset` in the single device allocation of " << arena
       << " bytes made by\n// the runtime at start-up; nothing here allocates or synchronises, so "
          "the step can be captured\n// into a CUDA graph. "
       << ewKernels << " elementwise kernels (" << fusedKernels << " fused from " << fusedOps
       << " ops), " << (kernelCount - ewKernels) << " other kernels, " << cublasCalls
       << " cuBLAS and " << cudnnCalls << " cuDNN calls.\n"
       << "// Builds with nvcc, or for the host with -DGRAPHC_HOST_SHIM (library calls replaced "
          "by the CPU\n// runtime's kernels): see graphc/runtime/cuda/step.h.\n"
       << "#include \"graphc/runtime/cuda/step.h\"\n";
    if (worldSize() > 0)
      os << "// Data parallel over " << worldSize() << " rank" << (worldSize() == 1 ? "" : "s")
         << ": " << allReduceBuckets << " gradient bucket" << (allReduceBuckets == 1 ? "" : "s")
         << " averaged with NCCL on a communication stream (comm_nccl.h).\n"
         << "#include \"graphc/runtime/cuda/comm_nccl.h\"\n";
    os << "\n"
       << "#define F32(offset) reinterpret_cast<float *>(arena + (offset))\n";
    if (usesHalf)
      os << "// 16-bit tensors (--precision): read as float, rounded to nearest even when stored "
            "(half.h).\n"
         << "#define BF16(offset) reinterpret_cast<::graphc::rt::cuda::Bf16 *>(arena + (offset))\n"
         << "#define F16(offset) reinterpret_cast<::graphc::rt::cuda::F16 *>(arena + (offset))\n";
    os << "\n";
    if (int64_t host = hostArenaBytes(func))
      os << "// Optimizer state kept in host memory (graphc --offload): " << host
         << " bytes after the arena's offsets, pinned and\n// mapped by the runtime "
            "(setHostArena); only the optimizer update kernels read it, as HF32(offset).\n"
         << "#ifdef GRAPHC_HOST_SHIM\n"
         << "static unsigned char *graphc_host_arena = nullptr;\n"
         << "static void graphcSetHostArena(unsigned char *hostArena) { graphc_host_arena = "
            "hostArena; }\n"
         << "#else\n"
         << "__device__ unsigned char *graphc_host_arena = nullptr;\n"
         << "static void graphcSetHostArena(unsigned char *hostArena) {\n"
         << "  const cudaError_t status = cudaMemcpyToSymbol(graphc_host_arena, &hostArena, "
            "sizeof(hostArena));\n"
         << "  if (status != cudaSuccess)\n"
         << "    graphc::rt::cuda::failCuda(status, \"cudaMemcpyToSymbol\", \"the host arena\");\n"
         << "}\n"
         << "#endif\n"
         << "#define HF32(offset) reinterpret_cast<float *>(graphc_host_arena + (offset))\n\n";
    if (!out.initBlob.empty())
      os << "#if !defined(__CUDA_ARCH__)\n"
         << "__asm__(\".section .rodata\\n.balign 64\\n.globl graphc_init_blob_begin\\n"
            "graphc_init_blob_begin:\\n.incbin \\\""
         << options.initBlobPath
         << "\\\"\\n.globl graphc_init_blob_end\\ngraphc_init_blob_end:\\n.previous\\n\");\n"
         << "#endif\n"
         << "extern \"C\" const unsigned char graphc_init_blob_begin[];\n\n";
    os << "namespace {\n\n";
    os << "#ifndef GRAPHC_HOST_SHIM\nconst float kOne = 1.0f, kZero = 0.0f;\n#endif\n\n";
    os << kernels;
    os << "// The training step: " << items.size() << " items in the planned order.\n"
       << "void graphcStep(unsigned char *arena, const graphc::rt::cuda::StepContext *ctx) {\n"
       << "  (void)ctx;\n"
       << body << "}\n\n";
    if (numConvs)
      os << "const graphc::rt::cuda::ConvSpec kConvs[] = {\n" << convTable << "};\n\n";
    if (numPools)
      os << "const graphc::rt::cuda::PoolSpec kPools[] = {\n" << poolTable << "};\n\n";
    std::vector<uint8_t> bytes = descriptor();
    os << "// The program descriptor (runtime/program.fbs, FlatBuffers, identifier \"GPRG\"): "
       << bytes.size() << " bytes.\nalignas(16) const unsigned char kDescriptor[] = {";
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (i % 16 == 0)
        os << "\n   ";
      os << " " << unsigned(bytes[i]) << ",";
    }
    os << "\n};\n\n} // namespace\n\n";
    os << "extern \"C\" const graphc::rt::cuda::GeneratedProgram graphc_generated = {\n"
       << "    kDescriptor,\n    sizeof(kDescriptor),\n"
       << "    " << (out.initBlob.empty() ? "nullptr" : "graphc_init_blob_begin") << ",\n"
       << "    " << out.initBlob.size() << "ull,\n"
       << "    " << (numConvs ? "kConvs" : "nullptr") << ",\n    " << numConvs << ",\n"
       << "    " << (numPools ? "kPools" : "nullptr") << ",\n    " << numPools << ",\n"
       << "    graphcStep,\n"
       << "    " << (hostArenaBytes(func) ? "graphcSetHostArena" : "nullptr") << ",\n};\n";
    os.flush();
  }

  func::FuncOp func;
  const EmitOptions &options;
  EmittedProgram &out;
  std::vector<Item> items;
  std::vector<Row> rows;
  std::string kernels, convTable, poolTable;
  int64_t currentStep = 0;
  int kernelCount = 0, ewKernels = 0, fusedKernels = 0, numConvs = 0, numPools = 0;
  size_t fusedOps = 0;
  int cublasCalls = 0, cudnnCalls = 0;
  bool usesHalf = false; // some tensor is bf16 or f16: define BF16() and F16()
  InFlightCollectives collectives;
  int64_t allReduceBuckets = 0; // highest bucket id + 1
  int64_t batch = 0;
  LossKind lossKind = LossKind::sparse_categorical_crossentropy;
  std::optional<int64_t> ignoreIndex; // the loss's ignored label (program.fbs ignore_index)
  bool maskedLoss = false;            // the loss weighs its rows (program.fbs masked_loss)
};

} // namespace

LogicalResult graphc::emitCudaProgram(func::FuncOp func, const EmitOptions &options,
                                      EmittedProgram &out) {
  out = EmittedProgram{};
  if (options.initBlobPath.find_first_of("\"\\\n") != std::string::npos)
    return func.emitError() << "the weights path '" << options.initBlobPath
                            << "' contains a quote, backslash or newline";
  return CudaEmitter(func, options, out).run();
}
