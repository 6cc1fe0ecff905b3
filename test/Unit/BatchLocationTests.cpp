// The batch-location analysis (importers/onnx/BatchLocation.h) that rebases a static export's
// baked shape constants: where the stride rule puts the batch in a shape, and what the locator
// says of graph dialect values built at a batch, sequence-first attention views among them.
#include <gtest/gtest.h>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "dialects/graph/GraphOps.h"
#include "importers/onnx/BatchLocation.h"

using namespace mlir;
using graphc::onnx_import::BatchLocation;
using graphc::onnx_import::BatchLocator;
using graphc::onnx_import::batchStride;
using graphc::onnx_import::locateBatchByStride;

namespace {

void expectAt(const BatchLocation &where, int64_t axis, int64_t inner) {
  ASSERT_TRUE(where.isAt());
  EXPECT_EQ(where.axis, axis);
  EXPECT_EQ(where.inner, inner);
}

TEST(BatchStride, FindsTheAxisThatHoldsTheBatch) {
  // [T, B, E] = [12, 8, 32]: the batch in axis 1, stride 32 (one sample's row of E).
  EXPECT_EQ(batchStride({12, 8, 32}, BatchLocation::at(1, 1)), 32);
  // ... viewed as [T, B x H, D] = [12, 16, 16]: axis 1, a sample spans H = 2 of its entries.
  expectAt(locateBatchByStride({12, 16, 16}, 32, 8), 1, 2);
  // ... and as [T x B, E] = [96, 32]: axis 0, the batch inner to T (stride 1 entry).
  expectAt(locateBatchByStride({96, 32}, 32, 8), 0, 1);
  // [B, T, C] = [8, 12, 32] (stride 384): the leading axis.
  expectAt(locateBatchByStride({8, 12, 32}, 384, 8), 0, 1);
  // A shape that splits the batch over two axes ([T, 4, 2 x E]: 8 samples, 4 in axis 1): none.
  EXPECT_FALSE(locateBatchByStride({12, 4, 64}, 32, 8).isAt());
  // A batch of 1 moves nothing: [12, 2, 16] with stride 32 is [12, 1 x 2, 16] or [12 x 1, 2,
  // 16]; which one the model meant is unknowable.
  EXPECT_FALSE(locateBatchByStride({12, 2, 16}, 32, 1).isAt());
  // Nor is [1, 12, 32] with stride 384: its axis of 1, or the outer part of axis 1.
  EXPECT_FALSE(locateBatchByStride({1, 12, 32}, 384, 1).isAt());
  // At batch 2 the same [2, 12, 32] has one answer.
  expectAt(locateBatchByStride({2, 12, 32}, 384, 2), 0, 1);
}

TEST(BatchStride, GuessesForABatchOfOne) {
  // An export at batch 1 leaves the axis open; the guess is the axis the batch fills most
  // (least outer, then least inner, then the first), not the last (the features') unless
  // nothing else fits. Each is the axis that nn.MultiheadAttention's views meant.
  bool guessed = false;
  expectAt(locateBatchByStride({16, 4, 8}, 32, 1, &guessed), 1, 4); // [T, 1 x H, D]
  EXPECT_TRUE(guessed);
  expectAt(locateBatchByStride({16, 32}, 32, 1, &guessed), 0, 1);      // [T x 1, E], not [T, 1 x E]
  expectAt(locateBatchByStride({16, 1, 32}, 32, 1, &guessed), 1, 1);   // [T, 1, E]
  expectAt(locateBatchByStride({1, 1, 1, 12}, 12, 1, &guessed), 0, 1); // [1, 1, 1, S] mask
  // Only the last axis fits: taken.
  expectAt(locateBatchByStride({16, 12}, 4, 1, &guessed), 1, 4);
  // One candidate is no guess.
  guessed = false;
  expectAt(locateBatchByStride({2, 12, 32}, 384, 2, &guessed), 0, 1);
  EXPECT_FALSE(guessed);
}

TEST(BatchLocator, FollowsSequenceFirstAttentionViews) {
  MLIRContext context;
  context.loadDialect<func::FuncDialect, graphc::graph::GraphDialect>();
  // nn.MultiheadAttention's path at batch 8: tokens [8, 12, 32] -> [12, 8, 32] -> q as
  // [12, 16, 16] (2 heads) -> [16, 12, 16]; a projection through dense; a parameter.
  const char *source = R"mlir(
    func.func @f(%x: tensor<8x12x32xf32> {graph.kind = "input"},
                 %w: tensor<32x32xf32> {graph.kind = "parameter"}) -> tensor<16x12x16xf32> {
      %t = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<8x12x32xf32>) -> tensor<12x8x32xf32>
      %rows = graph.reshape %t : (tensor<12x8x32xf32>) -> tensor<96x32xf32>
      %p = graph.dense %rows, %w : (tensor<96x32xf32>, tensor<32x32xf32>) -> tensor<96x32xf32>
      %q = graph.reshape %p : (tensor<96x32xf32>) -> tensor<12x16x16xf32>
      %h = graph.transpose %q {perm = array<i64: 1, 0, 2>} : (tensor<12x16x16xf32>) -> tensor<16x12x16xf32>
      %s = graph.batch_matmul %h, %h {transpose_rhs} : (tensor<16x12x16xf32>, tensor<16x12x16xf32>) -> tensor<16x12x12xf32>
      %x2 = graph.scale %x {factor = 2.0 : f32} : tensor<8x12x32xf32>
      %wrong = graph.transpose %rows {perm = array<i64: 1, 0>} : (tensor<96x32xf32>) -> tensor<32x96xf32>
      %mixed = graph.dense %wrong, %rows : (tensor<32x96xf32>, tensor<96x32xf32>) -> tensor<32x32xf32>
      return %h : tensor<16x12x16xf32>
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  std::vector<Value> results;
  func.walk([&](Operation *op) {
    if (op->getNumResults() == 1)
      results.push_back(op->getResult(0));
  });
  ASSERT_EQ(results.size(), 9u);
  BatchLocator locator(8);
  expectAt(locator.locate(func.getArgument(0)), 0, 1);                            // %x: [B, T, C]
  EXPECT_EQ(locator.locate(func.getArgument(1)).kind, BatchLocation::Kind::Free); // %w
  expectAt(locator.locate(results[0]), 1, 1);                                     // %t [T, B, C]
  expectAt(locator.locate(results[1]), 0, 1); // %rows [T x B, C]
  expectAt(locator.locate(results[2]), 0, 1); // %p: dense keeps the rows
  expectAt(locator.locate(results[3]), 1, 2); // %q [T, B x H, D]
  expectAt(locator.locate(results[4]), 0, 2); // %h [B x H, T, D]
  expectAt(locator.locate(results[5]), 0, 2); // %s: batched over B x H
  expectAt(locator.locate(results[6]), 0, 1); // %x2: elementwise
  expectAt(locator.locate(results[7]), 1, 1); // %wrong [C, T x B]: transposed rows
  // A dense contracting over the batch mixes the samples: not located.
  EXPECT_EQ(locator.locate(results[8]).kind, BatchLocation::Kind::Unknown);
}

} // namespace
