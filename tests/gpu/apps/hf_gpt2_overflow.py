"""A Hugging Face GPT-2 (random weights from a config, fp16, 2 layers) whose first MLP
up-projection overflows: transformer.h[0].mlp.c_fc.weight (a Conv1D, so torch.addmm, a cuBLAS
GEMM) is scaled by a power of two large enough that its largest outputs pass fp16's 65,504 and
become Inf, the way an fp16 checkpoint with one badly scaled weight (a bad merge, a wrong
quantisation scale) does. GELU then turns -Inf into NaN and c_proj spreads it over every row.

Usage: hf_gpt2_overflow.py MODE [--clean] [--no-reference] [--steps N]
  MODE            eager, graph (one forward captured with torch.cuda.graph on static inputs,
                  replayed 3 times) or compile (torch.compile, default mode), all with
                  attn_implementation="eager"
  --clean         the same program without the scaling: the logits must be finite
  --no-reference  skip the reference pass (the truth fields are null)
  --steps N       eager: run the forward N times on the same batch, each read back as a serving
                  loop reads its tokens (common.steps); graph: replay N times (not 3), each read
                  back; the logits are the last step's

The scale is found without ever running an overflowing forward: a clean forward measures the
c_fc output; since scaling the weight by 2^k scales that GEMM's output by exactly 2^k (its bias
is zero), 2^k is the smallest power of two that overflows the largest output, times 2. The same
clean output bounds the Inf counts of any GEMM that computes the scaled product
(`gemm_inf_bounds`, [least, most] per sign): only outputs within 2^-10 of the threshold may
round either way.

The last stdout line is one JSON object: the logits' shape, non-finite counts and sha256 of
their bytes, the scale exponent and the Inf bounds, and the truth from a separate reference pass
run after the measured one (eager, forward hooks and an ATen op mode): the first module and ATen
op that wrote a non-finite value, and `gemm`: the c_fc GEMM output's shape, numel, dtype and Inf
counts.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

APP = "hf_gpt2_overflow"
BATCH, SEQ, VOCAB = 4, 32, 512
FP16_OVERFLOW = 65520.0  # the smallest magnitude that rounds to Inf in fp16
GEMM = "transformer.h.0.mlp.c_fc"
REPLAYS = 3


def build_model():
    from transformers import AutoModelForCausalLM, GPT2Config

    config = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=256, n_layer=2, n_head=4,
                        bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)
    torch.manual_seed(0)
    # Eager attention in every mode: under stream capture (and tracing) transformers' sdpa path
    # builds the boolean causal mask that it skips in eager runs, and torch turns it into an
    # additive one with -Inf, so a captured clean forward would write -Inf and differ from its
    # eager reference. The eager attention's mask uses finfo(fp16).min in every mode.
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    return model.to(device="cuda", dtype=torch.float16).eval()


def forward(model, ids, mask=None):
    return model(input_ids=ids, attention_mask=mask, use_cache=False).logits


def plan_overflow(model, ids):
    """From a clean forward's c_fc output: the exponent k such that 2^k * max|output| is at least
    twice the fp16 overflow threshold, and the bounds on the Inf counts that any GEMM computing
    the scaled product must give. An fp16 output is within 2^-11 of the fp32 sum it rounds, and
    another summation order (another cuBLAS kernel, as under torch.compile) moves that sum far
    less, so an output that lands within 2^-10 of the threshold may go either way; the others
    cannot."""
    outputs = []
    c_fc = model.get_submodule(GEMM)
    handle = c_fc.register_forward_hook(lambda m, i, out: outputs.append(out.float()))
    with torch.no_grad():
        forward(model, ids)
    handle.remove()
    clean = outputs[0]
    exponent = math.ceil(math.log2(FP16_OVERFLOW / clean.abs().max().item())) + 1
    scaled = clean * 2.0 ** exponent
    sure, maybe = FP16_OVERFLOW * (1 + 2 ** -10), FP16_OVERFLOW * (1 - 2 ** -10)
    bounds = {"pos_inf": [int((scaled >= sure).sum()), int((scaled >= maybe).sum())],
              "neg_inf": [int((scaled <= -sure).sum()), int((scaled <= -maybe).sum())]}
    return exponent, bounds


def main():
    parser = common.arguments(__doc__)
    parser.add_argument("mode", choices=("eager", "graph", "compile"))
    parser.add_argument("--clean", action="store_true", help="no scaling: finite logits")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference pass")
    parser.add_argument("--steps", type=int, default=1, help="eager: the forward N times; graph: N replays; each read back, as a serving loop")
    args = parser.parse_args()
    common.require_cuda(APP)

    model = build_model()
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(1)).cuda()
    exponent, bounds = None, None
    if not args.clean:
        exponent, bounds = plan_overflow(model, ids)
        with torch.no_grad():
            model.get_submodule(GEMM).weight.mul_(2.0 ** exponent)  # exact: a power of two
    with torch.no_grad():
        if args.mode == "eager":
            logits = common.steps(lambda: forward(model, ids), args.steps)
        elif args.mode == "graph":
            # The causal mask prepared (no padding): transformers would build it from a host
            # scalar inside the capture, which capture forbids; a 4-D mask is used as given.
            prepared = common.additive_mask(torch.ones_like(ids), torch.float16)
            logits = common.capture_and_replay(lambda: forward(model, ids, prepared),
                                               args.steps if args.steps > 1 else REPLAYS, read_each=args.steps > 1)
        else:
            logits = common.compiled_calls(model, lambda m: forward(m, ids), "default")
        torch.cuda.synchronize()
        logits = logits.clone()
    line = {"app": APP, "mode": args.mode, "clean": args.clean, "scale_exponent": exponent,
            "gemm_inf_bounds": bounds,
            "logits_shape": list(logits.shape), "logits_nonfinite": common.nonfinite(logits),
            "logits_counts": common.counts(logits), "checksum": common.checksum(logits), "truth": None}
    common.require_finite(APP, logits, args.clean)
    if not args.no_reference:
        found = common.first_nonfinite(model, lambda: forward(model, ids), described=(GEMM,))
        line["truth"] = {"first_module": found["first_module"], "first_op": found["first_op"],
                         "gemm": found["outputs"][GEMM]}
    common.emit(line)


if __name__ == "__main__":
    main()
