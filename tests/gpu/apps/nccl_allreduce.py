"""NCCL collectives under nanscope (issue 21), one process per rank under torchrun:

  python -m torch.distributed.run --nproc-per-node N nccl_allreduce.py [--workload allreduce|tp_graph]

allreduce: every rank fills a bf16 tensor with rank + 1 (a kernel), the planting rank (1, or 0
with one rank) writes one NaN into it, then all ranks all-reduce it in place (ReduceOp.AVG with
one rank: NCCL then runs its one-rank reduction kernel; SUM otherwise).
tp_graph: a 2-way tensor-parallel MLP (column-sharded W1, row-sharded W2, one all_reduce of the
partial outputs) captured in a torch.cuda.graph and replayed; the planting rank's input row 3
holds a NaN for the last replay.

Each rank prints one JSON line: rank, world, the output's checksum and counts, whether it
planted. --clean plants nothing. NVLink multicast stays off (the device rules)."""
import json
import os
import sys

for var, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[var] = value  # before NCCL initialises, whatever the caller set

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SKIP, arguments, checksum, counts  # noqa: E402


def setup():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if torch.cuda.device_count() <= local:
        print(f"nccl_allreduce: skip: rank {rank} needs GPU {local}, {torch.cuda.device_count()} visible")
        sys.exit(SKIP)
    device = torch.device("cuda", local)
    torch.cuda.set_device(device)
    # device_id: the communicator is made now (ncclCommInitRankConfig), not at the first collective.
    dist.init_process_group("nccl", device_id=device)
    return rank, world, device


def with_nan(t, index):
    """t with one NaN, as a whole new tensor (one kernel writes all of it, so the buffer's state is
    judged as a whole, not a one-element view inside it)."""
    flat = torch.arange(t.numel(), device=t.device).view(t.shape)
    return torch.where(flat == index, torch.tensor(float("nan"), dtype=t.dtype, device=t.device), t)


def allreduce(rank, world, device, plant, n=1 << 20):
    x = torch.full((n,), float(rank + 1), dtype=torch.bfloat16, device=device)
    if plant:
        x = with_nan(x, 12345)
    op = dist.ReduceOp.AVG if world == 1 else dist.ReduceOp.SUM
    dist.all_reduce(x, op=op)
    torch.cuda.synchronize()
    return x


def tp_graph(rank, world, device, plant, tokens=64, d=1024, hidden=4096):
    g = torch.Generator(device="cpu").manual_seed(0)
    w1 = (torch.randn(d, hidden, generator=g) / d ** 0.5).to(device, torch.bfloat16)
    w2 = (torch.randn(hidden, d, generator=g) / hidden ** 0.5).to(device, torch.bfloat16)
    shard = hidden // world
    w1, w2 = w1[:, rank * shard:(rank + 1) * shard].contiguous(), w2[rank * shard:(rank + 1) * shard].contiguous()
    x = torch.randn(tokens, d, generator=g).to(device, torch.bfloat16)

    def step():
        y = torch.nn.functional.gelu(x @ w1) @ w2
        dist.all_reduce(y)
        return y

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm-up outside the capture (NCCL and cuBLAS set themselves up)
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()
    for _ in range(3):
        graph.replay()
    if plant:
        x.copy_(with_nan(x, 3 * d + 7))  # the static input, in place: the graph reads it
    graph.replay()
    torch.cuda.synchronize()
    return out


def main():
    p = arguments(__doc__)
    p.add_argument("--workload", choices=["allreduce", "tp_graph"], default="allreduce")
    p.add_argument("--clean", action="store_true")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("nccl_allreduce: skip: no CUDA device")
        sys.exit(SKIP)
    rank, world, device = setup()
    plant_rank = 1 if world > 1 else 0
    plant = rank == plant_rank and not args.clean
    out = (allreduce if args.workload == "allreduce" else tp_graph)(rank, world, device, plant)
    print(json.dumps({"rank": rank, "world": world, "workload": args.workload, "planted": plant,
                      "plant_rank": plant_rank, "numel": out.numel(), "counts": counts(out),
                      "checksum": checksum(out)}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
