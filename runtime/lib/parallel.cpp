// The worker pool behind parallelFor (parallel.h). One job at a time: the calling thread
// publishes it, takes ranges itself, and returns once every worker has finished with it, so no
// worker ever straddles two jobs. Workers spin briefly between jobs (the step's kernels follow
// each other within microseconds) and then sleep on a condition variable, so that a binary
// waiting for its next batch does not keep the cores busy. A hand-written pool rather
// than OpenMP: the runtime archive is built by clang and the training binary linked by the
// system's c++, whose OpenMP runtimes (libomp, libgomp) differ.
#include "graphc/runtime/parallel.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace graphc::rt {
namespace {

int positiveEnv(const char *name) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return 0;
  char *end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return (*end == '\0' && value > 0 && value < (1 << 30)) ? static_cast<int>(value) : 0;
}

int threadsFromEnvironment() {
  if (int threads = positiveEnv("GRAPHC_NUM_THREADS"))
    return std::min(threads, 1024);
  int cpus = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    cpus = CPU_COUNT(&set);
  if (cpus <= 0)
    cpus = static_cast<int>(std::thread::hardware_concurrency());
  int ranksHere = 0;
  for (const char *name :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if ((ranksHere = positiveEnv(name)))
      break;
  return std::max(1, cpus / std::max(1, ranksHere));
}

/// Set while this thread runs a range: a kernel called from inside one (none does today) runs
/// sequentially instead of waiting on the pool it is part of.
thread_local bool insideRange = false;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

class Pool {
public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i)
      workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread &t : workers_)
      t.join();
  }

  void run(int64_t n, int64_t ranges, void (*body)(void *, int64_t, int64_t), void *context) {
    // One job at a time, should two threads ever run kernels at once (the step never does).
    std::lock_guard<std::mutex> oneJob(jobMutex_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      n_ = n;
      ranges_ = ranges;
      body_ = body;
      context_ = context;
      next_.store(0, std::memory_order_relaxed);
      busyWorkers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    takeRanges();
    for (int spins = 0; busyWorkers_.load(std::memory_order_acquire) != 0; ++spins)
      if (spins < 4096)
        cpuRelax();
      else
        std::this_thread::yield();
  }

private:
  /// Runs ranges of the current job until none is left. Range i is [n i / R, n (i + 1) / R).
  void takeRanges() {
    for (;;) {
      const int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= ranges_)
        return;
      insideRange = true;
      body_(context_, n_ * i / ranges_, n_ * (i + 1) / ranges_);
      insideRange = false;
    }
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      // 50 us of spinning before sleeping: the next kernel of the step usually comes sooner,
      // and a sleeping thread takes far longer to wake.
      const auto spinUntil = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      for (int spins = 1; generation_.load(std::memory_order_acquire) == seen; ++spins) {
        cpuRelax();
        if (spins % 64 == 0 && std::chrono::steady_clock::now() > spinUntil)
          break;
      }
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        seen = generation_.load(std::memory_order_acquire);
        if (stop_)
          return;
      }
      takeRanges();
      busyWorkers_.fetch_sub(1, std::memory_order_release);
    }
  }

  std::vector<std::thread> workers_;
  std::mutex jobMutex_, mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> next_{0};
  std::atomic<int> busyWorkers_{0};
  bool stop_ = false;
  // The current job, written under mutex_ before generation_ moves on.
  int64_t n_ = 0, ranges_ = 0;
  void (*body_)(void *, int64_t, int64_t) = nullptr;
  void *context_ = nullptr;
};

/// The process's pool, started at the first parallel kernel: a function-local static, so a
/// binary that never runs one (or runs with one thread) starts no thread.
Pool &pool() {
  static Pool instance(kernelThreads());
  return instance;
}

} // namespace

int64_t elementGrain() {
  static const int64_t grain = [] {
    const int set = positiveEnv("GRAPHC_KERNEL_GRAIN");
    return set > 0 ? int64_t(set) : int64_t(1) << 15;
  }();
  return grain;
}

int kernelThreads() {
  static const int threads = threadsFromEnvironment();
  return threads;
}

void startKernelThreads() {
  if (kernelThreads() > 1)
    pool();
}

void parallelRanges(int64_t n, int64_t grain, void (*body)(void *, int64_t, int64_t),
                    void *context) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = kernelThreads();
  const int64_t ranges = std::min<int64_t>(threads, n / grain);
  if (ranges < 2 || insideRange) {
    body(context, 0, n);
    return;
  }
  pool().run(n, ranges, body, context);
}

} // namespace graphc::rt
