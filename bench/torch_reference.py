"""torch.isnan(x).any() on the same shapes as scan_bench, for comparison (CUDA events, median)."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_timing import median_ms  # noqa: E402


for dtype, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
    x = torch.randn((1 << 30) // torch.tensor([], dtype=dtype).element_size(), device="cuda", dtype=dtype)
    ms = median_ms(lambda: torch.isnan(x).any())
    print(f"torch.isnan(x).any() 1 GiB {name}: {ms:.3f} ms, {(1 << 30) / ms / 1e9:.2f} TB/s")
    del x

x = torch.randn(16, 128, 512, device="cuda", dtype=torch.bfloat16)
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    g = torch.cuda.CUDAGraph()
    out = None
    with torch.cuda.graph(g, stream=s):
        for _ in range(100):
            out = torch.isnan(x).any()
torch.cuda.synchronize()
ms = median_ms(lambda: g.replay())
print(f"torch.isnan(x).any() [16,128,512] bf16 in a graph: {ms * 1000 / 100:.2f} us per call")
