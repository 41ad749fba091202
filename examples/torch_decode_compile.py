#!/usr/bin/env python3
"""torch_decode.py through torch.compile(mode="reduce-overhead") (Inductor + CUDA graph trees).

    python3 examples/torch_decode_compile.py [detect|fix|zero_padding|abort|off] [--split] [--bench N]
    nanscope --log run.jsonl -- python3 examples/torch_decode_compile.py detect

Inductor allocates its intermediates inside the CUDA graph pool, where their addresses are known
only after recording, and a watch must exist when the kernels are captured. What can be watched
are tensors whose addresses are fixed before compilation: the module's buffers. They are marked
with torch._dynamo.mark_static_address (as Hugging Face's static KV cache does), so CUDA graph
trees neither copy them nor refuse their in-place updates; the model writes attn_out, q_fp8 and
logits with copy_, which Inductor lowers to kernels that store into those buffers. The watches
(seq_lens spec) are declared before the first call, so the recorded graph carries the scans.

Fix mode needs --split: without it Inductor fuses the store of attn_out, the amax and the
quantisation into one kernel that reads its own registers, so zeroing the buffer comes too late
and the logits stay NaN. --split puts a graph break after the attention; the second graph reads
attn_out from memory and the logits come out finite.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import nanscope  # noqa: E402
import torch_decode as td  # noqa: E402

WARMUP_CALLS = 3  # CUDA graph trees: warm-up run(s), then record, then replay


def main(argv=None):
    prog = "torch_decode_compile"
    argv = list(sys.argv[1:] if argv is None else argv)
    split = "--split" in argv
    if split:
        argv.remove("--split")
    args, torch = td.setup(prog, argv)
    if torch is None:
        return 0
    model = td.make_model(torch, out_variant=False, split=split)
    for buf in model.buffers():
        torch._dynamo.mark_static_address(buf)
    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=not split)

    with torch.no_grad():
        # Watches first: the graph recorded on a later call must carry the scans.
        watches, scope = td.declare_watches(torch, model, args)
        for _ in range(WARMUP_CALLS):  # every row real: no NaN while compiling and recording
            td.fill_inputs(torch, model, 0, td.B)
            compiled()
        torch.cuda.synchronize()
        print(f"{prog}: compiled and recorded after {WARMUP_CALLS} calls (split={int(split)})", flush=True)
        all_finite = td.replay_steps(torch, prog, model, args, compiled, "call")
    td.finish(prog, args, watches, scope, all_finite)
    return 0


if __name__ == "__main__":
    sys.exit(main())
