// Splits a CPU kernel's independent work over the machine's cores. The training step calls its
// kernels one after the other from one thread; each kernel may hand disjoint ranges of its
// outputs (elements, image planes, channels, rows) to parallelFor, which runs them on a small
// pool of worker threads plus the calling thread and returns when all are done. A range's body
// computes its outputs exactly as the sequential loop would, so results are bit-identical for
// any thread count and any split (test/runtime/threads.test checks this end to end).
// GEMMs go through it too, as blocks of C that depend on the shape alone (kernels.h,
// gemmBlocks), each one single-threaded OpenBLAS call.
#pragma once

#include <cstdint>
#include <type_traits>

namespace graphc::rt {

/// The threads a kernel may use, the calling thread included: GRAPHC_NUM_THREADS when set to a
/// positive integer, else the CPUs this process may run on (its affinity mask) divided among
/// the MPI ranks that share this machine (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS or
/// SLURM_NTASKS_PER_NODE), at least 1. Read once, at the first call.
int kernelThreads();

/// Starts the worker threads now rather than at the first parallel kernel, so that the
/// training loop's first step allocates nothing (the binary calls it before step 1).
void startKernelThreads();

/// Calls body(context, begin, end) on disjoint ranges covering [0, n), in parallel, each range
/// at least `grain` items long except when n itself is shorter; returns when every range has
/// run. With one thread, or n < 2 * grain, it is one call on the calling thread.
void parallelRanges(int64_t n, int64_t grain, void (*body)(void *, int64_t, int64_t),
                    void *context);

/// parallelRanges with a callable fn(begin, end).
template <typename Fn> void parallelFor(int64_t n, int64_t grain, Fn &&fn) {
  using Callable = std::remove_reference_t<Fn>;
  parallelRanges(
      n, grain,
      [](void *context, int64_t begin, int64_t end) {
        (*static_cast<Callable *>(context))(begin, end);
      },
      const_cast<void *>(static_cast<const void *>(&fn)));
}

/// The fewest elements worth a thread's wake-up (a few microseconds) in a streaming loop:
/// 32768, or GRAPHC_KERNEL_GRAIN when set to a positive integer (tests set 1, so that even a
/// tiny model's kernels split over every thread). Read once, at the first call.
int64_t elementGrain();

/// The grain, in items, of a split over rows or planes of `itemSize` elements each.
inline int64_t grainFor(int64_t itemSize) {
  const int64_t grain = elementGrain();
  return itemSize >= grain ? 1 : grain / (itemSize > 0 ? itemSize : 1);
}

} // namespace graphc::rt
