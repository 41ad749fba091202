#!/usr/bin/env bash
# Captures what issue 38's readers are built on, from the JAX test apps on the device: XLA's own
# dumps (--xla_dump_to: optimized HLO, buffer assignment, and on GPU the thunk sequence) of each
# app, sick and healthy, and nanscope's log of the same run (what a CUPTI tool sees of it:
# kernels, graphs, not_inspected reasons). docs/jax.md says how they became fixtures.
#   tests/gpu/capture_xla_dumps.sh [WORK_DIR] [APP...]   (default /tmp/nanscope-xla, and the apps
#   jax_pool jax_attention jax_donate of tests/gpu/apps; packed into $OUT/xla-dumps.tar.gz on a
#   device run, else .stage/xla-dumps.tar.gz). The nanscope run reads its own dumps (ndump/), as
#   `nanscope --` would give it, so its log shows what the readers made of them.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-/tmp/nanscope-xla}
shift $(( $# > 0 ? 1 : 0 ))
apps=("$@")
[ ${#apps[@]} -gt 0 ] || apps=(jax_pool jax_attention jax_donate)
pack=${OUT:-$root/.stage}/xla-dumps.tar.gz
rm -rf "$out"
lib=${NANSCOPE_LIB:-$root/.stage/lib/libnanscope.so}
mkdir -p "$out"
for app in "${apps[@]}"; do
  for twin in sick healthy; do
    args=()
    [ $twin = healthy ] && args=(--healthy)
    dir=$out/$app-$twin
    mkdir -p "$dir"
    XLA_FLAGS="--xla_dump_to=$dir/dump --xla_dump_hlo_as_text" \
      python3 "$root/tests/gpu/apps/$app.py" "${args[@]}" > "$dir/plain.out" 2> "$dir/plain.err"
    echo "$app $twin plain: rc=$? $(tail -1 "$dir/plain.out")"
    XLA_FLAGS="--xla_dump_to=$dir/ndump --xla_dump_hlo_as_text" CUDA_INJECTION64_PATH=$lib NANSCOPE_LOG="$dir/nanscope.jsonl" NANSCOPE_CONSOLE=0 NANSCOPE_LEVEL=debug \
      python3 "$root/tests/gpu/apps/$app.py" "${args[@]}" > "$dir/nanscope.out" 2> "$dir/nanscope.err"
    echo "$app $twin nanscope: rc=$? $(tail -1 "$dir/nanscope.out")"
  done
done
tar czf "$pack" -C "$(dirname "$out")" "$(basename "$out")" && ls -la "$pack"
