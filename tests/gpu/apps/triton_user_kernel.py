"""A user's @triton.jit kernel on torch tensors: row-wise L1 normalisation, out = x / sum(|x|),
the way attention-weight or histogram rows are normalised. Rows that are all zero (here: rows
of empty requests in a batch) give 0 / 0 = NaN; the inputs are finite, so this kernel is the
one that makes the NaN.

Usage: triton_user_kernel.py [--clean]
  --clean   guard the division (a zero row stays zero): the output must be finite

The last stdout line is one JSON object: the kernel's name as Triton compiles it, the output's
shape, numel, dtype and counts (the tensor the kernel writes: the truth), the zero rows, and the
sha256 of the output's bytes.
"""
import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

APP = "triton_user_kernel"
ROWS, COLS = 64, 1000
ZERO_ROWS = (5, 6, 40)


@triton.jit
def l1_normalize_rows(x_ptr, out_ptr, n_cols, GUARD: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    live = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=live, other=0.0)
    norm = tl.sum(tl.abs(x), axis=0)
    if GUARD:
        norm = tl.where(norm == 0.0, 1.0, norm)
    tl.store(out_ptr + row * n_cols + offs, x / norm, mask=live)


def main():
    parser = common.arguments(__doc__)
    parser.add_argument("--clean", action="store_true", help="guard the division")
    args = parser.parse_args()
    common.require_cuda(APP)

    torch.manual_seed(0)
    x = torch.randn(ROWS, COLS, device="cuda")
    x[list(ZERO_ROWS)] = 0.0
    out = torch.empty_like(x)
    l1_normalize_rows[(ROWS,)](x, out, COLS, GUARD=args.clean, BLOCK=triton.next_power_of_2(COLS))
    torch.cuda.synchronize()
    line = {"app": APP, "clean": args.clean, "kernel": l1_normalize_rows.fn.__name__,
            "output": common.describe(out), "zero_rows": list(ZERO_ROWS), "checksum": common.checksum(out)}
    common.require_finite(APP, out, args.clean)
    common.emit(line)


if __name__ == "__main__":
    main()
