#!/bin/sh
# Integration: `stackunwind` on traces of the testdata programs recorded by
# either sampler: the known call chain in >= 99% of the samples whose leaf
# is the hot function, both unwinders frame for frame, -j N identical to -j 1, fidelity of F2, and bad
# input (cut, corrupt, missing or wrong binaries, no trace) handled.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"

# SOPT: the sampler's options (tap-lib.sh's sampler_opts), empty: the kernel
# copy; tap-lib.sh's record takes them as RECORD_OPTS.
SOPT=
RECORD_OPTS=
# stacks_of OUT TRACE [OPTIONS]: stackunwind stacks of TRACE.trace into OUT.out/.err/.rc
stacks_of() {
	out=$1; tr=$2; shift 2
	"$SU" stacks "$@" "$work/$tr.trace" >"$work/$out.out" 2>"$work/$out.err"
	echo $? >"$work/$out.rc"
}
stacks() { name=$1; shift; stacks_of "$name" "$name" "$@"; }


# chain_test NAME PROGRAM [ARGS]: record (with $REC_OPTS), unwind, expect
# the chain in >= 99%.  libc's signal trampoline counts as __restore_rt
# named or as libc.so.6+offset inside its signal-frame FDE (tap-lib.sh's
# sigtramp_sed): the chain checks the unwinding; the name is checked below.
REC_OPTS=
sigtramp_sed >"$work/sigtramp.sed"
chain_test() {
	name=$1; prog=$2; shift 2
	lbl=$prog${SOPT:+ ($SOPT)}
	record "$name" $REC_OPTS -- "$TD/$prog" "$@" 0.5
	stacks "$name" -j 1
	check "$lbl: stackunwind exits 0 ($(rc "$name"))" [ "$(rc "$name")" = 0 ]
	chain=$("$TD/$prog" "$@" --chain | tr '\n' ' ')
	# Runs of one name shown once with a count: recurse x1000.
	short=$(echo $chain | tr ' ' '\n' | uniq -c | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 ($1 > 1 ? "x" $1 : "") }')
	sed -f "$work/sigtramp.sed" "$work/$name.out" >"$work/$name.named"
	set -- $(chain_match "$work/$name.named" $chain)
	check "$lbl: chain '$short' in >= 99% of hot samples ($1 of $2)" \
		awk -v g="$1" -v t="$2" 'BEGIN { exit !(t >= 100 && g * 100 >= t * 99) }'
}

# Each chain under either sampler (the kernel copy's traces keep their
# names, the in-process hook's end in -ip).
for sampler in $SAMPLERS; do
	SOPT=$(sampler_opts "$sampler")
	RECORD_OPTS=$SOPT
	sfx=${SOPT:+-ip}
	chain_test "single$sfx" tdata-single
	chain_test "threads$sfx" tdata-threads -t 2
	chain_test "dlopen$sfx" tdata-dlopen --reload
	# A deep stack: 1000 frames take ~80 KB, which the in-process hook
	# copies with a larger cap, past the most the kernel copies (65,320
	# bytes): it gets 750 frames (~60 KB).
	if [ -z "$SOPT" ]; then
		chain_test recurse tdata-recurse -d 750
	else
		REC_OPTS="--stack-cap 131072"
		chain_test recurse-ip tdata-recurse -d 1000
	fi
	REC_OPTS=
	chain_test "nofp$sfx" tdata-nofp
	chain_test "inline$sfx" tdata-inline
done
SOPT=
RECORD_OPTS=
# 2000 frames are past the default window of either sampler.
record recurse-capped -- "$TD/tdata-recurse" -d 2000 0.3
stacks recurse-capped -j 1
# Samples in recurse_leaf (1000 frames deep): a sample taken at start-up or
# on the way down, under load, may fit in the cap and is not counted.
set -- $(awk '/^tdata-recurse/ { if (leaf) { n++; if (last ~ /\[truncated\] \(\[stackunwind\]\)$/) t++ }
		getline l; leaf = (l ~ / recurse_leaf\+/); last = l; next }
	/^\t/ { last = $0 }
	END { if (leaf) { n++; if (last ~ /\[truncated\] \(\[stackunwind\]\)$/) t++ }; print n + 0, t + 0 }' "$work/recurse-capped.out")
ns=$1 nt=$2
nall=$(sed -n 's/^stackunwind: .* \([0-9][0-9]*\) truncated,.*/\1/p' "$work/recurse-capped.err")
check "recursion past the stack cap: every sample in recurse_leaf ends with a [truncated] frame ($nt of $ns)" \
	sh -c "[ $ns -ge 100 ] && [ $nt = $ns ] && [ \"$nall\" -ge $nt ]"
check "recursion past the stack cap: exit 0 (the cap is a setting, not an error)" [ "$(rc recurse-capped)" = 0 ]
# A handler on the alternate signal stack: the kernel copies one window
# from sp (the alternate stack), so its unwind ends at the interrupted
# function (tests/kernel-record.sh); the in-process hook copies both
# segments: the whole chain.
REC_OPTS=--in-process
chain_test sigalt tdata-sigalt
# Naming from a distribution's separate debug info: libc ships without its
# local symbols; libc6-dbg's /usr/lib/debug/.build-id file names them.
check "sigalt: libc's signal trampoline is named __restore_rt from libc's separate debug info (needs libc6-dbg: scripts/install-deps.sh)" \
	grep -q -E '^	 *[0-9a-f]+ __restore_rt\+0x0 \(/.*/libc\.so\.6\)$' "$work/sigalt.out"
REC_OPTS=

# Header and frame format, summary line.
check "stacks: sample header 'comm pid/tid sec.nsec:'" \
	grep -q -E '^tdata-single [0-9]+/[0-9]+ [0-9]+\.[0-9]{9}:$' "$work/single.out"
check "stacks: frames carry address, symbol+offset, module and file:line" \
	grep -q -E '^	 *[0-9a-f]+ hot_leaf\+0x[0-9a-f]+ \(.*/tdata-single\) .*single\.c:[0-9]+$' "$work/single.out"
check "stacks: summary on stderr (samples, fully unwound, truncated, unknown frames, build-id mismatches)" \
	grep -q -E '^stackunwind: [0-9]+ samples, [0-9]+ fully unwound, [0-9]+ truncated, .* unknown frames .* build-id mismatches' "$work/single.err"

# The two unwinders agree frame for frame on every trace.
for t in single threads dlopen recurse recurse-capped nofp sigalt inline \
	single-ip threads-ip dlopen-ip recurse-ip nofp-ip inline-ip; do
	stacks_of "$t-dwfl" "$t" -j 1 --unwinder dwfl
	check "$t: dwfl and fast unwinders give identical output" cmp -s "$work/$t.out" "$work/$t-dwfl.out"
	# Where they differ: the evidence, in the log.
	cmp -s "$work/$t.out" "$work/$t-dwfl.out" || diff "$work/$t.out" "$work/$t-dwfl.out" | head -n 40 | sed 's/^/# /'
done

# The leaf rule in both unwinders: a page fault on the first byte of the
# reloaded plugin's _init (no CFI, no frame pointer yet) is sampled on
# every run; the return address at rsp follows a call in call_init, and
# elfutils' walk goes on from there as the fast unwinder does.
record dlopen-pf -e page-faults -c 1 -- "$TD/tdata-dlopen" --reload 0.1
stacks dlopen-pf -j 1
stacks_of dlopen-pf-dwfl dlopen-pf -j 1 --unwinder dwfl
nleaf=$(awk '/^\t/ && prev ~ / _init\+0x0 / && / call_init\+/ { n++ } { prev = $0 } END { print n + 0 }' "$work/dlopen-pf.out")
check "leaf rule: page faults at the plugin's _init unwind on through call_init ($nleaf samples)" [ "$nleaf" -ge 1 ]
check "leaf rule: dwfl and fast unwinders give identical output (page faults in dlopen)" \
	cmp -s "$work/dlopen-pf.out" "$work/dlopen-pf-dwfl.out"
cmp -s "$work/dlopen-pf.out" "$work/dlopen-pf-dwfl.out" ||
	diff "$work/dlopen-pf.out" "$work/dlopen-pf-dwfl.out" | head -n 40 | sed 's/^/# /'

# A process's first frames: ld.so's _start (no CFI) and, after it,
# _dl_start_user calling _dl_init with rbp cleared "to mark the outermost
# frame even for constructors": page faults at start-up are sampled there
# (libc's own initializers); they end there, fully unwound, not
# "[no-cfi]", with either unwinder.  Whether libc's initializers fault at
# all varies (a fault maps the cached pages around it too: which are
# mapped already when they run is not fixed): under load (make check -j 2)
# one run in three to five had none of its samples there, every other
# start-up sample unwound, so up to 5 runs for one that has.
tries=0
while [ $tries -lt 5 ]; do
	tries=$((tries + 1))
	rm -rf "$work/start-pf.trace"
	record start-pf -e page-faults -c 1 -- "$TD/tdata-single" 0.05
	"$SU" folded -j 1 "$work/start-pf.trace" >"$work/start-pf.folded" 2>/dev/null
	ninit=$(grep -c '^tdata-single;_dl_start_user;_dl_init;' "$work/start-pf.folded")
	[ "$ninit" -ge 1 ] && break
done
"$SU" folded -j 1 --unwinder dwfl "$work/start-pf.trace" >"$work/start-pf-dwfl.folded" 2>/dev/null
nstart=$(grep -c '^tdata-single;_start[; ]' "$work/start-pf.folded")
check "start-up: constructors under _dl_start_user ($ninit, run $tries) and ld.so's _start ($nstart) are the outermost frames, none [no-cfi]" \
	sh -c "[ $ninit -ge 1 ] && [ $nstart -ge 1 ] && ! grep -q 'no-cfi\];\(_start\|_dl_start_user\)' '$work/start-pf.folded'"
check "start-up: dwfl and fast unwinders give identical folded output" \
	cmp -s "$work/start-pf.folded" "$work/start-pf-dwfl.folded"
# libbabeltrace2 (and glib behind it) loaded only for the traces that need
# it (trace/bt2-lazy.c): never mapped by a run over perf.data or our own
# traces.  (The comparisons below load it.)
check "stackunwind does not link libbabeltrace2 or glib: loaded at the first babeltrace2 read" \
	sh -c "ldd '$SU' | grep -q libdw && ! ldd '$SU' | grep -q -e libbabeltrace2 -e libglib"
# The babeltrace2 reader (the reference) gives the same output as ours.
for t in threads sigalt; do
	stacks_of "$t-bt2" "$t" -j 1 --reader babeltrace2
	check "$t: --reader babeltrace2 output identical to the native reader's" cmp -s "$work/$t.out" "$work/$t-bt2.out"
done

# Without libbabeltrace2 (hidden in a mount namespace: CI runs as root),
# a babeltrace2 read says what to install; our own reader needs none.
bt2lib=$(ldconfig -p | awk '/libbabeltrace2\.so\.0 / { print $NF; exit }')
if [ -n "$bt2lib" ] && unshare -m sh -c "mount --bind /dev/null '$bt2lib' &&
	{ '$SU' stacks -j 1 --reader babeltrace2 '$work/threads.trace' >'$work/nobt.out' 2>'$work/nobt.err'; echo \$? >'$work/nobt.rc'
	  '$SU' stacks -j 1 '$work/threads.trace' >'$work/nobt2.out' 2>/dev/null; }" 2>"$work/unshare.err"; then
	check "libbabeltrace2 missing: --reader babeltrace2 exits $(cat "$work/nobt.rc"), saying what to install" \
		sh -c "[ \"\$(cat '$work/nobt.rc')\" != 0 ] && grep -q 'cannot load libbabeltrace2 (apt-get install libbabeltrace2-0)' '$work/nobt.err'"
	check "libbabeltrace2 missing: our own reader reads the trace as before" cmp -s "$work/nobt2.out" "$work/threads.out"
else
	check "libbabeltrace2 hidden in a mount namespace (needs root, util-linux's unshare; library at '$bt2lib'): $(head -n 1 "$work/unshare.err")" false
fi

# -j 2 is byte-identical to -j 1, on a multi-threaded trace.
stacks_of threads-j2 threads -j 2
check "-j 2 output identical to -j 1" cmp -s "$work/threads.out" "$work/threads-j2.out"

# folded: one line per distinct stack (flamegraph.pl's input), counts add up.
"$SU" folded -j 1 "$work/single.trace" >"$work/single.folded" 2>/dev/null
nsamp=$(grep -c '^tdata-single' "$work/single.out")
sum=$(awk '{ s += $NF } END { print s + 0 }' "$work/single.folded")
check "folded: the counts add up to the samples ($sum of $nsamp)" [ "$sum" = "$nsamp" ]
want="tdata-single;.*;$("$TD/tdata-single" --chain | awk '{ a[NR] = $0 } END { for (i = NR; i >= 1; i--) printf "%s%s", a[i], (i > 1 ? ";" : "") }') "
top=$(sort -t ' ' -k 2 -n -r "$work/single.folded" | head -n 1)
check "folded: the heaviest stack is the known chain, outermost first" sh -c "echo '$top' | grep -q -E '^$want[0-9]+\$'"
check "folded: every line is 'frames COUNT', sorted by stack" \
	sh -c "! grep -v -E '^[^ ].* [0-9]+\$' '$work/single.folded' && LC_ALL=C sort -c '$work/single.folded'"
"$SU" folded -j 1 "$work/threads.trace" >"$work/threads.folded1" 2>/dev/null
"$SU" folded -j 2 "$work/threads.trace" >"$work/threads.folded2" 2>/dev/null
check "folded: -j 2 identical to -j 1" cmp -s "$work/threads.folded1" "$work/threads.folded2"

"$SU" folded -j 1 --per-thread --no-inline "$work/inline.trace" >"$work/inline.folded" 2>/dev/null
top=$(sort -t ' ' -k 2 -n -r "$work/inline.folded" | head -n 1)
check "folded --per-thread --no-inline: root 'comm-pid/tid', inlined functions left out ($top)" \
	sh -c "echo '$top' | grep -q -E '^tdata-inline-[0-9]+/[0-9]+;.*;main;inline_outer;inline_hot [0-9]+\$'"
"$SU" folded -j 1 "$work/inline.trace" >"$work/inline.folded2" 2>/dev/null
check "folded: inlined functions are frames of their own by default" grep -q ';inline_hot;inl_middle;inl_leaf [0-9]*$' "$work/inline.folded2"
"$SU" stacks --no-inline "$work/inline.trace" >/dev/null 2>&1
check "--no-inline outside folded: usage error" [ $? = 2 ]

# Filters.
tid=$(sed -n 's/^tdata-threads [0-9]*\/\([0-9]*\) .*/\1/p' "$work/threads.out" | sort | uniq -c | sort -n | tail -n 1 | awk '{print $2}')
stacks_of threads-tid threads -j 1 --tid "$tid"
check "--tid $tid: only that thread" sh -c "grep -q '^tdata-threads' '$work/threads-tid.out' && ! grep '^tdata-threads' '$work/threads-tid.out' | grep -v -q '/$tid '"
t1=$(grep -m 1 '^tdata-single' "$work/single.out" | awk '{print $3}' | tr -d :)
stacks_of single-time single -j 1 --time ",$t1"
check "--time ,FIRST: exactly the first sample" [ "$(grep -c '^tdata-single' "$work/single-time.out")" = 1 ]

# stats, and fidelity of F2 (and F1, reported) on full-copy recordings.
"$SU" stats "$work/single.trace" >"$work/stats.out" 2>&1
check "stats: samples, bytes per sample, codec savings" \
	sh -c "grep -q '^samples: *[1-9]' '$work/stats.out' && grep -q '^bytes per sample:' '$work/stats.out' && grep -q '^codec saved:' '$work/stats.out'"
for prog in tdata-single tdata-nofp tdata-recurse; do
	record "full-$prog" --full-copy -- "$TD/$prog" 0.3
	"$SU" stats "$work/full-$prog.trace" >"$work/full-$prog.stats" 2>&1
	fid=$(sed -n 's/^fidelity: *\([0-9.]*\)%.*/\1/p' "$work/full-$prog.stats")
	check "$prog: fidelity of F2 is 100% ($fid%)" [ "$fid" = "100.0" ]
done
record full-f1 --full-copy --policy f1 -- "$TD/tdata-single" 0.3
"$SU" stats "$work/full-f1.trace" >"$work/full-f1.stats" 2>&1
check "F1 full-copy recording: fidelity reported" grep -q '^fidelity: *[0-9.]*%' "$work/full-f1.stats"
check "full-copy: stats counts the samples with a full copy" \
	grep -q '^full copies: *[1-9]' "$work/full-tdata-single.stats"

# --zstd traces read the same.
record zstd --zstd -- "$TD/tdata-single" 0.3
stacks zstd -j 1
set -- $(chain_match "$work/zstd.out" $("$TD/tdata-single" --chain | tr '\n' ' '))
check "--zstd trace: exit 0 and the chain in >= 99% ($1 of $2)" \
	sh -c "[ $(rc zstd) = 0 ] && [ $2 -ge 100 ] && [ \$(($1 * 100)) -ge \$(($2 * 99)) ]"

# ---- bad input ----
mkdir "$work/empty.trace"
stacks empty
check "a directory that is no trace: exit 1 and says so" \
	sh -c "[ $(rc empty) = 1 ] && grep -q 'not a stackcap trace' '$work/empty.err'"
stacks nonexistent
check "a missing directory: exit 1 with the path" sh -c "[ $(rc nonexistent) = 1 ] && grep -q 'nonexistent' '$work/nonexistent.err'"
"$SU" stacks >/dev/null 2>"$work/usage.err"
urc=$?
check "no trace given: usage, exit 2 ($urc)" sh -c "[ $urc = 2 ] && grep -q 'missing TRACE' '$work/usage.err'"
"$SU" frobnicate x >/dev/null 2>&1
check "unknown command: exit 2" [ $? = 2 ]
"$SU" -j 2 folded "$work/empty.trace" >/dev/null 2>"$work/misplaced.err"
mrc=$?
check "options before the command: exit 2 ($mrc) and the line with the command first" \
	sh -c "[ $mrc = 2 ] && grep -qF 'stackunwind: the command comes first, its options after it: stackunwind folded -j 2 $work/empty.trace' '$work/misplaced.err'"
"$SU" "$work/empty.trace" >/dev/null 2>"$work/nocommand.err"
mrc=$?
check "a trace without a command: exit 2 ($mrc) and the commands to put first" \
	sh -c "[ $mrc = 2 ] && grep -qF 'stackunwind stacks|folded|flamegraph|report|stats|export|archive $work/empty.trace' '$work/nocommand.err'"

# A samples file cut inside a packet: the complete packets are read.
record cut -- "$TD/tdata-single" 1
f=$(ls "$work/cut.trace"/samples-* | head -n 1)
size=$(stat -c %s "$f")
truncate -s $((size / 2 + 13)) "$f"
stacks cut -j 1
ns=$(grep -c '^tdata-single' "$work/cut.out")
check "cut samples file: exit 3, a warning naming the file, $ns samples still unwound" \
	sh -c "[ $(rc cut) = 3 ] && grep -q 'warning: .*samples-.*cut' '$work/cut.err' && [ $ns -ge 100 ]"

# A corrupted blob: that sample (and those that refer to it: at most the
# rest of its packet, up to 256 samples) skipped, the rest read.  User
# frames only: with kernel frames the first event may be a sample's
# kernel_chain, and byte 90 one of its addresses (a run under load).
record corrupt --user-only -- "$TD/tdata-single" 1
f=$(ls "$work/corrupt.trace"/samples-* | head -n 1)
# First event's blob: 80-byte packet header+context, 4-byte event header, 6 bytes of fields.
printf '\377' | dd of="$f" bs=1 seek=90 conv=notrunc 2>/dev/null
stacks corrupt -j 1
ns=$(grep -c '^tdata-single' "$work/corrupt.out")
check "corrupt blob: exit 3, 'not decodable' counted, $ns other samples unwound" \
	sh -c "[ $(rc corrupt) = 3 ] && grep -q 'not decodable' '$work/corrupt.err' && [ $ns -ge 300 ]"

# A binary that is gone, and one replaced by another build.
cp "$TD/tdata-single" "$work/victim"
"$STACKCAP" record -o "$work/gone.trace" -- "$work/victim" 0.3 2>/dev/null
cp -r "$work/gone.trace" "$work/wrong.trace"
rm "$work/victim"
stacks gone -j 1
check "missing binary: exit 3, frames as module+offset, a message naming it" \
	sh -c "[ $(rc gone) = 3 ] && grep -q -E '^	 *[0-9a-f]+ victim\+0x[0-9a-f]+ \(.*victim\)' '$work/gone.out' && grep -q 'victim' '$work/gone.err'"
cp "$TD/tdata-nofp" "$work/victim"
stacks wrong -j 1
check "wrong build-id: never used, counted as a mismatch, exit 3" \
	sh -c "[ $(rc wrong) = 3 ] && ! grep -q 'hot_leaf\\|nofp_' '$work/wrong.out' && grep -q '[1-9][0-9]* build-id mismatch' '$work/wrong.err'"

# Inflated copies of compressed debug files (debuginfo/inflate-cache.h):
# a binary stripped of its DWARF, whose debug file (--debug-dir) has
# zlib-compressed sections, as Debian's debug packages do.
cp "$TD/tdata-inline" "$work/zinline"
bid=$(build_id "$work/zinline")
rel=$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-)
mkdir -p "$work/zdbg/.build-id/$(echo "$bid" | cut -c1-2)"
objcopy --only-keep-debug --compress-debug-sections=zlib "$work/zinline" "$work/zdbg/.build-id/$rel.debug"
strip -g "$work/zinline"
record zinl -- "$work/zinline" 0.3
zstacks() { # zstacks NAME [OPTIONS]: stacks of zinl.trace with the cache in $work/icache
	n1=$1; shift
	STACKCAP_CACHE_DIR="$work/icache" "$SU" stacks -j 1 --debug-dir "$work/zdbg" "$@" "$work/zinl.trace" \
		>"$work/$n1.out" 2>"$work/$n1.err"
}
compressed() { readelf -S -W "$1" 2>/dev/null | grep -E '\.debug_.* [A-Z]*C +[0-9]' | wc -l; }
zstacks znc --no-cache
check "--no-cache: lines and inlined frames from a compressed debug file ($(compressed "$work/zdbg/.build-id/$rel.debug") compressed sections), nothing cached" \
	sh -c "grep -q 'inline.c:[0-9]' '$work/znc.out' && grep -q '(inlined)' '$work/znc.out' && [ ! -e '$work/icache' ]"
zstacks zc1
copy=$(ls "$work/icache/debug/$rel"-*.debug 2>/dev/null | head -n 1)
check "first run: an inflated copy by build-id, no compressed section left ($(compressed "$copy")), the same output as --no-cache" \
	sh -c "[ -f '$copy' ] && [ $(compressed "$work/zdbg/.build-id/$rel.debug") -ge 3 ] && [ $(compressed "$copy") = 0 ] && cmp -s '$work/znc.out' '$work/zc1.out'"
# What no lookup reads (variable locations) is left out of the copy.
check "the copy leaves the location lists out (NOBITS)" \
	sh -c "readelf -S -W '$work/zdbg/.build-id/$rel.debug' | grep -Eq '\.debug_loclists +PROGBITS' &&
		readelf -S -W '$copy' | grep -Eq '\.debug_loclists +NOBITS'"
ino=$(stat -c %i "$copy")
# The answers kept by the first run dropped: a warm run that has them
# opens no debug file at all (su_module_kept_path), and these read it.
rm -rf "$work/icache/sym" "$work/icache/cfi"
zstacks zc2
check "second run: reads the copy (not written again), the same output" \
	sh -c "[ '$(stat -c %i "$copy")' = '$ino' ] && cmp -s '$work/znc.out' '$work/zc2.out'"
head -c 100 "$work/zdbg/.build-id/$rel.debug" >"$copy"
rm -rf "$work/icache/sym" "$work/icache/cfi"
zstacks zc3
check "a damaged copy is never used: written again, the same output" \
	sh -c "[ $(compressed "$copy") = 0 ] && [ \$(stat -c %s '$copy') -gt 100 ] && cmp -s '$work/znc.out' '$work/zc3.out'"
HOME="$work/home" XDG_CACHE_HOME= STACKCAP_CACHE_DIR= "$SU" stacks -j 1 --debug-dir "$work/zdbg" "$work/zinl.trace" >/dev/null 2>&1
check "STACKCAP_CACHE_DIR= (empty): nothing kept" [ ! -e "$work/home" ]
(unset STACKCAP_CACHE_DIR XDG_CACHE_HOME; HOME="$work/home" "$SU" stacks -j 1 --debug-dir "$work/zdbg" "$work/zinl.trace" >/dev/null 2>&1)
check "by default the copy goes to ~/.cache/stackcap/debug/" \
	sh -c "ls '$work/home/.cache/stackcap/debug/$rel'-*.debug >/dev/null 2>&1"
STACKCAP_CACHE_DIR=/proc/no-such-cache "$SU" stacks -j 1 --debug-dir "$work/zdbg" "$work/zinl.trace" >"$work/zro.out" 2>"$work/zro.err"
zrc=$?
check "a cache that cannot be written: the debug file read as it is, the same output, exit $zrc" \
	sh -c "[ $zrc = 0 ] && cmp -s '$work/znc.out' '$work/zro.out'"
# A forged debug file (another program's DWARF under this build-id) read
# once must not poison the cache for the true one (issue 16).
mkdir -p "$work/forged/.build-id/$(echo "$bid" | cut -c1-2)"
objcopy -O binary --only-section=.note.gnu.build-id "$TD/tdata-inline" "$work/bid.note"
objcopy --only-keep-debug --compress-debug-sections=zlib --update-section .note.gnu.build-id="$work/bid.note" \
	"$TD/tdata-nofp" "$work/forged/.build-id/$rel.debug"
STACKCAP_CACHE_DIR="$work/icache" "$SU" stacks -j 1 --debug-dir "$work/forged" "$work/zinl.trace" >"$work/zforged.out" 2>&1
zstacks zc4
check "a forged debug file with the same build-id, read once, does not replace the true one's copy" \
	sh -c "grep -q nofp '$work/zforged.out' && cmp -s '$work/znc.out' '$work/zc4.out'"

# A binary linked by lld (Rust's default linker since 1.90, Chromium's,
# Firefox's): its code segment lies at another distance from its file
# offset than the read-only segment before it, whose end shares the code's
# first file page.  A mapping gives its file offset (perf's MMAP2 events,
# perf.data); the load bias comes from the file's program headers, the
# code segment's (the offset is in both).  Once the read-only one's: every
# frame of that binary looked up 4 KB away (names and CFI), the stacks
# ended [bad-stack].
if command -v ld.lld >/dev/null 2>&1; then
	LLD="$work/lld-single"
	gcc -std=gnu11 -g -O1 -fno-optimize-sibling-calls -fuse-ld=lld -I"$top_srcdir/testdata" \
		-o "$LLD" "$top_srcdir/testdata/single.c" 2>"$work/lld.cerr"
	# vaddr - offset of the first LOAD and of the executable one.
	deltas=$(readelf -lW "$LLD" 2>/dev/null | awk '$1 == "LOAD" { d = sprintf("%d", strtonum($3) - strtonum($2)); if (f == "") f = d; if ($0 ~ / R E /) x = d } END { print f, x }')
	check "an lld-linked binary whose code is at another vaddr - offset than its first segment ($deltas)$(head -n 1 "$work/lld.cerr")" \
		sh -c "[ -x '$LLD' ] && set -- $deltas && [ \$# = 2 ] && [ \"\$1\" != \"\$2\" ]"
	chain=$("$LLD" --chain | tr '\n' ' ')
	for sampler in $SAMPLERS; do
		SOPT=$(sampler_opts "$sampler")
		record "lld-$sampler" $SOPT -- "$LLD" 0.5
		stacks "lld-$sampler" -j 1
		set -- $(chain_match "$work/lld-$sampler.out" $chain)
		check "lld-linked${SOPT:+ ($SOPT)}: the chain in >= 99% of hot samples ($1 of $2)" \
			awk -v g="$1" -v t="$2" 'BEGIN { exit !(t >= 100 && g * 100 >= t * 99) }'
	done
	if command -v perf >/dev/null 2>&1; then
		perf record -q -o "$work/lld.data" -e cpu-clock -F 999 --call-graph dwarf -- "$LLD" 0.5 \
			>/dev/null 2>"$work/lld.perr"
		"$SU" stacks -j 1 "$work/lld.data" >"$work/lld-perf.out" 2>/dev/null
		set -- $(chain_match "$work/lld-perf.out" $chain)
		check "lld-linked, perf.data: the chain in >= 99% of hot samples ($1 of $2; perf record: $(head -c 100 "$work/lld.perr"))" \
			awk -v g="$1" -v t="$2" 'BEGIN { exit !(t >= 100 && g * 100 >= t * 99) }'
	else
		not_ok "perf missing: apt-get install linux-perf (scripts/install-deps.sh)"
	fi
else
	not_ok "ld.lld missing: apt-get install lld (scripts/install-deps.sh)"
fi

# A sample taken in rt_sigreturn: its pc is just past the signal
# trampoline's syscall (__restore_rt+0x9), where the trampoline's CFI
# ends; the row before it (pc - 1) is the signal frame, still the stack's.
# Once [no-cfi] there (0.6% of the samples of a program taking a signal
# every 50 us); both unwinders now go through it to the interrupted code.
if ! dpkg-query -W -f='${Status}' libc6-dbg 2>/dev/null | grep -q 'install ok installed'; then
	not_ok "libc6-dbg missing (names __restore_rt): apt-get install libc6-dbg (scripts/install-deps.sh)"
else
	cat >"$work/sigret.c" <<'EOF_C'
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
static volatile unsigned long s;
static void on_alarm(int sig) { s += (unsigned long)sig; }
int main(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	sigaction(SIGALRM, &sa, 0);
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	setitimer(ITIMER_REAL, &it, 0);
	while (clock() < CLOCKS_PER_SEC)
		for (int k = 0; k < 100000; k++)
			s += (unsigned long)k;
	printf("%lu\n", s);
	return 0;
}
EOF_C
	gcc -O2 -g -o "$work/sigret" "$work/sigret.c" 2>"$work/sigret.cerr"
	# Where a sample lands is chance: under a loaded machine one second
	# may give fewer than 5 there, so record again (at most 3 times)
	# rather than ask for fewer; every sample there must still unwind.
	for try in 1 2 3; do
		record sigret -F 9999 -- "$work/sigret" >/dev/null
		stacks_of sigret sigret -j 1
		# Samples whose first user frame is __restore_rt past its
		# syscall, and how many of them reach _start.
		set -- $(awk 'BEGIN { RS = "" } { n = split($0, l, "\n"); u = 0
			for (i = 2; i <= n; i++) if (l[i] !~ /\[kernel\.kallsyms\]/) { u = i; break }
			if (!u || l[u] !~ / __restore_rt\+0x9 /) next
			t++; if (l[n] ~ / _start\+0x[0-9a-f]+ \(/) full++ }
			END { print t + 0, full + 0 }' "$work/sigret.out")
		[ "$1" -lt 5 ] || break
	done
	stacks_of sigret-dwfl sigret -j 1 --unwinder dwfl
	check "rt_sigreturn: $1 samples there, $2 unwound to _start through the signal frame$(head -n 1 "$work/sigret.cerr")" \
		[ "$1" -ge 5 -a "$1" = "$2" ]
	check "rt_sigreturn: the dwfl and fast unwinders give identical output" \
		cmp -s "$work/sigret.out" "$work/sigret-dwfl.out"
fi

echo "1..$n"
