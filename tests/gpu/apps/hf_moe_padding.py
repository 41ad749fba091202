"""A Hugging Face Mixtral (mixture of experts; random weights from a config, bf16, 2 layers, 4
experts, top 2) on a left-padded batch of 4, with the realistic bug of hf_llama_padding.py: the
padding token's embedding row is zero (nn.Embedding's padding_idx) and RMSNorm runs without
epsilon (rms_norm_eps=0.0). In each padding row the first RMSNorm computes rsqrt(0 + 0) = +Inf
and 0 * Inf = NaN. The NaN rows then go through the router (softmax, top-k of NaN
probabilities) and the experts, and attention carries them into real rows.

The experts run the way transformers 5 runs them by default on a Hopper GPU,
`experts_implementation="grouped_mm"`: tokens sorted by expert (torch.sort), counted per expert
(torch.histc), gathered, multiplied by ATen's grouped GEMM (torch.nn.functional.grouped_mm, a
CUTLASS kernel), masked, weighted, scattered back (inv_perm[perm] = arange) and summed; or with
`experts_implementation="eager"`, a loop over the experts hit with index_add_.

Usage: hf_moe_padding.py MODE [--clean] [--no-reference]
  MODE            eager (grouped_mm experts), loop (eager experts: one_hot, where, index_add_),
                  graph (grouped_mm, one forward captured with torch.cuda.graph on static inputs,
                  replayed 3 times); attention is eager in every mode
  --clean         the same program with rms_norm_eps=1e-6: the logits must be finite
  --no-reference  skip the reference pass (the truth fields are null)

The last stdout line is one JSON object, as hf_llama_padding.py's: the logits' counts and
sha256, and the truth from a separate reference pass (forward hooks and an ATen op mode).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

APP = "hf_moe_padding"
BATCH, SEQ, HIDDEN, VOCAB, PAD_ID = 4, 16, 256, 512, 0
PAD_LENGTHS = (0, 3, 6, 10)  # 19 padding positions, 45 real ones
REPLAYS = 3
FIRST_NORM = "model.layers.0.input_layernorm"
EXPERTS = {"eager": "grouped_mm", "graph": "grouped_mm", "loop": "eager"}


def build_model(experts, clean):
    from transformers import AutoModelForCausalLM, MixtralConfig

    config = MixtralConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=512, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                           num_local_experts=4, num_experts_per_tok=2, pad_token_id=PAD_ID,
                           rms_norm_eps=1e-6 if clean else 0.0)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", experts_implementation=experts)
    return model.to(device="cuda", dtype=torch.bfloat16).eval()


def batch():
    return common.left_padded_batch(BATCH, SEQ, VOCAB, PAD_ID, PAD_LENGTHS, seed=2)


forward = common.causal_lm_logits


def measured(mode, model, ids, mask):
    with torch.no_grad():
        if mode == "graph":
            prepared = common.additive_mask(mask, torch.bfloat16)
            logits = common.capture_and_replay(lambda: forward(model, ids, prepared), REPLAYS)
        else:
            logits = forward(model, ids, mask)
        torch.cuda.synchronize()
        return logits.clone()


def main():
    parser = common.arguments(__doc__)
    parser.add_argument("mode", choices=sorted(EXPERTS))
    parser.add_argument("--clean", action="store_true", help="rms_norm_eps=1e-6: finite logits")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference pass")
    args = parser.parse_args()
    common.require_cuda(APP)

    model = build_model(EXPERTS[args.mode], args.clean)
    experts = model.config._experts_implementation
    ids, mask = batch()
    logits = measured(args.mode, model, ids, mask)
    line = {"app": APP, "mode": args.mode, "clean": args.clean, "experts": experts,
            "logits_shape": list(logits.shape), "logits_nonfinite": common.nonfinite(logits),
            "logits_counts": common.counts(logits), "checksum": common.checksum(logits),
            "padding_positions": sum(PAD_LENGTHS), "truth": None}
    common.require_finite(APP, logits, args.clean)
    if not args.no_reference:
        line["truth"] = common.first_nonfinite(model, lambda: forward(model, ids, mask), described=(FIRST_NORM,))
    common.emit(line)


if __name__ == "__main__":
    main()
