#!/bin/sh
# Integration: control characters a trace carries (a recorded path, a comm)
# never reach a terminal or a file as they are.  A program whose directory
# and name hold an OSC 52 sequence (ESC ] 52 ; c ; ... BEL: "set the
# clipboard" on many terminals) is recorded; every output of stackunwind
# (stacks, folded, flamegraph, speedscope, pprof, the missing-binary
# warning) and of the babeltrace2 plugin (the filter's fields, the folded
# sink) must hold the sequence escaped as \x1b]52;... and never the raw
# bytes (symbolize/resolve.h).
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
BT="babeltrace2 --plugin-path=$B/plugin/.libs"
need gzip gzip
need libxml2-utils xmllint

esc=$(printf '\033')
bel=$(printf '\007')
dir="$work/d${esc}]52;c;SGVsbG8=${bel}"
prog="t${esc}]52;c;QQ==${bel}"
mkdir -p "$dir"
cp "$TD/tdata-single" "$dir/$prog"
# --user-only: the babeltrace2 filter compared below shows no kernel frames yet.
"$STACKCAP" record --user-only -o "$work/osc.trace" -- "$dir/$prog" 0.3 >/dev/null 2>"$work/rec.err"
check "a program under a path holding OSC 52 is recorded" [ -d "$work/osc.trace" ]

# raw_free FILE: no ESC and no BEL anywhere in FILE.
raw_free() { ! grep -q "[$esc$bel]" "$1"; }
# escaped FILE: the escaped sequence is there (folded turns its ";" into ":").
escaped() { grep -qF '\x1b]52' "$1" && grep -qF '\x07' "$1"; }

# The in-process hook names the process and its maps itself: the same.
"$STACKCAP" record --in-process -o "$work/osc-ip.trace" -- "$dir/$prog" 0.3 >/dev/null 2>"$work/rec-ip.err"
"$SU" stacks -j 1 "$work/osc-ip.trace" >"$work/stacks-ip.out" 2>"$work/stacks-ip.err"
check "--in-process: stacks shows the path and the comm escaped" escaped "$work/stacks-ip.out"
check "--in-process: no raw ESC or BEL" raw_free "$work/stacks-ip.out"

"$SU" stacks -j 2 "$work/osc.trace" >"$work/stacks.out" 2>"$work/stacks.err"
check "stacks: the path and the comm come out escaped" escaped "$work/stacks.out"
check "stacks: no raw ESC or BEL" raw_free "$work/stacks.out"
"$SU" folded -j 1 --per-process "$work/osc.trace" >"$work/folded.out" 2>/dev/null
check "folded: the comm comes out escaped" escaped "$work/folded.out"
check "folded: no raw ESC or BEL" raw_free "$work/folded.out"
"$SU" flamegraph "$work/osc.trace" >"$work/flame.svg" 2>/dev/null
check "flamegraph: escaped in the SVG's text and titles" escaped "$work/flame.svg"
check "flamegraph: no raw ESC or BEL" raw_free "$work/flame.svg"
check "flamegraph: the SVG is well-formed XML" xmllint --noout "$work/flame.svg"
"$SU" export --format speedscope -o "$work/ss.json" "$work/osc.trace" 2>/dev/null
check "speedscope: no raw ESC or BEL, nor their JSON escapes" \
	sh -c "! grep -q '[$esc$bel]' '$work/ss.json' && ! grep -qi 'u001b' '$work/ss.json'"
check "speedscope: the names come out escaped" grep -qF '\\x1b]52;c;' "$work/ss.json"
"$SU" export --format pprof -o - "$work/osc.trace" 2>/dev/null | gzip -dc >"$work/pprof.bin"
check "pprof: the string table holds the escaped names, never the sequence" \
	sh -c "grep -qF '\\x1b]52;c;' '$work/pprof.bin' && ! grep -qF '$esc]52;' '$work/pprof.bin'"

# The binary gone: the warning names the recorded path, escaped.
mv "$dir" "$work/gone"
"$SU" stacks -j 1 "$work/osc.trace" >"$work/gone.out" 2>"$work/gone.err"
check "missing binary: the warning shows the recorded path escaped" \
	sh -c "grep -q 'warning: .*not found' '$work/gone.err' && grep -qF '\\x1b]52;c;' '$work/gone.err'"
check "missing binary: no raw ESC or BEL on stderr or stdout" \
	sh -c "! grep -q '[$esc$bel]' '$work/gone.err' '$work/gone.out'"
check "missing binary: module+offset frames escaped too" escaped "$work/gone.out"
mv "$work/gone" "$dir"

# The babeltrace2 plugin: the filter's comm and callstack fields (other
# events pass through as recorded), and the folded sink.
$BT "$work/osc.trace" -c filter.stackcap.unwind 2>/dev/null | grep 'callstack = ' >"$work/bt2.out"
check "filter: samples with a callstack" [ -s "$work/bt2.out" ]
check "filter: comm and module fields escaped" escaped "$work/bt2.out"
check "filter: no raw ESC or BEL in the added fields" raw_free "$work/bt2.out"
$BT "$work/osc.trace" -c filter.stackcap.unwind -c sink.stackcap.folded >"$work/sink.out" 2>/dev/null
check "folded sink: no raw ESC or BEL" raw_free "$work/sink.out"
"$SU" folded -j 1 "$work/osc.trace" >"$work/folded0.out" 2>/dev/null
check "folded sink: the same text as stackunwind folded" cmp -s "$work/sink.out" "$work/folded0.out"

echo "1..$n"
