// Kernel signature analysis; see signature.hpp.
//
// The demangled text is scanned with a bracket stack rather than a grammar:
// '(' '[' '{' always nest; '<' nests but a '>' only closes when the innermost
// open bracket is '<' (so "->" or "(1)>(2)" inside parentheses is harmless),
// and a closing ')' ']' '}' drops any '<' left open inside it. Operator names
// ("operator<", "operator()", "operator,") are skipped as a whole.
#include "signature.hpp"

#include "nanscope/nanscope.h"

#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <memory>

namespace nanscope {

namespace {

struct FloatType {
  std::string_view name;
  DType dtype;
  uint32_t width;
};

// Element types whose pointers are treated as floating-point buffers.
constexpr std::array kFloatTypes{
    FloatType{"float", DType::f32, 1},
    FloatType{"double", DType::f64, 1},
    FloatType{"__half", DType::f16, 1},
    FloatType{"half", DType::f16, 1},
    FloatType{"_Float16", DType::f16, 1},
    FloatType{"c10::Half", DType::f16, 1},
    FloatType{"at::Half", DType::f16, 1},
    FloatType{"cutlass::half_t", DType::f16, 1},
    FloatType{"__nv_bfloat16", DType::bf16, 1},
    FloatType{"nv_bfloat16", DType::bf16, 1},
    FloatType{"__bf16", DType::bf16, 1},
    FloatType{"std::bfloat16_t", DType::bf16, 1},
    FloatType{"c10::BFloat16", DType::bf16, 1},
    FloatType{"at::BFloat16", DType::bf16, 1},
    FloatType{"cutlass::bfloat16_t", DType::bf16, 1},
    FloatType{"__nv_fp8_e4m3", DType::f8e4m3, 1},
    FloatType{"c10::Float8_e4m3fn", DType::f8e4m3, 1},
    FloatType{"at::Float8_e4m3fn", DType::f8e4m3, 1},
    FloatType{"cutlass::float_e4m3_t", DType::f8e4m3, 1},
    FloatType{"__nv_fp8_e5m2", DType::f8e5m2, 1},
    FloatType{"c10::Float8_e5m2", DType::f8e5m2, 1},
    FloatType{"at::Float8_e5m2", DType::f8e5m2, 1},
    FloatType{"cutlass::float_e5m2_t", DType::f8e5m2, 1},
    FloatType{"float1", DType::f32, 1},
    FloatType{"float2", DType::f32, 2},
    FloatType{"float3", DType::f32, 3},
    FloatType{"float4", DType::f32, 4},
    FloatType{"double1", DType::f64, 1},
    FloatType{"double2", DType::f64, 2},
    FloatType{"double3", DType::f64, 3},
    FloatType{"double4", DType::f64, 4},
    FloatType{"double4_16a", DType::f64, 4},
    FloatType{"double4_32a", DType::f64, 4},
    FloatType{"__half2", DType::f16, 2},
    FloatType{"half2", DType::f16, 2},
    FloatType{"__nv_bfloat162", DType::bf16, 2},
    FloatType{"nv_bfloat162", DType::bf16, 2},
    FloatType{"__nv_fp8x2_e4m3", DType::f8e4m3, 2},
    FloatType{"__nv_fp8x4_e4m3", DType::f8e4m3, 4},
    FloatType{"__nv_fp8x2_e5m2", DType::f8e5m2, 2},
    FloatType{"__nv_fp8x4_e5m2", DType::f8e5m2, 4},
};

const FloatType* find_float_type(std::string_view base) {
  for (const auto& t : kFloatTypes)
    if (t.name == base) return &t;
  return nullptr;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

bool is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// If an operator name ("operator<<", "operator()", ...) starts at i, the
// number of characters of its symbol after the word "operator"; else 0.
std::size_t operator_symbol_length(std::string_view s, std::size_t i) {
  constexpr std::string_view kWord = "operator";
  if (s.substr(i, kWord.size()) != kWord) return 0;
  if (i > 0 && is_ident(s[i - 1])) return 0;
  const std::size_t j = i + kWord.size();
  if (j < s.size() && is_ident(s[j])) return 0;
  // Longest first. Only symbols made of brackets or commas matter here.
  constexpr std::array<std::string_view, 14> kSymbols{
      "<<=", ">>=", "<=>", "->*", "<<", ">>", "<=", ">=", "->", "()", "[]", "<", ">", ","};
  for (auto sym : kSymbols)
    if (s.substr(j, sym.size()) == sym) return kWord.size() + sym.size();
  return 0;
}

// Walks `s` keeping the bracket stack. For every character that is not part of
// an operator name, calls visit(index, depth) where depth is the nesting
// depth outside that character: an opener and its matching closer both see
// the depth of the text around them. Linear time on any input.
template <class Visit>
void walk(std::string_view s, Visit&& visit) {
  std::string stack;
  std::size_t open_count[3] = {0, 0, 0};  // '(' '[' '{' on the stack
  auto slot = [](char c) -> std::size_t { return c == '(' ? 0 : c == '[' ? 1 : c == '{' ? 2 : 3; };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 'o') {
      if (std::size_t n = operator_symbol_length(s, i)) {
        i += n - 1;
        continue;
      }
    }
    const char c = s[i];
    switch (c) {
      case '(':
      case '[':
      case '{':
      case '<':
        visit(i, stack.size());
        stack.push_back(c);
        if (slot(c) < 3) ++open_count[slot(c)];
        break;
      case ')':
      case ']':
      case '}': {
        const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (open_count[slot(open)] != 0) {  // else a stray closer: ignored
          char popped;
          do {
            popped = stack.back();
            stack.pop_back();
            if (slot(popped) < 3) --open_count[slot(popped)];
          } while (popped != open);
        }
        visit(i, stack.size());
        break;
      }
      case '>':
        if (!stack.empty() && stack.back() == '<') stack.pop_back();
        visit(i, stack.size());
        break;
      default:
        visit(i, stack.size());
    }
  }
}

// The outermost parameter list: the last parenthesised group at depth 0 that
// is not a scope like "(anonymous namespace)::". Returns {open, close}.
std::optional<std::pair<std::size_t, std::size_t>> find_param_list(std::string_view s) {
  std::optional<std::pair<std::size_t, std::size_t>> best;
  std::size_t open = std::string_view::npos;
  walk(s, [&](std::size_t i, std::size_t depth) {
    if (depth != 0) return;
    if (s[i] == '(') {
      open = i;
    } else if (s[i] == ')' && open != std::string_view::npos) {
      std::size_t next = i + 1;
      while (next < s.size() && is_space(s[next])) ++next;
      if (s.substr(next, 2) != "::") best = std::pair{open, i};
      open = std::string_view::npos;
    }
  });
  return best;
}

// The short name from the text before the parameter list: drops a leading
// return type ("void foo<float>" -> "foo<float>").
std::string_view short_name(std::string_view prefix) {
  prefix = trim(prefix);
  std::size_t split = std::string_view::npos;
  walk(prefix, [&](std::size_t i, std::size_t depth) {
    if (depth == 0 && prefix[i] == ' ') {
      // "operator new", "operator int": the space belongs to the name.
      std::string_view before = prefix.substr(0, i);
      const bool after_operator = before.size() >= 8 && before.substr(before.size() - 8) == "operator" &&
                                  (before.size() == 8 || !is_ident(before[before.size() - 9]));
      if (!after_operator) split = i;
    }
  });
  return split == std::string_view::npos ? prefix : trim(prefix.substr(split + 1));
}

std::vector<std::string_view> split_params(std::string_view list) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  walk(list, [&](std::size_t i, std::size_t depth) {
    if (depth == 0 && list[i] == ',') {
      out.push_back(trim(list.substr(start, i - start)));
      start = i + 1;
    }
  });
  out.push_back(trim(list.substr(start)));
  if (out.size() == 1 && (out[0].empty() || out[0] == "void")) out.clear();
  return out;
}

// Classifies one parameter type. Accepted shape (demangler order or source
// order): [cv] base-words [cv] * [cv/restrict]. Anything else is `other`.
ParamSig classify(std::string_view text) {
  ParamSig sig;
  sig.type = std::string(text);
  std::string base;
  int pointers = 0;
  bool pointee_const = false;
  bool ident_after_pointer = false;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (is_space(c)) {
      ++i;
    } else if (c == '*') {
      ++pointers;
      ++i;
    } else if (is_ident(c) || c == ':') {
      std::size_t j = i;
      while (j < text.size() && (is_ident(text[j]) || text[j] == ':')) ++j;
      std::string_view word = text.substr(i, j - i);
      i = j;
      if (word == "const") {
        if (pointers == 0) pointee_const = true;
      } else if (word == "volatile" || word == "restrict" || word == "__restrict" || word == "__restrict__") {
        // Qualifiers that do not change the role.
      } else {
        if (pointers != 0) ident_after_pointer = true;
        if (starts_with(word, "::")) word.remove_prefix(2);
        if (!base.empty()) base.push_back(' ');
        base.append(word);
      }
    } else {
      return sig;  // '&', brackets, templates, function types, arrays, ...: other
    }
  }
  if (pointers != 1 || ident_after_pointer) return sig;
  sig.read_only = pointee_const;
  const FloatType* ft = find_float_type(base);
  if (ft == nullptr) return sig;
  sig.role = pointee_const ? ParamRole::input : ParamRole::output;
  sig.dtype = ft->dtype;
  sig.vector_width = ft->width;
  return sig;
}

std::optional<std::string> try_demangle(std::string_view mangled) {
  if (!starts_with(mangled, "_Z") || mangled.find('\0') != std::string_view::npos) return std::nullopt;
  const std::string buf(mangled);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(buf.c_str(), nullptr, nullptr, &status),
                                                  &std::free);
  if (status != 0 || !out) return std::nullopt;
  return std::string(out.get());
}

KernelSignature unparsed(std::string_view text) {
  KernelSignature sig;
  try {
    sig.demangled = std::string(text);
    sig.name = sig.demangled;
  } catch (...) {
  }
  return sig;
}

}  // namespace

// The C ABI's nanscope_dtype_t, the device's nanscope_scan_dtype and DType are one list
// (NANSCOPE_SCAN_DTYPES): a value crosses between them by a cast, so they must agree.
#define NANSCOPE_DTYPE_AGREE_(suffix, name, code, bytes)                          \
  static_assert(static_cast<int>(NANSCOPE_DTYPE_##suffix) == static_cast<int>(NS_##suffix), "C ABI and device"); \
  static_assert(static_cast<int>(DType::name) == NS_##suffix, "host and device dtype");
NANSCOPE_SCAN_DTYPES(NANSCOPE_DTYPE_AGREE_)
#undef NANSCOPE_DTYPE_AGREE_
static_assert(NS_DTYPE_COUNT == NANSCOPE_DTYPE_F8E5M2 + 1, "a dtype in nanscope.h is missing from the list");

const char* dtype_name(DType t) {
  switch (t) {
#define NANSCOPE_DTYPE_NAME_(suffix, name, code, bytes) \
  case DType::name: return #name;
    NANSCOPE_SCAN_DTYPES(NANSCOPE_DTYPE_NAME_)
#undef NANSCOPE_DTYPE_NAME_
    case DType::none: break;
  }
  return "none";
}

std::size_t dtype_size(DType t) { return nanscope_scan_dtype_bytes(static_cast<uint32_t>(t)); }

std::size_t KernelSignature::output_count() const {
  std::size_t n = 0;
  for (const auto& p : params)
    if (p.role == ParamRole::output) ++n;
  return n;
}

std::string demangle(std::string_view mangled) {
  try {
    if (auto d = try_demangle(mangled)) return std::move(*d);
    return std::string(mangled);
  } catch (...) {
    return {};
  }
}

KernelSignature parse_demangled(std::string_view demangled) {
  try {
    KernelSignature sig;
    sig.demangled = std::string(demangled);
    const std::string_view text = trim(demangled);
    const auto list = find_param_list(text);
    if (!list) {
      sig.name = std::string(text);
      return sig;
    }
    const auto [open, close] = *list;
    sig.name = std::string(short_name(text.substr(0, open)));
    sig.has_params = true;
    for (std::string_view p : split_params(text.substr(open + 1, close - open - 1)))
      sig.params.push_back(classify(p));
    return sig;
  } catch (...) {
    return unparsed(demangled);
  }
}

KernelSignature parse_kernel_signature(std::string_view mangled) {
  try {
    auto d = try_demangle(mangled);
    if (!d) return unparsed(mangled);
    return parse_demangled(*d);
  } catch (...) {
    return unparsed(mangled);
  }
}

DType scalar_dtype(std::string_view type) {
  const FloatType* t = find_float_type(trim(type));
  return t && t->width == 1 ? t->dtype : DType::none;
}

bool may_hide_pointers(std::string_view type) {
  std::string t(type);
  std::erase(t, ' ');
  for (std::string_view q : {"const", "volatile", "__restrict__", "__restrict"}) {
    for (auto at = t.find(q); at != std::string::npos; at = t.find(q)) t.erase(at, q.size());
  }
  if (!t.empty() && (t.back() == '*' || t.back() == '&')) {
    t.pop_back();
    // A pointer to integers or bools is read as data that cannot be non-finite; void* and
    // pointers to structs can point at anything.
    if (!t.empty() && t.back() == '*') return true;  // pointer to pointer
  }
  static const char* const kScalars[] = {"bool", "char", "signedchar", "unsignedchar", "short", "unsignedshort",
                                         "int", "unsigned", "unsignedint", "long", "unsignedlong", "longlong",
                                         "unsignedlonglong", "float", "double", "__half", "__nv_bfloat16",
                                         "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t",
                                         "int64_t", "uint64_t", "size_t", "std::size_t", "c10::Half",
                                         "c10::BFloat16"};
  for (const char* s : kScalars)
    if (t == s) return false;
  return true;
}

}  // namespace nanscope
