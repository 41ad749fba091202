// Kernels nanscope never scans and never blames, whatever NANSCOPE_KERNEL_FILTER says: tools'
// own kernels that read or fill memory that is not the program's numerics. XLA's autotuner fills
// redzones around its candidate buffers with 0xFF bytes (NaN in every float type) on purpose and
// checks them (redzone_checker), and compares the candidates' results (xla_fp_comparison<T>);
// scanning their pointers reports that NaN, and their buffers lie in XLA's pool, whose extent
// is unknown. The table is pure data, matched against a kernel's own name; the kernel table
// (hooks/kernel_table.cpp) marks a match excluded once per kernel, the way NANSCOPE_KERNEL_EXCLUDE
// does, so a launch of one costs nothing more. CPU-tested.
#pragma once
#include <optional>
#include <string_view>

namespace nanscope {

// A demangled kernel name cut into its scope and its own name: for
// "void stream_executor::gpu::(anonymous namespace)::xla_fp_comparison<float>(float*, ...)",
// scope "stream_executor::gpu::(anonymous namespace)" and name "xla_fp_comparison" (template
// arguments, parameters and the return type dropped). A C name ("redzone_checker") is all name.
struct KernelNameParts {
  std::string_view scope;
  std::string_view name;
};
KernelNameParts kernel_name_parts(std::string_view demangled);

// Why the kernel named `demangled` (or a C name) is never scanned, e.g. "XLA autotuner kernel
// (buffer comparison)"; nullopt for every other kernel.
std::optional<std::string_view> builtin_exclusion(std::string_view demangled);
// Whether a builtin_exclusion reason is one of XLA's autotuner kernels': the thread launching it
// is autotuning (KernelTable::autotuning_on_this_thread).
bool is_xla_autotuner(std::string_view reason);

}  // namespace nanscope
