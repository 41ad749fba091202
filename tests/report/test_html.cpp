// --html: a self-contained page; when a `chromium` binary exists, load it headless and check the
// first cause and the SVG chart are rendered.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <regex>

#include "scenarios.hpp"

namespace {

using namespace synth;

std::string find_chromium() {
  if (const char* env = std::getenv("NANSCOPE_CHROMIUM")) return env;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    std::size_t start = 0;
    while (start <= p.size()) {
      std::size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      std::string cand = p.substr(start, end - start) + "/" + name;
      if (::access(cand.c_str(), X_OK) == 0) return cand;
      start = end + 1;
    }
  }
  return {};
}

std::string capture(const std::string& cmd, int* status) {
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  *status = ::pclose(f);
  return out;
}

TEST(Html, SelfContained) {
  TempDir dir;
  write_training(dir);
  Result r = run({dir.path.string(), "--html", dir / "report.html"});
  ASSERT_EQ(r.rc, 1) << r.err;
  std::string page = slurp(dir / "report.html");
  EXPECT_NE(page.find("<svg id=\"chart\""), std::string::npos);
  EXPECT_NE(page.find("id=\"first-cause\""), std::string::npos);
  EXPECT_NE(page.find("id=\"lineage-tree\""), std::string::npos);
  EXPECT_NE(page.find("class=\"bar real\""), std::string::npos);
  EXPECT_NE(page.find("class=\"bar padding\""), std::string::npos);
  // Nothing is fetched: no external resources (the SVG namespace URI is not a fetch).
  EXPECT_EQ(std::regex_search(page, std::regex(R"((src|href)\s*=)")), false);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  EXPECT_EQ(page.find("url("), std::string::npos);
}

TEST(Html, RendersInHeadlessChromium) {
  std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "no chromium binary on PATH (Debian package: chromium)";
  TempDir dir;
  write_training(dir);
  Result r = run({dir.path.string(), "--html", dir / "report.html"});
  ASSERT_EQ(r.rc, 1) << r.err;
  // `timeout` guards CI against a browser that never exits.
  std::string guard = ::access("/usr/bin/timeout", X_OK) == 0 ? "/usr/bin/timeout 120 " : "";
  std::string cmd = guard + "'" + chromium + "' --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
                    "--no-first-run --user-data-dir='" + dir / "profile" + "' --window-size=1280,2000 "
                    "--virtual-time-budget=2000 --dump-dom 'file://" + dir / "report.html" + "' 2>/dev/null";
  int status = 0;
  std::string dom = capture(cmd, &status);
  ASSERT_EQ(status, 0) << cmd;
  ASSERT_FALSE(dom.empty()) << cmd;
  // The first cause (rank 1's attention kernel) is in the rendered DOM.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex(R"(<section id="first-cause">[\s\S]*?</section>)")));
  std::string fc = m.str();
  EXPECT_NE(fc.find("flash_fwd_kernel"), std::string::npos);
  EXPECT_NE(fc.find("rank 1 pid 1001"), std::string::npos);
  // The inline script ran after layout and measured the chart and the first-cause box.
  ASSERT_TRUE(std::regex_search(dom, m, std::regex(R"re(data-chart-size="([0-9]+)x([0-9]+)")re"))) << dom.substr(0, 2000);
  EXPECT_GT(std::stoi(m[1]), 500);
  EXPECT_GT(std::stoi(m[2]), 100);
  ASSERT_TRUE(std::regex_search(dom, m, std::regex(R"re(data-chart-bars="([0-9]+)")re")));
  EXPECT_GE(std::stoi(m[1]), 6);
  ASSERT_TRUE(std::regex_search(dom, m, std::regex(R"re(data-first-cause-height="([0-9]+)")re")));
  EXPECT_GT(std::stoi(m[1]), 100);
}

}  // namespace
