// A hand-written stand-in for generated code: a linear classifier (dense 4 -> 3, sparse
// softmax crossentropy from logits, SGD with lr 0.1, batch 4) laid out in an arena the way the
// compiler would. Linked with the real train_main.cpp it lets RuntimeMainTests check the command
// line, input validation, output lines and weight files without the compiler. Two parameters
// that the step never reads exercise glorot initialisation, and a State counter checks that
// state starts at zero and that the Step tensor holds the 1-based step number. The logits are the
// Prediction (accuracy, class-index range check). With SMOKE_READ_STALE_GRADIENT=1 in its
// environment the step reads the bias gradient before writing it (a planted bug, caught only by
// GRAPHC_POISON_ARENA: RuntimeMainTests).
#include "graphc/runtime/kernels.h"
#include "graphc/runtime/program.h"

#include <cstdlib>
#include <cstring>
#include <limits>

using namespace graphc::rt;

namespace {

constexpr int64_t kBatch = 4, kIn = 4, kOut = 3;

enum Offset : uint64_t {
  kWeight = 0, kBias = 64, kGlorot2d = 128, kGlorot4d = 192, kX = 320, kY = 384, kStep = 448,
  kLoss = 512, kLogits = 576, kDLogits = 640, kDW = 704, kDB = 768, kCounter = 832, kArena = 896,
};

// Zero weight and bias: the first step's loss is log(3) whatever the data.
const unsigned char kInitBlob[60] = {};

const TensorInfo kTensors[] = {
    {"fc/weight", TensorKind::Parameter, TensorRole::Parameter, DType::F32, 2, {kOut, kIn}, kWeight, 48, 0},
    {"fc.bias", TensorKind::Parameter, TensorRole::Parameter, DType::F32, 1, {kOut}, kBias, 12, 48},
    {"glorot:2d", TensorKind::Parameter, TensorRole::Parameter, DType::F32, 2, {5, 2}, kGlorot2d, 40, -1},
    {"conv w", TensorKind::Parameter, TensorRole::Parameter, DType::F32, 4, {2, 3, 2, 2}, kGlorot4d, 96, -1},
    {"x", TensorKind::Input, TensorRole::Data, DType::F32, 2, {kBatch, kIn}, kX, 64, -1},
    {"y", TensorKind::Input, TensorRole::Labels, DType::I64, 1, {kBatch}, kY, 32, -1},
    {"step", TensorKind::Input, TensorRole::Step, DType::F32, 0, {}, kStep, 4, -1},
    {"loss", TensorKind::Activation, TensorRole::Loss, DType::F32, 0, {}, kLoss, 4, -1},
    {"logits", TensorKind::Activation, TensorRole::Prediction, DType::F32, 2, {kBatch, kOut}, kLogits, 48, -1},
    {"dlogits", TensorKind::Gradient, TensorRole::None, DType::F32, 2, {kBatch, kOut}, kDLogits, 48, -1},
    {"fc/weight.grad", TensorKind::Gradient, TensorRole::None, DType::F32, 2, {kOut, kIn}, kDW, 48, -1},
    {"fc.bias.grad", TensorKind::Gradient, TensorRole::None, DType::F32, 1, {kOut}, kDB, 12, -1},
    {"counter", TensorKind::OptimizerState, TensorRole::State, DType::F32, 1, {1}, kCounter, 4, -1},
};

void trainStep(unsigned char *arena) {
  auto f = [arena](uint64_t off) { return reinterpret_cast<float *>(arena + off); };
  const int64_t *labels = reinterpret_cast<const int64_t *>(arena + kY);
  static const bool readStale = std::getenv("SMOKE_READ_STALE_GRADIENT") != nullptr;
  dense(f(kX), f(kWeight), f(kBias), f(kLogits), kBatch, kIn, kOut, /*transposeW=*/true);
  lossForward(LossKind::SparseCategoricalCrossentropy, true, f(kLogits), labels, f(kLoss), kBatch,
              kOut);
  if (readStale)
    *f(kLoss) += 0.0f * *f(kDB);
  lossBackward(LossKind::SparseCategoricalCrossentropy, true, f(kLogits), labels, f(kDLogits),
               kBatch, kOut);
  matmul(f(kDLogits), f(kX), f(kDW), kOut, kIn, kBatch, /*transA=*/true, false);
  biasGrad(f(kDLogits), f(kDB), kBatch, kOut, 1);
  sgdUpdate(f(kWeight), f(kDW), kOut * kIn, 0.1f);
  sgdUpdate(f(kBias), f(kDB), kOut, 0.1f);
  // The counter is State: zero at start-up, so after the increment it must equal the step.
  *f(kCounter) += 1.0f;
  if (*f(kCounter) != *f(kStep))
    *f(kLoss) = std::numeric_limits<float>::quiet_NaN();
}

} // namespace

extern "C" const Program graphc_program = {
    "smoke_linear", kArena, 64, kBatch, LossKind::SparseCategoricalCrossentropy, kTensors,
    static_cast<int32_t>(sizeof(kTensors) / sizeof(kTensors[0])), kInitBlob, sizeof(kInitBlob),
    &trainStep,
};
