// graphc-export-onnx: trained weights back into the source ONNX model (issue #7).
//
//   graphc-export-onnx MODEL.onnx --weights=DIR -o OUT.onnx
//
// A training binary's --save-weights DIR holds one DIR/<sanitized initializer name>.npy per
// parameter (BatchNorm running statistics included). This tool writes a copy of MODEL.onnx in
// which every initializer with such a file holds the file's values, stored as raw_data; the
// graph, the other initializers and every other field stay as they were, so the result loads in
// PyTorch (state_dict keys = initializer names) or ONNX Runtime like the original export.
//
// Rules: every .npy in DIR must name an initializer (sanitize: '/' and any character outside
// [A-Za-z0-9._:-] become '_'), and its shape and dtype must equal the initializer's exactly.
// Initializers without a file keep their values and are listed in the summary line on stdout,
// `exported N of M initializers[; unchanged: a, b]`. Any failure (unreadable, truncated or
// malformed ONNX or .npy, a stray file, a mismatch) is one line on stderr and exit code 1, and
// OUT is not touched: the model is written to a temporary file beside OUT and renamed at the end.
#include "graphc/runtime/npy.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "onnx/onnx_pb.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cl = llvm::cl;
using graphc::rt::NpyArray;
using graphc::rt::NpyDType;

namespace {

cl::OptionCategory category("graphc-export-onnx options");

// Options live in main's frame (llvm::cl registers them globally while they exist).
struct Options {
  cl::opt<std::string> model{cl::Positional, cl::desc("<model.onnx>"), cl::cat(category)};
  cl::opt<std::string> weights{"weights",
                               cl::desc("directory written by a training binary's --save-weights"),
                               cl::value_desc("dir"), cl::cat(category)};
  cl::opt<std::string> output{"o", cl::desc("the ONNX model to write"), cl::value_desc("file"),
                              cl::cat(category)};
};

struct Failure {
  std::string message;
};

[[noreturn]] void fail(const std::string &message) { throw Failure{message}; }

/// The training binary's file name for a parameter: '/' and anything outside [A-Za-z0-9._:-]
/// become '_' (runtime/lib/train_main.cpp, sanitize).
std::string sanitize(const std::string &name) {
  std::string s = name;
  for (char &c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok)
      c = '_';
  }
  return s;
}

/// The .npy dtype holding ONNX data type `t` bit for bit, if there is one.
std::optional<NpyDType> npyTypeOf(int32_t t) {
  switch (t) {
  case onnx::TensorProto::FLOAT: return NpyDType::F32;
  case onnx::TensorProto::UINT8: return NpyDType::U8;
  case onnx::TensorProto::INT8: return NpyDType::I8;
  case onnx::TensorProto::UINT16: return NpyDType::U16;
  case onnx::TensorProto::INT16: return NpyDType::I16;
  case onnx::TensorProto::INT32: return NpyDType::I32;
  case onnx::TensorProto::INT64: return NpyDType::I64;
  case onnx::TensorProto::BOOL: return NpyDType::Bool;
  case onnx::TensorProto::FLOAT16: return NpyDType::F16;
  case onnx::TensorProto::DOUBLE: return NpyDType::F64;
  case onnx::TensorProto::UINT32: return NpyDType::U32;
  case onnx::TensorProto::UINT64: return NpyDType::U64;
  default: return std::nullopt;
  }
}

std::string quoted(const std::string &s) { return "\"" + s + "\""; }

onnx::ModelProto readModel(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    fail(path + ": cannot read the file: " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() > size_t(INT_MAX))
    fail(path + ": larger than 2 GiB, which ONNX protobuf files cannot be");
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromArray(bytes.data(), int(bytes.size())))
    fail(path + ": not a valid ONNX model (protobuf parsing failed; the file may be truncated or "
                "corrupted)");
  // A file cut exactly at a field boundary still parses; what a model must have catches most of
  // those, and the size check below catches initializers cut short.
  if (!model.has_graph() || model.opset_import_size() == 0)
    fail(path + ": not a valid ONNX model (no graph or no opset_import; the file may be "
                "truncated)");
  for (const onnx::TensorProto &t : model.graph().initializer()) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      fail(path + ": initializer " + quoted(t.name()) +
           " uses external data, which is not supported; re-export with the weights inside the "
           ".onnx file");
    int64_t count = 1;
    for (int64_t d : t.dims())
      if (d < 0 || __builtin_mul_overflow(count, d, &count) || count > (int64_t{1} << 40))
        fail(path + ": initializer " + quoted(t.name()) + " has an invalid shape " +
             graphc::rt::formatShape({t.dims().begin(), t.dims().end()}));
    std::optional<NpyDType> dtype = npyTypeOf(t.data_type());
    if (dtype && t.has_raw_data() &&
        t.raw_data().size() != uint64_t(count) * graphc::rt::npyItemSize(*dtype))
      fail(path + ": initializer " + quoted(t.name()) + " holds " +
           std::to_string(t.raw_data().size()) + " bytes but its shape needs " +
           std::to_string(uint64_t(count) * graphc::rt::npyItemSize(*dtype)) +
           " (the file may be truncated)");
  }
  return model;
}

/// The .npy files of dir (regular files, or links to them), sorted by name.
std::vector<std::string> listNpyFiles(const std::string &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(dir, ec);
  if (ec || !fs::exists(st))
    fail("--weights=" + dir + ": no such directory");
  if (!fs::is_directory(st))
    fail("--weights=" + dir + ": not a directory");
  std::vector<std::string> names;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0 &&
        it->is_regular_file(ec))
      names.push_back(name);
  }
  if (ec)
    fail("--weights=" + dir + ": cannot list the directory: " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

void writeModelAtomically(const onnx::ModelProto &model, const std::string &path) {
  if (model.ByteSizeLong() > size_t(INT_MAX))
    fail(path + ": the model would be larger than 2 GiB, which ONNX protobuf files cannot be");
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    fail(path + ": cannot serialize the model");
  // A temporary file in OUT's directory (removed on a signal too), renamed over OUT at the end.
  llvm::Expected<llvm::sys::fs::TempFile> temp =
      llvm::sys::fs::TempFile::create(path + ".tmp-%%%%%%");
  if (!temp)
    fail(path + ": cannot create a temporary file: " + llvm::toString(temp.takeError()));
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    os.write(bytes.data(), bytes.size());
    os.flush();
    if (os.has_error()) {
      std::string message = path + ": cannot write: " + os.error().message();
      os.clear_error();
      llvm::consumeError(temp->discard());
      fail(message);
    }
  }
  if (llvm::Error e = temp->keep(path)) {
    std::string message = path + ": cannot write: " + llvm::toString(std::move(e));
    llvm::consumeError(temp->discard());
    fail(message);
  }
}

int run(const Options &opts) {
  if (opts.model.empty())
    fail("no input model given; usage: graphc-export-onnx MODEL.onnx --weights=DIR -o OUT.onnx");
  if (opts.weights.empty())
    fail("no --weights=DIR given (the directory of a training binary's --save-weights)");
  if (opts.output.empty())
    fail("no output given; use -o OUT.onnx");

  onnx::ModelProto model = readModel(opts.model);
  onnx::GraphProto &graph = *model.mutable_graph();
  const int total = graph.initializer_size();

  // Sanitized name -> initializer indices (more than one: the file name is ambiguous).
  std::map<std::string, std::vector<int>> bySanitized;
  for (int i = 0; i < total; ++i)
    bySanitized[sanitize(graph.initializer(i).name())].push_back(i);

  const std::vector<std::string> files = listNpyFiles(opts.weights);
  std::vector<bool> replaced(total, false);
  for (const std::string &file : files) {
    const std::string path = opts.weights + "/" + file;
    const std::string stem = file.substr(0, file.size() - 4);
    auto found = bySanitized.find(stem);
    if (found == bySanitized.end())
      fail(path + ": no initializer of " + opts.model + " is named " + quoted(stem) +
           " (after replacing '/' and characters outside [A-Za-z0-9._:-] with '_')");
    if (found->second.size() > 1)
      fail(path + ": ambiguous: initializers " + quoted(graph.initializer(found->second[0]).name()) +
           " and " + quoted(graph.initializer(found->second[1]).name()) +
           " both have the file name " + quoted(file));
    onnx::TensorProto &t = *graph.mutable_initializer(found->second[0]);

    NpyArray array;
    std::string error;
    if (!graphc::rt::readNpy(path, array, error))
      fail(error);
    std::optional<NpyDType> expected = npyTypeOf(t.data_type());
    if (!expected)
      fail(path + ": initializer " + quoted(t.name()) + " has ONNX data type " +
           std::to_string(t.data_type()) + ", which has no .npy counterpart");
    if (array.dtype != *expected)
      fail(path + ": dtype " + graphc::rt::npyDTypeName(array.dtype) +
           " does not match initializer " + quoted(t.name()) + ": expected " +
           graphc::rt::npyDTypeName(*expected) + ", got " + graphc::rt::npyDTypeName(array.dtype));
    const std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    if (array.shape != dims)
      fail(path + ": shape does not match initializer " + quoted(t.name()) + ": expected " +
           graphc::rt::formatShape(dims) + ", got " + graphc::rt::formatShape(array.shape));

    // The values, little endian (as .npy data and ONNX raw_data both are), replace whatever
    // field held them before.
    t.clear_float_data();
    t.clear_int32_data();
    t.clear_string_data();
    t.clear_int64_data();
    t.clear_double_data();
    t.clear_uint64_data();
    t.clear_external_data();
    t.clear_data_location();
    t.clear_segment();
    t.set_raw_data(array.data.data(), array.data.size());
    replaced[found->second[0]] = true;
  }

  writeModelAtomically(model, opts.output);

  std::string unchanged;
  for (int i = 0; i < total; ++i)
    if (!replaced[i])
      unchanged += (unchanged.empty() ? "" : ", ") + graph.initializer(i).name();
  llvm::outs() << "exported " << files.size() << " of " << total << " initializers";
  if (!unchanged.empty())
    llvm::outs() << "; unchanged: " << unchanged;
  llvm::outs() << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  Options opts;
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(argc, argv,
                                   "graphc-export-onnx: write a copy of an ONNX model with the "
                                   "weights a training binary saved (--save-weights)\n",
                                   &llvm::errs()))
    return 1;
  try {
    return run(opts);
  } catch (const Failure &f) {
    llvm::errs() << "graphc-export-onnx: error: " << f.message << "\n";
    return 1;
  }
}
