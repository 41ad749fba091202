"""CPU tests of the Python line (hooks/python_frames.cpp) in this interpreter: the probe library
(tests/python/python_probe.cpp, the same code the injected library runs in a CUDA callback) is
loaded through ctypes and asked where its caller is, with the GIL released (ctypes.CDLL, as
PyTorch releases it around an op's dispatch) and held (ctypes.PyDLL, as a pybind11 extension
keeps it), from the main thread and another thread, under frames that must be skipped (torch,
triton, nanscope, importlib). NANSCOPE_PYTHON_PROBE names the probe library (CMake sets it);
without it the tests skip.
"""
import ctypes
import os
import sys
import tempfile
import threading
import unittest

PROBE = os.environ.get("NANSCOPE_PYTHON_PROBE")
HERE = os.path.abspath(__file__)


def load(kind):
    lib = kind(PROBE)
    lib.nanscope_probe_line.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.nanscope_probe_problem.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.nanscope_probe_capture_ns.argtypes = [ctypes.c_int]
    lib.nanscope_probe_capture_ns.restype = ctypes.c_double
    return lib


def library_module(path_parts, source):
    """A module whose code claims to live at .../<path_parts>, as torch's and triton's do."""
    path = os.path.join(tempfile.gettempdir(), "nanscope_frames", *path_parts)
    namespace = {"ctypes": ctypes}
    exec(compile(source, path, "exec"), namespace)
    return namespace


# The probe's caller lives in a "nanscope" module, so the line it names is its caller's.
PROBE_CALL = library_module(["python", "nanscope", "probe.py"], """
def where(lib):
    buf = ctypes.create_string_buffer(8192)
    if not lib.nanscope_probe_line(buf, len(buf)):
        problem = ctypes.create_string_buffer(1024)
        lib.nanscope_probe_problem(problem, len(problem))
        return None, problem.value.decode()
    file, line, function, generated_file, generated_line = buf.value.decode().split("\\n")
    return (file, int(line), function), ""

def where_compiled(lib):
    buf = ctypes.create_string_buffer(8192)
    if not lib.nanscope_probe_line(buf, len(buf)):
        return None
    file, line, function, generated_file, generated_line = buf.value.decode().split("\\n")
    return file, int(line), function, generated_file, int(generated_line)
""")
where = PROBE_CALL["where"]  # (file, line, function) of its caller, or (None, why)
# (file, line, function, generated file, generated line), or None
where_compiled = PROBE_CALL["where_compiled"]


def norm(got):
    return (os.path.abspath(got[0]), got[1], got[2]) if got else got


# A library function between the caller and the launch, the way torch.nn.Linear.forward sits
# between a model and its GEMM.
TORCH = library_module(["site-packages", "torch", "nn", "modules", "linear.py"],
                       "def forward(probe, lib):\n    return probe(lib)\n")
TRITON = library_module(["site-packages", "triton", "runtime", "jit.py"],
                        "def run(call, *args):\n    return call(*args)\n")
NANSCOPE = library_module(["python", "nanscope", "__init__.py"],
                          "def wrap(call, *args):\n    return call(*args)\n")


class Model:
    def forward(self, lib):
        return TORCH["forward"](where, lib)  # the line the probe must name


def line_of(text, function):
    """The line of `text` inside `function` in this file."""
    with open(HERE) as f:
        lines = f.read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip().startswith(f"def {function}("))
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


@unittest.skipUnless(PROBE, "NANSCOPE_PYTHON_PROBE is not set (the CMake test sets it)")
class PythonLine(unittest.TestCase):
    def check(self, kind):
        lib = load(kind)
        got, problem = where(lib)
        self.assertEqual(problem, "")
        self.assertEqual(norm(got), (HERE, line_of("got, problem = where(lib)", "check"), "PythonLine.check"))

    def test_gil_released(self):
        self.check(ctypes.CDLL)

    def test_gil_held(self):
        self.check(ctypes.PyDLL)

    def test_library_frames_are_skipped(self):
        for kind in (ctypes.CDLL, ctypes.PyDLL):
            lib = load(kind)
            got, problem = Model().forward(lib)
            self.assertEqual(problem, "")
            self.assertEqual(norm(got), (HERE, line_of("return TORCH", "forward"), "Model.forward"))
            got, _ = TRITON["run"](NANSCOPE["wrap"], where, lib)
            self.assertEqual(norm(got)[0], HERE)
            self.assertEqual(got[2], "PythonLine.test_library_frames_are_skipped")

    def test_other_thread(self):
        results = []
        lib = load(ctypes.CDLL)

        def worker():
            results.append(where(lib))

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        got, problem = results[0]
        self.assertEqual(problem, "")
        self.assertEqual(norm(got), (HERE, line_of("results.append(where(lib))", "test_other_thread"),
                               "PythonLine.test_other_thread.<locals>.worker"))

    def test_non_ascii_file(self):
        path = os.path.join(tempfile.gettempdir(), "nanscope_frames", "modèle_ünïcode.py")
        namespace = {}
        exec(compile("def call(where, lib):\n    return where(lib)\n", path, "exec"), namespace)
        got, problem = namespace["call"](where, load(ctypes.CDLL))
        self.assertEqual(problem, "")
        self.assertEqual(got, (path, 2, "call"))

    def test_the_innermost_frame_outside_the_libraries_is_named(self):
        # A thread whose own frames are all library frames: threading.py's bootstrap, outside
        # the libraries, is where the launch came from.
        results = []
        lib = load(ctypes.CDLL)
        body = library_module(["lib", "python3", "importlib", "fake.py"],
                              "def run(where, lib, out):\n    out.append(where(lib))\n")
        t = threading.Thread(target=TRITON["run"], args=(body["run"], where, lib, results))
        t.start()
        t.join()
        got, problem = results[0]
        self.assertEqual(problem, "")
        self.assertTrue(got[0].endswith("threading.py"), got)
        self.assertEqual(got[2], "Thread.run")

    def test_compiled_code_is_named_at_the_models_line(self):
        # torch.compile: Triton's launcher (exec'd from a string) inside Inductor's output code,
        # whose map (PyCodeCache.linemaps, handed over by nanscope/_inductor_lines.py) says which
        # model line each generated line came from.
        lib = load(ctypes.CDLL)
        lib.nanscope_probe_generated_line.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p]
        # TORCHINDUCTOR_CACHE_DIR may put the output code anywhere: its map makes it generated.
        output_code = os.path.join(tempfile.gettempdir(), "my_inductor_cache", "ab", "cab123.py")
        launcher, module = {}, {}
        exec(compile("def launch(where, lib):\n    return where(lib)\n", "<string>", "exec"), launcher)
        exec(compile("def call(launch, where, lib):\n"
                     "    x = 1\n"
                     "    return launch(where, lib)\n"
                     "def call_late(launch, where, lib):\n"
                     "    return launch(where, lib)\n", output_code, "exec"), module)
        # No map yet, and not under a torchinductor_ directory: the module reads as the user's.
        unmapped = module["call"](launcher["launch"], where_compiled, lib)
        self.assertEqual(unmapped, (output_code, 3, "call", "", 0))
        trace = ('  File "/home/u/model.py", line 12, in forward\n    y = self.norm(x)\n'
                 '  File "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/normalization.py", line 200, '
                 'in forward\n    return F.rms_norm(x)\n')
        self.assertEqual(lib.nanscope_probe_generated_line(output_code.encode(), 2, trace.encode()), 1)
        self.assertEqual(lib.nanscope_probe_generated_line(output_code.encode(), 4, None), 1)  # Inductor's own lines
        got = module["call"](launcher["launch"], where_compiled, lib)
        self.assertEqual(got, ("/home/u/model.py", 12, "forward", output_code, 3))
        late = module["call_late"](launcher["launch"], where_compiled, lib)
        self.assertEqual(late[0], HERE)
        self.assertEqual(late[3:], ("", 0))

    def test_capture_cost(self):
        lib = load(ctypes.CDLL)
        cost = lib.nanscope_probe_capture_ns(2000)
        print(f"\ncapture: {cost:.0f} ns per launch (3 frames, warm cache)", file=sys.stderr)
        self.assertLess(cost, 20000)  # a broken walk (reads checked forever, no cache) is far slower


if __name__ == "__main__":
    unittest.main()
