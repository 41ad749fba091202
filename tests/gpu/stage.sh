#!/usr/bin/env bash
# Usage: tests/gpu/stage.sh [--fuzz] [BUILD_DIR]
# Copies what the GPU machine needs from build/ into .stage/ (stripped, links resolved), so a
# device run carries a few MiB instead of the whole build tree. On the device,
# tests/gpu/run_suite.sh [--bench] runs the suite from it (docs/gpu-testing.md); the test
# scripts, bench/ and python/ travel with the repository tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
fuzz=0
[ "${1:-}" = --fuzz ] && { fuzz=1; shift; }
build=${1:-$root/build}
rm -rf "$root/.stage" && mkdir -p "$root/.stage/bin" "$root/.stage/lib"
for f in "$build"/bin/*; do
  case $f in *_tests) continue ;; esac  # the CPU unit tests run here and in CI, not on the device
  [ -f "$f" ] && [ -x "$f" ] && strip -o "$root/.stage/bin/$(basename "$f")" "$f"
done
strip -o "$root/.stage/lib/libnanscope.so" "$(readlink -f "$build/lib/libnanscope.so")"
ln -s libnanscope.so "$root/.stage/lib/libnanscope.so.0"  # soname of linked apps: one file, one engine
# The torch allocator shim, when the build was configured with NANSCOPE_TORCH_INCLUDE: found
# beside libnanscope.so (docs/torch-extents.md).
shim=$build/lib/libnanscope_torch_shim.so
if [ -f "$shim" ]; then strip -o "$root/.stage/lib/libnanscope_torch_shim.so" "$shim"
else echo "stage.sh: warning: no $shim: torch extents fall back (configure with -DNANSCOPE_TORCH_INCLUDE)" >&2; fi
# The pip wheel (.ci/wheel_check.sh leaves it in build/wheel-check/wheelhouse): tests/gpu/wheel_check.sh
# installs it on the device, which has no network.
wheels=("$build"/wheel-check/wheelhouse/nanscope-*.whl)
if [ -f "${wheels[0]}" ]; then mkdir -p "$root/.stage/wheel" && cp "${wheels[@]}" "$root/.stage/wheel/"
else echo "stage.sh: note: no wheel in $build/wheel-check/wheelhouse (.ci/wheel_check.sh builds it): test wheel skips" >&2; fi
# Pure-Python libraries the GPU tests' programs import and the device lacks (it has no network):
# optax and its dependencies for jax_optax_train.py, unpacked into .stage/pylib (the app adds it
# to its path). Pinned; kept in a cache between stagings.
pylib_cache=${XDG_CACHE_HOME:-$HOME/.cache}/nanscope-stage-wheels
pylib_wheels=(optax==0.2.8 chex==0.1.92 absl-py==2.5.1 toolz==1.2.0)
if python3 -m pip download -q --no-deps --dest "$pylib_cache" "${pylib_wheels[@]}" >/dev/null 2>&1; then
  mkdir -p "$root/.stage/pylib"
  for w in "$pylib_cache"/optax-0.2.8-*.whl "$pylib_cache"/chex-0.1.92-*.whl "$pylib_cache"/absl_py-2.5.1-*.whl \
           "$pylib_cache"/toolz-1.2.0-*.whl; do
    python3 -m zipfile -e "$w" "$root/.stage/pylib"
  done
else echo "stage.sh: note: could not download ${pylib_wheels[*]}: jax_optax_train skips" >&2; fi
# The binaries the GPU tests and benchmarks run, as their scripts name them: a stage without
# one would only fail on the device.
needed=$( { echo nanscope
             grep -o 'BIN_DIR, "[^"]*"' "$root/tests/gpu/run_gpu_test.py" | cut -d'"' -f2
             grep -o '\$bin/[A-Za-z0-9_]*' "$root/bench/run_benchmarks.sh" | cut -d/ -f2; } | sort -u)
for app in $needed; do
  [ -x "$root/.stage/bin/$app" ] || echo "stage.sh: warning: $build/bin/$app is missing" >&2
done
# --fuzz: the fuzz targets (.ci/fuzz builds them with clang, which the device lacks), for the long
# run there: NANSCOPE_FUZZ_BIN=.stage/fuzz NANSCOPE_FUZZ_PARALLEL=1 .ci/fuzz 540
if [ "$fuzz" = 1 ]; then
  mkdir -p "$root/.stage/fuzz"
  for t in log_line regex rules npy signature; do
    strip --strip-debug -o "$root/.stage/fuzz/fuzz_$t" "$root/build-fuzz/fuzz_$t" ||
      { echo "stage.sh: no build-fuzz/fuzz_$t: run NANSCOPE_FUZZ_BUILD_ONLY=1 .ci/fuzz first" >&2; exit 1; }
  done
fi
# Which tree the device ran (the build's source tree, which for a before tree staged from
# another worktree's build is not this one): run_suite.sh and bench/compare_stages.sh print it.
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
(cd "${src:-$root}" && git describe --always --dirty 2>/dev/null || echo unknown) >"$root/.stage/commit"
du -sh "$root/.stage"
