#!/bin/sh
# Integration: stackcap record -e EVENT (record/events.c): a tracepoint, a
# uprobe, SDT markers (one behind a semaphore), software events, several
# events in one recording, -p and -a; the event per sample in the trace
# (format version 4) and in stackunwind's stacks, --event and stats; bad
# event names; a trace of the parent commit still reads.
#
# Counts are exact: tdata-events makes N rounds of one write(2), one call of
# probe_hit, one tdata:tick marker and one tdata:guarded marker, and each
# hit is one sample.  Nothing here depends on timing: the recorder's rings
# for hit events (16 MiB per CPU) hold every sample of these runs (under
# 8.5 KB each with --stack-size 8192) even if it never drained them before
# the program ended, and each run checks that nothing was dropped.
. "${top_srcdir:?}/tests/tap-lib.sh"
need "util-linux" runuser
need "python3" python3
UNW="$B/cli/stackunwind"
EV="$TD/tdata-events"

# rec NAME ARGS...: stackcap record -o $work/NAME.trace --stack-size 8192 ARGS
# (status in NAME.rc, stderr in NAME.err), run from $TD so that the uprobe
# is named tdata-events:probe_hit.
rec() {
	name=$1; shift
	(cd "$TD" && "$STACKCAP" record -o "$work/$name.trace" --stack-size 8192 "$@") >"$work/$name.out" 2>"$work/$name.err"
	echo $? >"$work/$name.rc"
}
rc_is() { [ "$(cat "$work/$1.rc")" = "$2" ]; }
# folded NAME EVENT: the folded stacks of that event
folded() { "$UNW" folded --event "$2" "$work/$1.trace" 2>"$work/$1.ferr"; }
total() { awk '{ n += $NF } END { print n + 0 }'; }
# on_chain NAME EVENT CHAIN: the samples of EVENT whose folded stack ends in
# CHAIN (outermost first, ';'-separated), with REST after it (a regex: libc's
# write above write_once).
on_chain() { folded "$1" "$2" | awk -v c=";$3$4 [0-9]+\$" '$0 ~ c { n += $NF } END { print n + 0 }'; }
# chain KIND: tdata-events -k KIND --chain, outermost first, ';'-joined
chain() { "$EV" -k "$1" --chain | awk '{ a[NR] = $0 } END { for (i = NR; i >= 1; i--) printf "%s%s", a[i], (i > 1 ? ";" : "") }'; }
# per_event NAME EVENT: stackunwind stats' count of EVENT
per_event() { "$UNW" stats "$work/$1.trace" 2>/dev/null | awk -v e="$2" '$1 == e && $3 == "samples" { print $2 }'; }
drops0() { "$UNW" stats "$work/$1.trace" 2>/dev/null | grep -q '^drops: *0 at capture, 0 lost'; }

# 0. What the kernel and the build must have.
check "the kernel has a uprobe PMU (/sys/bus/event_source/devices/uprobe)" \
	test -r /sys/bus/event_source/devices/uprobe/type
# tracefs, where tracepoint ids are: a bare system (a fresh chroot, a
# container) may not have it mounted; root mounts it as the kernel offers
# it, and unmounts it at the end.
mounted_tracefs=
if ! [ -d /sys/kernel/tracing/events ] && [ "$(id -u)" = 0 ] && [ -d /sys/kernel/tracing ] &&
	mount -t tracefs nodev /sys/kernel/tracing 2>"$work/tracefs.err"; then
	mounted_tracefs=1
	trap 'umount /sys/kernel/tracing 2>/dev/null; rm -rf "$work"' EXIT
fi
check "tracefs is mounted (/sys/kernel/tracing/events; as root: mount -t tracefs nodev /sys/kernel/tracing)" \
	test -d /sys/kernel/tracing/events
if "$EV" --sdt 2>"$work/sdt.err"; then ok "tdata-events has its SDT markers (<sys/sdt.h>)"; else
	not_ok "tdata-events has its SDT markers: $(cat "$work/sdt.err") then configure and make again"; fi

# 1. A tracepoint: one stack per write(2), each in libc's write under write_once.
N=1000
rec wr -e syscalls:sys_enter_write -- ./tdata-events -n $N
W=$(chain write)
check "sys_enter_write: exit 0" rc_is wr 0
check "sys_enter_write: nothing dropped" drops0 wr
s=$(folded wr syscalls:sys_enter_write | total)
check "sys_enter_write: $s stacks, one per write ($N)" [ "$s" = "$N" ]
c=$(on_chain wr syscalls:sys_enter_write "$W" ';[^;]*write[^;]*')
check "sys_enter_write: $c of $N end in libc's write under $W" [ "$c" = "$N" ]
check "sys_enter_write: stats counts $N of the event" [ "$(per_event wr syscalls:sys_enter_write)" = "$N" ]
check "the recorder's summary counts the event" grep -q "samples per event: syscalls:sys_enter_write $N\$" "$work/wr.err"
check "the trace is format version 4 with its event table" \
	grep -q 'stackcap_event_0 = "syscalls:sys_enter_write";' "$work/wr.trace/metadata"
h=$("$UNW" stacks "$work/wr.trace" 2>/dev/null | grep -c '^tdata-events [0-9]*/[0-9]* [0-9]*\.[0-9]*: syscalls:sys_enter_write:$')
check "stacks prints the event after the time on each of the $N headers ($h)" [ "$h" = "$N" ]

# 2. A uprobe and the SDT markers, in one recording with cpu-clock beside them.
# Three hits a round: 500 rounds, 1,500 samples (12.8 MB), fit the 16 MiB
# ring of one CPU (700 rounds did not: a loaded run lost 108 of 2,100,
# counted, as the recorder had no CPU to drain them before the end).
N=500
rec all -e tdata-events:probe_hit -e sdt:tdata:tick -e sdt:tdata:guarded -e cpu-clock -- ./tdata-events -n $N
check "uprobe + SDT + cpu-clock: exit 0" rc_is all 0
check "uprobe + SDT + cpu-clock: nothing dropped" drops0 all
for k in "probe tdata-events:probe_hit" "sdt sdt:tdata:tick" "guarded sdt:tdata:guarded"; do
	set -- $k
	s=$(folded all "$2" | total); c=$(on_chain all "$2" "$(chain "$1")" "")
	check "$2: $s stacks, one per hit ($N)" [ "$s" = "$N" ]
	check "$2: all $N on $(chain "$1") ($c)" [ "$c" = "$N" ]
done
# Without its semaphore raised the guarded marker is never reached.
check "sdt:tdata:guarded needs its semaphore: the kernel raised it (ref_ctr_offset)" \
	[ "$(per_event all sdt:tdata:guarded)" = "$N" ]
"$UNW" stacks "$work/all.trace" 2>/dev/null | sed -n 's/^tdata-events [0-9]*\/[0-9]* [0-9.]*: \(.*\):$/\1/p' | sort | uniq -c >"$work/all.names"
check "stacks names each sample's event ($(tr -s ' \n' ' ' <"$work/all.names"))" \
	awk -v n=$N '$2 != "cpu-clock" && $1 != n { bad = 1 } END { exit bad || NR != 4 }' "$work/all.names"
"$UNW" folded "$work/all.trace" >"$work/all.native" 2>/dev/null
"$UNW" folded --reader babeltrace2 "$work/all.trace" >"$work/all.bt2" 2>/dev/null
check "babeltrace2's reader gives the same folded stacks" cmp -s "$work/all.native" "$work/all.bt2"
for e in tdata-events:probe_hit sdt:tdata:tick; do
	"$UNW" folded --reader babeltrace2 --event "$e" "$work/all.trace" 2>/dev/null | total >"$work/bt2.n"
	check "babeltrace2's reader: --event $e selects $N" [ "$(cat "$work/bt2.n")" = "$N" ]
done
check "babeltrace2 reads the version-4 trace (event_sample with its event_index)" \
	sh -c "babeltrace2 '$work/all.trace' 2>/dev/null | grep -q 'event_sample: .*event_index = '"
"$UNW" export --format speedscope --event sdt:tdata:tick -o "$work/all.json" "$work/all.trace" 2>/dev/null
x=$(python3 -c 'import json, sys; print(sum(len(p["samples"]) for p in json.load(open(sys.argv[1]))["profiles"]))' \
	"$work/all.json" 2>/dev/null)
check "export --event sdt:tdata:tick: $x samples in the speedscope profile ($N)" [ "$x" = "$N" ]
"$UNW" folded --event no:such "$work/all.trace" >"$work/none.out" 2>"$work/none.err"
check "--event of no sample: nothing, and says so" \
	sh -c "[ ! -s '$work/none.out' ] && grep -q 'no sample of event no:such' '$work/none.err'"

# 3. -p: attached before the program starts its rounds.
N=400
rm -f "$work/go"
"$EV" -n $N --wait "$work/go" &
pid=$!
# Attached once the shell's child is the program: before its exec it is
# dash, whose files hold no such probe (the recorder says so and stops;
# seen under load).
wait_until 30 grep -q tdata-events "/proc/$pid/maps" || echo "# $EV did not start"
(cd "$TD" && "$STACKCAP" record -p $pid -e tdata-events:probe_hit -e sdt:tdata:guarded --stack-size 8192 \
	-o "$work/p.trace") >"$work/p.out" 2>"$work/p.err" &
rp=$!
wait_until 60 sh -c "ls '$work/p.trace'/proc-* >/dev/null 2>&1" || echo "# the recorder never wrote its process stream"
touch "$work/go"
wait $rp
echo $? >"$work/p.rc"
wait $pid
check "-p: exit 0" rc_is p 0
rc_is p 0 || sed 's/^/# /' "$work/p.err" | head -n 5
for k in "probe tdata-events:probe_hit" "guarded sdt:tdata:guarded"; do
	set -- $k
	c=$(on_chain p "$2" "$(chain "$1")" "")
	check "-p $2: $N stacks on $(chain "$1") ($c)" [ "$c" = "$N" ]
done

# 4. -a: the uprobe on the file, in every process that runs it.
N=300
rec a -a -e tdata-events:probe_hit -e sdt:tdata:tick -- ./tdata-events -n $N
check "-a: exit 0" rc_is a 0
for k in "probe tdata-events:probe_hit" "sdt sdt:tdata:tick"; do
	set -- $k
	c=$(on_chain a "$2" "$(chain "$1")" "")
	check "-a $2: $N stacks on $(chain "$1") ($c)" [ "$c" = "$N" ]
done

# 4b. A library's events: tdata-evlib calls libtdata-evlib.so (its
# DT_NEEDED) N times; the SDT marker named without its file is found among
# the libraries the command loads, the uprobe by the library's name; libc's
# own write(2) wrapper by libc's name.
LB="$TD/tdata-evlib"
lchain=$("$LB" --chain | awk '{ a[NR] = $0 } END { for (i = NR; i >= 1; i--) printf "%s%s", a[i], (i > 1 ? ";" : "") }')
N=250
rec lib -e sdt:tdata_lib:lib_tick -e libtdata-evlib.so:evlib_hit -e libtdata-evlib:evlib_run -- ./tdata-evlib -n $N
check "library events: exit 0 ($(head -n 1 "$work/lib.err"))" rc_is lib 0
c=$(on_chain lib sdt:tdata_lib:lib_tick "$lchain" "")
check "sdt:tdata_lib:lib_tick (in libtdata-evlib.so, found through DT_NEEDED): $N stacks on $lchain ($c)" [ "$c" = "$N" ]
c=$(on_chain lib libtdata-evlib.so:evlib_hit "$lchain" "")
check "libtdata-evlib.so:evlib_hit (a uprobe on a library by its file name): $N stacks on $lchain ($c)" [ "$c" = "$N" ]
c=$(on_chain lib libtdata-evlib:evlib_run "${lchain%;evlib_hit}" "")
check "libtdata-evlib:evlib_run (by the library's stem): 1 stack on ${lchain%;evlib_hit} ($c)" [ "$c" = 1 ]
rec libc -e libc:write -- ./tdata-events -n $N
c=$(on_chain libc libc:write "$(chain write)" ';[^;]*write[^;]*')
check "libc:write (a uprobe in libc.so.6): $N stacks, each write under write_once ($c of $(folded libc libc:write | total))" \
	[ "$c" = "$N" ]
rec libno -e sdt:tdata_lib:no_such -- ./tdata-evlib -n 3
check "an SDT marker in none of the command's files and libraries: status 1, says where it looked" \
	sh -c "[ \$(cat '$work/libno.rc') = 1 ] && grep -q 'no SDT marker tdata_lib:no_such in .*tdata-evlib nor the [0-9]* libraries' '$work/libno.err'"
# -p: the attached process's mapped libraries; -a: the library's file, any process.
rm -f "$work/lgo"
"$LB" -n $N --wait "$work/lgo" &
pid=$!
# Once the program's library is mapped (the probes are looked for there).
wait_until 30 grep -q libtdata-evlib "/proc/$pid/maps" || echo "# $LB did not map its library"
(cd "$TD" && "$STACKCAP" record -p $pid -e sdt:tdata_lib:lib_tick -e libtdata-evlib.so:evlib_hit --stack-size 8192 \
	-o "$work/libp.trace") >"$work/libp.out" 2>"$work/libp.err" &
rp=$!
wait_until 60 sh -c "ls '$work/libp.trace'/proc-* >/dev/null 2>&1" || echo "# the recorder never wrote its process stream"
touch "$work/lgo"
wait $rp
echo $? >"$work/libp.rc"
wait $pid
check "-p with library events: exit 0 ($(head -n 1 "$work/libp.err"))" rc_is libp 0
for e in sdt:tdata_lib:lib_tick libtdata-evlib.so:evlib_hit; do
	c=$(on_chain libp "$e" "$lchain" "")
	check "-p $e: $N stacks on $lchain ($c)" [ "$c" = "$N" ]
done
rec liba -a -e sdt:tdata_lib:lib_tick -- ./tdata-evlib -n $N
c=$(on_chain liba sdt:tdata_lib:lib_tick "$lchain" "")
check "-a sdt:tdata_lib:lib_tick: $N stacks on $lchain ($c)" [ "$c" = "$N" ]

# 5. Software events: each sample named, on the known chain.
rec tc -e task-clock -- ./tdata-single 0.3
s=$(folded tc task-clock | total); c=$(folded tc task-clock | awk '/;hot_leaf / { n += $NF } END { print n + 0 }')
check "task-clock: $s samples, >= 90% in hot_leaf ($c)" awk -v s="$s" -v c="$c" 'BEGIN { exit !(s > 0 && c * 10 >= s * 9) }'
rec pf -e page-faults -c 1 -- ./tdata-events -n 10
s=$(folded pf page-faults | total)
check "page-faults -c 1: a sample per fault ($s)" [ "$s" -gt 0 ]
check "page-faults: every sample is of that event" [ "$(per_event pf page-faults)" = "$s" ]

# 5b. perf's spellings: NAME/period=N/ (the event's own period), NAME:u
# and NAME:k (a software event in user or kernel mode only).
rec per -e syscalls:sys_enter_write/period=10/ -e page-faults/period=1/ -- ./tdata-events -n 1000
check "syscalls:sys_enter_write/period=10/: every 10th of 1000 writes, 100 samples, named as given ($(per_event per syscalls:sys_enter_write/period=10/))" \
	[ "$(per_event per syscalls:sys_enter_write/period=10/)" = 100 ]
check "page-faults/period=1/: a sample per fault ($(per_event per page-faults/period=1/))" \
	[ "$(per_event per page-faults/period=1/)" -gt 0 ]
# dd spends most of its time in the kernel: :u keeps its user-mode
# samples only (no kernel frame), :k its kernel-mode ones (each with its
# kernel frames, above the user stack that made the system call).
kstacks() { "$UNW" stacks "$work/$1.trace" 2>/dev/null | awk '
	/^[^\t ]/ { if (n) { t++; k += hk }; n = 1; hk = 0; next }
	/\(\[kernel\.kallsyms\]\)$/ { hk = 1 }
	END { if (n) { t++; k += hk }; print t + 0, k + 0 }'; }
rec ku -e cpu-clock:u -- dd if=/dev/zero of=/dev/null bs=64k count=100000
rec kk -e cpu-clock:k -- dd if=/dev/zero of=/dev/null bs=64k count=100000
set -- $(kstacks ku) $(kstacks kk)
check "cpu-clock:u: user-mode samples only, none with kernel frames ($2 of $1)" [ "$1" -ge 1 -a "$2" = 0 ]
check "cpu-clock:k: kernel-mode samples only, each with kernel frames ($4 of $3)" [ "$3" -ge 20 -a "$4" = "$3" ]
check "cpu-clock:k: named as given ($(per_event kk cpu-clock:k))" [ "$(per_event kk cpu-clock:k)" = "$3" ]
# -a: every process's kernel-mode samples, each with its kernel frames.
rec kka -a -e cpu-clock:k -- dd if=/dev/zero of=/dev/null bs=64k count=100000
set -- $(kstacks kka)
check "-a cpu-clock:k: exit 0, kernel-mode samples only, each with kernel frames ($2 of $1)" \
	sh -c "[ \$(cat '$work/kka.rc') = 0 ] && [ $1 -ge 20 ] && [ $2 = $1 ]"

# 6. Bad events: a message naming the event and why, status 1, no trace.
bad() {
	want=$1; shift
	rm -rf "$work/bad.trace"
	(cd "$TD" && "$STACKCAP" record -o "$work/bad.trace" "$@" -- ./tdata-events -n 3) >/dev/null 2>"$work/bad.err"
	st=$?
	check "record $* fails ($st), says '$want', leaves no trace" \
		sh -c "[ $st = 1 ] && grep -q -- \"$want\" '$work/bad.err' && [ ! -e '$work/bad.trace' ]"
}
bad "unknown event 'no-such-event'" -e no-such-event
bad "no tracepoint sched:no_such" -e sched:no_such
bad "no function no_such_func in the symbol tables" -e tdata-events:no_such_func
bad "no file /no/such" -e /no/such:main
bad "no SDT marker tdata:no_such in" -e sdt:tdata:no_such
bad "sdt:PROVIDER:NAME or sdt:BINARY:PROVIDER:NAME" -e sdt:nocolon
bad "given twice" -e cpu-clock -e cpu-clock
bad "modifier 'p' not supported" -e cpu-clock:p
bad "modifiers u and k apply to software events" -e sched:sched_switch:k
bad "happens in the kernel: in user mode only (:u) it never fires" -e context-switches:u
bad "term 'foo=...' not supported" -e cpu-clock/foo=1/
bad "term 'period=...' not supported" -e page-faults/period=0/
bad "terms go between two slashes" -e page-faults/period=3
# Not permitted: an unprivileged user reads no tracepoint id and opens no uprobe.
# (tracefs is root's; the uprobe PMU needs CAP_PERFMON, whatever
# kernel.perf_event_paranoid says)
nb=$(mktemp -d /tmp/stackcap-nobody.XXXXXX)
chmod 777 "$nb"
runuser -u nobody -- "$STACKCAP" record -o "$nb/t1" -e syscalls:sys_enter_write -- "$EV" -n 3 \
	>/dev/null 2>"$work/nb1.err"
st=$?
check "as nobody, a tracepoint: status $st, the reason given ($(head -c 150 "$work/nb1.err"))" \
	sh -c "[ $st = 1 ] && grep -q \"event 'syscalls:sys_enter_write'.*Permission denied\" '$work/nb1.err'"
runuser -u nobody -- "$STACKCAP" record -o "$nb/t2" -e "$EV:probe_hit" -- "$EV" -n 3 >/dev/null 2>"$work/nb2.err"
st=$?
check "as nobody, a uprobe: status $st, the reason given ($(head -c 150 "$work/nb2.err"))" \
	sh -c "[ $st = 1 ] && grep -q 'event $EV:probe_hit): not permitted' '$work/nb2.err'"
rm -rf "$nb"

# 7. Traces without an event table: every sample is cpu-clock.
OLD="$top_srcdir/testdata/trace-v1"
o=$("$UNW" folded "$OLD" 2>/dev/null | total)
check "a trace of the parent commit (testdata/trace-v1, version 1) reads: $o samples" [ "$o" = 50 ]
check "... stats counts them as cpu-clock" sh -c "'$UNW' stats '$OLD' | grep -q '^  cpu-clock  *50 samples'"
check "... --event cpu-clock selects them all" [ "$("$UNW" folded --event cpu-clock "$OLD" 2>/dev/null | total)" = 50 ]
check "... --event sched:sched_switch selects none" [ "$("$UNW" folded --event sched:sched_switch "$OLD" 2>/dev/null | total)" = 0 ]
h=$("$UNW" stacks "$OLD" 2>/dev/null | grep -c '^tdata-single [0-9]*/[0-9]* [0-9]*\.[0-9]*:$')
check "... stacks' headers as before, no event ($h of 50)" [ "$h" = 50 ]
rec def -- ./tdata-single 0.1
check "a recording without -e writes no event table" \
	sh -c "! grep -q 'stackcap_event\|event_sample' '$work/def.trace/metadata' && ! grep -q 'stackcap_trace_version = 4' '$work/def.trace/metadata'"
rec cc -e cpu-clock -- ./tdata-single 0.1
check "-e cpu-clock alone: the same, no event table" sh -c "! grep -q 'stackcap_event' '$work/cc.trace/metadata'"

echo "1..$n"
