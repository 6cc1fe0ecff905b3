// Reading and writing NumPy .npy files, the exchange format of training binaries: --data,
// --labels, --init-weights and --save-weights all use it. Only what those need is supported:
// format versions 1.0/2.0/3.0, little-endian (or byte-order-free) dtypes, C order. Every failure
// comes back as an error string naming the file and the problem; nothing here aborts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace graphc::rt {

enum class NpyDType : uint8_t { F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, Bool };

/// Size in bytes of one element.
size_t npyItemSize(NpyDType dtype);
/// NumPy's name of the dtype: "float32", "int64", ...
const char *npyDTypeName(NpyDType dtype);
/// The header's descr string: "<f4", "|u1", ...
const char *npyDescr(NpyDType dtype);

struct NpyArray {
  std::vector<int64_t> shape;     // empty for a 0-d array
  NpyDType dtype = NpyDType::F32;
  std::vector<unsigned char> data; // C-order element bytes, little endian

  /// Product of the shape (1 for a 0-d array).
  int64_t numElements() const;
};

/// Reads path into out. On failure returns false and sets error to "PATH: problem".
bool readNpy(const std::string &path, NpyArray &out, std::string &error);
/// Parses an in-memory .npy image; name is used in error messages.
bool parseNpy(const unsigned char *bytes, size_t size, const std::string &name, NpyArray &out,
              std::string &error);

/// Writes a version 1.0 file (2.0 if the header would not fit). data holds
/// product(shape) * npyItemSize(dtype) bytes.
bool writeNpy(const std::string &path, NpyDType dtype, const std::vector<int64_t> &shape,
              const void *data, std::string &error);
inline bool writeNpyF32(const std::string &path, const std::vector<int64_t> &shape,
                        const float *data, std::string &error) {
  return writeNpy(path, NpyDType::F32, shape, data, error);
}
inline bool writeNpyI64(const std::string &path, const std::vector<int64_t> &shape,
                        const int64_t *data, std::string &error) {
  return writeNpy(path, NpyDType::I64, shape, data, error);
}

/// Converts a floating-point array (f16, f32, f64) to float32 values; false for other dtypes.
bool npyToF32(const NpyArray &array, std::vector<float> &out);
/// Converts an integer or bool array to int64 values; false for floating-point dtypes.
bool npyToI64(const NpyArray &array, std::vector<int64_t> &out);

/// Converts count little-endian elements of dtype at src (no alignment needed) to float32: exact
/// for f16/f32 and integers up to 2^24, rounded to nearest for f64 and wider integers. False for
/// bool. Used per batch on memory-mapped data.
bool convertToF32(NpyDType dtype, const unsigned char *src, size_t count, float *dst);
/// Converts count integer (or bool) elements at src to int64; false for floating-point dtypes.
bool convertToI64(NpyDType dtype, const unsigned char *src, size_t count, int64_t *dst);

/// Parses the magic, version and header dict of a .npy image whose first `available` bytes are
/// at bytes and whose whole size is totalSize (the file's size). On success fills out.shape and
/// out.dtype (out.data stays empty) and dataOffset, and guarantees that the data,
/// product(shape) * item size bytes, lies within totalSize.
bool parseNpyHeader(const unsigned char *bytes, size_t available, uint64_t totalSize,
                    const std::string &name, NpyArray &out, uint64_t &dataOffset,
                    std::string &error);

/// A .npy file of rows (the first dimension) read through read-only, private memory mappings
/// (mmap PROT_READ, MAP_PRIVATE) instead of into memory, so that a data set larger than RAM (or
/// than the address-space limit) can be trained on: at most two windows of windowBytes are
/// mapped at a time, the page cache does the rest. A file no larger than a window is mapped
/// once, whole. Not thread-safe: one thread reads rows at a time.
class NpyFile {
public:
  static constexpr size_t kDefaultWindowBytes = size_t(64) << 20;

  NpyFile() = default;
  ~NpyFile();
  NpyFile(const NpyFile &) = delete;
  NpyFile &operator=(const NpyFile &) = delete;

  /// Opens path and parses its header. Errors name the file, as readNpy's do.
  bool open(const std::string &path, std::string &error,
            size_t windowBytes = kDefaultWindowBytes);
  const std::string &path() const { return path_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  NpyDType dtype() const { return dtype_; }
  /// shape[0] (1 for a 0-d array).
  int64_t rows() const { return rows_; }
  /// Bytes of one row: product(shape[1:]) * item size.
  uint64_t rowBytes() const { return rowBytes_; }
  /// The bytes of rows [first, first + count) (count * rowBytes() must not exceed the window
  /// size; one row always fits), valid until the next call. Null with error set if mapping
  /// fails.
  const unsigned char *rowsAt(int64_t first, int64_t count, std::string &error);

private:
  struct Window {
    unsigned char *base = nullptr;
    uint64_t offset = 0, length = 0, lastUse = 0;
  };
  void unmapAll();

  std::string path_;
  int fd_ = -1;
  uint64_t fileSize_ = 0, dataOffset_ = 0, rowBytes_ = 0, windowBytes_ = 0, clock_ = 0;
  int64_t rows_ = 0;
  std::vector<int64_t> shape_;
  NpyDType dtype_ = NpyDType::F32;
  Window windows_[2];
};

/// "[640,28,28,3]"
std::string formatShape(const std::vector<int64_t> &shape);

} // namespace graphc::rt
