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
#include "xla_flags.hpp"

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

// The launcher's options, each mapping onto a NANSCOPE_* variable (or the way it attaches).
struct LaunchOptions {
  std::string log, mode, filter, exclude, level, max_scan_bytes, channel, rules, dump_dir, graph_pdl, tier, xla_dumps;
  bool no_xla_dumps = false;
  bool no_typed = false, no_graph_overlap = false, no_graph_merge = false, no_aggregate = false;
  bool quiet = false, preload = false, print_env = false;
};

void add_options(CLI::App& app, LaunchOptions& o) {
  app.add_option("--log", o.log, "JSON-lines log file (%p becomes the pid, %r the rank: RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID; "
                 "in a multi-process job a name with neither gets .rank<R> before its extension) [NANSCOPE_LOG]");
  app.add_option("--mode", o.mode, "detect, fix or abort [NANSCOPE_MODE]")
      ->check(CLI::IsMember({"detect", "fix", "abort"}));
  app.add_option("--kernel-filter", o.filter, "only kernels whose demangled name matches [NANSCOPE_KERNEL_FILTER]");
  app.add_option("--kernel-exclude", o.exclude, "skip kernels whose demangled name matches [NANSCOPE_KERNEL_EXCLUDE]");
  app.add_option("--level", o.level, "console level: trace, debug, info, warn, error, off [NANSCOPE_LEVEL]")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  // Checked here as the library checks the variables (config.cpp), so a typo is a usage error
  // before the program starts rather than a warning inside it.
  app.add_option("--max-scan-bytes", o.max_scan_bytes, "scan at most this many bytes per buffer [NANSCOPE_MAX_SCAN_BYTES]")
      ->check(CLI::NonNegativeNumber & CLI::TypeValidator<std::uint64_t>());
  app.add_option("--channel-records", o.channel, "device->host channel size in records [NANSCOPE_CHANNEL_RECORDS]")
      ->check(CLI::TypeValidator<std::uint32_t>() & CLI::Range(16u, 1u << 20));
  app.add_option("--rules", o.rules, "rules file declaring watches for kernels you cannot change [NANSCOPE_RULES]");
  app.add_option("--dump-dir", o.dump_dir, "write tensor dumps (.npy + .json) of first findings here [NANSCOPE_DUMP_DIR]");
  app.add_flag("--no-typed", o.no_typed, "scan only watches and rules, not the typed outputs found in kernel signatures [NANSCOPE_TYPED=0]");
  app.add_flag("--no-graph-overlap", o.no_graph_overlap, "keep each graph scan node between its kernel and the kernel's dependents [NANSCOPE_GRAPH_OVERLAP=0]");
  app.add_flag("--no-graph-merge", o.no_graph_merge, "keep one graph scan node per kernel; by default scans beside the app's kernels that may run together become one node [NANSCOPE_GRAPH_MERGE=0]");
  app.add_option("--graph-pdl", o.graph_pdl, "programmatic graph edges around read-only scan nodes: release (the default: a later writer of a "
                 "scanned buffer starts once the scan's loads are done), both (and the scan launches during its kernel's last wave) or off [NANSCOPE_GRAPH_PDL]")
      ->check(CLI::IsMember({"off", "release", "both"}));
  app.add_option("--tier", o.tier, "full (the default: every inspected output on every launch and replay) or sentinel (for leaving "
                 "nanscope on: in CUDA graphs only the sentinel scans run until one sees a NaN, then every scan for "
                 "NANSCOPE_ESCALATE replays; eager launches are sampled, every one for a window after a NaN; outside a "
                 "window a finding names no origin) [NANSCOPE_TIER]")
      ->check(CLI::IsMember({"full", "sentinel"}));
  app.add_option("--xla-dumps", o.xla_dumps, "where XLA writes the dumps nanscope reads to know what a JAX/XLA kernel writes "
                 "(added to XLA_FLAGS; the program's own --xla_dump_to is kept and read instead); by default a new "
                 "directory under $TMPDIR [NANSCOPE_XLA_DUMP]");
  app.add_flag("--no-xla-dumps", o.no_xla_dumps, "leave XLA_FLAGS as it is and read no XLA dumps: XLA kernels are not "
               "inspected [NANSCOPE_XLA_DUMP=off]");
  app.add_flag("--no-aggregate", o.no_aggregate, "log every finding; by default identical findings fold into repeat events [NANSCOPE_AGGREGATE=0]");
  app.add_flag("-q,--quiet", o.quiet, "no console lines, JSON log only [NANSCOPE_CONSOLE=0]");
  app.add_flag("--preload", o.preload, "attach with LD_PRELOAD instead of CUDA_INJECTION64_PATH");
  app.add_flag("--print-env", o.print_env, "print the environment nanscope would set, and exit");
}

// The variables the program runs with: first the one that attaches `lib`, then the options given.
std::vector<std::pair<std::string, std::string>> launch_env(const LaunchOptions& o, const std::string& lib) {
  std::vector<std::pair<std::string, std::string>> env;
  if (o.preload) {
    const char* old = std::getenv("LD_PRELOAD");
    env.emplace_back("LD_PRELOAD", old && *old ? lib + ":" + old : lib);
  } else {
    env.emplace_back("CUDA_INJECTION64_PATH", lib);
  }
  auto set = [&](const char* name, const std::string& v) {
    if (!v.empty()) env.emplace_back(name, v);
  };
  set("NANSCOPE_LOG", o.log);
  set("NANSCOPE_MODE", o.mode);
  set("NANSCOPE_KERNEL_FILTER", o.filter);
  set("NANSCOPE_KERNEL_EXCLUDE", o.exclude);
  set("NANSCOPE_LEVEL", o.level);
  set("NANSCOPE_MAX_SCAN_BYTES", o.max_scan_bytes);
  set("NANSCOPE_CHANNEL_RECORDS", o.channel);
  set("NANSCOPE_RULES", o.rules);
  set("NANSCOPE_DUMP_DIR", o.dump_dir);
  set("NANSCOPE_GRAPH_PDL", o.graph_pdl);
  set("NANSCOPE_TIER", o.tier);
  if (o.no_typed) env.emplace_back("NANSCOPE_TYPED", "0");
  if (o.no_graph_overlap) env.emplace_back("NANSCOPE_GRAPH_OVERLAP", "0");
  if (o.no_graph_merge) env.emplace_back("NANSCOPE_GRAPH_MERGE", "0");
  if (o.no_aggregate) env.emplace_back("NANSCOPE_AGGREGATE", "0");
  if (o.quiet) env.emplace_back("NANSCOPE_CONSOLE", "0");
  return env;
}

// XLA_FLAGS with the dumps nanscope reads (XLA parses it once, at its start), and where they go;
// the user's flags and their own dump directory are kept. `dir`: the directory to add.
void add_xla_dumps(std::vector<std::pair<std::string, std::string>>& env, const std::string& dir) {
  const char* old = std::getenv("XLA_FLAGS");
  const xla::FlagsWithDumps f = xla::flags_with_dumps(old ? old : "", dir);
  if (!f.conflict.empty()) std::fprintf(stderr, "nanscope: %s: XLA kernels will not be inspected\n", f.conflict.c_str());
  env.emplace_back("XLA_FLAGS", f.flags);
  env.emplace_back("NANSCOPE_XLA_DUMP", f.dump_dir);
}

// A new private directory for XLA's dumps (mkdtemp: no other user can have made it first), or
// empty with a line saying why.
std::string new_xla_dump_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/nanscope-xla-XXXXXX";
  if (!mkdtemp(path.data())) {
    std::fprintf(stderr, "nanscope: cannot make a directory for XLA's dumps (%s): XLA kernels will not be inspected\n",
                 std::strerror(errno));
    return {};
  }
  return path;
}

// Replaces this process with the program; returns only when it cannot be run.
int exec_program(std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "nanscope: cannot run '%s': %s\n", args[0], std::strerror(errno));
  return 127;
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
  LaunchOptions o;
  add_options(app, o);
  app.footer("Examples:\n  nanscope --log run-%p.jsonl -- python3 decode.py\n  nanscope report run-*.jsonl\n"
             "  nanscope --log run-%r.jsonl -- torchrun --nproc-per-node 2 train.py   (one log per rank)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // usage errors: 2, like the report
  }
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  if (rest.empty() && !o.print_env) {
    std::fprintf(stderr, "nanscope: no program given\n%s", app.help().c_str());
    return 2;
  }
  const std::string lib = find_library();
  if (lib.empty()) {
    std::fprintf(stderr, "nanscope: cannot find libnanscope.so next to this program; set NANSCOPE_LIBRARY\n");
    return 2;
  }
  auto env = launch_env(o, lib);
  if (o.no_xla_dumps) {
    env.emplace_back("NANSCOPE_XLA_DUMP", std::string(xla::kDumpsOff));  // not XLA_FLAGS' own dumps either
  } else {
    // --print-env makes nothing: it names the directory a run would make.
    const std::string dir = !o.xla_dumps.empty() ? o.xla_dumps
                            : o.print_env        ? std::string("$TMPDIR/nanscope-xla-XXXXXX")
                                                 : new_xla_dump_dir();
    if (!dir.empty()) add_xla_dumps(env, dir);
  }
  if (o.print_env) {
    for (auto& [k, v] : env) std::printf("%s=%s\n", k.c_str(), v.c_str());
    return 0;
  }
  report_gpu_presence();
  for (auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  return exec_program(rest);
}

}  // namespace nanscope::cli
