#!/bin/sh
# bench/unwind.sh BUILD_DIR [SECONDS]: samples per second through decode,
# unwind, symbolize and print (`stackunwind stacks > /dev/null`) on one
# thread and on every core, with peak memory, beside `perf script` on the
# same program recorded by `perf record --call-graph dwarf`.  Each tool runs
# warm (a first run fills the page cache) and is timed three times; the
# median is printed.  Numbers go to docs/BENCHMARKS.md.
set -eu
B=${1:?usage: bench/unwind.sh BUILD_DIR [SECONDS]}
SECS=${2:-6}
B=$(cd "$B" && pwd)
SU="$B/cli/stackunwind"
STACKCAP="$B/cli/stackcap"
PROG="$B/testdata/tdata-threads"
for t in perf /usr/bin/time; do
	command -v "$t" >/dev/null || { echo "bench/unwind.sh: $t missing: scripts/install-deps.sh installs it" >&2; exit 1; }
done
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT

echo "recording: $PROG -t 2 $SECS at 9999 Hz (stackcap), $PROG -t 2 2 (perf, whose traces are ~8 KB/sample)" >&2
"$STACKCAP" record -F 9999 -o "$w/su.trace" -- "$PROG" -t 2 "$SECS" 2>"$w/rec.err"
"$STACKCAP" record -F 9999 -o "$w/half.trace" -- "$PROG" -t 2 "$(awk -v s="$SECS" 'BEGIN { print s / 2 }')" 2>/dev/null
perf record -q -e cpu-clock -F 9999 --call-graph dwarf -o "$w/perf.data" -- "$PROG" -t 2 2 >/dev/null 2>&1

# median of three: "seconds peak_kb"
timed() {
	out=$1; shift
	"$@" >/dev/null 2>&1 || true
	for i in 1 2 3; do
		/usr/bin/time -f "%e %M" -o "$w/time.$i" "$@" >"$out" 2>/dev/null || true
	done
	cat "$w/time.1" "$w/time.2" "$w/time.3" | sort -n | sed -n 2p
}

n_su=$("$SU" stats "$w/su.trace" | sed -n 's/^samples: *//p')
set -- $(timed "$w/j1.out" "$SU" stacks -j 1 "$w/su.trace"); t1=$1; m1=$2
set -- $(timed "$w/jn.out" "$SU" stacks "$w/su.trace"); tn=$1; mn=$2
set -- $(timed "$w/dwfl.out" "$SU" stacks -j 1 --unwinder dwfl "$w/su.trace"); td=$1; md=$2
n_half=$("$SU" stats "$w/half.trace" | sed -n 's/^samples: *//p')
set -- $(timed "$w/half.out" "$SU" stacks -j 1 "$w/half.trace"); th=$1; mh=$2
set -- $(timed "$w/perf.out" perf script -i "$w/perf.data"); tp=$1; mp=$2
n_perf=$(grep -c '^[^ 	]' "$w/perf.out" || true)
frames=$(grep -c '^	' "$w/j1.out" || true)

cores=$(nproc)
echo "machine: $cores cores, $(sed -n 's/^model name[ 	]*: //p' /proc/cpuinfo | head -n 1), $(date -u +%Y-%m-%d)"
printf '%-38s %9s %8s %12s %10s\n' "tool" "samples" "seconds" "samples/s" "peak MiB"
row() { awk -v n="$2" -v t="$3" -v m="$4" -v l="$1" 'BEGIN { printf "%-38s %9d %8.2f %12.0f %10.1f\n", l, n, t, (t > 0 ? n / t : 0), m / 1024 }'; }
row "stackunwind stacks -j 1 (fast)" "$n_su" "$t1" "$m1"
row "stackunwind stacks -j $cores (fast)" "$n_su" "$tn" "$mn"
row "stackunwind stacks -j 1, half the trace" "$n_half" "$th" "$mh"
row "stackunwind stacks -j 1 --unwinder dwfl" "$n_su" "$td" "$md"
row "perf script (dwarf)" "$n_perf" "$tp" "$mp"
echo "frames printed per sample: $(awk -v f="$frames" -v n="$n_su" 'BEGIN { printf "%.1f", f / n }')"
cmp -s "$w/j1.out" "$w/jn.out" && echo "-j 1 and -j $cores outputs identical" || echo "WARNING: -j outputs differ"
