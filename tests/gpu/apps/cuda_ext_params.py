"""A custom CUDA extension built on the spot with torch.utils.cpp_extension.load_inline, whose
kernel takes its tensors inside a params struct passed by value (the FlashInfer / vLLM style), so
no output pointer is visible in the kernel's signature. It scales each row by 1 / denom[row];
rows whose denominator and values are zero (empty requests) give 0 / 0 = NaN. A plain torch op
then reads the result (a row sum), the way the next layer would.

Usage: cuda_ext_params.py [--clean] [--build-dir DIR]
  --clean          guard the division: the output must be finite
  --build-dir DIR  where to build (default: a fresh temporary folder); a later run given the
                   same folder loads the built extension instead of compiling it again

Building needs nvcc and ninja and fetches nothing; when the extension cannot be built the app
says why on stderr and exits 77 (skipped).

The last stdout line is one JSON object: the extension kernel's name, the output's shape, numel,
dtype and counts (the truth: the tensor the kernel writes), the reader that follows (its op and
output counts), and the sha256 of the output's bytes.
"""
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

APP = "cuda_ext_params"
ROWS, COLS = 32, 512
ZERO_ROWS = (3, 17, 18, 30)
KERNEL = "scale_rows_params"

CUDA_SOURCE = r"""
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

struct ScaleRowsParams {
  const float* x;      // [rows, cols]
  const float* denom;  // [rows]
  float* out;          // [rows, cols]
  int rows;
  int cols;
  bool guard;
};

__global__ void scale_rows_params(ScaleRowsParams p) {
  int row = blockIdx.x;
  float d = p.denom[row];
  if (p.guard && d == 0.0f) d = 1.0f;
  for (int c = threadIdx.x; c < p.cols; c += blockDim.x)
    p.out[row * p.cols + c] = p.x[row * p.cols + c] / d;
}

torch::Tensor scale_rows(torch::Tensor x, torch::Tensor denom, bool guard) {
  auto out = torch::empty_like(x);
  ScaleRowsParams p{x.data_ptr<float>(), denom.data_ptr<float>(), out.data_ptr<float>(),
                    (int)x.size(0), (int)x.size(1), guard};
  scale_rows_params<<<p.rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(p);
  return out;
}
"""
CPP_SOURCE = "torch::Tensor scale_rows(torch::Tensor x, torch::Tensor denom, bool guard);"


def build(build_dir):
    from torch.utils.cpp_extension import load_inline

    try:
        return load_inline(name="nanscope_scale_rows", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                           functions=["scale_rows"], build_directory=build_dir, verbose=False)
    except Exception as e:  # no nvcc, no ninja, a CUDA version torch refuses, a failed compile
        print(f"{APP}: skip: the extension cannot be built: {e}", file=sys.stderr)
        sys.exit(common.SKIP)


def main():
    parser = common.arguments(__doc__)
    parser.add_argument("--clean", action="store_true", help="guard the division")
    parser.add_argument("--build-dir", help="build folder, reused across runs")
    args = parser.parse_args()
    common.require_cuda(APP)

    ext = build(args.build_dir or tempfile.mkdtemp(prefix="nanscope_cuda_ext_"))
    torch.manual_seed(0)
    x = torch.rand(ROWS, COLS, device="cuda")
    x[list(ZERO_ROWS)] = 0.0
    denom = x.sum(dim=1)  # zero exactly where the row is zero
    out = ext.scale_rows(x, denom, args.clean)
    row_sums = out.sum(dim=1)
    torch.cuda.synchronize()
    line = {"app": APP, "clean": args.clean, "kernel": KERNEL, "output": common.describe(out),
            "reader": {"op": "aten.sum.dim_IntList", **common.describe(row_sums)},
            "zero_rows": list(ZERO_ROWS), "checksum": common.checksum(out)}
    common.require_finite(APP, out, args.clean)
    common.emit(line)


if __name__ == "__main__":
    main()
