// Stands in for libnanscope_torch_shim.so in the loader tests. Its version and attach result
// come from the environment (FAKE_SHIM_VERSION, FAKE_SHIM_RESULT) so each test picks one;
// fake_shim_emit plays torch's allocator sending a live event.
#include <cstdlib>
#include <string>

#include "torch_shim_abi.h"

namespace {
nanscope_torch_shim_callbacks g_cb{};
std::string g_version;
}  // namespace

extern "C" __attribute__((visibility("default"))) const char* nanscope_torch_shim_version(void) {
  const char* v = std::getenv("FAKE_SHIM_VERSION");
  g_version = v ? v : "2.11.0+cu130";
  return g_version.c_str();
}

extern "C" __attribute__((visibility("default"))) int nanscope_torch_shim_attach(
    const nanscope_torch_shim_callbacks* cb) {
  if (!cb || cb->struct_size < sizeof(*cb) || cb->abi_version != NANSCOPE_TORCH_SHIM_ABI_VERSION)
    return NANSCOPE_TORCH_BAD_CALLBACKS;
  const char* r = std::getenv("FAKE_SHIM_RESULT");
  const int rc = r ? std::atoi(r) : NANSCOPE_TORCH_ATTACHED;
  if (rc != NANSCOPE_TORCH_ATTACHED) return rc;
  g_cb = *cb;
  // One segment with one tensor that existed before attaching.
  g_cb.on_block(g_cb.ctx, NANSCOPE_TORCH_SEED_SEGMENT, 0, 0x7f0000000000, 2 << 20, 0x55, 0, 0);
  g_cb.on_block(g_cb.ctx, NANSCOPE_TORCH_SEED_BLOCK, 0, 0x7f0000000000, 32, 0x55, 0, 0);
  return NANSCOPE_TORCH_ATTACHED;
}

extern "C" __attribute__((visibility("default"))) void fake_shim_emit(int action, unsigned long long addr,
                                                                      unsigned long long size) {
  if (g_cb.on_block) g_cb.on_block(g_cb.ctx, action, 0, addr, size, 0x55, 0, 0);
}
