#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "npy_writer.hpp"

using namespace nanscope;

namespace {
std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
}  // namespace

TEST(NpyWriter, HeaderIsAlignedAndDescribesTheData) {
  const std::string path = (std::filesystem::temp_directory_path() / ("ns-npy-" + std::to_string(getpid()) + ".npy")).string();
  const float data[6] = {1, 2, 3, 4, 5, 6};
  ASSERT_EQ(write_npy(path, DType::f32, {2, 3}, data, sizeof data), "");
  const std::string s = slurp(path);
  ASSERT_GE(s.size(), 10u);
  EXPECT_EQ(s.substr(0, 6), "\x93NUMPY");
  const std::size_t header_len = static_cast<unsigned char>(s[8]) | (static_cast<unsigned char>(s[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header = s.substr(10, header_len);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos);
  EXPECT_NE(header.find("'shape': (2,3)"), std::string::npos);
  EXPECT_EQ(header.back(), '\n');
  ASSERT_EQ(s.size(), 10 + header_len + sizeof data);
  EXPECT_EQ(std::memcmp(s.data() + 10 + header_len, data, sizeof data), 0);
  std::filesystem::remove(path);
}

TEST(NpyWriter, RawWordsForBf16AndFp8) {
  EXPECT_STREQ(npy_descr(DType::bf16), "<u2");
  EXPECT_STREQ(npy_descr(DType::f8e4m3), "|u1");
  EXPECT_STREQ(npy_descr(DType::f8e5m2), "|u1");
  EXPECT_STREQ(npy_descr(DType::f16), "<f2");
  EXPECT_STREQ(npy_descr(DType::f64), "<f8");
}

TEST(NpyWriter, OneDimensionalShapeKeepsItsComma) {
  const std::string path = (std::filesystem::temp_directory_path() / ("ns-npy1-" + std::to_string(getpid()) + ".npy")).string();
  const uint16_t data[3] = {0x7fc0, 0x3f80, 0};
  ASSERT_EQ(write_npy(path, DType::bf16, {3}, data, sizeof data), "");
  EXPECT_NE(slurp(path).find("'shape': (3,)"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(NpyWriter, UnwritablePathIsNamed) {
  const std::string err = write_npy("/proc/nonexistent/x.npy", DType::f32, {1}, "abcd", 4);
  EXPECT_NE(err.find("/proc/nonexistent/x.npy"), std::string::npos);
}

// Dumps were written with fopen("wb") to predictable names: a planted link sent them anywhere.
TEST(NpyWriter, NeverWritesThroughAPlantedLink) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("ns-npy-link-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/victim") << "precious";
  std::filesystem::create_symlink(dir + "/victim", dir + "/nanscope-1-2.npy");
  const float data[2] = {1, 2};
  const std::string err = write_npy(dir + "/nanscope-1-2.npy", DType::f32, {2}, data, sizeof data);
  EXPECT_NE(err.find("already exists"), std::string::npos) << err;
  EXPECT_EQ(slurp(dir + "/victim"), "precious");
  std::filesystem::remove_all(dir);
}
