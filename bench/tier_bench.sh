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
# The hf_bench.py cases run together, one process per setting and round on one model
# (alternate.py --together: the model is built once, most of a process's 20 s); BENCH_APART=1
# gives each case its own processes, as bench/hf_ab.sh does (three times the processes: split
# the cases over device commands then). Three settings, three rounds: 9 hf processes and 9
# decode ones, about 7 minutes. alternate.py starts no round it cannot finish within
# BENCH_BUDGET seconds (default 540, under a device command's 10 minutes).
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
together=(--together)
[ "${BENCH_APART:-0}" = 1 ] && together=()
exec python3 "$here/alternate.py" --rounds "$rounds" --reps "$reps" --cases "$cases" "${together[@]}" \
  --budget "${BENCH_BUDGET:-540}" "${goals[@]}" --pair sentinel/full \
  plain "full=$lib:NANSCOPE_TIER=full" "sentinel=$lib:NANSCOPE_TIER=sentinel"
