// Where lines of generated Python code came from. torch.compile's Inductor writes each compiled
// graph as a Python module (its output code, /tmp/torchinductor_<user>/xy/c....py) whose `call`
// launches the kernels, and keeps, per module, the first line it emitted for each FX node with
// that node's stack trace in the user's program (PyCodeCache.linemaps: what Inductor itself uses
// to name the model's line in an error). nanscope's Python helper hands those maps to the library
// (nanscope_python_line_origin); a launch whose Python frame is a mapped line of such a module is
// then named at the model's own line, the generated line kept beside it. Pure: the owner locks.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "python_line.hpp"

namespace nanscope {

class GeneratedLines {
 public:
  // Bounds: a model compiles a few hundred graphs of a few hundred nodes at most; past either
  // cap add() stores nothing and says so.
  static constexpr size_t kMaxFiles = 4096;
  static constexpr size_t kMaxEntries = size_t{1} << 18;

  // Lines of `generated_file` from `generated_line` up to the next entry's came from `origin`
  // (nullopt: from no frame of the user's; Inductor's own lines). An entry for a line already
  // known replaces it. False when a cap is reached or the arguments are empty (nothing stored).
  bool add(std::string_view generated_file, uint32_t generated_line, std::optional<PythonLine> origin);

  // The user's frame of `line` in `generated_file`, with generated_file/generated_line set to
  // them; nullopt when the file has no map or the line no origin (the covering entry's is null).
  std::optional<PythonLine> find(std::string_view generated_file, uint32_t line) const;
  bool maps(std::string_view generated_file, uint32_t line) const;
  // Whether `file` has a map: it is generated code wherever it lives (TORCHINDUCTOR_CACHE_DIR
  // moves Inductor's output code out of any torchinductor_ directory).
  bool has_file(std::string_view file) const { return files_.find(file) != files_.end(); }

  size_t files() const { return files_.size(); }
  size_t entries() const { return entries_; }

 private:
  struct Entry {
    uint32_t generated_line;
    std::optional<PythonLine> origin;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  const Entry* covering(std::string_view generated_file, uint32_t line) const;

  std::unordered_map<std::string, std::vector<Entry>, Hash, std::equal_to<>> files_;  // sorted by line
  size_t entries_ = 0;
};

}  // namespace nanscope
