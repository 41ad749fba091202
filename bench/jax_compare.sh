#!/usr/bin/env bash
# Issue 38's figures, side by side in one device run (bench/alternate.py): the jitted MLP step and
# a small transformer step (bench/jax_bench.py), each clean and with NaN, as a plain process, under
# nanscope (XLA's dumps named in XLA_FLAGS, as `nanscope --` sets them), under jax_debug_nans and
# under XLA's own checker (--xla_gpu_detect_nan=warning: F32/BF16 kernel outputs, no attribution),
# alternated for ROUNDS rounds, then medians and the goals: nanscope <= 1.5x plain on the clean
# step; and the pair column nanscope/debug_nans on nan_us, where jax_debug_nans re-runs the step
# op by op to localize the NaN (below 1: nanscope is faster).
# Usage, on the device from the repository root:
#   bench/jax_compare.sh LIB [ROUNDS] [REPS]     (LIB: .stage/lib/libnanscope.so; defaults 3, 30)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=$(readlink -f "${1:?usage: bench/jax_compare.sh LIB [ROUNDS] [REPS]}")
[ -f "$lib" ] || { echo "jax_compare.sh: no library $lib" >&2; exit 2; }
dumps=$(mktemp -d "${TMPDIR:-/tmp}/nanscope-xla-bench-XXXXXX")
exec python3 "$here/alternate.py" --rounds "${2:-3}" --reps "${3:-30}" --cases jax-mlp,jax-transformer \
  --budget "${BENCH_BUDGET:-540}" \
  --goal 'nanscope:jax-mlp:clean_us:ratio<=1.5' --goal 'nanscope:jax-transformer:clean_us:ratio<=1.5' \
  --pair nanscope/debug_nans \
  plain "nanscope=$lib:XLA_FLAGS=--xla_dump_to=$dumps --xla_dump_hlo_as_text" "debug_nans=:JAX_DEBUG_NANS=True" \
  "xla_detect=:XLA_FLAGS=--xla_gpu_detect_nan=warning"
