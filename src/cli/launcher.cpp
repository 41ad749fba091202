#include "cli/launcher.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "nanscope/version.h"

namespace nanscope::cli {

namespace fs = std::filesystem;

namespace {

std::string find_library() {
  if (const char* p = std::getenv("NANSCOPE_LIBRARY"); p && *p) return p;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const char* rel : {"../lib/libnanscope.so", "libnanscope.so", "../lib64/libnanscope.so"}) {
      fs::path cand = exe.parent_path() / rel;
      if (fs::exists(cand, ec)) return fs::weakly_canonical(cand, ec).string();
    }
  }
  return {};
}

// Says clearly when there is nothing to attach to. Runs before exec, in this process only.
void report_gpu_presence() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) {
    std::fprintf(stderr,
                 "nanscope: no NVIDIA driver (libcuda.so.1) on this machine: the program runs, "
                 "but there is no GPU work to scan\n");
    return;
  }
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(cuda, "cuDeviceGetCount"));
  int n = 0;
  const int r = init ? init(0) : -1;
  if (r != 0 || !count || count(&n) != 0 || n == 0)
    std::fprintf(stderr,
                 "nanscope: no CUDA device is visible (cuInit returned %d): the program runs, but "
                 "there is no GPU work to scan\n",
                 r);
  dlclose(cuda);
}

}  // namespace

int run_launcher(int argc, char** argv) {
  CLI::App app{"nanscope: find the kernel that made the NaN.\n"
               "Runs a CUDA program with nanscope attached (no recompilation). Options map onto "
               "NANSCOPE_* variables.",
               "nanscope"};
  app.set_version_flag("--version", NANSCOPE_VERSION_STRING);
  app.allow_extras(false);
  app.prefix_command();  // everything from the first positional on belongs to the app

  std::string log, mode, filter, exclude, level, max_scan_bytes, channel, rules, dump_dir;
  bool quiet = false, preload = false, print_env = false;
  app.add_option("--log", log, "JSON-lines log file (%p becomes the pid) [NANSCOPE_LOG]");
  app.add_option("--mode", mode, "detect, fix or abort [NANSCOPE_MODE]")
      ->check(CLI::IsMember({"detect", "fix", "abort"}));
  app.add_option("--kernel-filter", filter, "only kernels whose demangled name matches [NANSCOPE_KERNEL_FILTER]");
  app.add_option("--kernel-exclude", exclude, "skip kernels whose demangled name matches [NANSCOPE_KERNEL_EXCLUDE]");
  app.add_option("--level", level, "console level: trace, debug, info, warn, error, off [NANSCOPE_LEVEL]")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--max-scan-bytes", max_scan_bytes, "scan at most this many bytes per buffer [NANSCOPE_MAX_SCAN_BYTES]");
  app.add_option("--channel-records", channel, "device->host channel size in records [NANSCOPE_CHANNEL_RECORDS]");
  app.add_option("--rules", rules, "rules file declaring watches for kernels you cannot change [NANSCOPE_RULES]");
  app.add_option("--dump-dir", dump_dir, "write tensor dumps (.npy + .json) of first findings here [NANSCOPE_DUMP_DIR]");
  bool no_typed = false;
  app.add_flag("--no-typed", no_typed, "scan only watches and rules, not the typed outputs found in kernel signatures [NANSCOPE_TYPED=0]");
  bool no_graph_overlap = false;
  app.add_flag("--no-graph-overlap", no_graph_overlap, "keep each graph scan node between its kernel and the kernel's dependents [NANSCOPE_GRAPH_OVERLAP=0]");
  bool no_graph_merge = false;
  app.add_flag("--no-graph-merge", no_graph_merge, "keep one graph scan node per kernel; by default scans beside the app's kernels that may run together become one node [NANSCOPE_GRAPH_MERGE=0]");
  bool no_aggregate = false;
  app.add_flag("--no-aggregate", no_aggregate, "log every finding; by default identical findings fold into repeat events [NANSCOPE_AGGREGATE=0]");
  app.add_flag("-q,--quiet", quiet, "no console lines, JSON log only [NANSCOPE_CONSOLE=0]");
  app.add_flag("--preload", preload, "attach with LD_PRELOAD instead of CUDA_INJECTION64_PATH");
  app.add_flag("--print-env", print_env, "print the environment nanscope would set, and exit");
  app.footer("Example:\n  nanscope --log run-%p.jsonl -- python3 decode.py\n  nanscope report run-*.jsonl");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // usage errors: 2, like the report
  }
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  if (rest.empty() && !print_env) {
    std::fprintf(stderr, "nanscope: no program given\n%s", app.help().c_str());
    return 2;
  }

  std::vector<std::pair<std::string, std::string>> env;
  const std::string lib = find_library();
  if (lib.empty()) {
    std::fprintf(stderr, "nanscope: cannot find libnanscope.so next to this program; set NANSCOPE_LIBRARY\n");
    return 2;
  }
  if (preload) {
    const char* old = std::getenv("LD_PRELOAD");
    env.emplace_back("LD_PRELOAD", old && *old ? lib + ":" + old : lib);
  } else {
    env.emplace_back("CUDA_INJECTION64_PATH", lib);
  }
  auto set = [&](const char* name, const std::string& v) {
    if (!v.empty()) env.emplace_back(name, v);
  };
  set("NANSCOPE_LOG", log);
  set("NANSCOPE_MODE", mode);
  set("NANSCOPE_KERNEL_FILTER", filter);
  set("NANSCOPE_KERNEL_EXCLUDE", exclude);
  set("NANSCOPE_LEVEL", level);
  set("NANSCOPE_MAX_SCAN_BYTES", max_scan_bytes);
  set("NANSCOPE_CHANNEL_RECORDS", channel);
  set("NANSCOPE_RULES", rules);
  set("NANSCOPE_DUMP_DIR", dump_dir);
  if (no_typed) env.emplace_back("NANSCOPE_TYPED", "0");
  if (no_graph_overlap) env.emplace_back("NANSCOPE_GRAPH_OVERLAP", "0");
  if (no_graph_merge) env.emplace_back("NANSCOPE_GRAPH_MERGE", "0");
  if (no_aggregate) env.emplace_back("NANSCOPE_AGGREGATE", "0");
  if (quiet) env.emplace_back("NANSCOPE_CONSOLE", "0");

  if (print_env) {
    for (auto& [k, v] : env) std::printf("%s=%s\n", k.c_str(), v.c_str());
    return 0;
  }
  report_gpu_presence();
  for (auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);

  std::vector<char*> args;
  for (auto& a : rest) args.push_back(a.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "nanscope: cannot run '%s': %s\n", args[0], std::strerror(errno));
  return 127;
}

}  // namespace nanscope::cli
