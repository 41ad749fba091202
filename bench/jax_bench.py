"""JAX steps timed as issue 38 asks: a jitted MLP step and a small transformer step, each clean and
with NaN (a planted log of values below 0 when `shift` is negative: the same compiled step, so the
clean and NaN times compare one program), plainly, under nanscope, or under jax_debug_nans.

Usage: jax_bench.py CASE[,CASE...] [--reps N]
  CASE     mlp or transformer
  --reps   timed calls per figure (default 50); the median is printed

Prints one line per case, `jax_mlp_step MODE clean_us=... nan_us=...` (jax_transformer_step for
the transformer), MODE `nanscope` when CUDA_INJECTION64_PATH is set and `plain` otherwise, the
format bench/alternate.py reads. Under JAX_DEBUG_NANS=True (jax_debug_nans) a step with NaN
raises FloatingPointError after JAX re-runs it op by op to find the NaN: nan_us is then the time
until that error, the time jax_debug_nans takes to localize it; that figure is taken before the
clean one, since jax_debug_nans stops catching the transformer step's NaN once a clean call of
the step has run (measured; see docs/jax.md). Under nanscope, XLA_FLAGS must
name the dumps (`nanscope --` sets them; bench/alternate.py settings pass them as variables).
"""
import argparse
import os
import statistics
import sys
import time

CASES = ("mlp", "transformer")
NAMES = {"mlp": "jax_mlp_step", "transformer": "jax_transformer_step"}


def mlp(jax, jnp):
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    x = jax.random.normal(k1, (1024, 1024), jnp.float32)
    w1 = jax.random.normal(k2, (1024, 4096), jnp.float32) * 0.03
    w2 = jax.random.normal(k3, (4096, 1024), jnp.float32) * 0.03

    @jax.jit
    def step(shift, x, w1, w2):
        h = jax.nn.relu(x @ w1)
        return jnp.log(h + shift) @ w2  # shift < 0: log of values below 0 somewhere, NaN

    return step, (x, w1, w2)


def transformer(jax, jnp, layers=4, batch=8, seq=256, d=512, heads=8):
    keys = jax.random.split(jax.random.PRNGKey(1), 1 + 4 * layers)
    x = jax.random.normal(keys[0], (batch, seq, d), jnp.float32)
    params = [tuple(jax.random.normal(k, shape, jnp.float32) * 0.02 for k, shape in
                    zip(keys[1 + 4 * i:5 + 4 * i], ((d, 3 * d), (d, d), (d, 4 * d), (4 * d, d))))
              for i in range(layers)]

    def norm(v):
        return (v - v.mean(-1, keepdims=True)) * jax.lax.rsqrt(v.var(-1, keepdims=True) + 1e-5)

    @jax.jit
    def step(shift, x, params):
        for wqkv, wo, w1, w2 in params:
            q, k, v = jnp.split(norm(x) @ wqkv, 3, axis=-1)
            split = lambda t: t.reshape(batch, seq, heads, d // heads)  # noqa: E731
            att = jax.nn.dot_product_attention(split(q), split(k), split(v), is_causal=True, implementation="xla")
            x = x + att.reshape(batch, seq, d) @ wo
            h = jax.nn.gelu(norm(x) @ w1)
            x = x + jnp.log(jax.nn.relu(h) + shift + 1.0) @ w2  # shift < -1: NaN where h is small
        return x

    return step, (x, params)


def median_us(fn, reps):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def nan_time(step, args, reps, debug_nans):
    """Median microseconds of a step with NaN; under jax_debug_nans, of the call until its error."""
    if not debug_nans:
        import jax.numpy as jnp
        if bool(jnp.isfinite(step(-2.0, *args)).all()):  # a "with NaN" figure must have its NaN
            sys.exit("jax_bench: the step with a negative shift made no NaN")
        return median_us(lambda: step(-2.0, *args).block_until_ready(), reps)
    times = []
    for _ in range(max(3, reps // 10)):  # each error re-runs the step op by op: fewer, longer calls
        t0 = time.perf_counter()
        try:
            step(-2.0, *args).block_until_ready()
        except FloatingPointError:
            pass
        else:
            sys.exit("jax_bench: jax_debug_nans raised nothing on a step with NaN")
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", help="mlp, transformer, or both comma-separated")
    parser.add_argument("--reps", type=int, default=50)
    args = parser.parse_args()
    cases = args.cases.split(",")
    if not all(c in CASES for c in cases):
        parser.error(f"{args.cases!r}: want one or more of {', '.join(CASES)}")
    import jax
    import jax.numpy as jnp
    if jax.default_backend() != "gpu":
        sys.exit("jax_bench: JAX sees no GPU")
    debug_nans = bool(jax.config.jax_debug_nans)
    mode = "debug_nans" if debug_nans else "nanscope" if os.environ.get("CUDA_INJECTION64_PATH") else "plain"
    for case in cases:
        step, data = (mlp if case == "mlp" else transformer)(jax, jnp)
        # Under jax_debug_nans the NaN step runs first: once a clean call of the transformer step
        # has run, jax_debug_nans no longer catches its NaN (JAX 0.10.2 on CPU, jaxlib 0.11.2 on
        # the H200; the MLP step is caught either way), and its figure would be missing.
        nan = nan_time(step, data, args.reps, debug_nans) if debug_nans else None
        clean = median_us(lambda: step(1.0, *data).block_until_ready(), args.reps)
        if nan is None:
            nan = nan_time(step, data, args.reps, debug_nans)
        print(f"{NAMES[case]} {mode} clean_us={clean:.2f} nan_us={nan:.2f} nan_over_clean={nan / clean:.4f}", flush=True)


if __name__ == "__main__":
    main()
