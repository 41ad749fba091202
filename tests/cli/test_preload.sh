#!/usr/bin/env bash
# LD_PRELOAD (CPU): in a process that never touches CUDA, the library only points the driver's
# injection hook at itself and stays silent. Usage: test_preload.sh libnanscope.so
set -u
lib=${1:?libnanscope.so}
fail() { echo "FAIL: $*"; exit 1; }
# libnanscope has no DT_NEEDED on libcuda.so.1 (hooks/driver_api.cpp resolves the driver when
# CUDA is used): on a machine without the driver every preloaded process must still start.
readelf -d "$lib" | grep -q "NEEDED.*libcuda" && fail "libnanscope.so must not depend on libcuda.so.1"
LD_PRELOAD="$lib" /bin/true || fail "LD_PRELOAD=libnanscope.so /bin/true exited $?"
LD_PRELOAD="$lib" sh -c 'exit 4'
rc=$?; [ $rc -eq 4 ] || fail "a preloaded program's exit code must pass through (got $rc)"
out=$(LD_PRELOAD="$lib" sh -c 'echo "injection=$CUDA_INJECTION64_PATH"' 2>&1) || fail "a preloaded shell failed: $out"
grep -q "^injection=.*libnanscope" <<<"$out" || fail "the constructor did not set CUDA_INJECTION64_PATH: $out"
grep -q "nanscope" <<<"$(grep -v '^injection=' <<<"$out")" && fail "a process without CUDA printed nanscope output: $out"
out=$(LD_PRELOAD="$lib" CUDA_INJECTION64_PATH=/other/tool.so sh -c 'echo "injection=$CUDA_INJECTION64_PATH"' 2>/dev/null)
grep -q "^injection=/other/tool.so$" <<<"$out" || fail "another tool's CUDA_INJECTION64_PATH was overwritten: $out"
echo "ok: LD_PRELOAD defers to the driver's injection hook and leaves other processes alone"
