// The .npy reader and writer declared in npy.h. The header is a Python dict literal; rather than
// trusting fixed offsets this parses it token by token, checks every size against the bytes
// actually present, and turns each problem into an error string, because these files come
// straight from the user's command line.
#include "graphc/runtime/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

namespace graphc::rt {

namespace {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

struct DTypeEntry {
  NpyDType dtype;
  char kind;       // the letter after the byte-order character
  int size;
  const char *descr;
  const char *name;
};

constexpr DTypeEntry kDTypes[] = {
    {NpyDType::F16, 'f', 2, "<f2", "float16"},  {NpyDType::F32, 'f', 4, "<f4", "float32"},
    {NpyDType::F64, 'f', 8, "<f8", "float64"},  {NpyDType::I8, 'i', 1, "|i1", "int8"},
    {NpyDType::I16, 'i', 2, "<i2", "int16"},    {NpyDType::I32, 'i', 4, "<i4", "int32"},
    {NpyDType::I64, 'i', 8, "<i8", "int64"},    {NpyDType::U8, 'u', 1, "|u1", "uint8"},
    {NpyDType::U16, 'u', 2, "<u2", "uint16"},   {NpyDType::U32, 'u', 4, "<u4", "uint32"},
    {NpyDType::U64, 'u', 8, "<u8", "uint64"},   {NpyDType::Bool, 'b', 1, "|b1", "bool"},
};

const DTypeEntry &entry(NpyDType d) {
  for (const DTypeEntry &e : kDTypes)
    if (e.dtype == d)
      return e;
  return kDTypes[1];
}

// Parses a descr such as "<f4" or "|u1". Returns false with a reason otherwise.
bool parseDescr(const std::string &descr, NpyDType &out, std::string &why) {
  if (descr.size() < 3) {
    why = "unsupported dtype '" + descr + "'";
    return false;
  }
  const char order = descr[0];
  const char kind = descr[1];
  const std::string sizeText = descr.substr(2);
  int size = 0;
  for (char ch : sizeText) {
    if (ch < '0' || ch > '9' || size > 1000) {
      why = "unsupported dtype '" + descr + "'";
      return false;
    }
    size = size * 10 + (ch - '0');
  }
  for (const DTypeEntry &e : kDTypes) {
    if (e.kind != kind || e.size != size)
      continue;
    if (order == '>' && size > 1) {
      why = "big-endian dtype '" + descr + "' is not supported";
      return false;
    }
    // '|' (no byte order) only makes sense for one-byte types; '<' and '=' (native, which is
    // little endian on every machine this runs on) for all.
    if (order == '<' || order == '=' || (size == 1 && (order == '|' || order == '>'))) {
      out = e.dtype;
      return true;
    }
    break;
  }
  why = "unsupported dtype '" + descr + "'";
  return false;
}

// A cursor over the header dict literal.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : s_(text) {}

  void skipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool consume(char c) {
    skipSpace();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool peek(char c) {
    skipSpace();
    return i_ < s_.size() && s_[i_] == c;
  }
  bool parseString(std::string &out) {
    skipSpace();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"'))
      return false;
    const char quote = s_[i_++];
    out.clear();
    while (i_ < s_.size() && s_[i_] != quote)
      out += s_[i_++];
    if (i_ >= s_.size())
      return false;
    ++i_;
    return true;
  }
  bool parseWord(const char *word) {
    skipSpace();
    const size_t n = std::strlen(word);
    if (s_.compare(i_, n, word) == 0) {
      i_ += n;
      return true;
    }
    return false;
  }
  bool parseInt(int64_t &out) {
    skipSpace();
    if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9')
      return false;
    int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      if (v > (std::numeric_limits<int64_t>::max() - 9) / 10)
        return false;
      v = v * 10 + (s_[i_++] - '0');
    }
    if (i_ < s_.size() && s_[i_] == 'L') // Python 2 longs in old files
      ++i_;
    out = v;
    return true;
  }
  // "(a, b, c)", "(a,)" or "()".
  bool parseTuple(std::vector<int64_t> &out) {
    out.clear();
    if (!consume('('))
      return false;
    if (consume(')'))
      return true;
    while (true) {
      int64_t v;
      if (!parseInt(v))
        return false;
      out.push_back(v);
      if (consume(')'))
        return true;
      if (!consume(','))
        return false;
      if (consume(')'))
        return true;
    }
  }
  bool atEnd() {
    skipSpace();
    return i_ >= s_.size();
  }

private:
  const std::string &s_;
  size_t i_ = 0;
};

bool parseHeader(const std::string &header, const std::string &name, NpyArray &out,
                 std::string &error) {
  auto fail = [&](const std::string &why) {
    error = name + ": malformed .npy header: " + why;
    return false;
  };
  HeaderParser p(header);
  if (!p.consume('{'))
    return fail("expected '{'");
  bool haveDescr = false, haveOrder = false, haveShape = false, fortran = false;
  std::string descr;
  while (!p.consume('}')) {
    std::string key;
    if (!p.parseString(key))
      return fail("expected a quoted key");
    if (!p.consume(':'))
      return fail("expected ':' after '" + key + "'");
    if (key == "descr") {
      if (!p.parseString(descr))
        return fail("'descr' is not a string (structured dtypes are not supported)");
      haveDescr = true;
    } else if (key == "fortran_order") {
      if (p.parseWord("True"))
        fortran = true;
      else if (p.parseWord("False"))
        fortran = false;
      else
        return fail("'fortran_order' is not True or False");
      haveOrder = true;
    } else if (key == "shape") {
      if (!p.parseTuple(out.shape))
        return fail("'shape' is not a tuple of non-negative integers");
      haveShape = true;
    } else {
      return fail("unexpected key '" + key + "'");
    }
    if (!p.consume(',') && !p.peek('}'))
      return fail("expected ',' or '}'");
  }
  if (!p.atEnd())
    return fail("trailing characters after '}'");
  if (!haveDescr || !haveOrder || !haveShape)
    return fail("missing 'descr', 'fortran_order' or 'shape'");
  std::string why;
  if (!parseDescr(descr, out.dtype, why)) {
    error = name + ": " + why;
    return false;
  }
  if (fortran) {
    error = name + ": Fortran-order arrays are not supported (save with C order)";
    return false;
  }
  return true;
}

void appendLE(std::string &s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    s += static_cast<char>((v >> (8 * i)) & 0xff);
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13); // inf / nan
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign; // signed zero
    } else {
      // Subnormal half: normalise into a float.
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

} // namespace

size_t npyItemSize(NpyDType dtype) { return static_cast<size_t>(entry(dtype).size); }
const char *npyDTypeName(NpyDType dtype) { return entry(dtype).name; }
const char *npyDescr(NpyDType dtype) { return entry(dtype).descr; }

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool parseNpyHeader(const unsigned char *bytes, size_t available, uint64_t totalSize,
                    const std::string &name, NpyArray &out, uint64_t &dataOffset,
                    std::string &error) {
  out = NpyArray();
  if (available > totalSize)
    available = static_cast<size_t>(totalSize);
  if (available < 10 || std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) {
    error = name + ": not a .npy file (bad magic)";
    return false;
  }
  const int major = bytes[6], minor = bytes[7];
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = bytes[8] | (static_cast<size_t>(bytes[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (available < 12) {
      error = name + ": truncated .npy header";
      return false;
    }
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(bytes[8 + i]) << (8 * i);
    headerStart = 12;
  } else {
    error = name + ": unsupported .npy format version " + std::to_string(major) + "." +
            std::to_string(minor);
    return false;
  }
  if (headerLen > available - headerStart) {
    error = name + ": truncated .npy header (" + std::to_string(headerLen) + " bytes declared, " +
            std::to_string(totalSize - headerStart) + " present)";
    return false;
  }
  const std::string header(reinterpret_cast<const char *>(bytes + headerStart), headerLen);
  if (header.find('\0') != std::string::npos) {
    error = name + ": malformed .npy header: contains a NUL byte";
    return false;
  }
  if (!parseHeader(header, name, out, error))
    return false;

  const uint64_t item = npyItemSize(out.dtype);
  const uint64_t dataStart = headerStart + headerLen;
  const uint64_t present = totalSize - dataStart;
  // Multiply with overflow checks: a garbage header may claim an absurd shape.
  uint64_t need = item;
  for (int64_t d : out.shape) {
    const uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && need > std::numeric_limits<size_t>::max() / ud) {
      error = name + ": shape " + formatShape(out.shape) + " is too large";
      return false;
    }
    need *= ud;
  }
  if (need > present) {
    error = name + ": truncated data (shape " + formatShape(out.shape) + " " +
            npyDTypeName(out.dtype) + " needs " + std::to_string(need) + " bytes, file has " +
            std::to_string(present) + ")";
    return false;
  }
  dataOffset = dataStart;
  return true;
}

bool parseNpy(const unsigned char *bytes, size_t size, const std::string &name, NpyArray &out,
              std::string &error) {
  uint64_t dataStart = 0;
  if (!parseNpyHeader(bytes, size, size, name, out, dataStart, error))
    return false;
  const size_t need = static_cast<size_t>(out.numElements()) * npyItemSize(out.dtype);
  out.data.assign(bytes + dataStart, bytes + dataStart + need);
  return true;
}

bool readNpy(const std::string &path, NpyArray &out, std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error = path + ": not a regular file";
    return false;
  }
  std::unique_ptr<FILE, int (*)(FILE *)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  std::vector<unsigned char> bytes(static_cast<size_t>(st.st_size));
  const size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), f.get());
  if (got != bytes.size()) {
    error = path + ": read error" + (std::ferror(f.get()) ? std::string(": ") + std::strerror(errno) : "");
    return false;
  }
  return parseNpy(bytes.data(), bytes.size(), path, out, error);
}

bool writeNpy(const std::string &path, NpyDType dtype, const std::vector<int64_t> &shape,
              const void *data, std::string &error) {
  std::string dict = std::string("{'descr': '") + npyDescr(dtype) +
                     "', 'fortran_order': False, 'shape': (";
  size_t bytes = npyItemSize(dtype);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      error = path + ": negative dimension in shape " + formatShape(shape);
      return false;
    }
    dict += std::to_string(shape[i]);
    dict += shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : "");
    bytes *= static_cast<size_t>(shape[i]);
  }
  dict += "), }";
  // NumPy pads the header with spaces and a final newline so the data starts 64-byte aligned.
  int major = 1;
  size_t prefix = 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  if (total - prefix > 65535) { // version 1.0 stores the header length in 16 bits
    major = 2;
    prefix = 12;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';

  std::string head(reinterpret_cast<const char *>(kMagic), sizeof(kMagic));
  head += static_cast<char>(major);
  head += '\0';
  appendLE(head, dict.size(), major == 1 ? 2 : 4);
  head += dict;

  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  if (ok && bytes > 0)
    ok = std::fwrite(data, 1, bytes, f) == bytes;
  const int saved = errno;
  if (std::fclose(f) != 0 || !ok) {
    error = path + ": write error: " + std::strerror(ok ? errno : saved);
    return false;
  }
  return true;
}

bool convertToF32(NpyDType dtype, const unsigned char *p, size_t n, float *out) {
  auto convert = [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, p + sizeof(T) * i, sizeof(T));
      out[i] = static_cast<float>(v);
    }
    return true;
  };
  switch (dtype) {
  case NpyDType::F32:
    if (n)
      std::memcpy(out, p, n * sizeof(float));
    return true;
  case NpyDType::F64: return convert(double());
  case NpyDType::F16:
    for (size_t i = 0; i < n; ++i)
      out[i] = halfToFloat(static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
    return true;
  case NpyDType::I8: return convert(int8_t());
  case NpyDType::I16: return convert(int16_t());
  case NpyDType::I32: return convert(int32_t());
  case NpyDType::I64: return convert(int64_t());
  case NpyDType::U8: return convert(uint8_t());
  case NpyDType::U16: return convert(uint16_t());
  case NpyDType::U32: return convert(uint32_t());
  case NpyDType::U64: return convert(uint64_t());
  case NpyDType::Bool: return false;
  }
  return false;
}

bool convertToI64(NpyDType dtype, const unsigned char *p, size_t n, int64_t *out) {
  auto convert = [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, p + sizeof(T) * i, sizeof(T));
      out[i] = static_cast<int64_t>(v);
    }
    return true;
  };
  switch (dtype) {
  case NpyDType::I8: return convert(int8_t());
  case NpyDType::I16: return convert(int16_t());
  case NpyDType::I32: return convert(int32_t());
  case NpyDType::I64: return convert(int64_t());
  case NpyDType::U8: return convert(uint8_t());
  case NpyDType::Bool: return convert(uint8_t());
  case NpyDType::U16: return convert(uint16_t());
  case NpyDType::U32: return convert(uint32_t());
  case NpyDType::U64: return convert(uint64_t()); // values above INT64_MAX wrap negative
  default: return false;
  }
}

bool npyToF32(const NpyArray &array, std::vector<float> &out) {
  if (array.dtype != NpyDType::F32 && array.dtype != NpyDType::F64 &&
      array.dtype != NpyDType::F16) {
    out.clear();
    return false;
  }
  out.resize(static_cast<size_t>(array.numElements()));
  return convertToF32(array.dtype, array.data.data(), out.size(), out.data());
}

bool npyToI64(const NpyArray &array, std::vector<int64_t> &out) {
  out.resize(static_cast<size_t>(array.numElements()));
  if (!convertToI64(array.dtype, array.data.data(), out.size(), out.data())) {
    out.clear();
    return false;
  }
  return true;
}

NpyFile::~NpyFile() {
  unmapAll();
  if (fd_ >= 0)
    ::close(fd_);
}

void NpyFile::unmapAll() {
  for (Window &w : windows_) {
    if (w.base)
      ::munmap(w.base, w.length);
    w = Window();
  }
}

bool NpyFile::open(const std::string &path, std::string &error, size_t windowBytes) {
  unmapAll();
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = path + (S_ISDIR(st.st_mode) ? ": is a directory" : ": not a regular file");
    ::close(fd);
    return false;
  }
  fd_ = fd;
  fileSize_ = static_cast<uint64_t>(st.st_size);
  // The header: the 12-byte prefix, then the declared length (bounded: NumPy itself refuses
  // headers over 10000 bytes by default).
  std::vector<unsigned char> head(12);
  const ssize_t got = ::pread(fd_, head.data(), head.size(), 0);
  if (got < 0) {
    error = path + ": read error: " + std::strerror(errno);
    return false;
  }
  head.resize(static_cast<size_t>(got));
  size_t want = head.size();
  if (head.size() >= 10 && std::memcmp(head.data(), kMagic, sizeof(kMagic)) == 0) {
    if (head[6] == 1)
      want = 10 + (head[8] | (static_cast<size_t>(head[9]) << 8));
    else if (head.size() >= 12 && (head[6] == 2 || head[6] == 3))
      want = 12 + (head[8] | (static_cast<size_t>(head[9]) << 8) |
                   (static_cast<size_t>(head[10]) << 16) | (static_cast<size_t>(head[11]) << 24));
  }
  constexpr size_t kMaxHeader = size_t(1) << 20;
  if (want > kMaxHeader + 12) {
    error = path + ": malformed .npy header: " + std::to_string(want) + " bytes is too long";
    return false;
  }
  want = static_cast<size_t>(std::min<uint64_t>(want, fileSize_));
  if (want > head.size()) {
    head.resize(want);
    size_t done = 0;
    while (done < want) {
      const ssize_t n = ::pread(fd_, head.data() + done, want - done, static_cast<off_t>(done));
      if (n <= 0) {
        error = path + ": read error" + (n < 0 ? std::string(": ") + std::strerror(errno) : "");
        return false;
      }
      done += static_cast<size_t>(n);
    }
  }
  NpyArray header;
  if (!parseNpyHeader(head.data(), head.size(), fileSize_, path, header, dataOffset_, error))
    return false;
  shape_ = header.shape;
  dtype_ = header.dtype;
  rows_ = shape_.empty() ? 1 : shape_[0];
  rowBytes_ = npyItemSize(dtype_);
  for (size_t i = 1; i < shape_.size(); ++i) {
    // With no rows the header check cannot bound the rest of the shape.
    const uint64_t d = static_cast<uint64_t>(shape_[i]);
    if (d != 0 && rowBytes_ > fileSize_ / d) {
      error = path + ": shape " + formatShape(shape_) + " is too large (one row exceeds the file)";
      return false;
    }
    rowBytes_ *= d;
  }
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  windowBytes_ = std::max<uint64_t>((windowBytes + page - 1) / page * page, page);
  return true;
}

const unsigned char *NpyFile::rowsAt(int64_t first, int64_t count, std::string &error) {
  static const unsigned char kEmpty[1] = {0};
  if (first < 0 || count < 0 || first > rows_ || count > rows_ - first) {
    error = path_ + ": rows [" + std::to_string(first) + ", " + std::to_string(first + count) +
            ") out of range";
    return nullptr;
  }
  const uint64_t begin = dataOffset_ + static_cast<uint64_t>(first) * rowBytes_;
  const uint64_t length = static_cast<uint64_t>(count) * rowBytes_;
  if (length == 0)
    return kEmpty;
  ++clock_;
  for (Window &w : windows_)
    if (w.base && begin >= w.offset && begin + length <= w.offset + w.length) {
      w.lastUse = clock_;
      return w.base + (begin - w.offset);
    }
  Window &victim = windows_[0].lastUse <= windows_[1].lastUse ? windows_[0] : windows_[1];
  if (victim.base)
    ::munmap(victim.base, victim.length);
  victim = Window();
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // A window starts at the page holding the first byte and spans windowBytes (more if the rows
  // need it), clipped to the file: a file smaller than a window is mapped once, whole.
  uint64_t offset = begin / page * page;
  uint64_t span = std::max(windowBytes_, begin + length - offset);
  if (fileSize_ <= windowBytes_) {
    offset = 0;
    span = fileSize_;
  } else if (offset + span > fileSize_) {
    span = fileSize_ - offset;
  }
  void *p = ::mmap(nullptr, static_cast<size_t>(span), PROT_READ, MAP_PRIVATE, fd_,
                   static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    error = path_ + ": cannot map " + std::to_string(span) + " bytes at offset " +
            std::to_string(offset) + ": " + std::strerror(errno);
    return nullptr;
  }
  victim.base = static_cast<unsigned char *>(p);
  victim.offset = offset;
  victim.length = span;
  victim.lastUse = clock_;
  return victim.base + (begin - offset);
}

} // namespace graphc::rt
