"""GPU tests of JAX/XLA programs under `nanscope --` with no code change (issue 38, docs/jax.md),
run by run_gpu_test.py: the launcher adds XLA's dump flags, the engine maps each XLA kernel launch
to its kernel thunk and scans the output slices it writes. `jax_tests.py --self-check` runs the
dump reading of these tests on the committed H200 captures (a CPU test).
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "xla", "gpu")
AUTOTUNER = r"redzone|xla_fp_comparison|xla_int_comparison"
# apps/jax_pool.py's planted line: `h = jnp.log(h + 1.0) if healthy else jnp.log(h - 1.0)`.
with open(os.path.join(HERE, "apps", "jax_pool.py")) as _f:
    LOG_LINE = next(i for i, text in enumerate(_f, 1) if "jnp.log(h - 1.0)" in text)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def kernel_name(instruction):
    """The CUDA function XLA names after an HLO instruction (src/xla_kernels.hpp kernel_name_for)."""
    return instruction.replace(".", "_").replace("-", "_")


def fusions_holding(hlo_text, opcode):
    """The top-level fusions (those ENTRY runs) whose computations, nested fusions included, hold an
    instruction of `opcode`: the kernels a NaN made by that op appears in first."""
    computation, holds, calls = None, set(), {}
    for line in hlo_text.splitlines():
        head = re.match(r"^(?:ENTRY )?%(\S+) \(.*\{$", line)
        if head:
            computation = head.group(1)
            continue
        ins = re.match(r"^\s+(?:ROOT )?%(\S+) = \S+ (\S+)\(", line)
        if not ins or computation is None:
            continue
        if ins.group(2) == opcode:
            holds.add(computation)
        called = re.search(r"calls=%([^,\s]+)", line)
        if called:
            calls[ins.group(1)] = (computation, called.group(1))
    entry = re.search(r"^ENTRY %(\S+) ", hlo_text, re.M)
    out = set()
    for fusion, (inside, called) in calls.items():
        if inside != (entry.group(1) if entry else None):
            continue
        todo, seen = [called], set()
        while todo:
            c = todo.pop()
            if c in seen:
                continue
            seen.add(c)
            if c in holds:
                out.add(fusion)
            todo += [sub for name, (within, sub) in calls.items() if within == c]
    return out


def step_hlo(dump_dir, name="jit_step"):
    files = glob.glob(os.path.join(dump_dir, f"module_*.{name}.sm_*_gpu_after_optimizations.txt"))
    if len(files) != 1:
        fail(f"want one optimized HLO of {name} in {dump_dir}, found {files}")
    with open(files[0]) as f:
        return f.read()


def run_pool(healthy, work):
    """jax_pool.py plainly (its autotuning results written) and under `nanscope --` with them loaded:
    (plain truth, nanscope truth, events, dump dir)."""
    app = [sys.executable, os.path.join(HERE, "apps", "jax_pool.py")] + (["--healthy"] if healthy else [])
    tag = "healthy" if healthy else "sick"
    tuned = os.path.join(work, f"{tag}-autotune.textproto")
    flags = os.environ.get("XLA_FLAGS", "")
    plain = subprocess.run(app, env=dict(os.environ, XLA_FLAGS=f"{flags} --xla_gpu_dump_autotune_results_to={tuned}"),
                           capture_output=True, text=True, timeout=300)
    if plain.returncode == SKIP:
        print(plain.stdout.strip())
        sys.exit(SKIP)
    if plain.returncode:
        fail(f"jax_pool {tag}: the plain run exited {plain.returncode}\n{plain.stderr[-3000:]}")
    log, dumps = os.path.join(work, f"{tag}.jsonl"), os.path.join(work, f"{tag}-xla")
    cmd = [os.environ["NANSCOPE_BIN"], "-q", "--log", log, "--xla-dumps", dumps, "--"] + app
    env = dict(os.environ, XLA_FLAGS=f"{flags} --xla_gpu_load_autotune_results_from={tuned}")
    scoped = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if scoped.returncode:
        fail(f"jax_pool {tag}: exited {scoped.returncode} under nanscope\n{scoped.stderr[-3000:]}")
    last = lambda out: json.loads([x for x in out.splitlines() if x.strip()][-1])  # noqa: E731
    with open(log) as f:
        events = [json.loads(x) for x in f if x.strip()]
    return last(plain.stdout), last(scoped.stdout), events, dumps


def xla_coverage(events, dumps):
    """(XLA kernel launches inspected, all XLA kernel launches) from the kernels the dumps name."""
    names = set()
    for path in glob.glob(os.path.join(dumps, "*.thunk_sequence*.txt")):
        with open(path) as f:
            names |= set(re.findall(r"kCustomKernel \[[^\]]*\] (\S+)", f.read()))
    not_inspected = {e["kernel_mangled"]: e["reason"] for e in events if e["event"] == "not_inspected"}
    return sorted(n for n in names if n not in not_inspected), {n: not_inspected[n] for n in names if n in not_inspected}


def test_jax_fusions():
    """A jitted MLP with a planted log of negative values, under `nanscope --`: the fusion holding
    the log is the first finding, introduced; the reduction after it only propagates; nothing is
    scanned over the pool; the healthy twin has no finding; outputs bit-identical."""
    work = tempfile.mkdtemp(prefix="nanscope_jax_fusions_")
    done = []
    for healthy in (True, False):
        want, got, events, dumps = run_pool(healthy, work)
        label = "jax_pool" + (" --healthy" if healthy else "")
        if got["checksum"] != want["checksum"]:
            fail(f"{label}: outputs differ under nanscope (autotuning pinned): {want} {got}")
        found = [e for e in events if e["event"] == "nonfinite"]
        inspected, refused = xla_coverage(events, dumps)
        said = "\n  ".join(json.dumps({k: e.get(k) for k in ("id", "kernel", "origin", "counts", "buffer")})
                           for e in found[:8])
        warnings = [e.get("message", "")[:200] for e in events if e["event"] == "warning"]
        if not inspected:
            fail(f"{label}: no XLA kernel inspected; not inspected: {json.dumps(refused)[:1500]}; warnings {warnings}")
        if any(e["buffer"].get("elements", 0) > (1 << 28) or re.search(AUTOTUNER, e["kernel"]) for e in found):
            fail(f"{label}: scanned a pool or blamed an autotuner kernel:\n  {said}")
        if healthy:
            if found:
                fail(f"{label}: the clean program got findings:\n  {said}")
        else:
            holders = {kernel_name(f) for f in fusions_holding(step_hlo(dumps), "log")}
            first = found[0] if found else None
            if not first or first["kernel"] not in holders or first.get("origin") != "introduced":
                fail(f"{label}: want the first finding at the fusion holding the log {sorted(holders)}, introduced; "
                     f"nanscope said:\n  {said}")
            # The line it names is the log's (the HLO metadata), not JAX's dispatch.
            line = (first.get("python") or {})
            if not line.get("file", "").endswith("jax_pool.py") or line.get("line") != LOG_LINE:
                fail(f"{label}: want the finding to name jax_pool.py:{LOG_LINE} (the planted log), got {line}")
        first_said = f" first {found[0]['kernel']} {found[0]['origin']} at {found[0].get('python')}" if found else ""
        done.append(f"{label}: {len(found)} finding(s){first_said}; "
                    f"XLA kernels inspected {len(inspected)}, not {len(refused)} {json.dumps(refused)[:300]}")
    print("ok: " + " | ".join(done))


def self_check():
    """fusions_holding on the H200 capture of jax_pool.py: XLA fused the planted log into the
    second GEMM's prologue (a nested fusion), so that GEMM's kernel is the one to name."""
    with open(glob.glob(os.path.join(FIXTURES, "jax_pool-sick", "module_5968.jit_step.sm_*_gpu_after_optimizations.txt"))[0]) as f:
        text = f.read()
    got = {kernel_name(f) for f in fusions_holding(text, "log")}
    if got != {"gemm_fusion_dot_1"}:
        raise SystemExit(f"self-check: the log's fusion in jax_pool's capture: want gemm_fusion_dot_1, got {got}")
    if fusions_holding(text, "sqrt"):
        raise SystemExit("self-check: jax_pool's capture holds no sqrt")
    print("self-check: the planted log's fusion is gemm_fusion_dot_1 (jax_tests.py)")


if __name__ == "__main__":
    if sys.argv[1:] != ["--self-check"]:
        sys.exit("usage: jax_tests.py --self-check (the tests run through run_gpu_test.py)")
    self_check()
