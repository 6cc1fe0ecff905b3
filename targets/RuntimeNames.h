// Spellings of runtime enums in generated source, shared by the CPU and CUDA emitters.
#pragma once

#include "dialects/graph/GraphOps.h"

namespace graphc {

/// The graphc::rt::LossKind enumerator for a graph-dialect loss kind, as C++ source.
inline const char *runtimeLossKindName(graph::LossKind kind) {
  switch (kind) {
  case graph::LossKind::sparse_categorical_crossentropy:
    return "graphc::rt::LossKind::SparseCategoricalCrossentropy";
  case graph::LossKind::categorical_crossentropy:
    return "graphc::rt::LossKind::CategoricalCrossentropy";
  case graph::LossKind::binary_crossentropy:
    return "graphc::rt::LossKind::BinaryCrossentropy";
  case graph::LossKind::mse:
    return "graphc::rt::LossKind::MeanSquaredError";
  }
  return "";
}

} // namespace graphc
