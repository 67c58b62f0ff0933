#!/bin/sh
# Integration: stackcap record's kernel copy (record/) where the in-process
# hook cannot reach: worker threads blocking every signal, Debian's
# busybox-static, Go (static and cgo), exit_group, every fd closed; attach
# (-p, -t), the whole machine (-a), the fallback when perf events are
# refused, against perf record on the same programs.
#
# Counts: every program burns a fixed amount of its own CPU time (but
# gzip, counted against its CPU time) and both
# recorders sample CPU time (cpu-clock) at the same frequency, so each
# expects threads x seconds x Hz samples whatever the machine's load; ours
# must be >= 90% of perf's (the kernel's hrtimer sampling jitters by a few
# percent between runs: 10% is well above that, far below the losses the
# in-process hook had, 42 of 2,365 on xz).
. "${top_srcdir:?}/tests/tap-lib.sh"
need "linux-perf" perf
need_perf_sampling
need "golang-go" go
need "busybox-static" busybox
need "util-linux" runuser
need "xz-utils" xz
UNW="$B/cli/stackunwind"
HB="$B/tests/hard-burn"
sigtramp_sed >"$work/sigtramp.sed"

# rec NAME ARGS...: stackcap record -o $work/NAME.trace ARGS, stderr and status kept.
rec() {
	name=$1; shift
	"$STACKCAP" record -o "$work/$name.trace" "$@" >"$work/$name.out" 2>"$work/$name.err"
	echo $? >"$work/$name.rc"
	"$UNW" folded "$work/$name.trace" >"$work/$name.folded" 2>"$work/$name.unw"
}
# perfrec NAME ARGS...: perf record --call-graph dwarf of the same, folded by stackunwind.
perfrec() {
	name=$1; shift
	perf record -q -k monotonic -e cpu-clock -F 999 --call-graph dwarf,32768 -o "$work/$name.data" "$@" \
		>"$work/$name.pout" 2>"$work/$name.perr"
	"$UNW" folded "$work/$name.data" >"$work/$name.pfolded" 2>/dev/null
}
total() { awk '{ n += $NF } END { print n + 0 }' "$1"; }
# with FILE PATTERN: samples whose folded stack matches PATTERN (awk regex).
with() { awk -v p="$2" '$0 ~ p { n += $NF } END { print n + 0 }' "$1"; }
near_perf() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(b > 0 && a >= 0.9 * b) }'; }
pct_ok() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { exit !(b > 0 && a * 100 >= b * p) }'; }

CHAIN='burner;hard_compute;hard_leaf( |;)'

# 1. worker threads that block every signal, exit_group, every fd closed:
# counted against perf, each sample of a worker on its chain.
for v in block-signals exit-group close-fds; do
	rec "$v" -- "$HB" --"$v" -t 2 0.5
	perfrec "$v" "$HB" --"$v" -t 2 0.5
	s=$(total "$work/$v.folded"); p=$(total "$work/$v.pfolded")
	w=$(with "$work/$v.folded" 'start_thread;'); c=$(with "$work/$v.folded" "$CHAIN")
	check "--$v: exit 0 and the program's output ($(cat "$work/$v.out"))" \
		sh -c "[ \"\$(cat '$work/$v.rc')\" = 0 ] && [ \"\$(cat '$work/$v.out')\" = 'hard-burn 2 threads' ]"
	check "--$v: $s samples, >= 90% of perf record's $p" near_perf "$s" "$p"
	# The workers' samples (main's own, e.g. closing 65536 fds, are not).
	check "--$v: burner;hard_compute;hard_leaf in >= 99% of the workers' samples ($c of $w)" pct_ok "$c" "$w" 99
done

# 1b. copies cut at the end of the thread's own stack (data mappings):
# above a liblzma worker's stack lies other readable memory, which the
# kernel copies up to the window (before: nearly every sample filled it).
# At most one in a thousand may still fill it: under load about one
# recording in 15 has one such sample, a worker's last (as it left, in
# the one looked at), its copy not cut; an open race in the live
# recorder (docs/BENCHMARKS.md, 2026-11-27 and 2026-11-28), whose
# unwinding it does not change (the next check).
head -c 4000000 /dev/urandom | od -x >"$work/xz.in"
rec xzt -- xz -T2 -3 -c "$work/xz.in"
"$UNW" stats "$work/xzt.trace" >"$work/xzt.stats" 2>&1
"$UNW" stacks "$work/xzt.trace" 2>"$work/xzt.sum" >/dev/null
s=$(total "$work/xzt.folded")
full=$(sed -n 's/^stack window full: *\([0-9]*\) samples.*/\1/p' "$work/xzt.stats")
raw=$(sed -n 's/^stack bytes (raw): *\([0-9]*\).*/\1/p' "$work/xzt.stats")
check "xz -T2: copies cut at their stack's end, at most 1 in 1000 filling the window ($full of $s; $raw raw stack bytes)" \
	sh -c "[ '$s' -gt 100 ] && [ -n '$full' ] && [ \$(($full * 1000)) -le '$s' ] && [ '$raw' -lt \$(($s * 32768)) ]"
check "xz -T2: every sample fully unwound ($(cat "$work/xzt.sum"))" grep -q ": $s samples, $s fully unwound" "$work/xzt.sum"

# 2. Debian's busybox-static: a static binary (no LD_PRELOAD); its gzip
# code has no CFI (.eh_frame lacks it), so perf and we stop at the leaf.
head -c 3000000 /dev/urandom | od -x >"$work/bb.in"
rec bb -- busybox gzip -c "$work/bb.in"
perfrec bb busybox gzip -c "$work/bb.in"
s=$(total "$work/bb.folded"); p=$(total "$work/bb.pfolded")
b=$(with "$work/bb.folded" '^busybox;')
# gzip does a fixed work, not a fixed CPU time: on this VM's unequal
# CPUs the two runs' times differed by 20%.  Ours is counted against its
# own run's CPU time, which stackcap record reports.
e=$(sed -n "s/^stackcap: the command's CPU time: [0-9.]* s, \([0-9]*\) samples at 999 Hz.*/\1/p" "$work/bb.err")
check "busybox-static gzip: $s samples, >= 90% of the ${e:-?} its CPU time makes at 999 Hz (perf record: $p)" \
	near_perf "$s" "${e:-0}"
check "busybox-static gzip: every sample in busybox ($b of $s)" [ "$b" = "$s" -a "$s" -gt 0 ]
check "busybox-static gzip: summary names the kernel copy" grep -q "kernel copy" "$work/bb.err"

# 3. Go: a static build and a cgo build of the same program; frames named.
mkdir -p "$work/go" "$work/gocache"
cat >"$work/go/main.go" <<'EOF'
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func hotLeaf(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

//go:noinline
func middle(n int) int { return hotLeaf(n) + 1 }

// Burns SECONDS of the process's CPU time.
//go:noinline
func outer(d time.Duration) int {
	s := 0
	for cpu() < d {
		s += middle(100000)
	}
	return s
}

func main() {
	sec, _ := strconv.ParseFloat(os.Args[1], 64)
	fmt.Println(outer(time.Duration(sec*1e9)) > 0)
}
EOF
cat >"$work/go/cpu.go" <<'EOF'
package main

import (
	"syscall"
	"time"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
EOF
cat >"$work/go/cgo.go" <<'EOF'
//go:build cgo

package main

// int cgo_marker(void) { return 1; }
import "C"

var _ = C.cgo_marker
EOF
printf 'module gotest\ngo 1.19\n' >"$work/go/go.mod"
(cd "$work/go" && GOCACHE="$work/gocache" GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o gostatic . &&
	GOCACHE="$work/gocache" CGO_ENABLED=1 go build -o gocgo .) >"$work/go.build" 2>&1
check "go build (static and cgo)" sh -c "[ -x '$work/go/gostatic' ] && [ -x '$work/go/gocgo' ]"
GOCHAIN='runtime.main;main.main;main.outer;main.middle;main.hotLeaf'
for g in gostatic gocgo; do
	rec "$g" -- "$work/go/$g" 1
	perfrec "$g" "$work/go/$g" 1
	s=$(total "$work/$g.folded"); p=$(total "$work/$g.pfolded"); c=$(with "$work/$g.folded" "$GOCHAIN")
	check "$g: exit 0, output unchanged" sh -c "[ \"\$(cat '$work/$g.rc')\" = 0 ] && [ \"\$(cat '$work/$g.out')\" = true ]"
	check "$g: $s samples, >= 90% of perf record's $p" near_perf "$s" "$p"
	check "$g: $GOCHAIN (Go frames named) in >= 90% of them ($c of $s)" pct_ok "$c" "$s" 90
	# A goroutine's stack ends at runtime.goexit, g0's at mstart or
	# rt0_go: outermost, not [bad-stack] (what lies above the stack).
	f=$(sed -n 's/^stackunwind: [0-9]* samples, \([0-9]*\) fully unwound.*/\1/p' "$work/$g.unw")
	check "$g: >= 99% of the samples fully unwound, to goexit, mstart or rt0_go (${f:-?} of $s)" pct_ok "${f:-0}" "$s" 99
done

# 4. exactness: the hot chains stackcap's trace gives are those perf record
# --call-graph dwarf + stackunwind give on the same program (>= 99% of hot
# samples have a chain perf's recording has too), and F2 fidelity is 100%.
for t in single nofp threads; do
	rec "x$t" -- "$TD/tdata-$t" 0.5
	perfrec "x$t" "$TD/tdata-$t" 0.5
	hot=$("$TD/tdata-$t" --chain | head -n 1)
	awk -v h="$hot" '$0 ~ (";" h " ") { $NF = ""; print }' "$work/x$t.pfolded" | sort -u >"$work/x$t.pset"
	a=$(awk -v h="$hot" 'FNR == NR { s[$0] = 1; next } $0 ~ (";" h " ") { n = $NF; $NF = ""; t += n; if ($0 in s) m += n }
		END { print m + 0, t + 0 }' "$work/x$t.pset" "$work/x$t.folded")
	check "tdata-$t: hot chains as perf record --call-graph dwarf's on >= 99% of hot samples ($a)" \
		sh -c "set -- $a; [ \$2 -gt 0 ] && [ \$((\$1 * 100)) -ge \$((\$2 * 99)) ]"
done
rec full --full-copy -- "$TD/tdata-single" 0.3
"$UNW" stats "$work/full.trace" >"$work/full.stats" 2>&1
check "--full-copy: F2 fidelity 100% ($(grep fidelity "$work/full.stats"))" grep -q "fidelity: *100.0%" "$work/full.stats"
check "stats: the sampler and its window" grep -q "sampler: *kernel copy.*-byte stack window" "$work/full.stats"

# A handler on the alternate signal stack: the kernel copies that stack
# only; the signal frame's saved rsp (kept, though it points off the copy)
# takes the unwind through __restore_rt to the interrupted function, where
# it ends [truncated] (perf's copy stops at the trampoline).  F2 fidelity
# stays 100%: the filtered copy unwinds as the full one.
rec sigalt --full-copy -- "$TD/tdata-sigalt" 0.3
"$UNW" stats "$work/sigalt.trace" >"$work/sigalt.stats" 2>&1
"$UNW" stacks "$work/sigalt.trace" 2>/dev/null | sed -f "$work/sigtramp.sed" >"$work/sigalt.stacks"
# (frames: 1 handler_hot, 2 handler_entry, 3 __restore_rt, 4 trigger_loop, 5 the end)
set -- $(awk 'function done() { if (h) { t++; g += (f[2] ~ /^handler_entry\+/ && f[3] ~ /^__restore_rt/ &&
		f[4] ~ /^trigger_loop\+/ && f[5] == "[truncated]" && k == 5) } }
	/^tdata-sigalt/ { done(); getline l; h = (l ~ / handler_hot\+/); k = 1; delete f; next }
	/^\t/ { f[++k] = $2 }
	END { done(); print g + 0, t + 0 }' "$work/sigalt.stacks")
check "sigaltstack: handler_hot;handler_entry;__restore_rt;trigger_loop then [truncated] in >= 99% of the handler's samples ($1 of $2)" \
	sh -c "[ $2 -ge 100 ] && [ \$(($1 * 100)) -ge \$(($2 * 99)) ]"
check "sigaltstack: F2 fidelity 100% ($(grep fidelity "$work/sigalt.stats"))" grep -q "fidelity: *100.0%" "$work/sigalt.stats"
check "stats: per-process samples and drops" grep -q "pid .* samples, 0 drops" "$work/full.stats"

# 5. attach: -p for a while, threads created after the attach sampled; the
# program's output and status unchanged.
"$HB" -t 3 --stagger 0.7 0.4 >"$work/att.prog" 2>&1 &
hp=$!
sleep 0.3
rec att -p "$hp" -- sleep 2
wait "$hp"
hrc=$?
ntid=$(babeltrace2 "$work/att.trace" 2>/dev/null | sed -n 's/.* sample: .*tid = \([0-9]*\) }.*/\1/p' | sort -u | wc -l)
s=$(total "$work/att.folded"); c=$(with "$work/att.folded" "$CHAIN")
check "-p: the program's output and status unchanged ($hrc, $(cat "$work/att.prog"))" \
	sh -c "[ $hrc = 0 ] && [ \"\$(cat '$work/att.prog')\" = 'hard-burn 3 threads' ] && [ \"\$(cat '$work/att.rc')\" = 0 ]"
check "-p: threads created after the attach sampled ($ntid threads)" [ "$ntid" -ge 3 ]
check "-p: the chain in >= 99% of the samples ($c of $s)" pct_ok "$c" "$s" 99
check "-p of a program without JIT code: no note of JIT code (the kernel's [vsyscall] page is not one)" \
	sh -c "! grep -q 'JIT' '$work/att.err'"
# Attached after the main thread left by pthread_exit (a zombie: /proc/PID
# shows no maps, no exe; no event opens on it) while a worker goes on,
# maps a plugin and burns there: recorded until the last thread ends.
"$B/tests/tsd-exit-burn" 700 "$TD/.libs/libtdata-plugin.so" >/dev/null 2>&1 &
zp=$!
for _ in $(seq 1 500); do
	[ "$(sed 's/.*) \(.\).*/\1/' "/proc/$zp/stat" 2>/dev/null)" = Z ] && break
	sleep 0.01
done
rec zatt -p "$zp"
wait "$zp"
zrc=$?
set -- $(awk '/worker_burn/ { w += $NF } /plugin_hot/ { p += $NF } END { print w + 0, p + 0 }' "$work/zatt.folded")
check "-p after the main thread's pthread_exit: exit $(cat "$work/zatt.rc"), the program's $zrc; samples in the worker ($1) and in the plugin it loaded after the attach ($2, >= 500 of ~700), nothing left out" \
	sh -c "[ \"\$(cat '$work/zatt.rc')\" = 0 ] && [ $zrc = 0 ] && [ $1 -ge 100 ] && [ $2 -ge 500 ] && ! grep -q 'left out' '$work/zatt.err'"
check "-p after the main thread's pthread_exit: every sample fully unwound ($(tail -n 1 "$work/zatt.unw" | cut -c1-80))" \
	sh -c "grep -q -E ' ([0-9]+) samples, \\1 fully unwound' '$work/zatt.unw'"
"$TD/tdata-single" 2 >/dev/null &
sp=$!
sleep 0.2
rec attt -t "$sp"
wait "$sp"
s=$(total "$work/attt.folded"); c=$(with "$work/attt.folded" 'level_a;level_b;level_c;hot_leaf( |;)')
check "-t TID: recorded until the thread ended ($s samples), chain in >= 99% ($c)" \
	sh -c "[ \"\$(cat '$work/attt.rc')\" = 0 ] && [ $s -ge 500 ] && [ $((c * 100)) -ge $((s * 99)) ]"

# 6. the whole machine: two unrelated programs, both with their chains.
"$TD/tdata-single" 1 >/dev/null &
p1=$!
"$TD/tdata-nofp" 1 >/dev/null &
p2=$!
rec all -a -- sleep 1
wait "$p1" "$p2"
# How many samples each gets depends on the machine's load (-a samples
# every CPU, the programs get what the others leave): counted is that both
# are there and that their samples are on their chains.
"$UNW" folded --pid "$p1" "$work/all.trace" >"$work/all1.folded" 2>/dev/null
"$UNW" folded --pid "$p2" "$work/all.trace" >"$work/all2.folded" 2>/dev/null
a1=$(with "$work/all1.folded" 'level_a;level_b;level_c;hot_leaf'); t1=$(total "$work/all1.folded")
a2=$(with "$work/all2.folded" 'nofp_outer;nofp_middle;nofp_hot'); t2=$(total "$work/all2.folded")
check "-a: both programs with their chains in >= 90% of their samples ($a1 of $t1, $a2 of $t2)" \
	sh -c "[ $t1 -ge 20 ] && [ $t2 -ge 20 ] && [ $((a1 * 100)) -ge $((t1 * 90)) ] && [ $((a2 * 100)) -ge $((t2 * 90)) ]"

# 7. refused perf events: a command falls back to the in-process sampler
# with a one-line notice; -a and -p fail with the reason, exit non-zero.
"$B/tests/no-perf-events" "$STACKCAP" record -o "$work/fb.trace" -- "$TD/tdata-single" 0.3 >/dev/null 2>"$work/fb.err"
fbrc=$?
check "refused: fallback to the in-process sampler, exit 0, one notice" \
	sh -c "[ $fbrc = 0 ] && [ \$(grep -c 'perf_event_open refused' '$work/fb.err') = 1 ] && grep -q 'in-process:' '$work/fb.err' && \
	       [ \"\$('$UNW' folded '$work/fb.trace' 2>/dev/null | wc -l)\" -gt 0 ]"
"$B/tests/no-perf-events" "$STACKCAP" record -a -o "$work/fba.trace" -- true 2>"$work/fba.err"
fbrc=$?
check "refused: -a exits non-zero with the reason ($(head -c 120 "$work/fba.err"))" \
	sh -c "[ $fbrc != 0 ] && grep -q 'not permitted' '$work/fba.err' && [ ! -e '$work/fba.trace' ]"
# An unprivileged user under kernel.perf_event_paranoid 2 may sample its
# own processes, not the whole machine: -a says so (paranoid raised to 2
# for the test, restored after).
par=$(cat /proc/sys/kernel/perf_event_paranoid)
nb=$(mktemp -d /tmp/stackcap-nobody.XXXXXX)
chmod 777 "$nb"
echo 2 >/proc/sys/kernel/perf_event_paranoid
runuser -u nobody -- "$STACKCAP" record -a -o "$nb/all.trace" -- true 2>"$work/nba.err"
nbrc=$?
runuser -u nobody -- "$STACKCAP" record -o "$nb/own.trace" -- "$TD/tdata-single" 0.2 2>"$work/nbo.err"
nborc=$?
echo "$par" >/proc/sys/kernel/perf_event_paranoid
check "unprivileged, paranoid 2: -a exits 1 with the reason, no trace ($(head -c 100 "$work/nba.err"))" \
	sh -c "[ $nbrc = 1 ] && grep -q 'not permitted' '$work/nba.err' && [ ! -e '$nb/all.trace' ]"
check "unprivileged, paranoid 2: its own command is recorded by the kernel copy (user time)" \
	sh -c "[ $nborc = 0 ] && grep -q 'kernel copy' '$work/nbo.err' && [ \"\$('$UNW' folded '$nb/own.trace' 2>/dev/null | wc -l)\" -gt 0 ]"
check "kernel.perf_event_paranoid restored ($par)" [ "$(cat /proc/sys/kernel/perf_event_paranoid)" = "$par" ]
rm -rf "$nb"
"$STACKCAP" record -p 999999999 -o "$work/nopid.trace" 2>"$work/nopid.err"
check "-p of no process: exit 1, 'no such process'" sh -c "[ $? = 1 ] && grep -q 'no such process' '$work/nopid.err'"

# Stream files made ahead (record/files-ahead.h): each is an O_TMPFILE
# inode made on a thread of the recorder's own, named with linkat() when
# a process needs it; none is created by the thread that drains the
# rings.  Five processes: ten files or more, all named so, and read back.
if command -v strace >/dev/null; then
	strace -f -qq -e trace=openat,linkat -o "$work/ahead.strace" \
		"$STACKCAP" record -o "$work/ahead.trace" -- sh -c "for i in 1 2 3 4; do '$TD/tdata-recurse' -d 10 0.05; done" \
		2>"$work/ahead.err"
	arc=$?
	nst=$(ls "$work/ahead.trace" | grep -c -E '^(proc|samples)-')
	nlink=$(grep -c -E 'linkat\(AT_FDCWD, "/proc/self/fd/[0-9]+", [0-9]+, "(proc|samples)-[^"]*", AT_SYMLINK_FOLLOW' "$work/ahead.strace")
	ncreat=$(grep -c -E 'openat\([0-9]+, "(proc|samples)-[^"]*", [^)]*O_CREAT' "$work/ahead.strace")
	check "stream files made ahead: $nst files, $nlink named by linkat, $ncreat created in place (exit $arc)" \
		sh -c "[ $arc = 0 ] && [ $nst -ge 10 ] && [ $nlink = $nst ] && [ $ncreat = 0 ] &&
			[ \"\$('$UNW' folded '$work/ahead.trace' 2>/dev/null | wc -l)\" -gt 0 ]"
else
	not_ok "strace missing: apt-get install strace (scripts/install-deps.sh)"
fi

# JIT perf maps (record/keep-jit-maps.h).  Many processes with JIT code,
# one after the other, under a small open-file limit: each map copied as
# its process ends and its descriptor closed (they were all held to the
# end, and the recording stopped: "Too many open files").
(ulimit -n 100 && "$STACKCAP" record -o "$work/jitmany.trace" -- \
	sh -c "for i in \$(seq 110); do '$B/tests/jit-burn' 0.01 perf-map >/dev/null; done") 2>"$work/jitmany.err"
rc=$?
nmaps=$(ls "$work/jitmany.trace/jit" 2>/dev/null | wc -l)
for f in "$work/jitmany.trace/jit"/perf-*.map; do rm -f "/tmp/${f##*/}"; done
check "110 JIT processes under 100 open files: exit 0 ($rc), no error, $nmaps maps kept$(grep -m1 'error' "$work/jitmany.err")" \
	sh -c "[ $rc = 0 ] && ! grep -q 'stopped by an error' '$work/jitmany.err' && [ $nmaps -ge 100 ]"
# A map owned by its process's user (not ours, not root's): kept, the
# owner seen while the process ran.
if [ "$(id -u)" = 0 ]; then
	rec jitnobody -- runuser -u nobody -- "$B/tests/jit-burn" 1 perf-map
	jpid=$(ls "$work/jitnobody.trace/jit" 2>/dev/null | sed -n 's/^perf-\([0-9]*\)\.map$/\1/p')
	owner=$(stat -c %U "/tmp/perf-$jpid.map" 2>/dev/null)
	rm -f "/tmp/perf-$jpid.map"
	check "a JIT map owned by its process's user ($owner): exit $(cat "$work/jitnobody.rc"), kept, no warning" \
		sh -c "[ '$owner' = nobody ] && [ -s '$work/jitnobody.trace/jit/perf-$jpid.map' ] && ! grep -q 'perf maps not kept' '$work/jitnobody.err'"
else
	not_ok "a JIT map owned by its process's user: needs root (runuser), as CI runs"
fi

echo "1..$n"
