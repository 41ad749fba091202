#!/usr/bin/env bash
# Runs every GPU benchmark side by side in one go (the H200 run that BENCHMARKS.md quotes).
# Usage: bench/run_benchmarks.sh BIN_DIR LIB [--quick]
#   --quick: only the side-by-side ratios a change is judged by (the scan kernels' NaN-density
#   sweep against the read roofline, host cost per launch, the graph replay in line / beside /
#   merged, one decoded ATen launch, the Hugging Face decoder), for a device run that must share
#   its minutes with the GPU suite.
set -uo pipefail
bin=${1:?bin dir}
lib=${2:?libnanscope.so}
quick=0
[ "${3:-}" = "--quick" ] && quick=1
here=$(cd "$(dirname "$0")" && pwd)

. "$here/compare.sh"
# side_by_side BINARY: runs BINARY plainly, then under nanscope, prints both lines and compares them.
side_by_side() {
  local binary=$1 plain scoped
  plain=$("$binary")
  scoped=$(CUDA_INJECTION64_PATH="$lib" NANSCOPE_CONSOLE=0 "$binary")
  echo "$plain"
  echo "$scoped"
  compare "$plain" "$scoped"
}
scan_out=$(mktemp)
if [ $quick = 0 ]; then
  echo "== scan throughput, graph node cost and the NaN-density sweep"
  "$bin/nanscope_scan_bench" | tee "$scan_out"
else
  echo "== NaN-density sweep: every scan kernel against the read roofline of the same bytes"
  "$bin/nanscope_scan_bench" --density
fi
echo
echo "== host cost per launch (median of 60 batches of 200 launches)"
side_by_side "$bin/nanscope_launch_bench"
if [ $quick = 0 ]; then
  echo "   the floor: what one more launch costs with no tool attached"
  "$bin/nanscope_launch_floor"
fi
echo
echo "== CUDA graphs: 50-kernel decode-like replay and 1,000-node instantiate"
export LD_LIBRARY_PATH="$(dirname "$lib"):${LD_LIBRARY_PATH:-}"
side_by_side "$bin/nanscope_graph_bench"
echo "== the same under nanscope with scans kept in line (NANSCOPE_GRAPH_OVERLAP=0), beside one node per"
echo "   kernel (NANSCOPE_GRAPH_MERGE=0) and beside merged (default), three times"
for i in 1 2 3; do
  ginline=$(CUDA_INJECTION64_PATH=$lib NANSCOPE_CONSOLE=0 NANSCOPE_GRAPH_OVERLAP=0 "$bin/nanscope_graph_bench")
  gbeside=$(CUDA_INJECTION64_PATH=$lib NANSCOPE_CONSOLE=0 NANSCOPE_GRAPH_MERGE=0 "$bin/nanscope_graph_bench")
  gmerged=$(CUDA_INJECTION64_PATH=$lib NANSCOPE_CONSOLE=0 "$bin/nanscope_graph_bench")
  plain=$("$bin/nanscope_graph_bench")
  echo "$plain"
  echo "$ginline"
  echo "$gbeside"
  echo "$gmerged"
  echo "in line:"; compare "$plain" "$ginline"
  echo "beside, one node per kernel:"; compare "$plain" "$gbeside"
  echo "beside, merged:"; compare "$plain" "$gmerged"
done
echo
echo "== eager mode, held scans: NANSCOPE_EAGER_BATCH off (one scan launch per kernel) vs on (a stream's"
echo "   scans held and launched as one grouped scan), side by side with the plain run, twice:"
echo "   launch_bench (host us per launch; distinct_outputs_us batches) and graph_bench's eager_typed_chain_us"
for i in 1 2; do
  for b in nanscope_launch_bench nanscope_graph_bench; do
    plain=$("$bin/$b")
    boff=$(CUDA_INJECTION64_PATH=$lib NANSCOPE_CONSOLE=0 NANSCOPE_EAGER_BATCH=off "$bin/$b")
    bon=$(CUDA_INJECTION64_PATH=$lib NANSCOPE_CONSOLE=0 NANSCOPE_EAGER_BATCH=on "$bin/$b")
    echo "$plain"
    echo "$boff"
    echo "$bon"
    echo "batch off:"; compare "$plain" "$boff"
    echo "batch on:"; compare "$plain" "$bon"
  done
done
echo
[ $quick = 1 ] && echo "== (--quick: origin on/off, torch references, torch_decode and the padding fix skipped)"
[ $quick = 0 ] && echo "== NaN origin: the same under nanscope with origin tracking off (scans alone) vs on, twice"
for i in $([ $quick = 0 ] && echo 1 2); do
  goff=$(CUDA_INJECTION64_PATH=$lib NANSCOPE_CONSOLE=0 NANSCOPE_ORIGIN=0 "$bin/nanscope_graph_bench")
  gon=$(CUDA_INJECTION64_PATH=$lib NANSCOPE_CONSOLE=0 "$bin/nanscope_graph_bench")
  echo "$goff"
  echo "$gon"
  compare "$goff" "$gon"
done
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  if [ $quick = 0 ]; then
    echo
    echo "== torch references in the same run"
    python3 "$here/torch_reference.py"
  fi
  echo
  echo "== host cost of one decoded ATen launch (torch.add / torch.mul on 256 bf16, median of 60 x 200),"
  echo "   beside the typed launch above (launch_bench two_outputs_us)"
  tplain=$(python3 "$here/torch_launch_cost.py")
  tscoped=$(CUDA_INJECTION64_PATH="$lib" NANSCOPE_CONSOLE=0 python3 "$here/torch_launch_cost.py")
  echo "== ... and of one intercepted GEMM call (torch.mm 64 x 64 bf16, F.linear with a bias)"
  for what in torch_launch torch_gemm; do
    p=$(grep "^$what " <<<"$tplain"); s=$(grep "^$what " <<<"$tscoped")
    echo "$p"; echo "$s"; compare "$p" "$s"
  done
  if [ $quick = 0 ]; then
  echo
  echo "== torch_decode.py graph replay (NaN in the padding rows every replay): no nanscope, the"
  echo "   Python helper watching one output (NANSCOPE_TYPED=0), the same with NANSCOPE_GRAPH_OVERLAP=0,"
  echo "   and the helper's watch plus typed outputs"
  root=$(cd "$here/.." && pwd)
  for i in 1 2; do
    PYTHONPATH="$root/python" NANSCOPE_LIBRARY="$lib" python3 "$root/examples/torch_decode.py" off --bench 2000 2>&1 | grep us_per_replay
    PYTHONPATH="$root/python" NANSCOPE_LIBRARY="$lib" NANSCOPE_CONSOLE=0 NANSCOPE_TYPED=0 python3 "$root/examples/torch_decode.py" detect --one-watch --bench 2000 2>&1 | grep us_per_replay
    PYTHONPATH="$root/python" NANSCOPE_LIBRARY="$lib" NANSCOPE_CONSOLE=0 NANSCOPE_TYPED=0 NANSCOPE_GRAPH_OVERLAP=0 python3 "$root/examples/torch_decode.py" detect --one-watch --bench 2000 2>&1 | grep us_per_replay
    PYTHONPATH="$root/python" NANSCOPE_LIBRARY="$lib" NANSCOPE_CONSOLE=0 python3 "$root/examples/torch_decode.py" detect --one-watch --bench 2000 2>&1 | grep us_per_replay
  done
  echo
  echo "== zeroing padding rows in a CUDA graph: torch and Triton vs nanscope zero_padding"
  python3 "$here/padding_fix_bench.py" "$scan_out"
  fi
  if python3 -c "import transformers" 2>/dev/null; then
    echo
    "$here/hf_section.sh" "$lib"
  fi
  if [ $quick = 0 ]; then  # two torchrun jobs, each starting NCCL: not in a --quick run
    echo
    echo "== NCCL: 64 MB bf16 all_reduce bus bandwidth and a 2-rank tensor-parallel MLP step, plain vs nanscope"
    python3 "$here/nccl_bench.py" --nanscope "$bin/nanscope"
  fi
fi
