#!/bin/sh
# Integration: the babeltrace2 plugin `stackcap` (plugin/) from the build
# tree: its three component classes are listed; filter.stackcap.unwind
# gives every sample event a callstack holding the testdata program's
# known chain; sink.stackcap.folded writes what `stackunwind folded` writes
# (inlined frames, threads, fork, deep stacks past the cap, alternate-stack
# segments, full copies, maps generations that change, a moved binary and
# debug-dir=, the sink's options); samples without maps leave not-decoded;
# source.stackcap.trace reads a --zstd trace and gives the same text and
# trace IR as src.ctf.fs on its inflated copy; kernel frames (dd), event
# names (-e) and off-CPU time in the filter and the sink; another kind of trace passes
# the filter unchanged; bad input (no trace, a cut or damaged file, unknown
# parameters, the sink without the filter) is an error or a warning, never a
# crash.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
PP="$B/plugin/.libs"
BT="babeltrace2 --plugin-path=$PP"

if [ ! -f "$PP/babeltrace-plugin-stackcap.so" ]; then
	echo "1..1"
	echo "not ok 1 - $PP/babeltrace-plugin-stackcap.so not built (make)"
	exit 0
fi
if ! command -v zstd >/dev/null; then
	echo "1..1"
	echo "not ok 1 - zstd missing: apt-get install zstd (scripts/install-deps.sh)"
	exit 0
fi

# Traces recorded as root keep kernel frames (format version 3): the
# filter shows them above the user frames, as stackunwind does.
# A crash is an exit status of 128 or more (or a babeltrace2 abort).
no_crash() { [ "$(rc "$1")" -lt 128 ] && ! grep -q 'Aborting' "$work/$1.err"; }
# all_of "SHELL CONDITION": for check, evaluated here (it may call the functions above).
all_of() { eval "$1"; }

# ---- the plugin is found ---------------------------------------------------------
run list $BT list-plugins
for cc in source.stackcap.trace filter.stackcap.unwind sink.stackcap.folded; do
	check "list-plugins shows '$cc'" grep -q "'$cc'" "$work/list.out"
done

# ---- the filter: every sample event gets a callstack with the known chain ----------
record single -- "$TD/tdata-single" 0.5
run single-f $BT "$work/single.trace" -c filter.stackcap.unwind
check "filter on a stackcap trace exits 0 ($(rc single-f))" [ "$(rc single-f)" = 0 ]
nsamples=$(grep -c '\] (+[0-9.?]*) sample: ' "$work/single-f.out")
ncs=$(grep '\] (+[0-9.?]*) sample: ' "$work/single-f.out" | grep -c 'callstack = \[ \[0\] = { ip = 0x')
check "every sample event carries a non-empty callstack ($ncs of $nsamples, >= 100)" \
	[ "$nsamples" -ge 100 -a "$ncs" = "$nsamples" ]
nend=$(grep '\] (+[0-9.?]*) sample: ' "$work/single-f.out" | grep -c 'unwind_end = "outermost"')
check "every sample unwound to its outermost frame ($nend of $nsamples)" [ "$nend" = "$nsamples" ]
# The functions of each sample's callstack, innermost first, against --chain.
chain=$("$TD/tdata-single" --chain | tr '\n' ' ')
set -- $(grep '\] (+[0-9.?]*) sample: ' "$work/single-f.out" | awk -v chain="$chain" '
	BEGIN { nc = split(chain, C, " ") }
	{
		n = 0; s = $0
		while (match(s, /function = "[^"]*"/)) {
			F[++n] = substr(s, RSTART + 12, RLENGTH - 13); s = substr(s, RSTART + RLENGTH)
		}
		if (F[1] != C[1]) next
		tot++; good1 = 1
		for (i = 1; i <= nc; i++) if (F[i] != C[i]) good1 = 0
		good += good1
	}
	END { printf "%d %d\n", good, tot }')
check "hot samples' callstacks hold the chain '$chain' (>= 99%: $1 of $2)" \
	awk -v g="$1" -v t="$2" 'BEGIN { exit !(t >= 100 && g * 100 >= t * 99) }'
check "callstack frames carry module, file and line" \
	grep -q 'function = "level_a", module = "[^"]*tdata-single", offset = 0x[0-9A-Fa-f]*, file = "[^"]*single.c", line = [1-9]' "$work/single-f.out"
# Every other event passes through unchanged.
babeltrace2 "$work/single.trace" | grep -v '\] (+[0-9.?]*) sample: ' >"$work/single-other.ref"
grep -v '\] (+[0-9.?]*) sample: ' "$work/single-f.out" >"$work/single-other.out"
check "events other than samples pass through unchanged" cmp -s "$work/single-other.ref" "$work/single-other.out"
babeltrace2 "$work/single.trace" | grep '\] (+[0-9.?]*) sample: ' >"$work/single-samples.ref"
grep '\] (+[0-9.?]*) sample: ' "$work/single-f.out" | sed 's/, comm = .*/ }/' >"$work/single-samples.out"
check "sample events keep their own fields and times" cmp -s "$work/single-samples.ref" "$work/single-samples.out"

# ---- the folded sink: stackunwind folded's text ------------------------------------
# folded_same NAME TRACE [SINK-PARAMS [STACKUNWIND-OPTIONS]]
folded_same() {
	name=$1 tr=$2 params=${3:-} opts=${4:-}
	if [ -n "$params" ]; then
		run "$name-bt" $BT "$tr" -c filter.stackcap.unwind -c sink.stackcap.folded -p "$params"
	else
		run "$name-bt" $BT "$tr" -c filter.stackcap.unwind -c sink.stackcap.folded
	fi
	"$SU" folded $opts "$tr" >"$work/$name-su.out" 2>/dev/null
	check "$name: sink.stackcap.folded ${params:+($params) }== stackunwind folded $opts ($(wc -l <"$work/$name-su.out") lines)" \
		sh -c "[ \"$(rc "$name-bt")\" = 0 ] && [ -s '$work/$name-su.out' ] && cmp -s '$work/$name-bt.out' '$work/$name-su.out'"
}
folded_same single "$work/single.trace"
folded_same single-thread "$work/single.trace" 'per-thread=yes' --per-thread
record inline -- "$TD/tdata-inline" 0.5
folded_same inline "$work/inline.trace"
check "inline: folded stacks hold inlined frames" grep -q 'inline_hot;inl_middle;inl_leaf' "$work/inline-bt.out"
folded_same inline-noinl "$work/inline.trace" 'no-inline=yes' --no-inline
record threads -- "$TD/tdata-threads" -t 3 0.5
folded_same threads "$work/threads.trace" 'per-process=yes' --per-process
# Parent and child after fork(): two processes, two process streams.
record fork -- "$B/tests/fork-burn" 500 250
folded_same fork "$work/fork.trace" 'per-process=yes' --per-process
check "fork: stacks of two processes" [ "$(cut -d';' -f1 "$work/fork-bt.out" | sort -u | wc -l)" -ge 2 ]
# 1000 frames (~80 KB of stack) pass the 64 KiB cap: rooted under [truncated].
record recurse -- "$TD/tdata-recurse" -d 2000 0.3
folded_same recurse "$work/recurse.trace"
check "recurse: capped stacks are rooted under [truncated]" grep -q '^tdata-recurse;\[truncated\];' "$work/recurse-bt.out"
# sample_segment events (a handler on the alternate signal stack) and
# sample_full events (--full-copy) reach the reader core too.
# In process: the kernel copy holds the alternate stack only (tests/unwind.sh).
record sigalt --in-process -- "$TD/tdata-sigalt" 0.5
folded_same sigalt "$work/sigalt.trace"
# libc's trampoline named, or as libc.so.6+offset without libc6-dbg (tap-lib.sh).
sigtramp_sed >"$work/sigtramp.sed"
check "sigalt: stacks go on through libc's signal trampoline (__restore_rt) into the interrupted code" \
	sh -c "sed -f '$work/sigtramp.sed' '$work/sigalt-bt.out' | grep -q ';main;trigger_loop;__restore_rt;handler_entry;'"
record full --full-copy -- "$TD/tdata-single" 0.3
folded_same full "$work/full.trace"
# JIT code named in /tmp/perf-PID.map: the filter names it as stackunwind does.
"$STACKCAP" record --user-only -o "$work/jit.trace" -- "$B/tests/jit-burn" 0.5 perf-map >/dev/null 2>"$work/jit.rerr"
jpid=$(ls "$work/jit.trace" | sed -n 's/^proc-\([0-9]*\)-.*/\1/p' | head -n 1)
folded_same jit "$work/jit.trace"
run jit-f $BT "$work/jit.trace" -c filter.stackcap.unwind
rm -f "/tmp/perf-$jpid.map"
njit=$(grep -c "function = \"jit_count_loop\", module = \"/tmp/perf-$jpid.map\"" "$work/jit-f.out")
check "filter: JIT frames named from /tmp/perf-$jpid.map ($njit)" [ "$njit" -ge 100 ]
# /tmp's map gone: the filter reads the trace's copy given as jit-dir.
run jit-d $BT "$work/jit.trace" -c filter.stackcap.unwind -p "jit-dir=\"$work/jit.trace/jit\""
run jit-n $BT "$work/jit.trace" -c filter.stackcap.unwind
njd=$(grep -c "function = \"jit_count_loop\", module = \"/tmp/perf-$jpid.map\"" "$work/jit-d.out")
njn=$(grep -c "function = \"jit_count_loop\"" "$work/jit-n.out")
check "filter: with jit-dir, the trace's copy of the map names as many ($njd of $njit; $njn without it)" \
	sh -c "[ $njd = $njit ] && [ $njn = 0 ]"
# dlopen/dlclose: maps generations change while sampling (samples wait for
# the maps event the writer stamps after them).
record dlopen -- "$TD/tdata-dlopen" --reload 0.5
folded_same dlopen "$work/dlopen.trace"
# The binary moved after recording: found again with debug-dir=.
mkdir "$work/bin" "$work/dbg"
cp "$TD/tdata-single" "$work/bin/moved-single"
record moved -- "$work/bin/moved-single" 0.3
mv "$work/bin/moved-single" "$work/dbg/"
run moved-lost $BT "$work/moved.trace" -c filter.stackcap.unwind -p no-debuginfod=yes -c sink.stackcap.folded
run moved-found $BT "$work/moved.trace" -c filter.stackcap.unwind -p "debug-dir=\"$work/dbg\",no-debuginfod=yes" -c sink.stackcap.folded
"$SU" folded --debug-dir "$work/dbg" --no-debuginfod "$work/moved.trace" >"$work/moved-su.out" 2>/dev/null
"$SU" folded --no-debuginfod "$work/moved.trace" >"$work/moved-lost-su.out" 2>/dev/null
check "moved binary: module+offset frames without debug-dir (== stackunwind)" \
	all_of "grep -q ';moved-single+0x[0-9a-f]* [0-9]*$' '$work/moved-lost.out' && cmp -s '$work/moved-lost.out' '$work/moved-lost-su.out'"
check "moved binary: debug-dir= finds it (== stackunwind --debug-dir)" \
	all_of "grep -q ';level_a;level_b;level_c;hot_leaf ' '$work/moved-found.out' && cmp -s '$work/moved-found.out' '$work/moved-su.out'"
run sink-path $BT "$work/single.trace" -c filter.stackcap.unwind -c sink.stackcap.folded -p "path=\"$work/folded.txt\""
check "folded sink writes to path= (and nothing to stdout)" \
	sh -c "[ \"$(rc sink-path)\" = 0 ] && [ ! -s '$work/sink-path.out' ] && cmp -s '$work/folded.txt' '$work/single-su.out'"

# ---- the source: --zstd traces -----------------------------------------------------
record z --zstd -- "$TD/tdata-single" 0.5
# The plain equivalent: every .zst stream file inflated (zstd -d gives the
# plain stream file byte for byte, docs/trace-format.md).
mkdir "$work/zplain.trace"
cp "$work/z.trace/metadata" "$work/zplain.trace/"
for f in "$work/z.trace/"*.zst; do
	zstd -q -d "$f" -o "$work/zplain.trace/$(basename "$f" .zst)"
done
run zsrc $BT -c source.stackcap.trace -p "inputs=[\"$work/z.trace\"]"
babeltrace2 "$work/zplain.trace" >"$work/zplain.out" 2>/dev/null
check "source on a --zstd trace exits 0 ($(rc zsrc)) with events ($(wc -l <"$work/zsrc.out"))" \
	[ "$(rc zsrc)" = 0 -a "$(wc -l <"$work/zsrc.out")" -ge 100 ]
check "source on the --zstd trace prints src.ctf.fs's text of its inflated copy" cmp -s "$work/zsrc.out" "$work/zplain.out"
run zsrc-d $BT -c source.stackcap.trace -p "inputs=[\"$work/z.trace\"]" -c sink.text.details
babeltrace2 "$work/zplain.trace" -c sink.text.details 2>/dev/null | sed "s|$work/zplain.trace/\([^ ]*\)|$work/z.trace/\1.zst|" >"$work/zplain-d.out"
check "source: the same trace IR, streams and packets as src.ctf.fs (sink.text.details)" \
	cmp -s "$work/zsrc-d.out" "$work/zplain-d.out"
run psrc $BT -c source.stackcap.trace -p "inputs=[\"$work/single.trace\"]"
check "source on a plain trace prints src.ctf.fs's text" \
	sh -c "babeltrace2 '$work/single.trace' | cmp -s - '$work/psrc.out'"
run zfold $BT -c source.stackcap.trace -p "inputs=[\"$work/z.trace\"]" -c filter.stackcap.unwind -c sink.stackcap.folded
"$SU" folded "$work/z.trace" >"$work/zfold-su.out" 2>/dev/null
check "source + filter + folded sink on the --zstd trace == stackunwind folded" \
	sh -c "[ \"$(rc zfold)\" = 0 ] && [ -s '$work/zfold-su.out' ] && cmp -s '$work/zfold.out' '$work/zfold-su.out'"

# Without its process stream no sample can be decoded: each waits for maps
# that never come, then leaves with an empty callstack.
cp -r "$work/single.trace" "$work/noproc.trace"
rm "$work/noproc.trace/"proc-*
run noproc $BT "$work/noproc.trace" -c filter.stackcap.unwind
nnd=$(grep -c 'callstack = \[ \], unwind_end = "not-decoded"' "$work/noproc.out")
check "no maps: every sample leaves, not-decoded with an empty callstack ($nnd of $nsamples)" \
	sh -c "[ \"$(rc noproc)\" = 0 ] && [ $nnd = $nsamples ]"
run noproc-fold $BT "$work/noproc.trace" -c filter.stackcap.unwind -c sink.stackcap.folded
check "no maps: the folded sink writes nothing, as stackunwind folded" \
	sh -c "[ \"$(rc noproc-fold)\" = 0 ] && [ ! -s '$work/noproc-fold.out' ] && [ -z \"\$('$SU' folded '$work/noproc.trace' 2>/dev/null)\" ]"

# ---- another trace: the filter copies it unchanged --------------------------------
printf '[    0.000000] Linux version 6.1\n[    1.500000] sample: not ours\n' >"$work/dmesg.txt"
run dmesg-f $BT -c source.text.dmesg -p "path=\"$work/dmesg.txt\"" -c filter.stackcap.unwind -c sink.text.details
run dmesg-r $BT -c source.text.dmesg -p "path=\"$work/dmesg.txt\"" -c sink.text.details
check "filter on a trace that is not stackcap's (source.text.dmesg): the same messages (details)" \
	sh -c "[ \"$(rc dmesg-f)\" = 0 ] && grep -q 'sample: not ours' '$work/dmesg-f.out' && cmp -s '$work/dmesg-f.out' '$work/dmesg-r.out'"

# ---- bad input ----------------------------------------------------------------------
mkdir "$work/empty"
run bad-dir $BT -c source.stackcap.trace -p "inputs=[\"$work/empty\"]"
check "source on a directory without a trace: error, no crash ($(rc bad-dir))" \
	all_of "[ \"$(rc bad-dir)\" != 0 ] && grep -q 'not a stackcap trace' '$work/bad-dir.err' && no_crash bad-dir"
run bad-path $BT -c source.stackcap.trace -p "inputs=[\"$work/missing\"]"
check "source on a missing path: error naming it, no crash" \
	all_of "[ \"$(rc bad-path)\" != 0 ] && grep -q 'missing is not a trace directory' '$work/bad-path.err' && no_crash bad-path"
run nofilter $BT "$work/single.trace" -c sink.stackcap.folded
check "folded sink without the filter: an error saying to add it, no crash" \
	all_of "[ \"$(rc nofilter)\" != 0 ] && grep -q 'put filter.stackcap.unwind' '$work/nofilter.err' && no_crash nofilter"
run bad-param $BT "$work/single.trace" -c filter.stackcap.unwind -p 'no-inlin=yes'
check "filter with an unknown parameter: error naming it, no crash" \
	all_of "[ \"$(rc bad-param)\" != 0 ] && grep -q \"unknown parameter 'no-inlin'\" '$work/bad-param.err' && no_crash bad-param"
# A cut .zst file: what is before the cut is read, with a warning.
cp -r "$work/z.trace" "$work/zcut.trace"
f=$(ls "$work/zcut.trace/"samples-*.zst | head -n 1)
size=$(wc -c <"$f")
head -c $((size - 7)) "$f" >"$f.tmp" && mv "$f.tmp" "$f"
run zcut $BT -c source.stackcap.trace -p "inputs=[\"$work/zcut.trace\"]" -c filter.stackcap.unwind
ncut=$(grep -c 'unwind_end = ' "$work/zcut.out")
nz=$(grep -c '\] (+[0-9.?]*) sample: ' "$work/zsrc.out")
check "cut --zstd trace: the samples before the cut ($ncut of $nz), a warning, no crash" \
	all_of "[ \"$(rc zcut)\" = 0 ] && [ $ncut -ge 1 ] && [ $ncut -lt $nz ] && grep -q 'truncated zstd frame\\|skipped' '$work/zcut.err' && no_crash zcut"
# A plain samples file overwritten from its middle to its end: read up to
# the damage, a warning, no crash. (Not a few bytes in the middle: those may
# land in kept stack words, which any value decodes, and then nothing is
# lost -- a CI run hit that.)
cp -r "$work/single.trace" "$work/dmg.trace"
f=$(ls "$work/dmg.trace/"samples-* | head -n 1)
size=$(wc -c <"$f")
head -c $((size - size / 2)) /dev/zero | tr '\0' '\377' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
run dmg $BT -c source.stackcap.trace -p "inputs=[\"$work/dmg.trace\"]" -c filter.stackcap.unwind
ndmg=$(grep -c 'unwind_end = ' "$work/dmg.out")
check "damaged plain samples file: the samples before the damage ($ndmg of $nsamples), a warning, no crash" \
	all_of "[ \"$(rc dmg)\" = 0 ] && [ $ndmg -ge 1 ] && [ $ndmg -lt $nsamples ] && grep -q ' W PLUGIN/SRC.STACKCAP.TRACE \\[.*samples-.*skipped' '$work/dmg.err' && no_crash dmg"
# The readers' warnings are the component's log: its logging level rules them.
run dmg-quiet $BT --log-level=E -c source.stackcap.trace -p "inputs=[\"$work/dmg.trace\"]" -c filter.stackcap.unwind
check "the same at --log-level=E: the same samples, no warning ($(wc -l <"$work/dmg-quiet.err") lines$(head -n 2 "$work/dmg-quiet.err" | cut -c 1-200 | tr '\n' ' ' | sed 's/^./: &/'))" \
	all_of "[ \"$(rc dmg-quiet)\" = 0 ] && cmp -s '$work/dmg.out' '$work/dmg-quiet.out' && [ ! -s '$work/dmg-quiet.err' ]"
# ---- kernel frames, event names, off-CPU time ---------------------------------------
# dd spends most of its time in the kernel: samples with kernel frames
# (format version 3).  The source gives what src.ctf.fs gives; the filter
# puts each sample's kernel frames first, innermost first, in module
# [kernel.kallsyms], named from the trace's own kernel symbols (at its
# end), the frames stackunwind stacks prints.
if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/kptr_restrict 2>/dev/null)" != 0 ]; then
	not_ok "kernel frames need root or kernel.kptr_restrict=0 (sysctl kernel.kptr_restrict=0)"
fi
"$STACKCAP" record -o "$work/kf.trace" -- dd if=/dev/zero of=/dev/null bs=64k count=200000 \
	>/dev/null 2>"$work/kf.rerr"
check "dd recorded with kernel frames: format version 3 ($(grep -o 'kernel frames in [0-9]* samples' "$work/kf.rerr"))" \
	grep -q 'stackcap_trace_version = 3;' "$work/kf.trace/metadata"
run kfsrc $BT -c source.stackcap.trace -p "inputs=[\"$work/kf.trace\"]"
run kfctf $BT "$work/kf.trace"
check "source on a kernel-frames trace (version 3): exit 0, the text of src.ctf.fs (kernel_symbols, $(grep -c kernel_chain: "$work/kfsrc.out") kernel_chain events)" \
	sh -c "[ $(rc kfsrc) = 0 ] && grep -q 'kernel_symbols: ' '$work/kfsrc.out' && cmp -s '$work/kfsrc.out' '$work/kfctf.out'"
run kf-f $BT "$work/kf.trace" -c filter.stackcap.unwind
# Per sample: its kernel frames' functions, innermost first ("-" for none).
grep '\] (+[0-9.?]*) sample: ' "$work/kf-f.out" | awk '{
	s = $0; k = ""; bad = 0; user = 0
	while (match(s, /function = "[^"]*", module = "[^"]*"/)) {
		f = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
		split(f, q, "\"")
		if (q[4] == "[kernel.kallsyms]") { if (user) bad = 1; k = k (k == "" ? "" : ";") q[2] } else user = 1
	}
	print (bad ? "USER-BEFORE-KERNEL " : "") (k == "" ? "-" : k)
}' >"$work/kf-f.k"
# stackunwind stacks: the same, from "ADDR function+0xOFF ([kernel.kallsyms])" lines.
"$SU" stacks "$work/kf.trace" 2>/dev/null | awk '
	/^[^ \t]/ { if (n) print (k == "" ? "-" : k); n = 1; k = ""; next }
	/\(\[kernel\.kallsyms\]\)$/ { f = $2; sub(/\+0x[0-9a-f]*$/, "", f); k = k (k == "" ? "" : ";") f }
	END { if (n) print (k == "" ? "-" : k) }' >"$work/kf-su.k"
nk=$(grep -c -v '^-$' "$work/kf-f.k")
nall=$(wc -l <"$work/kf-f.k")
check "filter: kernel frames in at least half of dd's samples ($nk of $nall)" [ "$nall" -ge 100 -a $((nk * 2)) -ge "$nall" ]
check "filter: kernel frames always above the user frames" sh -c "! grep -q USER-BEFORE-KERNEL '$work/kf-f.k'"
check "filter: each sample's kernel frames, innermost first, are those stackunwind stacks prints ($(wc -l <"$work/kf-su.k") samples)" \
	sh -c "sort '$work/kf-f.k' >'$work/kf-f.ks' && sort '$work/kf-su.k' | cmp -s - '$work/kf-f.ks'"
check "filter: dd's read or write path named from the trace's kernel symbols (vfs_read/vfs_write)" \
	grep -q 'vfs_read\|vfs_write' "$work/kf-f.k"
folded_same kf "$work/kf.trace"
check "kf: folded stacks go from libc's read/write into the kernel" \
	grep -q 'read;[^ ]*entry_SYSCALL_64[^ ]*;vfs_read\|write;[^ ]*entry_SYSCALL_64[^ ]*;vfs_write' "$work/kf-bt.out"

# stackcap record -e: each sample's event_name from the trace's event table
# (format version 4), every event's samples in the folded sink and event=.
EV="$TD/tdata-events"
(cd "$TD" && "$STACKCAP" record -o "$work/ev.trace" --stack-size 8192 -e syscalls:sys_enter_write \
	-e tdata-events:probe_hit -e sdt:tdata:tick -- ./tdata-events -n 300) >/dev/null 2>"$work/ev.rerr"
run ev-f $BT "$work/ev.trace" -c filter.stackcap.unwind
for e in syscalls:sys_enter_write tdata-events:probe_hit sdt:tdata:tick; do
	ne=$(grep -c "event_name = \"$e\"" "$work/ev-f.out")
	su=$("$SU" stats "$work/ev.trace" 2>/dev/null | awk -v e="$e" '$1 == e && $3 == "samples" { print $2 }')
	check "filter: $ne samples named $e, as stackunwind stats counts ($su), 300 hits" [ "$ne" = 300 -a "$su" = 300 ]
done
folded_same ev "$work/ev.trace"
folded_same ev-write "$work/ev.trace" 'event="syscalls:sys_enter_write"' '--event syscalls:sys_enter_write'
folded_same ev-sdt "$work/ev.trace" 'event="sdt:tdata:tick"' '--event sdt:tdata:tick'
check "ev: the write stacks end in libc's write under write_once ($(grep -o '[^;]*;[^;]*write[^;]* [0-9]*$' "$work/ev-write-bt.out" | head -n 1))" \
	grep -q ';write_once;[^ ]*write[^ ]* 300$' "$work/ev-write-bt.out"
nd=$(grep -c 'event_name = "cpu-clock"' "$work/kf-f.out")
check "filter: a trace without an event table names its samples cpu-clock ($nd of $nall)" [ "$nd" = "$nall" ]

# stackcap record --off-cpu (format version 5): off_cpu_ns on each sample,
# the folded sink's off-cpu=yes weighs the stacks by blocked microseconds.
"$STACKCAP" record --off-cpu -o "$work/oc.trace" -- "$TD/tdata-offcpu" sleep 0.8 >/dev/null 2>"$work/oc.rerr"
run oc-f $BT "$work/oc.trace" -c filter.stackcap.unwind
noc=$(grep -c 'off_cpu_ns = [1-9]' "$work/oc-f.out")
nsl=$(grep 'off_cpu_ns = [1-9]' "$work/oc-f.out" | grep 'function = "sleeper_wait"' |
	grep -o 'off_cpu_ns = [0-9]*' | awk '$3 >= 800000000 && $3 <= 880000000' | wc -l)
nsu=$("$SU" stacks --off-cpu "$work/oc.trace" 2>/dev/null | grep -c 'off-cpu [0-9.]* ms:$')
check "filter: $noc samples with off_cpu_ns, as many as stackunwind stacks --off-cpu ($nsu)" [ "$noc" -ge 2 -a "$noc" = "$nsu" ]
check "filter: the two sleeps in sleeper_wait carry 800 to 880 ms each ($nsl)" [ "$nsl" = 2 ]
folded_same oc-off "$work/oc.trace" 'off-cpu=yes' --off-cpu
check "oc: 1.6 s blocked under sleeper_wait in the sink's off-CPU stacks (within 10%)" \
	awk '/;sleeper_wait;/ { s += $NF } END { exit !(s >= 1600000 && s <= 1760000) }' "$work/oc-off-bt.out"
run oc-cpu $BT "$work/oc.trace" -c filter.stackcap.unwind -c sink.stackcap.folded
"$SU" folded "$work/oc.trace" >"$work/oc-cpu-su.out" 2>/dev/null
# CPU samples may land in sleeper_wait too (switched back in after the
# sleep): the sink's counts add up to the samples that are not off-CPU.
ncpu=$("$SU" stats "$work/oc.trace" 2>/dev/null | cpu_samples)
nsink=$(awk '{ s += $NF } END { print s + 0 }' "$work/oc-cpu.out")
check "oc: without off-cpu= the sink leaves the off-CPU stacks out ($nsink counted, $ncpu CPU samples), as stackunwind folded" \
	sh -c "[ $(rc oc-cpu) = 0 ] && [ '$nsink' = '$ncpu' ] && cmp -s '$work/oc-cpu.out' '$work/oc-cpu-su.out'"
run bad-oc $BT "$work/oc.trace" -c filter.stackcap.unwind -c sink.stackcap.folded -p 'off-cpu="maybe"'
check "sink: off-cpu= not a boolean: an error, no crash" \
	all_of "[ \"$(rc bad-oc)\" != 0 ] && grep -q 'off-cpu are booleans' '$work/bad-oc.err' && no_crash bad-oc"

# The source on format versions 4 (-e) and 5 (--off-cpu): on the plain
# traces, src.ctf.fs's trace IR and events (sink.text.details); on --zstd
# recordings, which src.ctf.fs cannot read, the filter and folded sink
# behind it give stackunwind's folded stacks, per event and off-CPU.
for t in ev oc; do
	run $t-srcd $BT -c source.stackcap.trace -p "inputs=[\"$work/$t.trace\"]" -c sink.text.details
	run $t-ctfd $BT "$work/$t.trace" -c sink.text.details
	v=$(sed -n 's/.*stackcap_trace_version = \([0-9]*\);.*/\1/p' "$work/$t.trace/metadata")
	check "source on a format version $v trace ($t): src.ctf.fs's IR and events ($(grep -c 'event_sample\|off_cpu' "$work/$t-srcd.out" 2>/dev/null) lines of event_sample or off_cpu)" \
		sh -c "[ $(rc $t-srcd) = 0 ] && [ $(rc $t-ctfd) = 0 ] && grep -q 'event_sample\|off_cpu' '$work/$t-srcd.out' && cmp -s '$work/$t-srcd.out' '$work/$t-ctfd.out'"
done
(cd "$TD" && "$STACKCAP" record --zstd -o "$work/evz.trace" --stack-size 8192 -e syscalls:sys_enter_write \
	-e tdata-events:probe_hit -e sdt:tdata:tick -- ./tdata-events -n 300) >/dev/null 2>"$work/evz.rerr"
"$STACKCAP" record --zstd --off-cpu -o "$work/ocz.trace" -- "$TD/tdata-offcpu" sleep 0.8 >/dev/null 2>"$work/ocz.rerr"
# zfolded_same NAME TRACE [SINK-PARAMS [STACKUNWIND-OPTIONS]]: as folded_same,
# through source.stackcap.trace.
zfolded_same() {
	name=$1 tr=$2 params=${3:-} opts=${4:-}
	run "$name-bt" $BT -c source.stackcap.trace -p "inputs=[\"$tr\"]" -c filter.stackcap.unwind \
		-c sink.stackcap.folded ${params:+-p "$params"}
	"$SU" folded $opts "$tr" >"$work/$name-su.out" 2>/dev/null
	check "$name: source + filter + sink ${params:+($params) }== stackunwind folded $opts ($(wc -l <"$work/$name-su.out") lines)" \
		sh -c "[ \"$(rc "$name-bt")\" = 0 ] && [ -s '$work/$name-su.out' ] && cmp -s '$work/$name-bt.out' '$work/$name-su.out'"
}
zfolded_same evz "$work/evz.trace"
zfolded_same evz-sdt "$work/evz.trace" 'event="sdt:tdata:tick"' '--event sdt:tdata:tick'
zfolded_same ocz-off "$work/ocz.trace" 'off-cpu=yes' --off-cpu
check "ocz: the --zstd off-CPU stacks hold sleeper_wait's 1.6 s (within 10%)" \
	awk '/;sleeper_wait;/ { s += $NF } END { exit !(s >= 1600000 && s <= 1760000) }' "$work/ocz-off-bt.out"
# A later format: refused by its version, with a message.
cp -r "$work/oc.trace" "$work/v6.trace"
sed -i 's/stackcap_trace_version = 5;/stackcap_trace_version = 6;/' "$work/v6.trace/metadata"
run v6 $BT -c source.stackcap.trace -p "inputs=[\"$work/v6.trace\"]"
check "source on a format version 6 trace: refused, says so" \
	all_of "[ \"$(rc v6)\" != 0 ] && tr '\\n' ' ' <'$work/v6.err' | tr -s ' ' | grep -q 'format version 6 is not read by this source' && no_crash v6"

echo "1..$n"
