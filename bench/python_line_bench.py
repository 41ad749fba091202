"""CPU cost of the Python line (hooks/python_frames.cpp): one capture, as a launch pays it, at
several stack shapes, in this interpreter. Uses the probe library the CPU tests build
(tests/python/python_probe.cpp: the same code, called through ctypes with the GIL released).

Usage: python3 bench/python_line_bench.py [PROBE]   (default: build/tests/python/libnanscope_python_probe.so)

Each row: library frames on top (as torch.nn.Module.__call__ and forward sit above a launch) over
user frames below; the walk stops at the first user frame, so the depth below does not count.
"""
import ctypes
import os
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "tests", "python",
                                                           "nanscope_python_probe.so")
N = 20000


def library(depth):
    """A chain of `depth` frames whose code claims to be torch's, ending in the measurement."""
    path = os.path.join(tempfile.gettempdir(), "nanscope_bench", "site-packages", "torch", "nn", "module.py")
    src = "def f0(lib, n):\n    return lib.nanscope_probe_capture_ns(n)\n"
    for i in range(1, depth + 1):
        src += f"def f{i}(lib, n):\n    return f{i - 1}(lib, n)\n"
    ns = {}
    exec(compile(src, path, "exec"), ns)
    return ns[f"f{depth}"]


def user(depth, call):
    def nest(k, lib, n):
        return call(lib, n) if k == 0 else nest(k - 1, lib, n)
    return lambda lib, n: nest(depth, lib, n)


def main():
    lib = ctypes.CDLL(PROBE)
    lib.nanscope_probe_capture_ns.argtypes = [ctypes.c_int]
    lib.nanscope_probe_capture_ns.restype = ctypes.c_double
    print(f"python {sys.version.split()[0]}, {N} captures per row, ns per capture")
    for top, below in ((0, 1), (3, 1), (6, 1), (3, 50), (12, 200)):
        run = user(below, library(top))
        run(lib, 1000)  # warm: the code objects are decoded once
        print(f"  {top:2d} library frames over {below:3d} user frames: {run(lib, N):7.0f}")
    out = []
    t = threading.Thread(target=lambda: out.append(lib.nanscope_probe_capture_ns(N)))
    t.start()
    t.join()
    print(f"  a Python thread (bootstrap frames only): {out[0]:7.0f}")


if __name__ == "__main__":
    main()
