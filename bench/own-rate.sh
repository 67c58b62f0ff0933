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
# And each core's own speed: `folded -j 1` pinned to each CPU in turn
# (taskset); a VM's vCPUs need not run alike (one here ran at 60% of the
# other in most minutes, its host core shared): with per-CPU times t_i,
# two threads can at best finish in 1 / sum(1 / t_i), the second ceiling.
# And the ideal split: the trace cut in two at the middle packet of each
# sample stream file (packets decode alone: each half is a trace), each
# half read by a process of its own, side by side: what -j 2 would take if
# splitting the work cost nothing (no shared writer, no packets to skip),
# on these two vCPUs as they run now.
# Outputs of -j 1 and -j 2 are compared.  `make bench-own-rate`; numbers go
# to docs/BENCHMARKS.md with the machine line this prints.
set -eu
B=${1:?usage: bench/own-rate.sh BUILD_DIR [SECONDS] [TRACE]}
SECS=${2:-8}
TRACE=${3:-}
RUNS=${RUNS:-5}
B=$(cd "$B" && pwd)
SU="$B/cli/stackunwind"
# Each timing runs its command OWN_RATE_REPEAT times in a row (default 5)
# and takes the mean: the shell's CPU times come in 10 ms steps, a run
# here takes 30 to 80 ms.  Wall time from date's nanoseconds.
REP=${OWN_RATE_REPEAT:-5}
ONE='t0=$(date +%s%N); i=0; while [ $i -lt '"$REP"' ]; do "$@" >/dev/null 2>&1; i=$((i + 1)); done
t1=$(date +%s%N); echo $(( (t1 - t0) / 1000 )); times'
# timed OUT CMD...: "WALL_S CPU_S" of one run of CMD appended to OUT.
timed() {
	out=$1
	shift
	sh -c "$ONE" sh "$@" | awk -v rep="$REP" 'NR == 1 { w = $1 }
		NR == 3 { c = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); c += a[1] * 60 + a[2] } }
		END { printf "%.6f %.6f\n", w / 1e6 / rep, c / rep }' >>"$out"
}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT

if [ -z "$TRACE" ]; then
	TRACE="$w/chain.trace"
	"$B/cli/stackcap" record -F 9999 -o "$TRACE" -- "$B/testdata/tdata-recurse" -d 46 "$SECS" 2>"$w/rec.err" ||
		{ cat "$w/rec.err" >&2; exit 1; }
fi
n=$("$SU" stats "$TRACE" 2>/dev/null | sed -n 's/^samples: *//p')
[ -n "$n" ] && [ "$n" -gt 0 ] || { echo "bench/own-rate.sh: no samples in $TRACE" >&2; exit 1; }

# The two halves (plain stream files only: a .zst file's frames would need
# inflating to find its packets).  u64 FILE OFF: the little-endian u64
# there; packet_size (bits) is the packet context's fourth u64, after the
# 32-byte header (common/ctf-layout.h).
u64() { od -An -tu8 -j "$2" -N 8 "$1" | tr -d ' '; }
halves=1
mkdir -m 700 "$w/h1" "$w/h2"
for f in "$TRACE"/*; do
	b=${f##*/}
	case $b in
	samples-*.zst) halves=0 ;;
	samples-*)
		size=$(stat -c %s "$f") off=0 offs=
		while [ "$off" -lt "$size" ]; do
			offs="$offs $off"
			bits=$(u64 "$f" $((off + 56)))
			[ -n "$bits" ] && [ "$bits" -gt 0 ] || break
			off=$((off + bits / 8))
		done
		set -- $offs
		if [ $# -lt 2 ]; then
			halves=0 # a file of one packet: no halves
			continue
		fi
		mid=$(eval echo "\${$(($# / 2 + 1))}")
		head -c "$mid" "$f" >"$w/h1/$b"
		tail -c +$((mid + 1)) "$f" >"$w/h2/$b"
		;;
	*) cp "$f" "$w/h1/$b" && cp "$f" "$w/h2/$b" ;;
	esac
done
echo "machine: $(nproc) cores, $(sed -n 's/^model name[ 	]*: //p' /proc/cpuinfo | head -n 1), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "trace: $TRACE, $n samples; median of $RUNS interleaved runs, each the mean of $REP in a row"
set -- "stacks -j 1" "stacks -j 2" "folded -j 1" "folded -j 2"
i=0
for c in "$@"; do
	i=$((i + 1))
	"$SU" $c "$TRACE" >"$w/out.$i" 2>/dev/null # warm the page cache
done
# The first two CPUs this process may run on (taskset: util-linux).
cpus=$(taskset -pc $$ 2>/dev/null | sed 's/.*: //' | tr ',' '\n' |
	awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }' | head -n 2 | tr '\n' ' ')
r=0
while [ $r -lt "$RUNS" ]; do
	r=$((r + 1))
	i=0
	for c in "$@"; do
		i=$((i + 1))
		timed "$w/time.$i" "$SU" $c "$TRACE"
	done
	timed "$w/time.pair" sh -c "'$SU' folded -j 1 '$TRACE' >/dev/null 2>&1 & '$SU' folded -j 1 '$TRACE' >/dev/null 2>&1; wait"
	if [ $halves = 1 ]; then
		for c in stacks folded; do
			timed "$w/time.halves-$c" sh -c "'$SU' $c -j 1 '$w/h1' >/dev/null 2>&1 & '$SU' $c -j 1 '$w/h2' >/dev/null 2>&1; wait"
		done
	fi
	for cpu in $cpus; do
		timed "$w/time.cpu$cpu" taskset -c "$cpu" "$SU" folded -j 1 "$TRACE"
	done
done
med() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-12s %9s %9s %14s %15s\n' command "CPU s" "wall s" "samples/CPU-s" "samples/wall-s"
i=0
for c in "$@"; do
	i=$((i + 1))
	cpu=$(awk '{ print $2 }' "$w/time.$i" | med)
	wall=$(awk '{ print $1 }' "$w/time.$i" | med)
	echo "$cpu $wall" >"$w/med.$i"
	awk -v c="$c" -v n="$n" -v u="$cpu" -v t="$wall" 'BEGIN {
		printf "%-12s %9.3f %9.3f %14.0f %15.0f\n", c, u, t, (u > 0 ? n / u : 0), (t > 0 ? n / t : 0) }'
done
awk 'FNR == 1 { w[++k] = $2 } END {
	printf "-j 2 wall speed-up over -j 1: stacks %.2fx, folded %.2fx (aim 1.8x; needs an idle core)\n",
		(w[2] > 0 ? w[1] / w[2] : 0), (w[4] > 0 ? w[3] / w[4] : 0) }' "$w/med.1" "$w/med.2" "$w/med.3" "$w/med.4"
pair=$(awk '{ print $1 }' "$w/time.pair" | med)
awk -v p="$pair" 'FNR == 1 { w[++k] = $2 } END {
	c = p > 0 ? 2 * w[3] / p : 0
	printf "this machine, two threads: two folded -j 1 side by side take %.3f s, one alone %.3f s: ceiling %.2fx;", p, w[3], c
	printf " -j 2 reaches %.0f%% of it (stacks), %.0f%% (folded)\n",
		(c > 0 && w[2] > 0 ? 100 * w[1] / w[2] / c : 0), (c > 0 && w[4] > 0 ? 100 * w[3] / w[4] / c : 0) }' \
	"$w/med.1" "$w/med.2" "$w/med.3" "$w/med.4"
if [ $halves = 1 ]; then
	hs=$(awk '{ print $1 }' "$w/time.halves-stacks" | med)
	hf=$(awk '{ print $1 }' "$w/time.halves-folded" | med)
	awk -v hs="$hs" -v hf="$hf" 'FNR == 1 { w[++k] = $2 } END {
		printf "ideal split, each half of the trace read by a -j 1 of its own side by side: stacks %.3f s, folded %.3f s:", hs, hf
		printf " %.2fx, %.2fx over -j 1; -j 2 reaches %.0f%%, %.0f%% of it\n", (hs > 0 ? w[1] / hs : 0),
			(hf > 0 ? w[3] / hf : 0), (w[2] > 0 ? 100 * hs / w[2] : 0), (w[4] > 0 ? 100 * hf / w[4] : 0) }' \
		"$w/med.1" "$w/med.2" "$w/med.3" "$w/med.4"
	# The halves give the whole trace's samples (stacks: the same text).
	"$SU" stacks -j 1 "$w/h1" >"$w/halves.out" 2>/dev/null && "$SU" stacks -j 1 "$w/h2" >>"$w/halves.out" 2>/dev/null
	cmp -s "$w/out.1" "$w/halves.out" || echo "WARNING: the two halves' stacks differ from the whole trace's"
else
	echo "ideal split: not measured (zstd stream files, or a sample file of one packet)"
fi
sum=0
for cpu in $cpus; do
	t=$(awk '{ print $1 }' "$w/time.cpu$cpu" | med)
	printf 'folded -j 1 pinned to CPU %s: %.3f s\n' "$cpu" "$t"
	sum=$(awk -v s="$sum" -v t="$t" 'BEGIN { print (t > 0 ? s + 1 / t : s) }')
done
awk -v s="$sum" 'FNR == 1 { w[++k] = $2 } END {
	if (s > 0)
		printf "these CPUs, two threads: at best %.3f s for folded: ceiling %.2fx over -j 1 (-j 2 reaches %.0f%% of it)\n",
			1 / s, w[3] * s, (w[4] > 0 ? 100 * w[3] / w[4] / (w[3] * s) : 0) }' \
	"$w/med.1" "$w/med.2" "$w/med.3" "$w/med.4"
cmp -s "$w/out.1" "$w/out.2" && cmp -s "$w/out.3" "$w/out.4" && echo "-j 1 and -j 2 outputs identical" ||
	echo "WARNING: -j 1 and -j 2 outputs differ"
