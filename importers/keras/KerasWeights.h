// Reads Keras weight files with libhdf5 (C API): the Keras 3 layout (`model.weights.h5`:
// `layers/<class-derived path>/vars/0..n`) and the tf.keras 2 `save_weights("x.h5")` layout
// (a group per layer with a `weight_names` attribute naming datasets such as
// `dense/kernel:0`; a whole-model `.h5` keeps the same under `model_weights`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace graphc {

/// One float32 array as stored (Keras layout, row-major).
struct KerasArray {
  std::vector<int64_t> dims;
  std::vector<float> values;
};

class KerasWeightFile {
public:
  enum class Layout { Keras3, Legacy };

  /// Opens `path`; null with a one-line `error` (without the path) when it is not a readable
  /// HDF5 file in either layout. Never prints anything (libhdf5's error stack is silenced).
  static std::unique_ptr<KerasWeightFile> open(const std::string &path, std::string &error);
  ~KerasWeightFile();

  Layout layout() const { return layout_; }

  /// Keras 3: the datasets of group `<groupPath>/vars`, in index order. `found` is false when
  /// the group does not exist; a failed read returns false with `error`.
  bool readVars(const std::string &groupPath, std::vector<KerasArray> &out, bool &found,
                std::string &error);

  /// tf.keras 2: the weights of top-level group `layer` named by its `weight_names`
  /// attribute, in that order, as (name without ":0", array). `found` as above.
  bool readLegacyGroup(const std::string &layer,
                       std::vector<std::pair<std::string, KerasArray>> &out, bool &found,
                       std::string &error);

private:
  KerasWeightFile() = default;
  int64_t file_ = -1; // hid_t
  int64_t root_ = -1; // the group holding the layers (the file, or model_weights)
  Layout layout_ = Layout::Keras3;
};

} // namespace graphc
