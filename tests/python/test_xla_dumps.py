"""CPU tests of python/nanscope/_xla.py: when nanscope.enable() adds XLA's dump flags (a JAX
program started from Python, not under `nanscope --`), and the flags it adds."""
import os
import shutil
import sys
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.environ.get("NANSCOPE_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(ROOT, "python"))

from nanscope import _xla  # noqa: E402


def bridge(backends):
    m = types.ModuleType("jax._src.xla_bridge")
    if backends is not None:
        m._backends = backends
    return {"jax._src.xla_bridge": m}


class XlaDumps(unittest.TestCase):
    def test_xla_started_is_told_from_jaxs_backends(self):
        self.assertIs(_xla.xla_started({}), False)  # JAX not imported
        self.assertIs(_xla.xla_started(bridge({})), False)  # imported, no backend made
        self.assertIs(_xla.xla_started(bridge({"cuda": object()})), True)
        self.assertIsNone(_xla.xla_started(bridge(None)))  # internals moved: cannot tell

    def test_the_plan_adds_dumps_only_before_xla_reads_its_flags(self):
        self.assertTrue(_xla.dump_plan({}, {}, True))
        self.assertTrue(_xla.dump_plan({"XLA_FLAGS": "--xla_gpu_autotune_level=0"}, bridge({}), True))
        self.assertFalse(_xla.dump_plan({}, {}, False), "no JAX installed")
        self.assertFalse(_xla.dump_plan({}, bridge({"cuda": 1}), True), "XLA read its flags already")
        self.assertFalse(_xla.dump_plan({}, bridge(None), True), "cannot tell: the library warns instead")
        self.assertFalse(_xla.dump_plan({"NANSCOPE_XLA_DUMP": "off"}, {}, True), "the user's choice")
        self.assertFalse(_xla.dump_plan({"NANSCOPE_XLA_DUMP": "/tmp/d"}, {}, True), "the launcher's")
        self.assertFalse(_xla.dump_plan({"XLA_FLAGS": "--xla_dump_to=/data/mine"}, {}, True), "theirs is read")

    def test_the_flags_are_the_launchers(self):
        # The same strings tests/unit/test_xla_flags.cpp checks flags_with_dumps for.
        self.assertEqual(_xla.with_dumps("", "/tmp/nanscope-xla-1"),
                         "--xla_dump_to=/tmp/nanscope-xla-1 --xla_dump_hlo_as_text")
        self.assertEqual(_xla.with_dumps("--xla_gpu_autotune_level=0", "/tmp/n"),
                         "--xla_gpu_autotune_level=0 --xla_dump_to=/tmp/n --xla_dump_hlo_as_text")
        self.assertEqual(_xla.with_dumps("--xla_dump_hlo_as_text=true", "/tmp/n"),
                         "--xla_dump_hlo_as_text=true --xla_dump_to=/tmp/n")

    def test_add_dumps_sets_both_variables_and_makes_a_private_directory(self):
        env = {"XLA_FLAGS": "--xla_gpu_autotune_level=0"}
        directory = _xla.add_dumps(env, {})
        if directory is None:
            self.skipTest("jaxlib is not installed here")
        try:
            self.assertTrue(os.path.basename(directory).startswith("nanscope-xla-"))
            self.assertEqual(oct(os.stat(directory).st_mode & 0o777), "0o700")
            self.assertEqual(env["NANSCOPE_XLA_DUMP"], directory)
            self.assertEqual(env["XLA_FLAGS"], f"--xla_gpu_autotune_level=0 --xla_dump_to={directory} "
                             "--xla_dump_hlo_as_text")
            self.assertIsNone(_xla.add_dumps(env, {}), "a second call: already chosen")
        finally:
            shutil.rmtree(directory)


if __name__ == "__main__":
    unittest.main()
