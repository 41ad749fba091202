"""A Hugging Face decoder (Llama built from a config: random weights, bf16, 8 layers) timed in
the two ways a server runs it: an eager forward (prefill), and one decode step against a static
KV cache captured as a CUDA graph and replayed, at batch 8 and 64. Times are CUDA-event medians.

Usage: hf_bench.py CASE[,CASE...] [--reps N]
  CASE     eager (forward of 4 x 512 tokens), graph-b8 or graph-b64 (one decode token per
           sequence, 512 cached, one replay of the captured step); several, comma-separated, run
           in turn on one model in one process (bench/alternate.py --together: the model is
           built once, which is most of a process's 20 s)
  --reps   timed repetitions (default 50); the median is printed

Prints one line per case, `name mode key=value`, mode `nanscope` when CUDA_INJECTION64_PATH is
set and `plain` otherwise, the format bench/run_benchmarks.sh compares.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_timing import capture_graph, median_ms  # noqa: E402

PREFILL_BATCH, PREFILL_LEN, CACHED = 4, 512, 512


def build_model():
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                         num_attention_heads=16, num_key_value_heads=8, max_position_embeddings=2048)
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config).to(device="cuda", dtype=torch.bfloat16).eval()


def eager_forward(model, reps):
    ids = torch.randint(0, model.config.vocab_size, (PREFILL_BATCH, PREFILL_LEN), device="cuda")
    return median_ms(lambda: model(input_ids=ids, use_cache=False), reps)


def capture_decode(model, batch, replays):
    """Prefill CACHED tokens into a StaticCache, then capture the next token's step as a CUDA graph
    and return it. The cache's write position lives on the device and advances with every step
    (replays included), so the cache has room for the 2 warm-up steps and `replays` replays; the
    query position stays at CACHED, so each step attends over the same CACHED + 1 keys, as a
    server's padded step does."""
    from transformers import StaticCache

    cache = StaticCache(config=model.config, max_cache_len=CACHED + 2 + replays)
    prompt = torch.randint(0, model.config.vocab_size, (batch, CACHED), device="cuda")
    model(input_ids=prompt, past_key_values=cache)
    token = torch.randint(0, model.config.vocab_size, (batch, 1), device="cuda")
    position = torch.full((batch, 1), CACHED, device="cuda")

    def step():
        return model(input_ids=token, past_key_values=cache, position_ids=position).logits

    return capture_graph(step)


def graph_decode(model, batch, reps):
    """Median milliseconds of one replay of the captured decode step (capture_decode)."""
    graph = capture_decode(model, batch, 3 + reps)  # median_ms's warm-up replays, timed replays
    return median_ms(graph.replay, reps)


CASES = ("eager", "graph-b8", "graph-b64")


def cases(text):
    """CASE[,CASE...] -> the list, each one of CASES."""
    names = text.split(",")
    if not all(n in CASES for n in names):
        raise argparse.ArgumentTypeError(f"{text!r}: want one or more of {', '.join(CASES)}, comma-separated")
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", type=cases, help="eager, graph-b8, graph-b64, or several comma-separated")
    parser.add_argument("--reps", type=int, default=50)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("hf_bench: no CUDA device", file=sys.stderr)
        sys.exit(1)
    mode = "nanscope" if os.environ.get("CUDA_INJECTION64_PATH") else "plain"
    model = build_model()
    with torch.no_grad():
        for case in args.case:
            if case == "eager":
                ms = eager_forward(model, args.reps)
                print(f"hf_llama_eager_forward {mode} ms={ms:.3f}", flush=True)
            else:
                batch = int(case.removeprefix("graph-b"))
                ms = graph_decode(model, batch, args.reps)
                print(f"hf_llama_graph_decode_b{batch} {mode} us_per_replay={ms * 1000:.2f}", flush=True)


if __name__ == "__main__":
    main()
