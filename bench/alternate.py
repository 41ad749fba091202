"""Benchmark cases under several settings, alternated in one device run, medians and ratios.

A decode step under nanscope moved by up to 12% from one process to the next on the H200 (docs/
bench-history.md, session 15): a ratio needs several processes of each setting, side by side. Each
round runs every case under every setting in turn (plain, then the others), one process each; at
the end a table gives each setting's median and its ratio to the first setting's.

Usage: alternate.py [--rounds N] [--reps N] [--cases LIST] [--together] [--budget S]
                    [--goal G ...] [--pair A/B ...] [--json PATH] SETTING [SETTING ...]
  SETTING   plain (no nanscope) or NAME=LIB[:VAR=VALUE,...]: the process runs under LIB
            (CUDA_INJECTION64_PATH, NANSCOPE_CONSOLE=0, its log in a temporary file) with the
            variables given, e.g. sentinel=.stage/lib/libnanscope.so:NANSCOPE_TIER=sentinel.
            The first setting is the baseline of the ratios (name plain first).
  --cases   comma-separated: eager, graph-b8, graph-b64 (bench/hf_bench.py), decode
            (bench/decode_step_bench.py, clean and NaN every replay in one process), jax-mlp and
            jax-transformer (bench/jax_bench.py: clean and NaN; a setting
            debug_nans=:JAX_DEBUG_NANS=True times jax_debug_nans, and a nanscope setting passes
            XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text); default
            graph-b8,graph-b64,eager
  --together  the hf_bench.py cases in one process per setting and round (the model built once:
            about a third of the device time for three cases), one after the other on one model
  --rounds  rounds (default 3); --reps: timed repetitions per process (default 30)
  --budget  seconds: no round is started that would end past it, judged by the longest round so
            far (default 540, under a device command's 10 minutes); the medians of the rounds run
  --goal    SETTING:CASE:KEY:ratio<=X (the median's ratio to the baseline's) or
            SETTING:CASE:KEY:value<=X (the median itself, e.g. decode's nan_over_clean); each goal
            is printed as met or NOT met
  --pair    A/B: one more ratio column, setting A's median over setting B's (e.g. after/before)
  --json    write every run's values there

Exit status 0 when every process printed its line (goals do not change it), 1 otherwise.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HF_CASES = ("eager", "graph-b8", "graph-b64")
JAX_CASES = ("jax-mlp", "jax-transformer")  # bench/jax_bench.py (issue 38)
CASES = HF_CASES + ("decode",) + JAX_CASES
LINE = re.compile(r"^(\S+) (plain|nanscope|debug_nans)((?: \w+=[-+0-9.eE]+)+)\s*$")
# The benchmarks' line names: which case each line is.
CASE_OF = {"hf_llama_eager_forward": "eager", "hf_llama_graph_decode_b8": "graph-b8",
           "hf_llama_graph_decode_b64": "graph-b64", "vllm_decode_step": "decode",
           "jax_mlp_step": "jax-mlp", "jax_transformer_step": "jax-transformer"}
GOAL = re.compile(r"^([^:]+):([^:]+):(\w+):(ratio|value)<=([0-9.]+)$")


def parse_setting(text):
    """'plain', NAME=LIB[:VAR=VALUE,...] or NAME=:VAR=VALUE,... (no library: a plain process with
    variables, e.g. JAX_DEBUG_NANS=True) -> (name, lib or None, {var: value})."""
    if text == "plain":
        return "plain", None, {}
    if "=" not in text:
        raise ValueError(f"{text!r}: want plain or NAME=LIB[:VAR=VALUE,...]")
    name, rest = text.split("=", 1)
    lib, _, variables = rest.partition(":")
    env = {}
    for kv in filter(None, variables.split(",")):
        var, sep, value = kv.partition("=")
        if not sep or not var:
            raise ValueError(f"{text!r}: {kv!r} is not VAR=VALUE")
        env[var] = value
    if not name or not (lib or env):
        raise ValueError(f"{text!r}: want NAME=LIB[:VAR=VALUE,...] or NAME=:VAR=VALUE,...")
    return name, lib or None, env


def parse_goal(text, settings, cases):
    m = GOAL.match(text)
    if not m or m.group(1) not in settings or m.group(2) not in cases:
        raise ValueError(f"{text!r}: want SETTING:CASE:KEY:ratio<=X or ...:value<=X with a setting of "
                         f"{settings} and a case of {cases}")
    return m.group(1), m.group(2), m.group(3), m.group(4), float(m.group(5))


def parse_lines(stdout):
    """{case: ({key: value}, line)} of the benchmarks' `name mode key=value ...` lines (the last
    line of each case)."""
    found = {}
    for line in stdout.splitlines():
        m = LINE.match(line.strip())
        if m and m.group(1) in CASE_OF:
            found[CASE_OF[m.group(1)]] = ({k: float(v) for k, v in (kv.split("=") for kv in m.group(3).split())},
                                          line.strip())
    return found


def jobs(cases, together):
    """The processes of one setting in a round: each a list of cases (hf cases together or not)."""
    hf = [c for c in cases if c in HF_CASES]
    if together and len(hf) > 1:
        return [hf] + [[c] for c in cases if c not in HF_CASES]
    return [[c] for c in cases]


def command(job, reps):
    if job[0] in JAX_CASES:
        return [sys.executable, os.path.join(HERE, "jax_bench.py"), ",".join(c[len("jax-"):] for c in job),
                "--reps", str(reps)]
    if job == ["decode"]:
        return [sys.executable, os.path.join(HERE, "decode_step_bench.py"), "--reps", str(reps)]
    return [sys.executable, os.path.join(HERE, "hf_bench.py"), ",".join(job), "--reps", str(reps)]


def run_one(job, setting, reps, timeout=300):
    """One process of the cases in `job`: {case: ({key: value}, line)} and the text to show when a
    case printed no line."""
    name, lib, variables = setting
    env = dict(os.environ)
    log = None
    if lib:
        log = tempfile.mktemp(prefix="nanscope_bench_", suffix=".jsonl")
        env.update(CUDA_INJECTION64_PATH=os.path.abspath(lib), NANSCOPE_CONSOLE="0", NANSCOPE_LOG=log)
    env.update(variables)
    try:
        p = subprocess.run(command(job, reps), env=env, capture_output=True, text=True, timeout=timeout * len(job))
        out, err = p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        out, err = "", f"timed out after {timeout} s"
    finally:
        if log and os.path.exists(log):
            os.unlink(log)
    return parse_lines(out), f"failed, no line for this case: {(err or out).strip()[-600:]}"


def table(results, settings, cases, pairs):
    """The medians and ratios, one row per (case, key). results: {(case, key, setting): [values]}."""
    names = [s[0] for s in settings]
    base = names[0]
    head = ["case", "key"] + [f"{n} median" for n in names] + [f"{n}/{base}" for n in names[1:]] + \
        [f"{a}/{b}" for a, b in pairs]
    rows = [head]
    keys = sorted({(c, k) for c, k, _ in results}, key=lambda ck: (cases.index(ck[0]), ck[1]))
    for case, key in keys:
        med = {n: statistics.median(results[(case, key, n)]) if results.get((case, key, n)) else None for n in names}
        ratio = lambda a, b: f"{med[a] / med[b]:.3f}" if med[a] and med[b] else "-"  # noqa: E731
        rows.append([case, key] + [f"{med[n]:.2f} ({len(results.get((case, key, n), []))})" if med[n] is not None
                                   else "-" for n in names] +
                    [ratio(n, base) for n in names[1:]] + [ratio(a, b) for a, b in pairs])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)) for r in rows)


def goal_lines(results, goals, base):
    lines = []
    for setting, case, key, kind, limit in goals:
        got = results.get((case, key, setting))
        plain = results.get((case, key, base))
        if not got or (kind == "ratio" and not plain):
            lines.append(f"goal {setting} {case} {key} {kind} <= {limit}: not measured")
            continue
        value = statistics.median(got) / (statistics.median(plain) if kind == "ratio" else 1.0)
        lines.append(f"goal {setting} {case} {key} {kind} <= {limit}: {value:.3f} "
                     f"{'met' if value <= limit else 'NOT met'}")
    return lines


def arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("settings", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--cases", default="graph-b8,graph-b64,eager")
    parser.add_argument("--together", action="store_true")
    parser.add_argument("--budget", type=float, default=540)
    parser.add_argument("--goal", action="append", default=[])
    parser.add_argument("--pair", action="append", default=[])
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    try:
        args.settings = [parse_setting(s) for s in args.settings]
        names = [s[0] for s in args.settings]
        if len(set(names)) != len(names):
            raise ValueError(f"setting names repeat: {names}")
        for _, lib, _ in args.settings:
            if lib and not os.path.isfile(lib):
                raise ValueError(f"{lib}: no such library")
        args.cases = [c for c in args.cases.split(",") if c]
        bad = [c for c in args.cases if c not in CASES]
        if bad or not args.cases:
            raise ValueError(f"cases {bad or args.cases}: want some of {', '.join(CASES)}")
        args.goal = [parse_goal(g, names, args.cases) for g in args.goal]
        args.pair = [tuple(p.split("/", 1)) for p in args.pair]
        if any(len(p) != 2 or not set(p) <= set(names) for p in args.pair):
            raise ValueError(f"--pair {args.pair}: want A/B, two of {names}")
        if args.rounds < 1 or args.reps < 1:
            raise ValueError("--rounds and --reps must be positive")
    except ValueError as e:
        parser.error(str(e))
    return args


def main(argv=None):
    args = arguments(argv)
    results, runs, failed = {}, [], 0
    start, longest = time.monotonic(), 0.0
    for r in range(1, args.rounds + 1):
        elapsed = time.monotonic() - start
        if r > 1 and elapsed + longest > args.budget:
            print(f"alternate: round {r} not started: {elapsed:.0f} s spent, a round takes up to {longest:.0f} s, "
                  f"budget {args.budget:.0f} s", flush=True)
            break
        t0 = time.monotonic()
        for job in jobs(args.cases, args.together):
            for setting in args.settings:
                got, why = run_one(job, setting, args.reps)
                for case in job:
                    values, line = got.get(case, (None, why))
                    print(f"round {r} {case} {setting[0]}: {line}", flush=True)
                    failed += values is None
                    runs.append({"round": r, "case": case, "setting": setting[0], "values": values})
                    for key, v in (values or {}).items():
                        results.setdefault((case, key, setting[0]), []).append(v)
        longest = max(longest, time.monotonic() - t0)
    print()
    print(table(results, args.settings, args.cases, args.pair))
    for line in goal_lines(results, args.goal, args.settings[0][0]):
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"settings": [s[0] for s in args.settings], "runs": runs}, f, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
