#include "safe_regex.hpp"

#include <fmt/format.h>

namespace nanscope {

namespace {

using Inst = SafeRegex::Inst;
using Class = std::vector<bool>;

// A parsed pattern fragment: the instructions it compiles to, appended as a unit.
using Frag = std::vector<Inst>;

struct Failure {
  std::string message;
};

[[noreturn]] void fail(std::string m) { throw Failure{std::move(m)}; }

// Shifts the jump targets of a fragment placed at `base` (targets are fragment-relative).
void append(Frag& out, const Frag& f) {
  const auto base = static_cast<std::uint32_t>(out.size());
  for (Inst i : f) {
    if (i.op == Inst::split || i.op == Inst::jmp) i.x += base, i.y += base;
    out.push_back(i);
  }
}

class Compiler {
 public:
  Compiler(std::string_view p, std::vector<Class>& classes) : p_(p), classes_(classes) {}

  Frag pattern() {
    Frag f = alternation(0);
    if (i_ < p_.size()) fail(fmt::format("unmatched ')' at offset {}", i_));
    return f;
  }

 private:
  std::string_view p_;
  std::size_t i_ = 0;
  std::vector<Class>& classes_;

  bool more() const { return i_ < p_.size(); }
  char peek() const { return p_[i_]; }

  void check_size(std::size_t n) const {
    if (n > SafeRegex::kMaxProgram)
      fail(fmt::format("too complex: more than {} states after repetition", SafeRegex::kMaxProgram));
  }

  Frag alternation(int depth) {
    if (depth > SafeRegex::kMaxDepth) fail(fmt::format("groups nested deeper than {}", SafeRegex::kMaxDepth));
    Frag left = sequence(depth);
    while (more() && peek() == '|') {
      ++i_;
      Frag right = sequence(depth);
      // split L1, L2; L1: left; jmp end; L2: right; end:
      Frag f;
      const auto l1 = 1u, l2 = static_cast<std::uint32_t>(left.size() + 2);
      f.push_back({Inst::split, 0, l1, l2});
      append(f, left);
      f.push_back({Inst::jmp, 0, static_cast<std::uint32_t>(l2 + right.size()), 0});
      append(f, right);
      check_size(f.size());
      left = std::move(f);
    }
    return left;
  }

  Frag sequence(int depth) {
    Frag f;
    while (more() && peek() != '|' && peek() != ')') {
      Frag atom_f = atom(depth);
      append(f, quantified(std::move(atom_f)));
      check_size(f.size());
    }
    return f;
  }

  Frag quantified(Frag a) {
    while (more()) {
      const char q = peek();
      std::size_t lo, hi;  // hi == SIZE_MAX: unbounded
      if (q == '*') lo = 0, hi = SIZE_MAX, ++i_;
      else if (q == '+') lo = 1, hi = SIZE_MAX, ++i_;
      else if (q == '?') lo = 0, hi = 1, ++i_;
      else if (q == '{' && counted(lo, hi)) {}
      else break;
      if (more() && peek() == '?') ++i_;  // lazy: the same answer for a search
      a = repeat(a, lo, hi);
    }
    return a;
  }

  // {n}, {n,}, {n,m}; false (the brace is a literal) when it is not one of those.
  bool counted(std::size_t& lo, std::size_t& hi) {
    std::size_t j = i_ + 1;
    auto number = [&](std::size_t& out) {
      const std::size_t start = j;
      out = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9' && j - start < 6) out = out * 10 + (p_[j++] - '0');
      return j > start;
    };
    if (!number(lo)) return false;
    hi = lo;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      if (!number(hi)) hi = SIZE_MAX;
    }
    if (j >= p_.size() || p_[j] != '}') return false;
    if (hi < lo) fail(fmt::format("repetition {{{},{}}} with max below min", lo, hi));
    i_ = j + 1;
    return true;
  }

  Frag repeat(const Frag& a, std::size_t lo, std::size_t hi) {
    Frag f;
    for (std::size_t k = 0; k < lo; ++k) {
      append(f, a);
      check_size(f.size());
    }
    if (hi == SIZE_MAX) {  // L: split body, end; body; jmp L; end:
      Frag star;
      star.push_back({Inst::split, 0, 1, static_cast<std::uint32_t>(a.size() + 2)});
      append(star, a);
      star.push_back({Inst::jmp, 0, 0, 0});
      append(f, star);
    }
    for (std::size_t k = lo; hi != SIZE_MAX && k < hi; ++k) {  // optional copies
      Frag opt;
      opt.push_back({Inst::split, 0, 1, static_cast<std::uint32_t>(a.size() + 1)});
      append(opt, a);
      append(f, opt);
      check_size(f.size());
    }
    check_size(f.size());
    return f;
  }

  Frag atom(int depth) {
    const char c = p_[i_++];
    switch (c) {
      case '(': return group(depth);
      case '[': return one_class(bracket());
      case '.': return {{Inst::any}};
      case '^': return {{Inst::bol}};
      case '$': return {{Inst::eol}};
      case '\\': return escape(false);
      case '*': case '+': case '?': fail(fmt::format("nothing to repeat at offset {}", i_ - 1));
      default: return {{Inst::byte, static_cast<std::uint8_t>(c)}};
    }
  }

  Frag group(int depth) {
    if (more() && peek() == '?') {
      if (i_ + 1 < p_.size() && p_[i_ + 1] == ':') i_ += 2;
      else fail("look-around and named groups are not supported");
    }
    Frag f = alternation(depth + 1);
    if (!more() || peek() != ')') fail("missing ')'");
    ++i_;
    return f;
  }

  Frag one_class(Class c) {
    classes_.push_back(std::move(c));
    return {{Inst::cls, 0, static_cast<std::uint32_t>(classes_.size() - 1), 0}};
  }

  static Class shorthand(char e) {
    Class c(256, false);
    for (int b = 0; b < 256; ++b) {
      const bool d = b >= '0' && b <= '9';
      const bool w = d || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || b == '_';
      const bool s = b == ' ' || (b >= '\t' && b <= '\r');
      const char lower = char(e | 0x20);
      const bool in = lower == 'd' ? d : lower == 'w' ? w : s;
      c[std::size_t(b)] = (e >= 'a') == in;
    }
    return c;
  }

  // After a backslash: a class for \d \w \s (and negations), else the escaped byte.
  Frag escape(bool in_class) {
    if (!more()) fail("pattern ends with a backslash");
    const char e = p_[i_++];
    if (std::string_view("dwsDWS").find(e) != std::string_view::npos) return one_class(shorthand(e));
    if (e >= '1' && e <= '9') fail("back-references are not supported");
    if (!in_class && (e == 'b' || e == 'B')) fail("word boundaries (\\b) are not supported");
    const char byte = e == 't' ? '\t' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 'f' ? '\f' : e == 'v' ? '\v' : e;
    return {{Inst::byte, static_cast<std::uint8_t>(byte)}};
  }

  Class bracket() {  // after '['
    Class c(256, false);
    const bool negate = more() && peek() == '^';
    if (negate) ++i_;
    while (true) {  // ECMAScript: "[]" is the empty class, "[^]" any byte
      if (!more()) fail("missing ']'");
      if (peek() == ']') break;
      int lo;
      if (peek() == '\\') {
        ++i_;
        Frag e = escape(true);
        if (e[0].op == Inst::cls) {
          const Class& s = classes_[e[0].x];
          for (int b = 0; b < 256; ++b) c[std::size_t(b)] = c[std::size_t(b)] || s[std::size_t(b)];
          classes_.pop_back();
          continue;
        }
        lo = e[0].c;
      } else {
        lo = static_cast<unsigned char>(p_[i_++]);
      }
      int hi = lo;
      if (i_ + 1 < p_.size() && peek() == '-' && p_[i_ + 1] != ']') {
        ++i_;
        hi = static_cast<unsigned char>(p_[i_++]);
        if (hi < lo) fail("class range out of order");
      }
      for (int b = lo; b <= hi; ++b) c[std::size_t(b)] = true;
    }
    ++i_;
    if (negate) c.flip();
    return c;
  }
};

// Adds state `pc` and everything reachable from it without consuming a byte (explicit stack,
// no recursion). `at_begin` / `at_end`: whether the position is the subject's start / end.
void add_state(const std::vector<Inst>& prog, std::vector<std::uint32_t>& list, std::vector<std::uint32_t>& seen,
               std::uint32_t gen, std::uint32_t pc, bool at_begin, bool at_end, std::vector<std::uint32_t>& stack) {
  stack.assign(1, pc);
  while (!stack.empty()) {
    const std::uint32_t s = stack.back();
    stack.pop_back();
    if (seen[s] == gen) continue;
    seen[s] = gen;
    const Inst& in = prog[s];
    switch (in.op) {
      case Inst::jmp: stack.push_back(in.x); break;
      case Inst::split: stack.push_back(in.y), stack.push_back(in.x); break;
      case Inst::bol: if (at_begin) stack.push_back(s + 1); break;
      case Inst::eol: if (at_end) stack.push_back(s + 1); break;
      default: list.push_back(s);
    }
  }
}

}  // namespace

std::optional<SafeRegex> SafeRegex::compile(std::string_view pattern, std::string* error) {
  if (pattern.size() > kMaxPattern) {
    if (error) *error = fmt::format("longer than {} bytes", kMaxPattern);
    return std::nullopt;
  }
  SafeRegex re;
  try {
    re.prog_ = Compiler(pattern, re.classes_).pattern();
  } catch (const Failure& f) {
    if (error) *error = f.message;
    return std::nullopt;
  }
  re.prog_.push_back({Inst::match});
  return re;
}

bool SafeRegex::search(std::string_view s) const {
  const auto n = static_cast<std::uint32_t>(prog_.size());
  std::vector<std::uint32_t> cur, next, seen(n, 0), stack;
  std::uint32_t gen = 1;
  for (std::size_t pos = 0;; ++pos) {
    // A search: a new thread starts at every position.
    add_state(prog_, cur, seen, gen, 0, pos == 0, pos == s.size(), stack);
    for (std::uint32_t pc : cur)
      if (prog_[pc].op == Inst::match) return true;
    if (pos == s.size()) return false;
    const auto b = static_cast<unsigned char>(s[pos]);
    ++gen;
    next.clear();
    for (std::uint32_t pc : cur) {
      const Inst& in = prog_[pc];
      const bool step = in.op == Inst::any ? b != '\n'
                        : in.op == Inst::byte ? in.c == b
                        : in.op == Inst::cls  ? classes_[in.x][b]
                                              : false;
      if (step) add_state(prog_, next, seen, gen, pc + 1, false, pos + 1 == s.size(), stack);
    }
    cur.swap(next);
  }
}

}  // namespace nanscope
