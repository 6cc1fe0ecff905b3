// Unrolls SimpleRNN, LSTM and GRU cells into graph-dialect ops (see RecurrentUnroll.h).
//
// Per step t (x_t W + b is one dense over all steps, sliced per step):
//   LSTM  z = x_t W + b + h U;  i, f, o = gate(z_i, z_f, z_o);  g = candidate(z_c)
//         c = f * c + i * g;  h = o * candidate(c)                     (Keras, PyTorch, ONNX)
//   GRU   z = gate(x_z + h U_z + r_z);  r = gate(x_r + h U_r + r_r)
//         n = candidate(x_h + r * (h U_h + r_h))   (reset_after; else x_h + (r * h) U_h)
//         h = z * h + (1 - z) * n
//   RNN   h = candidate(x_t W + b + h U)
// h and c start at zero (graph.fill). Every slice of a tensor is one of a set that tiles it,
// which is what graphc-build-train-step needs to give the tensor a gradient.
#include "importers/common/RecurrentUnroll.h"

#include "mlir/IR/BuiltinTypes.h"

#include "dialects/graph/GraphOps.h"

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

namespace {

class Unroller {
public:
  Unroller(OpBuilder &b, const RecurrentLayer &layer) : b(b), layer(layer) {}

  RecurrentOutputs run(Value x) {
    auto xs = cast<RankedTensorType>(x.getType()).getShape();
    batch = xs[0];
    steps = xs[1];
    int64_t features = xs[2];
    units = layer.units;
    gates = layer.cell == RecurrentCell::Lstm ? 4 : layer.cell == RecurrentCell::Gru ? 3 : 1;

    // x W + b for all steps at once: [batch * steps, G * units] viewed as [batch, steps, G * units].
    Value rows = b.create<ReshapeOp>(loc("input_rows"), f32({batch * steps, features}), x);
    Value projected = b.create<DenseOp>(loc("input_projection"), f32({batch * steps, gates * units}),
                                        rows, layer.kernel, layer.bias,
                                        layer.transposedKernels ? b.getUnitAttr() : UnitAttr());
    Value perStep = b.create<ReshapeOp>(loc("input_projection"),
                                        f32({batch, steps, gates * units}), projected);

    // GRU without reset_after multiplies r * h before the candidate's recurrent kernel, so the
    // kernel is used as two parts: [U_z U_r] and U_h (slices that tile it).
    if (layer.cell == RecurrentCell::Gru && !layer.resetAfter)
      splitGruKernel();

    Value h = b.create<FillOp>(loc("initial_h"), f32({batch, units}), b.getF32FloatAttr(0.0f));
    Value c;
    if (layer.cell == RecurrentCell::Lstm)
      c = b.create<FillOp>(loc("initial_c"), f32({batch, units}), b.getF32FloatAttr(0.0f));

    // With a mask, each step's [batch, units] block of it: the mask's steps copied over the
    // units once (a product of [batch, time, 1] and a row of ones), sliced per step.
    Value maskRows;
    if (layer.stepMask) {
      Value column = b.create<ReshapeOp>(loc("mask"), f32({batch, steps, 1}), layer.stepMask);
      Value ones = b.create<FillOp>(loc("mask"), f32({batch, 1, units}), b.getF32FloatAttr(1.0f));
      maskRows = b.create<BatchMatmulOp>(loc("mask"), f32({batch, steps, units}), column, ones,
                                         UnitAttr(), UnitAttr());
    }
    std::vector<Value> states(static_cast<size_t>(steps));
    for (int64_t s = 0; s < steps; ++s) {
      int64_t t = layer.reverse ? steps - 1 - s : s;
      prefix = "t" + std::to_string(t) + "/";
      Value slice = b.create<SliceOp>(loc("x"), f32({batch, 1, gates * units}), perStep,
                                      b.getI64IntegerAttr(1), b.getI64IntegerAttr(t));
      Value xt = b.create<ReshapeOp>(loc("x"), f32({batch, gates * units}), slice);
      Value hPrev = h, cPrev = c;
      if (layer.cell == RecurrentCell::Lstm)
        std::tie(h, c) = lstmStep(xt, h, c);
      else if (layer.cell == RecurrentCell::Gru)
        h = gruStep(xt, h);
      else
        h = layer.candidate(b, loc("h"), b.create<AddOp>(loc("z"), xt.getType(), xt, recurrent(h)));
      if (maskRows) {
        // A skipped step keeps the states: m 1 or 0 per sample.
        Value mt =
            b.create<ReshapeOp>(loc("mask"), f32({batch, units}),
                                b.create<SliceOp>(loc("mask"), f32({batch, 1, units}), maskRows,
                                                  b.getI64IntegerAttr(1), b.getI64IntegerAttr(t)));
        Value keep = b.create<ScaleOp>(loc("mask"), mt.getType(), mt, b.getF32FloatAttr(-1.0f),
                                       b.getF32FloatAttr(1.0f));
        h = carried(h, hPrev, mt, keep, "h");
        if (c)
          c = carried(c, cPrev, mt, keep, "c");
      }
      states[size_t(layer.sequenceInInputOrder ? t : s)] = h;
    }
    RecurrentOutputs out{Value(), h, c};
    if (!layer.returnSequences)
      return out;
    SmallVector<Value> pieces;
    for (Value state : states)
      pieces.push_back(b.create<ReshapeOp>(loc("sequence"), f32({batch, 1, units}), state));
    prefix.clear();
    out.sequence = b.create<ConcatOp>(loc("sequence"), f32({batch, steps, units}), pieces,
                                      b.getI64IntegerAttr(1));
    return out;
  }

private:
  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }
  Location loc(const std::string &what) {
    return NameLoc::get(b.getStringAttr(layer.name + "/" + prefix + what));
  }

  /// next m + prev (1 - m), `keep` = 1 - m: exactly `next` where the step mask m is 1 and
  /// `prev` where it is 0 (Keras's where, with its gradient to both).
  Value carried(Value next, Value prev, Value m, Value keep, const std::string &what) {
    auto type = next.getType();
    Value taken = b.create<MulOp>(loc(what + "_masked"), type, next, m);
    Value kept = b.create<MulOp>(loc(what + "_masked"), type, prev, keep);
    return b.create<AddOp>(loc(what + "_masked"), type, taken, kept);
  }

  /// h U (+ recurrent bias): [batch, G * units]; h times the state dropout mask first when
  /// the layer has one.
  Value recurrent(Value h) {
    if (layer.stateDropMask)
      h = b.create<MulOp>(loc("h_dropped"), h.getType(), h, layer.stateDropMask);
    return b.create<DenseOp>(loc("recurrent"), f32({batch, gates * units}), h,
                             layer.recurrentKernel, layer.recurrentBias,
                             layer.transposedKernels ? b.getUnitAttr() : UnitAttr());
  }

  /// The `units`-wide blocks of z ([batch, G * units]), indexed by gate (Keras order).
  SmallVector<Value, 4> gateBlocks(Value z, const std::string &what) {
    SmallVector<Value, 4> byGate(gates);
    for (int64_t g = 0; g < gates; ++g) {
      int64_t slot = layer.gateSlots[size_t(g)];
      byGate[g] = b.create<SliceOp>(loc(what + std::to_string(g)), f32({batch, units}), z,
                                    b.getI64IntegerAttr(1), b.getI64IntegerAttr(slot * units));
    }
    return byGate;
  }

  std::pair<Value, Value> lstmStep(Value xt, Value h, Value c) {
    Value z = b.create<AddOp>(loc("z"), xt.getType(), xt, recurrent(h));
    auto blocks = gateBlocks(z, "z");
    Value i = layer.gate(b, loc("i"), blocks[0]);
    Value f = layer.gate(b, loc("f"), blocks[1]);
    Value g = layer.candidate(b, loc("g"), blocks[2]);
    Value o = layer.gate(b, loc("o"), blocks[3]);
    auto type = i.getType();
    Value kept = b.create<MulOp>(loc("f*c"), type, f, c);
    Value added = b.create<MulOp>(loc("i*g"), type, i, g);
    Value cNext = b.create<AddOp>(loc("c"), type, kept, added);
    Value hNext = b.create<MulOp>(loc("h"), type, o, layer.candidate(b, loc("act(c)"), cNext));
    return {hNext, cNext};
  }

  void splitGruKernel() {
    bool t = layer.transposedKernels;
    int64_t axis = t ? 0 : 1;
    auto part = [&](int64_t slot) {
      return b.create<SliceOp>(loc("recurrent_kernel" + std::to_string(slot)), f32({units, units}),
                               layer.recurrentKernel, b.getI64IntegerAttr(axis),
                               b.getI64IntegerAttr(slot * units));
    };
    for (int64_t slot = 0; slot < 3; ++slot)
      kernelParts[size_t(slot)] = part(slot);
    if (layer.recurrentBias)
      for (int64_t slot = 0; slot < 3; ++slot)
        biasParts[size_t(slot)] = b.create<SliceOp>(
            loc("recurrent_bias" + std::to_string(slot)), f32({units}), layer.recurrentBias,
            b.getI64IntegerAttr(0), b.getI64IntegerAttr(slot * units));
  }

  Value gruStep(Value xt, Value h) {
    auto xBlocks = gateBlocks(xt, "x");
    auto type = f32({batch, units});
    Value hz, hr, hh; // the recurrent terms of z, r and the candidate
    Value r;
    if (layer.resetAfter) {
      auto hBlocks = gateBlocks(recurrent(h), "u");
      hz = hBlocks[0];
      hr = hBlocks[1];
      r = layer.gate(b, loc("r"), b.create<AddOp>(loc("zr"), type, xBlocks[1], hr));
      hh = b.create<MulOp>(loc("r*u"), type, r, hBlocks[2]);
    } else {
      auto part = [&](int gate, Value in) {
        size_t slot = size_t(layer.gateSlots[size_t(gate)]);
        return b.create<DenseOp>(loc("recurrent" + std::to_string(gate)), type, in,
                                 kernelParts[slot], biasParts[slot],
                                 layer.transposedKernels ? b.getUnitAttr() : UnitAttr())
            .getResult();
      };
      hz = part(0, h);
      hr = part(1, h);
      r = layer.gate(b, loc("r"), b.create<AddOp>(loc("zr"), type, xBlocks[1], hr));
      hh = part(2, b.create<MulOp>(loc("r*h"), type, r, h));
    }
    Value z = layer.gate(b, loc("z"), b.create<AddOp>(loc("zz"), type, xBlocks[0], hz));
    Value n = layer.candidate(b, loc("n"), b.create<AddOp>(loc("zn"), type, xBlocks[2], hh));
    // h = z * h + (1 - z) * n
    Value oneMinusZ = b.create<ScaleOp>(loc("1-z"), type, z, b.getF32FloatAttr(-1.0f),
                                        b.getF32FloatAttr(1.0f));
    Value kept = b.create<MulOp>(loc("z*h"), type, z, h);
    Value fresh = b.create<MulOp>(loc("(1-z)*n"), type, oneMinusZ, n);
    return b.create<AddOp>(loc("h"), type, kept, fresh);
  }

  OpBuilder &b;
  const RecurrentLayer &layer;
  int64_t batch = 0, steps = 0, units = 0, gates = 1;
  std::string prefix;
  std::array<Value, 3> kernelParts, biasParts;
};

} // namespace

RecurrentOutputs graphc::unrollRecurrent(OpBuilder &b, const RecurrentLayer &layer, Value x) {
  return Unroller(b, layer).run(x);
}
