// Verification and decoding of the program descriptor (descriptor.h, runtime/program.fbs).
#include "graphc/runtime/cuda/descriptor.h"

#include "graphc/runtime/program_generated.h"
#include "graphc/runtime/staging.h"

#include <cstdint>
#include <cstring>

namespace graphc::rt::cuda {

namespace {

std::string tensorName(const desc::Tensor *t, size_t i) {
  return t && t->name() ? "tensor '" + t->name()->str() + "'" : "tensor #" + std::to_string(i);
}

} // namespace

bool decodeProgramDescriptor(const uint8_t *data, size_t size, const unsigned char *initBlob,
                             uint64_t initBlobBytes, DecodedProgram &out, std::string &error) {
  if (!data || size < 8) {
    error = "the descriptor is " + std::to_string(size) + " bytes, too short for a FlatBuffer";
    return false;
  }
  if (!desc::ProgramBufferHasIdentifier(data)) {
    char id[5] = {};
    std::memcpy(id, data + 4, 4);
    for (char &c : id)
      if (c && (c < 0x20 || c > 0x7e))
        c = '?';
    error = std::string("not a program descriptor (file identifier '") + id + "', expected '" +
            desc::ProgramIdentifier() + "')";
    return false;
  }
  flatbuffers::Verifier verifier(data, size);
  if (!desc::VerifyProgramBuffer(verifier)) {
    error = "the descriptor (" + std::to_string(size) +
            " bytes) fails the FlatBuffers verifier: it is truncated or corrupted";
    return false;
  }
  const desc::Program *p = desc::GetProgram(data);
  if (p->format_version() != kProgramDescriptorVersion) {
    error = "descriptor format version " + std::to_string(p->format_version()) +
            ", this runtime reads version " + std::to_string(kProgramDescriptorVersion);
    return false;
  }
  if (p->alignment() == 0 || (p->alignment() & (p->alignment() - 1)) != 0) {
    error = "alignment " + std::to_string(p->alignment()) + " is not a power of two";
    return false;
  }
  if (p->init_blob_bytes() != initBlobBytes) {
    error = "the descriptor expects " + std::to_string(p->init_blob_bytes()) +
            " bytes of initial values, the binary embeds " + std::to_string(initBlobBytes);
    return false;
  }
  const auto *tensors = p->tensors();
  out.modelName = p->model_name() ? p->model_name()->str() : "";
  out.target = p->target() ? p->target()->str() : "";
  out.tensors.clear();
  out.tensors.reserve(tensors->size());
  for (flatbuffers::uoffset_t i = 0; i < tensors->size(); ++i) {
    const desc::Tensor *t = tensors->Get(i);
    const std::string what = tensorName(t, i);
    TensorInfo info{};
    info.name = t->name()->c_str();
    info.kind = static_cast<TensorKind>(t->kind());
    info.role = static_cast<TensorRole>(t->role());
    info.dtype = static_cast<DType>(t->dtype());
    if (t->kind() > desc::TensorKind_MAX || t->role() > desc::TensorRole_MAX ||
        t->dtype() > desc::DType_MAX) {
      error = what + " has an unknown kind, role or dtype";
      return false;
    }
    const auto *shape = t->shape();
    // The FlatBuffers verifier checks a vector's length word, not that 8-byte elements are
    // 8-byte aligned: a corrupted offset could otherwise make the reads below misaligned
    // (found by fuzz/FuzzProgramDescriptor.cpp). The embedded descriptor is 16-byte aligned.
    // (An empty shape, a scalar's, has no elements to read, and flatc need not align it.)
    if (shape && shape->size() > 0 &&
        reinterpret_cast<uintptr_t>(shape->data()) % alignof(int64_t) != 0) {
      error = what + "'s shape is misaligned: the descriptor is corrupted";
      return false;
    }
    const size_t rank = shape ? shape->size() : 0;
    if (rank > static_cast<size_t>(kMaxRank)) {
      error = what + " has rank " + std::to_string(rank) + ", at most " +
              std::to_string(kMaxRank) + " are supported";
      return false;
    }
    info.rank = static_cast<int32_t>(rank);
    unsigned __int128 elements = 1;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t dim = shape->Get(static_cast<flatbuffers::uoffset_t>(d));
      if (dim < 0) {
        error = what + " has a negative dimension";
        return false;
      }
      info.dims[d] = dim;
      elements *= static_cast<uint64_t>(dim);
    }
    const unsigned __int128 expected = elements * (info.dtype == DType::F32 ? 4u : 8u);
    if (expected != t->bytes()) {
      error = what + " is " + std::to_string(t->bytes()) + " bytes, its shape needs " +
              std::to_string(static_cast<uint64_t>(expected));
      return false;
    }
    info.offset = t->offset();
    info.bytes = t->bytes();
    // The host arena (offloaded optimizer state) follows the device arena's offsets.
    const uint64_t space = p->host_arena_bytes() <= UINT64_MAX - p->arena_bytes()
                               ? p->arena_bytes() + p->host_arena_bytes()
                               : 0;
    if (info.offset > space || info.bytes > space - info.offset) {
      error = what + " at offset " + std::to_string(info.offset) + " (" +
              std::to_string(info.bytes) + " bytes) lies outside the arena of " +
              std::to_string(p->arena_bytes()) + " bytes" +
              (p->host_arena_bytes() ? " and the host arena of " +
                                           std::to_string(p->host_arena_bytes()) + " bytes after it"
                                     : std::string());
      return false;
    }
    if (info.offset >= p->arena_bytes() && info.bytes &&
        t->role() != desc::TensorRole_State) {
      error = what + " lies in the host arena but is not optimizer state";
      return false;
    }
    if (info.offset % p->alignment() != 0) {
      error = what + " at offset " + std::to_string(info.offset) + " is not aligned to " +
              std::to_string(p->alignment());
      return false;
    }
    info.initOffset = t->init_offset();
    if (info.initOffset >= 0 &&
        (static_cast<uint64_t>(info.initOffset) > initBlobBytes ||
         info.bytes > initBlobBytes - static_cast<uint64_t>(info.initOffset))) {
      error = what + "'s initial value lies outside the init blob";
      return false;
    }
    info.indexLimit = t->index_limit();
    if (info.indexLimit < 0 || (info.indexLimit > 0 && t->role() != desc::TensorRole_Data)) {
      error = what + " has an index limit of " + std::to_string(info.indexLimit) +
              "; only data tensors have one, and it is positive";
      return false;
    }
    out.tensors.push_back(info);
  }
  auto readIndices = [&](const flatbuffers::Vector<uint32_t> *list, const char *field,
                         std::vector<uint32_t> &dst, bool (*roleOk)(TensorRole)) {
    dst.clear();
    if (!list)
      return true;
    for (uint32_t index : *list) {
      if (index >= out.tensors.size()) {
        error = std::string(field) + " names tensor #" + std::to_string(index) + " of " +
                std::to_string(out.tensors.size());
        return false;
      }
      if (!roleOk(out.tensors[index].role)) {
        error = std::string(field) + " lists '" + out.tensors[index].name +
                "', which has another role";
        return false;
      }
      dst.push_back(index);
    }
    return true;
  };
  if (!readIndices(p->parameters(), "parameters", out.parameters,
                   [](TensorRole r) { return r == TensorRole::Parameter; }) ||
      !readIndices(p->data_inputs(), "data_inputs", out.dataInputs, [](TensorRole r) {
        return r == TensorRole::Data || r == TensorRole::Labels || r == TensorRole::SampleWeights ||
               r == TensorRole::Step;
      }))
    return false;

  out.staging = StagingLayout{};
  const TensorInfo *labelsT = nullptr, *staging = nullptr;
  // In the program's order, then the sample weights as one more data input: staging.h's layout.
  std::vector<const TensorInfo *> dataTs;
  const TensorInfo *sampleWeights = nullptr;
  int labelsCount = 0, stagingCount = 0, sampleWeightsCount = 0;
  for (const TensorInfo &t : out.tensors) {
    if (t.role == TensorRole::Data)
      dataTs.push_back(&t);
    else if (t.role == TensorRole::SampleWeights)
      sampleWeights = &t, ++sampleWeightsCount;
    else if (t.role == TensorRole::Labels)
      labelsT = &t, ++labelsCount;
    else if (t.role == TensorRole::Staging)
      staging = &t, ++stagingCount;
  }
  if (sampleWeightsCount > 1 ||
      (sampleWeights && (sampleWeights->dtype != DType::F32 || sampleWeights->rank < 1))) {
    error = "a program takes at most one float32 [batch, ...] sample-weights tensor";
    return false;
  }
  if (sampleWeights)
    dataTs.push_back(sampleWeights);
  if (staging) {
    if (stagingCount != 1 || dataTs.empty() || labelsCount != 1) {
      error = "a next-batch staging region needs exactly one staging tensor, data tensors and "
              "one labels tensor (found " +
              std::to_string(stagingCount) + ", " + std::to_string(dataTs.size()) + " and " +
              std::to_string(labelsCount) + ")";
      return false;
    }
    StagingLayout &l = out.staging;
    for (const TensorInfo *t : dataTs) {
      const uint64_t at = stagedDataOffset(l.dataBytes);
      l.data.push_back({t->offset, at, t->bytes});
      l.dataBytes = at + t->bytes; // (each at most the arena: no overflow)
    }
    if (staging->offset >= p->arena_bytes() ||
        staging->bytes < stagingBytes(l.dataBytes, labelsT->bytes)) {
      error = "the next-batch staging region (" + std::to_string(staging->bytes) +
              " bytes) cannot hold the data and labels (" +
              std::to_string(stagingBytes(l.dataBytes, labelsT->bytes)) +
              " bytes in its layout), or lies outside the device arena";
      return false;
    }
    l.present = true;
    l.offset = staging->offset;
    l.labelsOffset = labelsT->offset;
    l.labelsBytes = labelsT->bytes;
  }

  Program &prog = out.program;
  prog = Program{};
  prog.modelName = out.modelName.c_str();
  prog.arenaBytes = p->arena_bytes();
  prog.hostArenaBytes = p->host_arena_bytes();
  prog.alignment = p->alignment();
  prog.batch = p->batch();
  prog.loss = static_cast<LossKind>(p->loss());
  prog.tensors = out.tensors.data();
  prog.numTensors = static_cast<int32_t>(out.tensors.size());
  prog.initBlob = initBlob;
  prog.initBlobBytes = initBlobBytes;
  prog.worldSize = p->world_size();
  prog.allReduceBuckets = p->all_reduce_buckets();
  prog.shardedOptimizerState = p->sharded_optimizer_state();
  if (auto ignored = p->ignore_index()) {
    if (prog.loss != LossKind::SparseCategoricalCrossentropy) {
      error = "ignore_index is set, but the loss is not sparse_categorical_crossentropy";
      return false;
    }
    prog.hasIgnoreIndex = true;
    prog.ignoreIndex = *ignored;
  }
  prog.maskedLoss = p->masked_loss();
  if (prog.worldSize < 0 || prog.allReduceBuckets < 0) {
    error = "world_size (" + std::to_string(prog.worldSize) + ") or all_reduce_buckets (" +
            std::to_string(prog.allReduceBuckets) + ") is negative";
    return false;
  }
  if (prog.allReduceBuckets > 0 && prog.worldSize < 1) {
    error = "all_reduce_buckets is " + std::to_string(prog.allReduceBuckets) +
            " but world_size is 0: gradient buckets need a data-parallel program";
    return false;
  }
  return true;
}

} // namespace graphc::rt::cuda
