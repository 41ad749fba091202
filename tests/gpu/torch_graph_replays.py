"""A decode-like step in a torch.cuda.CUDAGraph: matmul + masked softmax with padded rows in
bf16 (fully masked padding rows give 0/0 = NaN every replay), replayed N times. Prints a hash
of the real rows' output. With --compile, a small model through torch.compile(mode=
"reduce-overhead") instead.

Usage: torch_graph_replays.py [replays] [--compile]
"""
import hashlib
import sys

import torch


def decode_graph(replays):
    torch.manual_seed(0)
    B, H, D, KV = 16, 8, 64, 128
    q = torch.randn(B, H, 1, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(B, H, KV, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(B, H, KV, D, device="cuda", dtype=torch.bfloat16)
    seq_lens = torch.tensor([KV] * 12 + [0] * 4, device="cuda", dtype=torch.int32)
    pos = torch.arange(KV, device="cuda")

    def step():
        mask = pos[None, None, None, :] >= seq_lens[:, None, None, None]
        scores = (q @ k.transpose(-1, -2)).float().masked_fill(mask, float("-inf"))
        p = torch.softmax(scores, dim=-1)
        return (p.to(torch.bfloat16) @ v)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = step()
    for _ in range(replays):
        g.replay()
    torch.cuda.synchronize()
    real = out[:12].float().cpu().contiguous()
    return hashlib.sha256(real.numpy().tobytes()).hexdigest(), bool(torch.isnan(out[12:].float()).all())


def compiled_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256)).cuda()
    x = torch.randn(32, 256, device="cuda")
    f = torch.compile(model, mode="reduce-overhead")
    for _ in range(5):
        y = f(x)
    torch.cuda.synchronize()
    return hashlib.sha256(y.detach().cpu().numpy().tobytes()).hexdigest(), False


def main():
    if "--compile" in sys.argv:
        digest, nan_pad = compiled_model()
    else:
        replays = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 1000
        digest, nan_pad = decode_graph(replays)
    print(f"torch_graph_replays: {digest} padding_nan={int(nan_pad)}")


if __name__ == "__main__":
    main()
