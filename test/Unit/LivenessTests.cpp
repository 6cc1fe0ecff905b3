// computeStepLiveness's value numbering and the fit pass's cache of the arguments' buffers
// (ArgumentBuffers): the cached call must give the buffers an uncached one does, also after the
// step changed (the fit pass inserts and erases recomputed ops between its calls).
#include "passes/Liveness.h"

#include "dialects/graph/GraphOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

using namespace mlir;
using namespace graphc;

namespace {

// The conv training step of test/Passes/graphc-test-print-liveness.mlir: the parameter and its
// velocity persist to the last step, the reshape views share the buffers they view, the
// momentum update writes in place.
constexpr const char *kConvStep = R"mlir(
func.func @conv_step(%f: tensor<4x1x3x3xf32> {graph.kind = "parameter", graph.name = "conv.weight"},
                     %vel: tensor<4x1x3x3xf32> {graph.kind = "optimizer_state", graph.name = "conv.weight.velocity"},
                     %x: tensor<2x1x5x5xf32> {graph.kind = "input", graph.name = "image"},
                     %lab: tensor<2xi64> {graph.kind = "input", graph.name = "labels"})
    -> (tensor<f32>, tensor<4x1x3x3xf32>, tensor<4x1x3x3xf32>) {
  %c = graph.conv2d %x, %f {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x1x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x3x3xf32> loc("conv")
  %r = graph.reshape %c : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32> loc("flatten")
  %loss = graph.loss sparse_categorical_crossentropy %r, %lab {from_logits} : (tensor<2x36xf32>, tensor<2xi64>) -> tensor<f32> loc("loss")
  %d = graph.loss_backward sparse_categorical_crossentropy %r, %lab {from_logits} : (tensor<2x36xf32>, tensor<2xi64>) -> tensor<2x36xf32> loc("loss.grad")
  %d4 = graph.reshape %d : (tensor<2x36xf32>) -> tensor<2x4x3x3xf32>
  %df = graph.conv2d_backward_filter %d4, %x {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x3x3xf32>, tensor<2x1x5x5xf32>) -> tensor<4x1x3x3xf32>
  %nf, %nv = graph.momentum_update %f, %df, %vel {lr = 0.5 : f32, momentum = 0.5 : f32} : tensor<4x1x3x3xf32>
  return %loss, %nf, %nv : tensor<f32>, tensor<4x1x3x3xf32>, tensor<4x1x3x3xf32>
}
)mlir";

using Range = std::tuple<uint64_t, int64_t, int64_t, bool>; // bytes, first, last, host

std::vector<Range> rangesOf(const StepLiveness &live) {
  std::vector<Range> ranges;
  for (const LiveBuffer &b : live.buffers)
    ranges.emplace_back(b.bytes, b.first, b.last, b.host);
  return ranges;
}

class LivenessTest : public ::testing::Test {
protected:
  void SetUp() override {
    context.loadDialect<graph::GraphDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(kConvStep, &context);
    ASSERT_TRUE(module);
    func = *module->getOps<func::FuncOp>().begin();
  }
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
};

TEST_F(LivenessTest, NumbersArgumentsThenResultsAndMapsViewsToTheirBuffers) {
  auto live = computeStepLiveness(func, /*reuseDyingOperands=*/true, /*withNames=*/false);
  ASSERT_TRUE(succeeded(live));
  ASSERT_EQ(live->steps.size(), 7u);
  // Arguments first, one buffer each, in order.
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    EXPECT_EQ(live->valueNumber(func.getArgument(i)), std::optional<unsigned>(i));
    EXPECT_EQ(live->bufferOf(func.getArgument(i)), std::optional<unsigned>(i));
  }
  // Then the results: the conv's is value 4 (buffer 4); the reshape view shares it.
  Operation *conv = live->steps[0], *flatten = live->steps[1];
  EXPECT_EQ(live->valueNumber(conv->getResult(0)), std::optional<unsigned>(4));
  EXPECT_EQ(live->bufferOf(flatten->getResult(0)), live->bufferOf(conv->getResult(0)));
  // The momentum update's results live in the parameter's and the velocity's buffers.
  Operation *update = live->steps[6];
  EXPECT_EQ(live->bufferOf(update->getResult(0)), std::optional<unsigned>(0));
  EXPECT_EQ(live->bufferOf(update->getResult(1)), std::optional<unsigned>(1));
  // A value of another function has no number.
  OpBuilder b(&context);
  auto other = b.create<func::FuncOp>(UnknownLoc::get(&context), "other",
                                      b.getFunctionType({b.getF32Type()}, {}));
  Block *entry = other.addEntryBlock();
  EXPECT_EQ(live->valueNumber(entry->getArgument(0)), std::nullopt);
  other.erase();
}

TEST_F(LivenessTest, CachedArgumentsGiveTheUncachedBuffers) {
  auto plain = computeStepLiveness(func, true, false);
  ASSERT_TRUE(succeeded(plain));
  ArgumentBuffers cache;
  auto filling = computeStepLiveness(func, true, false, &cache);
  ASSERT_TRUE(succeeded(filling));
  EXPECT_EQ(cache.buffers.size(), func.getNumArguments());
  EXPECT_EQ(cache.stepsHint, 7u);
  auto cached = computeStepLiveness(func, true, false, &cache);
  ASSERT_TRUE(succeeded(cached));
  EXPECT_EQ(rangesOf(*filling), rangesOf(*plain));
  EXPECT_EQ(rangesOf(*cached), rangesOf(*plain));
}

TEST_F(LivenessTest, CachedPersistentArgumentsReachTheNewLastStep) {
  ArgumentBuffers cache;
  ASSERT_TRUE(succeeded(computeStepLiveness(func, true, false, &cache)));
  // One more step (as a recomputed op the fit pass inserts): a second conv before the update.
  Operation *conv = &func.getBody().front().front();
  Operation *update = func.getBody().front().getTerminator()->getPrevNode();
  OpBuilder(update).clone(*conv);
  auto plain = computeStepLiveness(func, true, false);
  auto cached = computeStepLiveness(func, true, false, &cache);
  ASSERT_TRUE(succeeded(plain) && succeeded(cached));
  ASSERT_EQ(cached->steps.size(), 8u);
  EXPECT_EQ(rangesOf(*cached), rangesOf(*plain));
  // The parameter and its velocity live to the new last step (7), the inputs do not.
  EXPECT_EQ(cached->buffers[0].last, 7);
  EXPECT_EQ(cached->buffers[1].last, 7);
  EXPECT_EQ(cached->buffers[3].last, 3); // the labels, last read by loss_backward
}

TEST(Liveness, CachedFrozenParameterReachesTheNewLastStep) {
  // A parameter read by the first op only and not returned (frozen): only its kind keeps it
  // live to the last step, so the cache must not keep the last step it was filled at.
  MLIRContext context;
  context.loadDialect<graph::GraphDialect, func::FuncDialect>();
  auto module = parseSourceString<ModuleOp>(R"mlir(
func.func @frozen(%w: tensor<4xf32> {graph.kind = "parameter"},
                  %x: tensor<4xf32> {graph.kind = "input"}) -> tensor<4xf32> {
  %a = graph.relu %w : tensor<4xf32>
  %b = graph.relu %x : tensor<4xf32>
  %c = graph.relu %b : tensor<4xf32>
  return %c : tensor<4xf32>
}
)mlir",
                                            &context);
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  ArgumentBuffers cache;
  auto before = computeStepLiveness(func, true, false, &cache);
  ASSERT_TRUE(succeeded(before));
  EXPECT_EQ(before->buffers[0].last, 2);
  Block &body = func.getBody().front();
  // A fourth step that reads %b (not the parameter).
  OpBuilder(body.getTerminator()).clone(*body.getTerminator()->getPrevNode());
  auto cached = computeStepLiveness(func, true, false, &cache);
  ASSERT_TRUE(succeeded(cached));
  EXPECT_EQ(cached->buffers[0].last, 3);
  EXPECT_EQ(cached->buffers[1].last, 1); // the input dies at its reader
  EXPECT_EQ(rangesOf(*cached), rangesOf(*computeStepLiveness(func, true, false)));
}

TEST_F(LivenessTest, ChangedArgumentAttributesRefillTheCache) {
  ArgumentBuffers cache;
  ASSERT_TRUE(succeeded(computeStepLiveness(func, true, false, &cache)));
  // The image moves to host memory: the cache, keyed by the (uniqued) argument attributes,
  // must not answer with the device buffer it holds.
  func.setArgAttr(2, graph::kMemorySpaceAttr, StringAttr::get(&context, "host"));
  auto cached = computeStepLiveness(func, true, false, &cache);
  ASSERT_TRUE(succeeded(cached));
  EXPECT_TRUE(cached->buffers[2].host);
  EXPECT_EQ(rangesOf(*cached), rangesOf(*computeStepLiveness(func, true, false)));
}

} // namespace

// The workspace of a 16-bit convolution on cuDNN (kCudnnConvsAttr) holds cuDNN's layout
// transforms. ResNet-18's first convolution at batch 64 in bf16 asked for 154190864 bytes on an
// H200 (cuDNN 9.19, 2026-11-28), and the planned 128 MiB was refused; the planned workspace
// must now cover that, an f32 one keeps its im2col tile, and so does the step without the
// attribute (the CPU target).
TEST(Liveness, HalfConvolutionsOnCudnnPlanTheirLayoutTransforms) {
  MLIRContext context;
  context.loadDialect<graph::GraphDialect, func::FuncDialect>();
  auto module = parseSourceString<ModuleOp>(R"mlir(
func.func @conv1(%x: tensor<64x3x224x224xbf16>, %w: tensor<64x3x7x7xbf16>,
                 %xf: tensor<64x3x224x224xf32>, %wf: tensor<64x3x7x7xf32>)
    -> (tensor<64x64x112x112xbf16>, tensor<64x64x112x112xf32>) {
  %y = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>} : (tensor<64x3x224x224xbf16>, tensor<64x3x7x7xbf16>) -> tensor<64x64x112x112xbf16>
  %yf = graph.conv2d %xf, %wf {strides = array<i64: 2, 2>, padding = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>} : (tensor<64x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<64x64x112x112xf32>
  return %y, %yf : tensor<64x64x112x112xbf16>, tensor<64x64x112x112xf32>
}
)mlir",
                                            &context);
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  Operation *half = &func.getBody().front().front();
  Operation *full = half->getNextNode();
  const uint64_t halfTile = kernelWorkspaceBytes(half), fullTile = kernelWorkspaceBytes(full);
  EXPECT_LT(halfTile, 154190864u); // the CPU target's im2col tile only
  func->setAttr(kCudnnConvsAttr, UnitAttr::get(&context));
  // 2 x (64x8x224x224 + 64x64x112x112 + 64x8x7x7) + 4 x 64x8x7x7 + 1 MiB
  EXPECT_EQ(kernelWorkspaceBytes(half), 155339776u);
  EXPECT_GE(kernelWorkspaceBytes(half), 154190864u);
  EXPECT_EQ(kernelWorkspaceBytes(full), fullTile);
}

// A max-pool backward on the CUDA target records each window's argmax when windows overlap.
TEST(Liveness, OverlappingMaxPoolBackwardsOnCudaPlanTheirArgmaxes) {
  MLIRContext context;
  context.loadDialect<graph::GraphDialect, func::FuncDialect>();
  auto module = parseSourceString<ModuleOp>(R"mlir(
func.func @pools(%dy: tensor<64x64x56x56xf32>, %x: tensor<64x64x112x112xf32>,
                 %dy2: tensor<8x4x10x10xf32>, %x2: tensor<8x4x20x20xf32>,
                 %dy3: tensor<8x4x3x3xf32>, %x3: tensor<8x4x20x20xf32>)
    -> (tensor<64x64x112x112xf32>, tensor<8x4x20x20xf32>, tensor<8x4x20x20xf32>) {
  %a = graph.max_pool2d_backward %dy, %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<64x64x56x56xf32>, tensor<64x64x112x112xf32>) -> tensor<64x64x112x112xf32>
  %b = graph.max_pool2d_backward %dy2, %x2 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<8x4x10x10xf32>, tensor<8x4x20x20xf32>) -> tensor<8x4x20x20xf32>
  %c = graph.max_pool2d_backward %dy3, %x3 {kernel = array<i64: 16, 16>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<8x4x3x3xf32>, tensor<8x4x20x20xf32>) -> tensor<8x4x20x20xf32>
  return %a, %b, %c : tensor<64x64x112x112xf32>, tensor<8x4x20x20xf32>, tensor<8x4x20x20xf32>
}
)mlir",
                                            &context);
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  Operation *stem = &func.getBody().front().front();
  Operation *tiled = stem->getNextNode();
  Operation *wide = tiled->getNextNode();
  EXPECT_EQ(kernelWorkspaceBytes(stem), 0u); // the CPU target scans the windows
  func->setAttr(kCudnnConvsAttr, UnitAttr::get(&context));
  EXPECT_EQ(kernelWorkspaceBytes(stem), 12845056u); // 64 x 64 x 56 x 56 outputs, a byte each
  EXPECT_EQ(kernelWorkspaceBytes(tiled), 0u);       // 2x2 stride 2: windows do not overlap
  EXPECT_EQ(kernelWorkspaceBytes(wide), 1152u);     // 288 windows of 256 elements: int32 each
}

// Filter gradients add split-K partial sums of the f32 filter. Measured on the H200: the
// 64x64x64 CNN's second convolution (128x64x3x3 over 31x31) asked 25633447 bytes, ResNet-18's
// layer3.0 downsample (256x128x1x1, stride 2) 23134352 and its first convolution (64x3x7x7,
// 61 partial sums) 160312464, ResNet-50's layer3.0 downsample at batch 1880 (1024x512x1x1,
// 8 partial sums of 2 MiB) 2281767551.
TEST(Liveness, HalfFilterGradientsOnCudnnPlanTheirPartialSums) {
  MLIRContext context;
  context.loadDialect<graph::GraphDialect, func::FuncDialect>();
  auto module = parseSourceString<ModuleOp>(R"mlir(
func.func @grads(%dy: tensor<64x128x29x29xbf16>, %x: tensor<64x64x31x31xbf16>,
                 %dy2: tensor<64x256x14x14xbf16>, %x2: tensor<64x128x28x28xbf16>,
                 %dy3: tensor<64x64x112x112xbf16>, %x3: tensor<64x3x224x224xbf16>,
                 %dy4: tensor<1880x1024x14x14xbf16>, %x4: tensor<1880x512x28x28xbf16>)
    -> (tensor<128x64x3x3xbf16>, tensor<256x128x1x1xbf16>, tensor<64x3x7x7xbf16>,
        tensor<1024x512x1x1xbf16>) {
  %w = graph.conv2d_backward_filter %dy, %x {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<64x128x29x29xbf16>, tensor<64x64x31x31xbf16>) -> tensor<128x64x3x3xbf16>
  %w2 = graph.conv2d_backward_filter %dy2, %x2 {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<64x256x14x14xbf16>, tensor<64x128x28x28xbf16>) -> tensor<256x128x1x1xbf16>
  %w3 = graph.conv2d_backward_filter %dy3, %x3 {strides = array<i64: 2, 2>, padding = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>} : (tensor<64x64x112x112xbf16>, tensor<64x3x224x224xbf16>) -> tensor<64x3x7x7xbf16>
  %w4 = graph.conv2d_backward_filter %dy4, %x4 {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1880x1024x14x14xbf16>, tensor<1880x512x28x28xbf16>) -> tensor<1024x512x1x1xbf16>
  return %w, %w2, %w3, %w4 : tensor<128x64x3x3xbf16>, tensor<256x128x1x1xbf16>, tensor<64x3x7x7xbf16>, tensor<1024x512x1x1xbf16>
}
)mlir",
                                            &context);
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  func->setAttr(kCudnnConvsAttr, UnitAttr::get(&context));
  Operation *cnn = &func.getBody().front().front();
  Operation *downsample = cnn->getNextNode();
  Operation *conv1 = downsample->getNextNode();
  Operation *wide = conv1->getNextNode();
  // 2 x (64x64x31x31 + 64x128x29x29 + 128x64x3x3) + 4 x 128x64x3x3 + 1 MiB
  //   + min(64 x 294912, max(32 MiB, 8 x 294912)) = 18874368 bytes of partial sums
  EXPECT_EQ(kernelWorkspaceBytes(cnn), 42016768u);
  EXPECT_GE(kernelWorkspaceBytes(cnn), 25633447u);
  EXPECT_GE(kernelWorkspaceBytes(downsample), 23134352u);
  EXPECT_GE(kernelWorkspaceBytes(conv1), 160312464u);
  EXPECT_GE(kernelWorkspaceBytes(wide), 2281767551u);
}
