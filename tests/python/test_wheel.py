"""CPU tests of what the wheel adds to the helper (docs/wheel.md): the one version of package and
library, the launcher's Python side (python/nanscope/_launcher.py) and the sitecustomize that
`nanscope --` puts on PYTHONPATH (python/nanscope/_bootstrap/sitecustomize.py). With
NANSCOPE_TEST_INSTALLED=1 they test the installed package (.ci/wheel_check.sh).
"""
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSTALLED = os.environ.get("NANSCOPE_TEST_INSTALLED") == "1"
if not INSTALLED:
    sys.path.insert(0, os.path.join(ROOT, "python"))

import nanscope  # noqa: E402
from nanscope import _launcher  # noqa: E402

PACKAGE_DIR = os.path.dirname(os.path.abspath(nanscope.__file__))
BOOTSTRAP = os.path.join(PACKAGE_DIR, "_bootstrap", "sitecustomize.py")


def load_bootstrap():
    """The sitecustomize as a plain module: under another name it installs nothing."""
    spec = importlib.util.spec_from_file_location("nanscope_bootstrap_under_test", BOOTSTRAP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").close()
    return path


def header_version():
    with open(os.path.join(ROOT, "include", "nanscope", "version.h")) as f:
        return re.search(r'#define NANSCOPE_VERSION_STRING "([^"]+)"', f.read()).group(1)


class Version(unittest.TestCase):
    def test_package_version_is_the_headers(self):
        self.assertEqual(nanscope.__version__, header_version())

    def test_mismatch_is_a_clear_error(self):
        with self.assertRaisesRegex(RuntimeError, r"version mismatch: the Python helper .* is %s, but "
                                                  r"/x/libnanscope\.so is libnanscope 9\.9\.9" % re.escape(
                                                      nanscope.__version__)):
            nanscope._check_version("9.9.9", "/x/libnanscope.so")
        nanscope._check_version(nanscope.__version__, "/x/libnanscope.so")  # same version: fine

    def test_load_refuses_a_library_of_another_version(self):
        class OtherVersion:
            def __getattr__(self, name):
                if name == "nanscope_version":
                    return lambda: b"9.9.9"
                raise AttributeError(name)

        saved = (nanscope._lib, nanscope._lib_path, nanscope._candidates, nanscope.ctypes.CDLL)
        with tempfile.NamedTemporaryFile(suffix="libnanscope.so") as f:
            try:
                nanscope._lib = nanscope._lib_path = None
                nanscope._candidates = lambda: [(f.name, "test")]
                nanscope.ctypes.CDLL = lambda path: OtherVersion()
                with self.assertRaisesRegex(RuntimeError, "version mismatch"):
                    nanscope.enable()
                self.assertIsNone(nanscope._lib)  # nothing half-loaded
            finally:
                nanscope._lib, nanscope._lib_path, nanscope._candidates, nanscope.ctypes.CDLL = saved

    def test_version_from_header(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "version.h")
            with open(path, "w") as f:
                f.write('#define NANSCOPE_VERSION_MAJOR 3\n#define NANSCOPE_VERSION_STRING "3.4.5"\n')
            self.assertEqual(nanscope._versions.version_from_header(path), "3.4.5")
            self.assertIsNone(nanscope._versions.version_from_header(os.path.join(d, "missing.h")))


class LibraryPath(unittest.TestCase):
    def test_bundled_library_resolves_without_loading(self):
        saved = (nanscope._lib_path, nanscope._candidates)
        with tempfile.TemporaryDirectory() as d:
            bundled = touch(os.path.join(d, "lib", "libnanscope.so"))
            try:
                nanscope._lib_path = None
                nanscope._candidates = lambda: [("/nonexistent/libnanscope.so", "a"), ("libnanscope.so", "bare"),
                                                (bundled, "bundled with this package")]
                self.assertEqual(nanscope.library_path(), bundled)
                nanscope._candidates = lambda: [("/nonexistent/libnanscope.so", "a")]
                self.assertIsNone(nanscope.library_path())
            finally:
                nanscope._lib_path, nanscope._candidates = saved

    def test_installed_package_has_its_library_and_launcher(self):
        if not INSTALLED:
            self.skipTest("source tree: the library is in build/lib, the launcher in build/bin")
        self.assertEqual(nanscope.library_path(), os.path.join(PACKAGE_DIR, "lib", "libnanscope.so"))
        self.assertEqual(_launcher.launcher_path(), os.path.join(PACKAGE_DIR, "bin", "nanscope"))


class Launcher(unittest.TestCase):
    def test_bootstrap_goes_first_once(self):
        boot = _launcher.BOOTSTRAP_DIR
        self.assertEqual(_launcher.with_bootstrap(None), boot)
        self.assertEqual(_launcher.with_bootstrap("/a" + os.pathsep + "/b"), os.pathsep.join([boot, "/a", "/b"]))
        self.assertEqual(_launcher.with_bootstrap(os.pathsep.join(["/a", boot])), os.pathsep.join([boot, "/a"]))

    def test_python_m_runs_scripts_with_this_interpreter(self):
        run = _launcher.run_python_scripts_here
        self.assertEqual(run(["--log", "x", "--", "app.py", "1"], "/py"), ["--log", "x", "--", "/py", "app.py", "1"])
        self.assertEqual(run(["--", "python3", "app.py"], "/py"), ["--", "python3", "app.py"])
        self.assertEqual(run(["--version"], "/py"), ["--version"])
        self.assertEqual(run(["--"], "/py"), ["--"])

    def test_no_launcher_is_a_clear_error(self):
        if _launcher.launcher_path() is not None:
            self.skipTest("an installed package: its launcher is there")
        err = subprocess.run([sys.executable, "-c", "import sys; from nanscope._launcher import main; sys.exit(main(['--version']))"],
                             capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.path.dirname(PACKAGE_DIR)))
        self.assertEqual(err.returncode, 2)
        self.assertIn("no launcher in", err.stderr)


class Bootstrap(unittest.TestCase):
    def setUp(self):
        self.boot = load_bootstrap()
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_cupti_table_is_the_libraries(self):
        with open(os.path.join(ROOT, "src", "cupti_search.cpp")) as f:
            text = f.read()
        dirs = re.search(r"dirs = \{([^}]*)\}", text).group(1)
        self.assertEqual(tuple(re.findall(r'"([^"]+)"', dirs)), self.boot.NVIDIA_WHEEL_LIB_DIRS)

    def test_finds_the_first_wheel_cupti_on_the_path(self):
        d = self.tmp.name
        old = touch(os.path.join(d, "b", "nvidia", "cuda_cupti", "lib", "libcupti.so.13"))
        new = touch(os.path.join(d, "c", "nvidia", "cu13", "lib", "libcupti.so.13"))
        touch(os.path.join(d, "a", "nvidia", "cu13", "lib", "libcupti.so.12"))  # another major: not ours
        entries = ["", os.path.join(d, "a"), os.path.join(d, "b"), os.path.join(d, "c"), None]
        self.assertEqual(self.boot.find_wheel_cupti(entries), old)
        self.assertEqual(self.boot.find_wheel_cupti(entries[3:]), new)
        self.assertIsNone(self.boot.find_wheel_cupti([os.path.join(d, "a")]))

    def test_install_restores_the_path_and_answers_only_for_nanscope(self):
        site = os.path.join(self.tmp.name, "site")
        cupti = touch(os.path.join(site, "nvidia", "cu13", "lib", "libcupti.so.13"))
        meta, path, env = [], [self.boot.HERE, "/x", site], {"NANSCOPE_CUPTI_PYTHON": "/stale"}
        self.boot.install(meta, path, env)
        self.boot.install(meta, path, env)  # a child Python of a child: still one finder
        self.assertEqual(path, ["/x", site])
        self.assertEqual(len(meta), 1)
        self.assertEqual(env["NANSCOPE_CUPTI_PYTHON"], cupti)
        spec = meta[0].find_spec("nanscope")
        self.assertEqual(spec.origin, os.path.join(PACKAGE_DIR, "__init__.py"))
        self.assertIsNone(meta[0].find_spec("numpy"))
        env = {"NANSCOPE_CUPTI": "/mine/libcupti.so.13"}
        self.boot.install([], [site], env)
        self.assertNotIn("NANSCOPE_CUPTI_PYTHON", env)  # the user's choice stands
        env = {"NANSCOPE_CUPTI_PYTHON": "/stale"}
        self.boot.install([], ["/x"], env)
        self.assertNotIn("NANSCOPE_CUPTI_PYTHON", env)

    def test_a_python_started_with_it_imports_nanscope_and_chains(self):
        """What `nanscope -- python ...` does, without the launcher: PYTHONPATH=<bootstrap>:<site of
        the user's own sitecustomize>, in a folder from which nanscope is not importable."""
        user = os.path.join(self.tmp.name, "user")
        os.makedirs(user)
        with open(os.path.join(user, "sitecustomize.py"), "w") as f:
            f.write("import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = '1'\n")
        code = ("import os, sys, nanscope; print(nanscope.__file__); print(os.environ.get('USER_SITECUSTOMIZE_RAN')); "
                "print(any(p.rstrip('/').endswith('_bootstrap') for p in sys.path)); "
                "print(type(sys.modules['sitecustomize']).__name__, sys.modules['sitecustomize'].__file__)")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH")}
        env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(BOOTSTRAP), user])
        p = subprocess.run([sys.executable, "-c", code], cwd=self.tmp.name, env=env,
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], os.path.join(PACKAGE_DIR, "__init__.py"))
        self.assertEqual(lines[1], "1", "the user's sitecustomize did not run")
        self.assertEqual(lines[2], "False", "the bootstrap folder stayed on sys.path")
        self.assertEqual(lines[3].split()[1], os.path.join(user, "sitecustomize.py"))
        self.assertEqual(p.stderr, "")


if __name__ == "__main__":
    unittest.main()
