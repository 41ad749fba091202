"""nanscope's sitecustomize: `nanscope -- python app.py` puts this folder first on PYTHONPATH.

At start-up of every Python program it launches (and their Python children) it:
  1. takes this folder off sys.path again, so the program sees the sys.path it would have had;
  2. lets `import nanscope` find the helper this launcher came with (the same version as the
     library it injects), without touching sys.path: a finder that answers for `nanscope` only;
  3. finds the nvidia-cuda-cupti wheel over this Python's sys.path, as torch finds its CUDA
     libraries, and tells the injected library (NANSCOPE_CUPTI_PYTHON) unless NANSCOPE_CUPTI
     names one;
  4. installs the torch.compile hook (nanscope/_inductor_lines.py): when Inductor is imported, the
     map from its generated lines to the model's lines goes to the injected library;
  5. runs the sitecustomize that would have run without nanscope, if any (as ddtrace-run does).
Failures in 1-4 print one line and change nothing else; the program always runs.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.dirname(HERE)  # .../nanscope
CUPTI_SONAME = "libcupti.so.13"
# Relative to a sys.path entry; the same table as src/cupti_search.cpp (tests/python checks).
NVIDIA_WHEEL_LIB_DIRS = ("nvidia/cu13/lib", "nvidia/cuda_cupti/lib")


def _same_dir(entry):
    try:
        return os.path.abspath(entry or os.curdir) == HERE
    except (TypeError, ValueError):
        return False


def find_wheel_cupti(path_entries):
    """The first libcupti.so.13 of an nvidia-cuda-cupti wheel in path_entries (like sys.path)."""
    for entry in path_entries:
        if not isinstance(entry, str) or not entry:
            continue
        for rel in NVIDIA_WHEEL_LIB_DIRS:
            candidate = os.path.join(entry, rel, CUPTI_SONAME)
            if os.path.isfile(candidate):
                return candidate
    return None


class NanscopeFinder:
    """Answers `import nanscope` (and its submodules, through the package's __path__) with the
    helper beside this file, and nothing else."""

    def __init__(self, package_dir):
        self.package_dir = package_dir

    def find_spec(self, name, path=None, target=None):
        if name != "nanscope":
            return None
        import importlib.util

        init = os.path.join(self.package_dir, "__init__.py")
        return importlib.util.spec_from_file_location(name, init, submodule_search_locations=[self.package_dir])

    def invalidate_caches(self):
        pass


def install(meta_path=None, path=None, environ=None):
    """Steps 1-3 on the given lists (the real ones by default)."""
    meta_path = sys.meta_path if meta_path is None else meta_path
    path = sys.path if path is None else path
    environ = os.environ if environ is None else environ
    path[:] = [p for p in path if not _same_dir(p)]
    if not any(isinstance(f, NanscopeFinder) for f in meta_path):
        meta_path.insert(0, NanscopeFinder(PACKAGE_DIR))
    if not environ.get("NANSCOPE_CUPTI"):
        found = find_wheel_cupti(path)
        if found:
            environ["NANSCOPE_CUPTI_PYTHON"] = found
        else:
            environ.pop("NANSCOPE_CUPTI_PYTHON", None)  # a parent's, from another sys.path


def chain():
    """Step 5: the next sitecustomize on sys.path runs as `sitecustomize`; its errors are its own
    and reach site.py as they would have without nanscope."""
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None or (spec.origin and os.path.dirname(os.path.abspath(spec.origin)) == HERE):
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if __name__ == "sitecustomize":  # imported by site.py at start-up; tests load it by another name
    try:
        install()
    except Exception as e:  # never stop the program for nanscope's sake
        sys.stderr.write(f"nanscope: sitecustomize: {type(e).__name__}: {e}; `import nanscope` may need PYTHONPATH\n")
    try:
        from nanscope import _inductor_lines

        _inductor_lines.install()
    except Exception as e:
        sys.stderr.write(f"nanscope: sitecustomize: {type(e).__name__}: {e}; torch.compile findings name the "
                         "model's calling frame\n")
    chain()
