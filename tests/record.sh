#!/bin/sh
# Integration: `stackcap record` on the testdata programs; the trace opens
# in babeltrace2, carries the expected samples, and never the secret.
# With the default sampler (the kernel copy); tests/record-in-process.sh
# runs the same with SAMPLER=--in-process.
. "${top_srcdir:?}/tests/tap-lib.sh"
SAMPLER=${SAMPLER:-}
RECORD_OPTS=$SAMPLER # record NAME (tap-lib.sh): stderr in NAME.rerr, status in NAME.rc

bt() { babeltrace2 "$work/$1.trace" >"$work/$1.txt" 2>"$work/$1.bterr"; }
count() { grep -c "$2" "$work/$1.txt"; }

# The secret of tdata-single, little-endian, in both byte orders.
SECRET1=$(printf '\302\136\347\302\136\347\302\136')
SECRET2=$(printf '\136\302\347\136\302\347\136\302')
holds_secret() { LC_ALL=C grep -r -a -q -F -e "$SECRET1" -e "$SECRET2" "$1"; }

# 1. one thread
record single -- "$TD/tdata-single" 1
check "tdata-single: exit status 0" [ "$(cat "$work/single.rc")" = 0 ]
check "tdata-single: babeltrace2 reads the trace" bt single
s=$(count single ' sample: ')
check "tdata-single: $s samples for 1 s of CPU at 999 Hz (800..1200)" [ "$s" -ge 800 -a "$s" -le 1200 ]
check "tdata-single: process_start, maps and process_end present" \
	sh -c "grep -q process_start '$work/single.txt' && grep -q ' maps: ' '$work/single.txt' && grep -q process_end '$work/single.txt'"
check "tdata-single: summary line on stderr, no drops" grep -q "$s samples, 0 drops" "$work/single.rerr"
check "tdata-single: maps list the executable with its build-id" \
	sh -c "grep ' maps: ' '$work/single.txt' | grep -q 'tdata-single'"
check "secret test is sound: the pattern is in the program itself" holds_secret "$TD/tdata-single"
check "tdata-single: the secret never appears in the trace" sh -c "! holds_secret() { LC_ALL=C grep -r -a -q -F -e \"\$1\" -e \"\$2\" \"\$3\"; }; ! holds_secret '$SECRET1' '$SECRET2' '$work/single.trace'"
bps=$(sed -n 's/.*(\([0-9.]*\) B\/sample).*/\1/p' "$work/single.rerr")
check "tdata-single: bytes per sample ($bps) below 84 (100x under perf's 8.4 KB)" \
	awk -v b="$bps" 'BEGIN { exit !(b > 0 && b < 84) }'

# 2. policy f1 also never leaks
record single_f1 --policy f1 -- "$TD/tdata-single" 0.3
check "policy f1: the secret never appears in the trace" sh -c "! LC_ALL=C grep -r -a -q -F -e '$SECRET1' -e '$SECRET2' '$work/single_f1.trace'"

# 3. many threads: each worker sampled, roughly evenly
record threads -- "$TD/tdata-threads" -t 4 0.5
check "tdata-threads: exit status 0" [ "$(cat "$work/threads.rc")" = 0 ]
check "tdata-threads: babeltrace2 reads the trace" bt threads
grep ' sample: ' "$work/threads.txt" | sed -n 's/.*tid = \([0-9]*\) }.*/\1/p' | sort | uniq -c | sort -n >"$work/threads.tids"
nt=$(wc -l <"$work/threads.tids")
check "tdata-threads: samples from >= 4 threads ($nt)" [ "$nt" -ge 4 ]
min=$(tail -n 4 "$work/threads.tids" | head -n 1 | awk '{print $1}')
max=$(tail -n 1 "$work/threads.tids" | awk '{print $1}')
check "tdata-threads: each worker ~0.5 s x 999 Hz (min $min, max $max samples; 350..650)" \
	awk -v a="$min" -v b="$max" 'BEGIN { exit !(a >= 350 && b <= 650) }'
check "tdata-threads: no drops" grep -q " 0 drops" "$work/threads.rerr"

# 3b. thread churn: 64 threads one after the other reuse a few streams
record churn -- "$B/tests/thread-churn" 64 20
check "thread churn: exit 0 and readable" sh -c "[ \"\$(cat '$work/churn.rc')\" = 0 ] && babeltrace2 '$work/churn.trace' >'$work/churn.txt'"
ntid=$(grep ' sample: ' "$work/churn.txt" | sed -n 's/.*tid = \([0-9]*\) }.*/\1/p' | sort -u | wc -l)
check "thread churn: samples from >= 60 of 64 threads ($ntid)" [ "$ntid" -ge 60 ]
nfiles=$(ls "$work/churn.trace" | grep -c '^samples-')
check "thread churn: streams reused ($nfiles sample files for 64 threads, <= 8)" [ "$nfiles" -le 8 ]
check "thread churn: no drops" grep -q " 0 drops" "$work/churn.rerr"

# 3c. The main thread leaves by pthread_exit; a worker goes on, maps a
# plugin, burns in it and returns: the process ends (exit 0) with its last
# thread, as without us, and every part is recorded.  (Before: in process,
# the writer thread kept the process alive forever, and once the main
# thread was a zombie /proc/self showed no maps and no fds, the trace's
# files were "stale"; the kernel copy ended the process with its main
# thread, leaving out the worker's samples.  timeout bounds a hang.)
record mainexit -- timeout -s KILL 60 "$B/tests/tsd-exit-burn" 300 "$TD/.libs/libtdata-plugin.so"
"$B/cli/stackunwind" folded "$work/mainexit.trace" >"$work/mainexit.folded" 2>"$work/mainexit.err"
set -- $(awk '/early_burn/ { e += $NF } /worker_burn/ { w += $NF } /plugin_hot/ { p += $NF }
	END { print e + 0, w + 0, p + 0 }' "$work/mainexit.folded")
check "main thread's pthread_exit: exit $(cat "$work/mainexit.rc") (0: ended with its last thread); samples before ($1), in the worker after ($2), in a plugin it loaded after ($3), each >= 240 of ~300" \
	sh -c "[ \"\$(cat '$work/mainexit.rc')\" = 0 ] && [ $1 -ge 240 ] && [ $2 -ge 240 ] && [ $3 -ge 240 ]"
check "main thread's pthread_exit: nothing left out, no write error ($(grep -c . "$work/mainexit.rerr") summary lines)" \
	sh -c "! grep -q -e 'left out' -e 'write error' '$work/mainexit.rerr'"

# unwound_chain NAME LABEL PATTERN MIN: NAME's trace folded; exit 0,
# PATTERN in at least MIN of its samples, and every sample fully unwound.
unwound_chain() {
	"$B/cli/stackunwind" folded "$work/$1.trace" >"$work/$1.folded" 2>"$work/$1.err"
	set -- "$@" $(awk -v p="$3" '{ t += $NF } $0 ~ p { f += $NF } END { print f + 0, t + 0 }' "$work/$1.folded")
	check "$2: exit $(cat "$work/$1.rc"); $3 in $5 of $6 samples (>= $4)" \
		sh -c "[ \"\$(cat '$work/$1.rc')\" = 0 ] && [ $5 -ge $4 ]"
	check "$2: every sample fully unwound ($(tail -n 1 "$work/$1.err" | cut -c1-70))" \
		sh -c "grep -q -E '^stackunwind: ([1-9][0-9]*) samples, \\1 fully unwound' '$work/$1.err'"
}

# 3d. A coroutine's stack (makecontext, malloc'ed): the in-process hook
# reads it through process_vm_readv (it dropped every sample there: no
# bounds known), and the walk ends at the context's start: the return
# address makecontext wrote is __start_context's first byte, not after a
# call (the byte before had no CFI: [no-cfi], every sample stopped early).
record fiber -- "$B/tests/fiber-burn" 10
check "coroutine stack: no drops" grep -q ' 0 drops' "$work/fiber.rerr"
unwound_chain fiber "coroutine stack, ending at the context's start" 'fiber_main;fiber_mid;fiber_leaf' 400

# 3e. A signal handler whose restorer has no CFI (Go's runtime.sigreturn
# has none): the restorer's first byte, which the kernel made the return
# address, is the kernel's signal frame, and the walk goes through it to
# the interrupted code (it stopped at [no-cfi] under a frame named after
# the function before the restorer, as perf 6.1 does: frame_dummy).
record restorer -- "$B/tests/restorer-burn" 300
unwound_chain restorer "restorer without CFI" 'main;interrupted;.*;restorer_nocfi;handler;handler_burn' 240

# 4. dlopen'd plugin, reloaded: a maps generation per change
record dlopen -- "$TD/tdata-dlopen" --reload 0.5
check "tdata-dlopen --reload: exit status 0" [ "$(cat "$work/dlopen.rc")" = 0 ]
check "tdata-dlopen: babeltrace2 reads the trace" bt dlopen
g=$(grep -c ' maps: ' "$work/dlopen.txt")
if [ -n "$SAMPLER" ]; then
	# In process: a generation at start, load, unload, reload.
	check "tdata-dlopen: >= 3 maps generations ($g)" [ "$g" -ge 3 ]
else
	# The kernel copy: the maps a sample needs, as they change (the
	# kernel tells mappings, not unmappings): the plugin before the
	# reload, then at its new address.
	na=$(grep ' maps: ' "$work/dlopen.txt" | sed 's/\[[0-9]*\] = {/\n/g' | grep 'libtdata-plugin' | sed -n 's/.*start = \([0-9]*\),.*/\1/p' | sort -u | wc -l)
	check "tdata-dlopen: >= 2 maps generations ($g), the plugin at 2 addresses ($na)" [ "$g" -ge 2 -a "$na" -ge 2 ]
fi
check "tdata-dlopen: the plugin is in the maps" sh -c "grep ' maps: ' '$work/dlopen.txt' | grep -q 'libtdata-plugin'"

# 5. deep recursion, no frame pointers, sigaltstack
record recurse -- "$TD/tdata-recurse" -d 1000 0.3
check "tdata-recurse 1000: exit 0 and readable" sh -c "[ \"\$(cat '$work/recurse.rc')\" = 0 ] && babeltrace2 '$work/recurse.trace' >/dev/null"
check "tdata-recurse 1000: no drops" grep -q " 0 drops" "$work/recurse.rerr"
record nofp -- "$TD/tdata-nofp" 0.3
check "tdata-nofp: exit 0 and readable" sh -c "[ \"\$(cat '$work/nofp.rc')\" = 0 ] && babeltrace2 '$work/nofp.trace' >/dev/null"
record sigalt -- "$TD/tdata-sigalt" 0.3
check "tdata-sigalt: exit 0 and readable" sh -c "[ \"\$(cat '$work/sigalt.rc')\" = 0 ] && babeltrace2 '$work/sigalt.trace' >/dev/null"

# 5b. fork and exec: sh forks, each child execs a program; every process
# writes its own section of the one trace.
record forkexec -- sh -c "'$TD/tdata-single' 0.3; '$TD/tdata-single' 0.3"
check "fork+exec: exit 0 and readable" sh -c "[ \"\$(cat '$work/forkexec.rc')\" = 0 ] && babeltrace2 '$work/forkexec.trace' >'$work/forkexec.txt'"
np=$(grep ' sample: ' "$work/forkexec.txt" | sed -n 's/.*{ pid = \([0-9]*\), tid.*/\1/p' | sort | uniq -c | awk '$1 >= 200' | wc -l)
check "fork+exec: two child processes with >= 200 samples each ($np)" [ "$np" -ge 2 ]
ns=$(ls "$work/forkexec.trace" | grep -c '^proc-')
check "fork+exec: a process section per process image ($ns >= 3)" [ "$ns" -ge 3 ]

# 5c. fork without exec: parent and child both burn CPU, each in its own
# function; the child writes its own section and sample streams.
# sample_funcs NAME BINARY: for each sample of $work/NAME.txt, "pid function"
# where function is the symbol of BINARY (the main executable, nm -S) that
# holds the sample's rip, decoded from the blob (docs/stack-codec.md: the
# rip token is the last register token; a code token is a range index of the
# sample's maps generation and an offset), or "?" when rip is elsewhere.
sample_funcs() {
	nm -S --defined-only "$2" | awk 'NF == 4 && $3 ~ /^[tT]$/ { print "SYM", $1, $2, $4 }' >"$work/$1.syms"
	awk '
	function hex(s,   i, v) {
		v = 0; s = tolower(s)
		for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	function varint(   v, m, b) {
		v = 0; m = 1
		do { b = by[p++] + 0; v += (b % 128) * m; m *= 128 } while (b >= 128 && p <= nb)
		return v
	}
	function num(line, field,   v) {
		if (!match(line, field " = [0-9]+")) return -1
		v = substr(line, RSTART, RLENGTH); sub(/.* = /, "", v); return v + 0
	}
	$1 == "SYM" { ns++; slo[ns] = hex($2); shi[ns] = slo[ns] + hex($3); sname[ns] = $4; next }
	/ maps: / {
		pid = num($0, "pid"); gen = num($0, "generation"); s = $0; i = 0
		while (match(s, /start = [0-9]+, end = [0-9]+, offset = [0-9]+, bias = [0-9]+, flags = [0-9]+/)) {
			split(substr(s, RSTART, RLENGTH), f, /[ =,]+/)
			k = pid SUBSEP gen SUBSEP i++
			rstart[k] = f[2] + 0; rbias[k] = f[8] + 0; rflags[k] = f[10] + 0
			s = substr(s, RSTART + RLENGTH)
		}
		next
	}
	/ sample: / { line[++nl] = $0 }
	END {
		for (l = 1; l <= nl; l++) {
			s = line[l]; pid = num(s, "pid"); gen = num(s, "generation")
			sub(/.*blob = \[ /, "", s); sub(/ \].*/, "", s); gsub(/\[[0-9]+\] = /, "", s)
			nb = split(s, by, /, /); p = 1
			p += 2; varint(); varint()            # version, flags; sp, nwords
			if (int(by[2] / 16) % 2) varint()     # elided count
			mask = varint(); idx = -1
			for (r = 0; r < 17; r++) {
				if (int(mask / 2 ^ r) % 2 == 0) continue
				t = varint()
				if (t % 4 == 1) { off = varint(); if (r == 16) idx = int(t / 4) }
				else if (t % 4 == 3) p += 8
			}
			fn = "?"; k = pid SUBSEP gen SUBSEP idx
			if (idx >= 0 && (k in rstart) && int(rflags[k] / 2) % 2) {
				a = rstart[k] + off - rbias[k]
				for (j = 1; j <= ns; j++) if (a >= slo[j] && a < shi[j]) fn = sname[j]
			}
			print pid, fn
		}
	}' "$work/$1.syms" "$work/$1.txt"
}
"$STACKCAP" record $SAMPLER -o "$work/fork.trace" -- "$B/tests/fork-burn" 500 250 >"$work/fork.out" 2>"$work/fork.err"
echo $? >"$work/fork.rc"
ppid=$(sed -n 's/^parent \([0-9]*\) child \([0-9]*\)$/\1/p' "$work/fork.out")
cpid=$(sed -n 's/^parent \([0-9]*\) child \([0-9]*\)$/\2/p' "$work/fork.out")
check "fork: exit 0, pids printed ($ppid, $cpid), readable" sh -c "[ \"\$(cat '$work/fork.rc')\" = 0 ] && [ -n '$ppid' ] && [ -n '$cpid' ] && babeltrace2 '$work/fork.trace' >'$work/fork.txt'"
check "fork: nm is installed, to map rip to functions (else: apt-get install binutils)" sh -c "command -v nm >/dev/null"
sample_funcs fork "$B/tests/fork-burn" | sort | uniq -c >"$work/fork.funcs"
nfuncs() { awk -v p="$1" -v f="$2" '$2 == p && $3 == f { print $1; found = 1 } END { if (!found) print 0 }' "$work/fork.funcs"; }
pall=$(grep ' sample: ' "$work/fork.txt" | grep -c "{ pid = $ppid, tid")
call=$(grep ' sample: ' "$work/fork.txt" | grep -c "{ pid = $cpid, tid")
pin=$(nfuncs "$ppid" parent_burn)
cin=$(nfuncs "$cpid" child_burn)
check "fork: parent has ~0.5 s x 999 Hz samples ($pall; 350..650)" [ "$pall" -ge 350 -a "$pall" -le 650 ]
check "fork: child has ~0.25 s x 999 Hz samples ($call; 175..325)" [ "$call" -ge 175 -a "$call" -le 325 ]
check "fork: >= 90% of the parent's samples in parent_burn ($pin of $pall)" [ "$pin" -ge $((pall * 9 / 10)) -a "$pin" -gt 0 ]
check "fork: >= 90% of the child's samples in child_burn ($cin of $call)" [ "$cin" -ge $((call * 9 / 10)) -a "$cin" -gt 0 ]
check "fork: no parent sample in child_burn, no child sample in parent_burn" \
	[ "$(nfuncs "$ppid" child_burn)" = 0 -a "$(nfuncs "$cpid" parent_burn)" = 0 ]
check "fork: the child's process_start names the parent" \
	grep -q "process_start: { pid = $cpid, tid = 0 }, { pid = $cpid, ppid = $ppid," "$work/fork.txt"
check "fork: the child has its own process and sample streams (proc-$cpid-*, samples-$cpid-*)" \
	sh -c "ls '$work/fork.trace' | grep -q '^proc-$cpid-' && ls '$work/fork.trace' | grep -q '^samples-$cpid-'"
# The child's files alone hold every sample of the child, and only those.
mkdir "$work/fork-child.trace"
cp "$work/fork.trace/metadata" "$work/fork.trace"/proc-"$cpid"-* "$work/fork.trace"/samples-"$cpid"-* "$work/fork-child.trace/" 2>/dev/null
babeltrace2 "$work/fork-child.trace" 2>/dev/null | grep ' sample: ' >"$work/fork-child.txt"
conly=$(grep -c "{ pid = $cpid, tid" "$work/fork-child.txt")
check "fork: the child's samples all come from its own stream files ($conly of $call)" \
	[ "$conly" = "$call" -a "$(wc -l <"$work/fork-child.txt")" = "$call" -a "$call" -gt 0 ]
check "fork: no drops" grep -q ' 0 drops' "$work/fork.err"

# 5b. JIT code: an anonymous executable page mapped after start-up gets
# into a later maps generation, and samples in it are classified there.
"$STACKCAP" record $SAMPLER -o "$work/jit.trace" -- "$B/tests/jit-burn" 1.5 >"$work/jit.addr" 2>"$work/jit.err"
jit=$(cat "$work/jit.addr")
babeltrace2 "$work/jit.trace" >"$work/jit.txt" 2>/dev/null
check "JIT page mapped after start ($jit): a maps generation lists it as anonymous code (flags 1)" \
	sh -c "grep ' maps: ' '$work/jit.txt' | grep -q 'start = $((0x$jit)), end = $((0x$jit + 4096)), offset = 0, bias = 0, flags = 1'"
ngen=$(grep -c ' maps: ' "$work/jit.txt")
check "JIT: the page came with a new generation ($ngen >= 2)" [ "$ngen" -ge 2 ]
if [ -x "$B/cli/stackunwind" ]; then
	"$B/cli/stackunwind" stacks -j 1 "$work/jit.trace" >"$work/jit.stacks" 2>/dev/null
	tot=$(grep -c '^jit-burn' "$work/jit.stacks")
	injit=$(awk '/^jit-burn/ { getline; if ($3 == "([anon:exec])") n++ } END { print n + 0 }' "$work/jit.stacks")
	check "JIT: >= 50% of samples have their leaf in the JIT page ($injit of $tot; the page is seen within 0.25 s)" \
		awk -v a="$injit" -v t="$tot" 'BEGIN { exit !(t >= 500 && a * 100 >= t * 50) }'
	# The JIT names its code in /tmp/perf-PID.map, as node, Java agents or
	# Python 3.12 do: those frames are named in stacks, folded and exports.
	"$STACKCAP" record $SAMPLER -o "$work/jitmap.trace" -- "$B/tests/jit-burn" 1 perf-map >"$work/jitmap.addr" 2>"$work/jitmap.err"
	jpid=$(ls "$work/jitmap.trace" | sed -n 's/^proc-\([0-9]*\)-.*/\1/p' | head -n 1)
	"$B/cli/stackunwind" stacks -j 1 "$work/jitmap.trace" >"$work/jitmap.stacks" 2>/dev/null
	"$B/cli/stackunwind" folded "$work/jitmap.trace" >"$work/jitmap.folded" 2>/dev/null
	"$B/cli/stackunwind" export --format speedscope -o "$work/jitmap.json" "$work/jitmap.trace" 2>/dev/null
	rm -f "/tmp/perf-$jpid.map"
	named=$(awk -v m="(/tmp/perf-$jpid.map)" '/^jit-burn/ { getline; if ($2 ~ /^jit_count_loop\+0x/ && $3 == m) n++ } END { print n + 0 }' "$work/jitmap.stacks")
	anon=$(grep -c '\[anon:exec\])$' "$work/jitmap.stacks")
	check "JIT with a perf map: $named leaves named jit_count_loop (/tmp/perf-$jpid.map), $anon left as [anon:exec]; folded and speedscope name it" \
		sh -c "[ $named -ge 250 ] && [ $anon = 0 ] && grep -q ';jit_count_loop [0-9]*\$' '$work/jitmap.folded' && grep -q '\"name\":\"jit_count_loop\"' '$work/jitmap.json'"
	# The recorder kept that map in the trace (record/keep-jit-maps.h):
	# with /tmp's gone (another machine, a reboot), the names stay.
	"$B/cli/stackunwind" stacks -j 1 "$work/jitmap.trace" >"$work/jitmap2.stacks" 2>/dev/null
	named2=$(awk -v m="(/tmp/perf-$jpid.map)" '/^jit-burn/ { getline; if ($2 ~ /^jit_count_loop\+0x/ && $3 == m) n++ } END { print n + 0 }' "$work/jitmap2.stacks")
	"$B/cli/stackunwind" stats "$work/jitmap.trace" >"$work/jitmap.stats" 2>&1
	check "JIT: the perf map kept in the trace (jit/perf-$jpid.map, said, in stats), its names read with /tmp's removed ($named2 of $named)" \
		sh -c "[ -s '$work/jitmap.trace/jit/perf-$jpid.map' ] && grep -q 'perf maps naming JIT code kept in the trace: 1 ' '$work/jitmap.err' &&
			grep -q '^JIT perf maps: *1 kept' '$work/jitmap.stats' && [ $named2 = $named ]"
	check "JIT: babeltrace2 reads the trace with its jit directory" babeltrace2 "$work/jitmap.trace" -o dummy
	# A trace is input: its copy a FIFO (the read must not wait) or a
	# symlink (never followed) names nothing, and the reading goes on.
	mv "$work/jitmap.trace/jit/perf-$jpid.map" "$work/jitmap.copy"
	for kind in fifo symlink; do
		case $kind in
		fifo) mkfifo "$work/jitmap.trace/jit/perf-$jpid.map" ;;
		symlink) ln -s "$work/jitmap.copy" "$work/jitmap.trace/jit/perf-$jpid.map" ;;
		esac
		timeout 60 "$B/cli/stackunwind" stacks -j 1 "$work/jitmap.trace" >"$work/jitmap-$kind.stacks" 2>/dev/null
		rc=$?
		rm -f "$work/jitmap.trace/jit/perf-$jpid.map"
		jn=$(grep -c 'jit_count_loop' "$work/jitmap-$kind.stacks")
		ja=$(grep -c '\[anon:exec\])$' "$work/jitmap-$kind.stacks")
		check "JIT: the trace's copy a $kind: read to the end ($rc; 124: hung), nothing named from it ($jn), $ja [anon:exec]" \
			sh -c "[ $rc = 0 ] && [ $jn = 0 ] && [ $ja -ge 250 ]"
	done
else
	not_ok "JIT: cli/stackunwind not built"
fi

# 6. --zstd: compressed stream files
record zstd --zstd -- "$TD/tdata-single" 0.5
check "--zstd: exit 0, .zst stream files written" sh -c "[ \"\$(cat '$work/zstd.rc')\" = 0 ] && ls '$work/zstd.trace' | grep -q 'samples-.*\.zst$'"

# 7. the command line
"$STACKCAP" record $SAMPLER -o "$work/single.trace" -- true 2>"$work/exists.err"
rc=$?
check "existing output without --force: exit 2" [ "$rc" = 2 ]
check "existing output: a clear message" grep -q "exists; use --force" "$work/exists.err"
"$STACKCAP" record $SAMPLER --force -o "$work/single.trace" -- true 2>/dev/null
check "--force replaces the output" [ $? = 0 ]
"$STACKCAP" record $SAMPLER -o "$work/nocmd.trace" -- /nonexistent/cmd 2>"$work/nocmd.err"
rc=$?
check "missing command: exit 127" [ "$rc" = 127 ]
check "missing command: 'command not found'" grep -q "command not found" "$work/nocmd.err"
"$STACKCAP" record $SAMPLER -o "$work/status.trace" -- sh -c 'exit 7' 2>/dev/null
check "the command's exit status is returned" [ $? = 7 ]
"$STACKCAP" record $SAMPLER -F 0 -- true 2>/dev/null
check "bad -F: exit 2" [ $? = 2 ]
# A line without its command first: the line meant, to type.
"$STACKCAP" -F 99 record -- "$TD/tdata-single" 'a b' 2>"$work/order.err"
rc=$?
check "options before record: exit 2 ($rc) and the line with record first" \
	sh -c "[ $rc = 2 ] && grep -qF \"stackcap record -F 99 -- $TD/tdata-single 'a b'\" '$work/order.err'"
"$STACKCAP" "$TD/tdata-single" 1 2>"$work/norecord.err"
rc=$?
check "a program without record: exit 2 ($rc) and 'stackcap record -- PROGRAM ARGS'" \
	sh -c "[ $rc = 2 ] && grep -qF 'stackcap record -- $TD/tdata-single 1' '$work/norecord.err'"
"$STACKCAP" frobnicate 2>"$work/unknown.err"
rc=$?
check "an unknown command: exit 2 ($rc), said, and the usage" \
	sh -c "[ $rc = 2 ] && grep -q \"unknown command 'frobnicate'\" '$work/unknown.err' && grep -q '^usage:' '$work/unknown.err'"

# 7b. traces are private whatever the umask: directory 0700, files 0600
# (code and stack pointers reveal the address layout; perf.data is 0600 too).
(umask 000 && "$STACKCAP" record -o "$work/priv.trace" -- "$TD/tdata-single" 0.2 2>/dev/null)
m=$(stat -c %a "$work/priv.trace")
check "umask 000: the trace directory is 0700 ($m)" [ "$m" = 700 ]
bad=$(find "$work/priv.trace" -type f ! -perm 600 -printf '%f:%m ')
nf=$(find "$work/priv.trace" -type f | wc -l)
check "umask 000: every file of the trace, hidden ones too, is 0600 ($nf files${bad:+; not: $bad})" \
	sh -c "[ $nf -ge 3 ] && [ -z '$bad' ]"
# The library alone (preloaded, as a linked program's constructor would
# start it) creates missing parents the same way.
(umask 000 && LD_PRELOAD="$B/capture/.libs/libstackcap.so" STACKCAP_OUTPUT="$work/privz/sub/t" STACKCAP_ZSTD=1 \
	"$TD/tdata-single" 0.1 2>/dev/null)
bad=$(find "$work/privz" -printf '%y%m\n' | grep -v -x -e d700 -e f600 | tr '\n' ' ')
check "umask 000, libstackcap preloaded, missing parents: directories 0700, files 0600${bad:+ (not: $bad)}" \
	sh -c "[ -f '$work/privz/sub/t/metadata' ] && [ -z '$bad' ]"

# A preloaded library that cannot start says so in the report file the
# caller named (stackcap record --lttng prints it), never on the traced
# program's stderr.
: >"$work/afile"
: >"$work/startfail.summary"
LD_PRELOAD="$B/capture/.libs/libstackcap.so" STACKCAP_OUTPUT="$work/afile/t" \
	STACKCAP_SUMMARY_FILE="$work/startfail.summary" "$TD/tdata-single" 0.1 >/dev/null 2>"$work/startfail.err"
rc=$?
check "preloaded, the trace cannot be created: the program runs (exit $rc), its stderr stays empty, the reason is in the report file ($(cat "$work/startfail.summary"))" \
	sh -c "[ $rc = 0 ] && [ ! -s '$work/startfail.err' ] && grep -qx 'stackcap: cannot start recording into $work/afile/t: Not a directory' '$work/startfail.summary'"

# 8. the library exports its API and the interposers, nothing else
LIB="$B/capture/.libs/libstackcap.so"
objdump -T "$LIB" | awk '$2 == "g" && $4 == ".text" {print $NF}' | sort >"$work/exports"
printf '%s\n' _Exit _exit dlclose dlopen pthread_create sigaction signal stackcap_capture stackcap_get_stats \
	stackcap_init stackcap_shutdown stackcap_thread_register stackcap_version | sort >"$work/exports.want"
check "libstackcap exports exactly its API and interposers" cmp -s "$work/exports" "$work/exports.want"

# An exec chain keeps its pid: each image's sample streams are its own
# (the in-process writer once reused samples-PID-0 after exec: "write
# error ... (File exists)" and the later image lost its samples).
cat >"$work/execchain.sh" <<'EOF'
x=0; while [ $x -lt 400000 ]; do x=$((x+1)); done
[ "$1" -gt 1 ] && exec sh "$0" $(($1 - 1))
exit 0
EOF
record execchain -- sh "$work/execchain.sh" 3
check "exec chain: exit status 0, no write error" \
	sh -c "[ \"\$(cat '$work/execchain.rc')\" = 0 ] && ! grep -q 'write error' '$work/execchain.rerr'"
ns=$(ls "$work/execchain.trace" | grep -c '^samples-')
check "exec chain: each of the three images of one pid has its own sample stream ($ns)" [ "$ns" -ge 3 ]

# A command tree of 300 short processes recorded, and read, under a hard
# limit of 64 open files: the recorder closes a process's streams at its
# exit (a system-wide recording meets thousands of processes; it stopped
# at the limit with "Too many open files"), the reader holds open only
# the files it has not read whole (it skipped the others, warning).  The
# command runs with the limits it was given, not the recorder's raised
# ones.
(ulimit -n 64 && "$STACKCAP" record $SAMPLER -o "$work/many.trace" -- \
	sh -c 'i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i + 1)); done; ulimit -n' \
	>"$work/many.out" 2>"$work/many.rerr")
rc=$?
check "300 processes, 64 open files at most: exit 0, no error ($(grep -m1 -e error -e 'open files' "$work/many.rerr"))" \
	sh -c "[ $rc = 0 ] && ! grep -q -e 'stopped by an error' -e 'Too many open files' '$work/many.rerr'"
check "300 processes: the command saw its own limit of 64 ($(cat "$work/many.out"))" [ "$(cat "$work/many.out")" = 64 ]
(ulimit -n 64 && "$B/cli/stackunwind" stats "$work/many.trace" >"$work/many.stats" 2>"$work/many.serr")
np=$(sed -n 's/^processes: *\([0-9]*\) (\([0-9]*\) ended normally).*/\1 \2/p' "$work/many.stats")
check "300 processes: read under 64 open files, every process there and ended ($np), no warning ($(head -c 200 "$work/many.serr"))" \
	sh -c "set -- $np; [ \"\${1:-0}\" -ge 301 ] && [ \"\$1\" = \"\${2:-}\" ] && [ ! -s '$work/many.serr' ]"
# The summary names at most the 10 processes that lost most samples, then
# one line for the rest (a whole machine's recording named hundreds, a
# line each).  40 processes at 40 kHz with a 64 KB window: the rings
# (256 samples a CPU) fill in ~6 ms, more than 10 processes lose samples.
if [ -z "$SAMPLER" ]; then
	"$STACKCAP" record -F 40000 -o "$work/drops.trace" -- \
		sh -c 'i=0; while [ $i -lt 40 ]; do (x=0; while [ $x -lt 30000 ]; do x=$((x+1)); done) & i=$((i + 1)); done; wait' \
		2>"$work/drops.rerr"
	total=$(sed -n 's/.* samples, \([0-9]*\) drops.*/\1/p' "$work/drops.rerr")
	lines=$(grep -c '^stackcap:   pid .* lost (ring buffer full' "$work/drops.rerr")
	more=$(sed -n 's/^stackcap:   \([0-9]*\) more processes: \([0-9]*\) lost, \([0-9]*\) throttled$/\1 \2 \3/p' "$work/drops.rerr")
	sum=$(awk '/^stackcap:   pid .* lost \(ring buffer full/ { for (i = 1; i <= NF; i++) { if ($i == "lost") l += $(i - 1); if ($i == "throttled") t += $(i - 1) } }
		/^stackcap:   [0-9]+ more processes:/ { l += $5; t += $7 } END { print l + t }' "$work/drops.rerr")
	check "drops of many processes: $lines lines of the 10 that lost most, then '${more:-no more line}'; they add up to the total ($sum of ${total:-?})" \
		sh -c "[ '$lines' = 10 ] && [ -n '$more' ] && [ '$sum' = '${total:-x}' ]"
fi
(ulimit -S -n 100 && "$STACKCAP" record $SAMPLER -o "$work/soft.trace" -- sh -c 'ulimit -S -n' >"$work/soft.out" 2>"$work/soft.rerr")
check "a soft limit of 100 (hard $(ulimit -H -n)): the command sees 100 ($(cat "$work/soft.out"))" [ "$(cat "$work/soft.out")" = 100 ]

# A statically linked program: LD_PRELOAD has nothing to load the hook
# with.  The in-process sampler says so and what records it (the kernel
# copy, which does).
printf 'int main(void) { volatile unsigned long s = 0; for (unsigned long i = 0; i < 400000000; i++) s += i; return (int)(s & 1); }\n' \
	>"$work/static.c"
if gcc -static -O1 -o "$work/static-burn" "$work/static.c" 2>"$work/static.cerr"; then
	"$STACKCAP" record $SAMPLER -o "$work/static.trace" -- "$work/static-burn" >/dev/null 2>"$work/static.rerr"
	src=$?
	if [ -n "$SAMPLER" ]; then
		check "a static program: exit $src, told it is statically linked and to record without --in-process" \
			sh -c "[ $src -le 1 ] && grep -q 'static-burn is statically linked: .*record without --in-process' '$work/static.rerr'"
	else
		nst=$(babeltrace2 "$work/static.trace" 2>/dev/null | grep -c ' sample: ')
		check "a static program: the kernel copy samples it ($nst samples, exit $src)" [ "$src" -le 1 -a "$nst" -gt 50 ]
	fi
else
	not_ok "gcc -static failed (libc6-dev's libc.a: scripts/install-deps.sh): $(head -n 1 "$work/static.cerr")"
fi

echo "1..$n"
