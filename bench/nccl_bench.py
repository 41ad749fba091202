#!/usr/bin/env python3
"""NCCL under nanscope (issue 21): the bus bandwidth of 64 MB bf16 all_reduces and the step time
of a tensor-parallel MLP (column-sharded W1, row-sharded W2, one all_reduce), each without and
with nanscope attached (the launcher in front of torch.distributed.run, as a user would).

  python3 bench/nccl_bench.py --nanscope .stage/bin/nanscope [--nproc 2]

Needs 2 GPUs for the real figures. With one GPU it measures the one-rank all_reduce (AVG, which
makes NCCL run its one-rank reduction kernel) and a one-rank MLP step as a stand-in, and says so:
those have no inter-GPU traffic. NVLink multicast stays off (NCCL_NVLS_ENABLE=0 ...).
Prints one JSON line per configuration and a table with the ratios (goal <= 1.05x)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

NCCL_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def worker(args):
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    op = dist.ReduceOp.AVG if world == 1 else dist.ReduceOp.SUM

    def timed(fn, iters, warmup=5):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        return begin.elapsed_time(end) / iters * 1e-3  # seconds per call

    x = torch.ones(args.mbytes * (1 << 20) // 2, dtype=torch.bfloat16, device=device)
    t_ar = timed(lambda: dist.all_reduce(x, op=op), args.iters)
    nbytes = x.numel() * x.element_size()
    algbw = nbytes / t_ar / 1e9
    busbw = algbw * 2 * (world - 1) / world if world > 1 else None

    g = torch.Generator(device="cpu").manual_seed(0)
    d, hidden, tokens = 4096, 16384, 4096
    shard = hidden // world
    w1 = (torch.randn(d, shard, generator=g) / d ** 0.5).to(device, torch.bfloat16)
    w2 = (torch.randn(shard, d, generator=g) / hidden ** 0.5).to(device, torch.bfloat16)
    inp = torch.randn(tokens, d, generator=g).to(device, torch.bfloat16)

    def step():
        y = torch.nn.functional.gelu(inp @ w1) @ w2
        dist.all_reduce(y, op=op)

    t_mlp = timed(step, args.steps)
    if rank == 0:
        print(json.dumps({"world": world, "allreduce_bytes": nbytes, "allreduce_us": t_ar * 1e6,
                          "algbw_GBps": algbw, "busbw_GBps": busbw, "mlp_step_ms": t_mlp * 1e3}), flush=True)
    dist.destroy_process_group()


def launch(nproc, nanscope, args):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           os.path.abspath(__file__), "--worker", "--mbytes", str(args.mbytes), "--iters", str(args.iters),
           "--steps", str(args.steps)]
    if nanscope:
        logs = tempfile.mkdtemp(prefix="nccl_bench_")
        cmd = [nanscope, "-q", "--log", os.path.join(logs, "run-%r.jsonl"), "--", *cmd]
    p = subprocess.run(cmd, env=dict(os.environ, **NCCL_ENV), capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"nccl_bench: {' '.join(cmd)} exited {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    line = [l for l in p.stdout.splitlines() if l.startswith("{")][-1]
    return json.loads(line)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--nanscope", default=os.environ.get("NANSCOPE_BIN", ".stage/bin/nanscope"))
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--mbytes", type=int, default=64)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    import torch

    gpus = torch.cuda.device_count()
    nproc = min(args.nproc, gpus)
    if nproc < 1:
        sys.exit("nccl_bench: no GPU")
    if nproc < 2:
        print(f"nccl_bench: {gpus} GPU visible: measuring the ONE-rank all_reduce (NCCL's one-rank kernel) and a "
              "one-rank MLP step as a stand-in; there is no inter-GPU traffic and no bus bandwidth figure")
    rows = {}
    for label, tool in (("plain", None), ("nanscope", args.nanscope)):
        rows[label] = launch(nproc, tool, args)
        print(json.dumps({"config": label, **rows[label]}))
    a, b = rows["plain"], rows["nanscope"]
    print(f"\n{'metric':<28}{'plain':>12}{'nanscope':>12}{'ratio':>8}")
    if a["busbw_GBps"]:
        print(f"{'allreduce busbw GB/s':<28}{a['busbw_GBps']:>12.1f}{b['busbw_GBps']:>12.1f}"
              f"{a['busbw_GBps'] / b['busbw_GBps']:>7.3f}x")
    print(f"{'allreduce us (%d MB bf16)' % args.mbytes:<28}{a['allreduce_us']:>12.1f}{b['allreduce_us']:>12.1f}"
          f"{b['allreduce_us'] / a['allreduce_us']:>7.3f}x")
    print(f"{'MLP step ms (%d rank)' % nproc:<28}{a['mlp_step_ms']:>12.3f}{b['mlp_step_ms']:>12.3f}"
          f"{b['mlp_step_ms'] / a['mlp_step_ms']:>7.3f}x")


if __name__ == "__main__":
    main()
