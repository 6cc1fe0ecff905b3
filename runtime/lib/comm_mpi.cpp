// The MPI backend of data parallelism on the CPU target (comm.h): the non-blocking gradient
// all-reduce the generated step calls. Start-up checks, the small collectives main() needs, the
// watchdog that turns a dead or hung peer into a clear error instead of a hang, and the end of the
// job are shared with the CUDA target's NCCL backend (comm_mpi_job.cpp).
//
// The host build of a data-parallel CUDA step (GRAPHC_HOST_SHIM, comm_nccl.h) calls these same
// functions, which is how the CPU-only CI runs the CUDA step's collective path.
#include "graphc/runtime/comm.h"

#include <cinttypes>
#include <climits>
#include <cstdio>
#include <vector>

#include "graphc/runtime/comm_mpi_job.h"

using namespace graphc::rt;
using graphc::rt::mpi::abortJob;

namespace {

/// One in-flight gradient all-reduce per bucket id; one per process, as the MPI job.
std::vector<MPI_Request> &buckets() {
  static std::vector<MPI_Request> instance;
  return instance;
}

int start(int *argc, char ***argv, const Program &prog, double timeoutSeconds, int &rank,
          int &worldSize) {
  return mpi::startJob(argc, argv, prog, timeoutSeconds, rank, worldSize);
}

} // namespace

namespace {

/// The request slot of gradient bucket `bucket`, after checking that `count` floats fit one call.
MPI_Request &bucketRequest(int bucket, int64_t count) {
  std::vector<MPI_Request> &requests = buckets();
  if (bucket < 0 || count > INT_MAX)
    abortJob("gradient bucket %d: %" PRId64 " elements are more than one MPI call takes; "
             "recompile with a smaller --bucket-size", bucket, count);
  if (size_t(bucket) >= requests.size())
    requests.resize(size_t(bucket) + 1, MPI_REQUEST_NULL);
  return requests[size_t(bucket)];
}

/// Waits for bucket `bucket`'s collective, then turns the sum of `count` floats into a mean.
void finishMean(int bucket, const char *collective, float *data, int64_t count) {
  char what[80];
  std::snprintf(what, sizeof what, "the %s of gradient bucket %d", collective, bucket);
  mpi::waitFor(buckets().at(size_t(bucket)), what);
  const float inverse = 1.0f / float(mpi::job().size);
  for (int64_t i = 0; i < count; ++i)
    data[i] *= inverse;
}

} // namespace

void graphc::rt::commAllReduceMeanStart(int bucket, float *data, int64_t count) {
  MPI_Request &request = bucketRequest(bucket, count);
  mpi::check(MPI_Iallreduce(MPI_IN_PLACE, data, int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                            &request),
             "MPI_Iallreduce", "gradient all-reduce");
}

void graphc::rt::commAllReduceMeanWait(int bucket, float *data, int64_t count) {
  finishMean(bucket, "all-reduce", data, count);
}

void graphc::rt::commReduceScatterMeanStart(int bucket, float *data, int64_t shardCount) {
  MPI_Request &request = bucketRequest(bucket, shardCount);
  // In place: the input is the whole bucket at `data`, rank r's shard comes back at its start.
  mpi::check(MPI_Ireduce_scatter_block(MPI_IN_PLACE, data, int(shardCount), MPI_FLOAT, MPI_SUM,
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
  mpi::check(MPI_Iallgather(shard, int(shardCount), MPI_FLOAT, gathered, int(shardCount),
                            MPI_FLOAT, MPI_COMM_WORLD, &request),
             "MPI_Iallgather", what);
  mpi::waitFor(request, what);
}

int graphc::rt::commRank() { return mpi::job().rank; }

extern "C" const CommRuntime graphc_comm_runtime = {
    "MPI", start, mpi::allReduceSum, mpi::broadcast, mpi::setStep, mpi::finishJob};
