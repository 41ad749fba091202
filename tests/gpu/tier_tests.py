"""GPU tests of the sentinel tier (issue 37, docs/sentinel.md), run by run_gpu_test.py, which
imports them (`run_gpu_test.py --list` names them):

- tier_replay7: apps/tier_replay7.py, a decode step in a CUDA graph whose padding NaN appears on
  replay 7 only (`once`) or on every replay from replay 7 (`every`), and its healthy twin, under
  NANSCOPE_TIER=full and NANSCOPE_TIER=sentinel (NANSCOPE_ESCALATE=3). Under sentinel the `once`
  NaN is reported where and when a sentinel saw it (replay 7, origin unknown, origin_why
  sentinel), with an `escalation` event `escalate` then `did_not_recur` and the report's "first
  cause unknown; rerun with --tier full"; the `every` NaN is escalated at replay 7, localized
  within the next 3 replays, and gets the same FIRST CAUSE and leak point as under full.
- tier_models: the GPT-2 fp16 overflow and the Llama padding apps, eager and graph, under
  sentinel: the same FIRST CAUSE as under full; each healthy twin gives no finding.

Every run's outputs must be bit-identical to the plain run's, in both tiers. A test fails loudly
when the tier is not implemented: the start event's config must say `tier` and `escalate`.

`python3 tests/gpu/tier_tests.py --self-check` runs the log checks on hand-written logs (no GPU).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
APPS = os.path.join(HERE, "apps")
WINDOW = 3  # NANSCOPE_ESCALATE, given explicitly (it is also the default)
AT = 7  # the replay of tier_replay7.py whose padding rows first hold NaN
UNKNOWN_FIRST_CAUSE = "first cause unknown; rerun with --tier full"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def helpers():
    """run_gpu_test's helpers (run_plain, run_scoped, said, ...), imported when a test runs: that
    module imports this one."""
    import run_gpu_test
    return run_gpu_test


def escalations(events, graph_id=None):
    return [e for e in events if e["event"] == "escalation" and (graph_id is None or e.get("graph_id") == graph_id)]


def graph_findings(events):
    """The graph's findings that are faults: not the intended -inf a masked_fill writes into the
    scores on every replay (H200, 8f482b6: under full those came in replays 0-13, `inf: intended`)."""
    return [e for e in events if e["event"] == "nonfinite" and "graph_id" in e and not intended_only(e)]


def intended_only(e):
    return (e.get("counts") or {}).get("nan", 0) == 0 and e.get("inf") == "intended"


def by_sentinel(e):
    return e.get("origin") == "unknown" and e.get("origin_why") == "sentinel"


def told(events, report=None):
    """What nanscope said, for failure messages: findings, escalation events, the report's verdict."""
    rows = []
    for e in sorted((e for e in events if e["event"] == "nonfinite"), key=lambda e: e["id"])[:12]:
        row = {k: e.get(k) for k in ("id", "kernel", "watch", "region", "counts", "inf", "origin", "origin_why",
                                     "leak", "graph_id", "replay")}
        row["kernel"] = (row["kernel"] or "")[:90]  # the rest of the row is what tells findings apart
        rows.append(json.dumps(row)[:500])
    rows += [json.dumps(e)[:300] for e in escalations(events)[:8]]
    if report is not None:
        rows.append("report first_cause: " + json.dumps(cause_key(report.get("first_cause"))))
        rows.append("report leaks: " + json.dumps([x.get("kernel", "")[:100] for x in report.get("leaks") or []]))
        rows.append("report gate: " + json.dumps(report.get("gate")))
    return "\n  " + "\n  ".join(rows or ["(no finding, no escalation)"])


def expect_tier(events, tier, label):
    """The start event's config names the tier and the escalation window."""
    start = [e for e in events if e["event"] == "start"]
    config = start[0].get("config", {}) if start else {}
    if config.get("tier") != tier or str(config.get("escalate")) != str(WINDOW):
        fail(f"{label}: the start event's config says tier {config.get('tier')!r}, escalate "
             f"{config.get('escalate')!r}; want {tier!r} and {WINDOW} (are NANSCOPE_TIER and NANSCOPE_ESCALATE "
             f"implemented?)\n  config: {json.dumps(config)[:1500]}")


def cause_key(fc):
    """What makes two FIRST CAUSE cards the same: kernel, Python line, buffer, counts, origin (not
    the replay: under sentinel the cause is localized in a later replay)."""
    if not fc:
        return None
    py = fc.get("python") or {}
    buf = fc.get("buffer") or {}
    return {"kernel": fc.get("kernel"), "python": f"{os.path.basename(py.get('file') or '')}:{py.get('line')}",
            "elements": buf.get("elements"), "dtype": buf.get("dtype"), "counts": fc.get("counts"),
            "origin": fc.get("origin")}


def first_leak(events):
    """(kernel, Python line) of the first finding that says leak, or None."""
    leaks = sorted((e for e in events if e["event"] == "nonfinite" and e.get("leak")), key=lambda e: e["id"])
    if not leaks:
        return None
    return leaks[0]["kernel"], (leaks[0].get("python") or {}).get("line")


def report_of(events, label):
    """`nanscope report` on the events: (JSON report, exit code, text report)."""
    bin_ = os.environ["NANSCOPE_BIN"]
    log = tempfile.mktemp(suffix=".jsonl")
    with open(log, "w") as f:
        f.write("".join(json.dumps(e) + "\n" for e in events))
    rep = subprocess.run([bin_, "report", "--format", "json", log], capture_output=True, text=True, timeout=120)
    try:
        report = json.loads(rep.stdout)
    except json.JSONDecodeError:
        fail(f"{label}: nanscope report gave no JSON (exit {rep.returncode})\n{rep.stdout[-2000:]}\n{rep.stderr[-2000:]}")
    text = subprocess.run([bin_, "report", "--color", "never", "--fail-on", "never", log], capture_output=True,
                          text=True, timeout=120).stdout
    return report, rep.returncode, text


def run_tier(script, args, tier, label):
    """The app under nanscope with NANSCOPE_TIER=tier: (truth line, events). The repository's
    python/ stands for the installed helper (tier_replay7 watches attn_out)."""
    env = {"NANSCOPE_TIER": tier, "NANSCOPE_ESCALATE": str(WINDOW),
           "PYTHONPATH": os.pathsep.join(filter(None, [os.path.join(ROOT, "python"), os.environ.get("PYTHONPATH")]))}
    got, events = helpers().run_scoped([sys.executable, script, *args, "--no-reference"], env, f"{label} ({tier})")
    keep_log(events, f"{label} {tier}")
    expect_tier(events, tier, f"{label} ({tier})")
    return got, events


def keep_log(events, name):
    """The run's events into $NANSCOPE_SUITE_LOGS (run_suite.sh sets it; its logs come back from the
    device), for the checks of a failed run to be read after it."""
    where = os.environ.get("NANSCOPE_SUITE_LOGS")
    if not where:
        return
    with open(os.path.join(where, re.sub(r"[^A-Za-z0-9_.-]+", "-", name) + ".jsonl"), "w") as f:
        f.write("".join(json.dumps(e) + "\n" for e in events))


def tiers_side_by_side(app, args, label, tiers=("full", "sentinel")):
    """The app plainly, then under each tier: (plain truth, {tier: events}); outputs bit-identical."""
    script = os.path.join(APPS, app + ".py")
    want = helpers().run_plain(script, args, label)
    runs = {}
    for tier in tiers:
        got, runs[tier] = run_tier(script, args, tier, label)
        if got.get("checksum") != want.get("checksum"):
            fail(f"{label}: outputs differ under nanscope --tier {tier}: {got.get('checksum')} vs plain "
                 f"{want.get('checksum')}")
    return want, runs


# The softmax makes the NaN from the mask's intended -inf: lineage says propagated (its input was
# not finite), the report names it FIRST CAUSE; with no mask input it would be introduced.
MADE_HERE = ("introduced", "propagated")

# ---- tier_replay7: the checks, on a log and its report (the self-check feeds them hand-written logs)

def faults(events):
    """Findings that are faults: any NaN, or an infinity without an `inf` verdict (a finding with
    an `inf` verdict and no NaN is no fault: the mask's -inf that masked_fill writes on every
    replay, as verdict_tests' healthy twins allow). A repeat is judged as the event it repeats."""
    by_id = {e["id"]: e for e in events if e["event"] == "nonfinite"}

    def fault(e):
        if (e.get("counts") or {}).get("nan", 0) > 0:
            return True
        judged = by_id.get(e.get("of"), {}) if e["event"] == "repeat" else e
        return not judged.get("inf")
    return [e for e in events if e["event"] in ("nonfinite", "repeat") and fault(e)]


def tier_replays(events):
    """(graph replays that ran only the sentinels, replays that ran every scan): the summary's coverage."""
    summary = [e for e in events if e["event"] == "summary"]
    cov = summary[-1].get("coverage", {}) if summary else {}
    return cov.get("graph_replays_sentinel_only", 0), cov.get("graph_replays_every_scan", 0)


def check_tier_replays(events, tier, label, escalated):
    """Under sentinel a graph's replays ran only its sentinels unless escalated (`escalated`: the
    least number of replays that ran every scan; 0: none may have); under full neither is counted."""
    quiet, every = tier_replays(events)
    if tier == "full":
        ok = quiet == 0 and every == 0
    else:
        ok = quiet > 0 and (every >= escalated if escalated else every == 0)
    if not ok:
        fail(f"{label} ({tier}): the summary counts {quiet} graph replay(s) that ran only the sentinel scans and "
             f"{every} that ran every scan; want {'none' if tier == 'full' else 'some sentinel-only, '}"
             f"{'' if tier == 'full' else (f'at least {escalated} every scan' if escalated else 'none every scan')}")


def check_clean(events, report, code, label):
    if faults(events) or escalations(events):
        fail(f"{label}: the healthy twin makes no NaN, yet nanscope said:{told(faults(events) + escalations(events))}")
    if report.get("first_cause") is not None or code != 0:
        fail(f"{label}: report exit {code}, want 0 and no first cause:{told(events, report)}")


def check_full(events, report, truth, case, label):
    """Under full: no escalation; the first cause is the softmax at its line at replay AT (origin
    introduced, or propagated: its NaN is made from the -inf that masked_fill wrote on purpose, as
    the H200 run said: "softmax_warp_forward … origin propagated", FIRST CAUSE at line 73); the
    leak is at the amax line; for `once` nothing is found in another replay."""
    if escalations(events):
        fail(f"{label}: escalation events under --tier full:{told(events, report)}")
    fc = report.get("first_cause")
    py = (fc or {}).get("python") or {}
    if not fc or not re.search(truth["kernel"], fc["kernel"]) or py.get("line") != truth["line"] or \
            fc.get("origin") not in MADE_HERE or fc.get("replay") != AT:
        fail(f"{label}: want the FIRST CAUSE at {truth['kernel']} line {truth['line']}, {'/'.join(MADE_HERE)}, "
             f"replay {AT}:"
             f"{told(events, report)}")
    leak = first_leak(events)
    if not leak or leak[1] != truth["leak_line"] or not report.get("leaks"):
        fail(f"{label}: want the leak point at line {truth['leak_line']} (the amax), listed in the report; got "
             f"{leak}:{told(events, report)}")
    if case == "once":
        stray = [e for e in graph_findings(events) if e.get("replay") != AT]
        if stray:
            fail(f"{label}: findings in replays other than {AT}:{told(stray)}")


def sentinel_escalation(events, label, report=None):
    """The graph's first escalation: an `escalate` at replay AT, window WINDOW, naming a finding of
    that replay that only sentinels ran for (origin unknown, origin_why sentinel). Returns
    (graph_id, the graph's escalation events)."""
    first = [e for e in graph_findings(events) if e.get("replay") == AT]
    early = [e for e in graph_findings(events) if e.get("replay", AT) < AT]
    if not first or early:
        fail(f"{label}: want the graph's first findings at replay {AT}, none before:{told(events, report)}")
    not_sentinel = [e for e in first if not by_sentinel(e)]
    if not_sentinel:
        fail(f"{label}: replay {AT} ran only sentinels: its findings must say origin unknown, origin_why "
             f"sentinel:{told(not_sentinel)}")
    watch = [e for e in first if e.get("watch") == "attn_out"]
    if not watch or watch[0].get("region") != "padding":
        fail(f"{label}: the watch attn_out is a sentinel: want its padding-only finding at replay {AT}:"
             f"{told(events, report)}")
    graph_id = first[0]["graph_id"]
    esc = escalations(events, graph_id)
    ids = {e["id"] for e in first}
    if not esc or esc[0].get("phase") != "escalate" or esc[0].get("replay") != AT or \
            esc[0].get("window") != WINDOW or esc[0].get("finding") not in ids:
        fail(f"{label}: want the first escalation event of graph {graph_id} to be escalate, replay {AT}, window "
             f"{WINDOW}, finding one of {sorted(ids)}:{told(events, report)}")
    return graph_id, esc


def check_sentinel_once(events, report, text, code, label):
    """Seen at replay AT, did not recur: reported where and when seen, first cause unknown."""
    _, esc = sentinel_escalation(events, label, report)
    phases = [(e.get("phase"), e.get("replay")) for e in esc]
    if phases != [("escalate", AT), ("did_not_recur", AT)] or esc[1].get("window") != WINDOW:
        fail(f"{label}: want escalate then did_not_recur, both naming replay {AT}, window {WINDOW}; got {phases}:"
             f"{told(events, report)}")
    stray = [e for e in graph_findings(events) if e.get("replay") != AT]
    stray += [e for e in events if e["event"] == "repeat" and "graph_id" in e and
              (e.get("first_replay", AT), e.get("last_replay", AT)) != (AT, AT)]
    if stray:
        fail(f"{label}: findings outside replay {AT} (the NaN did not recur):{told(stray)}")
    fc = report.get("first_cause")
    # The report shows a sentinel's finding with no origin: `origin` null, `origin_why` sentinel.
    if fc and (fc.get("origin") not in (None, "unknown") or fc.get("origin_why") != "sentinel" or
               fc.get("replay") != AT):
        fail(f"{label}: a NaN that did not recur has no known first cause, yet the report names one:"
             f"{told(events, report)}")
    seen = [line for line in text.splitlines() if UNKNOWN_FIRST_CAUSE in line]
    if not seen or not re.search(rf"\breplay {AT}\b", text):
        fail(f"{label}: the text report must say where and when it was seen (replay {AT}) and "
             f"{UNKNOWN_FIRST_CAUSE!r}:\n{text[:4000]}")
    if code != 1:
        fail(f"{label}: report exit {code}: a NaN reached the logits' real rows, the gate must still fail (1):"
             f"{told(events, report)}")


def check_sentinel_every(events, report, full_events, full_report, truth, label):
    """Escalated at replay AT, localized within WINDOW replays, the same FIRST CAUSE and leak point
    as under full."""
    graph_id, esc = sentinel_escalation(events, label, report)
    if len(esc) < 2 or (esc[1].get("phase"), esc[1].get("replay")) != ("localized", AT):
        fail(f"{label}: want escalate then localized, both naming replay {AT}:{told(events, report)}")
    cause = [e for e in graph_findings(events) if e["graph_id"] == graph_id and not by_sentinel(e) and
             re.search(truth["kernel"], e["kernel"]) and e.get("origin") in MADE_HERE]
    if not cause or not AT < min(e["replay"] for e in cause) <= AT + WINDOW:
        fail(f"{label}: want the softmax ({'/'.join(MADE_HERE)}) in one of replays {AT + 1}..{AT + WINDOW} (the escalation "
             f"window); got replays {sorted(e['replay'] for e in cause)}:{told(events, report)}")
    got, want = cause_key(report.get("first_cause")), cause_key(full_report.get("first_cause"))
    if got != want:
        fail(f"{label}: FIRST CAUSE under sentinel\n  {json.dumps(got)}\nunder full\n  {json.dumps(want)}"
             f"\nnanscope (sentinel) said:{told(events, report)}")
    leaks, full_leaks = first_leak(events), first_leak(full_events)
    rleak = [x.get("kernel") for x in report.get("leaks") or []][:1]
    full_rleak = [x.get("kernel") for x in full_report.get("leaks") or []][:1]
    if leaks != full_leaks or not leaks or leaks[1] != truth["leak_line"] or rleak != full_rleak:
        fail(f"{label}: leak point under sentinel {leaks} (report {rleak}), under full {full_leaks} (report "
             f"{full_rleak}); want line {truth['leak_line']}:{told(events, report)}")


def test_tier_replay7():
    """A padding NaN on replay 7 only, and from replay 7 on, in a CUDA graph, full and sentinel."""
    helpers().require_torch()
    done = []
    for case in ("once", "every"):
        label = f"tier_replay7 {case}"
        want, runs = tiers_side_by_side("tier_replay7", [case], label)
        if want["nan_replays"] != ([AT] if case == "once" else list(range(AT, want["replays"]))):
            fail(f"{label}: the program is not what it claims: {want}")
        full, sentinel = runs["full"], runs["sentinel"]
        full_report, _, _ = report_of(full, label + " (full)")
        check_full(full, full_report, want["truth"], case, label + " (full)")
        report, code, text = report_of(sentinel, label + " (sentinel)")
        if case == "once":
            check_sentinel_once(sentinel, report, text, code, label + " (sentinel)")
        else:
            check_sentinel_every(sentinel, report, full, full_report, want["truth"], label + " (sentinel)")
        check_tier_replays(full, "full", label, 0)
        check_tier_replays(sentinel, "sentinel", label, WINDOW)
        done.append(f"{case}: {len(graph_findings(sentinel))} graph finding(s) under sentinel, "
                    f"{len(graph_findings(full))} under full, escalations "
                    f"{[e.get('phase') for e in escalations(sentinel)][:6]}")
    _, runs = tiers_side_by_side("tier_replay7", ["clean"], "tier_replay7 clean")
    for tier, events in runs.items():
        report, code, _ = report_of(events, f"tier_replay7 clean ({tier})")
        check_clean(events, report, code, f"tier_replay7 clean ({tier})")
        check_tier_replays(events, tier, "tier_replay7 clean", 0)
    print("ok: replay 7 only: seen by a sentinel, did not recur, first cause unknown; from replay 7: localized "
          f"within {WINDOW} replays with full's FIRST CAUSE and leak point; healthy twin clean in both tiers; "
          "outputs bit-identical (" + "; ".join(done) + ")")


# ---- tier_models: the Hugging Face apps under sentinel, against full

# app -> the kernel its FIRST CAUSE names (run_gpu_test's families)
MODEL_APPS = (("hf_gpt2_overflow", "GEMM_KERNELS"), ("hf_llama_padding", "rsqrt"))
STEPS = {"eager": 3, "graph": 8}  # graph: the escalation lands a replay or two after the NaN


def model_cause_kernel(name):
    h = helpers()
    return h.GEMM_KERNELS if name == "GEMM_KERNELS" else h.KERNEL_OF_OP["aten.rsqrt.default"]


def finding_key(e):
    """What makes two first findings the same, in either tier."""
    return {k: e.get(k) for k in ("kernel", "counts", "origin")} | {"elements": e["buffer"]["elements"]}


def check_model(app, mode, runs, kernel_re, label):
    """Sentinel against full on one sick model run: the same first finding (at kernel_re, as the
    hf_* tests find it under full) and the same FIRST CAUSE; in a graph, the live-out logits'
    sentinel fires and escalates."""
    reports = {tier: report_of(events, f"{label} ({tier})")[0] for tier, events in runs.items()}
    first = {}
    for tier, events in runs.items():
        # Under sentinel, findings outside an escalated window claim no origin (origin_why
        # sentinel), and an eager window opens mid-forward, where the first findings with a lineage
        # only carry NaN that sentinels saw made (S22-1: GELU's mul, propagated): the first root
        # with a lineage (not propagated) is the one to compare.
        found = sorted((e for e in events if e["event"] == "nonfinite" and not by_sentinel(e)
                        and e.get("origin") != "propagated"), key=lambda e: e["id"])
        if not found or not re.search(kernel_re, found[0]["kernel"]):
            fail(f"{label} ({tier}): want the first finding at {kernel_re!r}:{told(events, reports[tier])}")
        first[tier] = finding_key(found[0])
    if first["sentinel"] != first["full"]:
        fail(f"{label}: first finding under sentinel\n  {json.dumps(first['sentinel'])}\nunder full\n  "
             f"{json.dumps(first['full'])}\nnanscope (sentinel) said:{told(runs['sentinel'], reports['sentinel'])}")
    full, sentinel = (cause_key(reports[t].get("first_cause")) for t in ("full", "sentinel"))
    if not full or sentinel != full:
        fail(f"{label}: FIRST CAUSE under sentinel\n  {json.dumps(sentinel)}\nunder full\n  {json.dumps(full)}"
             f"\nnanscope (sentinel) said:{told(runs['sentinel'], reports['sentinel'])}")
    if mode == "graph":
        replayed = graph_findings(runs["sentinel"])
        esc = [e for e in escalations(runs["sentinel"]) if e.get("phase") == "escalate"]
        if not replayed or not esc or esc[0].get("graph_id") != replayed[0]["graph_id"]:
            graphish = [json.dumps(e)[:400] for e in runs["sentinel"] if e["event"] == "escalation" or
                        "graph_id" in e and e["event"] == "repeat" or
                        e["event"] == "warning" and "graph" in str(e.get("what", ""))][:12]
            fail(f"{label} (sentinel): the replays' NaN reaches the logits (live out): want a graph finding and an "
                 f"escalate event for its graph:{told(runs['sentinel'], reports['sentinel'])}\n  graph events:\n  "
                 + "\n  ".join(graphish))
    return f"{app} {mode}: {full['kernel'][:50]} at {full['python']}"


def test_tier_models():
    """GPT-2 fp16 overflow and Llama padding, eager and graph: under sentinel the same FIRST CAUSE as
    under full; the healthy twins give no finding under sentinel; outputs bit-identical."""
    helpers().require_torch("transformers")
    done = []
    for app, kernel in MODEL_APPS:
        for mode in ("eager", "graph"):
            label = f"{app} {mode}"
            # The sick step runs several times, each read back (a serving loop): under sentinel the
            # sample or the sentinels see the NaN without its upstream, which escalates, and a later
            # step is scanned whole.
            _, runs = tiers_side_by_side(app, [mode, "--steps", str(STEPS[mode])], label)
            done.append(check_model(app, mode, runs, model_cause_kernel(kernel), label))
            _, clean = tiers_side_by_side(app, [mode, "--clean"], label + " --clean", tiers=("sentinel",))
            report, code, _ = report_of(clean["sentinel"], label + " --clean (sentinel)")
            check_clean(clean["sentinel"], report, code, label + " --clean (sentinel)")
    print("ok: under sentinel the same FIRST CAUSE as under full (" + "; ".join(done) + "); healthy twins give no "
          "finding; outputs bit-identical")


if __name__ == "__main__":
    if sys.argv[1:] != ["--self-check"]:
        sys.exit("usage: tier_tests.py --self-check (the tests run through run_gpu_test.py)")
    sys.path.insert(0, HERE)
    from tier_selfcheck import main as self_check
    self_check()
