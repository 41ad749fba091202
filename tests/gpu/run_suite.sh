#!/usr/bin/env bash
# Runs every GPU test (and, with --bench, the benchmarks) from a staged tree: the repository
# root holding .stage/bin and .stage/lib, as tests/gpu/stage.sh leaves it. This is the one
# command of a device run (docs/gpu-testing.md):
#   tests/gpu/run_suite.sh [--bench] [TEST...]
# One line per test, `PASS|FAIL|SKIP name (seconds)`, then a total; exit 1 when any failed.
# Logs (one per test, bench.log) go to $OUT when it is set, else to .stage/logs.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$root/.stage
bench=0
only=()
for a in "$@"; do
  case $a in
    --bench) bench=1 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    -*) echo "run_suite.sh: unknown option $a" >&2; exit 2 ;;
    *) only+=("$a") ;;
  esac
done
[ -d "$stage/bin" ] && [ -d "$stage/lib" ] || { echo "run_suite.sh: no $stage/bin and $stage/lib; run tests/gpu/stage.sh first" >&2; exit 2; }
logs=$stage/logs
[ -n "${OUT:-}" ] && logs=$OUT/gpu-suite
mkdir -p "$logs"
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

pass=0 fail=0 skip=0 failed=()
suite_start=$SECONDS
for t in "${tests[@]}"; do
  start=$(date +%s.%N)
  timeout 300 python3 "$runner" "$t" >"$logs/$t.log" 2>&1  # ctest's TIMEOUT for these tests
  rc=$?
  secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  case $rc in
    0) verdict=PASS; pass=$((pass + 1)) ;;
    77) verdict=SKIP; skip=$((skip + 1)) ;;
    *) verdict=FAIL; fail=$((fail + 1)); failed+=("$t") ;;
  esac
  echo "$verdict $t (${secs}s)"
  [ "$verdict" = FAIL ] && tail -n 20 "$logs/$t.log" | sed 's/^/    /'
done
echo "total: ${#tests[@]} tests, $pass passed, $fail failed, $skip skipped ($((SECONDS - suite_start))s); logs in $logs"
[ $fail -gt 0 ] && echo "failed: ${failed[*]}"

if [ $bench = 1 ]; then
  echo
  echo "== benchmarks (bench/run_benchmarks.sh)"
  "$root/bench/run_benchmarks.sh" "$stage/bin" "$stage/lib/libnanscope.so" 2>&1 | tee "$logs/bench.log"
  brc=${PIPESTATUS[0]}
  [ $brc -eq 0 ] || { echo "benchmarks exited $brc"; fail=$((fail + 1)); }
fi
[ $fail -eq 0 ]
