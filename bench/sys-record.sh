#!/bin/sh
# bench/sys-record.sh BUILD_DIR [OLD_BUILD_DIR]: a system-wide recording of
# a machine that starts hundreds of processes a second (a build server):
# `stackcap record -a` beside `perf record -a --call-graph dwarf`.
#
# The workload, SECS seconds (default 10) on every core: a shell loop of
# short commands (ls, sort | uniq: ~150 processes a second), gcc compiling
# a small file over and over (cc1, as, collect2, ld), xz -6 over 3 MB of
# random bytes, and testdata's tdata-recurse burning a 46-deep chain.
# Each recorder records it `-F 999` for SECS - 1 seconds, started one
# second in; each configuration runs RUNS times (default 3), interleaved
# (one of each per round, a fresh workload each time), so machine noise
# hits all alike:
#   stackcap      BUILD_DIR's stackcap record -a (its default 65 KB window)
#   stackcap-old  OLD_BUILD_DIR's, when given (a before/after)
#   perf          perf record -a -e cpu-clock -F 999 --call-graph dwarf -k
#                 monotonic (8 KiB window: perf's default)
#   perf7         the same by perf 7.x, the strongest perf there is here
#                 (PERF7_SH, default /work/shared/tools/perf7.sh: a trixie
#                 chroot with linux-perf from trixie-backports; its CPU
#                 counts the chroot's start too, a few ms; /sys is bound
#                 into it for perf's PMUs); its file under /tmp, which the
#                 chroot shares.  PERF7_SH=skip: left out
# each under the usual open-file limit (`ulimit -n 1024`), its output on
# TMPDIR (default /tmp).  Reported (medians): samples written, drops
# (records lost: the recorder fell behind, or for stackcap an error
# stopped it: 'stopped' says so), the recorder's CPU (user + system of
# the recorder process alone), per sample, its peak RSS, bytes on disk
# and per sample, and the trace's files.
set -u
B=${1:-}
OLD=${2:-}
if [ -z "$B" ] || [ ! -x "$B/cli/stackcap" ] || [ ! -x "$B/testdata/tdata-recurse" ]; then
	echo "usage: $0 BUILD_DIR [OLD_BUILD_DIR]   (built trees: BUILD_DIR/cli/stackcap)" >&2
	exit 2
fi
B=$(cd "$B" && pwd)
[ -n "$OLD" ] && OLD=$(cd "$OLD" && pwd)
RUNS=${RUNS:-3}
SECS=${SECS:-10}
for t in gcc xz perf; do
	command -v $t >/dev/null 2>&1 || { echo "$0: needs $t (apt-get install gcc xz-utils linux-perf)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "$0: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
w=$(mktemp -d)
trap 'kill $(cat "$w"/wl.pids 2>/dev/null) 2>/dev/null; rm -rf "$w"' EXIT INT TERM

echo 'int f(int x) { return x * 3; } int main(void) { return f(2); }' >"$w/a.c"
head -c 3000000 /dev/urandom >"$w/rand"

# workload SECS: its loops in the background, their pids in wl.pids.
workload() {
	end=$(($(date +%s) + $1))
	: >"$w/wl.pids"
	(while [ "$(date +%s)" -lt $end ]; do ls /usr/lib >/dev/null; sort /etc/services | uniq >/dev/null; done) &
	echo $! >>"$w/wl.pids"
	(while [ "$(date +%s)" -lt $end ]; do gcc -O2 -o "$w/a.out" "$w/a.c"; done) &
	echo $! >>"$w/wl.pids"
	(while [ "$(date +%s)" -lt $end ]; do xz -6 <"$w/rand" >/dev/null; done) &
	echo $! >>"$w/wl.pids"
	"$B/testdata/tdata-recurse" -d 46 "$1" >/dev/null 2>&1 &
	echo $! >>"$w/wl.pids"
}

# one CONF OUT: a recording of the workload; "samples drops cpu_s rss_kb bytes files stopped" to OUT.
one() {
	conf=$1
	out=$2
	rm -rf "$w/rec.trace" "$w/rec.data"
	workload "$SECS"
	sleep 1
	rec=$((SECS - 1))
	case $conf in
	stackcap | stackcap-old)
		bin=$B/cli/stackcap
		[ "$conf" = stackcap-old ] && bin=$OLD/cli/stackcap
		(ulimit -n 1024 && /usr/bin/time -f 'TIME %U %S %M' "$bin" record -a -F 999 -o "$w/rec.trace" -- sleep $rec) \
			>/dev/null 2>"$w/rec.err"
		s=$(sed -n 's/.*kernel copy ([^)]*): \([0-9]*\) samples, \([0-9]*\) drops.*/\1 \2/p' "$w/rec.err")
		stopped=$(grep -c 'stopped by an error' "$w/rec.err")
		bytes=$(du -sb "$w/rec.trace" | cut -f1)
		files=$(ls "$w/rec.trace" | wc -l)
		;;
	perf | perf7)
		p=perf
		[ "$conf" = perf7 ] && p="$PERF7 perf"
		(ulimit -n 1024 && /usr/bin/time -f 'TIME %U %S %M' $p record -q -a -e cpu-clock -F 999 --call-graph dwarf \
			-k monotonic -o "$w/rec.data" -- sleep $rec) >/dev/null 2>"$w/rec.err"
		n=$($p report -i "$w/rec.data" --stats 2>/dev/null | awk '$1 == "SAMPLE" && !s { s = $3 } $1 == "LOST" && !l { l = $3 } END { print s + 0, l + 0 }')
		lost=$(grep -o 'lost [0-9]* chunks' "$w/rec.err" | awk '{ s += $2 } END { print s + 0 }')
		s="${n% *} $((${n#* } + 0))"
		[ "$lost" -gt 0 ] && s="${n% *} ${n#* }+${lost}chunks"
		stopped=0
		bytes=$(stat -c %s "$w/rec.data")
		files=1
		;;
	esac
	t=$(sed -n 's/^TIME //p' "$w/rec.err" | tail -n 1)
	set -- $t
	cpu=$(awk -v u="$1" -v s="$2" 'BEGIN { printf "%.3f", u + s }')
	echo "$s $cpu $3 $bytes $files $stopped" >>"$out"
	while [ -n "$(cat "$w/wl.pids" 2>/dev/null)" ] && kill -0 $(cat "$w/wl.pids") 2>/dev/null; do sleep 0.2; done
	wait 2>/dev/null
}

confs="stackcap perf"
[ -n "$OLD" ] && confs="stackcap stackcap-old perf"
PERF7=${PERF7_SH:-/work/shared/tools/perf7.sh}
if [ "$PERF7" != skip ]; then
	case $w in
	/tmp/*) ;;
	*) echo "$0: perf 7 left out: its chroot shares /tmp only, TMPDIR is ${TMPDIR:-}" >&2; PERF7=skip ;;
	esac
fi
if [ "$PERF7" != skip ]; then
	if [ -x "$PERF7" ] && "$PERF7" perf --version >/dev/null 2>&1; then
		confs="$confs perf7"
		# perf record finds cpu-clock's PMU in sysfs, which the chroot
		# script does not mount (its perf script needs none).
		R7=${PERF7_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/stackcap-perf7}
		mountpoint -q "$R7/sys" || mount --bind /sys "$R7/sys" || { echo "$0: could not mount /sys in $R7" >&2; exit 2; }
	else
		echo "$0: $PERF7 could not run perf 7 (needs root and debootstrap); PERF7_SH=skip leaves it out" >&2
		exit 2
	fi
fi
r=0
while [ $r -lt "$RUNS" ]; do
	for c in $confs; do one $c "$w/$c.out"; done
	r=$((r + 1))
done

med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1), $(date -u '+%Y-%m-%d %H:%M UTC'), TMPDIR ${TMPDIR:-/tmp}"
echo "workload: ${SECS} s, recorded $((SECS - 1)) s at 999 Hz, $RUNS runs each, medians; open files limited to 1024"
printf '%-13s %8s %12s %8s %9s %9s %10s %8s %7s %s\n' config samples drops cpu_s us/sample rss_MB bytes B/sample files stopped
for c in $confs; do
	f=$w/$c.out
	s=$(cut -d' ' -f1 "$f" | med)
	cpu=$(cut -d' ' -f3 "$f" | med)
	rss=$(cut -d' ' -f4 "$f" | med)
	by=$(cut -d' ' -f5 "$f" | med)
	fi=$(cut -d' ' -f6 "$f" | med)
	dr=$(cut -d' ' -f2 "$f" | tr '\n' ' ')
	st=$(cut -d' ' -f7 "$f" | tr '\n' ' ')
	printf '%-13s %8s %12s %8s %9s %9s %10s %8s %7s %s\n' "$c" "$s" "$dr" "$cpu" \
		"$(awk -v c="$cpu" -v s="$s" 'BEGIN { printf "%.1f", s ? c * 1e6 / s : 0 }')" \
		"$(awk -v r="$rss" 'BEGIN { printf "%.0f", r / 1024 }')" "$by" \
		"$(awk -v b="$by" -v s="$s" 'BEGIN { printf "%.0f", s ? b / s : 0 }')" "$fi" "$st"
done
