// The NCCL backend of data parallelism on the CUDA target (comm.h, comm_nccl.h): one process per
// GPU, MPI to start the job and for the small host collectives, NCCL for the gradient buckets.
//
// Start-up (CommRuntime::start, which train_main.cpp calls before the CUDA runtime's start):
// MPI joins the job and checks it against the program (comm_mpi_job.cpp, shared with the CPU
// target); the rank picks its GPU from its local rank (OMPI_COMM_WORLD_LOCAL_RANK, else
// LOCAL_RANK, else SLURM_LOCALID, else 0) and sets it before anything creates a CUDA context, so
// that cuda_runtime.cpp (which uses the current device) puts the arena, handles and streams on
// that GPU; rank 0's ncclGetUniqueId reaches the others by MPI (a broadcast under the collective
// timeout); ncclCommInitRankConfig makes a non-blocking communicator (blocking = 0), so that no
// NCCL call can hang the host: every wait polls ncclCommGetAsyncError (and the GPU's progress) against the collective timeout. The
// communicator, the communication stream and one pair of events per gradient bucket (the count
// comes from the program descriptor) are made here and destroyed at the end of the job: a step
// allocates nothing.
//
// Failures: every CUDA and NCCL status is checked and names the call and the bucket (or the
// start-up / end phase); an error or a timeout aborts the communicator (ncclCommAbort, so no GPU
// kernel keeps waiting for a dead peer) and then the job (MPI_Abort, exit 5), like the CPU
// backend. Only the main thread calls NCCL and MPI.
#include "graphc/runtime/cuda/comm_nccl.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "graphc/runtime/comm_mpi_job.h"

using namespace graphc::rt;
using graphc::rt::mpi::abortJob;

namespace {

constexpr int kExitDevice = 3; // as cuda_runtime.cpp: no device, or it cannot run the step

/// The NCCL side of the job; one per process, like the MPI job (comm_mpi_job.h).
struct Nccl {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr; // the communication stream
  std::vector<cudaEvent_t> ready, done; // per bucket: the fork and the join
  // Per bucket, recorded after its all-reduce as an external event (a node of the captured graph
  // that records on every replay, unlike `done`, which capture turns into a dependency edge), so
  // that a timeout can name the bucket that did not finish.
  std::vector<cudaEvent_t> finished;
  std::vector<const float *> started;   // per bucket: the data Start enqueued (Wait checks it)
  int device = 0;
  uint64_t reserve = 0;
};

Nccl &nccl() {
  static Nccl instance;
  return instance;
}

/// MPI's abort hook: abort the communicator first, so that NCCL kernels stop waiting for peers.
void abortCommunicator() {
  if (ncclComm_t comm = nccl().comm) {
    nccl().comm = nullptr;
    ncclCommAbort(comm); // its status is not checked: the job is being aborted either way
  }
}

void checkCuda(cudaError_t status, const char *call, const char *what) {
  if (status != cudaSuccess)
    abortJob("%s (%s, step %" PRId64 ") failed: %s (%s, error %d)", call, what, mpi::job().step,
             cudaGetErrorName(status), cudaGetErrorString(status), int(status));
}

[[noreturn]] void failNccl(ncclResult_t status, const char *call, const char *what) {
  const char *detail = nccl().comm ? ncclGetLastError(nccl().comm) : nullptr;
  abortJob("%s (%s, step %" PRId64 ") failed: %s%s%s", call, what, mpi::job().step,
           ncclGetErrorString(status), detail && *detail ? ": " : "", detail ? detail : "");
}

/// A non-blocking communicator's calls may return ncclInProgress: poll its state until the call
/// completed, at most the collective timeout.
void settle(ncclResult_t status, const char *call, const char *what) {
  if (status == ncclSuccess)
    return;
  if (status != ncclInProgress)
    failNccl(status, call, what);
  const mpi::Deadline deadline;
  for (int polls = 0;; ++polls) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t query = ncclCommGetAsyncError(nccl().comm, &state);
    if (query != ncclSuccess)
      failNccl(query, "ncclCommGetAsyncError", what);
    if (state == ncclSuccess)
      return;
    if (state != ncclInProgress)
      failNccl(state, call, what);
    if (deadline.passed())
      abortJob("%s (%s) at step %" PRId64 " has waited %.0f s for the other ranks (collective "
               "timeout %g s): a rank has died or hangs; aborting the job",
               call, what, mpi::job().step, deadline.waited(), mpi::job().timeoutSeconds);
    mpi::backOff(polls);
  }
}

/// This rank's GPU among the node's: its local rank, from the launcher's environment.
int localRank(const char *&source) {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", "SLURM_LOCALID"}) {
    const char *value = std::getenv(name);
    if (!value || !*value)
      continue;
    char *end = nullptr;
    const long v = std::strtol(value, &end, 10);
    source = name;
    return *end == '\0' && v >= 0 && v < 1 << 20 ? int(v) : -1;
  }
  source = "no launcher variable";
  return 0;
}

int start(int *argc, char ***argv, const Program &prog, double timeoutSeconds, int &rank,
          int &worldSize) {
  if (int rc = mpi::startJob(argc, argv, prog, timeoutSeconds, rank, worldSize))
    return rc;
  Nccl &N = nccl();
  const mpi::Job &job = mpi::job();
  const char *phase = "start-up";

  // The device, before any CUDA call that creates a context (cudaGetDeviceCount does not).
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count < 1) {
    if (status != cudaSuccess)
      std::fprintf(stderr, "error: rank %d of %d: no CUDA device: cudaGetDeviceCount failed: %s "
                   "(%s, error %d)\n", job.rank, job.size, cudaGetErrorName(status),
                   cudaGetErrorString(status), int(status));
    else
      std::fprintf(stderr, "error: rank %d of %d: no CUDA device: cudaGetDeviceCount found none\n",
                   job.rank, job.size);
    return kExitDevice;
  }
  const char *source = nullptr;
  const int local = localRank(source);
  if (local < 0 || local >= count) {
    std::fprintf(stderr, "error: rank %d of %d: %s=%s, but this node shows %d CUDA device%s: "
                 "start at most one rank per GPU on each node (mpirun -np N with N GPUs, or set "
                 "CUDA_VISIBLE_DEVICES)\n", job.rank, job.size, source, std::getenv(source),
                 count, count == 1 ? "" : "s");
    return kExitDevice;
  }
  N.device = local;
  checkCuda(cudaSetDevice(local), "cudaSetDevice", phase); // creates the primary context
  size_t freeBefore = 0, total = 0;
  checkCuda(cudaMemGetInfo(&freeBefore, &total), "cudaMemGetInfo", phase);

  // NCCL >= 2.22 connects peers at their first collective by default, i.e. allocates its
  // buffers during step 1; connect them here instead (unless the user chose otherwise), so that
  // the memory is taken (and measured) at start-up and no step allocates.
  setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);

  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (job.rank == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
      failNccl(r, "ncclGetUniqueId", phase);
  }
  mpi::broadcast(&id, sizeof id, "the NCCL unique id");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0; // errors and progress are polled (settle), never waited for blindly
  const ncclResult_t init = ncclCommInitRankConfig(&N.comm, job.size, id, job.rank, &config);
  mpi::job().beforeAbort = abortCommunicator;
  settle(init, "ncclCommInitRankConfig", phase);

  checkCuda(cudaStreamCreateWithFlags(&N.stream, cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags", phase);
  const size_t buckets = size_t(prog.allReduceBuckets);
  N.ready.assign(buckets, nullptr);
  N.done.assign(buckets, nullptr);
  N.finished.assign(buckets, nullptr);
  N.started.assign(buckets, nullptr);
  for (size_t b = 0; b < buckets; ++b) {
    checkCuda(cudaEventCreateWithFlags(&N.ready[b], cudaEventDisableTiming),
              "cudaEventCreateWithFlags", phase);
    checkCuda(cudaEventCreateWithFlags(&N.done[b], cudaEventDisableTiming),
              "cudaEventCreateWithFlags", phase);
    checkCuda(cudaEventCreateWithFlags(&N.finished[b], cudaEventDisableTiming),
              "cudaEventCreateWithFlags", phase);
  }
  size_t freeAfter = 0;
  checkCuda(cudaMemGetInfo(&freeAfter, &total), "cudaMemGetInfo", phase);
  N.reserve = freeBefore > freeAfter ? freeBefore - freeAfter : 0;
  if (std::getenv("GRAPHC_CUDA_VERBOSE")) {
    int version = 0;
    if (const ncclResult_t r = ncclGetVersion(&version); r != ncclSuccess)
      failNccl(r, "ncclGetVersion", phase);
    std::fprintf(stderr, "nccl: rank %d of %d on device %d (local rank from %s), NCCL %d, %zu "
                 "gradient buckets, %" PRIu64 " bytes of device memory for the communicator\n",
                 job.rank, job.size, local, source, version, buckets, N.reserve);
  }
  return 0;
}

/// "gradient bucket B" for messages, after checking B against the descriptor's bucket count.
const char *bucketName(int bucket, char (&buffer)[48]) {
  const Nccl &N = nccl();
  if (!N.comm)
    abortJob("gradient bucket %d: the step ran before the NCCL communicator was made", bucket);
  if (bucket < 0 || size_t(bucket) >= N.done.size())
    abortJob("gradient bucket %d is not one of the %zu buckets of the program descriptor", bucket,
             N.done.size());
  std::snprintf(buffer, sizeof buffer, "gradient bucket %d", bucket);
  return buffer;
}

/// The first bucket whose all-reduce has not finished on the GPU, for a timeout's message.
std::string stalledCollective() {
  const Nccl &N = nccl();
  for (size_t b = 0; b < N.finished.size(); ++b)
    if (cudaEventQuery(N.finished[b]) == cudaErrorNotReady)
      return "the collective of gradient bucket " + std::to_string(b);
  return "the step's GPU work";
}

void finish(int exitCode) {
  Nccl &N = nccl();
  if (exitCode != 0) {
    abortCommunicator();
  } else if (N.comm) {
    const char *phase = "the end of the job";
    settle(ncclCommFinalize(N.comm), "ncclCommFinalize", phase); // flushes, then destroy
    const ncclResult_t r = ncclCommDestroy(N.comm);
    if (r != ncclSuccess)
      failNccl(r, "ncclCommDestroy", phase);
    N.comm = nullptr;
    mpi::job().beforeAbort = nullptr;
    for (cudaEvent_t e : N.ready)
      checkCuda(cudaEventDestroy(e), "cudaEventDestroy", phase);
    for (cudaEvent_t e : N.done)
      checkCuda(cudaEventDestroy(e), "cudaEventDestroy", phase);
    for (cudaEvent_t e : N.finished)
      checkCuda(cudaEventDestroy(e), "cudaEventDestroy", phase);
    N.ready.clear();
    N.done.clear();
    N.finished.clear();
    if (N.stream)
      checkCuda(cudaStreamDestroy(N.stream), "cudaStreamDestroy", phase);
    N.stream = nullptr;
  }
  mpi::finishJob(exitCode);
}

/// Fork: the communication stream starts after everything the compute stream enqueued so far,
/// which completed the bucket.
void forkCollective(size_t b, const graphc::rt::cuda::StepContext *ctx, const char *what) {
  Nccl &N = nccl();
  checkCuda(cudaEventRecord(N.ready[b], ctx->stream), "cudaEventRecord", what);
  checkCuda(cudaStreamWaitEvent(N.stream, N.ready[b], 0), "cudaStreamWaitEvent", what);
}

/// After the bucket's collective on the communication stream: its "finished" event (for the
/// timeout's message) and its "done" event (the join).
void endCollective(size_t b, float *data, const char *what) {
  Nccl &N = nccl();
  // Under stream capture the record must be an external event node, so that every replay of
  // the graph records it; outside capture (the eager first step) that flag is an error
  // (cudaErrorIllegalState, seen on an H100 with CUDA 13), so a plain record.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  checkCuda(cudaStreamIsCapturing(N.stream, &capture), "cudaStreamIsCapturing", what);
  if (capture == cudaStreamCaptureStatusActive)
    checkCuda(cudaEventRecordWithFlags(N.finished[b], N.stream, cudaEventRecordExternal),
              "cudaEventRecordWithFlags", what);
  else
    checkCuda(cudaEventRecord(N.finished[b], N.stream), "cudaEventRecord", what);
  checkCuda(cudaEventRecord(N.done[b], N.stream), "cudaEventRecord", what);
  N.started[b] = data;
}

/// Join: the ops reading the bucket's result run after its collective finished.
void joinCollective(int bucket, float *data, const graphc::rt::cuda::StepContext *ctx) {
  char buffer[48];
  const char *what = bucketName(bucket, buffer);
  Nccl &N = nccl();
  const size_t b = size_t(bucket);
  if (N.started[b] != data)
    abortJob("%s: the step waits for a collective it did not start (a compiler bug)", what);
  checkCuda(cudaStreamWaitEvent(ctx->stream, N.done[b], 0), "cudaStreamWaitEvent", what);
}

} // namespace

namespace graphc::rt::cuda {

void allReduceMeanStart(int bucket, float *data, int64_t count, const StepContext *ctx) {
  char buffer[48];
  const char *what = bucketName(bucket, buffer);
  Nccl &N = nccl();
  forkCollective(size_t(bucket), ctx, what);
  settle(ncclAllReduce(data, data, size_t(count), ncclFloat32, ncclAvg, N.comm, N.stream),
         "ncclAllReduce", what);
  endCollective(size_t(bucket), data, what);
}

void allReduceMeanWait(int bucket, float *data, int64_t, const StepContext *ctx) {
  joinCollective(bucket, data, ctx);
}

void reduceScatterMeanStart(int bucket, float *data, int64_t shardCount, const StepContext *ctx) {
  char buffer[48];
  const char *what = bucketName(bucket, buffer);
  Nccl &N = nccl();
  forkCollective(size_t(bucket), ctx, what);
  // In place as NCCL defines it: this rank's averaged slice lands at data + rank * shardCount.
  const int64_t rank = mpi::job().rank;
  float *slice = data + rank * shardCount;
  settle(ncclReduceScatter(data, slice, size_t(shardCount), ncclFloat32, ncclAvg, N.comm, N.stream),
         "ncclReduceScatter", what);
  // The plan keeps the shard at the bucket's start; the two ranges do not overlap for rank > 0.
  if (rank > 0)
    checkCuda(cudaMemcpyAsync(data, slice, size_t(shardCount) * sizeof(float),
                              cudaMemcpyDeviceToDevice, N.stream),
              "cudaMemcpyAsync (the shard to the bucket's start)", what);
  endCollective(size_t(bucket), data, what);
}

void reduceScatterMeanWait(int bucket, float *data, int64_t, const StepContext *ctx) {
  joinCollective(bucket, data, ctx);
}

void allGather(int bucket, const float *shard, float *gathered, int64_t shardCount,
               const StepContext *ctx) {
  char what[64];
  std::snprintf(what, sizeof what, "the all-gather of parameter bucket %d", bucket);
  Nccl &N = nccl();
  if (!N.comm)
    abortJob("%s: the step ran before the NCCL communicator was made", what);
  settle(ncclAllGather(shard, gathered, size_t(shardCount), ncclFloat32, N.comm, ctx->stream),
         "ncclAllGather", what);
}

void synchronizeStep(cudaStream_t compute) {
  Nccl &N = nccl();
  const mpi::Deadline deadline;
  for (int polls = 0;; ++polls) {
    const cudaError_t status = cudaStreamQuery(compute);
    if (status == cudaSuccess)
      return;
    if (status != cudaErrorNotReady)
      checkCuda(status, "cudaStreamQuery", "the step");
    ncclResult_t state = ncclSuccess;
    const ncclResult_t query = ncclCommGetAsyncError(N.comm, &state);
    if (query != ncclSuccess)
      failNccl(query, "ncclCommGetAsyncError", "the step");
    if (state != ncclSuccess && state != ncclInProgress)
      failNccl(state, "NCCL (an asynchronous error)", stalledCollective().c_str());
    if (deadline.passed())
      abortJob("%s at step %" PRId64 " has waited %.0f s for the other ranks (collective timeout "
               "%g s): a rank has died or hangs; aborting the job",
               stalledCollective().c_str(), mpi::job().step, deadline.waited(),
               mpi::job().timeoutSeconds);
    mpi::backOff(polls);
  }
}

uint64_t collectiveDeviceReserve() { return nccl().reserve; }

} // namespace graphc::rt::cuda

int graphc::rt::commRank() { return mpi::job().rank; }

extern "C" const CommRuntime graphc_comm_runtime = {"NCCL", start, mpi::allReduceSum,
                                                    mpi::broadcast, mpi::setStep, finish};
