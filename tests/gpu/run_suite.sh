#!/usr/bin/env bash
# Runs every GPU test (and, with --bench, the benchmarks) from a staged tree: the repository
# root holding .stage/bin and .stage/lib, as tests/gpu/stage.sh leaves it. This is the one
# command of a device run (docs/gpu-testing.md):
#   tests/gpu/run_suite.sh [--bench] [-j N] [--deadline S] [TEST...]
# One line per test, `PASS|FAIL|SKIP name (seconds)`, as each ends and again in order with a
# total; exit 1 when any failed. -j N runs N tests at a time (they share the GPU; the
# benchmarks always run alone, after). --deadline S: the suite ends within S seconds (a device
# command has 600): a test not started by then is `NOT RUN`, a running one is stopped then and
# fails; tests known to be long (Hugging Face models, tiers, verdicts) start first.
# Logs (one per test, bench.log) go to .stage/logs; with $OUT set (a device run) they are also
# packed into $OUT/gpu-suite-logs.tar.gz, since a run brings back only a few files.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$root/.stage
bench=0
jobs=1
deadline=0
only=()
while [ $# -gt 0 ]; do
  a=$1
  shift
  case $a in
    --bench) bench=1 ;;
    -j) jobs=${1:?-j needs a number}; shift ;;
    --deadline) deadline=${1:?--deadline needs seconds}; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "run_suite.sh: unknown option $a" >&2; exit 2 ;;
    *) only+=("$a") ;;
  esac
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run_suite.sh: -j takes a positive number, not $jobs" >&2; exit 2; }
[[ $deadline =~ ^[0-9]+$ ]] || { echo "run_suite.sh: --deadline takes seconds, not $deadline" >&2; exit 2; }
[ -d "$stage/bin" ] && [ -d "$stage/lib" ] || { echo "run_suite.sh: no $stage/bin and $stage/lib; run tests/gpu/stage.sh first" >&2; exit 2; }
logs=$stage/logs
rm -rf "$logs" && mkdir -p "$logs"
[ -f "$stage/commit" ] && echo "staged tree: $(cat "$stage/commit")"

# The same environment tests/gpu/CMakeLists.txt gives ctest, pointed at the staged files.
export NANSCOPE_BIN=$stage/bin/nanscope NANSCOPE_LIB=$stage/lib/libnanscope.so NANSCOPE_BIN_DIR=$stage/bin
runner=$root/tests/gpu/run_gpu_test.py
mapfile -t tests < <(python3 "$runner" --list)
[ ${#tests[@]} -gt 0 ] || { echo "run_suite.sh: $runner --list named no test" >&2; exit 2; }
if [ ${#only[@]} -gt 0 ]; then
  for t in "${only[@]}"; do
    printf '%s\n' "${tests[@]}" | grep -qx "$t" || { echo "run_suite.sh: unknown test $t" >&2; exit 2; }
  done
  tests=("${only[@]}")
fi

# One test: its log, then its verdict line in $logs/NAME.verdict. The hf_* tests start a dozen
# Python processes each (some compile with Inductor): 900 s, as ctest gives them.
run_one() {
  local t=$1 start secs rc verdict limit=900 left
  if [ "$suite_end" -gt 0 ]; then
    left=$((suite_end - $(date +%s)))
    if [ $left -le 5 ]; then
      echo "NOT RUN $t (deadline)" | tee "$logs/$t.verdict"
      return
    fi
    [ $left -lt $limit ] && limit=$left
  fi
  start=$(date +%s.%N)
  timeout "$limit" python3 "$runner" "$t" >"$logs/$t.log" 2>&1
  rc=$?
  secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  case $rc in
    0) verdict=PASS ;;
    77) verdict=SKIP ;;
    *) verdict=FAIL ;;
  esac
  [ $rc = 124 ] && secs="$secs, stopped at the deadline or 900 s"
  echo "$verdict $t (${secs}s)" | tee "$logs/$t.verdict"
}
export -f run_one
suite_end=0
[ "$deadline" -gt 0 ] && suite_end=$(($(date +%s) + deadline))
export runner logs suite_end
export NANSCOPE_SUITE_LOGS=$logs  # tests that keep their runs' events put them beside their logs
# JAX preallocates 75% of the GPU by default: two JAX tests at once ran out of memory (session
# 23). Tests side by side each take a smaller pool, still one pool as the tests mean it: six JAX
# tests since session 26 (jax_* and verdicts_jax_pool), beside the PyTorch ones, at a tenth of
# the H200's 141 GB each (their programs' arrays are a few hundred MB).
[ "$jobs" -gt 1 ] && export XLA_PYTHON_CLIENT_MEM_FRACTION=${XLA_PYTHON_CLIENT_MEM_FRACTION:-0.1}
# The long tests first, so a deadline leaves out short ones (the JAX tests run a program and its
# twin plainly and under nanscope, jax_scan two forms of it: four to eight processes each).
long='^(hf_|tier_|verdicts_|torch_compile|jax_)'
mapfile -t tests < <(printf '%s\n' "${tests[@]}" | grep -E "$long"
                     printf '%s\n' "${tests[@]}" | grep -vE "$long")

suite_start=$SECONDS
printf '%s\n' "${tests[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {}
echo "== in order"
pass=0 fail=0 skip=0 notrun=0 failed=()
for t in "${tests[@]}"; do
  line=$(cat "$logs/$t.verdict" 2>/dev/null || echo "FAIL $t (no verdict)")
  echo "$line"
  case ${line%% *} in
    PASS) pass=$((pass + 1)) ;;
    SKIP) skip=$((skip + 1)) ;;
    NOT) notrun=$((notrun + 1)) ;;
    *) fail=$((fail + 1)); failed+=("$t"); tail -n 20 "$logs/$t.log" | sed 's/^/    /' ;;
  esac
done
echo "total: ${#tests[@]} tests, $pass passed, $fail failed, $skip skipped, $notrun not run ($((SECONDS - suite_start))s); logs in $logs"
[ $fail -gt 0 ] && echo "failed: ${failed[*]}"

if [ $bench = 1 ]; then
  echo
  echo "== benchmarks (bench/run_benchmarks.sh)"
  "$root/bench/run_benchmarks.sh" "$stage/bin" "$stage/lib/libnanscope.so" 2>&1 | tee "$logs/bench.log"
  brc=${PIPESTATUS[0]}
  [ $brc -eq 0 ] || { echo "benchmarks exited $brc"; fail=$((fail + 1)); }
fi
[ -n "${OUT:-}" ] && tar czf "$OUT/gpu-suite-logs.tar.gz" -C "$stage" logs
[ $fail -eq 0 ]
