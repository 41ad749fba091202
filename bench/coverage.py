"""How much of a run nanscope inspected, from its JSONL log: the share of non-GEMM launches
inspected (issue 16's goal: at least 95%), the share of the bytes those launches wrote that was
scanned, and the kernels not inspected, with their reasons, most launches first.

Usage: coverage.py LOG.jsonl [--top N]
"""
import argparse
import json
import sys

# The summary's `coverage` object (src/coverage.cpp, docs/log-schema.md):
#   by_inspection: launches per class: decoded (a kernel-family decoder named the writes), typed
#                  (the signature did), watched (a watch or rule did), opaque (nothing known),
#                  layout_mismatch (a decoder claimed the name, the layout did not fit), library
#                  (cuBLAS/cuBLASLt/cuDNN kernels: GEMMs and library attention, not non-GEMM),
#                  excluded (filtered out by the user)
#   bytes_written_decoded: bytes decoded launches wrote (their exact extents)
#   bytes_written_decoded_scanned: the part of those that scans read
#   not_inspected_top: [{"kernel", "reason", "launches"}], most launches first (library_top: the
#   library kernels, listed apart)
COVERAGE = {"object": "coverage", "launches": "by_inspection", "inspected": ("decoded", "typed", "watched"),
            "not_inspected": ("opaque", "layout_mismatch"), "library": "library",
            "bytes_written": "bytes_written_decoded", "bytes_scanned": "bytes_written_decoded_scanned",
            "top": "not_inspected_top"}


def read_events(path):
    events, bad = [], 0
    with open(path) as f:
        for line in f:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by a crash: skip it and say so
                bad += 1
    if bad:
        print(f"coverage: skipped {bad} lines that are not JSON", file=sys.stderr)
    return events


def share(part, whole):
    return f"{100.0 * part / whole:.1f}% ({part:,} of {whole:,})" if whole else "n/a (nothing to count)"


def report(summary, not_inspected_events, top):
    cov = summary.get(COVERAGE["object"])
    if cov is None:
        # Without the coverage object only distinct kernels can be counted, not launches or bytes.
        inspected, missed = summary.get("kernels_inspected", 0), summary.get("kernels_not_inspected", 0)
        print(f"summary has no {COVERAGE['object']!r} object: launch and byte shares unavailable")
        print(f"distinct kernels inspected: {share(inspected, inspected + missed)}; launches seen "
              f"{summary.get('launches', 0):,}, scans {summary.get('scans', 0):,}")
        print("kernels not inspected (from not_inspected events, no launch counts):")
        for e in not_inspected_events[:top]:
            print(f"  {e.get('reason', '?'):<32} {e.get('kernel', '?')[:140]}")
        return
    launches = cov[COVERAGE["launches"]]
    inspected = sum(launches.get(k, 0) for k in COVERAGE["inspected"])
    non_gemm = inspected + sum(launches.get(k, 0) for k in COVERAGE["not_inspected"])
    print(f"non-GEMM launches inspected: {share(inspected, non_gemm)}  (goal >= 95%)")
    print("  by class: " + ", ".join(f"{k} {v:,}" for k, v in launches.items()))
    print(f"bytes written by inspected launches that were scanned: "
          f"{share(cov[COVERAGE['bytes_scanned']], cov[COVERAGE['bytes_written']])}")
    print(f"library launches (GEMMs, cuDNN; not counted as non-GEMM): {launches.get(COVERAGE['library'], 0):,}")
    calls = cov.get("library_calls") or {}
    if calls:  # intercepted cuBLAS/cuBLASLt calls whose D was scanned (docs/library-calls.md)
        print(f"library calls with D scanned: {share(calls.get('scanned', 0), calls.get('calls', 0))}")
        for r in calls.get("not_scanned", [])[:top]:
            print(f"  {r['calls']:>8,} calls     not scanned: {r['reason']:<24} {r['api']}")
    print(f"scans {summary.get('scans', 0):,}; graph scan nodes beside the critical path "
          f"{summary.get('graph_scans_overlapped', 0):,}, folded into merged nodes {summary.get('graph_scans_merged', 0):,}")
    print(f"top {top} kernels not inspected (outside the libraries):")
    for e in cov[COVERAGE["top"]][:top]:
        print(f"  {e['launches']:>8,} launches  {e['reason']:<32} {e['kernel'][:140]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log")
    parser.add_argument("--top", type=int, default=10, help="kernels not inspected to list (default 10)")
    args = parser.parse_args()
    events = read_events(args.log)
    summaries = [e for e in events if e.get("event") == "summary"]
    if not summaries:
        print(f"coverage: {args.log} has no summary event (did the run exit normally?)", file=sys.stderr)
        sys.exit(1)
    for summary in summaries:  # one per process that attached
        print(f"== pid {summary.get('pid')}")
        report(summary, [e for e in events if e.get("event") == "not_inspected" and e.get("pid") == summary.get("pid")],
               args.top)


if __name__ == "__main__":
    main()
