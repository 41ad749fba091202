"""A vLLM-style decode step captured in a CUDA graph, timed clean and with NaN in its padding rows
on every replay (issue 37's goal: under the sentinel tier, NaN every replay within 5% of clean).

One step is LAYERS layers over a padded batch of BATCH rows, one query token per row, with a KV
cache of CONTEXT positions: the query projection (a GEMM), a Triton paged-attention-like kernel
that masks keys past each row's seq_lens with -inf (a row with seq_lens 0 sees no key: 0/0 = NaN,
as a naive kernel over padding rows does), a per-tensor FP8 amax and quantisation (the NaN scale
spreads the padding rows' NaN into every row), the output projection and an MLP (GEMMs), with a
residual. seq_lens is a graph-static device buffer: `clean` gives every row a length, `nan` gives
the last PADDING rows 0. The same graph is replayed in both, in alternating blocks.

Usage: decode_step_bench.py [--reps N] [--blocks N] [--batch B] [--padding P] [--layers L]
                            [--context C] [--torch-attention]
  --reps     replays timed per block (default 50); each block's median is taken
  --blocks   clean / nan blocks, alternated (default 3); the median of the blocks' medians is printed
  --torch-attention   masked softmax in torch instead of the Triton kernel (no Triton needed)

Prints one line, `vllm_decode_step MODE clean_us=… nan_us=… nan_over_clean=…`, MODE `nanscope`
when CUDA_INJECTION64_PATH is set and `plain` otherwise (the format bench/alternate.py reads).
"""
import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_timing import capture_graph, median_ms  # noqa: E402

HEADS, HEAD_DIM, HIDDEN, FFN = 16, 128, 2048, 5632
E4M3_MAX = 448.0


def triton_attention():
    """The Triton decode attention: one program per (row, head), keys in blocks of BLOCK, masked
    past seq_lens with -inf, softmax over the row (no guard for an empty row)."""
    import triton
    import triton.language as tl

    @triton.jit
    def decode_attention(q_ptr, k_ptr, v_ptr, seq_lens_ptr, out_ptr, scale, CONTEXT: tl.constexpr,
                         HEADS: tl.constexpr, D: tl.constexpr, BLOCK: tl.constexpr):
        row, head = tl.program_id(0), tl.program_id(1)
        n = tl.load(seq_lens_ptr + row)
        d = tl.arange(0, D)
        q = tl.load(q_ptr + (row * HEADS + head) * D + d).to(tl.float32)
        m = tl.full([1], float("-inf"), tl.float32)
        total = tl.zeros([1], tl.float32)
        acc = tl.zeros([D], tl.float32)
        for start in range(0, CONTEXT, BLOCK):
            keys = start + tl.arange(0, BLOCK)
            base = ((row * CONTEXT + keys[:, None]) * HEADS + head) * D + d[None, :]
            k = tl.load(k_ptr + base).to(tl.float32)
            s = tl.sum(k * q[None, :], axis=1) * scale
            s = tl.where(keys < n, s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, axis=0))
            alpha = tl.exp(m - m_new)  # exp(-inf - -inf) = NaN on a row with no key
            p = tl.exp(s - m_new)
            v = tl.load(v_ptr + base).to(tl.float32)
            acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
            total = total * alpha + tl.sum(p, axis=0)
            m = m_new
        tl.store(out_ptr + (row * HEADS + head) * D + d, (acc / total).to(tl.bfloat16))

    def attend(q, k, v, seq_lens, out):
        rows, context = k.shape[0], k.shape[1]
        decode_attention[(rows, HEADS)](q, k, v, seq_lens, out, HEAD_DIM ** -0.5, CONTEXT=context, HEADS=HEADS,
                                        D=HEAD_DIM, BLOCK=64)
    return attend


def torch_attention(q, k, v, seq_lens, out):
    """The same masked softmax attention in torch (--torch-attention)."""
    rows, context = k.shape[0], k.shape[1]
    scores = torch.einsum("rhd,rkhd->rhk", q.view(rows, HEADS, HEAD_DIM), k).float() * HEAD_DIM ** -0.5
    keys = torch.arange(context, device=q.device)[None, :] < seq_lens[:, None]
    p = torch.softmax(scores.masked_fill(~keys[:, None, :], float("-inf")), dim=-1)
    out.copy_(torch.einsum("rhk,rkhd->rhd", p.to(v.dtype), v).reshape(out.shape))


class DecodeStep:
    """LAYERS layers on graph-static buffers; __call__ is the captured body."""

    def __init__(self, batch, layers, context, attend, device="cuda"):
        g = torch.Generator().manual_seed(0)

        def randn(*shape, scale=1.0):
            return (torch.randn(*shape, generator=g) * scale).to(device=device, dtype=torch.bfloat16)

        self.attend = attend
        self.layers = [{"wq": randn(HIDDEN, HEADS * HEAD_DIM, scale=HIDDEN ** -0.5),
                        "wo": randn(HEADS * HEAD_DIM, HIDDEN, scale=HIDDEN ** -0.5),
                        "w1": randn(HIDDEN, FFN, scale=HIDDEN ** -0.5), "w2": randn(FFN, HIDDEN, scale=FFN ** -0.5),
                        "k": randn(batch, context, HEADS, HEAD_DIM), "v": randn(batch, context, HEADS, HEAD_DIM)}
                       for _ in range(layers)]
        self.x = randn(batch, HIDDEN)
        self.seq_lens = torch.zeros(batch, device=device, dtype=torch.int32)
        self.attn = torch.zeros(batch, HEADS * HEAD_DIM, device=device, dtype=torch.bfloat16)
        self.out = torch.zeros(batch, HIDDEN, device=device, dtype=torch.bfloat16)
        self.lengths = torch.randint(1, context + 1, (batch,), generator=g, dtype=torch.int32)

    def set_padding(self, padding):
        lens = self.lengths.clone()
        if padding:
            lens[-padding:] = 0
        self.seq_lens.copy_(lens)

    def __call__(self):
        h = self.x
        for w in self.layers:
            q = h @ w["wq"]
            self.attend(q, w["k"], w["v"], self.seq_lens, self.attn)
            amax = self.attn.abs().amax().float()  # the per-tensor FP8 scale: NaN anywhere, NaN everywhere
            scale = E4M3_MAX / amax
            q8 = (self.attn.float() * scale).to(torch.float8_e4m3fn)
            h = h + (q8.float() / scale).to(torch.bfloat16) @ w["wo"]
            h = h + torch.relu(h @ w["w1"]) @ w["w2"]
        self.out.copy_(h)
        return self.out


def timed(step, graph, padding, reps, blocks):
    """Median microseconds per replay, clean and with NaN, over alternating blocks."""
    per = {"clean": [], "nan": []}
    for _ in range(blocks):
        for what, pad in (("clean", 0), ("nan", padding)):
            step.set_padding(pad)
            per[what].append(median_ms(graph.replay, reps) * 1000.0)
    step.set_padding(padding)
    graph.replay()
    torch.cuda.synchronize()
    if torch.isfinite(step.out).all():
        sys.exit("decode_step_bench: the padding rows made no NaN; the step is not the one meant")
    return statistics.median(per["clean"]), statistics.median(per["nan"])


def arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--padding", type=int, default=8)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--torch-attention", action="store_true")
    args = parser.parse_args(argv)
    if not 0 < args.padding < args.batch or args.context % 64 or min(args.reps, args.blocks, args.layers) < 1:
        parser.error("want 0 < padding < batch, context a multiple of 64, reps, blocks and layers >= 1")
    return args


def main():
    args = arguments()
    if not torch.cuda.is_available():
        sys.exit("decode_step_bench: no CUDA device")
    attend = torch_attention if args.torch_attention else triton_attention()
    step = DecodeStep(args.batch, args.layers, args.context, attend)
    step.set_padding(0)
    with torch.no_grad():
        graph = capture_graph(step)
        clean, nan = timed(step, graph, args.padding, args.reps, args.blocks)
    mode = "nanscope" if os.environ.get("CUDA_INJECTION64_PATH") else "plain"
    print(f"vllm_decode_step {mode} clean_us={clean:.2f} nan_us={nan:.2f} nan_over_clean={nan / clean:.4f}")


if __name__ == "__main__":
    main()
