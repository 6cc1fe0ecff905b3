// CBC driver for graphc's 0/1 programs (BinaryProgram.h).
#include "fit/BinaryProgram.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "CbcModel.hpp"
#include "CbcSolver.hpp"
#include "OsiClpSolverInterface.hpp"

namespace graphc::remat {

BinaryProgramResult solveBinaryProgram(OsiClpSolverInterface &solver, double seconds,
                                       long maxNodes) {
  BinaryProgramResult result;
  solver.messageHandler()->setLogLevel(0);
  solver.initialSolve();
  if (solver.isProvenPrimalInfeasible() || !solver.isProvenOptimal()) {
    result.provenInfeasible = true;
    return result;
  }
  result.lpSolved = true;
  result.lpObjective = solver.getObjValue();
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
  result.bestBound = model.getBestPossibleObjValue();
  if (const double *x = model.bestSolution()) {
    result.hasSolution = true;
    result.optimal = model.isProvenOptimal();
    result.x.assign(x, x + solver.getNumCols());
  } else {
    result.provenInfeasible = model.isProvenInfeasible();
  }
  return result;
}

} // namespace graphc::remat
