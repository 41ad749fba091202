"""torch.nn.functional.scaled_dot_product_attention with one backend forced, on a query that has
one row of +Inf handed over from the host (a corrupted cached prefix, say). Every score of that
row is then +-Inf, its softmax is Inf - Inf = NaN, and the attention output row is NaN: the
attention kernel is the first to write NaN. Each query row is independent, so no other row is
touched. No mask: the flash backend accepts none, and one query serves all three backends.

Usage: sdpa_backends.py BACKEND [--clean | --overflow]
  BACKEND     cudnn (SDPBackend.CUDNN_ATTENTION), flash (FLASH_ATTENTION) or efficient
              (EFFICIENT_ATTENTION)
  --clean     a finite query: the output must be finite
  --overflow  finite Q, K, V and scale=1e38 (a host float the kernel takes by value): the scaled
              scores overflow float inside the kernel, so whatever non-finite values the output
              holds were made there from finite inputs (`introduced` at the attention). Whether a
              backend overflows at all is its own arithmetic: the truth line says what it wrote.

The last stdout line is one JSON object: the backend, whether torch ran it (`supported`, false
with the reason when the backend refused the inputs), the output's shape, numel, dtype and
counts, the query's Inf count, and the sha256 of the output's bytes. The output is the tensor
the attention kernel writes, so its counts are the truth.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

APP = "sdpa_backends"
BATCH, HEADS, SEQ, HEAD_DIM = 2, 4, 128, 64
INF_ROW = (1, 2, 37)  # batch, head, query position of the +Inf row
OVERFLOW_SCALE = 1e38  # |q.k| of a few units times this is past float's 3.4e38


def inputs(clean):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(BATCH, HEADS, SEQ, HEAD_DIM, generator=g, dtype=torch.float16) for _ in range(3))
    if not clean:
        q[INF_ROW] = float("inf")
    return q.cuda(), k.cuda(), v.cuda()


def main():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    parser = common.arguments(__doc__)
    parser.add_argument("backend", choices=sorted(backends))
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--clean", action="store_true", help="a finite query")
    mode.add_argument("--overflow", action="store_true", help="finite inputs, scores overflow in the kernel")
    args = parser.parse_args()
    common.require_cuda(APP)

    q, k, v = inputs(args.clean or args.overflow)
    scale = OVERFLOW_SCALE if args.overflow else None
    line = {"app": APP, "backend": args.backend, "clean": args.clean, "overflow": args.overflow,
            "query_counts": common.counts(q)}
    try:
        with sdpa_kernel(backends[args.backend]), torch.no_grad():
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
        torch.cuda.synchronize()
    except RuntimeError as e:  # "No available kernel": the backend refused these inputs
        common.emit({**line, "supported": False, "reason": str(e).splitlines()[0]})
        return
    line.update({"supported": True, "output": common.describe(out), "checksum": common.checksum(out)})
    common.require_finite(APP, out, args.clean)
    common.emit(line)


if __name__ == "__main__":
    main()
