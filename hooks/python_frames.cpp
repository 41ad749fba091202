#include "python_frames.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace nanscope {

namespace {

// How the thread state leads to the innermost frame, and how a frame gives its line.
enum class Chain : uint8_t { frame_object, cframe, direct };  // 3.10 ts->frame; 3.11-3.12 ts->cframe; 3.13
enum class LineVia : uint8_t { frame_object, addr2line, interpreter_frame };
constexpr uint8_t kNoOwner = 0xff;

}  // namespace

// Byte offsets in CPython's structs on 64-bit Linux, release builds with the GIL (from CPython's
// Include/cpython/{pystate,code,unicodeobject}.h and Include/internal/pycore_frame.h of each
// minor version; 3.11 is checked against its headers by tests/python/test_python_frames.py).
struct PythonFrames::Layout {
  int minor;
  Chain chain;
  uint32_t ts_frame;        // PyThreadState: frame (3.10), cframe (3.11, 3.12), current_frame (3.13)
  uint32_t cframe_current;  // _PyCFrame.current_frame
  uint32_t frame_code, frame_previous, frame_instr, frame_owner;  // frame_owner 0: no owner field
  uint8_t owner_cstack;     // the owner of a C-stack shim frame (kNoOwner: none)
  uint32_t code_filename, code_name, code_adaptive;  // code_name: co_qualname where there is one
  uint32_t ascii_size, compact_size, compact_utf8_length, compact_utf8;
  LineVia line;
};

namespace {

using Layout = PythonFrames::Layout;
constexpr Layout kLayouts[] = {
    {10, Chain::frame_object, 24, 0, 32, 24, 0, 0, kNoOwner, 104, 112, 0, 48, 72, 48, 56, LineVia::frame_object},
    {11, Chain::cframe, 56, 8, 32, 48, 56, 69, kNoOwner, 112, 128, 184, 48, 72, 48, 56, LineVia::addr2line},
    {12, Chain::cframe, 56, 0, 0, 8, 56, 70, 3, 112, 128, 0, 40, 56, 40, 48, LineVia::interpreter_frame},
    {13, Chain::direct, 72, 0, 0, 8, 56, 70, 3, 112, 128, 0, 40, 56, 40, 48, LineVia::interpreter_frame},
};
constexpr uint32_t kObType = 8;           // PyObject.ob_type
constexpr uint32_t kStrLength = 16;       // PyASCIIObject.length
constexpr uint32_t kStrState = 32;        // PyASCIIObject.state: interned:2 kind:3 compact:1 ascii:1
constexpr uint32_t kMaxDepth = 256;       // frames walked at most
constexpr uint32_t kCheckedWalks = 16;    // the first walks check every read
constexpr uint64_t kMaxText = 4096;       // characters kept of a file or function name
constexpr size_t kMaxSites = 1u << 16;    // distinct code objects remembered
// A key whose site is a generated frame of a mapped line: resolve() names the line's origin.
constexpr uint64_t kMappedKey = uint64_t{1} << 63;

}  // namespace

// Reads of the interpreter's memory. A checked read asks the kernel first (a write of the bytes
// into a pipe fails with EFAULT where a load would fault), so a layout that does not fit is
// found out without a crash.
struct PythonFrames::Reader {
  bool check = false;
  bool failed = false;
  uint32_t frames = 0, codes = 0;  // frames walked, of them with a code object
  static int probe_fd(int end) {
    static int fds[2] = {-1, -1};
    static std::once_flag once;
    std::call_once(once, [] {
      if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) fds[0] = fds[1] = -1;
    });
    return fds[end];
  }
  bool readable(const void* p, size_t n) {
    if (!check) return true;
    if (failed || !p) return false;
    const int w = probe_fd(1), r = probe_fd(0);
    if (w < 0) return failed = true, false;
    char sink[256];
    for (size_t done = 0; done < n; done += sizeof(sink)) {
      const size_t chunk = std::min(sizeof(sink), n - done);
      const ssize_t put = write(w, static_cast<const char*>(p) + done, chunk);
      if (put > 0) (void)!read(r, sink, static_cast<size_t>(put));
      if (put != static_cast<ssize_t>(chunk)) return failed = true, false;
    }
    return true;
  }
  template <typename T>
  bool load(const void* base, uint32_t offset, T& out) {
    const char* at = static_cast<const char*>(base) + offset;
    if (!base || !readable(at, sizeof(T))) return false;
    std::memcpy(&out, at, sizeof(T));
    return true;
  }
  const void* ptr(const void* base, uint32_t offset) {
    const void* p = nullptr;
    return load(base, offset, p) ? p : nullptr;
  }
};

struct PythonFrames::Api {
  int (*is_initialized)() = nullptr;
  void* (*this_thread_state)() = nullptr;
  const void* code_type = nullptr;
  const void* unicode_type = nullptr;
  int (*frame_line)(const void* frame) = nullptr;      // PyFrame_GetLineNumber / PyUnstable_InterpreterFrame_GetLine
  int (*addr2line)(const void* code, int addr) = nullptr;  // PyCode_Addr2Line
};

namespace {

template <typename F>
F symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

// "3.12.3 (main, ...)" -> 12; -1 for anything else (Python 2, 4, unparsable).
int minor_version(const char* version) {
  int major = 0, minor = 0;
  if (!version || std::sscanf(version, "%d.%d", &major, &minor) != 2 || major != 3) return -1;
  return minor;
}

// The text of a compact str object, or false (another type, a legacy string, a bad read).
bool read_text(PythonFrames::Reader& rd, const Layout& L, const void* unicode_type, const void* obj, std::string& out) {
  if (rd.ptr(obj, kObType) != unicode_type) return false;
  int64_t length = 0;
  uint32_t state = 0;
  if (!rd.load(obj, kStrLength, length) || !rd.load(obj, kStrState, state) || length < 0) return false;
  const uint32_t kind = (state >> 2) & 7u;
  const bool compact = (state >> 5) & 1u, ascii = (state >> 6) & 1u;
  if (!compact) return false;
  const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(length), kMaxText);
  const char* base = static_cast<const char*>(obj);
  if (ascii) {
    if (!rd.readable(base + L.ascii_size, n)) return false;
    out.assign(base + L.ascii_size, n);
    return true;
  }
  int64_t utf8_length = 0;
  const void* utf8 = rd.ptr(obj, L.compact_utf8);
  if (utf8 && rd.load(obj, L.compact_utf8_length, utf8_length) && utf8_length >= 0) {
    const uint64_t m = std::min<uint64_t>(static_cast<uint64_t>(utf8_length), kMaxText);
    if (!rd.readable(utf8, m)) return false;
    out.assign(static_cast<const char*>(utf8), m);
    return true;
  }
  if (!rd.readable(base + L.compact_size, n * std::max(kind, 1u))) return false;
  out.clear();
  return append_utf8(base + L.compact_size, n, kind, out);
}

}  // namespace

PythonFrames::PythonFrames(bool enabled)
    : enabled_(enabled), api_(std::make_unique<Api>()) {}
PythonFrames::~PythonFrames() = default;

void PythonFrames::give_up(std::string why) {
  std::lock_guard lock(mu_);
  if (problem_.empty()) problem_ = std::move(why);
  state_.store(State::off, std::memory_order_release);
}

std::string PythonFrames::problem() const {
  std::lock_guard lock(mu_);
  return problem_;
}

bool PythonFrames::ready() {
  const State s = state_.load(std::memory_order_acquire);
  if (s == State::ready) return api_->is_initialized() != 0;
  if (s != State::unresolved || !enabled_) return false;
  std::call_once(resolve_once_, [this] {
    Api& a = *api_;
    a.is_initialized = symbol<int (*)()>("Py_IsInitialized");
    const auto version = symbol<const char* (*)()>("Py_GetVersion");
    if (!a.is_initialized || !version) {  // not a Python process: nothing to say
      state_.store(State::no_python, std::memory_order_release);
      return;
    }
    const char* text = version();
    const int minor = minor_version(text);
    for (const Layout& l : kLayouts)
      if (l.minor == minor) layout_ = &l;
    a.this_thread_state = symbol<void* (*)()>("PyGILState_GetThisThreadState");
    a.code_type = symbol<const void*>("PyCode_Type");
    a.unicode_type = symbol<const void*>("PyUnicode_Type");
    a.addr2line = symbol<int (*)(const void*, int)>("PyCode_Addr2Line");
    a.frame_line = symbol<int (*)(const void*)>(minor >= 12 ? "PyUnstable_InterpreterFrame_GetLine" : "PyFrame_GetLineNumber");
    const std::string shown = std::string(text ? text : "?").substr(0, 40);
    if (!layout_) return give_up(fmt::format("Python {}: only CPython 3.10 to 3.13 frames are read", shown));
    if (std::strstr(text, "free-threading") || symbol<const void*>("_Py_PrintReferences"))
      return give_up(fmt::format("Python {}: a free-threaded or trace-refs build lays its objects out otherwise", shown));
    if (!a.this_thread_state || !a.code_type || !a.unicode_type || !a.frame_line || !a.addr2line)
      return give_up(fmt::format("Python {}: a C API function nanscope reads frames with is missing", shown));
    state_.store(State::ready, std::memory_order_release);
  });
  return state_.load(std::memory_order_acquire) == State::ready && api_->is_initialized() != 0;
}

uint64_t PythonFrames::capture() {
  if (!enabled_ || !ready()) return 0;
  const void* tstate = api_->this_thread_state();  // thread-local: no GIL needed
  if (!tstate) return 0;                            // a thread that never ran Python
  const Layout& L = *layout_;
  Reader rd{checked_walks_.load(std::memory_order_relaxed) < kCheckedWalks};
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  const uint64_t key = walk(rd, tstate);
  lock.unlock();
  captures_.fetch_add(1, std::memory_order_relaxed);
  capture_ns_.fetch_add(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count()),
      std::memory_order_relaxed);
  if (!rd.check) return key;
  if (rd.failed || (rd.frames && !rd.codes))  // a read that would fault, or frames that hold no code
    give_up(fmt::format("Python 3.{}: its frames do not have the layout nanscope reads", L.minor));
  else if (rd.codes)
    checked_walks_.fetch_add(1, std::memory_order_relaxed);
  return rd.failed ? 0 : key;
}

// The line a frame is at: CPython's own functions, as the layout says.
int PythonFrames::line_of(Reader& rd, const void* frame, const void* code) const {
  const Layout& L = *layout_;
  if (L.line != LineVia::addr2line) return api_->frame_line(frame);
  // 3.11: the byte offset of the last instruction
  const char* instr = static_cast<const char*>(rd.ptr(frame, L.frame_instr));
  const long offset = instr - (static_cast<const char*>(code) + L.code_adaptive);
  return api_->addr2line(code, offset < 0 ? -1 : static_cast<int>(offset));
}

// From the innermost frame outwards, the first frame whose code is neither library nor generated
// code, or a generated line whose origin is mapped; the innermost generated frame when there is
// none.
uint64_t PythonFrames::walk(Reader& rd, const void* tstate) {
  uint64_t generated = 0;
  const Layout& L = *layout_;
  const void* frame = rd.ptr(tstate, L.ts_frame);
  if (L.chain == Chain::cframe) frame = frame ? rd.ptr(frame, L.cframe_current) : nullptr;
  for (uint32_t depth = 0; frame && depth < kMaxDepth && !rd.failed; ++depth, frame = rd.ptr(frame, L.frame_previous)) {
    ++rd.frames;
    uint8_t owner = 0;
    if (L.frame_owner && (!rd.load(frame, L.frame_owner, owner) || owner == L.owner_cstack)) continue;
    const void* code = rd.ptr(frame, L.frame_code);
    if (!code || rd.ptr(code, kObType) != api_->code_type) continue;  // 3.13: None while not a function
    ++rd.codes;
    const uint32_t site = site_of(rd, code);
    if (!site) return 0;
    if (sites_[site - 1].skipped) continue;
    const int line = line_of(rd, frame, code);
    const uint64_t key = uint64_t{site} << 32 | static_cast<uint32_t>(line > 0 ? line : 0);
    if (!sites_[site - 1].generated) return key;
    // Inductor's output code, with its map: the model's line is known from here.
    if (line > 0 && generated_lines_.files() && generated_lines_.maps(sites_[site - 1].file, static_cast<uint32_t>(line)))
      return kMappedKey | key;
    if (!generated) generated = key;  // kept in case no user frame follows
  }
  return generated;
}

// The site of a code object: cached by its address while its file and name objects are the
// same ones (a code object freed and another allocated at its address with the same file and
// name objects names the same function).
uint32_t PythonFrames::site_of(Reader& rd, const void* code) {
  const Layout& L = *layout_;
  const void* filename = rd.ptr(code, L.code_filename);
  const void* name = rd.ptr(code, L.code_name);
  if (auto it = code_sites_.find(code); it != code_sites_.end() && it->second.filename == filename &&
                                        it->second.name == name)
    return it->second.site;
  if (sites_.size() >= kMaxSites) {
    if (problem_.empty()) problem_ = fmt::format("more than {} Python functions launched kernels", kMaxSites);
    return 0;
  }
  Site site;
  if (!read_text(rd, L, api_->unicode_type, filename, site.file)) site.file = "?";
  if (!read_text(rd, L, api_->unicode_type, name, site.function)) site.function = "?";
  if (rd.failed) return 0;
  site.skipped = skipped_frame(site.file);
  site.generated = generated_frame(site.file) || generated_lines_.has_file(site.file);
  sites_.push_back(std::move(site));
  const auto id = static_cast<uint32_t>(sites_.size());
  code_sites_[code] = {filename, name, id};
  return id;
}

std::optional<PythonLine> PythonFrames::resolve(uint64_t key) const {
  const auto site = static_cast<uint32_t>((key & ~kMappedKey) >> 32);
  std::lock_guard lock(mu_);
  if (site == 0 || site > sites_.size()) return std::nullopt;
  const Site& s = sites_[site - 1];
  if (key & kMappedKey)
    if (auto origin = generated_lines_.find(s.file, static_cast<uint32_t>(key))) return origin;
  return PythonLine{s.file, static_cast<uint32_t>(key), s.function, {}, 0, s.op};
}

uint64_t PythonFrames::key_for(const PythonLine& line) {
  std::lock_guard lock(mu_);
  auto [it, added] = named_sites_.try_emplace({line.file, line.function, line.op}, 0);
  if (added) {
    if (sites_.size() >= kMaxSites) {
      named_sites_.erase(it);
      return 0;
    }
    sites_.push_back(Site{line.file, line.function, false, false, line.op});
    it->second = static_cast<uint32_t>(sites_.size());
  }
  return uint64_t{it->second} << 32 | line.line;
}

bool PythonFrames::note_generated_line(std::string_view generated_file, uint32_t generated_line, const char* traceback) {
  std::optional<PythonLine> origin;
  if (traceback && *traceback) origin = innermost_user_frame(traceback);
  std::lock_guard lock(mu_);
  const bool new_file = !generated_lines_.has_file(generated_file);
  if (!generated_lines_.add(generated_file, generated_line, std::move(origin))) return false;
  if (new_file)  // a site seen before its map (bounded: once per file) is generated code too
    for (Site& site : sites_)
      if (site.file == generated_file) site.generated = true;
  return true;
}

}  // namespace nanscope
