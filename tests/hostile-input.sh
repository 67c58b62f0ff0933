#!/bin/sh
# Hostile input (issue 16): crafted traces and files that hung stackunwind
# (a FIFO where a file is named), made it take GBs of memory from KBs of
# input, ran for minutes, followed a symlink out of the trace, or sent
# control characters to the terminal.  tests/hostile-gen writes the inputs.
# Every run has a 120 s guard: it only catches a hang (the runs take well
# under a second each, loaded or not); memory is the peak RSS that
# /usr/bin/time reports, checked against 256 MiB (what none of these
# tiny inputs legitimately needs).
. "$top_srcdir/tests/tap-lib.sh"
need time /usr/bin/time
SU="${HOSTILE_STACKUNWIND:-$B/cli/stackunwind}"
GEN="$B/tests/hostile-gen"
LIMIT_KB=262144

# guarded NAME CMD...: run (tap-lib.sh) CMD under the guard and
# /usr/bin/time; NAME.out, .err, .rc (137 or 124: hung), .kb (peak RSS).
guarded() {
	name=$1
	shift
	run "$name" /usr/bin/time -f %M -o "$work/$name.kb" timeout -s KILL "${HOSTILE_GUARD:-120}" "$@"
}
kb() { tail -n 1 "$work/$1.kb"; }
finished() { r=$(rc "$1"); [ "$r" != 137 ] && [ "$r" != 124 ] && [ "$r" -lt 128 ]; }
small() { [ "$(kb "$1")" -lt $LIMIT_KB ]; }
# crafted NAME CMD WHAT MODE PATH [ARG...]: hostile-gen MODE PATH ARG...
# writes the input, `stackunwind CMD PATH` runs on it; size, peak and exit
# are printed as a TAP comment.
crafted() {
	name=$1 cmd=$2 what=$3
	shift 3
	"$GEN" "$@" || exit 1
	guarded "$name" "$SU" "$cmd" "$2"
	echo "# $what ($(du -sk "$2" | cut -f1) KB): exit $(rc "$name"), peak $(kb "$name") KB"
}

plan=28
echo "1..$plan"

# ---- 1. FIFOs and devices named by a trace --------------------------------
mkfifo "$work/fifo"
"$GEN" trace "$work/fifo.trace" "$work/fifo" || exit 1
guarded fifo-bin "$SU" stacks "$work/fifo.trace"
check "a FIFO as a recorded binary path does not hang stacks (exit $(rc fifo-bin))" finished fifo-bin

"$GEN" trace "$work/dev.trace" /dev/zero || exit 1
guarded dev-bin "$SU" stacks "$work/dev.trace"
check "a device as a recorded binary path is not read (exit $(rc dev-bin))" finished dev-bin

"$GEN" trace "$work/fifostream.trace" /victim || exit 1
mkfifo "$work/fifostream.trace/samples-100-999"
guarded fifo-stream "$SU" stats "$work/fifostream.trace"
check "a FIFO as a stream file does not hang stats (exit $(rc fifo-stream))" finished fifo-stream
check "... and is skipped as not a regular file, exit 3" \
	sh -c "grep -q 'samples-100-999: not a regular file' '$work/fifo-stream.err' && [ $(rc fifo-stream) = 3 ]"

mkfifo "$work/fifometa"
mkdir "$work/fifometa.trace"
mkfifo "$work/fifometa.trace/metadata"
guarded fifo-meta "$SU" stats "$work/fifometa.trace"
check "a FIFO as the metadata does not hang (exit $(rc fifo-meta), refused)" \
	sh -c "[ $(rc fifo-meta) = 1 ]"

guarded fifo-arg "$SU" stats "$work/fifo"
check "a FIFO given as the trace does not hang (exit $(rc fifo-arg), refused)" \
	sh -c "[ $(rc fifo-arg) = 1 ] && grep -q 'not a regular file' '$work/fifo-arg.err'"

"$GEN" trace "$work/jit.trace" anon || exit 1
mkdir -p "$work/symfs/tmp"
mkfifo "$work/symfs/tmp/perf-100.map"
guarded fifo-perfmap "$SU" stacks --symfs "$work/symfs" "$work/jit.trace"
check "a FIFO as /tmp/perf-PID.map does not hang (exit $(rc fifo-perfmap))" finished fifo-perfmap

# An LTTng trace directory is handed to babeltrace2's src.ctf.fs, which
# opens its files and its index/ itself: a FIFO there made it wait for
# ever.  The directory is walked first (lstat only) and refused.  The
# trace: a crafted one whose metadata names tracer "lttng-ust" (what the
# LTTng probe looks for), still valid CTF for src.ctf.fs.
lttng_like() {
	"$GEN" trace "$1" /victim || exit 1
	sed -i 's/tracer_name = "stackcap"/tracer_name = "lttng-ust"/' "$1/metadata"
	mkdir "$1/index"
}
lttng_like "$work/lttfifo.trace"
mkfifo "$work/lttfifo.trace/index/samples-100-100.idx"
guarded ltt-fifo "$SU" stats "$work/lttfifo.trace"
check "a FIFO in an LTTng trace's index/ does not hang (exit $(rc ltt-fifo))" finished ltt-fifo
check "... refused before babeltrace2 opens anything, named: exit 1" \
	sh -c "[ $(rc ltt-fifo) = 1 ] && grep -q 'index/samples-100-100.idx: a FIFO, not a regular file: refused' '$work/ltt-fifo.err'"
lttng_like "$work/lttlink.trace"
echo 'root:secret' >"$work/outside"
ln -s "$work/outside" "$work/lttlink.trace/channel0_0"
guarded ltt-link "$SU" stats "$work/lttlink.trace"
check "a symlink out of an LTTng trace directory is refused, named: exit 1" \
	sh -c "[ $(rc ltt-link) = 1 ] && grep -q 'channel0_0: a symbolic link leaving the trace directory' '$work/ltt-link.err'"

# ---- 6. a stream file that is a symlink -------------------------------------
printf 'root:$y$j9T$secretsecret:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\nbin:*:19000:0:99999:7:::\n' >"$work/shadow"
"$GEN" trace "$work/link.trace" /victim || exit 1
ln -s "$work/shadow" "$work/link.trace/samples-100-555"
guarded link "$SU" stats "$work/link.trace"
check "a symlinked stream file is not followed (warning, exit $(rc link))" \
	sh -c "grep -q 'samples-100-555: a symbolic link' '$work/link.err' && [ $(rc link) = 3 ]"
check "... and nothing of its target is printed" \
	sh -c "! grep -qi -e root -e 746f6f72 -e 726f6f74 '$work/link.err' '$work/link.out'"
# Its bytes in a regular file: the bad-magic warning names no bytes.
cp "$work/shadow" "$work/link.trace/samples-100-555.tmp"
rm "$work/link.trace/samples-100-555"
mv "$work/link.trace/samples-100-555.tmp" "$work/link.trace/samples-100-555"
guarded magic "$SU" stats "$work/link.trace"
check "the bad-magic warning prints no byte of the file" \
	sh -c "grep -q 'bad packet magic' '$work/magic.err' && ! grep -qi -e root -e 746f6f72 -e 726f6f74 '$work/magic.err'"

# ---- 5. control characters of a trace's names reach no terminal -------------
"$GEN" trace "$work/osc.trace" /victim || exit 1
: >"$work/osc.trace/$(printf 'x\033]52;c;SGVsbG8=\007')"
guarded osc "$SU" stats "$work/osc.trace"
check "a file name with an OSC 52 sequence is escaped in the warning" \
	sh -c "grep -q 'x\\\\x1b\\]52;c;SGVsbG8=\\\\x07: not a stackcap stream file' '$work/osc.err' && ! grep -q \"\$(printf '\\033')\" '$work/osc.err'"

# ---- 2. memory bounded by what the trace declares ---------------------------
crafted big stacks "16 samples claiming 64 MiB under an 8 KiB cap" bigsample "$work/big.trace" 16
check "samples larger than the process's stack cap: peak RSS under 256 MiB" small big
check "... refused with a message naming the cap, exit 3" \
	sh -c "grep -q 'stack cap' '$work/big.err' && [ $(rc big) = 3 ]"

# Within a declared 64 MiB cap, each thread keeps its last image (the
# reference of its next sample) until its samples are all read: 16
# threads whose samples interleave held 1 GiB from 2 KB.
crafted bigcap stacks "16 threads, two samples of 64 MiB each, interleaved, under a declared 64 MiB cap" bigcap "$work/bigcap.trace" 16
# The aim is 256 MiB plus what the trace legitimately needs: here one image
# of the 64 MiB its cap allows, which a worker's batch holds a copy of
# (stackunwind -j, cli/pipeline.c) while the reader keeps the thread's.
check "stack images of all threads bounded: peak RSS under 256 MiB + one 64 MiB image ($(kb bigcap) KB)" \
	[ "$(kb bigcap)" -lt $((LIMIT_KB + 65536)) ]
check "... past the bound named, exit 3" \
	sh -c "grep -q 'images of all threads' '$work/bigcap.err' && [ $(rc bigcap) = 3 ]"

# The same threads one after the other in one file: each thread's image
# goes when its samples are done (a system-wide trace's thousands of
# threads), so all 16 decode; the -j workers' copies in flight are bounded
# too (64 MiB: they held five such stacks, 332 MB).
crafted bigseq stacks "16 threads in turn, a 64 MiB sample each, under a declared 64 MiB cap" bigseq "$work/bigseq.trace" 16
check "threads in turn: every sample decoded, none refused ($(grep -c 'images of all threads' "$work/bigseq.err") refused; $(tail -n 1 "$work/bigseq.err" | cut -c1-60))" \
	sh -c "! grep -q 'images of all threads' '$work/bigseq.err' && grep -q '^stackunwind: 16 samples' '$work/bigseq.err'"
check "threads in turn: peak RSS under 256 MiB + one 64 MiB image ($(kb bigseq) KB)" \
	[ "$(kb bigseq)" -lt $((LIMIT_KB + 65536)) ]

crafted maps stats "8,000 one-entry maps generations" maps "$work/maps.trace" 8000
check "8,000 maps generations: peak RSS under 256 MiB" small maps

crafted zst stats "8 zstd streams of one 64 MiB packet each" zst "$work/zst.trace" 8
check "8 .zst streams of 64 MiB packets: peak RSS under 256 MiB" small zst
check "... with a message past the bound" sh -c "grep -q 'inflated' '$work/zst.err'"

# ---- 3. no quadratic time ----------------------------------------------------
crafted procs stats "400,000 process_start events" procs "$work/procs.trace" 400000
check "400,000 processes are read (no scan of every earlier one)" \
	sh -c "[ $(rc procs) -lt 124 ] && grep -q '400000' '$work/procs.out'"

crafted ids stats "perf.data, 4,096 attributes sharing one id section of 20,000 ids" perf-ids "$work/ids.data" 4096
check "overlapping perf.data id sections are refused at once, named" \
	sh -c "[ $(rc ids) = 1 ] && grep -q 'more event ids than the file holds' '$work/ids.err'"
check "... peak RSS under 256 MiB" small ids

crafted z stats "perf.data -z, 8 compressed records of 48 MiB inflated, no FINISHED_ROUND" perf-z "$work/z.data" 8
check "perf -z records without FINISHED_ROUND: peak RSS under 256 MiB" small z
check "... every sample read, with a warning" \
	sh -c "grep -q '^samples: *8388608' '$work/z.out' && grep -q 'without a FINISHED_ROUND' '$work/z.err'"
