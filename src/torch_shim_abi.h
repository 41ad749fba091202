// The C boundary between libnanscope.so and libnanscope_torch_shim.so (shim/torch_alloc/).
// The shim is built against one torch's own headers and forwards c10's caching-allocator trace
// events through these plain C types, so libnanscope.so never includes a torch header and the
// two libraries may come from different compilers or C++ ABIs. Nothing crosses it but integers
// and function pointers; nothing may throw across it.
#ifndef NANSCOPE_TORCH_SHIM_ABI_H
#define NANSCOPE_TORCH_SHIM_ABI_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Bumped when a field or an action changes meaning; the shim refuses other versions.
#define NANSCOPE_TORCH_SHIM_ABI_VERSION 1u

// Our own action numbers, independent of the order of c10's TraceEntry::Action, which the
// shim maps by name (a switch), so a torch that reorders or extends its enum cannot make a
// free look like an alloc.
enum nanscope_torch_action {
  NANSCOPE_TORCH_OTHER = 0,           // SNAPSHOT, OOM, or an action this shim does not know
  NANSCOPE_TORCH_ALLOC = 1,           // a block handed out: addr, requested (unrounded) size
  NANSCOPE_TORCH_FREE_REQUESTED = 2,  // the tensor died; the block may still be in use on streams
  NANSCOPE_TORCH_FREE_COMPLETED = 3,  // the block went back to the pool and may be reused
  NANSCOPE_TORCH_SEGMENT_ALLOC = 4,   // a driver allocation joined the allocator: addr, size
  NANSCOPE_TORCH_SEGMENT_FREE = 5,    // a driver allocation left it (empty_cache, defrag)
  NANSCOPE_TORCH_SEGMENT_MAP = 6,     // expandable segment: pages mapped at addr, size
  NANSCOPE_TORCH_SEGMENT_UNMAP = 7,   // expandable segment: pages unmapped
  NANSCOPE_TORCH_SEED_BLOCK = 8,      // at attach: a block that was live before we attached
  NANSCOPE_TORCH_SEED_SEGMENT = 9,    // at attach: a segment (or mapped range) that existed
};

// Results of nanscope_torch_shim_attach.
enum nanscope_torch_attach_result {
  NANSCOPE_TORCH_ATTACHED = 0,
  NANSCOPE_TORCH_BAD_CALLBACKS = 1,     // null, too small, or another ABI version
  NANSCOPE_TORCH_NO_ALLOCATOR = 2,      // c10's allocator pointer is null (retry later)
  NANSCOPE_TORCH_NOT_INITIALIZED = 3,   // torch has not initialised CUDA yet (retry later)
  NANSCOPE_TORCH_OTHER_BACKEND = 4,     // not the native caching allocator (cudaMallocAsync...)
  NANSCOPE_TORCH_ATTACH_THREW = 5,      // attachAllocatorTraceTracker threw
  NANSCOPE_TORCH_SNAPSHOT_THREW = 6,    // attached, but the pre-existing blocks are unknown
};

typedef struct nanscope_torch_shim_callbacks {
  uint32_t struct_size;  // sizeof(nanscope_torch_shim_callbacks) of the caller
  uint32_t abi_version;  // NANSCOPE_TORCH_SHIM_ABI_VERSION
  void* ctx;             // passed back to on_block; must stay valid until the process exits
  // Called under torch's per-device allocator lock, from any thread, for every event; and
  // from the attaching thread (outside that lock) for the SEED_* entries. Must not throw,
  // must not call into torch, must not take a lock that is held while calling into torch.
  // pool_a/pool_b: the MempoolId_t of a private pool (CUDA graph capture, MemPool); 0/0 for
  // the default pool. stream: the cudaStream_t as an integer.
  void (*on_block)(void* ctx, int action, int device, uint64_t addr, uint64_t size, uint64_t stream,
                   uint64_t pool_a, uint64_t pool_b);
} nanscope_torch_shim_callbacks;

// The two symbols the shim exports.
typedef int (*nanscope_torch_shim_attach_fn)(const nanscope_torch_shim_callbacks* cb);
typedef const char* (*nanscope_torch_shim_version_fn)(void);
#define NANSCOPE_TORCH_SHIM_ATTACH_SYMBOL "nanscope_torch_shim_attach"
#define NANSCOPE_TORCH_SHIM_VERSION_SYMBOL "nanscope_torch_shim_version"

#ifdef __cplusplus
}
#endif
#endif
