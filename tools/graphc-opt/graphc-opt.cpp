// graphc-opt: MlirOptMain with the graph dialect and every graphc pass registered, for lit tests.
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "dialects/graph/GraphOps.h"
#include "fit/BinaryProgram.h"
#include "passes/Passes.h"

int main(int argc, char **argv) {
  graphc::remat::useOneBlasThread();
  mlir::DialectRegistry registry;
  registry.insert<graphc::graph::GraphDialect, mlir::func::FuncDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  graphc::registerGraphcPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "graphc optimizer driver\n", registry));
}
