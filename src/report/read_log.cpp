// Reading the logs: inputs (files, or directories searched for *.jsonl and *.log), each file
// streamed in chunks and split into lines, each line parsed and handed to the aggregation
// (analyze.cpp) by kind.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>

#include "model.hpp"

namespace nanscope::report {

namespace fs = std::filesystem;

namespace {
constexpr std::size_t kMaxLine = 64u << 20;  // longer lines are reported and skipped
constexpr std::size_t kChunk = 4u << 20;

bool is_log_name(const fs::path& p) {
  auto ext = p.extension().string();
  return ext == ".jsonl" || ext == ".log";
}

bool is_blank(std::string_view line) {
  for (char c : line)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}

}  // namespace

// Counts and reports a line that does not parse. A schema error (a log this reader does not
// understand) refuses the rest of the file; any other bad line is skipped.
void Analysis::on_bad_line(std::uint32_t file, std::int64_t lineno, const ParseError& pe, bool at_eof_no_newline,
                           std::ostream& err) {
  totals.bad_lines++;
  const std::string& name = files[file];
  if (pe.kind == ErrorKind::schema) {
    totals.schema_errors++;
    err << name << ':' << lineno << ": " << pe.message << "; skipping the rest of this file\n";
    input_error = true;
    file_refused_ = true;
    return;
  }
  if (pe.kind == ErrorKind::syntax) totals.syntax_errors++;
  else totals.field_errors++;
  err << name << ':' << lineno << ": ";
  if (at_eof_no_newline && pe.kind == ErrorKind::syntax && pe.message.starts_with("truncated"))
    err << "truncated last line (no newline at end of file; the writer probably crashed mid-line): "
        << pe.message.substr(16) << " (line skipped)\n";
  else
    err << pe.message << " (line skipped)\n";
}

void Analysis::consume_line(std::uint32_t file, std::int64_t lineno, std::string_view line, bool at_eof_no_newline,
                            std::ostream& err) {
  totals.lines++;
  if (is_blank(line)) {
    totals.blank++;
    return;
  }
  if (ParseError pe = parse_line(line, ev_)) {
    on_bad_line(file, lineno, pe, at_eof_no_newline, err);
    return;
  }
  const Event& e = ev_;
  if (t0 == kNoTime || e.ts_ns < t0) t0 = e.ts_ns;
  if (t1 == kNoTime || e.ts_ns > t1) t1 = e.ts_ns;
  switch (e.kind) {
    case Kind::nonfinite:
      totals.ev_nonfinite++;
      on_nonfinite(file, lineno);
      break;
    case Kind::repeat:
      totals.ev_repeat++;
      on_repeat(file, lineno);
      break;
    case Kind::start:
      totals.ev_start++;
      on_start(procs[proc_of(file, e)]);
      break;
    case Kind::summary:
      totals.ev_summary++;
      on_summary(procs[proc_of(file, e)]);
      break;
    case Kind::not_inspected:
      totals.ev_not_inspected++;
      proc_of(file, e);
      if (not_inspected.size() < 10000) not_inspected.emplace(e.kernel, e.reason);
      break;
    case Kind::warning: {
      totals.ev_warning++;
      proc_of(file, e);
      auto& w = warnings[e.what.empty() ? std::string("warning") : e.what];
      if (w.first.empty()) w.first = e.message;
      w.second++;
      break;
    }
    case Kind::escalation:
      totals.ev_other++;  // counted with the kinds the totals do not list
      on_escalation(proc_of(file, e), e);
      break;
    case Kind::other:
      totals.ev_other++;
      proc_of(file, e);
      break;
  }
  Proc& p = procs[proc_of(file, e)];
  if (p.first_ts == kNoTime || e.ts_ns < p.first_ts) p.first_ts = e.ts_ns;
  if (p.last_ts == kNoTime || e.ts_ns > p.last_ts) p.last_ts = e.ts_ns;
}

void Analysis::read_file(const std::string& path, std::ostream& err) {
  auto fi = static_cast<std::uint32_t>(files.size());
  files.push_back(path);
  totals.files++;
  cur_file_ = fi;
  file_refused_ = false;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    err << "nanscope report: cannot open " << path << ": " << std::strerror(errno) << '\n';
    input_error = true;
    return;
  }
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  std::vector<char> buf(kChunk);
  std::size_t have = 0;  // bytes of an unfinished line at the start of buf
  std::int64_t lineno = 0, events_before = totals.lines - totals.blank - totals.bad_lines;
  bool skipping_long = false;
  std::int64_t bytes = 0;
  while (!file_refused_) {
    if (have == buf.size()) {  // a line longer than the buffer
      if (buf.size() >= kMaxLine) {
        if (!skipping_long) {
          totals.lines++;
          totals.bad_lines++;
          totals.syntax_errors++;
          err << path << ':' << (lineno + 1) << ": line longer than " << (kMaxLine >> 20)
              << " MiB (line skipped)\n";
        }
        skipping_long = true;
        have = 0;
      } else {
        buf.resize(buf.size() * 2);
      }
    }
    ssize_t n = ::read(fd, buf.data() + have, buf.size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      err << path << ": read error: " << std::strerror(errno) << '\n';
      input_error = true;
      break;
    }
    bytes += n;
    if (n == 0) {
      if (have > 0 && !skipping_long) consume_line(fi, ++lineno, {buf.data(), have}, true, err);
      else if (skipping_long) ++lineno;
      break;
    }
    std::size_t end = have + std::size_t(n);
    const char* base = buf.data();
    std::size_t pos = 0;
    while (pos < end && !file_refused_) {
      const void* nl = std::memchr(base + pos, '\n', end - pos);
      if (!nl) break;
      std::size_t e = std::size_t(static_cast<const char*>(nl) - base);
      ++lineno;
      if (skipping_long) skipping_long = false;
      else consume_line(fi, lineno, {base + pos, e - pos}, false, err);
      pos = e + 1;
    }
    have = end - pos;
    if (have && pos) std::memmove(buf.data(), base + pos, have);
    else if (pos == 0 && have == end && skipping_long) have = 0;  // still inside an overlong line
  }
  ::close(fd);
  totals.bytes += bytes;
  std::int64_t events = totals.lines - totals.blank - totals.bad_lines - events_before;
  if (bytes == 0) {
    err << "nanscope report: " << path << ": empty log file\n";
    input_error = true;
  } else if (events == 0 && !file_refused_) {
    err << "nanscope report: " << path << ": no valid nanscope/1 events in " << lineno << " line(s)\n";
    input_error = true;
  }
}

void Analysis::read_inputs(std::ostream& err) {
  for (const std::string& in : opt.inputs) {
    std::error_code ec;
    fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) {
      err << "nanscope report: " << in << ": no such file or directory\n";
      input_error = true;
      continue;
    }
    if (fs::is_directory(st)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(in, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && is_log_name(it->path())) found.push_back(it->path().string());
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) {
        err << "nanscope report: " << in << ": directory holds no *.jsonl or *.log files\n";
        input_error = true;
      }
      for (auto& f : found) read_file(f, err);
    } else {
      read_file(in, err);
    }
  }
}

}  // namespace nanscope::report
