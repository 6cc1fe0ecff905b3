// Unit tests of the .npy reader and writer (runtime/lib/npy.cpp): round trips, hand-built
// headers of format versions 1.0, 2.0 and 3.0 with the dtypes training binaries accept, and
// malformed input (truncations at every length, bad headers, random corruption), which must come
// back as an error naming the file, never a crash.
#include "graphc/runtime/npy.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace graphc::rt;

namespace {

std::string tempPath(const std::string &leaf) {
  return testing::TempDir() + "graphc_npy_" + std::to_string(::getpid()) + "_" + leaf;
}

std::vector<unsigned char> readBytes(const std::string &path) {
  std::vector<unsigned char> bytes;
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return bytes;
  int c;
  while ((c = std::fgetc(f)) != EOF)
    bytes.push_back(static_cast<unsigned char>(c));
  std::fclose(f);
  return bytes;
}

void writeBytes(const std::string &path, const std::vector<unsigned char> &bytes) {
  FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  if (!bytes.empty())
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
}

// A .npy image with the given version and header text (padded as NumPy does) and data bytes.
std::vector<unsigned char> makeNpy(int major, std::string header,
                                   const std::vector<unsigned char> &data) {
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::vector<unsigned char> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major), 0};
  for (size_t i = 0; i < prefix - 8; ++i)
    out.push_back(static_cast<unsigned char>((header.size() >> (8 * i)) & 0xff));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

template <typename T> std::vector<unsigned char> bytesOf(const std::vector<T> &v) {
  std::vector<unsigned char> b(v.size() * sizeof(T));
  if (!v.empty())
    std::memcpy(b.data(), v.data(), b.size());
  return b;
}

bool parse(const std::vector<unsigned char> &bytes, NpyArray &out, std::string &error) {
  return parseNpy(bytes.data(), bytes.size(), "mem.npy", out, error);
}

TEST(RuntimeNpy, RoundTripF32AndI64) {
  const std::string pf = tempPath("f32.npy"), pi = tempPath("i64.npy");
  const std::vector<float> f = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f};
  const std::vector<int64_t> i = {0, -1, 1LL << 40, 7, 9};
  std::string error;
  ASSERT_TRUE(writeNpyF32(pf, {2, 3}, f.data(), error)) << error;
  ASSERT_TRUE(writeNpyI64(pi, {5}, i.data(), error)) << error;

  NpyArray a;
  ASSERT_TRUE(readNpy(pf, a, error)) << error;
  EXPECT_EQ(a.dtype, NpyDType::F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data, bytesOf(f));
  ASSERT_TRUE(readNpy(pi, a, error)) << error;
  EXPECT_EQ(a.dtype, NpyDType::I64);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(a.data, bytesOf(i));
  std::remove(pf.c_str());
  std::remove(pi.c_str());
}

TEST(RuntimeNpy, WriterEmitsNumPyLayout) {
  const std::string p = tempPath("layout.npy");
  const float v = 4.0f;
  std::string error;
  ASSERT_TRUE(writeNpyF32(p, {1}, &v, error)) << error;
  const std::vector<unsigned char> b = readBytes(p);
  ASSERT_GE(b.size(), 64u + 4u);
  EXPECT_EQ(0, std::memcmp(b.data(), "\x93NUMPY\x01\x00", 8));
  const size_t headerLen = b[8] | (b[9] << 8);
  EXPECT_EQ((10 + headerLen) % 64, 0u); // data 64-byte aligned, as NumPy writes it
  EXPECT_EQ(b[10 + headerLen - 1], '\n');
  const std::string header(b.begin() + 10, b.begin() + 10 + headerLen);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (1,)"), std::string::npos) << header; // 1-tuple needs a comma
  EXPECT_EQ(b.size(), 10 + headerLen + 4);
  std::remove(p.c_str());
}

TEST(RuntimeNpy, ScalarAndEmptyShapes) {
  const std::string p = tempPath("scalar.npy");
  const float v = 2.5f;
  std::string error;
  NpyArray a;
  ASSERT_TRUE(writeNpyF32(p, {}, &v, error)) << error;
  ASSERT_TRUE(readNpy(p, a, error)) << error;
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.numElements(), 1);
  ASSERT_EQ(a.data.size(), 4u);
  ASSERT_TRUE(writeNpyF32(p, {0, 3}, nullptr, error)) << error;
  ASSERT_TRUE(readNpy(p, a, error)) << error;
  EXPECT_EQ(a.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(a.data.empty());
  std::remove(p.c_str());
}

TEST(RuntimeNpy, ReadsVersions1To3AndDtypes) {
  NpyArray a;
  std::string error;
  // 1.0, float64, shape (2, 2), no trailing comma, double quotes.
  const std::vector<double> d = {1.0, -2.5, 1e300, 0.125};
  ASSERT_TRUE(parse(makeNpy(1, "{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (2, 2)}",
                            bytesOf(d)), a, error)) << error;
  EXPECT_EQ(a.dtype, NpyDType::F64);
  std::vector<float> f;
  ASSERT_TRUE(npyToF32(a, f));
  EXPECT_EQ(f, (std::vector<float>{1.0f, -2.5f, INFINITY, 0.125f}));

  // 2.0, int32, shape (3,).
  const std::vector<int32_t> i32 = {-7, 0, 2147483647};
  ASSERT_TRUE(parse(makeNpy(2, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }",
                            bytesOf(i32)), a, error)) << error;
  EXPECT_EQ(a.dtype, NpyDType::I32);
  std::vector<int64_t> i;
  ASSERT_TRUE(npyToI64(a, i));
  EXPECT_EQ(i, (std::vector<int64_t>{-7, 0, 2147483647}));

  // 3.0, uint8, keys in a different order.
  const std::vector<uint8_t> u8 = {0, 9, 255};
  ASSERT_TRUE(parse(makeNpy(3, "{'shape': (3,), 'fortran_order': False, 'descr': '|u1'}",
                            bytesOf(u8)), a, error)) << error;
  EXPECT_EQ(a.dtype, NpyDType::U8);
  ASSERT_TRUE(npyToI64(a, i));
  EXPECT_EQ(i, (std::vector<int64_t>{0, 9, 255}));
  EXPECT_FALSE(npyToF32(a, f)); // integers are not silently read as floats

  // float16: 1.0, -2.0, 0.5, smallest subnormal, inf.
  const std::vector<uint16_t> h = {0x3C00, 0xC000, 0x3800, 0x0001, 0x7C00};
  ASSERT_TRUE(parse(makeNpy(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }",
                            bytesOf(h)), a, error)) << error;
  EXPECT_EQ(a.dtype, NpyDType::F16);
  ASSERT_TRUE(npyToF32(a, f));
  EXPECT_EQ(f, (std::vector<float>{1.0f, -2.0f, 0.5f, std::ldexp(1.0f, -24), INFINITY}));

  // int64 with the old Python 2 'L' suffix.
  const std::vector<int64_t> i64 = {5, 6};
  ASSERT_TRUE(parse(makeNpy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2L,), }",
                            bytesOf(i64)), a, error)) << error;
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(npyDTypeName(a.dtype), std::string("int64"));
}

void expectRejected(const std::vector<unsigned char> &bytes, const std::string &needle) {
  NpyArray a;
  std::string error;
  EXPECT_FALSE(parse(bytes, a, error));
  EXPECT_NE(error.find("mem.npy"), std::string::npos) << error;
  EXPECT_NE(error.find(needle), std::string::npos) << "error: " << error;
}

TEST(RuntimeNpy, RejectsMalformedHeaders) {
  const std::vector<unsigned char> four(16, 0);
  expectRejected({}, "bad magic");
  expectRejected({'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!'}, "bad magic");
  expectRejected(makeNpy(4, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four),
                 "version 4.0");
  expectRejected(makeNpy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", four),
                 "big-endian");
  expectRejected(makeNpy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (4,), }", four),
                 "Fortran");
  expectRejected(makeNpy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four),
                 "unsupported dtype");
  expectRejected(makeNpy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
                         four), "structured");
  expectRejected(makeNpy(1, "{'descr': '<f4', 'shape': (4,), }", four), "missing");
  expectRejected(makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", four),
                 "'shape'");
  expectRejected(makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}",
                         four), "unexpected key");
  expectRejected(makeNpy(1, "garbage", four), "malformed");
  expectRejected(makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,)", four),
                 "malformed");
  // A shape whose byte count overflows must not wrap around into a small allocation.
  expectRejected(makeNpy(1, "{'descr': '<f8', 'fortran_order': False, "
                            "'shape': (4294967296, 4294967296, 4294967296), }", four),
                 "too large");
  expectRejected(makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", four),
                 "truncated data");
}

TEST(RuntimeNpy, RejectsEveryTruncation) {
  const std::vector<float> f = {1, 2, 3, 4, 5};
  const std::vector<unsigned char> full =
      makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", bytesOf(f));
  for (size_t len = 0; len < full.size(); ++len) {
    NpyArray a;
    std::string error;
    const std::vector<unsigned char> cut(full.begin(), full.begin() + len);
    EXPECT_FALSE(parse(cut, a, error)) << "accepted a file cut to " << len << " bytes";
    EXPECT_FALSE(error.empty());
  }
  NpyArray a;
  std::string error;
  EXPECT_TRUE(parse(full, a, error)) << error;
}

TEST(RuntimeNpy, SurvivesRandomCorruption) {
  const std::vector<float> f = {1, 2, 3, 4, 5, 6};
  const std::vector<unsigned char> full =
      makeNpy(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", bytesOf(f));
  std::mt19937_64 gen(7);
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<unsigned char> bytes = full;
    const int flips = 1 + static_cast<int>(gen() % 4);
    for (int k = 0; k < flips; ++k) // corrupt the magic, length or header, not the payload
      bytes[gen() % (full.size() - f.size() * 4)] = static_cast<unsigned char>(gen());
    NpyArray a;
    std::string error;
    if (!parse(bytes, a, error)) {
      ++rejected;
      EXPECT_FALSE(error.empty());
    } else {
      EXPECT_EQ(a.data.size(), static_cast<size_t>(a.numElements()) * npyItemSize(a.dtype));
    }
  }
  EXPECT_GT(rejected, 1000);
}

TEST(RuntimeNpy, FileErrorsNameTheFile) {
  NpyArray a;
  std::string error;
  const std::string missing = tempPath("does_not_exist.npy");
  EXPECT_FALSE(readNpy(missing, a, error));
  EXPECT_NE(error.find(missing), std::string::npos) << error;
  EXPECT_FALSE(readNpy(testing::TempDir(), a, error)); // a directory
  EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;

  const std::string p = tempPath("trunc.npy");
  const std::vector<float> f = {1, 2, 3};
  ASSERT_TRUE(writeNpyF32(p, {3}, f.data(), error)) << error;
  std::vector<unsigned char> bytes = readBytes(p);
  bytes.resize(bytes.size() - 1);
  writeBytes(p, bytes);
  EXPECT_FALSE(readNpy(p, a, error));
  EXPECT_NE(error.find(p), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  std::remove(p.c_str());

  EXPECT_FALSE(writeNpyF32(missing + "/sub/x.npy", {3}, f.data(), error));
  EXPECT_NE(error.find("sub/x.npy"), std::string::npos) << error;
}

TEST(RuntimeNpyFile, MapsRowsThroughSmallWindows) {
  // 1000 rows of 7 float32 values (28 bytes: rows straddle page boundaries), read through
  // one-page windows in a scattered order, and through the default (whole-file) window.
  const std::string p = tempPath("rows.npy");
  std::vector<float> v(7000);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(i) * 0.5f;
  std::string error;
  ASSERT_TRUE(writeNpyF32(p, {1000, 7}, v.data(), error)) << error;
  for (size_t window : {size_t(4096), NpyFile::kDefaultWindowBytes}) {
    NpyFile f;
    ASSERT_TRUE(f.open(p, error, window)) << error;
    EXPECT_EQ(f.rows(), 1000);
    EXPECT_EQ(f.rowBytes(), 28u);
    EXPECT_EQ(f.shape(), (std::vector<int64_t>{1000, 7}));
    for (int64_t k = 0; k < 1000; ++k) {
      const int64_t row = (k * 389) % 1000;
      const unsigned char *bytes = f.rowsAt(row, 1, error);
      ASSERT_NE(bytes, nullptr) << error;
      float got[7];
      ASSERT_TRUE(convertToF32(f.dtype(), bytes, 7, got));
      EXPECT_EQ(std::memcmp(got, v.data() + row * 7, sizeof(got)), 0) << row;
    }
    // More rows than a window: the mapping grows to hold them.
    const unsigned char *all = f.rowsAt(0, 1000, error);
    ASSERT_NE(all, nullptr) << error;
    EXPECT_EQ(std::memcmp(all, v.data(), v.size() * 4), 0);
    EXPECT_EQ(f.rowsAt(999, 2, error), nullptr);
    EXPECT_NE(error.find("out of range"), std::string::npos) << error;
  }
  std::remove(p.c_str());
}

TEST(RuntimeNpyFile, HeaderErrorsMatchReadNpy) {
  const std::string p = tempPath("bad.npy");
  std::string error, expected;
  NpyArray a;
  NpyFile f;
  // Version 3.0 with uint8: read and converted both ways.
  const std::vector<uint8_t> u8 = {0, 9, 255, 1};
  writeBytes(p, makeNpy(3, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2), }",
                        bytesOf(u8)));
  ASSERT_TRUE(f.open(p, error)) << error;
  const unsigned char *row = f.rowsAt(1, 1, error);
  ASSERT_NE(row, nullptr);
  int64_t i[2];
  float x[2];
  ASSERT_TRUE(convertToI64(f.dtype(), row, 2, i));
  ASSERT_TRUE(convertToF32(f.dtype(), row, 2, x));
  EXPECT_EQ(i[0], 255);
  EXPECT_EQ(x[1], 1.0f);
  // Truncated data, bad magic, Fortran order, a missing file: the errors readNpy gives.
  std::vector<unsigned char> bytes = makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                                             std::vector<unsigned char>(15, 0));
  for (const auto &image :
       {bytes, std::vector<unsigned char>{'n', 'o', 'p', 'e'},
        makeNpy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
                std::vector<unsigned char>(4, 0))}) {
    writeBytes(p, image);
    EXPECT_FALSE(readNpy(p, a, expected));
    EXPECT_FALSE(f.open(p, error));
    EXPECT_EQ(error, expected);
  }
  EXPECT_FALSE(f.open(p + ".missing", error));
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
  EXPECT_FALSE(f.open(testing::TempDir(), error));
  std::remove(p.c_str());
}

} // namespace
