#!/usr/bin/env bash
# LD_PRELOAD (CPU): in a process that never touches CUDA, the library only points the driver's
# injection hook at itself and stays silent. Usage: test_preload.sh libnanscope.so
set -u
lib=${1:?libnanscope.so}
fail() { echo "FAIL: $*"; exit 1; }
# Without an NVIDIA driver, libnanscope's libcuda.so.1 comes from the toolkit's stub.
if ! ldconfig -p | grep -q "libcuda.so.1 "; then
  stub=$(mktemp -d)
  ln -s /usr/local/cuda/lib64/stubs/libcuda.so "$stub/libcuda.so.1"
  export LD_LIBRARY_PATH="$stub:${LD_LIBRARY_PATH:-}"
fi
out=$(LD_PRELOAD="$lib" sh -c 'echo "injection=$CUDA_INJECTION64_PATH"' 2>&1) || fail "a preloaded shell failed: $out"
grep -q "^injection=.*libnanscope" <<<"$out" || fail "the constructor did not set CUDA_INJECTION64_PATH: $out"
grep -q "nanscope" <<<"$(grep -v '^injection=' <<<"$out")" && fail "a process without CUDA printed nanscope output: $out"
out=$(LD_PRELOAD="$lib" CUDA_INJECTION64_PATH=/other/tool.so sh -c 'echo "injection=$CUDA_INJECTION64_PATH"' 2>/dev/null)
grep -q "^injection=/other/tool.so$" <<<"$out" || fail "another tool's CUDA_INJECTION64_PATH was overwritten: $out"
echo "ok: LD_PRELOAD defers to the driver's injection hook and leaves other processes alone"
