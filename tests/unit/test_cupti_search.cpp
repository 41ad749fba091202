// Where nanscope looks for CUPTI (src/cupti_search.*) and the loader that opens it
// (hooks/cupti_loader.cpp), against a stand-in libcupti.so.13 (fake_cupti/).
#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>

#include "cupti_loader.hpp"
#include "cupti_search.hpp"

namespace nanscope {
namespace {

std::vector<std::string> paths(const std::vector<CuptiCandidate>& cands) {
  std::vector<std::string> out;
  for (const auto& c : cands) out.push_back(c.path);
  return out;
}

TEST(CuptiSearch, OrderIsUserThenPythonThenWheelBesideUsThenLoaderThenToolkit) {
  const auto c = cupti_candidates({"/my/libcupti.so.13", "/venv/site/nvidia/cu13/lib/libcupti.so.13",
                                   "/venv/site/nanscope/lib", "/opt/cuda-13.1"});
  const std::vector<std::string> want = {
      "/my/libcupti.so.13",
      "/venv/site/nvidia/cu13/lib/libcupti.so.13",
      "/venv/site/nanscope/lib/../../nvidia/cu13/lib/libcupti.so.13",
      "/venv/site/nanscope/lib/../../nvidia/cuda_cupti/lib/libcupti.so.13",
      "libcupti.so.13",
      "/opt/cuda-13.1/extras/CUPTI/lib64/libcupti.so.13",
      "/opt/cuda-13.1/lib64/libcupti.so.13",
      "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
      "/usr/local/cuda/lib64/libcupti.so.13"};
  EXPECT_EQ(paths(c), want);
  EXPECT_EQ(c[0].source, "NANSCOPE_CUPTI");
  EXPECT_NE(c[1].source.find("sys.path"), std::string::npos);
  EXPECT_NE(c[2].source.find("beside nanscope"), std::string::npos);
  EXPECT_NE(c[5].source.find("CUDA_HOME"), std::string::npos);
}

TEST(CuptiSearch, NothingGivenLeavesTheLoaderAndTheDefaultToolkit) {
  const auto c = cupti_candidates({});
  EXPECT_EQ(paths(c), (std::vector<std::string>{"libcupti.so.13", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                                                "/usr/local/cuda/lib64/libcupti.so.13"}));
}

TEST(CuptiSearch, OriginNamesTheWheelTheToolkitOrTheSystem) {
  EXPECT_EQ(cupti_origin("/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13"), "nvidia-cuda-cupti wheel");
  EXPECT_EQ(cupti_origin("/usr/lib/python3/dist-packages/nvidia/cuda_cupti/lib/libcupti.so.13"), "nvidia-cuda-cupti wheel");
  EXPECT_EQ(cupti_origin("/usr/local/cuda-13.0/extras/CUPTI/lib64/libcupti.so.13"), "CUDA toolkit");
  EXPECT_EQ(cupti_origin("/usr/local/cuda/lib64/libcupti.so.13"), "CUDA toolkit");
  EXPECT_EQ(cupti_origin("/usr/lib/x86_64-linux-gnu/libcupti.so.13"), "system");
}

std::string real(const char* path) {
  char buf[PATH_MAX];
  return realpath(path, buf) ? buf : path;
}

// One process: the first load opens the stand-in, the second finds it already loaded (as when
// torch loaded its CUPTI before the driver injected nanscope) whatever it is asked for.
TEST(CuptiLoader, SkipsWhatIsNotCuptiThenLoadsThenReusesTheLoadedOne) {
  CuptiSearchInputs in;
  in.explicit_path = FAKE_NOT_CUPTI;  // a shared library without the CUPTI entry points
  in.python_found = FAKE_CUPTI;
  const CuptiLibrary first = load_cupti(in);
  ASSERT_TRUE(first.ok()) << first.error;
  EXPECT_EQ(first.path, real(FAKE_CUPTI));
  EXPECT_NE(first.source.find("sys.path"), std::string::npos) << first.source;
  const char* text = nullptr;
  EXPECT_EQ(first.api.result_string(CUPTI_SUCCESS, &text), CUPTI_SUCCESS);
  EXPECT_STREQ(text, "fake CUPTI");

  const CuptiLibrary again = load_cupti({"/nonexistent/libcupti.so.13", "", "", ""});
  ASSERT_TRUE(again.ok()) << again.error;
  EXPECT_EQ(again.path, first.path);
  EXPECT_EQ(again.source, "already loaded by the program");
}

}  // namespace
}  // namespace nanscope
