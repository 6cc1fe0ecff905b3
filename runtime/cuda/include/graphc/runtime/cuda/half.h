// The 16-bit storage types of the generated CUDA step (graphc --precision=bf16|fp16): a bf16 or
// f16 tensor in the arena is an array of Bf16 or F16, 2 bytes each, bit-compatible with CUDA's
// __nv_bfloat16 and __half, so cuBLAS (CUDA_R_16BF, CUDA_R_16F) and cuDNN (CUDNN_DATA_BFLOAT16,
// CUDNN_DATA_HALF) read them in place.
//
// Arithmetic is never done in 16 bit: an element converts to float when it is read and rounds
// back (to nearest even) when it is stored, exactly as the CPU target's emulation does
// (runtime/kernels.cpp: halfToFloat, floatToHalf), so a generated kernel built for the host
// (host_shim.h) computes the CPU target's values bit for bit. Unlike CUDA's own types, these
// declare no 16-bit operators: `a + b` is float addition, whatever the operands' storage.
#pragma once

#include <cstdint>
#include <cstring>

#include "graphc/runtime/host_device.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace graphc::rt::cuda {

GRAPHC_HD uint32_t floatBits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
#endif
}

GRAPHC_HD float bitsFloat(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
#endif
}

/// bfloat16: the upper half of an f32.
struct Bf16 {
  uint16_t bits;
  Bf16() = default;
  /// Round to nearest even; a NaN stays a (quiet) NaN with its sign.
  GRAPHC_HD Bf16(float value) {
    uint32_t wide = floatBits(value);
    if ((wide & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((wide >> 16) | 0x40u);
      return;
    }
    wide += 0x7fffu + ((wide >> 16) & 1u);
    bits = static_cast<uint16_t>(wide >> 16);
  }
  GRAPHC_HD operator float() const { return bitsFloat(static_cast<uint32_t>(bits) << 16); }
};

/// IEEE binary16: round to nearest even, overflow to infinity.
struct F16 {
  uint16_t bits;
  F16() = default;
  GRAPHC_HD F16(float value) {
#if defined(__CUDACC__) // cuda_fp16.h's conversions, on the device and in nvcc's host pass
    bits = __half_as_ushort(__float2half_rn(value));
#else
    _Float16 h = static_cast<_Float16>(value);
    std::memcpy(&bits, &h, sizeof(bits));
#endif
  }
  GRAPHC_HD operator float() const {
#if defined(__CUDACC__)
    return __half2float(__ushort_as_half(bits));
#else
    _Float16 h;
    std::memcpy(&h, &bits, sizeof(h));
    return static_cast<float>(h);
#endif
  }
};

static_assert(sizeof(Bf16) == 2 && sizeof(F16) == 2, "16-bit storage must be 2 bytes");

/// `value` as a tensor of element type T would store it (identity for float): what a fused
/// kernel applies to an intermediate it keeps in a register, so fusing never skips a rounding
/// that the unfused ops would have done.
template <typename T> GRAPHC_HD float roundedAs(float value) {
  return static_cast<float>(T(value));
}

} // namespace graphc::rt::cuda
