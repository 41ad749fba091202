"""CPU tests of the torch.compile hook (python/nanscope/_inductor_lines.py): the maps Inductor keeps
(PyCodeCache.linemaps, as torch 2.x keeps them: lines and stack traces unzipped) go to the
library once per output-code module, through a wrapped load_by_key_path; a fake torch package in
a temporary folder checks the post-import hook in a fresh interpreter. No torch, no GPU."""
import importlib.util
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

    def test_a_cached_module_without_its_partitions_lines_is_said_once(self):
        codecache, lib = fake_codecache(), FakeLib()
        lines.patch(codecache, library=lambda: lib)
        with tempfile.TemporaryDirectory() as root:
            plain, parted = os.path.join(root, "c1.py"), os.path.join(root, "c2.py")
            with open(plain, "w") as f:
                f.write("def call(args):\n    pass\n")
            with open(parted, "w") as f:
                f.write("def partition_0(args):\n    pass\n\ndef call(args):\n    pass\n")
            codecache.PyCodeCache.load_by_key_path("k1", plain, [])
            self.assertEqual(lines._warned, [])
            codecache.PyCodeCache.load_by_key_path("k2", parted, [])
            codecache.PyCodeCache.load_by_key_path("k3", parted, [])
        self.assertEqual(len(lines._warned), 1)
        self.assertIn("without its partitions' line map", lines._warned[0])
        self.assertEqual(lib.calls, [])

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


class Recorder:
    """The part of Inductor's IndentedBuffer a splice uses: what was written, in order."""

    def __init__(self):
        self.lines = []

    def writeline(self, line):
        self.lines.append(line)


class Code:
    def __init__(self, value, line_map):
        self.value, self.line_map = value, line_map


# A partition function as Inductor generates it (indented, trailing blank line), with the line
# map getvaluewithlinemap gives: contexts before lines 3 and 5.
PARTITION = Code("\n    def partition_0(args):\n        buf0 = empty()\n        kernel_0.run(buf0)\n"
                 "        kernel_1.run(buf0)\n        return (buf0, )\n\n", [(5, "node_b"), (3, "node_a"), (40, "past")])


class Partitions(unittest.TestCase):
    def test_the_partitions_contexts_stay_before_their_lines(self):
        out = Recorder()
        lines.splice_keeping_lines(out, PARTITION, lambda ctx: ("ctx", ctx))
        self.assertEqual(out.lines, ["", "def partition_0(args):", ("ctx", "node_a"), "    buf0 = empty()",
                                     "    kernel_0.run(buf0)", ("ctx", "node_b"), "    kernel_1.run(buf0)",
                                     "    return (buf0, )"])
        empty = Recorder()
        lines.splice_keeping_lines(empty, Code("", [(1, "x")]), tuple)
        self.assertEqual(empty.lines, [])

    def test_only_the_known_one_line_splice_is_replaced(self):
        module = type(sys)("torch._inductor.codegen.wrapper")
        # inspect reads the source from the file: a torch 2.11 body, and a newer one.
        with tempfile.TemporaryDirectory() as root:
            path = os.path.join(root, "wrapper.py")
            with open(path, "w") as f:
                f.write("class PythonWrapperCodegen:\n"
                        "    def define_subgraph_launcher_fn(self, name: str, subgraph_code):\n"
                        "        self.subgraph_definitions.splice(subgraph_code.value)\n\n\n"
                        "class Newer:\n"
                        "    def define_subgraph_launcher_fn(self, name: str, subgraph_code):\n"
                        "        self.subgraph_definitions.splice(subgraph_code)\n")
            namespace = {}
            exec(compile(open(path).read(), path, "exec"), namespace)
            module.PythonWrapperCodegen = namespace["PythonWrapperCodegen"]
            self.assertTrue(lines.patch_wrapper(module, line_context=lambda c: ("ctx", c), indented_buffer=Recorder))
            self.assertTrue(lines.patch_wrapper(module, line_context=lambda c: ("ctx", c), indented_buffer=Recorder))
            wrapper = type("Wrapper", (), {})()
            wrapper.subgraph_definitions = Recorder()
            module.PythonWrapperCodegen.define_subgraph_launcher_fn(wrapper, "partition_0", PARTITION)
            self.assertIn(("ctx", "node_a"), wrapper.subgraph_definitions.lines)
            newer = type(sys)("newer")
            newer.PythonWrapperCodegen = namespace["Newer"]
            self.assertFalse(lines.patch_wrapper(newer, line_context=tuple, indented_buffer=Recorder))
            self.assertFalse(getattr(namespace["Newer"].define_subgraph_launcher_fn, "_nanscope_wrapped", False))


@unittest.skipUnless(importlib.util.find_spec("torch") is not None, "no torch in this Python")
class PartitionsInInductor(unittest.TestCase):
    """Against Inductor's own IndentedBuffer: the module's text is the same with the patch, and
    its line map names the partition's lines."""

    def test_same_text_and_the_partitions_lines_in_the_map(self):
        from torch._inductor.codegen import wrapper
        from torch._inductor.utils import IndentedBuffer, LineContext

        original = vars(wrapper.PythonWrapperCodegen)["define_subgraph_launcher_fn"]
        original = getattr(original, "__wrapped__", original)
        part = IndentedBuffer()
        part.writeline("def partition_0(args):")
        with part.indent():
            part.writeline("buf0 = empty()")
            part.writeline(LineContext("node_a"))
            part.writeline("kernel_0.run(buf0)")
            part.writeline(LineContext("node_b"))
            part.writeline("kernel_1.run(buf0)")
            part.writeline("return (buf0, )")
        code = part.getvaluewithlinemap()
        plain, kept = type("W", (), {})(), type("W", (), {})()
        plain.subgraph_definitions, kept.subgraph_definitions = IndentedBuffer(), IndentedBuffer()
        original(plain, "partition_0", code)
        self.assertTrue(lines.patch_wrapper(wrapper))
        wrapper.PythonWrapperCodegen.define_subgraph_launcher_fn(kept, "partition_0", code)
        module = IndentedBuffer()
        module.writeline("import torch")
        module.splice(kept.subgraph_definitions)
        got = module.getvaluewithlinemap()
        reference = IndentedBuffer()
        reference.writeline("import torch")
        reference.splice(plain.subgraph_definitions)
        self.assertEqual(got.value, reference.getvalue())
        text = got.value.split("\n")
        self.assertEqual([(text[n - 1].strip(), ctx) for n, ctx in got.line_map],
                         [("kernel_0.run(buf0)", "node_a"), ("kernel_1.run(buf0)", "node_b")])


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
