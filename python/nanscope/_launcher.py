"""The `nanscope` console script and `python -m nanscope`: the bundled launcher, with the Python side.

It runs the C++ launcher installed with this package (<package>/bin/nanscope, which finds
<package>/lib/libnanscope.so, and which holds `nanscope report`), after putting the bootstrap
folder first on PYTHONPATH: its sitecustomize lets the program `import nanscope` and tells the
library where this Python's nvidia-cuda-cupti wheel is (_bootstrap/sitecustomize.py).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BOOTSTRAP_DIR = os.path.join(HERE, "_bootstrap")


def launcher_path():
    """The C++ launcher installed with this package, or None (a source checkout)."""
    path = os.path.join(HERE, "bin", "nanscope")
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def with_bootstrap(pythonpath):
    """PYTHONPATH with the bootstrap folder first (once)."""
    rest = [p for p in (pythonpath or "").split(os.pathsep) if p and os.path.abspath(p) != BOOTSTRAP_DIR]
    return os.pathsep.join([BOOTSTRAP_DIR] + rest)


def program_index(args):
    """Where the program starts: after the first `--`, or None when args hold no `--`."""
    try:
        return args.index("--") + 1
    except ValueError:
        return None


def run_python_scripts_here(args, executable):
    """`python -m nanscope -- app.py args`: a .py program runs with this interpreter."""
    i = program_index(args)
    if i is not None and i < len(args) and args[i].endswith(".py"):
        return args[:i] + [executable] + args[i:]
    return args


def main(argv=None, as_module=False):
    args = list(sys.argv[1:] if argv is None else argv)
    exe = launcher_path()
    if exe is None:
        sys.stderr.write(f"nanscope: no launcher in {HERE}/bin: this helper is not from a wheel or an install; "
                         "build with CMake (build/bin/nanscope) or `pip install` nanscope\n")
        return 2
    if as_module:
        args = run_python_scripts_here(args, sys.executable)
    env = dict(os.environ)
    if not args or args[0] != "report":
        env["PYTHONPATH"] = with_bootstrap(env.get("PYTHONPATH"))
        i = program_index(args)
        if "--print-env" in (args if i is None else args[:i]):
            print(f"PYTHONPATH={env['PYTHONPATH']}", flush=True)
    os.execve(exe, [exe] + args, env)
    return 127  # not reached: execve raises on failure
