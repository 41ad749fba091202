"""Zeroing the padding rows of bf16 [B,128,512] inside a CUDA graph, the seed's shapes: torch
variants and a Triton zero-rows kernel, side by side with nanscope's zero_padding numbers from
nanscope_scan_bench in the same run.

Usage: padding_fix_bench.py SCAN_BENCH_OUTPUT
"""
import re
import sys

import torch
import triton
import triton.language as tl

NODES = 100
ROW = 128 * 512


@triton.jit
def zero_rows_kernel(out_ptr, seq_lens_ptr, ROW_ELEMS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if tl.load(seq_lens_ptr + row) != 0:
        return
    for start in range(0, ROW_ELEMS, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        tl.store(out_ptr + row * ROW_ELEMS + offs, tl.zeros([BLOCK], dtype=tl.bfloat16))


def graph_us(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()  # warm up / compile outside the capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(NODES):
            fn()
    torch.cuda.synchronize()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(30):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2] * 1000 / NODES


def main():
    ours = {}
    if len(sys.argv) > 1:
        for line in open(sys.argv[1]):
            m = re.match(r"zero_padding B=(\d+) pad=(\d+) us=([\d.]+)(?:.* nan_rows_us=([\d.]+))?", line)
            if m:
                ours[int(m.group(1))] = (float(m.group(3)), float(m.group(4)) if m.group(4) else None)
    print(f"{'B':>5} {'pad':>4} {'nan_to_num_':>12} {'out[sl==0]=0':>13} {'mask assign':>12} {'triton rows':>12} "
          f"{'nanscope':>9} {'vs triton':>9} {'NaN rows':>9} {'vs triton':>9}   (us per op, CUDA graph of {NODES})")
    for B in (1, 8, 32, 64, 128, 256, 512, 1024):
        pad = (B + 1) // 2 if B <= 16 else 16
        out = torch.randn(B, 128, 512, device="cuda", dtype=torch.bfloat16)
        seq = torch.full((B,), 5, device="cuda", dtype=torch.int32)
        seq[B - pad:] = 0
        mask = (seq == 0).view(B, 1, 1)
        t_nan = graph_us(lambda: out.nan_to_num_())
        t_idx = graph_us(lambda: out.__setitem__(seq == 0, 0))
        t_mask = graph_us(lambda: out.masked_fill_(mask, 0))
        t_tri = graph_us(lambda: zero_rows_kernel[(B,)](out, seq, ROW_ELEMS=ROW, BLOCK=4096))
        ns, ns_nan = ours.get(B, (None, None))
        ratio = f"{ns / t_tri:9.2f}" if ns else f"{'-':>9}"
        ns_s = f"{ns:9.2f}" if ns else f"{'-':>9}"
        nan_s = f"{ns_nan:9.2f} {ns_nan / t_tri:9.2f}" if ns_nan is not None else ""
        print(f"{B:>5} {pad:>4} {t_nan:>12.2f} {t_idx:>13.2f} {t_mask:>12.2f} {t_tri:>12.2f} {ns_s} {ratio} {nan_s}")


if __name__ == "__main__":
    main()
