#!/usr/bin/env bash
# Scan-kernel A/B, side by side in one device run (issue 18's density and decode-sized figures).
#   On the build machine:  bench/kernel_ab.sh build OUT_DIR REV [REV...]
#     builds kernels/scan.cu of each git revision (or WORKTREE for the files as they are) for sm_90
#     into OUT_DIR/NAME.fatbin (about 2 minutes each); stage OUT_DIR with the tree.
#   On the device:         bench/kernel_ab.sh run BIN_DIR FATBIN_DIR [ROUNDS]
#     runs nanscope_scan_bench --fatbin for every fatbin, ROUNDS times (default 2) in turn, and
#     prints the decode-sized node lines (section 5), the zero_padding lines and the bf16
#     density ratios of each.
set -euo pipefail
cmd=${1:-}
case $cmd in
  build)
    out=$2; shift 2
    root=$(cd "$(dirname "$0")/.." && pwd)
    mkdir -p "$out"
    nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
    for rev in "$@"; do
      src=$(mktemp -d)
      if [ "$rev" = WORKTREE ]; then cp -r "$root/kernels" "$root/src" "$src/"
      else git -C "$root" archive "$rev" kernels src | tar x -C "$src"; fi
      name=${rev//\//_}
      "$nvcc" --fatbin -std=c++17 -O3 -gencode=arch=compute_90,code=sm_90 -I"$src/src" \
        -o "$out/$name.fatbin" "$src/kernels/scan.cu"
      rm -rf "$src"
      echo "kernel_ab: built $out/$name.fatbin"
    done
    ;;
  run)
    bin=$2 dir=$3 rounds=${4:-2}
    for ((r = 1; r <= rounds; r++)); do
      for f in "$dir"/*.fatbin; do
        log=$(mktemp)
        "$bin/nanscope_scan_bench" --fatbin "$f" >"$log" 2>&1 || { echo "kernel_ab: $f failed"; tail -3 "$log"; }
        echo "== $(basename "$f" .fatbin), round $r"
        grep -E '^(plain scan|row-aware scan \(watch\)|  the same, detection|zero_padding B=(8|64) )' "$log" | tr -s ' '
        grep -E 'dtype=bf16' "$log" | awk '{print $3,$4,$NF}' | sed 's/kernel=//;s/nan=//;s/ratio=//' | tr '\n' ';'
        echo
        rm -f "$log"
      done
    done
    ;;
  *)
    echo "usage: bench/kernel_ab.sh build OUT_DIR REV... | run BIN_DIR FATBIN_DIR [ROUNDS]" >&2
    exit 2
    ;;
esac
