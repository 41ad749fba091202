#!/usr/bin/env python3
"""Writes synthetic nanscope/1 logs of a 4-rank job to DIR (run.rank0.jsonl .. run.rank3.jsonl), to
see `nanscope report`'s cross-rank join at work (docs/report.md, "Across ranks"):

  rank 1: init_weights introduces a NaN, then all_reduce #12 with its sendbuff non-finite;
  ranks 0, 2, 3: the all_reduce's recvbuff is non-finite, their own sendbuff finite (the library
  calls it `introduced` at the NCCL kernel); rank 0 then runs layer_norm on the result.

  python3 tests/report/make_rank_logs.py /tmp/ranks && nanscope report /tmp/ranks/run.rank*.jsonl

The same scenario, with its variants, is what tests/report/test_ranks.cpp checks.
"""
import json
import sys
from pathlib import Path

T0 = 1764513600000000000
COMM = "00000000c0ffee01"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def rank_log(rank, world=4):
    events, ids = [], iter(range(1, 100))

    def emit(event, t_us, **fields):
        e = {"schema": "nanscope/1", "event": event, "id": next(ids), "ts_ns": T0 + t_us * 1000,
             "pid": 2000 + rank, "rank": rank, "local_rank": rank, "world_size": world, **fields}
        events.append(e)
        return e["id"]

    def finding(t_us, kernel, ptr, **fields):
        return emit("nonfinite", t_us, device=rank, stream="0x0", kernel=kernel, kernel_mangled="_Z1kv",
                    buffer={"arg": 1, "ptr": ptr, "dtype": "f32", "elements": 4096},
                    counts={"nan": 4096, "pos_inf": 0, "neg_inf": 0}, first_index=0, last_index=4095, **fields)

    def call(send_state):
        return {"op": "all_reduce", "comm": COMM, "seq": 12, "rank": rank, "nranks": world,
                "peers": list(range(world)), "send_state": send_state, "role": "recv"}

    emit("start", 0, version="0.1.0", attach="preload", argv0="train.py")
    if rank == 1:
        k = finding(50, "init_weights(float*, int)", "0x7f4000000000", region="unknown", origin="introduced")
        finding(81, NCCL, "0x7f5000000000", region="unknown", origin="propagated", parents=[k], root=[k],
                collective=call("nonfinite"))
    else:
        recv = finding(80 + rank, NCCL, "0x7f5000000000", region="unknown", origin="introduced",
                       collective=call("finite"))
        if rank == 0:
            finding(120, "void layer_norm<float>(float*, float const*, int)", "0x7f6000000000", region="real",
                    origin="propagated", parents=[recv], root=[recv])
    emit("summary", 1000, launches=100, scans=100, findings=2, kernels_inspected=3, kernels_not_inspected=0,
         scans_dropped=0, overflow=0, counts={"nan": 0, "pos_inf": 0, "neg_inf": 0}, duration_ns=10**6)
    return "".join(json.dumps(e) + "\n" for e in events)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for rank in range(4):
        (out / f"run.rank{rank}.jsonl").write_text(rank_log(rank))
    print(f"wrote {out}/run.rank0.jsonl .. run.rank3.jsonl")


if __name__ == "__main__":
    main()
