// The MPI side shared by the data-parallel backends (comm_mpi_job.h): start-up checks, host
// collectives, the collective timeout and the end of the job.
//
// MPI is initialised with MPI_THREAD_FUNNELED: only the main thread calls MPI (the prefetch thread
// only reads files). Errors are returned (MPI_ERRORS_RETURN), checked, and end the whole job
// through MPI_Abort, which mpirun (or srun) propagates to every rank.
//
// A collective's wait polls MPI_Test, backing off from a spin to 1 ms sleeps, so that ranks
// oversubscribing a few cores (CI runs 4 ranks on 2) leave the CPU to the ranks still computing,
// until the collective timeout; then it reports the collective, the step and the wait, and aborts.
#include "graphc/runtime/comm_mpi_job.h"

#include <cinttypes>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "graphc/runtime/comm.h"

namespace graphc::rt::mpi {

namespace {
constexpr int kExitUsage = 2; // as train_main.cpp: a bad command line or launch

const char *envOr(const char *name, const char *fallback) {
  const char *v = std::getenv(name);
  return v && *v ? v : fallback;
}
} // namespace

Job &job() {
  static Job instance;
  return instance;
}

void abortJob(const char *format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  std::fprintf(stderr, "error: rank %d of %d: %s\n", job().rank, job().size, message);
  std::fflush(stderr);
  if (void (*hook)() = job().beforeAbort) {
    job().beforeAbort = nullptr; // once: the hook itself may fail and abort
    hook();
  }
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

void backOff(int polls) {
  if (polls > 1000)
    std::this_thread::sleep_for(std::chrono::microseconds(polls > 10000 ? 1000 : 50));
}

void waitFor(MPI_Request &request, const char *what) {
  const Deadline deadline;
  for (int polls = 0;; ++polls) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test", what);
    if (done)
      return;
    if (deadline.passed())
      abortJob("%s at step %" PRId64 " has waited %.0f s for the other ranks (collective "
               "timeout %g s): a rank has died or hangs; aborting the job",
               what, job().step, deadline.waited(), job().timeoutSeconds);
    backOff(polls);
  }
}

int startJob(int *argc, char ***argv, const Program &prog, double timeoutSeconds, int &rank,
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

void finishJob(int exitCode) {
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

} // namespace graphc::rt::mpi
