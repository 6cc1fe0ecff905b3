// RUN: graphc-opt %s --split-input-file --graphc-insert-casts='precision=fp8' -verify-diagnostics

// An unknown precision names the accepted ones.
// expected-error @+1 {{graphc-insert-casts: unknown precision 'fp8'; expected bf16 or f16}}
func.func @unknown_precision(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  return %x : tensor<4x3xf32>
}
