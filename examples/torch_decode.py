#!/usr/bin/env python3
"""A decoder step over a padded batch, captured as a CUDA graph, watched by nanscope.

    python3 examples/torch_decode.py [detect|fix|zero_padding|abort|off] [--bench N] [--one-watch]
                                     [--global-padding]
    nanscope --log run.jsonl -- python3 examples/torch_decode.py detect

The batch is padded to B=8 rows; padding rows have seq_lens == 0. One step:
  1. attention with masked_fill(-inf) then softmax: a padding row is all -inf, so 0/0 = NaN;
     p @ V is written into the static buffer `attn_out` (bf16 [8, 256]);
  2. a per-tensor FP8-style quantisation: amax over the whole tensor (NaN propagates), scale =
     amax / 448, q = attn_out / scale into `q_fp8` (float8_e4m3fn): the padding NaN leaks into
     every real row;
  3. an MLP and the LM head into `logits` (fp32 [8, 512]).
The step is captured once with torch.cuda.CUDAGraph and replayed with 5, 3 and 8 real rows
(seq_lens and the input are static buffers updated in place before each replay).

nanscope watches attn_out (with the given action), q_fp8 and logits, all with seq_lens as the
padding spec (--global-padding also sets a global spec for typed kernel outputs). Expected: attn_out NaN in padding rows only; q_fp8 and logits NaN in real rows too (the
leak); with `fix` the padding rows of attn_out are zeroed inside the graph and the logits are
finite, equal to a reference that zeroes the padding rows by hand. `off` runs without nanscope
(the baseline for --bench).
"""
import argparse
import hashlib
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))  # the helper in this tree

import nanscope  # noqa: E402

B, H, DH, T, V = 8, 4, 64, 32, 512  # batch (padded), heads, head dim, keys, vocabulary
D, F = H * DH, 4 * H * DH
REAL_ROWS = (5, 3, 8)
E4M3_MAX = 448.0
ACTIONS = ("detect", "fix", "zero_padding", "abort", "off")


def make_model(torch, out_variant=True, split=False):
    """The decoder step as a module whose I/O lives in graph-static buffers.

    out_variant: bmm writes attn_out directly (out=); else attn_out.copy_(bmm(...)), which
    torch.compile traces. split: a torch.compile graph break after the attention, so the tail
    reads attn_out from memory (where nanscope's fix zeroed it) instead of a fused temporary.
    """

    class DecodeStep(torch.nn.Module):
        def __init__(self, device="cuda", dtype=torch.bfloat16):
            super().__init__()
            g = torch.Generator().manual_seed(0)

            def randn(*shape, scale=1.0, dt=dtype):
                return (torch.randn(*shape, generator=g) * scale).to(device=device, dtype=dt)

            self.dtype = dtype
            self.out_variant = out_variant
            self.split = split
            self.register_buffer("wq", randn(D, D, scale=D ** -0.5))
            self.register_buffer("wo", randn(D, D, scale=D ** -0.5))
            self.register_buffer("w1", randn(D, F, scale=D ** -0.5))
            self.register_buffer("w2", randn(F, D, scale=F ** -0.5))
            self.register_buffer("wlm", randn(D, V, scale=D ** -0.5, dt=torch.float32))
            self.register_buffer("k_cache", randn(B, H, T, DH))
            self.register_buffer("v_cache", randn(B, H, T, DH))
            self.register_buffer("positions", torch.arange(T, device=device))
            # Graph-static inputs and outputs.
            self.register_buffer("x", torch.zeros(B, D, device=device, dtype=dtype))
            self.register_buffer("seq_lens", torch.zeros(B, device=device, dtype=torch.int32))
            self.register_buffer("attn_out", torch.zeros(B, D, device=device, dtype=dtype))
            self.register_buffer("q_fp8", torch.zeros(B, D, device=device, dtype=torch.float8_e4m3fn))
            self.register_buffer("logits", torch.zeros(B, V, device=device, dtype=torch.float32))

        def scores(self):
            q = (self.x @ self.wq).view(B, H, 1, DH)
            return (q @ self.k_cache.transpose(-1, -2)).float() * DH ** -0.5  # [B, H, 1, T]

        def probs(self, scores, seq_lens):
            """Masked softmax: a row with seq_len 0 is all -inf, and softmax gives 0/0 = NaN."""
            mask = self.positions[None, :] >= seq_lens[:, None]  # [B, T], True = masked
            return torch.softmax(scores.masked_fill(mask[:, None, None, :], float("-inf")), dim=-1)

        def tail(self, attn):
            """FP8-style per-tensor quantisation (the leak), MLP, LM head."""
            amax = attn.abs().amax().float()  # NaN anywhere -> NaN scale
            scale = amax / E4M3_MAX
            self.q_fp8.copy_(attn.float() / scale)
            deq = (self.q_fp8.float() * scale).to(self.dtype)
            h = deq @ self.wo + self.x
            h = h + torch.relu(h @ self.w1) @ self.w2
            torch.mm(h.float(), self.wlm, out=self.logits)

        def forward(self):
            p = self.probs(self.scores(), self.seq_lens).to(self.dtype).view(B * H, 1, T)
            v = self.v_cache.view(B * H, T, DH)
            if self.out_variant:
                torch.bmm(p, v, out=self.attn_out.view(B * H, 1, DH))
            else:
                self.attn_out.copy_(torch.bmm(p, v).view(B, D))
            if self.split:
                torch._dynamo.graph_break()
            self.tail(self.attn_out)
            return self.logits

        @torch.no_grad()
        def reference(self, real):
            """The step with padding rows of the attention zeroed by hand (what `fix` should give)."""
            lens = self.seq_lens.clamp(min=1)  # no fully masked row: no NaN at all
            p = self.probs(self.scores(), lens)
            p[real:] = 0
            attn = torch.bmm(p.to(self.dtype).view(B * H, 1, T), self.v_cache.view(B * H, T, DH)).view(B, D)
            amax = attn.abs().amax().float()
            scale = amax / E4M3_MAX
            q = (attn.float() / scale).to(torch.float8_e4m3fn)
            h = (q.float() * scale).to(self.dtype) @ self.wo + self.x
            h = h + torch.relu(h @ self.w1) @ self.w2
            return h.float() @ self.wlm

    return DecodeStep()


def fill_inputs(torch, model, step, real):
    """Updates the static input buffers in place: `real` real rows, the rest padding."""
    g = torch.Generator().manual_seed(100 + step)
    x = torch.zeros(B, D)
    x[:real] = torch.randn(real, D, generator=g)
    lens = torch.zeros(B, dtype=torch.int32)
    lens[:real] = torch.randint(1, T + 1, (real,), generator=g, dtype=torch.int32)
    model.x.copy_(x.to(model.dtype))
    model.seq_lens.copy_(lens)


def digest(torch, t):
    data = bytes(t.contiguous().view(torch.uint8).flatten().tolist())
    return "0x" + hashlib.sha256(data).hexdigest()[:16]


def report(torch, prog, model, label, step, real):
    """Prints one line per step; returns True when the logits are finite.

    The logits are copied to the host first: a copy is no kernel, so the watch on them stays
    quiet (every kernel reading a watched buffer gets it scanned)."""
    logits = model.logits.cpu()
    ref = model.reference(real).cpu()
    finite = bool(torch.isfinite(logits).all())
    real_hash, ref_hash = digest(torch, logits[:real]), digest(torch, ref[:real])
    diff = (logits[:real] - ref[:real]).abs().max().item()
    close = torch.allclose(logits[:real], ref[:real], rtol=0.05, atol=0.05)  # torch.compile rounds differently
    print(f"{prog}: {label} {step} real_rows={real} logits_finite={int(finite)} real_rows_hash={real_hash} "
          f"reference_hash={ref_hash} match_reference={int(real_hash == ref_hash)} max_abs_diff={diff:.3g} "
          f"close_to_reference={int(close)}", flush=True)
    return finite


def parse_args(prog, argv):
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("action", nargs="?", default="detect", choices=ACTIONS,
                    help="action of the attn_out watch; off = no nanscope (baseline)")
    ap.add_argument("--bench", type=int, default=0, metavar="N", help="time N replays after the checks")
    ap.add_argument("--one-watch", action="store_true", help="watch attn_out only")
    ap.add_argument("--global-padding", action="store_true",
                    help="also set a global seq_lens spec for typed kernel outputs (PyTorch's softmax)")
    return ap.parse_args(argv)


def declare_watches(torch, model, args, extra=()):
    """Watches on the static buffers (declared before capture: the scans are captured too)."""
    if args.action == "off":
        return [], None
    downstream = "abort" if args.action == "abort" else "detect"
    watches = [nanscope.watch(model.attn_out, name="attn_out", seq_lens=model.seq_lens, action=args.action)]
    for name, tensor, action in extra:
        watches.append(nanscope.watch(tensor, name=name, seq_lens=model.seq_lens, action=action or args.action))
    if args.one_watch:
        return watches, None
    watches.append(nanscope.watch(model.q_fp8, name="q_fp8", seq_lens=model.seq_lens, action=downstream))
    watches.append(nanscope.watch(model.logits, name="logits", seq_lens=model.seq_lens, action=downstream))
    scope = None
    if args.global_padding:
        # Typed kernel outputs without a watch (PyTorch's softmax) get row verdicts from this spec.
        # Their extent is the rest of the caching allocator's segment, so the inferred rows are
        # only right when that extent is the tensor itself (see docs/python.md).
        scope = nanscope.padding(seq_lens=model.seq_lens)
    return watches, scope


def bench(torch, prog, run_once, n):
    for _ in range(10):
        run_once()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        run_once()
    end.record()
    torch.cuda.synchronize()
    print(f"{prog}: bench replays={n} us_per_replay={start.elapsed_time(end) * 1000.0 / n:.2f}", flush=True)


def finish(prog, args, watches, scope, all_finite):
    if args.action != "off":
        nanscope.flush()
        s = nanscope.stats()
        print(f"{prog}: nanscope {nanscope.version()} ({nanscope.library_path()}): launches={s['launches']} "
              f"scans={s['scans']} findings={s['findings']}", flush=True)
        for w in watches:
            w.unwatch()
        if scope is not None:
            scope.close()
    print(f"{prog}: action={args.action} all_logits_finite={int(all_finite)}", flush=True)


def setup(prog, argv):
    """Parses argv; returns (args, torch), or (args, None) without a CUDA device."""
    args = parse_args(prog, argv)
    import torch

    if not torch.cuda.is_available():
        print(f"{prog}: no CUDA device found: nothing to run")
        return args, None
    if args.action != "off":
        nanscope.enable()  # before the first CUDA allocation; under `nanscope --`, the injected library
    torch.backends.cuda.matmul.allow_tf32 = False
    return args, torch


def run_graph(torch, prog, model, args, extra=()):
    """Warm up, declare the watches, capture one step, replay it with 5, 3 and 8 real rows."""
    with torch.no_grad():
        # Warm up on a side stream with every row real (no NaN), as CUDA graph capture requires.
        fill_inputs(torch, model, 0, B)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()

        watches, scope = declare_watches(torch, model, args, extra)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model()
        all_finite = replay_steps(torch, prog, model, args, graph.replay, "replay")
    finish(prog, args, watches, scope, all_finite)
    return 0


def replay_steps(torch, prog, model, args, run_once, label):
    all_finite = True
    for step, real in enumerate(REAL_ROWS):
        fill_inputs(torch, model, step + 1, real)
        run_once()
        torch.cuda.synchronize()
        if args.action != "off":
            nanscope.flush()
        all_finite &= report(torch, prog, model, label, step, real)
    if args.bench:
        fill_inputs(torch, model, 1, REAL_ROWS[0])
        bench(torch, prog, run_once, args.bench)
    return all_finite


def main(argv=None):
    prog = "torch_decode"
    args, torch = setup(prog, argv)
    if torch is None:
        return 0
    return run_graph(torch, prog, make_model(torch), args)


if __name__ == "__main__":
    sys.exit(main())
