#!/usr/bin/env bash
# Two staged trees side by side in one device run (issue 36's "before and after in the same run"):
# each case as a plain process, under the before tree's libnanscope.so and under the after
# tree's, alternated for ROUNDS rounds (bench/alternate.py), then medians, the ratios to plain
# and after/before.
# Usage, on the device from the repository root:
#   bench/compare_stages.sh [--rounds N] [--reps N] [--cases LIST] [--var VAR=VALUE]... [BEFORE [AFTER]]
#   BEFORE, AFTER  staged trees as tests/gpu/stage.sh leaves them (bin/, lib/libnanscope.so);
#                  default .stage-before and .stage
#   --rounds       default 1; --reps: timed repetitions per process, default 30
#   --cases        default eager,graph-b8 (also graph-b64, decode: bench/alternate.py)
#   --var          a variable for both nanscope settings, e.g. --var NANSCOPE_TIER=sentinel
#   --together     the hf_bench.py cases in one process per setting and round (alternate.py)
# On the build machine, the before tree is staged from its own build, then moved aside:
#   tests/gpu/stage.sh ../before/build && mv .stage .stage-before && tests/gpu/stage.sh
# and both travel with the device command: carry=[".stage", ".stage-before"].
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=1 reps=30 cases=eager,graph-b8 vars="" trees=() together=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
    --reps) reps=${2:?--reps needs a number}; shift 2 ;;
    --cases) cases=${2:?--cases needs a list}; shift 2 ;;
    --var) [[ ${2:-} == ?*=* ]] || { echo "compare_stages.sh: --var wants VAR=VALUE" >&2; exit 2; }
           vars+=${vars:+,}$2; shift 2 ;;
    --together) together=(--together); shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 0 ;;
    -*) echo "compare_stages.sh: unknown option $1" >&2; exit 2 ;;
    *) trees+=("$1"); shift ;;
  esac
done
[ ${#trees[@]} -le 2 ] || { echo "compare_stages.sh: at most two trees, BEFORE and AFTER" >&2; exit 2; }
before=${trees[0]:-.stage-before}
after=${trees[1]:-.stage}
for t in "$before" "$after"; do
  [ -f "$t/lib/libnanscope.so" ] || { echo "compare_stages.sh: no $t/lib/libnanscope.so (stage it with tests/gpu/stage.sh)" >&2; exit 2; }
done
for t in "$before" "$after"; do
  echo "$t: $(cat "$t/commit" 2>/dev/null || echo 'commit unknown')"
done
setting() { echo "$1=$(readlink -f "$2/lib/libnanscope.so")${vars:+:$vars}"; }
exec python3 "$here/alternate.py" --rounds "$rounds" --reps "$reps" --cases "$cases" "${together[@]}" \
  --budget "${BENCH_BUDGET:-540}" --pair after/before \
  plain "$(setting before "$before")" "$(setting after "$after")"
