#!/bin/sh
# One-off check for refactors of the offline side (issue 17): every output
# of stackunwind and of the babeltrace2 plugin, on a fixed set of traces,
# written to a directory, so two builds can be compared byte for byte.
#
#   tests/ref-outputs.sh record BUILD DIR     record the traces into DIR/traces
#                          (the programs: DIR/bin, a copy of BUILD's, kept)
#   tests/ref-outputs.sh outputs BUILD DIR OUT  every output of BUILD's tools into OUT
#   tests/ref-outputs.sh compare A B          diff -r of two OUT directories
#
# BUILD is a build tree (cli/stackunwind, plugin/.libs, testdata/, tests/).
# Not part of `make check`: the traces are recorded once and kept (JIT
# traces need their /tmp/perf-PID.map, left in place).  Outputs that hold
# a time or a path of the run are not written.
set -u
cmd=${1:?usage: record|outputs|compare}
shift
# run NAME CMD... (tap-lib.sh): into $run_dir, set by outputs.
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
top_builddir=${1:-.}
. "$top_srcdir/tests/tap-lib.sh"

record_traces() {
	B=$1 D=$2
	mkdir -p "$D/traces" "$D/moved" "$D/bin/tests"
	cp -a "$B/testdata" "$D/bin/" && cp "$B/tests/jit-burn" "$D/bin/tests/" || exit 1
	TD=$D/bin/testdata
	SC="nice $B/cli/stackcap record"
	T=$D/traces
	$SC -o "$T/single" -- "$TD/tdata-single" 0.5 >/dev/null 2>&1
	$SC -o "$T/threads" -- "$TD/tdata-threads" -t 2 0.5 >/dev/null 2>&1
	$SC -o "$T/dlopen" -- "$TD/tdata-dlopen" --reload 0.5 >/dev/null 2>&1
	$SC -o "$T/recurse" --stack-cap 131072 -- "$TD/tdata-recurse" -d 1000 0.5 >/dev/null 2>&1
	$SC -o "$T/recurse-capped" -- "$TD/tdata-recurse" -d 1000 0.3 >/dev/null 2>&1
	$SC -o "$T/nofp" -- "$TD/tdata-nofp" 0.5 >/dev/null 2>&1
	$SC -o "$T/sigalt" -- "$TD/tdata-sigalt" 0.5 >/dev/null 2>&1
	$SC -o "$T/inline" -- "$TD/tdata-inline" 0.5 >/dev/null 2>&1
	$SC -o "$T/demo" -- "$TD/tdata-demo" 0.5 >/dev/null 2>&1
	$SC -o "$T/full" --full-copy -- "$TD/tdata-single" 0.3 >/dev/null 2>&1
	$SC -o "$T/zstd" --zstd -- "$TD/tdata-threads" -t 2 0.3 >/dev/null 2>&1
	$SC -o "$T/jit" -- "$D/bin/tests/jit-burn" 0.5 perf-map >/dev/null 2>&1
	# A binary gone since the recording: its frames are module+offset.
	cp "$TD/tdata-single" "$D/moved/tdata-single"
	$SC -o "$T/moved" -- "$D/moved/tdata-single" 0.3 >/dev/null 2>&1
	rm -f "$D/moved/tdata-single"
	P="nice perf record -q -k monotonic -F 999 --call-graph dwarf"
	$P -o "$T/perf-single.data" -- "$TD/tdata-single" 0.5 >/dev/null 2>&1
	$P -o "$T/perf-threads.data" -- "$TD/tdata-threads" -t 2 0.5 >/dev/null 2>&1
	$P -o "$T/perf-inline.data" -- "$TD/tdata-inline" 0.5 >/dev/null 2>&1
	$P -o "$T/perf-jit.data" -- "$D/bin/tests/jit-burn" 0.5 perf-map >/dev/null 2>&1
	$P -z -o "$T/perf-z.data" -- "$TD/tdata-demo" 0.5 >/dev/null 2>&1
	nice perf record -q -k monotonic -F 999 -g -o "$T/perf-g.data" -- "$TD/tdata-single" 0.5 >/dev/null 2>&1
	$B/cli/stackcap convert "$T/perf-threads.data" -o "$T/converted" >/dev/null 2>&1
	ls "$T"
}


write_outputs() {
	B=$1 D=$2 O=$3
	mkdir -p "$O"
	run_dir=$O
	SU="nice $B/cli/stackunwind"
	BT="nice babeltrace2 --plugin-path=$B/plugin/.libs"
	unset DEBUGINFOD_URLS
	for t in "$D"/traces/*; do
		n=$(basename "$t")
		run "$n.stacks-j1" $SU stacks -j 1 "$t"
		run "$n.stacks-j2" $SU stacks -j 2 "$t"
		run "$n.stacks-dwfl" $SU stacks -j 2 --unwinder dwfl "$t"
		run "$n.folded-j1" $SU folded -j 1 "$t"
		run "$n.folded-j2" $SU folded -j 2 "$t"
		run "$n.folded-pp" $SU folded -j 2 --per-process "$t"
		run "$n.folded-pt-ni" $SU folded -j 1 --per-thread --no-inline "$t"
		run "$n.flame" $SU flamegraph -j 2 "$t"
		run "$n.flame-rev" $SU flamegraph -j 1 --reverse --icicle --no-inline --title T "$t"
		run "$n.stats" $SU stats "$t"
		run "$n.speedscope" $SU export -j 2 --format speedscope -o "$O/$n.speedscope.json" "$t"
		run "$n.speedscope-ni" $SU export -j 1 --no-inline --format speedscope -o "$O/$n.speedscope-ni.json" "$t"
		run "$n.pprof" $SU export -j 2 --format pprof -o - "$t"
		case $n in
		*.data) continue ;;
		esac
		run "$n.bt2-src" $BT -c source.stackcap.trace -p "inputs=[\"$t\"]" -c filter.stackcap.unwind -c sink.stackcap.folded
		# src.ctf.fs reads no --zstd trace.
		[ "$n" = zstd ] && continue
		run "$n.stacks-bt2" $SU stacks -j 2 --reader babeltrace2 "$t"
		run "$n.bt2-filter" $BT "$t" -c filter.stackcap.unwind
		run "$n.bt2-filter-ni" $BT "$t" -c filter.stackcap.unwind -p no-inline=yes
		run "$n.bt2-sink" $BT "$t" -c filter.stackcap.unwind -c sink.stackcap.folded
		run "$n.bt2-sink-pt" $BT "$t" -c filter.stackcap.unwind -c sink.stackcap.folded -p per-thread=yes,no-inline=yes
	done
	# The paths of this run out of the texts that name them.
	sed -i "s|$B|BUILD|g" "$O"/*.err
}

case $cmd in
record) record_traces "$@" ;;
outputs) write_outputs "$@" ;;
compare)
	if diff -r -q "$1" "$2"; then
		echo "identical: $(ls "$1" | wc -l) files"
	else
		exit 1
	fi ;;
*) echo "usage: $0 record|outputs|compare ..." >&2; exit 2 ;;
esac
