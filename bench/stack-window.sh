#!/bin/sh
# bench/stack-window.sh BUILD_DIR: the kernel copy's stack window
# (--stack-size) against truncation, bytes and the recorder's cost.
#
# Each workload is recorded by `stackcap record -F 999 --stack-size W` for
# each W in WINDOWS; reported per (workload, W): samples; samples stackunwind
# could not unwind to their end because the window cut them ("truncated" in
# its summary: the copy filled the window and the unwinder ran out of it);
# bytes on disk per sample; the recorder's own CPU time per sample (its
# summary line: its rusage, not the program's), all of it and while
# sampling only (without the fixed costs of the start and the end).
# Workloads: the testdata programs, `bzip2 -9`, a `sqlite3` query mix
# (recursive CTE, index, sort, join) and `xz -T2` (threads whose stacks
# lie below other readable memory).
#
# Environment: WINDOWS (default "8192 16384 24576 32768 49152 65528"),
# ONLY (an extended regex: the workloads whose names match), STACKCAP (the
# stackcap binary to measure, default BUILD_DIR's), TMPDIR.  The recorder
# must be allowed perf events.
set -u
B=${1:-}
if [ -z "$B" ] || [ ! -x "$B/cli/stackcap" ] || [ ! -x "$B/cli/stackunwind" ]; then
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
fi
B=$(cd "$B" && pwd)
TD=$B/testdata
WINDOWS=${WINDOWS:-"8192 16384 24576 32768 49152 65528"}
ONLY=${ONLY:-.}
STACKCAP=${STACKCAP:-$B/cli/stackcap}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c 8000000 /dev/urandom | od -x >"$work/in.txt"
head -c 4000000 "$work/in.txt" >"$work/xz.txt"
{
	echo "CREATE TABLE t(a INTEGER, b TEXT);"
	echo "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 200000)"
	echo "  INSERT INTO t SELECT x, printf('%08x-%d', x * 2654435761 % 4294967296, x) FROM c;"
	echo "CREATE INDEX tb ON t(b);"
	echo "SELECT count(*), sum(length(b)) FROM (SELECT b FROM t ORDER BY b DESC);"
	echo "SELECT count(*) FROM t t1 JOIN t t2 ON t1.a = t2.a + 1 WHERE t1.b > t2.b;"
} >"$work/q.sql"

# NAME|COMMAND
{
	echo "single|$TD/tdata-single 1"
	echo "threads|$TD/tdata-threads -t 2 0.5"
	echo "recurse-200|$TD/tdata-recurse -d 200 0.5"
	echo "recurse-1000|$TD/tdata-recurse -d 1000 0.5"
	echo "nofp|$TD/tdata-nofp 0.5"
	echo "sigalt|$TD/tdata-sigalt 0.5"
	echo "inline|$TD/tdata-inline 0.5"
	echo "dlopen|$TD/tdata-dlopen 0.5"
	echo "demo|$TD/tdata-demo 1"
	echo "bzip2-9|bzip2 -9 -c $work/in.txt"
	echo "sqlite3|sqlite3 :memory: -init $work/q.sql .quit"
	echo "xz-T2|xz -T2 -3 -c $work/xz.txt"
} | grep -E "^($ONLY)[|]" >"$work/list"
printf '%-13s %6s %8s %10s %9s %10s %15s\n' workload window samples truncated B/sample "us/sample" "while sampling"
while IFS='|' read -r name cmd; do
	for w in $WINDOWS; do
		t=$work/$name-$w.trace
		# shellcheck disable=SC2086 # the command's words
		"$STACKCAP" record -F 999 --stack-size "$w" -o "$t" -- $cmd >/dev/null 2>"$work/rec.err" </dev/null
		s=$(sed -n 's/.*: \([0-9]*\) samples,.*/\1/p' "$work/rec.err" | head -n 1)
		bps=$(sed -n 's/.*(\([0-9.]*\) B\/sample).*/\1/p' "$work/rec.err" | head -n 1)
		us=$(sed -n 's/.*recorder CPU [0-9.]* s (\([0-9.]*\) us\/sample.*/\1/p' "$work/rec.err")
		ws=$(sed -n 's/.*recorder CPU .*us\/sample, \([0-9.]*\) while sampling.*/\1/p' "$work/rec.err")
		tr=$("$B/cli/stackunwind" stacks "$t" 2>&1 >/dev/null | sed -n 's/.* \([0-9]*\) truncated.*/\1/p')
		printf '%-13s %6s %8s %10s %9s %10s %15s\n' "$name" "$w" "${s:-?}" "${tr:-?}" "${bps:-?}" "${us:-?}" "${ws:-?}"
		rm -rf "$t"
	done
done <"$work/list"
