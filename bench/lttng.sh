#!/bin/sh
# bench/lttng.sh BUILD_DIR: stackcap through LTTng beside the standalone
# trace and perf (docs/BENCHMARKS.md, docs/lttng.md).
#
# 1. Capture cost: bench/capture (standalone: ring + writer thread) and
#    bench/capture-lttng --lttng (a stackcap:sample event per capture, in a
#    session with stackcap:* enabled; and with no session: the tracepoint
#    is off, only the encoding runs), ns per stackcap_capture() at depths
#    10, 100, 1000.
# 2. Size and slowdown: bench/workload -u UNITS at 999 Hz, RUNS rounds
#    interleaved, under no profiler, `stackcap record`, `stackcap record
#    --lttng` (one session per run, vpid/vtid contexts), `perf record
#    --call-graph dwarf` and `perf record -z --call-graph dwarf`.  Bytes per
#    sample: on disk (all files; LTTng's include metadata, index files and
#    sub-buffer padding) and, for LTTng, the packets' content (from the
#    index files: what the events and packet headers take).
#
# It starts its own lttng-sessiond on a private LTTNG_HOME (as nobody when
# root, like tests/lttng.sh) and stops it on exit.
# Environment: RUNS (default 5), UNITS (default 8000), TMPDIR.
set -u
B=${1:-}
if [ -z "$B" ] || [ ! -x "$B/bench/capture-lttng" ] || [ ! -x "$B/bench/workload" ]; then
	echo "usage: $0 BUILD_DIR   (a tree built with lttng-ust: BUILD_DIR/bench/capture-lttng)" >&2
	exit 2
fi
B=$(cd "$B" && pwd)
RUNS=${RUNS:-5}
UNITS=${UNITS:-8000}
STACKCAP="$B/cli/stackcap"
SU="$B/cli/stackunwind"
WORKLOAD="$B/bench/workload"

die() { echo "bench/lttng.sh: $*" >&2; exit 1; }
for t in lttng lttng-sessiond perf babeltrace2; do
	command -v $t >/dev/null || die "$t missing (scripts/install-deps.sh)"
done

W=$(mktemp -d "${TMPDIR:-/tmp}/stackcap-lttng-bench.XXXXXX") || die "mktemp failed"
mkdir -p "$W/home" "$W/lt"
if [ "$(id -u)" = 0 ]; then
	chmod 755 "$W"
	chown -R 65534:65534 "$W/home" "$W/lt"
	as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$W/home" LTTNG_HOME="$W/home" "$@"; }
else
	as_user() { env HOME="$W/home" LTTNG_HOME="$W/home" "$@"; }
fi
daemon_pid=
stop_daemon() {
	[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
	i=0
	while [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}
trap 'stop_daemon; rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

as_user lttng-sessiond --daemonize --no-kernel >"$W/sessiond.log" 2>&1 || die "lttng-sessiond: $(cat "$W/sessiond.log")"
daemon_pid=$(cat "$W/home/.lttng/lttng-sessiond.pid") || die "no lttng-sessiond.pid"

session_start() {
	as_user lttng create "$1" --output="$W/lt/$1" >/dev/null &&
	as_user lttng enable-event -u 'stackcap:*,lttng_ust_statedump:*,lttng_ust_dl:*,lttng_ust_lib:*' >/dev/null &&
	as_user lttng add-context -u -t vpid -t vtid >/dev/null &&
	as_user lttng start >/dev/null || die "cannot start LTTng session $1"
}
session_end() { as_user lttng stop >/dev/null && as_user lttng destroy >/dev/null; }

dir_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
# Sum of content_size of every packet listed in the CTF index files below
# DIR (big-endian: 16-byte header, then entries whose third u64 is
# content_size in bits).
content_bytes() {
	total=0
	for idx in $(find "$1" -name '*.idx'); do
		len=$(od -An -tu1 -j12 -N4 "$idx" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
		size=$(stat -c %s "$idx")
		b=$(od -An -v -tu1 -j16 "$idx" | tr -s ' ' '\n' | grep -v '^$' | awk -v len="$len" '
			{ i = (NR - 1) % len; if (i >= 16 && i < 24) v = v * 256 + $1; if (i == 23) { s += v / 8; v = 0 } }
			END { printf "%.0f", s }')
		total=$((total + b))
	done
	echo "$total"
}

CPU_MODEL=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo "# bench/lttng.sh, $(date +%Y-%m-%d)"
echo "# machine: $(nproc) CPUs, $CPU_MODEL; $(uname -sr); $(lttng --version | head -1); $(perf --version)"

# ---- 1. capture cost ------------------------------------------------------
echo "# part 1: ns per stackcap_capture()"
echo "## standalone trace (libstackcap)"
as_user "$B/bench/capture" "$W/lt/capture.trace" || die "bench/capture failed"
echo "## LTTng, no session (tracepoint off: encoding only)"
as_user "$B/bench/capture-lttng" --lttng || die "bench/capture-lttng failed"
session_start capture
echo "## LTTng, stackcap:sample recorded"
as_user "$B/bench/capture-lttng" --lttng || die "bench/capture-lttng failed"
session_end

# ---- 2. size and slowdown -------------------------------------------------
# run_one KIND OUT: one bench/workload run; appends "work_s cpu_s samples
# disk_bytes content_bytes blob_bytes".
run_one() {
	kind=$1 out=$2
	rm -rf "$W/rec" "$W/lt/rec"
	content=0 blob=0
	case $kind in
	none) "$WORKLOAD" -u "$UNITS" >"$W/last.out" 2>"$W/last.err" ;;
	stackcap) "$STACKCAP" record -F 999 -o "$W/rec" -- "$WORKLOAD" -u "$UNITS" >"$W/last.out" 2>"$W/last.err" ;;
	lttng)
		session_start rec
		as_user "$STACKCAP" record --lttng -F 999 -- "$WORKLOAD" -u "$UNITS" >"$W/last.out" 2>"$W/last.err"
		session_end ;;
	perf) perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$W/rec" -- "$WORKLOAD" -u "$UNITS" >"$W/last.out" 2>"$W/last.err" ;;
	perf-z) perf record -q -z -e cpu-clock -F 999 --call-graph dwarf -o "$W/rec" -- "$WORKLOAD" -u "$UNITS" >"$W/last.out" 2>"$W/last.err" ;;
	esac
	[ $? = 0 ] || die "$kind: $(cat "$W/last.err")"
	case $kind in
	none) samples=0 bytes=0 ;;
	stackcap)
		samples=$(sed -n 's/^stackcap: \([0-9]*\) samples.*/\1/p' "$W/last.err")
		bytes=$(dir_bytes "$W/rec")
		"$SU" stats "$W/rec" >"$W/stats" 2>&1
		blob=$(awk '/^stack bytes \(codec\):/ { print $4 }' "$W/stats") ;;
	lttng)
		"$SU" stats "$W/lt/rec" >"$W/stats" 2>&1 || die "stackunwind stats on the LTTng trace: $(cat "$W/stats")"
		samples=$(awk '/^samples:/ { print $2 }' "$W/stats")
		blob=$(awk '/^stack bytes \(codec\):/ { print $4 }' "$W/stats")
		bytes=$(dir_bytes "$W/lt/rec")
		content=$(content_bytes "$W/lt/rec") ;;
	perf*)
		samples=$(perf report -i "$W/rec" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
		bytes=$(stat -c %s "$W/rec") ;;
	esac
	el=$(sed -n 's/.*elapsed_s=\([0-9.]*\).*/\1/p' "$W/last.out")
	cpu=$(sed -n 's/.* cpu_s=\([0-9.]*\).*/\1/p' "$W/last.out")
	echo "$el $cpu $samples $bytes $content $blob" >>"$out"
}

echo "# part 2: bench/workload -u $UNITS at 999 Hz, $RUNS rounds interleaved"
run_one none "$W/warm"
set -- none stackcap lttng perf perf-z
r=0
while [ $r -lt "$RUNS" ]; do
	r=$((r + 1))
	for k in "$@"; do run_one "$k" "$W/res-$k"; done
	echo "# round $r done" >&2
	# rotate
	first=$1; shift; set -- "$@" "$first"
done
echo
echo "| recorder (999 Hz) | work time, median (s) | slowdown | thread CPU, median (s) | CPU slowdown | samples | bytes/sample on disk | content bytes/sample | codec blob bytes/sample |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for k in none stackcap lttng perf perf-z; do
	awk -v k="$k" '
		function median(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		FNR == NR { be[++nb] = $1; bc[nb] = $2; next }
		{ n++; el[n] = $1; cpu[n] = $2; sam[n] = $3; disk[n] = $3 ? $4 / $3 : 0; cont[n] = $3 ? $5 / $3 : 0; blob[n] = $3 ? $6 / $3 : 0 }
		END {
			label = k == "none" ? "none" : k == "stackcap" ? "stackcap record (standalone CTF)" : k == "lttng" ? "stackcap record --lttng" : k == "perf" ? "perf record --call-graph dwarf" : "perf record -z --call-graph dwarf"
			m = median(el, n); mb = median(be, nb); c = median(cpu, n); cb = median(bc, nb)
			if (k == "none") { printf "| none | %.3f | - | %.3f | - | - | - | - | - |\n", m, c; exit }
			printf "| %s | %.3f | %+.1f%% | %.3f | %+.1f%% | %d | %.1f | %s | %s |\n", label, m, (m / mb - 1) * 100, c, (c / cb - 1) * 100, median(sam, n), median(disk, n), k == "lttng" ? sprintf("%.1f", median(cont, n)) : "-", (k == "lttng" || k == "stackcap") ? sprintf("%.1f", median(blob, n)) : "-"
		}' "$W/res-none" "$W/res-$k"
done
