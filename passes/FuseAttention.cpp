// graphc-fuse-attention: turns the importer's attention chain (Q K^T, softmax over the keys,
// optional dropout, times V) into one graph.attention, whose kernels never store the
// probabilities (see Passes.td for the IR before and after). One walk over the function's
// batch_matmuls, O(ops); each match looks at a fixed number of producers.
#include "passes/Liveness.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace graphc {
#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

namespace {

/// A constant scale without offset whose result has one reader: its factor, else nullopt.
std::optional<float> pureScaleOf(Operation *op) {
  auto scale = dyn_cast_or_null<ScaleOp>(op);
  if (!scale || scale.getOffset().convertToFloat() != 0.0f || !scale.getResult().hasOneUse())
    return std::nullopt;
  return scale.getFactor().convertToFloat();
}

/// A bias added to the scores: `source` holds batch x N values (a key-padding mask: row b added
/// to every query row of batch b's slices) or batch x M x N (`queries` = M: one row per query,
/// a per-query mask); `ops` broadcast it over the heads (producers first), erased once unread.
struct ScoreBias {
  Value source;
  int64_t batch = 0, queries = 0, keys = 0;
  SmallVector<Operation *> ops;
};

/// Whether `v` is computed from a trained parameter of the function (a bias that would need a
/// gradient, which graph.attention's bias never gets); a frozen one (graph.trainable = false,
/// such as the zeros that nn.MultiheadAttention's key_padding_mask is filled into) needs none.
/// A walk over the producers, each visited once: O(ops before v).
bool dependsOnParameter(Value v) {
  SmallVector<Value> work = {v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      auto kind =
          func ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kKindAttr) : StringAttr();
      auto trainable =
          func ? func.getArgAttrOfType<BoolAttr>(arg.getArgNumber(), kTrainableAttr) : BoolAttr();
      if (kind && kind.getValue() == "parameter" && !(trainable && !trainable.getValue()))
        return true;
      continue;
    }
    for (Value operand : x.getDefiningOp()->getOperands())
      work.push_back(operand);
  }
  return false;
}

/// `added` = reshape(batch_matmul(fill 1.0 [b, r, 1], reshape(X to [b, 1, n]))) to the
/// scores' type [..., M, N], with n = N or M x N: the importers' broadcast of a [b, 1, 1, N]
/// key-padding mask (X's row b copied to every query row of batch b's heads) or of a [b, 1, M,
/// N] per-query mask (X's [M, N] block copied to every head), X not computed from a trained
/// parameter. Either reshape may be absent (a mask already [b x heads, 1, N], as
/// nn.MultiheadAttention expands its key_padding_mask, copied over [b x heads, M, N] scores).
/// Else nullopt.
std::optional<ScoreBias> matchScoreBias(Value added, RankedTensorType scores) {
  auto view = added.getDefiningOp<ReshapeOp>();
  auto copies = (view ? view.getInput() : added).getDefiningOp<BatchMatmulOp>();
  if (!copies || copies.getTransposeLhs() || copies.getTransposeRhs())
    return std::nullopt;
  auto fill = copies.getLhs().getDefiningOp<FillOp>();
  auto rows = copies.getRhs().getDefiningOp<ReshapeOp>();
  Value source = rows ? rows.getInput() : copies.getRhs();
  auto ones = fill ? cast<RankedTensorType>(fill.getType()).getShape() : ArrayRef<int64_t>();
  auto row = cast<RankedTensorType>(copies.getRhs().getType()).getShape();
  const int64_t N = scores.getShape().back(), M = scores.getShape().drop_back().back();
  // A row of N values (one per key) or of M x N (one per query and key).
  if (!fill || fill.getValue().convertToFloat() != 1.0f || ones.size() != 3 || ones[2] != 1 ||
      row.size() != 3 || row[0] != ones[0] || row[1] != 1 || (row[2] != N && row[2] != M * N) ||
      ones[0] * ones[1] * row[2] != scores.getNumElements() || dependsOnParameter(source))
    return std::nullopt;
  ScoreBias bias{source, ones[0], row[2] == N ? 0 : M, N, {}};
  for (Operation *op : {fill.getOperation(), rows ? rows.getOperation() : nullptr,
                        copies.getOperation(), view ? view.getOperation() : nullptr})
    if (op)
      bias.ops.push_back(op);
  return bias;
}

/// `v` = 1 - x (graph.scale {factor -1, offset 1}): its scale, else null.
ScaleOp complementScale(Value v) {
  auto scale = v.getDefiningOp<ScaleOp>();
  return scale && scale.getFactor().convertToFloat() == -1.0f &&
                 scale.getOffset().convertToFloat() == 1.0f
             ? scale
             : ScaleOp();
}

/// Whether `v` holds only 0s and 1s: a comparison's mask (graph.activation equal, as the
/// importers hold bools), its complement 1 - x, or a reshape of one. O(length of that chain).
bool isZeroOneMask(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto reshape = dyn_cast<ReshapeOp>(def)) {
      v = reshape.getInput();
    } else if (ScaleOp complement = complementScale(v)) {
      v = complement.getInput();
    } else {
      auto activation = dyn_cast<ActivationOp>(def);
      return activation && activation.getKind() == ActivationKind::equal;
    }
  }
  return false;
}

/// Whether `a` = 1 - `b` or `b` = 1 - `a`.
bool areComplements(Value a, Value b) {
  ScaleOp ofB = complementScale(a), ofA = complementScale(b);
  return (ofB && ofB.getInput() == b) || (ofA && ofA.getInput() == a);
}

/// A masked_fill of the scores as the importers hold Where(mask, fill, scores): `filled` =
/// broadcast(fill * mask) + scores * broadcast(1 - mask), `fill` a finite non-zero constant and
/// mask 0/1 (either operand order, and the mask's complement on either side). `filled`'s bias
/// (fill * mask, non-zero exactly where the mask is 1) then replaces the scores where it is
/// non-zero, which graph.attention's bias_fills does. On a match, `bias` is that bias and
/// `product` the scores' multiply, whose other operand is returned; else null.
Value matchFilledScores(AddOp filled, RankedTensorType type, std::optional<ScoreBias> &bias,
                        MulOp &product) {
  for (int side = 0; side < 2; ++side) {
    std::optional<ScoreBias> fills = matchScoreBias(filled->getOperand(side), type);
    auto mul = filled->getOperand(1 - side).getDefiningOp<MulOp>();
    auto fillScale = fills ? fills->source.getDefiningOp<ScaleOp>() : ScaleOp();
    if (!mul || !mul.getResult().hasOneUse() || !fillScale ||
        fillScale.getOffset().convertToFloat() != 0.0f)
      continue;
    const float fill = fillScale.getFactor().convertToFloat();
    if (fill == 0.0f || !std::isfinite(fill) || !isZeroOneMask(fillScale.getInput()))
      continue;
    for (int factor = 0; factor < 2; ++factor) {
      std::optional<ScoreBias> keeps = matchScoreBias(mul->getOperand(factor), type);
      if (!keeps || keeps->batch != fills->batch || keeps->queries != fills->queries ||
          !areComplements(keeps->source, fillScale.getInput()) ||
          !keeps->ops.back()->getResult(0).hasOneUse())
        continue;
      fills->ops.append(keeps->ops); // the keep's broadcast, erased once unread as the fill's
      bias = std::move(fills);
      product = mul;
      return mul->getOperand(1 - factor);
    }
  }
  return Value();
}

/// What the matched chain is made of, producers first.
struct AttentionChain {
  Value query, key, value, step;
  float scale = 1.0f;
  DropoutOp dropout;
  std::optional<ScoreBias> scoreBias; // added to the scaled scores
  bool biasFills = false;             // ... or replacing them where non-zero (a masked_fill)
  bool causal = false;             // the softmax's causal mask
  SmallVector<Operation *> erased; // the chain's ops, readers last
  TransposeOp keyTranspose;        // K^T as a transpose of a stored K, rewritten to give K
  Operation *keyView = nullptr;    // the reshape of the leading axes nearest K^T's reader
  SmallVector<Operation *> keyOps; // the scales and views after the transpose, producers first
  // A view of Q's leading axes whose scale was folded into `scale`: the view reads the
  // scale's input instead (view, that input).
  std::optional<std::pair<Operation *, Value>> queryRewire;
};

/// The input of `v`'s defining reshape when it has one use and only merges or splits the
/// leading axes (the last two, [queries, keys], kept): attention scores computed by a 3-D
/// batch_matmul and softmaxed as [batch, heads, queries, keys] (a model's own q @ k^T on 4-D
/// tensors, nanoGPT's); `view` is set to the reshape. Else `v` itself.
Value throughLeadingAxesView(Value v, Operation *&view) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  if (!reshape || !reshape.getResult().hasOneUse())
    return v;
  auto in = cast<RankedTensorType>(reshape.getInput().getType()).getShape();
  auto out = cast<RankedTensorType>(reshape.getType()).getShape();
  if (in.size() < 2 || out.size() < 2 || in.take_back(2) != out.take_back(2))
    return v;
  view = reshape;
  return reshape.getInput();
}

/// Matches `product` = batch_matmul(dropout?(softmax(scores)), V), the softmax and dropout
/// possibly on a view of the scores with more leading axes.
std::optional<AttentionChain> matchChain(BatchMatmulOp product) {
  AttentionChain chain;
  // Reshapes of the leading axes around the softmax, erased with the chain.
  Operation *probabilityView = nullptr, *scoreView = nullptr;
  if (product.getTransposeLhs() || product.getTransposeRhs())
    return std::nullopt;
  Value probabilities = throughLeadingAxesView(product.getLhs(), probabilityView);
  if (auto drop = probabilities.getDefiningOp<DropoutOp>()) {
    // (The fused kernel draws an element-wise mask.)
    if (!drop.getResult().hasOneUse() || drop.getMaskRepeat() != 1)
      return std::nullopt;
    chain.dropout = drop;
    probabilities = drop.getInput();
  }
  auto softmax = probabilities.getDefiningOp<SoftmaxOp>();
  // (A causal softmax makes a causal attention.)
  if (!softmax || !softmax.getResult().hasOneUse() ||
      softmax.getAxis() != uint64_t(cast<RankedTensorType>(softmax.getType()).getRank() - 1))
    return std::nullopt;
  chain.causal = softmax.getCausal();
  Value scores = softmax.getInput();
  // scale * scores + a bias (BertModel's extended attention mask): the add's other operand
  // is the chain. Or a masked_fill of scale * scores (research code's masked_fill(pad, -inf)),
  // whose multiply by 1 - mask is erased with the chain.
  AddOp biasAdd = scores.getDefiningOp<AddOp>();
  MulOp fillProduct;
  if (biasAdd && biasAdd.getResult().hasOneUse()) {
    auto type = cast<RankedTensorType>(scores.getType());
    if (Value filled = matchFilledScores(biasAdd, type, chain.scoreBias, fillProduct)) {
      scores = filled;
      chain.biasFills = true;
    }
    for (int side = 0; side < 2 && !chain.scoreBias; ++side)
      if ((chain.scoreBias = matchScoreBias(biasAdd->getOperand(1 - side), type)))
        scores = biasAdd->getOperand(side);
  }
  if (!chain.scoreBias)
    biasAdd = AddOp();
  std::optional<float> factor = pureScaleOf(scores.getDefiningOp());
  Operation *scoreScale = factor ? scores.getDefiningOp() : nullptr;
  if (scoreScale)
    scores = scoreScale->getOperand(0);
  scores = throughLeadingAxesView(scores, scoreView);
  auto qk = scores.getDefiningOp<BatchMatmulOp>();
  if (!qk || !qk.getResult().hasOneUse() || qk.getTransposeLhs())
    return std::nullopt;
  Value query = qk.getLhs(), keyT = qk.getRhs();
  float scale = factor.value_or(1.0f);
  // Pure scales of Q and of K^T fold into the attention's scale (their product with the
  // scores' own): HF's q / sqrt(d), and the sqrt(scale) by which PyTorch's exported
  // scaled_dot_product_attention scales each of them for stability. Q's may sit under a view
  // of its leading axes, which then reads the unscaled Q.
  Operation *queryScale = nullptr;
  if (std::optional<float> f = pureScaleOf(query.getDefiningOp())) {
    queryScale = query.getDefiningOp();
    query = queryScale->getOperand(0);
    scale *= *f;
  } else {
    Operation *view = nullptr;
    Value viewed = throughLeadingAxesView(query, view);
    if (view)
      if (std::optional<float> g = pureScaleOf(viewed.getDefiningOp())) {
        queryScale = viewed.getDefiningOp();
        chain.queryRewire = std::pair{view, queryScale->getOperand(0)};
        scale *= *g;
      }
  }
  chain.query = query;
  chain.value = product.getRhs();
  if (qk.getTransposeRhs()) {
    chain.key = keyT; // already stored [B, N, D]
  } else {
    // K^T as a transpose of a stored K, possibly merged into [B, D, N] by a reshape of its
    // leading axes (a model's own k.transpose(-2, -1) on [batch, heads, N, D]), through pure
    // scales and more such views (an exporter's [B H, D, N] -> [B, H, D, N] -> [B H, D, N]
    // round trip).
    Value cur = keyT;
    SmallVector<Operation *> readersFirst;
    for (;;) {
      Operation *def = cur.getDefiningOp();
      if (std::optional<float> f = pureScaleOf(def)) {
        scale *= *f;
        readersFirst.push_back(def);
        cur = def->getOperand(0);
        continue;
      }
      Operation *view = nullptr;
      Value inner = throughLeadingAxesView(cur, view);
      if (!view)
        break;
      if (!chain.keyView)
        chain.keyView = view;
      readersFirst.push_back(view);
      cur = inner;
    }
    auto t = cur.getDefiningOp<TransposeOp>();
    if (!t || !t.getResult().hasOneUse())
      return std::nullopt; // a K^T computed some other way: left unfused
    chain.keyTranspose = t;
    chain.keyOps.assign(readersFirst.rbegin(), readersFirst.rend());
  }
  chain.scale = scale;
  auto f32 = [](Value v) { return cast<RankedTensorType>(v.getType()).getElementType().isF32(); };
  if (!f32(query) || !f32(keyT) || !f32(chain.value))
    return std::nullopt;
  if (chain.dropout)
    chain.step = chain.dropout.getStep();
  // Readers last.
  for (Operation *op : {queryScale, (Operation *)qk, scoreView, scoreScale,
                        (Operation *)fillProduct, (Operation *)biasAdd, (Operation *)softmax,
                        chain.dropout ? chain.dropout.getOperation() : nullptr, probabilityView})
    if (op)
      chain.erased.push_back(op);
  return chain;
}

struct FuseAttentionPass : graphc::impl::FuseAttentionBase<FuseAttentionPass> {
  using FuseAttentionBase::FuseAttentionBase;

  void runOnOperation() override {
    SmallVector<BatchMatmulOp> products;
    getOperation().walk([&](BatchMatmulOp op) { products.push_back(op); });
    for (BatchMatmulOp product : products) {
      std::optional<AttentionChain> chain = matchChain(product);
      if (!chain)
        continue;
      OpBuilder b(product);
      if (chain->queryRewire)
        chain->queryRewire->first->setOperand(0, chain->queryRewire->second);
      Value key = chain->key;
      if (TransposeOp t = chain->keyTranspose) {
        // K^T = transpose(X, perm) is [B, D, N]; K = transpose(X, perm with its last two
        // entries swapped), or X itself when that is the identity.
        SmallVector<int64_t> perm(t.getPerm());
        std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
        auto keyT = cast<RankedTensorType>(t.getType());
        SmallVector<int64_t> shape(keyT.getShape());
        std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
        bool identity = llvm::all_of(llvm::enumerate(perm),
                                     [](auto p) { return p.value() == int64_t(p.index()); });
        b.setInsertionPoint(chain->keyView ? chain->keyView : t.getOperation());
        key = identity ? t.getInput()
                       : b.create<TransposeOp>(t.getLoc(), keyT.clone(shape), t.getInput(),
                                               b.getDenseI64ArrayAttr(perm))
                             .getResult();
        if (Operation *view = chain->keyView) {
          // ... and its leading axes merged as K^T's were: [B, N, D].
          auto viewed = cast<RankedTensorType>(view->getResult(0).getType());
          SmallVector<int64_t> keyShape(viewed.getShape());
          std::swap(keyShape[keyShape.size() - 1], keyShape[keyShape.size() - 2]);
          if (key.getType() != viewed.clone(keyShape))
            key = b.create<ReshapeOp>(view->getLoc(), viewed.clone(keyShape), key);
        }
        chain->erased.insert(chain->erased.begin(), chain->keyOps.begin(), chain->keyOps.end());
        chain->erased.insert(chain->erased.begin(), t);
        b.setInsertionPoint(product);
      }
      // The bias as [batch, N] or [batch, M, N] (a view of its source, which the broadcast
      // read).
      Value scoreBias;
      if (chain->scoreBias) {
        const ScoreBias &bias = *chain->scoreBias;
        SmallVector<int64_t> shape = {bias.batch, bias.keys};
        if (bias.queries)
          shape.insert(shape.begin() + 1, bias.queries);
        auto type = RankedTensorType::get(shape, b.getF32Type());
        scoreBias = bias.source.getType() == type
                        ? bias.source
                        : b.create<ReshapeOp>(product.getLoc(), type, bias.source).getResult();
      }
      auto attention = b.create<AttentionOp>(
          product.getLoc(), product.getType(), chain->query, key, chain->value, chain->step,
          scoreBias, b.getF32FloatAttr(chain->scale),
          b.getF32FloatAttr(chain->dropout ? chain->dropout.getRatio().convertToFloat() : 0.0f),
          b.getI64IntegerAttr(chain->dropout ? int64_t(chain->dropout.getOpId()) : 0),
          b.getI64IntegerAttr(chain->dropout ? int64_t(chain->dropout.getIndexOffset()) : 0),
          chain->causal ? b.getUnitAttr() : UnitAttr(),
          chain->biasFills ? b.getUnitAttr() : UnitAttr());
      if (queryBlock > 0)
        attention->setAttr(kQueryBlockAttr, b.getI64IntegerAttr(queryBlock));
      product.getResult().replaceAllUsesWith(attention.getResult());
      product.erase();
      for (Operation *op : llvm::reverse(chain->erased))
        op->erase();
      // The broadcast, where no other attention's add still reads it.
      if (chain->scoreBias)
        for (Operation *op : llvm::reverse(chain->scoreBias->ops))
          if (op->use_empty())
            op->erase();
    }
  }
};

} // namespace
