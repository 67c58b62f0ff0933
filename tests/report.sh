#!/bin/sh
# Integration: what a perf user expects of a report.
#  - Choosing samples by time: --time +START,+END (seconds after the first
#    sample) and perf's percentages (10%-20%, 10%/2, lists) select exactly
#    the samples the absolute times printed by `stacks` put there, and a
#    filter that matches nothing says so (times since boot are easy to get
#    wrong).
#  - `stackunwind report` (perf report's table and call tree) agrees with
#    `folded` on the same trace: the hot leaf's Self, main's Children, the
#    per-module sums, the tree's hottest path; it honours the filters, reads
#    perf.data and off-CPU traces (time-weighted).
#  - --help: each synopsis names every option its list has.
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

# ---- --time as perf's percentages of the trace's span ------------------------
# slice A B (fractions): the count perf's rule gives over the printed
# times: [t0 + round(A * span), t0 + round(B * span)], the end 1 ns earlier
# unless it is the last sample's.
slice() {
	awk -v a="$1" -v b="$2" 'NR == 1 { t0 = $1 } { t[NR] = $1; last = $1 }
		END { span = last - t0; lo = t0 + int(a * span + 0.5); hi = t0 + int(b * span + 0.5)
			if (hi > lo && hi != last) hi--
			for (i = 1; i <= NR; i++) if (t[i] >= lo && t[i] <= hi) n++
			print n + 0 }' "$work/times"
}
pct_count() {
	"$SU" stacks --time "$1" "$work/single.trace" 2>"$work/pct.err" | grep -c '^tdata-single '
}
for spec in "10%-20% 0.1 0.2" "10%/2 0.1 0.2" "50% 0 0.5" "0%-100% 0 1" "90%/1 0 0.9" "25%/4 0.75 1"; do
	set -- $spec
	want=$(slice "$2" "$3")
	got=$(pct_count "$1")
	check "--time $1: the $want samples of [$2, $3] of the span by the printed times ($got)" [ "$got" = "$want" ]
done
want=$(( $(slice 0 0.1) + $(slice 0.3 0.4) ))
got=$(pct_count "0%-10%,30%-40%")
check "--time 0%-10%,30%-40%: both slices, $want samples ($got)" [ "$got" = "$want" ]
want=$(slice 0 0.2)
got=$(pct_count "10%/1,10%/2")
check "--time 10%/1,10%/2: adjacent slices share no sample and miss none: $want ($got)" [ "$got" = "$want" ]
got=$("$SU" folded --time 10%-20% "$work/single.trace" 2>/dev/null | awk '{ n += $NF } END { print n + 0 }')
check "folded --time 10%-20%: the same samples as stacks ($got)" [ "$got" = "$(slice 0.1 0.2)" ]
got=$("$SU" stats --time 10%-20% "$work/single.trace" 2>/dev/null | sed -n 's/^samples: *\([0-9]*\).*/\1/p')
check "stats --time 10%-20%: the same samples ($got)" [ "$got" = "$(slice 0.1 0.2)" ]
"$SU" stats --time 0%-10%,30%-40% "$work/single.trace" >/dev/null 2>"$work/st.err"
check "stats --time with two slices: a usage error (one slice only)" [ $? = 2 ]
"$SU" stacks --time 99.99%-99.99% "$work/single.trace" >/dev/null 2>"$work/nomatch.err"
check "--time of a slice with no sample: stderr says no sample matched (the percentages named)" \
	grep -q "no sample matched.*percentages" "$work/nomatch.err"
for bad in "120%" "10%-" "20%-10%" "10%/0" "10%/11" "abc%" "10%-20" "0%/3"; do
	"$SU" stacks --time "$bad" "$work/single.trace" >"$work/bad.out" 2>"$work/bad.err"
	rc=$?
	check "--time $bad: a usage error (exit 2) saying why ($(head -n 1 "$work/bad.err"))" \
		[ $rc = 2 -a ! -s "$work/bad.out" ] && grep -q -- "--time" "$work/bad.err"
done

# ---- stackunwind report against folded ----------------------------------------
"$STACKCAP" record -o "$work/demo.trace" -- "$TD/tdata-demo" >/dev/null 2>"$work/demo.rerr"
"$SU" folded "$work/demo.trace" >"$work/demo.folded" 2>/dev/null
"$SU" report "$work/demo.trace" >"$work/demo.report" 2>"$work/demo.rep.err"
check "report: exit 0" [ $? = 0 ]
total=$(awk '{ n += $NF } END { print n + 0 }' "$work/demo.folded")
check "report: the header counts the $total samples folded counts" \
	grep -q "^# stackunwind report of .*: $total samples\$" "$work/demo.report"
# folded_leaves: "count<TAB>leaf" per innermost function, heaviest first.
# Folded's end markers ([no-map] and the like: where an unwind stopped)
# are no functions: the report has no row for them.  (A regex for awk -v,
# which takes one level of backslashes.)
ends='^\\[(truncated|no-map|no-cfi|bad-stack|max-frames|error|no-user)\\]$'
awk -v ends="$ends" '{ c = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); if (f[k] !~ ends) self[f[k]] += c }
	END { for (l in self) printf "%d\t%s\n", self[l], l }' "$work/demo.folded" | sort -t "$(printf '\t')" -k1,1nr >"$work/leaves"
hot=$(head -n 1 "$work/leaves" | cut -f 2-)
want=$(head -n 1 "$work/leaves" | awk -v t="$total" -F '\t' '{ printf "%.2f%%", 100 * $1 / t }')
# row FUNCTION: the report's row of FUNCTION (function = what follows the
# module column).
row() {
	awk -v f="$1" '!/^#/ { line = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", line); if (line == f) { print; exit } }' \
		"$2"
}
got=$(row "$hot" "$work/demo.report" | awk '{ print $2 }')
check "report: Self of the hot leaf $hot is folded's share, $want ($got)" [ "$got" = "$want" ]
# Every function's Children: the stacks holding it at least once, from
# folded (its end markers left out).
awk -v t="$total" -v ends="$ends" '{ c = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); delete seen
		for (i = 2; i <= k; i++)
			if (!(f[i] in seen) && f[i] !~ ends) { seen[f[i]] = 1; ch[f[i]] += c } }
	END { for (x in ch) printf "%s\t%.2f%%\n", x, 100 * ch[x] / t }' "$work/demo.folded" >"$work/children"
# A loaded machine may leave a sample or two outside the program proper: in
# ld.so before _start (C++ initializers), or in exec (a pc in no mapping:
# an [unknown] frame, the stack ending [no-map]).  Their frames may name a
# function of two modules (_start, [unknown]): two rows of one name, left
# out of the per-function comparisons below.
awk '!/^#/ { line = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", line); print line }' "$work/demo.report" |
	sort >"$work/rownames"
uniq -d "$work/rownames" >"$work/dupnames"
# The most: of the functions of one row (a name of two modules may be in
# every stack, each of its rows in fewer).
most=$(awk -F '\t' -v dups="$work/dupnames" 'BEGIN { while ((getline l <dups) > 0) dup[l] = 1 }
	!($1 in dup) { print $2 }' "$work/children" | sort -n | tail -n 1)
first=$(awk '!/^#/ { print; exit }' "$work/demo.report")
if [ "$(echo "$first" | awk '{ print $1 }')" = "$most" ]; then
	ok "report: sorted by Children, its first row the most stacks any function is in, $most ($first)"
else
	# Seen once under make check's load (99.95% in the report, 99.90%
	# from folded: one stack unwound otherwise by the two runs?): keep
	# the evidence, folded's stacks without that first function and
	# the report's head, and a second folded run's difference.
	fn=$(echo "$first" | awk '{ print $NF }')
	grep -v ";$fn;" "$work/demo.folded" >"$work/demo.without" || :
	"$SU" folded "$work/demo.trace" 2>/dev/null | diff "$work/demo.folded" - >"$work/demo.again" || :
	head -n 5 "$work/demo.report" >"$work/demo.head"
	not_ok_show "report: sorted by Children, its first row the most stacks any function is in, $most ($first)" \
		"$work/demo.without" "$work/demo.head" "$work/demo.again"
fi
main_want=$(awk -v t="$total" '{ c = $NF; sub(/ [0-9]+$/, ""); if ($0 ~ /;main(;|$)/) n += c }
	END { printf "%.2f%%", 100 * n / t }' "$work/demo.folded")
main_got=$(row main "$work/demo.report" | awk '{ print $1 }')
check "report: Children of main is the share of stacks through it, $main_want ($main_got), about 100%" \
	[ "$main_got" = "$main_want" ] && awk -v p="${main_got%\%}" 'BEGIN { exit !(p >= 99) }'
# Every leaf of folded has its Self in the report (rows of a function in two
# modules aside, none here).
bad=$(awk -F '\t' -v t="$total" '{ printf "%s\t%.2f%%\n", $2, 100 * $1 / t }' "$work/leaves" | while IFS="$(printf '\t')" read -r f p; do
	grep -qxF -- "$f" "$work/dupnames" && continue
	[ "$(row "$f" "$work/demo.report" | awk '{ print $2 }')" = "$p" ] || echo "$f"
done | head -n 3)
check "report: every folded leaf's Self as folded counts it (wrong: ${bad:-none})" [ -z "$bad" ]
bad=$(while IFS="$(printf '\t')" read -r f p; do
	grep -qxF -- "$f" "$work/dupnames" && continue
	[ "$(row "$f" "$work/demo.report" | awk '{ print $1 }')" = "$p" ] || echo "$f"
done <"$work/children" | head -n 3)
check "report: every function's Children as the folded stacks holding it ($(wc -l <"$work/children") functions; wrong: ${bad:-none})" \
	[ -z "$bad" -a "$(wc -l <"$work/children")" -gt 5 ]
cut -f 1 "$work/children" | sort -u >"$work/framenames"
sort -u "$work/rownames" >"$work/rownames.u"
check "report: a row per distinct folded frame ($(wc -l <"$work/rownames") rows of $(wc -l <"$work/rownames.u") names, $(wc -l <"$work/framenames") frames)" \
	cmp -s "$work/rownames.u" "$work/framenames"
"$SU" report -j 1 "$work/demo.trace" >"$work/j1.report" 2>/dev/null
"$SU" report -j 3 "$work/demo.trace" >"$work/j3.report" 2>/dev/null
check "report: -j 3 prints what -j 1 prints" cmp -s "$work/j1.report" "$work/j3.report"
"$SU" report --sort self "$work/demo.trace" >"$work/self.report" 2>/dev/null
got=$(awk '!/^#/ { line = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", line); print line; exit }' "$work/self.report")
check "report --sort self: the hot leaf first ($got)" [ "$got" = "$hot" ]
"$SU" report --per-module "$work/demo.trace" >"$work/mod.report" 2>/dev/null
sum=$(awk '!/^#/ { s += $3 } END { print s + 0 }' "$work/mod.report")
psum=$(awk '!/^#/ { p = $2; sub(/%/, "", p); s += p; n++ } END { printf "%d %d", (s - 100) * 100, n }' "$work/mod.report")
check "report --per-module: Self samples sum to the $total samples ($sum)" [ "$sum" = "$total" ]
check "report --per-module: Self % sums to 100 within rounding (hundredths off, rows: $psum)" \
	awk -v d="${psum% *}" -v r="${psum#* }" 'BEGIN { exit !(d <= r && -d <= r) }'
check "report --per-module: tdata-demo's row" grep -q ' tdata-demo$' "$work/mod.report"
# The tree's hottest path: the first callee at each depth, against the
# heaviest prefix of the folded stacks (ties: the smaller name, as the tree).
"$SU" report --tree --min 0 "$work/demo.trace" >"$work/tree.report" 2>/dev/null
awk '!/^#/ { match($0, /^ */); d = RLENGTH / 2; if (d != n) exit
	line = $0; sub(/^ *[0-9.]+%  /, "", line); sub(/ \([^()]*\)$/, "", line); print line; n++ }' \
	"$work/tree.report" >"$work/tree.path"
LC_ALL=C awk '{ c = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); s = ""
		for (i = 2; i <= k; i++) s = s (i > 2 ? ";" : "") f[i]
		st[NR] = s; cnt[NR] = c }
	END { p = ""
		for (;;) {
			delete w; best = ""
			for (i = 1; i <= NR; i++) {
				if (p != "" && index(st[i], p ";") != 1) continue
				rest = p == "" ? st[i] : substr(st[i], length(p) + 2)
				if (rest == "") continue
				j = index(rest, ";"); nx = j ? substr(rest, 1, j - 1) : rest
				w[nx] += cnt[i]
			}
			for (x in w) if (best == "" || w[x] > w[best] || (w[x] == w[best] && x < best)) best = x
			if (best == "") break
			print best; p = p == "" ? best : p ";" best
		}
	}' "$work/demo.folded" >"$work/folded.path"
check "report --tree: the hottest path is folded's heaviest prefix ($(wc -l <"$work/tree.path") frames, leaf $(tail -n 1 "$work/tree.path"))" \
	cmp -s "$work/tree.path" "$work/folded.path"
[ -s "$work/tree.path" ] || not_ok_show "tree path empty" "$work/tree.report"
# Its first line: tdata-demo's _start, through which every sample of the
# program's own goes; a sample outside it (in ld.so before _start, or in
# exec: above) is not, so the share is that of the samples whose
# outermost frame `stacks` gives as tdata-demo's _start.
top=$(awk '!/^#/ { print $1, $2, $3; exit }' "$work/tree.report")
"$SU" stacks "$work/demo.trace" >"$work/demo.stacks" 2>/dev/null
want=$(awk -v bin="$TD/tdata-demo" '
	function end() { if (seen) { t++; if (index(last, " _start+0x") && index(last, "(" bin ")")) s++ } seen = 0 }
	/^[^\t]/ { end(); seen = 1; last = ""; next }
	/^\t/ { last = $0 }
	END { end(); if (t) printf "%.2f%%", 100 * s / t }' "$work/demo.stacks")
check "report --tree: its first line is _start's share of the samples, as stacks gives their outermost frames ($top; $want)" \
	[ "$top" = "$want _start (tdata-demo)" ]
"$SU" report --tree "$work/demo.trace" >"$work/tree05.report" 2>/dev/null
low=$(awk '!/^#/ { p = $1; sub(/%/, "", p); if (p + 0 < 0.5) n++ } END { print n + 0 }' "$work/tree05.report")
check "report --tree: nothing under perf's 0.5% threshold by default ($low lines)" [ "$low" = 0 ]
"$SU" report --limit 3 --min 1 "$work/demo.trace" >"$work/lim.report" 2>/dev/null
check "report --limit 3: three rows" [ "$(grep -vc '^#' "$work/lim.report")" = 3 ]
# Filters: the report counts what folded counts with them.
got=$("$SU" report --time 10%-60% "$work/demo.trace" 2>/dev/null | sed -n 's/^# stackunwind report of .*: \([0-9]*\) samples$/\1/p')
want=$("$SU" folded --time 10%-60% "$work/demo.trace" 2>/dev/null | awk '{ n += $NF } END { print n + 0 }')
check "report --time 10%-60%: folded's $want samples ($got)" [ "$got" = "$want" -a "$want" -gt 0 -a "$want" -lt "$total" ]
got=$("$SU" report --user-only "$work/demo.trace" 2>/dev/null | grep -c 'kernel.kallsyms')
check "report --user-only: no kernel row" [ "$got" = 0 ]
check "report: kernel rows without --user-only, as folded has kernel frames" \
	[ "$(grep -c 'kernel.kallsyms' "$work/demo.report")" -gt 0 -o "$(grep -c '_\[k\]\|entry_SYSCALL\|asm_' "$work/demo.folded")" = 0 ]
"$SU" report --tree --sort self "$work/demo.trace" >/dev/null 2>"$work/u.err"
check "report --tree --sort self: a usage error" [ $? = 2 ]
"$SU" folded --per-module "$work/demo.trace" >/dev/null 2>&1
check "folded --per-module: a usage error (report only)" [ $? = 2 ]

# Off-CPU time: weighted by microseconds as folded --off-cpu.
"$STACKCAP" record --off-cpu -o "$work/off.trace" -- "$TD/tdata-offcpu" sleep 0.3 >/dev/null 2>"$work/off.rerr"
"$SU" report --off-cpu "$work/off.trace" >"$work/off.report" 2>/dev/null
want=$("$SU" folded --off-cpu "$work/off.trace" 2>/dev/null | awk '{ n += $NF } END { print n + 0 }')
check "report --off-cpu: the header counts folded --off-cpu's $want us" \
	grep -q ": $want us (off-CPU time" "$work/off.report"
w=$(row sleeper_wait "$work/off.report" | awk '{ print $1 }')
check "report --off-cpu: sleeper_wait holds most of the blocked time ($w)" \
	awk -v p="${w%\%}" 'BEGIN { exit !(p >= 50) }'

# JIT code named from /tmp/perf-PID.map: a row of that map, as folded names it.
"$STACKCAP" record --user-only -o "$work/jit.trace" -- "$B/tests/jit-burn" 0.5 perf-map >/dev/null 2>"$work/jit.rerr"
jpid=$(ls "$work/jit.trace" | sed -n 's/^proc-\([0-9]*\)-.*/\1/p' | head -n 1)
"$SU" folded "$work/jit.trace" >"$work/jit.folded" 2>/dev/null
"$SU" report "$work/jit.trace" >"$work/jit.report" 2>/dev/null
rm -f "/tmp/perf-$jpid.map"
want=$(awk '{ c = $NF; t += c; if ($0 ~ /;jit_count_loop [0-9]+$/) h += c } END { if (t) printf "%.2f%%", 100 * h / t }' \
	"$work/jit.folded")
got=$(awk -v m="perf-$jpid.map" '!/^#/ && $NF == "jit_count_loop" && $4 == m { print $2; exit }' "$work/jit.report")
check "report: JIT code's row (jit_count_loop, perf-$jpid.map) has folded's Self $want ($got)" [ -n "$want" -a "$got" = "$want" ]

# perf.data: the same report as its folded counts.
if perf record -q -k monotonic -e cpu-clock --call-graph dwarf -o "$work/single.data" -- "$TD/tdata-single" 0.3 \
	>/dev/null 2>"$work/perf.err"; then
	"$SU" folded "$work/single.data" >"$work/pd.folded" 2>/dev/null
	"$SU" report "$work/single.data" >"$work/pd.report" 2>/dev/null
	t=$(awk '{ n += $NF } END { print n + 0 }' "$work/pd.folded")
	want=$(awk -v t="$t" '{ c = $NF; sub(/ [0-9]+$/, ""); if ($0 ~ /;hot_leaf$/) n += c } END { printf "%.2f%%", 100 * n / t }' \
		"$work/pd.folded")
	got=$(row hot_leaf "$work/pd.report" | awk '{ print $2 }')
	check "report of a perf.data: hot_leaf's Self is folded's $want ($got)" [ "$got" = "$want" -a "$t" -gt 0 ]
	# Beside perf report itself: Children and Self of the chain's functions,
	# within one sample's share (perf 6.1's libunwind stops short on a
	# sample now and then where ours reaches _start: 99.83% against 99.92%
	# of ~1,200 samples, once in a make check).
	perf report -i "$work/single.data" --children --stdio -g none --sort sym >"$work/pd.perf" 2>/dev/null
	one=$(awk -v t="$t" 'BEGIN { printf "%.4f", t ? 100 / t : 0 }')
	bad=
	for f in hot_leaf level_c main _start; do
		p=$(awk -v f="$f" '$3 == "[.]" && $4 == f && NF == 4 { print $1, $2; exit }' "$work/pd.perf")
		o=$(row "$f" "$work/pd.report" | awk '{ print $1, $2 }')
		[ -n "$p" ] && [ -n "$o" ] && echo "$p $o" | awk -v one="$one" '
			function d(a, b) { a += 0; b += 0; return a > b ? a - b : b - a }
			{ exit !(d($1, $3) <= one + 0.01 && d($2, $4) <= one + 0.01) }' ||
			bad="$bad $f(perf: $p, ours: $o)"
	done
	check "report of a perf.data: Children and Self as perf report --children prints them (wrong:${bad:- none})" [ -z "$bad" ]
else
	not_ok_show "perf record --call-graph dwarf failed (perf is in scripts/install-deps.sh)" "$work/perf.err"
fi

# ---- --help: every option of a list in its synopsis ---------------------------
# help_check NAME CMD...: CMD's help; its synopsis (up to the first empty
# line) names each option its list has (long, or short where the synopsis
# uses that); writes the long options to $work/NAME.opts.
help_check() {
	hc_name=$1
	shift
	"$@" >"$work/$hc_name.help" 2>"$work/$hc_name.herr"
	hc_rc=$?
	awk '/^$/ { exit } { print }' "$work/$hc_name.help" >"$work/$hc_name.syn"
	sed -n 's/^  \(-[a-zA-Z], \)\{0,1\}\(--[a-z-]*\).*/\1\2/p; s/^      \(--[a-z-]*\).*/\1/p' "$work/$hc_name.help" |
		sed 's/^\(-[a-zA-Z]\), /\1 /' | sort -u >"$work/$hc_name.list"
	cut -d ' ' -f 2- "$work/$hc_name.list" | sed 's/^.* //' >"$work/$hc_name.opts"
	hc_missing=$(while read -r a b; do
		long=${b:-$a}
		short=${b:+$a}
		grep -qE -- "(^|[][ |])$long([] |=]|\$)" "$work/$hc_name.syn" && continue
		[ -n "$short" ] && grep -qE -- "(^|[][ |])$short([] |]|\$)" "$work/$hc_name.syn" && continue
		echo "$long"
	done <"$work/$hc_name.list" | tr '\n' ' ')
	check "$* : exit 0, $(wc -l <"$work/$hc_name.list") options listed, each in the synopsis (missing: ${hc_missing:-none})" \
		[ "$hc_rc" = 0 -a -z "$hc_missing" -a -s "$work/$hc_name.list" ]
}
help_check su "$SU" --help
for c in stacks folded flamegraph report stats export; do
	help_check "su-$c" "$SU" "$c" --help
	# Each option the command's help lists is one the command takes (no
	# usage error; the trace does not exist: an error, exit 1).
	bad=$(while read -r o; do
		case $o in --help) continue ;; esac
		v=$(sed -n "s/^  \(-[a-zA-Z], \)\{0,1\}$o \([^ ]*\).*/\2/p; s/^      $o \([^ ]*\).*/\1/p" "$work/su-$c.help" | head -n 1)
		case $v in
		'') set -- "$o" ;;
		RANGE) set -- "$o" 10%-20% ;;
		NAME) set -- "$o" cpu-clock ;;
		DIR) set -- "$o" "$work" ;;
		FILE) set -- "$o" "$work/out.x" ;;
		*'|'*) set -- "$o" "${v%%|*}" ;;
		TEXT) set -- "$o" x ;;
		*) set -- "$o" 200 ;;
		esac
		[ "$o" = --min ] && set -- "$o" 1
		[ "$c" = export ] && [ "$o" != --format ] && [ "$o" != --output ] && set -- "$@" --format pprof -o "$work/out.pb"
		[ "$c" = export ] && [ "$o" = --format ] && set -- "$@" -o "$work/out.pb"
		[ "$c" = export ] && [ "$o" = --output ] && set -- "$@" --format pprof
		"$SU" "$c" "$@" "$work/no-such.trace" >/dev/null 2>"$work/opt.err"
		[ $? = 2 ] && echo "$o($(head -n 1 "$work/opt.err"))"
	done <"$work/su-$c.opts" | tr '\n' ' ')
	check "$c --help lists only options $c takes (refused: ${bad:-none})" [ -z "$bad" ]
done
check "report --help: report's options, not flamegraph's" \
	sh -c "grep -q -- '--tree' '$work/su-report.help' && ! grep -q -- '--title' '$work/su-report.help'"
"$STACKCAP" --help >"$work/sc.help" 2>&1
check "stackcap --help: both commands, and where their options are" \
	sh -c "grep -q 'stackcap record' '$work/sc.help' && grep -q 'stackcap convert' '$work/sc.help' && grep -q 'COMMAND --help' '$work/sc.help'"
help_check rec "$STACKCAP" record --help
check "stackcap record --help: record's alone (no convert)" sh -c "! grep -q convert '$work/rec.help'"
check "stackcap record --help: --no-fork in the synopsis" grep -q -- '--no-fork' "$work/rec.syn"
help_check conv "$STACKCAP" convert --help
# --version: both programs, the version configure was given (config.h).
ver=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/config.h")
for p in "$SU" "$STACKCAP"; do
	out=$("$p" --version 2>&1)
	check "$(basename "$p") --version: '$out', exit 0, the configured version ${ver:-(none in config.h)}" \
		sh -c "[ -n '$ver' ] && [ '$out' = '$(basename "$p") (stackcap) $ver' ]"
done

echo "1..$n"
