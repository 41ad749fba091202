"""GPU tests of the NaN-first verdicts (docs/origin.md#nan-first-verdicts), run by run_gpu_test.py:
the programs of apps/verdicts.py, each plainly and then under CUDA_INJECTION64_PATH, then
`nanscope report --format json` on the log. A healthy program must give no fault, no first cause
and exit 0; a sick one exit 1 with the first cause at the kernel and line its truth names.
Outputs must be bit-identical with and without nanscope.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "apps", "verdicts.py")
ROOT = os.path.dirname(os.path.dirname(HERE))


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def require_apps():
    probe = subprocess.run([sys.executable, "-c", "import torch, transformers, triton; "
                            "assert torch.cuda.is_available()"], capture_output=True)
    if probe.returncode:
        print("skip: needs torch with CUDA, transformers and triton")
        sys.exit(SKIP)


def truth_of(stdout, label):
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        fail(f"{label}: the last stdout line is not the truth JSON:\n{stdout[-3000:]}")


def run_scenario(scenario, healthy):
    """(truth, log path, report JSON, report exit code) of one program."""
    label = scenario + (" --healthy" if healthy else "")
    args = [sys.executable, APP, scenario] + (["--healthy"] if healthy else [])
    plain = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if plain.returncode == SKIP:
        print(f"skip {label}: {plain.stdout.strip()}")
        sys.exit(SKIP)
    if plain.returncode:
        fail(f"{label}: the plain run exited {plain.returncode}\n{plain.stdout[-3000:]}\n{plain.stderr[-3000:]}")
    want = truth_of(plain.stdout, label)
    if want["truth"]["faults"] != (want["nonfinite"] > 0 or scenario == "skip_rows" and not healthy):
        fail(f"{label}: the program is not what it claims: {want}")
    logs = tempfile.mkdtemp(prefix="nanscope_verdicts_")
    # The repository's python/ stands for the installed wheel (fp8_amax watches its attention output).
    env = dict(os.environ, CUDA_INJECTION64_PATH=os.environ["NANSCOPE_LIB"],
               NANSCOPE_LOG=os.path.join(logs, "%p.jsonl"), NANSCOPE_CONSOLE="0",
               PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "python"), os.environ.get("PYTHONPATH")])))
    scoped = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = scoped.communicate(timeout=300)
    if scoped.returncode:
        fail(f"{label}: exited {scoped.returncode} under nanscope\n{stdout[-3000:]}\n{stderr[-3000:]}")
    got = truth_of(stdout, label)
    if got["checksum"] != want["checksum"]:
        fail(f"{label}: outputs differ under nanscope: {want['checksum']} vs {got['checksum']}")
    log = os.path.join(logs, f"{scoped.pid}.jsonl")
    if not os.path.exists(log):
        fail(f"{label}: no log {log}\n{stderr[-3000:]}")
    rep = subprocess.run([os.environ["NANSCOPE_BIN"], "report", "--format", "json", log],
                         capture_output=True, text=True, timeout=120)
    try:
        report = json.loads(rep.stdout)
    except json.JSONDecodeError:
        fail(f"{label}: nanscope report gave no JSON (exit {rep.returncode})\n{rep.stdout[-2000:]}\n{rep.stderr[-2000:]}")
    return want, log, report, rep.returncode


def events_of(log):
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip()]


def said(report, log):
    """What nanscope said, for failure messages."""
    evs = [e for e in events_of(log) if e["event"] == "nonfinite"][:10]
    rows = [json.dumps({k: e.get(k) for k in ("id", "kernel", "counts", "origin", "inf", "cause", "intended_from",
                                                "parents", "spread", "leak", "last_writer", "python")})[:600]
            for e in evs]
    return ("\n  first_cause: " + json.dumps(report.get("first_cause"))[:1500] + "\n  gate: " +
            json.dumps(report.get("gate")) + "\n  " + "\n  ".join(rows))


def check_healthy(scenario):
    want, log, report, code = run_scenario(scenario, healthy=scenario not in ("bert_mask", "gpt2_train"))
    if code != 0 or report.get("first_cause") is not None:
        fail(f"{scenario} (healthy): exit {code}, want 0 and no first cause:{said(report, log)}")
    infinities = sum(1 for e in events_of(log) if e["event"] == "nonfinite" and e.get("inf"))
    return f"{scenario}: exit 0, {infinities} infinity finding(s) not faults"


def check_first_cause(scenario, want, report, log):
    truth, cause = want["truth"], report.get("first_cause")
    if not cause:
        fail(f"{scenario}: no first cause, want {truth['kernel']} at line {truth['line']}:{said(report, log)}")
    py = cause.get("python") or {}
    if not re.search(truth["kernel"], cause["kernel"]) or py.get("line") != truth["line"] or \
            os.path.basename(py.get("file") or "") != os.path.basename(truth["file"]):
        fail(f"{scenario}: first cause {cause['kernel'][:120]} at {py.get('file')}:{py.get('line')}, "
             f"want {truth['kernel']} at {truth['file']}:{truth['line']}:{said(report, log)}")
    return f"{scenario}: {cause['kernel'][:60]} at {os.path.basename(py['file'])}:{py['line']}"


def check_sick(scenario):
    want, log, report, code = run_scenario(scenario, healthy=False)
    if code != 1:
        fail(f"{scenario}: nanscope report exited {code}, want 1 under the default gate:{said(report, log)}")
    done = [check_first_cause(scenario, want, report, log)]
    evs = [e for e in events_of(log) if e["event"] == "nonfinite"]
    if scenario == "skip_rows":
        skipped = [e for e in evs if want["truth"]["preexisting"] in e["kernel"]]
        if not skipped or any(e.get("origin") != "preexisting" for e in skipped):
            fail(f"{scenario}: the kernel that skips rows should be preexisting every time:{said(report, log)}")
        writer = skipped[0].get("last_writer") or {}
        if not re.search(want["truth"]["kernel"], writer.get("kernel", "")):
            fail(f"{scenario}: last_writer {writer}, want the softmax:{said(report, log)}")
        done.append(f"{len(skipped)} finding(s) of the skipping kernel preexisting (eager and replays)")
    if scenario == "fp8_amax":
        leaks = [e for e in evs if e.get("leak")]
        if not leaks or (leaks[0].get("python") or {}).get("line") != want["truth"]["leak_line"]:
            fail(f"{scenario}: the leak should be at line {want['truth']['leak_line']} (the amax):{said(report, log)}")
        if not report.get("leaks"):
            fail(f"{scenario}: the report lists no LEAK POINT:{said(report, log)}")
        done.append(f"leak at {leaks[0]['kernel'][:50]} line {want['truth']['leak_line']}")
    if scenario == "cupy_raw":
        named = [e for e in evs if e.get("origin") == "candidate" and
                 any(c.get("kernel") == want["truth"]["candidate"] for c in e.get("candidates") or [])]
        if not named:
            fail(f"{scenario}: no finding names the CuPy kernel as its candidate:{said(report, log)}")
        done.append(f"candidate {want['truth']['candidate']} in {len(named)} finding(s)")
    if scenario == "cupy_passes":
        through = [e for e in evs if e.get("origin_why") == "through_candidate" and e.get("origin") == "propagated" and
                   any(c.get("kernel") == want["truth"]["through"] for c in e.get("candidates") or [])]
        if not through:
            fail(f"{scenario}: the CuPy kernel should pass the softmax's NaN on (propagated, through_candidate):"
                 f"{said(report, log)}")
        done.append(f"{want['truth']['through']} passed it on ({len(through)} finding(s) through_candidate)")
    return "; ".join(done)


def test_verdicts_healthy():
    """Healthy programs: intended -inf masks, flash/mem-efficient logsumexp padding, the healthy
    twins of every sick program: no fault, no first cause, report exit 0, outputs bit-identical."""
    require_apps()
    done = [check_healthy(s) for s in ("bert_mask", "gpt2_train", "llama_mask", "xent", "pooling", "skip_rows",
                                       "fp8_amax", "cupy_raw", "cupy_passes")]
    print("ok: " + "; ".join(done))


def test_verdicts_sick_models():
    """A user -inf mask with left padding (softmax 0/0), log(0) in a hand-written cross entropy, an
    empty document in mean pooling: the first cause is the kernel at the user's line, exit 1."""
    require_apps()
    print("ok: " + " | ".join(check_sick(s) for s in ("llama_mask", "xent", "pooling")))


def test_verdicts_sick_kernels():
    """A Triton kernel that skips padded rows (preexisting, eager and graph replays), an FP8 amax
    that spreads padding NaN into every real row (the leak point at the amax line), and a CuPy
    RawKernel (NVRTC, `extern "C"`) named as the candidate of the NaN torch then reads."""
    require_apps()
    print("ok: " + " | ".join(check_sick(s) for s in ("skip_rows", "fp8_amax", "cupy_raw", "cupy_passes")))


def run_jax(healthy):
    """A JAX program plainly and under nanscope: (plain truth, nanscope's events).

    XLA's autotuner times candidate GEMMs in each process and keeps the fastest, so a process
    whose launches are slower (under nanscope, or any profiler) may keep another algorithm, and
    two plain runs agree only by luck (seen on the H200: same finite sum, other checksum). So the
    plain run writes its autotuning results, nanscope runs once with the autotuner live (what the
    verdicts are checked on: its redzone and comparison kernels run) and once with those results
    loaded, which must be bit-identical to the plain run."""
    app = os.path.join(HERE, "apps", "jax_pool.py")
    args = [sys.executable, app] + (["--healthy"] if healthy else [])
    work = tempfile.mkdtemp(prefix="nanscope_jax_")
    tuned = os.path.join(work, "autotune.textproto")
    flags = os.environ.get("XLA_FLAGS", "")

    def run(with_nanscope, xla_flag, tag):
        env = dict(os.environ, XLA_FLAGS=f"{flags} {xla_flag}".strip())
        if with_nanscope:
            env.update(CUDA_INJECTION64_PATH=os.environ["NANSCOPE_LIB"], NANSCOPE_CONSOLE="0",
                       NANSCOPE_LOG=os.path.join(work, f"{tag}.jsonl"))
        p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        if p.returncode == SKIP and not with_nanscope:
            print(p.stdout.strip())
            sys.exit(SKIP)
        if p.returncode:
            fail(f"jax_pool ({tag}): exited {p.returncode}{' under nanscope' if with_nanscope else ''}\n"
                 f"{p.stderr[-3000:]}")
        return truth_of(p.stdout, "jax_pool")

    want = run(False, f"--xla_gpu_dump_autotune_results_to={tuned}", "plain")
    if not os.path.exists(tuned):
        fail(f"jax_pool: the plain run wrote no autotuning results to {tuned}")
    live = run(True, "", "live")
    pinned = run(True, f"--xla_gpu_load_autotune_results_from={tuned}", "pinned")
    if pinned["checksum"] != want["checksum"]:
        fail(f"jax_pool: outputs differ under nanscope with the plain run's autotuning loaded: {want} {pinned}")
    # The live run may keep other GEMMs: the same non-finite count and a finite sum within float
    # rounding of another summation order.
    if live["nonfinite"] != want["nonfinite"] or abs(live["finite_sum"] - want["finite_sum"]) > 1e-3 * (
            1 + abs(want["finite_sum"])):
        fail(f"jax_pool: outputs under nanscope (autotuner live) differ beyond rounding: {want} {live}")
    return want, events_of(os.path.join(work, "live.jsonl"))


def test_verdicts_jax_pool():
    """A jitted JAX program and its clean twin: nothing is scanned over XLA's preallocated pool,
    XLA's autotuner kernels are neither scanned nor blamed, the clean twin has no finding, and the
    summary says how much was inspected."""
    done = []
    for healthy in (True, False):
        want, events = run_jax(healthy)
        label = "jax_pool" + (" --healthy" if healthy else "")
        if want["nonfinite"] == 0 and not healthy:
            fail(f"{label}: the planted NaN did not happen: {want}")
        bad = [e for e in events if e["event"] == "nonfinite" and
               (e["buffer"]["elements"] > (1 << 28) or re.search(r"redzone|xla_fp_comparison|xla_int_comparison",
                                                                  e["kernel"]))]
        if bad:
            fail(f"{label}: scanned a pool or blamed an autotuner kernel: {json.dumps(bad[:3])[:2000]}")
        if healthy and any(e["event"] == "nonfinite" for e in events):
            fail(f"{label}: the clean program got findings: "
                 f"{json.dumps([e for e in events if e['event'] == 'nonfinite'][:3])[:2000]}")
        # Attached without the launcher and with no dump flags: the user is told, once, the
        # variable that makes XLA's kernels inspected, and each untyped kernel's reason says it.
        advice = [e for e in events if e["event"] == "warning" and e.get("what") == "xla_no_dumps"]
        if len(advice) != 1 or "XLA_FLAGS=--xla_dump_to=DIR" not in advice[0]["message"] or \
                "xla_cuda_plugin" not in advice[0]["message"]:
            fail(f"{label}: want one xla_no_dumps warning naming the plugin and XLA_FLAGS: {json.dumps(advice)[:1500]}")
        untyped = [e for e in events if e["event"] == "not_inspected" and "no parameter types" in e.get("reason", "")]
        if not untyped or any("XLA_FLAGS=--xla_dump_to=DIR" not in e["reason"] for e in untyped):
            fail(f"{label}: every untyped kernel's reason must name XLA_FLAGS: {json.dumps(untyped[:3])[:1500]}")
        summary = [e for e in events if e["event"] == "summary"]
        cov = summary[0].get("coverage", {}) if summary else {}
        pools = sum(1 for e in events if e["event"] == "not_inspected" and "pool" in e.get("reason", ""))
        done.append(f"{label}: {sum(1 for e in events if e['event'] == 'nonfinite')} finding(s), "
                    f"{pools} not_inspected for a pool, coverage {json.dumps(cov)[:300]}")
    print("ok: " + " | ".join(done))
