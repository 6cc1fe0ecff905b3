// CBC driver for graphc's 0/1 programs (BinaryProgram.h).
#include "fit/BinaryProgram.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "CbcModel.hpp"
#include "CbcSolver.hpp"
#include "OsiClpSolverInterface.hpp"

namespace graphc::remat {

void useOneBlasThread() {
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(1);
}

void writeToParent(int fd, const void *bytes, size_t size) {
  const char *p = static_cast<const char *>(bytes);
  while (size > 0) { // retrying short writes
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    p += n;
    size -= size_t(n);
  }
}

namespace {

/// The relaxation's part of the result, written as soon as the LP is solved, so that a solver
/// that dies later still leaves its bound behind.
struct LpRecord {
  uint8_t lpSolved;
  double lpObjective;
};

/// Branch and bound's part, followed by `columns` doubles of the incumbent.
struct SearchRecord {
  uint8_t hasSolution, optimal, provenInfeasible;
  double bestBound;
  uint64_t columns;
};

/// The solve itself. With `fd` >= 0 (in a child process), writes an LpRecord as soon as the
/// relaxation is solved, then a SearchRecord and the incumbent.
BinaryProgramResult solveHere(OsiClpSolverInterface &solver, double seconds, long maxNodes,
                              int fd) {
  BinaryProgramResult result;
  solver.messageHandler()->setLogLevel(0);
  solver.initialSolve();
  LpRecord lp{0, 0};
  if (!solver.isProvenPrimalInfeasible() && solver.isProvenOptimal())
    lp = {1, solver.getObjValue()};
  if (fd >= 0)
    writeToParent(fd, &lp, sizeof lp);
  if (!lp.lpSolved) {
    result.provenInfeasible = true;
    return result;
  }
  result.lpSolved = true;
  result.lpObjective = lp.lpObjective;
  for (int i = 0; i < solver.getNumCols(); ++i)
    solver.setInteger(i);

  CbcModel model(solver);
  CbcSolverUsefulData data;
  CbcMain0(model, data);
  std::string limit = std::to_string(std::max(0.01, seconds));
  std::string nodes = std::to_string(maxNodes);
  std::vector<const char *> argv = {"graphc-remat", "-log",       "0", "-threads", "0",
                                    "-sec",         limit.c_str()};
  if (maxNodes >= 0) {
    argv.push_back("-maxNodes");
    argv.push_back(nodes.c_str());
  }
  argv.push_back("-solve");
  argv.push_back("-quit");
  CbcMain1(
      int(argv.size()), argv.data(), model, [](CbcModel *, int) { return 0; }, data);
  const double *x = model.bestSolution();
  result.bestBound = model.getBestPossibleObjValue();
  result.hasSolution = x != nullptr;
  result.optimal = x && model.isProvenOptimal();
  result.provenInfeasible = !x && model.isProvenInfeasible();
  if (x)
    result.x.assign(x, x + solver.getNumCols());
  if (fd >= 0) {
    SearchRecord search{uint8_t(result.hasSolution), uint8_t(result.optimal),
                        uint8_t(result.provenInfeasible), result.bestBound,
                        uint64_t(result.x.size())};
    writeToParent(fd, &search, sizeof search);
    writeToParent(fd, result.x.data(), sizeof(double) * result.x.size());
  }
  return result;
}

} // namespace

std::optional<std::string> runInChild(const std::function<void(int)> &work, bool &exited) {
  exited = false;
  int fds[2];
  if (::pipe(fds) != 0)
    return std::nullopt;
  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (child == 0) {
    ::close(fds[0]);
    // Quiet and plain: no assertion text on the user's terminal, and no crash handler of the
    // parent's (LLVM's stack dump) running for the child.
    std::signal(SIGABRT, SIG_DFL);
    std::signal(SIGSEGV, SIG_DFL);
    if (int null = ::open("/dev/null", O_WRONLY); null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
    }
    work(fds[1]);
    ::_exit(0); // no exit handlers: they belong to the parent
  }
  ::close(fds[1]);
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    bytes.append(buffer, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  exited = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return bytes;
}

BinaryProgramResult solveBinaryProgram(OsiClpSolverInterface &solver, double seconds, long maxNodes,
                                       void (*inChild)(), bool isolated) {
  if (!isolated)
    return solveHere(solver, seconds, maxNodes, /*fd=*/-1);
  // CBC runs in a child process. Debian's CLP is built with assertions, and some programs trip
  // one inside CBC's heuristics (ClpSimplexDual::dualColumn0 under RINS, seen on a U-Net's
  // exact seeds): an abort there must cost the solve, not the compile. The child reports
  // through a pipe; if it dies, whatever it reported (the LP bound, usually) is kept and the
  // rest counts as no solution.
  BinaryProgramResult result;
  bool exited = false;
  std::optional<std::string> reported = runInChild(
      [&](int fd) {
        if (inChild)
          inChild();
        solveHere(solver, seconds, maxNodes, fd);
      },
      exited);
  if (!reported) {
    result.aborted = true;
    return result;
  }
  const std::string &bytes = *reported;
  LpRecord lp;
  if (bytes.size() < sizeof lp) {
    result.aborted = true;
    return result;
  }
  std::memcpy(&lp, bytes.data(), sizeof lp);
  if (!lp.lpSolved) {
    result.aborted = !exited;
    result.provenInfeasible = exited;
    return result;
  }
  result.lpSolved = true;
  result.lpObjective = lp.lpObjective;
  SearchRecord search;
  bool complete = bytes.size() >= sizeof lp + sizeof search;
  if (complete) {
    std::memcpy(&search, bytes.data() + sizeof lp, sizeof search);
    complete = bytes.size() == sizeof lp + sizeof search + sizeof(double) * search.columns;
  }
  if (!complete) { // died during branch and bound: the LP bound is all there is
    result.aborted = true;
    result.bestBound = lp.lpObjective;
    return result;
  }
  result.aborted = !exited;
  result.bestBound = search.bestBound;
  result.hasSolution = search.hasSolution;
  result.optimal = search.optimal;
  result.provenInfeasible = search.provenInfeasible;
  result.x.resize(search.columns);
  std::memcpy(result.x.data(), bytes.data() + sizeof lp + sizeof search,
              sizeof(double) * search.columns);
  return result;
}

} // namespace graphc::remat
