"""GPU tests of JAX/XLA programs under `nanscope --` with no code change (issue 38, docs/jax.md),
run by run_gpu_test.py: the launcher adds XLA's dump flags, the engine maps each XLA kernel launch
to its kernel thunk and scans the output slices it writes. `jax_tests.py --self-check` runs the
dump reading of these tests on the committed H200 captures (a CPU test).
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "xla", "gpu")
AUTOTUNER = re.compile(r"redzone|xla_fp_comparison|xla_int_comparison|RepeatBufferKernel", re.I)


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


def keep_logs(tag, log, stderr):
    """The run's JSONL log and stderr into $NANSCOPE_SUITE_LOGS (run_suite.sh sets it; its logs come
    back from the device), for a failure to be read after the run."""
    where = os.environ.get("NANSCOPE_SUITE_LOGS")
    if not where:
        return
    if os.path.exists(log):
        shutil.copy(log, os.path.join(where, f"jax_fusions-{tag}.jsonl"))
    with open(os.path.join(where, f"jax_fusions-{tag}.err"), "w") as f:
        f.write(stderr[-200000:])


def run_app(name, healthy, work, pinned=True, variant=()):
    """apps/NAME.py plainly (its autotuning results written) and under `nanscope --` with them
    loaded (`pinned`; else XLA autotunes again under nanscope): (plain truth, nanscope truth,
    events, dump dir). `variant`: (tag, the app's extra arguments, extra XLA flags), for both runs."""
    tag_extra, args, xla_extra = variant or ("", [], "")
    app = [sys.executable, os.path.join(HERE, "apps", name + ".py")] + (["--healthy"] if healthy else []) + list(args)
    tag = name + tag_extra + ("-healthy" if healthy else "-sick") + ("" if pinned else "-autotuned")
    tuned = os.path.join(work, f"{tag}-autotune.textproto")
    flags = f"{os.environ.get('XLA_FLAGS', '')} {xla_extra}".strip()
    plain = subprocess.run(app, env=dict(os.environ, XLA_FLAGS=f"{flags} --xla_gpu_dump_autotune_results_to={tuned}"),
                           capture_output=True, text=True, timeout=300)
    if plain.returncode == SKIP:
        print(plain.stdout.strip())
        sys.exit(SKIP)
    if plain.returncode:
        fail(f"{tag}: the plain run exited {plain.returncode}\n{plain.stderr[-3000:]}")
    log, dumps = os.path.join(work, f"{tag}.jsonl"), os.path.join(work, f"{tag}-xla")
    cmd = [os.environ["NANSCOPE_BIN"], "-q", "--log", log, "--xla-dumps", dumps, "--"] + app
    env = dict(os.environ, XLA_FLAGS=f"{flags} --xla_gpu_load_autotune_results_from={tuned}" if pinned else flags)
    scoped = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    keep_logs(tag, log, scoped.stderr)
    if scoped.returncode:
        fail(f"{tag}: exited {scoped.returncode} under nanscope\n{scoped.stderr[-3000:]}")
    last = lambda out: json.loads([x for x in out.splitlines() if x.strip()][-1])  # noqa: E731
    with open(log) as f:
        events = [json.loads(x) for x in f if x.strip()]
    return last(plain.stdout), last(scoped.stdout), events, dumps


def xla_coverage(events, dumps):
    """(XLA kernel launches inspected, all XLA kernel launches) from the kernels the dumps name."""
    names = set()
    for path in glob.glob(os.path.join(dumps, "*.thunk_sequence*.txt")):
        with open(path) as f:
            # Kinds are padded to the widest of the sequence (jaxlib 0.11.2, beside kCublasLtMatmul).
            names |= set(re.findall(r"k(?:Custom)?Kernel\s+\[[^\]]*\] (\S+)", f.read()))
    not_inspected = {e["kernel_mangled"]: e["reason"] for e in events if e["event"] == "not_inspected"}
    return sorted(n for n in names if n not in not_inspected), {n: not_inspected[n] for n in names if n in not_inspected}


def library_thunks(dumps):
    """How many cuBLAS / cuBLASLt thunks the dumped modules run (kCublasLtMatmul, kGemm)."""
    count = 0
    for path in glob.glob(os.path.join(dumps, "*.thunk_sequence.txt")):
        with open(path) as f:
            count += len(re.findall(r"^\d+: (?:kCublasLtMatmul|kGemm)\b", f.read(), re.M))
    return count


# The programs, each with its twin: (app, jitted function, the HLO opcodes that make its NaN,
# the source text of the lines a finding may name). jax_pool: log of values below 1, fused by XLA
# into the second GEMM's prologue; jax_attention: a softmax over a row whose every key is masked
# with -inf (0/0: from infinities, so the fusion's own line, the softmax's or the mask's);
# jax_donate: sqrt of a negative rate, in a step whose parameters are donated (updated in place).
APPS = (("jax_pool", "jit_step", ("log",), ("jnp.log(h - 1.0)",)),
        ("jax_attention", "jit_attend", ("exponential", "divide", "subtract"),
         ("jax.nn.softmax(scores", "jnp.where(mask, scores, -jnp.inf)")),
        ("jax_donate", "jit_step", ("sqrt",), ("jnp.sqrt(jnp.abs(lr) if healthy else lr)",)))


def lines_of(app, texts):
    with open(os.path.join(HERE, "apps", app + ".py")) as f:
        return {i for i, line in enumerate(f, 1) if any(t in line for t in texts)}


def check_sick(app, jitted, opcodes, texts, events, dumps, said):
    """The first finding is a fusion holding one of `opcodes`, introduced, naming one of `texts`' lines."""
    found = [e for e in events if e["event"] == "nonfinite"]
    hlo = step_hlo(dumps, jitted)
    holders = {kernel_name(f) for op in opcodes for f in fusions_holding(hlo, op)}
    first = found[0] if found else None
    if not first or first["kernel"] not in holders or first.get("origin") != "introduced":
        fail(f"{app}: want the first finding at a fusion holding {'/'.join(opcodes)} {sorted(holders)}, introduced; "
             f"nanscope said:\n  {said}")
    # The line it names is the op's (the HLO metadata), not JAX's dispatch.
    line, want = first.get("python") or {}, lines_of(app, texts)
    if not line.get("file", "").endswith(app + ".py") or line.get("line") not in want:
        fail(f"{app}: want the first finding to name {app}.py:{sorted(want)}, got {line}")


def run_checked(app, healthy, work, variant=()):
    """run_app (autotuning pinned), then what every program and its twin must show: outputs
    bit-identical, some XLA kernel inspected, no finding for the twin, the planted NaN made by the
    sick one's plain run. Returns (label, events, dumps, findings, XLA kernels inspected, not
    inspected, the first findings said)."""
    want, got, events, dumps = run_app(app, healthy, work, variant=variant)
    label = app + (" " + " ".join(variant[1]) if variant else "") + (" --healthy" if healthy else "")
    if got["checksum"] != want["checksum"]:
        fail(f"{label}: outputs differ under nanscope (autotuning pinned): {want} {got}")
    if not healthy and want["nonfinite"] == 0:
        fail(f"{label}: the planted NaN did not happen: {want}")
    found = [e for e in events if e["event"] == "nonfinite"]
    inspected, refused = xla_coverage(events, dumps)
    said = "\n  ".join(json.dumps({k: e.get(k) for k in ("id", "kernel", "origin", "counts", "buffer", "python")})
                       for e in found[:8])
    if not inspected:
        warnings = [e.get("message", "")[:200] for e in events if e["event"] == "warning"]
        fail(f"{label}: no XLA kernel inspected; not inspected: {json.dumps(refused)[:1500]}; warnings {warnings}")
    if healthy and found:
        fail(f"{label}: the clean program got findings:\n  {said}")
    # XLA looks cuBLASLt up with dlsym: its GEMMs are scanned once that lookup is intercepted
    # (hooks/dlsym_intercept.hpp); before, every one was an opaque library launch.
    calls = coverage_of(events).get("library_calls", {})
    if library_thunks(dumps) and not calls.get("scanned"):
        fail(f"{label}: its modules run {library_thunks(dumps)} cuBLAS thunks, no library call was scanned: {calls}")
    return label, events, dumps, found, inspected, refused, said


def coverage_of(events):
    """The last summary's coverage."""
    return [e for e in events if e["event"] == "summary"][-1]["coverage"]


def run_said(label, found, inspected, refused):
    """A run's line for the test's "ok:" output: its findings, its first, its XLA coverage."""
    first = f" first {found[0]['kernel']} {found[0]['origin']} at {found[0].get('python')}" if found else ""
    return f"{label}: {len(found)} finding(s){first}; XLA kernels inspected {len(inspected)}, not {len(refused)}"


def check_first_at_lines(label, app, found, inspected, want, said):
    """The first finding is introduced by an inspected XLA kernel at one of the lines `want` of app."""
    first = found[0] if found else {}
    line = first.get("python") or {}
    if (first.get("origin") != "introduced" or first.get("kernel") not in inspected
            or not line.get("file", "").endswith(app + ".py") or line.get("line") not in want):
        fail(f"{label}: want the first finding introduced by an inspected XLA kernel at {app}.py:"
             f"{sorted(want)}; nanscope said:\n  {said}")


def test_jax_fusions():
    """JAX programs with a planted NaN, under `nanscope --` with no code change: the fusion that
    makes the NaN is the first finding, introduced, with the user's line; nothing is scanned over
    the pool or blamed on the autotuner; the healthy twins have no finding; outputs bit-identical
    (autotuning pinned from the plain run)."""
    work = tempfile.mkdtemp(prefix="nanscope_jax_fusions_")
    done = []
    for app, jitted, opcodes, texts in APPS:
        for healthy in (True, False):
            label, events, dumps, found, inspected, refused, said = run_checked(app, healthy, work)
            if any(e["buffer"].get("elements", 0) > (1 << 28) or AUTOTUNER.search(e["kernel"]) for e in found):
                fail(f"{label}: scanned a pool or blamed an autotuner kernel:\n  {said}")
            if not healthy:
                check_sick(app, jitted, opcodes, texts, events, dumps, said)
            done.append(f"{run_said(label, found, inspected, refused)} {json.dumps(refused)[:300]}")
    # XLA autotuning under nanscope: the autotuner's candidate is launched before the step is
    # dumped and shares the step's CUmodule (stream_executor loads an identical cubin once); the
    # step's kernels must still be looked up once it is (session 23: they stayed not inspected).
    # Autotuning may pick another algorithm than the plain run did, so outputs are not compared.
    _, _, events, dumps = run_app("jax_pool", False, work, pinned=False)
    inspected, refused = xla_coverage(events, dumps)
    found = [e for e in events if e["event"] == "nonfinite"]
    said = "\n  ".join(json.dumps({k: e.get(k) for k in ("id", "kernel", "origin", "buffer", "python")}) for e in found[:8])
    # The autotuner's other candidates share the kernels' names and stay not inspected (no dump
    # module holds their launch): the first finding says whether the step's own were inspected.
    check_sick("jax_pool", "jit_step", ("log",), ("jnp.log(h - 1.0)",), events, dumps, said)
    # The candidates' launches are XLA's autotuning, counted apart (compile_time), not opaque
    # program launches (docs/jax.md#autotuning; session 24 on the benchmark's steps: opaque 0).
    by = coverage_of(events)["by_inspection"]
    if not by.get("compile_time") or by.get("opaque"):
        fail(f"jax_pool autotuned: want the autotuner's launches counted compile_time and none opaque; got {by}")
    calls = coverage_of(events).get("library_calls", {})
    done.append(f"jax_pool autotuned under nanscope: first {found[0]['kernel']} {found[0]['origin']}; "
                f"XLA kernel names inspected {len(inspected)}, with a not_inspected event {len(refused)}; "
                f"launches compile_time {by['compile_time']}, opaque {by['opaque']}; library calls {json.dumps(calls)}")
    print("ok: " + " | ".join(done))


def test_jax_user_libraries():
    """A network built and trained with JAX's own example libraries (jax.example_libraries.stax and
    .optimizers: code the JAX team wrote), under `nanscope --` with no code change. Sick: the loss
    is log(softmax(logits)) at a bad temperature (softmax underflows, its gradient overflows, 0 *
    inf is NaN); its twin uses stax's LogSoftmax. The first finding must be introduced by a kernel
    of the jitted update at the loss line (the HLO metadata's), the twin must give none, and the
    trained parameters must be bit-identical (autotuning pinned)."""
    work = tempfile.mkdtemp(prefix="nanscope_jax_user_")
    app, done = "jax_stax_train", []
    # The planted bug's two lines: the loss's log(softmax), and the bad temperature that drives it
    # (the backward's overflowing ops carry either line, as JAX attributes them).
    loss_lines = lines_of(app, ("jnp.log(jax.nn.softmax(logits))", "* TEMPERATURE"))
    for healthy in (True, False):
        label, events, _, found, inspected, refused, said = run_checked(app, healthy, work)
        if not healthy:
            check_first_at_lines(label, app, found, inspected, loss_lines, said)
        done.append(f"{run_said(label, found, inspected, refused)}; launches {coverage_of(events)['by_inspection']}")
    print("ok: " + " | ".join(done))


def test_jax_cudnn_attention():
    """JAX attention through cuDNN (XLA's cuDNN fused attention, looked up with dlsym), then a mean
    over each sequence's valid rows that divides by the padding sequence's length 0. The healthy
    twin gives no finding (the cuDNN call's outputs are scanned, or refused with their reason, but
    never a finding); the sick one's first finding is the divide's fusion, introduced, at its line.
    The call itself must have been seen: a library call in the summary."""
    work = tempfile.mkdtemp(prefix="nanscope_jax_cudnn_")
    app, done = "jax_cudnn_attention", []
    for healthy in (True, False):
        label, events, dumps, found, inspected, refused, said = run_checked(app, healthy, work)
        calls = coverage_of(events).get("library_calls", {})
        if not calls.get("calls"):
            fail(f"{label}: XLA's cuDNN attention call was not seen (hooks/dlsym_intercept.hpp): {calls}")
        if not healthy:
            check_sick(app, "jit_pooled", ("divide",), ("summed / count",), events, dumps, said)
        done.append(f"{run_said(label, found, inspected, refused)}; library calls {json.dumps(calls)}")
    print("ok: " + " | ".join(done))


def test_jax_optax():
    """A network trained with optax (its clip_by_global_norm and adamw: code the optax team wrote),
    under `nanscope --` with no code change. Sick: an L2-norm penalty on a gate that starts at zero,
    whose gradient there is inf * 0 = NaN; optax's global-norm clip carries it into every
    parameter. The first finding must be introduced by an inspected XLA kernel at the penalty's
    line (the HLO metadata gives the backward ops their forward line); the twin (the squared
    norm) gives none; the trained parameters are bit-identical (autotuning pinned)."""
    work = tempfile.mkdtemp(prefix="nanscope_jax_optax_")
    app, done = "jax_optax_train", []
    penalty = lines_of(app, ('jnp.sqrt(jnp.sum(p["gate"]',))
    for healthy in (True, False):
        label, events, _, found, inspected, refused, said = run_checked(app, healthy, work)
        if not healthy:
            check_first_at_lines(label, app, found, inspected, penalty, said)
        done.append(run_said(label, found, inspected, refused))
    print("ok: " + " | ".join(done))


SCAN_DIVISION = ("h_norm = centred / jnp.sqrt",)  # jax_scan_rnn.py's planted 0 / 0


def while_thunks(dumps):
    """How many while loops (kWhile thunks, nested ones too) the dumped modules run."""
    count = 0
    for path in glob.glob(os.path.join(dumps, "*.thunk_sequence*.txt")):
        with open(path) as f:
            count += len(re.findall(r"^\s*\d+: kWhile\b", f.read(), re.M))
    return count


def while_in_command_buffers(dumps):
    """How many while loops XLA put inside a command buffer (a kWhile thunk nested under a
    kCommandBuffer one in the sequence after the thunk passes): those run as conditional nodes."""
    count = 0
    for path in glob.glob(os.path.join(dumps, "*.thunk_sequence_after_thunk_passes.txt")):
        buffer_indent = None
        with open(path) as f:
            for line in f:
                m = re.match(r"^(\s*)\d+: (k\w+)\b", line)
                if not m:
                    continue
                indent = len(m.group(1))
                if buffer_indent is not None and indent <= buffer_indent:
                    buffer_indent = None
                if m.group(2) == "kCommandBuffer" and buffer_indent is None:
                    buffer_indent = indent
                elif m.group(2) == "kWhile" and buffer_indent is not None:
                    count += 1
    return count


def test_jax_scan():
    """A recurrent network over 200 time steps in jax.lax.scan, which XLA runs as a while loop whose
    body's kernels launch once per step; then as a fori_loop with a traced trip count, with XLA's
    flags putting while loops into command buffers (a CUDA conditional node). Sick: the hidden
    state, zero at the start, is normalised by its standard deviation with no epsilon (0 / 0); the
    recurrence carries the NaN into every later step. The first finding must be introduced by an
    inspected XLA kernel at the normalisation's line; the twin gives none; outputs bit-identical.
    The dumps must hold the loop (else the test would not test one)."""
    work = tempfile.mkdtemp(prefix="nanscope_jax_scan_")
    app, done = "jax_scan_rnn", []
    division = lines_of(app, SCAN_DIVISION)
    # XLA's defaults (the loop run by XLA's host), then a fori_loop with a traced trip count with
    # while loops in command buffers (a CUDA conditional node, which hooks/graph_instrumenter.cpp
    # instruments through the bodies cuGraphAddNode made).
    cmd_buffer_loops = ("-cmdbuf", ["--dynamic"], "--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL")
    for variant in ((), cmd_buffer_loops):
        for healthy in (True, False):
            label, events, dumps, found, inspected, refused, said = run_checked(app, healthy, work, variant)
            if not while_thunks(dumps):
                fail(f"{label}: no kWhile thunk in the dumps: XLA unrolled the loop, so no loop was tested")
            unseen = [e["message"] for e in events if e["event"] == "warning" and e.get("what") == "graph_conditional"]
            if unseen:
                fail(f"{label}: a loop's body in a command buffer was not looked at: {unseen[0]}")
            if not healthy:
                check_first_at_lines(label, app, found, inspected, division, said)
            done.append(f"{run_said(label, found, inspected, refused)}; while thunks {while_thunks(dumps)}, in "
                        f"command buffers {while_in_command_buffers(dumps)}")
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
    # The donated step's sqrt sits in its update fusion; the attention's softmax is one Triton fusion.
    for capture, op, want in (("jax_donate-sick", "sqrt", {"loop_subtract_fusion"}),
                              ("jax_attention-sick", "exponential", {"triton_softmax_2"})):
        with open(glob.glob(os.path.join(FIXTURES, capture, "*_gpu_after_optimizations.txt"))[0]) as f:
            got = {kernel_name(x) for x in fusions_holding(f.read(), op)}
        if got != want:
            raise SystemExit(f"self-check: {capture}'s {op}: want {want}, got {got}")
    # The cuBLAS thunks run_checked asks to see scanned: the benchmark's MLP step runs two
    # cuBLASLt GEMMs, its transformer step sixteen, jax_pool's none (XLA made both GEMMs Triton).
    for capture, want in (("jax_bench_mlp-sick-jaxlib0.11", 2), ("jax_bench_transformer-sick-jaxlib0.11", 16),
                          ("jax_pool-sick", 0)):
        got = library_thunks(os.path.join(FIXTURES, capture))
        if got != want:
            raise SystemExit(f"self-check: {capture} runs {got} cuBLAS thunks, want {want}")
    for app, _, _, texts in APPS + (("jax_scan_rnn", None, None, SCAN_DIVISION),):
        if not lines_of(app, texts):
            raise SystemExit(f"self-check: {app}.py has none of the lines {texts}")
    # A while loop's thunk, nested in a command buffer's sequence as XLA indents it, is counted.
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "module_0001.jit_run.thunk_sequence_after_thunk_passes.txt"), "w") as f:
            f.write("001: kCommandBuffer [source | sink] kCommandBuffer\n    002: kWhile [source | sink] kWhile\n")
        if while_thunks(d) != 1 or while_in_command_buffers(d) != 1:
            raise SystemExit(f"self-check: a kWhile thunk nested in a command buffer counted {while_thunks(d)} / "
                             f"{while_in_command_buffers(d)} times, want 1 / 1")
        with open(os.path.join(d, "module_0001.jit_run.thunk_sequence_after_thunk_passes.txt"), "w") as f:
            f.write("001: kCommandBuffer [source | next=002 (1)] kCommandBuffer\n"
                    "    002: kCustomKernel [source | sink] fusion grid: [1, 1, 1] threads: [1, 1, 1]  shared_memory: 0 bytes\n"
                    "003: kWhile [prev=001 (1) | sink] kWhile\n")
        if while_thunks(d) != 1 or while_in_command_buffers(d) != 0:
            raise SystemExit("self-check: a kWhile after a command buffer is no command buffer's")
    print("self-check: the planted ops' fusions are gemm_fusion_dot_1, loop_subtract_fusion and triton_softmax_2; "
          "the captures' cuBLAS thunks are counted; each app holds its planted lines (jax_tests.py)")


if __name__ == "__main__":
    if sys.argv[1:] != ["--self-check"]:
        sys.exit("usage: jax_tests.py --self-check (the tests run through run_gpu_test.py)")
    self_check()
