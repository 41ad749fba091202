#include "builtin_exclusions.hpp"

#include <cstddef>

namespace nanscope {

namespace {

constexpr std::string_view kAutotuner = "XLA autotuner kernel";
constexpr std::string_view kRedzoneCheck = "XLA autotuner kernel (redzone check)";
constexpr std::string_view kBufferComparison = "XLA autotuner kernel (buffer comparison)";
constexpr std::string_view kBufferFill = "XLA autotuner kernel (buffer fill)";
constexpr std::string_view kTimerDelay = "XLA autotuner kernel (GPU timer delay: waits on a host semaphore, no numbers)";

enum class Match : uint8_t {
  name_is,             // the kernel's own name is `a`
  name_prefix_suffix,  // its own name starts with `a` and ends with `b`
  scope_has,           // a component of its scope is `a`
  scope_has_name_contains,  // a component of its scope is `a`, and its own name contains `b`
};

struct Pattern {
  Match match;
  std::string_view a, b;
  std::string_view reason;
};

// Every spelling XLA's autotuning kernels had (stream_executor and xla/service/gpu sources):
// - redzone_checker: PTX entry of older XLA (a C name), then `redzone_checker(unsigned char*,
//   unsigned char, unsigned long long, unsigned int*)`, then `(anonymous namespace)::redzone_checker_kernel`;
// - xla_fp_comparison<T> / xla_int_comparison<T> in stream_executor::gpu (buffer_comparator_kernel_lib),
//   before them xla_fp16_comparison, xla_fp8_e4m3fn_comparison, ... in xla::gpu::buffer_comparator,
//   and before those the PTX entries __xla_fp32_comparison, __xla_int8_comparison, ... (C names);
// - jaxlib 0.11.2 on the H200 (session 23): `stream_executor::gpu::RedzoneAllocatorKernelImpl(unsigned
//   char*, unsigned char, unsigned long, unsigned int*)` checks redzones; `RepeatBufferKernelImpl(char*,
//   long, long)` fills a candidate's buffer by repeating its start (InitializeBuffer);
//   `stream_executor::gpu::(anonymous namespace)::DelayKernel(stream_executor::GpuSemaphoreState
//   volatile*, stream_executor::GpuSemaphoreState)` holds the stream until the GPU timer that
//   times a candidate has started (session 24: 47 launches in bench/jax_bench.py's MLP, each
//   said "not inspected ... use a watch", for a kernel that writes only the host's semaphore).
constexpr Pattern kPatterns[] = {
    {Match::name_is, "redzone_checker", {}, kRedzoneCheck},
    {Match::name_is, "redzone_checker_kernel", {}, kRedzoneCheck},
    {Match::scope_has_name_contains, "stream_executor", "redzone", kRedzoneCheck},
    {Match::scope_has_name_contains, "stream_executor", "RedzoneAllocatorKernel", kRedzoneCheck},
    {Match::scope_has_name_contains, "stream_executor", "RepeatBufferKernel", kBufferFill},
    {Match::scope_has_name_contains, "stream_executor", "DelayKernel", kTimerDelay},
    {Match::name_prefix_suffix, "xla_", "_comparison", kBufferComparison},
    {Match::name_prefix_suffix, "__xla_", "_comparison", kBufferComparison},
    {Match::scope_has, "buffer_comparator", {}, kBufferComparison},
};

bool opens(char c) { return c == '(' || c == '<'; }
bool closes(char c) { return c == ')' || c == '>'; }

// The index of the bracket opening the group that closes at `close`, scanning back; npos when
// the brackets do not balance.
size_t matching_open(std::string_view s, size_t close) {
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (closes(s[i])) ++depth;
    else if (opens(s[i]) && --depth == 0) return i;
  }
  return std::string_view::npos;
}

// The last occurrence of `what` outside every bracket; npos when none.
size_t last_top_level(std::string_view s, std::string_view what) {
  int depth = 0;
  size_t found = std::string_view::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    if (opens(s[i])) ++depth;
    else if (closes(s[i])) --depth;
    else if (depth == 0 && s.substr(i, what.size()) == what) found = i;
  }
  return found;
}

// Whether every bracket closes, in order. A name that does not balance (an operator< kernel, a
// cut name) is cut into nothing, so it matches no pattern.
bool balanced(std::string_view s) {
  int depth = 0;
  for (char c : s) {
    if (opens(c)) ++depth;
    else if (closes(c) && --depth < 0) return false;
  }
  return depth == 0;
}

std::string_view after_return_type(std::string_view s) {
  const size_t space = last_top_level(s, " ");
  return space == std::string_view::npos ? s : s.substr(space + 1);
}

// Whether `component` is one of the "::"-separated components of `scope`.
bool has_component(std::string_view scope, std::string_view component) {
  for (size_t at = scope.find(component); at != std::string_view::npos; at = scope.find(component, at + 1)) {
    const size_t end = at + component.size();
    const bool starts = at == 0 || scope[at - 1] == ':';
    const bool ends = end == scope.size() || scope[end] == ':';
    if (starts && ends) return true;
  }
  return false;
}

bool matches(const Pattern& p, const KernelNameParts& k) {
  switch (p.match) {
    case Match::name_is: return k.name == p.a;
    case Match::name_prefix_suffix:
      return k.name.size() > p.a.size() + p.b.size() && k.name.substr(0, p.a.size()) == p.a &&
             k.name.substr(k.name.size() - p.b.size()) == p.b;
    case Match::scope_has: return has_component(k.scope, p.a);
    case Match::scope_has_name_contains:
      return has_component(k.scope, p.a) && k.name.find(p.b) != std::string_view::npos;
  }
  return false;
}

}  // namespace

KernelNameParts kernel_name_parts(std::string_view demangled) {
  if (!balanced(demangled)) return {};
  std::string_view head = demangled;
  if (!head.empty() && head.back() == ')') {  // the parameter list
    const size_t open = matching_open(head, head.size() - 1);
    if (open == std::string_view::npos) return {};
    head = head.substr(0, open);
  }
  if (!head.empty() && head.back() == '>') {  // the template arguments
    const size_t open = matching_open(head, head.size() - 1);
    if (open == std::string_view::npos) return {};
    head = head.substr(0, open);
  }
  const size_t colons = last_top_level(head, "::");
  if (colons == std::string_view::npos) return {{}, after_return_type(head)};
  return {after_return_type(head.substr(0, colons)), head.substr(colons + 2)};
}

std::optional<std::string_view> builtin_exclusion(std::string_view demangled) {
  const KernelNameParts parts = kernel_name_parts(demangled);
  if (parts.name.empty()) return std::nullopt;
  for (const Pattern& p : kPatterns)
    if (matches(p, parts)) return p.reason;
  return std::nullopt;
}

bool is_xla_autotuner(std::string_view reason) { return reason.starts_with(kAutotuner); }

}  // namespace nanscope
