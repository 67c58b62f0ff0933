#!/bin/sh
# bench/own-rate.sh BUILD_DIR [SECONDS] [TRACE]: issue 20's aims on our own
# trace.  Records `stackcap record -F 9999 -- tdata-recurse -d 46 SECONDS`
# (default 8; or reads TRACE, a stackcap trace directory), then runs
# `stackunwind stacks` and `folded` at -j 1 and -j 2, the four commands
# interleaved RUNS times (default 5) so all see the same machine, and
# prints per command the median CPU time (user + sys) and wall time,
# samples per CPU-second and per wall-second, and -j 2's wall speed-up over
# -j 1.  The aims: folded >= 1 M samples/s, stacks >= 500 k/s on one thread,
# -j 2 >= 1.8x -j 1 (a wall-time ratio: it needs an idle second core).
# The machine's own ceiling for two threads is measured beside them: two
# `folded -j 1` run side by side, whose wall time against one alone says
# how much two busy cores slow each other (a VM's two vCPUs may share a
# physical core): a -j 2 speed-up is judged against 2x and that ceiling.
# Outputs of -j 1 and -j 2 are compared.  `make bench-own-rate`; numbers go
# to docs/BENCHMARKS.md with the machine line this prints.
set -eu
B=${1:?usage: bench/own-rate.sh BUILD_DIR [SECONDS] [TRACE]}
SECS=${2:-8}
TRACE=${3:-}
RUNS=${RUNS:-5}
B=$(cd "$B" && pwd)
SU="$B/cli/stackunwind"
command -v /usr/bin/time >/dev/null || { echo "bench/own-rate.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT

if [ -z "$TRACE" ]; then
	TRACE="$w/chain.trace"
	"$B/cli/stackcap" record -F 9999 -o "$TRACE" -- "$B/testdata/tdata-recurse" -d 46 "$SECS" 2>"$w/rec.err" ||
		{ cat "$w/rec.err" >&2; exit 1; }
fi
n=$("$SU" stats "$TRACE" 2>/dev/null | sed -n 's/^samples: *//p')
[ -n "$n" ] && [ "$n" -gt 0 ] || { echo "bench/own-rate.sh: no samples in $TRACE" >&2; exit 1; }

echo "machine: $(nproc) cores, $(sed -n 's/^model name[ 	]*: //p' /proc/cpuinfo | head -n 1), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "trace: $TRACE, $n samples; median of $RUNS interleaved runs"
set -- "stacks -j 1" "stacks -j 2" "folded -j 1" "folded -j 2"
i=0
for c in "$@"; do
	i=$((i + 1))
	"$SU" $c "$TRACE" >"$w/out.$i" 2>/dev/null # warm the page cache
done
r=0
while [ $r -lt "$RUNS" ]; do
	r=$((r + 1))
	i=0
	for c in "$@"; do
		i=$((i + 1))
		/usr/bin/time -f "%e %U %S" -a -o "$w/time.$i" "$SU" $c "$TRACE" >/dev/null 2>&1 || true
	done
	/usr/bin/time -f "%e" -a -o "$w/time.pair" sh -c \
		"'$SU' folded -j 1 '$TRACE' >/dev/null 2>&1 & '$SU' folded -j 1 '$TRACE' >/dev/null 2>&1; wait" || true
done
med() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-12s %9s %9s %14s %15s\n' command "CPU s" "wall s" "samples/CPU-s" "samples/wall-s"
i=0
for c in "$@"; do
	i=$((i + 1))
	cpu=$(awk '{ print $2 + $3 }' "$w/time.$i" | med)
	wall=$(awk '{ print $1 }' "$w/time.$i" | med)
	echo "$cpu $wall" >"$w/med.$i"
	awk -v c="$c" -v n="$n" -v u="$cpu" -v t="$wall" 'BEGIN {
		printf "%-12s %9.3f %9.3f %14.0f %15.0f\n", c, u, t, (u > 0 ? n / u : 0), (t > 0 ? n / t : 0) }'
done
awk 'FNR == 1 { w[++k] = $2 } END {
	printf "-j 2 wall speed-up over -j 1: stacks %.2fx, folded %.2fx (aim 1.8x; needs an idle core)\n",
		(w[2] > 0 ? w[1] / w[2] : 0), (w[4] > 0 ? w[3] / w[4] : 0) }' "$w/med.1" "$w/med.2" "$w/med.3" "$w/med.4"
pair=$(med <"$w/time.pair")
awk -v p="$pair" 'FNR == 1 { w[++k] = $2 } END {
	c = p > 0 ? 2 * w[3] / p : 0
	printf "this machine, two threads: two folded -j 1 side by side take %.3f s, one alone %.3f s: ceiling %.2fx;", p, w[3], c
	printf " -j 2 reaches %.0f%% of it (stacks), %.0f%% (folded)\n",
		(c > 0 && w[2] > 0 ? 100 * w[1] / w[2] / c : 0), (c > 0 && w[4] > 0 ? 100 * w[3] / w[4] / c : 0) }' \
	"$w/med.1" "$w/med.2" "$w/med.3" "$w/med.4"
cmp -s "$w/out.1" "$w/out.2" && cmp -s "$w/out.3" "$w/out.4" && echo "-j 1 and -j 2 outputs identical" ||
	echo "WARNING: -j 1 and -j 2 outputs differ"
