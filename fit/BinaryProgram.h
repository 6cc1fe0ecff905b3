// The one way graphc's fit solvers run CBC: a loaded 0/1 program (every column integer in
// [0, 1]), its root LP relaxation first, then CBC's standard branch and cut (CbcMain1:
// preprocessing, cuts, heuristics) single-threaded under a time limit, so that results do not
// depend on the machine's cores. Shared by the exact rematerialization program
// (RematSolver.cpp) and the instant bound (BoundaryBound.cpp).
#pragma once

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
/// `inChild`, when given, runs in the child process first (tests make it die there).
BinaryProgramResult solveBinaryProgram(OsiClpSolverInterface &solver, double seconds,
                                       long maxNodes = -1, void (*inChild)() = nullptr);

} // namespace graphc::remat
