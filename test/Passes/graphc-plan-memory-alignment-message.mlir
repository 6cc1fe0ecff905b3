// RUN: not graphc-opt %s --graphc-plan-memory=alignment=48 2>&1 | FileCheck %s --check-prefix=A48
// RUN: not graphc-opt %s --graphc-plan-memory=alignment=100 2>&1 | FileCheck %s --check-prefix=A100
// RUN: not graphc-opt %s --graphc-plan-memory=alignment=0 2>&1 | FileCheck %s --check-prefix=A0
// RUN: not graphc-opt %s --graphc-plan-memory=alignment=-256 2>&1 | FileCheck %s --check-prefix=ANEG

// The refused alignment is printed as a number. Today PlanMemory.cpp streams the int64_t pass
// option into the diagnostic as a char: 48 prints "0", 100 prints "d", 0 prints a NUL byte.
// A48: error: alignment must be a positive power of two, got 48{{$}}
// A100: error: alignment must be a positive power of two, got 100{{$}}
// A0: error: alignment must be a positive power of two, got 0{{$}}
// ANEG: error: alignment must be a positive power of two, got -256{{$}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
