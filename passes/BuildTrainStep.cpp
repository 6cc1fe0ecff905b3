// graphc-build-train-step: reverse-mode autodiff of the forward function, plus the loss and
// the optimizer updates, into one @train_step function.
//
// The forward ops are cloned, then walked once in reverse (O(ops)): each op whose result has
// a gradient emits its backward ops. A parameter's update is emitted right after its gradient
// is complete, so gradients die early and the update can overwrite the parameter in place
// (the weight's last reader, the op's own backward, has already run).
#include "passes/Liveness.h"
#include "passes/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

namespace graphc {
#define GEN_PASS_DEF_BUILDTRAINSTEP
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

namespace {

enum class Optimizer { Sgd, Momentum, Adam };

/// `<forward op name>.<suffix>` so that backward buffers are recognisable in plan dumps.
Location gradLoc(Operation *forward, StringRef suffix) {
  MLIRContext *ctx = forward->getContext();
  std::string base;
  if (auto name = dyn_cast<NameLoc>(forward->getLoc()))
    base = name.getName().str();
  else
    base = forward->getName().stripDialect().str();
  return NameLoc::get(StringAttr::get(ctx, base + "." + suffix.str()), forward->getLoc());
}

struct BuildTrainStepPass : graphc::impl::BuildTrainStepBase<BuildTrainStepPass> {
  using BuildTrainStepBase::BuildTrainStepBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(build(module)))
      signalPassFailure();
  }

  LogicalResult build(ModuleOp module) {
    auto loss = symbolizeLossKind(this->loss);
    if (!loss)
      return module.emitError() << "unknown loss '" << this->loss
                                << "'; expected sparse_categorical_crossentropy, "
                                   "categorical_crossentropy, binary_crossentropy or mse";
    if (labelSmoothing != 0.0 && *loss == LossKind::mse)
      return module.emitError() << "label smoothing applies to the crossentropies, not mse";
    if (!(labelSmoothing >= 0.0 && labelSmoothing < 1.0))
      return module.emitError() << "label smoothing " << double(labelSmoothing)
                                << " must lie in [0, 1)";
    if (!posWeight.empty() && *loss != LossKind::binary_crossentropy)
      return module.emitError() << "a positive weight applies to binary_crossentropy, not "
                                << this->loss;
    if (!classWeights.empty() && *loss != LossKind::sparse_categorical_crossentropy)
      return module.emitError() << "class weights apply to sparse_categorical_crossentropy, not "
                                << this->loss;
    if (ignoreLabels && *loss != LossKind::sparse_categorical_crossentropy)
      return module.emitError() << "an ignored label (ignore-index " << int64_t(ignoreIndex)
                                << ") applies to sparse_categorical_crossentropy, not "
                                << this->loss;
    Optimizer opt;
    if (optimizer == "sgd")
      opt = Optimizer::Sgd;
    else if (optimizer == "momentum")
      opt = Optimizer::Momentum;
    else if (optimizer == "adam")
      opt = Optimizer::Adam;
    else
      return module.emitError() << "unknown optimizer '" << optimizer
                                << "'; expected sgd, momentum or adam";

    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    if (funcs.size() != 1)
      return module.emitError() << "expected exactly one forward function, found "
                                << funcs.size();
    func::FuncOp forward = funcs.front();
    // The prediction, and optionally the loss's row weights (a Keras output's mask): f32, one
    // per row of the prediction (without its last axis), its result marked
    // graph.kind = "loss_weights".
    auto weightsResult = [&] {
      auto kind = forward.getNumResults() == 2
                      ? forward.getResultAttrOfType<StringAttr>(1, kKindAttr)
                      : StringAttr();
      return kind && kind.getValue() == "loss_weights";
    };
    if (forward.getNumResults() != 1 && !weightsResult())
      return forward.emitError() << "the forward function must return one prediction (and "
                                    "optionally its loss weights), it returns "
                                 << forward.getNumResults() << " values";
    const bool weighted = forward.getNumResults() == 2;
    if (weighted && !posWeight.empty())
      return forward.emitError() << "a positive weight and the model's loss weights (a masked "
                                    "output) together are not supported";
    if (weighted && !classWeights.empty())
      return forward.emitError() << "class weights and the model's loss weights (a masked "
                                    "output) together are not supported";
    if (weighted && ignoreLabels)
      return forward.emitError() << "an ignored label (ignore-index " << int64_t(ignoreIndex)
                                 << ") and the model's loss weights (a masked output) together "
                                    "are not supported";

    // Classify the forward arguments: trained parameters, frozen parameters
    // (graph.trainable = false: read like constants, so no gradient, update or optimizer
    // state), persistent untrained state (BatchNorm running statistics, kind batch_stats),
    // the step number dropout reads, data.
    SmallVector<BlockArgument> params, frozen, stats, inputs;
    BlockArgument forwardStep;
    for (BlockArgument arg : forward.getArguments()) {
      auto kind = forward.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kKindAttr);
      auto role = forward.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kRoleAttr);
      auto trainable = forward.getArgAttrOfType<BoolAttr>(arg.getArgNumber(), kTrainableAttr);
      if (kind && kind.getValue() == "parameter" && trainable && !trainable.getValue())
        frozen.push_back(arg);
      else if (kind && kind.getValue() == "parameter")
        params.push_back(arg);
      else if (kind && kind.getValue() == "batch_stats")
        stats.push_back(arg);
      else if (role && role.getValue() == "step" && !forwardStep)
        forwardStep = arg;
      else
        inputs.push_back(arg);
    }
    // Every other argument is data (token ids and their attention mask, an image and its
    // metadata), fed per step in argument order.
    if (inputs.empty())
      return forward.emitError() << "expected at least one data input, found none";

    OpBuilder b(module.getContext());
    Type predType = forward.getResultTypes()[0];
    auto pred = cast<RankedTensorType>(predType);
    // With micro-batching the forward function is written for one micro-batch; the step
    // takes the whole batch (k micro-batches) of data and labels.
    if (microBatches < 1)
      return module.emitError() << "micro-batches must be at least 1, got "
                                << static_cast<int64_t>(microBatches);
    auto wholeBatch = [&](Type t) -> Type {
      auto ranked = cast<RankedTensorType>(t);
      SmallVector<int64_t> shape(ranked.getShape());
      shape[0] *= microBatches;
      return RankedTensorType::get(shape, ranked.getElementType());
    };
    Type labelType = wholeBatch(predType);
    if (*loss == LossKind::sparse_categorical_crossentropy) {
      // A class index per prediction row: [batch], or [batch, positions...] for per-token
      // predictions [batch, positions..., classes].
      SmallVector<int64_t> labelShape(pred.getShape().drop_back());
      if (labelShape.empty())
        return forward.emitError() << "sparse_categorical_crossentropy needs [batch, classes] "
                                      "predictions; the model returns "
                                   << predType;
      labelShape[0] *= microBatches;
      labelType = RankedTensorType::get(labelShape, b.getI64Type());
    }
    Type scalar = RankedTensorType::get({}, b.getF32Type());

    // Signature: params, optimizer state, batch statistics, frozen params, data (one argument per
    // input), labels, [step]. Frozen parameters persist but are not results: nothing updates them.
    unsigned statesPerParam = opt == Optimizer::Sgd ? 0 : opt == Optimizer::Momentum ? 1 : 2;
    bool hasStep = opt == Optimizer::Adam || forwardStep;
    // Dynamic loss scaling keeps three f32 scalars across steps (optimizer state, so they are
    // checkpointed): the scale's halvings below 2^16, the clean steps since it last changed,
    // and the steps skipped so far, so that Adam's bias correction counts applied updates
    // only, as with PyTorch's GradScaler (which skips optimizer.step()).
    unsigned lossScaleStates = lossScaling ? 3 : 0;
    SmallVector<Type> argTypes, resultTypes;
    for (BlockArgument p : params)
      argTypes.push_back(p.getType());
    for (unsigned s = 0; s < statesPerParam; ++s)
      for (BlockArgument p : params)
        argTypes.push_back(p.getType());
    for (BlockArgument st : stats)
      argTypes.push_back(st.getType());
    for (unsigned i = 0; i < lossScaleStates; ++i)
      argTypes.push_back(scalar);
    for (BlockArgument f : frozen)
      argTypes.push_back(f.getType());
    for (BlockArgument input : inputs)
      argTypes.push_back(wholeBatch(input.getType()));
    argTypes.push_back(labelType);
    // One weight per sample, or (temporal) per label row: the prediction without its last axis.
    if (sampleWeights && temporalSampleWeights && pred.getRank() < 2)
      return forward.emitError() << "temporal sample weights need a prediction with positions "
                                    "([batch, positions..., classes]); the model returns "
                                 << predType;
    if (sampleWeights) {
      SmallVector<int64_t> weightShape{pred.getDimSize(0)};
      if (temporalSampleWeights)
        weightShape.assign(pred.getShape().begin(), pred.getShape().end() - 1);
      weightShape[0] *= int64_t(microBatches);
      argTypes.push_back(RankedTensorType::get(weightShape, b.getF32Type()));
    }
    if (hasStep)
      argTypes.push_back(scalar);
    unsigned numPersistent =
        params.size() * (1 + statesPerParam) + stats.size() + lossScaleStates;
    resultTypes.push_back(scalar);
    for (unsigned i = 0; i < numPersistent; ++i)
      resultTypes.push_back(argTypes[i]);

    b.setInsertionPoint(forward);
    auto step = b.create<func::FuncOp>(forward.getLoc(), "train_step",
                                       b.getFunctionType(argTypes, resultTypes));
    Block *entry = step.addEntryBlock();
    auto nameOf = [&](BlockArgument a) {
      auto name = forward.getArgAttrOfType<StringAttr>(a.getArgNumber(), kNameAttr);
      return name ? name.str() : "arg" + std::to_string(a.getArgNumber());
    };
    auto setArg = [&](unsigned i, StringRef kind, StringRef name, StringRef role = "") {
      step.setArgAttr(i, kKindAttr, b.getStringAttr(kind));
      step.setArgAttr(i, kNameAttr, b.getStringAttr(name));
      if (!role.empty())
        step.setArgAttr(i, kRoleAttr, b.getStringAttr(role));
    };
    static const char *stateSuffix[2][2] = {{".velocity", ""}, {".m", ".v"}};
    for (auto [i, p] : llvm::enumerate(params)) {
      setArg(i, "parameter", nameOf(p));
      if (auto init = forward.getArgAttr(p.getArgNumber(), kInitAttr))
        step.setArgAttr(i, kInitAttr, init);
      for (unsigned s = 0; s < statesPerParam; ++s)
        setArg(params.size() * (1 + s) + i, "optimizer_state",
               nameOf(p) + stateSuffix[opt == Optimizer::Adam][s]);
    }
    unsigned statsIndex = params.size() * (1 + statesPerParam);
    for (auto [i, st] : llvm::enumerate(stats)) {
      setArg(statsIndex + i, "batch_stats", nameOf(st));
      if (auto init = forward.getArgAttr(st.getArgNumber(), kInitAttr))
        step.setArgAttr(statsIndex + i, kInitAttr, init);
    }
    unsigned lossScaleIndex = statsIndex + stats.size();
    if (lossScaling) {
      setArg(lossScaleIndex, "optimizer_state", "loss_scale.halvings");
      setArg(lossScaleIndex + 1, "optimizer_state", "loss_scale.clean_steps");
      setArg(lossScaleIndex + 2, "optimizer_state", "loss_scale.skipped_steps");
    }
    unsigned frozenIndex = numPersistent;
    for (auto [i, f] : llvm::enumerate(frozen)) {
      setArg(frozenIndex + i, "parameter", nameOf(f));
      step.setArgAttr(frozenIndex + i, kTrainableAttr, b.getBoolAttr(false));
      if (auto init = forward.getArgAttr(f.getArgNumber(), kInitAttr))
        step.setArgAttr(frozenIndex + i, kInitAttr, init);
    }
    unsigned dataIndex = numPersistent + frozen.size();
    unsigned labelsIndex = dataIndex + inputs.size();
    unsigned sampleWeightsIndex = labelsIndex + 1;
    unsigned stepIndex = sampleWeightsIndex + (sampleWeights ? 1 : 0);
    for (auto [i, input] : llvm::enumerate(inputs))
      setArg(dataIndex + i, "input", nameOf(input), "data");
    setArg(labelsIndex, "input", "labels", "labels");
    if (sampleWeights)
      setArg(sampleWeightsIndex, "input", "sample_weight", "sample_weights");
    if (hasStep)
      setArg(stepIndex, "input", "step", "step");
    for (unsigned i = 0; i < numPersistent; ++i) {
      step.setResultAttr(i + 1, kTiedArgAttr, b.getI64IntegerAttr(i));
      step.setResultAttr(i + 1, kNameAttr, step.getArgAttr(i, kNameAttr));
    }

    // Parameters and their updates, shared by every micro-batch.
    llvm::DenseMap<Value, unsigned> paramIndex;
    for (unsigned i = 0; i < params.size(); ++i)
      paramIndex[entry->getArgument(i)] = i;
    SmallVector<Value> newParams(params.size()), newStates(params.size() * statesPerParam);
    Value stepValue = hasStep ? entry->getArgument(stepIndex) : Value();
    b.setInsertionPointToEnd(entry);
    auto update = [&](Value param, Value g, Operation *fwd, Value apply) {
      unsigned i = paramIndex.at(param);
      Location loc = NameLoc::get(b.getStringAttr(nameOf(params[i]) + ".update"), fwd->getLoc());
      FloatAttr lr = b.getF32FloatAttr(learningRate);
      switch (opt) {
      case Optimizer::Sgd:
        newParams[i] = b.create<SgdUpdateOp>(loc, param.getType(), param, g, apply, lr);
        break;
      case Optimizer::Momentum: {
        Value velocity = entry->getArgument(params.size() + i);
        auto op = b.create<MomentumUpdateOp>(loc, param.getType(), param.getType(), param, g,
                                             velocity, apply, lr, b.getF32FloatAttr(momentum));
        newParams[i] = op.getNewParam();
        newStates[i] = op.getNewVelocity();
        break;
      }
      case Optimizer::Adam: {
        Value m = entry->getArgument(params.size() + i);
        Value v = entry->getArgument(2 * params.size() + i);
        auto op = b.create<AdamUpdateOp>(loc, param.getType(), param.getType(), param.getType(),
                                         param, g, m, v, stepValue, apply, lr,
                                         b.getF32FloatAttr(beta1),
                                         b.getF32FloatAttr(beta2), b.getF32FloatAttr(epsilon));
        newParams[i] = op.getNewParam();
        newStates[i] = op.getNewM();
        newStates[params.size() + i] = op.getNewV();
        break;
      }
      }
    };
    // Records the gradient of `operand`, updating it at once when it is a parameter.
    // A value read by several ops gets the sum of their gradients; a parameter is updated
    // once the last of its readers has contributed (weight tying), in the last micro-batch.
    llvm::DenseMap<Value, unsigned> pendingContributions;
    llvm::DenseMap<Value, Value> grad;
    // With loss scaling no update may run before every gradient is known to be finite, so
    // the completed gradients wait here (the cost: they all stay alive until the check).
    struct Deferred {
      Value param, grad;
      Operation *fwd;
    };
    SmallVector<Deferred> deferred;
    Value halvings = lossScaling ? entry->getArgument(lossScaleIndex) : Value();
    auto setGrad = [&](Value operand, Value g, Operation *fwd) {
      if (Value previous = grad.lookup(operand))
        g = b.create<AddOp>(gradLoc(fwd, "accumulate"), g.getType(), previous, g);
      grad[operand] = g;
      if (paramIndex.count(operand) && --pendingContributions[operand] == 0) {
        if (lossScaling)
          deferred.push_back({operand, g, fwd});
        else
          update(operand, g, fwd, Value());
      }
    };

    // Each micro-batch runs the forward pass on its slice of the batch, then its backward
    // pass right away (so its activations die before the next micro-batch starts); the loss
    // gradient is scaled by 1/k so that the summed parameter gradients are those of the full
    // batch's mean loss. Batch statistics thread from one micro-batch to the next.
    SmallVector<Value> currentStats;
    for (unsigned i = 0; i < stats.size(); ++i)
      currentStats.push_back(entry->getArgument(statsIndex + i));
    Value lossSum;
    Location lossLoc = NameLoc::get(b.getStringAttr("loss"), forward.getLoc());
    SmallVector<Operation *> allForwardOps;
    int64_t k = microBatches;
    FloatAttr inverseK = b.getF32FloatAttr(float(1.0 / double(k)));
    // Selective losses (an ignored label, class weights, loss weights) divide each micro-batch's
    // sum by the whole step's count, so that the micro-batches add up to the step's mean: no
    // 1/k.
    const bool classWeighted = !classWeights.empty();
    if (classWeighted && int64_t(classWeights.size()) != pred.getShape().back())
      return forward.emitError() << "--class-weights gives " << classWeights.size()
                                 << " weights, but the model predicts " << pred.getShape().back()
                                 << " classes";
    const bool selective = ignoreLabels || weighted || classWeighted;
    if (!posWeight.empty() && posWeight.size() != 1 &&
        int64_t(posWeight.size()) != pred.getShape().back())
      return forward.emitError() << "--pos-weight gives " << posWeight.size()
                                 << " values, but the prediction's last axis has "
                                 << pred.getShape().back() << " (give 1 or that many)";
    // Loss weights with micro-batches: every micro-batch's weights are needed before the first
    // loss, so the ops they depend on (data inputs only: a mask from the token ids) run for
    // each micro-batch first; each micro-batch then reuses its own.
    SmallVector<IRMapping> weightMaps(static_cast<size_t>(k));
    Value countWeights;
    if (weighted && k > 1) {
      auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
      SetVector<Operation *> slice;
      BackwardSliceOptions sliceOptions;
      sliceOptions.inclusive = true;
      if (Operation *def = ret.getOperand(1).getDefiningOp())
        getBackwardSlice(def, &slice, sliceOptions);
      for (Operation *op : slice) {
        if (isa<DropoutOp, RandomNormalOp, RandomUniformOp, RandomAffineOp>(op) ||
            llvm::any_of(op->getOperands(), [&](Value v) {
              auto arg = dyn_cast<BlockArgument>(v);
              return arg && !llvm::is_contained(inputs, arg);
            }))
          return op->emitError() << "the loss weights depend on parameters, state or random "
                                    "draws; with micro-batches they may depend on the data only";
      }
      SmallVector<Value> parts;
      for (int64_t micro = 0; micro < k; ++micro) {
        IRMapping &m = weightMaps[size_t(micro)];
        for (auto [i, input] : llvm::enumerate(inputs))
          m.map(input, b.create<BatchSliceOp>(
                            NameLoc::get(
                                b.getStringAttr(nameOf(input) + ".micro" + std::to_string(micro))),
                            input.getType(), entry->getArgument(dataIndex + unsigned(i)), micro, k)
                           .getResult());
        for (Operation *op : slice)
          b.clone(*op, m);
        parts.push_back(m.lookup(ret.getOperand(1)));
      }
      auto partType = cast<RankedTensorType>(parts.front().getType());
      countWeights = b.create<ConcatOp>(NameLoc::get(b.getStringAttr("loss.weights")),
                                        cast<RankedTensorType>(wholeBatch(partType)), parts,
                                        b.getI64IntegerAttr(0));
    }
    // The loss's attributes, the same for every micro-batch.
    FloatAttr smoothing =
        labelSmoothing != 0.0 ? b.getF32FloatAttr(float(labelSmoothing)) : FloatAttr();
    auto f32Array = [&](ArrayRef<double> values) {
      SmallVector<float> narrowed(values.begin(), values.end());
      return values.empty() ? DenseF32ArrayAttr() : b.getDenseF32ArrayAttr(narrowed);
    };
    DenseF32ArrayAttr perClass = f32Array(classWeights), positive = f32Array(posWeight);
    for (int64_t micro = 0; micro < k; ++micro) {
      IRMapping map;
      for (auto [i, p] : llvm::enumerate(params))
        map.map(p, entry->getArgument(i));
      for (auto [i, f] : llvm::enumerate(frozen))
        map.map(f, entry->getArgument(frozenIndex + i));
      for (auto [i, st] : llvm::enumerate(stats))
        map.map(st, currentStats[i]);
      Value labels = entry->getArgument(labelsIndex);
      Value perSample = sampleWeights ? entry->getArgument(sampleWeightsIndex) : Value();
      for (auto [i, input] : llvm::enumerate(inputs))
        map.map(input, entry->getArgument(dataIndex + i));
      if (k > 1) {
        auto slice = [&](Value v, StringRef what) -> Value {
          auto type = cast<RankedTensorType>(v.getType());
          SmallVector<int64_t> shape(type.getShape());
          shape[0] /= k;
          return b.create<BatchSliceOp>(
              NameLoc::get(b.getStringAttr(what.str() + ".micro" + std::to_string(micro))),
              RankedTensorType::get(shape, type.getElementType()), v, micro, k);
        };
        for (auto [i, input] : llvm::enumerate(inputs))
          map.map(input, countWeights ? weightMaps[size_t(micro)].lookup(input)
                                      : slice(entry->getArgument(dataIndex + i), nameOf(input)));
        labels = slice(labels, "labels");
        if (perSample)
          perSample = slice(perSample, "sample_weight");
        // This micro-batch's loss weights (and what they depend on) are computed already.
        if (countWeights)
          for (auto [from, to] : weightMaps[size_t(micro)].getValueMap())
            map.map(from, to);
      }
      if (forwardStep)
        map.map(forwardStep, entry->getArgument(stepIndex));
      SmallVector<Operation *> forwardOps;
      Value prediction, lossWeights;
      for (auto [forwardIndex, op] : llvm::enumerate(forward.getBody().front())) {
        if (auto ret = dyn_cast<func::ReturnOp>(op)) {
          prediction = map.lookup(ret.getOperand(0));
          if (weighted)
            lossWeights = map.lookup(ret.getOperand(1));
          continue;
        }
        if (op.getNumResults() > 0 &&
            llvm::all_of(op.getResults(), [&](Value r) { return map.contains(r); }))
          continue; // computed before the micro-batches (its loss weights)
        Operation *clone = b.clone(op, map);
        if (k > 1)
          clone->setAttr(kMicroBatchOpAttr, b.getI64IntegerAttr(int64_t(forwardIndex)));
        // Micro-batch `micro` draws its rows of the whole batch's dropout mask (a broadcast
        // mask has one draw per mask_repeat elements) and of its noise.
        if (auto drop = dyn_cast<DropoutOp>(clone); drop && micro > 0)
          drop.setIndexOffset(drop.getIndexOffset() +
                              micro * cast<RankedTensorType>(drop.getType()).getNumElements() /
                                  drop.getMaskRepeat());
        if (auto normal = dyn_cast<RandomNormalOp>(clone); normal && micro > 0)
          normal.setIndexOffset(normal.getIndexOffset() +
                                micro * normal.getType().getNumElements());
        if (auto uniform = dyn_cast<RandomUniformOp>(clone); uniform && micro > 0)
          uniform.setIndexOffset(uniform.getIndexOffset() +
                                 micro * uniform.getType().getNumElements() / uniform.getRepeat());
        if (auto affine = dyn_cast<RandomAffineOp>(clone); affine && micro > 0)
          affine.setSampleOffset(affine.getSampleOffset() +
                                 micro * cast<RankedTensorType>(affine.getType()).getDimSize(0));
        // A fused attention's mask covers its [B, M, N] probabilities.
        if (auto attention = dyn_cast<AttentionOp>(clone); attention && micro > 0) {
          auto queries = cast<RankedTensorType>(attention.getQuery().getType()).getShape();
          auto keys = cast<RankedTensorType>(attention.getKey().getType()).getShape();
          attention.setIndexOffset(attention.getIndexOffset() +
                                   micro * queries[0] * queries[1] * keys[1]);
        }
        forwardOps.push_back(clone);
      }

      // Which values depend on a parameter (only those need gradients).
      llvm::DenseSet<Value> needsGrad;
      for (unsigned i = 0; i < params.size(); ++i)
        needsGrad.insert(entry->getArgument(i));
      for (Operation *op : forwardOps)
        if (llvm::any_of(op->getOperands(), [&](Value v) { return needsGrad.contains(v); }))
          for (Value r : op->getResults())
            needsGrad.insert(r);

      // A softmax (sigmoid) right before a categorical (binary) loss folds into the loss,
      // which then works on logits in log space; the activation and its backward disappear.
      Value lossInput = prediction;
      bool fromLogits = false;
      if (Value logits = getLossLogits(*loss, prediction)) {
        if (this->fromLogits) {
          forward.emitError() << "--from-logits: the model's output is already a "
                              << (*loss == LossKind::binary_crossentropy
                                      ? "Sigmoid (probabilities)"
                                      : "Softmax or LogSoftmax (probabilities or their log)")
                              << "; drop --from-logits";
          return failure();
        }
        lossInput = logits;
        fromLogits = true;
      } else if (this->fromLogits) {
        if (*loss == LossKind::mse) {
          forward.emitError() << "--from-logits applies to the crossentropy losses, not mse";
          return failure();
        }
        fromLogits = true;
      }
      // With an ignored label, each micro-batch divides by the whole step's count of the
      // other labels, so that the micro-batches' losses add up to the step's mean.
      IntegerAttr ignored = ignoreLabels ? b.getI64IntegerAttr(ignoreIndex) : IntegerAttr();
      Value count = k == 1                          ? Value()
                    : ignoreLabels || classWeighted ? Value(entry->getArgument(labelsIndex))
                                                    : countWeights;
      Value microLoss =
          b.create<LossOp>(lossLoc, scalar, *loss, lossInput, labels, lossWeights, count, perSample,
                           fromLogits, ignored, smoothing, perClass, positive);
      lossSum = lossSum ? b.create<AddOp>(lossLoc, scalar, lossSum, microLoss).getResult()
                        : microLoss;
      Location gradLossLoc = NameLoc::get(b.getStringAttr("loss.grad"), lossLoc);
      Value lossGrad = b.create<LossBackwardOp>(gradLossLoc, lossInput.getType(), *loss, lossInput,
                                                labels, lossWeights, count, perSample, fromLogits,
                                                ignored, smoothing, perClass, positive);
      if (k > 1 && !selective)
        lossGrad = b.create<ScaleOp>(gradLossLoc, lossInput.getType(), lossGrad, inverseK);
      if (lossScaling)
        lossGrad = b.create<LossScaleOp>(gradLossLoc, lossInput.getType(), lossGrad, halvings,
                                         /*inverse=*/false);
      grad[lossInput] = lossGrad;

      // Forward ops whose results reach the loss; each of their parameter operands
      // contributes one gradient per micro-batch.
      llvm::DenseSet<Operation *> onPath;
      {
        llvm::DenseSet<Value> reaches = {lossInput};
        for (Operation *op : llvm::reverse(forwardOps))
          if (llvm::any_of(op->getResults(), [&](Value r) { return reaches.contains(r); })) {
            onPath.insert(op);
            reaches.insert(op->operand_begin(), op->operand_end());
          }
      }
      if (micro == 0)
        for (Operation *op : onPath)
          for (Value operand : op->getOperands()) {
            if (!paramIndex.count(operand))
              continue;
            // The slices of a parameter (a GRU's [2, 3 units] bias) contribute one gradient
            // together, the concat sliceGradient emits at the first of them.
            if (isa<SliceOp>(op) && llvm::any_of(operand.getUsers(), [&](Operation *user) {
                  return isa<SliceOp>(user) && user->isBeforeInBlock(op);
                }))
              continue;
            pendingContributions[operand] += unsigned(k);
          }

      // Elementwise activations: dx = backward(dy, y), from the forward output y.
      auto activationGradient = [&](Operation *op, Value dy, auto makeBackward) {
        Value x = op->getOperand(0);
        if (needsGrad.contains(x))
          setGrad(x, makeBackward(gradLoc(op, "grad_input"), dy, op->getResult(0)), op);
        return success();
      };

      // The gradients of a convolution: conv2d y = conv(x, W) has dx = conv^T(dy, W) and dW
      // the filter gradient of (x, dy). A transposed convolution y = conv^T(x, W)
      // (conv2d_backward_data in a forward function, see GraphOps.td) has dx = conv(dy, W) and,
      // as <dy, conv^T(x, W)> = <x, conv(dy, W)>, dW is the filter gradient of that conv: of
      // (dy, x). Either way the bias gradient sums dy over all but the channels.
      auto convGradients = [&](auto conv, Value x, Value dy, bool transposed) {
        Operation *op = conv;
        Value w = conv.getFilter();
        if (needsGrad.contains(x)) {
          Location loc = gradLoc(op, "grad_input");
          Value dx = transposed
                         ? Value(b.create<Conv2dOp>(loc, x.getType(), dy, w, Value(),
                                                    conv.getStridesAttr(), conv.getPaddingAttr(),
                                                    conv.getDilationsAttr(),
                                                    conv.getGroupsAttr()))
                         : Value(b.create<Conv2dBackwardDataOp>(
                               loc, x.getType(), dy, w, Value(), conv.getStridesAttr(),
                               conv.getPaddingAttr(), conv.getDilationsAttr(),
                               conv.getGroupsAttr()));
          setGrad(x, dx, op);
        }
        Value dw, db; // none for a frozen filter or bias
        if (needsGrad.contains(w))
          dw = b.create<Conv2dBackwardFilterOp>(
              gradLoc(op, "grad_filter"), w.getType(), transposed ? x : dy, transposed ? dy : x,
              conv.getStridesAttr(), conv.getPaddingAttr(), conv.getDilationsAttr(),
              conv.getGroupsAttr());
        if (Value bias = conv.getBias(); bias && needsGrad.contains(bias))
          db = b.create<BiasGradOp>(gradLoc(op, "grad_bias"), bias.getType(), dy, 1);
        if (dw)
          setGrad(w, dw, op);
        if (db)
          setGrad(conv.getBias(), db, op);
        return success();
      };

      // A normalization's backward op yields the gradients of (input, scale, bias) in order.
      auto setNormGradients = [&](Operation *op, std::initializer_list<Value> operands,
                                  ResultRange grads) {
        for (auto [operand, g] : llvm::zip(operands, grads))
          if (needsGrad.contains(operand))
            setGrad(operand, g, op);
      };

      // Slices that tile their input along one axis (the exporter's split of a fused Q/K/V
      // projection) have the concat of their gradients as their part of the input's gradient
      // (the whole of it when only slices read the input), emitted at
      // the first slice in program order, when every slice's gradient is complete (the
      // reverse walk has passed all their readers); the rows no slice covers get zeros.
      // Overlapping slices (the depth taps of a 3-D convolution, ONNX Slices of shared rows)
      // are dealt into layers of disjoint ones, first fit in offset order (O(s log s + s l)
      // for s slices in l layers); each layer's concat is a full-size gradient, and the layers
      // are added before the input's gradient is set once.
      auto sliceGradient = [&](SliceOp slice, Operation *op) -> LogicalResult {
        Value x = slice.getInput();
        if (!needsGrad.contains(x))
          return success();
        int64_t axis = slice.getAxis();
        SmallVector<SliceOp> parts;
        for (Operation *user : x.getUsers()) {
          // Readers other than slices (rotary embeddings read q whole and as two halves)
          // contribute their own gradients, added to the slices' concat by setGrad.
          auto sibling = dyn_cast<SliceOp>(user);
          if (!sibling)
            continue;
          if (sibling.getAxis() != slice.getAxis())
            return slice.emitError()
                   << "graphc-build-train-step: the gradient of a slice needs every slice of "
                      "its input to be along the same axis ("
                   << axis << ")";
          if (!llvm::is_contained(parts, sibling))
            parts.push_back(sibling);
        }
        if (llvm::any_of(parts, [&](SliceOp p) { return p->isBeforeInBlock(slice); }))
          return success(); // the first slice emits the concat
        llvm::sort(parts, [](SliceOp l, SliceOp r) { return l.getOffset() < r.getOffset(); });
        if (llvm::none_of(parts, [&](SliceOp p) { return bool(grad.lookup(p.getResult())); }))
          return success(); // no slice reaches the loss
        // Rows no slice reads (and slices whose result does not reach the loss) get zeros
        // (graph.fill): `out[:, -1]` of a recurrent layer's sequence is one slice.
        auto xType = cast<RankedTensorType>(x.getType());
        auto zeros = [&](int64_t size) -> Value {
          SmallVector<int64_t> shape(xType.getShape());
          shape[axis] = size;
          return b.create<FillOp>(gradLoc(op, "grad_zeros"), xType.clone(shape),
                                  b.getF32FloatAttr(0.0f));
        };
        SmallVector<SmallVector<SliceOp>> layers;
        SmallVector<int64_t> layerEnds;
        for (SliceOp p : parts) {
          const int64_t offset = int64_t(p.getOffset());
          const int64_t size = cast<RankedTensorType>(p.getType()).getDimSize(axis);
          auto fits = llvm::find_if(layerEnds, [&](int64_t end) { return end <= offset; });
          if (fits == layerEnds.end()) {
            layers.emplace_back();
            layerEnds.push_back(0);
            fits = layerEnds.end() - 1;
          }
          layers[size_t(fits - layerEnds.begin())].push_back(p);
          *fits = offset + size;
        }
        Value total;
        for (ArrayRef<SliceOp> layer : layers) {
          int64_t covered = 0;
          SmallVector<Value> grads;
          for (SliceOp p : layer) {
            const int64_t offset = int64_t(p.getOffset());
            const int64_t size = cast<RankedTensorType>(p.getType()).getDimSize(axis);
            if (offset > covered)
              grads.push_back(zeros(offset - covered));
            Value g = grad.lookup(p.getResult());
            grads.push_back(g ? g : zeros(size));
            covered = offset + size;
          }
          if (covered < xType.getDimSize(axis))
            grads.push_back(zeros(xType.getDimSize(axis) - covered));
          Value part = grads.size() == 1
                           ? grads[0]
                           : b.create<ConcatOp>(gradLoc(op, "grad_input"), x.getType(), grads,
                                                slice.getAxisAttr())
                                 .getResult();
          total =
              total
                  ? b.create<AddOp>(gradLoc(op, "grad_input"), x.getType(), total, part).getResult()
                  : part;
        }
        setGrad(x, total, op);
        return success();
      };

      for (Operation *op : llvm::reverse(forwardOps)) {
        // Result 0 is the only differentiable result (batch_norm's others are statistics).
        Value dy = op->getNumResults() >= 1 ? grad.lookup(op->getResult(0)) : Value();
        // A slice's gradient depends on its siblings', not only its own (see sliceGradient).
        if (auto slice = dyn_cast<SliceOp>(op)) {
          if (failed(sliceGradient(slice, op)))
            return failure();
          continue;
        }
        if (!dy)
          continue;
        auto wants = [&](Value v) { return needsGrad.contains(v); };
        LogicalResult result =
            llvm::TypeSwitch<Operation *, LogicalResult>(op)
                .Case([&](DenseOp dense) {
                  Value x = dense.getInput(), w = dense.getWeight();
                  bool t = dense.getTransposeWeight();
                  if (wants(x))
                    setGrad(x, b.create<MatmulOp>(gradLoc(op, "grad_input"), x.getType(), dy, w,
                                                  false, !t),
                            op);
                  Value dw, db; // none for a frozen weight or bias
                  if (wants(w))
                    dw = t ? b.create<MatmulOp>(gradLoc(op, "grad_weight"), w.getType(), dy, x,
                                                true, false)
                           : b.create<MatmulOp>(gradLoc(op, "grad_weight"), w.getType(), x, dy,
                                                true, false);
                  if (Value bias = dense.getBias(); bias && wants(bias))
                    db = b.create<BiasGradOp>(gradLoc(op, "grad_bias"), bias.getType(), dy, 1);
                  if (dw)
                    setGrad(w, dw, op);
                  if (db)
                    setGrad(dense.getBias(), db, op);
                  return success();
                })
                .Case([&](BatchMatmulOp mm) {
                  // C = op(A) op(B): dA = dC op(B)^T (stored transposed when transpose_lhs:
                  // op(B) dC^T), dB = op(A)^T dC (when transpose_rhs: dC^T op(A)).
                  Value a = mm.getLhs(), bv = mm.getRhs();
                  bool ta = mm.getTransposeLhs(), tb = mm.getTransposeRhs();
                  Value da, db;
                  if (wants(a))
                    da = ta ? b.create<BatchMatmulOp>(gradLoc(op, "grad_lhs"), a.getType(), bv,
                                                      dy, tb, true)
                            : b.create<BatchMatmulOp>(gradLoc(op, "grad_lhs"), a.getType(), dy,
                                                      bv, false, !tb);
                  if (wants(bv))
                    db = tb ? b.create<BatchMatmulOp>(gradLoc(op, "grad_rhs"), bv.getType(), dy,
                                                      a, true, ta)
                            : b.create<BatchMatmulOp>(gradLoc(op, "grad_rhs"), bv.getType(), a,
                                                      dy, !ta, false);
                  if (da)
                    setGrad(a, da, op);
                  if (db)
                    setGrad(bv, db, op);
                  return success();
                })
                .Case([&](TransposeOp t) {
                  if (!wants(t.getInput()))
                    return success();
                  ArrayRef<int64_t> perm = t.getPerm();
                  SmallVector<int64_t> inverse(perm.size());
                  for (auto [i, p] : llvm::enumerate(perm))
                    inverse[p] = int64_t(i);
                  setGrad(t.getInput(),
                          b.create<TransposeOp>(gradLoc(op, "grad_input"),
                                                t.getInput().getType(), dy,
                                                b.getDenseI64ArrayAttr(inverse)),
                          op);
                  return success();
                })
                .Case([&](LayerNormOp ln) {
                  Value x = ln.getInput();
                  auto back = b.create<LayerNormBackwardOp>(
                      gradLoc(op, "grad"),
                      TypeRange{x.getType(), ln.getScale().getType(), ln.getBias().getType()},
                      dy, x, ln.getScale(), ln.getSavedMean(), ln.getSavedInvstd());
                  setNormGradients(op, {x, ln.getScale(), ln.getBias()}, back->getResults());
                  return success();
                })
                .Case([&](RmsNormOp rn) {
                  Value x = rn.getInput();
                  auto back = b.create<RmsNormBackwardOp>(
                      gradLoc(op, "grad"), TypeRange{x.getType(), rn.getScale().getType()}, dy, x,
                      rn.getScale(), rn.getSavedInvstd());
                  setNormGradients(op, {x, rn.getScale()}, back->getResults());
                  return success();
                })
                .Case([&](ScaleOp sc) {
                  // d(factor * x + offset) = factor * dy: the offset has no gradient.
                  if (wants(sc.getInput()))
                    setGrad(sc.getInput(),
                            b.create<ScaleOp>(gradLoc(op, "grad_input"), dy.getType(), dy,
                                              sc.getFactorAttr()),
                            op);
                  return success();
                })
                .Case([&](RotaryOp rotary) -> LogicalResult {
                  // The adjoint of the linear map x -> x cos + rotate_half(x) sin; the tables
                  // are constants of the step.
                  if (wants(rotary.getCos()) || wants(rotary.getSin()))
                    return rotary.emitError()
                           << "graphc-build-train-step: graph.rotary's cos and sin tables must "
                              "not need a gradient (freeze them)";
                  if (wants(rotary.getInput()))
                    setGrad(rotary.getInput(),
                            b.create<RotaryOp>(gradLoc(op, "grad_input"), dy.getType(), dy,
                                               rotary.getCos(), rotary.getSin(),
                                               !rotary.getTranspose()),
                            op);
                  return success();
                })
                .Case([&](BroadcastMulOp mul) {
                  // d lhs = dy * rhs (broadcast again); d rhs = the sum over the R rows of
                  // dy * lhs, as ones [1, R] times the [R, N] rows.
                  Value lhs = mul.getLhs(), rhs = mul.getRhs();
                  if (wants(lhs))
                    setGrad(
                        lhs,
                        b.create<BroadcastMulOp>(gradLoc(op, "grad_lhs"), dy.getType(), dy, rhs),
                        op);
                  if (wants(rhs)) {
                    Location loc = gradLoc(op, "grad_rhs");
                    auto rhsType = cast<RankedTensorType>(rhs.getType());
                    auto full = cast<RankedTensorType>(dy.getType());
                    int64_t n = rhsType.getNumElements(), r = full.getNumElements() / n;
                    Value product = b.create<MulOp>(loc, dy.getType(), dy, lhs);
                    Value rows = b.create<ReshapeOp>(loc, full.clone({r, n}), product);
                    Value ones = b.create<FillOp>(loc, full.clone({1, r}), b.getF32FloatAttr(1.0f));
                    Value sum =
                        b.create<DenseOp>(loc, full.clone({1, n}), ones, rows, Value(), false);
                    setGrad(rhs, b.create<ReshapeOp>(loc, rhsType, sum), op);
                  }
                  return success();
                })
                .Case([&](MulOp mul) {
                  // d(a * b) = dy * b for a and dy * a for b (both when a is b: x * x).
                  Value lhs = mul.getLhs(), rhs = mul.getRhs();
                  if (wants(lhs))
                    setGrad(lhs, b.create<MulOp>(gradLoc(op, "grad_lhs"), dy.getType(), dy, rhs),
                            op);
                  if (wants(rhs))
                    setGrad(rhs, b.create<MulOp>(gradLoc(op, "grad_rhs"), dy.getType(), dy, lhs),
                            op);
                  return success();
                })
                .Case([&](ActivationOp act) {
                  if (wants(act.getInput()))
                    setGrad(act.getInput(),
                            b.create<ActivationBackwardOp>(gradLoc(op, "grad_input"),
                                                           dy.getType(), act.getKindAttr(), dy,
                                                           act.getInput(), act.getAlphaAttr()),
                            op);
                  return success();
                })
                .Case([&](RandomAffineOp affine) -> LogicalResult {
                  if (wants(affine.getInput()))
                    return affine.emitError()
                           << "graph.random_affine has no gradient for its input, which needs "
                              "one (it reads a trained layer's output); put the image "
                              "augmentation layers before every trained layer";
                  return success();
                })
                // A constant or noise: no operand to reach.
                .Case<FillOp, RandomNormalOp, RandomUniformOp>(
                    [&](Operation *) { return success(); })
                .Case([&](EmbeddingOp emb) {
                  // The indices are data: only the table has a gradient.
                  if (wants(emb.getTable()))
                    setGrad(emb.getTable(),
                            b.create<EmbeddingBackwardOp>(gradLoc(op, "grad_table"),
                                                          emb.getTable().getType(), dy,
                                                          emb.getIndices()),
                            op);
                  return success();
                })
                .Case([&](Conv2dOp conv) {
                  return convGradients(conv, conv.getInput(), dy, /*transposed=*/false);
                })
                .Case([&](Conv2dBackwardDataOp tconv) {
                  return convGradients(tconv, tconv.getGrad(), dy, /*transposed=*/true);
                })
                .Case([&](MaxPool2dOp pool) {
                  if (wants(pool.getInput()))
                    setGrad(pool.getInput(),
                            b.create<MaxPool2dBackwardOp>(
                                gradLoc(op, "grad_input"), pool.getInput().getType(), dy,
                                pool.getInput(), pool.getKernelAttr(), pool.getStridesAttr(),
                                pool.getPaddingAttr()),
                            op);
                  return success();
                })
                .Case([&](AvgPool2dOp pool) {
                  if (wants(pool.getInput()))
                    setGrad(pool.getInput(),
                            b.create<AvgPool2dBackwardOp>(
                                gradLoc(op, "grad_input"), pool.getInput().getType(), dy,
                                pool.getKernelAttr(), pool.getStridesAttr(), pool.getPaddingAttr(),
                                pool.getCountIncludePadAttr()),
                            op);
                  return success();
                })
                .Case([&](BatchNormOp bn) {
                  Value x = bn.getInput();
                  auto back = b.create<BatchNormBackwardOp>(
                      gradLoc(op, "grad"),
                      TypeRange{x.getType(), bn.getScale().getType(), bn.getBias().getType()}, dy,
                      x, bn.getScale(), bn.getSavedMean(), bn.getSavedInvstd(), bn.getTrainingAttr());
                  setNormGradients(op, {x, bn.getScale(), bn.getBias()}, back->getResults());
                  return success();
                })
                .Case([&](ConcatOp concat) {
                  int64_t axis = concat.getAxis(), offset = 0;
                  for (Value in : concat.getInputs()) {
                    if (wants(in))
                      setGrad(in,
                              b.create<SliceOp>(gradLoc(op, "grad_input"), in.getType(), dy,
                                                concat.getAxisAttr(), b.getI64IntegerAttr(offset)),
                              op);
                    offset += cast<RankedTensorType>(in.getType()).getDimSize(axis);
                  }
                  return success();
                })
                .Case([&](AttentionOp attention) {
                  auto backward = b.create<AttentionBackwardOp>(
                      gradLoc(op, "grad"), attention.getQuery().getType(),
                      attention.getKey().getType(), attention.getValue().getType(), dy,
                      attention.getQuery(), attention.getKey(), attention.getValue(),
                      attention.getStep(), attention.getBias(), attention.getScaleAttr(),
                      attention.getDropoutRatioAttr(), attention.getOpIdAttr(),
                      attention.getIndexOffsetAttr(), attention.getCausalAttr(),
                      attention.getBiasFillsAttr());
                  if (Attribute block = attention->getAttr(kQueryBlockAttr))
                    backward->setAttr(kQueryBlockAttr, block);
                  Value inputs[] = {attention.getQuery(), attention.getKey(), attention.getValue()};
                  for (auto [input, inputGrad] : llvm::zip(inputs, backward.getResults()))
                    if (wants(input))
                      setGrad(input, inputGrad, op);
                  return success();
                })
                .Case([&](DropoutOp drop) {
                  if (wants(drop.getInput()))
                    setGrad(drop.getInput(),
                            b.create<DropoutBackwardOp>(
                                gradLoc(op, "grad_input"), dy.getType(), dy, drop.getStep(),
                                drop.getRatioAttr(), drop.getOpIdAttr(), drop.getIndexOffsetAttr(),
                                drop.getMaskRepeatAttr(), drop.getMaskInnerAttr()),
                            op);
                  return success();
                })
                .Case([&](ClipOp clip) {
                  if (wants(clip.getInput()))
                    setGrad(clip.getInput(),
                            b.create<ClipBackwardOp>(gradLoc(op, "grad_input"), dy.getType(), dy,
                                                     clip.getResult(), clip.getMinAttr(),
                                                     clip.getMaxAttr()),
                            op);
                  return success();
                })
                .Case([&](ReshapeOp reshape) {
                  if (wants(reshape.getInput()))
                    setGrad(reshape.getInput(),
                            b.create<ReshapeOp>(gradLoc(op, "grad_input"),
                                                reshape.getInput().getType(), dy),
                            op);
                  return success();
                })
                .Case([&](CastOp castOp) {
                  // The gradient of a cast is the output gradient in the input's type: a
                  // parameter cast to 16 bit gets an f32 gradient for its f32 update.
                  if (wants(castOp.getInput()))
                    setGrad(castOp.getInput(),
                            b.create<CastOp>(gradLoc(op, "grad_input"),
                                             castOp.getInput().getType(), dy),
                            op);
                  return success();
                })
                .Case([&](AddOp add) {
                  for (Value operand : add->getOperands())
                    if (wants(operand))
                      setGrad(operand, dy, op);
                  return success();
                })
                .Case<ReluOp, SigmoidOp, TanhOp>([&](Operation *act) {
                  return activationGradient(act, dy, [&](Location loc, Value g, Value y) -> Value {
                    if (isa<ReluOp>(act)) {
                      // A relu read only by a dropout (a transformer's FFN): its backward reads
                      // the dropout's output instead. That is positive exactly where relu's is
                      // and the mask keeps the element; where the mask drops it, g (the
                      // dropout's backward, same mask) is zero anyway. So grad * (y > 0) is the
                      // same bit for bit, and relu's output, read by nothing else, dies at the
                      // dropout, which then writes over it: one activation less per layer.
                      if (y.hasOneUse())
                        if (auto drop = dyn_cast<DropoutOp>(*y.user_begin());
                            drop && drop.getInput() == y && g.getDefiningOp<DropoutBackwardOp>())
                          y = drop.getResult();
                      return b.create<ReluBackwardOp>(loc, g.getType(), g, y);
                    }
                    if (isa<SigmoidOp>(act))
                      return b.create<SigmoidBackwardOp>(loc, g.getType(), g, y);
                    return b.create<TanhBackwardOp>(loc, g.getType(), g, y);
                  });
                })
                .Case([&](SoftmaxOp softmax) {
                  if (wants(softmax.getInput()))
                    setGrad(softmax.getInput(),
                            b.create<SoftmaxBackwardOp>(gradLoc(op, "grad_input"), dy.getType(),
                                                        dy, softmax.getResult(),
                                                        softmax.getAxisAttr()),
                            op);
                  return success();
                })
                .Default([&](Operation *other) {
                  return other->emitError()
                         << "graphc-build-train-step has no gradient for '" << other->getName()
                         << "'";
                });
        if (failed(result))
          return failure();
      }


      // The batch statistics each batch_norm of this micro-batch wrote become the next
      // micro-batch's (and finally the step's) running statistics.
      for (auto [i, st] : llvm::enumerate(stats)) {
        Value updated;
        for (OpOperand &use : currentStats[i].getUses()) {
          auto bn = dyn_cast<BatchNormOp>(use.getOwner());
          if (!bn || updated || use.getOperandNumber() < 3)
            return forward.emitError() << "batch statistics '" << nameOf(st)
                                       << "' must be read by exactly one batch_norm";
          updated = use.getOperandNumber() == 3 ? bn.getNewRunningMean() : bn.getNewRunningVar();
        }
        if (!updated)
          return forward.emitError() << "batch statistics '" << nameOf(st) << "' are never read";
        currentStats[i] = updated;
      }
      allForwardOps.append(forwardOps.begin(), forwardOps.end());
    }
    // Loss scaling: one overflow check over every parameter gradient, then the updates,
    // each on its unscaled gradient and skipped when the check failed, then the new scale.
    SmallVector<Value> newLossScale;
    if (lossScaling) {
      Location scaleLoc = NameLoc::get(b.getStringAttr("loss_scale"), forward.getLoc());
      SmallVector<Value> grads;
      for (const Deferred &d : deferred)
        grads.push_back(d.grad);
      Value finite = b.create<AllFiniteOp>(scaleLoc, scalar, grads);
      Value skipped = entry->getArgument(lossScaleIndex + 2);
      if (opt == Optimizer::Adam) // Adam's step: this step's number minus the skipped ones
        stepValue = b.create<AddOp>(
            scaleLoc, stepValue,
            b.create<ScaleOp>(scaleLoc, scalar, skipped, b.getF32FloatAttr(-1.0f)));
      for (const Deferred &d : deferred)
        update(d.param,
               b.create<LossScaleOp>(gradLoc(d.fwd, "unscale"), d.grad.getType(), d.grad,
                                     halvings, /*inverse=*/true),
               d.fwd, finite);
      auto next = b.create<UpdateLossScaleOp>(
          scaleLoc, scalar, scalar, scalar, halvings, entry->getArgument(lossScaleIndex + 1),
          skipped, finite, b.getI64IntegerAttr(lossScaleGrowthInterval));
      newLossScale = {next.getNewHalvings(), next.getNewCleanSteps(), next.getNewSkippedSteps()};
    }
    Value lossValue = lossSum;
    if (k > 1 && !selective)
      lossValue = b.create<ScaleOp>(lossLoc, scalar, lossSum, inverseK);

    for (auto [i, p] : llvm::enumerate(newParams))
      if (!p)
        return forward.emitError() << "parameter '" << nameOf(params[i])
                                   << "' does not influence the loss; remove it or mark it "
                                      "frozen";
    SmallVector<Value> results = {lossValue};
    results.append(newParams.begin(), newParams.end());
    results.append(newStates.begin(), newStates.end());
    results.append(currentStats.begin(), currentStats.end());
    results.append(newLossScale.begin(), newLossScale.end());
    b.create<func::ReturnOp>(forward.getLoc(), results);
    // Forward ops nothing reads any more (a softmax folded into the loss).
    for (Operation *op : llvm::reverse(allForwardOps))
      if (op->use_empty())
        op->erase();
    forward.erase();
    return success();
  }

  static std::string valueNameForError(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return "argument " + std::to_string(arg.getArgNumber());
    if (auto name = dyn_cast<NameLoc>(v.getDefiningOp()->getLoc()))
      return name.getName().str();
    return v.getDefiningOp()->getName().getStringRef().str();
  }
};

} // namespace
