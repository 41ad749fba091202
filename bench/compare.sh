# Sourced by the benchmark scripts.
# compare PLAIN_LINE NANSCOPE_LINE: both "name mode key=value ..."; prints, per key, the
# difference and the ratio of the nanscope run to the plain one.
compare() {
  python3 - "$1" "$2" <<'PY'
import sys
def parse(line):
    return {k: float(v) for k, v in (kv.split("=") for kv in line.split()[2:])}
p, s = parse(sys.argv[1]), parse(sys.argv[2])
for k in p:
    print(f"{k}: {s[k]:.3f} vs {p[k]:.3f} plain: {s[k]-p[k]:+.3f}, ratio {s[k]/p[k]:.3f}")
PY
}
