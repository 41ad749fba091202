// --dump: .npy statistics for f32/f64/f16/bf16/fp8 and the sidecar's row verdicts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "dump.hpp"
#include "scenarios.hpp"

namespace {

using namespace synth;

void write_npy(const std::string& path, const std::string& descr, std::vector<std::int64_t> shape, const void* data,
               std::size_t bytes) {
  std::string sh = "(";
  for (auto d : shape) sh += std::to_string(d) + ",";
  if (shape.size() > 1) sh.pop_back();
  sh += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + sh + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  std::uint16_t n = std::uint16_t(header.size());
  f.put(char(n & 0xFF)).put(char(n >> 8));
  f << header;
  f.write(static_cast<const char*>(data), std::streamsize(bytes));
}

TEST(Dump, Float32WithSidecarByEventId) {
  TempDir dir;
  // 4 rows x 3: row 3 is padding full of NaN, row 1 has one +Inf.
  float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> v{1, -2, 3, 4, inf, 6, -7.5f, 8, 9, nan, nan, nan};
  write_npy(dir / "gemm_out.npy", "<f4", {4, 3}, v.data(), v.size() * 4);
  std::ofstream(dir / "gemm_out.npy.json") << R"({"schema":"nanscope-dump/1","event_id":2,"pid":9,"dtype":"f32",
    "shape":[4,3],"row_verdicts":[{"rows":[0,2],"kind":"real","verdict":"nonfinite"},
    {"rows":[3,3],"kind":"padding","verdict":"nonfinite","fixed":true}]})";
  Log p(9, 0);
  p.start(0);
  p.nonfinite(10, "gemm(float*)", 3, {{"region", "mixed"}, {"dump", "gemm_out.npy"}});  // relative to the log
  p.write(dir / "r.jsonl");
  Result r = run({"--dump", "2", dir / "r.jsonl"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("12 elements: 3 NaN, 1 +Inf, 0 -Inf · 8 finite: min -7.5, max 9"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ROW VERDICTS"), std::string::npos);
  EXPECT_NE(r.out.find("0..2  real     nonfinite            0    1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3     padding  nonfinite (fixed)    3    0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gemm(float*)"), std::string::npos);
  // PID:ID also works; an id without a dump is an error.
  EXPECT_EQ(run({"--dump", "9:2", dir / "r.jsonl"}).rc, 0);
  EXPECT_EQ(run({"--dump", "1", dir / "r.jsonl"}).rc, 2);
  EXPECT_EQ(run({"--dump", "abc", dir / "r.jsonl"}).rc, 2);
}

TEST(Dump, ReducedPrecisionTypes) {
  TempDir dir;
  nanscope::report::NpyStats st;
  std::string err;
  // f16: 1.0, -2.0, +Inf, NaN.
  std::uint16_t h[] = {0x3C00, 0xC000, 0x7C00, 0x7E00};
  write_npy(dir / "h.npy", "<f2", {4}, h, sizeof h);
  ASSERT_TRUE(nanscope::report::read_npy(dir / "h.npy", "", st, err)) << err;
  EXPECT_EQ(st.dtype, "f16");
  EXPECT_EQ(st.nan, 1);
  EXPECT_EQ(st.pos_inf, 1);
  EXPECT_EQ(st.min, -2.0);
  EXPECT_EQ(st.max, 1.0);
  // bf16 stored as raw u16: 1.0, 3.0, -Inf, NaN.
  std::uint16_t b[] = {0x3F80, 0x4040, 0xFF80, 0x7FC0};
  write_npy(dir / "b.npy", "<u2", {2, 2}, b, sizeof b);
  ASSERT_TRUE(nanscope::report::read_npy(dir / "b.npy", "bf16", st, err)) << err;
  EXPECT_EQ(st.dtype, "bf16");
  EXPECT_EQ(st.neg_inf, 1);
  EXPECT_EQ(st.nan, 1);
  EXPECT_EQ(st.max, 3.0);
  EXPECT_EQ(st.row_nan[1], 1);
  EXPECT_EQ(st.row_inf[1], 1);
  // fp8 e4m3 (no Inf; 0x7F is NaN): 1.0 = 0x38, -448 = 0xFE.
  std::uint8_t e4[] = {0x38, 0xFE, 0x7F, 0x00};
  write_npy(dir / "e4.npy", "|u1", {4}, e4, sizeof e4);
  ASSERT_TRUE(nanscope::report::read_npy(dir / "e4.npy", "f8e4m3", st, err)) << err;
  EXPECT_EQ(st.nan, 1);
  EXPECT_EQ(st.min, -448.0);
  EXPECT_EQ(st.max, 1.0);
  // fp8 e5m2: 0x7C +Inf, 0x7E NaN, 0x3C 1.0.
  std::uint8_t e5[] = {0x7C, 0x7E, 0x3C};
  write_npy(dir / "e5.npy", "|u1", {3}, e5, sizeof e5);
  ASSERT_TRUE(nanscope::report::read_npy(dir / "e5.npy", "f8e5m2", st, err)) << err;
  EXPECT_EQ(st.pos_inf, 1);
  EXPECT_EQ(st.nan, 1);
  EXPECT_EQ(st.max, 1.0);
  // f64, and a truncated file.
  double d[] = {0.5, std::numeric_limits<double>::quiet_NaN()};
  write_npy(dir / "d.npy", "<f8", {2}, d, sizeof d);
  ASSERT_TRUE(nanscope::report::read_npy(dir / "d.npy", "", st, err)) << err;
  EXPECT_EQ(st.nan, 1);
  write_npy(dir / "t.npy", "<f8", {4}, d, sizeof d);
  EXPECT_FALSE(nanscope::report::read_npy(dir / "t.npy", "", st, err));
  EXPECT_NE(err.find("truncated"), std::string::npos);
  // A .npy path given directly.
  Result r = run({"--dump", dir / "b.npy"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("raw bits read as bf16"), std::string::npos) << r.out;
}

// Defect 3: a log names the dump, but the report only reads that file name inside the directory
// the user names (--dump-dir) or beside the log: never /etc/shadow, ../.. or /proc/self/environ.
TEST(Dump, ReadsOnlyInsideTheDumpDirectory) {
  TempDir dir;
  std::filesystem::create_directories(dir / "logs");
  std::filesystem::create_directories(dir / "dumps");
  float v[] = {1, 2};
  write_npy(dir / "secret.npy", "<f4", {2}, v, sizeof v);  // outside both directories
  write_npy(dir / "dumps/d.npy", "<f4", {2}, v, sizeof v);
  Log p(9);
  p.nonfinite(10, "k", 1, {{"dump", "../secret.npy"}});
  p.nonfinite(20, "k", 1, {{"dump", "/etc/passwd"}});
  p.nonfinite(30, "k", 1, {{"dump", "/proc/self/environ"}});
  p.nonfinite(40, "k", 1, {{"dump", "/elsewhere/d.npy"}});
  p.write(dir / "logs/r.jsonl");
  Result r = run({"--dump", "1", dir / "logs/r.jsonl"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("cannot open " + dir / "logs/secret.npy"), std::string::npos) << r.err;
  for (const char* id : {"2", "3"}) {
    r = run({"--dump", id, dir / "logs/r.jsonl"});
    EXPECT_EQ(r.rc, 2);
    EXPECT_NE(r.err.find("which is not a .npy file name"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("root"), std::string::npos) << r.out;
  }
  r = run({"--dump", "4", dir / "logs/r.jsonl", "--dump-dir", dir / "dumps"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("DUMP  " + dir / "dumps/d.npy"), std::string::npos) << r.out;
}

// A FIFO or a link where the dump should be is refused at once (a FIFO made the report hang).
TEST(Dump, RegularFilesOnly) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "f.npy").c_str(), 0600), 0);
  std::filesystem::create_symlink("/etc/passwd", dir / "l.npy");
  Log p(9);
  p.nonfinite(10, "k", 1, {{"dump", "f.npy"}});
  p.nonfinite(20, "k", 1, {{"dump", "l.npy"}});
  p.write(dir / "r.jsonl");
  Result r = run({"--dump", "1", dir / "r.jsonl"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("f.npy: not a regular file"), std::string::npos) << r.err;
  r = run({"--dump", "2", dir / "r.jsonl"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("cannot open " + dir / "l.npy"), std::string::npos) << r.err;
  r = run({"--dump", dir / "f.npy"});
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
}

// Crafted headers: a dimension past int64 (stoll threw), a product that overflows, a shape the
// file does not hold (bad_alloc), and a sidecar whose text must not be echoed.
TEST(Dump, CraftedNpyIsAnErrorNotAnAbort) {
  TempDir dir;
  float v[] = {1, 2};
  nanscope::report::NpyStats st;
  std::string err;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"(99999999999999999999999,)", "bad .npy shape"},
      {"(4611686018427387904, 4)", "bad .npy shape"},
      {"(1099511627776,)", "truncated: 2 of 1099511627776 elements"},
      {"(1000000000000, 0)", ""},  // no elements: valid, and no per-row arrays of 10^12
  };
  for (const auto& [shape, want] : cases) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }\n";
    std::ofstream f(dir / "c.npy", std::ios::binary);
    f.write("\x93NUMPY\x01\x00", 8);
    f.put(char(header.size() & 0xFF)).put(char(header.size() >> 8));
    f << header;
    f.write(reinterpret_cast<const char*>(v), sizeof v);
    f.close();
    const bool ok = nanscope::report::read_npy(dir / "c.npy", "", st, err);
    if (want.empty()) {
      EXPECT_TRUE(ok) << shape << ": " << err;
    } else {
      EXPECT_FALSE(ok) << shape;
      EXPECT_NE(err.find(want), std::string::npos) << shape << ": " << err;
    }
  }
  write_npy(dir / "s.npy", "<f4", {2}, v, sizeof v);
  std::ofstream(dir / "s.npy.json") << "root:$6$secret-hash:19000:0:99999:7:::\n";
  const Result r = run({"--dump", dir / "s.npy"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("invalid JSON sidecar (at byte"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("secret-hash"), std::string::npos) << r.err;
}

}  // namespace
