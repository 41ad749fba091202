// The collectors of a launch's scan task (hooks/task_builder.hpp), one per kind of buffer.
#pragma once
#include "contexts.hpp"
#include "launch_record.hpp"
#include "task_builder.hpp"
#include "watches.hpp"

namespace nanscope {

// Rules: the kernel's own parameters say where the output and its padding are.
class RulesCollector : public TaskCollector {
 public:
  explicit RulesCollector(Watches& watches) : watches_(watches) {}
  void collect(TaskDraft& draft) override;

 private:
  Watches& watches_;
};

// Watches: any 8-byte word of any parameter that points into a watched buffer. A watched buffer
// the launch may read is also an input for the NaN origin.
class WatchesCollector : public TaskCollector {
 public:
  explicit WatchesCollector(const Watches& watches) : watches_(watches) {}
  void collect(TaskDraft& draft) override;

 private:
  const Watches& watches_;
};

// Exact writes named by a kernel-family decoder (src/decode: ATen, Triton): the byte range and
// element type each launch writes, from its parameters (the launch's record decodes them once:
// LaunchRecord::decoded). A write nanscope cannot scan exactly (an element size with no known
// type, a strided span with gaps, no extent) is left out and counted, never widened to the
// allocation; an integer output (Write::no_nan) is neither.
class DecodedWritesCollector : public TaskCollector {
 public:
  DecodedWritesCollector(const Config& cfg, const Watches& watches, Allocations& allocs)
      : cfg_(cfg), watches_(watches), allocs_(allocs) {}
  void collect(TaskDraft& draft) override;

 private:
  void add_write(TaskDraft& draft, const decode::Write& w);
  const Config& cfg_;
  const Watches& watches_;
  Allocations& allocs_;
};

// Typed outputs (floating pointers the signature says are written), not already covered
// (TaskDraft::covered): the rest of their tensor block or driver allocation, maybe given rows by
// the global spec; an output that only the end of an allocator pool bounds is refused
// (TaskDraft::refuse_pool). Last in the list, so every exact collector before it takes precedence.
class TypedOutputsCollector : public TaskCollector {
 public:
  TypedOutputsCollector(const Config& cfg, const Watches& watches, Allocations& allocs)
      : cfg_(cfg), watches_(watches), allocs_(allocs) {}
  void collect(TaskDraft& draft) override;

 private:
  const Config& cfg_;
  const Watches& watches_;
  Allocations& allocs_;
};

}  // namespace nanscope
