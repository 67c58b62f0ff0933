#!/bin/sh
# bench/perf-vs.sh BUILD_DIR [SECONDS]: perf.data files read by stackunwind
# beside the strongest peers: Debian's perf (6.1, libunwind), perf 7.x
# (libdw, its Dwfl kept between samples) and samply (framehop), in one run.
#
# Records with `perf record -k monotonic -e cpu-clock -F 999 --call-graph
# dwarf`: a 48-frame C chain (tdata-recurse -d 46, SECONDS of CPU), sqlite3
# (sorting and grouping in memory), python3 (pure Python and zlib) and
# xz -T2 (two threads, four blocks); with PERF_VS_BIG=1 also a ~1 GB
# perf.data (tdata-threads -t 2 at 1999 Hz for PERF_VS_BIG_SECONDS, default
# 32: ~128,000 samples of ~8.4 KB; off by default: the file takes 1 GB of
# /tmp and a few minutes).  Then times, on each file, whole process, warm (a
# first run fills the page cache), median of 3, everything under nice:
#   stackunwind stacks -j 1, stacks -j 2, folded -j 1, folded -j 2 (-j 2:
#     the default on two cores; a perf.data of 4 MB or more is then also
#     mapped ahead on a thread of its own, trace/perf-ahead.h) (their first run also
#     keeps the kernel's symbols and each binary's answers under the cache
#     directory: these are the runs after it), then stacks and folded -j 1
#     --no-cache (every run cold: nothing kept, nothing read), and a
#     first run: folded, the default -j, an empty cache directory each
#     time (what a first look at a new recording costs: this machine's
#     kernel symbols read, the debug files inflated and kept);
#   perf script (Debian's perf, on this machine);
#   perf 7 script --symfs=/hostroot, inside the chroot of PERF7_SH
#     (default /work/shared/tools/perf7.sh: trixie with linux-perf 7.x from
#     trixie-backports and samply from sid; the time is taken inside the
#     chroot, so the chroot's own start is not counted);
#   samply import --save-only (it unwinds and names nothing: names come
#     later, in the browser), run on this machine's files through the
#     chroot's dynamic loader and libraries (inside the chroot it would
#     unwind with the chroot's libc, not the recorded one);
# and prints each time and perf 7's time divided by it (how many times
# faster than perf 7 script).  Then the profiles for a viewer: stackunwind
# export --format speedscope and pprof (default -j) beside samply import's
# time; on the ~1 GB file the kernel's part alone (bench/page-floor: map
# the file, load a byte a page, give it back).  Then the same chain recorded by stackcap
# record at 9999 Hz (our own trace): samples per second of stacks -j 1,
# -j 2 and folded.  PERF7_SH=skip leaves perf 7 and samply out;
# PERF_VS_FILES="chain big" (say) times only those files; after them, the
# same files copied with cp (a perf.data read later or elsewhere: the
# page cache then in large folios; PERF_VS_COPY=0 leaves it out); PERF_VS_REPEAT=N
# times N runs in a row for each figure (short runs: the shell counts CPU
# in 10 ms steps).
# Numbers go to docs/BENCHMARKS.md.  The machine may be shared: ratios in
# one run mean more than absolute times.
set -eu
B=${1:?usage: bench/perf-vs.sh BUILD_DIR [SECONDS]}
SECS=${2:-5}
B=$(cd "$B" && pwd)
SU="$B/cli/stackunwind"
STACKCAP="$B/cli/stackcap"
PERF7=${PERF7_SH:-/work/shared/tools/perf7.sh}
R7=${PERF7_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/stackcap-perf7}
for t in perf sqlite3 xz /usr/bin/python3; do
	command -v "$t" >/dev/null || { echo "bench/perf-vs.sh: $t missing: scripts/install-deps.sh installs it" >&2; exit 1; }
done
if [ "$PERF7" != skip ]; then
	[ -x "$PERF7" ] || { echo "bench/perf-vs.sh: $PERF7 missing (the trixie chroot with perf 7 and samply); PERF7_SH=PATH names it, PERF7_SH=skip leaves them out" >&2; exit 1; }
	"$PERF7" perf --version >/dev/null || { echo "bench/perf-vs.sh: $PERF7 could not set up perf 7 (needs root and debootstrap)" >&2; exit 1; }
fi
w=$(mktemp -d /tmp/perf-vs.XXXXXX)
trap 'rm -rf "$w"' EXIT
# Inflated debug files kept in a private cache (debuginfo/inflate-cache.h).
export STACKCAP_CACHE_DIR="$w/cache"

# PERF_VS_FILES="chain big": only these of the files (chain sqlite3 python3 xz big).
want() { case " ${PERF_VS_FILES:-chain sqlite3 python3 xz big} " in *" $1 "*) return 0;; esac; return 1; }
precord() {
	name=$1 hz=$2; shift 2
	nice perf record -q -k monotonic -e cpu-clock -F "$hz" --call-graph dwarf -o "$w/$name.data" -- "$@" >/dev/null 2>&1
}
echo "recording..." >&2
want chain && precord chain 999 "$B/testdata/tdata-recurse" -d 46 "$SECS"
want sqlite3 && precord sqlite3 999 sqlite3 :memory: "
	CREATE TABLE t(a INTEGER, b TEXT);
	WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 600000)
	INSERT INTO t SELECT (x * 7919) % 100003, hex(x * 2654435761) FROM c;
	CREATE INDEX ia ON t(a);
	SELECT count(*), sum(length(b)) FROM (SELECT a, group_concat(b) AS b FROM t GROUP BY a ORDER BY b);"
cat >"$w/work.py" <<'EOF'
import sys, zlib
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
d = {}
for i in range(300000):
    d[str(i)] = i * i
data = " ".join(d).encode() * 4
print(fib(25), len(d), len(zlib.compress(data, 9)), file=sys.stderr)
EOF
want python3 && precord python3 999 /usr/bin/python3 "$w/work.py"
head -c 4000000 /dev/urandom | od -An -tx1 >"$w/input.txt"
want xz && precord xz 999 xz -T2 --block-size=3MiB -6 -c "$w/input.txt"
FILES=
for p in chain sqlite3 python3 xz; do want $p && FILES="$FILES $p"; done
if [ "${PERF_VS_BIG:-0}" = 1 ] && want big; then
	echo "recording the ~1 GB file (${PERF_VS_BIG_SECONDS:-32} s of CPU on two threads)..." >&2
	precord big 1999 "$B/testdata/tdata-threads" -t 2 "${PERF_VS_BIG_SECONDS:-32}"
	FILES="$FILES big"
fi

# One run of a command, timed by the shell that starts it (in the chroot
# for perf 7): "WALL_MS CPU_MS", CPU the command's user + system time
# (steadier than wall time on a busy machine).
# PERF_VS_REPEAT=N: the command N times in a row, each time the total / N
# (the shell's times are in 10 ms steps: a 20 ms run needs repeats).
REP=${PERF_VS_REPEAT:-1}
ONE='t0=$(date +%s%N); i=0; while [ $i -lt '"$REP"' ]; do nice "$@" >/dev/null 2>&1; i=$((i + 1)); done
t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); times'
parse_one() {
	awk -v rep="$REP" 'NR == 1 { w = $1 } NR == 3 { c = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); c += a[1] * 60 + a[2] } }
		END { printf "%d %d\n", w / rep, c * 1000 / rep }'
}
one() { sh -c "$ONE" sh "$@" | parse_one; }
one7() { "$PERF7" sh -c "$ONE" sh "$@" | parse_one; }
# timed ONE CMD...: a warm run, then three: "WALL CPU" medians, in seconds.
timed() {
	how=$1; shift
	$how "$@" >/dev/null
	for i in 1 2 3; do $how "$@"; done >"$w/runs"
	echo "$(cut -d' ' -f1 "$w/runs" | sort -n | sed -n 2p) $(cut -d' ' -f2 "$w/runs" | sort -n | sed -n 2p)" |
		awk '{ printf "%.3f %.3f\n", $1 / 1000, $2 / 1000 }'
}
# A first run: the command with a new, empty cache directory (under $w,
# removed after each figure).
printf '#!/bin/sh\nSTACKCAP_CACHE_DIR=$(mktemp -d "%s/first.XXXXXX") exec "$@"\n' "$w" >"$w/first-run"
chmod +x "$w/first-run"
# samply from the chroot, run here (a script, so that nice runs it).
printf '#!/bin/sh\nexec "%s" --library-path "%s" "%s" "$@"\n' "$R7/lib64/ld-linux-x86-64.so.2" \
	"$R7/usr/lib/x86_64-linux-gnu" "$R7/usr/bin/samply" >"$w/samply"
chmod +x "$w/samply"

echo "machine: $(nproc) cores, $(sed -n 's/^model name[ 	]*: //p' /proc/cpuinfo | head -n 1), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "perf 6: $(perf version)$([ "$PERF7" = skip ] || echo ", perf 7: $("$PERF7" perf version), $("$w/samply" --version)")"
echo "seconds, median of 3: wall, then CPU (user + system); in brackets perf 7 script's time / this one"
hdr() { printf '%-8s %-4s %8s %7s %7s %17s %17s %17s %17s %17s %8s %17s %17s %17s %17s\n' file what samples MB frames "stacks -j 1" "stacks -j 2" "folded -j 1" "folded -j 2" "perf 6 script" "perf 7" "samply import" "stacks no-cache" "folded no-cache" "folded first"; }
hdr
for p in $FILES; do
	f="$w/$p.data"
	n=$("$SU" stats "$f" 2>/dev/null | sed -n 's/^samples: *//p')
	mb=$(stat -c %s "$f" | awk '{ printf "%.0f", $1 / 1e6 }')
	fr=$("$SU" stacks -j 1 "$f" 2>/dev/null | awk '/^\t/ { f++ } /^[^\t ]/ { s++ } END { printf "%.1f", s ? f / s : 0 }')
	ts=$(timed one "$SU" stacks -j 1 "$f")
	t2=$(timed one "$SU" stacks -j 2 "$f")
	tf=$(timed one "$SU" folded -j 1 "$f")
	tf2=$(timed one "$SU" folded -j 2 "$f")
	# Cold: nothing kept from an earlier run (no kernel symbols, no
	# answers, debug files inflated again).
	tsc=$(timed one "$SU" stacks -j 1 --no-cache "$f")
	tfc=$(timed one "$SU" folded -j 1 --no-cache "$f")
	tfr=$(timed one "$w/first-run" "$SU" folded "$f")
	rm -rf "$w"/first.*
	tp=$(timed one perf script -i "$f")
	t7="0 0" tsa="0 0"
	if [ "$PERF7" != skip ]; then
		t7=$(timed one7 perf script --symfs=/hostroot -i "$f")
		tsa=$(timed one "$w/samply" import "$f" --save-only -o "$w/samply.json.gz")
	fi
	[ "$p" = big ] && t7big=${t7%% *}
	# Profiles for a viewer: ours (speedscope, pprof) beside samply's
	# import (a profile for the Firefox profiler, its frames unnamed).
	tes=$(timed one "$SU" export --format speedscope -o "$w/x.json" "$f")
	tep=$(timed one "$SU" export --format pprof -o "$w/x.pb" "$f")
	echo "$p $tes $tep $tsa" >>"$w/profiles"
	for k in 1 2; do
		echo "$ts $t2 $tf $tf2 $tp $t7 $tsa $tsc $tfc $tfr" | awk -v p="$p" -v n="$n" -v mb="$mb" -v fr="$fr" -v k="$k" '
		function c(t) { return sprintf("%.3f (%5.1fx)", t, (t > 0 && t7 > 0) ? t7 / t : 0) }
		{ t7 = $(10 + k)
		  printf "%-8s %-4s %8d %7d %7s %17s %17s %17s %17s %17s %8.3f %17s %17s %17s %17s\n", p, (k == 1 ? "wall" : "cpu"), n, mb, fr,
			c($k), c($(2 + k)), c($(4 + k)), c($(6 + k)), c($(8 + k)), t7, c($(12 + k)), c($(14 + k)), c($(16 + k)), c($(18 + k)) }'
	done
done

echo "profiles, the default -j: seconds, median of 3, wall then CPU; in brackets samply import's time / this one"
printf '%-8s %-4s %17s %17s %13s\n' file what "speedscope" "pprof" "samply import"
while read -r p es_w es_c ep_w ep_c sa_w sa_c; do
	for k in 1 2; do
		echo "$es_w $es_c $ep_w $ep_c $sa_w $sa_c" | awk -v p="$p" -v k="$k" '
		function c(t) { return sprintf("%.3f (%5.1fx)", t, (t > 0 && ts > 0) ? ts / t : 0) }
		{ ts = $(4 + k)
		  printf "%-8s %-4s %17s %17s %13.3f\n", p, (k == 1 ? "wall" : "cpu"), c($k), c($(2 + k)), ts }'
	done
done <"$w/profiles"

# The floor under the ~1 GB file's times: the kernel's part of lending
# its page cache through a mapping (bench/page-floor: map, load a byte a
# page, give back 2 MB at a time; no parsing), one thread, right after
# the timings above (the file as they found it).  Two threads sharing it
# perfectly take half: with perf record's single 4 KB pages that half
# alone is about perf 7's time / 20 on this 2-vCPU machine.
if [ -n "${t7big:-}" ] && [ -x "$B/bench/page-floor" ]; then
	for i in 1 2 3; do "$B/bench/page-floor" "$w/big.data"; done | sort -n -k 2 | sed -n 2p |
		awk -v t7="$t7big" '{ printf "big: the page cache alone (bench/page-floor, one thread): %.3f s wall, %.3f s CPU; half of it %.3f s; perf 7 / 20 = %.3f s\n", $1, $2, $2 / 2, t7 / 20 }'
fi

# The same files copied with cp, as a perf.data read later or elsewhere is
# cached: cp's writes leave the page cache in 64 KB folios where the
# kernel and filesystem have large folios (ext4 on 6.18; a read from disk
# through stackunwind's mapping, 2 MB ones), which map 2-3x faster than the
# single pages perf record's writes leave (trace/perf-ahead.h).  This VM
# pages out what was not touched for a minute (DAMON): each file is timed
# right after it is copied.  PERF_VS_COPY=0 leaves this out.
if [ "${PERF_VS_COPY:-1}" = 1 ]; then
	echo "the same files after cp (the page cache in 64 KB folios where the kernel has large folios): seconds, median of 3"
	printf '%-8s %-4s %17s %17s %17s %8s\n' file what "stacks -j 2" "folded -j 1" "folded -j 2" "perf 7"
	for p in $FILES; do
		f="$w/$p.copy.data"
		cp "$w/$p.data" "$f"
		sync "$f" # its writeback not in the timings
		t2=$(timed one "$SU" stacks -j 2 "$f")
		tf=$(timed one "$SU" folded -j 1 "$f")
		tf2=$(timed one "$SU" folded -j 2 "$f")
		t7="0 0"
		[ "$PERF7" = skip ] || t7=$(timed one7 perf script --symfs=/hostroot -i "$f")
		for k in 1 2; do
			echo "$t2 $tf $tf2 $t7" | awk -v p="$p" -v k="$k" '
			function c(t) { return sprintf("%.3f (%5.1fx)", t, (t > 0 && t7 > 0) ? t7 / t : 0) }
			{ t7 = $(6 + k)
			  printf "%-8s %-4s %17s %17s %17s %8.3f\n", p, (k == 1 ? "wall" : "cpu"), c($k), c($(2 + k)), c($(4 + k)), t7 }'
		done
		rm -f "$f"
	done
fi

# Our own trace of the same chain.
want chain || exit 0
nice "$STACKCAP" record -F 9999 -o "$w/chain.trace" -- "$B/testdata/tdata-recurse" -d 46 "$SECS" 2>/dev/null
n=$("$SU" stats "$w/chain.trace" 2>/dev/null | sed -n 's/^samples: *//p')
echo "stackcap trace of the chain (9999 Hz): $n samples; samples per second (seconds), median of 3"
for c in "stacks -j 1" "stacks -j 2" "folded -j 1" "folded -j 2"; do
	set -- $(timed one "$SU" $c "$w/chain.trace")
	# (awk reads a bare > in printf's arguments as a redirection)
	awk -v c="$c" -v n="$n" -v t="$1" -v u="$2" 'BEGIN {
		printf "  %-12s %9.0f/s wall (%.3f s), %9.0f/s CPU (%.3f s)\n", c, (t > 0 ? n / t : 0), t, (u > 0 ? n / u : 0), u }'
done
"$SU" stacks -j 1 "$w/chain.trace" >"$w/j1.out" 2>/dev/null
"$SU" stacks -j 2 "$w/chain.trace" >"$w/j2.out" 2>/dev/null
cmp -s "$w/j1.out" "$w/j2.out" && echo "  -j 1 and -j 2 outputs identical" || echo "  WARNING: -j 1 and -j 2 outputs differ"
