#!/bin/sh
# Integration with the real LTTng: our own session daemon (lttng-sessiond
# --daemonize --no-kernel) on a private LTTNG_HOME, so it never meets
# another user's; as root everything LTTng runs as nobody, because a root
# session daemon always uses /var/run/lttng.  Records testdata programs
# with `stackcap record --lttng` into sessions, unwinds the LTTng traces
# with stackunwind (known chains in >= 99% of hot samples) and with the
# babeltrace2 plugin (filter.stackcap.unwind: the same chains on the
# stackcap:sample events and the user's own probe event; the folded sink =
# stackunwind folded; a trace without stackcap events passes unchanged; a
# live session through our own lttng-relayd on private ports), Python
# frames (record --lttng --python: the main chain of tests/python.sh),
# checks the error paths, and stops the daemon (also on failure: trap).
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"

missing=
for t in lttng lttng-sessiond; do
	command -v $t >/dev/null || missing="$missing $t"
done
[ "$(id -u)" = 0 ] && ! command -v setpriv >/dev/null && missing="$missing setpriv(util-linux)"
if [ -n "$missing" ]; then
	echo "1..1"
	echo "not ok 1 - missing:$missing: apt-get install lttng-tools liblttng-ust-dev (scripts/install-deps.sh)"
	exit 0
fi
if [ ! -e "$B/capture/.libs/liblttng-stackcap.so" ] || [ ! -x "$B/tests/.libs/lttng-probe" ]; then
	echo "1..1"
	echo "not ok 1 - liblttng-stackcap.so was not built: apt-get install liblttng-ust-dev, then configure"
	exit 0
fi

lt="$work/lt"
mkdir -p "$lt/home"
# What the recording user runs: RUN_STACKCAP, RUN_TD/<program>, RUN_PROBE, RUN_CH.
RUN_STACKCAP=$STACKCAP RUN_TD=$TD RUN_TESTS=$B/tests RUN_CH=$top_srcdir/tests/python/chains.py
RUN_PROBE="env LD_LIBRARY_PATH=$B/capture/.libs $B/tests/.libs/lttng-probe"
if [ "$(id -u)" = 0 ]; then
	# nobody must reach what it runs, and the build tree may sit in a
	# directory it cannot enter (/root): a copy of the programs, laid out
	# as in the build tree (stackcap finds ../capture/.libs).
	chmod 755 "$work"
	X="$work/b"
	mkdir -p "$X/cli" "$X/capture/.libs" "$X/testdata/.libs" "$X/tests"
	cp "$STACKCAP" "$X/cli/" &&
	cp -P "$B"/capture/.libs/liblttng-stackcap.so* "$X/capture/.libs/" &&
	cp "$TD/tdata-single" "$TD/tdata-threads" "$TD/tdata-dlopen" "$TD/tdata-sigalt" "$X/testdata/" &&
	cp "$TD/.libs/libtdata-plugin.so" "$X/testdata/.libs/" &&
	cp "$B/tests/.libs/lttng-probe" "$B/tests/fork-burn" "$B/tests/jit-burn" "$B/tests/tsd-exit-burn" \
		"$top_srcdir/tests/python/chains.py" \
		"$X/tests/" || {
		echo "1..1"; echo "not ok 1 - cannot copy the programs to run as nobody into $X"; exit 0; }
	chmod -R a+rX "$X"
	RUN_STACKCAP=$X/cli/stackcap RUN_TD=$X/testdata RUN_TESTS=$X/tests RUN_CH=$X/tests/chains.py
	RUN_PROBE="env LD_LIBRARY_PATH=$X/capture/.libs $X/tests/lttng-probe"
	chown -R 65534:65534 "$lt"
	as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$lt/home" LTTNG_HOME="$lt/home" "$@"; }
else
	as_user() { env HOME="$lt/home" LTTNG_HOME="$lt/home" "$@"; }
fi

daemon_pid=
trap 'stop_daemon; rm -rf "$work"' EXIT

# Before any daemon: --lttng must say so.
as_user "$RUN_STACKCAP" record --lttng -- "$RUN_TD/tdata-single" 0.1 >"$work/nod.out" 2>"$work/nod.err"
r=$?
check "record --lttng without a session daemon: exit 2 ($r) with a message" \
	sh -c "[ $r = 2 ] && grep -q 'no LTTng session daemon' '$work/nod.err'"

as_user lttng-sessiond --daemonize --no-kernel >"$work/sessiond.log" 2>&1
daemon_pid=$(cat "$lt/home/.lttng/lttng-sessiond.pid" 2>/dev/null)
check "lttng-sessiond started on the private LTTNG_HOME (pid ${daemon_pid:-none})" \
	alive "${daemon_pid:-0}"
if [ -z "$daemon_pid" ]; then
	sed 's/^/# /' "$work/sessiond.log"
	echo "1..$n"
	exit 0
fi

as_user "$RUN_STACKCAP" record --lttng -- "$RUN_TD/tdata-single" 0.1 >"$work/noses.out" 2>"$work/noses.err"
r=$?
check "record --lttng without an active session: exit 2 ($r) with the commands to run" \
	sh -c "[ $r = 2 ] && grep -q 'no active LTTng recording session' '$work/noses.err' && grep -q 'lttng create' '$work/noses.err'"

# session NAME CONTEXTS [EVENTS]: create, enable our and LTTng's module
# events (and EVENTS) in a channel of 16 KiB sub-buffers (many packets per
# stream file, for the damaged-file case), start.
session() {
	as_user lttng create "$1" --output="$lt/$1" >/dev/null &&
	as_user lttng enable-channel -u --subbuf-size 16K --num-subbuf 8 c0 >/dev/null &&
	as_user lttng enable-event -u -c c0 "stackcap:*,lttng_ust_statedump:*,lttng_ust_dl:*,lttng_ust_lib:*${3:+,$3}" >/dev/null &&
	{ [ -z "$2" ] || as_user lttng add-context -u -c c0 $2 >/dev/null; } &&
	as_user lttng start >/dev/null
}
end_session() {
	as_user lttng stop >/dev/null && as_user lttng destroy >/dev/null
}

# chain_match FILE CHAIN...: "good total" over samples whose leaf is CHAIN[1]
# (as in unwind.sh).

# lttng_chain NAME PROGRAM ARGS: one session, record, unwind, expect the
# chain (libc's signal trampoline named, or as libc.so.6+offset without
# libc6-dbg: tap-lib.sh's sigtramp_sed).
sigtramp_sed >"$work/sigtramp.sed"
lttng_chain() {
	name=$1; prog=$2; shift 2
	session "$name" "-t vpid -t vtid" || { not_ok "$prog: LTTng session set up"; return; }
	as_user "$RUN_STACKCAP" record --lttng -- "$RUN_TD/$prog" "$@" 1 >"$work/$name.rout" 2>"$work/$name.rerr"
	rrc=$?
	end_session
	check "$prog: stackcap record --lttng exits 0 ($rrc) and says how many samples went where ($(head -c 60 "$work/$name.rerr"))" \
		sh -c "[ $rrc = 0 ] && grep -q -E '^stackcap: [1-9][0-9]* samples, 0 drops recorded into the active LTTng session' '$work/$name.rerr'"
	"$SU" stacks "$lt/$name" >"$work/$name.out" 2>"$work/$name.err"
	src=$?
	check "$prog: stackunwind stacks reads the LTTng session directory (exit $src)" [ "$src" = 0 ]
	[ "$src" = 0 ] || grep -v '^stackunwind: [0-9]* samples' "$work/$name.err" | sed 's/^/# /' | head -5
	chain=$("$TD/$prog" "$@" --chain | tr '\n' ' ')
	sed -f "$work/sigtramp.sed" "$work/$name.out" >"$work/$name.named"
	set -- $(chain_match "$work/$name.named" $chain)
	check "$prog: chain '$chain' in >= 99% of hot samples ($1 of $2)" \
		awk -v g="$1" -v t="$2" 'BEGIN { exit !(t >= 100 && g * 100 >= t * 99) }'
}

lttng_chain single tdata-single
lttng_chain threads tdata-threads -t 2
lttng_chain dlopen tdata-dlopen --reload
# Samples in a handler on the alternate signal stack: the interrupted stack
# is a stackcap:sample_segment record.
lttng_chain sigalt tdata-sigalt
nseg=$(babeltrace2 "$lt/sigalt" 2>/dev/null | grep -c 'stackcap:sample_segment:')
check "sigalt: the interrupted stacks are stackcap:sample_segment records ($nseg)" [ "$nseg" -ge 100 ]

# exec() keeps the vpid: the shell's own image records first (its
# generations, its modules), then tdata-single's samples must decode against
# tdata-single's ranges and modules.
session exec "-t vpid -t vtid" || not_ok "exec: LTTng session set up"
as_user "$RUN_STACKCAP" record --lttng -- sh -c "sleep 0.3; exec '$RUN_TD/tdata-single' 1" >/dev/null 2>"$work/exec.rerr"
end_session
"$SU" stacks "$lt/exec" >"$work/exec.out" 2>"$work/exec.err"
r=$?
chain=$("$TD/tdata-single" --chain | tr '\n' ' ')
set -- $(chain_match "$work/exec.out" $chain)
check "exec in the same vpid: exit $r, chain '$chain' in >= 99% of hot samples ($1 of $2)" \
	sh -c "[ $r = 0 ] && awk -v g='$1' -v t='$2' 'BEGIN { exit !(t >= 100 && g * 100 >= t * 99) }'"

# What the trace holds: our events, LTTng's module events, no duplicates.
babeltrace2 "$lt/single" >"$work/single.bt" 2>/dev/null
check "the LTTng trace holds stackcap:sample and stackcap:code_ranges records" \
	sh -c "grep -q 'stackcap:sample:' '$work/single.bt' && grep -q 'stackcap:code_ranges:' '$work/single.bt'"
check "module paths and build-ids come from LTTng's state dump (bin_info, build_id), not from stackcap" \
	sh -c "grep -q 'lttng_ust_statedump:bin_info:.*tdata-single' '$work/single.bt' && grep -q 'lttng_ust_statedump:build_id:' '$work/single.bt' && ! grep 'stackcap:' '$work/single.bt' | grep -q 'path'"
check "samples are recorded in the sampled thread (vtid of every stackcap:sample is the main thread's)" \
	sh -c "grep 'stackcap:sample:' '$work/single.bt' | grep -o 'vpid = [0-9]*, vtid = [0-9]*' | awk '{ if (\$3 != \$6 \",\") bad++ } END { exit bad > 0 || NR == 0 }'"
# The blobs travel as 64-bit words, their length in bytes beside
# (docs/lttng.md): babeltrace2 decodes 8 bytes a field, not one.
check "stackcap:sample holds blob_bytes and blob_words (64-bit words, (blob_bytes + 7) / 8 of them)" \
	sh -c "grep 'stackcap:sample:' '$work/single.bt' | sed -n 's/.*blob_bytes = \([0-9]*\), _blob_words_length = \([0-9]*\),.*/\1 \2/p' |
		awk '{ if (\$2 != int((\$1 + 7) / 8) || \$1 == 0) bad++ } END { exit bad > 0 || NR < 100 }'"
# A trace recorded before (testdata/lttng-bytes-blob: stackcap record
# --lttng of tdata-recurse -d 10 at 200 Hz, 59 samples, each blob a
# uint8_t sequence) is read as ever: every blob decodes (its program's
# binary is not on this machine: the unwinds stop at its first frame).
"$SU" stats "$top_srcdir/testdata/lttng-bytes-blob" >"$work/oldfmt.stats" 2>"$work/oldfmt.err"
check "an LTTng trace whose blobs are bytes (recorded before blob_words): its 59 samples read, none damaged" \
	sh -c "grep -q '^samples: *59\$' '$work/oldfmt.stats' && ! grep -q 'decode\|damaged' '$work/oldfmt.err'"
babeltrace2 "$lt/dlopen" >"$work/dlopen.bt" 2>/dev/null
check "dlopen: the plugin is known from lttng_ust_dl:dlopen and its samples symbolize in it" \
	sh -c "grep -q 'lttng_ust_dl:dlopen:.*libtdata-plugin' '$work/dlopen.bt' && grep -q 'plugin_hot+0x[0-9a-f]* (.*libtdata-plugin.so)' '$work/dlopen.out'"

"$SU" folded "$lt/single" >"$work/single.folded" 2>/dev/null
check "stackunwind folded on the LTTng trace: the hot stack, outermost first" \
	grep -q 'main;run_workload;level_a;level_b;level_c;hot_leaf [0-9]' "$work/single.folded"
# stackunwind report on the LTTng trace: hot_leaf's Self is folded's share.
want=$(awk '{ c = $NF; t += c; if ($0 ~ /;hot_leaf [0-9]+$/) h += c } END { if (t) printf "%.2f%%", 100 * h / t }' \
	"$work/single.folded")
got=$("$SU" report "$lt/single" 2>/dev/null | awk '!/^#/ && $NF == "hot_leaf" { print $2; exit }')
check "stackunwind report on the LTTng trace: hot_leaf's Self is folded's $want ($got)" [ -n "$want" -a "$got" = "$want" ]
"$SU" stats "$lt/single" >"$work/single.stats" 2>&1
check "stackunwind stats on the LTTng trace: samples and bytes counted" \
	sh -c "grep -q -E '^samples: +[1-9]' '$work/single.stats' && grep -q -E '^bytes per sample: +[0-9]' '$work/single.stats'"

# fork() without exec: the child is another vpid (liblttng-ust-fork keeps
# it tracing; its state dump gives its modules).
session fork "-t vpid -t vtid" || not_ok "fork: LTTng session set up"
as_user "$RUN_STACKCAP" record --lttng -- "$RUN_TESTS/fork-burn" 500 250 >"$work/fork.rout" 2>"$work/fork.rerr"
end_session
"$SU" stacks "$lt/fork" >"$work/fork.out" 2>"$work/fork.err"
r=$?
set -- $(cat "$work/fork.rout")   # parent PID child PID
np=$(awk -v p="$2" '$1 == "fork-burn" && $2 == p "/" p { n++ } END { print n + 0 }' "$work/fork.out")
nc=$(awk -v p="$4" '$1 == "fork-burn" && $2 == p "/" p { inp = 1; next } /^fork-burn/ { inp = 0 } inp && /child_burn/ { n++ } END { print n + 0 }' "$work/fork.out")
check "fork: exit $r; parent $2 has $np samples, the child $4 has $nc in child_burn" \
	sh -c "[ $r = 0 ] && [ $np -ge 100 ] && [ $nc -ge 50 ]"

# The main thread leaves by pthread_exit while a worker goes on: the
# worker's samples are recorded.  lttng-ust's own threads keep such a
# process alive once its worker is done (as without stackcap): it is
# killed then (by pid: a zombie leader's command line is empty).  Not
# given a plugin: LTTng-UST names the executable through /proc/self/exe,
# unreadable once the main thread is a zombie, and at the next dlopen
# reports it unloaded (lttng_ust_lib:unload), so frames in it show
# [anon:exec] from then on: LTTng-UST's, not ours to mend.  (Not shown
# failing: the thread's thread-specific data destructors run after
# LTTng-UST's has unregistered it from LTTng-UST's RCU; a sample there must
# not register it again from the signal handler, which takes LTTng-UST's
# locks, and is dropped.  Ours runs before the program's, so late_burn has
# none either way; the window is inside LTTng-UST's own destructor.)
session mainexit "-t vpid -t vtid" || not_ok "main thread's pthread_exit: LTTng session set up"
as_user "$RUN_STACKCAP" record --lttng -- "$RUN_TESTS/tsd-exit-burn" 300 >/dev/null 2>"$work/mainexit.rerr" &
rp=$!
for _ in $(seq 1 3000); do
	grep -q 'worker done' "$work/mainexit.rerr" && break
	sleep 0.01
done
done_said=$(grep -c 'worker done' "$work/mainexit.rerr")
descendants() { for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
for c in $(descendants "$rp"); do
	[ "$(cat "/proc/$c/comm" 2>/dev/null)" = tsd-exit-burn ] && kill -KILL "$c"
done
wait "$rp"
end_session
"$SU" folded "$lt/mainexit" >"$work/mainexit.folded" 2>"$work/mainexit.err"
set -- $(awk '/early_burn/ { e += $NF } /late_burn/ { l += $NF } /worker_burn/ { w += $NF }
	END { print e + 0, l + 0, w + 0 }' "$work/mainexit.folded")
check "main thread's pthread_exit (worker done: $done_said): samples before ($1) and in the worker after ($3), each >= 240 of ~300; none in its destructor ($2)" \
	sh -c "[ $done_said = 1 ] && [ $1 -ge 240 ] && [ $3 -ge 240 ] && [ $2 = 0 ]"

# JIT code mapped after start: a new generation whose code_ranges list the
# page; no LTTng module holds it, so it is anonymous code.
session jit "-t vpid -t vtid" || not_ok "jit: LTTng session set up"
as_user "$RUN_STACKCAP" record --lttng -- "$RUN_TESTS/jit-burn" 1.5 >"$work/jit.addr" 2>"$work/jit.rerr"
end_session
jit=$(cat "$work/jit.addr")
ngen=$(babeltrace2 "$lt/jit" 2>/dev/null | grep 'stackcap:code_ranges:' | grep -o 'generation = [0-9]*' | sort -u | wc -l)
"$SU" stacks "$lt/jit" >"$work/jit.out" 2>"$work/jit.err"
set -- $(awk '/^jit-burn/ { tot++; getline; if ($3 == "([anon:exec])") n++ } END { print n + 0, tot + 0 }' "$work/jit.out")
check "JIT page $jit: $ngen generations, $1 of $2 samples have their leaf in [anon:exec] (>= 50%)" \
	sh -c "[ $ngen -ge 2 ] && [ $2 -ge 500 ] && [ $(( $1 * 2 )) -ge $2 ]"
# Samples in the page come before the code_ranges of its generation (the
# writer thread writes them after): read in one pass, they wait for it.
check "JIT: every sample decoded, none before its generation ($(tail -n 1 "$work/jit.err" | cut -c1-120))" \
	sh -c "grep -q 'stackunwind: [0-9]* samples' '$work/jit.err' && ! grep -q 'not decodable' '$work/jit.err'"

# A damaged LTTng trace: a stream file cut inside its last packet.
cp -r "$lt/single" "$work/cut"
# The largest stream file: over 16 KiB, so more than one packet (the first,
# kept, holds the first code_ranges record).
f=$(ls -S $(find "$work/cut" -name 'c0_*' -size +16k) 2>/dev/null | head -1)
if [ -n "$f" ]; then
	truncate -s -1000 "$f" # inside its last packet
	"$SU" stacks "$work/cut" >"$work/cut.out" 2>"$work/cut.err"
	r=$?
	ns=$(grep -c '^tdata-single' "$work/cut.out")
	check "a cut LTTng stream file: the complete packets are read (exit $r, 3 = read in part; $ns samples), a warning names the file" \
		sh -c "[ $r = 3 ] && grep -q 'cut or malformed packet' '$work/cut.err' && [ $ns -gt 0 ] && [ $ns -lt $(grep -c '^tdata-single' "$work/single.out") ]"
	[ $r = 3 ] || sed 's/^/# /' "$work/cut.err" | head -5
else
	not_ok "a cut LTTng stream file: no stream file over 16 KiB in $lt/single"
fi

# A user's own event with a stack: tests/lttng-probe (linked with
# liblttng-stackcap, captures only) records 200 stackcap_test:tick events
# through stackcap_lttng_tracepoint().
if session probe "-t vpid -t vtid" 'stackcap_test:*'; then
	as_user $RUN_PROBE 200 >"$work/probe.rout" 2>&1
	prc=$?
	end_session
else
	prc=setup
fi
check "lttng-probe: linked liblttng-stackcap, stackcap_init(.lttng = 1): 200 captures (exit $prc: $(head -c 80 "$work/probe.rout"))" \
	sh -c "[ '$prc' = 0 ] && grep -q '^captures 200 drops 0' '$work/probe.rout'"
babeltrace2 "$lt/probe" >"$work/probe.bt" 2>/dev/null
# Every tick is followed, in its thread, by a stackcap:sample, and each
# sample follows a tick.
awk '
	/stackcap_test:tick:|stackcap:sample:/ {
		match($0, /vtid = [0-9]+/); t = substr($0, RSTART, RLENGTH)
		if ($0 ~ /stackcap_test:tick:/) { ticks++; if (last[t] == "tick") bad++; last[t] = "tick" }
		else { samples++; if (last[t] != "tick") bad++; last[t] = "sample" }
	}
	END { printf "%d %d %d\n", ticks, samples, bad }' "$work/probe.bt" >"$work/probe.pairs"
set -- $(cat "$work/probe.pairs")
check "each of the user's 200 events is followed by its stackcap:sample in the same thread ($1 ticks, $2 samples, $3 out of order)" \
	[ "$1 $2 $3" = "200 200 0" ]
"$SU" stacks "$lt/probe" >"$work/probe.out" 2>"$work/probe.err"
chain=$("$B/tests/lttng-probe" --chain | tr '\n' ' ')
set -- $(chain_match "$work/probe.out" $chain)
check "lttng-probe: every sample unwinds to '$chain' (the caller of stackcap_capture innermost) ($1 of $2)" \
	[ "$1 $2" = "200 200" ]


# ---- Python frames (record --lttng --python, tests/python.sh's main chain) ------------
# Each sample's interpreter frames as stackcap:runtime_frames just before it,
# each code object once as stackcap:runtime_code: stackunwind splices and
# names them as in a trace directory (and the plugin, below).
PY=/usr/bin/python3
if session python "-t vpid -t vtid"; then
	as_user "$RUN_STACKCAP" record --lttng --python -- $PY "$RUN_CH" main 0.5 >"$work/python.rout" 2>"$work/python.rerr"
	prc=$?
	end_session
	$PY "$RUN_CH" main 0.1 >/dev/null 2>&1
	plain=$?
	check "python: record --lttng --python exits as python3 alone does ($prc, plain $plain)" [ "$prc" = "$plain" ]
	"$SU" folded "$lt/python" >"$work/python.folded" 2>"$work/python.err"
	set -- $(RE=';PyEval_EvalCode;([^;]*;)*<module>;main_driver;cpu_loop;main_mid;main_leaf(;|$)' awk '
		/;main_leaf(;| )/ { c = $NF; line = $0; sub(/ [0-9]+$/, "", line); h += c; if (line ~ ENVIRON["RE"]) m += c }
		END { print m + 0, h + 0 }' "$work/python.folded")
	check "python: <module>;main_driver;cpu_loop;main_mid;main_leaf under PyEval_EvalCode in $1 of $2 samples through main_leaf (>= 95%, >= 50)" \
		sh -c "[ $2 -ge 50 ] && [ \$(( $1 * 100 )) -ge \$(( $2 * 95 )) ]"
	# Python frames in report as in folded: main_leaf a row of module [python].
	"$SU" report "$lt/python" >"$work/python.report" 2>/dev/null
	want=$(awk '{ c = $NF; t += c; if ($0 ~ /;main_leaf(;| )/) h += c } END { if (t) printf "%.2f%%", 100 * h / t }' \
		"$work/python.folded")
	got=$(awk '!/^#/ && $NF == "main_leaf" && $4 == "[python]" { print $1; exit }' "$work/python.report")
	check "python: report's main_leaf row ([python]) has Children $want as folded ($got)" [ -n "$want" -a "$got" = "$want" ]
else
	not_ok "python: LTTng session set up"
fi

# ---- the babeltrace2 plugin on the LTTng traces (docs/babeltrace2-plugin.md):
# filter.stackcap.unwind adds the callstack to stackcap:sample (and to the
# user's own event that stackcap_lttng_tracepoint follows with a sample);
# sink.stackcap.folded gives stackunwind folded's lines.
PP="$B/plugin/.libs"
BT="babeltrace2 --plugin-path=$PP"
[ -f "$PP/babeltrace-plugin-stackcap.so" ] ||
	not_ok "the babeltrace2 plugin was not built ($PP/babeltrace-plugin-stackcap.so): apt-get install libbabeltrace2-dev"
# bt_chain FILE EVENT CHAIN...: "good total" over EVENT records whose
# callstack's innermost function is CHAIN[1] (good: the whole chain).
bt_chain() {
	f=$1; ev=$2; shift 2
	awk -v chain="$*" -v ev="$ev:" '
	BEGIN { nc = split(chain, C, " ") }
	index($0, ev) {
		k = 0; s = $0
		while (match(s, /function = "[^"]*"/)) { F[++k] = substr(s, RSTART + 12, RLENGTH - 13); s = substr(s, RSTART + RLENGTH) }
		if (k > 0 && F[1] == C[1]) {
			tot++; g = 1
			for (i = 1; i <= nc; i++) if (F[i] != C[i]) g = 0
			good += g
		}
	}
	END { printf "%d %d\n", good, tot }' "$f"
}
for t in "single tdata-single" "threads tdata-threads -t 2" "dlopen tdata-dlopen --reload" "sigalt tdata-sigalt"; do
	set -- $t
	name=$1; prog=$2; shift 2
	$BT "$lt/$name" -c filter.stackcap.unwind >"$work/$name.flt" 2>"$work/$name.flt.err"
	r=$?
	chain=$("$TD/$prog" "$@" --chain | tr '\n' ' ')
	sed -f "$work/sigtramp.sed" "$work/$name.flt" >"$work/$name.flt.named"
	set -- $(bt_chain "$work/$name.flt.named" stackcap:sample $chain)
	check "$name: babeltrace2 -c filter.stackcap.unwind on the LTTng trace (exit $r): callstack '$chain' on >= 99% of hot stackcap:sample events ($1 of $2)" \
		sh -c "[ $r = 0 ] && awk -v g='$1' -v t='$2' 'BEGIN { exit !(t >= 100 && g * 100 >= t * 99) }'"
	[ $r = 0 ] || sed 's/^/# /' "$work/$name.flt.err" | head -5
done
# Every stackcap:sample gets the fields, and nothing else of LTTng's does.
ns=$(grep -c 'stackcap:sample: .*callstack = \[' "$work/single.flt")
nall=$(grep -c 'stackcap:sample:' "$work/single.flt")
nother=$(grep -v 'stackcap:sample:' "$work/single.flt" | grep -c 'callstack = ')
check "single: all $nall stackcap:sample events carry a callstack ($ns), no other event does ($nother)" \
	sh -c "[ $nall -ge 100 ] && [ $ns = $nall ] && [ $nother = 0 ]"
for name in single threads dlopen sigalt exec fork jit probe python; do
	"$SU" folded "$lt/$name" >"$work/$name.su.folded" 2>/dev/null
	$BT "$lt/$name" -c filter.stackcap.unwind -c sink.stackcap.folded >"$work/$name.bt.folded" 2>"$work/$name.bt.err"
	r=$?
	check "$name: sink.stackcap.folded on the LTTng trace (exit $r) = stackunwind folded ($(wc -l <"$work/$name.su.folded") lines, $(awk '{ s += $NF } END { print s + 0 }' "$work/$name.su.folded") samples)" \
		sh -c "[ $r = 0 ] && [ -s '$work/$name.su.folded' ] && cmp -s '$work/$name.su.folded' '$work/$name.bt.folded'"
	[ $r = 0 ] || sed 's/^/# /' "$work/$name.bt.err" | head -5
	cmp -s "$work/$name.su.folded" "$work/$name.bt.folded" ||
		diff "$work/$name.su.folded" "$work/$name.bt.folded" | head -n 20 | sed 's/^/# /'
done
$BT "$lt/single" -c sink.stackcap.folded >/dev/null 2>"$work/nofilter.err"
r=$?
check "sink.stackcap.folded on the LTTng trace without the filter: exit $r, a message naming filter.stackcap.unwind" \
	sh -c "[ $r != 0 ] && grep -q 'put filter.stackcap.unwind before' '$work/nofilter.err'"
# The user's own event: each stackcap_test:tick gets the stack of the
# stackcap:sample that follows it in its thread.
$BT "$lt/probe" -c filter.stackcap.unwind >"$work/probe.flt" 2>"$work/probe.flt.err"
r=$?
chain=$("$B/tests/lttng-probe" --chain | tr '\n' ' ')
set -- $(bt_chain "$work/probe.flt" stackcap_test:tick $chain)
check "lttng-probe: each of the user's 200 stackcap_test:tick events carries its callstack '$chain' (exit $r; $1 of $2)" \
	sh -c "[ $r = 0 ] && [ '$1 $2' = '200 200' ] && [ \$(grep -c 'stackcap_test:tick:' '$work/probe.flt') = 200 ]"
# An LTTng trace with no stackcap event (the user's events and LTTng's
# state dump only) passes the filter unchanged.
if as_user lttng create plain --output="$lt/plain" >/dev/null &&
	as_user lttng enable-event -u 'stackcap_test:*,lttng_ust_statedump:*' >/dev/null &&
	as_user lttng add-context -u -t vpid -t vtid >/dev/null && as_user lttng start >/dev/null; then
	as_user $RUN_PROBE 50 >/dev/null 2>&1
	end_session
fi
babeltrace2 "$lt/plain" >"$work/plain.bt" 2>/dev/null
$BT "$lt/plain" -c filter.stackcap.unwind >"$work/plain.flt" 2>"$work/plain.flt.err"
r=$?
check "an LTTng trace without stackcap events: the filter's text output (exit $r) is babeltrace2's without it ($(grep -c 'stackcap_test:tick:' "$work/plain.bt") ticks, $(grep -c 'lttng_ust_statedump:' "$work/plain.bt") state dump events)" \
	sh -c "[ $r = 0 ] && [ \$(grep -c 'stackcap_test:tick:' '$work/plain.bt') = 50 ] && grep -q lttng_ust_statedump: '$work/plain.bt' && cmp -s '$work/plain.bt' '$work/plain.flt'"

# Without the vpid/vtid contexts samples cannot be placed: a clear error.
session noctx "" || not_ok "session without contexts set up"
as_user "$RUN_STACKCAP" record --lttng -- "$RUN_TD/tdata-single" 0.2 >/dev/null 2>&1
end_session
"$SU" stacks "$lt/noctx" >"$work/noctx.out" 2>"$work/noctx.err"
r=$?
check "a session without vpid/vtid contexts: exit $r, a message naming lttng add-context" \
	sh -c "[ $r != 0 ] && grep -q 'add-context' '$work/noctx.err'"
$BT "$lt/noctx" -c filter.stackcap.unwind >/dev/null 2>"$work/noctx.flt.err"
r=$?
check "filter.stackcap.unwind on a session without vpid/vtid contexts: exit $r, a message naming lttng add-context" \
	sh -c "[ $r != 0 ] && grep -q 'add-context' '$work/noctx.flt.err'"


# A live session (lttng-relayd on private ports, src.ctf.lttng-live): the
# filter unwinds the samples as they stream in.
relayd_pid=
stop_relayd() { stop_process "$relayd_pid"; relayd_pid=; }
trap 'stop_relayd; stop_daemon; rm -rf "$work"' EXIT
mkdir -p "$lt/relay" && chown --reference="$lt/home" "$lt/relay"
# Three ports from a base of our own; another base when they are taken.
relayd_ready() {
	kill -0 "$launcher" 2>/dev/null || return 0
	tcp_port $base 0A && tcp_port $((base + 1)) 0A && tcp_port $((base + 2)) 0A
}
reader_connected() { ! kill -0 "$reader" 2>/dev/null || tcp_port $((base + 2)) 01; }
for try in 1 2 3 4 5; do
	base=$(( 20000 + ($$ * 7 + try * 3001) % 40000 ))
	as_user lttng-relayd -C tcp://127.0.0.1:$base -D tcp://127.0.0.1:$((base + 1)) \
		-L tcp://127.0.0.1:$((base + 2)) -o "$lt/relay" >"$work/relayd.log" 2>&1 &
	launcher=$!
	# Listening on all three ports, or gone (a port was taken): however
	# long a loaded machine takes.  $! is the shell running as_user: the
	# daemon's own pid, by its output directory.
	wait_until 60 relayd_ready
	relayd_pid=$(ps -eo pid,args | awk -v o="-o $lt/relay" '/lttng-relayd/ && index($0, o) { print $1; exit }')
	[ -n "$relayd_pid" ] && alive "$relayd_pid" && break
	relayd_pid=
done
if [ -n "$relayd_pid" ] &&
	as_user lttng create live --live=200000 --set-url=net://127.0.0.1:$base:$((base + 1)) >/dev/null &&
	as_user lttng enable-event -u 'stackcap:*,lttng_ust_statedump:*,lttng_ust_dl:*,lttng_ust_lib:*' >/dev/null &&
	as_user lttng add-context -u -t vpid -t vtid >/dev/null && as_user lttng start >/dev/null; then
	timeout 120 $BT --input-format=lttng-live "net://127.0.0.1:$((base + 2))/host/$(uname -n)/live" \
		-c filter.stackcap.unwind >"$work/live.flt" 2>"$work/live.err" &
	reader=$!
	# The reader attaches at the live end of the streams: it must be
	# connected before the program records (an established connection on
	# the live port), however long it takes to start.
	wait_until 60 reader_connected
	as_user "$RUN_STACKCAP" record --lttng -- "$RUN_TD/tdata-single" 1 >/dev/null 2>"$work/live.rerr"
	sleep 0.5
	end_session
	wait $reader
	r=$?
	chain=$("$TD/tdata-single" --chain | tr '\n' ' ')
	set -- $(bt_chain "$work/live.flt" stackcap:sample $chain)
	check "a live session through src.ctf.lttng-live: the filter (exit $r) gives '$chain' on >= 99% of hot samples ($1 of $2)" \
		sh -c "[ $r = 0 ] && awk -v g='$1' -v t='$2' 'BEGIN { exit !(t >= 100 && g * 100 >= t * 99) }'"
	[ $r = 0 ] || sed 's/^/# /' "$work/live.err" | head -5
else
	not_ok "a live session: lttng-relayd on 127.0.0.1 ports $base-$((base + 2)) or the live session could not be set up"
	sed 's/^/# /' "$work/relayd.log" | head -5
fi
relayd_was=$relayd_pid
pid_was=$daemon_pid
stop_daemon
stop_relayd
# Consumers leave after their session daemon (a loaded machine may take
# its time: the bound only catches one that stays).
daemons_gone() { ! ps -eo stat,args | grep -E 'lttng-(sessiond|consumerd|relayd)' | grep -F "$lt/" | grep -v -e grep -e '^Z' >/dev/null; }
wait_until 30 daemons_gone
alive "$pid_was" && left="lttng-sessiond $pid_was" || left=
[ -n "$relayd_was" ] && alive "$relayd_was" && left="$left lttng-relayd $relayd_was"
left=$left$(ps -eo stat,pid,args | grep -E 'lttng-(sessiond|consumerd|relayd)' | grep -F "$lt/" | grep -v -e grep -e '^Z')
check "the session daemon, its consumers and the relay daemon are gone" [ -z "$left" ]
[ -z "$left" ] || echo "# left: $left"
echo "1..$n"
