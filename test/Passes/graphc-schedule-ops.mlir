// RUN: graphc-opt %s --split-input-file --graphc-schedule-ops | FileCheck %s

// Two large activations made up front and consumed late: the scheduler runs each consumer
// right after its producer, so only one 16 KiB activation is live at a time. Before, step 1
// holds x, a, b (16384 each) and w1, w2 (256 each) = 49664; after, the peak is step 1 with
// x (still read by tanh), a, w1, w2 and c = 33536.
// CHECK-LABEL: func.func @two_branches
// CHECK-SAME: graph.schedule_bound_after = 33536 : i64, graph.schedule_bound_before = 49664 : i64
// CHECK: %[[A:.*]] = graph.relu
// CHECK-NEXT: graph.dense %[[A]]
// CHECK-NEXT: %[[B:.*]] = graph.tanh
// CHECK-NEXT: graph.dense %[[B]]
func.func @two_branches(%x: tensor<64x64xf32> {graph.kind = "input", graph.name = "x"},
                        %w1: tensor<64x1xf32> {graph.kind = "parameter", graph.name = "w1"},
                        %w2: tensor<64x1xf32> {graph.kind = "parameter", graph.name = "w2"})
    -> (tensor<64x1xf32>, tensor<64x1xf32>) {
  %a = graph.relu %x : tensor<64x64xf32>
  %b = graph.tanh %x : tensor<64x64xf32>
  %c = graph.dense %a, %w1 : (tensor<64x64xf32>, tensor<64x1xf32>) -> tensor<64x1xf32>
  %d = graph.dense %b, %w2 : (tensor<64x64xf32>, tensor<64x1xf32>) -> tensor<64x1xf32>
  return %c, %d : tensor<64x1xf32>, tensor<64x1xf32>
}

// -----

// An order that is already best is kept as it is (both bounds equal).
// CHECK-LABEL: func.func @chain
// CHECK-SAME: graph.schedule_bound_after = [[B:[0-9]+]] : i64, graph.schedule_bound_before = [[B]] : i64
// CHECK: graph.relu
// CHECK-NEXT: graph.tanh
func.func @chain(%x: tensor<8x8xf32> {graph.kind = "input", graph.name = "x"}) -> tensor<8x8xf32> {
  %a = graph.relu %x : tensor<8x8xf32>
  %b = graph.tanh %a : tensor<8x8xf32>
  return %b : tensor<8x8xf32>
}

// -----

// An in-place update waits for every other reader of the parameter it overwrites: the
// update alone would look cheaper (it allocates nothing, the matmul allocates), but the matmul
// that reads the old %w stays first.
// CHECK-LABEL: func.func @update_after_readers
// CHECK: graph.matmul %{{.*}}, %arg0
// CHECK: graph.sgd_update %arg0
func.func @update_after_readers(%w: tensor<4x4xf32> {graph.kind = "parameter", graph.name = "w"},
                                %g: tensor<4x4xf32> {graph.kind = "input", graph.name = "g"})
    -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %m = graph.matmul %g, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %u = graph.sgd_update %w, %g {lr = 0.5 : f32} : tensor<4x4xf32>
  return %u, %m : tensor<4x4xf32>, tensor<4x4xf32>
}
