// graphc-fit-budget: rematerialization until the training step fits a byte budget.
//
// Forward activations that the backward pass reads keep their bytes alive across the whole
// step; recomputing one right before its first backward reader frees them in between, at the
// price of running its op twice. Candidates are the forward values read by the backward pass
// whose defining op is pure and writes nothing in place (so side effects such as running
// statistics are never applied twice); a candidate is recomputed together with the reshape
// views through which the backward pass reads it. A training batch norm is the exception: its
// output is recomputed as graph.batch_norm_apply from the statistics it saved, which updates no
// running statistics and gives bit-identical values (so conv -> batch norm -> relu keeps only
// the convolution's output, which the batch norm's backward reads anyway, and recomputes the
// two cheap ops). A recomputed chain reads, rather than recomputes, any producer output that
// the backward pass reads later anyway (a residual block's input). Candidates are tried in a
// fixed order, most bytes saved per recomputed FLOP first (cost model, passes/CostModel.h); in
// a first round a remat is kept only if it lowers the liveness lower bound, in a second round
// over the rest if it makes the memory profile lighter (frees bytes below the peak, which
// become the peak once the first round has cut it); otherwise it is undone. The first round
// runs once over recomputations of cheap ops only, then over all. Of a candidate's
// chain depths the one that lowers the bound most is kept; only if that sequence never fits,
// the sequence keeping the first depth that lowers it runs instead, and after it the best-depth
// sequence over the exact model's extended shapes (searchWithFallback). The best-depth
// sequences run in two orders, static scores and scores lazily re-computed from the chain's
// FLOPs, and the fitting one with fewer extra FLOPs is kept. Whenever the peak is made of
// convolution steps only, their im2col is tiled first (no FLOPs). When nothing fits, filter
// gradients that read a channel concatenation are split over its parts and the fit runs
// again; when the unsplit step fits above its instant bound, the split step is fitted to the
// unsplit arena and kept when cheaper (tryCheaperSplit). After each kept remat the step is
// planned (heuristic placement) and the search stops at the first plan within the budget.
// Because the keep/undo decisions do not depend on the budget, a smaller budget only ever goes
// further along the same sequence, so the planned peak never increases when the budget
// decreases. O(c * n log n) for c candidates and n buffers. On graphs of up to
// exact-limit candidates, the exact program's choices at fixed levels (exact seeds), each
// completed by the heuristic, then replace the result where they fit with fewer FLOPs
// without lowering its arena (improveWithSeeds).
//
// With solver=exact (or auto under exact-limit candidates) the choice comes instead from the
// 0/1 program of fit/RematSolver.h: each candidate's options (alone, or with 1..4 producers;
// for the exact seeds, each forward segment recomputed whole too, grouped with the candidates
// it takes) are applied once, measured as a change of the liveness profile and undone
// (O(c * n)); CBC picks the fewest extra FLOPs within the budget; the choice is applied and
// planned, and re-solved below the missed model peak when the arena misses the budget; a
// choice that misses is also completed by the heuristic from where it stands, and the
// cheapest fitting result of the rounds is kept. The heuristic alone runs too, so the exact
// mode fits whenever the heuristic does; when both fit, the one with fewer extra FLOPs is
// kept.
//
// Trial arenas come from planToCapacity (best fit, then a node-limited placement search that
// stops at the first plan within the budget), which graphc-plan-memory falls back to as well.
// A recomputed chain goes past its depth through cheap ops (batch norm, elementwise) down to
// values live anyway, so that two overlapping chains (a skip connection's relu, recomputed for
// its own backward reader and inside its concat's chain) never keep an original alive; this
// also makes the exact model's linear sum of deltas match the applied choice.
#include <chrono>
#include <limits>
#include <map>
#include <numeric>
#include <queue>

#include "passes/CostModel.h"
#include "passes/InstantBound.h"
#include "passes/Liveness.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "graphc/runtime/workspace.h"

#include "fit/RematSolver.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallBitVector.h"

namespace graphc {
#define GEN_PASS_DEF_FITBUDGET
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;
using namespace graphc::graph;

namespace {

std::vector<int64_t> memoryProfile(const StepLiveness &live, uint64_t alignment);

/// Where the memory profile peaks (the steps at the peak), and the live range
/// of each rematerialization candidate's result buffer, on one version of the IR.
struct PeakWindow {
  std::vector<int64_t> steps; // every step at the peak, ascending
  llvm::DenseMap<Operation *, std::pair<int64_t, int64_t>> ranges;

  /// Whether recomputing `ops` together (a candidate and its copies in the other micro-batches)
  /// can lower the peak: their buffers, together, are live at every peak step. An op without a
  /// measured range counts as spanning. O(k log k + k log p) for k ops and p peak steps.
  bool spannedBy(ArrayRef<Operation *> ops) const {
    std::vector<std::pair<int64_t, int64_t>> live;
    for (Operation *op : ops) {
      auto range = ranges.find(op);
      if (range == ranges.end())
        return true;
      live.push_back(range->second);
    }
    llvm::sort(live);
    size_t covered = 0;
    int64_t coveredTo = -1; // the peak steps up to this one are counted
    for (auto [first, last] : live) {
      first = std::max(first, coveredTo + 1);
      if (first > last)
        continue;
      covered += std::upper_bound(steps.begin(), steps.end(), last) -
                 std::lower_bound(steps.begin(), steps.end(), first);
      coveredTo = last;
    }
    return covered == steps.size();
  }
};

struct Measure {
  uint64_t bound = 0;
  uint64_t arena = 0;
  /// The convolutions at the peak steps, when every peak step is a convolution whose im2col
  /// workspace can be tiled smaller (see smallerIm2colTile); else empty.
  std::vector<Operation *> tileAtPeak;
  /// Bytes live at each step, largest first: remats are compared on it (see lighter()).
  /// Empty when the measure was taken for the bound only.
  std::vector<int64_t> descendingProfile;
  /// Filled when asked for (MeasureOptions::windowOf).
  std::optional<PeakWindow> window;
};

struct MeasureOptions {
  bool withArena = false;       // plan the step (planToCapacity) for its arena
  bool sortedProfile = true;    // fill Measure::descendingProfile
  ArrayRef<Operation *> windowOf; // non-empty: fill Measure::window for these candidates
};

/// Whether profile `a` is lighter than `b`: lexicographically smaller when both are sorted
/// largest first (a lower peak, or the same peak at fewer steps, or ...; missing steps count
/// as empty). A remat that frees bytes away from the current peak is kept this way, because
/// it lowers the peak once other remats have cut the current one; comparing the peak alone
/// rejects it for good. The order does not depend on the budget, which keeps the sequence of
/// kept remats, and so the monotonicity in the budget, intact.
bool lighter(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    int64_t x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    if (x != y)
      return x < y;
  }
  return false;
}

/// Output pixels of the im2col tiles the fit gives a convolution: first kFirstTilePixels (16
/// rows of a 256-wide image, a sixteenth of its whole-image workspace), then, while the
/// convolution still makes the peak, half as many rows at a time down to kMinTilePixels. Each
/// tile's GEMM stays at least that wide, so tiling costs no FLOPs and little GEMM efficiency.
constexpr int64_t kFirstTilePixels = 4096, kMinTilePixels = 256;

/// A convolution's output rows (OH), and the tile rows of kFirstTilePixels and kMinTilePixels;
/// nullopt when `op` is not a convolution.
struct Im2colTiles {
  int64_t outputRows, first, smallest;
};
std::optional<Im2colTiles> im2colTilesOf(Operation *op) {
  std::optional<ConvTensors> conv = convTensorsOf(op);
  if (!conv || isDirectPointwiseConv(op)) // not a convolution, or one without an im2col matrix
    return std::nullopt;
  auto shape = cast<RankedTensorType>(conv->output.getType()).getShape();
  int64_t ow = std::max<int64_t>(shape[3], 1);
  return Im2colTiles{shape[2], int64_t(llvm::divideCeil(kFirstTilePixels, ow)),
                     int64_t(llvm::divideCeil(kMinTilePixels, ow))};
}

/// The next smaller im2col tile (output rows) of convolution `op`, or nullopt when `op` is not
/// a convolution or its tile is as small as the fit makes it.
std::optional<int64_t> smallerIm2colTile(Operation *op) {
  std::optional<Im2colTiles> tiles = im2colTilesOf(op);
  if (!tiles)
    return std::nullopt;
  int64_t current = rt::conv2dTileRows(im2colTileRows(op), tiles->outputRows);
  int64_t rows = current > tiles->first ? tiles->first : std::max(tiles->smallest, current / 2);
  if (rows >= current)
    return std::nullopt;
  return rows;
}

FailureOr<Measure> measure(func::FuncOp func, uint64_t alignment, int64_t budget,
                           const MeasureOptions &options, ArgumentBuffers &arguments) {
  auto live =
      computeStepLiveness(func, /*reuseDyingOperands=*/true, /*withNames=*/false, &arguments);
  if (failed(live))
    return failure();
  Measure m;
  // The lower bound is the profile's peak (plan::lowerBound's sweep, without building a plan).
  std::vector<int64_t> profile = memoryProfile(*live, alignment);
  int64_t peak = profile.empty() ? 0 : *std::max_element(profile.begin(), profile.end());
  m.bound = uint64_t(std::max<int64_t>(peak, 0));
  // A peak made of convolution steps only (a workspace is live at its op's step alone) is cut
  // by tiling their im2col; a plateau of more than a few steps is not a workspace's.
  constexpr size_t kMaxPeakConvs = 8;
  for (int64_t t = 0; t < int64_t(profile.size()); ++t) {
    if (profile[t] != peak)
      continue;
    if (m.tileAtPeak.size() == kMaxPeakConvs || !smallerIm2colTile(live->steps[t])) {
      m.tileAtPeak.clear();
      break;
    }
    m.tileAtPeak.push_back(live->steps[t]);
  }
  if (!options.windowOf.empty()) {
    PeakWindow window;
    for (int64_t t = 0; t < int64_t(profile.size()); ++t)
      if (profile[t] == peak)
        window.steps.push_back(t);
    for (Operation *op : options.windowOf) {
      std::optional<unsigned> buffer = live->bufferOf(op->getResult(0));
      if (!buffer)
        continue;
      const LiveBuffer &b = live->buffers[*buffer];
      window.ranges[op] = {b.first, b.last};
    }
    m.window = std::move(window);
  }
  if (options.sortedProfile) {
    m.descendingProfile = std::move(profile);
    llvm::sort(m.descendingProfile, std::greater<int64_t>());
  }
  if (options.withArena) {
    plan::Plan plan = planProblemFromLiveness(*live, alignment);
    planToCapacity(plan, uint64_t(std::max<int64_t>(budget, 0)));
    m.arena = plan.arenaBytes;
  }
  return m;
}

/// The clones of each recomputed forward op that the applied changes hold, by
/// the op they recompute (a batch norm's clone is its batch_norm_apply), so
/// that a later chain can read a clone that is live anyway instead of
/// recomputing it (see FitBudgetPass::liveCloneAt).
using CloneRegistry = llvm::DenseMap<Operation *, SmallVector<Operation *, 2>>;

/// One applied rematerialization, or one im2col tiling of the convolutions at the peak, kept so
/// that it can be undone.
struct Remat {
  SmallVector<Operation *> clones;
  /// (forward op, its clone) of each recomputed op, listed in `registry` while
  /// applied.
  SmallVector<std::pair<Operation *, Operation *>> sources;
  CloneRegistry *registry = nullptr;
  SmallVector<std::pair<OpOperand *, Value>> redirected; // operand -> its old value
  SmallVector<std::pair<Operation *, Attribute>> retiled; // convolution -> its old tile rows
  SmallVector<std::pair<Operation *, int64_t>> tiledTo;   // convolution -> its new tile rows
  bool segment = false; // a segment recomputation (rematerializeSegment)
  bool split = false;   // recomputed twice, around the widest gap (ChainShape::split)
  Operation *source = nullptr; // a single-value recomputation's candidate op
  /// A recomputation applied again on the current IR (the same op and chain shape, or the
  /// same segment), for improveLocally's replays, leaving out the micro-batches set in its
  /// argument (mapMirrors); nullopt when it no longer applies.
  std::function<std::optional<Remat>(const llvm::SmallBitVector &)> replay;
  /// The micro-batches whose copies of the recomputation were left out (improveLocally), and
  /// how many copies it recomputes (one per micro-batch not left out; 1 without micro-batches).
  llvm::SmallBitVector skipped;
  unsigned copies = 1;
  /// Whether a copy's late readers got a cheap recomputation of their own
  /// (FitBudgetPass::rematerializeOne), and the same change without it (for
  /// improveLocally).
  bool cheapLate = false;
  std::function<std::optional<Remat>(const llvm::SmallBitVector &)> replayWhole;
  bool isTiling() const { return !retiled.empty(); }
  /// Takes in `other`'s changes (another micro-batch's copy of the same recomputation): one
  /// undo reverts both.
  void absorb(Remat &&other) {
    llvm::append_range(clones, other.clones);
    llvm::append_range(sources, other.sources);
    cheapLate = cheapLate || other.cheapLate;
    if (!registry)
      registry = other.registry;
    llvm::append_range(redirected, other.redirected);
    llvm::append_range(retiled, other.retiled);
    llvm::append_range(tiledTo, other.tiledTo);
  }
  /// Absorbs one micro-batch's `copy` and counts it; false, with everything undone, when the
  /// copy did not apply.
  bool addCopy(std::optional<Remat> copy) {
    if (!copy) {
      undo();
      return false;
    }
    absorb(std::move(*copy));
    ++copies;
    return true;
  }
  void undo() {
    for (auto &[op, old] : retiled) {
      if (old)
        op->setAttr(kIm2colRowsAttr, old);
      else
        op->removeAttr(kIm2colRowsAttr);
    }
    for (auto &[operand, old] : redirected)
      operand->set(old);
    for (auto &[source, clone] : sources) {
      auto listed = registry->find(source);
      if (listed == registry->end())
        continue;
      auto *at = llvm::find(listed->second, clone);
      if (at != listed->second.end())
        listed->second.erase(at);
      if (listed->second.empty())
        registry->erase(listed);
    }
    for (Operation *clone : llvm::reverse(clones))
      clone->erase();
  }
};

/// Sets the im2col tile rows of `op` to `rows`, remembering the old ones in `tiling`.
void setIm2colRows(Remat &tiling, Operation *op, int64_t rows) {
  tiling.retiled.push_back({op, op->getAttr(kIm2colRowsAttr)});
  tiling.tiledTo.push_back({op, rows});
  op->setAttr(kIm2colRowsAttr, Builder(op->getContext()).getI64IntegerAttr(rows));
}

/// Tiles the im2col of `convs` (Measure::tileAtPeak) to smallerIm2colTile's rows.
Remat tileIm2col(ArrayRef<Operation *> convs) {
  Remat tiling;
  for (Operation *op : convs)
    if (std::optional<int64_t> rows = smallerIm2colTile(op))
      setIm2colRows(tiling, op, *rows);
  return tiling;
}

/// Bytes live at each step of `live` (aligned sizes, as plan::lowerBound counts them).
/// Undoes `changes` newest first: each was applied on the IR that the earlier ones left.
void undoNewestFirst(MutableArrayRef<Remat> changes) {
  for (Remat &r : llvm::reverse(changes))
    r.undo();
}

std::vector<int64_t> memoryProfile(const StepLiveness &live, uint64_t alignment) {
  std::vector<int64_t> diff(live.steps.size() + 1, 0);
  for (const LiveBuffer &b : live.buffers) {
    if (b.last < b.first || b.host) // host memory is not the device arena's
      continue;
    int64_t size = int64_t(plan::alignTo(b.bytes, std::max<uint64_t>(alignment, 1)));
    diff[b.first] += size;
    diff[b.last + 1] -= size;
  }
  std::vector<int64_t> profile(live.steps.size());
  int64_t running = 0;
  for (size_t t = 0; t < profile.size(); ++t)
    profile[t] = running += diff[t];
  return profile;
}

struct FitBudgetPass : graphc::impl::FitBudgetBase<FitBudgetPass> {
  using FitBudgetBase::FitBudgetBase;

  /// Up to this many candidates (a fact of the graph, not of the budget) every heuristic
  /// sequence runs, lazily ordered ones included, and the local search follows; above it each
  /// costs seconds (searchWithFallback).
  static constexpr size_t kLazyCandidateLimit = 600;

  /// The exact seeds (improveWithSeeds) run on graphs of up to this many candidates times
  /// ops, besides exactLimit: their program measures every candidate's options with a liveness
  /// pass over the step, and each seed's completion is a heuristic sequence, so both grow as
  /// candidates x ops. ResNet-50 (104 x 568: 1.1 s for the program, 0.03-0.1 s a seed) keeps
  /// them, and a seed wins there at 30% of its activations; the 48-layer encoder (385 x 4042)
  /// would spend 2.0 s on the program and 1.1-1.2 s on each of the two seeds it tries, a third
  /// of its fit, and no seed wins there. A fact of the graph, so the peak stays monotone.
  static constexpr uint64_t kSeedWorkLimit = 1'000'000;

  /// The seeds' program has the forward segments among its candidates (buildExactModel's
  /// withSegments) on graphs of up to this many candidates times ops, a fact of the graph
  /// too: ResNet-50 (104 x 705) needs them below 28% of its activations (+24.83% -> +14.40%
  /// at 25%), while on the 24-layer encoder (2309 ops) they doubled the fit's time (2.98 s ->
  /// 6.61 s) and changed no plan.
  static constexpr uint64_t kSegmentSeedWorkLimit = 250'000;

  /// The step's argument buffers, read once for the fit's thousands of liveness passes.
  ArgumentBuffers argumentBuffers;

  FailureOr<Measure> measureStep(func::FuncOp func, const MeasureOptions &options) {
    return measure(func, alignment, budget, options, argumentBuffers);
  }

  struct Candidate {
    Operation *op;
    double score; // bytes / FLOPs of the op alone
    unsigned order;
    double bytes;
  };

  /// Where a search ended: the measured plan, and the remats applied to get there.
  struct Outcome {
    Measure measure;
    std::vector<Remat> applied;
    double extraFlops = 0;
    // The local search (improveLocally), once run: remats dropped and swapped,
    // cheap late recomputations undone (rejoined), and the extra FLOPs before
    // it.
    bool improved = false;
    unsigned dropped = 0, swapped = 0, rejoined = 0;
    double searchedFlops = 0;
    /// The largest arena a kept trial of the local search or the seeds started from (see
    /// improveLocally): the step's arena is padded up to it, so that the arena stays monotone
    /// in the budget while a trial that plans below it is still kept.
    uint64_t arenaFloor = 0;
    uint64_t paddedArena() const { return std::max(measure.arena, arenaFloor); }
    void undo() {
      undoNewestFirst(applied);
      applied.clear();
      extraFlops = 0;
    }
  };

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    argumentBuffers = ArgumentBuffers();
    clonesOf.clear();
    if (budget <= 0 || !func.getBody().hasOneBlock())
      return;
    if (solver != "heuristic" && solver != "exact" && solver != "auto") {
      func.emitError() << "graphc-fit-budget: solver must be heuristic, exact or auto, not '"
                       << solver << "'";
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    Builder attrs(func.getContext());
    // The whole pass's wall time, for the fit report and the solve-time benchmark, less the
    // instant bound's (a figure for the report, not part of fitting; it has its own line).
    instantBoundWallSeconds = 0;
    struct Timer {
      func::FuncOp func;
      const double &excluded;
      std::chrono::steady_clock::time_point begin = std::chrono::steady_clock::now();
      ~Timer() {
        std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - begin;
        func->setAttr("graph.fit_seconds",
                      Builder(func.getContext()).getF64FloatAttr(seconds.count() - excluded));
      }
    } timer{func, instantBoundWallSeconds};
    auto start = measureStep(func, {/*withArena=*/true});
    if (failed(start))
      return signalPassFailure();
    double flopsBefore = 0;
    for (Operation &op : body.without_terminator())
      flopsBefore += estimateOpCost(&op).flops;
    func->setAttr("graph.fit_peak_before", attrs.getI64IntegerAttr(start->arena));
    if (start->arena <= uint64_t(budget)) {
      func->setAttr("graph.fit_remat_ops", attrs.getI64IntegerAttr(0));
      func->setAttr("graph.fit_peak_after", attrs.getI64IntegerAttr(start->arena));
      func->setAttr("graph.fit_extra_flops", attrs.getF64FloatAttr(0));
      return;
    }

    // The backward region starts at the loss gradient.
    Operation *lossGrad = nullptr;
    for (Operation &op : body)
      if (isa<LossBackwardOp>(op)) {
        lossGrad = &op;
        break;
      }
    if (!lossGrad)
      return func->setAttr("graph.fit_peak_after", attrs.getI64IntegerAttr(start->arena));

    auto outcome = solveFor(func, lossGrad, *start, flopsBefore);
    if (failed(outcome))
      return signalPassFailure();
    // The last cure: when nothing fits, filter gradients that read a channel concatenation
    // are split over its parts and the fit runs again. Only then: the split frees the
    // concatenation across the backward pass but keeps its parts alive instead, which costs
    // more recomputation where the plain fit succeeds (a small U-Net at 780000 bytes: +6.96%
    // FLOPs against +3.09%). A budget uses it only below every plan of the unsplit search, so
    // the peak stays monotone.
    if (outcome->measure.arena > uint64_t(budget) && splitFilterGradients &&
        hasFilterGradientOverConcat(func)) {
      uint64_t unsplitArena = outcome->measure.arena;
      outcome->undo();
      unsigned split = splitFilterGradientsOverConcats(func);
      auto splitStart = measureStep(func, {/*withArena=*/true});
      if (failed(splitStart))
        return signalPassFailure();
      auto splitOutcome = solveFor(func, lossGrad, *splitStart, flopsBefore);
      if (failed(splitOutcome))
        return signalPassFailure();
      // A compile that only asks whether the step fits keeps the split step when it fits (a
      // miss searches the unsplit step again, so that it reports the same arena).
      if (splitOutcome->measure.arena < unsplitArena ||
          (questionOnly && splitOutcome->measure.arena <= uint64_t(budget))) {
        outcome = std::move(splitOutcome);
        keepFilterGradientSplits(func, split);
      } else {
        splitOutcome->undo();
        undoFilterGradientSplits();
        // The unsplit step again: its instant bound is recorded already.
        outcome = solveFor(func, lossGrad, *start, flopsBefore, /*withBound=*/false);
        if (failed(outcome))
          return signalPassFailure();
      }
    } else if (outcome->measure.arena <= uint64_t(budget) && !questionOnly &&
               splitFilterGradients && hasFilterGradientOverConcat(func)) {
      if (failed(tryCheaperSplit(func, lossGrad, flopsBefore, *start, *outcome)))
        return signalPassFailure();
    }
    // Each micro-batch's copy of a recomputation counts.
    int64_t kept = 0, segments = 0, segmentOps = 0, split = 0, cheapLate = 0;
    for (const Remat &r : outcome->applied) {
      if (r.isTiling() || r.clones.empty())
        continue;
      kept += r.copies;
      split += r.split ? r.copies : 0;
      cheapLate += r.cheapLate ? r.copies : 0;
      // Segments count once in graph.fit_remat_ops; the ops they recompute (views aside) too.
      if (r.segment) {
        segments += r.copies;
        segmentOps += llvm::count_if(r.clones, [](Operation *c) { return !isa<ReshapeOp>(c); });
      }
    }
    func->setAttr("graph.fit_remat_ops", attrs.getI64IntegerAttr(kept));
    if (segments) {
      func->setAttr("graph.fit_remat_segments", attrs.getI64IntegerAttr(segments));
      func->setAttr("graph.fit_remat_segment_ops", attrs.getI64IntegerAttr(segmentOps));
    }
    if (split)
      func->setAttr("graph.fit_remat_split", attrs.getI64IntegerAttr(split));
    if (cheapLate)
      func->setAttr("graph.fit_remat_cheap_late", attrs.getI64IntegerAttr(cheapLate));
    recordTiling(func);
    func->setAttr("graph.fit_peak_after", attrs.getI64IntegerAttr(outcome->paddedArena()));
    if (outcome->arenaFloor > outcome->measure.arena)
      func->setAttr("graph.fit_arena_floor", attrs.getI64IntegerAttr(outcome->arenaFloor));
    double extra = flopsBefore > 0 ? outcome->extraFlops / flopsBefore : 0;
    func->setAttr("graph.fit_extra_flops", attrs.getF64FloatAttr(extra));
    if (auto bound = func->getAttrOfType<FloatAttr>("graph.fit_lower_bound")) {
      double lower = bound.getValueAsDouble();
      func->setAttr("graph.fit_gap",
                    attrs.getF64FloatAttr(extra > 0 ? std::max(0.0, (extra - lower) / extra) : 0));
    }
  }

  /// When the unsplit step fits, the split of filter gradients over their concatenations
  /// (the last cure) may still fit at fewer FLOPs: it frees the concatenation, which the
  /// unsplit plan pays for by recomputing (the U-Net at 40% of its activations: +7.48%
  /// unsplit, where the split step fits 33% at +6.38%). The split step is fitted to the unsplit
  /// plan's padded arena, not to the budget, and kept only when it fits there with fewer
  /// FLOPs; its arena is then padded up to the unsplit one. So the arena is the unsplit
  /// search's whatever happens, and stays monotone in the budget. Otherwise the unsplit
  /// outcome is searched again (deterministically, the same plan) and `outcome` is that one.
  LogicalResult tryCheaperSplit(func::FuncOp func, Operation *lossGrad, double flopsBefore,
                                const Measure &start, Outcome &outcome) {
    uint64_t unsplitArena = outcome.paddedArena();
    double unsplitFlops = outcome.extraFlops;
    // A plan at the instant bound of the unsplit step is as cheap as that step gets.
    FloatAttr bound = func->getAttrOfType<FloatAttr>("graph.fit_instant_bound");
    if (unsplitFlops <= 0 ||
        (bound && unsplitFlops <= (bound.getValueAsDouble() + 1e-5) * flopsBefore))
      return success();
    // The split search's attributes replace the unsplit one's; restore them when it loses.
    SmallVector<NamedAttribute> unsplitAttrs(func->getAttrs());
    outcome.undo();
    unsigned split = splitFilterGradientsOverConcats(func);
    // The instant bound at the budget asked for holds for both steps once it is the smaller
    // of theirs (recordInstantBound keeps the smaller); at the unsplit arena it would not.
    if (instantBound)
      recordInstantBound(func, lossGrad, flopsBefore);
    int64_t requested = budget;
    budget = int64_t(unsplitArena);
    FailureOr<Outcome> splitOutcome = failure();
    FailureOr<Measure> splitStart = measureStep(func, {/*withArena=*/true});
    if (succeeded(splitStart))
      splitOutcome = solveFor(func, lossGrad, *splitStart, flopsBefore, /*withBound=*/false);
    budget = requested;
    if (failed(splitOutcome))
      return failure();
    if (splitOutcome->paddedArena() <= unsplitArena && splitOutcome->extraFlops < unsplitFlops) {
      splitOutcome->arenaFloor = std::max(splitOutcome->arenaFloor, unsplitArena);
      outcome = std::move(*splitOutcome);
      keepFilterGradientSplits(func, split);
      func->setAttr("graph.fit_split_extra_flops_unsplit",
                    Builder(func.getContext()).getF64FloatAttr(unsplitFlops / flopsBefore));
      return success();
    }
    splitOutcome->undo();
    undoFilterGradientSplits();
    func->setAttrs(unsplitAttrs);
    FailureOr<Outcome> again = solveFor(func, lossGrad, start, flopsBefore, /*withBound=*/false);
    if (failed(again))
      return failure();
    outcome = std::move(*again);
    return success();
  }

  /// Chooses what to recompute (and tile) from `start`: gathers the candidates, then runs the
  /// exact solver and the heuristic, or the heuristic alone (see runOnOperation). Leaves the
  /// outcome applied.
  FailureOr<Outcome> solveFor(func::FuncOp func, Operation *lossGrad, const Measure &start,
                              double flopsBefore, bool withBound = true) {
    Builder attrs(func.getContext());
    // Candidates: forward results with a reader after their micro-batch's loss gradient (the
    // step's only one without micro-batching).
    mapOwnLossGradients(func.getBody().front());
    mapMirrors(func.getBody().front());
    std::vector<Candidate> candidates;
    unsigned position = 0;
    for (Operation &op : func.getBody().front()) {
      ++position;
      Operation *own = ownLossGrad.lookup(&op);
      if (!own || !recomputable(&op) || mirrored.contains(&op))
        continue;
      Value v = op.getResult(0);
      if (backwardUses(v, own).empty())
        continue;
      OpCost cost = estimateOpCost(&op);
      double bytes = double(tensorBytes(v.getType()));
      candidates.push_back({&op, bytes / std::max(cost.flops, 1.0), position, bytes});
    }
    recordChen(func, flopsBefore);
    if (instantBound && withBound)
      recordInstantBound(func, lossGrad, flopsBefore);
    llvm::stable_sort(candidates, [](const Candidate &a, const Candidate &b) {
      return a.score > b.score || (a.score == b.score && a.order < b.order);
    });

    // The local search, on graphs of up to kLazyCandidateLimit candidates, once per fitting
    // outcome (the heuristic's before it is compared with the exact choice).
    auto improve = [&](Outcome &o) -> LogicalResult {
      if (!localSearch || questionOnly || o.improved || candidates.size() > kLazyCandidateLimit ||
          o.measure.arena > uint64_t(budget))
        return success();
      return improveLocally(func, o, candidates, lossGrad);
    };
    std::optional<Outcome> outcome;
    bool exact = solver == "exact" || (solver == "auto" && candidates.size() <= exactLimit);
    if (exact) {
      auto solved = solveExactly(func, candidates, lossGrad, flopsBefore);
      if (failed(solved))
        return failure();
      // The exact model adds memory changes linearly, so its choice can cost more FLOPs once
      // applied than the heuristic's: keep whichever fits with fewer (on a tie, the exact
      // choice as solved, or the heuristic's over an exact choice it had to complete); the
      // exact choice is re-applied, deterministically, when it wins.
      if (*solved) {
        ExactResult &result = **solved;
        double exactFlops = result.outcome.extraFlops;
        result.outcome.undo();
        auto searched = searchWithFallback(func, candidates, lossGrad, start);
        if (failed(searched) || failed(improve(*searched)))
          return failure();
        if (searched->measure.arena <= uint64_t(budget) &&
            (searched->extraFlops < exactFlops ||
             (result.pick.repaired && searched->extraFlops <= exactFlops))) {
          outcome = std::move(*searched);
          func->setAttr("graph.fit_solver", attrs.getStringAttr("heuristic"));
        } else {
          searched->undo();
          auto again = applyExact(func, candidates, lossGrad, result.pick);
          if (failed(again))
            return failure();
          outcome = std::move(*again);
        }
      }
    }
    if (!outcome) {
      auto searched = searchWithFallback(func, candidates, lossGrad, start);
      if (failed(searched))
        return failure();
      outcome = std::move(*searched);
      func->setAttr("graph.fit_solver", attrs.getStringAttr("heuristic"));
    }
    if (failed(improve(*outcome)))
      return failure();
    uint64_t seedWork = uint64_t(candidates.size()) * func.getBody().front().getOperations().size();
    if (seedLevels > 0 && candidates.size() <= exactLimit && seedWork <= kSeedWorkLimit &&
        !(questionOnly && outcome->measure.arena <= uint64_t(budget))) {
      if (failed(improveWithSeeds(func, *outcome, candidates, lossGrad, start, flopsBefore,
                                  /*withSegments=*/seedWork <= kSegmentSeedWorkLimit)) ||
          failed(improve(*outcome)))
        return failure();
    }
    if (outcome->dropped || outcome->swapped || outcome->rejoined) {
      func->setAttr(
          "graph.fit_local_search",
          attrs.getDenseI64ArrayAttr(
              {int64_t(outcome->dropped), int64_t(outcome->swapped), int64_t(outcome->rejoined)}));
      func->setAttr(
          "graph.fit_extra_flops_searched",
          attrs.getF64FloatAttr(flopsBefore > 0 ? outcome->searchedFlops / flopsBefore : 0));
    }
    return std::move(*outcome);
  }

  /// `r` applied again on the current IR: a tiling sets the same tile rows, a recomputation
  /// replays its op and chain shape, or its segment. nullopt when it no longer applies.
  static std::optional<Remat> replayed(const Remat &r) {
    if (r.isTiling()) {
      Remat tiling;
      for (auto [op, rows] : r.tiledTo)
        setIm2colRows(tiling, op, rows);
      return tiling;
    }
    return r.replay ? r.replay(r.skipped) : std::nullopt;
  }

  /// Replays `recipes` (undone, in their order) onto the IR into `into`, all but position
  /// `skip`, and without micro-batch `drop`'s copies when set; false when one no longer
  /// applies, with what was replayed undone.
  bool replayInto(const std::vector<Remat> &recipes, std::vector<Remat> &into, size_t skip,
                  std::optional<unsigned> drop = std::nullopt) const {
    for (auto [i, r] : llvm::enumerate(recipes)) {
      if (i == skip)
        continue;
      std::optional<Remat> again;
      if (r.isTiling() || !drop) {
        again = replayed(r);
      } else {
        llvm::SmallBitVector skipped = r.skipped;
        skipped.resize(microBatchCount);
        skipped.set(*drop);
        again = r.replay ? r.replay(skipped) : std::nullopt;
      }
      if (!again) {
        undoNewestFirst(into);
        into.clear();
        return false;
      }
      into.push_back(std::move(*again));
    }
    return true;
  }

  /// Whether a tiling in `applied` targets a recomputed convolution (a clone of an earlier
  /// change, which a replay finds by position).
  static bool tilesAClone(const std::vector<Remat> &applied) {
    return llvm::any_of(replayStepsOf(applied), [](const ReplayStep &step) {
      return llvm::any_of(step.targets, [](auto &t) { return !t.op; });
    });
  }

  /// The local search's first step on a micro-batched step. The search recomputes every
  /// micro-batch alike (mapMirrors), but they need not peak alike: the first has no gradient
  /// accumulators live yet (the 4-layer MLP with 2 micro-batches peaks in the second only).
  /// For each micro-batch in turn, every change is undone and replayed without that
  /// micro-batch's copies; the step is kept so when it still fits the budget, padded up to the
  /// arena before (`floor`, as below). The trials do not depend on the budget. O(k) replays of
  /// the applied changes and plans, for k micro-batches; none when a tiling targets a
  /// recomputed convolution (its replay finds that clone by position).
  /// Adds the copies left out to `removed`.
  LogicalResult dropMicroBatchCopies(func::FuncOp func, Outcome &out, uint64_t &floor,
                                     unsigned &removed) {
    std::vector<Remat> &applied = out.applied;
    if (microBatchCount < 2 || tilesAClone(applied))
      return success();
    auto replay = [&](const std::vector<Remat> &recipes, std::optional<unsigned> drop) {
      return replayInto(recipes, applied, /*skip=*/recipes.size(), drop);
    };
    for (unsigned micro = 0; micro < microBatchCount; ++micro) {
      std::vector<Remat> recipes = std::move(applied);
      applied.clear();
      undoNewestFirst(recipes);
      bool kept = false;
      if (replay(recipes, micro)) {
        size_t clones = 0, clonesBefore = 0;
        for (auto [now, before] : llvm::zip(applied, recipes)) {
          clones += now.clones.size();
          clonesBefore += before.clones.size();
        }
        FailureOr<Measure> trial = failure();
        if (clones < clonesBefore) {
          trial = measureStep(func, {});
          if (failed(trial))
            return failure();
        }
        if (clones < clonesBefore && trial->bound <= uint64_t(budget)) {
          trial = measureStep(func, {/*withArena=*/true});
          if (failed(trial))
            return failure();
          if (trial->arena <= uint64_t(budget)) {
            kept = true;
            floor = std::max(floor, trial->arena);
            out.measure = std::move(*trial);
            for (auto [now, before] : llvm::zip(applied, recipes))
              removed += now.clones.size() < before.clones.size(); // this copy left out
          }
        }
        if (!kept) {
          undoNewestFirst(applied);
          applied.clear();
        }
      }
      if (!kept && !replay(recipes, std::nullopt)) {
        func.emitError("graphc-fit-budget: an applied recomputation could not be replayed");
        return failure();
      }
    }
    return success();
  }

  /// Splits each applied recomputation into one change per micro-batch copy, replayed in
  /// order, so that the local search below drops and swaps copies one by one (the 4-layer MLP
  /// with 4 micro-batches at 380000 bytes: +13.26% FLOPs as whole changes, +4.46% by copy).
  /// Only up to kMaxSplitCopies copies in all: each is a trial of O(changes) replays.
  LogicalResult splitCopies(func::FuncOp func, Outcome &out) {
    constexpr size_t kMaxSplitCopies = 64;
    std::vector<Remat> &applied = out.applied;
    size_t copies = 0;
    for (const Remat &r : applied)
      copies += r.isTiling() ? 1 : r.copies;
    if (microBatchCount < 2 || copies == applied.size() || copies > kMaxSplitCopies ||
        tilesAClone(applied))
      return success();
    std::vector<Remat> recipes = std::move(applied);
    applied.clear();
    undoNewestFirst(recipes);
    bool split = true;
    for (const Remat &r : recipes) {
      if (r.isTiling() || r.copies < 2) {
        std::optional<Remat> again = replayed(r);
        if (!(split = again.has_value()))
          break;
        applied.push_back(std::move(*again));
        continue;
      }
      for (unsigned micro = 0; micro < microBatchCount && split; ++micro) {
        if (micro < r.skipped.size() && r.skipped[micro])
          continue;
        llvm::SmallBitVector others(microBatchCount, true);
        others.reset(micro);
        std::optional<Remat> copy = r.replay(others);
        if ((split = copy.has_value()))
          applied.push_back(std::move(*copy));
      }
      if (!split)
        break;
    }
    if (split)
      return success();
    undoNewestFirst(applied);
    applied.clear();
    if (!replayInto(recipes, applied, /*skip=*/recipes.size())) {
      func.emitError("graphc-fit-budget: an applied recomputation could not be replayed");
      return failure();
    }
    return success();
  }

  /// Local search after the search (the fast heuristic "improved by local search").
  /// A greedy sequence keeps each remat because it lowered the bound when it was tried; those
  /// kept after it can make it redundant, or a cheaper set can free the same bytes (ResNet-50
  /// at a third of its activations: two 6.6 GFLOP convolutions recomputed where two of 3.3
  /// GFLOP elsewhere cover the same peak steps). Each applied recomputation, most FLOPs first,
  /// is left out in a trial: the changes applied after it are undone and replayed without it
  /// (in their order, so each is rebuilt on the IR it meets). If the step then misses the
  /// budget and the remat is one of the kSwapTrials dearest (a segment too), the
  /// best-shape sequence runs from there without that candidate (a swap). The trial is kept
  /// when it costs fewer FLOPs (a removal always does) and fits the budget; otherwise the
  /// changes are replayed as they were. A kept trial that plans below the arena before it is
  /// padded up to that arena (Outcome::arenaFloor: the step's arena keeps the unused bytes).
  /// Why that floor: it keeps the arena monotone in the budget. The search's winner W(B)
  /// already is (searchWithFallback), and the trials' order does not depend on the budget.
  /// Along the trials the padded arenas only grow, so the final one x(B1) bounds every kept
  /// trial's. At a budget B2 < B1 with x(B1) <= B2, W's own arena (<= x(B1)) fits B2, so
  /// W(B2) = W(B1), and every trial decides the same way at B2 (a kept one's arena is <= B2;
  /// a dropped one was above B1 or no cheaper): the same result. Refusing the trials below
  /// the floor instead, as a first version did, lost the cheaper ones (the bench U-Net at 40%
  /// of its activations: a swap to +8.31% FLOPs planned 2 MiB below the floor, +10.81% kept).
  /// O(k) removal trials of O(k) replays each (a plan only when the bound fits), plus
  /// kSwapTrials runs of the sequence.
  LogicalResult improveLocally(func::FuncOp func, Outcome &out, ArrayRef<Candidate> candidates,
                               Operation *lossGrad) {
    constexpr unsigned kSwapTrials = 8;
    uint64_t floor = out.paddedArena();
    std::vector<Remat> &applied = out.applied;
    unsigned removed = 0, swapped = 0;
    if (failed(dropMicroBatchCopies(func, out, floor, removed)) || failed(splitCopies(func, out)))
      return failure();
    auto flopsOf = [](const Remat &r) {
      double flops = 0;
      for (Operation *clone : r.clones)
        flops += estimateOpCost(clone).flops;
      return flops;
    };
    auto totalFlops = [&] {
      double flops = 0;
      for (const Remat &r : applied)
        flops += flopsOf(r);
      return flops;
    };
    // The recomputations to try, most FLOPs first (stable: earlier first on a tie), by
    // identity: positions move as trials are kept. The first kSwapTrials of them may swap.
    std::vector<unsigned> ids(applied.size());
    struct Trial {
      double flops;
      unsigned id;
      Operation *source; // the candidate a swap's sequence leaves out; null for a segment
    };
    std::vector<Trial> order;
    for (auto [i, r] : llvm::enumerate(applied)) {
      ids[i] = unsigned(i);
      if (!r.isTiling() && !r.clones.empty())
        order.push_back({flopsOf(r), unsigned(i), r.source});
    }
    llvm::stable_sort(order, [](const Trial &a, const Trial &b) { return a.flops > b.flops; });
    auto replay = [&](const std::vector<Remat> &recipes, size_t skip, std::vector<Remat> &into) {
      return replayInto(recipes, into, skip);
    };
    // Whether a tiling applied after `position` targets a clone that a trial
    // from there rebuilds (a replay finds that clone by position, so it would
    // not find it).
    auto tilesARebuiltClone = [&](size_t position) {
      llvm::DenseSet<Operation *> rebuilt;
      for (size_t i = position; i < applied.size(); ++i)
        rebuilt.insert(applied[i].clones.begin(), applied[i].clones.end());
      return llvm::any_of(
          llvm::make_range(applied.begin() + position + 1, applied.end()), [&](const Remat &r) {
            return llvm::any_of(r.tiledTo,
                                [&](auto &tile) { return rebuilt.contains(tile.first); });
          });
    };
    // A trial's measure: the bound, and the arena once the bound is within the
    // budget.
    auto measureTrial = [&]() -> FailureOr<Measure> {
      auto trial = measureStep(func, {});
      if (failed(trial) || trial->bound > uint64_t(budget))
        return trial;
      return measureStep(func, {/*withArena=*/true});
    };
    unsigned swapsLeft = kSwapTrials;
    for (const Trial &t : order) {
      size_t position = llvm::find(ids, t.id) - ids.begin();
      if (tilesARebuiltClone(position))
        continue;
      bool swap = swapsLeft > 0;
      if (swap)
        --swapsLeft;
      double flopsBefore = totalFlops();
      std::vector<Remat> recipes(std::make_move_iterator(applied.begin() + position),
                                 std::make_move_iterator(applied.end()));
      applied.resize(position);
      undoNewestFirst(recipes);
      std::vector<Remat> suffix;
      bool kept = false;
      if (replay(recipes, /*skip=*/0, suffix)) {
        for (Remat &r : suffix)
          applied.push_back(std::move(r));
        suffix.clear();
        auto trial = measureTrial();
        if (failed(trial))
          return failure();
        bool fits = trial->bound <= uint64_t(budget) && trial->arena <= uint64_t(budget);
        if (fits) {
          kept = true;
          ++removed;
          floor = std::max(floor, trial->arena);
          out.measure = std::move(*trial);
        } else if (!fits && swap) {
          std::vector<Candidate> others; // a segment is no candidate of the sequence anyway
          for (const Candidate &c : candidates)
            if (c.op != t.source)
              others.push_back(c);
          if (trial->arena == 0) {
            trial = measureStep(func, {/*withArena=*/true});
            if (failed(trial))
              return failure();
          }
          // The swap is kept only when the rest costs fewer FLOPs than the dropped remat: the
          // sequence stops (as a miss) once its remats cost that much, since its FLOPs only
          // grow (the slack keeps rounding from stopping a sequence the check below keeps).
          double cap = (flopsBefore - totalFlops()) * (1 + 1e-9);
          auto rest = searchHeuristically(func, others, lossGrad, *trial, ShapePolicy::Best,
                                          /*extended=*/false, /*lazy=*/false, cap);
          if (failed(rest))
            return failure();
          double flopsAfter = totalFlops() + rest->extraFlops;
          if (rest->measure.arena <= uint64_t(budget) && flopsAfter < flopsBefore) {
            kept = true;
            ++swapped;
            floor = std::max(floor, rest->measure.arena);
            out.measure = rest->measure;
            for (Remat &r : rest->applied)
              applied.push_back(std::move(r));
          } else {
            rest->undo();
          }
        }
        if (!kept) {
          for (size_t i = applied.size(); i > position; --i)
            applied[i - 1].undo();
          applied.resize(position);
        }
      }
      if (kept) {
        // Identities: the replayed suffix keeps its order; a swap's additions are new.
        ids.erase(ids.begin() + position);
        while (ids.size() < applied.size())
          ids.push_back(unsigned(-1));
        continue;
      }
      if (!replay(recipes, /*skip=*/recipes.size(), suffix)) {
        func.emitError("graphc-fit-budget: an applied recomputation could not be replayed");
        return failure();
      }
      for (Remat &r : suffix)
        applied.push_back(std::move(r));
    }
    // Cheap late recomputations the plan does not need: each change that gave
    // its late readers one (rematerializeOne) is replayed whole instead, in a
    // trial like the removals above, and kept when the step still fits (with
    // fewer FLOPs: the cheap ops run once less). Up to kWholeTrials of them, in
    // the order applied.
    constexpr unsigned kWholeTrials = 16;
    unsigned wholeTrials = 0, rejoined = 0;
    for (size_t position = 0; position < applied.size() && wholeTrials < kWholeTrials; ++position) {
      if (!applied[position].replayWhole)
        continue;
      if (tilesARebuiltClone(position))
        continue;
      ++wholeTrials;
      double flopsBefore = totalFlops();
      std::vector<Remat> recipes(std::make_move_iterator(applied.begin() + position),
                                 std::make_move_iterator(applied.end()));
      applied.resize(position);
      undoNewestFirst(recipes);
      bool kept = false;
      if (std::optional<Remat> whole = recipes.front().replayWhole(recipes.front().skipped)) {
        applied.push_back(std::move(*whole));
        std::vector<Remat> suffix;
        if (replay(recipes, /*skip=*/0, suffix)) {
          for (Remat &r : suffix)
            applied.push_back(std::move(r));
          auto trial = measureTrial();
          if (failed(trial))
            return failure();
          if (trial->bound <= uint64_t(budget) && trial->arena <= uint64_t(budget) &&
              totalFlops() < flopsBefore) {
            kept = true;
            ++rejoined;
            floor = std::max(floor, trial->arena);
            out.measure = std::move(*trial);
          }
        }
        if (!kept) {
          for (size_t i = applied.size(); i > position; --i)
            applied[i - 1].undo();
          applied.resize(position);
        }
      }
      if (kept)
        continue;
      std::vector<Remat> suffix;
      if (!replay(recipes, /*skip=*/recipes.size(), suffix)) {
        func.emitError("graphc-fit-budget: an applied recomputation could not "
                       "be replayed");
        return failure();
      }
      for (Remat &r : suffix)
        applied.push_back(std::move(r));
    }
    out.improved = true;
    out.arenaFloor = floor;
    out.dropped = removed;
    out.swapped = swapped;
    out.rejoined = rejoined;
    out.searchedFlops = out.extraFlops;
    out.extraFlops = totalFlops();
    return success();
  }

  /// The channel concatenation that `filterGrad` reads (splitFilterGradientsOverConcats), or
  /// null.
  static ConcatOp concatReadBy(Conv2dBackwardFilterOp filterGrad) {
    auto concat = filterGrad.getInput().getDefiningOp<ConcatOp>();
    return concat && concat.getAxis() == 1 && filterGrad.getGroups() == 1 ? concat : ConcatOp();
  }

  static bool hasFilterGradientOverConcat(func::FuncOp func) {
    return func
        .walk([](Conv2dBackwardFilterOp filterGrad) {
          return concatReadBy(filterGrad) ? WalkResult::interrupt() : WalkResult::advance();
        })
        .wasInterrupted();
  }

  /// The filter gradients split by splitFilterGradientsOverConcats: each split's new ops, and
  /// the original op (detached until it is put back or erased).
  struct FilterGradientSplit {
    Conv2dBackwardFilterOp original; // detached, with no operands while detached
    SmallVector<Value, 2> operands;  // its operands, to put back
    SmallVector<Operation *> added;
  };
  std::vector<FilterGradientSplit> splits;

  /// A filter gradient whose input is a channel concatenation (a U-Net decoder's first
  /// convolution, reading [skip, upsampled]) needs the whole concatenation alive, or
  /// recomputed, when it runs; the filter gradient of each part reads that part alone, and the
  /// parts' filter gradients, concatenated on the filter's input-channel axis, are the same
  /// sums over images and output pixels. So the concatenation dies after the forward
  /// convolution, and only its parts stay. Returns how many filter gradients were split.
  unsigned splitFilterGradientsOverConcats(func::FuncOp func) {
    SmallVector<Conv2dBackwardFilterOp> found;
    func.walk([&](Conv2dBackwardFilterOp filterGrad) {
      if (concatReadBy(filterGrad))
        found.push_back(filterGrad);
    });
    for (Conv2dBackwardFilterOp filterGrad : found) {
      ConcatOp concat = concatReadBy(filterGrad);
      auto filterType = cast<RankedTensorType>(filterGrad.getResult().getType());
      OpBuilder b(filterGrad);
      FilterGradientSplit split{filterGrad, SmallVector<Value, 2>(filterGrad->getOperands()), {}};
      SmallVector<Value> parts;
      for (Value part : concat.getInputs()) {
        auto partType = cast<RankedTensorType>(part.getType());
        auto type = RankedTensorType::get({filterType.getDimSize(0), partType.getDimSize(1),
                                           filterType.getDimSize(2), filterType.getDimSize(3)},
                                          filterType.getElementType());
        auto partGrad = b.create<Conv2dBackwardFilterOp>(
            filterGrad.getLoc(), type, filterGrad.getGrad(), part, filterGrad.getStridesAttr(),
            filterGrad.getPaddingAttr(), filterGrad.getDilationsAttr(),
            filterGrad.getGroupsAttr());
        split.added.push_back(partGrad);
        parts.push_back(partGrad.getResult());
      }
      auto joined = b.create<ConcatOp>(filterGrad.getLoc(), filterType, parts,
                                        b.getI64IntegerAttr(1));
      split.added.push_back(joined);
      filterGrad.getResult().replaceAllUsesWith(joined.getResult());
      filterGrad->remove();
      filterGrad->dropAllReferences(); // the liveness must not see a detached reader
      splits.push_back(std::move(split));
    }
    return unsigned(found.size());
  }

  /// Puts the original filter gradients back.
  /// Keeps the split step: records how many filter gradients were split and destroys the
  /// detached originals that undoFilterGradientSplits would have put back.
  void keepFilterGradientSplits(func::FuncOp func, unsigned split) {
    func->setAttr("graph.fit_split_filter_gradients",
                  Builder(func.getContext()).getI64IntegerAttr(split));
    for (FilterGradientSplit &kept : splits)
      kept.original->erase(); // detached: destroyed
    splits.clear();
  }

  void undoFilterGradientSplits() {
    for (FilterGradientSplit &split : llvm::reverse(splits)) {
      Operation *joined = split.added.back();
      joined->getBlock()->getOperations().insert(joined->getIterator(), split.original);
      split.original->setOperands(split.operands);
      joined->getResult(0).replaceAllUsesWith(split.original.getResult());
      for (Operation *op : llvm::reverse(split.added))
        op->erase();
    }
    splits.clear();
  }

  /// Records the im2col tiling the fit chose: graph.fit_tiled_convs (how many convolutions,
  /// recomputed ones included) and graph.fit_tiled_workspace = [the largest of their
  /// whole-image workspaces, the largest of their tiles].
  static void recordTiling(func::FuncOp func) {
    int64_t count = 0;
    uint64_t largestWhole = 0, largestTile = 0;
    func.walk([&](Operation *op) {
      Attribute rows = op->getAttr(kIm2colRowsAttr);
      if (!rows)
        return;
      ++count;
      largestTile = std::max(largestTile, kernelWorkspaceBytes(op));
      op->removeAttr(kIm2colRowsAttr);
      largestWhole = std::max(largestWhole, kernelWorkspaceBytes(op));
      op->setAttr(kIm2colRowsAttr, rows);
    });
    if (count == 0)
      return;
    Builder b(func.getContext());
    func->setAttr("graph.fit_tiled_convs", b.getI64IntegerAttr(count));
    func->setAttr("graph.fit_tiled_workspace",
                  b.getDenseI64ArrayAttr({int64_t(largestWhole), int64_t(largestTile)}));
  }

  /// How a candidate is recomputed: with `depth` levels of pure producers. `extended` (the
  /// exact model's options) also looks through reshape views for producers, and goes on past
  /// the depth through cheap producers down to values live anyway (see cheapFromLiveInputs).
  /// The heuristic's greedy order does worse with either (measured: a transformer's
  /// attention transposes, cheap candidates tried first, then reach the QKV projection
  /// through its reshapes and recompute it once per chain).
  struct ChainShape {
    unsigned depth = 0;
    bool extended = false;
    /// Two recomputations instead of one: the backward readers are cut at the widest gap
    /// between them, and each group gets its own chain right before its first reader. A U-Net
    /// skip connection is read by the decoder's first convolution early in the backward pass
    /// and by its own block's backward at the very end; one recomputation holds it across
    /// the whole backward pass.
    bool split = false;
    /// One recomputation for all readers even where the late ones could have a
    /// cheap one of their own (see rematerializeOne); set by improveLocally's
    /// trials that undo it.
    bool whole = false;
  };

  /// Which of a candidate's recomputation shapes the heuristic keeps.
  enum class ShapePolicy { Best, FirstImproving };

  /// The lower bounds that the trials of one search measured, for searchHeuristically's
  /// sequences that start from the same step (searchWithFallback's): until their choices
  /// differ, the lazily ordered and first-improving sequences repeat the best-shape one's
  /// trials (on the 48-layer encoder at half its activations, 6179 of 15806 bound trials).
  /// A trial is known by a hash of the changes kept before it, in order, and of its own
  /// candidate and shape: the step it measures is the same IR. A repeated trial whose bound is
  /// not below the reference is rejected without measuring it again, as the measure would
  /// reject it; one that is below is measured (its whole measure becomes the best one).
  struct TrialMemo {
    llvm::DenseMap<uint64_t, uint64_t> bounds; // trial -> measured lower bound
  };

  /// The heuristic as run: several budget-independent sequences of remats (the best-shape
  /// sequence in two candidate orders, the first-improving one, the best-shape sequence over
  /// extended shapes, segment recomputation), each stopped at its first prefix that fits; the
  /// fitting one with the fewest extra FLOPs is kept. On graphs of up to 600 candidates all of
  /// them run; above that (where each costs seconds) they run in groups, a later group only
  /// when no sequence of the earlier ones fits (the first group: the static best-shape order
  /// and segments). Either way the planned peak stays monotone in
  /// the budget (see searchWithFallback). When none fits, the one that got closest is left
  /// applied (for the error's figures).
  FailureOr<Outcome> searchWithFallback(func::FuncOp func, ArrayRef<Candidate> candidates,
                                        Operation *lossGrad, const Measure &start,
                                        bool extended = false,
                                        double flopsCap = std::numeric_limits<double>::infinity()) {
    // The sequences: the best-shape one, in the static order and re-scored lazily by chain
    // FLOPs (lazy: the transformer at half its activations +1.69% instead of +3.70%; static:
    // ResNet-50 fits a third of its activations, lazy does not); the first-improving one
    // (deeper chains chosen early can use up the candidates that a tighter budget needs:
    // ResNet-50 at a third of its activations, +8.89% where the best-shape ones need
    // +25.07%); the best-shape one over the exact model's extended shapes (chains through
    // reshape views and on through cheap ops, which free a transformer's attention
    // transposes: it reaches lower but costs more where the others fit); and segment
    // recomputation (searchSegments: the transformer at half its activations, +13.35%
    // against +27.83%).
    // Keeping the cheapest fitting sequence is monotone: take budgets B1 > B2 and their
    // winners w1, w2. If w1's plan is above B2, w2's (within B2) is below it. Otherwise w1's
    // prefix is also w1's first prefix that fits B2, so FLOPs(w2 at B2) <= FLOPs(w1 at B1) <=
    // FLOPs(w2 at B1) <= FLOPs(w2 at B2), since a sequence's FLOPs only grow along it: all
    // equal, and with ties broken by sequence order, w2 = w1 with the same prefix. Groups keep
    // it too: a later group runs only below every plan of the earlier ones.
    // Lazy sequences, and the all-at-once run, are for up to kLazyCandidateLimit candidates
    // (a fact of the graph, not of the budget): a 10k-op graph (1167 candidates) would take
    // 15.7 s instead of 7.3 s with the lazy order alone.
    struct Sequence {
      ShapePolicy policy;
      bool extended, lazy;
      bool segments = false; // searchSegments
      bool split = false;    // split shapes too (ChainShape::split)
    };
    bool small = candidates.size() <= kLazyCandidateLimit;
    SmallVector<SmallVector<Sequence, 6>, 4> groups;
    auto addGroup = [&](ShapePolicy policy, bool withExtended, bool orderedLazily) {
      if (groups.empty() || !small)
        groups.emplace_back();
      groups.back().push_back({policy, withExtended, false});
      if (orderedLazily && small)
        groups.back().push_back({policy, withExtended, true});
    };
    addGroup(ShapePolicy::Best, extended, true);
    addGroup(ShapePolicy::FirstImproving, extended, false);
    if (!extended) {
      addGroup(ShapePolicy::Best, true, true);
      // Segments join the first group on large graphs too: they cost a few liveness
      // passes per segment, and per-value chains there can run out (the 106-layer encoder
      // at half its activations: the first two groups do not fit, the third fits at +41.69%
      // after 28 s; segments fit at +11.82% in 9.8 s, both sequences of the first group in).
      if (segments)
        groups.front().push_back({ShapePolicy::Best, true, false, /*segments=*/true});
      // The last group: split shapes, which recompute twice what one recomputation would
      // hold across the backward pass. Only when nothing else fits: they cost more FLOPs
      // where a whole recomputation does (the bench U-Net's floor: 33.2% of its activations
      // without them).
      if (splitShapes)
        groups.push_back({{ShapePolicy::Best, true, false, false, /*split=*/true},
                          {ShapePolicy::Best, true, true, false, /*split=*/true}});
    }
    TrialMemo memo; // the sequences start from `start`
    auto run = [&](const Sequence &sequence) {
      if (sequence.segments)
        return searchSegments(func, candidates, lossGrad, start);
      return searchHeuristically(func, candidates, lossGrad, start, sequence.policy,
                                 sequence.extended, sequence.lazy, flopsCap, sequence.split, &memo);
    };
    const Sequence *closest = nullptr; // of the sequences run, the one with the smallest arena
    uint64_t closestArena = 0;
    for (auto [groupIndex, group] : llvm::enumerate(groups)) {
      std::optional<size_t> cheapest;
      double cheapestFlops = 0;
      for (auto [index, sequence] : llvm::enumerate(group)) {
        auto outcome = run(sequence);
        if (failed(outcome))
          return failure();
        if (outcome->measure.arena <= uint64_t(budget) &&
            (!cheapest || outcome->extraFlops < cheapestFlops)) {
          cheapest = index;
          cheapestFlops = outcome->extraFlops;
        }
        if (!closest || outcome->measure.arena < closestArena) {
          closest = &sequence;
          closestArena = outcome->measure.arena;
        }
        bool lastRun = index + 1 == group.size() &&
                       (cheapest || groupIndex + 1 == groups.size());
        bool keep = cheapest ? *cheapest == index : closest == &sequence;
        // A compile that only asks whether the step fits: the first sequence that fits
        // answers it, and when none does, the last one run is as good an answer as the
        // closest.
        if (questionOnly && (cheapest || (lastRun && groupIndex + 1 == groups.size())))
          return outcome;
        if (lastRun && keep)
          return outcome;
        outcome->undo();
      }
      // Re-run the group's winner (deterministic).
      if (cheapest)
        return run(group[*cheapest]);
    }
    // None fits: the one that got closest, for the error's figures.
    return run(*closest);
  }

  /// The heuristic: candidates in score order, each kept (alone or with up to kMaxChain
  /// producers, with the depth `policy` picks; `extended`: the exact model's shapes) if it
  /// lowers the liveness lower bound, until a plan fits. When the candidates run out first, a
  /// second round keeps those of the rest that make the memory profile lighter (see
  /// lighter()): they free bytes away from the peak, which matters once the first round has
  /// cut the peak down to them. The rounds do not depend on the budget. `memo`: the trials
  /// of other calls on the same `start` and `candidates` (TrialMemo); by default, this call's.
  FailureOr<Outcome> searchHeuristically(func::FuncOp func, ArrayRef<Candidate> candidates,
                                         Operation *lossGrad, const Measure &start,
                                         ShapePolicy policy, bool extended, bool lazy,
                                         double flopsCap = std::numeric_limits<double>::infinity(),
                                         bool splitShapes = false, TrialMemo *memo = nullptr) {
    std::vector<Operation *> candidateOps;
    for (const Candidate &c : candidates)
      llvm::append_range(candidateOps, withMirrors(c.op));
    TrialMemo ownMemo;
    if (!memo)
      memo = &ownMemo;
    uint64_t keptHash = 0; // the changes kept so far, in order (TrialMemo)
    auto shapeHash = [](size_t candidate, ChainShape shape) {
      return llvm::hash_combine(candidate, shape.depth, shape.extended, shape.split);
    };
    Outcome out;
    out.measure = start;
    // Round 1 runs twice: first with recomputations of cheap ops only (a max pooling, a relu
    // after a batch norm), then with any; a costly chain of a high-scoring candidate (a relu
    // whose four-level chain reaches a convolution) would otherwise be kept before a cheap
    // candidate further down the order that frees the same bytes.
    for (int round : {0, 1, 2}) {
      bool peakOnly = round < 2, cheapOnly = round == 0;
      // Round 1 compares bounds only, and skips what cannot lower the peak: a remat frees
      // bytes only inside the live range of the candidate's buffer (the producers it
      // recomputes with it die inside that range too), and lowering the peak means freeing
      // bytes at every peak step, so a candidate whose buffer does not span the first to the
      // last peak step is not tried. Round 2 compares whole profiles.
      MeasureOptions trialOptions;
      trialOptions.sortedProfile = !peakOnly;
      if (peakOnly)
        trialOptions.windowOf = candidateOps;
      if (peakOnly ? !out.measure.window : out.measure.descendingProfile.empty()) {
        // (the first pass and round 2 only: later passes of round 1 find the window there)
        uint64_t arena = out.measure.arena; // the IR is the same: no need to plan it again
        auto measured = measureStep(func, trialOptions);
        if (failed(measured))
          return failure();
        out.measure = std::move(*measured);
        out.measure.arena = arena;
      }
      // Keeps an applied change whose trial measured `measured`; whether the plan now fits.
      auto keep = [&](Remat change, Measure measured) -> FailureOr<bool> {
        for (Operation *clone : change.clones)
          out.extraFlops += estimateOpCost(clone).flops;
        out.applied.push_back(std::move(change));
        if (out.extraFlops >= flopsCap) {
          // Whatever prefix fits from here costs too much for the caller: stop, as a miss.
          out.measure.arena = std::numeric_limits<uint64_t>::max();
          return true;
        }
        // The trial measured this very IR. The arena is at least the lower bound, so the
        // (O(n^2)) plan is only worth computing once the bound is within the budget.
        out.measure = std::move(measured);
        out.measure.arena = 0;
        if (!out.measure.tileAtPeak.empty() && !out.applied.back().clones.empty()) {
          // The trial's convolutions at the peak may be clones that the trial's undo erased
          // (the remat was applied again since, with new clones): measure them afresh.
          auto fresh = measureStep(func, trialOptions);
          if (failed(fresh))
            return failure();
          out.measure = std::move(*fresh);
        }
        if (out.measure.bound > uint64_t(budget))
          return false;
        MeasureOptions planning = trialOptions;
        planning.withArena = true;
        auto planned = measureStep(func, planning);
        if (failed(planned))
          return failure();
        out.measure = std::move(*planned);
        return out.measure.arena <= uint64_t(budget);
      };
      // Tiling the im2col of the convolutions that make the peak costs no FLOPs, so it comes
      // before any recomputation whenever the peak is made of convolution steps only (a
      // decoder's full-resolution filter gradient, once recomputation has cut the rest).
      auto tilePeak = [&]() -> FailureOr<bool> {
        while (!out.measure.tileAtPeak.empty()) {
          Remat tiling = tileIm2col(out.measure.tileAtPeak);
          auto trial = measureStep(func, trialOptions);
          if (failed(trial))
            return failure();
          bool better = peakOnly
                            ? trial->bound < out.measure.bound
                            : lighter(trial->descendingProfile, out.measure.descendingProfile);
          if (!better) {
            tiling.undo();
            out.measure.tileAtPeak.clear();
            return false;
          }
          keptHash = llvm::hash_combine(keptHash, llvm::StringRef("tiling"));
          auto fits = keep(std::move(tiling), std::move(*trial));
          if (failed(fits) || *fits)
            return fits;
        }
        return false;
      };
      // Candidates in score order; with `lazy`, re-scored lazily (as in lazy greedy for
      // submodular maximisation, Minoux 1978): a candidate whose best chain costs more FLOPs
      // than the op alone (a transpose freed only with the attention matmul before it) goes
      // back into the queue at its bytes per chain FLOP, and is applied when it tops the queue
      // again (or tops it at once). O(c log c) queue work; a deferred candidate is measured
      // twice.
      struct Pending {
        double score;
        unsigned index;
        bool rescored;
      };
      auto lower = [](const Pending &a, const Pending &b) {
        return a.score < b.score || (a.score == b.score && a.index > b.index);
      };
      std::priority_queue<Pending, std::vector<Pending>, decltype(lower)> queue(lower);
      for (auto [index, candidate] : llvm::enumerate(candidates))
        queue.push({candidate.score, unsigned(index), false});
      while (!queue.empty()) {
        Pending pending = queue.top();
        queue.pop();
        const Candidate &c = candidates[pending.index];
        auto tiled = tilePeak();
        if (failed(tiled))
          return failure();
        if (*tiled)
          return out;
        if (peakOnly && !out.measure.window->spannedBy(withMirrors(c.op)))
          continue;
        // Recompute the op alone, or with up to kMaxChain of the pure forward ops that feed
        // it (a relu is only worth recomputing together with the conv before it, whose output
        // the relu overwrote in place). A candidate kept in the first round has no backward
        // readers left, so rematerialize() declines it in the second.
        // ShapePolicy::Best: every depth is measured and the best kept (the lowest bound, or
        // the lightest profile; the shallowest on a tie): a shallow chain that already lowers
        // the bound may leave a producer alive that one more level frees (a concat recomputed
        // from the kept upsampling output, or with the upsampling too).
        // ShapePolicy::FirstImproving keeps the first depth that improves.
        std::optional<ChainShape> bestShape;
        std::optional<Measure> best;
        double bestFlops = 0;
        size_t previousClones = 0;
        // With `splitShapes`, each depth is also tried split (ChainShape::split), after the
        // whole one.
        std::vector<ChainShape> shapes;
        for (unsigned depth = 0; depth <= kMaxChain; ++depth) {
          shapes.push_back({depth, extended});
          if (splitShapes)
            shapes.push_back({depth, extended, /*split=*/true});
        }
        for (ChainShape shape : shapes) {
          unsigned depth = shape.depth;
          std::optional<Remat> remat = rematerialize(c.op, lossGrad, shape);
          if (!remat) {
            if (shape.split)
              continue; // one backward reader, or an input overwritten before the late one
            break;
          }
          bool noProducerAdded =
              !shape.split && depth > 0 && remat->clones.size() == previousClones;
          if (noProducerAdded || (cheapOnly && !llvm::all_of(remat->clones, cheapOp))) {
            remat->undo();
            if (shape.split)
              continue; // the whole shape of each depth decides whether deeper ones are tried
            break;
          }
          if (!shape.split)
            previousClones = remat->clones.size();
          if (round == 1 && llvm::all_of(remat->clones, cheapOp)) {
            // Measured in the cheap pass already.
            remat->undo();
            continue;
          }
          double chainFlops = 0;
          for (Operation *clone : remat->clones)
            chainFlops += estimateOpCost(clone).flops;
          const Measure &reference = best ? *best : out.measure;
          uint64_t trialHash =
              llvm::hash_combine(keptHash, shapeHash(&c - candidates.data(), shape));
          if (peakOnly) {
            auto known = memo->bounds.find(trialHash);
            if (known != memo->bounds.end() && known->second >= reference.bound) {
              remat->undo(); // measured before, on this very step: not better
              continue;
            }
          }
          auto trial = measureStep(func, trialOptions);
          remat->undo();
          if (failed(trial))
            return failure();
          if (peakOnly)
            memo->bounds[trialHash] = trial->bound;
          bool better = peakOnly
                            ? trial->bound < reference.bound
                            : lighter(trial->descendingProfile, reference.descendingProfile);
          if (better) {
            bestShape = shape;
            best = std::move(*trial);
            bestFlops = chainFlops;
            if (policy == ShapePolicy::FirstImproving)
              break;
          }
        }
        if (!bestShape)
          continue;
        double chainScore = c.bytes / std::max(bestFlops, 1.0);
        if (lazy && !pending.rescored && chainScore < pending.score && !queue.empty() &&
            chainScore < queue.top().score) {
          queue.push({chainScore, pending.index, true});
          continue;
        }
        std::optional<Remat> remat = rematerialize(c.op, lossGrad, *bestShape);
        if (!remat) {
          c.op->emitError("graphc-fit-budget: a measured recomputation could not be re-applied");
          return failure();
        }
        keptHash = llvm::hash_combine(keptHash, shapeHash(&c - candidates.data(), *bestShape));
        auto fits = keep(std::move(*remat), std::move(*best));
        if (failed(fits))
          return failure();
        if (*fits)
          return out;
      }
      auto tiled = tilePeak();
      if (failed(tiled))
        return failure();
      if (*tiled)
        return out;
    }
    if (out.measure.arena == 0) { // the candidates ran out above the budget: plan the last step
      auto planned = measureStep(func, {/*withArena=*/true});
      if (failed(planned))
        return failure();
      out.measure = std::move(*planned);
    }
    return out;
  }

  /// The exact solver: measures every candidate's options on the IR, solves the 0/1 program
  /// (fit/RematSolver.h) and applies the choice. The model adds deltas linearly and counts
  /// liveness, not the planned arena, so when the applied choice misses the budget the budget
  /// is tightened by the miss and the program re-solved (a few rounds). Returns nullopt (IR
  /// unchanged) when no exact choice fits; the caller then runs the heuristic. The first
  /// solve's bound, a lower bound for the model at the real budget, is recorded either way.
  /// An exact choice, as applied: candidate index and shape of each remat, and whether the
  /// heuristic completed it.
  struct ExactPick {
    std::vector<std::pair<unsigned, ChainShape>> remats;
    std::vector<std::pair<Operation *, int64_t>> tilings; // convolution -> im2col tile rows
    std::vector<std::vector<Operation *>> segments;       // forward segments, recomputed whole
    bool repaired = false;
    double modelFlops = 0; // the program's objective for this choice
    double level = 0;      // exactSeeds: the level's fraction of the activations
  };
  struct ExactResult {
    Outcome outcome;
    ExactPick pick;
  };

  /// The exact solver's 0/1 program for the step as it stands, and how to turn a choice of it
  /// back into remats and tilings.
  struct ExactModel {
    remat::Problem problem;
    std::vector<std::vector<ChainShape>> chains;  // chains[c][o]: candidate c's option o
    std::vector<std::vector<int64_t>> tileRowsOf; // per tiling candidate: rows of each option
    std::vector<Operation *> tiledOps;
    /// Per segment candidate (after the tilings): the forward ops it recomputes from
    /// (rematerializeSegment).
    std::vector<std::vector<Operation *>> segmentOps;
  };

  /// Measures every candidate's options on the IR (each applied, its liveness computed, and
  /// undone: O(c * n)) and the tilings of every convolution whose whole-image workspace is at
  /// least 1/256 of `tilingScale` bytes. The IR is left as it was.
  /// `withSegments` (the exact seeds): forward segments too, each one more candidate grouped
  /// with the candidates it takes (see below); --remat=exact solves the program without them,
  /// where the groups would forbid the several values per block that it needs.
  FailureOr<ExactModel> buildExactModel(func::FuncOp func, ArrayRef<Candidate> candidates,
                                        Operation *lossGrad, int64_t tilingScale,
                                        bool withSegments = false) {
    ExactModel model;
    remat::Problem &problem = model.problem;
    std::vector<std::vector<ChainShape>> &chains = model.chains;
    std::vector<std::vector<int64_t>> &tileRowsOf = model.tileRowsOf;
    std::vector<Operation *> &tiledOps = model.tiledOps;
    auto live = computeStepLiveness(func, /*reuseDyingOperands=*/true, /*withNames=*/false,
                                    &argumentBuffers);
    if (failed(live))
      return failure();
    problem.baseMemory = memoryProfile(*live, alignment);
    llvm::DenseMap<Operation *, int64_t> pointOf;
    for (auto [i, op] : llvm::enumerate(live->steps))
      pointOf[op] = int64_t(i);
    for (const Candidate &c : candidates) {
      std::vector<remat::Option> options;
      std::vector<ChainShape> shapes;
      for (ChainShape shape : exactOptionShapes(c.op, lossGrad)) {
        std::optional<Remat> r = rematerialize(c.op, lossGrad, shape);
        if (!r)
          break;
        remat::Option option;
        for (Operation *clone : r->clones)
          option.flops += estimateOpCost(clone).flops;
        auto after = computeStepLiveness(func, /*reuseDyingOperands=*/true, /*withNames=*/false,
                                    &argumentBuffers);
        if (failed(after))
          return failure();
        option.delta = foldedDelta(*after, pointOf, problem.baseMemory);
        r->undo();
        bool saves = llvm::any_of(option.delta, [](const remat::Segment &s) { return s.bytes < 0; });
        if (saves) {
          options.push_back(std::move(option));
          shapes.push_back(shape);
        }
      }
      problem.candidates.push_back(std::move(options));
      chains.push_back(std::move(shapes));
    }
    // im2col tiling: each convolution whose whole-image workspace is at least 1/256 of
    // `tilingScale` (the budget) is one more candidate, tiled to kFirstTilePixels or to
    // kMinTilePixels. Tiling adds no FLOPs; its objective is a token 1e-6 (first) or 4e-6
    // (smallest) of the op's FLOPs, the narrower GEMMs' cost, so that the program tiles only where
    // it has to.
    for (Operation *op : live->steps) {
      std::optional<Im2colTiles> tiles = im2colTilesOf(op);
      if (!tiles || im2colTileRows(op) != 0 || tiles->first >= tiles->outputRows ||
          kernelWorkspaceBytes(op) * 256 < uint64_t(tilingScale))
        continue;
      std::vector<remat::Option> options;
      std::vector<int64_t> rows;
      double opFlops = estimateOpCost(op).flops;
      for (auto [tileRows, weight] : {std::pair{tiles->first, 1e-6}, {tiles->smallest, 4e-6}}) {
        if (!rows.empty() && tileRows >= rows.back())
          continue;
        Remat tiling;
        setIm2colRows(tiling, op, tileRows);
        auto after = computeStepLiveness(func, /*reuseDyingOperands=*/true, /*withNames=*/false,
                                    &argumentBuffers);
        tiling.undo();
        if (failed(after))
          return failure();
        remat::Option option;
        option.flops = weight * opFlops;
        option.delta = foldedDelta(*after, pointOf, problem.baseMemory);
        options.push_back(std::move(option));
        rows.push_back(tileRows);
      }
      problem.candidates.push_back(std::move(options));
      tileRowsOf.push_back(std::move(rows));
      tiledOps.push_back(op);
    }
    // Segment recomputation (forwardSegments): each segment is one more candidate with one
    // option, exclusive with the candidates whose backward reads it redirects (whichever is
    // applied second would find them taken). The program can then recompute the blocks where
    // activations are large per FLOP and keep single values elsewhere.
    if (withSegments && segments) {
      llvm::DenseMap<Operation *, unsigned> candidateOf;
      for (auto [index, c] : llvm::enumerate(candidates))
        candidateOf[c.op] = unsigned(index);
      std::vector<Operation *> forward;
      for (Operation &op : func.getBody().front()) {
        if (&op == lossGrad)
          break;
        forward.push_back(&op);
      }
      for (auto [begin, end] : forwardSegments(forward, lossGrad)) {
        std::optional<Remat> r = rematerializeSegment(forward, begin, end, lossGrad);
        if (!r)
          continue;
        remat::Option option;
        for (Operation *clone : r->clones)
          option.flops += estimateOpCost(clone).flops;
        // One group: the segment and every candidate whose backward reads it takes. So a
        // segment's region is either recomputed whole or keeps at most one single value
        // recomputed: several overlapping chains in one block free less than the sum of their
        // measured deltas (each alone frees a producer that the others keep alive), and the
        // program, which adds them, would otherwise prefer them to the segment. ResNet-50 at
        // 25% of its activations: +14.40% with the group; pair by pair (the segment against
        // each value alone), the seeds find nothing better than the sequences' +24.83%. The
        // program without segments is solved too (exactSeeds), for the steps where several
        // values in one block are the better choice.
        std::vector<unsigned> group = {unsigned(problem.candidates.size())};
        for (auto &[use, old] : r->redirected)
          if (auto it = candidateOf.find(old.getDefiningOp()); it != candidateOf.end())
            if (!llvm::is_contained(group, it->second))
              group.push_back(it->second);
        auto after = computeStepLiveness(func, /*reuseDyingOperands=*/true, /*withNames=*/false,
                                         &argumentBuffers);
        r->undo();
        if (failed(after))
          return failure();
        option.delta = foldedDelta(*after, pointOf, problem.baseMemory);
        if (!llvm::any_of(option.delta, [](const remat::Segment &s) { return s.bytes < 0; }))
          continue;
        problem.candidates.push_back({std::move(option)});
        if (group.size() > 1)
          problem.exclusive.push_back(std::move(group));
        model.segmentOps.emplace_back(forward.begin() + begin, forward.begin() + end);
      }
    }
    return model;
  }

  /// A choice of the program as remats and tilings to apply; with `repair`, a choice that misses
  /// the budget once applied is completed by the heuristic from there (the remats it adds are
  /// the ones the linear model could not see, such as two options that free the same bytes).
  static ExactPick pickOf(const ExactModel &model, const std::vector<int> &choice, bool repair) {
    ExactPick pick;
    pick.repaired = repair;
    for (auto [c, option] : llvm::enumerate(choice)) {
      if (option < 0)
        continue;
      size_t tiling = c - model.chains.size(), segment = tiling - model.tiledOps.size();
      if (c < model.chains.size())
        pick.remats.push_back({unsigned(c), model.chains[c][option]});
      else if (tiling < model.tiledOps.size())
        pick.tilings.push_back({model.tiledOps[tiling], model.tileRowsOf[tiling][option]});
      else
        pick.segments.push_back(model.segmentOps[segment]);
    }
    return pick;
  }

  FailureOr<std::optional<ExactResult>> solveExactly(func::FuncOp func,
                                                     ArrayRef<Candidate> candidates,
                                                     Operation *lossGrad, double flopsBefore) {
    Builder attrs(func.getContext());
    auto built = buildExactModel(func, candidates, lossGrad, budget);
    if (failed(built))
      return failure();
    ExactModel &model = *built;
    remat::Problem &problem = model.problem;
    remat::SolveOptions solveOptions;
    solveOptions.timeLimitSeconds = timeLimit;
    problem.budget = budget;
    double seconds = 0;
    auto apply = [&](const std::vector<int> &choice, bool repair) -> FailureOr<Outcome> {
      return applyExact(func, candidates, lossGrad, pickOf(model, choice, repair));
    };
    // The cheapest fitting choice over the rounds: applied as solved, or repaired.
    std::optional<std::pair<std::vector<int>, bool>> best;
    double bestFlops = 0;
    auto consider = [&](const std::vector<int> &choice, bool repaired, const Outcome &out) {
      if (out.measure.arena > uint64_t(budget) || (best && out.extraFlops >= bestFlops))
        return;
      best = {choice, repaired};
      bestFlops = out.extraFlops;
    };
    for (unsigned round = 0; round < kExactRounds; ++round) {
      solveOptions.timeLimitSeconds = std::max(0.5, double(timeLimit) - seconds);
      remat::Solution sol = remat::solveExact(problem, solveOptions);
      seconds += sol.seconds;
      if (round == 0) {
        func->setAttr("graph.fit_solver_status", attrs.getStringAttr(remat::statusName(sol.status)));
        if (sol.status == remat::Status::Optimal || sol.status == remat::Status::Feasible)
          func->setAttr("graph.fit_lower_bound",
                        attrs.getF64FloatAttr(flopsBefore > 0 ? sol.bestBound / flopsBefore : 0));
      }
      if (!sol.hasSolution())
        break;
      auto out = apply(sol.choice, /*repair=*/false);
      if (failed(out))
        return failure();
      consider(sol.choice, false, *out);
      if (out->measure.arena <= uint64_t(budget)) {
        out->undo();
        break;
      }
      int64_t miss = int64_t(out->measure.arena) - budget;
      out->undo();
      // Completing a choice runs the heuristic (the costly part on large graphs): only the
      // first kRepairedRounds rounds' choices are completed.
      if (round < kRepairedRounds) {
        auto repaired = apply(sol.choice, /*repair=*/true);
        if (failed(repaired))
          return failure();
        consider(sol.choice, true, *repaired);
        repaired->undo();
      }
      // Below the model peak of the choice that missed, by the miss: the next choice differs.
      problem.budget = std::min(problem.budget, sol.modelPeak) - std::max<int64_t>(miss, alignment);
    }
    func->setAttr("graph.fit_solve_seconds", attrs.getF64FloatAttr(seconds));
    if (!best)
      return std::optional<ExactResult>();
    // Re-derive the winner (deterministic: the same remats in the same order).
    ExactPick pick = pickOf(model, best->first, best->second);
    auto found = applyExact(func, candidates, lossGrad, pick);
    if (failed(found))
      return failure();
    func->setAttr("graph.fit_solver",
                  attrs.getStringAttr(best->second ? "exact+heuristic" : "exact"));
    return std::optional<ExactResult>(ExactResult{std::move(*found), std::move(pick)});
  }

  /// Seeds of the heuristic (improveWithSeeds): the exact program's choices at
  /// budget-independent levels, seed-levels of them. Level k is floor + (peak - floor) *
  /// kSeedRatio^k of the step's liveness profile (floor: its emptiest point), from k = 1 until
  /// the program has no solution; the solves stop at kSeedNodes branch-and-bound nodes (the
  /// same choice on any machine). The program is built once, O(c * n), and each level is one
  /// CBC solve; a level whose choice repeats the previous one's adds no seed.
  FailureOr<std::vector<ExactPick>> exactSeeds(func::FuncOp func, ArrayRef<Candidate> candidates,
                                               Operation *lossGrad, const Measure &start,
                                               bool withSegments) {
    std::vector<ExactPick> picks;
    auto built = buildExactModel(func, candidates, lossGrad, int64_t(start.bound), withSegments);
    if (failed(built))
      return failure();
    remat::Problem &problem = built->problem;
    if (problem.baseMemory.empty())
      return picks;
    auto [emptiest, fullest] =
        std::minmax_element(problem.baseMemory.begin(), problem.baseMemory.end());
    remat::SolveOptions options;
    options.timeLimitSeconds = timeLimit;
    options.maxNodes = kSeedNodes;
    std::vector<double> levels;
    std::vector<int64_t> budgets;
    double level = 1;
    for (unsigned k = 1; k <= seedLevels; ++k) {
      level *= kSeedRatio;
      levels.push_back(level);
      budgets.push_back(*emptiest + int64_t(double(*fullest - *emptiest) * level));
    }
    // All levels in one child process: a fork per level cost --max-batch on ResNet-50 minutes
    // of system time (the compiler's page tables copied 12 times per trial that misses).
    std::vector<remat::Solution> solutions = remat::solveExactAtBudgets(problem, budgets, options);
    // The program without its segment candidates too: the linear model misjudges how a
    // segment adds to single values in places (the dropout MLP of remat-monotone.test fits
    // below 123392 bytes only from a seed without segments), so each level gives up to two
    // seeds, the one without segments first. ResNet-50 at 25% of its activations: +14.40%
    // from a seed with a segment, +24.83% without.
    std::vector<remat::Solution> plainSolutions;
    if (!built->segmentOps.empty()) {
      remat::Problem plain = problem;
      size_t firstSegment = built->chains.size() + built->tiledOps.size();
      for (size_t c = firstSegment; c < plain.candidates.size(); ++c)
        plain.candidates[c].clear();
      plain.exclusive.clear();
      plainSolutions = remat::solveExactAtBudgets(std::move(plain), budgets, options);
    }
    std::vector<std::vector<int>> seen;
    auto add = [&](const remat::Solution &sol, double level) {
      if (!sol.hasSolution() || llvm::all_of(sol.choice, [](int o) { return o < 0; }) ||
          llvm::is_contained(seen, sol.choice))
        return;
      seen.push_back(sol.choice);
      picks.push_back(pickOf(*built, sol.choice, /*repair=*/true));
      picks.back().modelFlops = sol.objective;
      picks.back().level = level;
    };
    for (auto [index, level] : llvm::enumerate(levels)) {
      if (index < plainSolutions.size())
        add(plainSolutions[index], level);
      if (index < solutions.size())
        add(solutions[index], level);
    }
    return picks;
  }

  /// How to replay one applied change once the changes are undone: a recomputation by its
  /// recipe; a tiling by its convolutions, each an original op or the `clone`-th clone of the
  /// `recipe`-th change (undoing erases clones, so a tiling of a recomputed convolution
  /// must find that convolution's new clone).
  struct ReplayStep {
    struct Target {
      Operation *op = nullptr; // an original op, or null
      int recipe = -1, clone = -1;
      int64_t rows = 0;
    };
    std::vector<Target> targets; // tilings only
  };
  static std::vector<ReplayStep> replayStepsOf(const std::vector<Remat> &applied) {
    std::vector<ReplayStep> steps(applied.size());
    for (auto [i, r] : llvm::enumerate(applied)) {
      for (auto [op, rows] : r.tiledTo) {
        ReplayStep::Target target{op, -1, -1, rows};
        for (size_t k = 0; k < i && target.op; ++k)
          if (auto it = llvm::find(applied[k].clones, op); it != applied[k].clones.end())
            target = {nullptr, int(k), int(it - applied[k].clones.begin()), rows};
        steps[i].targets.push_back(target);
      }
    }
    return steps;
  }
  /// Applies `recipes` (undone, in their order) again into `into`; false, with what was
  /// replayed undone, when one no longer applies or rebuilds a different number of clones.
  static bool replayAll(const std::vector<Remat> &recipes, const std::vector<ReplayStep> &steps,
                        std::vector<Remat> &into) {
    auto giveUp = [&] {
      undoNewestFirst(into);
      into.clear();
      return false;
    };
    for (auto [i, r] : llvm::enumerate(recipes)) {
      if (r.isTiling()) {
        Remat tiling;
        for (const ReplayStep::Target &t : steps[i].targets)
          setIm2colRows(tiling, t.op ? t.op : into[t.recipe].clones[t.clone], t.rows);
        into.push_back(std::move(tiling));
        continue;
      }
      std::optional<Remat> again = r.replay ? r.replay(r.skipped) : std::nullopt;
      if (!again || again->clones.size() != r.clones.size())
        return giveUp();
      into.push_back(std::move(*again));
    }
    return true;
  }

  /// The seeds as trials after the local search: each seed (exactSeeds), completed by the
  /// heuristic from where it leaves the step, replaces the result when it fits the budget,
  /// costs fewer extra FLOPs; one that plans below the result's (padded) arena is padded up to
  /// it. That floor keeps the arena monotone, as in improveLocally: the kept arenas only grow, the
  /// seeds are facts of the graph, a seed's completion is a budget-independent sequence
  /// stopped at its first fitting prefix, so at a smaller budget that the final arena still
  /// fits every trial decides the same way, and below it the result is below it too. Seeds in
  /// the pool of sequences before the local search would not do: the pool's cheapest result
  /// is not the cheapest after the local search (ResNet-50 at a third of its activations: the
  /// seeded +6.74% wins the pool, the first-improving sequence's +8.89% becomes +5.91%).
  /// When nothing fits, the seed that gets closest (the smallest arena) stays applied, for
  /// the infeasible error's figures. A seed whose program objective already costs no fewer
  /// FLOPs is not tried; a tried one costs its plan (and completion). The seeds are computed
  /// here, on the step as it was before the result's remats, which are undone first and
  /// replayed once at the end unless a seed replaced them. When a seed is kept, the caller runs
  /// the local search again on it.
  LogicalResult improveWithSeeds(func::FuncOp func, Outcome &out, ArrayRef<Candidate> candidates,
                                 Operation *lossGrad, const Measure &start, double flopsBefore,
                                 bool withSegments) {
    bool fits = out.measure.arena <= uint64_t(budget);
    double flopsBeforeSeeds = out.extraFlops;
    double flops = fits ? out.extraFlops : std::numeric_limits<double>::infinity();
    uint64_t floor = fits ? out.paddedArena() : 0;
    std::optional<size_t> kept;
    // The result is undone for the first trial and replayed once at the end unless a seed
    // replaced it (a kept seed is undone in turn for the next trial).
    std::vector<ReplayStep> steps;
    std::vector<Remat> recipes;
    bool undone = false;
    auto undoResult = [&] {
      if (undone)
        return;
      steps = replayStepsOf(out.applied);
      recipes = std::move(out.applied);
      out.applied.clear();
      undoNewestFirst(recipes);
      undone = true;
    };
    auto replace = [&](Outcome &trial) {
      recipes.clear();
      steps.clear();
      undone = false;
      out.applied = std::move(trial.applied);
      out.measure = std::move(trial.measure);
      out.extraFlops = trial.extraFlops;
    };
    // The seeds are measured on the step as it was before any remat.
    undoResult();
    auto seeds = exactSeeds(func, candidates, lossGrad, start, withSegments);
    if (failed(seeds))
      return failure();
    for (auto [index, seed] : llvm::enumerate(*seeds)) {
      if (seed.modelFlops >= flops)
        continue;
      undoResult();
      auto trial = applyExact(func, candidates, lossGrad, seed, flops);
      if (failed(trial))
        return failure();
      if (trial->measure.arena <= uint64_t(budget) && trial->extraFlops < flops) {
        kept = index;
        flops = trial->extraFlops;
        floor = std::max(floor, trial->measure.arena);
        replace(*trial);
        out.arenaFloor = floor;
        out.improved = false;
        out.dropped = out.swapped = 0;
        if (questionOnly) // it fits: the question is answered
          break;
        continue;
      }
      if (!fits && !kept && trial->measure.arena < out.measure.arena) {
        // Nothing fits yet: the closest result stays, for the error's figures.
        replace(*trial);
        continue;
      }
      trial->undo();
    }
    if (undone) {
      if (!replayAll(recipes, steps, out.applied)) {
        func.emitError("graphc-fit-budget: an applied recomputation could not be replayed");
        return failure();
      }
      // The replay made new clones: what the measure points at may be gone.
      out.measure.tileAtPeak.clear();
      out.measure.window.reset();
    }
    if (kept) {
      Builder attrs(func.getContext());
      func->setAttr("graph.fit_exact_seed_level", attrs.getF64FloatAttr((*seeds)[*kept].level));
      func->setAttr(
          "graph.fit_extra_flops_before_seed",
          attrs.getF64FloatAttr(flopsBefore > 0 && fits ? flopsBeforeSeeds / flopsBefore : -1.0));
      func->setAttr("graph.fit_extra_flops_seeded",
                    attrs.getF64FloatAttr(flopsBefore > 0 ? flops / flopsBefore : 0));
    }
    return success();
  }

  static constexpr double kSeedRatio = 0.85;
  static constexpr long kSeedNodes = 500;

  /// Applies an exact choice: its remats in candidate order, then, if `pick.repaired`, the
  /// heuristic from where they leave the step (with the model's extended shapes: the choice
  /// already recomputes through reshapes and cheap ops, and plain shapes often cannot add to
  /// it). Deterministic, so a pick re-applied gives the same remats.
  /// With a `flopsCap`, a pick whose remats cost that many extra FLOPs or more is not planned
  /// or completed: it is returned applied, with an arena of UINT64_MAX (it cannot beat a
  /// result that cost `flopsCap`).
  FailureOr<Outcome> applyExact(func::FuncOp func, ArrayRef<Candidate> candidates,
                                Operation *lossGrad, const ExactPick &pick,
                                double flopsCap = std::numeric_limits<double>::infinity()) {
    Outcome out;
    // Tilings first, so that a recomputed convolution's clone gets its original's tile.
    if (!pick.tilings.empty()) {
      Remat tiling;
      for (auto [op, rows] : pick.tilings)
        setIm2colRows(tiling, op, rows);
      out.applied.push_back(std::move(tiling));
    }
    // Segments before single values, as searchSegments applies them.
    for (const std::vector<Operation *> &segment : pick.segments) {
      std::optional<Remat> r = rematerializeSegment(segment, 0, segment.size(), lossGrad);
      if (!r)
        continue;
      for (Operation *clone : r->clones)
        out.extraFlops += estimateOpCost(clone).flops;
      out.applied.push_back(std::move(*r));
    }
    for (auto [c, shape] : pick.remats) {
      std::optional<Remat> r = rematerialize(candidates[c].op, lossGrad, shape);
      if (!r)
        continue; // an earlier remat took its backward readers
      for (Operation *clone : r->clones)
        out.extraFlops += estimateOpCost(clone).flops;
      out.applied.push_back(std::move(*r));
    }
    if (out.extraFlops >= flopsCap) {
      out.measure.arena = std::numeric_limits<uint64_t>::max();
      return out;
    }
    auto planned = measureStep(func, {/*withArena=*/true});
    if (failed(planned))
      return failure();
    out.measure = *planned;
    if (!pick.repaired || out.measure.arena <= uint64_t(budget))
      return out;
    auto completed = searchWithFallback(func, candidates, lossGrad, out.measure, /*extended=*/true,
                                        flopsCap - out.extraFlops);
    if (failed(completed))
      return failure();
    out.measure = completed->measure;
    out.extraFlops += completed->extraFlops;
    for (Remat &r : completed->applied)
      out.applied.push_back(std::move(r));
    return out;
  }

  /// The change a remat made to the memory profile, on the original program points: the
  /// clones are folded into the point of the op they precede (their reader), taking the
  /// fullest of those steps. Returned as maximal runs of equal non-zero change.
  std::vector<remat::Segment> foldedDelta(const StepLiveness &after,
                                          const llvm::DenseMap<Operation *, int64_t> &pointOf,
                                          const std::vector<int64_t> &base) {
    std::vector<int64_t> profile = memoryProfile(after, alignment), folded(base.size(), INT64_MIN);
    int64_t point = int64_t(base.size()) - 1;
    for (int64_t i = int64_t(after.steps.size()) - 1; i >= 0; --i) {
      if (auto it = pointOf.find(after.steps[i]); it != pointOf.end())
        point = it->second;
      folded[point] = std::max(folded[point], profile[i]);
    }
    std::vector<remat::Segment> segments;
    for (int64_t t = 0; t < int64_t(base.size()); ++t) {
      int64_t d = folded[t] == INT64_MIN ? 0 : folded[t] - base[t];
      if (d == 0)
        continue;
      if (!segments.empty() && segments.back().last == t - 1 && segments.back().bytes == d)
        segments.back().last = t;
      else
        segments.push_back({t, t, d});
    }
    return segments;
  }

  /// Segment recomputation, in the manner of Chen et al.'s checkpointing ("Training Deep Nets
  /// with Sublinear Memory Cost", 2016): the forward ops are cut into segments where the
  /// bytes crossing from earlier ops to later forward readers reach a local minimum (a
  /// transformer's residual stream between its sublayers, a ResNet's block outputs), and a
  /// segment's internal values (those no forward op outside it reads) are recomputed together,
  /// once, right before the backward pass first reads one of them, from the values that cross
  /// into it. Per-value chains recompute each value on its own, a few producers deep, and keep
  /// alive what their chains read: a transformer's dense outputs cannot all be freed that way.
  /// Returns the segments as [begin, end) positions in `forward` (the ops before the loss
  /// gradient, in program order). O(n + e) for n forward ops and e uses.
  std::vector<std::pair<size_t, size_t>> forwardSegments(ArrayRef<Operation *> forward,
                                                         Operation *lossGrad) {
    llvm::DenseMap<Operation *, size_t> position;
    for (auto [i, op] : llvm::enumerate(forward))
      position[op] = i;
    size_t n = forward.size();
    // crossing[b]: bytes defined before op b and read by a forward op at b or later (the loss
    // gradient counts as position n). A reshape view is an alias: reading it reads its source.
    std::vector<int64_t> diff(n + 2, 0);
    std::function<size_t(Value)> lastForwardRead = [&](Value v) -> size_t {
      size_t last = 0;
      for (Operation *user : v.getUsers()) {
        if (user == lossGrad) {
          last = std::max(last, n);
          continue;
        }
        auto it = position.find(user);
        if (it == position.end())
          continue; // a backward reader
        last = std::max(last, it->second);
        if (isa<ReshapeOp>(user))
          last = std::max(last, lastForwardRead(user->getResult(0)));
      }
      return last;
    };
    for (auto [i, op] : llvm::enumerate(forward)) {
      if (isa<ReshapeOp>(op))
        continue;
      for (Value result : op->getResults()) {
        size_t last = lastForwardRead(result);
        if (last <= i)
          continue;
        int64_t bytes = int64_t(tensorBytes(result.getType()));
        diff[i + 1] += bytes;
        diff[last + 1] -= bytes;
      }
    }
    std::vector<int64_t> crossing(n + 1, 0);
    int64_t running = 0;
    for (size_t b = 0; b <= n; ++b)
      crossing[b] = running += diff[b];
    // Cuts: the first boundary of each run of equal crossing bytes that is lower than the runs
    // on both sides.
    std::vector<size_t> cuts = {0};
    for (size_t b = 1; b < n;) {
      size_t end = b;
      while (end + 1 < n && crossing[end + 1] == crossing[b])
        ++end;
      bool lowerThanBefore = crossing[b] < crossing[b - 1];
      bool lowerThanAfter = end + 1 >= n || crossing[b] < crossing[end + 1];
      if (lowerThanBefore && lowerThanAfter)
        cuts.push_back(b);
      b = end + 1;
    }
    cuts.push_back(n);
    std::vector<std::pair<size_t, size_t>> segments;
    for (size_t k = 0; k + 1 < cuts.size(); ++k)
      if (cuts[k + 1] > cuts[k] + 1)
        segments.push_back({cuts[k], cuts[k + 1]});
    return segments;
  }

  /// Ops a segment recomputation may clone: pure ops that write nothing in place (any number
  /// of results: a layer norm is cloned whole), reshape views, and training batch norms
  /// (recomputed as graph.batch_norm_apply, which touches no running statistics).
  static bool segmentClonable(Operation *op) {
    if (isa<BatchNormOp, ReshapeOp>(op))
      return true;
    if (op->getNumResults() == 0 || op->getNumRegions() != 0 || !isMemoryEffectFree(op) ||
        isa<LossOp>(op))
      return false;
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      if (inPlaceOperandOf(op, i) >= 0)
        return false;
    return true;
  }

  /// Recomputes the internal values of forward[begin, end) that the backward pass reads (see
  /// forwardSegments), with the ops of the segment they depend on, right before the first
  /// backward reader of any of them, and points every backward reader at the recomputed
  /// values. Values that cross out of the segment, and the outputs of ops that cannot be
  /// cloned, are read as they are (they are the checkpoints). nullopt when nothing would be
  /// recomputed.
  /// With micro-batches, the copies of the segment in the later micro-batches are recomputed
  /// as well, as one change (mapMirrors); all or none.
  std::optional<Remat> rematerializeSegment(ArrayRef<Operation *> forward, size_t begin, size_t end,
                                            Operation *lossGrad,
                                            const llvm::SmallBitVector &skipped = {}) {
    SmallVector<Operation *> segment(forward.begin() + begin, forward.begin() + end);
    size_t later = mirrorsOf.lookup(segment.front()).size();
    bool mirroredAlike =
        llvm::all_of(segment, [&](Operation *op) { return mirrorsOf.lookup(op).size() == later; });
    Remat remat;
    remat.copies = 0;
    for (size_t micro = 0; micro <= (mirroredAlike ? later : 0); ++micro) {
      if (micro < skipped.size() && skipped[micro])
        continue;
      SmallVector<Operation *> copy = segment;
      Operation *own = lossGrad;
      if (micro > 0) {
        for (auto [i, op] : llvm::enumerate(segment))
          copy[i] = mirrorsOf.find(op)->second[micro - 1];
        own = ownLossGrad.lookup(copy.front());
      }
      if (!remat.addCopy(own ? rematerializeSegmentOnce(copy, 0, copy.size(), own) : std::nullopt))
        return std::nullopt;
    }
    remat.segment = true;
    remat.skipped = skipped;
    // Clones go after the loss gradient, so the forward ops of the segment stay as they are.
    remat.replay = [this, segment, lossGrad](const llvm::SmallBitVector &skipped) {
      return rematerializeSegment(segment, 0, segment.size(), lossGrad, skipped);
    };
    return remat;
  }

  std::optional<Remat> rematerializeSegmentOnce(ArrayRef<Operation *> forward, size_t begin,
                                                size_t end, Operation *lossGrad) {
    llvm::SmallPtrSet<Operation *, 32> inSegment(forward.begin() + begin, forward.begin() + end);
    auto isBackward = [&](Operation *user) {
      return user != lossGrad && lossGrad->isBeforeInBlock(user);
    };
    // A value is recomputed when its op can be cloned, every forward reader is inside the
    // segment, and (for the values the backward pass reads) it is not a batch norm's running
    // statistic.
    auto internal = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || !inSegment.contains(def) || !segmentClonable(def))
        return false;
      if (isa<BatchNormOp>(def) && cast<OpResult>(v).getResultNumber() != 0)
        return false;
      return llvm::all_of(v.getUsers(), [&](Operation *user) {
        return inSegment.contains(user) || isBackward(user);
      });
    };
    SmallVector<Value> wanted;
    Operation *first = nullptr;
    for (size_t i = begin; i < end; ++i)
      for (Value result : forward[i]->getResults()) {
        if (!internal(result))
          continue;
        bool read = false;
        for (Operation *user : result.getUsers())
          if (isBackward(user)) {
            read = true;
            if (!first || user->isBeforeInBlock(first))
              first = user;
          }
        if (read)
          wanted.push_back(result);
      }
    if (wanted.empty())
      return std::nullopt;
    // The ops to clone: those the wanted values depend on through internal values.
    llvm::SmallPtrSet<Operation *, 32> needed;
    SmallVector<Operation *> worklist;
    for (Value v : wanted)
      if (needed.insert(v.getDefiningOp()).second)
        worklist.push_back(v.getDefiningOp());
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      SmallVector<Value, 4> inputs;
      if (auto bn = dyn_cast<BatchNormOp>(op))
        inputs.push_back(bn.getInput());
      else
        inputs.append(op->operand_begin(), op->operand_end());
      for (Value input : inputs)
        if (internal(input) && needed.insert(input.getDefiningOp()).second)
          worklist.push_back(input.getDefiningOp());
    }
    Remat remat;
    remat.segment = true;
    OpBuilder b(first);
    IRMapping map;
    for (size_t i = begin; i < end; ++i) {
      Operation *op = forward[i];
      if (!needed.contains(op))
        continue;
      if (auto bn = dyn_cast<BatchNormOp>(op)) {
        Operation *clone = b.create<BatchNormApplyOp>(
            bn.getLoc(), bn.getResult().getType(), map.lookupOrDefault(bn.getInput()),
            bn.getScale(), bn.getBias(), bn.getSavedMean(), bn.getSavedInvstd());
        map.map(bn.getResult(), clone->getResult(0));
        remat.clones.push_back(clone);
        registerClone(remat, bn, clone);
        continue;
      }
      // Operands that are not internal keep their original values (the map has none).
      remat.clones.push_back(b.clone(*op, map));
      registerClone(remat, op, remat.clones.back());
    }
    for (Value v : wanted) {
      Value recomputed = map.lookup(v);
      for (OpOperand &use : llvm::make_early_inc_range(v.getUses()))
        if (isBackward(use.getOwner())) {
          remat.redirected.push_back({&use, v});
          use.set(recomputed);
        }
    }
    if (readsOverwrittenInput(remat.clones, first)) {
      remat.undo();
      return std::nullopt;
    }
    return remat;
  }

  /// Segment recomputations (forwardSegments), most bytes recomputed per FLOP first, each
  /// kept if it lowers the liveness lower bound (then, in a second round, if it makes the
  /// profile lighter), until a plan fits; when they run out, the best-shape heuristic over
  /// extended shapes goes on from there. Independent of the budget, like the other sequences.
  /// (Running a per-value sequence first and the segments after it was tried: on ResNet-50 at
  /// 30% of its activations the segments then free nothing more.)
  FailureOr<Outcome> searchSegments(func::FuncOp func, ArrayRef<Candidate> candidates,
                                    Operation *lossGrad, const Measure &start) {
    Outcome out;
    out.measure = start;
    std::vector<Operation *> forward;
    for (Operation &op : func.getBody().front()) {
      if (&op == lossGrad)
        break;
      forward.push_back(&op);
    }
    struct Scored {
      size_t begin, end;
      double score;
    };
    std::vector<Scored> scored;
    for (auto [begin, end] : forwardSegments(forward, lossGrad)) {
      std::optional<Remat> r = rematerializeSegment(forward, begin, end, lossGrad);
      if (!r)
        continue;
      double flops = 0, bytes = 0;
      for (Operation *clone : r->clones)
        flops += estimateOpCost(clone).flops;
      llvm::DenseSet<Value> freed;
      for (auto &[use, old] : r->redirected)
        if (freed.insert(old).second)
          bytes += double(tensorBytes(old.getType()));
      r->undo();
      scored.push_back({begin, end, bytes / std::max(flops, 1.0)});
    }
    llvm::stable_sort(scored, [](const Scored &a, const Scored &b) { return a.score > b.score; });

    std::vector<bool> kept(scored.size(), false);
    for (bool peakOnly : {true, false}) {
      MeasureOptions trialOptions;
      trialOptions.sortedProfile = !peakOnly;
      if (!peakOnly) {
        uint64_t arena = out.measure.arena;
        auto measured = measureStep(func, trialOptions);
        if (failed(measured))
          return failure();
        out.measure = std::move(*measured);
        out.measure.arena = arena;
      }
      for (auto [index, segment] : llvm::enumerate(scored)) {
        if (kept[index])
          continue;
        std::optional<Remat> r =
            rematerializeSegment(forward, segment.begin, segment.end, lossGrad);
        if (!r)
          continue;
        auto trial = measureStep(func, trialOptions);
        if (failed(trial))
          return failure();
        bool better = peakOnly ? trial->bound < out.measure.bound
                               : lighter(trial->descendingProfile, out.measure.descendingProfile);
        if (!better) {
          r->undo();
          continue;
        }
        kept[index] = true;
        for (Operation *clone : r->clones)
          out.extraFlops += estimateOpCost(clone).flops;
        out.applied.push_back(std::move(*r));
        out.measure = std::move(*trial);
        out.measure.arena = 0;
        if (out.measure.bound > uint64_t(budget))
          continue;
        auto planned = measureStep(func, {/*withArena=*/true});
        if (failed(planned))
          return failure();
        out.measure.arena = planned->arena;
        if (planned->arena <= uint64_t(budget))
          return out;
      }
    }
    auto planned = measureStep(func, {/*withArena=*/true});
    if (failed(planned))
      return failure();
    auto rest = searchHeuristically(func, candidates, lossGrad, *planned, ShapePolicy::Best,
                                    /*extended=*/true, /*lazy=*/false);
    if (failed(rest))
      return failure();
    out.measure = rest->measure;
    out.extraFlops += rest->extraFlops;
    for (Remat &r : rest->applied)
      out.applied.push_back(std::move(r));
    return out;
  }

  /// Chen et al.'s sqrt(n) checkpointing priced with the same cost model, for comparison
  /// only (nothing is applied): of the n forward ops with FLOPs of each micro-batch (the
  /// step's one forward pass without micro-batching; ownLossGrad groups them), in program
  /// order, every ceil(sqrt(n))-th output is a checkpoint, and every other op runs a second
  /// time when that micro-batch's backward pass re-runs its segment from the checkpoint before
  /// it. (Pricing the first micro-batch alone understated it k-fold with k micro-batches.)
  void recordChen(func::FuncOp func, double flopsBefore) {
    llvm::MapVector<Operation *, std::vector<double>> forwardOf; // loss gradient -> FLOPs
    for (Operation &op : func.getBody().front()) {
      Operation *own = ownLossGrad.lookup(&op);
      if (!own)
        continue;
      double flops = estimateOpCost(&op).flops;
      if (flops > 0)
        forwardOf[own].push_back(flops);
    }
    double extra = 0;
    for (const auto &[own, forward] : forwardOf) {
      std::vector<bool> kept = remat::chenCheckpoints(forward.size());
      for (size_t i = 0; i < forward.size(); ++i)
        if (!kept[i])
          extra += forward[i];
    }
    Builder attrs(func.getContext());
    func->setAttr("graph.fit_chen_extra_flops",
                  attrs.getF64FloatAttr(flopsBefore > 0 ? extra / flopsBefore : 0));
  }

  /// The instant bound on any recomputation's extra FLOPs (fit/BoundaryBound.h,
  /// passes/InstantBound.h), as a fraction of the step's: the strongest over the loss gradient
  /// and the kInstants fullest steps of the schedule as it stands before recomputation. Each
  /// instant's bound holds on its own, so their maximum does, and an instant where nothing
  /// fits proves that no recomputation fits the budget. solveFor runs once per variant of the
  /// step (with filter gradients split over concatenations, and without): the smaller bound
  /// holds for both.
  /// CBC's time: on the 6-layer transformer at half its activations the loss gradient's bound
  /// is the root's (+8.14% FLOPs) after 0.01 s, 1 s and 30 s alike; a bound found early is
  /// just as valid, only possibly weaker. At most kInstantBoundSeconds per instant, and
  /// kInstantBoundTotalSeconds for all.
  static constexpr unsigned kInstants = 8;
  static constexpr double kInstantBoundSeconds = 1;
  static constexpr double kInstantBoundTotalSeconds = 3;
  double instantBoundWallSeconds = 0; // this run's, all variants
  void recordInstantBound(func::FuncOp func, Operation *lossGrad, double flopsBefore) {
    struct Timer {
      double &total;
      std::chrono::steady_clock::time_point begin = std::chrono::steady_clock::now();
      ~Timer() {
        total += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      }
    } timer{instantBoundWallSeconds};
    auto live = computeStepLiveness(func, /*reuseDyingOperands=*/true, /*withNames=*/false,
                                    &argumentBuffers);
    if (failed(live))
      return;
    std::vector<int64_t> profile = memoryProfile(*live, uint64_t(alignment));
    std::vector<size_t> fullest(profile.size());
    std::iota(fullest.begin(), fullest.end(), size_t(0));
    llvm::stable_sort(fullest, [&](size_t a, size_t b) { return profile[a] > profile[b]; });
    SmallVector<Operation *> instants = {lossGrad};
    for (size_t step : fullest) {
      if (instants.size() > kInstants)
        break;
      if (!llvm::is_contained(instants, live->steps[step]))
        instants.push_back(live->steps[step]);
    }
    recordMemoryFloor(func, *live, lossGrad, fullest);
    double spent = 0, bound = 0;
    bool infeasible = false;
    remat::Status status = remat::Status::Optimal;
    Operation *at = nullptr;
    for (Operation *instant : instants) {
      double left = std::min(kInstantBoundTotalSeconds - spent, double(timeLimit));
      if (left <= 0)
        break;
      remat::BoundarySolution solved = remat::solveBoundaryBound(
          instantProblem(func, instant, budget), std::min(kInstantBoundSeconds, left));
      spent += solved.seconds;
      if (solved.status == remat::Status::Infeasible) {
        infeasible = true;
        status = solved.status;
        at = instant;
        break;
      }
      double fraction = flopsBefore > 0 ? solved.bound / flopsBefore : 0;
      if (!at || fraction > bound) {
        bound = fraction;
        status = solved.status;
        at = instant;
      }
    }
    if (!at)
      return;
    if (auto before = func->getAttrOfType<FloatAttr>("graph.fit_instant_bound")) {
      auto beforeStatus = func->getAttrOfType<StringAttr>("graph.fit_instant_bound_status");
      bool beforeInfeasible = beforeStatus && beforeStatus.getValue() == "infeasible";
      if (infeasible || (!beforeInfeasible && before.getValueAsDouble() <= bound))
        return;
    }
    Builder attrs(func.getContext());
    func->setAttr("graph.fit_instant_bound", attrs.getF64FloatAttr(bound));
    func->setAttr("graph.fit_instant_bound_status", attrs.getStringAttr(remat::statusName(status)));
    func->setAttr("graph.fit_instant_bound_seconds", attrs.getF64FloatAttr(spent));
    int64_t step = llvm::find(live->steps, at) - live->steps.begin();
    func->setAttr("graph.fit_instant_bound_at",
                  attrs.getStringAttr(at->getNumResults() ? valueName(at->getResult(0), step)
                                                          : at->getName().getStringRef().str()));
  }

  /// The memory floor: no recomputation of this step fits in fewer bytes, because while one op
  /// runs, what is live whatever is recomputed and the fewest bytes any recomputation must hold
  /// (remat::minimumHeldBytes) already take that much. The largest over every step of the
  /// schedule, or on steps of more than kFloorAllSteps ops (O(ops) per instant) over the loss
  /// gradient and the kFloorInstants fullest steps before recomputation (on the 64x64 U-Net,
  /// those give the same floor as all 153 steps; 0.27 s on the 10k-op encoder). Without
  /// alignment, workspaces or the values' own lifetimes (each only lowers it). solveFor runs
  /// once per variant of the step, and the smaller floor holds for both.
  static constexpr size_t kFloorAllSteps = 512;
  static constexpr size_t kFloorInstants = 64;
  /// `fullest`: the steps, fullest first.
  void recordMemoryFloor(func::FuncOp func, const StepLiveness &live, Operation *lossGrad,
                         ArrayRef<size_t> fullest) {
    SmallVector<Operation *> instants(live.steps.begin(), live.steps.end());
    if (instants.size() > kFloorAllSteps) {
      instants = {lossGrad};
      for (size_t step : fullest.take_front(kFloorInstants))
        if (live.steps[step] != lossGrad)
          instants.push_back(live.steps[step]);
    }
    int64_t floor = -1;
    Operation *at = nullptr;
    for (Operation *instant : instants) {
      remat::BoundaryProblem problem = instantProblem(func, instant, budget);
      int64_t held = remat::minimumHeldBytes(problem);
      int64_t fixed = int64_t(budget) - problem.capacity;
      if (held >= 0 && fixed + held > floor) {
        floor = fixed + held;
        at = instant;
      }
    }
    if (!at)
      return;
    if (auto before = func->getAttrOfType<IntegerAttr>("graph.fit_memory_floor"))
      if (before.getInt() <= floor)
        return;
    Builder attrs(func.getContext());
    func->setAttr("graph.fit_memory_floor", attrs.getI64IntegerAttr(floor));
    int64_t step = llvm::find(live.steps, at) - live.steps.begin();
    func->setAttr("graph.fit_memory_floor_at",
                  attrs.getStringAttr(at->getNumResults() ? valueName(at->getResult(0), step)
                                                          : at->getName().getStringRef().str()));
  }

  static constexpr unsigned kExactRounds = 8;
  static constexpr unsigned kRepairedRounds = 2;

  /// Pure forward ops that write nothing in place and are worth recomputing, and batch norms
  /// (their output, recomputed from the saved statistics).
  static bool recomputable(Operation *op) {
    if (isa<BatchNormOp>(op))
      return true;
    if (op->getNumResults() != 1 || !isMemoryEffectFree(op) || isa<ReshapeOp, LossOp>(op))
      return false;
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      if (inPlaceOperandOf(op, i) >= 0)
        return false;
    return true;
  }

  /// The uses of `v`, or of reshape views of it, by ops after `lossGrad`.
  static SmallVector<OpOperand *> backwardUses(Value v, Operation *lossGrad) {
    SmallVector<OpOperand *> uses;
    SmallVector<Value> worklist = {v};
    while (!worklist.empty()) {
      Value current = worklist.pop_back_val();
      for (OpOperand &use : current.getUses()) {
        Operation *user = use.getOwner();
        if (isa<ReshapeOp>(user) && user->isBeforeInBlock(lossGrad))
          worklist.push_back(user->getResult(0));
        else if (user != lossGrad && lossGrad->isBeforeInBlock(user))
          uses.push_back(&use);
        else if (user == lossGrad)
          continue;
      }
    }
    return uses;
  }

  static constexpr unsigned kMaxChain = 4;

  /// Whether `op` is elementwise-cheap (a batch norm, recomputed as batch_norm_apply, or at
  /// most a few FLOPs per output element) and every value it would be recomputed from is live
  /// at `point` anyway (a function argument, or read by the backward pass at or after it), or
  /// is itself the output of such an op (up to `levels` of them: relu <- batch norm <- kept
  /// convolution output).
  /// Whether `op` costs at most a few FLOPs per output element (batch_norm_apply, relu, max
  /// pooling, concat, reshape: not a convolution or a matmul).
  static bool cheapOp(Operation *op) {
    if (op->getNumResults() == 0)
      return false;
    auto type = dyn_cast<ShapedType>(op->getResult(0).getType());
    return type && type.hasStaticShape() &&
           estimateOpCost(op).flops <= kCheapFlopsPerElement * double(type.getNumElements());
  }

  bool cheapFromLiveInputs(Operation *op, Operation *point, Operation *lossGrad,
                           unsigned levels = kCheapLevels) {
    if (levels == 0 || !recomputable(op) || !op->isBeforeInBlock(lossGrad))
      return false;
    SmallVector<Value, 4> inputs;
    if (auto bn = dyn_cast<BatchNormOp>(op)) {
      inputs.push_back(bn.getInput());
    } else {
      if (!cheapOp(op))
        return false;
      inputs.append(op->operand_begin(), op->operand_end());
    }
    return llvm::all_of(inputs, [&](Value v) {
      if (isa<BlockArgument>(v) || readAtOrAfter(v, point, lossGrad) ||
          liveCloneAt(v, point, lossGrad))
        return true;
      Operation *producer = v.getDefiningOp();
      return producer && cheapFromLiveInputs(producer, point, lossGrad, levels - 1);
    });
  }
  static constexpr double kCheapFlopsPerElement = 8;
  static constexpr unsigned kCheapLevels = 3;

  /// The recomputed forward ops' clones held by the applied changes
  /// (Remat::sources).
  CloneRegistry clonesOf;

  void registerClone(Remat &remat, Operation *source, Operation *clone) {
    remat.registry = &clonesOf;
    remat.sources.push_back({source, clone});
    clonesOf[source].push_back(clone);
  }

  /// A clone of forward value `v` (its op's first result) that an applied
  /// change computes before `point` and the backward pass reads at `point` or
  /// after it: live there anyway, so a chain recomputed before `point` reads it
  /// instead of recomputing `v` once more. Null when there is none. The clone
  /// computes the same values (the same op on the same inputs, or a batch
  /// norm's bit-identical batch_norm_apply).
  Value liveCloneAt(Value v, Operation *point, Operation *lossGrad) const {
    auto result = dyn_cast<OpResult>(v);
    if (!result || result.getResultNumber() != 0)
      return {};
    auto listed = clonesOf.find(result.getOwner());
    if (listed == clonesOf.end())
      return {};
    for (Operation *clone : listed->second)
      if (clone->getBlock() == point->getBlock() && clone->isBeforeInBlock(point) &&
          readAtOrAfter(clone->getResult(0), point, lossGrad))
        return clone->getResult(0);
    return {};
  }

  /// Whether the backward pass reads `v` (or a view of it) at `point` or after it.
  static bool readAtOrAfter(Value v, Operation *point, Operation *lossGrad) {
    return llvm::any_of(backwardUses(v, lossGrad), [&](OpOperand *use) {
      return !use->getOwner()->isBeforeInBlock(point);
    });
  }

  /// Recomputes `op` (and the views through which the backward pass reads it) right before
  /// its first backward reader, and points the backward readers at the recomputed values.
  /// With `chain` > 0, the pure forward ops producing its operands are recomputed too, up to
  /// `chain` levels deep, so that their outputs need not stay alive either.

  /// The exact model's options for `op`, shallowest first: each depth, going on through cheap
  /// producers (so that no option keeps an original alive and the options add up once
  /// applied). Stops at the depth that adds no op. Leaves the IR unchanged.
  std::vector<ChainShape> exactOptionShapes(Operation *op, Operation *lossGrad) {
    std::vector<ChainShape> shapes;
    size_t previous = 0;
    for (unsigned depth = 0; depth <= kMaxChain; ++depth) {
      // Whole: the model's options are one recomputation each (a cheap late one
      // would make an option's FLOPs depend on which others are chosen).
      ChainShape shape{depth, /*extended=*/true};
      shape.whole = true;
      std::optional<Remat> remat = rematerialize(op, lossGrad, shape);
      if (!remat)
        break;
      size_t clones = remat->clones.size();
      remat->undo();
      if (depth > 0 && clones == previous)
        break;
      previous = clones;
      shapes.push_back(shape);
    }
    return shapes;
  }

  /// Whether a recomputation inserted before `first` reads a value that an op before `first`
  /// overwrote in place (an optimizer update of a parameter): it must read the same inputs.
  static bool readsOverwrittenInput(ArrayRef<Operation *> clones, Operation *first) {
    for (Operation *c : clones)
      for (Value operand : c->getOperands())
        for (OpOperand &use : operand.getUses()) {
          Operation *user = use.getOwner();
          if (isa<ReshapeOp>(user) || user->getBlock() != first->getBlock())
            continue;
          // The order is asked last: a query on a fresh clone renumbers the whole block
          // (Block::recomputeOpOrder, O(ops)), and the clones overwrite nothing.
          bool overwrites = false;
          for (unsigned i = 0; i < user->getNumResults() && !overwrites; ++i)
            overwrites = inPlaceOperandOf(user, i) == int64_t(use.getOperandNumber());
          if (overwrites && user->isBeforeInBlock(first))
            return true;
        }
    return false;
  }

  /// Recomputes `op` with `shape.depth` levels of producers right before the first reader of
  /// `uses` (backward uses of it or of its views), and points them at the recomputation;
  /// records the clones and redirections in `remat`. Returns that first reader.
  Operation *recomputeFor(Operation *op, ArrayRef<OpOperand *> uses, Operation *lossGrad,
                          ChainShape shape, Remat &remat) {
    Operation *first = earliestOwner(uses);
    OpBuilder b(first);
    // Clone the producers first (depth-first), then the op reading their clones.
    std::function<Operation *(Operation *, unsigned)> cloneChain = [&](Operation *source,
                                                                       unsigned depth) {
      IRMapping map;
      auto bn = dyn_cast<BatchNormOp>(source);
      // A batch norm is recomputed from its input alone (the rest are parameters and saved
      // statistics).
      SmallVector<Value, 4> chained;
      if (bn)
        chained.push_back(bn.getInput());
      else
        chained.append(source->operand_begin(), source->operand_end());
      for (Value operand : chained) {
        // Look through reshape views (free, and aliases of their source's buffer): the
        // decision is about the value they view, and the views are re-created on top of its
        // recomputation (a linear layer's relu reads its dense output through a reshape).
        SmallVector<ReshapeOp> views;
        Value viewed = operand;
        while (auto view = shape.extended ? viewed.getDefiningOp<ReshapeOp>() : ReshapeOp()) {
          if (!view->isBeforeInBlock(lossGrad))
            break;
          views.push_back(view);
          viewed = view.getInput();
        }
        Operation *producer = viewed.getDefiningOp();
        // An operand the backward pass reads at or after the recomputation is live there
        // anyway (a residual block's input, read by its convolution's filter gradient):
        // reading it costs nothing, recomputing it would keep its own inputs alive.
        if (!producer || !recomputable(producer) || !producer->isBeforeInBlock(lossGrad) ||
            readAtOrAfter(viewed, first, lossGrad))
          continue;
        // So is a clone of it that an earlier change made and the backward pass
        // still reads at or after the recomputation (a convolution output
        // recomputed for its batch norm's backward, from which a skip
        // connection's relu is recomputed again).
        Value value = liveCloneAt(viewed, first, lossGrad);
        if (!value) {
          Operation *recomputed = nullptr;
          if (depth > 0)
            recomputed = cloneChain(producer, depth - 1);
          else if (shape.extended && cheapFromLiveInputs(producer, first, lossGrad))
            // Past the depth, a cheap producer whose inputs are live anyway is
            // still recomputed (relu <- batch norm <- kept convolution output):
            // reading the original would keep it alive until here, which is
            // what two overlapping chains (a skip connection's relu, recomputed
            // both for its own backward reader and inside its concat's chain)
            // otherwise do.
            recomputed = cloneChain(producer, 0);
          if (!recomputed)
            continue;
          value = recomputed->getResult(0);
        }
        for (ReshapeOp view : llvm::reverse(views)) {
          Operation *copy = b.create<ReshapeOp>(view.getLoc(), view.getType(), value);
          remat.clones.push_back(copy);
          value = copy->getResult(0);
        }
        map.map(operand, value);
      }
      Operation *clone =
          bn ? b.create<BatchNormApplyOp>(bn.getLoc(), bn.getResult().getType(),
                                          map.lookupOrDefault(bn.getInput()), bn.getScale(),
                                          bn.getBias(), bn.getSavedMean(), bn.getSavedInvstd())
                   .getOperation()
             : b.clone(*source, map);
      remat.clones.push_back(clone);
      registerClone(remat, source, clone);
      return clone;
    };
    Operation *clone = cloneChain(op, shape.depth);
    // Map each forward view of the original to a view of the clone, made on demand.
    llvm::DenseMap<Value, Value> recomputed = {{op->getResult(0), clone->getResult(0)}};
    std::function<Value(Value)> viewOf = [&](Value original) -> Value {
      if (Value known = recomputed.lookup(original))
        return known;
      auto reshape = original.getDefiningOp<ReshapeOp>();
      Value source = viewOf(reshape.getInput());
      Operation *view = b.create<ReshapeOp>(reshape.getLoc(), reshape.getType(), source);
      remat.clones.push_back(view);
      recomputed[original] = view->getResult(0);
      return view->getResult(0);
    };
    for (OpOperand *use : uses) {
      Value old = use->get();
      remat.redirected.push_back({use, old});
      use->set(viewOf(old));
    }
    return first;
  }

  /// The first op that reads one of `uses`.
  static Operation *earliestOwner(ArrayRef<OpOperand *> uses) {
    Operation *first = uses.front()->getOwner();
    for (OpOperand *use : uses)
      if (use->getOwner()->isBeforeInBlock(first))
        first = use->getOwner();
    return first;
  }

  /// The backward readers of `uses` cut at the widest gap between consecutive ones (in ops),
  /// for ChainShape::split: the readers before it and those after it. Empty when they are
  /// all one op.
  static SmallVector<SmallVector<OpOperand *>, 2> splitAtWidestGap(ArrayRef<OpOperand *> uses) {
    SmallVector<OpOperand *> sorted(uses.begin(), uses.end());
    llvm::stable_sort(sorted, [](OpOperand *a, OpOperand *b) {
      return a->getOwner() != b->getOwner() && a->getOwner()->isBeforeInBlock(b->getOwner());
    });
    size_t cut = 0;
    int64_t widest = 0;
    for (size_t i = 1; i < sorted.size(); ++i) {
      Operation *before = sorted[i - 1]->getOwner(), *after = sorted[i]->getOwner();
      if (before == after)
        continue;
      int64_t gap = 0;
      for (Operation *op = before; op && op != after; op = op->getNextNode())
        ++gap;
      if (gap > widest) {
        widest = gap;
        cut = i;
      }
    }
    if (cut == 0)
      return {};
    return {SmallVector<OpOperand *>(sorted.begin(), sorted.begin() + cut),
            SmallVector<OpOperand *>(sorted.begin() + cut, sorted.end())};
  }

  /// Each forward op's own loss gradient. A micro-batched step (BuildTrainStep) unrolls k
  /// forward and backward passes, each with its loss gradient; a forward op's backward readers
  /// come after the first loss gradient that depends on it, its micro-batch's (a batch norm's
  /// running statistics also reach the next micro-batch's, later). An op that reaches none
  /// gets the first loss gradient after it; ops that depend on a loss gradient (the backward
  /// passes, the gradient sums, the update) get none. One pass backward over the block and
  /// one forward, O(ops + uses).
  llvm::DenseMap<Operation *, Operation *> ownLossGrad;
  void mapOwnLossGradients(Block &body) {
    ownLossGrad.clear();
    auto earlier = [](Operation *a, Operation *b) { return !b || (a && a->isBeforeInBlock(b)); };
    llvm::DenseMap<Operation *, Operation *> firstReached;
    Operation *nextLossGrad = nullptr;
    for (Operation &op : llvm::reverse(body)) {
      Operation *reached = nullptr;
      for (Operation *user : op.getUsers()) {
        Operation *owner = body.findAncestorOpInBlock(*user);
        if (!owner)
          continue;
        Operation *viaUser = isa<LossBackwardOp>(owner) ? owner : firstReached.lookup(owner);
        if (viaUser && earlier(viaUser, reached))
          reached = viaUser;
      }
      if (reached)
        firstReached[&op] = reached;
      if (isa<LossBackwardOp>(op))
        nextLossGrad = &op;
      else if (Operation *own = reached ? reached : nextLossGrad)
        ownLossGrad[&op] = own;
    }
    // The backward side: anything that depends on a loss gradient.
    llvm::DenseSet<Operation *> backward;
    for (Operation &op : body) {
      bool dependent = isa<LossBackwardOp>(op) || llvm::any_of(op.getOperands(), [&](Value v) {
                         Operation *def = v.getDefiningOp();
                         return def && backward.contains(def);
                       });
      if (dependent) {
        backward.insert(&op);
        ownLossGrad.erase(&op);
      }
    }
  }

  /// The copies of each forward op in the later micro-batches of a micro-batched step
  /// (kMicroBatchOpAttr), in micro-batch order, keyed by its copy in the first one; `mirrored`
  /// holds the later copies. The micro-batches are the same computation on other rows, so
  /// they are recomputed alike: a candidate is the op of the first micro-batch, and each
  /// change applies to every copy. Cuts the candidates and the measured trials k-fold, and a
  /// kept change lowers each micro-batch's peak (one micro-batch's alone never lowers the
  /// step's). An op whose copies are not one per micro-batch stays a candidate of its own.
  /// O(ops log ops).
  llvm::DenseMap<Operation *, SmallVector<Operation *, 4>> mirrorsOf;
  llvm::DenseSet<Operation *> mirrored;
  unsigned microBatchCount = 0; // with copies mapped; else 0
  void mapMirrors(Block &body) {
    mirrorsOf.clear();
    mirrored.clear();
    microBatchCount = 0;
    llvm::DenseMap<Operation *, unsigned> microBatchOf; // loss gradient -> its micro-batch
    for (Operation &op : body)
      if (isa<LossBackwardOp>(op))
        microBatchOf.try_emplace(&op, microBatchOf.size());
    if (microBatchOf.size() < 2)
      return;
    std::map<int64_t, SmallVector<std::pair<unsigned, Operation *>, 4>> copies;
    for (Operation &op : body) {
      auto index = op.getAttrOfType<IntegerAttr>(kMicroBatchOpAttr);
      Operation *own = ownLossGrad.lookup(&op);
      if (index && own)
        copies[index.getInt()].push_back({microBatchOf.lookup(own), &op});
    }
    for (auto &[index, group] : copies) {
      llvm::sort(group, [](auto &a, auto &b) { return a.first < b.first; });
      bool onePerMicroBatch = group.size() == microBatchOf.size();
      for (auto [micro, copy] : llvm::enumerate(group))
        onePerMicroBatch = onePerMicroBatch && copy.first == micro;
      if (!onePerMicroBatch)
        continue;
      microBatchCount = group.size();
      SmallVector<Operation *, 4> &later = mirrorsOf[group.front().second];
      for (auto &copy : llvm::drop_begin(group)) {
        later.push_back(copy.second);
        mirrored.insert(copy.second);
      }
    }
  }

  /// `op` and its copies in the later micro-batches.
  SmallVector<Operation *, 4> withMirrors(Operation *op) const {
    SmallVector<Operation *, 4> ops = {op};
    llvm::append_range(ops, mirrorsOf.lookup(op));
    return ops;
  }

  /// Recomputes `op` (with the chain `shape` asks for) for its backward readers, and its copies
  /// in the other micro-batches for theirs, as one change.
  /// Leaves out the copies of the micro-batches set in `skipped` (an empty change when that is
  /// all of them).
  std::optional<Remat> rematerialize(Operation *op, Operation *lossGrad, ChainShape shape,
                                     const llvm::SmallBitVector &skipped = {}) {
    Remat remat;
    remat.copies = 0;
    for (auto [micro, copy] : llvm::enumerate(withMirrors(op))) {
      if (micro < skipped.size() && skipped[micro])
        continue;
      if (!remat.addCopy(rematerializeOne(copy, lossGrad, shape)))
        return std::nullopt;
    }
    remat.source = op;
    remat.split = shape.split;
    remat.skipped = skipped;
    remat.replay = [this, op, lossGrad, shape](const llvm::SmallBitVector &skipped) {
      return rematerialize(op, lossGrad, shape, skipped);
    };
    if (remat.cheapLate) {
      ChainShape whole = shape;
      whole.whole = true;
      remat.replayWhole = [this, op, lossGrad, whole](const llvm::SmallBitVector &skipped) {
        return rematerialize(op, lossGrad, whole, skipped);
      };
    }
    return remat;
  }

  std::optional<Remat> rematerializeOne(Operation *op, Operation *lossGrad, ChainShape shape) {
    if (Operation *own = ownLossGrad.lookup(op))
      lossGrad = own;
    SmallVector<OpOperand *> uses = backwardUses(op->getResult(0), lossGrad);
    if (uses.empty())
      return std::nullopt;
    SmallVector<SmallVector<OpOperand *>, 2> groups;
    bool cheapLate = false;
    if (shape.split) {
      groups = splitAtWidestGap(uses);
      if (groups.empty())
        return std::nullopt;
    } else {
      groups.push_back(uses);
      // Readers after the widest gap that a cheap op can serve from values live
      // there anyway (a skip connection's relu, read at the end of the backward
      // pass where its convolution's output is live for the batch norm's
      // backward) get that cheap recomputation of their own: holding one
      // recomputation across the gap costs bytes.
      if (cheapSplits && !shape.whole) {
        SmallVector<SmallVector<OpOperand *>, 2> parts = splitAtWidestGap(uses);
        if (!parts.empty() && cheapFromLiveInputs(op, earliestOwner(parts[1]), lossGrad)) {
          groups = std::move(parts);
          cheapLate = true;
        }
      }
    }
    Remat remat;
    for (auto [index, group] : llvm::enumerate(groups)) {
      size_t clonesBefore = remat.clones.size();
      ChainShape groupShape = cheapLate && index == 1 ? ChainShape{0, /*extended=*/true} : shape;
      Operation *first = recomputeFor(op, group, lossGrad, groupShape, remat);
      if (readsOverwrittenInput(ArrayRef<Operation *>(remat.clones).drop_front(clonesBefore),
                                first)) {
        remat.undo();
        return std::nullopt;
      }
    }
    remat.cheapLate = cheapLate;
    return remat;
  }
};

} // namespace
