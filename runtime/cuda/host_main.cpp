// The host build of a generated CUDA step (GRAPHC_HOST_SHIM): defines `graphc_program` from the
// embedded program descriptor and runs the step directly on the CPU main's arena. Linked instead
// of cuda_runtime.cpp into the host variant the CPU-only CI compares with the CPU target.
#define GRAPHC_HOST_SHIM 1
#include "graphc/runtime/cuda/step.h"

#include "graphc/runtime/cuda/descriptor.h"

#include <cstdio>
#include <cstdlib>

namespace {

using namespace graphc::rt;

uint64_t deviceArenaBytes = 0; // the host arena (offloaded optimizer state) follows it

void hostStep(unsigned char *arena) {
  if (graphc_generated.setHostArena)
    graphc_generated.setHostArena(arena + deviceArenaBytes);
  graphc_generated.step(arena, nullptr);
}

Program loadProgram() {
  static cuda::DecodedProgram decoded;
  std::string error;
  if (!cuda::decodeProgramDescriptor(graphc_generated.descriptor, graphc_generated.descriptorBytes,
                                     graphc_generated.initBlob, graphc_generated.initBlobBytes,
                                     decoded, error)) {
    std::fprintf(stderr, "error: the program descriptor embedded in this binary is invalid: %s\n",
                 error.c_str());
    std::exit(3);
  }
  decoded.program.trainStep = hostStep;
  deviceArenaBytes = decoded.program.arenaBytes;
  return decoded.program;
}

} // namespace

extern "C" const graphc::rt::Program graphc_program = loadProgram();
