// Synthetic nanscope/1 logs for the report tests.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "report.hpp"

namespace synth {

using json = nlohmann::ordered_json;
inline constexpr std::int64_t kT0 = 1764513600000000000;  // 2025-11-30T14:40:00Z

// One process's log: ids increase from 1, times are kT0 + offset.
class Log {
 public:
  Log(std::int64_t pid, std::int64_t rank = -1) : pid_(pid), rank_(rank) {}

  json base(const char* event, std::int64_t t_us) {
    json j;
    j["schema"] = "nanscope/1";
    j["event"] = event;
    j["id"] = next_id_++;
    j["ts_ns"] = kT0 + t_us * 1000;
    j["pid"] = pid_;
    if (rank_ >= 0) {
      j["rank"] = rank_;
      j["local_rank"] = rank_ % 8;
    }
    return j;
  }
  std::int64_t start(std::int64_t t_us = 0) {
    json j = base("start", t_us);
    j["version"] = "0.1.0";
    j["attach"] = "preload";
    j["config"] = {{"NANSCOPE_MODE", "scan"}, {"NANSCOPE_FIX", false}};
    j["argv0"] = "train.py";
    return add(j);
  }
  // A nonfinite finding; extra fields are merged in.
  std::int64_t nonfinite(std::int64_t t_us, const std::string& kernel, std::int64_t nan, json extra = json::object()) {
    json j = base("nonfinite", t_us);
    j["device"] = 0;
    j["stream"] = "0x0";
    j["kernel"] = kernel;
    j["kernel_mangled"] = "_Z6kernelv";
    j["launch_id"] = ++launch_;
    j["correlation_id"] = 100 + launch_;
    j["buffer"] = {{"arg", 0}, {"ptr", "0x7f3a00000000"}, {"dtype", "f32"}, {"elements", 4096}};
    j["counts"] = {{"nan", nan}, {"pos_inf", 0}, {"neg_inf", 0}};
    j["first_index"] = 0;
    j["last_index"] = 4095;
    for (auto& [k, v] : extra.items()) j[k] = v;
    tally(1, j["counts"]);
    counts_of_[j["id"].get<std::int64_t>()] = j["counts"];
    return add(j);
  }
  // A repeat without counts (an older writer) unless `extra` gives them; the summary counts its
  // findings as copies of the event it repeats, as such a writer would have.
  std::int64_t repeat(std::int64_t t_us, std::int64_t of, std::int64_t count, std::int64_t total, json extra = json::object()) {
    json j = base("repeat", t_us);
    j["of"] = of;
    j["count"] = count;
    j["total"] = total;
    j["final"] = false;
    for (auto& [k, v] : extra.items()) j[k] = v;
    if (j.contains("counts")) tally(count, j["counts"]);
    else if (auto it = counts_of_.find(of); it != counts_of_.end() && count > 0 && count < (1 << 20))
      tally(count, it->second, /*copies=*/true);
    return add(j);
  }
  std::int64_t summary(std::int64_t t_us, std::int64_t dropped = 0, std::int64_t overflow = 0) {
    json j = base("summary", t_us);
    j["launches"] = 100;
    j["scans"] = 100 - dropped;
    j["findings"] = findings_;
    j["kernels_inspected"] = 3;
    j["kernels_not_inspected"] = 1;
    j["scans_dropped"] = dropped;
    j["overflow"] = overflow;
    j["counts"] = {{"nan", nan_}, {"pos_inf", pos_inf_}, {"neg_inf", neg_inf_}};
    j["duration_ns"] = t_us * 1000;
    return add(j);
  }
  void raw(const std::string& line) { lines_.push_back(line); }
  std::int64_t next_id() const { return next_id_; }  // the id the next event gets (a `cause` naming itself)
  std::int64_t add(const json& j) {
    lines_.push_back(j.dump());
    return j["id"].get<std::int64_t>();
  }
  std::string text(bool final_newline = true) const {
    std::string s;
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      s += lines_[i];
      if (i + 1 < lines_.size() || final_newline) s += '\n';
    }
    return s;
  }
  void write(const std::filesystem::path& p, bool final_newline = true) const {
    std::ofstream(p, std::ios::binary) << text(final_newline);
  }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  // The summary's totals: every finding written so far, folded ones included. Hostile values
  // (negative, absurd) are left out, as no writer would count them.
  void tally(std::int64_t findings, const json& counts, bool copies = false) {
    auto get = [&](const char* k) -> std::int64_t {
      const auto it = counts.find(k);
      if (it == counts.end() || !it->is_number_integer()) return 0;
      const auto v = it->get<std::int64_t>();
      return v >= 0 && v < (std::int64_t{1} << 32) ? v * (copies ? findings : 1) : 0;
    };
    if (findings < 0 || findings >= (1 << 20)) return;
    findings_ += findings, nan_ += get("nan"), pos_inf_ += get("pos_inf"), neg_inf_ += get("neg_inf");
  }

  std::int64_t pid_, rank_, next_id_ = 1, launch_ = 0;
  std::int64_t findings_ = 0, nan_ = 0, pos_inf_ = 0, neg_inf_ = 0;
  std::map<std::int64_t, json> counts_of_;  // nonfinite event id -> its counts
  std::vector<std::string> lines_;
};

// A fresh temporary directory, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/nanscope-report-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

struct Result {
  int rc;
  std::string out, err;
};

// Runs `nanscope report ARGS...` in-process, capturing stdout and stderr.
inline Result run(std::vector<std::string> args) {
  args.insert(args.begin(), "report");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  int rc = nanscope::report::run(int(args.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {rc, out.str(), err.str()};
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace synth
