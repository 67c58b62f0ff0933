#!/bin/sh
# Integration: node --perf-basic-prof under both samplers (the kernel copy
# and --in-process).  V8 maps the builtins embedded in node's code a second
# time, beside its JIT code ("short builtin calls"), where the loader's
# list (dl_iterate_phdr) does not see them: the in-process hook once left
# that mapping out of its maps, so the filter zeroed every return address
# into it and samples there had no map (a quarter to a third of them,
# [unknown]/[no-map]), and the stacks through it were cut.  tests/node-hot.js sorts with a JS comparator: the
# comparator (named from /tmp/perf-PID.map) is called by V8's sort
# builtins.  Checked: few samples without a map, the comparator named,
# its caller a frame of the second mapping with the file's name, and its
# stacks unwound to their outermost frame.
TAP_NO_BABELTRACE2=1
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
need "nodejs" node
HOT="$top_srcdir/tests/node-hot.js"

for s in $SAMPLERS; do
	# shellcheck disable=SC2046
	record "$s" $(sampler_opts "$s") -- node --perf-basic-prof "$HOT" >"$work/$s.out"
	check "$s: stackcap record node --perf-basic-prof exits 0, node sorted (exit $(rc "$s"))" \
		sh -c "[ $(rc "$s") = 0 ] && grep -qx sorted '$work/$s.out'"
	# What V8 mapped a second time: "second mapping PATH OFFSET LO-HI".
	set -- $(grep '^second mapping ' "$work/$s.out" | head -n 1)
	if [ $# != 5 ]; then
		not_ok_show "$s: node maps part of its code a second time (V8's builtins: the case under test; V8 does it with >= 4 GB of memory)" "$work/$s.out"
		continue
	fi
	path=$3 lo=${5%-*} hi=${5#*-}
	ok "$s: node maps $path a second time (offset 0x$4, $5)"

	"$SU" folded --per-process "$work/$s.trace" >"$work/$s.folded" 2>"$work/$s.ferr"
	"$SU" stacks "$work/$s.trace" >"$work/$s.stacks" 2>"$work/$s.serr"
	for pid in $(sed -n 's/^node-\([0-9]*\);.*/\1/p' "$work/$s.folded" | sort -u); do
		rm -f "/tmp/perf-$pid.map"
	done
	# Samples in all, with an [unknown] or [no-map] frame, in the
	# comparator, and of those the ones unwound to their outermost
	# frame (no [...] end marker: [bad-stack], [truncated], [no-cfi]...).
	set -- $(awk '{ c = $NF; t += c }
		/;\[unknown\]|;\[no-map\]/ { u += c }
		/;JS:[*^~]?byDigitSum / { j += c; if ($0 !~ /;\[[a-z-]+\]/) full += c }
		END { print t + 0, u + 0, j + 0, full + 0 }' "$work/$s.folded")
	total=$1 unknown=$2 cmp=$3 full=$4
	check "$s: at most 3% of the samples have an [unknown]/[no-map] frame ($unknown of $total)" \
		[ "$total" -gt 100 -a $((unknown * 100)) -le $((total * 3)) ]
	check "$s: the JS comparator byDigitSum named from the perf map ($cmp of $total samples)" \
		[ $((cmp * 100)) -ge $((total * 20)) ]
	check "$s: its stacks unwound to the outermost frame ($full of $cmp)" \
		[ "$cmp" -gt 0 -a $((full * 100)) -ge $((cmp * 95)) ]
	# The comparator's caller: a frame in the second mapping, of $path.
	set -- $(awk -v path="$path" -v lo="$lo" -v hi="$hi" '
		function hex(s,  v, i) { s = tolower(s); v = 0
			for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v }
		BEGIN { L = hex(lo); H = hex(hi) }
		/^\t/ { if (want) { a = hex($1); if (a >= L && a < H && index($0, " (" path ")")) good++; want = 0 }
			if ($2 ~ /^JS:[*^~]?byDigitSum$/) { n++; want = 1 }
			next }
		{ want = 0 }
		END { print n + 0, good + 0 }' "$work/$s.stacks")
	check "$s: byDigitSum called from V8's builtins in the second mapping, named ($path) ($2 of $1)" \
		[ "$1" -gt 0 -a $(($2 * 100)) -ge $(($1 * 80)) ]
done

echo "1..$n"
