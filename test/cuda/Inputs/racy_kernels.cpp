// Two kernels with data races, built for the host through the shim (host-launch-order.test's
// negative control): a thread that reads the element its neighbour writes in the same launch,
// and a block phase whose threads read a shared slot another thread of the phase writes. On a
// GPU their results depend on the order the threads run in, so the shim's default and reversed
// launch orders (GRAPHC_HOST_SHIM_LAUNCH_ORDER) must print different sums.
#include "graphc/runtime/cuda/step.h"

#include <cstdio>

__global__ void shiftAcrossThreads(float *a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 1 < n)
    a[i + 1] = a[i] + 1.0f; // reads a[i], which thread i - 1 writes
}

__global__ void prefixInOnePhase(float *out) {
  GRAPHC_BLOCK_SHARED float part[GRAPHC_BLOCK_SIZE];
  GRAPHC_BLOCK_THREADS(t) { part[t] = 1.0f; }
  GRAPHC_BLOCK_THREADS(t) {
    if (t > 0)
      part[t] += part[t - 1]; // reads the slot thread t - 1 writes in this phase
  }
  GRAPHC_BLOCK_THREADS(t) {
    if (t == 0) {
      float sum = 0.0f;
      for (int j = 0; j < GRAPHC_BLOCK_SIZE; ++j)
        sum += part[j];
      out[blockIdx.x] = sum;
    }
  }
}

int main() {
  static float a[512], blocks[2];
  graphc::rt::cuda::hostLaunch(shiftAcrossThreads, dim3(2), dim3(256), a, 512);
  graphc::rt::cuda::hostLaunchBlocks(prefixInOnePhase, dim3(2), dim3(GRAPHC_BLOCK_SIZE), blocks);
  double threads = 0.0;
  for (float v : a)
    threads += v;
  std::printf("threads %g\nblock phases %g\n", threads, double(blocks[0] + blocks[1]));
  return 0;
}
