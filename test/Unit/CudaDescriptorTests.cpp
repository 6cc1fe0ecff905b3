// The program descriptor (runtime/program.fbs): round trip through FlatBufferBuilder and
// decodeProgramDescriptor, and descriptive refusals of corrupted or inconsistent descriptors.
#include "graphc/runtime/cuda/descriptor.h"

#include "graphc/runtime/program_generated.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace graphc;
using namespace graphc::rt::cuda;

namespace {

struct Options {
  uint32_t version = kProgramDescriptorVersion;
  uint64_t weightOffset = 0, weightBytes = 40, arena = 1024, initBlob = 40;
  int64_t weightInit = 0;
  std::vector<uint32_t> parameters = {0};
  std::vector<uint32_t> inputs = {1};
  int32_t worldSize = 0, buckets = 0; // data parallelism (appended fields)
  // Token-id limits (Tensor.index_limit) of the data tensor and of the weight (never valid).
  int64_t dataIndexLimit = 0, weightIndexLimit = 0;
  // The next-batch staging region (role Staging) at offset 1024, of this many bytes (0: none),
  // with a labels tensor (int64 [2] at 768) unless `labels` is false; set `arena` to fit.
  uint64_t stagingBytes = 0;
  bool labels = true;
  bool secondData = false; // a second data tensor "mask" [2, 3] at 1536 (set `arena` to fit)
  // Sample weights "sample_weight" [2] (or [2, 1] when rank 2, a scalar when -1) at 1792,
  // listed before "mask".
  int sampleWeightsRank = 0;
  desc::LossKind loss = desc::LossKind_MeanSquaredError;
  flatbuffers::Optional<int64_t> ignoreIndex = flatbuffers::nullopt; // appended field
};

std::vector<uint8_t> build(const Options &o) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<int64_t> wShape = {10}, xShape = {2, 3}, lossShape = {};
  std::vector<flatbuffers::Offset<desc::Tensor>> tensors = {
      desc::CreateTensorDirect(fbb, "fc.weight", desc::TensorKind_Parameter,
                               desc::TensorRole_Parameter, desc::DType_F32, &wShape, o.weightOffset,
                               o.weightBytes, o.weightInit, o.weightIndexLimit),
      desc::CreateTensorDirect(fbb, "input", desc::TensorKind_Input, desc::TensorRole_Data,
                               desc::DType_F32, &xShape, 256, 24, -1, o.dataIndexLimit),
      desc::CreateTensorDirect(fbb, "loss", desc::TensorKind_Activation, desc::TensorRole_Loss,
                               desc::DType_F32, &lossShape, 512, 4, -1),
  };
  std::vector<int64_t> labelsShape = {2}, stagingShape = {int64_t(o.stagingBytes / 4)};
  std::vector<int64_t> sampleShape = {2};
  if (o.sampleWeightsRank == 2)
    sampleShape.push_back(1);
  if (o.sampleWeightsRank < 0)
    sampleShape.clear();
  if (o.sampleWeightsRank)
    tensors.push_back(desc::CreateTensorDirect(
        fbb, "sample_weight", desc::TensorKind_Input, desc::TensorRole_SampleWeights,
        desc::DType_F32, &sampleShape, 1792, o.sampleWeightsRank < 0 ? 4 : 8, -1));
  if (o.secondData)
    tensors.push_back(desc::CreateTensorDirect(fbb, "mask", desc::TensorKind_Input,
                                               desc::TensorRole_Data, desc::DType_F32, &xShape,
                                               1536, 24, -1));
  if (o.stagingBytes) {
    if (o.labels)
      tensors.push_back(desc::CreateTensorDirect(fbb, "labels", desc::TensorKind_Input,
                                                 desc::TensorRole_Labels, desc::DType_I64,
                                                 &labelsShape, 768, 16, -1));
    tensors.push_back(desc::CreateTensorDirect(fbb, "next_batch_staging", desc::TensorKind_Input,
                                               desc::TensorRole_Staging, desc::DType_F32,
                                               &stagingShape, 1024, o.stagingBytes, -1));
  }
  auto root = desc::CreateProgramDirect(fbb, o.version, "model.onnx", "cuda", o.arena, 256, 2,
                                        o.loss, &tensors, &o.parameters, &o.inputs, o.initBlob,
                                        o.worldSize, o.buckets, 0, false, o.ignoreIndex);
  desc::FinishProgramBuffer(fbb, root);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

const unsigned char kBlob[64] = {};

} // namespace

TEST(CudaDescriptor, RoundTrip) {
  std::vector<uint8_t> buf = build({});
  DecodedProgram d;
  std::string error;
  ASSERT_TRUE(decodeProgramDescriptor(buf.data(), buf.size(), kBlob, 40, d, error)) << error;
  EXPECT_STREQ(d.program.modelName, "model.onnx");
  EXPECT_EQ(d.target, "cuda");
  EXPECT_EQ(d.program.arenaBytes, 1024u);
  EXPECT_EQ(d.program.alignment, 256u);
  EXPECT_EQ(d.program.batch, 2);
  EXPECT_EQ(d.program.loss, rt::LossKind::MeanSquaredError);
  ASSERT_EQ(d.program.numTensors, 3);
  EXPECT_STREQ(d.program.tensors[0].name, "fc.weight");
  EXPECT_EQ(d.program.tensors[0].role, rt::TensorRole::Parameter);
  EXPECT_EQ(d.program.tensors[0].initOffset, 0);
  EXPECT_EQ(d.program.tensors[1].rank, 2);
  EXPECT_EQ(d.program.tensors[1].dims[1], 3);
  EXPECT_EQ(d.program.tensors[1].offset, 256u);
  EXPECT_EQ(d.program.tensors[2].rank, 0);
  EXPECT_EQ(d.program.initBlob, kBlob);
  EXPECT_EQ(d.parameters, std::vector<uint32_t>{0});
  EXPECT_EQ(d.dataInputs, std::vector<uint32_t>{1});
  EXPECT_EQ(d.program.worldSize, 0); // a descriptor without the fields: one process
  EXPECT_EQ(d.program.allReduceBuckets, 0);
}

// The world size and bucket count of a data-parallel step reach Program (the NCCL backend
// checks the launch against the first and makes one event pair per bucket from the second).
TEST(CudaDescriptor, DataParallelFields) {
  Options o;
  o.worldSize = 4;
  o.buckets = 3;
  std::vector<uint8_t> buf = build(o);
  DecodedProgram d;
  std::string error;
  ASSERT_TRUE(decodeProgramDescriptor(buf.data(), buf.size(), kBlob, 40, d, error)) << error;
  EXPECT_EQ(d.program.worldSize, 4);
  EXPECT_EQ(d.program.allReduceBuckets, 3);
}

// The loss's ignored label reaches Program (the runtime lets it through the label check and
// leaves it out of the accuracy); absent, there is none.
TEST(CudaDescriptor, IgnoreIndex) {
  Options o;
  o.loss = desc::LossKind_SparseCategoricalCrossentropy;
  o.ignoreIndex = -100;
  std::vector<uint8_t> buf = build(o);
  DecodedProgram d;
  std::string error;
  ASSERT_TRUE(decodeProgramDescriptor(buf.data(), buf.size(), kBlob, 40, d, error)) << error;
  EXPECT_TRUE(d.program.hasIgnoreIndex);
  EXPECT_EQ(d.program.ignoreIndex, -100);
  buf = build({});
  ASSERT_TRUE(decodeProgramDescriptor(buf.data(), buf.size(), kBlob, 40, d, error)) << error;
  EXPECT_FALSE(d.program.hasIgnoreIndex);
}

namespace {
std::string refusal(const std::vector<uint8_t> &buf, uint64_t blob = 40) {
  DecodedProgram d;
  std::string error;
  EXPECT_FALSE(decodeProgramDescriptor(buf.data(), buf.size(), kBlob, blob, d, error));
  return error;
}
} // namespace

TEST(CudaDescriptor, WrongIdentifier) {
  std::vector<uint8_t> buf = build({});
  std::memcpy(buf.data() + 4, "GCKP", 4);
  EXPECT_EQ(refusal(buf), "not a program descriptor (file identifier 'GCKP', expected 'GPRG')");
}

TEST(CudaDescriptor, TruncatedFailsTheVerifier) {
  std::vector<uint8_t> buf = build({});
  buf.resize(buf.size() / 2);
  EXPECT_NE(refusal(buf).find("fails the FlatBuffers verifier"), std::string::npos);
  EXPECT_NE(refusal({1, 2, 3}).find("too short"), std::string::npos);
}

TEST(CudaDescriptor, CorruptedOffsetsFailTheVerifier) {
  // Flip bytes after the header one at a time: each result is either refused with a message or
  // decoded consistently, never read out of bounds (run under ASan/valgrind to be sure).
  std::vector<uint8_t> good = build({});
  for (size_t i = 8; i < good.size(); ++i) {
    std::vector<uint8_t> buf = good;
    buf[i] ^= 0xff;
    DecodedProgram d;
    std::string error;
    if (!decodeProgramDescriptor(buf.data(), buf.size(), kBlob, 40, d, error))
      EXPECT_FALSE(error.empty()) << "byte " << i;
  }
}

TEST(CudaDescriptor, SemanticRefusals) {
  Options o;
  o.version = 99;
  EXPECT_EQ(refusal(build(o)), "descriptor format version 99, this runtime reads version 1");
  o = {};
  o.weightOffset = 1000;
  EXPECT_EQ(refusal(build(o)), "tensor 'fc.weight' at offset 1000 (40 bytes) lies outside the "
                               "arena of 1024 bytes");
  o = {};
  o.weightOffset = 128;
  EXPECT_EQ(refusal(build(o)), "tensor 'fc.weight' at offset 128 is not aligned to 256");
  o = {};
  o.weightBytes = 44;
  EXPECT_EQ(refusal(build(o)), "tensor 'fc.weight' is 44 bytes, its shape needs 40");
  o = {};
  o.weightInit = 8;
  EXPECT_EQ(refusal(build(o)), "tensor 'fc.weight''s initial value lies outside the init blob");
  EXPECT_EQ(refusal(build({}), 48), "the descriptor expects 40 bytes of initial values, the "
                                    "binary embeds 48");
  o = {};
  o.parameters = {1};
  EXPECT_EQ(refusal(build(o)), "parameters lists 'input', which has another role");
  o = {};
  o.inputs = {7};
  EXPECT_EQ(refusal(build(o)), "data_inputs names tensor #7 of 3");
  o = {};
  o.worldSize = -2;
  EXPECT_EQ(refusal(build(o)), "world_size (-2) or all_reduce_buckets (0) is negative");
  o = {};
  o.buckets = 2;
  EXPECT_EQ(refusal(build(o)), "all_reduce_buckets is 2 but world_size is 0: gradient buckets "
                               "need a data-parallel program");
  o = {};
  o.ignoreIndex = 0;
  EXPECT_EQ(refusal(build(o)),
            "ignore_index is set, but the loss is not sparse_categorical_crossentropy");
  o = {};
  o.dataIndexLimit = -1;
  EXPECT_EQ(refusal(build(o)), "tensor 'input' has an index limit of -1; only data tensors have "
                               "one, and it is positive");
  o = {};
  o.weightIndexLimit = 7;
  EXPECT_EQ(refusal(build(o)), "tensor 'fc.weight' has an index limit of 7; only data tensors "
                               "have one, and it is positive");
}

// A data tensor read as token ids carries its vocabulary to the runtime; others carry 0.
TEST(CudaDescriptor, IndexLimit) {
  Options o;
  o.dataIndexLimit = 50;
  std::vector<uint8_t> buf = build(o);
  DecodedProgram d;
  std::string error;
  ASSERT_TRUE(decodeProgramDescriptor(buf.data(), buf.size(), kBlob, 40, d, error)) << error;
  EXPECT_EQ(d.program.tensors[1].indexLimit, 50);
  EXPECT_EQ(d.program.tensors[0].indexLimit, 0);
}

// The next-batch staging region: data at 0, labels at the data's 24 bytes aligned to 256, so
// one batch needs 256 + 16 bytes; the layout reaches the runtime, a smaller region or one with
// no labels tensor to fill is refused.
TEST(CudaDescriptor, StagingRegion) {
  Options o;
  o.arena = 2048;
  o.stagingBytes = 272;
  std::vector<uint8_t> buf = build(o);
  DecodedProgram d;
  std::string error;
  ASSERT_TRUE(decodeProgramDescriptor(buf.data(), buf.size(), kBlob, 40, d, error)) << error;
  EXPECT_TRUE(d.staging.present);
  EXPECT_EQ(d.staging.offset, 1024u);
  ASSERT_EQ(d.staging.data.size(), 1u);
  EXPECT_EQ(d.staging.data[0].arenaOffset, 256u);
  EXPECT_EQ(d.staging.data[0].stagedOffset, 0u);
  EXPECT_EQ(d.staging.dataBytes, 24u);
  EXPECT_EQ(d.staging.labelsOffset, 768u);
  EXPECT_EQ(d.staging.labelsBytes, 16u);
  std::vector<uint8_t> plain = build({});
  ASSERT_TRUE(decodeProgramDescriptor(plain.data(), plain.size(), kBlob, 40, d, error)) << error;
  EXPECT_FALSE(d.staging.present);

  o.stagingBytes = 256;
  EXPECT_EQ(refusal(build(o)), "the next-batch staging region (256 bytes) cannot hold the data "
                               "and labels (272 bytes in its layout), or lies outside the "
                               "device arena");
  // A second data input follows the first at the next 64 bytes (staging.h): 64 + 24 bytes of
  // data, the labels still at 256; the runtime copies each input to its own tensor.
  o.stagingBytes = 272;
  o.secondData = true;
  buf = build(o);
  ASSERT_TRUE(decodeProgramDescriptor(buf.data(), buf.size(), kBlob, 40, d, error)) << error;
  ASSERT_EQ(d.staging.data.size(), 2u);
  EXPECT_EQ(d.staging.data[1].arenaOffset, 1536u);
  EXPECT_EQ(d.staging.data[1].stagedOffset, 64u);
  EXPECT_EQ(d.staging.data[1].bytes, 24u);
  EXPECT_EQ(d.staging.dataBytes, 88u);
  EXPECT_TRUE(d.staging.stagesData(1536) && d.staging.stagesData(256));
  EXPECT_FALSE(d.staging.stagesData(768));
  // The sample weights follow every data input (wherever the descriptor lists them): at 128,
  // 8 bytes; the labels stay at 256.
  o.sampleWeightsRank = 1;
  buf = build(o);
  ASSERT_TRUE(decodeProgramDescriptor(buf.data(), buf.size(), kBlob, 40, d, error)) << error;
  ASSERT_EQ(d.staging.data.size(), 3u);
  EXPECT_EQ(d.staging.data[1].arenaOffset, 1536u);
  EXPECT_EQ(d.staging.data[2].arenaOffset, 1792u);
  EXPECT_EQ(d.staging.data[2].stagedOffset, 128u);
  EXPECT_EQ(d.staging.data[2].bytes, 8u);
  EXPECT_EQ(d.staging.dataBytes, 136u);
  // One weight per label row (temporal: [2, 1]) stages the same way; a scalar is refused.
  o.sampleWeightsRank = 2;
  buf = build(o);
  ASSERT_TRUE(decodeProgramDescriptor(buf.data(), buf.size(), kBlob, 40, d, error)) << error;
  EXPECT_EQ(d.staging.data[2].bytes, 8u);
  o.sampleWeightsRank = -1;
  EXPECT_EQ(refusal(build(o)),
            "a program takes at most one float32 [batch, ...] sample-weights tensor");
  o.sampleWeightsRank = 0;
  o.secondData = false;

  o.stagingBytes = 272;
  o.labels = false;
  EXPECT_EQ(refusal(build(o)), "a next-batch staging region needs exactly one staging tensor, "
                               "data tensors and one labels tensor (found 1, 1 and 0)");
}
