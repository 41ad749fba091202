#include "python_line.hpp"

#include <cstring>

namespace nanscope {

namespace {

// Package directories whose frames are skipped wherever they are (editable installs included).
constexpr std::string_view kSkippedPackages[] = {"torch", "triton", "functorch", "importlib"};
// nanscope's own helper only where it is installed or in its source tree's python/: a user's
// checkout called "nanscope" holds the user's code.
constexpr std::string_view kNanscopeHomes[] = {"site-packages/nanscope", "dist-packages/nanscope", "python/nanscope"};
// Single modules of Python's run machinery.
constexpr std::string_view kSkippedModules[] = {"runpy.py"};

bool has_component(std::string_view file, std::string_view dir) {
  for (size_t at = file.find(dir); at != std::string_view::npos; at = file.find(dir, at + 1)) {
    const bool starts = at == 0 || file[at - 1] == '/' || file[at - 1] == '\\';
    const size_t end = at + dir.size();
    if (starts && end < file.size() && (file[end] == '/' || file[end] == '\\')) return true;
  }
  return false;
}

bool ends_with_module(std::string_view file, std::string_view module) {
  if (file.size() < module.size() || file.substr(file.size() - module.size()) != module) return false;
  const size_t at = file.size() - module.size();
  return at == 0 || file[at - 1] == '/' || file[at - 1] == '\\';
}

void put_code_point(uint32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

}  // namespace

bool generated_frame(std::string_view file) {
  if (file == "<string>" || file.starts_with("<eval_with_key>")) return true;
  for (size_t at = file.find("torchinductor_"); at != std::string_view::npos; at = file.find("torchinductor_", at + 1))
    if (at > 0 && (file[at - 1] == '/' || file[at - 1] == '\\')) return true;
  return false;
}

bool skipped_frame(std::string_view file) {
  // Frozen modules ("<frozen importlib._bootstrap>", "<frozen runpy>") name no path.
  if (file.starts_with("<frozen importlib") || file.starts_with("<frozen runpy") ||
      file.starts_with("<frozen zipimport"))
    return true;
  // Only below the last site-packages / dist-packages, when there is one: a virtualenv under
  // /opt/torch/.venv holds the user's libraries (transformers) too.
  std::string_view below = file;
  for (std::string_view root : {"site-packages/", "dist-packages/"})
    if (const size_t at = file.rfind(root); at != std::string_view::npos && at + root.size() <= file.size() &&
                                            file.size() - at - root.size() < below.size())
      below = file.substr(at + root.size() - 1);
  for (std::string_view dir : kSkippedPackages)
    if (has_component(below, dir)) return true;
  for (std::string_view dir : kNanscopeHomes)
    if (has_component(file, dir)) return true;
  for (std::string_view module : kSkippedModules)
    if (ends_with_module(file, module)) return true;
  return false;
}

namespace {

// One `File "<file>", line <n>, in <function>` header line (leading blanks allowed), or
// nullopt. The file is everything between the first `File "` and the last `", line ` of the line.
std::optional<PythonLine> frame_header(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t");
  if (start == std::string_view::npos || !text.substr(start).starts_with("File \"")) return std::nullopt;
  text.remove_prefix(start + 6);
  const size_t quote = text.rfind("\", line ");
  if (quote == std::string_view::npos || quote == 0) return std::nullopt;
  PythonLine frame;
  frame.file = std::string(text.substr(0, quote));
  std::string_view rest = text.substr(quote + 8);
  uint64_t line = 0;
  size_t digits = 0;
  for (; digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9' && digits < 10; ++digits)
    line = line * 10 + static_cast<uint64_t>(rest[digits] - '0');
  if (digits == 0 || line == 0 || line > UINT32_MAX) return std::nullopt;
  rest.remove_prefix(digits);
  if (!rest.starts_with(", in ")) return std::nullopt;
  frame.line = static_cast<uint32_t>(line);
  frame.function = std::string(rest.substr(5));
  return frame;
}

}  // namespace

std::optional<PythonLine> innermost_user_frame(std::string_view traceback) {
  std::optional<PythonLine> innermost;
  while (!traceback.empty()) {
    const size_t end = traceback.find('\n');
    std::string_view line = traceback.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (auto frame = frame_header(line); frame && !skipped_frame(frame->file) && !generated_frame(frame->file))
      innermost = std::move(frame);
    if (end == std::string_view::npos) break;
    traceback.remove_prefix(end + 1);
  }
  return innermost;
}

bool append_utf8(const void* data, uint64_t length, uint32_t kind, std::string& out) {
  if (kind != 1 && kind != 2 && kind != 4) return false;
  std::string text;
  text.reserve(length);
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (uint64_t i = 0; i < length; ++i) {
    uint32_t c = 0;
    if (kind == 1) c = bytes[i];
    else if (kind == 2) c = static_cast<uint32_t>(bytes[2 * i]) | static_cast<uint32_t>(bytes[2 * i + 1]) << 8;
    else std::memcpy(&c, bytes + 4 * i, 4);
    if (c > 0x10ffff) return false;
    put_code_point(c >= 0xd800 && c <= 0xdfff ? '?' : c, text);  // a lone surrogate is no UTF-8
  }
  out += text;
  return true;
}

}  // namespace nanscope
