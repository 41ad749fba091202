"""A small network trained with optax (optax.chain of clip_by_global_norm and adamw: code the optax
team wrote) in a jitted update, with a penalty on a gate layer that starts closed (all zeros).
Sick: the penalty is the gate's L2 norm, jnp.sqrt(jnp.sum(gate * gate)), whose gradient at zero
is 0.5 / sqrt(0) * 2 * 0 = inf * 0 = NaN; optax's global-norm clip then reduces every gradient
into one norm, so the NaN reaches every parameter in the first update. The twin penalises the
squared norm, whose gradient is 0 there.

Usage: jax_optax_train.py [--healthy]
optax, chex, absl-py and toolz come from the environment or from .stage/pylib (tests/gpu/stage.sh
puts them there: the device has no network). The last stdout line is one JSON object:
`checksum`, `nonfinite` and `finite_sum` of the trained parameters, as in jax_pool.py.
"""
import os
import sys

from jax_common import SKIP, jax_on_gpu, print_truth

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main():
    healthy = "--healthy" in sys.argv[1:]
    jax, jnp = jax_on_gpu("jax_optax_train")
    sys.path.append(os.path.join(ROOT, ".stage", "pylib"))
    try:
        import optax
    except ImportError as e:
        print(f"jax_optax_train: skip: no optax ({e})")
        sys.exit(SKIP)
    keys = jax.random.split(jax.random.PRNGKey(0), 5)
    x = jax.random.normal(keys[0], (512, 32), jnp.float32)
    y = jnp.sin(x[:, :8] * 2.0)
    params = {"w1": jax.random.normal(keys[1], (32, 128)) * 0.2, "b1": jnp.zeros(128),
              "gate": jnp.zeros((128, 128)),  # starts closed
              "w2": jax.random.normal(keys[2], (128, 8)) * 0.1}

    def loss(p):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        h = h + h @ p["gate"]
        fit = jnp.mean((h @ p["w2"] - y) ** 2)
        if healthy:
            return fit + 1e-3 * jnp.sum(p["gate"] * p["gate"])
        return fit + 1e-3 * jnp.sqrt(jnp.sum(p["gate"] * p["gate"]))  # the planted NaN: its gradient at 0

    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-2))
    state = opt.init(params)

    @jax.jit
    def update(p, s):
        grads = jax.grad(loss)(p)
        updates, s = opt.update(grads, s, p)
        return optax.apply_updates(p, updates), s

    for _ in range(5):
        params, state = update(params, state)
    flat = jnp.concatenate([jnp.ravel(params[k]) for k in sorted(params)])
    print_truth(jax, jnp, flat.block_until_ready())


if __name__ == "__main__":
    main()
