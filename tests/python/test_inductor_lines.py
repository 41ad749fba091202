"""CPU tests of the torch.compile hook (python/nanscope/_inductor_lines.py): the maps Inductor keeps
(PyCodeCache.linemaps, as torch 2.x keeps them: lines and stack traces unzipped) go to the
library once per output-code module, through a wrapped load_by_key_path; a fake torch package in
a temporary folder checks the post-import hook in a fresh interpreter. No torch, no GPU."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")
sys.path.insert(0, PYTHON_DIR)

from nanscope import _inductor_lines as lines  # noqa: E402

TRACE = ('  File "/home/u/model.py", line 12, in forward\n    y = self.norm(x)\n')

# The part of torch/_inductor/codecache.py the hook relies on (torch 2.5 to 2.11).
FAKE_CODECACHE = textwrap.dedent('''
    from bisect import bisect_right

    class PyCodeCache:
        modules = []
        linemaps = {}

        @classmethod
        def load_by_key_path(cls, key, path, linemap=None, attrs=None):
            if linemap:
                lines, stack_traces = zip(*linemap)
                cls.linemaps[path] = (list(lines), list(stack_traces))
            return "module " + key
''')


class FakeLib:
    def __init__(self, refuse_after=None):
        self.calls = []
        self.refuse_after = refuse_after

    def nanscope_python_line_origin(self, path, line, trace):
        if self.refuse_after is not None and len(self.calls) >= self.refuse_after:
            return 3
        self.calls.append((path, line, trace))
        return 0

    def nanscope_last_error(self):
        return b"nanscope_python_line_origin: the map of generated lines is full"


def fake_codecache():
    namespace = {}
    exec(compile(FAKE_CODECACHE, "codecache.py", "exec"), namespace)
    module = type(sys)("torch._inductor.codecache")
    module.PyCodeCache = namespace["PyCodeCache"]
    return module


class Hook(unittest.TestCase):
    def setUp(self):
        lines._sent.clear()
        del lines._warned[:]

    def test_linemap_entries_as_torch_keeps_them(self):
        maps = {"/g/a.py": ([3, 7, 9], [TRACE, None, ""])}
        self.assertEqual(lines.linemap_entries(maps, "/g/a.py"), [(3, TRACE), (7, None), (9, None)])
        self.assertEqual(lines.linemap_entries(maps, "/g/other.py"), [])
        # torch before 2.5 kept list(zip(*linemap)): a list of two tuples.
        self.assertEqual(lines.linemap_entries({"/g/b.py": [(3,), (TRACE,)]}, "/g/b.py"), [(3, TRACE)])
        for bad in ({"/g/a.py": []}, {"/g/a.py": ([1], [TRACE], [2])}, {"/g/a.py": ([0, True, "4", 2**32], [TRACE] * 4)},
                    None, 5):
            self.assertEqual(lines.linemap_entries(bad, "/g/a.py"), [], bad)

    def test_each_loaded_module_is_sent_once(self):
        codecache, lib = fake_codecache(), FakeLib()
        self.assertTrue(lines.patch(codecache, library=lambda: lib))
        got = codecache.PyCodeCache.load_by_key_path("k1", "/tmp/torchinductor_u/ab/cab.py", [(5, TRACE), (9, None)])
        self.assertEqual(got, "module k1")  # Inductor gets what it got before
        codecache.PyCodeCache.load_by_key_path("k1", "/tmp/torchinductor_u/ab/cab.py", [(5, TRACE), (9, None)])
        self.assertEqual(lib.calls, [(b"/tmp/torchinductor_u/ab/cab.py", 5, TRACE.encode()),
                                     (b"/tmp/torchinductor_u/ab/cab.py", 9, None)])

    def test_patching_twice_wraps_once_and_sends_what_was_loaded_before(self):
        codecache, lib = fake_codecache(), FakeLib()
        codecache.PyCodeCache.load_by_key_path("k0", "/g/early.py", [(2, TRACE)])  # before nanscope
        lines.patch(codecache, library=lambda: lib)
        wrapped = codecache.PyCodeCache.__dict__["load_by_key_path"]
        lines.patch(codecache, library=lambda: lib)
        self.assertIs(codecache.PyCodeCache.__dict__["load_by_key_path"], wrapped)
        self.assertEqual(lib.calls, [(b"/g/early.py", 2, TRACE.encode())])

    def test_no_library_no_send_and_no_memory_of_it(self):
        codecache = fake_codecache()
        lines.patch(codecache, library=lambda: None)
        codecache.PyCodeCache.load_by_key_path("k", "/g/a.py", [(2, TRACE)])
        self.assertEqual(lines._sent, set())

    def test_a_refusal_warns_once_and_inductor_goes_on(self):
        codecache, lib = fake_codecache(), FakeLib(refuse_after=1)
        lines.patch(codecache, library=lambda: lib)
        for i in range(3):
            self.assertEqual(codecache.PyCodeCache.load_by_key_path(f"k{i}", f"/g/{i}.py", [(2, TRACE), (4, TRACE)]),
                             f"module k{i}")
        self.assertEqual(len(lib.calls), 1)
        self.assertEqual(len(lines._warned), 1)
        self.assertIn("the map of generated lines is full", lines._warned[0])

    def test_an_unknown_codecache_is_left_alone(self):
        module = type(sys)("torch._inductor.codecache")

        class PyCodeCache:
            def load_by_key_path(self, key, path):  # not a classmethod
                return key

        module.PyCodeCache = PyCodeCache
        self.assertFalse(lines.patch(module, library=FakeLib))
        self.assertFalse(getattr(PyCodeCache.load_by_key_path, "_nanscope_wrapped", False))
        self.assertIn("is not the classmethod nanscope knows", lines._warned[0])

    def test_off_with_nanscope_python_line_0(self):
        meta_path = []
        self.assertFalse(lines.install(meta_path=meta_path, modules={}, environ={"NANSCOPE_PYTHON_LINE": "OFF"}))
        self.assertEqual(meta_path, [])
        self.assertTrue(lines.install(meta_path=meta_path, modules={}, environ={}))
        self.assertTrue(lines.install(meta_path=meta_path, modules={}, environ={"NANSCOPE_PYTHON_LINE": "1"}))
        self.assertEqual(len(meta_path), 1)


class PostImport(unittest.TestCase):
    def test_a_fresh_interpreter_wraps_inductor_when_it_is_imported(self):
        with tempfile.TemporaryDirectory() as root:
            pkg = os.path.join(root, "torch", "_inductor")
            os.makedirs(pkg)
            for init in (os.path.join(root, "torch", "__init__.py"), os.path.join(pkg, "__init__.py")):
                open(init, "w").close()
            with open(os.path.join(pkg, "codecache.py"), "w") as f:
                f.write(FAKE_CODECACHE)
            program = textwrap.dedent('''
                import sys
                import nanscope
                from nanscope import _inductor_lines as lines
                assert "torch._inductor.codecache" not in sys.modules  # nothing imported early
                sent = []
                class Lib:
                    def nanscope_python_line_origin(self, path, line, trace):
                        sent.append((path.decode(), line))
                        return 0
                lines.mapped_library = Lib
                from torch._inductor.codecache import PyCodeCache
                import torch._inductor.codecache as cc
                assert cc.__loader__.get_source("torch._inductor.codecache") is not None
                print(PyCodeCache.load_by_key_path("k", "/g/out.py", [(4, "x")]), sent)
            ''')
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([PYTHON_DIR, root]))
            env.pop("NANSCOPE_PYTHON_LINE", None)
            out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.strip(), "module k [('/g/out.py', 4)]")
            self.assertEqual(out.stderr, "")


if __name__ == "__main__":
    unittest.main()
