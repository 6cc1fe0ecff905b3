// Scalar formulas shared by the CPU kernels (runtime/lib/kernels.cpp) and the generated CUDA
// kernels (targets/cuda/EmitCuda.cpp, through step.h): one definition of each activation and
// of the embedding index rule, so the two targets cannot drift apart. Every function is
// __host__ __device__ under nvcc and plain inline C++ elsewhere (including the host shim).
//
// The formulas are PyTorch's (torch.nn.functional.gelu, elu, selu, silu, softplus, softsign,
// leaky_relu, exp, log, pow and their autograd derivatives), which test/keras and test/e2e
// compare against.
#pragma once

#include <math.h>

#include <cstdint>

#include "graphc/runtime/host_device.h"

namespace graphc::rt {

/// graph.activation's kinds (graph::ActivationKind has the same numbering).
enum class Activation : int32_t {
  Gelu = 0,      // x * Phi(x)
  GeluTanh = 1,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  Elu = 2,       // x > 0 ? x : alpha (exp(x) - 1)
  Selu = 3,      // kSeluScale * elu(x) with alpha = kSeluAlpha
  Silu = 4,      // x * sigmoid(x)
  Softplus = 5,  // log(1 + exp(x)), x itself above 20 (PyTorch's threshold)
  Softsign = 6,  // x / (1 + |x|)
  LeakyRelu = 7, // x > 0 ? x : alpha x
  Exp = 8,       // e^x
  Log = 9,       // ln x
  Pow = 10,      // x^alpha (powerOf)
  Abs = 11,      // |x|
  Equal = 12,    // x == alpha ? 1 : 0
  Greater = 13,  // x > alpha ? 1 : 0
};

constexpr float kSeluAlpha = 1.6732632423543772848170429916717f;
constexpr float kSeluScale = 1.0507009873554804934193349852946f;
constexpr float kSqrtHalf = 0.70710678118654752440f;      // 1 / sqrt(2)
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;    // 1 / sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286535588f;   // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

GRAPHC_HD float sigmoidOf(float x) {
  if (x >= 0.0f)
    return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}

/// x^alpha, with the exponents that models write as their own ops computed as those ops are
/// (x * x, sqrt, 1 / x, 1 / sqrt(x)), so the results match PyTorch's square, sqrt and
/// reciprocal to the bit rather than to powf's last place.
GRAPHC_HD float powerOf(float x, float alpha) {
  if (alpha == 2.0f)
    return x * x;
  if (alpha == 1.0f)
    return x;
  if (alpha == 0.5f)
    return sqrtf(x);
  if (alpha == -1.0f)
    return 1.0f / x;
  if (alpha == -0.5f)
    return 1.0f / sqrtf(x);
  return powf(x, alpha);
}

/// f(x) for the activation `kind` (alpha: elu's scale, leaky_relu's slope, pow's exponent).
GRAPHC_HD float activationValue(Activation kind, float alpha, float x) {
  switch (kind) {
  case Activation::Gelu:
    return 0.5f * x * (1.0f + erff(x * kSqrtHalf));
  case Activation::GeluTanh:
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
  case Activation::Elu:
    return x > 0.0f ? x : alpha * expm1f(x);
  case Activation::Selu:
    return kSeluScale * (x > 0.0f ? x : kSeluAlpha * expm1f(x));
  case Activation::Silu:
    return x * sigmoidOf(x);
  case Activation::Softplus:
    return x > 20.0f ? x : log1pf(expf(x));
  case Activation::Softsign:
    return x / (1.0f + fabsf(x));
  case Activation::LeakyRelu:
    return x > 0.0f ? x : alpha * x;
  case Activation::Exp:
    return expf(x);
  case Activation::Log:
    return logf(x);
  case Activation::Pow:
    return powerOf(x, alpha);
  case Activation::Abs:
    return fabsf(x);
  case Activation::Equal:
    return x == alpha ? 1.0f : 0.0f;
  case Activation::Greater:
    return x > alpha ? 1.0f : 0.0f;
  }
  return x;
}

/// f'(x) for the activation `kind`.
GRAPHC_HD float activationDerivative(Activation kind, float alpha, float x) {
  switch (kind) {
  case Activation::Gelu:
    return 0.5f * (1.0f + erff(x * kSqrtHalf)) + x * kInvSqrt2Pi * expf(-0.5f * x * x);
  case Activation::GeluTanh: {
    const float inner = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
    const float t = tanhf(inner);
    return 0.5f * (1.0f + t) +
           0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  }
  case Activation::Elu:
    return x > 0.0f ? 1.0f : alpha * expf(x);
  case Activation::Selu:
    return x > 0.0f ? kSeluScale : kSeluScale * kSeluAlpha * expf(x);
  case Activation::Silu: {
    const float s = sigmoidOf(x);
    return s * (1.0f + x * (1.0f - s));
  }
  case Activation::Softplus:
    return x > 20.0f ? 1.0f : sigmoidOf(x);
  case Activation::Softsign: {
    const float d = 1.0f + fabsf(x);
    return 1.0f / (d * d);
  }
  case Activation::LeakyRelu:
    return x > 0.0f ? 1.0f : alpha;
  case Activation::Exp:
    return expf(x);
  case Activation::Log:
    return 1.0f / x;
  case Activation::Pow:
    // PyTorch's pow backward, alpha x^(alpha - 1); sqrt's is 1 / (2 sqrt(x)) and the
    // reciprocal's -(1 / x)^2, as their own ops compute them.
    if (alpha == 2.0f)
      return 2.0f * x;
    if (alpha == 1.0f)
      return 1.0f;
    if (alpha == 0.5f)
      return 1.0f / (2.0f * sqrtf(x));
    if (alpha == -1.0f) {
      const float r = 1.0f / x;
      return -(r * r);
    }
    return alpha * powerOf(x, alpha - 1.0f);
  case Activation::Abs: // PyTorch's sign(x): 0 at 0
    return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f;
  case Activation::Equal: // a comparison: no gradient
  case Activation::Greater:
    return 0.0f;
  }
  return 1.0f;
}

/// The table row an embedding index names, or -1 when the value is not a whole number in
/// [0, vocabulary) (the row then reads as zeros and gets no gradient).
GRAPHC_HD int64_t embeddingRow(float index, int64_t vocabulary) {
  if (!(index >= 0.0f) || index >= static_cast<float>(vocabulary) || floorf(index) != index)
    return -1;
  return static_cast<int64_t>(index);
}

/// Batch normalization's per-channel affine map y = x * alpha + beta, from the statistics the
/// forward pass saves (float32 mean and 1 / sqrt(var + epsilon)). The forward kernel and the
/// recomputation from saved statistics (graph.batch_norm_apply) both call this, so a
/// rematerialized batch norm output is bit-identical to the original.
GRAPHC_HD void batchNormAffine(float savedMean, float savedInvstd, float scale, float bias,
                               float *alpha, float *beta) {
  const double invstdScale = static_cast<double>(savedInvstd) * static_cast<double>(scale);
  *alpha = static_cast<float>(invstdScale);
  *beta = static_cast<float>(static_cast<double>(bias) -
                             static_cast<double>(savedMean) * invstdScale);
}

} // namespace graphc::rt
