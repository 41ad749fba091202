"""Host cost of one decoded launch: a PyTorch elementwise op on a tiny tensor (so the host, not
the GPU, sets the pace), timed on the CPU as the median of 60 batches of 200 calls. Run plainly
and under CUDA_INJECTION64_PATH, the difference is what nanscope adds to one ATen launch it
decodes (the decoder, the task, the scan launch). bench/run_benchmarks.sh puts it beside
launch_bench's typed launch.

The GEMM line is the host cost of one intercepted cuBLAS/cuBLASLt call (torch.mm on 64 x 64 bf16
and F.linear with a bias, which PyTorch sends to cublasLtMatmul): the wrapper, D's layout, the
scan of D (issue 17's "host cost per intercepted GEMM call").

Usage: torch_launch_cost.py
Prints `torch_launch MODE add_us=... mul_us=...` and `torch_gemm MODE mm_us=... linear_us=...`
(MODE plain or nanscope).
"""
import os
import statistics
import time

import torch

BATCHES, CALLS = 60, 200


def per_call_us(fn):
    for _ in range(CALLS):
        fn()
    torch.cuda.synchronize()
    batches = []
    for _ in range(BATCHES):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        batches.append((time.perf_counter() - start) / CALLS * 1e6)
        torch.cuda.synchronize()  # between batches, so the queue never fills up
    return statistics.median(batches)


def main():
    a = torch.randn(256, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(256, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)
    add_us = per_call_us(lambda: torch.add(a, b, out=out))  # vectorized_elementwise_kernel, 3 tensors
    mul_us = per_call_us(lambda: torch.mul(a, 2.0, out=out))  # one tensor and a scalar
    mode = "nanscope" if os.environ.get("CUDA_INJECTION64_PATH") else "plain"
    print(f"torch_launch {mode} add_us={add_us:.3f} mul_us={mul_us:.3f}")
    x = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(64, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(64, 64, device="cuda", dtype=torch.bfloat16)
    mm_us = per_call_us(lambda: torch.mm(x, w, out=y))
    linear_us = per_call_us(lambda: torch.nn.functional.linear(x, w, bias))
    print(f"torch_gemm {mode} mm_us={mm_us:.3f} linear_us={linear_us:.3f}")


if __name__ == "__main__":
    main()
