#!/usr/bin/env bash
# Where the sentinel tier's and full mode's time goes (issue 37), in one device command: each
# setting once on the Llama of bench/hf_bench.py (eager and graph-b8) at NANSCOPE_LEVEL=debug,
# then nanscope_graph_bench (instantiate figures) plainly and under full. Prints, per run, the
# timing line, the debug lines that say where host time went (per-launch host profile, the
# instantiate passes, the twin), and the summary's coverage (launches left out of the eager
# sample, graph replays that ran only the sentinels, Python line walks and their time).
# Debug costs time itself: these figures explain, bench/tier_bench.sh measures.
# Usage, on the device from the repository root:
#   bench/tier_diag.sh LIB [OUT_DIR]     (LIB: .stage/lib/libnanscope.so; logs go to OUT_DIR)
# TIER_DIAG_TIERS / TIER_DIAG_CASES (default "full sentinel" / "eager graph-b8") narrow the runs;
# TIER_DIAG_CASES=none runs only the graph bench.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=$(readlink -f "${1:?usage: bench/tier_diag.sh LIB [OUT_DIR]}")
out=${2:-$(mktemp -d)}
mkdir -p "$out"
bin=$(dirname "$(dirname "$lib")")/bin
coverage() {  # the summary's figures that say what was looked at
  python3 - "$1" <<'EOF'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l]
if not s:
    sys.exit(print("  (no summary in the log)"))
s, c = s[-1], s[-1].get("coverage", {})
print("  summary: launches", s.get("launches"), "scans", s.get("scans"), "python walks", s.get("python_line_captures"),
      f"taking {s.get('python_line_ns', 0) / 1e6:.1f} ms;", "by inspection", json.dumps(c.get("by_inspection")),
      "graph replays sentinel-only", c.get("graph_replays_sentinel_only"), "every scan", c.get("graph_replays_every_scan"))
EOF
}
for tier in ${TIER_DIAG_TIERS:-full sentinel}; do
  for case in ${TIER_DIAG_CASES:-eager graph-b8}; do
    [ "$case" = none ] && continue
    log=$out/$tier-$case.jsonl
    echo "== $case under $tier (debug)"
    CUDA_INJECTION64_PATH=$lib NANSCOPE_TIER=$tier NANSCOPE_LEVEL=debug NANSCOPE_LOG=$log \
      timeout 150 python3 "$here/hf_bench.py" "$case" --reps 20 2>&1 |
      grep -E 'hf_llama|host time|exit site|enter site|instantiate|sentinel tier|twin|import slots|could not' |
      sed 's/^/  /' | cut -c1-400 | sort | uniq -c | sort -rn | head -20
    coverage "$log"
  done
done
echo "== nanscope_graph_bench: plain, then full (debug: the instantiate passes)"
export LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # it links libnanscope.so.0
timeout 120 "$bin/nanscope_graph_bench" 2>&1 | tail -1
CUDA_INJECTION64_PATH=$lib NANSCOPE_LEVEL=debug timeout 120 "$bin/nanscope_graph_bench" 2>&1 |
  grep -E 'graph_bench|instantiate passes|after instantiate' | cut -c1-400 | sort | uniq -c | sort -rn | head -12
