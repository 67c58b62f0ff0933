#!/bin/sh
# bench/python.sh BUILDDIR: the cost of Python frames (stackcap record
# --python, issue 18).  A Python program spins a fixed amount of work at
# recursion depth 10, 50 and 200; each run is recorded at 999 Hz with the
# in-process hook (what --python uses) without and with --python.
# Reported per depth: the process's CPU time (user + sys, best of 5; GNU
# time's 10 ms resolution: the work takes about 1.3 s), samples, the extra
# CPU time per sample that --python costs (the runtime unwinder in the
# handler plus the writer's code-object descriptions), and bytes per
# sample on disk (part 2, at the end, times the capture path alone).  docs/BENCHMARKS.md keeps the
# figures.  With a second build BASEDIR (e.g. the commit before a change),
# each depth also runs BASEDIR's --python, in the same loop, and prints its
# extra cost per sample beside ours.
# Another CPython: PY_ROOT=DIR PY=/usr/bin/python3.13 bench/python.sh BUILDDIR
# runs PY and our stackcap in the chroot DIR (tests/python-new.sh's,
# /var/cache/stackcap-py/trixie: trixie's python3.13), BUILDDIR, BASEDIR
# and the work directory bound at their own paths (root, a private mount
# namespace).
set -eu
B=$(cd "${1:?usage: bench/python.sh BUILDDIR [BASEDIR]}" && pwd)
BASE=${2:+$(cd "$2" && pwd)}
PY=${PY:-/usr/bin/python3}
PY_ROOT=${PY_ROOT:-}
if [ -n "$PY_ROOT" ] && [ -z "${BENCH_PY_NS:-}" ]; then
	BENCH_PY_NS=1 exec unshare --mount --propagation private -- sh "$0" "$@"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
IN=
if [ -n "$PY_ROOT" ]; then
	for d in "$B" $BASE "$work"; do
		mkdir -p "$PY_ROOT$d"
		mount --bind "$d" "$PY_ROOT$d"
	done
	mountpoint -q "$PY_ROOT/proc" || mount -t proc proc "$PY_ROOT/proc"
	IN="chroot $PY_ROOT"
	trap 'umount "$PY_ROOT$work" && rmdir "$PY_ROOT$work"; rm -rf "$work"' EXIT
fi
echo "$($IN $PY --version 2>&1), in ${PY_ROOT:-/}"
cat >"$work/depth.py" <<'PYEOF'
import sys
def spin(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def down(d):
    if d == 0:
        return sum(spin(20000) for _ in range(1500))
    return down(d - 1)
sys.setrecursionlimit(10000)
down(int(sys.argv[1]))
PYEOF
# run OUTFILE ARGS...: "cpu_seconds samples bytes" of the best (least CPU) of 5.
run() {
	out=$1
	shift
	best=
	for i in 1 2 3 4 5; do
		rm -rf "$work/t.trace"
		/usr/bin/time -f "%U %S" -o "$work/time" "$@" >/dev/null 2>"$work/err"
		cpu=$(awk '{ printf "%.3f", $1 + $2 }' "$work/time")
		s=$(sed -n 's/^stackcap: [^:]*: \([0-9]*\) samples, [0-9]* drops, \([0-9]*\) bytes .*/\1 \2/p' "$work/err")
		if [ -z "$best" ] || awk -v a="$cpu" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$cpu
			echo "$cpu ${s:-0 0}" >"$out"
		fi
	done
}
printf '%-6s %-22s %-22s %-22s %s\n' depth "plain cpu s" "stackcap cpu s/samples" "--python cpu s/samples" \
	"--python extra us/sample; B/sample without, with"
for d in 10 50 200; do
	run "$work/plain" $IN $PY "$work/depth.py" $d
	run "$work/off" $IN "$B/cli/stackcap" record --in-process -F 999 -o "$work/t.trace" -- $PY "$work/depth.py" $d
	run "$work/on" $IN "$B/cli/stackcap" record --python -F 999 -o "$work/t.trace" -- $PY "$work/depth.py" $d
	if [ -n "$BASE" ]; then
		run "$work/base" $IN "$BASE/cli/stackcap" record --python -F 999 -o "$work/t.trace" -- $PY "$work/depth.py" $d
		read -r oc os _ <"$work/off"
		read -r bc bs bb <"$work/base"
		awk -v d=$d -v oc=$oc -v os=$os -v bc=$bc -v bs=$bs -v bb=$bb 'BEGIN {
			printf "%-6d base --python %s/%s: %.1f us extra per sample; %.1f B/sample\n", d, bc, bs,
				bs ? (bc - oc) / bs * 1e6 : 0, bs ? bb / bs : 0 }'
	fi
	read -r pc _ _ <"$work/plain"
	read -r oc os ob <"$work/off"
	read -r nc ns nb <"$work/on"
	awk -v d=$d -v pc=$pc -v oc=$oc -v os=$os -v ob=$ob -v nc=$nc -v ns=$ns -v nb=$nb 'BEGIN {
		printf "%-6d %-22s %-22s %-22s %.1f us; %.1f, %.1f\n", d, pc, oc "/" os, nc "/" ns,
			ns ? (nc - oc) / ns * 1e6 : 0, os ? ob / os : 0, ns ? nb / ns : 0 }'
done

# Part 2: the capture path alone, in the sampled thread.  The program calls
# stackcap_capture() (ctypes) 2,000 times at each depth, in batches of 100
# with a pause between (the writer drains; thread CPU time leaves the pause
# and the writer out), sampling at 1 Hz: median of 5 runs of the thread
# CPU time per call, in-process without --python, with --python, and with
# BASEDIR's --python.  Resolution: far finer than part 1's 10 ms.
cat >"$work/cap.py" <<'PYEOF'
import ctypes, sys, time
cap = ctypes.CDLL(None).stackcap_capture
def down(d):
    if d:
        return down(d - 1)
    t = 0
    for _ in range(20):
        t0 = time.thread_time_ns()
        for _ in range(100):
            cap()
        t += time.thread_time_ns() - t0
        time.sleep(0.03)
    return t / 2000
sys.setrecursionlimit(10000)
print("%.0f" % down(int(sys.argv[1])))
PYEOF
# cap DEPTH BUILD [--python]: median ns per call of 5 runs.
cap() {
	d=$1 b=$2
	shift 2
	for i in 1 2 3 4 5; do
		rm -rf "$work/c.trace"
		$IN "$b/cli/stackcap" record --in-process "$@" -F 1 -o "$work/c.trace" -- $PY "$work/cap.py" $d 2>/dev/null
	done | sort -n | sed -n 3p
}
printf '\n%-6s %-14s %-14s %s\n' depth "no --python" "--python" "${BASE:+--python (BASEDIR)}  [ns per stackcap_capture()]"
for d in 10 50 200; do
	printf '%-6d %-14s %-14s %s\n' $d "$(cap $d "$B")" "$(cap $d "$B" --python)" "$([ -z "$BASE" ] || cap $d "$BASE" --python)"
done
