// Checkpoint encoding, verification and crash-safe files (checkpoint.h, runtime/checkpoint.fbs).
#include "graphc/runtime/checkpoint.h"

#include "graphc/runtime/checkpoint_generated.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace graphc::rt {

namespace {

struct Crc32cTable {
  uint32_t t[256];
  Crc32cTable() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
  }
};

const Crc32cTable &crcTable() {
  static const Crc32cTable table;
  return table;
}

size_t elementSize(DType d) { return d == DType::F32 ? 4 : 8; }

int clampRank(int32_t rank) { return rank < 0 ? 0 : (rank > kMaxRank ? kMaxRank : rank); }

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

const char *dtypeText(DType d) { return d == DType::F32 ? "float32" : "int64"; }

bool savedRole(TensorRole r) { return r == TensorRole::Parameter || r == TensorRole::State; }

// Leaves ".ckpt-tmp-*" for writeFileAtomic, "ckpt-<digits>.gckpt" for checkpoints.
constexpr const char *kTempPrefix = ".ckpt-tmp-";

bool parseCheckpointName(const char *leaf, int64_t &step) {
  const size_t n = std::strlen(leaf);
  const char *prefix = "ckpt-", *suffix = ".gckpt";
  if (n <= 5 + 6 || std::strncmp(leaf, prefix, 5) != 0 || std::strcmp(leaf + n - 6, suffix) != 0)
    return false;
  int64_t v = 0;
  for (size_t i = 5; i < n - 6; ++i) {
    if (leaf[i] < '0' || leaf[i] > '9' || v > (INT64_MAX - 9) / 10)
      return false;
    v = v * 10 + (leaf[i] - '0');
  }
  step = v;
  return true;
}

bool fsyncDir(const std::string &dir, std::string &error) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    error = dir + ": cannot sync the directory: " + std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    return false;
  }
  ::close(fd);
  return true;
}

} // namespace

uint32_t crc32c(const void *data, size_t size, uint32_t crc) {
  const Crc32cTable &table = crcTable();
  const unsigned char *p = static_cast<const unsigned char *>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i)
    crc = table.t[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint64_t programFingerprint(const Program &prog) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto bytes = [&h](const void *p, size_t n) {
    const unsigned char *c = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= c[i];
      h *= 0x100000001b3ull;
    }
  };
  auto u64 = [&](uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i)
      b[i] = static_cast<unsigned char>(v >> (8 * i));
    bytes(b, 8);
  };
  auto str = [&](const char *s) {
    const size_t n = s ? std::strlen(s) : 0;
    u64(n); // length-prefixed: ("ab","c") and ("a","bc") differ
    bytes(s, n);
  };
  str(prog.modelName);
  u64(prog.arenaBytes);
  u64(prog.alignment);
  u64(static_cast<uint64_t>(prog.batch));
  u64(static_cast<uint64_t>(prog.loss));
  u64(static_cast<uint64_t>(prog.numTensors));
  for (int i = 0; i < prog.numTensors; ++i) {
    const TensorInfo &t = prog.tensors[i];
    str(t.name);
    u64(static_cast<uint64_t>(t.kind));
    u64(static_cast<uint64_t>(t.role));
    u64(static_cast<uint64_t>(t.dtype));
    const int rank = clampRank(t.rank);
    u64(static_cast<uint64_t>(rank));
    for (int d = 0; d < rank; ++d)
      u64(static_cast<uint64_t>(t.dims[d]));
    u64(t.offset);
    u64(t.bytes);
  }
  return h;
}

bool encodeCheckpoint(const Program &prog, const unsigned char *arena,
                      const CheckpointState &state, std::vector<uint8_t> &out,
                      std::string &error) {
  namespace fb = graphc::ckpt;
  uint64_t total = 0;
  for (int i = 0; i < prog.numTensors; ++i)
    if (savedRole(prog.tensors[i].role))
      total += prog.tensors[i].bytes;
  // Both buffers hold the tensors once; leave room for the tables and the envelope.
  if (total > (uint64_t(FLATBUFFERS_MAX_BUFFER_SIZE) - (uint64_t(1) << 24))) {
    error = "the parameters and optimizer state (" + std::to_string(total) +
            " bytes) exceed the 2 GiB limit of a FlatBuffers checkpoint";
    return false;
  }

  flatbuffers::FlatBufferBuilder pb(static_cast<size_t>(total) + 4096);
  pb.ForceDefaults(true); // e.g. loss_scale 1.0 is written, not implied
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (int i = 0; i < prog.numTensors; ++i) {
    const TensorInfo &t = prog.tensors[i];
    if (!savedRole(t.role))
      continue;
    const int rank = clampRank(t.rank);
    auto name = pb.CreateString(t.name ? t.name : "");
    auto shape = pb.CreateVector(std::vector<int64_t>(t.dims, t.dims + rank));
    pb.ForceVectorAlignment(static_cast<size_t>(t.bytes), 1, 16);
    auto data = pb.CreateVector(arena + t.offset, static_cast<size_t>(t.bytes));
    tensors.push_back(fb::CreateTensor(
        pb, name, t.role == TensorRole::State ? fb::TensorRole_State : fb::TensorRole_Parameter,
        t.dtype == DType::F32 ? fb::DType_F32 : fb::DType_I64, shape, data));
  }
  auto tensorVec = pb.CreateVector(tensors);
  auto order = fb::CreateDataOrder(pb, state.seed, state.shuffle, state.padLastBatch,
                                   state.trainSamples, state.validationSamples,
                                   state.stepsPerEpoch, state.nextEpoch, state.nextBatchInEpoch);
  std::vector<flatbuffers::Offset<fb::RngState>> rngs;
  rngs.push_back(fb::CreateRngState(pb, pb.CreateString("mt19937_64"),
                                    pb.CreateString("data-order"),
                                    pb.CreateString(state.dataOrderRng)));
  auto rngVec = pb.CreateVector(rngs);
  auto model = pb.CreateString(state.modelName);
  auto payload = fb::CreatePayload(pb, model, state.fingerprint, state.batch, state.step,
                                   state.epoch, order, rngVec, state.lossScale,
                                   state.epochLossSum, state.epochCorrect, state.epochSeen,
                                   tensorVec, state.worldSize);
  pb.Finish(payload);

  flatbuffers::FlatBufferBuilder eb(pb.GetSize() + 1024);
  eb.ForceVectorAlignment(pb.GetSize(), 1, 16);
  auto bytes = eb.CreateVector(pb.GetBufferPointer(), pb.GetSize());
  eb.ForceDefaults(true);
  auto root = fb::CreateCheckpoint(eb, kCheckpointFormatVersion,
                                   crc32c(pb.GetBufferPointer(), pb.GetSize()), bytes);
  fb::FinishCheckpointBuffer(eb, root);
  out.assign(eb.GetBufferPointer(), eb.GetBufferPointer() + eb.GetSize());
  return true;
}

bool decodeCheckpoint(const uint8_t *bytes, size_t size, CheckpointState &state,
                      std::vector<CheckpointTensor> &tensors, std::string &error) {
  namespace fb = graphc::ckpt;
  state = CheckpointState();
  tensors.clear();
  if (size < 8 || !flatbuffers::BufferHasIdentifier(bytes, fb::CheckpointIdentifier())) {
    error = "not a graphc checkpoint (no \"GCKP\" file identifier; " + std::to_string(size) +
            " bytes)";
    return false;
  }
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    error = "checkpoint of " + std::to_string(size) + " bytes is larger than FlatBuffers allows";
    return false;
  }
  flatbuffers::Verifier envelopeCheck(bytes, size);
  if (!fb::VerifyCheckpointBuffer(envelopeCheck)) {
    error = "the envelope fails FlatBuffers verification (truncated or corrupted file)";
    return false;
  }
  const fb::Checkpoint *ckpt = fb::GetCheckpoint(bytes);
  if (ckpt->format_version() != kCheckpointFormatVersion) {
    error = "format version " + std::to_string(ckpt->format_version()) +
            ", this binary reads version " + std::to_string(kCheckpointFormatVersion);
    return false;
  }
  const flatbuffers::Vector<uint8_t> *payloadBytes = ckpt->payload();
  // The payload is a nested FlatBuffer with 8-byte scalars, read in place. Its Verifier checks
  // alignment relative to the payload's own start only, so the start itself must be 8-byte
  // aligned in memory (the writer aligns it to 16; the file is read into malloc'd memory).
  if (reinterpret_cast<uintptr_t>(payloadBytes->data()) % 8 != 0) {
    error = "the payload is not 8-byte aligned (corrupted file, or not written by graphc)";
    return false;
  }
  const uint32_t crc = crc32c(payloadBytes->data(), payloadBytes->size());
  if (crc != ckpt->payload_crc32c()) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "payload CRC-32C mismatch (stored %08x, computed %08x)",
                  ckpt->payload_crc32c(), crc);
    error = buf;
    return false;
  }
  flatbuffers::Verifier payloadCheck(payloadBytes->data(), payloadBytes->size());
  if (!payloadCheck.VerifyBuffer<fb::Payload>(nullptr)) {
    error = "the payload fails FlatBuffers verification although its CRC matches (written by a "
            "broken or different writer)";
    return false;
  }
  const fb::Payload *p = flatbuffers::GetRoot<fb::Payload>(payloadBytes->data());
  state.modelName = p->model_name() ? p->model_name()->str() : "";
  state.fingerprint = p->fingerprint();
  state.batch = p->batch();
  state.step = p->step();
  state.epoch = p->epoch();
  const fb::DataOrder *order = p->data_order();
  state.seed = order->seed();
  state.shuffle = order->shuffle();
  state.padLastBatch = order->pad_last_batch();
  state.trainSamples = order->train_samples();
  state.validationSamples = order->validation_samples();
  state.stepsPerEpoch = order->steps_per_epoch();
  state.nextEpoch = order->epoch();
  state.nextBatchInEpoch = order->batch_in_epoch();
  if (p->rngs())
    for (const fb::RngState *r : *p->rngs())
      if (r && r->purpose() && r->purpose()->str() == "data-order" && r->state())
        state.dataOrderRng = r->state()->str();
  state.lossScale = p->loss_scale();
  state.epochLossSum = p->epoch_loss_sum();
  state.epochCorrect = p->epoch_correct();
  state.epochSeen = p->epoch_seen();
  state.worldSize = p->world_size();
  if (state.step < 0 || state.epoch < 0 || state.batch < 1 || state.nextEpoch < 1 ||
      state.nextBatchInEpoch < 0 || state.stepsPerEpoch < 1 || state.trainSamples < 1 ||
      state.validationSamples < 0) {
    error = "inconsistent counters (step " + std::to_string(state.step) + ", batch " +
            std::to_string(state.batch) + ", steps per epoch " +
            std::to_string(state.stepsPerEpoch) + ")";
    return false;
  }
  for (const fb::Tensor *t : *p->tensors()) {
    if (!t) {
      error = "a null tensor entry";
      return false;
    }
    CheckpointTensor ct;
    ct.name = t->name()->str();
    if (t->role() != fb::TensorRole_Parameter && t->role() != fb::TensorRole_State) {
      error = "tensor '" + ct.name + "' has unknown role " + std::to_string(int(t->role()));
      return false;
    }
    if (t->dtype() != fb::DType_F32 && t->dtype() != fb::DType_I64) {
      error = "tensor '" + ct.name + "' has unknown dtype " + std::to_string(int(t->dtype()));
      return false;
    }
    ct.role = t->role() == fb::TensorRole_State ? TensorRole::State : TensorRole::Parameter;
    ct.dtype = t->dtype() == fb::DType_F32 ? DType::F32 : DType::I64;
    uint64_t need = elementSize(ct.dtype);
    bool overflow = false;
    if (t->shape()) {
      // FlatBuffers' Verifier checks a vector's length field for 4-byte alignment only; its
      // int64 elements are read in place, so they must be 8-byte aligned (the writer does so).
      // A scalar's shape is empty: nothing is read, and the builder need not align it.
      if (t->shape()->size() > 0 &&
          reinterpret_cast<uintptr_t>(t->shape()->data()) % alignof(int64_t) != 0) {
        error = "tensor '" + ct.name + "' has a misaligned shape (corrupted file)";
        return false;
      }
      if (t->shape()->size() > static_cast<flatbuffers::uoffset_t>(kMaxRank)) {
        error = "tensor '" + ct.name + "' has rank " + std::to_string(t->shape()->size());
        return false;
      }
      for (int64_t d : *t->shape()) {
        if (d < 0 || (d != 0 && need > UINT64_MAX / static_cast<uint64_t>(d)))
          overflow = true;
        else
          need *= static_cast<uint64_t>(d);
        ct.shape.push_back(d);
      }
    }
    if (overflow || need != t->data()->size()) {
      error = "tensor '" + ct.name + "' has " + std::to_string(t->data()->size()) +
              " bytes of data, its shape " + shapeText(ct.shape) + " " + dtypeText(ct.dtype) +
              " needs " + (overflow ? std::string("more") : std::to_string(need));
      return false;
    }
    ct.data = t->data()->data();
    ct.bytes = t->data()->size();
    tensors.push_back(std::move(ct));
  }
  return true;
}

bool checkpointMatchesProgram(const CheckpointState &state,
                              const std::vector<CheckpointTensor> &tensors, const Program &prog,
                              std::string &error) {
  const std::string model = prog.modelName ? prog.modelName : "";
  if (state.modelName != model) {
    error = "it was written for model '" + state.modelName + "', this binary trains '" + model +
            "'";
    return false;
  }
  const int32_t worldSize = prog.worldSize > 1 ? prog.worldSize : 1;
  if (state.worldSize != worldSize) {
    error = "it was written by a run on " + std::to_string(state.worldSize) + " rank" +
            (state.worldSize == 1 ? "" : "s") + ", this binary runs on " +
            std::to_string(worldSize) + "; resume with the world size that wrote it (a "
            "checkpoint is not resharded)";
    return false;
  }
  if (state.batch != prog.batch) {
    error = "it was written with batch " + std::to_string(state.batch) + ", this binary has " +
            std::to_string(prog.batch);
    return false;
  }
  size_t next = 0;
  for (int i = 0; i < prog.numTensors; ++i) {
    const TensorInfo &t = prog.tensors[i];
    if (!savedRole(t.role))
      continue;
    const std::string name = t.name ? t.name : "";
    const std::vector<int64_t> shape(t.dims, t.dims + clampRank(t.rank));
    const CheckpointTensor *found = nullptr;
    for (const CheckpointTensor &c : tensors)
      if (c.name == name && c.role == t.role)
        found = &c;
    const char *what = t.role == TensorRole::State ? "optimizer state" : "parameter";
    if (!found) {
      error = std::string(what) + " '" + name + "' is missing from it";
      return false;
    }
    if (found->shape != shape || found->dtype != t.dtype || found->bytes != t.bytes) {
      error = std::string(what) + " '" + name + "' is " + shapeText(found->shape) + " " +
              dtypeText(found->dtype) + " in it, " + shapeText(shape) + " " + dtypeText(t.dtype) +
              " in this model";
      return false;
    }
    ++next;
  }
  if (next != tensors.size()) {
    for (const CheckpointTensor &c : tensors) {
      bool known = false;
      for (int i = 0; i < prog.numTensors && !known; ++i)
        known = savedRole(prog.tensors[i].role) && prog.tensors[i].role == c.role &&
                c.name == (prog.tensors[i].name ? prog.tensors[i].name : "");
      if (!known) {
        error = "it has a tensor '" + c.name + "' that this model does not";
        return false;
      }
    }
    error = "it lists a tensor twice";
    return false;
  }
  const uint64_t fingerprint = programFingerprint(prog);
  if (state.fingerprint != fingerprint) {
    char buf[160];
    std::snprintf(buf, sizeof(buf),
                  "the arena layout differs (plan fingerprint %016llx in it, %016llx in this "
                  "binary): the model was compiled with a different plan",
                  static_cast<unsigned long long>(state.fingerprint),
                  static_cast<unsigned long long>(fingerprint));
    error = buf;
    return false;
  }
  return true;
}

void restoreCheckpointTensors(const std::vector<CheckpointTensor> &tensors, const Program &prog,
                              unsigned char *arena) {
  for (int i = 0; i < prog.numTensors; ++i) {
    const TensorInfo &t = prog.tensors[i];
    if (!savedRole(t.role))
      continue;
    for (const CheckpointTensor &c : tensors)
      if (c.role == t.role && c.bytes == t.bytes && c.name == (t.name ? t.name : "")) {
        if (t.bytes)
          std::memcpy(arena + t.offset, c.data, t.bytes);
        break;
      }
  }
}

std::string checkpointFileName(int64_t step) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "ckpt-%012lld.gckpt", static_cast<long long>(step));
  return buf;
}

std::vector<std::pair<int64_t, std::string>> listCheckpoints(const std::string &dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return out;
  while (const dirent *e = ::readdir(d)) {
    int64_t step;
    if (parseCheckpointName(e->d_name, step))
      out.emplace_back(step, dir + "/" + e->d_name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second > b.second;
  });
  return out;
}

bool writeFileAtomic(const std::string &dir, const std::string &leaf, const void *data,
                     size_t size, std::string &error) {
  std::string temp = dir + "/" + kTempPrefix + leaf + "-XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) {
    error = dir + ": cannot create a temporary file: " + std::strerror(errno);
    return false;
  }
  const unsigned char *p = static_cast<const unsigned char *>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, p + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = temp + ": write error: " + std::strerror(errno);
      ::close(fd);
      ::unlink(temp.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    error = temp + ": cannot sync: " + std::strerror(errno);
    ::close(fd);
    ::unlink(temp.c_str());
    return false;
  }
  if (::close(fd) != 0) {
    error = temp + ": close failed: " + std::strerror(errno);
    ::unlink(temp.c_str());
    return false;
  }
  const std::string final = dir + "/" + leaf;
  if (::rename(temp.c_str(), final.c_str()) != 0) {
    error = final + ": cannot rename the temporary file into place: " + std::strerror(errno);
    ::unlink(temp.c_str());
    return false;
  }
  return fsyncDir(dir, error);
}

void removeStaleTemporaries(const std::string &dir) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  std::vector<std::string> stale;
  while (const dirent *e = ::readdir(d))
    if (std::strncmp(e->d_name, kTempPrefix, std::strlen(kTempPrefix)) == 0)
      stale.push_back(dir + "/" + e->d_name);
  ::closedir(d);
  for (const std::string &s : stale)
    ::unlink(s.c_str());
}

bool pruneCheckpoints(const std::string &dir, int64_t keep, std::string &error) {
  const auto all = listCheckpoints(dir);
  bool removed = false;
  for (size_t i = static_cast<size_t>(std::max<int64_t>(keep, 0)); i < all.size(); ++i) {
    if (::unlink(all[i].second.c_str()) != 0 && errno != ENOENT) {
      error = all[i].second + ": cannot remove: " + std::strerror(errno);
      return false;
    }
    removed = true;
  }
  return !removed || fsyncDir(dir, error);
}

bool readWholeFile(const std::string &path, std::vector<uint8_t> &out, std::string &error) {
  out.clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = path + ": not a regular file";
    ::close(fd);
    return false;
  }
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = path + ": read error" + (n < 0 ? std::string(": ") + std::strerror(errno) : "");
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return true;
}

} // namespace graphc::rt
