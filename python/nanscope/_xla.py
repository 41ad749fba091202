"""XLA's dumps for a program that starts nanscope from Python (nanscope.enable()) rather than
under `nanscope --` (docs/jax.md). XLA reads XLA_FLAGS once, when JAX makes its first backend; the
dumps say what each XLA kernel writes. So enable() adds the flags the launcher adds, while that
can still work; once XLA has started it cannot, and the library says which variable to set
(warning `xla_no_dumps`).
"""
import importlib.util
import os
import sys
import tempfile


def xla_started(modules):
    """True when JAX made a backend in this process (XLA has read its flags), None when that cannot
    be told (a JAX whose internals moved), False when it has not."""
    bridge = modules.get("jax._src.xla_bridge")
    if bridge is None:
        return False  # JAX not imported, or not far enough to make a backend
    backends = getattr(bridge, "_backends", None)
    if not isinstance(backends, dict):
        return None
    return bool(backends)


def dump_plan(environ, modules, jax_installed):
    """Whether enable() should add XLA's dump flags: False when nanscope's dumps are already chosen
    (NANSCOPE_XLA_DUMP: the launcher's, or the user's, `off` included), the program names its own
    --xla_dump_to (the library reads it), JAX is not installed, or XLA may have read its flags."""
    if "NANSCOPE_XLA_DUMP" in environ or "xla_dump_to" in environ.get("XLA_FLAGS", ""):
        return False
    return jax_installed and xla_started(modules) is False


def with_dumps(flags, directory):
    """XLA_FLAGS with the dumps added, as the launcher adds them (src/xla_flags.cpp): the user's
    flags kept, text HLO asked for unless they set it themselves."""
    added = [f"--xla_dump_to={directory}"]
    if "xla_dump_hlo_as_text" not in flags:
        added.append("--xla_dump_hlo_as_text")
    return " ".join([flags.strip()] + added if flags.strip() else added)


def add_dumps(environ=os.environ, modules=sys.modules):
    """Adds the dump flags to `environ` when dump_plan says so; returns the directory, or None."""
    try:
        jax_installed = importlib.util.find_spec("jaxlib") is not None
    except (ImportError, ValueError):  # a broken or half-imported jaxlib: not one to set flags for
        jax_installed = False
    if not dump_plan(environ, modules, jax_installed):
        return None
    # Private (mkdtemp); the library removes it at exit when XLA wrote nothing in it.
    directory = tempfile.mkdtemp(prefix="nanscope-xla-")
    environ["XLA_FLAGS"] = with_dumps(environ.get("XLA_FLAGS", ""), directory)
    environ["NANSCOPE_XLA_DUMP"] = directory
    return directory
