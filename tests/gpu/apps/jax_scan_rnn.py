"""A recurrent network run over a sequence with jax.lax.scan, which XLA compiles into a while loop
(a kWhile thunk whose body's kernels run once per time step), with a normalised hidden state.
Sick: the normalisation divides by the hidden state's standard deviation with no epsilon, and the
state starts at zero, so the first step divides 0 by 0 and the recurrence carries the NaN through
every later step and the readout. The twin adds the epsilon.

With --dynamic the loop is a jax.lax.fori_loop whose trip count is an argument of the jitted
function, so XLA cannot unroll it: the form that becomes a CUDA conditional node when XLA's flags
put while loops into command buffers (--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL).

Usage: jax_scan_rnn.py [--healthy] [--dynamic]
The last stdout line is one JSON object: `checksum`, `nonfinite` and `finite_sum` of the outputs,
as in jax_pool.py.
"""
import sys

from jax_common import jax_on_gpu, print_truth

STEPS = 200  # long enough that XLA keeps the loop (it may unroll a short one)


def main():
    healthy = "--healthy" in sys.argv[1:]
    jax, jnp = jax_on_gpu("jax_scan_rnn")
    k_x, k_in, k_rec, k_out = jax.random.split(jax.random.PRNGKey(3), 4)
    xs = jax.random.normal(k_x, (STEPS, 64, 32), jnp.float32)
    w_in = jax.random.normal(k_in, (32, 256), jnp.float32) * 0.2
    w_rec = jax.random.normal(k_rec, (256, 256), jnp.float32) * 0.05
    w_out = jax.random.normal(k_out, (256, 10), jnp.float32) * 0.1
    eps = 1e-5 if healthy else 0.0

    def cell(h, x):
        centred = h - h.mean(-1, keepdims=True)
        h_norm = centred / jnp.sqrt((centred * centred).mean(-1, keepdims=True) + eps)  # the planted 0 / 0
        h = jnp.tanh(x @ w_in + h_norm @ w_rec)
        return h, h @ w_out

    @jax.jit
    def run(xs):
        h0 = jnp.zeros((xs.shape[1], 256), jnp.float32)
        _, ys = jax.lax.scan(cell, h0, xs)
        return ys

    @jax.jit
    def run_dynamic(xs, steps):
        def body(t, carry):
            h, ys = carry
            h, y = cell(h, xs[t])
            return h, ys.at[t].set(y)

        h0 = jnp.zeros((xs.shape[1], 256), jnp.float32)
        ys0 = jnp.zeros((xs.shape[0], xs.shape[1], 10), jnp.float32)
        return jax.lax.fori_loop(0, steps, body, (h0, ys0))[1]

    out = run_dynamic(xs, jnp.int32(STEPS)) if "--dynamic" in sys.argv[1:] else run(xs)
    print_truth(jax, jnp, out.block_until_ready())


if __name__ == "__main__":
    main()
