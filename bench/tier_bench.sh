#!/usr/bin/env bash
# Issue 37's figures, side by side in one device run: each case as a plain process, under
# NANSCOPE_TIER=full and under NANSCOPE_TIER=sentinel, alternated for ROUNDS rounds
# (bench/alternate.py), then a table of medians and ratios and the issue's goals, met or not:
#   sentinel: graph-b8 and graph-b64 <= 1.03x plain, eager <= 1.10x, the vLLM-style decode step
#             (bench/decode_step_bench.py) with NaN every replay <= 1.05x its clean run;
#   full:     graph-b8 / graph-b64 no worse than today (BENCHMARKS.md: 1.46x / 1.36x), eager <= 1.5x.
# Usage, on the device from the repository root:
#   bench/tier_bench.sh LIB [ROUNDS] [REPS] [CASES]
#   LIB     libnanscope.so (.stage/lib/libnanscope.so)
#   ROUNDS  default 3; REPS timed repetitions per process, default 30
#   CASES   comma-separated, default graph-b8,graph-b64,eager,decode
# Each process takes about 20 s (the model is built each time): three settings, three rounds of
# four cases is about 12 minutes, past a device command's 10. Split the cases over commands, e.g.
#   bench/tier_bench.sh .stage/lib/libnanscope.so 3 30 graph-b8,decode
#   bench/tier_bench.sh .stage/lib/libnanscope.so 3 30 graph-b64,eager
# alternate.py starts no round it cannot finish within BENCH_BUDGET seconds (default 540).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=${1:?usage: bench/tier_bench.sh LIB [ROUNDS] [REPS] [CASES]}
rounds=${2:-3}
reps=${3:-30}
cases=${4:-graph-b8,graph-b64,eager,decode}
[ -f "$lib" ] || { echo "tier_bench.sh: no library $lib" >&2; exit 2; }
lib=$(readlink -f "$lib")
# Issue 37's goals: SETTING:CASE:KEY:ratio<=X against plain, or value<=X for the step's own ratio.
all_goals=(
  sentinel:graph-b8:us_per_replay:ratio\<=1.03
  sentinel:graph-b64:us_per_replay:ratio\<=1.03
  sentinel:eager:ms:ratio\<=1.10
  sentinel:decode:nan_over_clean:value\<=1.05
  full:graph-b8:us_per_replay:ratio\<=1.46
  full:graph-b64:us_per_replay:ratio\<=1.36
  full:eager:ms:ratio\<=1.5
)
goals=()
for g in "${all_goals[@]}"; do
  IFS=: read -r _ case _ <<<"$g"
  [[ ,$cases, == *,$case,* ]] && goals+=(--goal "$g")
done
exec python3 "$here/alternate.py" --rounds "$rounds" --reps "$reps" --cases "$cases" \
  --budget "${BENCH_BUDGET:-540}" "${goals[@]}" --pair sentinel/full \
  plain "full=$lib:NANSCOPE_TIER=full" "sentinel=$lib:NANSCOPE_TIER=sentinel"
