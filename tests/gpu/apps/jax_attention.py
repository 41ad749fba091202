"""Jitted JAX attention over a padded batch whose last sequence is empty (length 0), so its query
rows see no key. The sick program writes the attention by hand, as many users do: scores masked
with -inf, then jax.nn.softmax, which makes 0/0 = NaN in those rows (max is -inf, and
-inf - -inf is NaN). --healthy: the same batch through jax.nn.dot_product_attention
(implementation="xla"), which masks with the dtype's lowest finite value, so no NaN.

Usage: jax_attention.py [--healthy]
The last stdout line is one JSON object: `checksum` (sha256 of the result's bytes), `nonfinite`
and `finite_sum`, as in jax_pool.py.
"""
import sys

from jax_common import jax_on_gpu, print_truth


def main():
    healthy = "--healthy" in sys.argv[1:]
    jax, jnp = jax_on_gpu("jax_attention")
    b, t, h, d = 4, 64, 4, 32
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    q = jax.random.normal(k1, (b, t, h, d), jnp.float32)
    k = jax.random.normal(k2, (b, t, h, d), jnp.float32)
    v = jax.random.normal(k3, (b, t, h, d), jnp.float32)
    lengths = jnp.array([64, 40, 17, 0], jnp.int32)

    @jax.jit
    def attend(q, k, v, lengths):
        pos = jnp.arange(t)
        key_ok = pos[None, :] < lengths[:, None]                 # [b, t] keys inside the sequence
        mask = jnp.broadcast_to(key_ok[:, None, None, :], (b, h, t, t))
        if healthy:
            return jax.nn.dot_product_attention(q, k, v, mask=mask, implementation="xla")
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(jnp.float32(d))
        scores = jnp.where(mask, scores, -jnp.inf)               # the planted NaN: rows with no key
        probs = jax.nn.softmax(scores, axis=-1)
        return jnp.einsum("bhqk,bkhd->bqhd", probs, v)

    out = attend(q, k, v, lengths).block_until_ready()
    print_truth(jax, jnp, out)


if __name__ == "__main__":
    main()
