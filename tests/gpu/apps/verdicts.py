"""Programs for nanscope's NaN-first verdicts (docs/origin.md#nan-first-verdicts), each with a
planted bug and a healthy twin, written the way users write them: Hugging Face models built from
configs with random weights, a hand-written loss, mean pooling, a Triton kernel, an FP8 step.

Usage: verdicts.py SCENARIO [--healthy]
  bert_mask      BERT encoder, SDPA, a padded batch: transformers fills its mask with -inf
                 (healthy only: no NaN anywhere)
  llama_mask     Llama (eager attention) with a user-built additive 4-D mask of float("-inf");
                 left padding makes query rows that see no key: softmax 0/0 (--healthy: right padding)
  gpt2_train     a GPT-2 training step in fp32 with AdamW; the mem-efficient attention writes +inf
                 into its logsumexp's padded tail by design (healthy only)
  xent           a hand-written cross entropy, log(softmax(logits / T)) * one_hot: T = 0.005
                 underflows to log(0) = -inf and 0 * -inf = NaN (--healthy: T = 1)
  pooling        BERT sentence embeddings, mean pooling over content tokens: an empty document
                 divides 0 by 0 (--healthy: no empty document)
  skip_rows      a Triton kernel that returns early for rows with seq_lens == 0 writes into
                 torch.empty that recycles a block where an earlier softmax left NaN; eager, then
                 a CUDA graph replayed 3 times (--healthy: every row is real)
  fp8_amax       a decode step: attention over a padded batch (0/0 in padding rows, a watch with
                 seq_lens), a per-tensor FP8 amax, quantised logits (--healthy: no padding row)
  cupy_raw       an `extern "C"` RMS scale compiled by CuPy (NVRTC) divides a zero row by its
                 norm; torch reads its output through DLPack (--healthy: no zero row)
  cupy_passes    a CuPy kernel scales attention probabilities whose padding rows a softmax made
                 NaN: it only passes the NaN on (--healthy: no padding row)

The last stdout line is one JSON object: `checksum` (sha256 of the result's bytes), `nonfinite`
(its non-finite count) and `truth`: what a user would call the first cause (`kernel`: a regex,
`file`, `line`), `leak_line` / `spread_line` where the NaN left the padding rows, and `faults`
(whether the program makes NaN at all).
"""
import inspect
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

THIS = os.path.abspath(__file__)


def line_of(marker, path=THIS, source=None):
    """The line number of the line holding `marker` in `path` (or in `source`, numbered from its start)."""
    text = source if source is not None else open(path).read()
    for i, line in enumerate(text.splitlines(), 1):
        if marker in line:
            return i
    raise SystemExit(f"verdicts.py: marker {marker!r} not found in {path}")


def function_line(fn, pattern):
    """The file and line of the first line of function `fn` matching `pattern`."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if re.search(pattern, line):
            return inspect.getsourcefile(fn), start + i
    raise SystemExit(f"verdicts.py: {pattern!r} not in {fn.__qualname__}")


def result(out, truth):
    return {"checksum": common.checksum(out), "nonfinite": common.nonfinite(out), "truth": truth}


def bert(vocab=512):
    from transformers import AutoModel, BertConfig

    config = BertConfig(vocab_size=vocab, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=256, max_position_embeddings=64)
    torch.manual_seed(0)
    return AutoModel.from_config(config, attn_implementation="sdpa").to("cuda").eval()


def padded_batch(lengths, seq, vocab=512):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, vocab, (len(lengths), seq), generator=g)
    mask = torch.zeros(len(lengths), seq, dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, :n] = 1
        ids[row, n:] = 0
    return ids.cuda(), mask.cuda()


def bert_mask(healthy):
    model = bert()
    ids, mask = padded_batch((16, 9, 4, 12), 16)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask).last_hidden_state
    return result(out, {"faults": False})


def llama_mask(healthy):
    from transformers import AutoModelForCausalLM, LlamaConfig
    from transformers.models.llama import modeling_llama

    config = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").to("cuda").eval()
    b, t = 4, 16
    lengths = (16, 12, 9, 5)
    ids, keep = padded_batch(lengths, t)
    if not healthy:  # left padding: the real tokens at the end of each row
        ids = torch.stack([torch.roll(ids[r], t - n) for r, n in enumerate(lengths)])
        keep = torch.stack([torch.roll(keep[r], t - n) for r, n in enumerate(lengths)])
    # The user's additive mask: causal, and no padding key; -inf wherever a query must not look.
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device="cuda"))
    allowed = causal[None, None] & keep.bool()[:, None, None, :]
    mask = torch.zeros(b, 1, t, t, device="cuda").masked_fill(~allowed, float("-inf"))
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
    file, line = function_line(modeling_llama.eager_attention_forward, r"softmax\(")
    return result(logits, {"faults": not healthy, "kernel": r"softmax|SoftMax", "file": file, "line": line})


def gpt2_train(healthy):
    from transformers import AutoModelForCausalLM, GPT2Config

    config = GPT2Config(vocab_size=512, n_positions=64, n_embd=128, n_layer=2, n_head=4)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").to("cuda").train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, 512, (2, 50), generator=g).cuda()  # 50 queries: the LSE pads to 64
    for _ in range(2):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    return result(loss.detach().reshape(1), {"faults": False})


def xent(healthy):
    torch.manual_seed(0)
    proj = torch.nn.Linear(64, 100).cuda()
    x = torch.randn(32, 64, device="cuda", requires_grad=True)
    target = torch.randint(0, 100, (32,), device="cuda")
    temperature = 1.0 if healthy else 0.005
    logits = proj(x)
    probs = torch.softmax(logits / temperature, dim=-1)
    logp = torch.log(probs)  # VERDICTS_LOG
    one_hot = torch.nn.functional.one_hot(target, 100).float()
    loss = -(one_hot * logp).sum(-1).mean()
    loss.backward()
    return result(loss.detach().reshape(1), {"faults": not healthy, "kernel": r"log", "file": THIS,
                                              "line": line_of("# VERDICTS_LOG")})


def pooling(healthy):
    model = bert()
    lengths = (12, 7, 2, 9) if not healthy else (12, 7, 3, 9)  # 2 tokens: [CLS] [SEP], no content
    ids, mask = padded_batch(lengths, 16)
    content = mask.clone()
    content[:, 0] = 0  # [CLS]
    for row, n in enumerate(lengths):
        content[row, n - 1] = 0  # [SEP]
    with torch.no_grad():
        h = model(input_ids=ids, attention_mask=mask).last_hidden_state
        m = content.unsqueeze(-1).float()
        emb = (h * m).sum(1) / m.sum(1)  # VERDICTS_POOL
    return result(emb, {"faults": not healthy, "kernel": r"div|Div", "file": THIS, "line": line_of("# VERDICTS_POOL")})


def skip_rows(healthy):
    import triton
    import triton.language as tl

    @triton.jit
    def scale_real_rows(x_ptr, out_ptr, seq_lens_ptr, D: tl.constexpr):
        row = tl.program_id(0)
        if tl.load(seq_lens_ptr + row) == 0:
            return  # padding rows are not written
        cols = tl.arange(0, D)
        tl.store(out_ptr + row * D + cols, tl.load(x_ptr + row * D + cols) * 2.0)

    torch.manual_seed(0)
    rows, d = 16, 256
    seq_lens = torch.tensor([7] * 12 + ([0] * 4 if not healthy else [3] * 4), device="cuda", dtype=torch.int32)
    x = torch.randn(rows, d, device="cuda")
    # An earlier step's scores: 0/0 in the padding rows (exp(-inf) summed to 0).
    scores = torch.randn(rows, d, device="cuda")
    scores[12:] = float("-inf") if not healthy else 0.0
    stale = torch.softmax(scores, dim=-1)  # VERDICTS_STALE
    stale_ptr = stale.data_ptr()
    del stale
    out = torch.empty(rows, d, device="cuda")  # recycles the softmax's block
    if out.data_ptr() != stale_ptr:
        raise SystemExit("verdicts.py skip_rows: the allocator did not recycle the block; the program is not the one meant")
    scale_real_rows[(rows,)](x, out, seq_lens, D=d)
    torch.cuda.synchronize()
    first = out.clone()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        with torch.cuda.graph(g):
            scale_real_rows[(rows,)](x, out, seq_lens, D=d)
    torch.cuda.current_stream().wait_stream(s)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    return result(torch.cat([first, out]), {"faults": not healthy, "kernel": r"softmax|SoftMax", "file": THIS,
                                            "line": line_of("# VERDICTS_STALE"), "preexisting": "scale_real_rows"})


def fp8_amax(healthy):
    # The watch is the user's, as the seed's users write it; the plain (truth) run has no nanscope.
    nanscope = None
    if os.environ.get("CUDA_INJECTION64_PATH"):
        import nanscope
    torch.manual_seed(0)
    rows, heads, d, vocab = 16, 4, 64, 512
    seq_lens = torch.tensor([9] * 14 + ([0] * 2 if not healthy else [5] * 2), device="cuda", dtype=torch.int32)
    q = torch.randn(rows, heads, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(rows, 16, heads, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(rows, 16, heads, d, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(heads * d, vocab, device="cuda", dtype=torch.bfloat16)
    attn_out = torch.empty(rows, heads * d, device="cuda", dtype=torch.bfloat16)
    watch = nanscope.watch(attn_out, name="attn_out", seq_lens=seq_lens) if nanscope else None
    keys = torch.arange(16, device="cuda")[None, :] < seq_lens[:, None]  # a row with seq_lens 0 sees no key
    scores = torch.einsum("rhd,rkhd->rhk", q, k).float() / d ** 0.5
    scores = scores.masked_fill(~keys[:, None, :], float("-inf"))
    p = torch.softmax(scores, dim=-1)  # VERDICTS_SOFTMAX
    attn_out.copy_(torch.einsum("rhk,rkhd->rhd", p.to(torch.bfloat16), v).reshape(rows, heads * d))
    amax = attn_out.abs().amax().float()  # VERDICTS_AMAX
    scale = 448.0 / amax
    x_fp8 = (attn_out.float() * scale).to(torch.float8_e4m3fn)
    logits = (x_fp8.float() / scale).to(torch.bfloat16) @ w
    torch.cuda.synchronize()
    if watch:
        watch.unwatch()
    return result(logits, {"faults": not healthy, "kernel": r"softmax|SoftMax", "file": THIS,
                           "line": line_of("# VERDICTS_SOFTMAX"), "leak_line": line_of("# VERDICTS_AMAX")})


# A user's RMS scale, compiled through CuPy/NVRTC as `extern "C"` (no parameter types in its name):
# without an epsilon, a zero row gives rsqrt(0) = inf and 0 * inf = NaN.
RMS_SCALE = r"""
extern "C" __global__ void rms_scale(const float* x, const float* w, float* y, int rows, int d) {
  const int r = blockIdx.x;
  if (r >= rows) return;
  float s = 0.f;
  for (int k = 0; k < d; ++k) s += x[r * d + k] * x[r * d + k];
  const float inv = rsqrtf(s / d);
  for (int k = threadIdx.x; k < d; k += blockDim.x) y[r * d + k] = x[r * d + k] * inv * w[k];
}
"""


def cupy_raw(healthy):
    try:
        import cupy
    except ImportError:
        print("verdicts: skip: no cupy")
        sys.exit(common.SKIP)
    rows, d = 16, 256
    x = cupy.random.RandomState(0).standard_normal((rows, d), dtype=cupy.float32)
    if not healthy:
        x[3] = 0  # a zero embedding: the padded token of a batch
    w = cupy.ones(d, dtype=cupy.float32)
    y = cupy.empty_like(x)
    rms = cupy.RawKernel(RMS_SCALE, "rms_scale")
    rms((rows,), (128,), (x, w, y, cupy.int32(rows), cupy.int32(d)))  # VERDICTS_CUPY
    cupy.cuda.get_current_stream().synchronize()
    proj = torch.randn(d, 64, device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    out = torch.from_dlpack(y) @ proj
    torch.cuda.synchronize()
    return result(out, {"faults": not healthy, "kernel": r"^rms_scale$", "file": THIS,
                        "line": line_of("# VERDICTS_CUPY"), "candidate": "rms_scale"})


# A user's row scale in CuPy, over attention probabilities torch computed: it only passes on
# what it is given.
ROW_SCALE = r"""
extern "C" __global__ void row_scale(const float* p, const float* g, float* y, int n, int d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = p[i] * g[i / d];
}
"""


def cupy_passes(healthy):
    try:
        import cupy
    except ImportError:
        print("verdicts: skip: no cupy")
        sys.exit(common.SKIP)
    torch.manual_seed(0)
    rows, keys = 16, 32
    seq_lens = torch.tensor([20] * 14 + ([0] * 2 if not healthy else [7] * 2), device="cuda")
    scores = torch.randn(rows, keys, device="cuda")
    scores = scores.masked_fill(torch.arange(keys, device="cuda")[None, :] >= seq_lens[:, None], float("-inf"))
    p = torch.softmax(scores, dim=-1)  # VERDICTS_PASSES: rows with seq_lens 0 see no key, 0/0
    gain = cupy.ones(rows, dtype=cupy.float32)
    y = cupy.empty((rows, keys), dtype=cupy.float32)
    scale = cupy.RawKernel(ROW_SCALE, "row_scale")
    scale(((rows * keys + 127) // 128,), (128,), (cupy.from_dlpack(p), gain, y, cupy.int32(rows * keys), cupy.int32(keys)))
    cupy.cuda.get_current_stream().synchronize()
    out = torch.from_dlpack(y) @ torch.randn(keys, 8, device="cuda")
    torch.cuda.synchronize()
    return result(out, {"faults": not healthy, "kernel": r"softmax|SoftMax", "file": THIS,
                        "line": line_of("# VERDICTS_PASSES"), "through": "row_scale"})


SCENARIOS = {f.__name__: f for f in (bert_mask, llama_mask, gpt2_train, xent, pooling, skip_rows, fp8_amax,
                                     cupy_raw, cupy_passes)}


def main():
    parser = common.arguments(__doc__)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--healthy", action="store_true")
    parser.add_argument("--no-reference", action="store_true", help="accepted for the shared runner; no reference pass")
    args = parser.parse_args()
    common.require_cuda("verdicts")
    print(common.json.dumps(SCENARIOS[args.scenario](args.healthy)))


if __name__ == "__main__":
    main()
