// The function the GOT patching tests intercept (stands in for cublasGemmEx in libcublas).
extern "C" __attribute__((visibility("default"))) int got_target_add(int a, int b) { return a + b; }
