#include "torch_blocks.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "torch_shim_abi.h"

namespace nanscope {

// What torch's callbacks write into. Outlives the tracker: torch has no way to detach a trace
// tracker, so its events may arrive until the process exits.
struct TorchBlockTracker::Sink {
  explicit Sink(std::size_t cap) : map(cap) {}
  TensorBlockMap map;
  std::atomic<bool> live{true};
};

namespace {

// Under torch's allocator lock, from any thread: one map update, no other lock, no throw.
void on_block(void* ctx, int action, int device, uint64_t addr, uint64_t size, uint64_t stream, uint64_t pool_a,
              uint64_t pool_b) {
  auto* sink = static_cast<TorchBlockTracker::Sink*>(ctx);
  if (sink->live.load(std::memory_order_relaxed)) sink->map.apply(action, device, addr, size, stream, pool_a, pool_b);
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Our own directory: the shim is installed beside libnanscope.so.
std::string own_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&on_block), &info) == 0 || !info.dli_fname) return ".";
  return dir_of(info.dli_fname);
}

// A bounded read: version.py is ~300 bytes; a huge or unreadable file is not a version.
std::optional<std::string> read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text(64 * 1024, '\0');
  std::size_t got = 0;
  for (ssize_t n; got < text.size() && (n = ::read(fd, text.data() + got, text.size() - got)) > 0;) got += n;
  ::close(fd);
  text.resize(got);
  return text;
}

// The path of the loaded libc10_cuda.so, from one of its own symbols.
std::optional<std::string> c10_cuda_path(void* handle) {
  void* sym = dlsym(handle, "_ZN3c104cuda20CUDACachingAllocator9allocatorE");  // ...::allocator
  Dl_info info{};
  if (!sym || dladdr(sym, &info) == 0 || !info.dli_fname) return std::nullopt;
  return std::string(info.dli_fname);
}

std::string local_part(const std::string& v) {
  const auto plus = v.find('+');
  return plus == std::string::npos ? std::string() : v.substr(plus + 1);
}

std::string attach_failure(int rc) {
  switch (rc) {
    case NANSCOPE_TORCH_BAD_CALLBACKS: return "the shim refused nanscope's callbacks (another shim ABI)";
    case NANSCOPE_TORCH_OTHER_BACKEND:
      return "torch uses another allocator backend (cudaMallocAsync or pluggable): no trace events; "
             "driver allocations are per tensor there";
    case NANSCOPE_TORCH_ATTACH_THREW: return "attachAllocatorTraceTracker threw";
    default: return "the shim's attach returned " + std::to_string(rc);
  }
}

}  // namespace

std::optional<std::string> parse_torch_version(const std::string& text) {
  for (std::size_t at = 0; (at = text.find("__version__", at)) != std::string::npos; at += 11) {
    if (at != 0 && text[at - 1] != '\n') continue;  // only an assignment at the start of a line
    auto q = text.find_first_of("'\"", at);
    const auto eol = text.find('\n', at);
    if (q == std::string::npos || q > eol) continue;
    const auto end = text.find(text[q], q + 1);
    if (end == std::string::npos || end > eol || end == q + 1) continue;
    return text.substr(q + 1, end - q - 1);
  }
  return std::nullopt;
}

bool torch_versions_compatible(const std::string& shim, const std::string& running) {
  if (shim.empty() || running.empty()) return false;
  if (shim.substr(0, shim.find('+')) != running.substr(0, running.find('+'))) return false;
  const std::string a = local_part(shim), b = local_part(running);
  if (a == b || a.empty()) return true;  // a shim built from version.h alone knows no local part
  return a.rfind("cu", 0) == 0 && b.rfind("cu", 0) == 0;
}

TorchBlockTracker::TorchBlockTracker() : TorchBlockTracker(Options{}) {}

TorchBlockTracker::TorchBlockTracker(Options opts) : opts_(std::move(opts)), sink_(new Sink(opts_.cap)) {}

TorchBlockTracker::~TorchBlockTracker() { sink_->live.store(false, std::memory_order_relaxed); }

bool TorchBlockTracker::reprobe_due() const {
  // Per thread, so a program without torch pays one increment per launch and one dlopen
  // probe (~1 us) per reprobe_every launches, with no shared cache line.
  thread_local uint32_t calls = 0;
  return ++calls % (opts_.reprobe_every ? opts_.reprobe_every : 1) == 0;
}

bool TorchBlockTracker::try_attach() {
  State s = state_.load(std::memory_order_acquire);
  if (s == State::kAttached) return true;
  if (s == State::kFailed || s == State::kAttaching) return false;
  if (s == State::kWaiting && !reprobe_due()) return false;
  if (!state_.compare_exchange_strong(s, State::kAttaching, std::memory_order_acq_rel)) return false;
  const State next = attempt();
  state_.store(next, std::memory_order_release);
  return next == State::kAttached;
}

TorchBlockTracker::State TorchBlockTracker::attempt() {
  std::string why;
  State next = attach_fn_ ? State::kWaiting : load_shim(why);
  if (next == State::kWaiting && attach_fn_) next = attach(why);
  std::lock_guard lock(info_mu_);
  reason_ = why;
  return next;
}

// Once torch is found: its version, the shim, and the shim's version. Any failure is final.
TorchBlockTracker::State TorchBlockTracker::load_shim(std::string& why) {
  void* c10 = dlopen(opts_.c10_cuda.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!c10) {
    why = "torch not loaded (no " + opts_.c10_cuda + " in the process)";
    return State::kWaiting;
  }
  const auto c10_path = c10_cuda_path(c10);
  dlclose(c10);  // RTLD_NOLOAD took a reference; torch keeps its own
  if (!c10_path) return why = opts_.c10_cuda + " is loaded but has no CUDACachingAllocator::allocator", State::kFailed;
  const std::string version_py = dir_of(*c10_path) + "/../version.py";
  const auto text = read_small_file(version_py);
  const auto running = text ? parse_torch_version(*text) : std::nullopt;
  if (!running) return why = "cannot read torch's __version__ from " + version_py, State::kFailed;
  {
    std::lock_guard lock(info_mu_);
    torch_version_ = *running;
  }
  std::string shim = opts_.shim_path;
  if (shim.empty()) shim = std::getenv("NANSCOPE_TORCH_SHIM") ? std::getenv("NANSCOPE_TORCH_SHIM") : "";
  if (shim.empty()) shim = own_dir() + "/libnanscope_torch_shim.so";
  void* h = dlopen(shim.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return why = "cannot load the torch shim " + shim + ": " + dlerror(), State::kFailed;
  auto version = reinterpret_cast<nanscope_torch_shim_version_fn>(dlsym(h, NANSCOPE_TORCH_SHIM_VERSION_SYMBOL));
  void* attach_fn = dlsym(h, NANSCOPE_TORCH_SHIM_ATTACH_SYMBOL);
  const std::string built_for = version ? version() : "";
  if (!attach_fn || !torch_versions_compatible(built_for, *running)) {
    dlclose(h);
    why = !attach_fn ? shim + " is not a nanscope torch shim"
                     : shim + " was built for torch " + built_for + ", running " + *running +
                           " (rebuild it with -DNANSCOPE_TORCH_INCLUDE=<this torch>/include)";
    return State::kFailed;
  }
  // The shim's code now lives in torch's tracker list: pin it for the life of the process.
  dlopen(shim.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD | RTLD_NODELETE);
  attach_fn_ = attach_fn;
  return State::kWaiting;
}

TorchBlockTracker::State TorchBlockTracker::attach(std::string& why) {
  const nanscope_torch_shim_callbacks cb{sizeof(cb), NANSCOPE_TORCH_SHIM_ABI_VERSION, sink_, &on_block};
  // No nanscope lock is held here: the shim takes torch's allocator locks, and the seeds it
  // delivers afterwards take the map's.
  sink_->map.begin_seed();
  const int rc = reinterpret_cast<nanscope_torch_shim_attach_fn>(attach_fn_)(&cb);
  sink_->map.end_seed();
  const std::string version = torch_version();
  switch (rc) {
    case NANSCOPE_TORCH_ATTACHED:
      why = "attached to torch " + version + " (" + std::to_string(stats().seeded) + " live blocks at attach)";
      return State::kAttached;
    case NANSCOPE_TORCH_SNAPSHOT_THREW:
      why = "attached to torch " + version + "; blocks allocated before attaching are unknown (snapshot threw)";
      return State::kAttached;
    case NANSCOPE_TORCH_NO_ALLOCATOR:
    case NANSCOPE_TORCH_NOT_INITIALIZED:
      why = "torch " + version + " has not initialised its CUDA allocator yet";
      return State::kWaiting;
    default:
      why = attach_failure(rc);
      return State::kFailed;
  }
}

std::optional<AddressRange> TorchBlockTracker::block_of(uint64_t ptr) const {
  if (state() != State::kAttached) return std::nullopt;
  return sink_->map.block_of(ptr);
}

std::optional<TensorBlock> TorchBlockTracker::find(uint64_t ptr) const {
  if (state() != State::kAttached) return std::nullopt;
  return sink_->map.find(ptr);
}

uint64_t TorchBlockTracker::last_serial() const {
  return state() == State::kAttached ? sink_->map.last_serial() : 0;
}

std::optional<AddressRange> TorchBlockTracker::segment_of(uint64_t ptr) const {
  if (state() != State::kAttached) return std::nullopt;
  return sink_->map.segment_of(ptr);
}

const char* TorchBlockTracker::state_name(State s) {
  switch (s) {
    case State::kNotTried: return "not_tried";
    case State::kAttaching: return "attaching";
    case State::kWaiting: return "waiting";
    case State::kAttached: return "attached";
    case State::kFailed: return "failed";
  }
  return "unknown";
}

std::string TorchBlockTracker::reason() const {
  std::lock_guard lock(info_mu_);
  return reason_;
}

std::string TorchBlockTracker::torch_version() const {
  std::lock_guard lock(info_mu_);
  return torch_version_;
}

TensorBlockStats TorchBlockTracker::stats() const { return sink_->map.stats(); }

}  // namespace nanscope
