#!/bin/sh
# bench/perf-vs.sh BUILD_DIR [SECONDS]: perf.data files read by stackunwind
# beside perf script.  Records with `perf record -k monotonic -e cpu-clock
# --call-graph dwarf` a testdata program (tdata-threads -t 2), gzip and xz
# compressing a file, and python3 running pure-Python code; then, on each
# file, times `stackunwind stacks [-j 1] [--no-cache] F >/dev/null` and `perf script -i F
# >/dev/null` (warm: a first run fills the page cache; median of 5; the
# ratio), and converts it with `stackcap convert` (plain and --zstd) to
# compare sizes.  Numbers go to docs/BENCHMARKS.md.
set -eu
B=${1:?usage: bench/perf-vs.sh BUILD_DIR [SECONDS]}
SECS=${2:-2}
B=$(cd "$B" && pwd)
SU="$B/cli/stackunwind"
STACKCAP="$B/cli/stackcap"
for t in perf gzip xz /usr/bin/python3 /usr/bin/time; do
	command -v "$t" >/dev/null || { echo "bench/perf-vs.sh: $t missing: scripts/install-deps.sh installs it" >&2; exit 1; }
done
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
# Inflated debug files kept in a private cache (debuginfo/inflate-cache.h).
export STACKCAP_CACHE_DIR="$w/cache"

precord() {
	name=$1; shift
	perf record -q -k monotonic -e cpu-clock --call-graph dwarf -o "$w/$name.data" -- "$@" >/dev/null 2>&1
}
echo "recording ($SECS s of CPU per workload)..." >&2
precord threads "$B/testdata/tdata-threads" -t 2 "$SECS"
head -c 20000000 /dev/urandom | od -An -tx1 >"$w/input.txt"
precord gzip gzip -9 -c "$w/input.txt"
head -c 2500000 "$w/input.txt" >"$w/small.txt"
precord xz xz -T1 -6 -c "$w/small.txt"
cat >"$w/work.py" <<'EOF'
import sys
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
d = {}
for i in range(400000):
    d[str(i)] = i * i
print(fib(25), len(d), file=sys.stderr)
EOF
precord python /usr/bin/python3 "$w/work.py"

# median of five: seconds (to the millisecond: the short runs are tens of ms)
timed() {
	"$@" >/dev/null 2>&1 || true
	for i in 1 2 3 4 5; do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1 || true
		t1=$(date +%s%N)
		echo $(( (t1 - t0) / 1000000 ))
	done | sort -n | sed -n 3p | awk '{ printf "%.3f", $1 / 1000 }'
}

echo "machine: $(nproc) cores, $(sed -n 's/^model name[ 	]*: //p' /proc/cpuinfo | head -n 1), $(date -u +%Y-%m-%d), $(perf version)"
# peak resident MiB of one run
rss() {
	/usr/bin/time -f "%M" -o "$w/rss" "$@" >/dev/null 2>&1 || true
	awk '{ printf "%.0f", $1 / 1024 }' "$w/rss"
}
printf '%-8s %8s %9s %9s %9s %9s %8s %8s %7s %7s %11s %11s %11s %7s %7s\n' workload samples "su -j1 s" "nocache s" "su -jN s" "perf s" ratio "ratio nc" "su MiB" "pf MiB" "perf.data" "trace" "trace.zst" "x" "x zst"
for p in threads gzip xz python; do
	f="$w/$p.data"
	n=$("$SU" stats "$f" 2>/dev/null | sed -n 's/^samples: *//p')
	# With the inflated-debug-file cache (filled by timed's first run),
	# and without it.
	ts=$(timed "$SU" stacks -j 1 "$f")
	tc=$(timed "$SU" stacks -j 1 --no-cache "$f")
	tn=$(timed "$SU" stacks "$f")
	tp=$(timed perf script -i "$f")
	ms=$(rss "$SU" stacks -j 1 "$f")
	mp=$(rss perf script -i "$f")
	"$STACKCAP" convert "$f" -o "$w/$p.trace" 2>/dev/null
	"$STACKCAP" convert "$f" -o "$w/$p.ztrace" --zstd 2>/dev/null
	sz=$(stat -c %s "$f")
	st=$(find "$w/$p.trace" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	sza=$(find "$w/$p.ztrace" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	awk -v p="$p" -v n="$n" -v ts="$ts" -v tc="$tc" -v tn="$tn" -v tp="$tp" -v ms="$ms" -v mp="$mp" -v sz="$sz" -v st="$st" -v sza="$sza" 'BEGIN {
		printf "%-8s %8d %9.3f %9.3f %9.3f %9.3f %7.1fx %7.1fx %7d %7d %11d %11d %11d %6.0fx %6.0fx\n",
			p, n, ts, tc, tn, tp, (ts > 0 ? tp / ts : 0), (tc > 0 ? tp / tc : 0), ms, mp, sz, st, sza, sz / st, sz / sza }'
done
