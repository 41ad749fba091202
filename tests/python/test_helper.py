"""CPU tests of the Python helper (python/nanscope): argument validation with fake tensors, the
ctypes mirror of the C ABI, and the calls made into a stand-in for libnanscope. No GPU, no torch,
no libnanscope needed. Runs under unittest (`python3 -m unittest discover -s tests/python`) or
pytest. NANSCOPE_TEST_INSTALLED=1 tests the nanscope the interpreter imports (an installed wheel,
.ci/wheel_check.sh) instead of python/ in this tree.
"""
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSTALLED = os.environ.get("NANSCOPE_TEST_INSTALLED") == "1"
if not INSTALLED:
    sys.path.insert(0, os.path.join(ROOT, "python"))
HEADER = os.path.join(ROOT, "include", "nanscope", "nanscope.h")

import nanscope  # noqa: E402


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


class FakeTensor:
    """Quacks like a torch tensor as far as the helper looks."""

    def __init__(self, shape, dtype="float32", stride=None, cuda=True, ptr=0x7F0000001000, device=None):
        self.shape = tuple(shape)
        if stride is None:
            stride, acc = [], 1
            for d in reversed(self.shape):
                stride.insert(0, acc)
                acc *= d
        self._stride = tuple(stride)
        self.dtype = FakeDtype(dtype)
        self.is_cuda = cuda
        self._ptr = ptr
        self.device = device or ("cuda:0" if cuda else "cpu")

    def stride(self):
        return self._stride

    def data_ptr(self):
        return self._ptr

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


def arg_obj(a):
    """The ctypes object behind a byref() argument."""
    return getattr(a, "_obj", a)


class FakeFunction:
    def __init__(self, lib, name, impl):
        self.lib, self.name, self.impl = lib, name, impl
        self.restype, self.argtypes = None, None

    def __call__(self, *args):
        self.lib.calls.append((self.name, args))
        return self.impl(*args)


class FakeLib:
    """Stands in for the ctypes library: records calls, hands out handles."""

    def __init__(self):
        self.calls = []
        self.fail = {}  # function name -> status
        self.last_error = b""
        self.next_handle = 0x1000
        self.descs = []
        self.global_specs = []
        impls = {
            "nanscope_init": lambda: self._status("nanscope_init"),
            "nanscope_flush": lambda: self._status("nanscope_flush"),
            "nanscope_get_stats": self._stats,
            "nanscope_version": lambda: b"0.1.0",
            "nanscope_status_string": lambda s: {1: b"invalid argument", 3: b"unavailable"}.get(s, b"?"),
            "nanscope_last_error": lambda: self.last_error,
            "nanscope_padding_spec_seq_lens": self._spec("nanscope_padding_spec_seq_lens"),
            "nanscope_padding_spec_real_rows": self._spec("nanscope_padding_spec_real_rows"),
            "nanscope_padding_spec_real_rows_device": self._spec("nanscope_padding_spec_real_rows_device"),
            "nanscope_padding_spec_mask": self._spec("nanscope_padding_spec_mask"),
            "nanscope_padding_spec_destroy": lambda spec: 0,
            "nanscope_watch": self._watch,
            "nanscope_unwatch": lambda w: self._status("nanscope_unwatch"),
            "nanscope_padding_set_global": self._set_global,
            "nanscope_padding_clear_global": lambda: self._set_global(None),
        }
        for name, impl in impls.items():
            setattr(self, name, FakeFunction(self, name, impl))

    def _status(self, name):
        return self.fail.get(name, 0)

    def _handle(self):
        self.next_handle += 0x10
        return self.next_handle

    def _spec(self, name):
        def impl(out, *args):
            if self._status(name):
                return self._status(name)
            arg_obj(out).value = self._handle()
            return 0

        return impl

    def _watch(self, desc, out):
        if self._status("nanscope_watch"):
            return self._status("nanscope_watch")
        d = arg_obj(desc)
        self.descs.append({n: getattr(d, n) for n, _ in nanscope.WatchDesc._fields_})
        arg_obj(out).value = self._handle()
        return 0

    def _stats(self, s):
        arg_obj(s).launches = 3
        return 0

    def _set_global(self, spec):
        self.global_specs.append(spec.value if isinstance(spec, ctypes.c_void_p) else spec)
        return self._status("nanscope_padding_set_global")

    def names(self):
        return [c[0] for c in self.calls]

    def args(self, name):
        return [c[1] for c in self.calls if c[0] == name]


class HelperTest(unittest.TestCase):
    def setUp(self):
        self.saved = (nanscope._lib, nanscope._lib_path, nanscope._initialised)
        nanscope._lib, nanscope._lib_path, nanscope._initialised = None, None, False
        nanscope._watches.clear()
        del nanscope._padding_stack[:]

    def tearDown(self):
        nanscope._lib, nanscope._lib_path, nanscope._initialised = self.saved
        nanscope._watches.clear()
        del nanscope._padding_stack[:]

    def use_fake(self):
        lib = FakeLib()
        nanscope._lib, nanscope._lib_path = lib, "/fake/libnanscope.so"
        return lib


class Validation(HelperTest):
    """Every bad argument is a ValueError naming the problem, raised before libnanscope loads."""

    def setUp(self):
        super().setUp()
        self.real_load = nanscope._load

        def no_load():
            raise AssertionError("validation must not load libnanscope")

        nanscope._load = no_load

    def tearDown(self):
        nanscope._load = self.real_load
        super().tearDown()

    def bad(self, pattern, *args, **kwargs):
        with self.assertRaisesRegex(ValueError, pattern):
            nanscope.watch(*args, **kwargs)

    def test_non_cuda_tensor(self):
        self.bad(r"must be a CUDA tensor", FakeTensor((8, 16), cuda=False))

    def test_not_a_tensor(self):
        self.bad(r"must be a torch tensor, got list", [1.0, 2.0])

    def test_unsupported_dtype(self):
        self.bad(r"unsupported dtype torch\.int32", FakeTensor((8, 16), dtype="int32"))
        self.bad(r"unsupported dtype torch\.float8_e4m3fnuz", FakeTensor((8, 16), dtype="float8_e4m3fnuz"))

    def test_non_contiguous_rows(self):
        self.bad(r"non-contiguous row layout .*shape \(8, 4, 16\), stride \(64, 1, 4\)",
                 FakeTensor((8, 4, 16), stride=(64, 1, 4)))
        self.bad(r"non-contiguous row layout", FakeTensor((8, 16), stride=(32, 2)))
        self.bad(r"non-contiguous row layout", FakeTensor((8, 4, 16), stride=(128, 32, 1)))

    def test_overlapping_rows(self):
        self.bad(r"overlapping rows \(stride\[0\] = 0 < 16", FakeTensor((8, 16), stride=(0, 1)))

    def test_empty_tensor(self):
        self.bad(r"no elements", FakeTensor((8, 0)))

    def test_seq_lens_length(self):
        self.bad(r"seq_lens has 7 elements, expected one per row \(8\)", FakeTensor((8, 16)),
                 seq_lens=FakeTensor((7,), dtype="int32"))

    def test_seq_lens_dtype(self):
        self.bad(r"seq_lens must have dtype torch\.int32 or torch\.int64, got torch\.float32", FakeTensor((8, 16)),
                 seq_lens=FakeTensor((8,), dtype="float32"))

    def test_seq_lens_on_cpu(self):
        self.bad(r"seq_lens must be a CUDA tensor", FakeTensor((8, 16)), seq_lens=FakeTensor((8,), "int32", cuda=False))

    def test_seq_lens_not_contiguous(self):
        self.bad(r"seq_lens must be contiguous", FakeTensor((8, 16)),
                 seq_lens=FakeTensor((8,), "int64", stride=(2,)))

    def test_seq_lens_other_device(self):
        self.bad(r"seq_lens is on cuda:1, the watched tensor on cuda:0", FakeTensor((8, 16)),
                 seq_lens=FakeTensor((8,), "int32", device="cuda:1"))

    def test_two_sources(self):
        self.bad(r"one padding source, not seq_lens and num_real", FakeTensor((8, 16)),
                 seq_lens=FakeTensor((8,), "int32"), num_real=3)
        self.bad(r"not num_real and mask", FakeTensor((8, 16)), num_real=3, mask=FakeTensor((8,), "bool"))

    def test_bad_action(self):
        self.bad(r"action must be one of 'default', 'detect', 'fix', 'zero_padding', 'abort', got 'repair'",
                 FakeTensor((8, 16)), action="repair")
        self.bad(r"action must be one of", FakeTensor((8, 16)), action=2)

    def test_bad_name(self):
        self.bad(r"name must be a str", FakeTensor((8, 16)), name=b"x")

    def test_num_real(self):
        self.bad(r"num_real = 9 is outside 0\.\.8", FakeTensor((8, 16)), num_real=9)
        self.bad(r"num_real must be an int or a CUDA int32/int64 tensor, got bool", FakeTensor((8, 16)), num_real=True)
        self.bad(r"num_real must be an int or a CUDA int32/int64 tensor, got str", FakeTensor((8, 16)), num_real="5")
        self.bad(r"num_real must be a 0-dim or 1-element tensor, got 2", FakeTensor((8, 16)),
                 num_real=FakeTensor((2,), "int32"))
        self.bad(r"num_real must have dtype torch\.int32 or torch\.int64", FakeTensor((8, 16)),
                 num_real=FakeTensor((), "float32"))
        self.bad(r"num_real must be a CUDA tensor", FakeTensor((8, 16)), num_real=FakeTensor((), "int32", cuda=False))

    def test_mask(self):
        self.bad(r"mask must have dtype torch\.bool or torch\.uint8, got torch\.int32", FakeTensor((8, 16)),
                 mask=FakeTensor((8,), "int32"))
        self.bad(r"mask has 4 elements, expected one per row \(8\)", FakeTensor((8, 16)), mask=FakeTensor((4,), "bool"))

    def test_pad_value(self):
        self.bad(r"pad_value applies only to seq_lens", FakeTensor((8, 16)), num_real=3, pad_value=-1)
        self.bad(r"pad_value must be an int", FakeTensor((8, 16)), seq_lens=FakeTensor((8,), "int32"), pad_value=0.5)

    def test_padding_scope_arguments(self):
        with self.assertRaisesRegex(ValueError, r"num_real needs rows="):
            nanscope.padding(num_real=3)
        with self.assertRaisesRegex(ValueError, r"give one of seq_lens, num_real or mask"):
            nanscope.padding()
        with self.assertRaisesRegex(ValueError, r"seq_lens has 8 elements, expected one per row \(4\)"):
            nanscope.padding(seq_lens=FakeTensor((8,), "int32"), rows=4)
        with self.assertRaisesRegex(ValueError, r"rows must be a positive int"):
            nanscope.padding(num_real=3, rows=0)
        with self.assertRaisesRegex(ValueError, r"one padding source"):
            nanscope.padding(seq_lens=FakeTensor((8,), "int32"), mask=FakeTensor((8,), "uint8"))

    def test_unwatch_type(self):
        with self.assertRaisesRegex(ValueError, r"takes a nanscope\.Watch"):
            nanscope.unwatch(object())


class Layout(HelperTest):
    """What the helper derives from shapes and strides (checked through the stand-in library)."""

    def desc_for(self, tensor, **kw):
        lib = self.use_fake()
        w = nanscope.watch(tensor, **kw)
        return lib, w, lib.descs[-1]

    def test_contiguous_3d(self):
        _, w, d = self.desc_for(FakeTensor((8, 128, 512), "bfloat16", ptr=0xABC000), name="attn_out")
        self.assertEqual(d["struct_size"], ctypes.sizeof(nanscope.WatchDesc))
        self.assertEqual(d["name"], b"attn_out")
        self.assertEqual(d["ptr"], 0xABC000)
        self.assertEqual(d["dtype"], nanscope.DTYPE_BF16)
        self.assertEqual((d["rows"], d["row_elements"], d["row_stride"]), (8, 128 * 512, 128 * 512))
        self.assertEqual(d["action"], nanscope.ACTION_DETECT)
        self.assertIsNone(d["padding"])
        self.assertEqual(w.desc["padding"], None)

    def test_one_dim(self):
        _, _, d = self.desc_for(FakeTensor((8,), "float16"))
        self.assertEqual((d["rows"], d["row_elements"], d["row_stride"]), (8, 1, 1))
        self.assertIsNone(d["name"])

    def test_zero_dim(self):
        _, _, d = self.desc_for(FakeTensor((), "float64"))
        self.assertEqual((d["dtype"], d["rows"], d["row_elements"], d["row_stride"]), (nanscope.DTYPE_F64, 1, 1, 0))

    def test_padded_row_stride(self):  # a view of whole rows of a wider buffer
        _, _, d = self.desc_for(FakeTensor((8, 16), "float32", stride=(32, 1)))
        self.assertEqual((d["rows"], d["row_elements"], d["row_stride"]), (8, 16, 32))

    def test_size_one_dims_ignore_stride(self):
        _, _, d = self.desc_for(FakeTensor((8, 1, 16), "float8_e5m2", stride=(16, 999, 1)))
        self.assertEqual((d["dtype"], d["row_elements"]), (nanscope.DTYPE_F8E5M2, 16))

    def test_dtypes(self):
        for name, code in (("float64", 0), ("float32", 1), ("float16", 2), ("bfloat16", 3), ("float8_e4m3fn", 4),
                           ("float8_e5m2", 5)):
            _, _, d = self.desc_for(FakeTensor((2, 2), name))
            self.assertEqual(d["dtype"], code, name)

    def test_actions(self):
        for name, code in (("detect", 1), ("fix", 2), ("abort", 3), ("zero_padding", 4), ("default", 0)):
            _, _, d = self.desc_for(FakeTensor((2, 2)), action=name)
            self.assertEqual(d["action"], code, name)


class Calls(HelperTest):
    """The C calls the helper makes, and what it keeps alive."""

    def test_watch_with_seq_lens(self):
        lib = self.use_fake()
        t, seq = FakeTensor((8, 64), "float32", ptr=0x1000000), FakeTensor((8,), "int32", ptr=0x2000000)
        w = nanscope.watch(t, name="probs", seq_lens=seq, action="fix", pad_value=0)
        self.assertEqual(lib.names()[0], "nanscope_init")
        (spec_args,) = lib.args("nanscope_padding_spec_seq_lens")
        self.assertEqual(spec_args[1:], (8, 0x2000000, nanscope.INDEX_INT32, 0))
        spec = arg_obj(spec_args[0]).value
        self.assertEqual(lib.descs[-1]["padding"], spec)
        self.assertEqual(lib.descs[-1]["action"], nanscope.ACTION_FIX)
        (destroyed,) = lib.args("nanscope_padding_spec_destroy")  # the watch holds a copy
        self.assertEqual(arg_obj(destroyed[0]).value, spec)
        self.assertIs(w.tensor, t)
        self.assertIs(w.padding_source, seq)  # graph-static buffers stay alive
        self.assertEqual(nanscope.watches(), [w])
        self.assertTrue(w.active)
        with w:
            pass
        self.assertFalse(w.active)
        self.assertEqual(len(lib.args("nanscope_unwatch")), 1)
        self.assertEqual(nanscope.watches(), [])
        self.assertIsNone(w.tensor)
        w.unwatch()  # idempotent
        nanscope.unwatch(w)
        self.assertEqual(len(lib.args("nanscope_unwatch")), 1)

    def test_int64_seq_lens_and_pad_value(self):
        lib = self.use_fake()
        nanscope.watch(FakeTensor((4, 4)), seq_lens=FakeTensor((4,), "int64", ptr=0x42), pad_value=-1)
        (args,) = lib.args("nanscope_padding_spec_seq_lens")
        self.assertEqual(args[1:], (4, 0x42, nanscope.INDEX_INT64, -1))

    def test_num_real_host_and_device(self):
        lib = self.use_fake()
        nanscope.watch(FakeTensor((8, 4)), num_real=5)
        self.assertEqual(lib.args("nanscope_padding_spec_real_rows")[0][1:], (8, 5))
        count = FakeTensor((1,), "int64", ptr=0x77)
        w = nanscope.watch(FakeTensor((8, 4)), num_real=count)
        self.assertEqual(lib.args("nanscope_padding_spec_real_rows_device")[0][1:], (8, 0x77, nanscope.INDEX_INT64))
        self.assertIs(w.padding_source, count)

    def test_mask(self):
        lib = self.use_fake()
        nanscope.watch(FakeTensor((8, 4)), mask=FakeTensor((8,), "bool", ptr=0x99))
        self.assertEqual(lib.args("nanscope_padding_spec_mask")[0][1:], (8, 0x99))

    def test_c_error_is_runtime_error(self):
        lib = self.use_fake()
        lib.fail["nanscope_watch"] = 1
        lib.last_error = b"nanscope_watch 'x': row_stride 2 is smaller than row_elements 4"
        with self.assertRaisesRegex(RuntimeError, r"nanscope_watch: invalid argument: .*row_stride 2"):
            nanscope.watch(FakeTensor((8, 4)), name="x", seq_lens=FakeTensor((8,), "int32"))
        self.assertEqual(len(lib.args("nanscope_padding_spec_destroy")), 1)  # no leaked spec
        self.assertEqual(nanscope.watches(), [])

    def test_init_failure(self):
        lib = self.use_fake()
        lib.fail["nanscope_init"] = 3
        lib.last_error = b"stale message from an earlier call"
        with self.assertRaises(RuntimeError) as cm:
            nanscope.enable()
        self.assertEqual(str(cm.exception), "nanscope_init: unavailable")
        self.assertFalse(nanscope.enabled())

    def test_enable_is_idempotent(self):
        lib = self.use_fake()
        self.assertEqual(nanscope.enable(), "/fake/libnanscope.so")
        nanscope.enable()
        nanscope.watch(FakeTensor((2, 2)))
        self.assertEqual(lib.names().count("nanscope_init"), 1)

    def test_flush_and_stats(self):
        lib = self.use_fake()
        nanscope.flush()
        self.assertEqual(nanscope.stats()["launches"], 3)
        self.assertIn("nanscope_flush", lib.names())
        self.assertEqual(nanscope.version(), "0.1.0")

    def test_padding_scopes_nest(self):
        lib = self.use_fake()
        outer_src = FakeTensor((8,), "int32", ptr=0x10)
        with nanscope.padding(seq_lens=outer_src) as outer:
            self.assertEqual(outer.rows, 8)
            self.assertIs(outer.tensor, outer_src)
            with nanscope.padding(num_real=3, rows=8):
                pass
            self.assertTrue(outer.active)
        self.assertFalse(outer.active)
        specs = lib.global_specs
        self.assertEqual(len(specs), 4)  # outer, inner, outer again, clear
        self.assertIsNotNone(specs[0])
        self.assertNotEqual(specs[0], specs[1])
        self.assertIsNone(specs[3])
        self.assertEqual(lib.names().count("nanscope_padding_clear_global"), 1)
        self.assertEqual(lib.names().count("nanscope_padding_set_global"), 3)
        self.assertEqual(len(lib.args("nanscope_padding_spec_destroy")), 3)  # every spec made is destroyed
        self.assertEqual(nanscope._padding_stack, [])

    def test_padding_close_without_with(self):
        lib = self.use_fake()
        p = nanscope.padding(mask=FakeTensor((4,), "uint8"))
        self.assertTrue(p.active)
        p.close()
        p.close()
        self.assertEqual(lib.names().count("nanscope_padding_clear_global"), 1)


class Library(HelperTest):
    """Finding libnanscope."""

    def setUp(self):
        super().setUp()
        self.env = dict(os.environ)
        self.real_mapped = nanscope._mapped_library
        nanscope._mapped_library = lambda: None

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.env)
        nanscope._mapped_library = self.real_mapped
        super().tearDown()

    def test_order(self):
        os.environ["NANSCOPE_LIBRARY"] = "/a/libnanscope.so"
        os.environ["CUDA_INJECTION64_PATH"] = "/b/libnanscope.so"
        os.environ["LD_PRELOAD"] = "/x/libother.so:/c/libnanscope.so.0"
        paths = [p for p, _ in nanscope._candidates()]
        self.assertEqual(paths[:3], ["/a/libnanscope.so", "/b/libnanscope.so", "/c/libnanscope.so.0"])
        self.assertEqual(paths[3], os.path.join(os.path.dirname(nanscope.__file__), "lib", "libnanscope.so"))
        if not INSTALLED:
            self.assertEqual(paths[4], os.path.join(ROOT, "build", "lib", "libnanscope.so"))

    def test_other_injection_ignored(self):
        os.environ.pop("NANSCOPE_LIBRARY", None)
        os.environ["CUDA_INJECTION64_PATH"] = "/opt/other/libinject.so"
        os.environ["LD_PRELOAD"] = ""
        paths = [p for p, _ in nanscope._candidates()]
        self.assertNotIn("/opt/other/libinject.so", paths)

    def test_already_loaded_first(self):
        nanscope._mapped_library = lambda: "/m/libnanscope.so"
        os.environ["NANSCOPE_LIBRARY"] = "/a/libnanscope.so"
        self.assertEqual(nanscope._candidates()[0][0], "/m/libnanscope.so")

    def test_not_found_message(self):
        os.environ["NANSCOPE_LIBRARY"] = "/nonexistent/libnanscope.so"
        real = nanscope._candidates
        nanscope._candidates = lambda: [p for p in real() if p[0].startswith("/nonexistent")]
        try:
            with self.assertRaisesRegex(RuntimeError, r"(?s)cannot find libnanscope\.so; set NANSCOPE_LIBRARY.*"
                                                      r"/nonexistent/libnanscope\.so \(NANSCOPE_LIBRARY: no such file"):
                nanscope.enable()
        finally:
            nanscope._candidates = real

    def test_import_without_torch(self):
        code = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, %r); import nanscope; "
                "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]; print('ok')"
                % os.path.dirname(os.path.dirname(os.path.abspath(nanscope.__file__))))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "ok")


def header_text():
    with open(HEADER) as f:
        return f.read()


class Abi(unittest.TestCase):
    """The ctypes mirror matches include/nanscope/nanscope.h."""

    def test_watch_desc_offsets_lp64(self):
        if ctypes.sizeof(ctypes.c_void_p) != 8:
            self.skipTest("LP64 only")
        expected = {"struct_size": 0, "name": 8, "ptr": 16, "dtype": 24, "rows": 32, "row_elements": 40,
                    "row_stride": 48, "action": 56, "padding": 64}
        got = {n: getattr(nanscope.WatchDesc, n).offset for n, _ in nanscope.WatchDesc._fields_}
        self.assertEqual(got, expected)
        self.assertEqual(ctypes.sizeof(nanscope.WatchDesc), 72)
        self.assertEqual(ctypes.sizeof(nanscope.Stats), 64)

    def test_fields_follow_the_header(self):
        text = header_text()
        for struct, cls in (("nanscope_watch_desc_t", nanscope.WatchDesc), ("nanscope_stats_t", nanscope.Stats)):
            body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (struct, struct), text, re.S).group(1)
            body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
            names = re.findall(r"(\w+)\s*;", body)
            self.assertEqual(names, [n for n, _ in cls._fields_], struct)
            self.assertEqual(names[0], "struct_size")

    def test_enums_follow_the_header(self):
        text = header_text()
        values = {m.group(1): int(m.group(2)) for m in re.finditer(r"\b(NANSCOPE_\w+)\s*=\s*(\d+)\s*,", text)}
        header_dtypes = {n[len("NANSCOPE_DTYPE_"):]: v for n, v in values.items() if n.startswith("NANSCOPE_DTYPE_")}
        self.assertEqual({suffix: code for suffix, code, _, _ in nanscope.DTYPE_TABLE}, header_dtypes)
        for name, code in nanscope.ACTIONS.items():
            self.assertEqual(values["NANSCOPE_ACTION_" + name.upper()], code, name)
        self.assertEqual(values["NANSCOPE_INDEX_INT32"], nanscope.INDEX_INT32)
        self.assertEqual(values["NANSCOPE_INDEX_INT64"], nanscope.INDEX_INT64)
        self.assertEqual(values["NANSCOPE_SUCCESS"], nanscope.SUCCESS)

    def test_dtype_bytes_follow_the_scan_abi(self):
        # src/scan_abi.h: NANSCOPE_SCAN_DTYPES(X) rows X(SUFFIX, name, code, bytes), the C++ list.
        with open(os.path.join(ROOT, "src", "scan_abi.h")) as f:
            rows = re.findall(r"X\((\w+), (\w+), (\d+), (\d+)\)", f.read())
        self.assertTrue(rows)
        self.assertEqual({s: (int(c), int(b)) for s, _, c, b in rows},
                         {s: (c, b) for s, c, b, _ in nanscope.DTYPE_TABLE})

    def test_prototypes_are_in_the_header(self):
        declared = set(re.findall(r"NANSCOPE_API\s+[\w\s\*]+?\b(nanscope_\w+)\s*\(", header_text()))
        for name in nanscope._PROTOTYPES:
            self.assertIn(name, declared)

    def test_sizes_from_a_c_compiler(self):
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if not cc:
            self.skipTest("no C compiler")
        fields = [n for n, _ in nanscope.WatchDesc._fields_]
        src = ["#include <stdio.h>", "#include <stddef.h>", '#include "nanscope/nanscope.h"', "int main(void) {",
               '  printf("desc %zu\\n", sizeof(nanscope_watch_desc_t));',
               '  printf("stats %zu\\n", sizeof(nanscope_stats_t));']
        src += ['  printf("%s %%zu\\n", offsetof(nanscope_watch_desc_t, %s));' % (f, f) for f in fields]
        src += ["  return 0;", "}"]
        with tempfile.TemporaryDirectory() as tmp:
            c, exe = os.path.join(tmp, "abi.c"), os.path.join(tmp, "abi")
            with open(c, "w") as f:
                f.write("\n".join(src) + "\n")
            r = subprocess.run([cc, "-std=c11", "-I", os.path.join(ROOT, "include"), c, "-o", exe],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
        got = dict((k, int(v)) for k, v in (line.split() for line in out.splitlines()))
        self.assertEqual(got.pop("desc"), ctypes.sizeof(nanscope.WatchDesc))
        self.assertEqual(got.pop("stats"), ctypes.sizeof(nanscope.Stats))
        for f in fields:
            self.assertEqual(got[f], getattr(nanscope.WatchDesc, f).offset, f)


if __name__ == "__main__":
    unittest.main()
