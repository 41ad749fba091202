#!/usr/bin/env bash
# The wheel on the GPU machine (issue 20): installs the wheel built on the build machine into a
# venv that sees the machine's torch (--system-site-packages; the device has no network, so pip
# runs with --no-index --no-deps), then runs examples/torch_decode.py under that venv's
# `nanscope --`, from a copy outside the repository so that only the wheel's helper can be
# imported, and without PYTHONPATH. Checks: the padding NaN of attn_out is found in padding rows
# only; the log's start event names the CUPTI that was loaded (printed); the library the driver
# injected and the one the helper uses are the wheel's; `nanscope report` of the log works.
# Usage: tests/gpu/wheel_check.sh [WHEEL]   (default: .stage/wheel/nanscope-*.whl, put there by
# tests/gpu/stage.sh from .ci/wheel_check.sh's wheelhouse). Exit 77 when no wheel or no torch.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
whl=${1:-$(ls "$root"/.stage/wheel/nanscope-*.whl 2>/dev/null | head -1)}
[ -n "$whl" ] && [ -f "$whl" ] || { echo "skip: no wheel (run .ci/wheel_check.sh and tests/gpu/stage.sh on the build machine)"; exit 77; }
python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null || { echo "skip: no torch with CUDA"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d /tmp/nanscope-wheel.XXXXXX)
python3 -m venv --system-site-packages "$work/venv" || fail "python3 -m venv --system-site-packages"
# When the machine's torch lives in a virtualenv itself (the H200's /opt/torch/.venv),
# --system-site-packages sees only the base interpreter's: a .pth adds that env's site-packages.
venv_site=$("$work/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
python3 -c "import site, sys; print('\n'.join(p for p in site.getsitepackages() if p.startswith(sys.prefix)))" \
  >"$venv_site/_machine_torch.pth" || fail "the machine's site-packages"
"$work/venv/bin/pip" install -q --no-index --no-deps "$whl" || fail "pip install --no-index --no-deps $whl"
pkg=$("$work/venv/bin/python" -c "import os, nanscope; print(os.path.dirname(os.path.realpath(nanscope.__file__)))") || fail "import nanscope"
echo "installed $(basename "$whl"): $pkg ($("$work/venv/bin/nanscope" --version)); torch $(python3 -c 'import torch; print(torch.__version__)')"
mkdir -p "$work/app" && cp "$root/examples/torch_decode.py" "$work/app/"
log=$work/decode.jsonl
(cd "$work/app" && env -u PYTHONPATH -u NANSCOPE_LIBRARY "$work/venv/bin/nanscope" --log "$log" --no-aggregate -- \
   "$work/venv/bin/python" torch_decode.py detect) >"$work/out.txt" 2>&1
rc=$?
tail -n 25 "$work/out.txt"
[ $rc = 0 ] || fail "nanscope -- python torch_decode.py detect exited $rc"
"$work/venv/bin/python" - "$log" "$pkg" "$work/out.txt" <<'PY' || exit 1
import json, sys
log, pkg, out = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
events = [json.loads(line) for line in open(log)]
def fail(msg):
    print("FAIL:", msg); sys.exit(1)
start = [e for e in events if e["event"] == "start"]
if not start or "cupti" not in start[0]:
    fail(f"no start event naming CUPTI: {start}")
cupti = start[0]["cupti"]
print(f"CUPTI loaded: {cupti['path']} ({cupti['origin']}, from {cupti['source']})")
if f"CUPTI {cupti['path']}" not in out:
    fail("the console does not say which CUPTI was loaded")
lib = pkg + "/lib/libnanscope.so"
if f"({lib})" not in out:
    fail(f"the helper did not use the wheel's library {lib}")
attn = [e for e in events if e["event"] == "nonfinite" and e.get("watch") == "attn_out"]
if not attn or any(e["region"] != "padding" or e["counts_real"] != 0 for e in attn):
    fail(f"attn_out must be found in padding rows only: {[(e['region'], e.get('rows')) for e in attn]}")
summary = [e for e in events if e["event"] == "summary"]
if len(summary) != 1 or summary[0]["launches"] == 0:
    fail(f"no summary or no launches: {summary}")
print(f"ok: {len(attn)} attn_out findings in padding rows; {summary[0]['launches']} launches; "
      f"library {lib}")
PY
# Exit 1 is the report's verdict (the example leaks NaN into real rows on purpose); 2 and up
# are errors.
"$work/venv/bin/nanscope" report "$log" >"$work/report.txt" 2>&1
rc=$?
[ $rc -le 1 ] || { cat "$work/report.txt"; fail "nanscope report exited $rc"; }
head -n 5 "$work/report.txt"
echo "PASS wheel_check ($work)"
