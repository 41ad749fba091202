#!/usr/bin/env bash
# The Hugging Face decode step (bench/hf_bench.py), replayed under several nanscope settings in
# turn, for ROUNDS rounds, with the plain run first and last: the same setting moved by up to 12%
# from one process to the next on the H200 (docs/bench-history.md, session 15), so a comparison needs
# several runs of each, side by side. Prints every run, then each setting's median and its ratio to
# the plain median. On the device:
#   bench/hf_ab.sh CASE ROUNDS NAME=LIB[:VAR=VALUE,...] [NAME=LIB[:...] ...]
# e.g. bench/hf_ab.sh graph-b8 3 base=.stage/base/libnanscope.so new=.stage/lib/libnanscope.so \
#        off=.stage/lib/libnanscope.so:NANSCOPE_GRAPH_PDL=off
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case=${1:?case: eager, graph-b8 or graph-b64}
rounds=${2:?rounds}
shift 2
[ $# -gt 0 ] || { echo "hf_ab.sh: name at least one NAME=LIB setting" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "hf_ab.sh: rounds must be a positive number, not $rounds" >&2; exit 2; }
for s in "$@"; do
  rest=${s#*=}
  [[ $s == *=* && -f ${rest%%:*} ]] || { echo "hf_ab.sh: $s: want NAME=LIB[:VAR=VALUE,...] with LIB a file" >&2; exit 2; }
done
results=$(mktemp)
trap 'rm -f "$results"' EXIT
value() { grep -o '\(us_per_replay\|ms\)=[0-9.]*' | cut -d= -f2; }
run_one() {  # NAME LIB VARS
  local name=$1 lib=$2 vars=$3 v
  local -a env=()
  [ -n "$lib" ] && env+=("CUDA_INJECTION64_PATH=$(readlink -f "$lib")" NANSCOPE_CONSOLE=0)
  [ -n "$vars" ] && IFS=, read -ra extra <<<"$vars" && env+=("${extra[@]}")
  v=$(env "${env[@]}" timeout 300 python3 "$here/hf_bench.py" "$case" --reps 100 | value)
  echo "$name ${v:-failed}"
  [ -n "$v" ] && echo "$name $v" >>"$results"
}
run_one plain "" ""
for ((r = 1; r <= rounds; ++r)); do
  for s in "$@"; do
    name=${s%%=*} rest=${s#*=}
    lib=${rest%%:*} vars=""
    [[ $rest == *:* ]] && vars=${rest#*:}
    run_one "$name" "$lib" "$vars"
  done
done
run_one plain "" ""
python3 - "$results" "$case" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, v = line.split()
    runs.setdefault(name, []).append(float(v))
plain = statistics.median(runs.get("plain", [float("nan")]))
for name, vs in runs.items():
    m = statistics.median(vs)
    print(f"hf_ab {sys.argv[2]} {name}: median {m:.1f} of {len(vs)} runs ({', '.join(f'{v:.1f}' for v in vs)}), "
          f"{m / plain:.3f}x plain")
PY
