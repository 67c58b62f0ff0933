#!/bin/sh
# The testdata programs (testdata/README.md): each runs and exits 0, its
# --chain output is the documented chain, and gdb -- an unwinder independent
# of ours -- shows exactly that chain at a breakpoint on the hot function.
# TAP output.  Needs gdb (scripts/install-deps.sh); nothing is skipped: a
# missing tool makes the tests that need it fail.
TAP_NO_BABELTRACE2=1
. "${top_srcdir:?}/tests/tap-lib.sh"
td=$top_builddir/testdata
tmp=$work
RUN_SECS=0.2

# Run with a time limit when coreutils' timeout is there (it is on Debian).
if command -v timeout >/dev/null 2>&1; then T="timeout 120"; else T=; fi

# runs DESCRIPTION CMD...: the command exits 0.
runs() {
	d=$1; shift
	if $T "$@" >"$tmp/out" 2>"$tmp/err"; then ok "$d"; else
		echo "exit status $?" >"$tmp/status"; not_ok_show "$d" "$tmp/status" "$tmp/err"; fi
}

# --- tools ---------------------------------------------------------------
have_gdb=no
if ! command -v gdb >/dev/null 2>&1; then
	echo "gdb not found: install gdb (scripts/install-deps.sh)" >"$tmp/msg"
	not_ok_show "gdb (with Python) is installed" "$tmp/msg"
elif [ "$(gdb -nx -batch -ex 'python print("py" + "ok")' 2>&1)" != pyok ]; then
	echo "this gdb has no Python: install Debian's gdb (scripts/install-deps.sh)" >"$tmp/msg"
	not_ok_show "gdb (with Python) is installed" "$tmp/msg"
else
	have_gdb=yes; ok "gdb (with Python) is installed"
fi
if command -v nm >/dev/null 2>&1; then ok "nm is installed"; else
	echo "nm not found: install binutils (scripts/install-deps.sh)" >"$tmp/msg"
	not_ok_show "nm is installed" "$tmp/msg"; fi

# The frames gdb unwinds, printed by a gdb Python function rather than parsed
# from `bt`: bt also lists inlined calls as frames, and a chain function that
# got inlined must fail.  One "F name" line per frame, innermost first, after
# a "==BT==" line; gdb's signal trampoline frame is named __restore_rt; an
# inlined frame gets "@inline", a frame of another kind "@typeN", a frame in
# libc "@libc" (start_thread@libc, or ??@libc without libc's debug info).
cat >"$tmp/frames.py" <<'EOF'
import gdb
def td_frames():
    print("==BT==")
    f = gdb.newest_frame()
    while f is not None:
        t = f.type()
        name = "__restore_rt" if t == gdb.SIGTRAMP_FRAME else (f.name() or "??")
        if t == gdb.INLINE_FRAME:
            name += "@inline"
        elif t not in (gdb.NORMAL_FRAME, gdb.SIGTRAMP_FRAME):
            name += "@type%d" % t
        lib = gdb.solib_name(f.pc())
        if lib is not None and "/libc.so" in lib:
            name += "@libc"
        print("F " + name)
        f = f.older()
EOF

# gdb_bt LOG BREAK HITS CMD...: run CMD under gdb; at each of the first HITS
# stops at breakpoint BREAK list the frames (and a bt for the log), then kill.
gdb_bt() {
	log=$1 brk=$2 hits=$3; shift 3
	{
		echo "set width 0"
		echo "set height 0"
		echo "set pagination off"
		echo "set confirm off"
		echo "set breakpoint pending on"
		echo "set disable-randomization off"
		echo "handle SIGUSR1 nostop noprint pass"
		echo "source $tmp/frames.py"
		echo "break $brk"
		echo "run"
		i=1
		while :; do
			printf 'python td_frames()\nbt\n'
			[ "$i" -ge "$hits" ] && break
			echo "continue"
			i=$((i + 1))
		done
		echo "kill"
	} >"$tmp/gdb.cmds"
	env -u DEBUGINFOD_URLS $T gdb -nx -batch -x "$tmp/gdb.cmds" --args "$@" >"$log" 2>&1 </dev/null
}

# frames LOG: the frame names of each listing in a gdb log, one a line, each
# listing after a "--" line.
gdb_frames() {
	sed -n -e 's/^==BT==$/--/p' -e 's/^F //p' "$1"
}

# nth_bt FRAMES K: the K-th backtrace (from 1) of a frames listing.
nth_bt() { awk -v k="$2" '/^--$/ { i++; next } i == k' "$1"; }

# Frames that may follow a thread's start routine: glibc's thread entry
# (start_thread, clone3), named or not.
is_thread_entry() {
	case $1 in
		*@inline*) return 1 ;;
		*@libc) return 0 ;;
	esac
	return 1
}

# check_bt NAME DESCRIPTION CHAIN HITS MODE BREAK CMD...: gdb stops HITS
# times at BREAK; every backtrace must be exactly CHAIN (a file, leaf first).
# MODE "thread": below the chain, only glibc's thread entry frames (1 to 3).
check_bt() {
	name=$1 d=$2 chain=$3 hits=$4 mode=$5 brk=$6; shift 6
	log=$tmp/$name.gdb
	if [ "$have_gdb" != yes ]; then
		echo "gdb not found: install gdb (scripts/install-deps.sh)" >"$tmp/msg"
		not_ok_show "$d" "$tmp/msg"; return
	fi
	gdb_bt "$log" "$brk" "$hits" "$@"
	gdb_frames "$log" >"$tmp/$name.frames"
	len=$(wc -l <"$chain")
	k=1 bad=
	while [ "$k" -le "$hits" ]; do
		nth_bt "$tmp/$name.frames" "$k" >"$tmp/bt"
		if [ ! -s "$tmp/bt" ]; then
			bad="no backtrace number $k"; break
		fi
		if [ "$mode" = thread ]; then
			head -n "$len" "$tmp/bt" >"$tmp/bt.head"
			tail -n +"$((len + 1))" "$tmp/bt" >"$tmp/bt.rest"
			if ! cmp -s "$chain" "$tmp/bt.head"; then
				bad="backtrace $k differs"; break
			fi
			rest=$(wc -l <"$tmp/bt.rest")
			if [ "$rest" -lt 1 ] || [ "$rest" -gt 3 ]; then
				bad="backtrace $k: $rest frames below the start routine"; break
			fi
			while read -r f; do
				is_thread_entry "$f" || bad="backtrace $k: unexpected frame $f below the start routine"
			done <"$tmp/bt.rest"
			[ -n "$bad" ] && break
		elif ! cmp -s "$chain" "$tmp/bt"; then
			bad="backtrace $k differs"; break
		fi
		k=$((k + 1))
	done
	if [ -z "$bad" ]; then ok "$d"; else
		echo "$bad; expected (leaf first):" >"$tmp/msg"
		sed 's/^/  /' "$chain" >>"$tmp/msg"
		echo "gdb backtraces:" >>"$tmp/msg"
		sed 's/^/  /' "$tmp/$name.frames" >>"$tmp/msg"
		not_ok_show "$d" "$tmp/msg" "$log"
	fi
}

# chain_is NAME DESCRIPTION "EXPECTED ..." CMD... --chain: the documented chain.
chain_is() {
	name=$1 d=$2 want=$3; shift 3
	printf '%s\n' $want >"$tmp/$name.want"
	if "$@" >"$tmp/$name.chain" 2>"$tmp/err" && cmp -s "$tmp/$name.want" "$tmp/$name.chain"; then
		ok "$d"
	else
		not_ok_show "$d" "$tmp/$name.chain" "$tmp/err"
	fi
}

# --- no renamed copies of chain functions ------------------------------------
# A clone (f.constprop.0, f.isra.0, f.part.0) or a split-off f.cold would show
# under another name in a symbol table than in the chain.
if nm "$td"/tdata-* "$td"/.libs/libtdata-plugin.so >"$tmp/nm" 2>"$tmp/err" &&
	! grep -E '\.(constprop|isra|part|cold|clone)' "$tmp/nm" >"$tmp/bad"; then
	ok "no cloned or split chain functions in the testdata programs"
else
	not_ok_show "no cloned or split chain functions in the testdata programs" "$tmp/bad" "$tmp/err"
fi

# Every chain function is a function symbol of its own (not inlined away),
# as a symbol-table based symbolizer would need.
missing=
for prog in single threads dlopen recurse nofp sigalt events; do
	syms="$td/tdata-$prog"
	[ "$prog" = dlopen ] && syms="$syms $td/.libs/libtdata-plugin.so"
	# shellcheck disable=SC2086
	nm $syms 2>/dev/null | awk '$2 ~ /^[tTwW]$/ { print $3 }' >"$tmp/syms"
	for f in $("$td/tdata-$prog" --chain 2>/dev/null | sort -u); do
		[ "$f" = __restore_rt ] && continue
		grep -qx "$f" "$tmp/syms" || missing="$missing tdata-$prog:$f"
	done
done
if [ -z "$missing" ] && [ -s "$tmp/syms" ]; then
	ok "every chain function has a function symbol of its own"
else
	echo "no symbol for:$missing" >"$tmp/msg"
	not_ok_show "every chain function has a function symbol of its own" "$tmp/msg"
fi

# --- tdata-single -------------------------------------------------------------
p=$td/tdata-single
runs "tdata-single $RUN_SECS exits 0" "$p" "$RUN_SECS"
chain_is single "tdata-single --chain" "hot_leaf level_c level_b level_a run_workload main" "$p" --chain
check_bt single "tdata-single: gdb backtrace at hot_leaf is the chain" \
	"$tmp/single.chain" 1 main hot_leaf "$p" "$RUN_SECS"

# The secret really is on hot_leaf's stack while it runs: 16 copies of each
# form in the 256-byte buffer, near the stack pointer.
line=$(grep -n 'tdata: secret on stack' "$top_srcdir/testdata/single.c" | cut -d: -f1)
if [ "$have_gdb" = yes ] && [ -n "$line" ]; then
	printf '%s\n' "set width 0" "set confirm off" "set disable-randomization off" \
		"break single.c:$line" "run" \
		"find /g \$sp, +1024, 0x5EC2E75EC2E75EC2" \
		"find /g \$sp, +1024, 0xC25EE7C25EE7C25E" "kill" >"$tmp/gdb.cmds"
	env -u DEBUGINFOD_URLS $T gdb -nx -batch -x "$tmp/gdb.cmds" --args "$p" "$RUN_SECS" \
		>"$tmp/secret.gdb" 2>&1 </dev/null
fi
if [ "$(grep -c '^16 patterns found' "$tmp/secret.gdb" 2>/dev/null)" = 2 ]; then
	ok "tdata-single: the secret and its byte-reversed form are on hot_leaf's stack"
else
	not_ok_show "tdata-single: the secret and its byte-reversed form are on hot_leaf's stack (needs gdb)" \
		"$tmp/secret.gdb"
fi

# --- tdata-threads ------------------------------------------------------------
p=$td/tdata-threads
runs "tdata-threads -t 4 $RUN_SECS exits 0" "$p" -t 4 "$RUN_SECS"
runs "tdata-threads -t 1 $RUN_SECS exits 0" "$p" -t 1 "$RUN_SECS"
chain_is threads "tdata-threads --chain" "worker_hot worker_compute worker_main" "$p" --chain
check_bt threads "tdata-threads: gdb backtraces of all 4 threads at worker_hot are the chain" \
	"$tmp/threads.chain" 4 thread worker_hot "$p" -t 4 "$RUN_SECS"

# --- tdata-dlopen -------------------------------------------------------------
p=$td/tdata-dlopen
plugin=$td/.libs/libtdata-plugin.so
runs "tdata-dlopen $RUN_SECS exits 0 (plugin found from /proc/self/exe)" \
	env -u TDATA_PLUGIN sh -c 'cd / && exec "$0" "$1"' "$p" "$RUN_SECS"
runs "tdata-dlopen --reload $RUN_SECS exits 0 (unmapped, reloaded elsewhere)" \
	env -u TDATA_PLUGIN "$p" --reload "$RUN_SECS"
runs "tdata-dlopen -p PATH exits 0" env -u TDATA_PLUGIN "$p" -p "$plugin" "$RUN_SECS"
runs "tdata-dlopen with TDATA_PLUGIN exits 0" env TDATA_PLUGIN="$plugin" "$p" "$RUN_SECS"
if env -u TDATA_PLUGIN "$p" -p "$tmp/no-such-plugin.so" 0.01 >/dev/null 2>"$tmp/err"; then
	echo "exited 0" >"$tmp/msg"; not_ok_show "tdata-dlopen -p with a wrong path fails" "$tmp/msg"
else
	ok "tdata-dlopen -p with a wrong path fails"
fi
chain_is dlopen "tdata-dlopen --chain" "plugin_hot plugin_entry load_and_run main" "$p" --chain
check_bt dlopen "tdata-dlopen --reload: gdb backtraces at plugin_hot (both loads) are the chain" \
	"$tmp/dlopen.chain" 2 main plugin_hot "$p" --reload "$RUN_SECS"

# --- tdata-recurse ------------------------------------------------------------
p=$td/tdata-recurse
runs "tdata-recurse -d 1000 $RUN_SECS exits 0" "$p" -d 1000 "$RUN_SECS"
runs "tdata-recurse (default depth) $RUN_SECS exits 0" "$p" "$RUN_SECS"
chain_is recurse "tdata-recurse -d 3 --chain" "recurse_leaf recurse recurse recurse main" \
	"$p" -d 3 --chain
if "$p" --chain >"$tmp/r1000" && [ "$(wc -l <"$tmp/r1000")" -eq 1002 ] &&
	[ "$(grep -c '^recurse$' "$tmp/r1000")" -eq 1000 ]; then
	ok "tdata-recurse --chain lists recurse 1000 times by default"
else
	not_ok_show "tdata-recurse --chain lists recurse 1000 times by default"
fi
"$p" -d 50 --chain >"$tmp/recurse50.chain"
check_bt recurse50 "tdata-recurse -d 50: gdb backtrace at recurse_leaf is the chain" \
	"$tmp/recurse50.chain" 1 main recurse_leaf "$p" -d 50 "$RUN_SECS"
check_bt recurse1000 "tdata-recurse -d 1000: gdb backtrace at recurse_leaf is the chain" \
	"$tmp/r1000" 1 main recurse_leaf "$p" -d 1000 "$RUN_SECS"
# Frames are realistic in size: each recurse frame takes at least 64 bytes.
if [ "$have_gdb" = yes ]; then
	printf '%s\n' "set confirm off" "set disable-randomization off" "break recurse_leaf" "run" \
		"select-frame 2" "output (long)\$sp" "echo \\n" \
		"select-frame 3" "output (long)\$sp" "echo \\n" "kill" >"$tmp/gdb.cmds"
	env -u DEBUGINFOD_URLS $T gdb -nx -batch -x "$tmp/gdb.cmds" --args "$p" -d 5 "$RUN_SECS" \
		>"$tmp/sp.gdb" 2>&1 </dev/null
fi
sps=$(grep -E '^[0-9]+$' "$tmp/sp.gdb" 2>/dev/null | tr '\n' ' ')
set -- $sps
if [ $# -eq 2 ] && [ $(($2 - $1)) -ge 64 ]; then
	ok "tdata-recurse: a recurse frame is $(($2 - $1)) bytes (>= 64)"
else
	not_ok_show "tdata-recurse: a recurse frame is >= 64 bytes (needs gdb)" "$tmp/sp.gdb"
fi

# --- tdata-nofp ---------------------------------------------------------------
p=$td/tdata-nofp
runs "tdata-nofp $RUN_SECS exits 0" "$p" "$RUN_SECS"
chain_is nofp "tdata-nofp --chain" "nofp_hot nofp_middle nofp_outer main" "$p" --chain
check_bt nofp "tdata-nofp: gdb backtrace at nofp_hot is the chain" \
	"$tmp/nofp.chain" 1 main nofp_hot "$p" "$RUN_SECS"
# No function of the chain sets up a frame pointer (mov %rsp,%rbp).
if [ "$have_gdb" = yes ]; then
	for f in $(cat "$tmp/nofp.chain"); do echo "disassemble $f"; done >"$tmp/gdb.cmds"
	gdb -nx -batch -x "$tmp/gdb.cmds" "$p" >"$tmp/nofp.dis" 2>&1 </dev/null
fi
if [ "$(grep -c '^End of assembler dump' "$tmp/nofp.dis" 2>/dev/null)" = 4 ] &&
	! grep -E 'mov +%rsp,%rbp' "$tmp/nofp.dis" >"$tmp/bad"; then
	ok "tdata-nofp: no chain function sets up a frame pointer"
else
	not_ok_show "tdata-nofp: no chain function sets up a frame pointer (needs gdb)" "$tmp/bad" "$tmp/nofp.dis"
fi

# --- tdata-sigalt -------------------------------------------------------------
p=$td/tdata-sigalt
runs "tdata-sigalt $RUN_SECS exits 0 (handler on the alternate stack, most CPU time in it)" \
	"$p" "$RUN_SECS"
chain_is sigalt "tdata-sigalt --chain" "handler_hot handler_entry __restore_rt trigger_loop main" \
	"$p" --chain
# gdb shows the trampoline's frame as a signal frame in libc.
sed 's/^__restore_rt$/__restore_rt@libc/' "$tmp/sigalt.chain" >"$tmp/sigalt.gdbchain"
check_bt sigalt "tdata-sigalt: gdb backtraces at handler_hot (2 signals) are the chain" \
	"$tmp/sigalt.gdbchain" 2 main handler_hot "$p" "$RUN_SECS"
# The handler's frames are on the sigaltstack, trigger_loop's on the main stack.
if [ "$have_gdb" = yes ]; then
	printf '%s\n' "set confirm off" "set disable-randomization off" \
		"handle SIGUSR1 nostop noprint pass" "break handler_hot" "run" \
		"output (unsigned long)\$sp - (unsigned long)alt_base" "echo \\n" \
		"select-frame 3" "output (unsigned long)\$sp - (unsigned long)alt_base" "echo \\n" \
		"kill" >"$tmp/gdb.cmds"
	env -u DEBUGINFOD_URLS $T gdb -nx -batch -x "$tmp/gdb.cmds" --args "$p" "$RUN_SECS" \
		>"$tmp/alt.gdb" 2>&1 </dev/null
fi
offs=$(grep -E '^[0-9]+$' "$tmp/alt.gdb" 2>/dev/null | tr '\n' ' ')
set -- $offs
if [ $# -eq 2 ] && [ "$1" -lt 262144 ] && [ "$2" -ge 262144 ]; then
	ok "tdata-sigalt: handler_hot runs on the sigaltstack, trigger_loop on another stack"
else
	not_ok_show "tdata-sigalt: handler_hot runs on the sigaltstack, trigger_loop on another stack (needs gdb)" \
		"$tmp/alt.gdb"
fi

# --- tdata-inline -------------------------------------------------------------
p=$td/tdata-inline
runs "tdata-inline $RUN_SECS exits 0" "$p" "$RUN_SECS"
chain_is inline "tdata-inline --chain" "inl_leaf inl_middle inline_hot inline_outer main" "$p" --chain
# gdb lists the two inlined calls as inline frames.
sed -e 's/^inl_leaf$/inl_leaf@inline/' -e 's/^inl_middle$/inl_middle@inline/' \
	"$tmp/inline.chain" >"$tmp/inline.gdbchain"
check_bt inline "tdata-inline: gdb backtrace at inl_leaf is the chain, inl_leaf and inl_middle inlined" \
	"$tmp/inline.gdbchain" 1 main inl_leaf "$p" "$RUN_SECS"
# The inlined functions really are inlined: no symbol of their own.
nm "$p" 2>"$tmp/err" | awk '$2 ~ /^[tTwW]$/ { print $3 }' >"$tmp/syms"
if grep -qx inline_hot "$tmp/syms" && grep -qx inline_outer "$tmp/syms" &&
	! grep -E '^inl_(leaf|middle)' "$tmp/syms" >"$tmp/bad"; then
	ok "tdata-inline: inl_leaf and inl_middle have no symbol, inline_hot and inline_outer do"
else
	not_ok_show "tdata-inline: inl_leaf and inl_middle have no symbol, inline_hot and inline_outer do" \
		"$tmp/bad" "$tmp/err"
fi

# --- tdata-events -------------------------------------------------------------
p=$td/tdata-events
runs "tdata-events -n 100 exits 0" "$p" -n 100
for k in write probe sdt guarded; do
	leaf=$("$p" -k $k --chain | head -n 1)
	chain_is events-$k "tdata-events -k $k --chain" "$leaf event_round run_events main" "$p" -k $k --chain
	# The marker sites are no functions of their own: gdb stops at the
	# function holding each (tdata:guarded's only while its semaphore is up:
	# never here, so gdb stops at guarded_site's entry).
	check_bt events-$k "tdata-events: gdb backtraces at $leaf (3 rounds) are the -k $k chain" \
		"$tmp/events-$k.chain" 3 main "$leaf" "$p" -n 3
done

echo "1..$n"
