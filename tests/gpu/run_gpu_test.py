#!/usr/bin/env python3
"""GPU tests for nanscope (ctest label `gpu`). Exit 77 = skipped (no CUDA device).

Each test runs real programs under the real launcher and checks the JSONL log.
Environment (set by CMake, or by tests/gpu/run_suite.sh from a staged tree): NANSCOPE_BIN,
NANSCOPE_LIB, NANSCOPE_BIN_DIR. `run_gpu_test.py --list` names every test.
"""
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("NANSCOPE_BIN", "")
LIB = os.environ.get("NANSCOPE_LIB", "")
BIN_DIR = os.environ.get("NANSCOPE_BIN_DIR", "")
if LIB:  # apps linked against libnanscope find the one under test
    os.environ["LD_LIBRARY_PATH"] = os.path.dirname(LIB) + ":" + os.environ.get("LD_LIBRARY_PATH", "")


def has_gpu():
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    if cuda.cuInit(0) != 0:
        return False
    n = ctypes.c_int(0)
    return cuda.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value > 0


def run(cmd, env=None, check=True):
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=240)
    if check and p.returncode != 0:
        fail(f"{' '.join(cmd)} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def read_log(path):
    events = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError as e:
                fail(f"{path}:{n}: not JSON: {e}")
    for e in events:
        if e.get("schema") != "nanscope/1":
            fail(f"bad schema in {e}")
    return events


def under_nanscope(app_cmd, extra_args=(), env=None):
    log = tempfile.mktemp(suffix=".jsonl")
    p = run([BIN, "--log", log, *extra_args, "--", *app_cmd], env=env)
    return p, read_log(log)


def findings(events):
    return [e for e in events if e["event"] == "nonfinite"]


def test_scan_kernel():
    p = run([os.path.join(BIN_DIR, "scan_kernel_test")], check=False)
    print(p.stdout[-3000:], p.stderr[-2000:])
    if p.returncode != 0:
        fail(f"scan_kernel_test exited {p.returncode}")


def test_scan_density():
    """Every scan kernel at every NaN density, against a host reference (issue 18)."""
    p = run([os.path.join(BIN_DIR, "scan_density_test")], check=False)
    print(p.stdout[-3000:], p.stderr[-2000:])
    if p.returncode != 0:
        fail(f"scan_density_test exited {p.returncode}")


def run_logged(cmd, env=None, check=True):
    log = tempfile.mktemp(suffix=".jsonl")
    full = {"NANSCOPE_LOG": log}
    full.update(env or {})
    p = run(cmd, env=full, check=check)
    return p, (read_log(log) if os.path.exists(log) else [])


def test_padding_verdicts():
    p, events = run_logged([os.path.join(BIN_DIR, "padding_verdicts_app")])
    expected = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    cases = [e for e in expected if "case" in e]
    replays = [e for e in expected if "graph_replay" in e]
    if len(cases) != 30 or len(replays) != 3:
        fail(f"app printed {len(cases)} cases and {len(replays)} replays")
    by_watch = {}
    for e in findings(events):
        by_watch.setdefault(e.get("watch"), []).append(e)
    for want in cases:
        got = by_watch.get(want["case"], [])
        total = want["nan"] + want["pos_inf"] + want["neg_inf"]
        if total == 0:
            if got:
                fail(f"{want['case']}: no bad values, got {got}")
            continue
        if len(got) != 1:
            fail(f"{want['case']} ({want['source']}, dtype {want['dtype']}): expected one finding, got {len(got)}")
        e = got[0]
        actual = {"nan": e["counts"]["nan"], "pos_inf": e["counts"]["pos_inf"], "neg_inf": e["counts"]["neg_inf"],
                  "counts_padding": e["counts_padding"], "counts_real": e["counts_real"],
                  "first_index": e["first_index"], "last_index": e["last_index"],
                  "rows": {"padding": e["rows"]["padding"], "real": e["rows"]["real"]}}
        expect = {k: want[k] for k in actual}
        if actual != expect:
            fail(f"{want['case']} ({want['source']}, dtype {want['dtype']}, row_len {want['row_len']}, "
                 f"stride {want['stride']}):\n  want {expect}\n  got  {actual}")
        region = "mixed" if want["counts_padding"] and want["counts_real"] else (
            "padding" if want["counts_padding"] else "real")
        if e["region"] != region or e["rows_total"] != 16:
            fail(f"{want['case']}: region {e['region']} (want {region}), rows_total {e['rows_total']}")
        if want["fix"] and (want["fix_ok"] != 1 or e.get("action") != "zeroed"):
            fail(f"{want['case']}: fix failed (fix_ok={want['fix_ok']}, action={e.get('action')})")
    got = sorted(by_watch.get("graph_case", []), key=lambda e: e["replay"])
    if [e["replay"] for e in got] != [0, 1, 2]:
        fail(f"graph_case: expected findings at replays 0,1,2, got {[e.get('replay') for e in got]}")
    for e, want in zip(got, replays):
        if e["region"] != want["region"] or {"padding": e["rows"]["padding"], "real": e["rows"]["real"]} != want["rows"]:
            fail(f"graph replay {want['graph_replay']}: want {want}, got region {e['region']} rows {e['rows']}")
    # zero_padding (graph replays, then eager): padding rows zeroed, real rows and gaps untouched,
    # and nothing reported: it reads nothing.
    zcases = [e for e in expected if "zcase" in e]
    if len(zcases) != 120:
        fail(f"app printed {len(zcases)} zero_padding expectations, want 120")
    broken = [e for e in zcases if e["fix_ok"] != 1]
    if broken:
        fail(f"zero_padding left non-zero padding rows or changed real rows: {broken[:3]}")
    zeroed_bad = sum(1 for e in zcases if e["bad_padding"] > 0)
    if zeroed_bad < 40:
        fail(f"only {zeroed_bad} zero_padding runs had non-finite values in padding rows: the test lost its teeth")
    pair = [e for e in expected if "zpair" in e]
    if pair != [{"zpair": 1, "ok": 1}]:
        fail(f"two zero_padding watches of one launch: {pair}")
    reported = [e for e in findings(events) if str(e.get("watch", "")).startswith(("zcase", "zpair"))]
    if reported:
        fail(f"zero_padding reads nothing, yet reported {reported[:2]}")
    print(f"ok: {len(cases)} verdict cases exact against the host reference; {len(zcases)} zero_padding runs "
          f"({zeroed_bad} with non-finite padding values) left padding rows zero, real rows and gaps bit-identical, "
          f"nothing reported (one launch with two such watches too); graph verdicts follow seq_lens per replay")


def test_padded_decode():
    app = os.path.join(BIN_DIR, "padded_decode")
    results = {}
    for variant in ("softmax", "unwritten"):
        for how in ("eager", "graph"):
            p, events = run_logged([app, "detect", how, variant])
            f = findings(events)
            attn = [e for e in f if e.get("watch") == "attn_out"]
            q = [e for e in f if e.get("watch") == "q_fp8"]
            if variant == "unwritten":  # steps 0 and 1 find the same rows 5-7: folded into a repeat
                if len(attn) != 1 or not any(e["event"] == "repeat" and e["of"] == attn[0]["id"] for e in events):
                    fail(f"detect {how} unwritten: want one attn_out event and a repeat: {attn}")
                attn = attn * 2
            # Kernels that take a watched buffer as const (amax, quantize) do not rescan it.
            if any(not e["kernel"].startswith("mla_decode_attention") for e in attn):
                fail(f"attn_out rescanned after a read-only launch: {[e['kernel'] for e in attn]}")
            # steps 0 and 1 have padding rows; step 2 has none
            if len(attn) != 2 or any(e["region"] != "padding" for e in attn):
                fail(f"detect {how} {variant}: attn_out should be padding-only twice: {[(e['region'], e['rows']) for e in attn]}")
            # Unwritten rows keep what the last step left: rows 3-4 were real (finite) in step 0.
            want_rows = [[[5, 7]], [[3, 7]]] if variant == "softmax" else [[[5, 7]], [[5, 7]]]
            if [e["rows"]["padding"] for e in attn] != want_rows:
                fail(f"detect {how} {variant}: attn_out rows {[e['rows'] for e in attn]}")
            if len(q) != 2 or any(e["counts_real"] == 0 for e in q):
                fail(f"detect {how} {variant}: the quantisation should leak NaN into real rows: {q}")
            results[("detect", how, variant)] = p.stdout
            for fix_mode in ("fix", "zero"):
                p, events = run_logged([app, fix_mode, how, variant])
                f = findings(events)
                if any(e.get("watch") == "q_fp8" or e["region"] in ("real", "mixed") for e in f):
                    fail(f"{fix_mode} {how} {variant}: a real-row finding survived the fix: {f}")
                attn = [e for e in f if e.get("watch") == "attn_out"]
                # fix reports what it zeroed (unwritten: step 0 zeroes rows 5-7 for good, so step 1
                # finds nothing left); zero_padding reads nothing and reports nothing.
                want_attn = 0 if fix_mode == "zero" else 2 if variant == "softmax" else 1
                if len(attn) != want_attn or any(e.get("action") != "zeroed" for e in attn):
                    fail(f"{fix_mode} {how} {variant}: expected {want_attn} zeroed attn_out findings: {attn}")
                steps = [line for line in p.stdout.splitlines() if line.startswith("padded_decode: step")]
                if len(steps) != 3 or any("padding_rows_zero=1" not in s or "consumer_finite=1" not in s for s in steps):
                    fail(f"{fix_mode} {how} {variant}: {steps}")
                detect_steps = [line for line in results[("detect", how, variant)].splitlines() if line.startswith("padded_decode: step")]
                hashes = lambda lines: [l.split()[4] for l in lines]
                if hashes(steps) != hashes(detect_steps):
                    fail(f"{fix_mode} {how} {variant}: real rows changed: {hashes(steps)} vs {hashes(detect_steps)}")
        p, events = run_logged([app, "abort", "eager", variant], check=False)
        if p.returncode not in (-6, 134) or "nanscope: abort:" not in p.stderr:
            fail(f"abort {variant}: expected SIGABRT with a reason, got rc {p.returncode}\n{p.stderr[-2000:]}")
        kinds = [e["event"] for e in events]
        if "abort" not in kinds or "summary" not in kinds:
            fail(f"abort {variant}: log lacks abort/summary events: {kinds}")
        if any(e["event"] == "nonfinite" and e.get("watch") == "attn_out" and e["region"] != "padding" for e in events):
            fail("abort: attn_out should stay padding-only")
    print("ok: padded_decode detect/fix/abort, eager and graph, softmax and unwritten variants")


def test_rules_struct():
    rules = os.path.join(HERE, "rules_struct.json")
    app = os.path.join(BIN_DIR, "rules_struct_app")
    log = tempfile.mktemp(suffix=".jsonl")
    p = run([BIN, "--log", log, "--", app], env={"NANSCOPE_RULES": rules})
    got = [e for e in findings(read_log(log)) if e.get("watch") == "struct-decode-out"]
    if len(got) != 1:
        fail(f"expected one finding from the rule, got {got}\n{p.stderr}")
    e = got[0]
    want = {"region": "padding", "counts_padding": 3 * 1500, "counts_real": 0, "rows_total": 6,
            "padding_rows": [[1, 1], [3, 4]], "dtype": "bf16"}
    actual = {"region": e["region"], "counts_padding": e["counts_padding"], "counts_real": e["counts_real"],
              "rows_total": e["rows_total"], "padding_rows": e["rows"]["padding"], "dtype": e["buffer"]["dtype"]}
    if actual != want:
        fail(f"rule verdict: want {want}, got {actual}")
    print(f"ok: a rules file found the output inside a struct parameter: {actual}")


def test_graph_manual():
    app = os.path.join(BIN_DIR, "graph_manual_app")
    p, events = under_nanscope([app])
    ptrs = {}
    for line in p.stdout.splitlines():
        for kv in line.split()[2:]:
            if "=" in kv and kv.split("=")[1].startswith("0x"):
                ptrs[line.split()[1] + "." + kv.split("=")[0]] = kv.split("=")[1]
    got = findings(events)
    if any("graph_id" not in e or e["replay"] != 3 for e in got):
        fail(f"every finding must come from replay 3 of a graph: {[(e['kernel'], e.get('graph_id'), e.get('replay')) for e in got]}")
    by_graph = {}
    for e in got:
        by_graph.setdefault(e["graph_id"], []).append(e)
    if len(by_graph) != 4:
        fail(f"expected findings from 4 graphs (chain, update, child, pdl), got {len(by_graph)}: {got}")
    chain, update, child, pdl = [sorted(by_graph[g], key=lambda e: e["graph_node"]) for g in sorted(by_graph)]
    want_chain = [("maybe_nan", 0, ptrs["chain.a"]), ("scale", 1, ptrs["chain.b"]), ("scale", 2, ptrs["chain.c"])]
    if [(e["kernel"].split("(")[0], e["graph_node"], e["buffer"]["ptr"]) for e in chain] != want_chain:
        fail(f"chain: want {want_chain}, got {[(e['kernel'], e['graph_node'], e['buffer']['ptr']) for e in chain]}")
    if len(update) != 1 or update[0]["buffer"]["ptr"] != ptrs["update.new"]:
        fail(f"update: the scan should follow the new output {ptrs['update.new']}: {update}")
    if len(child) != 1 or child[0]["buffer"]["ptr"] != ptrs["child.c"]:
        fail(f"child graph: {child}")
    # Over a programmatic edge (XLA's command buffers): both kernels scanned, the NaN's maker first.
    want_pdl = [("maybe_nan", ptrs["pdl.a"], "introduced"), ("scale", ptrs["pdl.b"], "propagated")]
    if [(e["kernel"].split("(")[0], e["buffer"]["ptr"], e.get("origin")) for e in pdl] != want_pdl:
        fail(f"pdl: want {want_pdl}, got {[(e['kernel'], e['buffer']['ptr'], e.get('origin')) for e in pdl]}")
    if any(e["counts"]["nan"] != (1 << 14) // 4 for e in got):
        fail(f"counts: {[e['counts'] for e in got]}")
    # The chain's three scans, the update graph's two and the pdl graph's two each became one merged node.
    merged = [e for e in events if e["event"] == "summary"][0]["graph_scans_merged"]
    if merged != 7:
        fail(f"graph_scans_merged = {merged}, expected 7 (chain 3 + update 2 + pdl 2)")
    print(f"ok: graphs built by hand: chain nodes 0,1,2 (one merged scan node), exec parameter update of a "
          f"merged scan's kernel, child graph, and a programmatic edge, all at replay 3")


def test_graph_conditional():
    """A while loop inside a CUDA graph (a conditional node: XLA's command buffers, PyTorch's
    torch.cond under CUDA graphs): its body's kernel is scanned every iteration. Sick: iteration 5
    writes NaN (sqrt of a negative) into every 4th element, in place; the first finding must be
    that kernel in a graph replay, introduced, with a quarter of the buffer NaN. The healthy twin
    gives none. Both: no graph_conditional warning (the bodies were seen made), and the output is
    the plain run's."""
    app = os.path.join(BIN_DIR, "graph_conditional_app")
    done = []
    for sick in (False, True):
        args = [app] + (["--sick"] if sick else [])
        label = "graph_conditional" + (" --sick" if sick else "")
        plain = run(args).stdout.strip().splitlines()[-1]
        p, events = under_nanscope(args)
        scoped = p.stdout.strip().splitlines()[-1]
        if plain.split(" x=")[1].split(" ", 1)[1] != scoped.split(" x=")[1].split(" ", 1)[1]:
            fail(f"{label}: the output differs under nanscope: {plain!r} vs {scoped!r}")
        unseen = [e for e in events if e["event"] == "warning" and e.get("what") == "graph_conditional"]
        if unseen:
            fail(f"{label}: the loop's body was not looked at: {unseen[0]['message']}")
        got = findings(events)
        if not sick and got:
            fail(f"{label}: the clean loop got findings: {got[:2]}")
        if sick:
            first = got[0] if got else {}
            if (not first.get("kernel", "").startswith("halve_plus") or first.get("origin") != "introduced"
                    or "graph_id" not in first or first["counts"]["nan"] != (1 << 14) // 4):
                fail(f"{label}: want the first finding halve_plus in a graph replay, introduced, 4096 NaN: {first}")
        done.append(f"{label}: {len(got)} finding(s), output {scoped.split(': ', 1)[1]}")
    print("ok: a while loop's body scanned each iteration: " + " | ".join(done))



def test_graph_memset():
    """A memset node zeroes x inside a CUDA graph and a kernel node divides x by its norm (XLA's
    memzero of a while loop's carried state, normalised in a command buffer). Sick (epsilon 0):
    the first finding is `normalise` in a graph replay, `introduced` (the memset node's scan says x
    was clean; without it the reader's input was never judged: `unknown`, state_lost), every
    element NaN; after the exec's memset and kernel nodes move to x2 and y2 (x2 held NaN before its
    memset), the finding on y2 is introduced too. The healthy twin gives none, the memset nodes
    never do (poison's eager NaN in x2 is the one other finding). Both: output equal to the plain
    run's."""
    app = os.path.join(BIN_DIR, "graph_memset_app")
    done = []
    for sick in (False, True):
        args = [app] + (["--sick"] if sick else [])
        label = "graph_memset" + (" --sick" if sick else "")
        strip = lambda line: re.sub(r"0x[0-9a-f]+", "0x?", line)  # noqa: E731
        plain = run(args).stdout.strip().splitlines()[-1]
        p, events = under_nanscope(args)
        scoped = p.stdout.strip().splitlines()[-1]
        if strip(plain) != strip(scoped):
            fail(f"{label}: the output differs under nanscope: {plain!r} vs {scoped!r}")
        got = findings(events)
        # poison's eager NaN in x2 is real (and what a memset scan left on x would misjudge).
        poison = [e for e in got if e["kernel"].startswith("poison")]
        got = [e for e in got if not e["kernel"].startswith("poison")]
        if len(poison) != 1 or [e for e in got if not e["kernel"].startswith("normalise")]:
            fail(f"{label}: want poison's finding once and the others on normalise: {compact(poison + got)}")
        if not sick and got:
            fail(f"{label}: the clean graph got findings: {got[:2]}")
        if sick:
            ptrs = dict(kv.split("=") for kv in scoped.split(": ", 1)[1].split() if kv.startswith("y"))
            by_ptr = {e["buffer"]["ptr"]: e for e in got}
            for name in ("y", "y2"):
                e = by_ptr.get(ptrs[name], {})
                if e.get("origin") != "introduced" or "graph_id" not in e or e["counts"]["nan"] != 1 << 14:
                    fail(f"{label}: want normalise's finding on {name} ({ptrs[name]}) introduced in a graph "
                         f"replay, 16384 NaN: {e or compact(got)}")
        done.append(f"{label}: {len(got)} finding(s), output {scoped.split(': ', 1)[1]}")
    print("ok: a memset node's scan judges what its graph's reader reads: " + " | ".join(done))

def check_totals(events, label):
    """The nonfinite events plus every repeat's count and counts equal the summary's totals
    (issue 19 item 10), and `nanscope report` says so."""
    summary = [e for e in events if e["event"] == "summary"]
    if len(summary) != 1:
        fail(f"{label}: want one summary, got {len(summary)}")
    folded = [e for e in events if e["event"] in ("nonfinite", "repeat")]
    found = sum(1 if e["event"] == "nonfinite" else e["count"] for e in folded)
    counts = {k: sum(e["counts"][k] for e in folded) for k in ("nan", "pos_inf", "neg_inf")}
    want = (summary[0]["findings"], summary[0]["counts"])
    if (found, counts) != want:
        fail(f"{label}: the events add up to {found} findings {counts}, the summary says {want}")
    log = tempfile.mktemp(suffix=".jsonl")
    with open(log, "w") as f:
        f.write("".join(json.dumps(e) + "\n" for e in events))
    r = run([BIN, "report", log, "--color", "never", "--fail-on", "never"], check=False)
    os.unlink(log)
    if "check      the events add up to the summary" not in r.stdout:
        fail(f"{label}: the report does not find its totals equal to the summary:\n{r.stdout}")
    return found


def test_torch_graph_replays():
    if not torch_available():
        print("skip: no torch with CUDA")
        sys.exit(SKIP)
    script = os.path.join(HERE, "torch_graph_replays.py")
    plain = run([sys.executable, script, "1000"])
    p, events = run_logged([sys.executable, script, "1000"], env={"CUDA_INJECTION64_PATH": LIB})
    if checksum_line(plain.stdout, "torch_graph_replays:") != checksum_line(p.stdout, "torch_graph_replays:"):
        fail("results differ under nanscope")
    lines = [e for e in events if e["event"] in ("nonfinite", "repeat") and not e.get("final")]
    finals = [e for e in events if e["event"] == "repeat" and e.get("final")]
    nonfinite = [e for e in events if e["event"] == "nonfinite"]
    if not any("softmax" in e["kernel"] for e in nonfinite):
        fail("the padding NaN of the softmax was not found")
    # Per finding site (softmax, and the bf16 cast that carries its NaN on), eagerly and in the
    # graph: one nonfinite line, then repeats at powers of four only (5 for 1000 replays).
    if len(lines) > 6 * len(nonfinite):
        fail(f"{len(lines)} log lines for 1000 replays at {len(nonfinite)} sites (want <= 6 per site plus "
             f"totals): {[e['event'] for e in lines]}")
    total = sum(e["total"] for e in finals)
    if total < 1000:
        fail(f"closing totals should count every replay: {finals}")
    found = check_totals(events, "torch_graph_replays")
    print(f"ok: 1000 replays -> {len(lines)} event lines + {len(finals)} closing totals (total {total}); same result; "
          f"events add up to the summary ({found} findings)")


def test_torch_compile():
    if not torch_available():
        print("skip: no torch with CUDA")
        sys.exit(SKIP)
    script = os.path.join(HERE, "torch_graph_replays.py")
    plain = run([sys.executable, script, "--compile"])
    p, events = run_logged([sys.executable, script, "--compile"], env={"CUDA_INJECTION64_PATH": LIB})
    a, b = checksum_line(plain.stdout, "torch_graph_replays:"), checksum_line(p.stdout, "torch_graph_replays:")
    if a != b:
        fail(f"torch.compile(reduce-overhead) result differs under nanscope: {a} vs {b}")
    if findings(events):
        fail(f"clean compiled model produced findings: {findings(events)[:2]}")
    print("ok: torch.compile(mode='reduce-overhead') runs under nanscope to the same output, no findings")


def test_dumps():
    import numpy as np
    app = os.path.join(BIN_DIR, "nan_sources")
    dump_dir = tempfile.mkdtemp()
    log = tempfile.mktemp(suffix=".jsonl")
    run([BIN, "--log", log, "--", app], env={"NANSCOPE_DUMP_DIR": dump_dir})
    events = findings(read_log(log))
    by_kernel = {e["kernel"].split("(")[0] + f".{e['buffer']['arg']}": e for e in events}
    if any("dump" not in e for e in events):
        fail(f"every first finding should have a dump: {[e.get('dump') for e in events]}")
    def load(key):
        e = by_kernel[key]
        side = json.load(open(e["dump"] + ".json"))
        return np.load(e["dump"]), side, e
    rows, side, e = load("gather_rows.0")
    if rows.dtype != np.uint16 or side["dtype"] != "bf16" or not (rows == 0xFFFF).all() or rows.size != 2048:
        fail(f"bf16 dump: {rows.dtype} {side} {rows[:4]}")
    q, side, e = load("quantize_e4m3.0")
    want = np.where(np.arange(256) % 16 == 0, 0x7F, 0x38).astype(np.uint8)
    if q.dtype != np.uint8 or not (q == want).all():
        fail(f"fp8 dump does not match: {q[:20]}")
    sd, side, e = load("stddev.0")
    var = np.where(np.arange(512) % 4 == 3, -2.0, 2.0)
    if sd.dtype != np.float64 or not np.array_equal(np.isnan(sd), np.isnan(np.sqrt(var + 0j).real * np.where(var < 0, np.nan, 1))):
        fail("f64 dump NaN pattern does not match")
    if not np.allclose(sd[var > 0], np.sqrt(2.0), rtol=0, atol=0):
        fail("f64 dump values do not match sqrt(2)")
    # The report reads a dump only where the user says (issue 19: never follow a log's paths).
    rep = run([BIN, "report", "--dump", str(by_kernel["gather_rows.0"]["id"]), "--dump-dir", dump_dir, log],
              check=False)
    if rep.returncode != 0 or "2,048 NaN" not in rep.stdout and "2048 NaN" not in rep.stdout:
        fail(f"nanscope report --dump: rc {rep.returncode}\n{rep.stdout}\n{rep.stderr}")
    print(f"ok: {len(events)} dumps load with numpy and match the tensors; report --dump reads them")


def test_nan_sources_report():
    app = os.path.join(BIN_DIR, "nan_sources")
    p, events = under_nanscope([app])
    got = findings(events)
    # kernel prefix, arg, dtype, nan, +inf, -inf, first index
    expected = [
        ("masked_softmax(", 0, "f32", 192, 0, 0, 128),
        ("fp16_scale_and_center(", 0, "f16", 0, 128, 0, 0),
        ("fp16_scale_and_center(", 1, "f16", 128, 0, 0, 0),
        ("log_probs(", 0, "f32", 100, 0, 100, 0),
        ("stddev(", 0, "f64", 128, 0, 0, 3),
        ("quantize_e4m3(", 0, "f8e4m3", 16, 0, 0, 0),
        ("quantize_e5m2(", 0, "f8e5m2", 0, 8, 8, 0),
        ("gather_rows(", 0, "bf16", 2048, 0, 0, 0),
        # The buffer gather_rows reads was set to the NaN pattern by a memset before any kernel
        # wrote it: its initial scan, before gather_rows' own, names the memset (origin host).
        ("cuMemsetD8", 0xFFFF, "bf16", 2048, 0, 0, 0),
    ]
    for kernel, arg, dtype, nan, pinf, ninf, first in expected:
        match = [e for e in got if e["kernel"].startswith(kernel) and e["buffer"]["arg"] == arg]
        if len(match) != 1:
            fail(f"{kernel} arg {arg}: expected one finding, got {len(match)}: {match}")
        e = match[0]
        c = e["counts"]
        actual = (e["buffer"]["dtype"], c["nan"], c["pos_inf"], c["neg_inf"], e["first_index"])
        if actual != (dtype, nan, pinf, ninf, first):
            fail(f"{kernel} arg {arg}: expected {(dtype, nan, pinf, ninf, first)}, got {actual}")
        for field in ("id", "ts_ns", "pid", "device", "stream", "kernel_mangled", "launch_id",
                      "correlation_id", "last_index"):
            if field not in e:
                fail(f"{kernel}: missing field {field}")
    if any(e["kernel"].startswith("axpy(") for e in got):
        fail("the clean kernel was reported")
    by_kernel = {e["kernel"].split("(")[0]: e for e in got}
    memset, gather = by_kernel.get("cuMemsetD8"), by_kernel.get("gather_rows")
    if memset.get("origin") != "host" or gather.get("origin") != "propagated" or gather.get("parents") != [memset["id"]]:
        fail(f"the memset's NaN should be a host origin and gather_rows its child: {memset} {gather}")
    if len(got) != len(expected):
        fail(f"expected {len(expected)} findings, got {len(got)}")
    summary = [e for e in events if e["event"] == "summary"]
    if len(summary) != 1 or summary[0]["findings"] != len(expected) or summary[0]["kernels_inspected"] < 8:
        fail(f"bad summary: {summary}")
    if "non-finite output: masked_softmax" not in p.stderr:
        fail(f"no console line for masked_softmax:\n{p.stderr}")
    check_totals(events, "nan_sources")
    print(f"ok: {len(got)} findings as expected; summary {summary[0]}")


def checksum_line(text, prefix):
    lines = [line for line in text.splitlines() if line.startswith(prefix)]
    if len(lines) != 1:
        fail(f"no '{prefix}' line in:\n{text}")
    return lines[0]


def test_bit_identical():
    app = os.path.join(BIN_DIR, "nan_sources")
    plain = checksum_line(run([app]).stdout, "nan_sources:")
    p, _ = under_nanscope([app])
    scoped = checksum_line(p.stdout, "nan_sources:")
    if plain != scoped:
        fail(f"outputs differ: {plain} vs {scoped}")
    print(f"ok: identical outputs: {plain}")


def test_graph_capture():
    app = os.path.join(BIN_DIR, "graph_capture_app")
    p, events = under_nanscope([app])
    got = findings(events)
    graphs = {}
    for e in got:
        if "graph_id" not in e:
            fail(f"finding without graph attribution: {e}")
        graphs.setdefault(e["graph_id"], []).append(e)
    if len(graphs) != 3:
        fail(f"expected findings from 3 captured graphs (one per capture mode), got {len(graphs)}: {got}")
    for gid, evs in graphs.items():
        kinds = sorted((e["kernel"].split("(")[0], e["graph_node"], e["replay"], e["counts"]["nan"]) for e in evs)
        want = [("maybe_nan", 0, 3, 1 << 15), ("scale", 1, 3, 1 << 15)]
        if kinds != want:
            fail(f"graph {gid}: expected {want}, got {kinds}")
    # Stream capture records a scan node after each kernel; at instantiation the two scans, beside
    # the chain, merge into one: 2 kernels + 1 scan.
    if p.stdout.count("nodes=3") != 3:
        fail(f"expected each captured graph to hold 2 kernels and 1 merged scan: {p.stdout}")
    print(f"ok: NaN reported at replay 3 only, right node (from one merged scan node), in {len(graphs)} graphs")


# The origin chain of origin_chain_app: key, kernel name, watch name.
ORIGIN_CHAIN = (("A", "attn_softmax", "attn_out"), ("B", "rowwise_scale", "scaled"), ("C", "amax_quant", "q"),
                ("D", "consume", "logits"))
ORIGIN_KEYS = ("id", "event", "watch", "region", "origin", "parents", "root", "leak", "action", "graph_id", "replay",
               "of", "count", "total", "first_replay", "last_replay", "final", "rows", "rows_before", "rows_after")


def compact(events):
    """One short JSON line per event, for failure messages."""
    lines = []
    for e in events:
        c = {k: e[k] for k in ORIGIN_KEYS if k in e}
        if "kernel" in e:
            c["kernel"] = e["kernel"].split("(")[0]
        if "rows" in c:
            c["rows"] = {k: v for k, v in c["rows"].items() if k != "truncated"}
        lines.append(json.dumps(c, separators=(",", ":")))
    return "\n  " + "\n  ".join(lines) if lines else " (none)"


def origin_events(events):
    return [e for e in events if e["event"] in ("nonfinite", "repeat")]


def origins_summary(events, label):
    summary = [e for e in events if e["event"] == "summary"]
    if len(summary) != 1 or not summary[0].get("origins", {}).get("roots"):
        fail(f"{label}: summary without origins.roots: {summary}")
    return summary[0]["origins"]


def check_origin_chain(got, label, everything, link=None):
    """got: chain key -> nonfinite event (a missing key was folded into a repeat); link: key -> event id
    that parents/root point at (default: the ids in got)."""
    link = dict(link or {}, **{k: e["id"] for k, e in got.items()})
    problems = []
    for i, (key, kernel, watch) in enumerate(ORIGIN_CHAIN):
        e = got.get(key)
        if e is None:
            continue
        def want(ok, what):
            if not ok:
                problems.append(f"{key} ({kernel}, event {e['id']}): {what}")
        want(e.get("watch") == watch, f"watch {e.get('watch')!r}, want {watch!r}")
        want(e.get("root") == [link["A"]], f"root {e.get('root')}, want [{link['A']}]")
        if key == "A":
            want(e.get("origin") == "introduced", f"origin {e.get('origin')}, want introduced")
        else:
            parent = ORIGIN_CHAIN[i - 1][0]
            want(e.get("origin") == "propagated", f"origin {e.get('origin')}, want propagated")
            want(e.get("parents") == [link[parent]], f"parents {e.get('parents')}, want [{link[parent]}]")
        if key in ("A", "B"):
            want(e["region"] == "padding", f"region {e['region']}, want padding")
        else:
            want(e["region"] in ("mixed", "real"), f"region {e['region']}, want mixed or real")
        if key == "C":
            before, after = e.get("rows_before") or {}, e.get("rows_after") or {}
            want(e.get("leak") is True, f"leak {e.get('leak')}, want true")
            want(before.get("padding") == [[10, 15]] and not before.get("real"),
                 f"rows_before {before}, want padding [[10, 15]] only")
            want(bool(after.get("real")), f"rows_after {after}, want real rows")
        else:
            want(not e.get("leak"), f"leak {e.get('leak')}, want none")
    if problems:
        fail(f"{label}:\n  " + "\n  ".join(problems) + "\nevents:" + compact(everything))


def chain_events(evs, label, everything):
    """Exactly one event per chain kernel in evs: key -> event."""
    got = {}
    for key, kernel, _ in ORIGIN_CHAIN:
        match = [e for e in evs if kernel in e["kernel"]]
        if len(match) != 1:
            fail(f"{label}: expected one {kernel} event, got {len(match)}; events:{compact(everything)}")
        got[key] = match[0]
    return got


def test_origin_chain():
    app = os.path.join(BIN_DIR, "origin_chain_app")

    # eager: A introduces NaN in padding rows, B carries it, C leaks it into real rows, D reads it.
    p, events = under_nanscope([app, "eager"])
    f = findings(events)
    if "origin_chain: eager done" not in p.stdout or "logits_finite=0" not in p.stdout:
        fail(f"eager: the NaN should reach logits: {p.stdout}")
    got = chain_events(f, "eager", origin_events(events))
    if len(f) != 4:
        fail(f"eager: expected 4 nonfinite events (A, B, C, D), got {len(f)}:{compact(f)}")
    check_origin_chain(got, "eager", origin_events(events))
    o = origins_summary(events, "eager")
    root = o["roots"][0]
    if root.get("event") != got["A"]["id"] or (root.get("first_leak") or {}).get("event") != got["C"]["id"]:
        fail(f"eager: summary root should be A ({got['A']['id']}) with first leak C ({got['C']['id']}): {o}")
    if root.get("kernels_reached", 0) < 3 or o.get("introduced") != 1 or o.get("propagated") != 3 or o.get("leaks") != 1:
        fail(f"eager: summary origins: want 1 introduced, 3 propagated, 1 leak, >= 3 kernels reached: {o}")

    # graph: 8 replays, padding (and so NaN) only in replays 2 and 5.
    p, events = under_nanscope([app, "graph"])
    if "origin_chain: graph replays=8" not in p.stdout:
        fail(f"graph: {p.stdout}")
    for line in p.stdout.splitlines():
        if line.startswith("origin_chain: replay "):
            r = int(line.split()[2])
            if f"logits_finite={0 if r in (2, 5) else 1}" not in line:
                fail(f"graph: the app itself went wrong: {line}")
    f, reps = findings(events), [e for e in events if e["event"] == "repeat"]
    everything = origin_events(events)
    stray = [e for e in f if "graph_id" not in e or e.get("replay") not in (2, 5)]
    stray += [e for e in reps if e.get("first_replay", 2) not in (2, 5) or e.get("last_replay", 5) not in (2, 5)]
    if stray:
        fail(f"graph: events outside replays 2 and 5:{compact(stray)}\nall events:{compact(everything)}")
    first = chain_events([e for e in f if e["replay"] == 2], "graph replay 2", everything)
    if len([e for e in f if e["replay"] == 2]) != 4:
        fail(f"graph replay 2: expected 4 nonfinite events:{compact(everything)}")
    check_origin_chain(first, "graph replay 2", everything)
    # Replay 5 repeats replay 2: either new events (A introduced again, since the clean replays 3
    # and 4 closed the lineage) or repeats of the replay-2 events.
    r5 = [e for e in f if e["replay"] == 5]
    again, folded = {}, []
    for key, kernel, _ in ORIGIN_CHAIN:
        new = [e for e in r5 if kernel in e["kernel"]]
        if len(new) == 1:
            again[key] = new[0]
        elif not new and any(e.get("of") == first[key]["id"] and e.get("total", 0) >= 2 for e in reps):
            folded.append(key)
        else:
            fail(f"graph replay 5: {kernel}: want one new event or a repeat of event {first[key]['id']}, "
                 f"got {len(new)} new events:{compact(everything)}")
    if len(r5) != len(again):
        fail(f"graph replay 5: events outside the chain:{compact(r5)}")
    check_origin_chain(again, "graph replay 5", everything, link={k: first[k]["id"] for k in folded})
    o = origins_summary(events, "graph")
    root = o["roots"][0]
    if root.get("event") != first["A"]["id"] or (root.get("first_leak") or {}).get("event") != first["C"]["id"]:
        fail(f"graph: first summary root should be A of replay 2 ({first['A']['id']}) with first leak C "
             f"({first['C']['id']}): {o}")

    # graph_typed: no watches, so the typed outputs' four plain scans merge into one graph node; it
    # must publish them in chain order for the origin to link A -> B -> C -> D.
    p, events = under_nanscope([app, "graph_typed"])
    f, everything = findings(events), origin_events(events)
    merged = [e for e in events if e["event"] == "summary"][0]["graph_scans_merged"]
    if merged != 4:
        fail(f"graph_typed: graph_scans_merged = {merged}, want the chain's 4 scans merged")
    if [e for e in f if e.get("replay") not in (2, 5)]:
        fail(f"graph_typed: events outside replays 2 and 5:{compact(everything)}")
    typed = chain_events([e for e in f if e["replay"] == 2], "graph_typed replay 2", everything)
    problems = []
    for i, (key, kernel, _) in enumerate(ORIGIN_CHAIN):
        e = typed[key]
        want_origin = "introduced" if key == "A" else "propagated"
        if e.get("origin") != want_origin or e.get("root") != [typed["A"]["id"]]:
            problems.append(f"{key}: origin {e.get('origin')} root {e.get('root')}")
        if key != "A" and e.get("parents") != [typed[ORIGIN_CHAIN[i - 1][0]]["id"]]:
            problems.append(f"{key}: parents {e.get('parents')}")
    if len({e["graph_node"] for e in typed.values()}) != 4:
        problems.append(f"graph_node {[e['graph_node'] for e in typed.values()]}: want one per kernel")
    if problems:
        fail("graph_typed (merged scan node):\n  " + "\n  ".join(problems) + "\nevents:" + compact(everything))

    # fix: the padding rows of A are zeroed, so nothing reaches B, C, D.
    p, events = under_nanscope([app, "fix"])
    f = findings(events)
    if "origin_chain: fix done" not in p.stdout or "logits_finite=1" not in p.stdout:
        fail(f"fix: logits should be finite: {p.stdout}")
    if (len(f) != 1 or "attn_softmax" not in f[0]["kernel"] or f[0].get("action") != "zeroed"
            or f[0].get("origin") != "introduced" or f[0]["region"] != "padding"):
        fail(f"fix: want exactly one event, attn_softmax zeroed, introduced, padding:{compact(origin_events(events))}")

    # host: a NaN copied from the host into x, then read by consume.
    p, events = under_nanscope([app, "host"])
    f = findings(events)
    if "origin_chain: host done" not in p.stdout:
        fail(f"host: {p.stdout}")
    hosts = [e for e in f if e["kernel"].startswith("cuMem")]
    cons = [e for e in f if "consume" in e["kernel"]]
    if len(hosts) != 1 or len(cons) != 1 or len(f) != 2:
        fail(f"host: want one cuMem* event and one consume event:{compact(origin_events(events))}")
    h, c = hosts[0], cons[0]
    if (h.get("origin") != "host" or c.get("origin") != "propagated" or c.get("root") != [h["id"]]
            or c.get("parents") != [h["id"]]):
        fail(f"host: want {h['kernel']} origin host, consume propagated with parents/root [{h['id']}]:"
             f"{compact([h, c])}")
    if any(e["counts"]["nan"] != 1 or e["first_index"] != 7 for e in (h, c)):
        fail(f"host: want one NaN at element 7: {[(e['counts'], e['first_index']) for e in (h, c)]}")
    o = origins_summary(events, "host")
    if o["roots"][0].get("event") != h["id"] or o["roots"][0].get("origin") != "host":
        fail(f"host: summary root should be the copy ({h['id']}): {o}")
    print(f"ok: origin chain: introduced in attn_softmax, leak at amax_quant, root linked through consume "
          f"(eager, graph replays 2 and 5 with {len(folded)} folded, the same chain from one merged scan node, "
          f"fix stops it at the source, host copy as a root)")


def torch_available():
    return subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                          capture_output=True).returncode == 0


def test_torch_injection():
    if not torch_available():
        print("skip: no torch with CUDA")
        sys.exit(SKIP)
    script = os.path.join(HERE, "torch_smoke.py")
    plain = run([sys.executable, script])
    log = tempfile.mktemp(suffix=".jsonl")
    inj = run([sys.executable, script], env={"CUDA_INJECTION64_PATH": LIB, "NANSCOPE_LOG": log})
    a, b = checksum_line(plain.stdout, "torch_smoke:"), checksum_line(inj.stdout, "torch_smoke:")
    if a != b:
        fail(f"torch results differ under injection: {a} vs {b}")
    if "CUDA error" in inj.stderr or "invalid device function" in inj.stderr:
        fail(f"CUDA error under injection:\n{inj.stderr}")
    events = read_log(log)
    summary = [e for e in events if e["event"] == "summary"]
    if len(summary) != 1 or summary[0]["launches"] == 0:
        fail(f"no summary or no launches seen: {summary}")
    print(f"ok: same torch result under injection; summary {summary[0]}; findings {len(findings(events))}")


def test_profiler_degrades():
    if not torch_available():
        print("skip: no torch with CUDA")
        sys.exit(SKIP)
    script = os.path.join(HERE, "torch_smoke.py")
    plain = run([sys.executable, script, "--profile"])
    log = tempfile.mktemp(suffix=".jsonl")
    inj = run([sys.executable, script, "--profile"], env={"CUDA_INJECTION64_PATH": LIB, "NANSCOPE_LOG": log})
    if checksum_line(plain.stdout, "torch_smoke:") != checksum_line(inj.stdout, "torch_smoke:"):
        fail("profiled results differ under nanscope")
    ours = inj.stderr.count("cannot subscribe to CUPTI")
    kineto = inj.stderr.count("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED") + inj.stderr.count(
        "multiple subscribers")
    print("stderr under profiler:\n" + "\n".join(inj.stderr.splitlines()[-15:]))
    if ours > 1:
        fail("nanscope repeated its subscribe message")
    if ours + kineto == 0:
        fail("no message says that the two CUPTI users conflict")
    print(f"ok: profiler run completed, same result; nanscope messages={ours}, profiler messages={kineto}")


def test_launch_variants():
    """Launch forms the other apps do not use, a channel overflow, and LD_PRELOAD attach."""
    app = os.path.join(BIN_DIR, "launch_variants_app")
    ptsz = os.path.join(BIN_DIR, "launch_variants_ptsz_app")
    for binary, mode, bad in ((app, "extra", 5), (app, "cooperative", 6), (ptsz, "ptsz", 7)):
        p, events = under_nanscope([binary, mode])
        got = [e for e in findings(events) if "make_nan" in e["kernel"]]
        if f"launch_variants: {mode} ok" not in p.stdout:
            fail(f"{mode}: the app did not finish:\n{p.stdout}\n{p.stderr}")
        if len(got) != 1:
            fail(f"{mode}: expected one make_nan finding, got {got}")
        e = got[0]
        if (e["buffer"]["arg"], e["counts"]["nan"], e["first_index"]) != (0, 1, bad):
            fail(f"{mode}: expected arg 0, 1 NaN at {bad}: {e}")

    # 300 findings into a 16-record ring whose reader sleeps a second: the device drops and counts.
    p, events = under_nanscope([app, "overflow"], ["--channel-records", "16"], env={"NANSCOPE_POLL_US": "1000000"})
    if "launch_variants: overflow launches=300" not in p.stdout:
        fail(f"overflow: the app did not finish:\n{p.stdout}\n{p.stderr}")
    summary = [e for e in events if e["event"] == "summary"]
    if len(summary) != 1:
        fail(f"overflow: expected one summary, got {summary}")
    s = summary[0]
    if not s["overflow"] > 0 or s["findings"] + s["overflow"] != 300:
        fail(f"overflow: expected findings + overflow == 300 with overflow > 0: {s}")
    if not any(e["event"] == "warning" and e.get("what") == "channel_overflow" for e in events):
        fail("overflow: no channel_overflow warning")

    # LD_PRELOAD attaches like injection and finds the same NaN.
    nan_sources = os.path.join(BIN_DIR, "nan_sources")
    def key(e):
        c = e["counts"]
        return (e["kernel"], e["buffer"]["arg"], c["nan"], c["pos_inf"], c["neg_inf"], e["first_index"])
    _, injected = under_nanscope([nan_sources])
    _, preloaded = under_nanscope([nan_sources], ["--preload"])
    attach = [[e.get("attach") for e in ev if e["event"] == "start"] for ev in (injected, preloaded)]
    if attach != [["injection"], ["preload"]]:
        fail(f"attach modes: expected injection then preload, got {attach}")
    a, b = sorted(map(key, findings(injected))), sorted(map(key, findings(preloaded)))
    if a != b or len(a) != 9:  # nan_sources' eight kernels and the memset before gather_rows
        fail(f"preload found something else than injection:\n{a}\n{b}")
    print(f"ok: extra, cooperative and per-thread launches reported; overflow {s['overflow']} of 300 counted "
          f"with a warning; LD_PRELOAD finds the same {len(b)} findings")


def test_graph_overlap():
    """Scan nodes run beside the app's next kernels, yet before any later writer of what they read."""
    app = os.path.join(BIN_DIR, "graph_overlap_app")
    chain = {"make_nan->scan(make_nan)", "read_into->scan(read_into)", "overwrite->scan(overwrite)",
             "consume->scan(consume)"}
    app_chain = {"make_nan->read_into", "read_into->overwrite", "overwrite->consume"}
    want = {
        # Merged (the default): make_nan's scan keeps its own node, beside read_into and before the
        # in-place overwrite (merged with read_into's, it would have no app node of room left:
        # overlap::GroupLimits::min_slack); read_into's, overwrite's and consume's scans run as one
        # node after it.
        "merge": app_chain | {"make_nan->scan(make_nan)", "scan(make_nan)->overwrite",
                              "scan(make_nan)->scan(consume+overwrite+read_into)",
                              "read_into->scan(consume+overwrite+read_into)",
                              "overwrite->scan(consume+overwrite+read_into)",
                              "consume->scan(consume+overwrite+read_into)"},
        "on": chain | {"make_nan->read_into", "read_into->overwrite", "overwrite->consume",
                       # make_nan's scan before the in-place overwrite of its buffer, and each scan
                       # before the next (they read the state words the one before writes)
                       "scan(make_nan)->overwrite", "scan(make_nan)->scan(read_into)",
                       "scan(read_into)->scan(overwrite)", "scan(overwrite)->scan(consume)"},
        "off": chain | {"scan(make_nan)->read_into", "scan(read_into)->overwrite", "scan(overwrite)->consume"},
    }
    # NANSCOPE_GRAPH_PDL only changes the exec's edges: the app reads back its graph as without it.
    want["pdl both"] = want["pdl off"] = want["merge"]
    # Programmatic edges in the exec (graph_edges_programmatic): the read-only scan beside the chain
    # to the in-place overwrite of its buffer (release, the default); with `both` also each app
    # kernel to its read-only scan (make_nan's scan, and the merged node's three kernels).
    programmatic = {"merge": 1, "on": 1, "off": 0, "pdl both": 5, "pdl off": 0}
    # The app's own view of which replays put NaN in d: a finding in another replay is nanscope's
    # (S10-6's extra replay-7 findings were the app's, its poison write racing the graph).
    app_nan = "graph_overlap: nan_replays=3,6"
    plain = run([app]).stdout
    if checksum_line(plain, "graph_overlap: nan_replays=") != app_nan:
        fail(f"plain run: {checksum_line(plain, 'graph_overlap: nan_replays=')}, want {app_nan}")
    results = {}
    modes = (("merge", {}), ("on", {"NANSCOPE_GRAPH_MERGE": "0"}), ("off", {"NANSCOPE_GRAPH_OVERLAP": "0"}),
             ("pdl both", {"NANSCOPE_GRAPH_PDL": "both"}), ("pdl off", {"NANSCOPE_GRAPH_PDL": "off"}))
    for mode, env in modes:
        p, events = under_nanscope([app], ["--no-aggregate"], env=env)
        if checksum_line(p.stdout, "graph_overlap: nan_replays=") != app_nan:
            fail(f"overlap {mode}: the app saw {checksum_line(p.stdout, 'graph_overlap: nan_replays=')}, want {app_nan}")
        edges = {l.split(" ", 1)[1] for l in p.stdout.splitlines() if l.startswith("edge ")}
        if edges != want[mode]:
            fail(f"overlap {mode}: edges\n{sorted(edges)}\nexpected\n{sorted(want[mode])}")
        summary = [e for e in events if e["event"] == "summary"][0]
        if summary["graph_edges_programmatic"] != programmatic[mode]:
            fail(f"overlap {mode}: graph_edges_programmatic = {summary['graph_edges_programmatic']}, "
                 f"want {programmatic[mode]}")
        if summary["graph_scans_overlapped"] != (0 if mode == "off" else 3):
            fail(f"overlap {mode}: graph_scans_overlapped = {summary['graph_scans_overlapped']}")
        if summary["graph_scans_merged"] != (0 if mode in ("on", "off") else 3):
            fail(f"overlap {mode}: graph_scans_merged = {summary['graph_scans_merged']}")
        got = sorted((e["kernel"].split("(")[0], e["replay"], e["counts"]["nan"], e["first_index"])
                     for e in findings(events))
        # make_nan's two NaN (one at index 5) are seen by its scan before overwrite clears them.
        expect = sorted([(k, r, 2, 5) for k in ("make_nan", "read_into", "consume") for r in (3, 6)])
        if got != expect:
            fail(f"overlap {mode}: findings {got}, expected {expect}")
        if checksum_line(p.stdout, "graph_overlap: replays=") != checksum_line(plain, "graph_overlap: replays="):
            fail(f"overlap {mode}: results differ from the plain run")
        results[mode] = len(edges)
    print(f"ok: with overlap the scans run beside the chain ({results['on']} edges, make_nan's scan ordered "
          f"before the in-place overwrite); merged, two scan nodes ({results['merge']} edges) keep that order; "
          f"findings and results identical to overlap off and to the plain run, with programmatic edges "
          f"(release: {programmatic['merge']}, both: {programmatic['pdl both']}) and without")


def test_graph_fork():
    """A capture forked onto a second stream and joined: its three scans (two on parallel branches)
    merge into one node that still attributes each NaN to its kernel, node and replay."""
    app = os.path.join(BIN_DIR, "graph_fork_app")
    plain = run([app]).stdout
    seen = {}
    for mode, env in (("merged", {}), ("one node per scan", {"NANSCOPE_GRAPH_MERGE": "0"})):
        p, events = under_nanscope([app], ["--no-aggregate"], env=env)
        if checksum_line(p.stdout, "graph_fork_app: nodes=").split()[-1] != checksum_line(plain, "graph_fork_app: nodes=").split()[-1]:
            fail(f"{mode}: results differ from the plain run:\n{p.stdout}\n{plain}")
        summary = [e for e in events if e["event"] == "summary"][0]
        f = findings(events)
        got = sorted((e["kernel"].split("(")[0], e["graph_node"], e["replay"], e["counts"]["nan"], e.get("origin"))
                     for e in f)
        want = sorted([("left", 0, 3, 2048, "introduced"), ("combine", 2, 3, 2048, "propagated"),
                       ("right", 1, 6, 1024, "introduced"), ("combine", 2, 6, 1024, "propagated")])
        if got != want:
            fail(f"{mode}: findings {got}, want {want}")
        by = {(e["kernel"].split("(")[0], e["replay"]): e for e in f}
        for r, source in ((3, "left"), (6, "right")):
            if by[("combine", r)].get("parents") != [by[(source, r)]["id"]]:
                fail(f"{mode}: combine at replay {r} should name {source}'s event as its parent: {by[('combine', r)]}")
        merged = summary["graph_scans_merged"]
        if merged != (3 if mode == "merged" else 0):
            fail(f"{mode}: graph_scans_merged = {merged}")
        seen[mode] = checksum_line(p.stdout, "graph_fork_app: nodes=").split()[1]
    if seen["merged"] != "nodes=4" or seen["one node per scan"] != "nodes=6":
        fail(f"node counts after instantiation: {seen}, want 3 kernels + 1 merged scan, and 3 + 3")
    print("ok: forked capture: left (replay 3) and right (replay 6) introduced, combine passed each on, "
          "from one merged scan node over both branches (4 nodes) as from one node per scan (6); results "
          "identical to the plain run")


def dump_nonfinite(values, dtype):
    """Element-wise non-finite mask of a dump (bf16 is stored as raw uint16 words)."""
    import numpy as np
    if dtype == "bf16":
        return (values & 0x7F80) == 0x7F80
    return ~np.isfinite(values)


def test_torch_examples():
    """The three PyTorch examples under the Python helper: padding NaN in attn_out on every replay
    with padding, the leak into real rows downstream, the fix, and a dump that matches the tensor."""
    if not torch_available():
        print("skip: no torch with CUDA")
        sys.exit(SKIP)
    import numpy as np
    root = os.path.dirname(os.path.dirname(HERE))
    env = {"PYTHONPATH": os.path.join(root, "python")}
    summary = []
    # The first watched buffer that gets the NaN: the Triton variant also watches its softmax
    # output (`probs`), whose fix leaves attn_out clean.
    for script, extra, source in (("torch_decode.py", [], "attn_out"), ("torch_decode_triton.py", [], "probs"),
                                  ("torch_decode_compile.py", ["--split"], "attn_out")):
        for action in ("detect", "fix"):
            dump_dir = tempfile.mkdtemp()
            log = tempfile.mktemp(suffix=".jsonl")
            p = run([BIN, "--log", log, "--no-aggregate", "--dump-dir", dump_dir, "--",
                     sys.executable, os.path.join(root, "examples", script), action, *extra], env=env)
            events = findings(read_log(log))
            label = f"{script} {action}"
            attn = [e for e in events if e.get("watch") == source]
            if not attn or any(e["region"] != "padding" or e["counts_real"] != 0 for e in attn):
                fail(f"{label}: {source} must be found in padding rows only: {[(e['region'], e['rows']) for e in attn]}")
            # REAL_ROWS = (5, 3, 8): the padding rows of the first two replays, none in the third.
            seen = {tuple(map(tuple, e["rows"]["padding"])) for e in attn}
            if not {((5, 7),), ((3, 7),)} <= seen:
                fail(f"{label}: {source} padding rows {sorted(seen)}, want rows 5-7 and 3-7 among them")
            leaks = [e for e in events if (e.get("counts_real") or 0) > 0]
            if action == "detect":
                if "all_logits_finite=0" not in p.stdout:
                    fail(f"{label}: the NaN should reach the logits:\n{p.stdout}")
                if not any(e.get("watch") in ("q_fp8", "logits") for e in leaks):
                    fail(f"{label}: no real-row finding downstream (the leak): {[(e.get('watch'), e['region']) for e in events]}")
                first = attn[0]
                words = np.load(first["dump"])
                side = json.load(open(first["dump"] + ".json"))
                rows = words if words.ndim == 2 else words.reshape(8, -1)  # B = 8 rows
                pad = {r for a, b in first["rows"]["padding"] for r in range(a, b + 1)}
                bad_rows = {r for r in range(rows.shape[0]) if dump_nonfinite(rows[r], side["dtype"]).any()}
                if side["dtype"] != first["buffer"]["dtype"] or bad_rows != pad:
                    fail(f"{label}: the {source} dump does not match the tensor: dtype {side['dtype']}/{words.dtype}, "
                         f"non-finite rows {sorted(bad_rows)} vs padding rows {sorted(pad)}")
            else:
                if "all_logits_finite=1" not in p.stdout or "close_to_reference=0" in p.stdout:
                    fail(f"{label}: the fix should make the logits finite and close to the reference:\n{p.stdout}")
                if leaks:
                    fail(f"{label}: real-row findings with the fix on: {[(e.get('watch'), e['region']) for e in leaks]}")
                if any(e.get("action") != "zeroed" for e in attn):
                    fail(f"{label}: {source} findings should say action zeroed: {[e.get('action') for e in attn]}")
            summary.append(f"{script} {action}: {len(attn)} {source}, {len(leaks)} real-row")
    print("ok: " + "; ".join(summary))


# ---------------------------------------------------------------------------------------------
# Issue 16 part 3: exact tensor extents under the caching allocator (hooks/torch_blocks.cpp,
# shim/torch_alloc/). Kept as one block so the other tests' additions merge around it.

def test_torch_extents():
    """layer_norm's 8-element `mean` between NaN-filled neighbours in one segment: scanned as
    8 elements, no finding when clean; with one planted NaN, only that row, never a neighbour."""
    if not torch_available():
        print("skip: no torch with CUDA")
        sys.exit(SKIP)
    shim = os.environ.get("NANSCOPE_TORCH_SHIM") or os.path.join(os.path.dirname(LIB), "libnanscope_torch_shim.so")
    if not os.path.exists(shim):
        print(f"skip: no {shim}: configure with -DNANSCOPE_TORCH_INCLUDE=<torch>/include to build the shim")
        sys.exit(SKIP)
    script = os.path.join(HERE, "apps", "torch_extents.py")
    env = {"CUDA_INJECTION64_PATH": LIB}
    plain = run([sys.executable, script])
    p, events = run_logged([sys.executable, script], env=env)
    if checksum_line(plain.stdout, "torch_extents:") != checksum_line(p.stdout, "torch_extents:"):
        fail(f"outputs differ under nanscope:\n{plain.stdout}\n{p.stdout}")
    summary = [e for e in events if e["event"] == "summary"]
    if findings(events):
        got = [(e["kernel"], e["buffer"]["elements"], e["counts"]) for e in findings(events)]
        fail(f"clean run: findings (a scan read the NaN neighbours?): {got[:4]}; summary {summary}")
    p, events = run_logged([sys.executable, script, "--plant"], env=env)
    norm = [e for e in findings(events) if "layer_norm" in e["kernel"]]
    if not norm:
        fail(f"planted NaN in row 3: no layer_norm finding; all findings {findings(events)[:4]}")
    sizes = sorted({e["buffer"]["elements"] for e in norm})
    if not set(sizes) <= {8, 8 * 4096}:
        fail(f"layer_norm outputs scanned beyond their numel (want 8 or 32768): {sizes}")
    means = [e for e in norm if e["buffer"]["elements"] == 8]
    if not means or any(e["counts"]["nan"] != 1 for e in means):
        fail(f"mean/rstd: want elements 8 with exactly 1 NaN (row 3): {[(e['buffer'], e['counts']) for e in means]}")
    print(f"ok: clean run has no finding; planted run: layer_norm outputs scanned as {sizes} elements, "
          f"mean/rstd 1 NaN each; summary {summary[:1]}")

# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# The range factories and the casting copy of a decode step (src/decode/aten_range.cpp, the
# casting closure in aten_elementwise.cpp). Kept as one block so the other tests' additions merge
# around it.

# The debug line's "node after" (graph_overlap.cpp: the first 70 characters of its name) when it
# is arange's kernel or a non-contiguous elementwise closure (in this app only the casting copies).
RANGE_COPY_AFTER = re.compile(r"->\s+void (\(anonymous namespace\)::elementwise_kernel_with_index"
                              r"|at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_im)")
RANGE_COPY_KERNELS = re.compile(r"elementwise_kernel_with_index|gpu_kernel_impl<at::native::direct_copy_kernel_cuda")


def test_torch_range_copy():
    """arange's int64 positions, their broadcast float copy, a linspace and a float64 -> float
    broadcast copy in a CUDA graph: both kernel families are decoded (never in the summary's
    not-inspected list), the planner takes their exact writes (no scan stays in line before
    them), and a NaN in the float64 row is found in the copy's B*D float output, exactly."""
    if not torch_available():
        print("skip: no torch with CUDA")
        sys.exit(SKIP)
    script = os.path.join(HERE, "apps", "torch_range_copy.py")
    plain = run([sys.executable, script])
    p, events = run_logged([sys.executable, script], env={"CUDA_INJECTION64_PATH": LIB, "NANSCOPE_LEVEL": "debug"})
    if checksum_line(plain.stdout, "torch_range_copy:") != checksum_line(p.stdout, "torch_range_copy:"):
        fail(f"outputs differ under nanscope:\n{plain.stdout}\n{p.stdout}")
    if findings(events):
        fail(f"clean run: findings {[(e['kernel'][:80], e['buffer']) for e in findings(events)][:4]}")
    summary = [e for e in events if e["event"] == "summary"][0]
    missed = [r for r in summary["coverage"]["not_inspected_top"] if RANGE_COPY_KERNELS.search(r["kernel"])]
    if missed:
        fail(f"not inspected: {[(r['kernel'][:120], r['reason']) for r in missed]}")
    in_line = [line for line in p.stderr.splitlines() if "left in line after" in line]
    blocked = [line for line in in_line if RANGE_COPY_AFTER.search(line)]
    if blocked:
        fail(f"scans still in line before the decoded kernels: {blocked}")
    m = re.search(r"B=(\d+) D=(\d+)", p.stdout)
    rows, cols = int(m.group(1)), int(m.group(2))
    p, events = run_logged([sys.executable, script, "--plant"], env={"CUDA_INJECTION64_PATH": LIB})
    copies = [e for e in findings(events) if "direct_copy_kernel_cuda" in e["kernel"]]
    if not copies:
        fail(f"planted NaN in the float64 row: no finding in the casting copy; findings "
             f"{[e['kernel'][:80] for e in findings(events)][:4]}")
    wrong = [(e["buffer"], e["counts"]) for e in copies if e["buffer"]["elements"] != rows * cols
             or e["counts"]["nan"] != rows]
    if wrong:
        fail(f"the copy's output should be scanned as {rows * cols} floats with {rows} NaN: {wrong}")
    print(f"ok: same output; both families decoded; {len(in_line)} in-line scan line(s), none before them; "
          f"planted NaN found in the copy's {rows * cols} floats ({len(copies)} finding(s))")


# ---- Real programs with no code change (issues 16 and 17): Hugging Face models built from
# configs, SDPA backends, a user Triton kernel and a CUDA extension, each run plainly and under
# CUDA_INJECTION64_PATH. The apps print their own ground truth (tests/gpu/apps/common.py).
APPS = os.path.join(HERE, "apps")

# Kernel families that write each ATen op's output on sm_90 with torch 2.11, from the demangled
# names in the shared kernel table: ATen elementwise ops are vectorized_/unrolled_/elementwise_
# kernel instances whose template arguments name the op's functor; at::scalar_tensor is
# empty + fill_ (FillFunctor); addmm is a cuBLASLt GEMM, `nvjet_sm90_*` on the H200 (older
# heuristics give `sm90_xmma_gemm_*` or `cutlass3x_*gemm*`), or the cuBLAS call itself once
# nanscope names library calls.
GEMM_KERNELS = r"(?i)nvjet|gemm|xmma|cublas"
KERNEL_OF_OP = {
    "aten.rsqrt.default": r"rsqrt_kernel_cuda",
    "aten.scalar_tensor.default": r"FillFunctor",
    "aten.addmm.default": GEMM_KERNELS,
}
# Inductor names a fused kernel after the ATen ops in it (descriptive_names="original_aten"):
# the RMSNorm of the compiled Llama is a reduction whose name holds rsqrt.
INDUCTOR_RSQRT = r"^triton_(per|red|poi)_fused_\w*rsqrt"
# The attention kernels each SDPA backend launches in torch 2.11 on sm_90.
# cuDNN's scan is named after the last kernel its cudnnBackendExecute launched
# (`cudnn_generated_fort_native_sdpa_sm90_*`), never after the call itself: a finding named
# `cudnnBackendExecute` would mean no kernel of the call was seen.
ATTENTION_KERNELS = {"flash": r"pytorch_flash::flash_fwd", "efficient": r"fmha_cutlassF",
                     "cudnn": r"(?i)^(?!cudnnBackendExecute\b).*(cudnn|sdpa|fmha|flash)"}
# Candidate attribution for opaque kernels (issue 17, item 3; docs/origin.md, docs/log-schema.md):
# a finding whose values were last written, as far as nanscope can tell, by a kernel it could not
# inspect carries origin == CANDIDATE["origin"] and a list CANDIDATE["list"] of entries, each an
# object with the kernel name under CANDIDATE["kernel"] (and launch_id, stream, python).
CANDIDATE = {"origin": "candidate", "list": "candidates", "kernel": "kernel"}


def truth_line(stdout, label):
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        fail(f"{label}: the last stdout line is not the truth JSON:\n{stdout[-3000:]}")


def said(events, limit=8):
    """What nanscope said, for failure messages: the first findings and the summary."""
    rows = []
    for e in sorted(findings(events), key=lambda e: e["id"])[:limit]:
        rows.append(json.dumps({"id": e["id"], "kernel": e["kernel"][:160], "elements": e["buffer"]["elements"],
                                "dtype": e["buffer"]["dtype"], "counts": e["counts"], "origin": e.get("origin"),
                                "origin_why": e.get("origin_why"), "parents": e.get("parents"),
                                "graph_id": e.get("graph_id"), "replay": e.get("replay"),
                                CANDIDATE["list"]: e.get(CANDIDATE["list"])}))
    summary = [e for e in events if e["event"] == "summary"]
    rows.append("summary: " + (json.dumps(summary[0]) if summary else "none"))
    return "\n  " + "\n  ".join(rows)


# What the wheel's `nanscope --` puts first on PYTHONPATH (python/nanscope/_launcher.py): its
# sitecustomize loads the Python helper, whose torch.compile hook maps Inductor's output code to
# the model's lines.
BOOTSTRAP = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python", "nanscope", "_bootstrap")


def run_app(name, args, label, python_helper=False):
    """Runs apps/NAME.py plainly (with its reference pass), then under CUDA_INJECTION64_PATH with
    --no-reference (when the app has one) so the log holds only the measured pass. Fails unless
    the two outputs are bit-identical. Returns (plain truth line, nanscope events).

    With `python_helper` (torch.compile apps, which all have a reference pass): as the wheel's
    launcher runs it (the bootstrap on PYTHONPATH), under nanscope first, in an Inductor cache of
    its own, then plainly with that cache. A graph Inductor takes from its cache keeps the line map
    it was saved with, and the plain run must run the same compiled kernels to be bit-identical."""
    script = os.path.join(APPS, name + ".py")
    if not python_helper:
        want = run_plain(script, args, label)
        got, events = run_scoped([sys.executable, script, *args, *(["--no-reference"] if "truth" in want else [])],
                                 {}, label)
    else:
        cache = {"TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp(prefix="nanscope_inductor_")}
        got, events = run_scoped([sys.executable, script, *args, "--no-reference"],
                                 dict(cache, PYTHONPATH=os.pathsep.join(p for p in (BOOTSTRAP, os.environ.get("PYTHONPATH"))
                                                                         if p)), label)
        want = run_plain(script, args, label, cache)
    if want.get("checksum") != got.get("checksum"):
        fail(f"{label}: outputs differ under nanscope: {want.get('checksum')} vs {got.get('checksum')}")
    return want, events


def run_plain(script, args, label, env=None):
    """The app without nanscope: its truth line (skips the test when the app skips)."""
    plain = run([sys.executable, script, *args], env=env, check=False)
    if plain.returncode == SKIP:
        print(f"skip {label}: {plain.stdout.strip()} {plain.stderr.strip()[-2000:]}")
        sys.exit(SKIP)
    if plain.returncode != 0:
        fail(f"{label}: the plain run exited {plain.returncode}\n{plain.stdout[-3000:]}\n{plain.stderr[-3000:]}")
    return truth_line(plain.stdout, label)


def run_scoped(cmd, extra_env, label):
    """`cmd` under CUDA_INJECTION64_PATH: its truth line and its log's events."""
    # One log per process: torch.compile's worker processes inherit the injection too, and must
    # not write into the app's log.
    logs = tempfile.mkdtemp(prefix="nanscope_logs_")
    env = dict(os.environ, CUDA_INJECTION64_PATH=LIB, NANSCOPE_LOG=os.path.join(logs, "%p.jsonl"),
               NANSCOPE_CONSOLE="0", **extra_env)
    scoped = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = scoped.communicate(timeout=240)
    if scoped.returncode == SKIP:
        print(f"skip {label}: {stdout.strip()[-2000:]} {stderr.strip()[-2000:]}")
        sys.exit(SKIP)
    if scoped.returncode != 0:
        fail(f"{label}: {' '.join(cmd)} exited {scoped.returncode} under nanscope\nstdout:\n{stdout[-3000:]}"
             f"\nstderr:\n{stderr[-3000:]}")
    log = os.path.join(logs, f"{scoped.pid}.jsonl")
    if not os.path.exists(log):
        fail(f"{label}: no log {log} from the app (logs: {os.listdir(logs)})\nstderr:\n{stderr[-3000:]}")
    return truth_line(stdout, label), read_log(log)


def expect_clean(events, label):
    if findings(events):
        fail(f"{label}: the program writes no non-finite value, yet nanscope said:{said(events)}")


def expect_finding(e, kernel_re, elements, counts, label, events, origin="introduced"):
    """e names the kernel (kernel_re), scanned exactly the written tensor (elements) and counted
    its values (counts), with the origin given."""
    problems = []
    if not re.search(kernel_re, e["kernel"]):
        problems.append(f"kernel {e['kernel'][:200]!r} does not match {kernel_re!r}")
    if e["buffer"]["elements"] != elements:
        problems.append(f"elements {e['buffer']['elements']}, want the written tensor's numel {elements}")
    if e["counts"] != counts:
        problems.append(f"counts {e['counts']}, want {counts}")
    if origin and e.get("origin") != origin:
        problems.append(f"origin {e.get('origin')} ({e.get('origin_why')}), want {origin}")
    if problems:
        fail(f"{label}: finding {e['id']}:\n  " + "\n  ".join(problems) + f"\nnanscope said:{said(events)}")


def first_finding(events, label, want):
    got = sorted(findings(events), key=lambda e: e["id"])
    if not got:
        fail(f"{label}: no finding, but {want}\nnanscope said:{said(events)}")
    return got[0]


def expect_first_op(events, first_op, label):
    """The first finding names the kernel of the reference pass's first non-finite ATen op,
    over that op's output; none at all when the reference pass saw no non-finite value."""
    if first_op is None:
        expect_clean(events, label)
        return
    if first_op["op"] not in KERNEL_OF_OP:
        fail(f"{label}: no kernel family known for {first_op['op']} (the reference's first non-finite op)")
    first = first_finding(events, label, f"{first_op['op']} wrote {first_op['counts']}")
    expect_finding(first, KERNEL_OF_OP[first_op["op"]], first_op["numel"], first_op["counts"], label, events)
    return first


def expect_in_graph(events, kernel_re, elements, counts, label):
    """A finding from a graph replay at the same kernel over the same tensor (the warm-up's
    eager findings come first)."""
    replayed = [e for e in findings(events) if "graph_id" in e and re.search(kernel_re, e["kernel"])]
    if not replayed:
        fail(f"{label}: no finding from a graph replay at {kernel_re!r}\nnanscope said:{said(events)}")
    expect_finding(min(replayed, key=lambda e: e["id"]), kernel_re, elements, counts, label + " (replay)", events)


def require_torch(module=None):
    """Skips (77) unless torch sees a CUDA device and `module` (transformers, triton) imports."""
    if not torch_available():
        print("skip: no torch with CUDA")
        sys.exit(SKIP)
    if module and subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode:
        print(f"skip: no {module}")
        sys.exit(SKIP)


def llama_first_op(want, label):
    """The reference pass's first non-finite op: the app is broken unless it is the first RMSNorm's
    rsqrt and the logits hold NaN."""
    first_op = want["truth"]["first_op"]
    if first_op is None or first_op["op"] != "aten.rsqrt.default" or want["logits_nonfinite"] == 0:
        fail(f"{label}: the app should make NaN from the first RMSNorm's rsqrt: {want}")
    return first_op


def padding_bug_and_twin(app, mode):
    """A model app with the zero padding embedding and RMSNorm eps 0 (hf_llama_padding.py,
    hf_moe_padding.py) in one mode: the first RMSNorm's rsqrt must be named first (in a graph
    replay too), and the clean twin must give what its truth says. Returns (the sick run's truth,
    its first finding, the twin's events)."""
    label = f"{app} {mode}"
    want, events = run_app(app, [mode], label)
    first_op = llama_first_op(want, label)
    first = expect_first_op(events, first_op, label)
    if mode == "graph":
        expect_in_graph(events, KERNEL_OF_OP[first_op["op"]], first_op["numel"], first_op["counts"], label)
    # The clean twin: with eps the eager attention writes no non-finite value; sdpa's
    # boolean mask still becomes -Inf in where(mask, 0, -inf), and the truth names it.
    clean, clean_events = run_app(app, [mode, "--clean"], label + " --clean")
    expect_first_op(clean_events, clean["truth"]["first_op"], label + " --clean")
    return want, first, clean_events


def test_hf_llama_padding():
    """Llama with a zero padding embedding row and RMSNorm eps 0: eager and sdpa attention, and a
    captured graph replayed; each clean twin too."""
    require_torch("transformers")
    done = []
    for mode in ("eager", "sdpa", "graph"):
        _, first, _ = padding_bug_and_twin("hf_llama_padding", mode)
        done.append(f"{mode}: {first['kernel'].split('(')[0][:60]} x{first['buffer']['elements']}")
    print("ok: the first RMSNorm's rsqrt named first, introduced, over its [B,T,1] output; clean twins as "
          "their truth says; outputs bit-identical (" + "; ".join(done) + ")")


# ATen's grouped GEMM on sm_90 (torch.nn.functional.grouped_mm): a CUTLASS GemmUniversal over a
# GroupProblemShape, whose parameters are CUTLASS's structs with per-group pointer arrays.
GROUPED_GEMM = re.compile(r"GroupProblemShape")


def not_inspected_of(events, pattern):
    """What the summary's coverage says of the kernels matching `pattern`: (launches, reasons)
    among those not inspected, library ones included."""
    summary = [e for e in events if e["event"] == "summary"]
    coverage = summary[0].get("coverage", {}) if summary else {}
    rows = [r for r in coverage.get("not_inspected_top", []) + coverage.get("library_top", [])
            if pattern.search(r["kernel"])]
    return sum(r["launches"] for r in rows), sorted({r["reason"] for r in rows})


def test_hf_moe_padding():
    """Mixtral (mixture of experts) with the Llama test's bug, its experts run as transformers 5
    runs them on Hopper (grouped_mm: sort, histc, gather, ATen's grouped GEMM, scatter back) and as
    the eager loop (index_add_), and captured in a graph: the first RMSNorm's rsqrt named first;
    the healthy twins, routing and experts included, give no finding."""
    require_torch("transformers")
    done = []
    for mode in ("eager", "loop", "graph"):
        want, first, clean_events = padding_bug_and_twin("hf_moe_padding", mode)
        launches, reasons = not_inspected_of(clean_events, GROUPED_GEMM)
        grouped = f"grouped GEMM not inspected x{launches}: {reasons}" if launches else "no grouped GEMM left out"
        done.append(f"{mode} ({want['experts']} experts): {first['kernel'].split('(')[0][:50]} "
                    f"x{first['buffer']['elements']}; {grouped}")
    print("ok: Mixtral: the first RMSNorm's rsqrt named first, introduced; healthy twins give no finding; "
          "outputs bit-identical (" + " | ".join(done) + ")")


def test_hf_compile():
    """The same Llama through torch.compile, default and reduce-overhead: the fused RMSNorm
    kernel is named first, over the rsqrt result or the norm's output."""
    require_torch("transformers")
    for mode in ("compile", "compile-ro"):
        label = f"hf_llama_padding {mode}"
        want, events = run_app("hf_llama_padding", [mode], label, python_helper=True)
        first_op = llama_first_op(want, label)
        norm_out = want["truth"]["outputs"]["model.layers.0.input_layernorm"]
        allowed = {(want["rmsnorm"]["rsqrt_numel"], json.dumps(first_op["counts"], sort_keys=True)),
                   (norm_out["numel"], json.dumps(norm_out["counts"], sort_keys=True))}
        first = first_finding(events, label, "the RMSNorm makes NaN")
        actual = (first["buffer"]["elements"], json.dumps(first["counts"], sort_keys=True))
        if actual not in allowed:
            fail(f"{label}: first finding over {actual}, want the rsqrt result or the norm output: "
                 f"{sorted(allowed)}\nnanscope said:{said(events)}")
        expect_finding(first, INDUCTOR_RSQRT, first["buffer"]["elements"], first["counts"], label, events)
        print(f"{label}: python line {expect_compiled_line(first, 'modeling_llama.py', RMSNORM_LINE, label, events)}; "
              f"{python_line_cost(events)}")
        clean, events = run_app("hf_llama_padding", [mode, "--clean"], label + " --clean", python_helper=True)
        expect_first_op(events, clean["truth"]["first_op"], label + " --clean")
    print("ok: compiled (default and reduce-overhead): the fused rsqrt kernel named first, introduced, over "
          "an exact tensor, at the RMSNorm's own line in modeling_llama.py (Inductor's output-code line beside it); "
          "clean twins give no finding; outputs bit-identical")


# The lines of LlamaRMSNorm.forward that Inductor may name for the fused norm kernel (the fused
# nodes' last origin): the variance, the rsqrt, the weight's product.
RMSNORM_LINE = re.compile(r"variance|rsqrt|self\.weight")


def python_line_cost(events):
    """The Python line's host cost from the summary: walks and their mean time."""
    summary = [e for e in events if e["event"] == "summary"]
    n = summary[0].get("python_line_captures", 0) if summary else 0
    ns = summary[0].get("python_line_ns", 0) if summary else 0
    return f"python line: {n} walks, {ns / max(n, 1) / 1000:.1f} us each"


def expect_compiled_line(finding, file_name, source_re, label, events):
    """Under torch.compile with the Python helper: the finding's `python` is the model's line in
    `file_name` whose source matches `source_re`, with `generated` naming Inductor's output code."""
    py = finding.get("python")
    gen = (py or {}).get("generated") if isinstance(py, dict) else None
    if not isinstance(py, dict) or os.path.basename(py.get("file", "")) != file_name or not isinstance(gen, dict) \
            or not gen.get("file", "").endswith(".py") or not isinstance(gen.get("line"), int):
        fail(f"{label}: the first finding's python line should be in {file_name}, mapped from Inductor's output code: "
             f"{py}\nnanscope said:{said(events)}")
    try:
        with open(py["file"]) as f:
            source = f.read().splitlines()[py["line"] - 1]
    except (OSError, IndexError) as e:
        fail(f"{label}: cannot read the python line {py}: {e}")
    if not source_re.search(source):
        fail(f"{label}: the python line {py} is not the model's op ({source_re.pattern}): {source!r}")
    return f"{file_name}:{py['line']} ({source.strip()[:60]}), compiled into {os.path.basename(gen['file'])}:{gen['line']}"


# Where c_fc's GEMM is launched from in Python (issue 17, item 4): transformers' Conv1D.forward
# (pytorch_utils.py, the torch.addmm line) is the innermost frame outside torch; a GEMM named by
# a hook one level up may name GPT2MLP.forward (modeling_gpt2.py, the self.c_fc(...) line).
GPT2_GEMM_LINES = {"pytorch_utils.py": "Conv1D.forward", "modeling_gpt2.py": "GPT2MLP.forward"}


def expect_python_line(finding, places, label, events):
    """The finding's `python` names one of `places` (file name -> qualified function) at a line
    that holds a call: the source line is read back and must not be blank."""
    py = finding.get("python")
    if not isinstance(py, dict):
        fail(f"{label}: the first finding has no python line: {py!r}\nnanscope said:{said(events)}")
    name = os.path.basename(py.get("file", ""))
    if places.get(name) != py.get("function") or not isinstance(py.get("line"), int) or py["line"] <= 0:
        fail(f"{label}: the first finding's python line should be in {places}: {py}\nnanscope said:{said(events)}")
    try:
        with open(py["file"]) as f:
            source = f.read().splitlines()[py["line"] - 1]
    except (OSError, IndexError) as e:
        fail(f"{label}: cannot read the python line {py}: {e}")
    if "(" not in source:
        fail(f"{label}: the python line {py} holds no call: {source!r}")
    return f"{name}:{py['line']} ({source.strip()[:60]})"


def test_hf_gpt2_overflow():
    """GPT-2 fp16 with c_fc's weight scaled until its GEMM overflows: eager, graph, compile."""
    require_torch("transformers")
    for mode in ("eager", "graph", "compile"):
        label = f"hf_gpt2_overflow {mode}"
        want, events = run_app("hf_gpt2_overflow", [mode], label, python_helper=mode == "compile")
        t = want["truth"]
        gemm, bounds = t["gemm"], want["gemm_inf_bounds"]
        within = lambda c: c["nan"] == 0 and all(lo <= c[k] <= hi for k, (lo, hi) in bounds.items())
        if (t["first_op"] or {}).get("op") != "aten.addmm.default" or not within(gemm["counts"]) or \
                gemm["counts"]["pos_inf"] + gemm["counts"]["neg_inf"] == 0:
            fail(f"{label}: the app should overflow c_fc's GEMM first, within its Inf bounds: {want}")
        first = first_finding(events, label, f"c_fc's GEMM wrote {gemm['counts']}")
        if mode == "compile":
            # Inductor may call another cuBLAS GEMM than eager addmm (mm with the bias add fused
            # after it): its Inf counts are those of the scaled product, within the app's bounds.
            if not within(first["counts"]):
                fail(f"{label}: first finding counts {first['counts']} outside the GEMM's Inf bounds {bounds}"
                     f"\nnanscope said:{said(events)}")
            expect_finding(first, GEMM_KERNELS, gemm["numel"], first["counts"], label, events)
        else:
            expect_finding(first, GEMM_KERNELS, gemm["numel"], gemm["counts"], label, events)
        if mode == "graph":
            expect_in_graph(events, GEMM_KERNELS, gemm["numel"], gemm["counts"], label)
        if mode == "compile":  # Inductor's output code, mapped to Conv1D.forward's addmm line
            print(f"{label}: python line {expect_compiled_line(first, 'pytorch_utils.py', re.compile('addmm'), label, events)}")
        else:
            print(f"{label}: python line {expect_python_line(first, GPT2_GEMM_LINES, label, events)}")
        _, events = run_app("hf_gpt2_overflow", [mode, "--clean"], label + " --clean", python_helper=mode == "compile")
        expect_clean(events, label + " --clean")
    print("ok: GPT-2 c_fc GEMM named first, introduced, over its output with its exact Inf counts, eager, "
          "graph and compiled, with the Python line of the c_fc call (compiled: mapped from Inductor's output code); "
          "clean runs give no finding; "
          "outputs bit-identical")


def test_sdpa_backends():
    """A query row of +Inf through SDPA with the cuDNN, flash and mem-efficient backends forced:
    each attention kernel is named with the NaN of its output row, passed on from the query."""
    require_torch()
    for backend, kernel_re in ATTENTION_KERNELS.items():
        label = f"sdpa_backends {backend}"
        want, events = run_app("sdpa_backends", [backend], label)
        if not want["supported"]:
            fail(f"{label}: torch refused the backend: {want['reason']}")
        out = want["output"]
        # The query's +Inf arrives by a host copy, and findings that pass it on (the copy's rescan,
        # any copy of the query) hold +Inf only: the attention is the first to write NaN.
        with_nan = [e for e in sorted(findings(events), key=lambda e: e["id"]) if e["counts"]["nan"]]
        if not with_nan:
            fail(f"{label}: no finding with NaN, but the output holds {out['counts']}\nnanscope said:{said(events)}")
        first = with_nan[0]
        expect_finding(first, kernel_re, out["numel"], out["counts"], label, events, origin="propagated")
        by_id = {e["id"]: e for e in findings(events)}
        parents = [by_id.get(i) for i in first.get("parents") or []]
        if not parents or any(p is None or p["counts"]["pos_inf"] != want["query_counts"]["pos_inf"] for p in parents):
            fail(f"{label}: the attention's parents should be the query's finding ({want['query_counts']}): "
                 f"{first.get('parents')}\nnanscope said:{said(events)}")
        _, events = run_app("sdpa_backends", [backend, "--clean"], label + " --clean")
        expect_clean(events, label + " --clean")
    sdpa_cudnn_overflow()
    print("ok: cuDNN, flash and mem-efficient attention each named over their output with its NaN, propagated "
          "from the query; clean inputs give no finding; outputs bit-identical")


def sdpa_cudnn_overflow():
    """cuDNN attention from finite Q, K, V with scale 1e38: what its output holds that is not finite
    was made inside the attention, so its finding is `introduced` there (its inputs were judged
    finite). cuDNN's arithmetic decides whether the scores overflow at all: a finite output is
    said, not failed (the propagated case above already names the attention)."""
    label = "sdpa_backends cudnn --overflow"
    want, events = run_app("sdpa_backends", ["cudnn", "--overflow"], label)
    if not want["supported"]:
        fail(f"{label}: torch refused the backend: {want['reason']}")
    out = want["output"]
    if not has_nonfinite(out["counts"]):
        expect_clean(events, label)
        print(f"{label}: cuDNN kept the overflowing scores finite ({out['counts']}): no introduced check")
        return
    first = first_finding(events, label, f"cuDNN attention wrote {out['counts']}")
    expect_finding(first, ATTENTION_KERNELS["cudnn"], out["numel"], out["counts"], label, events,
                   origin="introduced")
    print(f"{label}: {first['kernel'][:80]} introduced {out['counts']}")


def has_nonfinite(counts):
    return counts["nan"] + counts["pos_inf"] + counts["neg_inf"] > 0


def test_triton_user():
    """A user @triton.jit row normalisation that computes 0/0 on zero rows."""
    require_torch("triton")
    want, events = run_app("triton_user_kernel", [], "triton_user_kernel")
    out = want["output"]
    first = first_finding(events, "triton_user_kernel", f"{want['kernel']} wrote {out['counts']}")
    expect_finding(first, "^" + re.escape(want["kernel"]) + r"(\(|$)", out["numel"], out["counts"],
                   "triton_user_kernel", events)
    _, events = run_app("triton_user_kernel", ["--clean"], "triton_user_kernel --clean")
    expect_clean(events, "triton_user_kernel --clean")
    print(f"ok: {want['kernel']} named, introduced, over its {out['numel']}-element output "
          f"({out['counts']['nan']} NaN); the guarded kernel gives no finding; outputs bit-identical")


def test_cuda_ext():
    """A load_inline extension kernel whose output pointer is inside a params struct: nanscope
    cannot see what it writes, so the reader that finds the NaN names it as the candidate."""
    require_torch()
    build_dir = tempfile.mkdtemp(prefix="nanscope_cuda_ext_")  # built once, loaded by the later runs
    want, events = run_app("cuda_ext_params", ["--build-dir", build_dir], "cuda_ext_params")
    first = first_finding(events, "cuda_ext_params", f"{want['kernel']} wrote {want['output']['counts']}")
    candidates = first.get(CANDIDATE["list"]) or []
    names = [c if isinstance(c, str) else c.get(CANDIDATE["kernel"], "") for c in candidates]
    if first.get("origin") != CANDIDATE["origin"] or not any(n.startswith(want["kernel"]) for n in names):
        fail(f"cuda_ext_params: the first finding should carry origin {CANDIDATE['origin']!r} with "
             f"{want['kernel']} among its {CANDIDATE['list']}: origin {first.get('origin')}, {names}"
             f"\nnanscope said:{said(events)}")
    entry = next(c for c in candidates if isinstance(c, dict) and c.get(CANDIDATE["kernel"], "").startswith(want["kernel"]))
    line = expect_python_line(entry, {"cuda_ext_params.py": "main"}, "cuda_ext_params candidate", events)
    _, events = run_app("cuda_ext_params", ["--clean", "--build-dir", build_dir], "cuda_ext_params --clean")
    expect_clean(events, "cuda_ext_params --clean")
    print(f"ok: {want['kernel']} (params struct, launched at {line}) named as the candidate origin at {first['kernel'][:80]}; "
          f"the guarded kernel gives no finding; outputs bit-identical")


def test_wheel():
    """The pip wheel (issue 20) in a venv that sees this machine's torch, running a PyTorch example
    under the venv's `nanscope --`: tests/gpu/wheel_check.sh (skips without .stage/wheel)."""
    p = subprocess.run(["bash", os.path.join(HERE, "wheel_check.sh")], capture_output=True, text=True, timeout=600)
    keep = [line for line in p.stdout.splitlines() if line.startswith(("installed ", "CUPTI loaded", "ok:", "PASS", "FAIL"))]
    print("\n".join(keep), "\n...\n", p.stdout[-4000:], p.stderr[-3000:])  # the checks' lines, then the tail
    sys.exit(p.returncode)

# ---- Several GPUs (issue 21): NCCL collectives under torchrun, one log per rank --------------
NCCL_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
NCCL_KERNEL = r"(?i)oneRankReduce|ncclDevKernel|ncclKernel"  # NCCL's own kernels, not the function's name


def gpu_count():
    p = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                       capture_output=True, text=True)
    return int(p.stdout.strip() or 0) if p.returncode == 0 else 0


def torchrun(nproc, args, nanscope_logs=None):
    """apps/nccl_allreduce.py under `python -m torch.distributed.run`, plainly or behind the
    launcher with --log DIR/run-%r.jsonl. Returns {rank: truth line}."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           os.path.join(APPS, "nccl_allreduce.py"), *args]
    if nanscope_logs:
        cmd = [BIN, "-q", "--log", os.path.join(nanscope_logs, "run-%r.jsonl"), "--", *cmd]
    p = run(cmd, env=NCCL_ENV, check=False)
    if p.returncode == SKIP or "skip:" in p.stdout:
        print(f"skip: {p.stdout.strip()[-500:]}")
        sys.exit(SKIP)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)} exited {p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-4000:]}")
    truth = {}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            t = json.loads(line)
            truth[t["rank"]] = t
    if sorted(truth) != list(range(nproc)):
        fail(f"not every rank printed its line: {sorted(truth)}\n{p.stdout[-3000:]}")
    return truth


def nccl_run(nproc, args, label):
    """A plain run and a run under nanscope: bit-identical outputs on every rank; each rank's log."""
    if gpu_count() < nproc:
        print(f"skip {label}: needs {nproc} GPUs, {gpu_count()} visible")
        sys.exit(SKIP)
    want = torchrun(nproc, args)
    logs = tempfile.mkdtemp(prefix="nanscope_ranks_")
    got = torchrun(nproc, args, logs)
    for r in range(nproc):
        if want[r]["checksum"] != got[r]["checksum"]:
            fail(f"{label}: rank {r}'s output differs under nanscope: {want[r]['checksum']} vs {got[r]['checksum']}")
    events = {}
    for r in range(nproc):
        path = os.path.join(logs, f"run-{r}.jsonl")
        if not os.path.exists(path):
            fail(f"{label}: no log for rank {r} (logs: {os.listdir(logs)})")
        events[r] = read_log(path)
        start = events[r][0]
        if start["event"] != "start" or start.get("rank") != r or start.get("world_size") != nproc:
            fail(f"{label}: rank {r}'s log starts with {json.dumps(start)[:300]}")
    return want, events


def collective_findings(events, op="all_reduce"):
    return [e for e in sorted(findings(events), key=lambda e: e["id"])
            if e.get("collective", {}).get("op") == op and e["collective"]["role"] == "recv"]


def expect_collective(e, rank, nranks, send_state, origin, label, events):
    c = e["collective"]
    problems = []
    if not re.fullmatch(r"[0-9a-f]{16}", c["comm"]):
        problems.append(f"comm {c['comm']!r} is not 16 hex digits")
    if (c["rank"], c["nranks"], c["peers"]) != (rank, nranks, list(range(nranks))):
        problems.append(f"rank/nranks/peers {c['rank']}/{c['nranks']}/{c['peers']}")
    if c["send_state"] != send_state:
        problems.append(f"send_state {c['send_state']}, want {send_state}")
    if e.get("origin") != origin:
        problems.append(f"origin {e.get('origin')} ({e.get('origin_why')}), want {origin}")
    if not re.search(NCCL_KERNEL, e["kernel"]):
        problems.append(f"kernel {e['kernel'][:160]!r} is not NCCL's kernel")
    if problems:
        fail(f"{label} rank {rank}: finding {e['id']}:\n  " + "\n  ".join(problems) + f"\nnanscope said:{said(events)}")


def test_nccl_allreduce():
    """One rank (a single GPU): ReduceOp.AVG makes NCCL run its one-rank reduction kernel over a
    bf16 tensor holding one planted NaN; the scan of recvbuff is named after that kernel,
    propagated from the sendbuff (in place), with the collective's fields; a clean run finds
    nothing; outputs bit-identical."""
    require_torch()
    want, events = nccl_run(1, [], "nccl_allreduce")
    got = collective_findings(events[0])
    if not got:
        fail(f"nccl_allreduce: no all_reduce finding (want {want[0]['counts']})\nnanscope said:{said(events[0])}")
    e = got[0]
    expect_collective(e, 0, 1, "nonfinite", "propagated", "nccl_allreduce", events[0])
    if e["buffer"]["elements"] != want[0]["numel"] or e["counts"] != want[0]["counts"]:
        fail(f"nccl_allreduce: scanned {e['buffer']['elements']} elements {e['counts']}, want {want[0]['numel']} "
             f"{want[0]['counts']}")
    _, clean = nccl_run(1, ["--clean"], "nccl_allreduce --clean")
    expect_clean(clean[0], "nccl_allreduce --clean")
    print(f"ok: one-rank all_reduce named {e['kernel'][:60]}, seq {e['collective']['seq']}, comm "
          f"{e['collective']['comm']}, propagated from its sendbuff; clean run clean; bit-identical")


def test_nccl_allreduce_2rank():
    """Two ranks (needs 2 GPUs): rank 1 plants a NaN, both all-reduce in place. Rank 1's recv
    finding is propagated (send_state nonfinite); rank 0's is introduced at the NCCL kernel with
    send_state finite, on the same (comm, seq); outputs bit-identical on both ranks."""
    require_torch()
    _, events = nccl_run(2, [], "nccl_allreduce_2rank")
    first = {}
    for r, send_state, origin in ((0, "finite", "introduced"), (1, "nonfinite", "propagated")):
        got = collective_findings(events[r])
        if not got:
            fail(f"nccl_allreduce_2rank: no all_reduce finding on rank {r}\nnanscope said:{said(events[r])}")
        expect_collective(got[0], r, 2, send_state, origin, "nccl_allreduce_2rank", events[r])
        first[r] = got[0]["collective"]
    if (first[0]["comm"], first[0]["seq"]) != (first[1]["comm"], first[1]["seq"]):
        fail(f"nccl_allreduce_2rank: the ranks disagree on the collective: {first}")
    print(f"ok: rank 1 contributed (nonfinite sendbuff), rank 0 introduced at the NCCL kernel, both at comm "
          f"{first[0]['comm']} seq {first[0]['seq']}; bit-identical")


def test_nccl_tp_graph():
    """A 2-way tensor-parallel MLP captured in a torch.cuda.graph (needs 2 GPUs): rank 1's input
    holds a NaN for the last replay; both ranks' all_reduce scans are graph nodes that find it,
    rank 0 with send_state finite, rank 1 nonfinite; outputs bit-identical."""
    require_torch()
    _, events = nccl_run(2, ["--workload", "tp_graph"], "nccl_tp_graph")
    for r, send_state, origin in ((0, "finite", "introduced"), (1, "nonfinite", "propagated")):
        got = [e for e in collective_findings(events[r]) if "graph_id" in e]
        if not got:
            fail(f"nccl_tp_graph: no captured all_reduce finding on rank {r}\nnanscope said:{said(events[r])}")
        expect_collective(got[0], r, 2, send_state, origin, "nccl_tp_graph", events[r])
    print("ok: captured all_reduce scans found the NaN on both ranks (rank 1 contributed); bit-identical")


# Keys of a finding that name what was found, not where it sat in memory or in the log.
BATCH_KEYS = ("kernel", "launch_id", "counts", "first_index", "last_index", "graph_node", "replay", "region",
              "counts_padding", "counts_real", "rows", "rows_total", "watch", "action", "origin", "origin_why",
              "origin_incomplete", "leak", "rows_before", "rows_after", "count", "total", "final")


def batch_findings(events):
    """The findings and their origins, with event ids replaced by what they name (kernel, launch, arg,
    replay): a run with the eager scans held and one without must give the same list."""
    by_id = {e["id"]: e for e in origin_events(events) if "id" in e}

    def name(i):
        e = by_id.get(i)
        if e is None:
            return f"unlogged#{i}"
        if e["event"] == "repeat":
            return "repeat of " + name(e.get("of"))
        return f"{e['kernel'].split('(')[0]}@{e.get('launch_id')}:{(e.get('buffer') or {}).get('arg')}/r{e.get('replay')}"

    out = []
    for e in origin_events(events):
        c = {k: e[k] for k in BATCH_KEYS if k in e}
        c["event"] = e["event"]
        c["arg"] = (e.get("buffer") or {}).get("arg")
        c["dtype"] = (e.get("buffer") or {}).get("dtype")
        c["elements"] = (e.get("buffer") or {}).get("elements")
        for k in ("parents", "root"):
            if k in e:
                c[k] = [name(i) for i in e[k]]
        if "of" in e:
            c["of"] = name(e["of"])
        if "candidates" in e:
            c["candidates"] = [(x.get("kernel"), x.get("launch_id")) for x in e["candidates"]]
        out.append(json.dumps(c, sort_keys=True))
    return sorted(out)


def batch_diff(app_cmd, label, env=None, args=("--no-aggregate",)):
    """Runs app_cmd with NANSCOPE_EAGER_BATCH off and on; fails unless the findings are the same.
    Returns (findings, summary of the batched run, stdout of both)."""
    runs = {}
    for mode in ("off", "on"):
        p, events = under_nanscope(app_cmd, list(args), env=dict(env or {}, NANSCOPE_EAGER_BATCH=mode))
        start = [e for e in events if e["event"] == "start"][0]
        want_batch = 8 if mode == "on" else 0
        if start["config"].get("eager_batch") != want_batch:
            fail(f"{label}: start config eager_batch {start['config'].get('eager_batch')}, want {want_batch}")
        summary = [e for e in events if e["event"] == "summary"][0]
        runs[mode] = (batch_findings(events), summary, p.stdout, events)
    off, on = runs["off"], runs["on"]
    if off[0] != on[0]:
        only_off = [x for x in off[0] if x not in on[0]]
        only_on = [x for x in on[0] if x not in off[0]]
        fail(f"{label}: findings differ with the eager scans held\nonly without batching:\n  " +
             "\n  ".join(only_off) + "\nonly with batching:\n  " + "\n  ".join(only_on))
    if off[1]["scans"] != on[1]["scans"] or off[1]["scans_dropped"] != on[1]["scans_dropped"]:
        fail(f"{label}: scans {off[1]['scans']} / dropped {off[1]['scans_dropped']} without batching, "
             f"{on[1]['scans']} / {on[1]['scans_dropped']} with")
    if off[1].get("eager_scans_batched") != 0:
        fail(f"{label}: eager_scans_batched {off[1].get('eager_scans_batched')} with batching off")
    return on[0], on[1], off[2], on[2], on[3]


def test_eager_batch():
    """Eager scans held per stream and launched together (NANSCOPE_EAGER_BATCH, issue 18): the same
    findings, counts, regions, origins and parents as one scan per launch, on the origin chain, the
    graph tests (their eager parts), a kernel that overwrites a buffer right after its writer, two
    streams joined by an event and a synchronised stream whose buffer the host rewrites."""
    app = os.path.join(BIN_DIR, "eager_batch_app")
    batched = {}
    # chain: 20 typed layers, 0/0 at layer 3: 17 findings, introduced then propagated, in groups of 8.
    got, summary, _, _, events = batch_diff([app, "chain"], "chain")
    f = findings(events)
    kinds = sorted((e["kernel"].split("(")[0], e.get("origin")) for e in f)
    if len(f) != 17 or kinds.count(("scale_div", "introduced")) != 1 or kinds.count(("step", "propagated")) != 16:
        fail(f"chain: want scale_div introduced and 16 step layers propagated, got {kinds}:{compact(f)}")
    for e in f:
        if e["counts"]["nan"] != 64 or (e.get("origin") == "propagated" and len(e.get("parents", [])) != 1):
            fail(f"chain: each layer has 64 NaN and one parent:{compact([e])}")
    if summary["eager_scans_batched"] < 16 or summary["eager_batch_launches"] < 2:
        fail(f"chain: the held scans should go 8 buffers a launch: eager_scans_batched "
             f"{summary['eager_scans_batched']}, eager_batch_launches {summary['eager_batch_launches']}")
    batched["chain"] = (summary["eager_scans_batched"], summary["eager_batch_launches"])
    # overwrite: each NaN is reported although the next launch (typed, untyped, memset, host copy)
    # overwrites it; the later writers' findings (none: they write finite values) are the same.
    got, summary, _, _, events = batch_diff([app, "overwrite"], "overwrite")
    f = [e for e in findings(events) if e["kernel"].startswith("scale_div")]
    if len(f) != 4 or any(e["counts"]["nan"] != 16 for e in f):
        fail(f"overwrite: want scale_div's 16 NaN reported 4 times (before each overwrite):{compact(findings(events))}")
    # streams: B's reader names A's finding as its parent; B's overwrite of x comes after A's scan.
    got, summary, _, _, events = batch_diff([app, "streams"], "streams")
    f = {e["kernel"].split("(")[0]: e for e in findings(events)}
    if set(f) != {"scale_div", "step"} or f["step"].get("parents") != [f["scale_div"]["id"]]:
        fail(f"streams: want scale_div introduced on A and step propagated from it on B:{compact(findings(events))}")
    if summary["eager_scans_batched"] < 2:
        fail(f"streams: eager_scans_batched {summary['eager_scans_batched']}, want the held scans grouped")
    batched["streams"] = (summary["eager_scans_batched"], summary["eager_batch_launches"])
    # sync: the held scan ran at the synchronisation, before the host rewrote the managed buffer.
    got, summary, _, _, events = batch_diff([app, "sync"], "sync")
    f = [e for e in findings(events) if e["kernel"].startswith("scale_div")]
    if len(f) != 1 or f[0]["counts"]["nan"] != 8:
        fail(f"sync: want scale_div's 8 NaN reported:{compact(findings(events))}")
    # The origin chain (watched, row-aware: its scans run in line after what was held) and its typed
    # graph, the host copy, and the graph tests: eager warm-ups and graphs with batching on and off.
    origin = os.path.join(BIN_DIR, "origin_chain_app")
    for mode in ("eager", "graph", "graph_typed", "fix", "host"):
        batch_diff([origin, mode], f"origin_chain {mode}", args=())
    for name in ("graph_capture_app", "graph_overlap_app", "graph_fork_app", "graph_manual_app"):
        _, _, plain_out, batch_out, _ = batch_diff([os.path.join(BIN_DIR, name)], name)
        plain_out, batch_out = (re.sub(r"0x[0-9a-f]+", "0x?", o) for o in (plain_out, batch_out))  # addresses
        if plain_out != batch_out:
            fail(f"{name}: the app's output differs with the eager scans held:\n{plain_out}\n{batch_out}")
    print(f"ok: findings, counts, regions, origins and parents identical with the eager scans held "
          f"(chain: {batched['chain'][0]} scans in {batched['chain'][1]} grouped launches; streams: "
          f"{batched['streams'][0]} in {batched['streams'][1]}); every overwritten NaN still reported; "
          f"origin_chain (5 modes) and 4 graph apps identical")


sys.path.insert(0, HERE)
from verdict_tests import (test_verdicts_healthy, test_verdicts_jax_pool, test_verdicts_sick_kernels,  # noqa: E402,F401
                           test_verdicts_sick_models)
from tier_tests import test_tier_models, test_tier_replay7  # noqa: E402,F401
from jax_tests import (test_jax_cudnn_attention, test_jax_fusions, test_jax_optax,  # noqa: E402,F401
                       test_jax_scan, test_jax_user_libraries)


def gpu_tests():
    """Every test, in definition order: the one list CMake and tests/gpu/run_suite.sh read."""
    return [n[len("test_"):] for n, f in globals().items() if n.startswith("test_") and callable(f)]


def main():
    name = sys.argv[1]
    if name == "--list":
        print("\n".join(gpu_tests()))
        return
    if name not in gpu_tests():
        fail(f"unknown test {name!r}; --list names them")
    if not has_gpu():
        print(f"skip {name}: no CUDA device visible")
        sys.exit(SKIP)
    globals()[f"test_{name}"]()


if __name__ == "__main__":
    main()
