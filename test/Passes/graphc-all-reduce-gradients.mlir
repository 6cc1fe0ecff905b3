// RUN: graphc-opt %s --split-input-file --graphc-all-reduce-gradients="ranks=2" | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-all-reduce-gradients="ranks=4 bucket-bytes=64" | FileCheck %s --check-prefix=SMALL
// RUN: graphc-opt %s --split-input-file --graphc-all-reduce-gradients="ranks=0" | FileCheck %s --check-prefix=NONE
// RUN: graphc-opt %s --split-input-file --graphc-all-reduce-gradients="ranks=1" | FileCheck %s --check-prefix=ONE

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
