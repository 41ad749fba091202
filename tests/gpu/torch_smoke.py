"""A small PyTorch workload for the injection tests: prints a hash of its results.

Usage: torch_smoke.py [--profile]
"""
import hashlib
import sys

import torch


def workload():
    torch.manual_seed(0)
    x = torch.randn(256, 512, device="cuda")
    w = torch.randn(512, 512, device="cuda")
    y = torch.softmax(x @ w, dim=-1)
    z = torch.nn.functional.layer_norm(y, (512,))
    s = x.clone()
    s[200:] = float("-inf")  # padding rows: softmax gives 0/0 = NaN there
    p = torch.softmax(s, dim=-1)
    h = torch.softmax(x.half(), dim=-1)
    q = torch.log(z)  # negative inputs give NaN
    torch.cuda.synchronize()
    digest = hashlib.sha256()
    for t in (y, z, p, h, q):
        digest.update(t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def main():
    if "--profile" in sys.argv:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            result = workload()
    else:
        result = workload()
    print(f"torch_smoke: {result}")


if __name__ == "__main__":
    main()
