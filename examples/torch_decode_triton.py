#!/usr/bin/env python3
"""torch_decode.py with the attention softmax as a user-written Triton kernel.

    python3 examples/torch_decode_triton.py [detect|fix|zero_padding|abort|off] [--bench N]
    nanscope --log run.jsonl -- python3 examples/torch_decode_triton.py detect

`masked_softmax` writes probabilities for B*H rows of T keys into the static buffer `p_buf`
(fp32 [8, H*T]); a row whose seq_len is 0 is all -inf, so exp(-inf - -inf) = NaN. nanscope cannot
type a Triton kernel's parameters, but a watch matches its pointer arguments: `p_buf` is watched
with seq_lens (and the given action), like attn_out, q_fp8 and logits downstream. With `fix` the
padding rows of `p_buf` are zeroed right after the Triton kernel, inside the CUDA graph, and the
logits come out finite.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import nanscope  # noqa: E402
import torch_decode as td  # noqa: E402


def main(argv=None):
    prog = "torch_decode_triton"
    args, torch = td.setup(prog, argv)
    if torch is None:
        return 0
    import triton
    import triton.language as tl

    @triton.jit
    def masked_softmax(out_ptr, scores_ptr, seq_lens_ptr, heads, T: tl.constexpr, BLOCK: tl.constexpr):
        row = tl.program_id(0)  # batch row * heads + head
        length = tl.load(seq_lens_ptr + row // heads)
        cols = tl.arange(0, BLOCK)
        s = tl.load(scores_ptr + row * T + cols, mask=cols < T, other=float("-inf"))
        s = tl.where(cols < length, s, float("-inf"))
        m = tl.max(s, axis=0)
        e = tl.exp(s - m)  # seq_len 0: -inf - -inf = NaN
        tl.store(out_ptr + row * T + cols, e / tl.sum(e, axis=0), mask=cols < T)

    model = td.make_model(torch)
    # The static buffer the Triton kernel writes: B rows of H*T probabilities.
    model.register_buffer("p_buf", torch.zeros(td.B, td.H * td.T, device="cuda", dtype=torch.float32))
    torch_probs = model.probs

    def triton_probs(scores, seq_lens):
        if seq_lens is not model.seq_lens:  # the reference (clamped seq_lens): plain PyTorch
            return torch_probs(scores, seq_lens)
        masked_softmax[(td.B * td.H,)](model.p_buf, scores.contiguous(), seq_lens, td.H, T=td.T,
                                       BLOCK=triton.next_power_of_2(td.T))
        return model.p_buf.view(td.B, td.H, 1, td.T)

    model.probs = triton_probs  # the warm-up before capture also compiles the kernel
    return td.run_graph(torch, prog, model, args, extra=[("probs", model.p_buf, None)])


if __name__ == "__main__":
    sys.exit(main())
