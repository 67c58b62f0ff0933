#!/bin/sh
# Integration: Python frames (stackcap record --python, issue 18) with
# Debian's python3 (CPython 3.11).  tests/python/chains.py runs one known
# call chain per mode; each known chain, Python and native frames in their
# order, must be in >= 95% of the samples through its hot function; the
# program's output and exit status are those of a run without stackcap;
# functions made and dropped by exec in a loop are never misnamed; the
# babeltrace2 reader and plugin (source, filter, folded sink) give the same
# folded text as stackunwind.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
PY=/usr/bin/python3
CH="$top_srcdir/tests/python/chains.py"

if ! [ -x $PY ] || ! $PY -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
	echo "1..1"
	echo "not ok 1 - Debian's python3 3.11 missing at $PY: apt-get install python3 (scripts/install-deps.sh)"
	exit 0
fi

# record_python MODE: trace, output, status and folded stacks of chains.py MODE.
record_python() {
	"$STACKCAP" record --python -o "$work/$1.trace" -- $PY "$CH" "$1" 0.5 >"$work/$1.out" 2>"$work/$1.err"
	echo $? >"$work/$1.rc"
	"$SU" folded --no-debuginfod "$work/$1.trace" >"$work/$1.folded" 2>"$work/$1.uerr"
}

# share MODE HOT REGEX: "matching hot" over the samples whose folded line
# has ;HOT (a frame of that name), MATCHING of them matching the ERE REGEX.
share() {
	# (The ERE through the environment: awk -v would eat its backslashes.)
	HOT="$2" RE="$3" awk '{
		c = $NF; line = $0; sub(/ [0-9]+$/, "", line)
		if (index(line ";", ";" ENVIRON["HOT"] ";") == 0) next
		h += c; if (line ~ ENVIRON["RE"]) m += c
	} END { print m + 0, h + 0 }' "$work/$1.folded"
}

# chain MODE HOT REGEX WHAT: the check itself.
chain() {
	set -- "$1" "$2" "$3" "$4" $(share "$1" "$2" "$3")
	check "$1: $4 in $5 of $6 samples through $2 (>= 95%, >= 50 samples)" \
		sh -c "[ $6 -ge 50 ] && [ \$(( $5 * 100 )) -ge \$(( $6 * 95 )) ]"
}

# ---- output and exit status unchanged -------------------------------------------
$PY "$CH" main 0.5 >"$work/plain.out" 2>&1
plain_rc=$?
record_python main
check "main: exit status as without stackcap ($(cat "$work/main.rc"), plain $plain_rc)" \
	[ "$(cat "$work/main.rc")" = "$plain_rc" ] 
check "main: output as without stackcap" cmp -s "$work/plain.out" "$work/main.out"
check "main: record --python did not suggest --python" sh -c "! grep -q 'add --python' '$work/main.err'"

# Inlined frames (_PyEval_Vector, _PyEval_EvalFrame) may sit between.
R=';PyEval_EvalCode;([^;]*;)*<module>;'
chain main main_leaf "${R}main_driver;cpu_loop;main_mid;main_leaf(;|\$)" "<module>;main_driver;cpu_loop;main_mid;main_leaf under PyEval_EvalCode"
# stacks: "qualname (file:LINE)", the line of main_leaf's return.
line=$(awk '/^def main_leaf/ { print NR + 1 }' "$CH")
"$SU" stacks --no-debuginfod "$work/main.trace" >"$work/main.stacks" 2>/dev/null
set -- $(awk -v l="main_leaf ($CH:$line)" '/ main_leaf \(/ { h++; if (index($0, l)) m++ } END { print m + 0, h + 0 }' "$work/main.stacks")
check "main: stacks print 'main_leaf (chains.py:$line)' in $1 of $2 frames (>= 95%)" \
	sh -c "[ $2 -ge 50 ] && [ \$(( $1 * 100 )) -ge \$(( $2 * 95 )) ]"
check "main: no _PyEval_EvalFrameDefault left in the hot samples" \
	sh -c "! grep ';main_leaf' '$work/main.folded' | grep -q _PyEval_EvalFrameDefault"

# exports: speedscope names main_leaf with its file and first line; pprof
# carries the file (its functions and lines table).
"$SU" export --format speedscope --no-debuginfod -o "$work/main.json" "$work/main.trace" 2>/dev/null
first=$(awk '/^def main_leaf/ { print NR }' "$CH")
check "main: speedscope frame main_leaf with file chains.py and line $first" $PY -c '
import json, sys
fr = json.load(open(sys.argv[1]))["shared"]["frames"]
sys.exit(not any(f["name"] == "main_leaf" and f.get("file") == sys.argv[2] and f.get("line") == int(sys.argv[3])
                 for f in fr))' "$work/main.json" "$CH" "$first"
"$SU" export --format pprof --no-debuginfod -o "$work/main.pb.gz" "$work/main.trace" 2>/dev/null
check "main: pprof names main_leaf and its file" \
	sh -c "gzip -dc '$work/main.pb.gz' | LC_ALL=C grep -a -q main_leaf && gzip -dc '$work/main.pb.gz' | LC_ALL=C grep -a -q -F '$CH'"

# ---- the babeltrace2 reader and plugin show the same Python frames ----------------
# stackunwind's --reader babeltrace2 (src.ctf.fs), and the plugin
# (src.ctf.fs or source.stackcap.trace, then filter.stackcap.unwind and
# sink.stackcap.folded): the folded text of stackunwind folded, byte for byte.
PP="$B/plugin/.libs"
"$SU" folded --no-debuginfod --reader babeltrace2 "$work/main.trace" >"$work/main-bt2r.folded" 2>/dev/null
check "main: stackunwind folded --reader babeltrace2 == the native reader ($(wc -l <"$work/main.folded") lines)" \
	cmp -s "$work/main.folded" "$work/main-bt2r.folded"
if [ -f "$PP/babeltrace-plugin-stackcap.so" ] && command -v babeltrace2 >/dev/null; then
	babeltrace2 --plugin-path="$PP" "$work/main.trace" -c filter.stackcap.unwind -p no-debuginfod=yes \
		-c sink.stackcap.folded >"$work/main-plugin.folded" 2>"$work/main-plugin.err"
	check "main: src.ctf.fs + filter.stackcap.unwind + sink.stackcap.folded == stackunwind folded" \
		cmp -s "$work/main.folded" "$work/main-plugin.folded"
	babeltrace2 --plugin-path="$PP" -c source.stackcap.trace -p "inputs=[\"$work/main.trace\"]" \
		-c filter.stackcap.unwind -p no-debuginfod=yes -c sink.stackcap.folded \
		>"$work/main-src.folded" 2>"$work/main-src.err"
	check "main: source.stackcap.trace (format version 2) + filter + sink == stackunwind folded" \
		cmp -s "$work/main.folded" "$work/main-src.folded"
	# --zstd (what the source is for: src.ctf.fs cannot read it).
	"$STACKCAP" record --python --zstd -o "$work/mainz.trace" -- $PY "$CH" main 0.3 >/dev/null 2>&1
	"$SU" folded --no-debuginfod "$work/mainz.trace" >"$work/mainz.folded" 2>/dev/null
	babeltrace2 --plugin-path="$PP" -c source.stackcap.trace -p "inputs=[\"$work/mainz.trace\"]" \
		-c filter.stackcap.unwind -p no-debuginfod=yes -c sink.stackcap.folded \
		>"$work/mainz-src.folded" 2>/dev/null
	check "main --zstd: source.stackcap.trace + filter + sink == stackunwind folded ($(grep -c ';main_leaf' "$work/mainz.folded") lines through main_leaf)" \
		sh -c "grep -q ';main_leaf' '$work/mainz.folded' && cmp -s '$work/mainz.folded' '$work/mainz-src.folded'"
	babeltrace2 --plugin-path="$PP" "$work/main.trace" -c filter.stackcap.unwind -p no-debuginfod=yes \
		>"$work/main-filter.txt" 2>/dev/null
	check "main: the filter's callstack names main_leaf with module [python], its file and line $line" \
		grep -q "function = \"main_leaf\", module = \"\[python\]\", offset = 0x[0-9A-F]*, file = \"$CH\", line = $line," \
		"$work/main-filter.txt"
else
	check "babeltrace2 and the built plugin ($PP/babeltrace-plugin-stackcap.so): apt-get install babeltrace2 (scripts/install-deps.sh), make" false
fi

for m in thread sort zlib gen raise recurse exec; do
	record_python $m
	check "$m: recorded, exit status 0, output '$(cat "$work/$m.out")'" \
		sh -c "[ \"\$(cat '$work/$m.rc')\" = 0 ] && grep -q ' True\$\\|^thread done\$' '$work/$m.out'"
done
chain thread thread_leaf ";start_thread;([^;]*;)*Thread\\._bootstrap;Thread\\._bootstrap_inner;Thread\\.run;([^;]*;)*thread_work;cpu_loop;thread_leaf(;|\$)" \
	"start_thread ... Thread._bootstrap;Thread._bootstrap_inner;Thread.run ... thread_work;cpu_loop;thread_leaf"
chain sort sort_key "${R}sort_driver;cpu_loop;sort_driver\\.<locals>\\.<lambda>;([^;]*;)*builtin_sorted[^;]*;([^;]*;)*list_sort_impl;([^;]*;)*sort_driver\\.<locals>\\.<lambda>\\.<locals>\\.<lambda>;sort_key(;|\$)" \
	"sort_driver ... <lambda> ... builtin_sorted ... list_sort_impl ... <lambda>.<locals>.<lambda>;sort_key"
chain zlib deflate "${R}zlib_driver;cpu_loop;zlib_driver\\.<locals>\\.<lambda>;([^;]*;)*zlib_compress[^;]*;deflate(;|\$)" \
	"zlib_driver;cpu_loop;<lambda> ... zlib_compress;deflate"
chain gen producer "${R}gen_driver;cpu_loop;gen_driver\\.<locals>\\.<lambda>;([^;]*;)*builtin_next;([^;]*;)*producer(;|\$)" \
	"gen_driver;cpu_loop;<lambda>;builtin_next ... producer"
chain raise thrower "${R}raise_driver;cpu_loop;raise_once;thrower(;|\$)" "raise_driver;cpu_loop;raise_once;thrower"
chain recurse recurse_leaf ";rec_driver\\.<locals>\\.<lambda>;(recurse;){200}recurse_leaf(;|\$)" \
	"rec_driver.<locals>.<lambda> then recurse x 200 then recurse_leaf"

# The plugin on C called from Python called back from C (sort), a thread,
# and 200 frames deep: the same folded text as stackunwind.
for m in sort thread recurse; do
	babeltrace2 --plugin-path="$PP" "$work/$m.trace" -c filter.stackcap.unwind -p no-debuginfod=yes \
		-c sink.stackcap.folded >"$work/$m-plugin.folded" 2>/dev/null
	check "$m: src.ctf.fs + filter.stackcap.unwind + sink.stackcap.folded == stackunwind folded ($(wc -l <"$work/$m.folded") lines)" \
		cmp -s "$work/$m.folded" "$work/$m-plugin.folded"
done

# ---- exec in a loop: never misnamed -------------------------------------------------
# f<i> calls h<i % 2>: a frame named f<i> above h<j> with another parity
# would be another function's name.
set -- $(grep -o 'f[0-9][0-9]*;h[01]' "$work/exec.folded" | awk -F';' '
	{ i = substr($1, 2) + 0; j = substr($2, 2) + 0; n++; if (i % 2 != j) bad++ } END { print n + 0, bad + 0 }')
check "exec: $1 samples through a named f<i>, $2 of them under another function's name" \
	sh -c "[ $1 -ge 20 ] && [ $2 = 0 ]"

# ---- the hint --------------------------------------------------------------------------
"$STACKCAP" record -o "$work/nopy.trace" -- $PY -c 'pass' >/dev/null 2>"$work/nopy.err"
check "record without --python on python3 suggests --python" grep -q 'add --python' "$work/nopy.err"
"$STACKCAP" record -o "$work/notpy.trace" -- true >/dev/null 2>"$work/notpy.err"
check "no suggestion for a command that is not Python" sh -c "! grep -q 'python' '$work/notpy.err'"
echo "1..$n"
