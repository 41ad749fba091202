"""Where a CUDA graph replay's time goes under nanscope: the kernel timeline of the Hugging Face
decode step (bench/hf_bench.py's Llama, one replay of the captured step) from the PyTorch
profiler, and a comparison of a plain run's timeline with a nanscope run's.

Usage:
  graph_timeline.py record OUT.json [--batch 8] [--replays 5]
      On the GPU. Replays the step `--replays` times under torch.profiler (CUDA activity only),
      1 ms apart, and writes every kernel as [name, start_us, duration_us, stream, grid]. Under nanscope
      set KINETO_USE_DAEMON=1: CUPTI 13.0 takes one subscriber, and without it the profiler
      records nothing (../shared/notes/cupti-field-notes.md).
  graph_timeline.py compare PLAIN.json NANSCOPE.json [--top 20]
      Anywhere. Splits each timeline into replays, pairs the app kernels of the two runs in
      order, and says where the extra time is: longer app kernels (scans beside them take SMs),
      or longer gaps before them, and which nanscope kernels ended inside each longer gap (the
      app kernel waited on them) or ran there (in line).

The nanscope kernels are the ones whose names start with `nanscope_`.
"""
import argparse
import json
import statistics
import sys
import time
from collections import Counter, defaultdict

REPLAY_GAP_US = 500.0  # replays run 1 ms apart; no gap inside a replay is this long


def record(path, batch, replays):
    import os

    import torch
    from torch.profiler import ProfilerActivity, profile

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from hf_bench import build_model, capture_decode

    model = build_model()
    with torch.no_grad():
        graph = capture_decode(model, batch, 10 + replays)
        for _ in range(10):
            graph.replay()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(replays):
                graph.replay()
                torch.cuda.synchronize()
                time.sleep(0.001)
    trace = path + ".trace.json"
    prof.export_chrome_trace(trace)
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    kernels = sorted(([e["name"], float(e["ts"]), float(e["dur"]), e.get("args", {}).get("stream", -1),
                       e.get("args", {}).get("grid", [])] for e in events if e.get("cat") == "kernel"),
                     key=lambda k: k[1])
    os.remove(trace)
    with open(path, "w") as f:
        json.dump({"batch": batch, "kernels": kernels}, f)
    print(f"graph_timeline: {len(kernels)} kernels in {replays} replays -> {path}")


def split_replays(kernels):
    replays, current, last_end = [], [], None
    for k in kernels:
        if last_end is not None and k[1] - last_end > REPLAY_GAP_US:
            replays.append(current)
            current = []
        current.append(k)
        last_end = max(last_end or 0.0, k[1] + k[2])
    if current:
        replays.append(current)
    return replays


def is_ours(k):
    return k[0].startswith("nanscope_")


def short(name, n=70):
    return name if len(name) <= n else name[: n - 3] + "..."


def replay_figures(replay):
    app = [k for k in replay if not is_ours(k)]
    span = max(k[1] + k[2] for k in replay) - replay[0][1]
    gaps = [max(0.0, b[1] - (a[1] + a[2])) for a, b in zip(app, app[1:])]
    return app, span, gaps


def compare(plain_path, ours_path, top):
    runs = []
    for path in (plain_path, ours_path):
        with open(path) as f:
            runs.append(split_replays(json.load(f)["kernels"]))
    plain, ours = runs
    pairs = list(zip(plain, ours))
    spans = ([], [])
    duration_extra, gap_extra = [], []
    by_cause = defaultdict(float)
    by_kernel = Counter()
    worst = []
    for p_rep, o_rep in pairs:
        p_app, p_span, p_gaps = replay_figures(p_rep)
        o_app, o_span, o_gaps = replay_figures(o_rep)
        spans[0].append(p_span)
        spans[1].append(o_span)
        if [k[0] for k in p_app] != [k[0] for k in o_app]:
            print(f"graph_timeline: the app kernels differ ({len(p_app)} plain, {len(o_app)} under nanscope); "
                  "pairing in order anyway", file=sys.stderr)
        n = min(len(p_app), len(o_app))
        duration_extra.append(sum(o_app[i][2] - p_app[i][2] for i in range(n)))
        gap_extra.append(sum(o_gaps[i] - p_gaps[i] for i in range(n - 1)))
        ours_in = [k for k in o_rep if is_ours(k)]
        for i in range(n - 1):
            extra = o_gaps[i] - p_gaps[i]
            lo, hi = o_app[i][1] + o_app[i][2], o_app[i + 1][1]
            ended = [k for k in ours_in if lo <= k[1] + k[2] <= hi + 0.05]
            cause = "after a nanscope kernel ended in the gap" if ended else "no nanscope kernel ended in the gap"
            by_cause[cause] += extra
            by_kernel[o_app[i + 1][0]] += extra
            worst.append((extra, o_app[i][0], o_app[i + 1][0], [k[0] for k in ended], i + 1))
    med = statistics.median
    print(f"replays: {len(pairs)} paired; app kernels per replay: {len(replay_figures(ours[0])[0])}; "
          f"nanscope kernels per replay: {sum(1 for k in ours[0] if is_ours(k))}")
    print(f"replay span (us, median): plain {med(spans[0]):.1f}, nanscope {med(spans[1]):.1f}, "
          f"ratio {med(spans[1]) / med(spans[0]):.3f}")
    print(f"extra app-kernel time (us per replay, median): {med(duration_extra):.1f}")
    print(f"extra gaps between app kernels (us per replay, median): {med(gap_extra):.1f}")
    for cause, us in sorted(by_cause.items(), key=lambda c: -c[1]):
        print(f"  {us / len(pairs):8.1f} us per replay {cause}")
    ours_by_name = defaultdict(list)
    for k in ours[len(ours) // 2]:
        if is_ours(k):
            ours_by_name[k[0]].append(k[2])
    for name, durations in sorted(ours_by_name.items()):
        print(f"  {name}: {len(durations)} per replay, {med(durations):.2f} us median, {sum(durations):.0f} us in all")
    print("the app kernels whose preceding gap grew most (us per replay, summed over the step):")
    for name, us in by_kernel.most_common(top):
        print(f"  {us / len(pairs):8.1f}  {short(name)}")
    print(f"the {top} largest single gap increases:")
    for extra, before, after, ended, index in sorted(worst, key=lambda w: -w[0])[:top]:
        print(f"  {extra:6.1f} us before app kernel {index} {short(after, 50)} (after {short(before, 40)}); "
              f"nanscope kernels ending in the gap: {', '.join(ended) or 'none'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="verb", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out")
    rec.add_argument("--batch", type=int, default=8)
    rec.add_argument("--replays", type=int, default=5)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("plain")
    cmp_.add_argument("nanscope")
    cmp_.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    if args.verb == "record":
        record(args.out, args.batch, args.replays)
    else:
        compare(args.plain, args.nanscope, args.top)


if __name__ == "__main__":
    main()
