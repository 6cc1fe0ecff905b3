// graphc-test-print-liveness: prints the buffers of computeStepLiveness for lit tests.
#include "passes/Liveness.h"
#include "passes/Passes.h"

#include "llvm/Support/raw_ostream.h"

namespace graphc {
#define GEN_PASS_DEF_TESTPRINTLIVENESS
#include "passes/Passes.h.inc"
} // namespace graphc

using namespace mlir;
using namespace graphc;

namespace {
struct TestPrintLivenessPass : graphc::impl::TestPrintLivenessBase<TestPrintLivenessPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto live = computeStepLiveness(func);
    if (failed(live))
      return signalPassFailure();
    llvm::outs() << "liveness of @" << func.getName() << ": " << live->steps.size()
                 << " steps, " << live->buffers.size() << " buffers\n";
    for (const LiveBuffer &b : live->buffers)
      llvm::outs() << "  " << b.name << " " << b.kind << " " << b.bytes << " " << b.first
                   << ".." << b.last << "\n";
  }
};
} // namespace
