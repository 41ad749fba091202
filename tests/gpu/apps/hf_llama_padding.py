"""A Hugging Face Llama (random weights from a config, bf16, 2 layers) on a left-padded batch of
4, with a realistic bug: the padding token's embedding row is zero (nn.Embedding's padding_idx
does that) and RMSNorm runs without epsilon (rms_norm_eps=0.0). In each padding row the first
RMSNorm computes rsqrt(mean(0^2) + 0) = +Inf and then 0 * Inf = NaN; attention carries the NaN
into real rows of the logits.

Usage: hf_llama_padding.py MODE [--clean] [--no-reference] [--steps N]
  MODE            eager, graph (one forward captured with torch.cuda.graph on static inputs,
                  replayed 3 times), compile (torch.compile, default mode), compile-ro
                  (mode="reduce-overhead"), all with attn_implementation="eager", or sdpa
                  (attn_implementation="sdpa", eager execution)
  --clean         the same program with rms_norm_eps=1e-6: the logits must be finite
  --no-reference  skip the reference pass (the truth fields are null)
  --steps N       eager, sdpa: run the forward N times on the same batch, each read back as a
                  serving loop reads its tokens (common.steps); graph: replay N times (not 3),
                  each read back; the logits are the last step's

The last stdout line is one JSON object: the logits' shape, non-finite counts and sha256 of
their bytes, and the truth from a separate reference pass run after the measured one (eager,
same attention implementation, forward hooks and an ATen op mode): the first module and the
first ATen op that wrote a non-finite value, with that op output's numel, dtype and counts.
`rmsnorm` gives the numels of the first RMSNorm's tensors (the rsqrt result is [B, T, 1], its
output [B, T, H]), the sizes a finding at a fused compiled kernel may have, and `truth.outputs`
that RMSNorm's output.

Only sdpa mode hands SDPA a boolean mask, which torch turns into an additive one with
where(~mask, -inf, 0): even --clean writes -Inf there, and the truth says so. The eager
attention's additive mask uses finfo(bf16).min, so the other clean modes write no non-finite
value at all; and under capture or compile transformers' sdpa path builds masks it skips in
eager runs, so only eager attention keeps graph and compiled runs the program their eager
reference ran.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

APP = "hf_llama_padding"
BATCH, SEQ, HIDDEN, VOCAB, PAD_ID = 4, 16, 256, 512, 0
PAD_LENGTHS = (0, 4, 7, 11)  # 22 padding positions, 42 real ones
REPLAYS = 3
FIRST_NORM = "model.layers.0.input_layernorm"


def build_model(attn, clean):
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         pad_token_id=PAD_ID, rms_norm_eps=1e-6 if clean else 0.0)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation=attn)
    return model.to(device="cuda", dtype=torch.bfloat16).eval()


def batch():
    return common.left_padded_batch(BATCH, SEQ, VOCAB, PAD_ID, PAD_LENGTHS, seed=1)


forward = common.causal_lm_logits


def measured(mode, model, ids, mask, steps=1):
    with torch.no_grad():
        if mode in ("eager", "sdpa"):
            logits = common.steps(lambda: forward(model, ids, mask), steps)
        elif mode == "graph":
            prepared = common.additive_mask(mask, torch.bfloat16)
            logits = common.capture_and_replay(lambda: forward(model, ids, prepared),
                                               steps if steps > 1 else REPLAYS, read_each=steps > 1)
        else:
            logits = common.compiled_calls(model, lambda m: forward(m, ids, mask),
                                           "reduce-overhead" if mode == "compile-ro" else "default")
        torch.cuda.synchronize()
        return logits.clone()


def main():
    parser = common.arguments(__doc__)
    parser.add_argument("mode", choices=("eager", "sdpa", "graph", "compile", "compile-ro"))
    parser.add_argument("--clean", action="store_true", help="rms_norm_eps=1e-6: finite logits")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference pass")
    parser.add_argument("--steps", type=int, default=1, help="eager, sdpa: the forward N times; graph: N replays; each read back, as a serving loop")
    args = parser.parse_args()
    common.require_cuda(APP)

    attn = "sdpa" if args.mode == "sdpa" else "eager"
    model = build_model(attn, args.clean)
    ids, mask = batch()
    logits = measured(args.mode, model, ids, mask, args.steps)
    line = {"app": APP, "mode": args.mode, "clean": args.clean, "attn": attn,
            "logits_shape": list(logits.shape), "logits_nonfinite": common.nonfinite(logits),
            "logits_counts": common.counts(logits), "checksum": common.checksum(logits),
            "padding_positions": sum(PAD_LENGTHS),
            "rmsnorm": {"rsqrt_numel": BATCH * SEQ, "out_numel": BATCH * SEQ * HIDDEN}, "truth": None}
    common.require_finite(APP, logits, args.clean)
    if not args.no_reference:
        line["truth"] = common.first_nonfinite(model, lambda: forward(model, ids, mask), described=(FIRST_NORM,))
    common.emit(line)


if __name__ == "__main__":
    main()
