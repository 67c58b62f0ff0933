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
PY=/usr/bin/python3
IN=
SYMFS=
. "$top_srcdir/tests/python/lib.sh"

if ! [ -x $PY ] || ! $PY -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
	echo "1..1"
	echo "not ok 1 - Debian's python3 3.11 missing at $PY: apt-get install python3 (scripts/install-deps.sh)"
	exit 0
fi

# ---- the checks every version passes (tests/python/lib.sh) ----------------------
python_main

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

python_modes

# The plugin on C called from Python called back from C (sort), a thread,
# and 200 frames deep: the same folded text as stackunwind.
for m in sort thread recurse; do
	babeltrace2 --plugin-path="$PP" "$work/$m.trace" -c filter.stackcap.unwind -p no-debuginfod=yes \
		-c sink.stackcap.folded >"$work/$m-plugin.folded" 2>/dev/null
	check "$m: src.ctf.fs + filter.stackcap.unwind + sink.stackcap.folded == stackunwind folded ($(wc -l <"$work/$m.folded") lines)" \
		cmp -s "$work/$m.folded" "$work/$m-plugin.folded"
done

# ---- the hint --------------------------------------------------------------------------
"$STACKCAP" record -o "$work/nopy.trace" -- $PY -c 'pass' >/dev/null 2>"$work/nopy.err"
check "record without --python on python3 suggests --python" grep -q 'add --python' "$work/nopy.err"
"$STACKCAP" record -o "$work/notpy.trace" -- true >/dev/null 2>"$work/notpy.err"
check "no suggestion for a command that is not Python" sh -c "! grep -q 'python' '$work/notpy.err'"
echo "1..$n"
