"""What the JAX test apps share: JAX on a GPU or a clean skip, and the truth line they print."""
import hashlib
import json
import sys

SKIP = 77


def jax_on_gpu(label):
    """(jax, jax.numpy), or exit SKIP saying why (no jax, or no GPU device in it)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        print(f"{label}: skip: no jax")
        sys.exit(SKIP)
    if not any(d.platform == "gpu" for d in jax.devices()):
        print(f"{label}: skip: no GPU device in jax")
        sys.exit(SKIP)
    return jax, jnp


def print_truth(jax, jnp, out):
    """The last stdout line: `checksum` (sha256 of the result's bytes), `nonfinite` (its non-finite
    count) and `finite_sum` (the sum of its finite values)."""
    host = jax.device_get(out)
    finite = jnp.where(jnp.isfinite(out), out, 0.0)
    print(json.dumps({"checksum": hashlib.sha256(host.tobytes()).hexdigest(),
                      "nonfinite": int((~jnp.isfinite(out)).sum()),
                      "finite_sum": float(jnp.sum(finite))}))
