#!/bin/sh
# Integration: choosing samples by time as a perf user would: --time
# +START,+END (seconds after the first sample) selects exactly the samples
# the absolute times printed by `stacks` put there, and a filter that
# matches nothing says so (times since boot are easy to get wrong).
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"

"$STACKCAP" record -o "$work/single.trace" -- "$TD/tdata-single" 0.5 >/dev/null 2>"$work/rec.err"
"$SU" stacks "$work/single.trace" >"$work/all.out" 2>/dev/null
# The headers' times, in ns, and the count a window of them holds.
awk '/^[^\t].* [0-9]+\.[0-9]+:$/ { t = $NF; sub(/:$/, "", t); split(t, a, "."); print a[1] * 1000000000 + a[2] }' \
	"$work/all.out" >"$work/times"
total=$(wc -l <"$work/times")
check "a trace with samples ($total)" [ "$total" -gt 50 ]
# window A B (seconds after the first sample): the count the times say.
window() {
	awk -v a="$1" -v b="$2" 'NR == 1 { t0 = $1 } { off = ($1 - t0) / 1e9; if (off >= a && off <= b) n++ } END { print n + 0 }' "$work/times"
}
span=$(awk 'NR == 1 { t0 = $1 } END { printf "%.3f", ($1 - t0) / 1e9 }' "$work/times")
a=$(awk -v s="$span" 'BEGIN { printf "%.3f", s / 4 }')
b=$(awk -v s="$span" 'BEGIN { printf "%.3f", s / 2 }')
want=$(window "$a" "$b")
got=$("$SU" stacks --time "+$a,+$b" "$work/single.trace" 2>/dev/null | grep -c '^tdata-single ')
check "--time +$a,+$b: the $want samples the printed times put there ($got)" [ "$got" = "$want" -a "$want" -gt 0 ]
got=$("$SU" folded --time "+$a," "$work/single.trace" 2>/dev/null | awk '{ n += $NF } END { print n + 0 }')
want=$(window "$a" 1e9)
check "--time +$a, (open end), folded: $want samples ($got)" [ "$got" = "$want" ]
"$SU" stacks --time 1.0,2.0 "$work/single.trace" >"$work/none.out" 2>"$work/none.err"
check "--time 1.0,2.0 (not seconds since boot): nothing printed, exit 0" [ $? = 0 -a ! -s "$work/none.out" ]
check "--time 1.0,2.0: stderr says no sample matched" grep -q 'no sample matched --pid/--tid/--time' "$work/none.err"
"$SU" stacks --pid 1 "$work/single.trace" >/dev/null 2>"$work/pid.err"
check "--pid 1: stderr says no sample matched" grep -q 'no sample matched' "$work/pid.err"
"$SU" stacks "$work/single.trace" >/dev/null 2>"$work/plain.err"
check "no filter: no such message" [ "$(grep -c 'no sample matched' "$work/plain.err")" = 0 ]
"$SU" stacks --time +1,2 "$work/single.trace" >/dev/null 2>"$work/mixed.err"
check "--time +1,2 (mixed): a usage error (exit 2)" [ $? = 2 ]

echo "1..$n"
