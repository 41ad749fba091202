#!/usr/bin/env bash
# Usage: tests/unit/xla_plugin_lookups.sh UNIT_TESTS_BINARY CACHE_DIR [VERSION...]
# Runs XlaPluginLookups (test_xla_plugin_lookups.cpp) against the XLA plugin of each
# jax-cuda13-pjrt VERSION (default: 0.11.2, the device's jaxlib), fetched from PyPI into
# CACHE_DIR once (standard-library Python: no pip needed). Exits 77 (ctest: skipped) when PyPI
# cannot be reached; a wheel without the plugin, or a failed lookup, fails.
set -euo pipefail
tests=$1 cache=$2
shift 2
versions=("${@:-0.11.2}")
mkdir -p "$cache"
for v in "${versions[@]}"; do
  plugin=$cache/jax-cuda13-pjrt-$v/xla_cuda_plugin.so
  if [ ! -s "$plugin" ]; then
    rc=0
    python3 - "$v" "$plugin" <<'EOF' || rc=$?
import http.client, io, json, os, sys, time, urllib.request, zipfile
version, dest = sys.argv[1], sys.argv[2]
try:
    index = urllib.request.Request("https://pypi.org/simple/jax-cuda13-pjrt/",  # PEP 691's JSON form
                                   headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(index, timeout=30) as r:
        wanted = f"jax_cuda13_pjrt-{version}-py3-none-manylinux_2_27_x86_64.whl"
        urls = [f["url"] for f in json.load(r)["files"] if f["filename"] == wanted]
    deadline, chunks = time.monotonic() + 240, []  # a slow mirror is a skip, never ctest's timeout
    with urllib.request.urlopen(urls[0], timeout=60) as r:
        while chunk := r.read(1 << 20):
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise TimeoutError("the download took over 240 s")
    wheel = b"".join(chunks)
    z = zipfile.ZipFile(io.BytesIO(wheel))
except (OSError, ValueError, KeyError, IndexError, http.client.HTTPException, zipfile.BadZipFile) as e:
    print(f"xla_plugin_lookups: jax-cuda13-pjrt {version} not fetched from PyPI ({e!r}): skipped")
    sys.exit(77)
with z:
    member = [n for n in z.namelist() if n.endswith("/xla_cuda_plugin.so")]
    if not member:
        sys.exit(f"xla_plugin_lookups: no xla_cuda_plugin.so in jax-cuda13-pjrt {version}")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest + ".part", "wb") as f:
        f.write(z.read(member[0]))
os.replace(dest + ".part", dest)
EOF
    [ "$rc" = 0 ] || exit "$rc"
  fi
  echo "jax-cuda13-pjrt $v: $plugin"
  NANSCOPE_TEST_XLA_PLUGIN=$plugin "$tests" --gtest_filter='XlaPluginLookups.*' --gtest_brief=1
done
