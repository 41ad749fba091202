// A library importing got_target_add (stands in for libtorch_cuda.so). Built three ways, with
// GOT_CALLER naming its one entry point: see tests/unit/CMakeLists.txt.
extern "C" int got_target_add(int a, int b);
extern "C" __attribute__((visibility("default"))) int GOT_CALLER(int a, int b) { return got_target_add(a, b); }
