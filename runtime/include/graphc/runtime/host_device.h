// GRAPHC_HD: what the headers shared by the CPU kernels (runtime/lib/kernels.cpp) and the
// generated CUDA kernels (targets/cuda/EmitCuda.cpp, through step.h) put before each function:
// __host__ __device__ under nvcc, plain inline C++ elsewhere (including the host shim).
#pragma once

#if defined(__CUDACC__)
#define GRAPHC_HD __host__ __device__ __forceinline__
#else
#define GRAPHC_HD inline
#endif
