"""A decode step captured in a CUDA graph whose padding NaN appears on one replay only, or on
every replay from that one on: the programs of issue 37's sentinel-tier tests (run by
tests/gpu/tier_tests.py).

One step, on graph-static buffers, as fp8_amax in verdicts.py writes it: attention over a padded
batch of 16 rows (a row with seq_lens 0 sees no key, so its softmax is 0/0), written into
`attn_out` (bf16, watched with seq_lens when nanscope is loaded), then a per-tensor FP8 amax whose
NaN scale spreads the padding rows' NaN into every real row, quantised logits. The step is
captured once (after two eager warm-ups on a side stream) and replayed REPLAYS times; seq_lens
lives on the device and is rewritten by a host copy between replays.

Usage: tier_replay7.py CASE [--replays N] [--at R]
  CASE       once:  the last two rows get seq_lens 0 before replay R, and their seq_lens come back
                    after it: NaN on replay R only
             every: the last two rows get seq_lens 0 before replay R and keep it: NaN on every
                    replay from R on
             clean: every row is real on every replay (the healthy twin)
  --replays  graph replays (default 14: replay R, the escalation window of 3, and room after)
  --at       the replay whose seq_lens first hold the padding rows (default 7, 0-based as
             nanscope counts replays)

The app synchronises after every replay and copies attn_out and the logits to the host (a copy,
no kernel: CPU-side counts, so nothing it does to check itself writes NaN on the GPU). The last
stdout line is one JSON object: `nan_replays` (the replays whose logits hold NaN),
`attn_padding_nan` per replay (NaN in attn_out's padding rows), the checksum of every replay's
logits, and the truth: the softmax's line (the first cause) and the amax's line (the leak point)
in this file.
"""
import hashlib
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

APP = "tier_replay7"
THIS = os.path.abspath(__file__)
ROWS, HEADS, D, KEYS, VOCAB = 16, 4, 64, 16, 512
PADDING_ROWS = 2  # the last two rows become padding


def line_of(marker):
    with open(THIS) as f:
        for n, line in enumerate(f, 1):
            if marker in line and "line_of(" not in line:
                return n
    raise SystemExit(f"{APP}: no line marked {marker}")


class Step:
    """The decode step's static buffers and its body (captured once)."""

    def __init__(self, watch):
        torch.manual_seed(0)
        self.q = torch.randn(ROWS, HEADS, D, device="cuda", dtype=torch.bfloat16)
        self.k = torch.randn(ROWS, KEYS, HEADS, D, device="cuda", dtype=torch.bfloat16)
        self.v = torch.randn(ROWS, KEYS, HEADS, D, device="cuda", dtype=torch.bfloat16)
        self.w = torch.randn(HEADS * D, VOCAB, device="cuda", dtype=torch.bfloat16)
        self.positions = torch.arange(KEYS, device="cuda")
        self.seq_lens = torch.full((ROWS,), 9, device="cuda", dtype=torch.int32)
        self.attn_out = torch.zeros(ROWS, HEADS * D, device="cuda", dtype=torch.bfloat16)
        self.logits = torch.zeros(ROWS, VOCAB, device="cuda", dtype=torch.bfloat16)
        # The user's watch, as the seed's users write it, declared before capture so its scans are
        # captured too; the plain (truth) run has no nanscope.
        self.watch = watch(self.attn_out, name="attn_out", seq_lens=self.seq_lens) if watch else None

    def __call__(self):
        keys = self.positions[None, :] < self.seq_lens[:, None]  # a row with seq_lens 0 sees no key
        scores = torch.einsum("rhd,rkhd->rhk", self.q, self.k).float() / D ** 0.5
        scores = scores.masked_fill(~keys[:, None, :], float("-inf"))
        p = torch.softmax(scores, dim=-1)  # TIER_SOFTMAX
        self.attn_out.copy_(torch.einsum("rhk,rkhd->rhd", p.to(torch.bfloat16), self.v).reshape(ROWS, HEADS * D))
        amax = self.attn_out.abs().amax().float()  # TIER_AMAX
        scale = 448.0 / amax
        x_fp8 = (self.attn_out.float() * scale).to(torch.float8_e4m3fn)
        self.logits.copy_((x_fp8.float() / scale).to(torch.bfloat16) @ self.w)

    def set_padding(self, on):
        """seq_lens by a host copy between replays (no kernel writes it)."""
        lens = torch.full((ROWS,), 9, dtype=torch.int32)
        if on:
            lens[ROWS - PADDING_ROWS:] = 0
        self.seq_lens.copy_(lens)
        torch.cuda.synchronize()


def padding_on(case, replay, at):
    return case == "every" and replay >= at or case == "once" and replay == at


def nan_count(host_tensor):
    return int(torch.isnan(host_tensor.float()).sum())  # on the host: no kernel


def run(case, replays, at):
    watch = None
    if os.environ.get("CUDA_INJECTION64_PATH"):
        import nanscope
        watch = nanscope.watch
    step = Step(watch)
    graph, _ = common.capture(step)
    torch.cuda.synchronize()
    digest = hashlib.sha256()
    nan_replays, attn_padding_nan = [], []
    padded = False
    for r in range(replays):
        want = padding_on(case, r, at)
        if want != padded:
            step.set_padding(want)
            padded = want
        graph.replay()
        torch.cuda.synchronize()  # a server syncs each step to sample the next token
        logits, attn = step.logits.cpu(), step.attn_out.cpu()
        digest.update(logits.view(torch.int16).numpy().tobytes())
        if nan_count(logits):
            nan_replays.append(r)
        attn_padding_nan.append(nan_count(attn[ROWS - PADDING_ROWS:]))
    if step.watch:
        step.watch.unwatch()
    return {"app": APP, "case": case, "replays": replays, "at": at, "nan_replays": nan_replays,
            "attn_padding_nan": attn_padding_nan, "checksum": digest.hexdigest(),
            "truth": {"faults": case != "clean", "kernel": r"softmax|SoftMax", "file": THIS,
                      "line": line_of("# TIER_SOFTMAX"), "leak_line": line_of("# TIER_AMAX"),
                      "padding_rows": [[ROWS - PADDING_ROWS, ROWS - 1]]}}


def expected_nan_replays(case, replays, at):
    """The replays whose logits must hold NaN: what the plain run is checked against."""
    return [r for r in range(replays) if padding_on(case, r, at)]


def main():
    parser = common.arguments(__doc__)
    parser.add_argument("case", choices=("once", "every", "clean"))
    parser.add_argument("--replays", type=int, default=14)
    parser.add_argument("--at", type=int, default=7)
    parser.add_argument("--no-reference", action="store_true", help="accepted for the shared runner; no reference pass")
    args = parser.parse_args()
    if not 0 <= args.at < args.replays:
        parser.error(f"--at {args.at} must name one of the {args.replays} replays")
    common.require_cuda(APP)
    line = run(args.case, args.replays, args.at)
    want = expected_nan_replays(args.case, args.replays, args.at)
    if line["nan_replays"] != want:
        print(f"{APP}: the program is not what it claims: NaN in replays {line['nan_replays']}, want {want}",
              file=sys.stderr)
        sys.exit(1)
    common.emit(line)


if __name__ == "__main__":
    main()
