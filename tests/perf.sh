#!/bin/sh
# Integration: perf.data files from `perf record --call-graph dwarf`, read
# by stackunwind.  On the testdata programs and on programs not written
# here (gzip, xz, python3 running pure-Python code): the same samples in
# the same order as `perf script`, and the same chains on >= 99% of them
# (tests/perf-compare.sh; every class of disagreement is in
# docs/perf-comparison.md); our chain is the program's own; stats and the
# folded output work; damaged and foreign files are refused clearly.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
COMPARE="$top_srcdir/tests/perf-compare.sh"

need "linux-perf gzip xz-utils python3 binutils gcc" perf gzip xz /usr/bin/python3 nm readelf gcc
need_perf_sampling

# precord NAME CMD...: perf record with DWARF call graphs and CLOCK_MONOTONIC.
precord() {
	name=$1; shift
	perf record -q -k monotonic -e cpu-clock --call-graph dwarf -o "$work/$name.data" -- "$@" \
		>/dev/null 2>"$work/$name.perr"
}
ratio_ok() { awk -v g="$1" -v t="$2" 'BEGIN { exit !(t >= 100 && g * 100 >= t * 99) }'; }
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# compare NAME [sigframe|longer]: perf script beside stackunwind on NAME.data
# (libc's signal trampoline named, or as libc.so.6+offset without
# libc6-dbg: tap-lib.sh's sigtramp_sed); the class named also agrees.
sigtramp_sed >"$work/sigtramp.sed"
compare() {
	name=$1
	res=$("$COMPARE" "$work/$name.data" "$SU" "$work/cmp-$name" "$work/sigtramp.sed" 2>"$work/cmp-$name.err")
	crc=$?
	echo "# $name: $res"
	# What to look at when it fails: perf script's own complaints, and
	# how many samples each side printed.
	[ "$crc" = 0 ] || {
		echo "# $name: perf script $(wc -l <"$work/cmp-$name/perf.txt") samples, stackunwind $(wc -l <"$work/cmp-$name/su.txt")"
		head -c 600 "$work/cmp-$name.err" "$work/cmp-$name/perf.err" | sed 's/^/# /'
	}
	total=$(field "$res" samples)
	check "$name: stackunwind prints perf script's $total samples in its order ($(field "$res" order_mismatch) out of place)" \
		sh -c "[ $crc = 0 ] && [ '$total' -ge 100 ] && [ '$(field "$res" order_mismatch)' = 0 ]"
	agree=$(( $(field "$res" same) + $(field "$res" alias) + $(field "$res" plt) + $(field "$res" nouser) ))
	[ -n "${2:-}" ] && agree=$((agree + $(field "$res" "$2")))
	check "$name: same chain as perf script on >= 99% of samples ($agree of $total; other: $(field "$res" other))" \
		ratio_ok "$agree" "$total"
	[ "$(field "$res" other)" = 0 ] || head -n 6 "$work/cmp-$name/other.txt" | cut -c1-300 | sed 's/^/# /'
}

# chain_ok NAME PROGRAM [ARGS]: our chain is the program's own on >= 99% of
# the samples whose leaf is its hot function.  perf copies 8 KiB of stack:
# CUT drops that many outermost names the copy cannot reach.
CUT=0
chain_ok() {
	name=$1; prog=$2; shift 2
	want=$("$TD/$prog" "$@" --chain | head -n $(( $("$TD/$prog" "$@" --chain | wc -l) - CUT )) | paste -sd ';')
	set -- $(awk -F'|' -v want="$want" '
		{ s = $2; gsub(/@[^;]*/, "", s); split(want, w, ";"); split(s, f, ";")
		  if (f[1] != w[1]) next
		  tot++; if (substr(s, 1, length(want)) == want) good++ }
		END { printf "%d %d\n", good, tot }' "$work/cmp-$name/su.txt")
	check "$name: chain '$want' in >= 99% of hot samples ($1 of $2)" ratio_ok "$1" "$2"
}

for p in single inline nofp dlopen; do
	args=
	[ $p = dlopen ] && args=--reload
	precord $p "$TD/tdata-$p" $args 0.5
	compare $p
	chain_ok $p tdata-$p $args
done
# perf record -z: compressed records, one zstd stream across all of them.
perf record -q -z -k monotonic -e cpu-clock --call-graph dwarf -o "$work/zsingle.data" -- \
	"$TD/tdata-single" 0.5 >/dev/null 2>&1
compare zsingle
precord threads "$TD/tdata-threads" -t 2 0.5
compare threads
chain_ok threads tdata-threads -t 2
# -j N: the workers read the stack words in the file's mapping (not
# copies): the same bytes as -j 1, each command.
for c in stacks folded; do
	for j in 1 2 8; do "$SU" $c -j $j "$work/threads.data" >"$work/threads-$c.j$j" 2>/dev/null; done
	check "threads: $c -j 2 and -j 8 byte-identical to -j 1 ($(wc -c <"$work/threads-$c.j1") bytes)" \
		sh -c "[ -s '$work/threads-$c.j1' ] && cmp -s '$work/threads-$c.j1' '$work/threads-$c.j2' &&
			cmp -s '$work/threads-$c.j1' '$work/threads-$c.j8'"
done
# 1000 frames: perf's 8 KiB copy holds ~100; both stop at its end.
precord recurse "$TD/tdata-recurse" 0.5
compare recurse
# The handler runs on the alternate stack: perf copies that one only, so
# trigger_loop is the last frame either can see (our own capture copies
# the interrupted stack too).
precord sigalt "$TD/tdata-sigalt" 0.5
compare sigalt sigframe
CUT=1 chain_ok sigalt tdata-sigalt

# --symfs: the binary moved under a root since the recording.  Its load
# bias comes from the file found there (an ET_EXEC: file offsets and
# addresses differ by its base, so offsets alone would name nothing).
mkdir -p "$work/sfs-rec" "$work/symfs$work/sfs-rec"
cp "$B/tests/unit/tdata-single-nopie" "$work/sfs-rec/nopie"
precord sfs "$work/sfs-rec/nopie" 0.5
mv "$work/sfs-rec/nopie" "$work/symfs$work/sfs-rec/nopie"
# Its libraries too (perf's table may hold no build-id for them: then only
# the recorded path under --symfs is theirs).
for lib in $(ldd "$work/symfs$work/sfs-rec/nopie" | awk '$(NF - 1) ~ /^\// { print $(NF - 1) }'); do
	lib=$(readlink -f "$lib") # the path the kernel recorded
	mkdir -p "$work/symfs$(dirname "$lib")" && cp "$lib" "$work/symfs$lib"
done
"$SU" folded --symfs "$work/symfs" "$work/sfs.data" >"$work/sfs.folded" 2>"$work/sfs.err"
frc=$?
# (Without perf's build-id cache, which keeps the program the recording hit.)
PERF_BUILDID_DIR="$work/none" "$SU" folded "$work/sfs.data" >"$work/sfs-none.folded" 2>/dev/null
hot() { awk '/level_a;level_b;level_c;hot_leaf( |;)/ { n += $NF } END { print n + 0 }' "$1"; }
check "--symfs: an ET_EXEC moved under it symbolizes ($(hot "$work/sfs.folded") hot_leaf samples, exit $frc; $(hot "$work/sfs-none.folded") without --symfs)" \
	sh -c "[ $frc = 0 ] && [ $(hot "$work/sfs.folded") -ge 100 ] && [ $(hot "$work/sfs-none.folded") = 0 ]"

# A first run (nothing kept yet) over a binary whose debug file has
# zlib-compressed sections, as Debian's debug packages ship them: with a
# core to spare the debug files of the build-id table's files are inflated
# on a thread of their own while the reader starts
# (debuginfo/inflate-ahead.h), the reader waiting for a copy being written
# rather than writing it too; the output is the one of a run that keeps
# nothing, and the copy is there for the next run.
cp "$TD/tdata-inline" "$work/zinline"
zid=$(readelf -n "$work/zinline" | sed -n 's/.*Build ID: *//p')
zrel=$(echo "$zid" | cut -c1-2)/$(echo "$zid" | cut -c3-)
mkdir -p "$work/zdbg/.build-id/$(echo "$zid" | cut -c1-2)"
objcopy --only-keep-debug --compress-debug-sections=zlib "$work/zinline" "$work/zdbg/.build-id/$zrel.debug"
strip -g "$work/zinline"
precord zinl "$work/zinline" 0.5
"$SU" stacks -j 1 --no-cache --debug-dir "$work/zdbg" "$work/zinl.data" >"$work/zinl-nc.out" 2>/dev/null
STACKCAP_CACHE_DIR="$work/zcache" "$SU" stacks -j 2 --debug-dir "$work/zdbg" "$work/zinl.data" >"$work/zinl-1.out" 2>/dev/null
zcopy=$(ls "$work/zcache/debug/$zrel"-*.debug 2>/dev/null)
zcomp() { readelf -S -W "$1" 2>/dev/null | grep -Ec '\.debug_.* [A-Z]*C +[0-9]'; }
check "first run, -j 2, compressed debug file ($(zcomp "$work/zdbg/.build-id/$zrel.debug") sections): one inflated copy kept ($(zcomp "$zcopy") compressed), inlined frames, the same stacks as a run keeping nothing" \
	sh -c "[ \$(echo '$zcopy' | wc -w) = 1 ] && [ $(zcomp "$work/zdbg/.build-id/$zrel.debug") -ge 3 ] && [ '$(zcomp "$zcopy")' = 0 ] &&
		grep -q '(inlined)' '$work/zinl-1.out' && cmp -s '$work/zinl-nc.out' '$work/zinl-1.out'"

# Programs not written here.
head -c 4000000 /dev/urandom | od -An -tx1 | head -c 8000000 >"$work/big.txt"
precord gzip gzip -6 -c "$work/big.txt"
compare gzip
head -c 1500000 "$work/big.txt" >"$work/small.txt"
precord xz xz -T1 -2 -c "$work/small.txt"
compare xz
cat >"$work/fib.py" <<'EOF'
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
d = {}
for i in range(1500000):
    d[str(i)] = i * i
print(fib(27), len(d))
EOF
precord python /usr/bin/python3 "$work/fib.py"
compare python

# JIT code named in /tmp/perf-PID.map: perf script and stackunwind both
# name it from there (perf's //anon mapping is code with no file).
precord jit "$B/tests/jit-burn" 1 perf-map
jpid=$(perf script -i "$work/jit.data" -F pid 2>/dev/null | head -n 1 | tr -d ' ')
# The JIT'd leaf has no CFI and no frame: perf stops there, we take its
# return address at rsp and go on (longer), to main and _start.
compare jit longer
# `stackcap convert` keeps that map in the trace it writes: its names
# stay with the trace once /tmp's is gone.
"$STACKCAP" convert "$work/jit.data" -o "$work/jitconv.trace" 2>"$work/jitconv.err"
rm -f "/tmp/perf-$jpid.map"
"$SU" folded "$work/jitconv.trace" >"$work/jitconv.folded" 2>/dev/null
nconv=$(awk '/;jit_count_loop [0-9]+$/ { n += $NF } END { print n + 0 }' "$work/jitconv.folded")
check "convert: the perf map kept in the trace (said), $nconv samples' leaves named from it with /tmp's gone" \
	sh -c "[ -s '$work/jitconv.trace/jit/perf-$jpid.map' ] && grep -q 'perf maps naming JIT code kept in the trace: 1 ' '$work/jitconv.err' && [ $nconv -ge 100 ]"
njit=$(grep -c "|jit_count_loop@perf-$jpid.map" "$work/cmp-jit/su.txt")
check "JIT: $njit samples' leaves named from /tmp/perf-$jpid.map, as perf script names them" [ "$njit" -ge 100 ]
nfull=$(grep -c "|jit_count_loop@perf-$jpid.map;main@jit-burn;.*;_start@jit-burn\$" "$work/cmp-jit/su.txt")
check "JIT: below the JIT'd leaf, main down to _start in $nfull of $njit samples (>= 99%)" ratio_ok "$nfull" "$njit"

# Call chains perf took itself (perf record -g, frame pointers): no stack
# to unwind, the chain is read as it is.  On tdata-single built with frame
# pointers the chain is the program's own (down to main: libc has none);
# on the testdata build (no frame pointers) the kernel's walk stops early,
# for perf as for us, and the chains still agree.
gcc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls "$top_srcdir/testdata/single.c" \
	-o "$work/single-fp" 2>"$work/single-fp.err"
perf record -q -k monotonic -e cpu-clock -g -o "$work/gfp.data" -- "$work/single-fp" 0.5 >/dev/null 2>&1
compare gfp
want=$("$work/single-fp" --chain | paste -sd ';')
set -- $(awk -F'|' -v want="$want" '
	{ s = $2; gsub(/@[^;]*/, "", s); if (s !~ /^hot_leaf;/) next
	  tot++; if (substr(s, 1, length(want)) == want) good++ }
	END { printf "%d %d\n", good, tot }' "$work/cmp-gfp/su.txt")
check "gfp: perf record -g of a frame-pointer build: chain '$want' in >= 99% of hot samples ($1 of $2)" ratio_ok "$1" "$2"
# PLT stubs: perf names a sample in one "labs@plt" (it makes symbols for
# .plt entries); so do we (symbolize/: the GOT slot's relocation), sample
# for sample.  Built here: -fno-builtin keeps the calls through the stubs.
gcc -O1 -g -fno-builtin "$top_srcdir/tests/plt-burn.c" -o "$work/plt-burn" 2>"$work/plt-burn.err"
precord plt "$work/plt-burn" 1
compare plt
nplt=$(awk -F'|' '{ split($2, f, ";"); if (f[1] ~ /\(plt\)@plt-burn$/) n++ } END { print n + 0 }' "$work/cmp-plt/perf.txt")
# A sample may also fall in another module's stub (libc's, at start-up:
# once in ~4 make check runs): perf names it "(plt)" alone, we with its
# target ("__tunable_get_val(plt)"): a stub of the same module either way.
set -- $(paste -d '|' "$work/cmp-plt/perf.txt" "$work/cmp-plt/su.txt" | awk -F'|' '
	{ split($2, a, ";"); split($4, b, ";"); if (a[1] !~ /\(plt\)@/) next
	  if (a[1] ~ /\(plt\)@plt-burn$/) { tot++; if (a[1] == b[1]) good++; next }
	  mod = substr(a[1], index(a[1], "@")); oth++
	  if (b[1] ~ /\(plt\)@/ && substr(b[1], index(b[1], "@")) == mod) ogood++ }
	END { printf "%d %d %d %d\n", good + 0, tot + 0, ogood + 0, oth + 0 }')
check "plt: $nplt samples in a PLT stub per perf script (>= 20), the stub named as perf names it in $1 of $2; other modules' stubs a stub of the same module in $3 of $4" \
	sh -c "[ $nplt -ge 20 ] && [ $1 = $2 ] && [ $2 = $nplt ] && [ $3 = $4 ]"
precord_g() { perf record -q -k monotonic -e cpu-clock -g -o "$work/$1.data" -- "$TD/tdata-single" 0.5 >/dev/null 2>&1; }
precord_g gsingle
compare gsingle
ngc=$("$SU" stats "$work/gsingle.data" 2>/dev/null | sed -n 's/^call chains only: *\([0-9]*\).*/\1/p')
check "stats of a perf record -g file: its samples counted as call chains only (${ngc:-none} of $(field "$res" samples))" \
	[ "${ngc:-x}" = "$(field "$res" samples)" ]
"$SU" flamegraph -o "$work/g.svg" "$work/gsingle.data" 2>"$work/g.err"
check "flamegraph of a perf record -g file: exit $?, hot_leaf drawn" \
	sh -c "grep -q '<title>hot_leaf' '$work/g.svg' && xmllint --noout '$work/g.svg'"

# System-wide (perf record -a, root): every sample of every process in
# perf's order, kernel threads and exiting tasks included -- those have no
# user state and print as "[no-user]", each where perf shows kernel frames
# only.  (The chains are not compared: the other processes here are
# whatever runs, C++ among them, where perf prints no return types.)
perf record -q -a -k monotonic -e cpu-clock --call-graph dwarf -o "$work/sys.data" -- "$TD/tdata-single" 0.5 \
	>/dev/null 2>"$work/sys.perr"
res=$("$COMPARE" "$work/sys.data" "$SU" "$work/cmp-sys" 2>"$work/cmp-sys.err")
crc=$?
echo "# system-wide: $res"
nproc=$(cut -d' ' -f1 "$work/cmp-sys/perf.txt" | sort -u | wc -l)
check "perf record -a: stackunwind prints perf script's $(field "$res" samples) samples of $nproc threads in its order ($(field "$res" order_mismatch) out of place)" \
	sh -c "[ $crc = 0 ] && [ '$(field "$res" samples)' -ge 100 ] && [ '$(field "$res" order_mismatch)' = 0 ]"
"$SU" stacks "$work/sys.data" >"$work/sys.out" 2>"$work/sys.err"
# Every [no-user] sample of ours is one perf shows without a user frame.
awk '/^[^\t ]/ { n = split($0, a, " "); tid = a[n - 1]; sub(/.*\//, "", tid); t = a[n]; sub(/:$/, "", t); h = tid " " t }
	/\[no-user\] \(\[stackunwind\]\)/ { print h "|" }' "$work/sys.out" >"$work/sys.nouser"
nnu=$(wc -l <"$work/sys.nouser")
nbad=$(grep -v -x -F -f "$work/cmp-sys/perf.txt" "$work/sys.nouser" | wc -l)
nsum=$(sed -n 's/.*, \([0-9]*\) without user state.*/\1/p' "$work/sys.err")
check "perf record -a: $nnu samples without user state print as [no-user], each one perf shows with kernel frames only ($nbad not), counted in the summary (${nsum:-none})" \
	sh -c "[ $nbad = 0 ] && [ '${nsum:-0}' = $nnu ]"

# ---- event names: perf.data's HEADER_EVENT_DESC ----
# Several -e: each sample printed with its event's name, as perf script -F
# event names it, in perf script's order; --event takes the samples of one.
# The command blocks (threads that sleep, a shell waiting) before it burns:
# a thread that only burns may never be switched out on an idle machine
# (its last switch, at exit, comes after its events are gone): no
# sched_switch sample at all, 2 runs in 3 here.
perf record -q -k monotonic -e page-faults -e sched:sched_switch -e cpu-clock --call-graph dwarf \
	-o "$work/ev.data" -- sh -c '"$1" sleep 0.02 && "$2" 0.3' sh "$TD/tdata-offcpu" "$TD/tdata-single" \
	>/dev/null 2>"$work/ev.perr"
perf script --ns -i "$work/ev.data" -F tid,time,event 2>/dev/null |
	awk '{ e = $NF; sub(/:$/, "", e); t = $(NF - 1); sub(/:$/, "", t); print $1, t, e }' >"$work/ev.perf"
"$SU" stacks "$work/ev.data" 2>/dev/null | awk '/^[^\t ]/ {
	n = split($0, a, " "); e = a[n]; sub(/:$/, "", e); t = a[n - 1]; sub(/:$/, "", t)
	tid = a[n - 2]; sub(/.*\//, "", tid); print tid, t, e }' >"$work/ev.su"
nev=$(cut -d' ' -f3 "$work/ev.perf" | sort -u | tr '\n' ' ')
check "several -e: every sample's event as perf script -F event, in its order ($(wc -l <"$work/ev.perf") samples; $nev)" \
	sh -c "[ \$(wc -l <'$work/ev.perf') -ge 100 ] && [ \$(cut -d' ' -f3 '$work/ev.perf' | sort -u | wc -l) = 3 ] && cmp -s '$work/ev.perf' '$work/ev.su'"
for e in page-faults sched:sched_switch cpu-clock; do
	np=$(grep -c " $e\$" "$work/ev.perf")
	nf=$("$SU" folded --event "$e" "$work/ev.data" 2>/dev/null | awk '{ s += $NF } END { print s + 0 }')
	ns=$("$SU" stacks --event "$e" "$work/ev.data" 2>/dev/null | grep -c "^[^	 ].*: $e:\$")
	check "--event $e on the perf.data: folded counts perf script's $np samples ($nf), stacks prints them ($ns)" \
		[ "$np" -ge 1 -a "$nf" = "$np" -a "$ns" = "$np" ]
done
# One tracepoint alone: named too (only a file of cpu-clock alone is unnamed,
# as a stackcap trace recorded without -e).
perf record -q -k monotonic -e sched:sched_switch --call-graph dwarf -o "$work/sw.data" \
	-- "$TD/tdata-offcpu" sleep 0.05 >/dev/null 2>"$work/sw.perr"
nsw=$(perf script -i "$work/sw.data" -F event 2>/dev/null | grep -c 'sched:sched_switch')
nsu=$("$SU" stacks "$work/sw.data" 2>/dev/null | grep -c '^[^	 ].*: sched:sched_switch:$')
check "-e sched:sched_switch alone: each of perf script's $nsw samples named so ($nsu)" [ "$nsw" -ge 2 -a "$nsu" = "$nsw" ]
nhdr=$("$SU" stacks "$work/single.data" 2>/dev/null | grep -c '^[^	 ].*[0-9]:$')
check "-e cpu-clock alone: no event printed, as a stackcap trace without -e ($nhdr headers end in the time)" \
	[ "$nhdr" -ge 100 ]

# The other commands on a perf.data.
"$SU" stats "$work/single.data" >"$work/stats.out" 2>"$work/stats.err"
src=$?
ns=$(awk '/^samples:/ { print $2 }' "$work/stats.out")
np=$(perf script -i "$work/single.data" -F tid 2>/dev/null | wc -l)
check "stats on a perf.data: exit 0, $ns samples (perf script: $np), format named" \
	sh -c "[ $src = 0 ] && [ '$ns' = '$np' ] && grep -q 'perf.data' '$work/stats.out'"
"$SU" folded "$work/single.data" >"$work/folded.out" 2>/dev/null
frc=$?
hot=$(awk '/hot_leaf / { s += $NF } END { print s + 0 }' "$work/folded.out")
check "folded on a perf.data: exit 0, hot_leaf stacks counted ($hot)" sh -c "[ $frc = 0 ] && [ $hot -ge 100 ]"
# Files whose build-id the perf.data does not give (perf record lists
# only those its samples' pcs hit, and none with --no-buildid): their
# answers and CFI are still kept between runs, named by their own build-id
# (before, each run worked them out again: libc below main in every chain).
perf record -q -B -k monotonic -e cpu-clock --call-graph dwarf -o "$work/nobid.data" -- "$TD/tdata-single" 0.3 \
	>/dev/null 2>&1
libc=$(ldd "$TD/tdata-single" | awk '$1 ~ /^libc\.so/ { print $3 }')
lid=$(build_id "$libc")
pid=$(build_id "$TD/tdata-single")
listed=$(perf buildid-list -i "$work/nobid.data" 2>/dev/null | grep -c '^[0-9a-f]' || true)
STACKCAP_CACHE_DIR="$work/kept" "$SU" folded "$work/nobid.data" >"$work/nobid1.out" 2>/dev/null
STACKCAP_CACHE_DIR="$work/kept" "$SU" folded "$work/nobid.data" >"$work/nobid2.out" 2>/dev/null
check "perf record --no-buildid ($listed build-ids in the file): the program's and libc's answers and CFI kept, named by their own build-ids; a second run prints the same" \
	sh -c "[ -n '$lid' ] && [ -n '$pid' ] && [ '$listed' = 0 ] && grep -q hot_leaf '$work/nobid1.out' &&
		ls '$work/kept/sym/$lid-'* '$work/kept/cfi/$lid-'* '$work/kept/sym/$pid-'* '$work/kept/cfi/$pid-'* >/dev/null &&
		cmp -s '$work/nobid1.out' '$work/nobid2.out'"
"$SU" stacks --tid "$(awk 'NR == 1 { split($1, a, " "); print a[1] }' "$work/cmp-threads/su.txt")" \
	"$work/threads.data" >"$work/tid.out" 2>/dev/null
# The flamegraph and both exports, from the same samples as stats.
"$SU" flamegraph -o "$work/single.svg" "$work/single.data" 2>"$work/flame.err"
grc=$?
groot=$(sed -n 's/.*<title>all — \([0-9]*\) samples.*/\1/p' "$work/single.svg" | head -n 1)
check "flamegraph on a perf.data: exit $grc, valid SVG, the root counts every sample (${groot:-none} of $ns), hot_leaf drawn" \
	sh -c "[ $grc = 0 ] && xmllint --noout '$work/single.svg' && [ '${groot:-x}' = '$ns' ] && grep -q '<title>hot_leaf' '$work/single.svg'"
"$SU" export --format pprof -o "$work/single.pb.gz" "$work/single.data" 2>/dev/null
prc=$?
"$B/tests/pprof-check" "$work/single.pb.gz" "$ns" tdata-single $("$TD/tdata-single" --chain | tr '\n' ' ') >"$work/pprof.out" 2>&1
pcrc=$?
check "export pprof on a perf.data: exit $prc, decoded back: $ns samples, ids resolve, the known chain leads ($(grep -c '^PASS' "$work/pprof.out") checks passed)" \
	sh -c "[ $prc = 0 ] && [ $pcrc = 0 ] && ! grep -q '^FAIL' '$work/pprof.out'"
grep '^FAIL' "$work/pprof.out" | sed 's/^/# /'
"$SU" export --format speedscope -o "$work/single.speedscope.json" "$work/single.data" 2>/dev/null
src2=$?
check "export speedscope on a perf.data: exit $src2, a speedscope file naming hot_leaf" \
	sh -c "[ $src2 = 0 ] && grep -q 'https://www.speedscope.app/file-format-schema.json' '$work/single.speedscope.json' && grep -q '\"hot_leaf\"' '$work/single.speedscope.json'"
check "--tid filters a perf.data" sh -c "[ -s '$work/tid.out' ] && [ \$(grep -c '^tdata' '$work/tid.out') -lt $(wc -l <"$work/cmp-threads/su.txt") ]"

# ---- stackcap convert: perf's samples re-encoded with our codec ----
# Same stacks from the converted trace as from the perf.data; end markers
# aside (a dropped word past the outermost frame can change why the walk
# stopped), frame for frame.
# Samples of one time (two threads, two CPUs) have no order of their own:
# perf's file keeps one, the trace (a stream per thread) another.  So
# both sides list such samples by thread, then compare.
frames() {
	grep -v '(\[stackunwind\])$' "$1" | awk 'BEGIN { RS = "" }
		{ t = ""; id = ""
		  if (match($0, / [0-9]+\/[0-9]+ [0-9]+\.[0-9]+:/)) { split(substr($0, RSTART + 1, RLENGTH - 2), h, " "); id = h[1]; t = h[2] }
		  gsub(/\n/, "\001"); printf "%s\t%s\t%s\n", t, id, $0 }' |
		sort -s -t "$(printf '\t')" -k1,1 -k2,2 | cut -f3- | tr '\001' '\n'
}
for p in single threads gzip; do
	"$STACKCAP" convert "$work/$p.data" -o "$work/$p.trace" --zstd 2>"$work/conv-$p.err"
	cvrc=$?
	"$SU" stacks --user-only "$work/$p.data" >"$work/$p.a" 2>/dev/null
	"$SU" stacks "$work/$p.trace" >"$work/$p.b" 2>/dev/null
	frames "$work/$p.a" >"$work/$p.fa"
	frames "$work/$p.b" >"$work/$p.fb"
	pd=$(stat -c %s "$work/$p.data")
	tr=$(du -sb "$work/$p.trace" | cut -f1)
	echo "# $(cat "$work/conv-$p.err")"
	check "convert $p: exit 0, the same $(grep -c '^[^	]' "$work/$p.a") stacks from the trace, $((pd / (tr + 1)))x smaller" \
		sh -c "[ $cvrc = 0 ] && [ -s '$work/$p.fa' ] && cmp -s '$work/$p.fa' '$work/$p.fb' && [ $tr -lt $pd ]"
	# Seen once and not since (threads, under load): keep the evidence.
	cmp -s "$work/$p.fa" "$work/$p.fb" || diff "$work/$p.fa" "$work/$p.fb" | head -n 40 | sed 's/^/# /'
done
"$SU" stats "$work/single.trace" >"$work/cstats.out" 2>/dev/null
check "stats on the converted trace: same sample count, codec named" \
	sh -c "grep -q '^samples: *$ns\$' '$work/cstats.out' && grep -q 'codec saved' '$work/cstats.out'"
"$STACKCAP" convert "$work/single.data" -o "$work/single.trace" 2>"$work/exists.err"
check "convert refuses to overwrite without --force" \
	sh -c "[ $? = 1 ] && grep -q 'force' '$work/exists.err'"
"$STACKCAP" "$work/single.data" 2>"$work/pdhint.err"
rc=$?
check "a perf.data without a command: exit 2 ($rc), the stackunwind and convert lines said" \
	sh -c "[ $rc = 2 ] && grep -qF 'stackunwind stacks $work/single.data' '$work/pdhint.err' &&
		grep -qF 'stackcap convert $work/single.data -o DIR' '$work/pdhint.err'"
# perf's build-id cache: perf record keeps the files its samples hit
# there (PERF_BUILDID_DIR, tap-lib.sh); a program replaced since (or a
# container's file, or a `perf archive` unpacked there) is found in it.
mkdir -p "$work/pcache"
cp "$TD/tdata-single" "$work/pcache/prog"
perf record -q -k monotonic -e cpu-clock --call-graph dwarf -o "$work/pcache.data" -- "$work/pcache/prog" 0.3 \
	>/dev/null 2>"$work/pcache.perr"
rm "$work/pcache/prog"
cp "$TD/tdata-recurse" "$work/pcache/prog"
pid_cached=$(build_id "$TD/tdata-single")
"$SU" stacks "$work/pcache.data" >"$work/pcache.out" 2>"$work/pcache.err"
set -- $(chain_match "$work/pcache.out" $("$TD/tdata-single" --chain | tr '\n' ' '))
check "a program replaced since perf record: found in perf's build-id cache, its chain in >= 99% ($1 of $2)" \
	sh -c "[ -e '$PERF_BUILDID_DIR/.build-id/$(echo "$pid_cached" | cut -c1-2)/$(echo "$pid_cached" | cut -c3-)/elf' ] &&
		[ $2 -ge 100 ] && [ \$(($1 * 100)) -ge \$(($2 * 99)) ]"
# (Nor our own cache's copies: a recording of a container may have kept it.)
PERF_BUILDID_DIR="$work/no-cache" STACKCAP_CACHE_DIR="$work/no-cache" "$SU" stacks "$work/pcache.data" \
	>"$work/pcache2.out" 2>"$work/pcache2.err"
check "the same without perf's cache: the file there refused for its build-id" \
	grep -q "build-id $pid_cached): the file there has another build-id" "$work/pcache2.err"
# A perf.data of 200 short processes (each burning a little: sampled)
# converted under a hard limit of 64 open files: each process's streams
# are closed at its EXIT record (a system-wide perf.data names thousands;
# convert stopped at the limit with "Too many open files").  Every sampled
# process ends normally; a child sampled before its exec has one more
# image, replaced, which ends without (seen: 205 images, 201 ended, 201
# processes sampled).
perf record -q -k monotonic -F 999 --call-graph dwarf -o "$work/many.data" -- \
	sh -c 'i=0; while [ $i -lt 200 ]; do sh -c "x=0; while [ \$x -lt 2000 ]; do x=\$((x+1)); done"; i=$((i + 1)); done' \
	>/dev/null 2>"$work/many.perr"
(ulimit -n 64 && "$STACKCAP" convert "$work/many.data" -o "$work/many.trace" 2>"$work/many.cerr")
crc=$?
"$SU" stats "$work/many.trace" >"$work/many.stats" 2>/dev/null
np=$(sed -n 's/^processes: *\([0-9]*\) (\([0-9]*\) ended normally).*/\1 \2/p' "$work/many.stats")
nsp=$(perf script -i "$work/many.data" -F pid 2>/dev/null | sort -u | wc -l)
check "convert of $nsp sampled processes under 64 open files: exit 0 ($crc; $(head -c 120 "$work/many.cerr")), every one there and ended ($np)" \
	sh -c "set -- $np; [ $crc = 0 ] && [ $nsp -ge 100 ] && [ \"\${1:-0}\" -ge $nsp ] && [ \"\${2:-0}\" -ge $nsp ]"

# ---- bad input ----
bad() { # bad NAME: stackunwind stacks on NAME.data -> NAME.out/.err/.rc
	"$SU" stacks "$work/$1.data" >"$work/$1.out" 2>"$work/$1.err"
	echo $? >"$work/$1.rc"
}
size=$(stat -c %s "$work/single.data")
head -c $((size / 2 + 5)) "$work/single.data" >"$work/cut.data"
bad cut
ns=$(grep -c '^tdata-single' "$work/cut.out")
check "perf.data cut in the middle: exit 3, a warning, $ns samples still read" \
	sh -c "[ $(rc cut) = 3 ] && grep -q 'warning: .*cut short' '$work/cut.err' && [ $ns -ge 100 ]"
printf 'PERFILE3 and then nothing of interest' >"$work/magic.data"
bad magic
check "wrong magic: exit 1, says what the file is not" \
	sh -c "[ $(rc magic) = 1 ] && grep -q 'perf.data' '$work/magic.err'"
cp "$work/single.data" "$work/attr.data"
printf '\007' | dd of="$work/attr.data" bs=1 seek=16 conv=notrunc 2>/dev/null
bad attr
check "corrupted attribute size: exit 1, 'bad attribute section'" \
	sh -c "[ $(rc attr) = 1 ] && grep -q 'bad attribute section' '$work/attr.err'"
# Pipe mode (perf record -o -): from a file, the samples of perf script in
# its order and its chains; from standard input, the same output; straight
# from perf record through a pipe; cut, or a file-mode perf.data on a pipe.
perf record -q -k monotonic -e cpu-clock --call-graph dwarf -o - -- "$TD/tdata-single" 0.5 \
	>"$work/pipe.data" 2>/dev/null
compare pipe
chain_ok pipe tdata-single
"$SU" folded "$work/pipe.data" >"$work/pipe-file.folded" 2>/dev/null
cat "$work/pipe.data" | "$SU" folded - >"$work/pipe-in.folded" 2>"$work/pipe-in.err"
"$SU" folded - <"$work/pipe.data" >"$work/pipe-redir.folded" 2>/dev/null
check "pipe mode from standard input (a pipe, a file): the file's folded output ($(wc -l <"$work/pipe-in.folded") stacks)" \
	sh -c "[ -s '$work/pipe-in.folded' ] && cmp -s '$work/pipe-file.folded' '$work/pipe-in.folded' &&
		cmp -s '$work/pipe-file.folded' '$work/pipe-redir.folded'"
perf record -q -k monotonic -e cpu-clock --call-graph dwarf -o - -- "$TD/tdata-single" 0.3 2>/dev/null |
	"$SU" folded - >"$work/live.folded" 2>"$work/live.err"
echo $? >"$work/live.rc"
nl=$(sed -n 's/^stackunwind: \([0-9]*\) samples, \1 fully unwound.*/\1/p' "$work/live.err")
check "perf record -o - | stackunwind folded -: exit 0, every one of ${nl:-no} samples fully unwound" \
	sh -c "[ $(rc live) = 0 ] && [ '${nl:-0}' -ge 100 ] && grep -q '^tdata-single;.*main;' '$work/live.folded'"
# perf record --threads: a directory, the header in data, the events in
# data.N (one writer thread each): perf script's samples in its order.
perf record -q --threads -k monotonic -e cpu-clock --call-graph dwarf -o "$work/thr.data" -- \
	"$TD/tdata-single" 0.5 >/dev/null 2>"$work/thr.perr"
compare thr
chain_ok thr tdata-single
"$SU" stacks -j 1 "$work/thr.data" >"$work/thr.j1" 2>/dev/null
"$SU" stacks -j 2 "$work/thr.data" >"$work/thr.j2" 2>/dev/null
nf=$(ls "$work/thr.data" | grep -c '^data\.[0-9]')
check "perf record --threads: $nf data.N files; stacks -j 2 byte-identical to -j 1" \
	sh -c "[ $nf -ge 1 ] && [ -s '$work/thr.j1' ] && cmp -s '$work/thr.j1' '$work/thr.j2'"
# With -z each writer thread compresses its own zstd stream.
perf record -q --threads -z -k monotonic -e cpu-clock --call-graph dwarf -o "$work/thrz.data" -- \
	"$TD/tdata-single" 0.5 >/dev/null 2>"$work/thrz.perr"
compare thrz
cp -r "$work/thr.data" "$work/thrcut.data"
big=$(ls -S "$work/thrcut.data"/data.* | head -n 1)
truncate -s $(( $(stat -c %s "$big") / 2 + 5 )) "$big"
bad thrcut
check "perf record --threads, a data.N cut in the middle: exit 3, a warning naming it, the rest read" \
	sh -c "[ $(rc thrcut) = 3 ] && grep -q 'warning: .*thrcut.data/data\.[0-9]*: .*ignored' '$work/thrcut.err' &&
		[ $(grep -c '^tdata-single' "$work/thrcut.out") -ge 100 ]"
size=$(stat -c %s "$work/pipe.data")
head -c $((size / 2 + 5)) "$work/pipe.data" | "$SU" stacks - >"$work/pcut.out" 2>"$work/pcut.err"
echo $? >"$work/pcut.rc"
ns=$(grep -c '^tdata-single' "$work/pcut.out")
check "a pipe-mode stream cut in the middle: exit 3, 'ends inside a record', $ns samples still read" \
	sh -c "[ $(rc pcut) = 3 ] && grep -q 'warning: standard input: the stream ends inside a record' '$work/pcut.err' && [ $ns -ge 100 ]"
cat "$work/single.data" | { "$SU" stacks - >/dev/null 2>"$work/fpipe.err"; echo $? >"$work/fpipe.rc"; }
check "a file-mode perf.data on a pipe: exit 1, says to give its path" \
	sh -c "[ $(rc fpipe) = 1 ] && grep -q 'standard input: a perf.data file (not pipe mode' '$work/fpipe.err'"
cp "$work/single.data" "$work/nosize.data"
dd if=/dev/zero of="$work/nosize.data" bs=1 seek=48 count=8 conv=notrunc 2>/dev/null
bad nosize
ns=$(grep -c '^tdata-single' "$work/nosize.out")
check "data size 0 (perf record killed): read to the end with a warning, exit 3, $ns samples" \
	sh -c "[ $(rc nosize) = 3 ] && grep -q 'data size is 0' '$work/nosize.err' && [ $ns -ge 1000 ]"
# A record whose size field is 0 in the middle of the data: what precedes it is read.
off=$(od -An -tu8 -j 40 -N 8 "$work/single.data" | tr -d ' ')
cp "$work/single.data" "$work/zero.data"
dd if=/dev/zero of="$work/zero.data" bs=1 seek=$((off + 6)) count=2 conv=notrunc 2>/dev/null
bad zero
check "a damaged first record: exit 3, 'damaged record' with its offset" \
	sh -c "[ $(rc zero) = 3 ] && grep -q 'damaged record .* at offset $off' '$work/zero.err'"

echo "1..$n"
