#!/bin/sh
# record-seeds.sh BUILDDIR OUTDIR: records the reader seeds of formats 3 to 5,
# perf.data with kernel chains and perf record --threads directories
# (committed in tests/fuzz/corpus/native-source/v*-*, perf-data/
# kernel-chain-*, perf-dir/threads-*, ...), as root (kernel
# call chains and symbols; perf).  Each stackcap trace becomes one input of
# fuzz-native-source: flags (bit 0 zstd, bit 1 metadata follows), u16
# proc size, u16 metadata size, the metadata lines that name the version,
# sampler and event table, then one proc stream and one samples stream.
# Not run by `make check`: the kernel's build-id in these files is
# tests/fuzz/fuzz-kallsyms.c's (update it when recording on another kernel).
set -eu
B=$(cd "$1" && pwd)
mkdir -p "$2/native-source" "$2/perf-data"
O=$(cd "$2" && pwd)
S="$B/cli/stackcap" TD="$B/testdata"
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"

byte() { printf "\\$(printf %03o "$1")"; }
# seed NAME TRACE PROC SAMPLES: PROC, SAMPLES are patterns of file names in
# TRACE (the first match of each).
seed() {
	p=$(ls "$2" | grep -E "^$3" | head -n 1) s=$(ls "$2" | grep -E "^$4" | head -n 1)
	z=0
	case $p in *.zst) z=1 ;; esac
	grep -E '^\s*(stackcap_trace_version|stackcap_sampler|stackcap_events|stackcap_event_[0-9]+|stackcap_packets_whole) =' \
		"$2/metadata" | sed 's/^\s*//' >meta
	pn=$(wc -c <"$2/$p") mn=$(wc -c <meta)
	{
		byte $((z | 2))
		byte $((pn & 255)); byte $((pn >> 8))
		byte $((mn & 255)); byte $((mn >> 8))
		cat meta "$2/$p" "$2/$s"
	} >"$O/native-source/$1"
}

"$S" record -F 100 -e task-clock -e page-faults -o ev4 -- "$TD/tdata-demo" >/dev/null 2>&1
seed v4-two-events ev4 'proc-[0-9]+-0$' 'samples-[0-9]+-0$'
"$S" record -e task-clock --off-cpu -o ev5 -- sh -c "'$TD/tdata-single' 0.05; '$TD/tdata-offcpu' sleep 0.05" \
	>/dev/null 2>&1
seed v5-events-offcpu ev5 'proc-[0-9]+-0$' 'samples-[0-9]+-0$'
# (v5-events-offcpu-thread and v5-offcpu-pipe are ev5's children's streams:
# proc-PID-1 with samples-PID-0-1, by hand.)
"$S" record --off-cpu -o off5 -- "$TD/tdata-offcpu" pipe 3 10 >/dev/null 2>&1
seed v5-offcpu-pipe-main off5 'proc-[0-9]+-0$' 'samples-[0-9]+-0$'
seed v5-offcpu-pipe-writer off5 'proc-[0-9]+-0$' 'samples-[0-9]+-1$'
"$S" record --zstd -e task-clock --off-cpu -o ev5z -- "$TD/tdata-offcpu" pipe 3 10 >/dev/null 2>&1
seed v5-zstd-events-offcpu ev5z 'proc-[0-9]+-0.zst$' 'samples-[0-9]+-0.zst$'
seed v5-zstd-offcpu-writer ev5z 'proc-[0-9]+-0.zst$' 'samples-[0-9]+-1.zst$'
"$S" record -F 2000 -o k3 -- dd if=/dev/zero of=/dev/null bs=4k count=20000 >/dev/null 2>&1
seed v3-kernel-chains k3 'proc-[0-9]+-0$' 'samples-[0-9]+-0$'
# Packets of 256 samples, each holding what its samples come with (the
# metadata says stackcap_packets_whole): a part skips another's packets
# from their headers, plain and zstd (a frame's first block, the header).
"$S" record -F 2000 -o whole -- "$TD/tdata-threads" -t 2 0.3 >/dev/null 2>&1
seed whole-packets-plain whole 'proc-[0-9]+-0$' 'samples-[0-9]+-1$'
"$S" record --zstd -F 2000 -o wholez -- "$TD/tdata-threads" -t 2 0.3 >/dev/null 2>&1
seed whole-packets-zstd wholez 'proc-[0-9]+-0.zst$' 'samples-[0-9]+-1.zst$'

P="$TD/tdata-offcpu"
perf record -q -e task-clock -F 500 -g -o "$O/perf-data/kernel-chain-g" -- \
	dd if=/dev/zero of=/dev/null bs=4k count=30000 >/dev/null 2>&1
perf record -q -e task-clock,page-faults -g -F 200 -o "$O/perf-data/kernel-chain-two-events" -- "$P" pipe 3 10 >/dev/null 2>&1
perf record -q -z -e task-clock,page-faults -F 500 -g -o "$O/perf-data/zstd-kernel-chain-two-events" -- \
	dd if=/dev/zero of=/dev/null bs=4k count=30000 >/dev/null 2>&1
perf record -q --switch-events -e task-clock -c 100000 --call-graph dwarf,512 \
	-o "$O/perf-data/context-switch-dwarf512" -- "$P" pipe 3 10 >/dev/null 2>&1
perf record -q -e sched:sched_switch -g -o "$O/perf-data/tracepoint-sched-switch-g" -- "$P" pipe 3 10 >/dev/null 2>&1
# perf record --threads directories, as fuzz-perf-dir reads them: data,
# data.0, data.1 one after the other, each a 32-bit little-endian length
# then its bytes (small stacks, few samples: the seeds stay small).
mkdir -p "$O/perf-dir"
dirseed() {
	for f in data data.0 data.1 data.2; do
		[ -f "$2/$f" ] || continue
		n=$(wc -c <"$2/$f")
		byte $((n & 255)); byte $(((n >> 8) & 255)); byte $(((n >> 16) & 255)); byte $((n >> 24))
		cat "$2/$f"
	done >"$O/perf-dir/$1"
}
perf record -q --threads -k monotonic -e cpu-clock -c 2000000 --call-graph dwarf,256 -o thr -- \
	"$TD/tdata-threads" -t 2 0.05 >/dev/null 2>&1
dirseed threads-dwarf256 thr
perf record -q --threads -z -k monotonic -e cpu-clock -c 2000000 --call-graph dwarf,256 -o thrz -- \
	"$TD/tdata-threads" -t 2 0.05 >/dev/null 2>&1
dirseed threads-zstd-dwarf256 thrz
chmod 644 "$O"/native-source/* "$O"/perf-data/* "$O"/perf-dir/*
