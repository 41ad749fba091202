"""CPU tests of bench/alternate.py (ctest bench_alternate): settings, the benchmarks' lines, the
processes of a round, the table and goals, and whole runs with stand-in benchmark processes that
print what hf_bench.py and decode_step_bench.py print (no GPU, no torch)."""
import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import alternate  # noqa: E402

LINES = {"eager": "hf_llama_eager_forward {m} ms={v:.3f}",
         "graph-b8": "hf_llama_graph_decode_b8 {m} us_per_replay={v:.2f}",
         "graph-b64": "hf_llama_graph_decode_b64 {m} us_per_replay={v:.2f}",
         "decode": "vllm_decode_step {m} clean_us={v:.2f} nan_us={v:.2f} nan_over_clean=1.0200"}


def stand_in(job, reps):
    """A process printing each case's line: 100 plain, 140 under NANSCOPE_TIER=full, 102 under
    sentinel; a case named in STAND_IN_SILENT prints nothing."""
    code = ("import os; ns = bool(os.environ.get('CUDA_INJECTION64_PATH')); m = 'nanscope' if ns else 'plain'\n"
            "f = {'full': 1.4, 'sentinel': 1.02}.get(os.environ.get('NANSCOPE_TIER'), 1.0) if ns else 1.0\n"
            "print('some other output')\n"
            f"for case, line in {[(c, LINES[c]) for c in job]!r}:\n"
            "    if case not in os.environ.get('STAND_IN_SILENT', '').split(','):\n"
            "        print(line.format(m=m, v=100 * f))\n")
    return [sys.executable, "-c", code]


class Parsing(unittest.TestCase):
    def test_settings(self):
        self.assertEqual(alternate.parse_setting("plain"), ("plain", None, {}))
        self.assertEqual(alternate.parse_setting("s=/l.so:NANSCOPE_TIER=sentinel,X=1"),
                         ("s", "/l.so", {"NANSCOPE_TIER": "sentinel", "X": "1"}))
        self.assertEqual(alternate.parse_setting("b=/l.so"), ("b", "/l.so", {}))
        # No library, only variables: jax_debug_nans as a setting of its own.
        self.assertEqual(alternate.parse_setting("debug_nans=:JAX_DEBUG_NANS=True"),
                         ("debug_nans", None, {"JAX_DEBUG_NANS": "True"}))
        for bad in ("full", "=/l.so", "s=", "s=/l.so:NOVALUE", "s=:"):
            with self.assertRaises(ValueError, msg=bad):
                alternate.parse_setting(bad)

    def test_lines(self):
        out = ("noise\nhf_llama_eager_forward nanscope ms=9.5\nhf_llama_graph_decode_b8 nanscope us_per_replay=1800\n"
               "hf_llama_eager_forward nanscope ms=9.7\nunknown_bench plain x=1\n")
        got = alternate.parse_lines(out)
        self.assertEqual(sorted(got), ["eager", "graph-b8"])
        self.assertEqual(got["eager"][0], {"ms": 9.7})
        self.assertEqual(got["graph-b8"][0], {"us_per_replay": 1800.0})

    def test_jax_lines_and_commands(self):
        got = alternate.parse_lines("jax_mlp_step debug_nans clean_us=40.00 nan_us=91000.00 nan_over_clean=2275.0000\n"
                                    "jax_transformer_step nanscope clean_us=900.5 nan_us=910.0 nan_over_clean=1.0105\n")
        self.assertEqual(got["jax-mlp"][0]["nan_us"], 91000.0)
        self.assertEqual(got["jax-transformer"][0]["clean_us"], 900.5)
        cmd = alternate.command(["jax-mlp"], 20)
        self.assertTrue(cmd[1].endswith("jax_bench.py"))
        self.assertEqual(cmd[2:], ["mlp", "--reps", "20"])

    def test_jobs(self):
        self.assertEqual(alternate.jobs(["graph-b8", "decode", "eager"], True), [["graph-b8", "eager"], ["decode"]])
        self.assertEqual(alternate.jobs(["graph-b8", "decode"], True), [["graph-b8"], ["decode"]])
        self.assertEqual(alternate.jobs(["graph-b8", "eager"], False), [["graph-b8"], ["eager"]])

    def test_goals(self):
        settings = ["plain", "sentinel"]
        self.assertEqual(alternate.parse_goal("sentinel:graph-b8:us_per_replay:ratio<=1.03", settings, ["graph-b8"]),
                         ("sentinel", "graph-b8", "us_per_replay", "ratio", 1.03))
        for bad in ("full:graph-b8:us:ratio<=1", "sentinel:eager:ms:ratio<=1", "sentinel:graph-b8:us:mean<=1"):
            with self.assertRaises(ValueError, msg=bad):
                alternate.parse_goal(bad, settings, ["graph-b8"])
        results = {("graph-b8", "us", "plain"): [100.0, 102.0, 98.0], ("graph-b8", "us", "sentinel"): [103.0, 110.0, 101.0],
                   ("decode", "nan_over_clean", "sentinel"): [1.2, 1.02, 1.01]}
        lines = alternate.goal_lines(results, [("sentinel", "graph-b8", "us", "ratio", 1.03),
                                               ("sentinel", "decode", "nan_over_clean", "value", 1.05),
                                               ("sentinel", "eager", "ms", "ratio", 1.1)], "plain")
        self.assertEqual(lines, ["goal sentinel graph-b8 us ratio <= 1.03: 1.030 met",
                                 "goal sentinel decode nan_over_clean value <= 1.05: 1.020 met",
                                 "goal sentinel eager ms ratio <= 1.1: not measured"])

    def test_table(self):
        settings = [("plain", None, {}), ("after", "/a.so", {}), ("before", "/b.so", {})]
        results = {("eager", "ms", "plain"): [6.0, 6.2], ("eager", "ms", "after"): [9.0, 9.3],
                   ("eager", "ms", "before"): [12.2]}
        rows = alternate.table(results, settings, ["eager"], [("after", "before")]).splitlines()
        self.assertEqual(rows[0].split(), ["case", "key", "plain", "median", "after", "median", "before", "median",
                                           "after/plain", "before/plain", "after/before"])
        self.assertEqual(rows[1].split(), ["eager", "ms", "6.10", "(2)", "9.15", "(2)", "12.20", "(1)", "1.500",
                                           "2.000", "0.750"])


class Runs(unittest.TestCase):
    def setUp(self):
        self.real, alternate.command = alternate.command, stand_in
        self.lib = tempfile.NamedTemporaryFile(suffix=".so")

    def tearDown(self):
        alternate.command = self.real
        self.lib.close()
        os.environ.pop("STAND_IN_SILENT", None)

    def run_main(self, *argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), self.assertRaises(SystemExit) as done:
            alternate.main(list(argv))
        return done.exception.code, out.getvalue()

    def test_tiers_together(self):
        lib = self.lib.name
        code, out = self.run_main("--rounds", "2", "--together", "--cases", "graph-b8,eager,decode",
                                  "--goal", "sentinel:graph-b8:us_per_replay:ratio<=1.03",
                                  "--goal", "full:eager:ms:ratio<=1.3", "--pair", "sentinel/full",
                                  "plain", f"full={lib}:NANSCOPE_TIER=full", f"sentinel={lib}:NANSCOPE_TIER=sentinel")
        self.assertEqual(code, 0, out)
        self.assertEqual(out.count("round 1 "), 9, out)  # 3 cases x 3 settings, from 2 processes a setting
        self.assertIn("goal sentinel graph-b8 us_per_replay ratio <= 1.03: 1.020 met", out)
        self.assertIn("goal full eager ms ratio <= 1.3: 1.400 NOT met", out)
        row = [line.split() for line in out.splitlines() if line.startswith("graph-b8 ")][0]
        self.assertEqual(row[-3:], ["1.400", "1.020", "0.729"])

    def test_a_silent_case_fails_the_run(self):
        os.environ["STAND_IN_SILENT"] = "graph-b64"
        code, out = self.run_main("--rounds", "1", "--together", "--cases", "graph-b8,graph-b64", "plain")
        self.assertEqual(code, 1, out)
        self.assertIn("round 1 graph-b64 plain: failed, no line for this case", out)
        self.assertIn("round 1 graph-b8 plain: hf_llama_graph_decode_b8 plain us_per_replay=100.00", out)

    def test_budget_stops_rounds(self):
        code, out = self.run_main("--rounds", "3", "--budget", "0", "--cases", "eager", "plain")
        self.assertEqual(code, 0, out)
        self.assertIn("round 2 not started", out)
        self.assertNotIn("round 2 eager", out)


if __name__ == "__main__":
    unittest.main()
