// Reader of the thunk sequence XLA's GPU backend dumps with --xla_dump_to (issue 38,
// docs/jax.md): module_NNNN.NAME.thunk_sequence.txt (and thunk_sequence_after_thunk_passes.txt,
// where thunks are nested in command buffers) and thunk_metadata.txt (each thunk's profile
// annotation, the HLO instruction it runs). Pure text parsing; a line of a shape not known here
// is an error naming it, never a guess. Formats (jaxlib 0.10.2 with CUDA, sm_90a):
//   001: kCustomKernel [source       | next=002 (1)] gemm_fusion_dot grid: [128, 1, 1] threads: [64, 1, 1]  shared_memory: 49152 bytes
//   001: kCopy [source | sink] kCopy
//   000: kCommandBuffer [source | sink]
//       001: kCustomKernel [...] wrapped_transpose_2 grid: ...      (4 spaces more per level)
//   thunk_metadata { thunk_info { profile_annotation: "gemm_fusion_dot.1" thunk_id: 3 } thunk_kind: "kCustomKernel" }
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nanscope::xla {

struct Thunk {
  uint32_t id = 0;          // the number at the line's start (the metadata's thunk_id)
  std::string kind;         // kCustomKernel, kKernel, kCopy, kCommandBuffer, kGemm, ...
  std::string name;         // a kernel thunk's CUDA function name; other kinds: the rest of the line
  std::string annotation;   // the HLO instruction, from thunk_metadata (empty when not given)
  std::array<uint32_t, 3> grid{}, threads{};
  uint64_t shared_memory = 0;
  int parent = -1;          // index of the enclosing thunk (a command buffer), or -1
  bool kernel() const { return kind == "kCustomKernel" || kind == "kKernel"; }
};

struct ThunkSequence {
  std::vector<Thunk> thunks;        // in the file's order
  std::vector<std::string> errors;  // "line N: text" for every line not read
};
ThunkSequence parse_thunk_sequence(std::string_view text);

// Sets each thunk's annotation from thunk_metadata.txt (by thunk_id and kind); entries without a
// thunk_id (command buffers, sequences) are skipped. A thunk_id whose kind disagrees, or a line
// of an unknown shape, is an error.
void attach_thunk_metadata(ThunkSequence& sequence, std::string_view metadata_text);

}  // namespace nanscope::xla
