// Writers for the three plan dump formats (JSON, MiniMalloc CSV, human text table) and readers
// for MiniMalloc CSV problems/solutions and JSON plans. The readers validate every field and
// report `file:line: message` instead of asserting, because their input comes from users and
// from external solvers.
#include "planner/PlanIO.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <map>

namespace graphc::plan {

std::string humanBytes(uint64_t bytes) {
  static constexpr const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(units)) {
    value /= 1024.0;
    ++unit;
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("%.2f ", value) << units[unit];
  return out;
}

//===----------------------------------------------------------------------===//
// Writers
//===----------------------------------------------------------------------===//

void writePlanJson(llvm::raw_ostream &os, const Plan &plan, const std::vector<Step> &steps,
                   std::optional<uint64_t> budget) {
  // llvm::json::OStream streams in schema order (a json::Object would sort its keys).
  llvm::json::OStream j(os, /*IndentSize=*/2);
  j.object([&] {
    j.attribute("arena_bytes", plan.arenaBytes);
    j.attribute("lower_bound_bytes", lowerBound(plan.buffers, plan.alignment));
    if (budget)
      j.attribute("budget_bytes", *budget);
    else
      j.attribute("budget_bytes", nullptr);
    j.attribute("alignment", plan.alignment);
    if (plan.hostArenaBytes)
      j.attribute("host_arena_bytes", plan.hostArenaBytes);
    j.attributeArray("steps", [&] {
      for (const Step &s : steps)
        j.object([&] {
          j.attribute("index", s.index);
          j.attribute("op", s.op);
          j.attribute("loc", s.loc);
        });
    });
    j.attributeArray("buffers", [&] {
      for (const Buffer &b : plan.buffers)
        j.object([&] {
          j.attribute("name", b.name);
          j.attribute("bytes", b.bytes);
          j.attribute("offset", b.offset);
          j.attribute("first", b.first);
          j.attribute("last", b.last);
          j.attribute("kind", b.kind);
          if (b.host)
            j.attribute("space", "host");
        });
    });
  });
  os << "\n";
}

void writePlanCsv(llvm::raw_ostream &os, const Plan &plan, CsvIds ids) {
  const uint64_t alignment = plan.alignment == 0 ? 1 : plan.alignment;
  os << "id,lower,upper,size,offset\n";
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer &b = plan.buffers[i];
    if (ids == CsvIds::Name)
      os << b.name;
    else
      os << i;
    os << ',' << b.first << ',' << b.last + 1 << ',' << alignTo(b.bytes, alignment) << ','
       << b.offset << '\n';
  }
}

void writePlanText(llvm::raw_ostream &os, const Plan &plan, std::optional<uint64_t> budget) {
  const uint64_t alignment = plan.alignment == 0 ? 1 : plan.alignment;
  auto amount = [](uint64_t bytes) { return std::to_string(bytes) + " (" + humanBytes(bytes) + ")"; };
  uint64_t lower = lowerBound(plan.buffers, plan.alignment);
  os << "arena:       " << amount(plan.arenaBytes) << "\n";
  if (plan.hostArenaBytes)
    os << "host arena:  " << amount(plan.hostArenaBytes)
       << " (offloaded optimizer state, after the arena)\n";
  os << "lower bound: " << amount(lower);
  if (lower != 0)
    os << llvm::format("  arena/lower = %.3f", double(plan.arenaBytes) / double(lower));
  os << "\n";
  os << "budget:      " << (budget ? amount(*budget) : std::string("none")) << "\n";
  os << "alignment:   " << plan.alignment << "\n";
  os << "buffers:     " << plan.buffers.size() << "\n";

  // Bytes by kind (exact sizes), in name order so that dumps are stable.
  std::map<std::string, std::pair<uint64_t, size_t>> byKind;
  for (const Buffer &b : plan.buffers) {
    auto &entry = byKind[(b.kind.empty() ? "-" : b.kind) + (b.host ? " (host)" : "")];
    entry.first += b.bytes;
    entry.second += 1;
  }
  size_t kindWidth = 4;
  for (const auto &[kind, v] : byKind)
    kindWidth = std::max(kindWidth, kind.size());
  os << "by kind:\n";
  for (const auto &[kind, v] : byKind)
    os << "  " << llvm::left_justify(kind, kindWidth) << "  "
       << llvm::right_justify(std::to_string(v.first), 14) << "  "
       << llvm::left_justify(humanBytes(v.first), 11) << "  " << v.second
       << (v.second == 1 ? " buffer\n" : " buffers\n");

  // One row per buffer, sorted by offset then first step (then input order).
  std::vector<size_t> order(plan.buffers.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Buffer &x = plan.buffers[a], &y = plan.buffers[b];
    if (x.offset != y.offset)
      return x.offset < y.offset;
    return x.first != y.first ? x.first < y.first : a < b;
  });
  using Row = std::vector<std::string>;
  std::vector<Row> rows;
  rows.push_back({"offset", "end", "size", "live", "kind", "name", "op"});
  for (size_t i : order) {
    const Buffer &b = plan.buffers[i];
    rows.push_back({std::to_string(b.offset), std::to_string(b.offset + alignTo(b.bytes, alignment)),
                    std::to_string(b.bytes),
                    std::to_string(b.first) + ".." + std::to_string(b.last),
                    (b.kind.empty() ? "-" : b.kind) + (b.host ? " (host)" : ""),
                    b.name.empty() ? "-" : b.name,
                    b.op.empty() ? "-" : b.op});
  }
  const size_t numCols = rows.front().size();
  std::vector<size_t> width(numCols, 0);
  for (const Row &r : rows)
    for (size_t c = 0; c < numCols; ++c)
      width[c] = std::max(width[c], r[c].size());
  os << "\n";
  for (const Row &r : rows) {
    std::string line;
    for (size_t c = 0; c < numCols; ++c) {
      // Numbers right-aligned (first three columns), text left-aligned; no trailing blanks.
      size_t pad = width[c] - r[c].size();
      if (c < 3)
        line += std::string(pad, ' ') + r[c];
      else
        line += r[c] + (c + 1 < numCols ? std::string(pad, ' ') : "");
      if (c + 1 < numCols)
        line += "  ";
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    os << line << "\n";
  }
}

std::string writePlanFile(llvm::StringRef path, const Plan &plan, const std::vector<Step> &steps,
                          std::optional<uint64_t> budget, CsvIds ids) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (ext != ".json" && ext != ".csv" && ext != ".txt")
    return (path + ": unknown plan format '" + ext + "' (expected .json, .csv or .txt)").str();
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return (path + ": " + ec.message()).str();
  if (ext == ".json")
    writePlanJson(os, plan, steps, budget);
  else if (ext == ".csv")
    writePlanCsv(os, plan, ids);
  else
    writePlanText(os, plan, budget);
  os.close();
  if (os.has_error()) {
    std::string msg = (path + ": " + os.error().message()).str();
    os.clear_error();
    return msg;
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Readers
//===----------------------------------------------------------------------===//

namespace {

std::string readFile(llvm::StringRef path, std::string &text) {
  auto buf = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buf)
    return (path + ": " + buf.getError().message()).str();
  text = (*buf)->getBuffer().str();
  return "";
}

} // namespace

std::string parseMiniMallocCsv(llvm::StringRef text, llvm::StringRef fileName, CsvProblem &out) {
  out = CsvProblem();
  auto error = [&](size_t line, const llvm::Twine &msg) {
    return (fileName + ":" + llvm::Twine(line) + ": " + msg).str();
  };
  enum Col { Id, Lower, Upper, Size, Offset, NumCols };
  static constexpr const char *colNames[NumCols] = {"id", "lower", "upper", "size", "offset"};
  int colOf[NumCols] = {-1, -1, -1, -1, -1}; // column index of each field in this file
  size_t numFields = 0;
  bool haveHeader = false;
  llvm::StringSet<> ids;

  size_t lineNo = 0;
  llvm::StringRef rest = text;
  while (!rest.empty()) {
    llvm::StringRef line;
    std::tie(line, rest) = rest.split('\n');
    ++lineNo;
    line = line.trim(); // also drops '\r' from CRLF files
    if (line.empty())
      continue;
    llvm::SmallVector<llvm::StringRef, 8> fields;
    line.split(fields, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
    for (llvm::StringRef &f : fields)
      f = f.trim();

    if (!haveHeader) {
      haveHeader = true;
      numFields = fields.size();
      for (size_t c = 0; c < fields.size(); ++c) {
        int col = -1;
        for (int k = 0; k < NumCols; ++k)
          if (fields[c].equals_insensitive(colNames[k]))
            col = k;
        if (col < 0)
          return error(lineNo, "unknown column '" + fields[c] +
                                   "' in header (expected id,lower,upper,size[,offset])");
        if (colOf[col] >= 0)
          return error(lineNo, "column '" + fields[c] + "' appears twice in header");
        colOf[col] = static_cast<int>(c);
      }
      for (int k = 0; k < Offset; ++k)
        if (colOf[k] < 0)
          return error(lineNo, llvm::Twine("header lacks column '") + colNames[k] +
                                   "' (expected id,lower,upper,size[,offset])");
      out.hasOffsets = colOf[Offset] >= 0;
      continue;
    }

    if (fields.size() != numFields)
      return error(lineNo, "expected " + llvm::Twine(numFields) + " fields, found " +
                               llvm::Twine(fields.size()));
    auto integer = [&](Col col, auto &value) -> std::string {
      llvm::StringRef f = fields[colOf[col]];
      if (f.getAsInteger(10, value))
        return error(lineNo, llvm::Twine("'") + colNames[col] + "' is not a valid integer: '" + f +
                                 "'");
      return "";
    };
    Buffer b;
    b.name = fields[colOf[Id]].str();
    if (b.name.empty())
      return error(lineNo, "empty id");
    if (!ids.insert(b.name).second)
      return error(lineNo, "duplicate id '" + b.name + "'");
    int64_t lower = 0, upper = 0;
    uint64_t size = 0, offset = 0;
    for (auto err : {integer(Lower, lower), integer(Upper, upper), integer(Size, size),
                     out.hasOffsets ? integer(Offset, offset) : std::string()})
      if (!err.empty())
        return err;
    if (lower < 0)
      return error(lineNo, "negative lower " + llvm::Twine(lower));
    if (upper <= lower)
      return error(lineNo, "empty interval: upper " + llvm::Twine(upper) + " <= lower " +
                               llvm::Twine(lower));
    b.first = lower;
    b.last = upper - 1;
    b.bytes = size;
    b.offset = offset;
    out.buffers.push_back(std::move(b));
  }
  if (!haveHeader)
    return error(lineNo == 0 ? 1 : lineNo, "missing header row id,lower,upper,size[,offset]");
  return "";
}

std::string readMiniMallocCsv(llvm::StringRef path, CsvProblem &out) {
  std::string text;
  if (std::string err = readFile(path, text); !err.empty())
    return err;
  return parseMiniMallocCsv(text, path, out);
}

std::string parsePlanJson(llvm::StringRef text, llvm::StringRef fileName, JsonPlan &out) {
  out = JsonPlan();
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    return (fileName + ": " + llvm::toString(parsed.takeError())).str();
  auto error = [&](const llvm::Twine &msg) { return (fileName + ": " + msg).str(); };
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return error("expected a JSON object at the top level");

  // Field accessors: each reports the path of the offending field.
  auto u64 = [&](const llvm::json::Object &o, llvm::StringRef key, const llvm::Twine &where,
                 uint64_t &value) -> std::string {
    const llvm::json::Value *v = o.get(key);
    if (!v)
      return error("missing '" + where + key + "'");
    std::optional<uint64_t> x = v->getAsUINT64();
    if (!x)
      return error("'" + where + key + "' is not a non-negative integer");
    value = *x;
    return "";
  };
  auto i64 = [&](const llvm::json::Object &o, llvm::StringRef key, const llvm::Twine &where,
                 int64_t &value) -> std::string {
    const llvm::json::Value *v = o.get(key);
    if (!v)
      return error("missing '" + where + key + "'");
    std::optional<int64_t> x = v->getAsInteger();
    if (!x)
      return error("'" + where + key + "' is not an integer");
    value = *x;
    return "";
  };
  auto str = [&](const llvm::json::Object &o, llvm::StringRef key, const llvm::Twine &where,
                 std::string &value, bool required) -> std::string {
    const llvm::json::Value *v = o.get(key);
    if (!v)
      return required ? error("missing '" + where + key + "'") : "";
    std::optional<llvm::StringRef> x = v->getAsString();
    if (!x)
      return error("'" + where + key + "' is not a string");
    value = x->str();
    return "";
  };

  std::string err;
  if (!(err = u64(*root, "arena_bytes", "", out.plan.arenaBytes)).empty() ||
      !(err = u64(*root, "alignment", "", out.plan.alignment)).empty())
    return err;
  if (root->get("host_arena_bytes") &&
      !(err = u64(*root, "host_arena_bytes", "", out.plan.hostArenaBytes)).empty())
    return err;
  if (root->get("lower_bound_bytes") &&
      !(err = u64(*root, "lower_bound_bytes", "", out.lowerBoundBytes)).empty())
    return err;
  if (const llvm::json::Value *v = root->get("budget_bytes"); v && v->kind() != llvm::json::Value::Null) {
    uint64_t budget = 0;
    if (!(err = u64(*root, "budget_bytes", "", budget)).empty())
      return err;
    out.budget = budget;
  }

  if (const llvm::json::Value *v = root->get("steps")) {
    const llvm::json::Array *steps = v->getAsArray();
    if (!steps)
      return error("'steps' is not an array");
    for (size_t i = 0; i < steps->size(); ++i) {
      std::string where = "steps[" + std::to_string(i) + "].";
      const llvm::json::Object *o = (*steps)[i].getAsObject();
      if (!o)
        return error("'" + where.substr(0, where.size() - 1) + "' is not an object");
      Step s;
      if (!(err = i64(*o, "index", where, s.index)).empty() ||
          !(err = str(*o, "op", where, s.op, false)).empty() ||
          !(err = str(*o, "loc", where, s.loc, false)).empty())
        return err;
      out.steps.push_back(std::move(s));
    }
  }

  const llvm::json::Value *bv = root->get("buffers");
  if (!bv)
    return error("missing 'buffers'");
  const llvm::json::Array *buffers = bv->getAsArray();
  if (!buffers)
    return error("'buffers' is not an array");
  for (size_t i = 0; i < buffers->size(); ++i) {
    std::string where = "buffers[" + std::to_string(i) + "].";
    const llvm::json::Object *o = (*buffers)[i].getAsObject();
    if (!o)
      return error("'" + where.substr(0, where.size() - 1) + "' is not an object");
    Buffer b;
    if (!(err = str(*o, "name", where, b.name, true)).empty() ||
        !(err = u64(*o, "bytes", where, b.bytes)).empty() ||
        !(err = u64(*o, "offset", where, b.offset)).empty() ||
        !(err = i64(*o, "first", where, b.first)).empty() ||
        !(err = i64(*o, "last", where, b.last)).empty() ||
        !(err = str(*o, "kind", where, b.kind, false)).empty())
      return err;
    std::string space;
    if (!(err = str(*o, "space", where, space, false)).empty())
      return err;
    if (!space.empty() && space != "host" && space != "device")
      return error("'" + where + "space' is neither \"device\" nor \"host\"");
    b.host = space == "host";
    out.plan.buffers.push_back(std::move(b));
  }
  return "";
}

std::string readPlanJson(llvm::StringRef path, JsonPlan &out) {
  std::string text;
  if (std::string err = readFile(path, text); !err.empty())
    return err;
  return parsePlanJson(text, path, out);
}

} // namespace graphc::plan
