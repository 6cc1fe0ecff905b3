// A thin shim that builds generated CUDA kernels as plain C++ for the host: the kernel qualifiers
// expand to nothing, blockIdx/threadIdx/blockDim/gridDim are thread-local variables, and a
// launch runs every block and every thread of the grid one after the other in loops.
//
// This is valid for graphc's elementwise kernels because none of them uses shared memory,
// __syncthreads, warp intrinsics or atomics: every thread computes its own outputs from inputs
// nobody writes during the kernel (grid-stride loops over elements, rows or channels). The host
// build is what the CPU-only CI runs to compare the generated kernels with runtime/kernels.cpp.
//
// Block kernels (reductions: bias gradients, batch norm) cooperate through block-shared arrays
// and barriers. They are written as phases, `GRAPHC_BLOCK_THREADS(t) { ... }`, each ending at a
// barrier, with state between phases only in GRAPHC_BLOCK_SHARED arrays (step.h). The shim calls
// such a kernel once per block (hostLaunchBlocks) and each phase loops over the block's threads,
// which is exactly the barrier semantics: every thread finishes a phase before any starts the
// next.
//
// A GPU runs a launch's blocks, and the threads between two barriers, in any order. With
// GRAPHC_HOST_SHIM_LAUNCH_ORDER=reverse the shim runs them last first: the blocks of every
// launch, the threads of every block and of every phase. A kernel whose result depends on that
// order, because one thread reads bytes another thread of the same launch writes (a data race
// on the GPU), then gives other bits than in the default order. test/cuda/host-launch-order.test
// trains each model both ways and requires identical bits: compute-sanitizer's racecheck, for
// the CPU-only CI (it sees the races whose written value differs from the old one).
#pragma once

#include <math.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace graphc::rt::cuda {

/// Whether GRAPHC_HOST_SHIM_LAUNCH_ORDER=reverse is set (read once; any other value than
/// "forward" or "reverse" stops the program, so that a misspelt order cannot pass for a check).
inline bool hostLaunchReversed() {
  static const bool reversed = [] {
    const char *order = std::getenv("GRAPHC_HOST_SHIM_LAUNCH_ORDER");
    if (!order || !*order || std::strcmp(order, "forward") == 0)
      return false;
    if (std::strcmp(order, "reverse") == 0)
      return true;
    std::fprintf(stderr, "error: GRAPHC_HOST_SHIM_LAUNCH_ORDER=%s: expected forward or reverse\n",
                 order);
    std::exit(2);
  }();
  return reversed;
}

/// The i-th of n blocks or threads to run: i, or n - 1 - i in reverse launch order.
inline unsigned hostLaunchIndex(unsigned i, unsigned n) {
  return hostLaunchReversed() ? n - 1 - i : i;
}

/// kernel<<<grid, block>>>(args...) on the host: every (block, thread) in row-major loops
/// (reversed with GRAPHC_HOST_SHIM_LAUNCH_ORDER=reverse).
template <typename... Params, typename... Args>
void hostLaunch(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
  gridDim = grid;
  blockDim = block;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = dim3(hostLaunchIndex(bx, grid.x), hostLaunchIndex(by, grid.y),
                        hostLaunchIndex(bz, grid.z));
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx) {
              threadIdx = dim3(hostLaunchIndex(tx, block.x), hostLaunchIndex(ty, block.y),
                               hostLaunchIndex(tz, block.z));
              kernel(args...);
            }
      }
}

/// A block kernel (GRAPHC_BLOCK_THREADS phases) on the host: one call per block, threadIdx 0
/// (blocks last first with GRAPHC_HOST_SHIM_LAUNCH_ORDER=reverse; the phases' threads follow
/// the same order, step.h).
template <typename... Params, typename... Args>
void hostLaunchBlocks(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
  gridDim = grid;
  blockDim = block;
  threadIdx = dim3(0, 0, 0);
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = dim3(hostLaunchIndex(bx, grid.x), hostLaunchIndex(by, grid.y),
                        hostLaunchIndex(bz, grid.z));
        kernel(args...);
      }
}

} // namespace graphc::rt::cuda
