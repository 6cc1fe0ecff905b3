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

/// "[640,28,28,3]"
std::string formatShape(const std::vector<int64_t> &shape);

} // namespace graphc::rt
