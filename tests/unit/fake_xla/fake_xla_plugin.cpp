// Stands in for jaxlib's xla_cuda_plugin.so (jax_plugins/xla_cuda13/) in the tests of
// xla::loaded_xla_runtime: only its file name matters.
extern "C" __attribute__((visibility("default"))) int fake_xla_plugin_marker() { return 38; }
