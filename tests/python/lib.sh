# Sourced by tests/python.sh (Debian bookworm's python3.11, on this
# machine) and tests/python-new.sh (trixie's python3.13, in a chroot), after
# tests/tap-lib.sh: recording tests/python/chains.py and the checks every
# CPython version must pass.  The caller sets:
#   PY     the interpreter, as the recording sees it
#   IN     a command prefix that runs in the interpreter's root ("" on this
#          machine; "chroot ROOT" for a chroot, where $top_srcdir,
#          $top_builddir and $work are bound at their own paths)
#   SYMFS  stackunwind's options to find the recorded binaries ("" or
#          "--symfs ROOT")
SU="$B/cli/stackunwind"
CH="$top_srcdir/tests/python/chains.py"

# record_python MODE: trace, output, status and folded stacks of chains.py MODE.
record_python() {
	$IN "$STACKCAP" record --python -o "$work/$1.trace" -- $PY "$CH" "$1" 0.5 >"$work/$1.out" 2>"$work/$1.err"
	echo $? >"$work/$1.rc"
	"$SU" folded --no-debuginfod $SYMFS "$work/$1.trace" >"$work/$1.folded" 2>"$work/$1.uerr"
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

# Inlined frames (_PyEval_Vector, _PyEval_EvalFrame) may sit between.
R=';PyEval_EvalCode;([^;]*;)*<module>;'

# python_main: main's output and status as without stackcap, its chain,
# its frames printed "qualname (file:LINE)" by stacks.
python_main() {
	$IN $PY "$CH" main 0.5 >"$work/plain.out" 2>&1
	plain_rc=$?
	record_python main
	check "main: exit status as without stackcap ($(cat "$work/main.rc"), plain $plain_rc)" \
		[ "$(cat "$work/main.rc")" = "$plain_rc" ]
	check "main: output as without stackcap" cmp -s "$work/plain.out" "$work/main.out"
	check "main: record --python did not suggest --python" sh -c "! grep -q 'add --python' '$work/main.err'"
	chain main main_leaf "${R}main_driver;cpu_loop;main_mid;main_leaf(;|\$)" \
		"<module>;main_driver;cpu_loop;main_mid;main_leaf under PyEval_EvalCode"
	# stacks: "qualname (file:LINE)", the line of main_leaf's return.
	line=$(awk '/^def main_leaf/ { print NR + 1 }' "$CH")
	"$SU" stacks --no-debuginfod $SYMFS "$work/main.trace" >"$work/main.stacks" 2>/dev/null
	set -- $(awk -v l="main_leaf ($CH:$line)" '/ main_leaf \(/ { h++; if (index($0, l)) m++ } END { print m + 0, h + 0 }' "$work/main.stacks")
	check "main: stacks print 'main_leaf (chains.py:$line)' in $1 of $2 frames (>= 95%)" \
		sh -c "[ $2 -ge 50 ] && [ \$(( $1 * 100 )) -ge \$(( $2 * 95 )) ]"
	check "main: no _PyEval_EvalFrameDefault left in the hot samples" \
		sh -c "! grep ';main_leaf' '$work/main.folded' | grep -q _PyEval_EvalFrameDefault"
}

# python_modes: every other mode of chains.py, each known chain in its hot
# samples (native frames in their place: C calling Python back through
# sorted(key=), zlib's deflate, next() on a generator), and functions
# made and dropped by exec in a loop never misnamed.
python_modes() {
	for m in thread sort zlib gen raise recurse init exec; do
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
	chain init init_leaf "${R}init_driver;cpu_loop;init_driver\\.<locals>\\.<lambda>;([^;]*;)*Initer\\.__init__;init_leaf(;|\$)" \
		"init_driver;cpu_loop;<lambda> ... Initer.__init__;init_leaf"
	set -- $(share init init_leaf ';__init__;')
	check "init: no frame named '__init__' alone (an interpreter shim) in $1 of $2 samples through init_leaf" \
		sh -c "[ $2 -ge 50 ] && [ $1 = 0 ]"
	# f<i> calls h<i % 2>: a frame named f<i> above h<j> with another
	# parity would be another function's name.
	set -- $(grep -o 'f[0-9][0-9]*;h[01]' "$work/exec.folded" | awk -F';' '
		{ i = substr($1, 2) + 0; j = substr($2, 2) + 0; n++; if (i % 2 != j) bad++ } END { print n + 0, bad + 0 }')
	check "exec: $1 samples through a named f<i>, $2 of them under another function's name" \
		sh -c "[ $1 -ge 20 ] && [ $2 = 0 ]"
}
