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
#pragma once

#include <math.h>

#include <cstdint>

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

/// kernel<<<grid, block>>>(args...) on the host: every (block, thread) in row-major loops.
template <typename... Params, typename... Args>
void hostLaunch(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
  gridDim = grid;
  blockDim = block;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = dim3(bx, by, bz);
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx) {
              threadIdx = dim3(tx, ty, tz);
              kernel(args...);
            }
      }
}

/// A block kernel (GRAPHC_BLOCK_THREADS phases) on the host: one call per block, threadIdx 0.
template <typename... Params, typename... Args>
void hostLaunchBlocks(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
  gridDim = grid;
  blockDim = block;
  threadIdx = dim3(0, 0, 0);
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = dim3(bx, by, bz);
        kernel(args...);
      }
}

} // namespace graphc::rt::cuda
