"""What the GPU test apps share: graph capture and compile runners, and the ground truth they
print, found without nanscope.

Each app runs its workload once (the measured pass) and then, unless --no-reference, a separate
reference pass that finds where the first non-finite value appeared: the first module (forward
hooks, in completion order, so the innermost module that made it) and the first ATen op (a
dispatch mode that checks every op's outputs). The reference pass runs after the measured pass
so that, under nanscope, the log's first findings come from the measured pass; the tests take
the truth from a plain run and pass --no-reference under nanscope.
"""
import argparse
import hashlib
import json
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

SKIP = 77  # the GPU test runner's "skipped"


def arguments(doc):
    """An argument parser whose --help prints the app's docstring."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def read_back(out):
    """What a serving loop does between steps: read something of the output to the host (here
    whether it is finite), which waits for the step."""
    out.isfinite().all().item()


def steps(step, n):
    """`step()` n times, each result read back to the host (a serving loop reads its next token
    before the next step), as the sentinel tier sees a NaN that recurs; the last result."""
    if n <= 1:
        return step()
    out = None
    for _ in range(n):
        out = step()
        read_back(out)
    return out


def require_cuda(app):
    if not torch.cuda.is_available():
        print(f"{app}: skip: no CUDA device")
        sys.exit(SKIP)


def counts(t):
    """Non-finite counts of a floating tensor, as nanscope's `counts` object names them."""
    f = t.detach().float()
    return {"nan": int(torch.isnan(f).sum()), "pos_inf": int(torch.isposinf(f).sum()),
            "neg_inf": int(torch.isneginf(f).sum())}


def nonfinite(t):
    return sum(counts(t).values())


def checksum(t):
    """sha256 of the tensor's raw bytes: bit-identical comparison, NaN payloads included."""
    raw = t.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes()
    return hashlib.sha256(raw).hexdigest()


def describe(t):
    return {"shape": list(t.shape), "numel": t.numel(), "dtype": str(t.dtype).removeprefix("torch."),
            "counts": counts(t)}


class FirstNonfiniteOp(TorchDispatchMode):
    """Records the first ATen op whose floating CUDA output holds a NaN or Inf (a CPU tensor, such
    as a wrapped scalar, is no kernel's output)."""

    def __init__(self):
        super().__init__()
        self.first = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.first is None:
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.is_cuda and t.is_floating_point() and t.numel() and nonfinite(t):
                    self.first = {"op": str(func), **describe(t)}
                    break
        return out


def first_nonfinite(model, forward, described=()):
    """Runs forward() once with module hooks and the op mode; returns the first module and op that
    wrote a non-finite value, and the outputs of the modules named in `described`."""
    first_module, outputs = [], {}

    def hook(name):
        def check(module, inputs, output):
            tensors = [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor) and t.is_floating_point()]
            if name in described:
                outputs[name] = describe(tensors[0])
            if not first_module and any(nonfinite(t) for t in tensors):
                first_module.append({"module": name, "class": type(module).__name__})
        return check

    handles = [m.register_forward_hook(hook(n)) for n, m in model.named_modules() if n]
    mode = FirstNonfiniteOp()
    try:
        with torch.no_grad(), mode:
            forward()
        torch.cuda.synchronize()
    finally:
        for h in handles:
            h.remove()
    return {"first_module": first_module[0] if first_module else None, "first_op": mode.first,
            "outputs": outputs}


def left_padded_batch(batch, seq, vocab, pad_id, pad_lengths, seed):
    """Left-padded input ids (random tokens from 1, seeded) and attention mask on the GPU, the way a
    tokenizer with padding_side="left" gives them: row r starts with pad_lengths[r] pad tokens."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    for row, pad in enumerate(pad_lengths):
        ids[row, :pad] = pad_id
        mask[row, :pad] = 0
    return ids.cuda(), mask.cuda()


def causal_lm_logits(model, ids, mask):
    """One forward of a transformers causal LM without a KV cache: its logits."""
    return model(input_ids=ids, attention_mask=mask, use_cache=False).logits


def additive_mask(mask, dtype):
    """The [B, 1, T, T] additive mask (0 where a query may attend, the dtype's lowest value
    elsewhere: causal and padding) that transformers builds from the 2-D mask on every forward.
    A CUDA graph captures it prepared: building it copies a host scalar, which capture forbids,
    and transformers uses a 4-D mask as given."""
    seq = mask.shape[-1]
    causal = torch.ones(seq, seq, dtype=torch.bool, device=mask.device).tril()
    allowed = causal[None, None, :, :] & mask.bool()[:, None, None, :]
    lowest = torch.finfo(dtype).min
    return torch.zeros(allowed.shape, dtype=dtype, device=mask.device).masked_fill(~allowed, lowest)


def capture(forward):
    """The serving pattern: warm up on a side stream, capture one forward with torch.cuda.graph on
    static inputs. Returns (the graph, the captured forward's output tensor)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            forward()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = forward()
    return graph, out


def capture_and_replay(forward, replays, read_each=False):
    """capture(forward), replayed `replays` times, each replay's output read back to the host when
    `read_each` (a serving loop reads its tokens: the sentinel tier escalates between replays).
    Returns the graph's output tensor."""
    graph, out = capture(forward)
    for _ in range(replays):
        graph.replay()
        if read_each:
            read_back(out)
    return out


def compiled_calls(module, forward, mode):
    """torch.compile(module, mode=mode), called three times: reduce-overhead records its CUDA graph
    on the second call and replays it from the third on."""
    compiled = torch.compile(module, mode=mode)
    for _ in range(3):
        out = forward(compiled)
    return out


def emit(line):
    """The truth line: the app's last stdout line, one JSON object."""
    print(json.dumps(line, sort_keys=True), flush=True)


def require_finite(app, output, clean):
    """A --clean run whose output is not finite is a broken app, not a finding: exit 1."""
    if clean and nonfinite(output):
        print(f"{app}: the clean run's output holds {counts(output)}", file=sys.stderr)
        sys.exit(1)
