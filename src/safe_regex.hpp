// Kernel-name patterns that cannot hurt the process that uses them. std::regex backtracks
// recursively: a pattern nested 30,000 deep or `.*z` against a 50,000-character name
// overflowed the stack of the host application, and its non-recursive mode is quadratic.
// This is a Thompson-NFA matcher over bytes: compile bounded in length, nesting and program
// size; search in one pass over the subject, O(subject × program), with no recursion.
//
// Syntax (a subset of ECMAScript): literals and escapes (\. \( \\ \t \n, \d \w \s \D \W \S),
// `.`, classes `[a-z_]` `[^...]`, anchors `^` `$`, groups `(...)` `(?:...)`, alternation `|`,
// quantifiers `*` `+` `?` `{n}` `{n,}` `{n,m}` (a lazy `?` suffix is accepted: a search only
// asks whether there is a match). Back-references, look-around and \b are refused by name.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nanscope {

class SafeRegex {
 public:
  static constexpr std::size_t kMaxPattern = 4096;  // bytes
  static constexpr int kMaxDepth = 64;              // nested groups
  static constexpr std::size_t kMaxProgram = 20000; // NFA instructions after counted repeats

  // The compiled pattern, or nullopt with `error` saying what is wrong with it.
  static std::optional<SafeRegex> compile(std::string_view pattern, std::string* error);
  // Whether the pattern matches anywhere in `subject`.
  bool search(std::string_view subject) const;

  struct Inst {
    enum Op : std::uint8_t { byte, any, cls, split, jmp, bol, eol, match } op;
    std::uint8_t c = 0;
    std::uint32_t x = 0, y = 0;  // split: both; jmp: x; cls: index into classes
  };

 private:
  std::vector<Inst> prog_;
  std::vector<std::vector<bool>> classes_;  // 256 entries each
};

}  // namespace nanscope
