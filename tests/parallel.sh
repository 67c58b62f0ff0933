#!/bin/sh
# Integration: `stackunwind -j N` (cli/pipeline.c) on traces made for its
# partitioning: the reader decodes each sample (a blob may take words from
# its thread's previous sample) and puts it into a batch, only the words
# below that shared top when the batch holds the previous sample, else
# whole; workers rebuild the images, unwind and format batches in any
# order; the text comes out in sample order.  On many threads interleaved (both samplers) and on one
# thread with a deep stack, every command's output of -j 2 and -j 8 is
# byte-identical to -j 1's, with every sample in it; with time slices too,
# whose gaps take a sample's previous one out of its batch.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"

# tids_of OUT: "SAMPLES TIDS CHANGES" of a stacks output (a header line per
# sample, "comm pid/tid time:"; CHANGES: consecutive samples of other tids).
tids_of() {
	awk '/^[^ \t]/ { split($2, a, "/"); if (n && a[2] != prev) sw++; prev = a[2]; seen[a[2]] = 1; n++ }
		END { printf "%d %d %d\n", n, length(seen), sw }' "$1"
}
# same_j NAME TRACE CMD [OPTIONS]: CMD at -j 1, 2 and 8, outputs compared.
same_j() {
	name=$1; tr=$2; shift 2
	for j in 1 2 8; do
		"$SU" "$@" -j $j "$work/$tr.trace" >"$work/$name.j$j" 2>"$work/$name.j$j.err"
		echo $? >"$work/$name.j$j.rc"
	done
	check "$tr: $*${JN:+ ($JN)}: exits 0 at -j 1, 2, 8 ($(cat "$work/$name.j1.rc") $(cat "$work/$name.j2.rc") $(cat "$work/$name.j8.rc"))" \
		sh -c "[ \$(cat '$work/$name.j1.rc')\$(cat '$work/$name.j2.rc')\$(cat '$work/$name.j8.rc') = 000 ]"
	check "$tr: $*${JN:+ ($JN)}: -j 2 and -j 8 byte-identical to -j 1 ($(wc -c <"$work/$name.j1") bytes)" \
		sh -c "[ -s '$work/$name.j1' ] && cmp -s '$work/$name.j1' '$work/$name.j2' && cmp -s '$work/$name.j1' '$work/$name.j8'"
}
# u64 FILE OFFSET: the little-endian u64 there; le64 N: N as 8 bytes.
u64() { od -An -tu8 -j "$2" -N 8 "$1" | tr -d ' '; }
le64() {
	v=$1 i=0 s=
	while [ $i -lt 8 ]; do s="$s$(printf '\\%03o' $((v & 255)))"; v=$((v >> 8)); i=$((i + 1)); done
	printf "$s"
}
# packet_offsets FILE: the offset of each packet of a stream file, one a
# line (packet_size, in bits: the packet context's fourth u64, after the
# 32-byte header; common/ctf-layout.h).
packet_offsets() {
	po_size=$(stat -c %s "$1") po_off=0
	while [ "$po_off" -lt "$po_size" ]; do
		echo "$po_off"
		po_bits=$(u64 "$1" $((po_off + 56)))
		[ -n "$po_bits" ] && [ "$po_bits" -gt 0 ] || break
		po_off=$((po_off + po_bits / 8))
	done
}
# delta TRACE: "SAMPLES DELTA": samples, and those with words of their
# thread's previous sample (stackunwind stats).
delta() {
	"$SU" stats "$work/$1.trace" 2>/dev/null |
		awk '/^samples:/ { n = $2 } /^delta-coded:/ { d = $2 } END { printf "%d %d\n", n, d }'
}

# Eight threads interleaved, with each sampler.
for s in $SAMPLERS; do
	tr=threads-$s
	record "$tr" $(sampler_opts "$s") -F 1999 -- "$TD/tdata-threads" -t 8 0.25
	check "$tr: recorded ($(rc "$tr"))" [ "$(rc "$tr")" = 0 ]
	set -- $(delta "$tr")
	check "$tr: most samples take words from their thread's previous one ($2 of $1)" \
		awk -v n="$1" -v d="$2" 'BEGIN { exit !(n >= 500 && d * 2 >= n) }'
	nstats=$1
	same_j "$tr-stacks" "$tr" stacks
	set -- $(tids_of "$work/$tr-stacks.j1")
	check "$tr: every sample printed ($1 of $nstats), from >= 8 threads ($2) interleaved ($3 changes of thread)" \
		awk -v n="$1" -v s="$nstats" -v t="$2" -v c="$3" 'BEGIN { exit !(n == s && t >= 8 && c >= 50) }'
	same_j "$tr-folded" "$tr" folded --per-thread
	same_j "$tr-dwfl" "$tr" stacks --unwinder dwfl
	same_j "$tr-bt2" "$tr" stacks --reader babeltrace2
	same_j "$tr-slices" "$tr" stacks --time 0%-20%,25%-60%,70%-71%,80%-100%
	# export in parts: each part's records into the one model, in order;
	# a thread is one however many parts met it.
	same_j "$tr-speedscope" "$tr" export --format speedscope -o -
	same_j "$tr-pprof" "$tr" export --format pprof -o -
	# The workers started after 1000 samples the reader worked alone, and
	# after the default 256 (the trace is longer: the switch mid-trace).
	STACKCAP_JOBS_AFTER=1000 JN="workers after 1000 samples"
	same_j "$tr-after" "$tr" stacks
	STACKCAP_JOBS_AFTER= JN="workers after the default 256 samples"
	same_j "$tr-default" "$tr" folded --per-thread
	STACKCAP_JOBS_AFTER=0 JN=
done

# Discarded events are dated at the previous packet's end (as babeltrace2
# does): where that packet ended after the next one begins, a file's items
# go back in time and a whole read puts that packet's first samples after
# other files' later ones, an order a read in parts cannot know.  Made
# here in one stream file of the 8-thread trace: its next-to-last
# packet's end moved to its last packet's, and 5 events discarded before
# the last.  stacks in parts says so and reads the trace again whole:
# -j 1's output.
rm -rf "$work/disc.trace"
cp -r "$work/threads-kernel.trace" "$work/disc.trace"
npk=0
for f in "$work/disc.trace"/samples-*; do
	offs=$(packet_offsets "$f")
	npk=$(echo "$offs" | wc -l)
	last=$(echo "$offs" | tail -n 1)
	prev=$(echo "$offs" | tail -n 2 | head -n 1)
	[ "$npk" -ge 2 ] && break
done
check "disc: a stream file of 2 packets or more ($npk)" [ "$npk" -ge 2 ]
le64 "$(u64 "$f" $((last + 40)))" | dd of="$f" bs=1 seek=$((prev + 40)) conv=notrunc 2>/dev/null
le64 $(($(u64 "$f" $((last + 64))) + 5)) | dd of="$f" bs=1 seek=$((last + 64)) conv=notrunc 2>/dev/null
"$SU" stacks -j 1 "$work/disc.trace" >"$work/disc.j1" 2>"$work/disc.j1.err"
echo $? >"$work/disc.j1.rc"
for j in 2 8; do
	STACKCAP_JOBS_AFTER=0 STACKUNWIND_PARTS_WARNINGS=1 "$SU" stacks -j $j "$work/disc.trace" >"$work/disc.j$j" \
		2>"$work/disc.j$j.err"
	echo $? >"$work/disc.j$j.rc"
done
check "disc: stacks in parts says the order is not sure ($(grep -m 1 'not sure' "$work/disc.j2.err" | cut -c 1-120))" \
	grep -q 'the order of a read in parts is not sure' "$work/disc.j2.err"
check "disc: stacks -j 2 and -j 8 print -j 1's samples, in its order ($(cat "$work/disc.j1.rc"); $(grep -c '^[^ 	]' "$work/disc.j1") samples)" \
	sh -c "[ -s '$work/disc.j1' ] && cmp -s '$work/disc.j1' '$work/disc.j2' && cmp -s '$work/disc.j1' '$work/disc.j8' &&
		cmp -s '$work/disc.j1.rc' '$work/disc.j2.rc'"
# export in parts too: the records the parts gave the model are dropped,
# the trace read again whole into a new one.
"$SU" export --format speedscope -o "$work/disc-x.j1" -j 1 "$work/disc.trace" 2>/dev/null
echo $? >"$work/disc-x.j1.rc"
STACKCAP_JOBS_AFTER=0 STACKUNWIND_PARTS_WARNINGS=1 "$SU" export --format speedscope -o "$work/disc-x.j2" -j 2 \
	"$work/disc.trace" 2>"$work/disc-x.j2.err"
echo $? >"$work/disc-x.j2.rc"
check "disc: export in parts says the order is not sure ($(grep -m 1 'not sure' "$work/disc-x.j2.err" | cut -c 1-120))" \
	grep -q 'the order of a read in parts is not sure' "$work/disc-x.j2.err"
check "disc: export -j 2 writes -j 1's profile ($(cat "$work/disc-x.j1.rc") $(cat "$work/disc-x.j2.rc"); $(wc -c <"$work/disc-x.j1") bytes)" \
	sh -c "[ -s '$work/disc-x.j1' ] && cmp -s '$work/disc-x.j1' '$work/disc-x.j2' && cmp -s '$work/disc-x.j1.rc' '$work/disc-x.j2.rc'"

# One thread, a deep stack: each sample some 30 KB of words, batches full
# by bytes after a few samples.
record deep -F 1999 -- "$TD/tdata-recurse" -d 300 0.5
check "deep: recorded ($(rc deep))" [ "$(rc deep)" = 0 ]
set -- $(delta deep)
check "deep: most samples take words from the previous one ($2 of $1)" \
	awk -v n="$1" -v d="$2" 'BEGIN { exit !(n >= 300 && d * 2 >= n) }'
nstats=$1
same_j deep-stacks deep stacks
set -- $(tids_of "$work/deep-stacks.j1")
check "deep: every sample printed ($1 of $nstats)" [ "$1" = "$nstats" ]
same_j deep-folded deep folded
same_j deep-pprof deep export --format pprof -o -
# stacks writes the chains' lines by reference (writev, export/text.c):
# a full disk says so and fails at any -j, as stdio's writes do.
[ -w /dev/full ] || { echo "tests/parallel.sh: /dev/full is missing (a Linux system has it)" >&2; exit 1; }
for j in 1 2; do
	STACKCAP_JOBS_AFTER=0 "$SU" stacks -j $j "$work/deep.trace" >/dev/full 2>"$work/full.j$j.err"
	echo $? >"$work/full.j$j.rc"
done
check "deep: stacks to a full disk at -j 1 and -j 2: exit 1, a write error saying why ($(cat "$work/full.j1.rc") $(cat "$work/full.j2.rc"))" \
	sh -c "for j in 1 2; do [ \$(cat '$work/full.j'\$j.rc) = 1 ] &&
		grep -q 'write error on standard output: No space left on device' '$work/full.j'\$j.err || exit 1; done"
# Each packet decodes alone (docs/trace-format.md), also where a packet
# fills by bytes before its writer's count of samples: --full-copy puts
# ~6 KB before each sample.  Read in parts, no part meets a sample that
# needs another part's packet (it would warn, and the trace be read again
# the usual way).
for s in $SAMPLERS; do
	tr=full-$s
	record "$tr" $(sampler_opts "$s") -F 999 --full-copy -- "$TD/tdata-recurse" -d 46 0.5
	check "$tr: recorded ($(rc "$tr"))" [ "$(rc "$tr")" = 0 ]
	"$SU" folded -j 1 "$work/$tr.trace" >"$work/$tr.j1" 2>/dev/null
	STACKCAP_JOBS_AFTER=0 STACKUNWIND_PARTS_WARNINGS=1 "$SU" folded -j 2 "$work/$tr.trace" >"$work/$tr.j2" \
		2>"$work/$tr.j2.err"
	check "$tr: read in 2 parts, no packet needs another ($(grep -c 'in part' "$work/$tr.j2.err") warnings: $(grep -m 1 'in part' "$work/$tr.j2.err" | cut -c 1-160)), folded as -j 1's" \
		sh -c "! grep -q 'in part' '$work/$tr.j2.err' && [ -s '$work/$tr.j1' ] && cmp -s '$work/$tr.j1' '$work/$tr.j2'"
done
# Each sample's packet holds the events it comes with (the full copy,
# the kernel chain): the metadata says so, and a part skips another
# part's packet whole.  Without that line (traces written before it) a
# part reads the headers of another's packets up to their last sample:
# the same output either way.
for s in $SAMPLERS; do
	tr=full-$s
	check "$tr: the metadata says stackcap_packets_whole = 1" grep -q '^	stackcap_packets_whole = 1;$' "$work/$tr.trace/metadata"
	rm -rf "$work/$tr-old.trace"
	cp -r "$work/$tr.trace" "$work/$tr-old.trace"
	sed -i '/stackcap_packets_whole/d' "$work/$tr-old.trace/metadata"
	STACKCAP_JOBS_AFTER=0 STACKUNWIND_PARTS_WARNINGS=1 "$SU" folded -j 2 "$work/$tr-old.trace" >"$work/$tr-old.j2" \
		2>"$work/$tr-old.j2.err"
	check "$tr without stackcap_packets_whole: read in 2 parts, no part warns, folded as -j 1's" \
		sh -c "! grep -q 'in part' '$work/$tr-old.j2.err' && [ -s '$work/$tr.j1' ] && cmp -s '$work/$tr.j1' '$work/$tr-old.j2'"
done
# A zstd trace: a part inflates only the first block of another part's
# frame (the packet header, alone in it) and goes past the rest.
record zst -F 1999 --zstd -- "$TD/tdata-recurse" -d 46 0.5
check "zst: recorded ($(rc zst))" [ "$(rc zst)" = 0 ]
"$SU" folded -j 1 "$work/zst.trace" >"$work/zst.j1" 2>/dev/null
for j in 2 8; do
	STACKCAP_JOBS_AFTER=0 STACKUNWIND_PARTS_WARNINGS=1 "$SU" folded -j $j "$work/zst.trace" >"$work/zst.j$j" \
		2>"$work/zst.j$j.err"
done
check "zst: read in 2 and 8 parts, no part warns, folded as -j 1's ($(wc -l <"$work/zst.j1") stacks)" \
	sh -c "! grep -q 'in part' '$work/zst.j2.err' '$work/zst.j8.err' && [ -s '$work/zst.j1' ] &&
		cmp -s '$work/zst.j1' '$work/zst.j2' && cmp -s '$work/zst.j1' '$work/zst.j8'"
# stacks in parts (cli/ordered.h): each part's texts written in the
# whole read's order, here over 8 threads' streams interleaved, deltas
# and full copies, a zstd trace.
for tr in zst full-kernel full-in-process threads-kernel threads-in-process; do
	[ -d "$work/$tr.trace" ] || continue
	"$SU" stacks -j 1 "$work/$tr.trace" >"$work/$tr-st.j1" 2>"$work/$tr-st.j1.err"
	for j in 2 8; do
		STACKCAP_JOBS_AFTER=0 STACKUNWIND_PARTS_WARNINGS=1 "$SU" stacks -j $j "$work/$tr.trace" \
			>"$work/$tr-st.j$j" 2>"$work/$tr-st.j$j.err"
	done
	check "$tr: stacks read in 2 and 8 parts, no part warns, byte-identical to -j 1 ($(wc -c <"$work/$tr-st.j1") bytes)" \
		sh -c "! grep -q 'in part' '$work/$tr-st.j2.err' '$work/$tr-st.j8.err' && [ -s '$work/$tr-st.j1' ] &&
			cmp -s '$work/$tr-st.j1' '$work/$tr-st.j2' && cmp -s '$work/$tr-st.j1' '$work/$tr-st.j8' &&
			cmp -s '$work/$tr-st.j1.err' '$work/$tr-st.j2.err'"
done
# Many processes, each a small sample stream file (a system-wide trace's
# shape): read in parts, a small file is one part's whole, by its index
# (trace/source-native.c packet_mine): every sample once, none lost or
# counted twice, in -j 1's order.
record procs -F 1999 -- sh -c "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do '$TD/tdata-recurse' -d 20 0.04 & done; wait"
nsmall=$(find "$work/procs.trace" -name 'samples-*' -size -16k | wc -l)
check "procs: recorded, small sample files of 12 processes or more ($(rc procs); $nsmall)" \
	sh -c "[ '$(rc procs)' = 0 ] && [ $nsmall -ge 12 ]"
for c in folded stacks; do
	"$SU" $c -j 1 "$work/procs.trace" >"$work/procs-$c.j1" 2>/dev/null
	for j in 2 8; do
		STACKCAP_JOBS_AFTER=0 STACKUNWIND_PARTS_WARNINGS=1 "$SU" $c -j $j "$work/procs.trace" \
			>"$work/procs-$c.j$j" 2>"$work/procs-$c.j$j.err"
	done
	check "procs: $c read in 2 and 8 parts, no part warns, byte-identical to -j 1 ($(wc -c <"$work/procs-$c.j1") bytes)" \
		sh -c "! grep -q 'in part' '$work/procs-$c.j2.err' '$work/procs-$c.j8.err' && [ -s '$work/procs-$c.j1' ] &&
			cmp -s '$work/procs-$c.j1' '$work/procs-$c.j2' && cmp -s '$work/procs-$c.j1' '$work/procs-$c.j8'"
done
# The parts' plan (trace/parts-plan.h): a process whose samples are small
# beside the trace is one part's, and the other parts never open its
# files.  Over procs (13 processes, each well under an eighth of the
# samples) each stream file is opened once by -j 2 (before the plan: by
# each part), the summary line is -j 1's, and the trace's kernel symbols,
# in one process stream, name the kernel frames of every part's samples.
if command -v strace >/dev/null; then
	STACKCAP_JOBS_AFTER=0 STACKUNWIND_PARTS_WARNINGS=1 strace -f -qq -e trace=openat -o "$work/procs.strace" \
		"$SU" folded -j 2 "$work/procs.trace" >"$work/procs-plan.j2" 2>"$work/procs-plan.j2.err"
	nfiles=$(find "$work/procs.trace" -name 'proc-*' -o -name 'samples-*' | wc -l)
	nopen=$(grep -c -E '/(proc|samples)-[0-9]+-[^"]*", O_RDONLY' "$work/procs.strace")
	nuniq=$(grep -o -E '/(proc|samples)-[0-9]+-[^"]*", O_RDONLY' "$work/procs.strace" | sort -u | wc -l)
	check "procs: read in 2 parts, each of its $nfiles stream files opened once ($nopen opens, $nuniq files)" \
		sh -c "[ $nfiles -ge 26 ] && [ $nopen = $nfiles ] && [ $nuniq = $nfiles ]"
else
	not_ok "strace missing: apt-get install strace (scripts/install-deps.sh)"
fi
# Each figure counted once, by one part: 5 events discarded said in the
# first packet of each sample stream file, whichever part reads it.
rm -rf "$work/dropped.trace"
cp -r "$work/procs.trace" "$work/dropped.trace"
nsf=0
for f in "$work/dropped.trace"/samples-*; do
	le64 $(($(u64 "$f" 64) + 5)) | dd of="$f" bs=1 seek=64 conv=notrunc 2>/dev/null
	nsf=$((nsf + 1))
done
# (The recording's own drops besides: a loaded machine's capture drops
# some, 78 in a fresh Debian's run.)
"$SU" folded -j 1 "$work/procs.trace" >/dev/null 2>"$work/procs.j1.err"
base=$(grep -o '[0-9]* dropped at capture' "$work/procs.j1.err" | cut -d' ' -f1)
want=$(( ${base:-0} + 5 * nsf ))
"$SU" folded -j 1 "$work/dropped.trace" >/dev/null 2>"$work/dropped.j1.err"
STACKCAP_JOBS_AFTER=0 STACKUNWIND_PARTS_WARNINGS=1 "$SU" folded -j 2 "$work/dropped.trace" >/dev/null \
	2>"$work/dropped.j2.err"
check "dropped: read in 2 parts, the summary line is -j 1's, $want dropped (${base:-0} + 5 x $nsf; $(grep -o '[0-9]* dropped at capture' "$work/dropped.j2.err"))" \
	sh -c "grep -q ', $want dropped at capture' '$work/dropped.j1.err' && cmp -s '$work/dropped.j1.err' '$work/dropped.j2.err'"
# Kernel frames: their symbols are in the first process stream only.
nk=$(grep -c -E '(^|;)(asm_exc_page_fault|exc_page_fault|entry_SYSCALL_64[a-z_]*|do_syscall_64)(;| )' "$work/procs-folded.j1")
check "procs: kernel frames named in -j 1's folded stacks ($nk stacks), and in -j 2's, 8's alike" \
	sh -c "[ $nk -ge 1 ] && cmp -s '$work/procs-folded.j1' '$work/procs-folded.j2' && cmp -s '$work/procs-folded.j1' '$work/procs-folded.j8'"
# A stream file named for another pid than it holds: the plan gave it by
# its name, so the part reading it says so, and the trace is read again
# whole: -j 1's output.
rm -rf "$work/misnamed.trace"
cp -r "$work/procs.trace" "$work/misnamed.trace"
set -- $(cd "$work/misnamed.trace" && ls samples-* | sed 's/^samples-\([0-9]*\)-.*/\1/' | sort -un)
mv "$work/misnamed.trace/$(cd "$work/misnamed.trace" && ls samples-$1-* | head -n 1)" "$work/misnamed.trace/samples-$2-77"
"$SU" stacks -j 1 "$work/misnamed.trace" >"$work/misnamed.j1" 2>"$work/misnamed.j1.err"
STACKCAP_JOBS_AFTER=0 STACKUNWIND_PARTS_WARNINGS=1 "$SU" stacks -j 2 "$work/misnamed.trace" >"$work/misnamed.j2" \
	2>"$work/misnamed.j2.err"
check "misnamed: a part says the file holds another pid ($(grep -m 1 'in part' "$work/misnamed.j2.err" | cut -c 1-140))" \
	grep -q "samples-$2-77: holds pid $1, not its name's $2" "$work/misnamed.j2.err"
check "misnamed: stacks -j 2 prints -j 1's samples ($(grep -c '^[^ 	]' "$work/misnamed.j1") samples)" \
	sh -c "[ -s '$work/misnamed.j1' ] && cmp -s '$work/misnamed.j1' '$work/misnamed.j2'"
# The same where the name is a busy pid's (a third of the samples or
# more: every part reads its files, none is planned to one part): a file
# of a small pid under that name is said too, and read whole.
record busy -F 1999 -- sh -c "'$TD/tdata-recurse' -d 20 0.4 & for i in 1 2 3 4; do '$TD/tdata-recurse' -d 20 0.04 & done; wait"
set -- $(cd "$work/busy.trace" && for f in samples-*; do echo "$(stat -c %s "$f") ${f#samples-}"; done |
	sed 's/ \([0-9]*\)-.*/ \1/' | awk '{ b[$2] += $1 } END { for (p in b) print b[p], p }' | sort -n | awk '{ print $2 }')
small=$1
eval "big=\${$#}"
mv "$work/busy.trace/$(cd "$work/busy.trace" && ls samples-$small-* | head -n 1)" "$work/busy.trace/samples-$big-77"
"$SU" stacks -j 1 "$work/busy.trace" >"$work/busy.j1" 2>/dev/null
STACKCAP_JOBS_AFTER=0 STACKUNWIND_PARTS_WARNINGS=1 "$SU" stacks -j 2 "$work/busy.trace" >"$work/busy.j2" \
	2>"$work/busy.j2.err"
check "misnamed as a busy pid's: said ($(grep -m 1 'in part' "$work/busy.j2.err" | cut -c 1-140)), -j 2 prints -j 1's samples" \
	sh -c "grep -q 'samples-$big-77: holds pid $small, not its name.s $big' '$work/busy.j2.err' &&
		[ -s '$work/busy.j1' ] && cmp -s '$work/busy.j1' '$work/busy.j2'"
# A handler on the alternate signal stack, sampled in process: each sample
# holds a second stack segment (the thread's own stack), unwound through.
record sigalt -F 1999 --in-process -- "$TD/tdata-sigalt" 0.5
check "sigalt: recorded ($(rc sigalt))" [ "$(rc sigalt)" = 0 ]
same_j sigalt-stacks sigalt stacks
n_rt=$(grep -c -E '__restore_rt|libc\.so\.6\+' "$work/sigalt-stacks.j1")
check "sigalt: samples unwound through the signal frame onto the thread's stack ($n_rt)" [ "$n_rt" -ge 100 ]
# Slices: the samples in their gaps are decoded (the next ones refer to
# them) but not passed on, so the first sample after a gap is held whole.
same_j deep-slices deep stacks --time 0%-10%,15%-30%,33%-34%,50%-90%
set -- $(tids_of "$work/deep-slices.j1")
check "deep: the slices print some samples, not all ($1 of $nstats)" sh -c "[ '$1' -gt 0 ] && [ '$1' -lt '$nstats' ]"

# folded (flamegraph, report) over our traces: -j N reads the trace in N
# parts at once, each thread taking the sample packets no other took
# first, and adds up the counts (cli/stackunwind.c read_in_parts): the
# folded runs above went that way.  A damaged trace is read again the
# usual way: -j 1's counts, warnings and exit status.
# The damage: the magic of the packet at the middle of a stream file, a
# defect every read meets there (24 bytes written inside a packet could
# land in stack words the codec takes as they are: no defect at all).
cp -r "$work/deep.trace" "$work/cut.trace"
f=$(ls "$work/cut.trace"/samples-* | head -n 1)
mid=$(packet_offsets "$f" | awk -v half=$(($(stat -c %s "$f") / 2)) '$1 <= half' | tail -n 1)
printf 'XXXX' | dd of="$f" bs=1 seek="$mid" conv=notrunc 2>/dev/null
# A trace of many packets damaged in its last: most samples before it.
record cut-end -F 4999 -- "$TD/tdata-recurse" -d 46 2
check "cut-end: recorded ($(rc cut-end))" [ "$(rc cut-end)" = 0 ]
f=$(ls "$work/cut-end.trace"/samples-* | head -n 1)
offs=$(packet_offsets "$f")
npk=$(echo "$offs" | wc -l)
last=$(echo "$offs" | tail -n 1)
check "cut-end: a stream file of many packets ($npk)" [ "$npk" -ge 16 ]
printf 'XXXX' | dd of="$f" bs=1 seek="$last" conv=notrunc 2>/dev/null
for j in 1 2 8; do
	"$SU" folded -j $j "$work/cut.trace" >"$work/cut.j$j" 2>"$work/cut.j$j.err"
	echo $? >"$work/cut.j$j.rc"
done
check "a damaged trace: folded -j 2 and -j 8 print -j 1's counts, warnings and exit status ($(cat "$work/cut.j1.rc"); $(grep -c warning "$work/cut.j1.err") warnings)" \
	sh -c "[ -s '$work/cut.j1' ] && [ \$(cat '$work/cut.j1.rc') != 0 ] && grep -q warning '$work/cut.j1.err' &&
		for j in 2 8; do cmp -s '$work/cut.j1' '$work/cut.j'\$j && cmp -s '$work/cut.j1.err' '$work/cut.j'\$j.err &&
			cmp -s '$work/cut.j1.rc' '$work/cut.j'\$j.rc || exit 1; done"
# stacks: the parts have written the samples before the damage when a
# part meets it (damaged last: most of them); the usual way then reads
# the trace again, writing none of those a second time.
for c in cut cut-end; do
	for j in 1 2 8; do
		"$SU" stacks -j $j "$work/$c.trace" >"$work/$c-st.j$j" 2>"$work/$c-st.j$j.err"
		echo $? >"$work/$c-st.j$j.rc"
	done
	check "$c: a damaged trace: stacks -j 2 and -j 8 print -j 1's samples once each, its warnings and exit status ($(cat "$work/$c-st.j1.rc"); $(grep -c '^[^ 	]' "$work/$c-st.j1") samples)" \
		sh -c "[ -s '$work/$c-st.j1' ] && [ \$(cat '$work/$c-st.j1.rc') != 0 ] && grep -q warning '$work/$c-st.j1.err' &&
			for j in 2 8; do cmp -s '$work/$c-st.j1' '$work/$c-st.j'\$j && cmp -s '$work/$c-st.j1.err' '$work/$c-st.j'\$j.err &&
				cmp -s '$work/$c-st.j1.rc' '$work/$c-st.j'\$j.rc || exit 1; done"
done

echo "1..$n"
