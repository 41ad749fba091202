"""Range factories and the casting copy in a CUDA graph, the two kernel families of a Hugging Face
decode step that nanscope decodes from their closures (src/decode/aten_range.cpp, the casting
closure in src/decode/aten_elementwise.cpp; docs/aten-decoders.md):

- torch.arange(T, out=pos) of int64 positions: elementwise_kernel_with_index<int, arange ...
  {lambda()#4} (Long)>, an exact 8*T-byte write that holds no NaN;
- pos broadcast to [B, T, D] and copied into float: the non-contiguous dynamic-casting
  elementwise_kernel<128, 4, gpu_kernel_impl<direct_copy_kernel_cuda ... {lambda(float)#1}>>;
- torch.linspace into float (elementwise_kernel_with_index, a floating output: scanned);
- a float64 row broadcast to [B, D] and copied into float: the same casting copy, with NaN in
  the row under --plant (so its float output, B*D elements, holds B NaN).

Each of the first two runs right after a float kernel whose output lies above it in the graph's
pool, so a model that takes the integer output's pointer as "written to the end of the
allocation" must keep that scan in line before it.

Usage: torch_range_copy.py [--plant] [replays]
Prints: torch_range_copy: digest=<sha256 of the outputs> B=<B> D=<D>
"""
import hashlib
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

B, T, D = 4, 16, 64


def main():
    plant = "--plant" in sys.argv
    replays = next((int(a) for a in sys.argv[1:] if a.isdigit()), 3)
    common.require_cuda("torch_range_copy")
    torch.manual_seed(0)
    w = torch.randn(B, T, D).to("cuda")
    row_host = torch.randn(D, dtype=torch.float64)
    if plant:
        row_host[5] = float("nan")
    row = row_host.to("cuda")  # a host copy: no kernel wrote the NaN

    def step():
        pos = torch.empty(T, dtype=torch.long, device="cuda")
        posf = torch.empty(B, T, D, device="cuda")
        y = w * 2.0                                   # scanned; allocated above pos and posf
        torch.arange(T, out=pos)                      # int64 positions
        z = w * 3.0                                   # scanned; above posf
        posf.copy_(pos[None, :, None].expand(B, T, D))  # int64 -> float, broadcast: the casting copy
        ramp = torch.linspace(0.0, 1.0, D, device="cuda")
        out = posf * ramp + y - z
        bad = row[None, :].expand(B, D).float()       # float64 -> float, broadcast: the casting copy
        return out, bad

    out, bad = common.capture_and_replay(step, replays)
    torch.cuda.synchronize()
    digest = hashlib.sha256()
    for t in (out, bad):
        digest.update(t.detach().cpu().contiguous().numpy().tobytes())
    print(f"torch_range_copy: digest={digest.hexdigest()} B={B} D={D}")


if __name__ == "__main__":
    main()
