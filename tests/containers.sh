#!/bin/sh
# Integration: processes that see other files than the recorder at the
# same paths.  A container (another mount namespace: here a private one
# where $work/host holds another program than outside it) and a program
# whose file was replaced after it started ("PATH (deleted)").  The trace
# must record the build-id of the file the process maps, never the one at
# its path here (record/proc-files.h), and `stackcap record` keeps a copy
# of it by build-id in the cache (record/keep-binaries.h), where
# stackunwind finds it: the stacks unwind and are named as the program
# ran them.  Without that copy stackunwind refuses the file at the path
# (another build-id) rather than name frames after it.  A container's JIT
# names its code in its own /tmp under its own pid: the recorder keeps
# that perf map in the trace (record/keep-jit-maps.h).
# Needs root (mount namespaces, /proc/PID/map_files), as CI runs.
. "${top_srcdir:?}/tests/tap-lib.sh"
if [ "$(id -u)" != 0 ]; then
	echo "1..1"
	echo "not ok 1 - needs root (a private mount namespace, /proc/PID/map_files): CI runs as root"
	exit 0
fi
need "util-linux" unshare
need "binutils" readelf
need "util-linux" setpriv

# The program run, tdata-single, and another one, tdata-recurse, at the
# same path outside the namespace.
mkdir -p "$work/host" "$work/ns" "$work/del"
cp "$TD/tdata-recurse" "$work/host/prog"
cp "$TD/tdata-single" "$work/ns/prog"
ran=$(build_id "$TD/tdata-single")
other=$(build_id "$TD/tdata-recurse")
check "sound: two programs of different build-ids ($ran, $other)" \
	sh -c "[ -n '$ran' ] && [ -n '$other' ] && [ '$ran' != '$other' ]"
CHAIN=$("$TD/tdata-single" --chain | tr '\n' ' ')
kept="$work/cache/bin/.build-id/$(echo "$ran" | cut -c1-2)/$(echo "$ran" | cut -c3-)"
export STACKCAP_CACHE_DIR="$work/cache"

# unwound NAME [OPTS]: `stackunwind stacks` of NAME.trace into NAME.out,
# .err; "GOOD TOTAL" of tdata-single's chain.
unwound() {
	name=$1
	shift
	"$B/cli/stackunwind" stacks "$@" "$work/$name.trace" >"$work/$name.out" 2>"$work/$name.err"
	chain_match "$work/$name.out" $CHAIN
}
most() { [ "$2" -ge 100 ] && [ $(($1 * 100)) -ge $(($2 * 99)) ]; }

# replaced NAME [recurse|fifo]: tdata-single run from $work/del/NAME
# (pid in $pid) once it maps its file, that file then removed and its
# path given another program, a FIFO, or nothing.
replaced() {
	cp "$TD/tdata-single" "$work/del/$1"
	"$work/del/$1" 4 >/dev/null 2>&1 &
	pid=$!
	wait_until 10 sh -c "grep -q '$work/del/$1' /proc/$pid/maps 2>/dev/null"
	rm "$work/del/$1"
	case ${2:-} in
	recurse) cp "$TD/tdata-recurse" "$work/del/$1" ;;
	fifo) mkfifo "$work/del/$1" ;;
	esac
}
# end_pid: the program started last stopped.
end_pid() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }

# 1. Attached (-p): the process's maps read from /proc, the build-ids
# from its own files.
unshare -m --propagation private sh -c "mount --bind '$work/ns' '$work/host' && exec '$work/host/prog' 4" \
	>/dev/null 2>&1 &
pid=$! # unshare, then sh, then the program: one process
wait_until 10 sh -c "grep -q '$work/host/prog' /proc/$pid/maps 2>/dev/null"
"$STACKCAP" record -p "$pid" -o "$work/attach.trace" -- sleep 1 2>"$work/attach.rerr"
rc=$?
end_pid
check "attach: exit 0 ($rc), the copy kept said" \
	sh -c "[ $rc = 0 ] && grep -q 'not at their path here: kept by build-id' '$work/attach.rerr'"
check "attach: the program the container ran kept by its build-id, 0600 ($(stat -c %a "$kept" 2>&1))" \
	sh -c "cmp -s '$kept' '$TD/tdata-single' && [ \$(stat -c %a '$kept') = 600 ]"
set -- $(unwound attach)
check "attach: tdata-single's chain in >= 99% of its samples ($1 of $2), as the container ran it" most "$1" "$2"
# The babeltrace2 filter finds the copy too: its folded sink gives
# stackunwind's bytes.
PP="$B/plugin/.libs"
babeltrace2 --plugin-path="$PP" "$work/attach.trace" -c filter.stackcap.unwind -c sink.stackcap.folded \
	>"$work/attach.btf" 2>"$work/attach.bterr"
"$B/cli/stackunwind" folded "$work/attach.trace" >"$work/attach.suf" 2>/dev/null
check "attach: babeltrace2's filter and sink fold as stackunwind, with tdata-single's names" \
	sh -c "cmp -s '$work/attach.btf' '$work/attach.suf' && grep -q 'level_c;hot_leaf' '$work/attach.suf'"
# The copy gone: the file at the path is refused for its build-id, and
# nothing is named after it.
[ -d "$work/cache/bin" ] && mv "$work/cache/bin" "$work/bin.away"
set -- $(unwound attach)
# (The recorded path is the namespace's; where the recorder runs under a
# chroot itself, the kernel shows it from the machine's root instead,
# which holds no file here: "not found".)
if grep -q -E "build-id $ran\): (the file there has another build-id|not found)" "$work/attach.err" &&
	! grep -q 'recurse' "$work/attach.out" && [ "$1" = 0 ]; then
	ok "attach, no copy: the file here refused for its build-id ($ran), no frame named after it ($1 of $2)"
else
	not_ok_show "attach, no copy: the file here refused for its build-id ($ran), no frame named after it ($1 of $2)" \
		"$work/attach.err"
fi
[ -d "$work/bin.away" ] && mv "$work/bin.away" "$work/cache/bin"

# The trace taken elsewhere: `stackunwind archive` puts the kept copy in
# it, and it reads without this machine's cache.
"$B/cli/stackunwind" archive "$work/attach.trace" >/dev/null 2>"$work/attach-ar.err"
rc=$?
STACKCAP_CACHE_DIR="$work/other-cache" "$B/cli/stackunwind" stacks "$work/attach.trace" >"$work/attach-ar.out" 2>&1
set -- $(chain_match "$work/attach-ar.out" $CHAIN)
check "attach, archived: exit 0 ($rc), the container's program in the trace, read without our cache: chain in >= 99% ($1 of $2)" \
	sh -c "[ $rc = 0 ] && cmp -s '$TD/tdata-single' '$work/attach.trace/debug/.build-id/$(echo "$ran" | cut -c1-2)/$(echo "$ran" | cut -c3-)' &&
		[ $2 -ge 100 ] && [ \$(($1 * 100)) -ge \$(($2 * 99)) ]"

# 2. Started in the container while recorded: the kernel's records.
rm -rf "$work/cache"
"$STACKCAP" record -o "$work/live.trace" -- unshare -m --propagation private sh -c \
	"mount --bind '$work/ns' '$work/host' && exec '$work/host/prog' 1" 2>"$work/live.rerr"
rc=$?
set -- $(unwound live)
check "started in the container: exit 0 ($rc), kept, chain in >= 99% ($1 of $2)" \
	sh -c "[ $rc = 0 ] && cmp -s '$kept' '$TD/tdata-single' && [ $2 -ge 100 ] && [ \$(($1 * 100)) -ge \$(($2 * 99)) ]"

# 2b. Short commands in the container, each gone before its samples are
# read (a build, a script): their files opened through their parent,
# still there, by the build-id the kernel recorded.
rm -rf "$work/cache"
"$STACKCAP" record -o "$work/short.trace" -- unshare -m --propagation private sh -c \
	"mount --bind '$work/ns' '$work/host' && for i in \$(seq 30); do '$work/host/prog' 0.05; done" 2>"$work/short.rerr"
rc=$?
set -- $(unwound short)
check "short commands in the container: exit 0 ($rc), kept, chain in >= 99% ($1 of $2)" \
	sh -c "[ $rc = 0 ] && cmp -s '$kept' '$TD/tdata-single' && ! grep -q 'could not be kept' '$work/short.rerr' && [ $2 -ge 100 ] && [ \$(($1 * 100)) -ge \$(($2 * 99)) ]"

# 3. The program's file replaced while it runs (an upgrade): its path now
# holds another program.
rm -rf "$work/cache"
replaced prog recurse
"$STACKCAP" record -p "$pid" -o "$work/deleted.trace" -- sleep 1 2>"$work/deleted.rerr"
rc=$?
end_pid
set -- $(unwound deleted)
check "a replaced file: exit 0 ($rc), kept, chain in >= 99% ($1 of $2)" \
	sh -c "[ $rc = 0 ] && cmp -s '$kept' '$TD/tdata-single' && [ $2 -ge 100 ] && [ \$(($1 * 100)) -ge \$(($2 * 99)) ]"

# 3b. A cache directory that is not ours (root run with another user's
# HOME): nothing written there, and said.
mkdir -p "$work/theirs"
chown 65534:65534 "$work/theirs"
replaced prog2
STACKCAP_CACHE_DIR="$work/theirs/cache" "$STACKCAP" record -p "$pid" -o "$work/theirs.trace" -- sleep 0.3 \
	2>"$work/theirs.rerr"
rc=$?
end_pid
check "another user's cache directory: exit 0 ($rc), nothing written there, 'could not be kept' said" \
	sh -c "[ $rc = 0 ] && [ ! -e '$work/theirs/cache' ] && grep -q 'could not be kept' '$work/theirs.rerr'"

# 3c. What is at a replaced file's path is never opened but as a file:
# a FIFO there (which an open would wait on forever, holding the thread
# that drains the rings).
replaced prog3 fifo
timeout 30 "$STACKCAP" record -p "$pid" -o "$work/fifo.trace" -- sleep 0.3 2>"$work/fifo.rerr"
rc=$?
end_pid
check "a FIFO at a replaced file's path: the recording ends, exit 0 ($rc; 124: hung)" [ "$rc" = 0 ]

# 3d. The mapping's own file out of reach (no CAP_SYS_ADMIN nor
# CAP_CHECKPOINT_RESTORE: /proc/PID/map_files refused): the new file at a
# replaced file's path is not taken for it (another inode), so its
# build-id is never recorded and no frame is named after it.
if setpriv --help 2>&1 | grep -q -- --bounding-set; then
	replaced prog4 recurse
	setpriv --inh-caps=-sys_admin,-checkpoint_restore --bounding-set=-sys_admin,-checkpoint_restore -- \
		"$STACKCAP" record -p "$pid" -o "$work/nocap.trace" -- sleep 0.5 2>"$work/nocap.rerr"
	rc=$?
	end_pid
	# (The new file findable by its build-id: had it been recorded,
	# frames would be named after it.)
	mkdir -p "$work/dbg/.build-id/$(echo "$other" | cut -c1-2)"
	cp "$TD/tdata-recurse" "$work/dbg/.build-id/$(echo "$other" | cut -c1-2)/$(echo "$other" | cut -c3-)"
	"$B/cli/stackunwind" stacks --debug-dir "$work/dbg" "$work/nocap.trace" >"$work/nocap.out" 2>"$work/nocap.err"
	n_rec=$(grep -c 'recurse' "$work/nocap.out")
	check "map_files refused, a replaced file: exit 0 ($rc), no frame named after the file now at its path ($n_rec)" \
		sh -c "[ $rc = 0 ] && [ -s '$work/nocap.out' ] && [ $n_rec = 0 ]"
else
	not_ok "setpriv without --bounding-set: apt-get install util-linux (2.33 or later)"
fi

# 3e. Under chroot (another root, our mount namespace): a root holding
# the program at /prog and copies of its libraries at their paths.  The
# kernel names the files from that root: /prog is nowhere here (kept),
# the libraries' paths hold the same build-ids here (not kept).
rm -rf "$work/cache"
mkdir -p "$work/croot"
cp "$TD/tdata-single" "$work/croot/prog"
for lib in $(ldd "$TD/tdata-single" | awk '$(NF - 1) ~ /^\// { print $(NF - 1) }'); do
	mkdir -p "$work/croot$(dirname "$lib")" && cp "$lib" "$work/croot$lib"
done
"$STACKCAP" record -o "$work/chroot.trace" -- chroot "$work/croot" /prog 1 2>"$work/chroot.rerr"
rc=$?
set -- $(unwound chroot)
nkept=$(find "$work/cache/bin" -type f ! -name '.*' 2>/dev/null | wc -l)
check "under chroot: exit 0 ($rc), chain in >= 99% ($1 of $2), the program alone kept ($nkept)" \
	sh -c "[ $rc = 0 ] && [ $2 -ge 100 ] && [ \$(($1 * 100)) -ge \$(($2 * 99)) ] && [ $nkept = 1 ] && cmp -s '$kept' '$TD/tdata-single'"

# 4. A process that sees the recorder's files: nothing kept.
rm -rf "$work/cache"
"$STACKCAP" record -o "$work/plain.trace" -- "$TD/tdata-single" 0.3 2>"$work/plain.rerr"
rc=$?
check "the recorder's own view: exit 0 ($rc), nothing kept" \
	sh -c "[ $rc = 0 ] && [ ! -e '$work/cache/bin' ] && ! grep -q 'kept by build-id' '$work/plain.rerr'"

# 5. JIT code in a container: its perf map is in the container's /tmp
# (a private tmpfs here) under its pid there (1), nowhere on the host.
# The recorder keeps it in the trace (record/keep-jit-maps.h).
# jit_named NAME: "NAMED ANON" of jit-burn's leaves in NAME.out.
jit_named() {
	awk '/^jit-burn/ { getline; if ($2 ~ /^jit_count_loop\+0x/) n++; if ($3 == "([anon:exec])") a++ }
		END { print n + 0, a + 0 }' "$work/$1.out"
}
"$STACKCAP" record -o "$work/jitns.trace" -- unshare -m -p -f --mount-proc sh -c \
	"mount -t tmpfs -o mode=0755 tmpfs /tmp && exec '$B/tests/jit-burn' 1 perf-map" >/dev/null 2>"$work/jitns.rerr"
rc=$?
unwound jitns >/dev/null
set -- $(jit_named jitns)
maps=$(ls "$work/jitns.trace/jit" 2>/dev/null | tr '\n' ' ')
check "JIT in a container: exit 0 ($rc), its perf map kept ($maps), $1 leaves named from it, $2 [anon:exec]" \
	sh -c "[ $rc = 0 ] && [ $1 -ge 250 ] && [ $2 = 0 ] && grep -q 'perf maps naming JIT code kept in the trace: 1 ' '$work/jitns.rerr'"
mv "$work/jitns.trace/jit" "$work/jitns.jit"
unwound jitns >/dev/null
set -- $(jit_named jitns)
check "sound: without the trace's copy, none of those leaves is named ($1 named, $2 [anon:exec])" \
	sh -c "[ $1 = 0 ] && [ $2 -ge 250 ]"
# Attached (-p) to it.
unshare -m -p -f --mount-proc sh -c "mount -t tmpfs -o mode=0755 tmpfs /tmp && exec '$B/tests/jit-burn' 4 perf-map" \
	>/dev/null 2>&1 &
pid=$!
wait_until 10 sh -c "grep -q . /proc/$pid/task/$pid/children" # unshare forks it (-f)
jpid=$(awk '{ print $1 }' /proc/$pid/task/$pid/children 2>/dev/null)
wait_until 10 sh -c "grep -q '^[0-9a-f]*-[0-9a-f]* r-xp 00000000 00:00 0 ' /proc/$jpid/maps 2>/dev/null"
"$STACKCAP" record -p "$jpid" -o "$work/jitattach.trace" -- sleep 1 2>"$work/jitattach.rerr"
rc=$?
end_pid
unwound jitattach >/dev/null
set -- $(jit_named jitattach)
check "JIT in a container, attached: exit 0 ($rc), perf-$jpid.map kept, $1 leaves named from it, $2 [anon:exec]" \
	sh -c "[ $rc = 0 ] && [ -s '$work/jitattach.trace/jit/perf-$jpid.map' ] && [ $1 -ge 20 ] && [ $2 = 0 ]"
# A map another user owns (anyone may write in a /tmp): not kept, said.
"$STACKCAP" record -o "$work/jitother.trace" -- unshare -m -p -f --mount-proc sh -c \
	"mount -t tmpfs -o mode=0755 tmpfs /tmp && : >/tmp/perf-1.map && chown 65534 /tmp/perf-1.map && exec '$B/tests/jit-burn' 1 perf-map" \
	>/dev/null 2>"$work/jitother.rerr"
rc=$?
check "JIT map owned by another user than its process's: exit 0 ($rc), not kept, said" \
	sh -c "[ $rc = 0 ] && [ ! -e '$work/jitother.trace/jit' ] && grep -q '1 perf maps not kept: owned by another user' '$work/jitother.rerr'"

echo "1..$n"
