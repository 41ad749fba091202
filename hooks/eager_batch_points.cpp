// Held eager scans (NANSCOPE_EAGER_BATCH): the flush points. Plain eager scans are held per stream
// (hooks/eager_batcher.cpp, through ScanSubmitter), and the enter site of every call they must
// precede turns into an eager::Event: src/eager_batch.cpp says which held scans go first.
#include <algorithm>

#include "collectors.hpp"
#include "eager_flush_points.hpp"
#include "library_call.hpp"
#include "tool_scope.hpp"

namespace nanscope {

namespace {

// A kernel whose writes nanscope can bound by its parameter words: a known layout that the
// decoders or the signature read (not a library kernel, not one whose pointers may hide in structs
// no decoder reads, not a Triton kernel with a store its TTIR does not tie to an argument, not one
// the filters exclude).
bool writes_bounded(const KernelInfo& k) {
  return k.params_known && !k.excluded && !k.library && !k.layout_mismatch &&
         (k.decoder != Decoder::none || !k.hidden_reads) && !(k.triton && !k.triton->unresolved.empty());
}

// What a launch may write, as ranges of its parameter words: a Triton kernel's stored pointers
// (its TTIR names them: the same stores its scan covers), else every word that may be a pointer
// written through. False when a parameter's bytes cannot be read.
bool launch_writes(const KernelInfo& k, const LaunchArgs& a, std::vector<eager::Range>& out) {
  if (!k.params_known) return false;
  return written_words(k, a, out, k.triton ? decode::triton_stored_params(*k.triton, k.params.size()) : std::vector<bool>{});
}

}  // namespace

// What a launch whose inputs are known writes: a decoded kernel's exact writes, and every other
// parameter word it may write through, each up to the end of the live tensor block (else the
// allocation) holding it, but never one of its inputs (the decoder's, or those its library call
// named: libcall::set_reads, a GEMM without a device array of pointers). So a kernel that reads a
// held buffer does not make it go first. False when the inputs are not known: the caller falls
// back to the parameter words alone.
bool EagerFlushPoints::known_launch_writes(LaunchRecord& launch, std::vector<eager::Range>& out) {
  const KernelInfo& k = *launch.kernel;
  const LaunchArgs& a = launch.args;
  if (!k.params_known) return false;
  std::vector<overlap::KnownWrite> exact;
  std::vector<uint64_t> inputs;
  const libcall::LibraryCall* call = libcall::current();
  if (call) {
    if (!call->writes_bounded) return false;
    inputs.assign(call->reads, call->reads + call->read_count);
    for (uint32_t i = 0; i < call->write_count; ++i) exact.push_back({call->writes[i].ptr, call->writes[i].bytes});
  } else {
    if (k.decoder == Decoder::none || !writes_bounded(k) || !decoded_io(launch.decoded(allocs_), exact, inputs))
      return false;
  }
  std::vector<uint64_t> words;
  if (!pointer_words(k, a, words, k.triton ? decode::triton_stored_params(*k.triton, k.params.size()) : std::vector<bool>{}))
    return false;
  // A word outside every live allocation known and outside the held scans' reads (a size, a
  // stride, a scalar) writes no held buffer: dropped before the per-word lookups (an
  // OffsetCalculator holds hundreds of such words).
  const AddressRange span = allocs_.span();
  const eager::Range hull = scans_.batcher().held_hull();
  // A library call's kernels write through an interior pointer of D or of the workspace no
  // further than the call's own writes (LibraryCall::writes), which `exact` holds.
  const auto writes_nothing_held = [&](uint64_t v) {
    const bool pointer_or_held = span.contains(v) || (v >= hull.lo && v < hull.hi);
    return !pointer_or_held || (call && call->writes_within(v));
  };
  words.erase(std::remove_if(words.begin(), words.end(), writes_nothing_held), words.end());
  out = overlap::launch_writes(words, exact, inputs, [this](uint64_t v) -> uint64_t {
    const auto alloc = allocs_.allocation(v);  // no driver call for words that are not pointers
    if (!alloc) return 0;
    if (const auto block = allocs_.torch().block_of(v)) return block->base + block->size;
    return alloc->base + alloc->size;
  });
  return true;
}

// Before a kernel goes onto its stream: the held scans it may overwrite go first, and every scan
// its stream held when nanscope cannot bound what it writes.
void EagerFlushPoints::on_launch_enter(const CUpti_CallbackData& cb, LaunchRecord& launch) {
  using Part = HostProfile::Part;
  if (!scans_.batcher().holding()) return;
  const LaunchArgs& a = launch.args;
  HostProfile& p = scans_.profile();
  const SiteTimer timer{p.on, p.enter};
  PartClock clock(p);
  ToolScope scope;  // a first sight of the kernel asks the driver for its parameter layout
  const KernelInfo& k = tasks_.kernel_info(launch, cb.symbolName);  // its exit site reuses it, and the decode
  clock.lap(Part::enter_lookup);
  eager::Event e;
  if (known_launch_writes(launch, e.ranges)) {
    e.point = eager::Point::launch;
  } else {
    e.ranges.clear();
    const bool words = launch_writes(k, a, e.ranges);
    e.point = words && writes_bounded(k) ? eager::Point::launch : eager::Point::opaque_launch;
  }
  clock.lap(Part::enter_model);
  scans_.on_event(e, a.stream);
  clock.lap(Part::enter_flush);
}

void EagerFlushPoints::on_copy_enter(const CopyArgs& c) {
  if (!scans_.batcher().holding() || c.bytes == 0) return;
  eager::Event e;
  // A synchronous copy or set returns when it is done: the host may act on the stream's progress.
  const bool synchronous = std::string_view(c.api).find("Async") == std::string_view::npos;
  e.point = synchronous ? eager::Point::stream_point
            : c.kind == CopyArgs::Kind::unified ? eager::Point::host_read  // its destination may be the host
                                                : eager::Point::device_write;
  e.ranges.push_back({c.dst, c.dst + c.bytes});
  scans_.on_event(e, c.stream);
}

// A free or unmap: the held scans inside the freed memory go first (they would read freed memory).
void EagerFlushPoints::on_free_enter(CUpti_CallbackId cbid, const void* params) {
  if (!scans_.batcher().holding()) return;
  eager::Event e;
  e.point = eager::Point::device_write;
  CUstream stream = nullptr;  // cuMemFree and cuMemUnmap wait for the device: the legacy stream's order
  uint64_t ptr = 0;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: ptr = static_cast<const cuMemFree_v2_params*>(params)->dptr; break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      auto* p = static_cast<const cuMemFreeAsync_params*>(params);
      ptr = p->dptr;
      stream = hooked_stream(cbid, p->hStream);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      auto* p = static_cast<const cuMemUnmap_params*>(params);
      e.ranges.push_back({p->ptr, p->ptr + p->size});
      break;
    }
    default: return;
  }
  if (ptr) {
    const auto range = allocs_.allocation(ptr);
    if (range) e.ranges.push_back({range->base, range->base + range->size});
    else e.point = eager::Point::stream_point;  // an allocation nanscope did not see: anything
  }
  ToolScope scope;
  scans_.on_event(e, stream);
}

void EagerFlushPoints::on_stream_call(CUstream stream, eager::Point point, eager::Range source) {
  if (!scans_.batcher().holding()) return;
  eager::Event e;
  e.point = point;
  if (source.hi > source.lo) e.ranges.push_back(source);
  ToolScope scope;
  scans_.on_event(e, stream);
}

}  // namespace nanscope
