// The second definition of ns_probe (see dlsym_caller.cpp), after the caller in its search order.
extern "C" __attribute__((visibility("default"))) int ns_probe() { return 2; }
extern "C" __attribute__((visibility("default"))) int ns_probe_next() { return 2; }
