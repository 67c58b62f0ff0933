#!/bin/sh
# bench/kernel-frames.sh BUILD_DIR: what keeping kernel frames costs
# `stackcap record` (the kernel copy), with them (the default, as root)
# and without (--user-only), on the same workloads:
#   dd        dd if=/dev/zero of=/dev/null bs=64k: most samples in the
#             kernel's read/write path (5 to 6 kernel frames each)
#   single    testdata/tdata-single: user code, few samples in the kernel
#   write     testdata/tdata-events -n N under -e syscalls:sys_enter_write
#             --stack-size 8192: a kernel chain on every sample
# Each configuration runs RUNS times, interleaved (one run of each per
# round).  Reported (medians): samples, samples with kernel frames, trace
# bytes on disk, bytes per sample, the recorder's CPU time and its CPU per
# sample (stackcap's own summary line), the kernel symbols kept.
#
# Environment: RUNS (default 5), DD_COUNT (default 200000), SINGLE_SECONDS
# (default 1), WRITES (default 2000), TMPDIR.  Root (kernel frames need
# kernel addresses: root or kernel.kptr_restrict=0).
set -u
B=${1:-}
if [ -z "$B" ] || [ ! -x "$B/cli/stackcap" ] || [ ! -x "$B/testdata/tdata-single" ]; then
	echo "usage: $0 BUILD_DIR   (a built tree: BUILD_DIR/cli/stackcap, BUILD_DIR/testdata/)" >&2
	exit 2
fi
B=$(cd "$B" && pwd)
RUNS=${RUNS:-5}
DD_COUNT=${DD_COUNT:-200000}
SINGLE_SECONDS=${SINGLE_SECONDS:-1}
WRITES=${WRITES:-2000}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT

# run NAME OPTS -- CMD...: one recording; a line of results in $w/NAME.
run() {
	name=$1
	shift
	rm -rf "$w/trace"
	(cd "$B/testdata" && "$B/cli/stackcap" record -o "$w/trace" "$@") >/dev/null 2>"$w/err"
	samples=$(sed -n 's/.*: \([0-9]*\) samples, [0-9]* drops, .*/\1/p' "$w/err" | head -n 1)
	bytes=$(sed -n 's/.* drops, \([0-9]*\) bytes .*/\1/p' "$w/err" | head -n 1)
	cpu=$(sed -n 's/.*recorder CPU \([0-9.]*\) s.*/\1/p' "$w/err" | head -n 1)
	kf=$(sed -n 's/.*kernel frames in \([0-9]*\) samples.*/\1/p' "$w/err" | head -n 1)
	ksb=$(sed -n 's/.*kernel symbols kept (\([0-9]*\) bytes).*/\1/p' "$w/err" | head -n 1)
	if [ -z "$samples" ] || [ -z "$bytes" ]; then
		echo "$name: no summary from stackcap record: $(head -n 2 "$w/err")" >&2
		exit 1
	fi
	echo "$samples ${kf:-0} $bytes ${cpu:-0} ${ksb:-0}" >>"$w/$name"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v c="$2" '{ print $c }' "$w/$1" | median; }

"$B/cli/stackcap" record -o "$w/probe" -- true 2>"$w/probe.err" >/dev/null
if grep -q 'kernel frames' "$w/probe.err" && grep -q 'not' "$w/probe.err"; then
	echo "kernel frames not allowed here: $(grep 'kernel frames' "$w/probe.err")" >&2
	exit 1
fi
rm -rf "$w/probe"

echo "# $(uname -n), $(nproc) CPUs, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'); $RUNS runs each (medians)"
for r in $(seq "$RUNS"); do
	for k in kf uo; do
		opt=; [ $k = uo ] && opt=--user-only
		run "dd-$k" $opt -- dd if=/dev/zero of=/dev/null bs=64k count="$DD_COUNT"
		run "single-$k" $opt -- ./tdata-single "$SINGLE_SECONDS"
		run "write-$k" $opt -e syscalls:sys_enter_write --stack-size 8192 -- ./tdata-events -n "$WRITES"
	done
done
printf '%-8s %-12s %8s %8s %10s %8s %10s %10s %8s\n' workload mode samples w/kernel bytes B/sample "rec CPU s" "us/sample" "ksyms B"
for wl in dd single write; do
	for k in kf uo; do
		f=$wl-$k
		s=$(col "$f" 1) kf=$(col "$f" 2) by=$(col "$f" 3) cpu=$(col "$f" 4) ks=$(col "$f" 5)
		mode="kernel frames"; [ $k = uo ] && mode="--user-only"
		awk -v wl="$wl" -v m="$mode" -v s="$s" -v kf="$kf" -v by="$by" -v cpu="$cpu" -v ks="$ks" 'BEGIN {
			printf "%-8s %-12s %8d %8d %10d %8.1f %10.3f %10.1f %8d\n", wl, substr(m, 1, 12), s, kf, by,
				(s ? by / s : 0), cpu, (s ? cpu * 1e6 / s : 0), ks }'
	done
done
