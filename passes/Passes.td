//===- Passes.td - graphc's passes ------------------------------------------===//
//
// The passes of graphc's pipeline, in pipeline order: build the training step, then plan its
// memory, then verify the plan independently. Test printers for the analyses come last.
//
//===----------------------------------------------------------------------===//

#ifndef GRAPHC_PASSES
#define GRAPHC_PASSES

include "mlir/Pass/PassBase.td"

def FuseAttention : Pass<"graphc-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Fuse batch_matmul / softmax / dropout / batch_matmul into graph.attention";
  let description = [{
    Runs on the forward function, first. An exported attention layer (PyTorch's
    MultiheadAttention, Keras' MultiHeadAttention) arrives as the scores Q K^T, a softmax over
    the keys, an optional dropout and the product with V; autodiff then keeps the
    [batch x heads, queries, keys] probabilities (and the dropout's output) alive from the
    forward pass to the backward pass, and they are the largest activations of a transformer.
    graph.attention computes the same values a block of query rows at a time and its backward
    op recomputes the probabilities, so they only ever occupy the op's workspace.

    The chain is fused when each of its intermediate values has that one reader, the softmax is
    over the last axis, the scales (constant factors without offset, on Q, on K^T or on the
    scores) multiply into the attention's scale, and the products are not transposed on the
    query or value side. K^T given as a transpose of a stored K (the usual export) becomes the
    transpose that produces K itself, through views of the leading axes and scales between
    them; a scale of Q under such a view goes, the view reading Q itself (PyTorch's exported
    scaled_dot_product_attention scales Q and K^T by sqrt(scale) each and builds K^T as a
    [B H, S, D] view, a transpose and a [B, H, D, S] view). Dropout keeps its op id, ratio and mask index, so the fused and unfused
    graphs drop the same elements. A causal softmax (a decoder's mask) makes a causal
    attention, `graph.attention {causal}`.

    A key-padding mask added to the scaled scores (BertModel's extended attention mask, a
    Keras attention_mask of one row per sequence) arrives broadcast by the importers as a
    product of ones [b, heads x queries, 1] with the mask's [b, 1, keys] rows; that chain, when
    nothing in it derives from a parameter (the bias gets no gradient), becomes the attention's
    `bias` [b, keys] and its [b x heads, queries, keys] copy disappears too:
    ```mlir
    %ones = graph.fill {value = 1.0 : f32} : tensor<2x16x1xf32>
    %rows = graph.reshape %mask : (tensor<2x1x1x6xf32>) -> tensor<2x1x6xf32>
    %copies = graph.batch_matmul %ones, %rows : (...) -> tensor<2x16x6xf32>
    %bias = graph.reshape %copies : (tensor<2x16x6xf32>) -> tensor<2x2x8x6xf32>
    %sum = graph.add %scaled, %bias : tensor<2x2x8x6xf32>
    %p = graph.softmax %sum {axis = 3 : i64} : tensor<2x2x8x6xf32>
    ```
    becomes `graph.attention %q, %k, %v bias %m {scale = ...}` with %m the mask as [2, 6]. A
    per-query mask [b, 1, M, N] copied to the heads (ones [b, heads, 1] times its [b, 1, M x N]
    rows) becomes a bias [b, M, N] the same way.

    A masked_fill of the scaled scores (research code's scores.masked_fill(pad, -inf)), which
    the importers hold as broadcast(fill * mask) + scaled * broadcast(1 - mask) with a 0/1 mask
    and a finite non-zero fill, becomes a bias fill * mask with `bias_fills`: the bias replaces
    the score where it is non-zero, and the multiply and both broadcasts disappear.

    Before:
    ```mlir
    %qs = graph.scale %q {factor = 0.125 : f32} : tensor<16x64x64xf32>
    %kt = graph.transpose %k0 {perm = array<i64: 1, 2, 0>} : (tensor<64x16x64xf32>) -> tensor<16x64x64xf32>
    %s = graph.batch_matmul %qs, %kt : (tensor<16x64x64xf32>, tensor<16x64x64xf32>) -> tensor<16x64x64xf32>
    %p = graph.softmax %s {axis = 2 : i64} : tensor<16x64x64xf32>
    %d = graph.dropout %p, %step {op_id = 61 : i64, ratio = 0.1 : f32} : (tensor<16x64x64xf32>, tensor<f32>) -> tensor<16x64x64xf32>
    %o = graph.batch_matmul %d, %v : (tensor<16x64x64xf32>, tensor<16x64x64xf32>) -> tensor<16x64x64xf32>
    ```
    After:
    ```mlir
    %k = graph.transpose %k0 {perm = array<i64: 1, 0, 2>} : (tensor<64x16x64xf32>) -> tensor<16x64x64xf32>
    %o = graph.attention %q, %k, %v, %step {scale = 0.125 : f32, dropout_ratio = 0.1 : f32, op_id = 61 : i64}
        : (tensor<16x64x64xf32>, tensor<16x64x64xf32>, tensor<16x64x64xf32>, tensor<f32>) -> tensor<16x64x64xf32>
    ```
  }];
  let options = [
    Option<"queryBlock", "query-block", "int64_t", "0",
           "query rows per block of each fused attention (graph.query_block); 0: the most "
           "rows whose scores are no larger than the attention's output">,
  ];
  let dependentDialects = ["::graphc::graph::GraphDialect"];
}

def InsertCasts : Pass<"graphc-insert-casts", "mlir::func::FuncOp"> {
  let summary = "Run matmul and convolution in 16 bit (bf16 or f16), in the spirit of torch.autocast";
  let description = [{
    Runs on the forward function, before graphc-build-train-step, so that autodiff
    differentiates the casts too. Three lists decide each op's precision:
    - **16 bit** (dense, matmul, batch_matmul, conv2d): every f32 tensor operand, weights included, is cast
      to `precision` (once per value) and the results are 16-bit.
    - **follow the inputs** (relu, sigmoid, tanh, clip, max/avg pooling, dropout, reshape,
      transpose, concat, slice, add, scale): 16-bit when every floating-point operand is, otherwise f32
      (16-bit operands are widened).
    - **normalize** (batch_norm, layer_norm, rms_norm): the activation keeps its type, in and out; scale, bias and
      running statistics stay f32, and the statistics are computed in f32.
    - **f32** (everything else: softmax, the losses, the optimizer updates, the returned
      prediction): 16-bit operands are widened first.
    Parameters stay f32 master weights: their casts are differentiated into f32 gradients.
    Scalars (the step counter) are never cast.

    Before (`precision=bf16`):
    ```mlir
    %y = graph.dense %x, %w : (tensor<32x784xf32>, tensor<784x100xf32>) -> tensor<32x100xf32>
    %r = graph.relu %y : tensor<32x100xf32>
    %s = graph.softmax %r {axis = 1 : i64} : tensor<32x100xf32>
    ```
    After:
    ```mlir
    %xh = graph.cast %x : tensor<32x784xf32> to tensor<32x784xbf16>
    %wh = graph.cast %w : tensor<784x100xf32> to tensor<784x100xbf16>
    %y = graph.dense %xh, %wh : (tensor<32x784xbf16>, tensor<784x100xbf16>) -> tensor<32x100xbf16>
    %r = graph.relu %y : tensor<32x100xbf16>
    %rf = graph.cast %r : tensor<32x100xbf16> to tensor<32x100xf32>
    %s = graph.softmax %rf {axis = 1 : i64} : tensor<32x100xf32>
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"bf16\"",
           "the 16-bit type of matmul and convolution: bf16 or f16 (fp16)">,
  ];
}

def BuildTrainStep : Pass<"graphc-build-train-step", "mlir::ModuleOp"> {
  let summary = "Turn the forward function into a whole training step (autodiff + loss + optimizer)";
  let description = [{
    Takes the module's forward function, whose arguments are tagged `graph.kind = "input"` or
    `"parameter"`, and replaces it with `@train_step`: parameters, optimizer state, the data
    batch, the labels and (for Adam) the step number in; the loss and the updated parameters
    and state out. Reverse-mode autodiff walks the forward ops backwards and emits each op's
    backward op; gradients of a value used twice are not summed yet (such graphs are refused).

    Before:
    ```mlir
    func.func @forward(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                       %w: tensor<2x3xf32> {graph.kind = "parameter", graph.name = "fc.weight"})
        -> tensor<4x2xf32> {
      %y = graph.dense %x, %w {transpose_weight} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
      return %y : tensor<4x2xf32>
    }
    ```
    After (`loss=mse optimizer=sgd`):
    ```mlir
    func.func @train_step(%w: tensor<2x3xf32> {graph.kind = "parameter", graph.name = "fc.weight"},
                          %x: tensor<4x3xf32> {graph.kind = "input", graph.role = "data", ...},
                          %labels: tensor<4x2xf32> {graph.kind = "input", graph.role = "labels", ...})
        -> (tensor<f32>, tensor<2x3xf32> {graph.tied_to_arg = 0 : i64}) {
      %y = graph.dense %x, %w {transpose_weight} : ...
      %loss = graph.loss mse %y, %labels : ...
      %dy = graph.loss_backward mse %y, %labels : ...
      %dw = graph.matmul %dy, %x {transpose_lhs} : ...
      %w1 = graph.sgd_update %w, %dw {lr = 0.01 : f32} : tensor<2x3xf32>
      return %loss, %w1 : tensor<f32>, tensor<2x3xf32>
    }
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", "\"sparse_categorical_crossentropy\"",
           "sparse_categorical_crossentropy|categorical_crossentropy|binary_crossentropy|mse">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"", "sgd|momentum|adam">,
    Option<"learningRate", "lr", "double", "0.01", "learning rate">,
    Option<"momentum", "momentum", "double", "0.9", "momentum factor (optimizer=momentum)">,
    Option<"beta1", "beta1", "double", "0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam beta2">,
    Option<"epsilon", "epsilon", "double", "1e-8", "Adam epsilon">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "split the batch into this many micro-batches, each run forward and backward in "
           "turn with gradients accumulated (the forward function is one micro-batch)">,
    Option<"lossScaling", "loss-scaling", "bool", "false",
           "dynamic loss scaling (for fp16): scale the loss gradient by 2^(16 - halvings), "
           "check every parameter gradient for overflow before any update, skip the updates "
           "and halve the scale on overflow">,
    Option<"lossScaleGrowthInterval", "loss-scale-growth-interval", "int64_t", "2000",
           "clean steps after which the loss scale doubles">,
    Option<"fromLogits", "from-logits", "bool", "false",
           "the model's output is logits (PyTorch's CrossEntropyLoss / BCEWithLogitsLoss): a "
           "crossentropy applies the softmax (sigmoid) itself, in log space; refused when the "
           "output already is a Softmax (Sigmoid) or the loss is mse">,
    Option<"ignoreLabels", "ignore-labels", "bool", "false",
           "sparse_categorical_crossentropy: labels equal to ignore-index add nothing to the "
           "loss, which is the mean over the others (PyTorch's CrossEntropyLoss(ignore_index), "
           "Keras's ignore_class); micro-batches divide by the whole step's count">,
    Option<"ignoreIndex", "ignore-index", "int64_t", "-100",
           "the ignored label (with ignore-labels)">,
    ListOption<"classWeights", "class-weights", "double",
               "sparse_categorical_crossentropy's per-class weights, one per class (PyTorch's "
               "CrossEntropyLoss(weight)): a row's loss is weighted by its class's, the mean "
               "divided by the weights of the counted labels">,
    ListOption<"posWeight", "pos-weight", "double",
               "binary_crossentropy's weight of the positive targets, one value or one per "
               "index of the prediction's last axis (PyTorch's BCEWithLogitsLoss(pos_weight))">,
    Option<"sampleWeights", "sample-weights", "bool", "false",
           "the step takes one f32 weight per sample (argument `sample_weight`, role "
           "sample_weights, fed by the binary's --sample-weights): each sample's loss terms are "
           "scaled by its weight, the divisor unchanged (Keras's fit(sample_weight), PyTorch's "
           "(loss(reduction='none') * w).mean())">,
    Option<"temporalSampleWeights", "temporal-sample-weights", "bool", "false",
           "with sample-weights: one weight per label row instead (the prediction without its "
           "last axis: a sequence model's positions), Keras's temporal sample weights">,
    Option<"labelSmoothing", "label-smoothing", "double", "0.0",
           "the crossentropies' label smoothing: categorical targets (1 - e) t + e / classes, "
           "binary targets (1 - e) t + e / 2 (PyTorch's CrossEntropyLoss(label_smoothing), "
           "Keras's label_smoothing)">,
  ];
  let dependentDialects = ["::graphc::graph::GraphDialect", "::mlir::func::FuncDialect"];
}

def SplitDataGradients : Pass<"graphc-split-data-gradients", "mlir::func::FuncOp"> {
  let summary = "Compute each channel slice of a convolution's data gradient from a filter slice";
  let description = [{
    Runs on the training step, right after graphc-build-train-step. The backward of a channel
    concatenation slices its gradient into the parts' gradients; when the concatenation feeds
    a convolution (a U-Net decoder's first convolution reads [upsampled, skip], a SqueezeNet
    fire module's squeeze convolution reads [expand1x1, expand3x3]) that gradient is a
    conv2d_backward_data as wide as the whole concatenation, alive together with the slices it
    is copied into. Input channel c of a data gradient sums over the filter's [*, c, *, *]
    alone, so channels [offset, offset + n) are the data gradient of the filter's
    input-channel slice [*, offset, *, *] of width n: the same products and sums per element,
    and the parts' FLOPs add up to the whole. Each slice becomes that smaller data gradient;
    the whole gradient (the U-Net's 256 MiB at batch 8, 256x256) and the copies are gone, and
    only the filter slices (the size of a filter) are added.

    Applies when every reader of the data gradient is a slice on the channel axis, groups = 1
    and there is no bias. Sets `graph.split_data_gradients` to how many data gradients were
    split. O(ops).

    Before:
    ```mlir
    %gx = graph.conv2d_backward_data %gy, %w {...} : (tensor<2x4x8x8xf32>, tensor<4x6x3x3xf32>) -> tensor<2x6x8x8xf32>
    %ga = graph.slice %gx {axis = 1 : i64, offset = 0 : i64} : (tensor<2x6x8x8xf32>) -> tensor<2x2x8x8xf32>
    %gb = graph.slice %gx {axis = 1 : i64, offset = 2 : i64} : (tensor<2x6x8x8xf32>) -> tensor<2x4x8x8xf32>
    ```
    After:
    ```mlir
    %wa = graph.slice %w {axis = 1 : i64, offset = 0 : i64} : (tensor<4x6x3x3xf32>) -> tensor<4x2x3x3xf32>
    %ga = graph.conv2d_backward_data %gy, %wa {...} : (tensor<2x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<2x2x8x8xf32>
    %wb = graph.slice %w {axis = 1 : i64, offset = 2 : i64} : (tensor<4x6x3x3xf32>) -> tensor<4x4x3x3xf32>
    %gb = graph.conv2d_backward_data %gy, %wb {...} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
    ```
  }];
}

def AllReduceGradients : Pass<"graphc-all-reduce-gradients", "mlir::func::FuncOp"> {
  let summary = "Average the parameter gradients over the data-parallel ranks, in planned buckets";
  let description = [{
    For `--data-parallel`: every rank runs the same step on its shard of the global batch, so
    the gradient of the global mean loss is the mean of the ranks' gradients. The gradients
    that reach an optimizer update are grouped, in the order they are completed, into buckets
    of at most `bucket-bytes` (a gradient larger than that is a bucket of its own), as in
    PyTorch DDP. Each bucket is one flat tensor: a planned buffer of the arena, so collectives
    never allocate. Its `graph.all_reduce` is placed as soon as its last gradient is complete,
    and the updates that read it move after it, so the reduction of one bucket overlaps the
    backward ops of the next. Everything else that read a gradient (the fp16 overflow check)
    reads the averaged one, so every rank skips or applies the same steps. O(ops).

    Before (ranks = 2):
    ```mlir
    %gw = graph.matmul ... : tensor<10x100xf32>
    %w1 = graph.sgd_update %w, %gw {lr = 0.01 : f32} : tensor<10x100xf32>
    %gb = graph.bias_grad ... : tensor<100xf32>
    %b1 = graph.sgd_update %b, %gb {lr = 0.01 : f32} : tensor<100xf32>
    ```
    After:
    ```mlir
    %gw = graph.matmul ... : tensor<10x100xf32>
    %gb = graph.bias_grad ... : tensor<100xf32>
    %f = graph.reshape %gw : (tensor<10x100xf32>) -> tensor<1000xf32>
    %k = graph.concat %f, %gb {axis = 0 : i64} : (tensor<1000xf32>, tensor<100xf32>) -> tensor<1100xf32>
    %r = graph.all_reduce %k {bucket = 0 : i64, ranks = 2 : i64} : tensor<1100xf32>
    %s = graph.slice %r {axis = 0 : i64, offset = 0 : i64} : (tensor<1100xf32>) -> tensor<1000xf32>
    %gw2 = graph.reshape %s : (tensor<1000xf32>) -> tensor<10x100xf32>
    %gb2 = graph.slice %r {axis = 0 : i64, offset = 1000 : i64} : (tensor<1100xf32>) -> tensor<100xf32>
    %w1 = graph.sgd_update %w, %gw2 {lr = 0.01 : f32} : tensor<10x100xf32>
    %b1 = graph.sgd_update %b, %gb2 {lr = 0.01 : f32} : tensor<100xf32>
    ```
    The function gets `graph.data_parallel_ranks` and `graph.gradient_buckets`.

    With `gradient-as-bucket-view` (DDP's gradient_as_bucket_view) each gradient but the last
    is followed by zeros up to the next multiple of `alignment` bytes, and the concat and
    slices get `graph.bucket_view`: graphc-plan-memory then places every gradient inside the
    bucket at its offset, the slices are views of it, and neither moves any data:
    ```mlir
    %f = graph.reshape %gw : (tensor<10x100xf32>) -> tensor<1000xf32>
    %z = graph.fill {value = 0.0 : f32} : tensor<24xf32>
    %k = graph.concat %f, %z, %gb {axis = 0 : i64, graph.bucket_view} : (...) -> tensor<1124xf32>
    %r = graph.all_reduce %k {bucket = 0 : i64, ranks = 2 : i64} : tensor<1124xf32>
    %s = graph.slice %r {axis = 0 : i64, graph.bucket_view, offset = 0 : i64} : ...
    %gb2 = graph.slice %r {axis = 0 : i64, graph.bucket_view, offset = 1024 : i64} : ...
    ```

    With `shard-optimizer-state` (ZeRO, Rajbhandari et al. 2020), a bucket whose updates are
    momentum or Adam is zero-padded to a multiple of the ranks and reduce-scattered instead: each
    rank updates only its shard of the bucket's parameters (`graph.rank_shard`) with its shard of
    the optimizer state, which replaces the per-parameter state arguments by one argument per
    state and bucket of 1/ranks the size (`zero.gradient_bucket<i>.m`, `.v`, `.velocity`), and
    `graph.all_gather_into` writes every rank's updated shard back over the parameters. The
    traffic is the all-reduce's (a reduce-scatter plus an all-gather); the optimizer state per
    rank shrinks by (ranks - 1) / ranks. The function gets `graph.sharded_buckets`.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", "0",
           "data-parallel world size (0: do nothing; 1 keeps the collectives, over one rank)">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "26214400",
           "most bytes of one gradient bucket (default 25 MiB, as PyTorch DDP)">,
    Option<"alignment", "alignment", "int64_t", "256",
           "the plan's alignment: with gradient-as-bucket-view, each gradient starts at a "
           "multiple of it inside its bucket (zeros fill the gaps)">,
    Option<"gradientAsBucketView", "gradient-as-bucket-view", "bool", "false",
           "mark each bucket's concat and slices graph.bucket_view, so that the gradients are "
           "planned inside the bucket and the optimizer reads them there, with no copy (as "
           "DDP's gradient_as_bucket_view)">,
    Option<"shardOptimizerState", "shard-optimizer-state", "bool", "false",
           "ZeRO: reduce-scatter each bucket, update this rank's shard of the parameters with "
           "this rank's shard of the momentum/Adam state, all-gather the parameters">,
  ];
  let dependentDialects = ["::graphc::graph::GraphDialect"];
}

def ScheduleOps : Pass<"graphc-schedule-ops", "mlir::func::FuncOp"> {
  let summary = "Reorder the training step's ops to lower its peak live bytes";
  let description = [{
    Greedy list scheduling: among the ops whose inputs are ready, run the one that grows the
    live bytes least (new buffers minus buffers read for the last time). In-place updates wait
    for every other reader of the buffer they overwrite. The new order is kept only when it
    lowers the liveness lower bound; `graph.schedule_bound_before` and `_after` record both.

    Before (two large activations live at once):
    ```mlir
    %a = graph.relu %x : tensor<64x64xf32>
    %b = graph.tanh %x : tensor<64x64xf32>
    %c = graph.dense %a, %w1 : ... -> tensor<64x1xf32>
    %d = graph.dense %b, %w2 : ... -> tensor<64x1xf32>
    ```
    After (each large activation dies before the next is made):
    ```mlir
    %a = graph.relu %x : tensor<64x64xf32>
    %c = graph.dense %a, %w1 : ... -> tensor<64x1xf32>
    %b = graph.tanh %x : tensor<64x64xf32>
    %d = graph.dense %b, %w2 : ... -> tensor<64x1xf32>
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "256", "alignment used for the lower bound">,
  ];
}

def FitBudget : Pass<"graphc-fit-budget", "mlir::func::FuncOp"> {
  let summary = "Rematerialize forward activations until the step fits a byte budget";
  let description = [{
    Tries, most bytes saved per recomputed FLOP first, to recompute a forward activation right
    before its first backward reader instead of keeping it alive (with the chain depth, 0 to 4
    levels of producers, that lowers the bound most; if that sequence never fits, the first
    depth that lowers it); keeps each remat that lowers the liveness lower bound (first among
    recomputations of cheap ops only, then among all; then, in a second round, each that makes
    the memory profile lighter) and stops at the first plan
    within `budget` (best fit, then a node-limited exact
    placement search that stops at the first fit; graphc-plan-memory falls back to the same
    plan, so the promised arena holds). Pure ops that write nothing
    in place are the only ones recomputed, so side effects never repeat; a training
    `graph.batch_norm` is recomputed as `graph.batch_norm_apply` from its saved statistics,
    without touching the running statistics:

    ```mlir
    // In the backward pass, before the relu's gradient (the conv output %c stays alive for
    // batch_norm_backward anyway):
    %y = graph.batch_norm_apply %c, %scale, %bias, %saved_mean, %saved_invstd : (...) -> ...
    %r = graph.relu %y : tensor<...>
    ```
    Records `graph.fit_peak_before`, `graph.fit_peak_after`, `graph.fit_remat_ops` and
    `graph.fit_extra_flops` (a fraction of the step's FLOPs) for the fit report. When that
    sequence runs out too, the heuristic runs again over the exact model's extended shapes
    (below). The best-depth sequences run in two candidate orders, the static scores and
    scores lazily re-computed from the chosen chain's FLOPs (up to 600 candidates). Up to 600
    candidates every sequence runs (both orders, first-improving, extended shapes, segments)
    and the fitting one with the fewest extra FLOPs is kept; above that they run in groups.

    Segment recomputation (Chen et al., "Training Deep Nets with Sublinear Memory Cost",
    2016) is one more sequence, run with the first ones whatever the graph's size: the
    forward ops are cut where the bytes crossing from earlier
    ops to later forward readers reach a local minimum (a transformer's residual stream
    between sublayers, a ResNet's block outputs), and a segment's internal values (read by no
    forward op outside it) are recomputed together, once, right before the backward pass first
    reads one of them; multi-result ops such as `graph.layer_norm` are cloned whole. Segments
    are kept, most recomputed bytes per FLOP first, while they lower the bound, and per-value
    chains go on from there. Records `graph.fit_remat_segments` and
    `graph.fit_remat_segment_ops`; `segments=false` turns them off.

    When no sequence fits, a last group (`split-shapes`, on by default) also tries each depth
    split: the value's backward readers are cut at the widest gap between consecutive ones and
    each group gets its own chain right before its first reader, so a value read early and
    late in the backward pass (a U-Net skip connection) is not held in between. Records
    `graph.fit_remat_split` (how many of the kept recomputations are split).

    ```mlir
    // A pre-norm residual block: %y and %r are read by the dense ops' filter gradients.
    %y, %m, %s = graph.layer_norm %x, %g, %b ...
    %h = graph.dense %y, %wa ...
    %r = graph.relu %h ...
    %o = graph.dense %r, %wb ...
    %x1 = graph.add %x, %o ...
    // After: the block's internal values are recomputed from %x once, where the backward pass
    // first reads one of them, and every backward reader reads the copies.
    %y2, %m2, %s2 = graph.layer_norm %x, %g, %b ...
    %h2 = graph.dense %y2, %wa ...
    %r2 = graph.relu %h2 ...
    %dwb = graph.matmul %r2, %do {transpose_lhs} ...
    ```

    A local search follows on graphs of up to 600 candidates (`local-search=false` turns it
    off): each applied recomputation, most FLOPs first, is left out (the changes after it are
    replayed without it), and for the 8 dearest, when the step then misses the budget, the
    best-shape sequence runs from there without it (a swap). A trial is kept when it costs
    fewer FLOPs, fits the budget and its arena stays at or above the one before it, which
    keeps the peak monotone in the budget. Records `graph.fit_local_search` ([dropped,
    swapped]) and `graph.fit_extra_flops_searched` (the extra FLOPs before it).

    Exact seeds follow on graphs of up to `exact-limit` candidates (`seed-levels=0` turns them
    off): the exact program below, built once, is solved at `seed-levels` fixed levels of the
    step's activations (85%, 72%, 61%, ... of the liveness peak above its emptiest point; facts
    of the graph, not of the budget), and each choice, applied and completed by the heuristic,
    replaces the result when it fits, costs fewer FLOPs and its arena is at or above the one
    before it (the local search's rule, so the peak stays monotone); the local search then runs
    on it. ResNet-50 at 30% of its activations: +9.69% FLOPs, where the sequences alone need
    +28.98%. Records `graph.fit_exact_seed_level`, `graph.fit_extra_flops_before_seed` (-1:
    nothing fit) and `graph.fit_extra_flops_seeded`.

    When nothing fits, the last cure splits each filter gradient that reads a channel
    concatenation over the concatenation's parts (the results concatenated on the filter's
    input-channel axis are the same sums), so the concatenation dies after the forward pass,
    and the fit runs again; records `graph.fit_split_filter_gradients`. When the unsplit step
    fits above its instant bound, the split step is also fitted to the unsplit plan's arena
    and kept, padded to that arena, when it costs fewer FLOPs (the U-Net at 40% of its
    activations: +7.48% -> +2.45%); records `graph.fit_split_extra_flops_unsplit`. The arena
    is the unsplit search's either way, so the peak stays monotone in the budget.

    Whenever the peak is made of convolution steps only (their im2col workspace is live at
    their own step), the heuristic first tiles those convolutions' im2col, which costs no
    FLOPs: `graph.im2col_rows` output rows per tile, first 4096 output pixels' worth, then
    halved while the convolution still makes the peak, down to 256 pixels. The kernels stage
    one tile in the workspace (cuDNN picks its algorithm under that size). Records
    `graph.fit_tiled_convs` and `graph.fit_tiled_workspace` ([largest whole-image workspace,
    largest tile]):

    ```mlir
    // Before: a 5.06 MiB workspace (16*3*3 x 96*96 floats) at this step.
    %dw = graph.conv2d_backward_filter %g, %x {...} : (...) -> tensor<16x16x3x3xf32>
    // After: 43 rows of 96 per tile, a 2.27 MiB workspace.
    %dw = graph.conv2d_backward_filter %g, %x {..., graph.im2col_rows = 43 : i64} : ...
    ```

    With `solver=exact` (or `auto` under `exact-limit` candidates) the choice comes from a
    0/1 program solved with CBC (fit/RematSolver.h): every candidate, alone or with 1..4 levels
    of producers (and past them through cheap ops, batch norm and elementwise, down to values
    live anyway, so that no option keeps an original alive and the options add up), is
    measured on the IR as a memory delta (for the exact seeds, every forward segment too,
    recomputed whole, in one exclusive group with the candidates whose backward reads it
    takes), and the least extra FLOPs within
    the budget are chosen; the choice is applied, planned and checked, the budget tightened and
    re-solved when the planned arena misses it. A choice that misses is also completed by the
    heuristic from where it stands (`graph.fit_solver = "exact+heuristic"`); the cheapest
    fitting result of the rounds is kept, and the heuristic's alone when it is no dearer. Also records `graph.fit_solver`, `graph.fit_solver_status`, `graph.fit_lower_bound`
    (the model's lower bound on extra FLOPs, a fraction of the step's), `graph.fit_gap` and
    `graph.fit_solve_seconds`, and, for comparison, `graph.fit_chen_extra_flops` (Chen et al.'s
    sqrt(n) checkpointing priced with the same cost model).

    Whatever the solver, `graph.fit_instant_bound` is a lower bound on the extra FLOPs (a
    fraction of the step's) of any recomputation that fits the budget (fit/BoundaryBound.h,
    passes/InstantBound.h): at the instant one op first runs, each value made before it and
    read after it is held or produced again, and so are the inputs of what is produced again.
    The strongest over the loss gradient and the 8 fullest steps is kept, with
    `graph.fit_instant_bound_at` (the op) and `graph.fit_instant_bound_status` (CBC's status;
    `infeasible`: no recomputation fits at all). Unlike `graph.fit_lower_bound`, it bounds
    every solver's result.

    Before (the relu output lives from the forward to the backward pass):
    ```mlir
    %r = graph.relu %c : tensor<32x32x26x26xf32>
    ...
    %dr = graph.relu_backward %g, %r : tensor<32x32x26x26xf32>
    ```
    After:
    ```mlir
    %r = graph.relu %c : tensor<32x32x26x26xf32>
    ...
    %r2 = graph.relu %c : tensor<32x32x26x26xf32>
    %dr = graph.relu_backward %g, %r2 : tensor<32x32x26x26xf32>
    ```
  }];
  let options = [
    Option<"budget", "budget", "int64_t", "0", "bytes the plan may use (0: do nothing)">,
    Option<"alignment", "alignment", "int64_t", "256", "alignment of every offset">,
    Option<"solver", "solver", "std::string", "\"heuristic\"",
           "heuristic | exact (0/1 program solved with CBC, fit/RematSolver.h) | auto (exact "
           "up to exact-limit candidates)">,
    Option<"timeLimit", "time-limit", "double", "60", "seconds the exact solver may take">,
    Option<"exactLimit", "exact-limit", "unsigned", "400",
           "solver=auto: most candidates for which the exact solver runs">,
    Option<"segments", "segments", "bool", "true",
           "also try segment recomputation (whole blocks recomputed from their inputs)">,
    Option<"splitShapes", "split-shapes", "bool", "true",
           "when nothing else fits, a last group of sequences that may also recompute a value "
           "twice, once for the backward readers before the widest gap between them and once "
           "for those after it">,
    Option<"splitFilterGradients", "split-filter-gradients", "bool", "true",
           "split each filter gradient that reads a channel concatenation over its parts, "
           "when nothing else fits or when that fits the unsplit plan's arena with fewer "
           "FLOPs (the sums are then added in another order: not bit-identical)">,
    Option<"cheapSplits", "cheap-splits", "bool", "true",
           "a recomputed value's backward readers after the widest gap between them get a "
           "recomputation of their own when cheap ops make it from values live there anyway "
           "(instead of holding the one recomputation across the gap)">,
    Option<"seedLevels", "seed-levels", "unsigned", "12",
           "up to exact-limit candidates (and a million candidates times ops), the heuristic "
           "also runs sequences that start from the exact program's choice at this many "
           "budget-independent levels (0: none)">,
    Option<"questionOnly", "question-only", "bool", "false",
           "the compile only asks whether the step fits (batch and micro-batch searches): "
           "no local search, each group of sequences stops at its first one that fits, the "
           "exact seeds run only when nothing else fits, and a fitting concatenation split "
           "is kept without searching the unsplit step again; the answer, and the arena of a "
           "miss, are the same, the recomputations kept may cost more">,
    Option<"localSearch", "local-search", "bool", "true",
           "after the search, drop the recomputations the fitting plan no longer needs and "
           "swap the dearest ones for cheaper ones">,
    Option<"instantBound", "instant-bound", "bool", "true",
           "also compute the instant lower bound on the extra FLOPs of any recomputation "
           "that fits (fit/BoundaryBound.h)">,
  ];
}

def PlanMemory : Pass<"graphc-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Assign every tensor of the training step a static offset in one arena";
  let description = [{
    Computes liveness over the op order of the function, groups values that share storage
    (a reshape is a view of its operand; an optimizer update writes its parameter and state in
    place; an elementwise op whose operand dies at that op writes over it), adds the scratch workspace each kernel needs, and runs the MLIR-free planner core
    (planner/Planner.h): several best-fit orders, then a MiniMalloc-style search when they miss the
    lower bound. The offsets land as attributes that the emitters read.

    Before:
    ```mlir
    %y = graph.relu %x : tensor<4x4xf32>
    ```
    After:
    ```mlir
    func.func @train_step(%x: tensor<4x4xf32> {graph.offset = 0 : i64, ...}) attributes
        {graph.arena_bytes = 512 : i64, graph.lower_bound_bytes = 512 : i64, graph.alignment = 256 : i64}
    %y = graph.relu %x {graph.offsets = array<i64: 256>} : tensor<4x4xf32>
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "256", "byte alignment of every offset">,
    Option<"noReuse", "no-reuse", "bool", "false",
           "give every buffer its own bytes (for testing the planner against itself)">,
    Option<"searchWork", "search-work", "uint64_t", "500000000",
           "search nodes times buffers that the offset search may spend when the heuristics "
           "miss the lower bound (the node limit is this over the number of buffers: about "
           "2 s on one core of the CI machine); a node limit, so that the plan is the same on "
           "any machine">,
    Option<"timeLimit", "time-limit", "double", "20.0",
           "seconds after which the offset search stops regardless (a guard: then the plan "
           "depends on the machine's speed)">,
    Option<"inPlace", "in-place", "bool", "true",
           "let an elementwise op write its result over an operand that dies at that op">,
  ];
}

def SplitChannelReductions : Pass<"graphc-split-channel-reductions", "mlir::func::FuncOp"> {
  let summary = "Spread batch norms' and bias gradients' per-channel sums over several CUDA blocks";
  let description = [{
    Runs on the CUDA target before planning. graphc's batch-norm kernels sum each channel in one
    block of 256 threads, so a layer with few channels and many pixels (ResNet's first batch
    norm: 64 channels of 64 x 112 x 112 values at batch 64) runs on 64 blocks, on half of an
    H100's 132 multiprocessors, one block each; so does a convolution's bias gradient (the
    users' 256x256 CNN: 32 channels of 128 x 254 x 254 values). This pass gives a training
    batch norm, every batch-norm backward and every bias gradient `graph.block_splits = S`:
    its kernels then run S blocks per channel, each over n / S of the rows before the channel
    axis (the batch's samples), and add the S partial sums in a fixed order (deterministic). S
    is the largest divisor of n at most `blocks` / channels, and small enough that each block
    sums at least `min-elements` values. The partial sums (two doubles per block for a batch
    norm, one for a bias gradient) are the op's workspace, planned like any other
    (Liveness.cpp, kernelWorkspaceBytes), live at the op's step only. The values computed are
    the same up to the order of double additions. O(ops).

    Before:
    ```mlir
    %y, %rm, %rv, %m, %s = graph.batch_norm %x, %g, %b, %m0, %v0 {training, ...}
        : (tensor<64x64x112x112xf32>, ...) -> ...
    ```
    After (`blocks` = 528):
    ```mlir
    %y, %rm, %rv, %m, %s = graph.batch_norm %x, %g, %b, %m0, %v0
        {training, graph.block_splits = 8 : i64, ...} : ...
    ```
  }];
  let options = [
    Option<"blocks", "blocks", "int64_t", "528",
           "the blocks a kernel should run to fill the device (4 per multiprocessor of an "
           "H100)">,
    Option<"minElements", "min-elements", "int64_t", "1024",
           "the fewest values one block sums">,
  ];
}

def GrowWorkspaces : Pass<"graphc-grow-workspaces", "mlir::func::FuncOp"> {
  let summary = "Give each convolution's cuDNN workspace the arena bytes free at its step";
  let description = [{
    Runs after graphc-plan-memory on the CUDA target. A convolution's planned workspace is one
    im2col tile, what graphc's own kernels need; cuDNN can use any workspace, and its faster
    algorithms need more. While a convolution runs, the bytes of the arena that no live buffer
    holds are free, so its workspace moves into the largest free gap at its step and takes
    the largest power of two within that gap and `max-bytes` (plan::growIntoFreeBytes). The
    arena does not grow and no other offset moves, so the plan's promise is unchanged; the
    runtime then picks cuDNN's algorithms within the larger limit. Convolutions at the peak
    keep what they had. O(convolutions x buffers log buffers).

    Before (arena 1 MiB, 64 KiB free at the convolution's step):
    ```mlir
    %y = graph.conv2d %x, %w {graph.offsets = array<i64: 4096>,
                              graph.workspace_offset = 8192 : i64} : ...
    ```
    After:
    ```mlir
    %y = graph.conv2d %x, %w {graph.offsets = array<i64: 4096>, graph.workspace_bytes = 65536 : i64,
                              graph.workspace_offset = 12288 : i64} : ...
    ```
    The step gets `graph.workspaces_grown = array<i64: count, bytes before, bytes after>`.
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", "1073741824",
           "the most bytes one workspace grows to">,
  ];
}

def OffloadOptimizerState : Pass<"graphc-offload-optimizer-state", "mlir::func::FuncOp"> {
  let summary = "Keep the optimizer state in host memory, outside the device arena";
  let description = [{
    The last cure for a budget that the parameters, gradients and optimizer state alone
    exceed (Adam's two moments are twice the parameters): as in ZeRO-Offload (Ren et al. 2021),
    the optimizer state moves to host memory. Every `optimizer_state` argument that only
    optimizer updates read (momentum's velocity, Adam's m and v) gets
    `graph.memory_space = "host"`; the planner then lays these buffers out in a second, host
    arena after the device arena (`graph.host_arena_bytes`), which the budget does not count.
    The update kernels read and write the state there: on the CPU target this is the same
    memory (the split is accounting, as 16-bit storage is emulated there); a device target reads
    it over the host link, which the cost model charges (each state byte read and written once
    per step).
    The values computed are unchanged. Loss-scale counters stay in the arena. O(arguments + uses).

    Before:
    ```mlir
    func.func @train_step(%w: tensor<4xf32> {graph.kind = "parameter"},
                          %m: tensor<4xf32> {graph.kind = "optimizer_state"}, ...)
    %w1, %m1, %v1 = graph.adam_update %w, %g, %m, %v, %step {...} : tensor<4xf32>, tensor<f32>
    ```
    After:
    ```mlir
    func.func @train_step(%w: tensor<4xf32> {graph.kind = "parameter"},
                          %m: tensor<4xf32> {graph.kind = "optimizer_state",
                                             graph.memory_space = "host"}, ...)
        attributes {graph.offloaded_state_bytes = 32 : i64}
    ```
  }];
}

def VerifyPlan : Pass<"graphc-verify-plan", "mlir::func::FuncOp"> {
  let summary = "Independently check the offsets of a planned training step";
  let description = [{
    Re-derives every value's live range from the IR with its own simple walk (not the
    planner's liveness code), applies the same storage-sharing rules, and checks that no two
    values live at the same op share a byte unless they share storage, and that every byte is
    inside `graph.arena_bytes`, or, for the optimizer state kept in host memory
    (`graph.memory_space = "host"`), inside the host arena that follows it
    (`graph.host_arena_bytes`), and read by optimizer updates only. Runs on every compile; a
    violation is an error naming both values.
  }];
}

def TestPrintLiveness : Pass<"graphc-test-print-liveness", "mlir::func::FuncOp"> {
  let summary = "Print the live range and byte size of every buffer (test only)";
  let description = [{
    Prints one line per buffer: `name kind bytes first..last`, in definition order, for lit.
  }];
}

#endif // GRAPHC_PASSES
