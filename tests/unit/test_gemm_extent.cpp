// The written extent of a GEMM's D from its layout: pure decoding, no CUDA.
#include "gemm_extent.hpp"

#include <gtest/gtest.h>

using namespace nanscope;

namespace {

GemmCall layout(int cuda_type, uint64_t rows, uint64_t cols, uint64_t ld, uint8_t order = kGemmOrderCol,
                uint64_t batch = 1, int64_t stride = 0) {
  GemmCall c;
  c.cuda_type = cuda_type;
  c.rows = rows, c.cols = cols, c.ld = ld, c.order = order, c.batch = batch, c.batch_stride = stride;
  return c;
}

}  // namespace

TEST(GemmExtent, CudaDataTypeValuesMatchLibraryTypesH) {
  // The values of library_types.h (CUDA 13), checked once by hand and pinned here.
  EXPECT_EQ(gemm_scalar_dtype(0), DType::f32);
  EXPECT_EQ(gemm_scalar_dtype(1), DType::f64);
  EXPECT_EQ(gemm_scalar_dtype(2), DType::f16);
  EXPECT_EQ(gemm_scalar_dtype(14), DType::bf16);
  EXPECT_EQ(gemm_scalar_dtype(28), DType::f8e4m3);
  EXPECT_EQ(gemm_scalar_dtype(29), DType::f8e5m2);
  bool complex = false;
  EXPECT_EQ(gemm_scalar_dtype(4, &complex), DType::f32);
  EXPECT_TRUE(complex);
  EXPECT_EQ(gemm_scalar_dtype(kCudaR32I, &complex), DType::none);  // int8 GEMMs write int32
  EXPECT_FALSE(complex);
  EXPECT_EQ(gemm_scalar_dtype(kCudaR8I), DType::none);
  EXPECT_EQ(gemm_scalar_dtype(30), DType::none);  // e8m0 scales: no scan kernel
  EXPECT_EQ(gemm_scalar_dtype(-1), DType::none);
}

TEST(GemmExtent, DenseColumnMajor) {
  const GemmExtent e = gemm_extent(layout(kCudaR16F, 64, 32, 64));
  ASSERT_TRUE(e.ok) << e.why;
  EXPECT_EQ(e.dtype, DType::f16);
  EXPECT_EQ(e.inner, 64u);
  EXPECT_EQ(e.lines, 32u);
  EXPECT_TRUE(e.dense);
  EXPECT_TRUE(e.contiguous);
  EXPECT_EQ(e.span, 64u * 32u);
  EXPECT_EQ(e.written, 64u * 32u);
  EXPECT_EQ(e.total_span, e.span);
}

TEST(GemmExtent, PaddedLeadingDimensionWritesLessThanItsSpan) {
  // m = 10 rows, n = 4 columns, ld = 16: columns start 16 apart, the last one ends at 3*16+10.
  const GemmExtent e = gemm_extent(layout(kCudaR32F, 10, 4, 16));
  ASSERT_TRUE(e.ok) << e.why;
  EXPECT_FALSE(e.dense);
  EXPECT_FALSE(e.contiguous);
  EXPECT_TRUE(e.rows_fold);
  EXPECT_EQ(e.span, 3u * 16u + 10u);
  EXPECT_EQ(e.written, 40u);
}

TEST(GemmExtent, RowMajorRunsAlongColumns) {
  // Row-major m x n: m lines of n contiguous elements, ld apart.
  const GemmExtent e = gemm_extent(layout(kCudaR16BF, 3, 100, 128, kGemmOrderRow));
  ASSERT_TRUE(e.ok) << e.why;
  EXPECT_EQ(e.inner, 100u);
  EXPECT_EQ(e.lines, 3u);
  EXPECT_EQ(e.span, 2u * 128u + 100u);
}

TEST(GemmExtent, SingleColumnIgnoresLd) {
  const GemmExtent e = gemm_extent(layout(kCudaR32F, 7, 1, 0));  // ld is irrelevant for n = 1
  ASSERT_TRUE(e.ok) << e.why;
  EXPECT_TRUE(e.dense);
  EXPECT_EQ(e.span, 7u);
}

TEST(GemmExtent, StridedBatchesThatTouchAreOneRange) {
  const GemmExtent e = gemm_extent(layout(kCudaR16F, 8, 4, 8, kGemmOrderCol, 5, 32));
  ASSERT_TRUE(e.ok) << e.why;
  EXPECT_TRUE(e.contiguous);
  EXPECT_TRUE(e.rows_fold);
  EXPECT_EQ(e.written, 5u * 32u);
  EXPECT_EQ(e.total_span, 5u * 32u);
}

TEST(GemmExtent, StridedBatchesWithGaps) {
  // Each batch a dense 8x4 matrix, batches 100 apart: 5 ranges of 32.
  const GemmExtent e = gemm_extent(layout(kCudaR16F, 8, 4, 8, kGemmOrderCol, 5, 100));
  ASSERT_TRUE(e.ok) << e.why;
  EXPECT_TRUE(e.dense);
  EXPECT_FALSE(e.contiguous);
  EXPECT_FALSE(e.rows_fold);
  EXPECT_EQ(e.written, 5u * 32u);
  EXPECT_EQ(e.total_span, 4u * 100u + 32u);
}

TEST(GemmExtent, PaddedBatchesFoldIntoOneRowLayout) {
  // ld 16 > m 10, batch stride 4 * 16: the row pattern runs on across batches.
  const GemmExtent e = gemm_extent(layout(kCudaR32F, 10, 4, 16, kGemmOrderCol, 3, 64));
  ASSERT_TRUE(e.ok) << e.why;
  EXPECT_TRUE(e.rows_fold);
  EXPECT_FALSE(e.contiguous);
  EXPECT_EQ(e.total_span, 2u * 64u + 3u * 16u + 10u);
}

TEST(GemmExtent, BatchStrideIgnoredForOneBatch) {
  const GemmExtent e = gemm_extent(layout(kCudaR32F, 4, 4, 4, kGemmOrderCol, 1, -7));
  ASSERT_TRUE(e.ok) << e.why;
  EXPECT_EQ(e.batch_stride, 0u);
}

TEST(GemmExtent, ComplexDoublesTheScalars) {
  // A complex m x n with ld is, in real scalars, a 2m x n matrix with ld 2*ld.
  const GemmExtent e = gemm_extent(layout(kCudaC32F, 10, 4, 16, kGemmOrderCol, 2, 64));
  ASSERT_TRUE(e.ok) << e.why;
  EXPECT_EQ(e.dtype, DType::f32);
  EXPECT_EQ(e.inner, 20u);
  EXPECT_EQ(e.ld, 32u);
  EXPECT_EQ(e.batch_stride, 128u);
  EXPECT_EQ(e.written, 2u * 80u);
}

TEST(GemmExtent, Refusals) {
  EXPECT_STREQ(gemm_extent(layout(kCudaR32I, 4, 4, 4)).why, "not a float type");
  EXPECT_STREQ(gemm_extent(layout(kCudaR32F, 4, 4, 4, 2)).why, "tiled order");  // COL32
  EXPECT_STREQ(gemm_extent(layout(kCudaR32F, 8, 4, 4)).why, "ld below the contiguous run");
  EXPECT_STREQ(gemm_extent(layout(kCudaR32F, 0, 4, 4)).why, "empty");
  EXPECT_STREQ(gemm_extent(layout(kCudaR32F, 4, 4, 4, kGemmOrderCol, 2, -16)).why, "negative batch stride");
  EXPECT_STREQ(gemm_extent(layout(kCudaR32F, 4, 4, 4, kGemmOrderCol, 2, 8)).why, "overlapping batches");
  EXPECT_STREQ(gemm_extent(layout(kCudaR32F, 1ull << 40, 1ull << 30, 1ull << 40)).why, "size overflow");
  GemmCall pointers = layout(kCudaR32F, 4, 4, 4, kGemmOrderCol, 3);
  pointers.pointer_array = true;
  EXPECT_STREQ(gemm_extent(pointers).why, "pointer-array batch");
  EXPECT_FALSE(gemm_extent(pointers).ok);
}
