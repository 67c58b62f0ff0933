#!/bin/sh
# bench/offcpu.sh BUILD_DIR: what off-CPU recording costs a program that
# switches 10,000 times a second, stackcap record --off-cpu beside perf
# record -e sched:sched_switch --call-graph dwarf, and the bytes each
# off-CPU sample takes on disk.
#
# The program: testdata/tdata-offcpu switch SECONDS RATE, two threads
# handing a byte back and forth over pipes, paced to RATE switches a
# second (each blocks in read until the other writes).  It prints its
# round trips and its own CPU time (user + system).  Each configuration
# runs RUNS times, interleaved (one run of each per round), so machine
# noise hits all alike:
#   none       the program alone
#   stackcap   stackcap record --off-cpu (CPU samples at 999 Hz too, as
#              by default; kernel frames where readable), its default
#              65528-byte stack window
#   stackcap8k the same with an 8 KiB window (perf's default)
#   perf       perf record -e sched:sched_switch --call-graph dwarf
#              (8 KiB stack window: perf's default), -k monotonic
#   perf64k    the same with stackcap's 65528-byte window
# Reported (medians): round trips (fewer: the program was slowed below
# its pace), the program's CPU time, the recorder's CPU time (the whole
# run's CPU from /usr/bin/time minus the program's own), samples, bytes
# on disk, bytes per sample, drops (records lost: the ring was full).
# Samples: stackcap's summary (every sample, off-CPU and CPU); perf's
# sched_switch samples (every switch out of the program's threads:
# preemptions too, which stackcap leaves out).
#
# Environment: RUNS (default 3), SECONDS (default 3), RATE (default 10000),
# TMPDIR.  perf must be able to record tracepoints (root).
set -u
B=${1:-}
if [ -z "$B" ] || [ ! -x "$B/testdata/tdata-offcpu" ] || [ ! -x "$B/cli/stackcap" ]; then
	echo "usage: $0 BUILD_DIR   (a built tree: BUILD_DIR/testdata/tdata-offcpu, BUILD_DIR/cli/stackcap)" >&2
	exit 2
fi
B=$(cd "$B" && pwd)
RUNS=${RUNS:-3}
SECS=${SECONDS_RUN:-${SECONDS:-3}}
RATE=${RATE:-10000}
P="$B/testdata/tdata-offcpu"
command -v perf >/dev/null || { echo "perf missing: apt-get install linux-perf" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing: apt-get install time" >&2; exit 1; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT

# run NAME ROUND CMD...: the program under CMD; a line of results in $w/NAME.
run() {
	name=$1 round=$2
	shift 2
	rm -rf "$w/trace" "$w/perf.data"
	/usr/bin/time -f "TIME %e %U %S" -o "$w/time" "$@" >"$w/out" 2>"$w/err"
	trips=$(sed -n 's/^switch: \([0-9]*\) round trips.*/\1/p' "$w/out")
	pcpu=$(sed -n 's/.*, \([0-9.]*\) s CPU$/\1/p' "$w/out")
	total=$(awk '/^TIME/ { print $3 + $4 }' "$w/time")
	samples=0 bytes=0 drops=0
	case $name in
	stackcap*)
		samples=$(sed -n 's/.*: \([0-9]*\) samples, .*/\1/p' "$w/err" | head -n 1)
		drops=$(sed -n 's/.* samples, \([0-9]*\) drops, .*/\1/p' "$w/err" | head -n 1)
		bytes=$(du -sb "$w/trace" | cut -f1)
		offs=$(sed -n 's/.*off-CPU: \([0-9]*\) stacks.*/\1/p' "$w/err")
		;;
	perf*)
		perf report -i "$w/perf.data" --stats >"$w/stats" 2>/dev/null
		samples=$(awk '/SAMPLE events:/ { print $3; exit }' "$w/stats")
		drops=$(awk '/LOST_SAMPLES events:|LOST events:/ { n += $3 } END { print n + 0 }' "$w/stats")
		bytes=$(stat -c %s "$w/perf.data")
		offs=$samples
		;;
	*) offs=0 ;;
	esac
	echo "$round $trips $pcpu $total ${samples:-0} $bytes ${offs:-0} ${drops:-0}" >>"$w/$name"
}

for r in $(seq 1 "$RUNS"); do
	run none "$r" "$P" switch "$SECS" "$RATE"
	run stackcap "$r" "$B/cli/stackcap" record --off-cpu -o "$w/trace" -- "$P" switch "$SECS" "$RATE"
	run stackcap8k "$r" "$B/cli/stackcap" record --off-cpu --stack-size 8192 -o "$w/trace" -- \
		"$P" switch "$SECS" "$RATE"
	run perf "$r" perf record -q -k monotonic -e sched:sched_switch --call-graph dwarf -o "$w/perf.data" -- \
		"$P" switch "$SECS" "$RATE"
	run perf64k "$r" perf record -q -k monotonic -e sched:sched_switch --call-graph dwarf,65528 \
		-o "$w/perf.data" -- "$P" switch "$SECS" "$RATE"
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v c="$2" '{ print $c }' "$w/$1" | median; }
base_cpu=$(col none 3)
echo "# $(uname -n), $(nproc) CPUs, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'); $RUNS runs of $SECS s at $RATE switches/s (medians)"
printf '%-10s %11s %9s %9s %12s %8s %8s %10s %9s %12s\n' recorder round-trips prog-CPU "(x alone)" recorder-CPU \
	samples off-CPU drops bytes B/off-CPU
for c in none stackcap stackcap8k perf perf64k; do
	trips=$(col $c 2) pcpu=$(col $c 3) total=$(col $c 4) samples=$(col $c 5) bytes=$(col $c 6) offs=$(col $c 7)
	drops=$(col $c 8)
	rcpu=$(awk -v t="$total" -v p="$pcpu" 'BEGIN { printf "%.3f", t - p }')
	ratio=$(awk -v p="$pcpu" -v b="$base_cpu" 'BEGIN { printf "%.2f", (b > 0 ? p / b : 0) }')
	bps=$(awk -v b="$bytes" -v s="$offs" 'BEGIN { printf "%.1f", (s > 0 ? b / s : 0) }')
	[ $c = none ] && rcpu=- && bps=-
	printf '%-10s %11s %9s %9s %12s %8s %8s %10s %9s %12s\n' $c "$trips" "$pcpu" "$ratio" "$rcpu" "$samples" "$offs" \
		"$drops" "$bytes" "$bps"
done
echo "(B/off-CPU: all bytes on disk / off-CPU samples; perf: / sched_switch samples)"
