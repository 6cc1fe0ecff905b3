// The MPI side of every data-parallel backend (comm.h): joining the job and checking it against
// the compiled program, the small host collectives main() needs (metrics, the initial state), the
// step number for messages, the collective timeout, and ending the job together.
//
// The CPU backend (runtime/lib/comm_mpi.cpp) adds the gradient all-reduce over MPI; the CUDA
// backend (runtime/cuda/comm_nccl.cpp) uses MPI only for this and runs the gradient all-reduce
// with NCCL. Both share this code so that a data-parallel binary starts, reports and fails the
// same way on either target. Implemented in runtime/lib/comm_mpi_job.cpp (in the
// graphc_runtime_mpi archive, linked only into data-parallel binaries).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>

#include "graphc/runtime/program.h"

namespace graphc::rt::mpi {

/// The job as MPI sees it; one per process, like MPI's own state (MPI_COMM_WORLD).
struct Job {
  int rank = 0, size = 1;
  double timeoutSeconds = 300;
  int64_t step = 0;
  /// Set by a backend that holds more than MPI (NCCL): called once before MPI_Abort, e.g. to
  /// abort the NCCL communicator so that no GPU kernel keeps waiting for a dead peer.
  void (*beforeAbort)() = nullptr;
};

Job &job();

/// Prints "error: rank R of N: <message>" and ends every rank (MPI_Abort, exit code
/// kExitCommunication).
[[noreturn]] void abortJob(const char *format, ...) __attribute__((format(printf, 1, 2)));

/// Checks an MPI status: anything but MPI_SUCCESS names `call` and `what` and aborts the job.
void check(int status, const char *call, const char *what);

/// Waits for `request` at most the collective timeout, then aborts naming `what` and the step.
void waitFor(MPI_Request &request, const char *what);

/// Sleeps a little more the longer a poll has gone on (a spin, then 50 us, then 1 ms), so that
/// ranks oversubscribing a few cores leave the CPU to the ranks still computing.
void backOff(int polls);

/// The collective timeout of one wait, started when constructed.
class Deadline {
public:
  Deadline() : start(std::chrono::steady_clock::now()) {}
  double waited() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  bool passed() const { return waited() > job().timeoutSeconds; }

private:
  std::chrono::steady_clock::time_point start;
};

/// MPI_Init_thread (FUNNELED), MPI_ERRORS_RETURN, and the world-size checks against the program
/// (compiled world size, a world size that does not divide the global batch, a WORLD_SIZE
/// launcher without MPI). Returns 0 or an exit code after printing why (CommRuntime::start).
int startJob(int *argc, char ***argv, const Program &prog, double timeoutSeconds, int &rank,
             int &worldSize);

// CommRuntime's host collectives and its end of the job (comm.h), over MPI_COMM_WORLD.
void allReduceSum(double *values, int count, const char *what);
void broadcast(void *data, uint64_t bytes, const char *what);
void setStep(int64_t step);
/// MPI_Finalize for exit code 0, MPI_Abort otherwise; nothing when MPI is not running.
void finishJob(int exitCode);

} // namespace graphc::rt::mpi
