#include "report.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "model.hpp"
#include "util.hpp"

namespace nanscope::report {

int run(int argc, char** argv) {
  Options opt;
  std::string since, until, color = "auto", fail_on = "real";
  CLI::App app{"Turn nanscope JSONL logs (one or many processes) into the first cause, leak points and a "
               "per-kernel summary; exit 1 when --fail-on triggers, 2 on missing/empty input or usage errors.",
               "nanscope report"};
  app.add_option("inputs", opt.inputs, "log files, or directories (every *.jsonl / *.log below them)")
      ->type_name("FILE|DIR...");
  app.add_option("--format", opt.format, "terminal output: text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--trace", opt.trace_path, "also write a Chrome/Perfetto trace (JSON) to this file");
  app.add_option("--html", opt.html_path, "also write a self-contained HTML page to this file");
  app.add_option("--fail-on", fail_on,
                 "exit 1 on: real (a fault not proven to be in padding rows only, default), any fault, never")
      ->check(CLI::IsMember({"real", "any", "never"}));
  app.add_flag("--inf-faults", opt.inf_faults,
               "count every infinity as a fault (as TensorFlow's check_numerics does); by default only NaN, and "
               "infinities the log calls faults, are");
  app.add_option("--since", since, "ignore findings before this time (ns since the epoch or ISO-8601)");
  app.add_option("--until", until, "ignore findings after this time (ns since the epoch or ISO-8601)");
  app.add_option("--kernel", opt.kernel_regex, "only kernels whose demangled name matches this regex (docs/report.md: ECMAScript without back-references or look-around)");
  app.add_option("--dump", opt.dump_id, "print a tensor dump: event ID, PID:ID, or a .npy path");
  app.add_option("--dump-dir", opt.dump_dir,
                 "read the dump a log names from this directory (by its file name only; default: the log's directory)");
  app.add_option("--color", color, "colour: auto (only on a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  opt.fail_on = fail_on == "any" ? FailOn::any : fail_on == "never" ? FailOn::never : FailOn::real;
  auto time_opt = [&](const std::string& s, const char* name, std::optional<std::int64_t>& out) {
    if (s.empty()) return true;
    out = parse_time(s);
    if (!out) std::cerr << "nanscope report: " << name << ": cannot read '" << s
                        << "' as a time (ns since the epoch, or ISO-8601 like 2025-11-30T14:40:00Z)\n";
    return out.has_value();
  };
  if (!time_opt(since, "--since", opt.since) || !time_opt(until, "--until", opt.until)) return 2;
  if (std::string error; !opt.kernel_regex.empty() && !SafeRegex::compile(opt.kernel_regex, &error)) {
    std::cerr << "nanscope report: --kernel: invalid regular expression '" << printable(opt.kernel_regex.substr(0, 200))
              << (opt.kernel_regex.size() > 200 ? "…" : "") << "': " << error << '\n';
    return 2;
  }
  if (!opt.dump_id.empty()) return run_dump(opt, std::cout, std::cerr);
  if (opt.inputs.empty()) {
    std::cerr << "nanscope report: no input: give one or more log files or directories\n" << app.help();
    return 2;
  }
  const char* term = std::getenv("TERM");
  opt.color = color == "always" ||
              (color == "auto" && opt.format == "text" && ::isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR") &&
               !(term && std::strcmp(term, "dumb") == 0));

  Analysis a(opt);
  a.read_inputs(std::cerr);
  a.join_ranks(std::cerr);
  a.settle_verdicts();
  if (a.totals.files == 0) {
    std::cerr << "nanscope report: no log files to read\n";
    return 2;
  }
  if (opt.format == "json") render_json(a, std::cout);
  else render_text(a, std::cout);
  std::cout.flush();
  bool ok = true;
  if (!opt.trace_path.empty()) ok = write_trace(a, std::cerr) && ok;
  if (!opt.html_path.empty()) ok = write_html(a, opt.html_path, std::cerr) && ok;
  int rc = a.exit_code();
  if (!ok && rc == 0) rc = 2;
  return rc;
}

}  // namespace nanscope::report
