// --dump ID: row verdicts (from the dump's JSON sidecar) and value statistics (from the .npy).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>

#include "dump.hpp"
#include "log_schema.hpp"
#include "model.hpp"
#include "util.hpp"

namespace nanscope::report {

namespace fs = std::filesystem;
using nlohmann::json;
namespace dk = schema::dump_key;

namespace {

float half_to_float(std::uint16_t h) {
  std::uint32_t s = (h >> 15) & 1, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  float v;
  if (e == 0) v = std::ldexp(float(m), -24);
  else if (e == 31) v = m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else v = std::ldexp(float(m | 0x400), int(e) - 25);
  return s ? -v : v;
}

float bf16_to_float(std::uint16_t h) {
  std::uint32_t bits = std::uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float e4m3_to_float(std::uint8_t b) {  // OCP FP8 E4M3 "fn": no infinities, S.1111.111 is NaN
  std::uint32_t s = b >> 7, e = (b >> 3) & 0xF, m = b & 7;
  float v;
  if (e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
  if (e == 0) v = std::ldexp(float(m), -9);
  else v = std::ldexp(float(m | 8), int(e) - 10);
  return s ? -v : v;
}

float e5m2_to_float(std::uint8_t b) {  // IEEE-like: exponent 31 is Inf (m == 0) or NaN
  return half_to_float(std::uint16_t(b) << 8);
}

}  // namespace

namespace {

constexpr std::uint64_t kMaxSidecarBytes = 16u << 20;  // a sidecar is a few KiB; more is not one

}  // namespace

int open_regular_file(const std::string& path, std::uint64_t max_bytes, std::uint64_t& bytes, std::string& error) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: the last component is
  // the file itself, not a link planted in its place.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return -1;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = path + ": not a regular file";
  } else if (std::uint64_t(st.st_size) > max_bytes) {
    error = path + ": " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
            " this reader accepts";
  } else {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    bytes = std::uint64_t(st.st_size);
    return fd;
  }
  ::close(fd);
  return -1;
}

namespace {

// Reads an open file in order; a short count means the end of the file (or an error).
struct FdReader {
  int fd = -1;
  std::size_t read(char* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::read(fd, out + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += std::size_t(r);
    }
    return got;
  }
};

// The header dict of an open .npy file (versions 1, 2 and 3), read past the magic and length;
// `data_offset` is where the elements start.
bool read_npy_header(FdReader& f, const std::string& path, std::string& header, std::uint64_t& data_offset,
                     std::string& error) {
  char magic[8];
  if (f.read(magic, 8) != 8 || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    error = path + ": not a .npy file";
    return false;
  }
  unsigned char l[4] = {0, 0, 0, 0};
  const std::size_t len_bytes = magic[6] == 1 ? 2 : 4;
  const bool got_len = f.read(reinterpret_cast<char*>(l), len_bytes) == len_bytes;
  const std::uint32_t hlen = l[0] | (l[1] << 8) | (l[2] << 16) | (std::uint32_t(l[3]) << 24);
  if (!got_len || hlen > (1u << 20)) {
    error = path + ": bad .npy header";
    return false;
  }
  header.assign(hlen, '\0');
  if (f.read(header.data(), hlen) != hlen) {
    error = path + ": truncated .npy header";
    return false;
  }
  data_offset = 8 + len_bytes + hlen;
  return true;
}

// The text of `key`'s value in the header dict: a string without its quotes, a tuple with its
// parentheses, anything else up to the next ',' or '}'. Empty when the key is missing.
std::string header_field(const std::string& header, const char* key) {
  auto p = header.find(std::string("'") + key + "'");
  if (p == std::string::npos) return {};
  p = header.find(':', p);
  if (p == std::string::npos) return {};
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  if (p < header.size() && header[p] == '\'') {
    auto q = header.find('\'', p + 1);
    return header.substr(p + 1, q - p - 1);
  }
  if (p < header.size() && header[p] == '(') return header.substr(p, header.find(')', p) - p + 1);
  auto q = header.find_first_of(",}", p);
  return header.substr(p, q - p);
}

// The dimensions of a shape tuple such as "(4, 128)"; false for a dimension of more than 18
// digits (no file holds that many elements).
bool parse_shape(const std::string& shape, std::vector<std::int64_t>& dims) {
  dims.clear();
  for (std::size_t i = 0; i < shape.size();) {
    if (!std::isdigit(static_cast<unsigned char>(shape[i]))) {
      ++i;
      continue;
    }
    std::int64_t d = 0;
    std::size_t j = i;
    for (; j < shape.size() && std::isdigit(static_cast<unsigned char>(shape[j])); ++j) {
      if (j - i >= 18) return false;
      d = d * 10 + (shape[j] - '0');
    }
    dims.push_back(d);
    i = j;
  }
  return true;
}

// The number of elements of `shape`; false when the product does not fit in an int64.
bool element_count(const std::vector<std::int64_t>& shape, std::int64_t& n) {
  n = 1;
  for (const std::int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return false;
  return true;
}

// How a dump's elements are read: numpy has no bf16 or fp8, so those are dumped as 16- and 8-bit
// integers and the sidecar's dtype (`dtype_hint`) says which float they hold.
struct ElementKind {
  int size = 0;
  std::string name;  // f32, f64, f16, bf16, f8e5m2, f8e4m3
};

bool element_kind(const std::string& code, const std::string& dtype_hint, ElementKind& k) {
  if (code == "f4") k = {4, "f32"};
  else if (code == "f8") k = {8, "f64"};
  else if (code == "f2") k = {2, "f16"};
  else if (code == "u2" || code == "i2") k = {2, dtype_hint == "f16" ? "f16" : "bf16"};
  else if (code == "u1" || code == "i1") k = {1, dtype_hint == "f8e5m2" ? "f8e5m2" : "f8e4m3"};
  else return false;
  return true;
}

// One little-endian element's value.
double element_value(const unsigned char* p, const ElementKind& k) {
  if (k.name == "f32") {
    float x;
    std::memcpy(&x, p, 4);
    return x;
  }
  if (k.name == "f64") {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  if (k.size == 2) {
    std::uint16_t h = std::uint16_t(p[0] | (p[1] << 8));
    return k.name == "f16" ? half_to_float(h) : bf16_to_float(h);
  }
  return k.name == "f8e5m2" ? e5m2_to_float(p[0]) : e4m3_to_float(p[0]);
}

// Counts one element of row `row` (rows past the first dimension are not kept per row).
void tally(NpyStats& st, double v, std::int64_t row, std::int64_t rows) {
  if (std::isnan(v)) {
    st.nan++;
    if (row < rows) st.row_nan[std::size_t(row)]++;
  } else if (std::isinf(v)) {
    (v > 0 ? st.pos_inf : st.neg_inf)++;
    if (row < rows) st.row_inf[std::size_t(row)]++;
  } else {
    if (st.finite == 0 || v < st.min) st.min = v;
    if (st.finite == 0 || v > st.max) st.max = v;
    st.finite++;
  }
}

// Reads the data of `n` elements in 1 MiB blocks, counting each; st.elements says how many
// were there. Per-row counts only when the first dimension is not larger than the data.
void tally_elements(FdReader& f, const ElementKind& k, bool big_endian, std::int64_t n, NpyStats& st) {
  const int size = k.size;
  std::int64_t rows = st.shape.empty() ? 1 : st.shape[0];
  if (rows > n) rows = 0;  // a zero-sized dimension: no elements, no rows to keep
  std::int64_t per_row = rows ? n / rows : 0;
  st.row_nan.assign(std::size_t(rows), 0);
  st.row_inf.assign(std::size_t(rows), 0);
  st.elements = 0;
  std::vector<char> buf(1 << 20);
  std::int64_t i = 0;
  while (i < n) {
    std::size_t want = std::size_t(std::min<std::int64_t>(n - i, std::int64_t(buf.size()) / size)) * size;
    std::size_t got = f.read(buf.data(), want) / size;
    for (std::size_t e = 0; e < got; ++e, ++i) {
      unsigned char* p = reinterpret_cast<unsigned char*>(buf.data() + e * size);
      if (big_endian) std::reverse(p, p + size);
      std::int64_t row = st.fortran ? (rows ? i % rows : 0) : (per_row ? i / per_row : 0);
      tally(st, element_value(p, k), row, rows);
    }
    st.elements = i;
    if (got * size < want) break;
  }
}

}  // namespace

bool read_npy(const std::string& path, const std::string& dtype_hint, NpyStats& st, std::string& error) {
  st = NpyStats{};
  std::uint64_t file_bytes = 0;
  FdReader f{open_regular_file(path, UINT64_MAX, file_bytes, error)};
  if (f.fd < 0) return false;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{f.fd};
  std::string header;
  std::uint64_t data_offset = 0;
  if (!read_npy_header(f, path, header, data_offset, error)) return false;
  st.descr = header_field(header, "descr");
  st.fortran = header_field(header, "fortran_order").starts_with("True");
  std::int64_t n = 0;
  if (!parse_shape(header_field(header, "shape"), st.shape) || !element_count(st.shape, n)) {
    error = path + ": bad .npy shape '" + printable(header_field(header, "shape")) + "'";
    return false;
  }
  ElementKind kind;
  if (st.descr.size() < 3 || !element_kind(st.descr.substr(1), dtype_hint, kind)) {
    error = path + ": unsupported dtype '" + printable(st.descr) + "' (f32, f64, f16, u16 for bf16, u8 for fp8)";
    return false;
  }
  st.dtype = kind.name;
  // The size the header claims must be in the file before anything is allocated for it.
  const std::uint64_t have = file_bytes > data_offset ? (file_bytes - data_offset) / std::uint64_t(kind.size) : 0;
  if (std::uint64_t(n) > have) {
    error = path + ": truncated: " + std::to_string(have) + " of " + std::to_string(n) + " elements";
    return false;
  }
  tally_elements(f, kind, st.descr[0] == '>', n, st);
  if (st.elements < n) {
    error = path + ": truncated: " + std::to_string(st.elements) + " of " + std::to_string(n) + " elements";
    return false;
  }
  return true;
}

namespace {

// Where a dump named by a log is read: only its file name, inside the directory the user named
// (--dump-dir) or beside the log. A log never chooses the path (it could name /etc/shadow).
std::string dump_path_in(const std::string& dump_dir, const std::string& logged, const std::string& log_file,
                         std::string& error) {
  const fs::path name = fs::path(logged).filename();
  if (name.empty() || name == "." || name == ".." || name.extension() != ".npy") {
    error = "the log names the dump '" + printable(logged) + "', which is not a .npy file name";
    return {};
  }
  const fs::path dir = dump_dir.empty() ? fs::path(log_file).parent_path() : fs::path(dump_dir);
  return (dir.empty() ? name : dir / name).string();
}

// The dump's JSON sidecar (`<npy>.json`), when there is one and it holds an object. Its text
// is never echoed: a parse error says where, not what (the file may not be the user's to show).
bool read_sidecar(const std::string& side_path, json& side, std::ostream& err) {
  std::string error;
  std::uint64_t bytes = 0;
  const int fd = ::open(side_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;  // no sidecar
  ::close(fd);
  FdReader f{open_regular_file(side_path, kMaxSidecarBytes, bytes, error)};
  if (f.fd < 0) {
    err << "nanscope report: sidecar " << error << '\n';
    return false;
  }
  std::string text(bytes, '\0');
  text.resize(f.read(text.data(), text.size()));
  ::close(f.fd);
  try {
    side = json::parse(text);
    return side.is_object();
  } catch (const json::parse_error& ex) {
    err << "nanscope report: " << side_path << ": invalid JSON sidecar (at byte " << ex.byte << ")\n";
    return false;
  }
}

std::string sidecar_string(const json& side, bool have_side, const char* key) {
  return have_side && side.contains(key) && side[key].is_string() ? side[key].get<std::string>() : "";
}

// The DUMP block's lines above the rows: where it came from, the tensor, the sidecar, the values.
void print_dump_overview(const std::string& npy, const NpyStats& st, const DumpRef* ref, const Analysis* a,
                         const json& side, bool have_side, const std::string& side_path, std::ostream& out) {
  out << "DUMP  " << printable(npy) << '\n';
  if (ref && a) out << "  event    " << ref->id << " · " << a->proc_label(ref->proc) << " · " << ref->kernel << '\n';
  else if (have_side && side.contains(schema::key::kernel) && side[schema::key::kernel].is_string())
    out << "  kernel   " << printable(side[schema::key::kernel].get<std::string>()) << '\n';
  std::string shape;
  for (std::size_t i = 0; i < st.shape.size(); ++i) shape += (i ? "×" : "") + std::to_string(st.shape[i]);
  out << "  tensor   " << st.dtype << " (stored as " << st.descr << "), shape " << (shape.empty() ? "scalar" : shape)
      << (st.fortran ? ", Fortran order" : "") << '\n';
  if (!have_side) {
    out << "  sidecar  " << printable(side_path) << " not found";
    if (st.descr.ends_with("u2") || st.descr.ends_with("u1")) out << " (raw bits read as " << st.dtype << ")";
    out << '\n';
  } else {
    out << "  sidecar  " << printable(side_path) << '\n';
  }
  char mm[128] = "no finite values";
  if (st.finite) std::snprintf(mm, sizeof mm, "min %.6g, max %.6g", st.min, st.max);
  out << "  values   " << group_digits(st.elements) << " elements: " << group_digits(st.nan) << " NaN, "
      << group_digits(st.pos_inf) << " +Inf, " << group_digits(st.neg_inf) << " -Inf · " << group_digits(st.finite)
      << " finite: " << mm << '\n';
}

// The rows [lo, hi] a sidecar verdict covers ("rows": [lo, hi] or "row": r); false for neither.
bool verdict_rows(const json& v, std::int64_t& lo, std::int64_t& hi) {
  if (v.contains(dk::rows) && v[dk::rows].is_array() && v[dk::rows].size() == 2 && v[dk::rows][0].is_number_integer() &&
      v[dk::rows][1].is_number_integer()) {
    lo = v[dk::rows][0].get<std::int64_t>();
    hi = v[dk::rows][1].get<std::int64_t>();
    return true;
  }
  if (v.contains(dk::row) && v[dk::row].is_number_integer()) {
    lo = hi = v[dk::row].get<std::int64_t>();
    return true;
  }
  return false;
}

// The sidecar's row verdicts as table rows (rows, kind, verdict, NaN, Inf), with the NaN and
// Inf counted in the .npy itself.
std::vector<std::vector<std::string>> verdict_table(const json& side, bool have_side, const NpyStats& st) {
  std::vector<std::vector<std::string>> rows;
  if (!have_side || !side.contains(dk::row_verdicts) || !side[dk::row_verdicts].is_array()) return rows;
  for (const json& v : side[dk::row_verdicts]) {
    if (!v.is_object()) continue;
    std::int64_t lo = 0, hi = 0;
    if (!verdict_rows(v, lo, hi)) continue;
    std::int64_t nan = 0, inf = 0;
    for (std::int64_t r = std::max<std::int64_t>(lo, 0); r <= hi && r < std::int64_t(st.row_nan.size()); ++r)
      nan += st.row_nan[std::size_t(r)], inf += st.row_inf[std::size_t(r)];
    auto s = [&](const char* k) { return v.contains(k) && v[k].is_string() ? printable(v[k].get<std::string>()) : std::string("-"); };
    std::string verdict = s(dk::verdict);
    if (v.contains(dk::fixed) && v[dk::fixed].is_boolean() && v[dk::fixed].get<bool>()) verdict += " (fixed)";
    rows.push_back({lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi), s(dk::kind), verdict,
                    group_digits(nan), group_digits(inf)});
  }
  return rows;
}

void print_verdict_table(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  out << "ROW VERDICTS (verdicts from the sidecar; NaN/Inf counted in the .npy)\n";
  std::vector<std::string> head{"rows", "kind", "verdict", "NaN", "Inf"};
  std::vector<std::size_t> w(head.size());
  for (std::size_t c = 0; c < head.size(); ++c) {
    w[c] = display_width(head[c]);
    for (auto& r : rows) w[c] = std::max(w[c], display_width(r[c]));
  }
  auto line = [&](const std::vector<std::string>& r) {
    out << "  ";
    for (std::size_t c = 0; c < r.size(); ++c) out << pad(r[c], w[c], c >= 3) << (c + 1 < r.size() ? "  " : "\n");
  };
  line(head);
  for (auto& r : rows) line(r);
}

// Without verdicts: the rows that hold non-finite values, as ranges.
void print_nonfinite_rows(const NpyStats& st, std::ostream& out) {
  std::vector<RowRange> bad;
  for (std::size_t r = 0; r < st.row_nan.size(); ++r) {
    if (st.row_nan[r] + st.row_inf[r] == 0) continue;
    if (!bad.empty() && bad.back().second + 1 == std::int64_t(r)) bad.back().second = std::int64_t(r);
    else bad.push_back({std::int64_t(r), std::int64_t(r)});
  }
  out << "  rows     with non-finite values: " << (bad.empty() ? "none" : ranges_str(bad, 12)) << '\n';
}

}  // namespace

int print_dump(const std::string& npy, const DumpRef* ref, const Analysis* a, std::ostream& out, std::ostream& err) {
  const std::string side_path = npy + ".json";
  json side;
  const bool have_side = read_sidecar(side_path, side, err);
  NpyStats st;
  std::string error;
  if (!read_npy(npy, sidecar_string(side, have_side, schema::buffer_key::dtype), st, error)) {
    err << "nanscope report: " << error << '\n';
    return 2;
  }
  print_dump_overview(npy, st, ref, a, side, have_side, side_path, out);
  const auto verdicts = verdict_table(side, have_side, st);
  if (!verdicts.empty()) print_verdict_table(verdicts, out);
  else if (st.shape.size() >= 2) print_nonfinite_rows(st, out);
  return 0;
}

int run_dump(const Options& opt, std::ostream& out, std::ostream& err) {
  const std::string& id = opt.dump_id;
  if (id.ends_with(".npy")) return print_dump(id, nullptr, nullptr, out, err);  // a path the user gave
  std::optional<std::int64_t> want_pid;
  std::int64_t want_id;
  try {
    auto colon = id.find(':');
    std::size_t used = 0;
    if (colon != std::string::npos) {
      want_pid = std::stoll(id.substr(0, colon));
      want_id = std::stoll(id.substr(colon + 1), &used);
      used += colon + 1;
    } else {
      want_id = std::stoll(id, &used);
    }
    if (used != id.size()) throw std::invalid_argument(id);
  } catch (...) {
    err << "nanscope report: --dump expects an event ID, PID:ID or a .npy path, not '" << id << "'\n";
    return 2;
  }
  if (opt.inputs.empty()) {
    err << "nanscope report: --dump " << id << " needs the log files or directories to look the event up in\n";
    return 2;
  }
  Options o = opt;
  o.trace_path.clear();
  Analysis a(o);
  a.dump_want_id = want_id;
  a.dump_want_pid = want_pid;
  a.read_inputs(err);
  if (a.dump_hits.empty()) {
    err << "nanscope report: no nonfinite event with id " << id << " carries a dump in the given logs\n";
    return 2;
  }
  if (a.dump_hits.size() > 1) {
    err << "nanscope report: event id " << want_id << " has dumps in several processes; say which with PID:ID:\n";
    for (auto& d : a.dump_hits)
      err << "  --dump " << a.procs[d.proc].pid << ':' << d.id << "   (" << a.proc_label(d.proc) << ", " << d.path << ")\n";
    return 2;
  }
  const DumpRef& d = a.dump_hits.front();
  std::string error;
  const std::string npy = dump_path_in(opt.dump_dir, d.path, a.files[d.file], error);
  if (npy.empty()) {
    err << "nanscope report: event " << d.id << ": " << error << '\n';
    return 2;
  }
  return print_dump(npy, &d, &a, out, err);
}

}  // namespace nanscope::report
