// libFuzzer target for the checkpoint loader (runtime/lib/checkpoint.cpp, compiled into this
// binary with the sanitizers): what --resume does with a file it finds in the checkpoint
// directory. Any input must come back as a decoded checkpoint or an error string, never a
// crash or an out-of-bounds read; a decoded one is checked against the smoke program's tensor
// table and, if it matches, restored into an arena, which reads every tensor byte.
//
// Seed corpus (fuzz/corpus/fuzz-checkpoint): checkpoints written by runtime-smoke-train, with
// and without --shuffle (whose data-order generator state makes the payload larger):
//   runtime-smoke-train --data x.npy --labels y.npy --steps 3 --checkpoint DIR [--shuffle]
#include "graphc/runtime/checkpoint.h"
#include "graphc/runtime/checkpoint_generated.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace graphc::rt;

// The tensor table of runtime-smoke-train (test/Unit/RuntimeSmokeProgram.cpp), so that the
// seeds match it and mutations exercise the restore path too.
constexpr int64_t kBatch = 4, kIn = 4, kOut = 3;
const TensorInfo kTensors[] = {
    {"fc/weight", TensorKind::Parameter, TensorRole::Parameter, DType::F32, 2, {kOut, kIn}, 0, 48, 0},
    {"fc.bias", TensorKind::Parameter, TensorRole::Parameter, DType::F32, 1, {kOut}, 64, 12, 48},
    {"glorot:2d", TensorKind::Parameter, TensorRole::Parameter, DType::F32, 2, {5, 2}, 128, 40, -1},
    {"conv w", TensorKind::Parameter, TensorRole::Parameter, DType::F32, 4, {2, 3, 2, 2}, 192, 96, -1},
    {"x", TensorKind::Input, TensorRole::Data, DType::F32, 2, {kBatch, kIn}, 320, 64, -1},
    {"y", TensorKind::Input, TensorRole::Labels, DType::I64, 1, {kBatch}, 384, 32, -1},
    {"step", TensorKind::Input, TensorRole::Step, DType::F32, 0, {}, 448, 4, -1},
    {"loss", TensorKind::Activation, TensorRole::Loss, DType::F32, 0, {}, 512, 4, -1},
    {"logits", TensorKind::Activation, TensorRole::Prediction, DType::F32, 2, {kBatch, kOut}, 576, 48, -1},
    {"dlogits", TensorKind::Gradient, TensorRole::None, DType::F32, 2, {kBatch, kOut}, 640, 48, -1},
    {"fc/weight.grad", TensorKind::Gradient, TensorRole::None, DType::F32, 2, {kOut, kIn}, 704, 48, -1},
    {"fc.bias.grad", TensorKind::Gradient, TensorRole::None, DType::F32, 1, {kOut}, 768, 12, -1},
    {"counter", TensorKind::OptimizerState, TensorRole::State, DType::F32, 1, {1}, 832, 4, -1},
};
const Program kProgram = {"smoke_linear", 896, 64, kBatch, LossKind::SparseCategoricalCrossentropy,
                          kTensors, 13, nullptr, 0, nullptr};

} // namespace

static int matched = 0; // seeds match; a debugger can tell whether mutations still do

static void check(const uint8_t *data, size_t size) {
  CheckpointState state;
  std::vector<CheckpointTensor> tensors;
  std::string error;
  if (!decodeCheckpoint(data, size, state, tensors, error)) {
    if (error.empty())
      abort(); // a failure must say why
    return;
  }
  // Every tensor's bytes lie inside the input and match its shape.
  uint64_t sum = 0;
  for (const CheckpointTensor &t : tensors) {
    if (t.bytes && (t.data < data || t.data + t.bytes > data + size))
      abort();
    for (uint64_t i = 0; i < t.bytes; ++i)
      sum += t.data[i];
  }
  (void)sum;
  if (checkpointMatchesProgram(state, tensors, kProgram, error)) {
    ++matched;
    std::vector<unsigned char> arena(kProgram.arenaBytes);
    restoreCheckpointTensors(tensors, kProgram, arena.data());
  } else if (error.empty()) {
    abort();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check(data, size);
  // Almost every mutation of the payload is stopped by the CRC. So that the payload's own
  // verification is fuzzed too, a copy whose envelope verifies gets its CRC field rewritten to
  // match the (mutated) payload and is decoded again.
  flatbuffers::Verifier envelope(data, size);
  if (size < 8 || !graphc::ckpt::VerifyCheckpointBuffer(envelope))
    return 0;
  std::vector<uint8_t> copy(data, data + size);
  const auto *ckpt = graphc::ckpt::GetCheckpoint(copy.data());
  const uint8_t *field = reinterpret_cast<const flatbuffers::Table *>(ckpt)->GetAddressOf(
      graphc::ckpt::Checkpoint::VT_PAYLOAD_CRC32C);
  if (!field)
    return 0;
  const uint32_t crc = crc32c(ckpt->payload()->data(), ckpt->payload()->size());
  std::memcpy(copy.data() + (field - copy.data()), &crc, sizeof(crc)); // little endian
  check(copy.data(), copy.size());
  return 0;
}
