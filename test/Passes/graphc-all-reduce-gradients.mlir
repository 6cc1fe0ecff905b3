// RUN: graphc-opt %s --split-input-file --graphc-all-reduce-gradients="ranks=2" | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-all-reduce-gradients="ranks=4 bucket-bytes=64" | FileCheck %s --check-prefix=SMALL
// RUN: graphc-opt %s --split-input-file --graphc-all-reduce-gradients="ranks=0" | FileCheck %s --check-prefix=NONE
// RUN: graphc-opt %s --split-input-file --graphc-all-reduce-gradients="ranks=3 shard-optimizer-state=true" | FileCheck %s --check-prefix=ZERO
// RUN: graphc-opt %s --split-input-file --graphc-all-reduce-gradients="ranks=1" | FileCheck %s --check-prefix=ONE
// RUN: graphc-opt %s --split-input-file --graphc-all-reduce-gradients="ranks=2 gradient-as-bucket-view=true" --graphc-plan-memory --graphc-verify-plan | FileCheck %s --check-prefix=VIEW
// RUN: graphc-opt %s --split-input-file --graphc-all-reduce-gradients="ranks=3 shard-optimizer-state=true gradient-as-bucket-view=true" --graphc-plan-memory --graphc-verify-plan | FileCheck %s --check-prefix=ZEROVIEW

// Two gradients share one bucket: flattened, concatenated, averaged in place, sliced back, and
// the update that ran before the second gradient was complete now follows the all-reduce.
// CHECK-LABEL: func.func @two_params
// CHECK-SAME: graph.data_parallel_ranks = 2 : i64, graph.gradient_buckets = 1 : i64
// CHECK: %[[GW:.*]] = graph.relu %arg2 : tensor<4x4xf32>
// CHECK-NEXT: %[[GB:.*]] = graph.tanh %arg3 : tensor<4xf32>
// CHECK-NEXT: %[[FLAT:.*]] = graph.reshape %[[GW]] : (tensor<4x4xf32>) -> tensor<16xf32>
// CHECK-NEXT: %[[BUCKET:.*]] = graph.concat %[[FLAT]], %[[GB]] {axis = 0 : i64} : (tensor<16xf32>, tensor<4xf32>) -> tensor<20xf32>
// CHECK-NEXT: %[[AVG:.*]] = graph.all_reduce %[[BUCKET]] {bucket = 0 : i64, ranks = 2 : i64} : tensor<20xf32>
// CHECK-NEXT: %[[SW:.*]] = graph.slice %[[AVG]] {axis = 0 : i64, offset = 0 : i64} : (tensor<20xf32>) -> tensor<16xf32>
// CHECK-NEXT: %[[W2:.*]] = graph.reshape %[[SW]] : (tensor<16xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[B2:.*]] = graph.slice %[[AVG]] {axis = 0 : i64, offset = 16 : i64} : (tensor<20xf32>) -> tensor<4xf32>
// CHECK-NEXT: graph.sgd_update %arg0, %[[W2]]
// CHECK-NEXT: graph.sgd_update %arg1, %[[B2]]
// With 64-byte buckets the 64-byte weight gradient and the 16-byte bias gradient go apart,
// each reduced on its own (a flat gradient needs no concat or slice).
// SMALL-LABEL: func.func @two_params
// SMALL-SAME: graph.data_parallel_ranks = 4 : i64, graph.gradient_buckets = 2 : i64
// SMALL: graph.all_reduce %{{.*}} {bucket = 0 : i64, ranks = 4 : i64} : tensor<16xf32>
// SMALL: graph.all_reduce %{{.*}} {bucket = 1 : i64, ranks = 4 : i64} : tensor<4xf32>
// SMALL-NOT: graph.concat
// No data parallelism: nothing changes.
// NONE-LABEL: func.func @two_params
// NONE-NOT: graph.all_reduce
// gradient-as-bucket-view: the weight gradient is followed by zeros up to the next 256 bytes,
// the concat and slices are marked graph.bucket_view, and the planner puts each gradient inside
// the bucket at its offset (relu at +0, the gap at +64, tanh at +256), where the slices read
// the averages: nothing is copied.
// VIEW-LABEL: func.func @two_params
// VIEW: graph.relu %arg2 {graph.offsets = array<i64: [[#B:]]>}
// VIEW-NEXT: graph.tanh %arg3 {graph.offsets = array<i64: [[#B+256]]>}
// VIEW-NEXT: graph.reshape %{{.*}} {graph.offsets = array<i64: [[#B]]>}
// VIEW-NEXT: graph.fill {graph.offsets = array<i64: [[#B+64]]>, value = 0.000000e+00 : f32} : tensor<48xf32>
// VIEW-NEXT: graph.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 0 : i64, graph.bucket_view, graph.offsets = array<i64: [[#B]]>} : (tensor<16xf32>, tensor<48xf32>, tensor<4xf32>) -> tensor<68xf32>
// VIEW-NEXT: graph.all_reduce %{{.*}} {bucket = 0 : i64, graph.offsets = array<i64: [[#B]]>
// VIEW-NEXT: graph.slice %{{.*}} {axis = 0 : i64, graph.bucket_view, graph.offsets = array<i64: [[#B]]>, offset = 0 : i64}
// VIEW-NEXT: graph.reshape
// VIEW-NEXT: graph.slice %{{.*}} {axis = 0 : i64, graph.bucket_view, graph.offsets = array<i64: [[#B+256]]>, offset = 64 : i64}
// One rank keeps the collectives (the same code path, over a world of one).
// ONE-LABEL: func.func @two_params
// ONE: graph.all_reduce %{{.*}} {bucket = 0 : i64, ranks = 1 : i64}
func.func @two_params(%w: tensor<4x4xf32>, %b: tensor<4xf32>, %x: tensor<4x4xf32>, %y: tensor<4xf32>)
    -> (tensor<4x4xf32>, tensor<4xf32>) {
  %gw = graph.relu %x : tensor<4x4xf32>
  %w1 = graph.sgd_update %w, %gw {lr = 0.1 : f32} : tensor<4x4xf32>
  %gb = graph.tanh %y : tensor<4xf32>
  %b1 = graph.sgd_update %b, %gb {lr = 0.1 : f32} : tensor<4xf32>
  return %w1, %b1 : tensor<4x4xf32>, tensor<4xf32>
}

// -----

// The fp16 overflow check reads the averaged gradient, so every rank skips the same steps.
// CHECK-LABEL: func.func @overflow_check
// CHECK: %[[AVG:.*]] = graph.all_reduce
// CHECK-NEXT: %[[OK:.*]] = graph.all_finite %[[AVG]]
// CHECK-NEXT: graph.sgd_update %arg0, %[[AVG]] if %[[OK]]
func.func @overflow_check(%w: tensor<8xf32>, %x: tensor<8xf32>) -> tensor<8xf32> {
  %g = graph.relu %x : tensor<8xf32>
  %ok = graph.all_finite %g : tensor<8xf32>
  %w1 = graph.sgd_update %w, %g if %ok {lr = 0.1 : f32} : tensor<8xf32>
  return %w1 : tensor<8xf32>
}

// -----

// As graphc-build-train-step emits it, the check reads the scaled local gradient and the update
// its unscaled copy: the check must read the averaged bucket instead (a rank that decided on
// its own gradients alone would apply another rank's inf), so it moves after the all-reduce
// and the update after it.
// CHECK-LABEL: func.func @overflow_check_scaled
// CHECK: %[[UNSCALED:.*]] = graph.loss_scale %[[G:.*]], %arg2 {inverse}
// CHECK-NEXT: %[[AVG:.*]] = graph.all_reduce %[[UNSCALED]]
// CHECK-NEXT: %[[OK:.*]] = graph.all_finite %[[AVG]] : tensor<8xf32>
// CHECK-NEXT: graph.momentum_update %arg0, %[[AVG]], %arg3 if %[[OK]]
// ZeRO: each rank holds one shard of the average, so each sharded bucket adds an overflow
// probe (its shard times 0, summed: 0, or NaN when an element is inf or NaN), and one more
// all-reduce (bucket 1) averages the probes over the ranks for the check. The shard is copied
// out of the bucket first: the update waits for the check, and the copy lets the bucket die.
// ZERO-LABEL: func.func @overflow_check_scaled
// ZERO: %[[SHARD:.*]] = graph.reduce_scatter %{{.*}} {bucket = 0 : i64, ranks = 3 : i64} : (tensor<9xf32>) -> tensor<3xf32>
// ZERO-NEXT: %[[COPY:.*]] = graph.slice %[[SHARD]] {axis = 0 : i64, offset = 0 : i64} : (tensor<3xf32>) -> tensor<3xf32>
// ZERO-NEXT: %[[ZEROED:.*]] = graph.scale %[[COPY]] {factor = 0.000000e+00 : f32} : tensor<3xf32>
// ZERO-NEXT: %[[COLUMN:.*]] = graph.reshape %[[ZEROED]] : (tensor<3xf32>) -> tensor<3x1xf32>
// ZERO-NEXT: %[[PROBE:.*]] = graph.bias_grad %[[COLUMN]] {axis = 1 : i64} : (tensor<3x1xf32>) -> tensor<1xf32>
// ZERO: %[[PROBES:.*]] = graph.all_reduce %[[PROBE]] {bucket = 1 : i64, ranks = 3 : i64} : tensor<1xf32>
// ZERO-NEXT: %[[OK:.*]] = graph.all_finite %[[PROBES]] : tensor<1xf32>
// ZERO: graph.momentum_update %{{.*}}, %[[COPY]], %{{.*}} if %[[OK]]
func.func @overflow_check_scaled(%w: tensor<8xf32> {graph.kind = "parameter", graph.name = "w"},
                                 %x: tensor<8xf32> {graph.kind = "input", graph.name = "x", graph.role = "data"},
                                 %halvings: tensor<f32> {graph.kind = "input", graph.name = "halvings"},
                                 %vel: tensor<8xf32> {graph.kind = "optimizer_state", graph.name = "w.velocity"})
    -> (tensor<8xf32> {graph.name = "w", graph.tied_to_arg = 0 : i64},
        tensor<8xf32> {graph.name = "w.velocity", graph.tied_to_arg = 3 : i64}) {
  %g = graph.relu %x : tensor<8xf32>
  %ok = graph.all_finite %g : tensor<8xf32>
  %u = graph.loss_scale %g, %halvings {inverse} : tensor<8xf32>
  %w1, %v1 = graph.momentum_update %w, %u, %vel if %ok {lr = 0.1 : f32, momentum = 0.9 : f32} : tensor<8xf32>
  return %w1, %v1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// ZeRO: with shard-optimizer-state the bucket (16 + 4 = 20 elements, padded to 21 for 3 ranks)
// is reduce-scattered; the Adam update runs on this rank's 7-element shard of the parameters
// with one m and one v shard per bucket, which replace the per-parameter state arguments and
// results; the updated shards are gathered back over the parameters in place.
// ZERO-LABEL: func.func @adam_shards
// ZERO-SAME: (%[[W:[a-z0-9]+]]: tensor<4x4xf32> {graph.kind = "parameter", graph.name = "w"}, %[[B:[a-z0-9]+]]: tensor<4xf32> {graph.kind = "parameter", graph.name = "b"},
// ZERO-SAME: %[[STEP:[a-z0-9]+]]: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"}, %[[M:[a-z0-9]+]]: tensor<7xf32> {graph.kind = "optimizer_state", graph.name = "zero.gradient_bucket0.m"}, %[[V:[a-z0-9]+]]: tensor<7xf32> {graph.kind = "optimizer_state", graph.name = "zero.gradient_bucket0.v"})
// ZERO-SAME: -> (tensor<f32>, tensor<4x4xf32> {graph.name = "w", graph.tied_to_arg = 0 : i64}, tensor<4xf32> {graph.name = "b", graph.tied_to_arg = 1 : i64}, tensor<7xf32> {graph.name = "zero.gradient_bucket0.m", graph.tied_to_arg = 4 : i64}, tensor<7xf32> {graph.name = "zero.gradient_bucket0.v", graph.tied_to_arg = 5 : i64})
// ZERO-SAME: graph.sharded_buckets = 1 : i64
// ZERO: %[[PAD:.*]] = graph.fill {value = 0.000000e+00 : f32} : tensor<1xf32>
// ZERO-NEXT: %[[BUCKET:.*]] = graph.concat %{{.*}}, %{{.*}}, %[[PAD]] {axis = 0 : i64} : (tensor<16xf32>, tensor<4xf32>, tensor<1xf32>) -> tensor<21xf32>
// ZERO-NEXT: %[[G:.*]] = graph.reduce_scatter %[[BUCKET]] {bucket = 0 : i64, ranks = 3 : i64} : (tensor<21xf32>) -> tensor<7xf32>
// ZERO-NEXT: %[[P:.*]] = graph.rank_shard %[[W]], %[[B]] {ranks = 3 : i64} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<7xf32>
// ZERO-NEXT: %[[NP:.*]], %[[NM:.*]], %[[NV:.*]] = graph.adam_update %[[P]], %[[G]], %[[M]], %[[V]], %[[STEP]] {{.*}} : tensor<7xf32>, tensor<f32>
// ZERO-NEXT: %[[NEW:.*]]:2 = graph.all_gather_into %[[NP]], %[[W]], %[[B]] {bucket = 0 : i64, ranks = 3 : i64}
// ZERO-NOT: graph.adam_update
// ZERO: return %{{.*}}, %[[NEW]]#0, %[[NEW]]#1, %[[NM]], %[[NV]]
// ZeRO with gradient-as-bucket-view: the weight gradient (16 elements) is followed by 48 zeros
// up to 256 bytes, the bias gradient starts at element 64, and one zero pads 68 to 69 (3 x 23);
// the gradients are planned inside the bucket (the concat's operands at its offsets, so it
// moves nothing), and the parameters' shard and the gather follow the same layout (`starts`).
// ZEROVIEW-LABEL: func.func @adam_shards
// ZEROVIEW-SAME: tensor<23xf32> {graph.kind = "optimizer_state", graph.name = "zero.gradient_bucket0.m"
// ZEROVIEW: %[[GW:.*]] = graph.relu %{{.*}} {graph.offsets = array<i64: [[#W:]]>} : tensor<4x4xf32>
// ZEROVIEW: %[[GAP:.*]] = graph.fill {graph.offsets = array<i64: [[#W+64]]>, value = 0.000000e+00 : f32} : tensor<48xf32>
// ZEROVIEW: %[[PAD:.*]] = graph.fill {graph.offsets = array<i64: [[#W+272]]>, value = 0.000000e+00 : f32} : tensor<1xf32>
// ZEROVIEW-NEXT: graph.concat %{{.*}}, %[[GAP]], %{{.*}}, %[[PAD]] {axis = 0 : i64, graph.bucket_view, graph.offsets = array<i64: [[#W]]>} : (tensor<16xf32>, tensor<48xf32>, tensor<4xf32>, tensor<1xf32>) -> tensor<69xf32>
// ZEROVIEW-NEXT: graph.reduce_scatter {{.*}} -> tensor<23xf32>
// ZEROVIEW-NEXT: graph.rank_shard {{.*}}starts = array<i64: 0, 64>} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<23xf32>
// ZEROVIEW: graph.all_gather_into {{.*}}starts = array<i64: 0, 64>}
// Without sharding the per-parameter state stays (the all-reduce path).
// CHECK-LABEL: func.func @adam_shards
// CHECK: graph.all_reduce
// CHECK-COUNT-2: graph.adam_update
func.func @adam_shards(%w: tensor<4x4xf32> {graph.kind = "parameter", graph.name = "w"},
                       %b: tensor<4xf32> {graph.kind = "parameter", graph.name = "b"},
                       %mw: tensor<4x4xf32> {graph.kind = "optimizer_state", graph.name = "w.m"},
                       %mb: tensor<4xf32> {graph.kind = "optimizer_state", graph.name = "b.m"},
                       %vw: tensor<4x4xf32> {graph.kind = "optimizer_state", graph.name = "w.v"},
                       %vb: tensor<4xf32> {graph.kind = "optimizer_state", graph.name = "b.v"},
                       %x: tensor<4x4xf32> {graph.kind = "input", graph.name = "x", graph.role = "data"},
                       %step: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"})
    -> (tensor<f32>, tensor<4x4xf32> {graph.name = "w", graph.tied_to_arg = 0 : i64},
        tensor<4xf32> {graph.name = "b", graph.tied_to_arg = 1 : i64},
        tensor<4x4xf32> {graph.name = "w.m", graph.tied_to_arg = 2 : i64},
        tensor<4xf32> {graph.name = "b.m", graph.tied_to_arg = 3 : i64},
        tensor<4x4xf32> {graph.name = "w.v", graph.tied_to_arg = 4 : i64},
        tensor<4xf32> {graph.name = "b.v", graph.tied_to_arg = 5 : i64}) {
  %gw = graph.relu %x : tensor<4x4xf32>
  %w1, %mw1, %vw1 = graph.adam_update %w, %gw, %mw, %vw, %step {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, lr = 0.1 : f32} : tensor<4x4xf32>, tensor<f32>
  %gb = graph.relu %x : tensor<4x4xf32>
  %gb1 = graph.reshape %gb : (tensor<4x4xf32>) -> tensor<16xf32>
  %gb2 = graph.slice %gb1 {axis = 0 : i64, offset = 0 : i64} : (tensor<16xf32>) -> tensor<4xf32>
  %b1, %mb1, %vb1 = graph.adam_update %b, %gb2, %mb, %vb, %step {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-8 : f32, lr = 0.1 : f32} : tensor<4xf32>, tensor<f32>
  return %step, %w1, %b1, %mw1, %mb1, %vw1, %vb1 : tensor<f32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>
}
