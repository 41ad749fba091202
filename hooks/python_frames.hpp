// The Python line of a launch: in a Python program, the innermost frame outside torch, triton,
// nanscope and the import machinery (src/python_line.hpp) of the thread that launches the kernel.
//
// The injected library cannot link libpython, and the launching thread usually does not hold
// the GIL: PyTorch releases it around every op's dispatch, Triton around its launch. Taking the
// GIL in a CUDA callback can deadlock (its holder may wait for a lock the launching thread
// holds), and the public frame API needs it (it allocates frame objects and counts references).
// So the frames are read, not called: the thread's own interpreter frames, found through its
// thread state (PyGILState_GetThisThreadState, a thread-local read), with the layout of the
// running CPython (3.10 to 3.13, a table in python_frames.cpp). Only the owning thread changes
// its frame chain, and it is inside this callback, so the chain holds still; the code objects
// and their strings are held by the frames. No reference is counted, nothing is allocated in
// Python's heap and no Python code runs. The line comes from CPython's own pure functions
// (PyCode_Addr2Line and friends), resolved by dlsym(RTLD_DEFAULT) at first use.
//
// The first walks check every read (a read that would fault is refused, not taken) and every
// object's type; a layout that does not fit turns the feature off with one warning. Per launch:
// a walk of the few innermost frames and one cache lookup per frame (code object -> its file and
// function, decoded once); the strings are copied only when a finding is logged.
#pragma once
#include "lock_rank.hpp"
#include <atomic>
#include <map>
#include <tuple>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "generated_lines.hpp"
#include "python_line.hpp"

namespace nanscope {

class PythonFrames {
 public:
  explicit PythonFrames(bool enabled);
  ~PythonFrames();

  // Where the calling thread is in Python now: a key for resolve(), 0 when there is no Python
  // line (no interpreter, a thread that never ran Python, only library frames, the feature off).
  // A launch's key waits for its findings with its other facts (src/launch_facts.hpp).
  uint64_t capture();
  std::optional<PythonLine> resolve(uint64_t key) const;
  // A key for a line known without a frame walk (an XLA kernel's line from its HLO metadata,
  // src/xla_kernels.hpp kernel_source): resolve() gives it back. 0 past the sites' bound.
  uint64_t key_for(const PythonLine& line);

  // Lines of generated code that came from the user's frames (src/generated_lines.hpp): a
  // launch from a mapped line is named at the frame the traceback's innermost user frame names.
  // `traceback` null or empty: the lines from `generated_line` on came from no user frame.
  // False when the map is full or the arguments are empty.
  bool note_generated_line(std::string_view generated_file, uint32_t generated_line, const char* traceback);

  // Why there is no Python line when the process runs Python (one line, for the warning); empty
  // while it works or when the process has no Python.
  std::string problem() const;
  bool gave_up() const { return state_.load(std::memory_order_acquire) == State::off; }
  bool enabled() const { return enabled_; }

  // What the line cost: walks taken and their total wall time (the summary's python_line_*).
  struct Cost {
    uint64_t captures = 0, ns = 0;
  };
  Cost cost() const {
    return {captures_.load(std::memory_order_relaxed), capture_ns_.load(std::memory_order_relaxed)};
  }

  struct Layout;  // python_frames.cpp: CPython's struct offsets
  struct Reader;  // python_frames.cpp: reads that are checked first while the layout is new

 private:
  enum class State : uint8_t { unresolved, no_python, ready, off };
  bool ready();
  uint64_t walk(Reader& rd, const void* tstate);  // under mu_
  uint32_t site_of(Reader& rd, const void* code);  // under mu_; 0 when none
  int line_of(Reader& rd, const void* frame, const void* code) const;
  void give_up(std::string why);

  const bool enabled_;
  std::atomic<State> state_{State::unresolved};
  std::once_flag resolve_once_;
  const Layout* layout_ = nullptr;
  struct Api;
  std::unique_ptr<Api> api_;
  std::atomic<uint32_t> checked_walks_{0};  // walks whose reads were all checked
  std::atomic<uint64_t> captures_{0}, capture_ns_{0};

  mutable Ranked<std::mutex, LockLevel::part> mu_{"PythonFrames::mu_"};
  struct CodeEntry {
    const void* filename;
    const void* name;
    uint32_t site;
  };
  std::unordered_map<const void*, CodeEntry> code_sites_;
  struct Site {
    std::string file, function;
    bool skipped;
    bool generated;  // generated_frame(): passed over while a user frame follows
    std::string op;  // key_for's PythonLine::op (an XLA launch's): empty for a frame read from Python
  };
  std::vector<Site> sites_;  // site - 1
  std::map<std::tuple<std::string, std::string, std::string>, uint32_t> named_sites_;  // key_for's (file, function, op) -> site
  std::string problem_;
  GeneratedLines generated_lines_;
};

}  // namespace nanscope
