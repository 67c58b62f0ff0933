#!/bin/sh
# bench/slowdown.sh BUILD_DIR: what sampling costs a CPU-bound program, and
# what each sample costs on disk, stackcap beside perf.
#
# 1. Slowdown.  bench/workload does a fixed amount of work (12..24-frame
#    call chains, a fixed number of leaf rounds) and prints its own elapsed
#    time.  It runs RUNS times under each of: no profiler; `stackcap record
#    -F HZ`; `perf record -e cpu-clock -F HZ --call-graph dwarf`; `perf
#    record -F HZ` without call graphs (the floor: timer interrupt and
#    sample, no stack); for HZ in FREQS; and `stackcap record --zstd` and
#    `perf record -z` at 999 Hz.  The runs are interleaved (one run of
#    every configuration per round, the order rotated each round), so
#    machine noise hits all of them alike.  Reported: median elapsed time
#    of the work and slowdown against no profiler (from the medians, and the
#    median of the per-round ratios), the same for the working thread's CPU
#    time (immune to waiting for a CPU on a busy machine), samples, bytes on
#    disk per sample.
# 2. Bytes per sample on more workloads (testdata programs, xz -T1 and -T2,
#    sqlite3, python3, a Go program), one run per recorder at 999 Hz; with
#    PERF7 set, perf 7 beside Debian's perf (attached with -p to the
#    workload started on this system, its chroot having other binaries;
#    the workload held before its exec until perf 7 is attached, so that
#    perf 7 records the whole run too).  For stackcap --zstd also its
#    fixed part (metadata, process streams: maps, kernel symbols) and the
#    sample streams' bytes per sample without it.
#
# Bytes on disk: for stackcap every file of the trace directory (metadata,
# process streams, sample streams, the summary files); for perf the
# perf.data file.  Samples: stackcap's summary line; perf's SAMPLE events
# (`perf report --stats`).
#
# Environment: RUNS (default 5), UNITS (bench/workload -u, default 8000:
# about 1.6 s here), FREQS (default "99 999 9999"), WINDOW (perf's stack
# window, default 65528: stackcap's default), SIZE_ONLY=1 (part 2
# only), SLOWDOWN_ONLY=1 (part 1 only), PERF7 (a command running perf 7,
# e.g. "/work/shared/tools/perf7.sh perf": part 2 adds its columns; it
# must see TMPDIR), ROWS (an extended regex: the rows of part 2 to run),
# TMPDIR.  perf must be able to
# record (root, or kernel.perf_event_paranoid <= 1).
set -u

B=${1:-}
if [ -z "$B" ] || [ ! -x "$B/bench/workload" ] || [ ! -x "$B/cli/stackcap" ]; then
	echo "usage: $0 BUILD_DIR   (a built tree: BUILD_DIR/bench/workload, BUILD_DIR/cli/stackcap)" >&2
	exit 2
fi
B=$(cd "$B" && pwd)
RUNS=${RUNS:-5}
UNITS=${UNITS:-8000}
FREQS=${FREQS:-"99 999 9999"}
# perf's stack window: stackcap's default, so both copy the same bytes.
WINDOW=${WINDOW:-65528}
STACKCAP="$B/cli/stackcap"
WORKLOAD="$B/bench/workload"
TD="$B/testdata"

die() { echo "bench/slowdown.sh: $*" >&2; exit 1; }
command -v perf >/dev/null || die "perf missing: apt-get install linux-perf (scripts/install-deps.sh)"
command -v xz >/dev/null || die "xz missing: apt-get install xz-utils (scripts/install-deps.sh)"
[ "$RUNS" -ge 1 ] 2>/dev/null || die "RUNS must be a positive integer"

W=$(mktemp -d "${TMPDIR:-/tmp}/stackcap-slowdown.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

perf record -e cpu-clock -F 99 --call-graph dwarf -o "$W/probe.data" -- true >"$W/probe.out" 2>&1 ||
	die "perf record does not work here (run as root or lower kernel.perf_event_paranoid):
$(cat "$W/probe.out")"
rm -f "$W/probe.data"

now_ns() { date +%s%N; }

# Every file of a directory (hidden ones too), in bytes.
dir_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

# perf's sample count in a perf.data file (PERF: the perf command).
perf_samples() {
	${PERF:-perf} report -i "$1" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }'
}

# run_one KIND HZ OUTFILE CMD...: run CMD under recorder KIND at HZ; append
# "elapsed_s total_s samples bytes cpu_s proc_cpu_s" (elapsed and CPU times
# from the workload's own line, "-" for other programs) to OUTFILE; the program's
# stdout is kept in $W/last.out.
run_one() {
	kind=$1 hz=$2 out=$3
	shift 3
	rm -rf "$W/rec"
	sbytes=-
	t0=$(now_ns)
	case $kind in
	none) "$@" >"$W/last.out" 2>"$W/last.err" ;;
	stackcap) "$STACKCAP" record -F "$hz" -o "$W/rec" -- "$@" >"$W/last.out" 2>"$W/last.err" ;;
	stackcap-zstd) "$STACKCAP" record -F "$hz" --zstd -o "$W/rec" -- "$@" >"$W/last.out" 2>"$W/last.err" ;;
	stackcap-inproc) "$STACKCAP" record --in-process -F "$hz" -o "$W/rec" -- "$@" >"$W/last.out" 2>"$W/last.err" ;;
	perf) perf record -q -e cpu-clock -F "$hz" --call-graph "dwarf,$WINDOW" -o "$W/rec" -- "$@" >"$W/last.out" 2>"$W/last.err" ;;
	perf-z) perf record -q -z -e cpu-clock -F "$hz" --call-graph "dwarf,$WINDOW" -o "$W/rec" -- "$@" >"$W/last.out" 2>"$W/last.err" ;;
	perf-nocg) perf record -q -e cpu-clock -F "$hz" -o "$W/rec" -- "$@" >"$W/last.out" 2>"$W/last.err" ;;
	perf7 | perf7-z)
		# Attached: the workload is this system's, perf 7 runs in its
		# chroot.  The workload waits before its exec until perf 7 has
		# written its file (attached: its events are open), so perf 7
		# records the whole run, as the others do.
		rm -f "$W/gate"
		mkfifo "$W/gate" || die "mkfifo failed"
		sh -c 'read -r go <"$0"; exec "$@"' "$W/gate" "$@" >"$W/last.out" 2>"$W/last.err" &
		wp=$!
		$PERF7 record -q $([ "$kind" = perf7-z ] && echo -z) -e cpu-clock -F "$hz" --call-graph "dwarf,$WINDOW" \
			-o "$W/rec" -p "$wp" >/dev/null 2>>"$W/last.err" &
		pp=$!
		i=0
		while [ ! -s "$W/rec" ] && [ $i -lt 300 ] && kill -0 "$pp" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
		sleep 0.5
		echo go >"$W/gate"
		wait "$wp"
		rc=$?
		wait "$pp" || rc=$?
		(exit "$rc") ;;
	esac
	rc=$?
	t1=$(now_ns)
	[ "$rc" = 0 ] || die "$kind -F $hz: '$*' failed (exit $rc): $(cat "$W/last.err")"
	case $kind in
	none) samples=0 bytes=0 ;;
	stackcap*)
		samples=$(sed -n 's/^stackcap: .*[a-z): ]\([0-9]*\) samples, \([0-9]*\) drops.*/\1/p' "$W/last.err")
		drops=$(sed -n 's/^stackcap: .*[a-z): ]\([0-9]*\) samples, \([0-9]*\) drops.*/\2/p' "$W/last.err")
		[ -n "$samples" ] || die "$kind: no summary line: $(cat "$W/last.err")"
		[ "$drops" = 0 ] || echo "bench/slowdown.sh: warning: $kind -F $hz '$*': $drops drops" >&2
		bytes=$(dir_bytes "$W/rec")
		# The sample streams alone (the rest: metadata, process streams).
		sbytes=$(find "$W/rec" -type f -name 'samples-*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }') ;;
	perf7*)
		samples=$(PERF=$PERF7 perf_samples "$W/rec")
		[ -n "$samples" ] || die "$kind: cannot count the samples of $W/rec"
		bytes=$(stat -c %s "$W/rec") ;;
	perf*)
		samples=$(perf_samples "$W/rec")
		[ -n "$samples" ] || die "$kind: cannot count the samples of $W/rec"
		bytes=$(stat -c %s "$W/rec") ;;
	esac
	rm -rf "$W/rec"
	el=$(sed -n 's/.*elapsed_s=\([0-9.]*\).*/\1/p' "$W/last.out")
	cpu=$(sed -n 's/.* cpu_s=\([0-9.]*\).*/\1/p' "$W/last.out")
	pcpu=$(sed -n 's/.*proc_cpu_s=\([0-9.]*\).*/\1/p' "$W/last.out")
	echo "${el:--} $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }') $samples $bytes ${cpu:--} ${pcpu:--} $sbytes" >>"$out"
}

CPU_MODEL=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo "# bench/slowdown.sh, $(date +%Y-%m-%d)"
echo "# machine: $(nproc) CPUs, $CPU_MODEL; $(uname -sr); $(perf --version)"
echo "# kernel.perf_event_max_sample_rate $(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo '?')"
RATE0=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo '?')

# ---- 1. slowdown ---------------------------------------------------------
if [ "${SIZE_ONLY:-0}" != 1 ]; then
	# Configurations: "name kind hz", one per line, baseline first.
	{
		echo "none none 0"
		for hz in $FREQS; do
			echo "stackcap-$hz stackcap $hz"
			[ "$hz" = 999 ] && echo "stackcap-zstd-999 stackcap-zstd 999"
			echo "stackcap-inproc-$hz stackcap-inproc $hz"
			echo "perf-$hz perf $hz"
			[ "$hz" = 999 ] && echo "perf-z-999 perf-z 999"
			echo "perf-nocg-$hz perf-nocg $hz"
		done
	} >"$W/configs"
	K=$(wc -l <"$W/configs")
	mkdir -p "$W/res"
	echo "# part 1: bench/workload -u $UNITS, $RUNS rounds of $K configurations, interleaved"
	run_one none 0 "$W/warmup" "$WORKLOAD" -u "$UNITS" # warm caches, discarded
	want=$(sed 's/elapsed_s=[^ ]* cpu_s=[^ ]* proc_cpu_s=[^ ]* //' "$W/last.out")
	r=0
	while [ "$r" -lt "$RUNS" ]; do
		r=$((r + 1))
		# Rotate the order: round r starts at configuration r mod K.
		start=$(( (r - 1) % K + 1 ))
		{ tail -n +"$start" "$W/configs"; head -n $((start - 1)) "$W/configs"; } >"$W/order"
		while read -r name kind hz; do
			run_one "$kind" "$hz" "$W/res/$name" "$WORKLOAD" -u "$UNITS"
			got=$(sed 's/elapsed_s=[^ ]* cpu_s=[^ ]* proc_cpu_s=[^ ]* //' "$W/last.out")
			[ "$got" = "$want" ] || die "$name: the workload did different work ('$got', want '$want')"
			# Remember the round, to pair each run with its round's baseline.
			sed -i '$ s/$/ '"$r"'/' "$W/res/$name"
		done <"$W/order"
		echo "# round $r of $RUNS done" >&2
	done

	echo
	echo "| profiler | -F | work time, median (s) | slowdown: medians, paired | thread CPU, median (s) | CPU slowdown, paired | command time, median (s) | samples | samples / (CPU s x Hz) | bytes/sample | CPU of other threads (ms) |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	while read -r name kind hz; do
		awk -v name="$name" -v kind="$kind" -v hz="$hz" '
			function median(a, n,   i, j, t) {
				for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			FNR == NR { base[$NF] = $1; basec[$NF] = $5; be[++nb] = $1; next }
			{
				n++; el[n] = $1; tot[n] = $2; sam[n] = $3; bps[n] = $3 ? $4 / $3 : 0
				rate[n] = $5 > 0 && hz > 0 ? $3 / ($5 * hz) : 0
				ratio[n] = $1 / base[$NF]; cpu[n] = $5; cratio[n] = $5 / basec[$NF]
				other[n] = $6 - $5
			}
			END {
				m = median(el, n); mb = median(be, nb)
				label = kind == "none" ? "none" : kind == "stackcap" ? "stackcap record" : kind == "stackcap-inproc" ? "stackcap record --in-process" : kind == "stackcap-zstd" ? "stackcap record --zstd" : kind == "perf" ? "perf record --call-graph dwarf" : kind == "perf-z" ? "perf record -z --call-graph dwarf" : "perf record (no call graph)"
				if (kind == "none")
					printf "| %s | - | %.3f | - | %.3f | - | %.3f | - | - | - | %.0f |\n", label, m, median(cpu, n), median(tot, n), median(other, n) * 1000
				else
					printf "| %s | %d | %.3f | %+.1f%%, %+.1f%% | %.3f | %+.1f%% | %.3f | %d | %.0f%% | %s | %.0f |\n", label, hz, m, (m / mb - 1) * 100, (median(ratio, n) - 1) * 100, median(cpu, n), (median(cratio, n) - 1) * 100, median(tot, n), median(sam, n), median(rate, n) * 100, kind == "perf-nocg" ? sprintf("(%.0f)", median(bps, n)) : sprintf("%.1f", median(bps, n)), median(other, n) * 1000
			}' "$W/res/none" "$W/res/$name"
	done <"$W/configs"
	echo
	echo "work time: the workload's own CLOCK_MONOTONIC time around its work (profiler start-up and exit not"
	echo "counted); slowdown from the medians, and the median over rounds of (run / that round's baseline)."
	echo "thread CPU: the working thread's CPU time (signal handlers and kernel work on its behalf included);"
	echo "its slowdown does not count time the thread waited for a CPU, so it resists other load on the machine."
	echo "command time: the whole command, profiler start-up and final writing included."
	echo "samples / (CPU s x Hz): samples over the working thread's CPU time times the frequency (100%: the rate held)."
	echo "CPU of other threads: process CPU minus the working thread's during the work (stackcap's writer thread;"
	echo "perf records from another process, whose CPU is not counted here)."
	echo "bytes/sample of perf without call graph (in parentheses): no stack in it, for scale only."
fi

# ---- 2. bytes per sample on more workloads ---------------------------------
if [ "${SLOWDOWN_ONLY:-0}" != 1 ]; then
	# A few MB of text for xz: pseudo-random words, the same every time.
	awk 'BEGIN { srand(42); split("the of and to in is that for it as with was on be by at this from or an are not have which but", w, " ");
		for (i = 0; i < 600000; i++) { printf "%s%s", w[int(rand() * 25) + 1], (i % 13 == 12) ? "\n" : " "; if (i % 97 == 0) printf "%d ", int(rand() * 100000) } }' >"$W/xz-input"
	echo
	echo "# part 2: bytes per sample at 999 Hz, one run per recorder ($(($(stat -c %s "$W/xz-input") / 1024)) KiB of text for xz)"
	echo
	# sqlite3: a query mix (recursive CTE, index, sort, join); python3:
	# tests/python/chains.py; Go: testdata/go, built with cgo.
	{
		echo "CREATE TABLE t(a INTEGER, b TEXT);"
		echo "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 200000)"
		echo "  INSERT INTO t SELECT x, printf('%08x-%d', x * 2654435761 % 4294967296, x) FROM c;"
		echo "CREATE INDEX tb ON t(b);"
		echo "SELECT count(*), sum(length(b)) FROM (SELECT b FROM t ORDER BY b DESC);"
	} >"$W/q.sql"
	SRC=$(cd "$(dirname "$0")/.." && pwd)
	(cd "$SRC/testdata/go" && GOCACHE="$W/gocache" go build -o "$W/gowork" .) >"$W/go.err" 2>&1 ||
		die "go build of testdata/go failed (apt-get install golang-go): $(head -n 3 "$W/go.err")"
	KINDS="stackcap perf stackcap-zstd perf-z${PERF7:+ perf7 perf7-z}"
	echo "| workload | stackcap samples | stackcap B/sample | perf samples | perf B/sample | perf / stackcap | stackcap --zstd B/sample | --zstd fixed part (B) | --zstd sample streams B/sample | perf -z B/sample | perf -z / stackcap --zstd |${PERF7:+ perf 7 samples | perf 7 B/sample | perf 7 -z B/sample | perf 7 -z / stackcap --zstd |}"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|${PERF7:+---:|---:|---:|---:|}"
	while IFS='|' read -r label cmd; do
		echo "$label" | grep -q -E "${ROWS:-.}" || continue
		: >"$W/sz"
		for kind in $KINDS; do
			: >"$W/one"
			# shellcheck disable=SC2086
			run_one "$kind" 999 "$W/one" $cmd
			echo "$kind $(cat "$W/one")" >>"$W/sz"
		done
		awk -v label="$label" '
			{ s[$1] = $4; b[$1] = $5; sb[$1] = $8 }
			function bps(k) { return s[k] ? b[k] / s[k] : 0 }
			END {
				z = "stackcap-zstd"
				printf "| %s | %d | %.1f | %d | %.0f | %.0fx | %.1f | %d | %.1f | %.1f | %.1fx |", label,
					s["stackcap"], bps("stackcap"), s["perf"], bps("perf"), bps("stackcap") ? bps("perf") / bps("stackcap") : 0,
					bps(z), b[z] - sb[z], s[z] ? sb[z] / s[z] : 0,
					bps("perf-z"), bps(z) ? bps("perf-z") / bps(z) : 0
				if ("perf7" in s)
					printf " %d | %.0f | %.1f | %.1fx |", s["perf7-z"], bps("perf7"), bps("perf7-z"),
						bps(z) ? bps("perf7-z") / bps(z) : 0
				printf "\n"
			}' "$W/sz"
	done <<EOF
bench/workload -u $UNITS (12..24 frames)|$WORKLOAD -u $UNITS
tdata-single 1 (6 frames)|$TD/tdata-single 1
tdata-threads -t 4 0.5 (4 threads)|$TD/tdata-threads -t 4 0.5
tdata-recurse -d 600 0.5 (52 KB stack)|$TD/tdata-recurse -d 600 0.5
tdata-dlopen --reload 1|$TD/tdata-dlopen --reload 1
tdata-nofp 1 (no frame pointer)|$TD/tdata-nofp 1
xz -9 -T1 (Debian's, liblzma.so)|xz -9 -T1 -c -k $W/xz-input
xz -6 -T2 (two worker threads)|xz -6 -T2 -c -k $W/xz-input
sqlite3 (CTE, index, sort)|sqlite3 :memory: -init $W/q.sql .quit
python3 (tests/python/chains.py sort)|/usr/bin/python3 $SRC/tests/python/chains.py sort 1
Go (testdata/go, cgo, goroutines)|$W/gowork 4000
EOF
	echo
	echo "perf copies a $WINDOW-byte stack window per sample (WINDOW: stackcap's default, so both copy the same"
	echo "stack) and stores all of it; stackcap stores the F2-filtered, run-length and delta-encoded words."
fi

RATE1=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo '?')
[ "$RATE0" = "$RATE1" ] ||
	echo "# warning: the kernel lowered perf_event_max_sample_rate from $RATE0 to $RATE1 during the run (interrupts took too long)"
exit 0
