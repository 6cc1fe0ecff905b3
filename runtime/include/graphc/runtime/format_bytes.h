// Byte counts as the runtimes print them in their start-up errors ("1.50 GiB"), shared by the
// CPU's host-memory check and the CUDA runtime's device-memory check.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace graphc::rt {

/// "1.50 GiB", "12.00 MiB", "1.50 KiB", "512 bytes".
inline std::string formatBytes(uint64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30))
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / double(1ull << 30));
  else if (bytes >= (1ull << 20))
    std::snprintf(buf, sizeof(buf), "%.2f MiB", b / double(1ull << 20));
  else if (bytes >= (1ull << 10))
    std::snprintf(buf, sizeof(buf), "%.2f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%" PRIu64 " bytes", bytes);
  return buf;
}

} // namespace graphc::rt
