// Triton kernels (Inductor's and users' @triton.jit): what a launch writes, from the TTIR that
// Triton leaves in its cache beside the cubin. The driver sees an extern "C" name and one
// parameter per non-constexpr argument, so the signature can only come from the TTIR: names
// and element types from the tt.func prototype, written pointers from the tt.store and
// tt.atomic_* ops whose address chains lead back to an argument.
//
// Triton 3.6 prints arguments by name (`%in_ptr0: !tt.ptr<bf16> loc("in_ptr0"(#loc))`);
// Triton 3.3 prints `%arg0: !tt.ptr<f16> loc("file.py":18:0)` and names nothing. Both parse.
// Constexpr arguments are not in the prototype; the driver gets the prototype's arguments
// followed by two scratch pointers (global_scratch, profile_scratch).
//
// Pure functions; nothing here throws or touches the filesystem (triton_cache.hpp does that).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decode/written.hpp"

namespace nanscope::decode {

// Driver parameters Triton appends after the TTIR arguments (driver.py: &global_scratch,
// &profile_scratch), each an 8-byte pointer.
inline constexpr uint32_t kTritonScratchParams = 2;
// Bounds on what the parser accepts: a TTIR larger than this is refused, not truncated.
inline constexpr std::size_t kMaxTtirBytes = 4u << 20;
inline constexpr std::size_t kMaxTtirArgs = 512;

enum class TritonArgKind : uint8_t { pointer, scalar, other };

// Inductor's argument naming (torch/_inductor/codegen: in_ptrN, out_ptrN, in_out_ptrN, ws_ptr).
enum class InductorRole : uint8_t { none, in_ptr, out_ptr, in_out_ptr, ws_ptr };

// How far a store reaches when the TTIR says so exactly: the offset is
// `program_id(x) * block + make_range(0, block)` (or program_id(x) alone, block 1), masked by
// `< bound` or not at all. Then the launch writes min(grid.x * block, bound) elements.
struct StoreExtent {
  enum class Bound : uint8_t { none, arg, constant };
  uint32_t block = 0;  // 0: not recognised, the extent comes from the allocation block
  Bound bound = Bound::none;
  uint32_t bound_arg = 0;  // TTIR argument index holding the bound (xnumel)
  int64_t bound_value = 0;
  bool operator==(const StoreExtent& o) const {
    return block == o.block && bound == o.bound && bound_arg == o.bound_arg && bound_value == o.bound_value;
  }
};

struct TritonArg {
  std::string name;  // "in_ptr0"; "" when the TTIR gives only %argN (Triton 3.3)
  std::string type;  // element type text for pointers ("bf16"), the type for scalars ("i32")
  TritonArgKind kind = TritonArgKind::other;
  DType dtype = DType::none;  // floating element type of a pointer; none for integers
  uint32_t size = 0;          // bytes at the driver: 8 for pointers, the scalar's size; 0 unknown
  bool written = false;       // stored to or updated by an atomic
  bool atomic = false;        // written by an atomic (the extent is never recognised)
  bool read = false;          // loaded from
  InductorRole role = InductorRole::none;
  StoreExtent extent;  // meaningful when written and not atomic
};

struct TritonSignature {
  std::string name;  // the tt.func public symbol, which is the cubin's entry name
  std::vector<TritonArg> args;
  // A store, atomic or call whose pointer the TTIR does not tie to an argument: the launch may
  // write memory the signature does not name, so it is not inspected.
  std::string_view unresolved;  // static reason; empty when every write is tied
  bool named() const;           // every argument has a name (Triton 3.6 output)
  bool inductor() const;        // named by Inductor's convention (some in_/out_ptr)
  uint32_t driver_params() const { return static_cast<uint32_t>(args.size()) + kTritonScratchParams; }
};

struct ParsedTtir {
  std::optional<TritonSignature> signature;
  std::string_view error;  // static text when signature is empty
};

// Parses the first `tt.func public` of a TTIR module (the `.ttir`, or the pre-inlining
// `.source` that Triton writes even under TRITON_STORE_BINARY_ONLY).
ParsedTtir parse_ttir(std::string_view text);

// Element type text of the TTIR ("f32", "bf16", "f8E4M3FN", ...) to DType; none for integers
// and for floating formats nanscope does not scan (f8E4M3B11FNUZ and other FNUZ variants).
DType ttir_dtype(std::string_view elem);
// Bytes a scalar TTIR type occupies at the driver (driver.py ty_to_cpp); 0 when unknown.
uint32_t ttir_scalar_size(std::string_view type);
InductorRole inductor_role(std::string_view name);

// Per driver parameter (the TTIR's arguments, then the 2 scratch pointers): whether the kernel may
// write through it, as its TTIR says: a pointer argument it stores to (or updates atomically), and
// the scratch pointers. Empty when the TTIR has a store it does not tie to an argument, or the
// parameter count is not args + 2: then any parameter may point at what it writes.
std::vector<bool> triton_stored_params(const TritonSignature& sig, std::size_t driver_params);

// What one launch writes. Pointers come from the parameter bytes; the extent is exact when the
// store was recognised (StoreExtent) and otherwise left to the engine's allocation-block map
// (Write::extent_from_block). Gated on the layout: params == args + 2, each size as the TTIR says.
Decoded decode_triton(const TritonSignature& sig, const Layout& layout, const LaunchView& launch);

}  // namespace nanscope::decode
