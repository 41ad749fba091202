// A check of a freshly built shim against the torch it was built for, without a GPU: loads that
// torch's libc10_cuda.so and the shim, and expects the version it was built for, a refusal of a
// bad callbacks struct, and "not initialised" from the real allocator (nobody initialised CUDA
// in this process). Exit 0 on success; prints what differed otherwise.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "torch_shim_abi.h"

namespace {
void on_block(void*, int, int, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t) {}

int check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  return ok ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return std::printf("usage: shim_probe LIBC10_CUDA SHIM EXPECTED_VERSION\n"), 2;
  if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) return std::printf("FAIL: %s\n", dlerror()), 1;
  void* shim = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!shim) return std::printf("FAIL: %s\n", dlerror()), 1;
  auto version = reinterpret_cast<nanscope_torch_shim_version_fn>(dlsym(shim, NANSCOPE_TORCH_SHIM_VERSION_SYMBOL));
  auto attach = reinterpret_cast<nanscope_torch_shim_attach_fn>(dlsym(shim, NANSCOPE_TORCH_SHIM_ATTACH_SYMBOL));
  if (!version || !attach) return std::printf("FAIL: the shim lacks its entry points\n"), 1;
  std::printf("shim built for torch %s\n", version());
  int bad = check(std::strcmp(version(), argv[3]) == 0, "version matches the wheel's __version__");
  nanscope_torch_shim_callbacks cb{sizeof(cb), NANSCOPE_TORCH_SHIM_ABI_VERSION, nullptr, &on_block};
  nanscope_torch_shim_callbacks small = cb;
  small.struct_size = 8;
  bad += check(attach(&small) == NANSCOPE_TORCH_BAD_CALLBACKS, "a short callbacks struct is refused");
  bad += check(attach(nullptr) == NANSCOPE_TORCH_BAD_CALLBACKS, "null callbacks are refused");
  const int rc = attach(&cb);
  std::printf("attach before torch's CUDA init: %d\n", rc);
  bad += check(rc == NANSCOPE_TORCH_NOT_INITIALIZED, "the real allocator (native) says not initialised");
  return bad ? 1 : 0;
}
