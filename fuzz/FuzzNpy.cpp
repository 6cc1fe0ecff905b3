// libFuzzer target for the .npy reader (runtime/lib/npy.cpp, compiled into this binary with
// the sanitizers). Any input must come back as an array or an error string, never a crash.
// A successfully parsed array is also converted, which reads every element byte.
#include "graphc/runtime/npy.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace graphc::rt;
  NpyArray array;
  std::string error;
  if (!parseNpy(data, size, "fuzz.npy", array, error)) {
    if (error.empty())
      abort(); // a failure must say why
    return 0;
  }
  // The parsed array must be self-consistent: numElements() * itemSize bytes of data.
  int64_t n = array.numElements();
  if (n < 0 || static_cast<uint64_t>(n) * npyItemSize(array.dtype) != array.data.size())
    abort();
  (void)formatShape(array.shape);
  (void)npyDTypeName(array.dtype);
  std::vector<float> f;
  std::vector<int64_t> i;
  if (!npyToF32(array, f))
    (void)npyToI64(array, i);
  return 0;
}
