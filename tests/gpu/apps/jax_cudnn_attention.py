"""Jitted JAX attention through cuDNN (jax.nn.dot_product_attention with implementation="cudnn":
XLA's cuDNN fused attention, whose cuDNN functions XLA looks up with dlsym) over a padded batch,
then each sequence's mean output over its valid query rows. The sick program divides by the
sequence's length, which is 0 for the batch's padding sequence (0/0 = NaN in its row), as a padded
batch's bookkeeping often does; its twin divides by max(length, 1). The attention runs over every
position of every sequence, padding included, so cuDNN writes every row and its output is finite
in both (with sequence lengths cuDNN may leave padded rows unwritten, whose stale bytes would make
the twin's outcome depend on the pool's history).

Usage: jax_cudnn_attention.py [--healthy]
The last stdout line is one JSON object: `checksum`, `nonfinite` and `finite_sum`, as in
jax_pool.py. Exits 77 (skip) when this JAX cannot run cuDNN attention here.
"""
import sys

from jax_common import SKIP, jax_on_gpu, print_truth


def main():
    healthy = "--healthy" in sys.argv[1:]
    jax, jnp = jax_on_gpu("jax_cudnn_attention")
    b, t, h, d = 4, 128, 4, 64
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    q, k, v = (jax.random.normal(key, (b, t, h, d), jnp.bfloat16) for key in (k1, k2, k3))
    lengths = jnp.array([128, 100, 37, 0], jnp.int32)  # the last sequence is padding

    @jax.jit
    def pooled(q, k, v, lengths):
        att = jax.nn.dot_product_attention(q, k, v, implementation="cudnn")
        valid = jnp.arange(t)[None, :] < lengths[:, None]  # [b, t]
        summed = jnp.sum(jnp.where(valid[:, :, None, None], att.astype(jnp.float32), 0.0), axis=1)  # [b, h, d]
        count = jnp.maximum(lengths, 1) if healthy else lengths
        return summed / count[:, None, None].astype(jnp.float32)  # the planted NaN: 0/0 for the padding

    try:
        out = pooled(q, k, v, lengths).block_until_ready()
    except Exception as e:  # noqa: BLE001: this JAX, GPU or cuDNN has no cuDNN attention for it
        print(f"jax_cudnn_attention: skip: cuDNN attention not available: {type(e).__name__}: {str(e)[:300]}")
        sys.exit(SKIP)
    print_truth(jax, jnp, out)


if __name__ == "__main__":
    main()
