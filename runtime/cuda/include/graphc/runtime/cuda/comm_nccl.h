// What a data-parallel CUDA step (graphc --target=cuda --data-parallel) calls for its gradient
// all-reduces, and the two hooks the CUDA runtime takes from the NCCL backend.
//
// The generated step calls allReduceMeanStart at each graph.all_reduce and allReduceMeanWait
// before the first op that reads the averaged bucket. On the GPU (runtime/cuda/comm_nccl.cpp):
//  - Start records an event on the compute stream, makes the communication stream wait for it
//    (the fork: the bucket is complete), enqueues ncclAllReduce(data, data, count, ncclFloat32,
//    ncclAvg) in place on the communication stream and records the bucket's "done" event there;
//  - Wait makes the compute stream wait for the "done" event (the join).
// Neither blocks the host, allocates or synchronises: both are stream-ordered and capturable into
// a CUDA graph (cross-stream event fork/join; NCCL >= 2.9 supports capture). The backward ops
// between the two run on the compute stream while NCCL runs on the communication stream.
//
// Under GRAPHC_HOST_SHIM (the host build the CPU-only CI runs) the same calls go to the CPU
// target's MPI backend (comm.h, runtime/lib/comm_mpi.cpp): MPI_Iallreduce at Start, the wait and
// the division by the world size at Wait; the reduce-scatter and all-gather of optimizer-state
// sharding (--zero=1) likewise. The bucket ids, offsets and the Start/Wait placement
// the host build exercises are the ones the GPU build runs.
#pragma once

#include <cstdint>

#include "graphc/runtime/comm.h"
#include "graphc/runtime/cuda/step.h"

namespace graphc::rt::cuda {

#ifdef GRAPHC_HOST_SHIM
inline void allReduceMeanStart(int bucket, float *data, int64_t count, const StepContext *) {
  ::graphc::rt::commAllReduceMeanStart(bucket, data, count);
}
inline void allReduceMeanWait(int bucket, float *data, int64_t count, const StepContext *) {
  ::graphc::rt::commAllReduceMeanWait(bucket, data, count);
}
inline void reduceScatterMeanStart(int bucket, float *data, int64_t shardCount,
                                   const StepContext *) {
  ::graphc::rt::commReduceScatterMeanStart(bucket, data, shardCount);
}
inline void reduceScatterMeanWait(int bucket, float *data, int64_t shardCount,
                                  const StepContext *) {
  ::graphc::rt::commReduceScatterMeanWait(bucket, data, shardCount);
}
inline void allGather(int bucket, const float *shard, float *gathered, int64_t shardCount,
                      const StepContext *) {
  ::graphc::rt::commAllGather(bucket, shard, gathered, shardCount);
}
#else
/// Forks the all-reduce of bucket `bucket` (`count` floats at `data`, a device pointer into the
/// arena) onto the communication stream after the work enqueued on ctx->stream so far. Every
/// CUDA/NCCL status is checked; a failure names the call and the bucket and aborts the job.
void allReduceMeanStart(int bucket, float *data, int64_t count, const StepContext *ctx);
/// Makes ctx->stream wait until bucket `bucket`'s all-reduce is done (`data` and `count` are
/// the host build's; the GPU build checks them against Start's).
void allReduceMeanWait(int bucket, float *data, int64_t count, const StepContext *ctx);
/// Optimizer-state sharding (ZeRO-1, graph.reduce_scatter): forks the reduce-scatter of bucket
/// `bucket` (ranks x shardCount floats at `data`) onto the communication stream, as
/// allReduceMeanStart: ncclReduceScatter with ncclAvg in place (into this rank's slice
/// data + rank shardCount), then, for rank > 0, a device copy of that slice to `data` (the
/// plan puts the shard at the bucket's start; NCCL's in-place form has it at the rank's slice).
void reduceScatterMeanStart(int bucket, float *data, int64_t shardCount, const StepContext *ctx);
/// Makes ctx->stream wait until bucket `bucket`'s reduce-scatter (and its copy) is done.
void reduceScatterMeanWait(int bucket, float *data, int64_t shardCount, const StepContext *ctx);
/// graph.all_gather_into: every rank's `shardCount` floats at `shard`, in rank order, into
/// `gathered` (ranks x shardCount, the op's planned workspace), with ncclAllGather on the
/// compute stream (the updated parameters are read by nothing else in this step).
void allGather(int bucket, const float *shard, float *gathered, int64_t shardCount,
               const StepContext *ctx);

/// For runtime/cuda/cuda_runtime.cpp (which references both weakly, so that single-process CUDA
/// binaries do not link NCCL):
/// Waits for everything enqueued on `compute` (the step, its collectives joined into it) like
/// cudaStreamSynchronize, but polls: NCCL's asynchronous errors and the collective timeout end
/// the job with a message naming the stalled bucket and the step (ncclCommAbort, MPI_Abort).
void synchronizeStep(cudaStream_t compute);
/// Device memory NCCL took outside the arena at start-up (cudaMemGetInfo before and after the
/// communicator, its stream and events were created), for the runtime-reserve report.
uint64_t collectiveDeviceReserve();
#endif

} // namespace graphc::rt::cuda
