// What one cuBLAS / cuBLASLt GEMM call writes, decoded from its arguments alone (no CUDA):
// the element type of D, its layout (rows, cols, leading dimension, order, batches) and from
// those the exact elements written. hooks/gemm_intercept.cpp fills a GemmCall per successful
// call; the engine turns it into a scan of D after the call's last kernel.
#pragma once
#include <cstdint>

#include "signature.hpp"

namespace nanscope {

// Values of cudaDataType_t (library_types.h, CUDA 13) that GEMM outputs can have; the rest
// (integer outputs, fp4/fp6) carry no NaN nanscope can scan.
enum CudaDataType : int {
  kCudaR32F = 0, kCudaR64F = 1, kCudaR16F = 2, kCudaR8I = 3, kCudaC32F = 4, kCudaC64F = 5,
  kCudaC16F = 6, kCudaR32I = 10, kCudaR16BF = 14, kCudaC16BF = 15, kCudaR8FE4M3 = 28,
  kCudaR8FE5M2 = 29,
};

// cublasLtOrder_t (cublasLt.h): only the two linear orders are decoded; the tiled
// (COL32, COL4_4R2_8C, COL32_2R_4R4) integer-GEMM orders are refused.
enum GemmOrder : uint8_t { kGemmOrderCol = 0, kGemmOrderRow = 1 };

// An input matrix of a call (A or B), as the call describes it: read, never written. Its
// extent gives the initial scan of an operand no scan judged yet, so D's origin is decided
// from known states (docs/origin.md). ptr 0: unknown (pointer-array batches).
struct GemmOperand {
  uint64_t ptr = 0;
  int cuda_type = -1;
  uint64_t rows = 0, cols = 0, ld = 0;  // as stored: op(A) transposed is cols x rows here
  uint64_t batch = 1;
  int64_t batch_stride = 0;
  uint8_t order = kGemmOrderCol;
};

// One intercepted GEMM call, as reported to the sink after the call returned success.
// rows/cols/ld/batch_stride are in elements of D's type (a complex element counts once).
struct GemmCall {
  const char* api = nullptr;  // the intercepted function's name, e.g. "cublasLtMatmul"
  uint64_t call_id = 0;       // matches LibraryCall::call_id seen by the launch callback
  uint64_t stream = 0;        // cudaStream_t of the call (0: the legacy default stream)
  uint64_t d_ptr = 0;         // D (for cuBLAS: C); with pointer_array, the device array of D's
  int dtype = static_cast<int>(DType::none);  // nanscope DType code of D's scalars, none=255
  int cuda_type = -1;                         // D's cudaDataType_t as passed; -1 unknown
  uint64_t rows = 0, cols = 0, ld = 0;        // D's m, n and leading dimension
  uint64_t batch = 1;
  int64_t batch_stride = 0;   // elements between the batch's D matrices (strided batches)
  uint64_t c_ptr = 0;         // C (read when beta != 0); cuBLAS has C == D
  bool c_is_d = false;        // C and D are the same buffer: D's old values feed its new ones
  bool pointer_array = false; // batched by pointer array: d_ptr holds `batch` device pointers
  uint8_t order = kGemmOrderCol;
  uint32_t kernels_launched = 0;  // kernels the launch callback counted inside the call
  GemmOperand a, b;               // the inputs (C, when it is not D, is c_ptr)
  uint64_t workspace = 0, workspace_bytes = 0;  // cublasLtMatmul's workspace: its kernels may write it
};

// DType of one scalar of a cudaDataType_t, and whether the type is complex (two scalars per
// element). none for types without NaN (integers) or without a scan kernel (fp4, fp6, e8m0).
DType gemm_scalar_dtype(int cuda_type, bool* is_complex = nullptr);

// The elements a call writes, in scalars of `dtype`: per batch, `lines` runs of `inner`
// contiguous scalars whose starts are `ld` apart. A column-major m x n D with leading
// dimension ld has lines = n, inner = m; a row-major one lines = m, inner = n. Complex
// elements double inner, ld and batch_stride. Strides are never negative here.
struct GemmExtent {
  bool ok = false;
  const char* why = "";   // why not ok: a short, stable reason for the log
  DType dtype = DType::none;
  uint64_t inner = 0, lines = 0, ld = 0;
  uint64_t batch = 1;
  uint64_t batch_stride = 0;
  uint64_t span = 0;        // scalars from one batch's first written scalar to its last, inclusive
  bool dense = false;       // one batch's written scalars are contiguous (span == inner * lines)
  bool rows_fold = false;   // every batch continues the previous one's lines: the whole call is
                            // one row layout of lines * batch runs (nanscope_row_spec)
  bool contiguous = false;  // all written scalars are one range [d_ptr, d_ptr + written)
  uint64_t written = 0;     // scalars written in all: inner * lines * batch
  uint64_t total_span = 0;  // scalars from D's start to the last batch's last scalar
};

// Decodes a call's layout. Refuses (ok = false): no float type, tiled order, ld smaller than
// the contiguous run (overlapping lines), pointer-array batches (D's addresses live on the
// device), negative batch strides, batches that overlap, and sizes that overflow 64 bits.
GemmExtent gemm_extent(const GemmCall& call);
// The same for an operand: the elements a call reads of it.
GemmExtent operand_extent(const GemmOperand& m);
// An operand of a column-major cuBLAS call: op(X) is rows x cols, so X as stored is that or,
// transposed (trans != 0, CUBLAS_OP_T / _C), cols x rows.
GemmOperand column_operand(const void* ptr, int cuda_type, bool trans, int64_t rows, int64_t cols, int64_t ld,
                           int64_t batch, long long stride);

}  // namespace nanscope
