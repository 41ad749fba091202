"""A jitted JAX SGD loop whose parameters are donated (donate_argnums): XLA writes the new
parameters into the old ones' buffers. The planted NaN: a sqrt of a negative learning-rate
schedule value on step 3 (--healthy: its absolute value).

Usage: jax_donate.py [--healthy]
The last stdout line is one JSON object: `checksum`, `nonfinite` and `finite_sum`, as in
jax_pool.py.
"""
import sys

from jax_common import jax_on_gpu, print_truth


def main():
    healthy = "--healthy" in sys.argv[1:]
    jax, jnp = jax_on_gpu("jax_donate")
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    w = jax.random.normal(k1, (256, 64), jnp.float32) * 0.05
    x = jax.random.normal(k2, (128, 256), jnp.float32)
    y = jax.random.normal(k3, (128, 64), jnp.float32)

    def loss(w, x, y):
        return jnp.mean((x @ w - y) ** 2)

    @jax.jit
    def step(w, x, y, lr):
        g = jax.grad(loss)(w, x, y)
        scale = jnp.sqrt(jnp.abs(lr) if healthy else lr)  # the planted NaN: sqrt of a negative rate
        return w - scale * g

    step = jax.jit(step, donate_argnums=(0,))
    for i in range(6):
        lr = jnp.float32(-0.01 if i == 3 else 0.01)
        w = step(w, x, y, lr)
    w = w.block_until_ready()
    print_truth(jax, jnp, w)


if __name__ == "__main__":
    main()
