#!/usr/bin/env bash
# Per-rank logs (CPU): `nanscope -- <launcher> app` reaches every child (the launcher's
# variables are inherited), %r names one log per rank, a plain name in a multi-process job
# becomes one file per rank too, and each log's start event carries rank and world_size.
# Usage: test_ranks.sh path/to/nanscope path/to/ranks_app path/to/fake_launcher.sh
set -u
bin=${1:?nanscope} app=${2:?ranks_app} launcher=${3:?fake_launcher.sh}
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

out=$("$bin" -q --log "$dir/run-%r.jsonl" -- "$launcher" "$app" 2>&1) || fail "the job failed: $out"
for r in 0 1; do
  grep -q "^rank=$r injection=.*libnanscope.so[^ ]* log=$dir/run-%r.jsonl" <<<"$out" || fail "rank $r did not inherit the launcher's variables: $out"
  f="$dir/run-$r.jsonl"
  [ -f "$f" ] || fail "no $f: $(ls "$dir")"
  head -1 "$f" | grep -q "\"event\":\"start\"" || fail "$f does not start with the start event"
  head -1 "$f" | grep -q "\"rank\":$r,\"local_rank\":$r,\"world_size\":2" || fail "$f's start event lacks rank $r: $(head -1 "$f")"
done

"$bin" -q --log "$dir/one.jsonl" -- "$launcher" "$app" >/dev/null 2>&1 || fail "the second job failed"
for r in 0 1; do
  [ -f "$dir/one.rank$r.jsonl" ] || fail "a plain --log name in a 2-rank job must become one file per rank: $(ls "$dir")"
done
[ -e "$dir/one.jsonl" ] && fail "two ranks appended to one file"

# A rerun in the same directory: the ranks' names are taken, each writes beside them.
"$bin" -q --log "$dir/run-%r.jsonl" -- "$launcher" "$app" >/dev/null 2>&1 || fail "the rerun failed"
[ "$(ls "$dir"/run-0.pid*.jsonl 2>/dev/null | wc -l)" -eq 1 ] || fail "a rerun's rank 0 log is missing: $(ls "$dir")"
echo "ok: one log per rank, start events with rank and world_size"
