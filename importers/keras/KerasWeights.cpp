// Keras weight files through libhdf5's C API. Every call's result is checked; libhdf5's own
// error printing is switched off, so a truncated or corrupted file gives one line from here.
#include "importers/keras/KerasWeights.h"

#include <hdf5.h>

#include <cstring>

namespace graphc {
namespace {

/// Closes an HDF5 handle of any kind when it goes out of scope.
struct Handle {
  hid_t id = -1;
  explicit Handle(hid_t id) : id(id) {}
  Handle(const Handle &) = delete;
  Handle &operator=(const Handle &) = delete;
  ~Handle() {
    if (id >= 0)
      H5Oclose(id); // groups and datasets
  }
  bool ok() const { return id >= 0; }
};

struct Space {
  hid_t id;
  explicit Space(hid_t id) : id(id) {}
  ~Space() {
    if (id >= 0)
      H5Sclose(id);
  }
};
struct TypeHandle {
  hid_t id;
  explicit TypeHandle(hid_t id) : id(id) {}
  ~TypeHandle() {
    if (id >= 0)
      H5Tclose(id);
  }
};
struct AttrHandle {
  hid_t id;
  explicit AttrHandle(hid_t id) : id(id) {}
  ~AttrHandle() {
    if (id >= 0)
      H5Aclose(id);
  }
};

void silenceHdf5() {
  static bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

/// Whether `path` (relative to `loc`, possibly with several components) names an object.
bool exists(hid_t loc, const std::string &path) {
  if (path.empty())
    return true;
  // H5Lexists fails on a missing intermediate group, so check each prefix in turn.
  size_t pos = 0;
  while (true) {
    size_t next = path.find('/', pos);
    std::string prefix = path.substr(0, next);
    if (H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0)
      return false;
    if (next == std::string::npos)
      return true;
    pos = next + 1;
  }
}

bool isGroup(hid_t loc, const std::string &path) {
  if (!exists(loc, path))
    return false;
  H5O_info_t info;
  if (H5Oget_info_by_name(loc, path.c_str(), &info, H5P_DEFAULT) < 0)
    return false;
  return info.type == H5O_TYPE_GROUP;
}

bool readDataset(hid_t loc, const std::string &path, KerasArray &out, std::string &error) {
  Handle ds(H5Dopen2(loc, path.c_str(), H5P_DEFAULT));
  if (!ds.ok()) {
    error = "cannot open dataset \"" + path + "\"";
    return false;
  }
  TypeHandle type(H5Dget_type(ds.id));
  // Integer arrays (a Normalization layer's sample count) are read converted to float.
  if (type.id < 0 || (H5Tget_class(type.id) != H5T_FLOAT && H5Tget_class(type.id) != H5T_INTEGER)) {
    error = "dataset \"" + path + "\" is not a numeric array";
    return false;
  }
  Space space(H5Dget_space(ds.id));
  int rank = space.id >= 0 ? H5Sget_simple_extent_ndims(space.id) : -1;
  if (rank < 0 || rank > 8) {
    error = "dataset \"" + path + "\" has an unreadable shape";
    return false;
  }
  hsize_t dims[8] = {0};
  if (rank > 0 && H5Sget_simple_extent_dims(space.id, dims, nullptr) < 0) {
    error = "dataset \"" + path + "\" has an unreadable shape";
    return false;
  }
  int64_t count = 1;
  out.dims.clear();
  for (int i = 0; i < rank; ++i) {
    if (dims[i] > (hsize_t{1} << 40) ||
        __builtin_mul_overflow(count, int64_t(dims[i]), &count) || count > (int64_t{1} << 32)) {
      error = "dataset \"" + path + "\" is impossibly large";
      return false;
    }
    out.dims.push_back(int64_t(dims[i]));
  }
  out.values.assign(size_t(count), 0.f);
  if (count > 0 && H5Dread(ds.id, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                           out.values.data()) < 0) {
    error = "cannot read dataset \"" + path + "\" (the file may be truncated)";
    return false;
  }
  return true;
}

/// A string-array attribute (fixed- or variable-length strings, as h5py writes them).
bool readStringsAttr(hid_t loc, const char *name, std::vector<std::string> &out,
                     std::string &error) {
  AttrHandle attr(H5Aopen(loc, name, H5P_DEFAULT));
  if (attr.id < 0) {
    error = std::string("cannot read attribute ") + name;
    return false;
  }
  TypeHandle type(H5Aget_type(attr.id));
  Space space(H5Aget_space(attr.id));
  if (type.id < 0 || space.id < 0) {
    error = std::string("cannot read attribute ") + name;
    return false;
  }
  if (H5Tget_class(type.id) != H5T_STRING && H5Sget_simple_extent_npoints(space.id) != 0) {
    error = std::string("attribute ") + name + " is not a list of strings";
    return false;
  }
  hssize_t n = space.id >= 0 ? H5Sget_simple_extent_npoints(space.id) : -1;
  out.clear();
  if (n == 0)
    return true; // an empty list (h5py stores [] as an empty float array)
  if (n < 0 || n > 1000000) {
    error = std::string("attribute ") + name + " has an unreadable size";
    return false;
  }
  if (H5Tis_variable_str(type.id) > 0) {
    std::vector<char *> ptrs(size_t(n), nullptr);
    TypeHandle mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.id, H5T_VARIABLE);
    if (n > 0 && H5Aread(attr.id, mem.id, ptrs.data()) < 0) {
      error = std::string("cannot read attribute ") + name;
      return false;
    }
    for (char *p : ptrs) {
      out.push_back(p ? p : "");
      if (p)
        H5free_memory(p);
    }
    return true;
  }
  size_t size = H5Tget_size(type.id);
  if (size == 0 || size > 4096) {
    error = std::string("attribute ") + name + " has an unreadable string size";
    return false;
  }
  std::vector<char> buffer(size * size_t(n) + 1, 0);
  if (n > 0 && H5Aread(attr.id, type.id, buffer.data()) < 0) {
    error = std::string("cannot read attribute ") + name;
    return false;
  }
  for (hssize_t i = 0; i < n; ++i) {
    const char *s = buffer.data() + size_t(i) * size;
    out.push_back(std::string(s, strnlen(s, size)));
  }
  return true;
}

} // namespace

std::unique_ptr<KerasWeightFile> KerasWeightFile::open(const std::string &path,
                                                       std::string &error) {
  silenceHdf5();
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    error = "not an HDF5 file (the file may be truncated or corrupted)";
    return nullptr;
  }
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    error = "cannot open the HDF5 file (the file may be truncated or corrupted)";
    return nullptr;
  }
  std::unique_ptr<KerasWeightFile> w(new KerasWeightFile());
  w->file_ = file;
  w->root_ = file;
  if (isGroup(file, "layers") || isGroup(file, "_layer_checkpoint_dependencies") ||
      isGroup(file, "vars")) {
    w->layout_ = Layout::Keras3;
    return w;
  }
  hid_t root = file;
  if (isGroup(file, "model_weights")) {
    root = H5Gopen2(file, "model_weights", H5P_DEFAULT);
    if (root < 0) {
      error = "cannot open group model_weights (the file may be truncated)";
      return nullptr;
    }
    w->root_ = root;
  }
  if (H5Aexists(root, "layer_names") > 0) {
    w->layout_ = Layout::Legacy;
    return w;
  }
  error = "neither a Keras 3 weights file (no layers/ group) nor a tf.keras 2 one (no "
          "layer_names attribute)";
  return nullptr;
}

KerasWeightFile::~KerasWeightFile() {
  if (root_ >= 0 && root_ != file_)
    H5Gclose(root_);
  if (file_ >= 0)
    H5Fclose(file_);
}

bool KerasWeightFile::readVars(const std::string &groupPath, std::vector<KerasArray> &out,
                               bool &found, std::string &error) {
  out.clear();
  std::string vars = groupPath.empty() ? "vars" : groupPath + "/vars";
  found = isGroup(root_, vars);
  if (!found)
    return true;
  for (int i = 0;; ++i) {
    std::string path = vars + "/" + std::to_string(i);
    if (!exists(root_, path))
      break;
    KerasArray a;
    if (!readDataset(root_, path, a, error))
      return false;
    out.push_back(std::move(a));
  }
  return true;
}

bool KerasWeightFile::readLegacyGroup(const std::string &layer,
                                      std::vector<std::pair<std::string, KerasArray>> &out,
                                      bool &found, std::string &error) {
  out.clear();
  found = layer.find('/') == std::string::npos && isGroup(root_, layer);
  if (!found)
    return true;
  Handle group(H5Gopen2(root_, layer.c_str(), H5P_DEFAULT));
  if (!group.ok()) {
    error = "cannot open group \"" + layer + "\"";
    return false;
  }
  std::vector<std::string> names;
  if (H5Aexists(group.id, "weight_names") > 0) {
    if (!readStringsAttr(group.id, "weight_names", names, error)) {
      error = "group \"" + layer + "\": " + error;
      return false;
    }
  } else {
    // tf.keras splits an attribute over 64 KiB into weight_names0, weight_names1, ...
    for (int chunk = 0;; ++chunk) {
      std::string attr = "weight_names" + std::to_string(chunk);
      if (H5Aexists(group.id, attr.c_str()) <= 0)
        break;
      std::vector<std::string> part;
      if (!readStringsAttr(group.id, attr.c_str(), part, error)) {
        error = "group \"" + layer + "\": " + error;
        return false;
      }
      names.insert(names.end(), part.begin(), part.end());
    }
  }
  for (const std::string &name : names) {
    KerasArray a;
    if (!exists(group.id, name)) {
      error = "group \"" + layer + "\" lists weight \"" + name +
              "\" but has no such dataset (the file may be truncated)";
      return false;
    }
    if (!readDataset(group.id, name, a, error)) {
      error = "group \"" + layer + "\": " + error;
      return false;
    }
    std::string key = name;
    if (key.size() > 2 && key.compare(key.size() - 2, 2, ":0") == 0)
      key.resize(key.size() - 2);
    out.push_back({key, std::move(a)});
  }
  return true;
}

} // namespace graphc
