// Test helpers for the XLA dump readers: the GPU dumps captured on the H200
// (tests/unit/fixtures/xla/gpu, its README), read as XlaModules reads a dump directory's module.
#pragma once
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "xla_kernels.hpp"

namespace xla_test {

using nanscope::xla::DumpModule;
using nanscope::xla::KernelThunk;

// A file of the GPU captures ("jax_pool-sick/module_5968.jit_step.thunk_metadata.txt").
inline std::string fixture(const std::string& name) {
  std::ifstream in(std::string(NANSCOPE_XLA_FIXTURES) + "/gpu/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One module's four files as read_dump_module takes them.
struct ModuleFiles {
  std::string sequence, metadata, hlo, buffers;
};
inline ModuleFiles module_files(const std::string& app, const std::string& module, const char* sequence = "thunk_sequence") {
  const std::string base = app + "/" + module + ".";
  return {fixture(base + sequence + ".txt"), fixture(base + "thunk_metadata.txt"),
          fixture(base + "sm_9.0a_gpu_after_optimizations.txt"),
          fixture(base + "sm_9.0a_gpu_after_optimizations-buffer-assignment.txt")};
}
inline DumpModule read_module(const std::string& name, const ModuleFiles& f) {
  return nanscope::xla::read_dump_module(name, f.sequence, f.metadata, f.hlo, f.buffers);
}
// The module `module` of the capture `app` ("jax_pool-sick", "module_5968.jit_step").
inline DumpModule dump_module(const std::string& app, const std::string& module, const char* sequence = "thunk_sequence") {
  return read_module(module, module_files(app, module, sequence));
}

// The kernel thunk of HLO fusion `instruction`.
inline const KernelThunk& kernel(const DumpModule& m, std::string_view instruction) {
  for (const KernelThunk& k : m.kernels)
    if (k.instruction == instruction) return k;
  throw std::runtime_error("no kernel thunk for " + std::string(instruction));
}

}  // namespace xla_test
