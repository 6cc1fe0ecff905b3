// The host build of a generated CUDA step (GRAPHC_HOST_SHIM): defines `graphc_program` from the
// embedded program descriptor and runs the step directly on the CPU main's arena. Linked instead
// of cuda_runtime.cpp into the host variant the CPU-only CI compares with the CPU target.
#define GRAPHC_HOST_SHIM 1
#include "graphc/runtime/cuda/step.h"

#include "graphc/runtime/cuda/descriptor.h"

#include "graphc/runtime/staging.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using namespace graphc::rt;

uint64_t deviceArenaBytes = 0; // the host arena (offloaded optimizer state) follows it

/// The next-batch staging, as the CUDA runtime does it but in order: the upload of batch t+1
/// is written into the staging region before step t's kernels run (the earliest a copy stream
/// could land it), and step t+1 checks that it is still there. The main already put batch t+1
/// into the arena itself (this build has no separate device memory), so a difference means
/// that step t overwrote the staging region, which would have fed a GPU a corrupted batch.
struct HostStaging {
  cuda::StagingLayout layout;
  NextBatchSource source = nullptr;
  void *context = nullptr;
  bool staged = false;
  int64_t steps = 0;
} staging;

void setNextBatchSource(NextBatchSource source, void *context) {
  staging.source = source;
  staging.context = context;
}

void hostStep(unsigned char *arena) {
  const cuda::StagingLayout &l = staging.layout;
  ++staging.steps;
  if (staging.staged) {
    const unsigned char *region = arena + l.offset;
    bool same = std::memcmp(arena + l.labelsOffset, region + stagedLabelsOffset(l.dataBytes),
                            l.labelsBytes) == 0;
    for (const cuda::StagingLayout::Data &d : l.data)
      same = same && std::memcmp(arena + d.arenaOffset, region + d.stagedOffset, d.bytes) == 0;
    if (!same) {
      std::fprintf(stderr,
                   "error: step %lld: the batch staged during the step before (at offset "
                   "%llu of the arena) is not the batch this step received: the staging region "
                   "was overwritten, or the main handed over another batch\n",
                   static_cast<long long>(staging.steps),
                   static_cast<unsigned long long>(l.offset));
      std::exit(3);
    }
    staging.staged = false;
  }
  NextBatch next;
  if (l.present && staging.source && staging.source(staging.context, next)) {
    std::memcpy(arena + l.offset, next.data, l.dataBytes);
    std::memcpy(arena + l.offset + stagedLabelsOffset(l.dataBytes), next.labels, l.labelsBytes);
    staging.staged = true;
  }
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
  decoded.program.setNextBatchSource = setNextBatchSource;
  staging.layout = decoded.staging;
  deviceArenaBytes = decoded.program.arenaBytes;
  return decoded.program;
}

} // namespace

extern "C" const graphc::rt::Program graphc_program = loadProgram();
