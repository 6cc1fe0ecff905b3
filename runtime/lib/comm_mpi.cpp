// The MPI backend of data parallelism on the CPU target (comm.h): start-up checks, the
// non-blocking gradient all-reduce the generated step calls, the small collectives main() needs,
// and the watchdog that turns a dead or hung peer into a clear error instead of a hang.
//
// MPI is initialised with MPI_THREAD_FUNNELED: only the main thread calls MPI (the prefetch thread
// only reads files). Errors are returned (MPI_ERRORS_RETURN), checked, and end the whole job
// through MPI_Abort, which mpirun (or srun) propagates to every rank.
//
// A collective's wait polls MPI_Test, backing off from a spin to 1 ms sleeps, so that ranks
// oversubscribing a few cores (CI runs 4 ranks on 2) leave the CPU to the ranks still computing,
// until the collective timeout; then it reports the collective, the step and the wait, and aborts.
#include "graphc/runtime/comm.h"

#include <mpi.h>

#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace graphc::rt;

namespace {

constexpr int kExitUsage = 2; // as train_main.cpp: a bad command line or launch

/// The job as MPI sees it; one per process, like MPI's own state (MPI_COMM_WORLD).
struct Job {
  int rank = 0, size = 1;
  double timeoutSeconds = 300;
  int64_t step = 0;
  std::vector<MPI_Request> buckets; // one in-flight gradient all-reduce per bucket id
};

Job &job() {
  static Job instance;
  return instance;
}

[[noreturn]] void abortJob(const char *format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  std::fprintf(stderr, "error: rank %d of %d: %s\n", job().rank, job().size, message);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kExitCommunication);
  std::_Exit(kExitCommunication); // MPI_Abort does not return; this is for the compiler
}

void check(int status, const char *call, const char *what) {
  if (status == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  abortJob("%s (%s, step %" PRId64 ") failed: %.*s", call, what, job().step, length, text);
}

/// Waits for `request` at most the collective timeout.
void waitFor(MPI_Request &request, const char *what) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  for (int polls = 0;; ++polls) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test", what);
    if (done)
      return;
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (waited > job().timeoutSeconds)
      abortJob("%s at step %" PRId64 " has waited %.0f s for the other ranks (collective "
               "timeout %g s): a rank has died or hangs; aborting the job",
               what, job().step, waited, job().timeoutSeconds);
    if (polls > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(polls > 10000 ? 1000 : 50));
  }
}

const char *envOr(const char *name, const char *fallback) {
  const char *v = std::getenv(name);
  return v && *v ? v : fallback;
}

int start(int *argc, char ***argv, const Program &prog, double timeoutSeconds, int &rank,
          int &worldSize) {
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "error: MPI_Init_thread failed: start the binary with mpirun -np %d\n",
                 prog.worldSize);
    return kExitCommunication;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  Job &j = job();
  j.timeoutSeconds = timeoutSeconds;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &j.rank), "MPI_Comm_rank", "start-up");
  check(MPI_Comm_size(MPI_COMM_WORLD, &j.size), "MPI_Comm_size", "start-up");
  rank = j.rank;
  worldSize = j.size;
  const int64_t global = prog.batch * prog.worldSize;
  // A launcher that set WORLD_SIZE (torchrun, a job script) without starting an MPI job gives
  // every process a world of one: say so instead of training N unsynchronised copies.
  const long envSize = std::strtol(envOr("WORLD_SIZE", "0"), nullptr, 10);
  if (envSize > 0 && envSize != j.size) {
    std::fprintf(stderr,
                 "error: WORLD_SIZE=%ld but MPI sees %d rank%s: this binary's ranks meet through "
                 "MPI, so start it with mpirun -np %d (or srun --mpi=pmix), not a launcher that "
                 "only sets WORLD_SIZE/RANK\n",
                 envSize, j.size, j.size == 1 ? "" : "s", prog.worldSize);
    return kExitUsage;
  }
  if (j.size != prog.worldSize) {
    if (j.rank == 0) {
      if (global % j.size != 0)
        std::fprintf(stderr,
                     "error: this binary trains a global batch of %" PRId64 " on %d ranks "
                     "(%" PRId64 " per rank) and was started on %d; %d ranks cannot share a "
                     "batch of %" PRId64 " equally: start it with mpirun -np %d, or recompile "
                     "with a --batch that %d divides and --world-size=%d\n",
                     global, prog.worldSize, prog.batch, j.size, j.size, global, prog.worldSize,
                     j.size, j.size);
      else
        std::fprintf(stderr,
                     "error: this binary was compiled for %d ranks (global batch %" PRId64
                     ", %" PRId64 " per rank) and was started on %d: start it with mpirun -np "
                     "%d, or recompile with --world-size=%d\n",
                     prog.worldSize, global, prog.batch, j.size, prog.worldSize, j.size);
    }
    return kExitUsage;
  }
  return 0;
}

void allReduceSum(double *values, int count, const char *what) {
  MPI_Request request;
  check(MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                       &request),
        "MPI_Iallreduce", what);
  waitFor(request, what);
}

void broadcast(void *data, uint64_t bytes, const char *what) {
  unsigned char *p = static_cast<unsigned char *>(data);
  while (bytes > 0) {
    const int chunk = bytes > uint64_t(INT_MAX) ? INT_MAX : int(bytes);
    MPI_Request request;
    check(MPI_Ibcast(p, chunk, MPI_BYTE, 0, MPI_COMM_WORLD, &request), "MPI_Ibcast", what);
    waitFor(request, what);
    p += chunk;
    bytes -= uint64_t(chunk);
  }
}

void setStep(int64_t step) { job().step = step; }

void finish(int exitCode) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return;
  if (exitCode == 0)
    MPI_Finalize();
  else
    MPI_Abort(MPI_COMM_WORLD, exitCode);
}

} // namespace

namespace {

/// The request slot of gradient bucket `bucket`, after checking that `count` floats fit one call.
MPI_Request &bucketRequest(int bucket, int64_t count) {
  Job &j = job();
  if (bucket < 0 || count > INT_MAX)
    abortJob("gradient bucket %d: %" PRId64 " elements are more than one MPI call takes; "
             "recompile with a smaller --bucket-size", bucket, count);
  if (size_t(bucket) >= j.buckets.size())
    j.buckets.resize(size_t(bucket) + 1, MPI_REQUEST_NULL);
  return j.buckets[size_t(bucket)];
}

/// Waits for bucket `bucket`'s collective, then turns the sum of `count` floats into a mean.
void finishMean(int bucket, const char *collective, float *data, int64_t count) {
  char what[80];
  std::snprintf(what, sizeof what, "the %s of gradient bucket %d", collective, bucket);
  waitFor(job().buckets.at(size_t(bucket)), what);
  const float inverse = 1.0f / float(job().size);
  for (int64_t i = 0; i < count; ++i)
    data[i] *= inverse;
}

} // namespace

void graphc::rt::commAllReduceMeanStart(int bucket, float *data, int64_t count) {
  MPI_Request &request = bucketRequest(bucket, count);
  check(MPI_Iallreduce(MPI_IN_PLACE, data, int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                       &request),
        "MPI_Iallreduce", "gradient all-reduce");
}

void graphc::rt::commAllReduceMeanWait(int bucket, float *data, int64_t count) {
  finishMean(bucket, "all-reduce", data, count);
}

void graphc::rt::commReduceScatterMeanStart(int bucket, float *data, int64_t shardCount) {
  MPI_Request &request = bucketRequest(bucket, shardCount);
  // In place: the input is the whole bucket at `data`, rank r's shard comes back at its start.
  check(MPI_Ireduce_scatter_block(MPI_IN_PLACE, data, int(shardCount), MPI_FLOAT, MPI_SUM,
                                  MPI_COMM_WORLD, &request),
        "MPI_Ireduce_scatter_block", "gradient reduce-scatter");
}

void graphc::rt::commReduceScatterMeanWait(int bucket, float *data, int64_t shardCount) {
  finishMean(bucket, "reduce-scatter", data, shardCount);
}

void graphc::rt::commAllGather(int bucket, const float *shard, float *gathered,
                               int64_t shardCount) {
  char what[64];
  std::snprintf(what, sizeof what, "the all-gather of parameter bucket %d", bucket);
  if (shardCount > INT_MAX)
    abortJob("%s: a shard of %" PRId64 " elements is more than one MPI call takes", what,
             shardCount);
  MPI_Request request;
  check(MPI_Iallgather(shard, int(shardCount), MPI_FLOAT, gathered, int(shardCount), MPI_FLOAT,
                       MPI_COMM_WORLD, &request),
        "MPI_Iallgather", what);
  waitFor(request, what);
}

int graphc::rt::commRank() { return job().rank; }

extern "C" const CommRuntime graphc_comm_runtime = {"MPI", start, allReduceSum, broadcast,
                                                    setStep, finish};
