// libFuzzer target for the CUDA binary's program descriptor decoder (runtime/cuda/descriptor.cpp,
// compiled into this binary with the sanitizers): what every CUDA training binary does at start-up
// with the FlatBuffers descriptor embedded in it, and what `train --describe`, --save-weights and
// --init-weights rely on. Any input must come back as a decoded program or an error string, never
// a crash or an out-of-bounds read. A decoded one is checked for what the runtime then assumes:
// every tensor inside the arena (or the host arena behind it), every initial value inside the
// init blob, the parameter and data-input lists pointing at tensors of those roles.
//
// Input: 8 bytes (little-endian) giving the embedded init blob's size, capped at 4 MiB (the
// blob itself is zeros: the decoder checks offsets, not values), then the descriptor.
// Seed corpus (fuzz/corpus/fuzz-program-descriptor): the kDescriptor arrays of steps graphc
// emitted with --target=cuda --compile-to=source (fuzz/make_corpus.py --descriptors).
#include "graphc/runtime/cuda/descriptor.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace graphc::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8)
    return 0;
  uint64_t blobBytes = 0;
  for (int i = 7; i >= 0; --i)
    blobBytes = blobBytes << 8 | data[i];
  blobBytes = blobBytes > (4u << 20) ? blobBytes % (4u << 20) : blobBytes;
  const std::vector<unsigned char> blob(blobBytes, 0);
  data += 8;
  size -= 8;
  cuda::DecodedProgram decoded;
  std::string error;
  if (!cuda::decodeProgramDescriptor(data, size, blob.data(), blob.size(), decoded, error)) {
    if (error.empty())
      abort(); // a refusal must say why
    return 0;
  }
  const Program &p = decoded.program;
  const uint64_t limit = p.arenaBytes + p.hostArenaBytes;
  if (p.hostArenaBytes > UINT64_MAX - p.arenaBytes)
    abort();
  for (int32_t i = 0; i < p.numTensors; ++i) {
    const TensorInfo &t = p.tensors[i];
    if (t.offset > limit || t.bytes > limit - t.offset)
      abort(); // a tensor outside the arena passed the verifier
    if (t.initOffset >= 0 && (uint64_t(t.initOffset) > blob.size() ||
                              t.bytes > blob.size() - uint64_t(t.initOffset)))
      abort(); // initial values outside the blob passed the verifier
  }
  for (uint32_t index : decoded.parameters)
    if (index >= uint32_t(p.numTensors) || p.tensors[index].role != TensorRole::Parameter)
      abort();
  for (uint32_t index : decoded.dataInputs)
    if (index >= uint32_t(p.numTensors))
      abort();
  return 0;
}
