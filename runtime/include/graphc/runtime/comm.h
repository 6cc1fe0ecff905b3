// The seam between the runtime's main() (train_main.cpp), the generated step and a
// communication backend for data parallelism (graphc --data-parallel --world-size=N).
//
// A data-parallel binary runs as one process per rank (mpirun -np N ./train ...). Every rank
// runs the same compiled step on its shard of each global batch; the step averages the gradient
// buckets over the ranks with the two calls below (emitted by the targets for graph.all_reduce),
// and main() uses `graphc_comm_runtime` to start up, agree on the initial state and on the
// reported metrics, and to end the run. The CPU target's backend is MPI (runtime/lib/comm_mpi.cpp,
// linked only into data-parallel binaries); the CUDA target's is NCCL for the gradients and MPI
// for the rest (runtime/cuda/comm_nccl.cpp; its step calls the functions of
// graphc/runtime/cuda/comm_nccl.h instead of the two below); a single-process binary does not define
// `graphc_comm_runtime` (a weak symbol), so its main() sees null and nothing changes for it.
//
// Failure model: every collective waits at most the collective timeout (--collective-timeout,
// default 300 s); a rank that waits longer says which collective of which step stalled and
// aborts the whole job (MPI_Abort), so a dead or hung peer never leaves the others hanging.
// Every MPI call's status is checked (MPI_ERRORS_RETURN) and a failure names the call.
#pragma once

#include <cstdint>

#include "graphc/runtime/program.h"

namespace graphc::rt {

/// Exit code of a run ended by a failed or timed-out collective.
constexpr int kExitCommunication = 5;

struct CommRuntime {
  const char *name; // "MPI"
  /// Joins the job (MPI_Init) and checks it against the program: the world size must be the
  /// one the step was compiled for. Sets rank and worldSize. Returns 0, or an exit code after
  /// printing why. `timeoutSeconds` bounds every later collective.
  int (*start)(int *argc, char ***argv, const Program &prog, double timeoutSeconds, int &rank,
               int &worldSize);
  /// Sums `count` doubles over the ranks, in place (the reported loss and accuracy counts).
  void (*allReduceSum)(double *values, int count, const char *what);
  /// Copies `bytes` from rank 0 to every rank (the initial parameters and optimizer state).
  void (*broadcast)(void *data, uint64_t bytes, const char *what);
  /// The step the next collectives belong to (for error messages).
  void (*setStep)(int64_t step);
  /// Ends the job: a clean exit (MPI_Finalize) for exit code 0, MPI_Abort otherwise, so that
  /// one failed rank ends every rank.
  void (*finish)(int exitCode);
};

/// Starts averaging `count` floats at `data` over the ranks, in place (non-blocking).
void commAllReduceMeanStart(int bucket, float *data, int64_t count);
/// Waits for bucket `bucket` started above (at most the collective timeout) and divides by the
/// world size.
void commAllReduceMeanWait(int bucket, float *data, int64_t count);
/// Optimizer-state sharding: starts the reduce-scatter of the bucket at `data` (ranks x
/// `shardCount` floats, non-blocking); rank r's shard of the mean ends up at the start of it.
void commReduceScatterMeanStart(int bucket, float *data, int64_t shardCount);
/// Waits for it (at most the collective timeout) and divides the shard by the world size.
void commReduceScatterMeanWait(int bucket, float *data, int64_t shardCount);
/// Gathers every rank's `shardCount` floats at `shard` into `gathered`, in rank order (blocking).
void commAllGather(int bucket, const float *shard, float *gathered, int64_t shardCount);
/// This process's rank (0 in a single-process binary).
int commRank();

} // namespace graphc::rt

/// Defined by a data-parallel binary's communication backend only; null (weak) otherwise.
extern "C" const graphc::rt::CommRuntime graphc_comm_runtime __attribute__((weak));
