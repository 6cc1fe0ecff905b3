// Checkpoints of a training run (--checkpoint DIR, --resume): encoding to and decoding from the
// FlatBuffers format of runtime/checkpoint.fbs, the compatibility check against the compiled
// program, and crash-safe files (temporary file, fsync, rename, fsync of the directory).
//
// Decoding never trusts its input: the envelope and the payload are each checked by the
// flatbuffers Verifier, the payload by its CRC-32C in between, and every tensor's size against
// its shape; every problem comes back as an error string (fuzz/FuzzCheckpoint.cpp).
#pragma once

#include "graphc/runtime/program.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace graphc::rt {

/// Bumped on any incompatible change of checkpoint.fbs.
constexpr uint32_t kCheckpointFormatVersion = 1;

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as in iSCSI/ext4/LevelDB:
/// crc32c("123456789") == 0xE3069283. crc continues a previous call's result.
uint32_t crc32c(const void *data, size_t size, uint32_t crc = 0);

/// 64-bit FNV-1a hash of everything that makes an arena layout: the model name, arena size,
/// alignment, batch, loss, and per tensor its name, kind, role, dtype, shape, offset and size.
/// Two binaries whose checkpoints are interchangeable have equal fingerprints.
uint64_t programFingerprint(const Program &prog);

/// The scalar part of a checkpoint (Payload and DataOrder in checkpoint.fbs).
struct CheckpointState {
  std::string modelName;
  uint64_t fingerprint = 0;
  int64_t batch = 0;
  int64_t step = 0;              // steps completed
  int64_t epoch = 0;             // epochs completed
  uint64_t seed = 0;
  bool shuffle = false;
  bool padLastBatch = false;
  int64_t trainSamples = 0;
  int64_t validationSamples = 0;
  int64_t stepsPerEpoch = 0;
  int64_t nextEpoch = 1;         // 1-based epoch of step + 1
  int64_t nextBatchInEpoch = 0;  // 0-based batch of step + 1 within it
  std::string dataOrderRng;      // mt19937_64 textual state; empty without --shuffle
  float lossScale = 1.0f;
  double epochLossSum = 0.0, epochCorrect = 0.0, epochSeen = 0.0;
  int32_t worldSize = 1;         // data-parallel ranks (batch is per rank)
};

/// One saved tensor; data points into the decoded buffer.
struct CheckpointTensor {
  std::string name;
  TensorRole role = TensorRole::Parameter;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const unsigned char *data = nullptr;
  uint64_t bytes = 0;
};

/// Writes a checkpoint of state and of every Parameter and State tensor of prog (read from
/// arena) into out. False (with error) only if it would exceed FlatBuffers' 2 GiB limit.
bool encodeCheckpoint(const Program &prog, const unsigned char *arena,
                      const CheckpointState &state, std::vector<uint8_t> &out,
                      std::string &error);

/// Verifies and decodes a checkpoint image. On failure error says what is wrong ("not a graphc
/// checkpoint", "CRC mismatch", ...) without naming the file.
bool decodeCheckpoint(const uint8_t *bytes, size_t size, CheckpointState &state,
                      std::vector<CheckpointTensor> &tensors, std::string &error);

/// Whether a decoded checkpoint belongs to prog (same model, same plan, every Parameter and
/// State tensor present with its shape and dtype). error gives the first difference.
bool checkpointMatchesProgram(const CheckpointState &state,
                              const std::vector<CheckpointTensor> &tensors, const Program &prog,
                              std::string &error);

/// Copies the tensors into arena; call only after checkpointMatchesProgram succeeded.
void restoreCheckpointTensors(const std::vector<CheckpointTensor> &tensors, const Program &prog,
                              unsigned char *arena);

/// "ckpt-000000000042.gckpt": the checkpoint after step 42.
std::string checkpointFileName(int64_t step);

/// The checkpoints in dir, newest (highest step) first, as (step, path). Other files are
/// ignored. A missing directory is an empty list.
std::vector<std::pair<int64_t, std::string>> listCheckpoints(const std::string &dir);

/// Writes dir/leaf so that it either has the new contents in full or does not exist: a
/// temporary file in dir, fsync, rename over leaf, fsync of dir.
bool writeFileAtomic(const std::string &dir, const std::string &leaf, const void *data,
                     size_t size, std::string &error);

/// Removes leftover temporary files of writeFileAtomic (a run killed mid-write).
void removeStaleTemporaries(const std::string &dir);

/// Deletes all but the newest keep checkpoints of dir.
bool pruneCheckpoints(const std::string &dir, int64_t keep, std::string &error);

/// Reads a whole file.
bool readWholeFile(const std::string &path, std::vector<uint8_t> &out, std::string &error);

} // namespace graphc::rt
