// What the driver's repeated imports of one model share (importers/common/InitialValueCache.h,
// OnnxImportCache): each weight becomes one dense_resource per context, however many batch
// sizes the model is imported at, and a value that differs is never mistaken for a shared one.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"

#include "dialects/graph/GraphOps.h"
#include "importers/common/InitialValueCache.h"
#include "importers/onnx/OnnxImporter.h"

using namespace mlir;

namespace {

TEST(InitialValueCache, SharesOnlyEqualValues) {
  MLIRContext context;
  auto type = RankedTensorType::get({3}, Float32Type::get(&context));
  graphc::InitialValueCache cache;
  std::vector<float> values = {1.f, 2.f, 3.f};
  DenseResourceElementsAttr first = cache.get(type, "w", values);
  EXPECT_EQ(first, cache.get(type, "w", values)); // same name, type and bytes: shared
  std::vector<float> other = {1.f, 2.f, 4.f};
  DenseResourceElementsAttr changed = cache.get(type, "w", other); // new bytes: a new blob
  EXPECT_NE(first, changed);
  EXPECT_NE(first.getRawHandle().getKey(), changed.getRawHandle().getKey());
  auto wider = RankedTensorType::get({1, 3}, Float32Type::get(&context));
  EXPECT_NE(cache.get(wider, "w", other), changed); // another type: a new attribute
  EXPECT_NE(cache.get(type, "v", values), first);   // another name: its own
}

TEST(InitialValueCache, ForgetsAnotherContext) {
  MLIRContext a, b;
  graphc::InitialValueCache cache;
  std::vector<float> values = {0.5f};
  auto inA = cache.get(RankedTensorType::get({1}, Float32Type::get(&a)), "w", values);
  auto inB = cache.get(RankedTensorType::get({1}, Float32Type::get(&b)), "w", values);
  EXPECT_EQ(inA.getContext(), &a);
  EXPECT_EQ(inB.getContext(), &b);
}

/// The graph.init attribute of each parameter argument of @forward, in argument order.
std::vector<Attribute> initialValues(ModuleOp module) {
  std::vector<Attribute> out;
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (Attribute init = forward.getArgAttr(i, graphc::graph::kInitAttr))
      out.push_back(init);
  return out;
}

TEST(OnnxImportCache, OneBlobPerWeightAcrossBatches) {
  MLIRContext context;
  const std::string path = GRAPHC_EXAMPLES_DIR "/cnn.onnx";
  graphc::OnnxImportCache cache;
  std::string error;
  graphc::OnnxImportOptions at4, at8;
  at4.batch = 4;
  at8.batch = 8;
  auto first = graphc::importOnnxFile(path, context, at4, error, nullptr, &cache);
  ASSERT_TRUE(first) << error;
  auto second = graphc::importOnnxFile(path, context, at8, error, nullptr, &cache);
  ASSERT_TRUE(second) << error;
  std::vector<Attribute> a = initialValues(*first), b = initialValues(*second);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b); // the same attributes, so the same blobs

  // Without the cache, each import makes its own blobs (what the cache exists to avoid).
  auto uncached = graphc::importOnnxFile(path, context, at8, error);
  ASSERT_TRUE(uncached) << error;
  std::vector<Attribute> c = initialValues(*uncached);
  ASSERT_EQ(c.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NE(c[i], a[i]);

  // The batch still comes from each import's options.
  auto inputType = [](ModuleOp m) {
    return cast<RankedTensorType>(m.lookupSymbol<func::FuncOp>("forward").getArgument(0).getType());
  };
  EXPECT_EQ(inputType(*first).getDimSize(0), 4);
  EXPECT_EQ(inputType(*second).getDimSize(0), 8);
}

TEST(OnnxImportCache, AnotherFileOrAFailureStartsOver) {
  MLIRContext context;
  graphc::OnnxImportCache cache;
  std::string error;
  graphc::OnnxImportOptions options;
  ASSERT_TRUE(graphc::importOnnxFile(GRAPHC_EXAMPLES_DIR "/cnn.onnx", context, options, error,
                                     nullptr, &cache));
  auto mlp = graphc::importOnnxFile(GRAPHC_EXAMPLES_DIR "/mlp.onnx", context, options, error,
                                    nullptr, &cache);
  ASSERT_TRUE(mlp) << error; // the mlp's own weights, not the cnn's
  EXPECT_EQ(
      cast<RankedTensorType>(mlp->lookupSymbol<func::FuncOp>("forward").getArgument(0).getType())
          .getRank(),
      2);
  EXPECT_FALSE(graphc::importOnnxFile(GRAPHC_EXAMPLES_DIR "/missing.onnx", context, options, error,
                                      nullptr, &cache));
  EXPECT_EQ(cache.state, nullptr);
  EXPECT_NE(error.find("missing.onnx: cannot open the file"), std::string::npos);
}

} // namespace
