// libFuzzer target for the memory-mapped .npy reader that training binaries use for --data and
// --labels (NpyFile in runtime/lib/npy.cpp, compiled into this binary with the sanitizers):
// opening (the header read with pread), mapping rows through one-page windows, and the per-batch
// conversion to float32 or int64. fuzz-npy covers parseNpy on an in-memory image; this one the
// file path. Each input is written to a memfd and opened by its /proc path. Seeds: the fuzz-npy
// corpus.
#include "graphc/runtime/npy.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace graphc::rt;
  const int fd = memfd_create("fuzz.npy", MFD_CLOEXEC);
  if (fd < 0)
    return 0;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      ::close(fd);
      return 0;
    }
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  NpyFile file;
  std::string error;
  if (!file.open(path, error, /*windowBytes=*/4096)) {
    if (error.empty())
      abort(); // a failure must say why
    ::close(fd);
    return 0;
  }
  // The header promised rows * rowBytes bytes after it (and a row never exceeds the file); they
  // must be readable and convertible.
  if (file.rows() < 0 || file.rowBytes() > size)
    abort();
  const size_t elems = file.rowBytes() / npyItemSize(file.dtype());
  std::vector<float> f(elems);
  std::vector<int64_t> i(elems);
  for (int64_t r = 0; r < file.rows() && r < 4096; ++r) {
    const unsigned char *row = file.rowsAt(r, 1, error);
    if (!row)
      abort(); // in range, so it must map
    if (!convertToF32(file.dtype(), row, elems, f.data()))
      (void)convertToI64(file.dtype(), row, elems, i.data());
  }
  if (file.rowsAt(file.rows(), 1, error) != nullptr || error.empty())
    abort(); // one past the end is an error
  ::close(fd);
  return 0;
}
