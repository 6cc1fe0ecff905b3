// RUN: graphc-opt %s --graphc-build-train-step='micro-batches=2 optimizer=sgd loss=mse' | FileCheck %s

// Two micro-batches of a 4-row forward function: the step takes 8 rows of data and labels;
// each micro-batch slices its rows, runs forward, loss and backward in turn (so its
// activations die before the next one starts), with the loss gradient scaled by 1/2; the
// weight gradients of both micro-batches are summed and the weight is updated once, after
// the last one; the returned loss is the mean of the two micro-batch losses. Each forward op
// is marked with its index in the forward function, the same in both micro-batches
// (graph.micro_batch_op: graphc-fit-budget recomputes the copies together).
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:.*]]: tensor<3x2xf32> {{.*}}, %[[X:.*]]: tensor<8x3xf32> {{.*}}, %[[Y:.*]]: tensor<8x2xf32>
// CHECK: %[[X0:.*]] = graph.batch_slice %[[X]] {count = 2 : i64, index = 0 : i64} : (tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[Y0:.*]] = graph.batch_slice %[[Y]] {count = 2 : i64, index = 0 : i64}
// CHECK: %[[P0:.*]] = graph.dense %[[X0]], %[[W]] {graph.micro_batch_op = 0 : i64}
// CHECK: %[[L0:.*]] = graph.loss mse %[[P0]], %[[Y0]]
// CHECK: %[[D0:.*]] = graph.loss_backward mse %[[P0]], %[[Y0]]
// CHECK: %[[S0:.*]] = graph.scale %[[D0]] {factor = 5.000000e-01 : f32}
// CHECK: %[[G0:.*]] = graph.matmul %[[X0]], %[[S0]] {transpose_lhs}
// CHECK-NOT: graph.sgd_update
// CHECK: %[[X1:.*]] = graph.batch_slice %[[X]] {count = 2 : i64, index = 1 : i64}
// CHECK: graph.dense %[[X1]], %[[W]] {graph.micro_batch_op = 0 : i64}
// CHECK: %[[L1:.*]] = graph.loss mse
// CHECK: %[[SUM:.*]] = graph.add %[[L0]], %[[L1]] : tensor<f32>
// CHECK: %[[G1:.*]] = graph.matmul %[[X1]]
// CHECK: %[[G:.*]] = graph.add %[[G0]], %[[G1]] : tensor<3x2xf32>
// CHECK: %[[NW:.*]] = graph.sgd_update %[[W]], %[[G]]
// CHECK: %[[LOSS:.*]] = graph.scale %[[SUM]] {factor = 5.000000e-01 : f32} : tensor<f32>
// CHECK: return %[[LOSS]], %[[NW]]
func.func @forward(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                   %w: tensor<3x2xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x2xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32> loc("fc")
  return %y : tensor<4x2xf32>
}
