#!/usr/bin/env bash
# Copies what the GPU machine needs from build/ into .stage/ (stripped, links resolved), so a
# device run carries a few MiB instead of the whole build tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
rm -rf "$root/.stage" && mkdir -p "$root/.stage/bin" "$root/.stage/lib"
for f in "$build"/bin/*; do
  [ -f "$f" ] && [ -x "$f" ] && strip -o "$root/.stage/bin/$(basename "$f")" "$f"
done
strip -o "$root/.stage/lib/libnanscope.so" "$(readlink -f "$build/lib/libnanscope.so")"
ln -s libnanscope.so "$root/.stage/lib/libnanscope.so.0"  # soname of linked apps: one file, one engine
du -sh "$root/.stage"
