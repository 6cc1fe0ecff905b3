// Registers the graph dialect and its ops.
#include "dialects/graph/GraphOps.h"

using namespace mlir;
using namespace graphc::graph;

#include "dialects/graph/GraphDialect.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/graph/GraphOps.cpp.inc"
      >();
}
