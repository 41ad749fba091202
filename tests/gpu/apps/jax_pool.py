"""A jitted JAX MLP step with default settings (XLA preallocates 75% of the GPU as one BFC pool,
and autotunes its GEMMs with redzone and comparison kernels), with a planted NaN: log(x - 1) of
activations below 1 (--healthy: log(x + 1) of non-negative ones).

Usage: jax_pool.py [--healthy]
The last stdout line is one JSON object: `checksum` (sha256 of the result's bytes), `nonfinite`
(its non-finite count) and `finite_sum` (the sum of its finite values: XLA's autotuner may pick
another GEMM algorithm from one process to the next, so two plain runs need not be bit-identical).
"""
import sys

from jax_common import jax_on_gpu, print_truth


def main():
    healthy = "--healthy" in sys.argv[1:]
    jax, jnp = jax_on_gpu("jax_pool")
    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    x = jax.random.normal(k1, (256, 512), jnp.float32)
    w1 = jax.random.normal(k2, (512, 1024), jnp.float32) * 0.05
    w2 = jax.random.normal(k3, (1024, 128), jnp.float32) * 0.05

    @jax.jit
    def step(x, w1, w2):
        h = jax.nn.relu(x @ w1)
        h = jnp.log(h + 1.0) if healthy else jnp.log(h - 1.0)  # the planted NaN: log of values below 1
        return h @ w2

    out = step(x, w1, w2)
    out = step(x, w1, w2).block_until_ready()
    print_truth(jax, jnp, out)


if __name__ == "__main__":
    main()
