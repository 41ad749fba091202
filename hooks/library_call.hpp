// The library call the current thread is inside (a cuBLAS GEMM, a cuDNN execute, an NCCL
// collective): the launch callback, which CUPTI runs on the launching thread, gives every kernel
// launched while a call is open to that call, and the call's own hook scans what it wrote
// after it returned. One marker for every intercepted library, so a call nested inside another
// (cuDNN calling cuBLAS) stays the outer call's.
#pragma once
#include <cstdint>

namespace nanscope::libcall {

struct LibraryCall {
  uint64_t call_id;       // unique per call in the process, never 0
  const char* api;        // e.g. "cublasLtMatmul"
  uint64_t stream;        // the call's stream (0: legacy default stream)
  uint32_t kernels;       // incremented by note_kernel_launch()
  // What the call only reads (a GEMM's A, B and C when C is not D), when its kernels write through
  // their parameter words alone (no device array of pointers): held eager scans of those buffers
  // need not go first (hooks/eager_batch_points.cpp).
  static constexpr uint32_t kMaxReads = 4;
  uint64_t reads[kMaxReads];
  uint32_t read_count;
  bool writes_bounded;
  // What the call writes, when its arguments bound it: a GEMM's D over its layout's span and
  // cuBLASLt's workspace. Its kernels' parameter words inside these write no further (an
  // interior pointer of D or of the workspace); any other word still may, to its allocation's end.
  struct Span {
    uint64_t ptr, bytes;
  };
  static constexpr uint32_t kMaxWrites = 2;
  Span writes[kMaxWrites];
  uint32_t write_count;
  // Whether `word` lies inside one of `writes`.
  bool writes_within(uint64_t word) const {
    for (uint32_t i = 0; i < write_count; ++i)
      if (word >= writes[i].ptr && word - writes[i].ptr < writes[i].bytes) return true;
    return false;
  }
};

// The open call of this thread, or nullptr.
const LibraryCall* current();
// Counts one kernel launched inside the current call; returns its call_id (0 outside a call).
uint64_t note_kernel_launch();

// Opens a call on this thread; false (and nothing changes) when one is already open: the
// outer call owns the kernels. Every successful enter() is followed by one leave(), which
// closes it and returns what it saw.
bool enter(const char* api, uint64_t stream);
// The open call's inputs (see LibraryCall::reads); marks its kernels' writes bounded. No-op
// outside a call.
void set_reads(const uint64_t* reads, uint32_t count);
// The open call's writes (see LibraryCall::writes; empty spans are left out). No-op outside a call.
void set_writes(const LibraryCall::Span* writes, uint32_t count);
LibraryCall leave();

}  // namespace nanscope::libcall
