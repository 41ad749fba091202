"""torch.isnan(x).any() on the same shapes as scan_bench, for comparison (CUDA events, median)."""
import torch


def median_ms(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


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
