// RUN: graphc-opt %S/../graphc/Inputs/deep-mlp.mlir --graphc-build-train-step=loss=mse --graphc-fit-budget=budget=200000 | FileCheck %s --check-prefix=ROOMY
// RUN: graphc-opt %S/../graphc/Inputs/deep-mlp.mlir --graphc-build-train-step=loss=mse --graphc-fit-budget=budget=130000 | FileCheck %s --check-prefix=ONE
// RUN: graphc-opt %S/../graphc/Inputs/deep-mlp.mlir --graphc-build-train-step=loss=mse --graphc-fit-budget=budget=100000 --graphc-plan-memory --graphc-verify-plan | FileCheck %s --check-prefix=TIGHT

// A budget above the peak (131328 bytes) changes nothing: no op is recomputed.
// ROOMY-LABEL: func.func @train_step
// ROOMY-SAME: graph.fit_peak_after = 131328 : i64, graph.fit_peak_before = 131328 : i64, graph.fit_remat_ops = 0 : i64
// ROOMY: graph.loss_backward
// ROOMY-NOT: graph.dense

// 130000 bytes: recomputing one dense + relu pair (the chain whose relu overwrote the dense
// output in place) right before its first backward reader frees 8 KiB, enough to fit; the
// extra work is about 9% of the step's FLOPs.
// ONE-LABEL: func.func @train_step
// ONE-SAME: graph.fit_extra_flops = 0.0894{{[0-9]*}} : f64, graph.fit_peak_after = 123136 : i64, graph.fit_peak_before = 131328 : i64, graph.fit_remat_ops = 1 : i64
// ONE: graph.loss_backward
// ONE: %[[H:.*]] = graph.dense
// ONE-NEXT: %[[R:.*]] = graph.relu %[[H]]
// ONE-NEXT: graph.matmul %[[R]], %{{.*}} {transpose_lhs}

// 100000 bytes cannot be met: two remats bring the peak to 114944 and the rest would not
// lower it; the pass reports how far it got (the driver then fails with exit code 3), and the
// recomputed step still plans and verifies.
// TIGHT-LABEL: func.func @train_step
// TIGHT-SAME: graph.fit_peak_after = 114944 : i64, graph.fit_peak_before = 131328 : i64, graph.fit_remat_ops = 2 : i64
