// RUN: graphc-opt %s --split-input-file --verify-diagnostics --graphc-verify-plan

// A negative graph.arena_bytes is not a plan: every buffer would end past it. Today
// VerifyPlan.cpp reads it with getInt() into the unsigned Plan::arenaBytes, so -1 becomes
// 2^64 - 1 and a buffer at 1 MiB in a 64-byte function is accepted. Any error that mentions
// the arena is the right behaviour.
// expected-error @+1 {{arena}}
func.func @negative_arena(%a: tensor<16xf32> {graph.kind = "input", graph.name = "a", graph.offset = 0 : i64}) -> tensor<16xf32>
    attributes {graph.arena_bytes = -1 : i64, graph.alignment = 64 : i64} {
  %b = graph.relu %a {graph.offsets = array<i64: 1048576>} : tensor<16xf32>
  return %b : tensor<16xf32>
}
