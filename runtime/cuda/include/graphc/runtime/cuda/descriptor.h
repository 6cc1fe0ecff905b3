// The program descriptor (runtime/program.fbs): verification and decoding into the runtime's
// tensor table. Host-only code (no CUDA), so that it is tested on every machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graphc/runtime/program.h"

namespace graphc::rt::cuda {

/// Bumped on any incompatible change of runtime/program.fbs.
constexpr uint32_t kProgramDescriptorVersion = 1;

/// A decoded descriptor. `program.tensors` points into `tensors`, tensor names and the model name
/// point into `modelName` and the descriptor buffer, which must outlive this object; the object
/// must not be copied or moved once `program` is in use.
/// Where the next batch is uploaded while a step runs (role Staging; graphc/runtime/staging.h):
/// the staging region's offset, and the Data tensors (in order) and the Labels tensor it feeds.
/// `present` is false when the program has no staging region (graphc --no-stage-next-batch).
struct StagingLayout {
  /// One data input: its tensor's offset in the arena, and where it lies in the region.
  struct Data {
    uint64_t arenaOffset = 0, stagedOffset = 0, bytes = 0;
  };
  bool present = false;
  uint64_t offset = 0;
  std::vector<Data> data;
  uint64_t dataBytes = 0; // of every data input, in the region's layout
  uint64_t labelsOffset = 0, labelsBytes = 0;
  /// Whether `arenaOffset` is one of the staged data inputs'.
  bool stagesData(uint64_t arenaOffset) const {
    for (const Data &d : data)
      if (d.arenaOffset == arenaOffset)
        return true;
    return false;
  }
};

struct DecodedProgram {
  std::string modelName, target;
  std::vector<TensorInfo> tensors;
  std::vector<uint32_t> parameters, dataInputs;
  StagingLayout staging;
  Program program{};
};

/// Verifies `data` (size bytes) with the flatbuffers Verifier, then its contents against what the
/// runtime relies on (identifier, version, ranks, sizes, offsets inside the arena and aligned,
/// initial values inside the init blob, the parameter and input lists, a staging region large
/// enough for one batch of the data and labels). On success fills `out`
/// (program.trainStep and program.seed are left for the caller). On failure `error` says what is
/// wrong, e.g. "not a program descriptor (file identifier 'XXXX', expected 'GPRG')".
bool decodeProgramDescriptor(const uint8_t *data, size_t size, const unsigned char *initBlob,
                             uint64_t initBlobBytes, DecodedProgram &out, std::string &error);

} // namespace graphc::rt::cuda
