#!/bin/sh
# Integration: code a program maps a second time, and node --perf-basic-prof,
# under both samplers (the kernel copy and --in-process).
# V8 (node 20) maps the builtins embedded in node's code a second time,
# beside its JIT code ("short builtin calls"), where the loader's list
# (dl_iterate_phdr) does not see them: the in-process hook once left that
# mapping out of its maps, so the filter zeroed every return address into
# it and samples there had no map.
#   tests/remap-burn maps its own code again and runs its chain there: the
#   chain named with file:line, its frames in the second mapping (any
#   machine; Debian's node 18 does not map its code again);
#   tests/node-hot.js sorts with a JS comparator (named from
#   /tmp/perf-PID.map) that V8's sort builtins call: few samples without a
#   map, the comparator named, its stacks unwound to the outermost frame,
#   its caller a frame of node's code (of the second mapping when V8 made
#   one).
TAP_NO_BABELTRACE2=1
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
HOT="$top_srcdir/tests/node-hot.js"

# An awk function: the value of a hex string (awk has no strtonum in POSIX).
AWK_HEX='function hex(s,  v, i) { s = tolower(s); v = 0
	for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return v }'
# in_range STACKS LO HI FUNC: of the frames of FUNC in STACKS, how many
# have their address in [LO, HI) (hex): "IN ALL".
in_range() {
	awk -v lo="$2" -v hi="$3" -v fn="$4" "$AWK_HEX"'
	/^\t/ { f = $2; sub(/\+0x[0-9a-f]+$/, "", f)
		if (f == fn) { n++; a = hex($1); if (a >= hex(lo) && a < hex(hi)) good++ } }
	END { print good + 0, n + 0 }' "$1"
}

for s in $SAMPLERS; do
	# shellcheck disable=SC2046
	record "remap-$s" $(sampler_opts "$s") -- "$B/tests/remap-burn" >"$work/remap-$s.out"
	set -- $(sed -n 's/^second mapping \([0-9a-f]*\)-\([0-9a-f]*\) .*/\1 \2/p' "$work/remap-$s.out")
	check "$s: stackcap record remap-burn exits 0, the program ran in its second mapping ($*)" \
		[ "$(rc "remap-$s")" = 0 -a $# = 2 ]
	lo=${1:-0} hi=${2:-0}
	"$SU" stacks "$work/remap-$s.trace" >"$work/remap-$s.stacks" 2>"$work/remap-$s.serr"
	# shellcheck disable=SC2046
	set -- $(chain_match "$work/remap-$s.stacks" $("$B/tests/remap-burn" --chain))
	check "$s: remap-burn's chain through its second mapping in >= 95% of the samples in remap_leaf ($1 of $2)" \
		[ "$2" -ge 100 -a $(($1 * 100)) -ge $(($2 * 95)) ]
	set -- $(in_range "$work/remap-$s.stacks" "$lo" "$hi" remap_leaf)
	check "$s: remap_leaf named at addresses of the second mapping ($1 of $2)" [ "$2" -gt 0 -a "$1" = "$2" ]
	n_lines=$(grep -c ' remap_leaf+0x[0-9a-f]* (.*remap-burn) .*remap-burn\.c:[0-9]' "$work/remap-$s.stacks")
	check "$s: remap_leaf with its file:line ($n_lines frames)" [ "$n_lines" -gt 0 ]
done

# An ET_EXEC mapped a second time: libdwfl cannot place the copy (its
# addresses are fixed) and, once it refused it, found no module at all,
# not even those reported before; the reference unwinder now makes its
# Dwfl again without it.  The chain runs in the ordinary mapping: the
# same stacks as the fast unwinder's, to _start.
record nopie -- "$B/tests/remap-burn-nopie" --copy-unused 6000 >"$work/nopie.out"
"$SU" stacks -j 1 "$work/nopie.trace" >"$work/nopie.fast" 2>/dev/null
"$SU" stacks -j 1 --unwinder dwfl "$work/nopie.trace" >"$work/nopie.dwfl" 2>"$work/nopie.derr"
check "an ET_EXEC mapped again (remap-burn-nopie): the dwfl unwinder's stacks are the fast one's ($(tail -n 1 "$work/nopie.derr"))" \
	sh -c "[ '$(rc nopie)' = 0 ] && grep -q ' remap_leaf+' '$work/nopie.fast' && cmp -s '$work/nopie.fast' '$work/nopie.dwfl'"

# The second mapping made late (after 800 ms of CPU time), when libstackcap
# reads the maps file at most every 240 ms: a capture with its pc in no
# known code asks the writer for a scan at once (capture.c), so few
# samples have no map (before, up to 240 ms of them).
for s in $SAMPLERS; do
	# shellcheck disable=SC2046
	record "late-$s" $(sampler_opts "$s") -- "$B/tests/remap-burn" 3000 800 >/dev/null
	"$SU" folded "$work/late-$s.trace" >"$work/late-$s.folded" 2>/dev/null
	set -- $(awk '{ c = $NF; t += c } /;remap_leaf( |;)/ { l += c }
		/\[unknown\]|\[no-map\]/ { u += c } END { print t + 0, l + 0, u + 0 }' "$work/late-$s.folded")
	check "$s: remap-burn mapping its code late: of the samples there, at most 3% without a map ($3 of $(($2 + $3)), $1 in all)" \
		[ "$2" -ge 100 -a $(($3 * 100)) -le $((($2 + $3) * 3)) ]
done

if ! command -v node >/dev/null 2>&1; then
	not_ok "node missing: apt-get install nodejs (scripts/install-deps.sh --with-browser)"
	echo "1..$n"
	exit 0
fi
# A comparator's name in V8's perf map: "JS:*byDigitSum" (node 20),
# "LazyCompile:*byDigitSum" or "Function:^byDigitSum" (node 18).
CMP='[A-Za-z]+:[*^~]?byDigitSum'
for s in $SAMPLERS; do
	# shellcheck disable=SC2046
	record "$s" $(sampler_opts "$s") -- node --perf-basic-prof "$HOT" >"$work/$s.out"
	check "$s: stackcap record node --perf-basic-prof exits 0, node sorted (exit $(rc "$s"))" \
		sh -c "[ $(rc "$s") = 0 ] && grep -qx sorted '$work/$s.out'"
	code=$(sed -n 's/^code file //p' "$work/$s.out")
	# What V8 mapped a second time: "second mapping PATH OFFSET LO-HI".
	set -- $(grep '^second mapping ' "$work/$s.out" | head -n 1)
	if [ $# = 5 ]; then
		path=$3 lo=${5%-*} hi=${5#*-}
		echo "# node $(node --version) maps $path a second time (offset 0x$4, $5)"
	else
		path=$code lo=0 hi=ffffffffffffffff
		echo "# node $(node --version) does not map its code a second time (remap-burn covers that case)"
	fi

	"$SU" folded --per-process "$work/$s.trace" >"$work/$s.folded" 2>"$work/$s.ferr"
	"$SU" stacks "$work/$s.trace" >"$work/$s.stacks" 2>"$work/$s.serr"
	for pid in $(sed -n 's/^node-\([0-9]*\);.*/\1/p' "$work/$s.folded" | sort -u); do
		rm -f "/tmp/perf-$pid.map"
	done
	# Samples in all, with an [unknown] or [no-map] frame, in the
	# comparator, and of those the ones unwound to their outermost
	# frame (no [...] end marker: [bad-stack], [truncated], [no-cfi]...).
	set -- $(awk -v cmp=";$CMP " '{ c = $NF; t += c }
		/;\[unknown\]|;\[no-map\]/ { u += c }
		$0 ~ cmp { j += c; if ($0 !~ /;\[[a-z-]+\]/) full += c }
		END { print t + 0, u + 0, j + 0, full + 0 }' "$work/$s.folded")
	total=$1 unknown=$2 cmp=$3 full=$4
	check "$s: at most 3% of the samples have an [unknown]/[no-map] frame ($unknown of $total)" \
		[ "$total" -gt 100 -a $((unknown * 100)) -le $((total * 3)) ]
	check "$s: the JS comparator byDigitSum named from the perf map ($cmp of $total samples)" \
		[ $((cmp * 100)) -ge $((total * 20)) ]
	check "$s: its stacks unwound to the outermost frame ($full of $cmp)" \
		[ "$cmp" -gt 0 -a $((full * 100)) -ge $((cmp * 95)) ]
	# The comparator's caller: a frame of V8's builtins, in $path (in
	# [lo, hi): the second mapping, when there is one).
	# The file by its name: /proc/self/maps says /usr/lib/..., the loader
	# (the in-process sampler's dl_iterate_phdr) may say /lib/... (usrmerge).
	set -- $(awk -v base="/${path##*/})" -v lo="$lo" -v hi="$hi" -v cmp="^$CMP\$" "$AWK_HEX"'
		BEGIN { L = hex(lo); H = hex(hi) }
		/^\t/ { if (want) { a = hex($1); if (a >= L && a < H && index($0, base)) good++; want = 0 }
			if ($2 ~ cmp) { n++; want = 1 }
			next }
		{ want = 0 }
		END { print n + 0, good + 0 }' "$work/$s.stacks")
	check "$s: byDigitSum called from V8's builtins, a frame of $path ($lo-$hi) ($2 of $1)" \
		[ "$1" -gt 0 -a $(($2 * 100)) -ge $(($1 * 80)) ]
done

echo "1..$n"
