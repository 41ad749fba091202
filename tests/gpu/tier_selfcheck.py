"""The sentinel-tier tests' log checks (tier_tests.py) on hand-written logs, with no GPU:
`python3 tests/gpu/tier_tests.py --self-check`. Each case is a log as the engine of issue 37
should write it, and the same log broken the ways a wrong engine could break it; the checks must
pass the first and fail every other, saying why."""
import contextlib
import copy
import io
import os

import tier_tests as t

TRUTH = {"kernel": r"softmax|SoftMax", "file": "/x/tier_replay7.py", "line": 73, "leak_line": 75,
         "padding_rows": [[14, 15]]}
SOFTMAX = "void (anonymous namespace)::softmax_warp_forward<float, float, float, 4, false, false>(...)"
AMAX = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, MaxOps>>(...)"
GEMM = "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"
MASK = "void at::native::elementwise_kernel<128, 2, gpu_kernel_impl_nocast<masked_fill_kernel(...)>>(...)"


def mask_fill(id_, replay):
    """The scores' -inf that masked_fill writes on every replay, on purpose (not a fault)."""
    return finding(id_, MASK, replay, "introduced", line=71, inf="intended",
                   counts={"nan": 0, "pos_inf": 0, "neg_inf": 256})


def start(tier):
    return {"event": "start", "config": {"tier": tier, "escalate": t.WINDOW, "eager_batch": 8}}


def finding(id_, kernel, replay, origin, line=None, **extra):
    e = {"event": "nonfinite", "id": id_, "kernel": kernel, "graph_id": 1, "replay": replay, "origin": origin,
         "counts": {"nan": 128, "pos_inf": 0, "neg_inf": 0}, "buffer": {"elements": 1024, "dtype": "f32"},
         "python": {"file": TRUTH["file"], "line": line, "function": "Step.__call__"} if line else None}
    e.update(extra)
    return e


def sentinel_seen(id_, replay):
    """What the sentinels of one replay find: the watch (padding rows) and the live-out logits."""
    return [finding(id_, SOFTMAX, replay, "unknown", origin_why="sentinel", watch="attn_out", region="padding",
                    rows={"padding": [[14, 15]], "real": []}),
            finding(id_ + 1, GEMM, replay, "unknown", origin_why="sentinel", region="unknown")]


def full_chain(id_, replay):
    """What every scan of one replay finds: the softmax introduces, the amax leaks."""
    return [finding(id_, SOFTMAX, replay, "introduced", line=73),
            finding(id_ + 1, AMAX, replay, "propagated", line=75, leak=True),
            finding(id_ + 2, GEMM, replay, "propagated", line=77)]


def escalation(phase, replay, **extra):
    return dict({"event": "escalation", "graph_id": 1, "phase": phase, "replay": replay, "window": t.WINDOW}, **extra)


def report(first_cause=None, leaks=(), code=1):
    return {"first_cause": first_cause, "leaks": [{"kernel": k} for k in leaks],
            "gate": {"exit_code": code, "triggered": code == 1}}


def logs():
    """(name, events, report, text, exit code) of the well-formed logs."""
    full_every = ([start("full")] + [mask_fill(r + 1, r) for r in range(t.AT)] +
                  [e for r in range(t.AT, 14) for e in [mask_fill(100 + 10 * r + 9, r)] + full_chain(100 + 10 * r, r)])
    full_rep = report(next(e for e in full_every if e.get("kernel") == SOFTMAX), [AMAX])
    once = [start("sentinel")] + sentinel_seen(10, t.AT) + [escalation("escalate", t.AT, finding=10),
                                                            escalation("did_not_recur", t.AT)]
    once_text = (f"FIRST CAUSE  none known: the NaN seen at attn_out (graph 1 node 3 replay {t.AT}) did not recur; "
                 f"{t.UNKNOWN_FIRST_CAUSE}\n")
    every = ([start("sentinel")] + sentinel_seen(10, t.AT) + [escalation("escalate", t.AT, finding=11)] +
             full_chain(20, t.AT + 1) + full_chain(30, t.AT + 2) + [escalation("localized", t.AT)])
    every_rep = report(dict(every[4], replay=t.AT + 1), [AMAX])
    # `nanscope report` shows the sentinel's finding as FIRST CAUSE with no origin (render_json.cpp).
    once_rep = report(dict(once[1], origin=None, origin_why="sentinel"))
    return {"full_every": (full_every, full_rep, "", 1), "once": (once, once_rep, once_text, 1),
            "every": (every, every_rep, "", 1), "clean": ([start("sentinel")], report(None, code=0), "", 0)}


def checks(name, events, rep, text, code, good):
    """Runs the check of log `name`; good = the well-formed logs (full's beside sentinel's)."""
    full_events, full_rep = good["full_every"][0], good["full_every"][1]
    if name == "full_every":
        t.expect_tier(events, "full", name)
        t.check_full(events, rep, TRUTH, "every", name)
    elif name == "once":
        t.expect_tier(events, "sentinel", name)
        t.check_sentinel_once(events, rep, text, code, name)
    elif name == "every":
        t.expect_tier(events, "sentinel", name)
        t.check_sentinel_every(events, rep, full_events, full_rep, TRUTH, name)
    else:
        t.expect_tier(events, "sentinel", name)
        t.check_clean(events, rep, code, name)


def broken(good):
    """(what is wrong, name, events, report, text, code): each must fail its check."""
    out = []
    for name, (events, rep, text, code) in good.items():
        no_tier = copy.deepcopy(events)
        no_tier[0]["config"].pop("tier")
        out.append(("no tier in the start config", name, no_tier, rep, text, code))
    once, rep, text, code = copy.deepcopy(good["once"])
    out.append(("once: localized instead of did_not_recur", "once",
                once[:-1] + [escalation("localized", t.AT)], rep, text, code))
    out.append(("once: a finding in replay 9", "once", once + sentinel_seen(40, 9), rep, text, code))
    out.append(("once: no 'first cause unknown' line", "once", once, rep, "FIRST CAUSE  softmax\n", code))
    out.append(("once: the gate passes a NaN in real rows", "once", once, rep, text, 0))
    out.append(("once: the report gives the seen NaN an origin", "once", once,
                dict(rep, first_cause=dict(rep["first_cause"], origin="introduced")), text, code))
    out.append(("once: sentinel findings claim an origin", "once",
                [dict(e, origin="introduced") if e["event"] == "nonfinite" else e for e in once], rep, text, code))
    every, rep, text, code = copy.deepcopy(good["every"])
    late = [e for e in every if e.get("replay") != t.AT + 1 or e["event"] != "nonfinite"]
    late = [dict(e, replay=e["replay"] + 3) if e["event"] == "nonfinite" and e["replay"] == t.AT + 2 else e
            for e in late]
    out.append(("every: localized only at replay 12", "every", late, rep, text, code))
    out.append(("every: another FIRST CAUSE than full's", "every", every,
                dict(rep, first_cause=dict(rep["first_cause"], python={"file": TRUTH["file"], "line": 77})), text,
                code))
    out.append(("every: no leak point", "every", [dict(e, leak=False) for e in every], rep, text, code))
    full, rep, text, code = copy.deepcopy(good["full_every"])
    out.append(("full: an escalation event", "full_every", full + [escalation("escalate", t.AT)], rep, text, code))
    clean, rep, text, code = copy.deepcopy(good["clean"])
    out.append(("clean: a finding", "clean", clean + sentinel_seen(5, 2), rep, text, code))
    return out


def model_runs(graph):
    """tier_models' runs of one sick app: {tier: events}, as check_model reads them."""
    runs = {}
    for tier in ("full", "sentinel"):
        events = [start(tier), finding(1, GEMM, 0, "introduced", line=107, graph_id=None)]
        del events[1]["graph_id"], events[1]["replay"]
        if graph:
            events.append(finding(7, GEMM, 0, "unknown" if tier == "sentinel" else "introduced", line=107,
                                  origin_why="sentinel" if tier == "sentinel" else None))
            if tier == "sentinel":
                events.append(escalation("escalate", 0, finding=7))
        runs[tier] = events
    return runs


def model_checks():
    """check_model on a well-formed pair of runs, then on broken ones; `nanscope report` stands
    replaced by the first finding as the FIRST CAUSE."""
    def report_of(events, label):
        found = [e for e in events if e["event"] == "nonfinite" and e["origin"] != "propagated"]
        return report(found[0] if found else None), 1, ""
    real, t.report_of = t.report_of, report_of
    try:
        good = model_runs(graph=True)
        t.check_model("hf_gpt2_overflow", "graph", good, r"nvjet|gemm", "model graph")
        print("ok: well-formed model graph")
        # An eager window opened mid-forward: a propagated finding comes before the GEMM's
        # introduced one in the next step (as on the H200, session 22).
        mid = copy.deepcopy(good)
        carried = finding(0, "vectorized_elementwise_kernel", 0, "propagated", line=66)
        del carried["graph_id"], carried["replay"]  # an eager launch's
        mid["sentinel"].insert(1, carried)
        t.check_model("hf_gpt2_overflow", "graph", mid, r"nvjet|gemm", "model graph")
        print("ok: a window opened mid-forward, propagated findings first")
        other = copy.deepcopy(good)
        other["sentinel"][1]["counts"] = {"nan": 0, "pos_inf": 5, "neg_inf": 0}
        no_escalation = copy.deepcopy(good)
        no_escalation["sentinel"].pop()
        for what, runs in (("another first finding", other), ("no escalation in the graph", no_escalation)):
            buf = io.StringIO()
            try:
                with contextlib.redirect_stdout(buf):
                    t.check_model("hf_gpt2_overflow", "graph", runs, r"nvjet|gemm", "model graph")
            except SystemExit:
                print(f"ok: caught model graph: {what}: {buf.getvalue().strip().splitlines()[0][:120]}")
                continue
            raise SystemExit(f"self-check: check_model passed a broken pair of runs ({what})")
    finally:
        t.report_of = real


def main():
    model_checks()
    good = logs()
    for name, (events, rep, text, code) in good.items():
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                checks(name, events, rep, text, code, good)
        except SystemExit:
            raise SystemExit(f"self-check: the well-formed log {name!r} failed its check:\n{buf.getvalue()}")
        print(f"ok: well-formed {name}")
    for what, name, events, rep, text, code in broken(good):
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                checks(name, events, rep, text, code, good)
        except SystemExit:
            print(f"ok: caught {what}: {buf.getvalue().strip().splitlines()[0][:150]}")
            continue
        raise SystemExit(f"self-check: the check of {name!r} passed a broken log ({what})")
    print(f"self-check: {len(good)} well-formed logs pass, {len(broken(good))} broken ones fail ({os.path.basename(__file__)})")
