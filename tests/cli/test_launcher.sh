#!/usr/bin/env bash
# The launcher (CPU): options map onto NANSCOPE_* and the injection variable, usage errors exit
# 2, and the program's exit code comes back unchanged. Usage: test_launcher.sh path/to/nanscope
set -u
bin=${1:?nanscope binary}
fail() { echo "FAIL: $*"; exit 1; }

env_out=$("$bin" --print-env --mode fix --log run-%p.jsonl --rules r.json --dump-dir d --kernel-filter softmax \
  --no-aggregate --no-typed --no-graph-merge --graph-pdl both --tier sentinel -q -- true) || fail "--print-env exited $?"
for want in "CUDA_INJECTION64_PATH=" "NANSCOPE_MODE=fix" "NANSCOPE_LOG=run-%p.jsonl" "NANSCOPE_RULES=r.json" \
            "NANSCOPE_DUMP_DIR=d" "NANSCOPE_KERNEL_FILTER=softmax" "NANSCOPE_AGGREGATE=0" "NANSCOPE_TYPED=0" "NANSCOPE_CONSOLE=0" \
            "NANSCOPE_GRAPH_MERGE=0" "NANSCOPE_GRAPH_PDL=both" "NANSCOPE_TIER=sentinel"; do
  grep -q "^$want" <<<"$env_out" || fail "missing $want in: $env_out"
done
grep -q "libnanscope.so" <<<"$env_out" || fail "the injection path does not name libnanscope.so"
"$bin" --print-env --preload -- true | grep -q "^LD_PRELOAD=.*libnanscope.so" || fail "--preload does not set LD_PRELOAD"

"$bin" --mode sideways -- true >/dev/null 2>&1
[ $? -eq 2 ] || fail "a bad --mode value must exit 2"
"$bin" >/dev/null 2>&1
[ $? -eq 2 ] || fail "no program must exit 2"
"$bin" --graph-pdl on -- true >/dev/null 2>&1
[ $? -eq 2 ] || fail "a bad --graph-pdl value must exit 2"
"$bin" --tier sentinels -- true >/dev/null 2>&1
[ $? -eq 2 ] || fail "a bad --tier value must exit 2"
"$bin" --print-env -- true | grep -q "^NANSCOPE_TIER" && fail "no --tier must leave NANSCOPE_TIER unset (full by default)"

# XLA's dumps: added to the user's XLA_FLAGS, their own dump directory kept and read; a run makes
# a private directory; --no-xla-dumps leaves XLA_FLAGS alone and reads none (NANSCOPE_XLA_DUMP=off).
xla=$(XLA_FLAGS=--xla_gpu_autotune_level=0 "$bin" --print-env --xla-dumps /tmp/xd -- true)
grep -qx "XLA_FLAGS=--xla_gpu_autotune_level=0 --xla_dump_to=/tmp/xd --xla_dump_hlo_as_text" <<<"$xla" ||
  fail "XLA_FLAGS must keep the user's flags and add the dumps: $xla"
grep -qx "NANSCOPE_XLA_DUMP=/tmp/xd" <<<"$xla" || fail "NANSCOPE_XLA_DUMP must name the dump directory: $xla"
own=$(XLA_FLAGS="--xla_dump_to=/data/mine" "$bin" --print-env -- true)
grep -qx "NANSCOPE_XLA_DUMP=/data/mine" <<<"$own" || fail "the user's own --xla_dump_to must be the one read: $own"
off=$(XLA_FLAGS="--xla_dump_to=/data/mine" "$bin" --print-env --no-xla-dumps -- true)
grep -q "^XLA_FLAGS" <<<"$off" && fail "--no-xla-dumps must leave XLA_FLAGS alone: $off"
grep -qx "NANSCOPE_XLA_DUMP=off" <<<"$off" || fail "--no-xla-dumps must turn the dumps off, the user's own too: $off"
made=$(TMPDIR=$(mktemp -d) "$bin" -- sh -c 'echo "$NANSCOPE_XLA_DUMP"' 2>/dev/null)
case $made in */nanscope-xla-??????) [ -d "$made" ] || fail "the run's XLA dump directory $made was not made" ;;
  *) fail "a run must make a new directory for XLA's dumps, got '$made'" ;; esac

"$bin" --channel-records abc -- true >/dev/null 2>&1
[ $? -eq 2 ] || fail "--channel-records abc must exit 2 (it was passed on unchecked)"
"$bin" --channel-records 8 -- true >/dev/null 2>&1
[ $? -eq 2 ] || fail "--channel-records below 16 must exit 2"
"$bin" --max-scan-bytes -5 -- true >/dev/null 2>&1
[ $? -eq 2 ] || fail "--max-scan-bytes -5 must exit 2"
"$bin" --preload -- sh -c 'exit 4' 2>/dev/null
rc=$?; [ $rc -eq 4 ] || fail "nanscope --preload -- sh -c 'exit 4' must exit 4 (got $rc)"

"$bin" -- sh -c 'exit 7' 2>/dev/null
[ $? -eq 7 ] || fail "the program's exit code must pass through"
"$bin" -- /nonexistent/program 2>/dev/null
[ $? -eq 127 ] || fail "a program that cannot run must exit 127"
echo "ok: launcher options, usage errors and exit codes"
