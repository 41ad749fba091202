#!/usr/bin/env bash
# The Hugging Face decoder benchmark (issue 16/17 goals): eager forward and a decode step replayed
# as a CUDA graph at batch 8 and 64, plain and under nanscope side by side, then what nanscope
# inspected in the run under it (bench/coverage.py). Called by run_benchmarks.sh; alone on the
# device: bench/hf_section.sh .stage/lib/libnanscope.so
set -uo pipefail
lib=${1:?libnanscope.so}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/compare.sh"
echo
echo "== Hugging Face Llama (bf16, 8 layers, from a config): eager forward, decode step as a CUDA"
echo "   graph at batch 8 and 64; then what nanscope inspected in the run under it"
for case in eager graph-b8 graph-b64; do
  cov_log=$(mktemp --suffix=.jsonl)
  plain=$(python3 "$here/hf_bench.py" "$case")
  scoped=$(CUDA_INJECTION64_PATH="$lib" NANSCOPE_CONSOLE=0 NANSCOPE_LOG="$cov_log" python3 "$here/hf_bench.py" "$case")
  echo "$plain"
  echo "$scoped"
  compare "$plain" "$scoped"
  python3 "$here/coverage.py" "$cov_log"
  if [ "$case" = eager ]; then
    # The eager forward is host-bound and its plain time moves between runs (5.5 to 11 ms seen on
    # the same H200): two more rounds, each plain, batch off, batch on (the default), in turn,
    # held eager scans against one scan per kernel.
    for round in 2 3; do
      plain=$(python3 "$here/hf_bench.py" "$case")
      unbatched=$(CUDA_INJECTION64_PATH="$lib" NANSCOPE_CONSOLE=0 NANSCOPE_EAGER_BATCH=off python3 "$here/hf_bench.py" "$case")
      scoped=$(CUDA_INJECTION64_PATH="$lib" NANSCOPE_CONSOLE=0 python3 "$here/hf_bench.py" "$case")
      echo "round $round: $plain"
      echo "$unbatched  (NANSCOPE_EAGER_BATCH=off)"
      echo "$scoped"
      echo "batch off:"; compare "$plain" "$unbatched"
      echo "batch on:"; compare "$plain" "$scoped"
    done
  fi
done
