// Tests for src/coverage.cpp: launches counted by how they were inspected, bytes written by
// decoded kernels against bytes scanned, and the top not-inspected kernels by launch count.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "coverage.hpp"

namespace nanscope {
namespace {

TEST(Coverage, CountsLaunchesByHowTheyWereInspected) {
  Coverage c;
  c.on_launch(1, Inspection::decoded, 100, 100);
  c.on_launch(1, Inspection::decoded, 100, 60);  // a scan capped below what was written
  c.on_launch(2, Inspection::typed, 0, 40);
  c.on_launch(3, Inspection::opaque, 0, 0);
  const auto j = c.to_json();
  EXPECT_EQ(j["launches"], 4u);
  EXPECT_EQ(j["by_inspection"]["decoded"], 2u);
  EXPECT_EQ(j["by_inspection"]["typed"], 1u);
  EXPECT_EQ(j["by_inspection"]["opaque"], 1u);
  EXPECT_EQ(j["by_inspection"]["layout_mismatch"], 0u);
  EXPECT_DOUBLE_EQ(j["inspected_share"].get<double>(), 0.75);
  EXPECT_EQ(j["bytes_written_decoded"], 200u);
  EXPECT_EQ(j["bytes_written_decoded_scanned"], 160u);
  EXPECT_EQ(j["bytes_scanned"], 200u);
}

TEST(Coverage, ListsTheKernelsNotInspectedMostOftenFirstWithTheirReason) {
  Coverage c;
  c.on_kernel(5, "gemm", "opaque parameters");
  c.on_kernel(7, "cat", "layout mismatch");
  c.on_kernel(9, "inspected", "");  // inspected kernels are not listed
  c.on_kernel(11, "never launched", "no floating output");
  for (int i = 0; i < 3; ++i) c.on_launch(7, Inspection::mismatch, 0, 0);
  for (int i = 0; i < 5; ++i) c.on_launch(5, Inspection::opaque, 0, 0);
  c.on_launch(9, Inspection::typed, 0, 4);
  const auto top = c.to_json()["not_inspected_top"];
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0]["kernel"], "gemm");
  EXPECT_EQ(top[0]["launches"], 5u);
  EXPECT_EQ(top[0]["reason"], "opaque parameters");
  EXPECT_EQ(top[1]["kernel"], "cat");
  EXPECT_EQ(top[1]["reason"], "layout mismatch");
  EXPECT_EQ(c.to_json(1)["not_inspected_top"].size(), 1u);
  EXPECT_EQ(c.to_json()["kernels_not_inspected"], 3u);
}

TEST(Coverage, KernelIdsBeyondTheCountedRangeAreTotalledNotLost) {
  Coverage c;
  const uint32_t far = Coverage::kChunk * Coverage::kChunks + 3;
  c.on_kernel(far, "late", "opaque parameters");
  c.on_launch(far, Inspection::opaque, 0, 0);
  const auto j = c.to_json();
  EXPECT_EQ(j["by_inspection"]["opaque"], 1u);
  EXPECT_EQ(j["not_inspected_uncounted_launches"], 1u);
  EXPECT_TRUE(j["not_inspected_top"].empty());
}

// Under the sentinel tier a replay that ran only the sentinels did not look upstream of them.
TEST(Coverage, SentinelTierReplaysAreCountedByWhatTheyScanned) {
  Coverage c;
  EXPECT_EQ(c.to_json()["graph_replays_sentinel_only"], 0u);
  for (int i = 0; i < 5; ++i) c.on_tier_replay(false);
  c.on_tier_replay(true);
  const auto j = c.to_json();
  EXPECT_EQ(j["graph_replays_sentinel_only"], 5u);
  EXPECT_EQ(j["graph_replays_every_scan"], 1u);
  EXPECT_EQ(j["launches"], 0u);  // replays are not launches of the app's kernels
}

TEST(Coverage, ConcurrentLaunchesAreAllCounted) {
  Coverage c;
  c.on_kernel(2000, "k", "opaque parameters");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) c.on_launch(2000, Inspection::opaque, 0, 0);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.to_json()["not_inspected_top"][0]["launches"], 40000u);
}

TEST(Coverage, LibraryKernelsAreListedApart) {
  Coverage c;
  c.on_kernel(1, "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT", "name carries no parameter types");
  c.on_kernel(2, "index_elementwise_kernel", "layout mismatch");
  for (int i = 0; i < 9; ++i) c.on_launch(1, Inspection::library, 0, 0);
  c.on_launch(2, Inspection::mismatch, 0, 0);
  const auto j = c.to_json();
  ASSERT_EQ(j["not_inspected_top"].size(), 1u);
  EXPECT_EQ(j["not_inspected_top"][0]["kernel"], "index_elementwise_kernel");
  ASSERT_EQ(j["library_top"].size(), 1u);
  EXPECT_EQ(j["library_top"][0]["launches"], 9u);
}

TEST(Coverage, LibraryKernelsAreToldApartByName) {
  EXPECT_TRUE(library_kernel("nvjet_sm90_hsh_64x24_64x16_4x2_h_bz_bias_NNT"));
  EXPECT_TRUE(library_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1"));
  EXPECT_TRUE(library_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"));
  EXPECT_FALSE(library_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"));
  EXPECT_FALSE(library_kernel("triton_poi_fused_add_0"));
  EXPECT_FALSE(library_kernel("scale_rows_params(ScaleRowsParams)"));
}

// The cuBLAS kernels XLA's GEMMs and its autotuner's candidates launched on the H200 (jax_scan_rnn,
// session 28) are library kernels, and their reason names the call that judges them, not a remedy
// that would change nothing: before, it ended "use a watch" (the struct-parameter CUTLASS kernels)
// or "no parameter types" without XLA's variable (the verdicts_jax_pool check that caught it).
TEST(Coverage, ALibraryKernelsReasonSendsTheUserToItsCall) {
  EXPECT_TRUE(library_kernel("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x10_nn_align4>"
                             "(cutlass_80_tensorop_s1688gemm_64x64_16x10_nn_align4::Params)"));
  EXPECT_TRUE(library_kernel("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize32x32x64_stage3_warpsize2x2x1_tensor16x8x8_"
                             "aligna4_alignc4_execute_kernel__5x_cublas"));
  const std::string reason(kLibraryKernelReason);
  EXPECT_NE(reason.find("library_calls"), std::string::npos);
  EXPECT_NE(reason.find("readers' initial scans"), std::string::npos);
  EXPECT_EQ(reason.find("use a watch"), std::string::npos);
  EXPECT_EQ(reason.find("no parameter types"), std::string::npos);
}

TEST(Coverage, LaunchesADecoderRefusedAreListedWithItsReasonOnce) {
  Coverage c;
  c.on_kernel(4, "softmax_warp_forward", "");  // matched: inspected
  for (int i = 0; i < 3; ++i) {
    c.on_launch(4, Inspection::mismatch, 0, 0);
    c.on_refused_launch(4, "softmax_warp_forward", "softmax stride differs from element count");
  }
  const auto top = c.to_json()["not_inspected_top"];
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0]["launches"], 3u);
  EXPECT_EQ(top[0]["reason"], "refused at launch: softmax stride differs from element count");
}

// The sentinel tier's eager sample: a launch left out is counted apart (sampled_out), not as
// inspected, and its kernel is no decoder gap (not listed among the kernels not inspected).
TEST(Coverage, LaunchesTheSampleLeftOutAreNotLookedAtNorListed) {
  Coverage c;
  c.on_kernel(3, "void at::native::vectorized_elementwise_kernel<4, ...>", "");
  for (int i = 0; i < 3; ++i) c.on_launch(3, Inspection::sampled_out, 0, 0);
  c.on_launch(3, Inspection::decoded, 64, 64);
  const auto j = c.to_json();
  EXPECT_EQ(j["by_inspection"]["sampled_out"], 3u);
  EXPECT_DOUBLE_EQ(j["inspected_share"].get<double>(), 0.25);
  EXPECT_TRUE(j["not_inspected_top"].empty());
}

// XLA's autotuning (a kernel no dump module holds, launched while XLA optimized a module) is counted
// apart, as compile_time: not the program's, so no decoder gap is listed for it, while a launch of
// the same kernel after the compile, still in no dump module, is opaque and listed.
TEST(Coverage, XlasAutotuningLaunchesAreCountedApart) {
  Coverage c;
  c.on_kernel(4, "gemm_fusion_dot_10", "name carries no parameter types ...; no XLA dump module (...)");
  for (int i = 0; i < 2; ++i) c.on_launch(4, Inspection::compile_time, 0, 0);
  auto j = c.to_json();
  EXPECT_EQ(j["by_inspection"]["compile_time"], 2u);
  EXPECT_TRUE(j["not_inspected_top"].empty());
  c.on_launch(4, Inspection::opaque, 0, 0);
  j = c.to_json();
  ASSERT_EQ(j["not_inspected_top"].size(), 1u);
  EXPECT_EQ(j["not_inspected_top"][0]["launches"], 1u);
}

// A launch whose outputs only an allocator pool's end bounded scanned nothing: it is counted as
// not inspected (extent_unknown), never as typed, and its kernel is listed with the reason.
TEST(Coverage, LaunchesWhoseOutputsLieInAPoolAreNotInspected) {
  Coverage c;
  c.on_kernel(6, "xla_custom_kernel", "");  // typed: inspected by its signature
  for (int i = 0; i < 4; ++i) {
    c.on_launch(6, Inspection::extent_unknown, 0, 0);
    c.on_refused_launch(6, "xla_custom_kernel", "extent unknown (allocator pool)");
  }
  c.on_launch(7, Inspection::typed, 0, 64);
  const auto j = c.to_json();
  EXPECT_EQ(j["by_inspection"]["extent_unknown"], 4u);
  EXPECT_EQ(j["by_inspection"]["typed"], 1u);
  EXPECT_DOUBLE_EQ(j["inspected_share"].get<double>(), 0.2);
  ASSERT_EQ(j["not_inspected_top"].size(), 1u);
  EXPECT_EQ(j["not_inspected_top"][0]["launches"], 4u);
  EXPECT_EQ(j["not_inspected_top"][0]["reason"], "refused at launch: extent unknown (allocator pool)");
}

// XLA's autotuner kernels are excluded like NANSCOPE_KERNEL_EXCLUDE's: counted apart, never in
// the not-inspected list a decoder should shrink.
TEST(Coverage, ExcludedLaunchesAreCountedApartAndNotListed) {
  Coverage c;
  c.on_kernel(8, "void stream_executor::gpu::xla_fp_comparison<float>(float*, float*, float, unsigned long, int*)",
              "XLA autotuner kernel (buffer comparison)");
  for (int i = 0; i < 5; ++i) c.on_launch(8, Inspection::excluded, 0, 0);
  const auto j = c.to_json();
  EXPECT_EQ(j["by_inspection"]["excluded"], 5u);
  EXPECT_TRUE(j["not_inspected_top"].empty());
  EXPECT_EQ(j["bytes_scanned"], 0u);
}

// ATen's grouped GEMM on sm_90 (torch 2.11's table; session 29, H100: a Mixtral's experts) is a
// CUTLASS 3 `device_kernel<Op>(Op::Params)`: its reason says what it is and what judges its
// output, not "name carries no parameter types" (it has one: the Params struct).
TEST(Coverage, ACutlassKernelOfAFrameworkSaysWhatJudgesItsOutput) {
  const std::string mangled =
      "_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm6kernel13GemmUniversalINS5_"
      "17GroupProblemShapeIN4cute5tupleIJiiiEEEEENS5_10collective13CollectiveMmaEEEEEEvNT_6ParamsE";
  EXPECT_TRUE(cutlass_device_kernel(mangled));
  EXPECT_TRUE(cutlass_device_kernel("void cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<...> >(...)"));
  EXPECT_FALSE(library_kernel(mangled)) << "no library call launched it: not counted with the libraries";
  EXPECT_FALSE(cutlass_device_kernel("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align2>(...)"));
  EXPECT_FALSE(cutlass_device_kernel("triton_poi_fused_mul_0"));
  const std::string reason(kCutlassKernelReason);
  EXPECT_NE(reason.find("readers' initial scans"), std::string::npos);
  EXPECT_NE(reason.find("watch"), std::string::npos);
  EXPECT_EQ(reason.find("no parameter types"), std::string::npos);
}

}  // namespace
}  // namespace nanscope
