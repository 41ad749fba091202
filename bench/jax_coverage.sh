#!/usr/bin/env bash
# Issue 38's coverage figures for the benchmark's own programs: bench/jax_bench.py CASE under
# `nanscope --` (XLA's dumps in a private directory), at debug level, then the share of eager
# launches inspected (the summary's coverage, library launches apart) and, for XLA's command
# buffers, how many kernel nodes of each instantiated graph got a scan node (the instrumenter's
# debug line); the library calls scanned (XLA's cuBLASLt through the dlsym hook) and, with REPS,
# where the host time went (the debug host profile: each site and its parts). Usage, on the
# device from the repository root:
#   bench/jax_coverage.sh [NANSCOPE_BIN] [CASES] [REPS]   (defaults .stage/bin/nanscope, mlp,transformer, 5)
set -uo pipefail
bin=${1:-.stage/bin/nanscope}
cases=${2:-mlp,transformer}
reps=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/nanscope-jax-coverage-XXXXXX")
for case in ${cases//,/ }; do
  NANSCOPE_LEVEL=debug "$bin" --log "$work/$case.jsonl" -- python3 "$here/jax_bench.py" "$case" --reps "$reps" \
    >"$work/$case.out" 2>"$work/$case.err"
  echo "$case: exit $? ($(tail -1 "$work/$case.out"))"
  grep -E "graph [0-9]+: ([0-9]+ kernel nodes|kernel node .* refused)" "$work/$case.err" | sed 's/^\[nanscope\] /  /' | cut -c1-400 | sort | uniq -c
  grep -E "site|held scans flushed|import slots" "$work/$case.err" | sed 's/^\[nanscope\] /  /' | cut -c1-900
  python3 - "$work/$case.jsonl" <<'PY'
import json, sys
summary = [json.loads(l) for l in open(sys.argv[1]) if '"event":"summary"' in l.replace(" ", "")][-1]
c = summary["coverage"]
k = c["by_inspection"]
app = c["launches"] - k["library"] - k["excluded"] - k.get("compile_time", 0)
looked = k["decoded"] + k["typed"] + k["watched"]
print(f"  eager launches {c['launches']}: inspected {looked} of {app} non-library, non-excluded, not XLA's autotuning "
      f"({looked / max(app, 1):.1%}); by kind {k}; bytes written by decoded launches "
      f"{c['bytes_written_decoded']}, scanned {c['bytes_written_decoded_scanned']}; findings {summary['findings']}")
print(f"  library calls: {json.dumps(c.get('library_calls', {}))[:600]}")
for t in c["not_inspected_top"][:5]:
    print(f"  not inspected: {t['kernel'][:60]} x{t['launches']}: {t['reason'][:200]}")
PY
done
