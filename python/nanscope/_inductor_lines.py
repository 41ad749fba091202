"""torch.compile: the model's own line for kernels launched from Inductor's output code.

Inductor writes each compiled graph as a Python module (its output code) whose `call` launches
the kernels, and keeps, per module, the first line it emitted for each FX node with that node's
stack trace in the user's program (`torch._inductor.codecache.PyCodeCache.linemaps`: what
Inductor itself uses to name the model's line in an error). The injected library reads the
launching thread's frames without running Python, so it cannot ask for them when a kernel
launches. This module hands each map to it when Inductor loads the module
(`nanscope_python_line_origin`, include/nanscope/nanscope.h), once per module.

It wraps `PyCodeCache.load_by_key_path` when `torch._inductor.codecache` is imported (a
post-import hook: nothing is imported early; where it is imported already, at once), and only
talks to a libnanscope already mapped into the process: it never loads one. Any failure writes
one line to stderr and leaves Inductor as it was.

With CUDA graphs (`mode="reduce-overhead"`), Inductor emits each graph partition as a function of
its own, generated with its own line map, and splices the partition's text into the module,
dropping that map (torch 2.11: `PythonWrapperCodegen.define_subgraph_launcher_fn` is one line,
`self.subgraph_definitions.splice(subgraph_code.value)`); the module's map is then empty. Where
that method is exactly this line, it is replaced by the same splice that keeps the partition's
line contexts in place: the module's text is unchanged, and its map (Inductor's own, for its
own errors too) names the partition's lines. Any other body is left alone.
"""
import ctypes
import functools
import inspect
import os
import sys
import textwrap
import threading

CODECACHE = "torch._inductor.codecache"
WRAPPER = "torch._inductor.codegen.wrapper"
SPLICE_DROPPING_LINES = "self.subgraph_definitions.splice(subgraph_code.value)"
MAX_FILES = 8192  # output-code modules remembered as sent (the library keeps 4096)
SUCCESS = 0

_lock = threading.Lock()
_sent = set()  # output-code paths already handed over
_warned = []   # the one warning this module may write


def warn_once(message):
    with _lock:
        if _warned:
            return
        _warned.append(message)
    sys.stderr.write(f"nanscope: {message}\n")


def linemap_entries(linemaps, path):
    """[(generated line, traceback text or None)] of `path` in PyCodeCache.linemaps, as torch
    keeps it: a pair (lines, stack traces), unzipped from Inductor's [(line, stack_trace)]."""
    try:
        entry = linemaps.get(path)
    except (AttributeError, TypeError):
        return []
    if not entry or len(entry) != 2:
        return []
    lines, traces = entry
    out = []
    for line, trace in zip(lines, traces):
        if isinstance(line, int) and not isinstance(line, bool) and 0 < line < 2**32:
            out.append((line, trace if isinstance(trace, str) and trace else None))
    return out


def mapped_library():
    """The libnanscope mapped into this process, as a ctypes handle, or None (never loads one)."""
    from nanscope import _mapped_library  # the package's own lookup in /proc/self/maps

    path = _mapped_library()
    if not path:
        return None
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
        fn = lib.nanscope_python_line_origin
    except (OSError, AttributeError):  # unmapped meanwhile, or an older library without it
        return None
    fn.restype = ctypes.c_int32
    fn.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p]
    lib.nanscope_last_error.restype = ctypes.c_char_p
    return lib


def send(lib, path, entries):
    """Hands one module's map to the library; False (after one warning) when it refuses."""
    encoded = os.fsencode(path)
    for line, trace in entries:
        status = lib.nanscope_python_line_origin(encoded, line, trace.encode("utf-8", "replace") if trace else None)
        if status != SUCCESS:
            detail = lib.nanscope_last_error() if hasattr(lib, "nanscope_last_error") else b""
            if isinstance(detail, bytes):
                detail = detail.decode("utf-8", "replace")
            warn_once(f"torch.compile lines: the library refused a generated line ({detail or status}); "
                      "findings from compiled code name the model's calling frame instead")
            return False
    return True


def defines_partitions(path):
    """Whether the output code Inductor is loading from `path` defines graph partitions."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return any(line.startswith("def partition_") for line in f)
    except OSError:
        return False


def say_if_unmapped(path):
    """A module with graph partitions and no line map came from Inductor's cache, saved by a run
    without this hook (the map a cached graph keeps is the one it was saved with): said once."""
    if not _warned and defines_partitions(path):
        warn_once(f"torch.compile lines: Inductor took {path} from its cache without its partitions' line map "
                  "(saved by a run without nanscope); its kernels are named at the model's calling frame. "
                  "TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 or a fresh TORCHINDUCTOR_CACHE_DIR compiles it with the map")


def tell(linemaps, path, library=None):
    """Sends `path`'s map once, when a library is mapped (`library`: how to find it, for tests)."""
    with _lock:
        if path in _sent or len(_sent) >= MAX_FILES:
            return False
    entries = linemap_entries(linemaps, path)
    if not entries:
        say_if_unmapped(path)
    lib = (library or mapped_library)() if entries else None
    if lib is None:
        return False
    with _lock:
        if path in _sent:
            return False
        _sent.add(path)
    return send(lib, path, entries)


def patch(codecache, library=None):
    """Wraps codecache.PyCodeCache.load_by_key_path (once), then sends the maps already loaded."""
    cache = getattr(codecache, "PyCodeCache", None)
    raw = vars(cache).get("load_by_key_path") if isinstance(cache, type) else None
    if not isinstance(raw, classmethod):
        warn_once("torch.compile lines: torch._inductor.codecache.PyCodeCache.load_by_key_path is not the "
                  "classmethod nanscope knows; findings from compiled code name the model's calling frame")
        return False
    original = raw.__func__
    if not getattr(original, "_nanscope_wrapped", False):

        @functools.wraps(original)
        def load_by_key_path(cls, key, path, *args, **kwargs):
            module = original(cls, key, path, *args, **kwargs)
            try:
                tell(getattr(cls, "linemaps", None), path, library)
            except Exception as e:  # never break Inductor for nanscope's sake
                warn_once(f"torch.compile lines: {type(e).__name__}: {e}")
            return module

        load_by_key_path._nanscope_wrapped = True
        cache.load_by_key_path = classmethod(load_by_key_path)
    linemaps = getattr(cache, "linemaps", None)
    for path in list(linemaps) if isinstance(linemaps, dict) else []:
        tell(linemaps, path, library)
    return True


def splice_keeping_lines(buffer, code, line_context):
    """buffer.splice(code.value) as IndentedBuffer splices a string (dedented, trailing blanks
    cut, one writeline per line), with each (line, context) of code.line_map written as
    line_context(context) before its line, as getvaluewithlinemap counts lines."""
    text = textwrap.dedent(code.value)
    if not text:
        return
    text = text.rstrip()
    entries = sorted(code.line_map, key=lambda entry: entry[0])
    k = 0
    for number, line in enumerate(text.split("\n"), start=1):
        while k < len(entries) and entries[k][0] <= number:
            buffer.writeline(line_context(entries[k][1]))
            k += 1
        buffer.writeline(line)


def drops_partition_lines(method):
    """Whether `method`'s body is exactly the one line that drops a partition's line map."""
    try:
        source = textwrap.dedent(inspect.getsource(method)).strip().splitlines()
    except (OSError, TypeError):
        return False
    body = [line.strip() for line in source[1:] if line.strip()]
    return bool(source) and source[0].startswith("def define_subgraph_launcher_fn(") and body == [SPLICE_DROPPING_LINES]


def patch_wrapper(wrapper, line_context=None, indented_buffer=None):
    """Partitions keep their lines in the module's map (see the module's docstring)."""
    codegen = getattr(wrapper, "PythonWrapperCodegen", None)
    original = vars(codegen).get("define_subgraph_launcher_fn") if isinstance(codegen, type) else None
    if original is None or getattr(original, "_nanscope_wrapped", False):
        return original is not None
    if not drops_partition_lines(original):
        return False  # another torch: its own splice stands
    if line_context is None or indented_buffer is None:
        from torch._inductor.utils import IndentedBuffer, LineContext

        line_context, indented_buffer = LineContext, IndentedBuffer

    @functools.wraps(original)
    def define_subgraph_launcher_fn(self, name, subgraph_code):
        target = getattr(self, "subgraph_definitions", None)
        value, line_map = getattr(subgraph_code, "value", None), getattr(subgraph_code, "line_map", None)
        if not isinstance(target, indented_buffer) or not isinstance(value, str) or not isinstance(line_map, list):
            return original(self, name, subgraph_code)
        splice_keeping_lines(target, subgraph_code, line_context)

    define_subgraph_launcher_fn._nanscope_wrapped = True
    codegen.define_subgraph_launcher_fn = define_subgraph_launcher_fn
    return True


# What each watched module gets once it has run.
PATCHES = {CODECACHE: lambda module: patch(module), WRAPPER: lambda module: patch_wrapper(module)}


class _PatchingLoader:
    """The loader that found torch._inductor.codecache, patching the module once it has run."""

    def __init__(self, loader, name):
        self._loader = loader
        self._name = name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            PATCHES[self._name](module)
        except Exception as e:
            warn_once(f"torch.compile lines: {type(e).__name__}: {e}")

    def __getattr__(self, name):  # get_source, get_filename, ... as the real loader answers
        return getattr(self._loader, name)


class PostImportFinder:
    """Finds nothing itself: for the modules in PATCHES it asks the finders after it and wraps
    the loader they give."""

    def find_spec(self, name, path=None, target=None):
        if name not in PATCHES:
            return None
        finders = sys.meta_path[sys.meta_path.index(self) + 1:] if self in sys.meta_path else []
        for finder in finders:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchingLoader(spec.loader, name)
                return spec
        return None

    def invalidate_caches(self):
        pass


def lines_off(environ=None):
    """NANSCOPE_PYTHON_LINE=0, as src/config.cpp reads it (any case of 0/off/false/no)."""
    value = (os.environ if environ is None else environ).get("NANSCOPE_PYTHON_LINE", "")
    return value.lower() in ("0", "off", "false", "no")


def install(meta_path=None, modules=None, environ=None):
    """Patches Inductor's modules now where they are imported, else when they are; at most one
    finder."""
    if lines_off(environ):
        return False
    meta_path = sys.meta_path if meta_path is None else meta_path
    modules = sys.modules if modules is None else modules
    for name, apply in PATCHES.items():
        if name in modules:
            apply(modules[name])
    if not all(name in modules for name in PATCHES) and not any(isinstance(f, PostImportFinder) for f in meta_path):
        meta_path.insert(0, PostImportFinder())
    return True
