// Readers of what XLA writes with --xla_dump_to (issue 38, docs/jax.md): the buffer assignment
// of an optimized module (which allocation holds which HLO value, at which offset and size, with
// which role: entry parameter, output, temp) and the source lines in its optimized HLO text (the
// StackFrames tables JAX 0.10 writes, and the older metadata source_file/source_line). Pure text
// parsing, so CPU tests run on dumps captured from jaxlib. The engine does not use them yet.
//
// Formats (XLA's BufferAllocation::ToString and HloModule::ToString, jaxlib 0.10.2):
//   allocation 0: size 2048, parameter 0, shape |f32[16,32]| at ShapeIndex {}:
//    value: <19 w1.1 @0> (size=2048,offset=0): f32[16,32]{1,0}
//   allocation 3: size 16, output shape is |f32[4]|, maybe-live-out:
//   allocation 7: size 640, preallocated-temp:
//   %log_reduce_fusion = f32[4]{0} fusion(%ynn_fusion), kind=kLoop, calls=%fused_computation.2,
//       metadata={op_name="jit(mlp)/reduce_sum" stack_frame_id=2}
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "signature.hpp"  // DType

namespace nanscope::xla {

// An array shape: XLA's element type and dimensions ("f32[4,8]{1,0}"). dtype is DType::none for
// the types nanscope does not scan (integers, pred, complex); tuples are not shapes here.
struct Shape {
  std::string element;  // XLA's name: f32, bf16, f8e4m3fn, s32, pred, ...
  DType dtype = DType::none;
  std::vector<int64_t> dims;
  uint64_t elements() const;
};
std::optional<Shape> parse_shape(std::string_view text);

struct Value {
  uint64_t id = 0;
  std::string instruction;  // the HLO instruction that defines it
  std::string index;        // its position in a tuple ("@0", "@{1}")
  bool phi = false;         // a while loop's parameter or result (XLA writes "(phi)"): the slice every iteration shares
  uint64_t offset = 0, size = 0;
  std::string shape_text;
  std::optional<Shape> shape;
};

struct Allocation {
  uint32_t index = 0;
  uint64_t size = 0;
  int parameter = -1;        // the entry parameter number, or -1
  bool output = false;       // holds (part of) the entry computation's result
  bool maybe_live_out = false;
  bool thread_local_ = false;
  bool constant = false;
  bool preallocated_temp = false;
  std::vector<Value> values;
  bool temp() const { return parameter < 0 && !output && !constant && !thread_local_; }
};

struct BufferAssignment {
  std::vector<Allocation> allocations;
  std::vector<std::string> errors;  // lines that could not be read, with their line number
  const Allocation* holding(std::string_view instruction) const;  // the allocation of a value it defines
};
BufferAssignment parse_buffer_assignment(std::string_view text);

struct SourceLine {
  std::string file, function;
  uint32_t line = 0;
  std::string op;  // the op_name of the op the line is taken from (JAX's "jit(step)/log"); empty: unknown
};

// What the optimized HLO says about each instruction: its op_name, the innermost source line,
// and the fused computation a fusion calls (with that computation's instructions, so a fusion's
// ops and their lines can be listed).
struct HloSources {
  std::unordered_map<std::string, std::string> op_name;
  std::unordered_map<std::string, SourceLine> line;
  std::unordered_map<std::string, std::string> calls;
  std::unordered_map<std::string, std::vector<std::string>> computations;  // name -> its instructions
  std::vector<std::string> errors;
};
HloSources parse_hlo_sources(std::string_view text);

}  // namespace nanscope::xla
