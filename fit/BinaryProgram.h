// The one way graphc's fit solvers run CBC: a loaded 0/1 program (every column integer in
// [0, 1]), its root LP relaxation first, then CBC's standard branch and cut (CbcMain1:
// preprocessing, cuts, heuristics) single-threaded under a time limit, so that results do not
// depend on the machine's cores. Shared by the exact rematerialization program
// (RematSolver.cpp) and the instant bound (BoundaryBound.cpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

class OsiClpSolverInterface;

namespace graphc::remat {

struct BinaryProgramResult {
  bool lpSolved = false;    // the relaxation has an optimum (false: infeasible, so is the program)
  double lpObjective = 0;   // the relaxation's optimum, in the program's (scaled) units
  bool hasSolution = false; // an integer incumbent was found
  bool optimal = false;     // and proven optimal
  bool provenInfeasible = false;
  std::vector<double> x; // the incumbent's column values
  double bestBound = 0;  // CBC's best bound at the end (not finite when it has none)
  bool aborted = false;  // the solver died (an assertion inside CLP): the fields above hold
                         // what it reported before, and nothing is proven by what is missing
};

/// Solves `solver`'s problem with every column integer: CBC, single-threaded, within `seconds`
/// and, when `maxNodes` >= 0, within that many branch-and-bound nodes (a limit that, unlike
/// time, gives the same result on any machine). Runs in a child process (see aborted).
/// `inChild`, when given, runs in the child process first (tests make it die there). With
/// `isolated` false, CBC runs in this process (for callers already in a child: runInChild).
BinaryProgramResult solveBinaryProgram(OsiClpSolverInterface &solver, double seconds,
                                       long maxNodes = -1, void (*inChild)() = nullptr,
                                       bool isolated = true);

/// Runs `work` in a forked child process, quiet (its stdout and stderr go to /dev/null) and
/// without the parent's crash handlers; `work` reports through the pipe it gets (see
/// writeToParent). Returns the bytes reported, also when the child died (`exited` false
/// then), or nullopt when no child could be started. One fork costs the parent's page tables,
/// so callers with several solves do them in one child.
std::optional<std::string> runInChild(const std::function<void(int fd)> &work, bool &exited);

/// Makes the BLAS that CLP and CBC load run on the calling thread, when it is OpenBLAS (looked
/// up at run time: the BLAS is whatever the system's libblas.so.3 points at). Their LPs are
/// small, and after each call OpenBLAS's idle workers spin on sched_yield: on a 2-core machine
/// that took a fifth of a ResNet-50 compile's CPU time, from the compile or from whatever ran
/// beside it. The tools call it once at startup.
void useOneBlasThread();

/// Writes `size` bytes to the parent's pipe (in runInChild's `work`).
void writeToParent(int fd, const void *bytes, size_t size);

} // namespace graphc::remat
