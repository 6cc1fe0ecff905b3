// RUN: graphc-opt %s --split-input-file --graphc-offload-optimizer-state | FileCheck %s
// RUN: graphc-opt %s --split-input-file --graphc-offload-optimizer-state --graphc-plan-memory --graphc-verify-plan | FileCheck %s --check-prefix=PLAN

// Adam's m and v, read only by the update, move to host memory; the parameter stays. The
// planner lays them out after the device arena, which holds w, g and step (3 x 256 bytes):
// m at +768, v at +1024 (64 bytes each, align 256), a host arena of 512 bytes.
// CHECK-LABEL: func.func @adam
// CHECK-SAME: %arg0: tensor<16xf32> {graph.kind = "parameter", graph.name = "w"}
// CHECK-SAME: %arg2: tensor<16xf32> {graph.kind = "optimizer_state", graph.memory_space = "host", graph.name = "w.m"}
// CHECK-SAME: %arg3: tensor<16xf32> {graph.kind = "optimizer_state", graph.memory_space = "host", graph.name = "w.v"}
// CHECK-SAME: graph.offloaded_state_bytes = 128 : i64
// PLAN-LABEL: func.func @adam
// PLAN-SAME: %arg2: tensor<16xf32> {graph.kind = "optimizer_state", graph.memory_space = "host", graph.name = "w.m", graph.offset = 768 : i64}
// PLAN-SAME: %arg3: tensor<16xf32> {graph.kind = "optimizer_state", graph.memory_space = "host", graph.name = "w.v", graph.offset = 1024 : i64}
// PLAN-SAME: graph.arena_bytes = 768 : i64
// PLAN-SAME: graph.host_arena_bytes = 512 : i64
func.func @adam(%w: tensor<16xf32> {graph.kind = "parameter", graph.name = "w"},
                %g: tensor<16xf32> {graph.kind = "input", graph.name = "g"},
                %m: tensor<16xf32> {graph.kind = "optimizer_state", graph.name = "w.m"},
                %v: tensor<16xf32> {graph.kind = "optimizer_state", graph.name = "w.v"},
                %s: tensor<f32> {graph.kind = "input", graph.name = "step"})
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %w1, %m1, %v1 = graph.adam_update %w, %g, %m, %v, %s {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-08 : f32, lr = 1.0e-03 : f32} : tensor<16xf32>, tensor<f32>
  return %w1, %m1, %v1 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// State that another op reads stays in the arena: here the velocity also feeds a relu (as a
// loss-scale counter feeds graph.update_loss_scale).
// CHECK-LABEL: func.func @read_elsewhere
// CHECK-NOT: graph.memory_space
// CHECK: graph.offloaded_state_bytes = 0 : i64
func.func @read_elsewhere(%w: tensor<16xf32> {graph.kind = "parameter", graph.name = "w"},
                          %g: tensor<16xf32> {graph.kind = "input", graph.name = "g"},
                          %u: tensor<16xf32> {graph.kind = "optimizer_state", graph.name = "w.velocity"})
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %r = graph.relu %u : tensor<16xf32>
  %w1, %u1 = graph.momentum_update %w, %g, %u {lr = 1.0e-02 : f32, momentum = 0.9 : f32} : tensor<16xf32>
  return %w1, %u1, %r : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
