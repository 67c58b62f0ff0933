#!/bin/sh
# Integration: kernel frames (issue 21, step 1).  stackcap record keeps the
# kernel's part of each sample's call chain and the kernel symbols covering
# it (docs/trace-format.md, "Kernel frames"); stackunwind names them from
# the trace alone, innermost first, above the user frames.
#
# dd copying /dev/zero to /dev/null spends most of its CPU time in the
# kernel's read and write paths: at least half of its samples must show a
# kernel read or write frame above libc's read or write.  The samples are
# CPU-time samples of dd alone, so the share does not depend on the load.
# stackunwind reads the trace with /proc/kallsyms hidden (an empty file
# bound over it in a private mount namespace): the names can only come from
# the trace.  A perf.data file of dd recorded as root shows perf script's
# kernel frames, named from this machine's /proc/kallsyms.
. "${top_srcdir:?}/tests/tap-lib.sh"
need "linux-perf" perf
need_perf_sampling
need "util-linux" unshare runuser
UNW="$B/cli/stackunwind"
if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/kptr_restrict)" != 0 ]; then
	echo "1..1"
	echo "not ok 1 - kernel addresses hidden from this user: run as root or set kernel.kptr_restrict=0"
	exit 0
fi
if ! unshare -m sh -c "mount --bind /dev/null /proc/kallsyms" 2>"$work/unshare.err"; then
	echo "1..1"
	echo "not ok 1 - cannot hide /proc/kallsyms in a mount namespace (needs root): $(head -n 1 "$work/unshare.err")"
	exit 0
fi
# hidden CMD...: CMD with /proc/kallsyms an empty file.
hidden() { unshare -m sh -c 'mount --bind /dev/null /proc/kallsyms && exec "$@"' sh "$@"; }

DD="dd if=/dev/zero of=/dev/null bs=64k count=200000"
"$STACKCAP" record -o "$work/dd.trace" -- $DD >"$work/dd.out" 2>"$work/dd.err"
check "record dd: exit 0" [ $? = 0 ]
check "record dd: summary counts kernel frames and symbols ($(grep 'kernel frames' "$work/dd.err"))" \
	grep -q 'kernel frames in [1-9][0-9]* samples; [1-9][0-9]* kernel symbols' "$work/dd.err"
check "the trace is format version 3 (kernel events declared)" \
	grep -q 'stackcap_trace_version = 3;' "$work/dd.trace/metadata"
# babeltrace2 reads the new events as any CTF reader would.
babeltrace2 "$work/dd.trace" >"$work/dd.bt2" 2>"$work/dd.bt2err"
check "babeltrace2 reads the trace: kernel_chain events" grep -q 'kernel_chain: ' "$work/dd.bt2"
check "babeltrace2 reads the trace: one kernel_symbols event naming vfs_read or vfs_write" \
	sh -c "[ \$(grep -c 'kernel_symbols: ' '$work/dd.bt2') = 1 ] && grep 'kernel_symbols: ' '$work/dd.bt2' | grep -Eq 'vfs_(read|write)'"

# Folded, outermost first: libc's read or write, then (innermost) the
# kernel's read or write path, with /proc/kallsyms unreadable.
hidden "$UNW" folded "$work/dd.trace" >"$work/dd.folded" 2>"$work/dd.unw"
check "stackunwind folded with /proc/kallsyms hidden: exit 0" [ $? = 0 ]
check "/proc/kallsyms really hidden there (and readable outside)" \
	[ -z "$(hidden head -c 64 /proc/kallsyms)" -a -n "$(head -c 64 /proc/kallsyms)" ]
total=$(awk '{ n += $NF } END { print n + 0 }' "$work/dd.folded")
kern=$(awk '$0 ~ /;(__GI___)?(__)?(libc_)?(read|write)(;[^ ;]+)*;(ksys_|vfs_|__x64_sys_)(read|write)[; ]/ { n += $NF }
	END { print n + 0 }' "$work/dd.folded")
check "dd: $kern of $total samples show the kernel's read/write path above libc's read/write (>= half)" \
	awk -v a="$kern" -v b="$total" 'BEGIN { exit !(b > 0 && 2 * a >= b) }'

# stacks: kernel frames are innermost, all of them before the first user
# frame, named [kernel.kallsyms] as perf script names them.
hidden "$UNW" stacks "$work/dd.trace" >"$work/dd.stacks" 2>/dev/null
awk '
	/^$/ { user = 0; next }
	/\(\[kernel\.kallsyms\]\)$/ { k++; if (user) bad++; next }
	/^[ \t]+[0-9a-f]+ / { user = 1; u++ }
	END { printf "%d %d %d\n", k, u, bad }' "$work/dd.stacks" >"$work/dd.order"
read kf uf bad <"$work/dd.order"
check "stacks: $kf kernel frames above $uf user frames, none below a user frame ($bad)" \
	[ "$kf" -gt 0 -a "$uf" -gt 0 -a "$bad" = 0 ]
check "stacks: a kernel frame as 'function+0xOFF ([kernel.kallsyms])'" \
	grep -Eq '^[[:space:]]+[0-9a-f]{16} [A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+ \(\[kernel\.kallsyms\]\)$' "$work/dd.stacks"

# The flamegraph: kernel frames named, in their own colour (orange:
# red high, blue low), every one of them.
hidden "$UNW" flamegraph -o "$work/dd.svg" "$work/dd.trace" 2>/dev/null
set -- $(awk -F'fill="rgb\\(|\\)"' '/<title>[^<]*\(\[kernel\.kallsyms\]\)/ {
		split($2, c, ","); n++; if (c[1] >= 220 && c[2] >= 100 && c[2] <= 170 && c[3] <= 90) o++ }
	END { print n + 0, o + 0 }' "$work/dd.svg")
check "flamegraph: $1 kernel frames ([kernel.kallsyms]), all orange ($2)" [ "$1" -gt 0 -a "$1" = "$2" ]

# --user-only: no kernel frames, the trace as before (version 1).
"$STACKCAP" record --user-only -o "$work/uo.trace" -- $DD >/dev/null 2>"$work/uo.err"
check "--user-only: exit 0, no kernel events, version 1" sh -c "[ $? = 0 ] &&
	grep -q 'stackcap_trace_version = 1;' '$work/uo.trace/metadata' && ! grep -q kernel_chain '$work/uo.trace/metadata'"
"$UNW" stacks "$work/uo.trace" >"$work/uo.stacks" 2>/dev/null
check "--user-only: no kernel frame in stacks" sh -c "[ -s '$work/uo.stacks' ] && ! grep -q 'kernel.kallsyms' '$work/uo.stacks'"
check "--user-only: no note about kernel frames" sh -c "! grep -q 'kernel frames' '$work/uo.err'"

# A user who may not read kernel addresses (nobody, under the machine's
# kptr_restrict/perf_event_paranoid as root sees them readable): told
# once, user frames recorded (version 1).
if [ "$(runuser -u nobody -- head -c 16 /proc/kallsyms)" = "0000000000000000" ]; then
	nb=$(mktemp -d /tmp/kframes-nobody.XXXXXX)
	chmod 777 "$nb"
	runuser -u nobody -- "$STACKCAP" record -o "$nb/t.trace" -- $DD >/dev/null 2>"$work/nb.err"
	check "nobody: exit 0, user frames only (version 1)" \
		sh -c "[ $? = 0 ] && grep -q 'stackcap_trace_version = 1;' '$nb/t.trace/metadata'"
	check "nobody: told once that there are no kernel frames ($(grep -c 'no kernel frames' "$work/nb.err"))" \
		[ "$(grep -c 'note: no kernel frames: kernel addresses are hidden' "$work/nb.err")" = 1 ]
	rm -rf "$nb"
else
	not_ok "nobody sees kernel addresses here (kernel.kptr_restrict=0 and perf_event_paranoid<=1): the refusal is not tested"
fi

# perf.data files that carry kernel call chains (perf record as root,
# --call-graph dwarf: exclude_callchain_user, the kernel part kept): their
# kernel frames shown innermost first as perf script shows them, named from
# this machine's /proc/kallsyms (the recording's kernel is this one).
perf record -q -k monotonic -e cpu-clock --call-graph dwarf -o "$work/dd.data" -- $DD >/dev/null 2>"$work/ddp.err"
check "perf record dd: exit 0" [ $? = 0 ]
# kframes: one line per sample, "tid time|kernel;frames" (offsets dropped).
kframes() {
	awk '/^[^\t ]/ { if (h != "") print h "|" c; n = split($0, a, " "); tid = a[n - 1]; sub(/.*\//, "", tid)
		t = a[n]; sub(/:$/, "", t); h = tid " " t; c = ""; next }
	/\(\[kernel\.kallsyms\]\)$/ { f = $2; sub(/\+0x[0-9a-f]+$/, "", f); c = c (c == "" ? "" : ";") f }
	END { if (h != "") print h "|" c }'
}
perf script --ns -i "$work/dd.data" -F comm,pid,tid,time,ip,sym,dso 2>/dev/null | kframes >"$work/ddp.perf"
"$UNW" stacks "$work/dd.data" >"$work/ddp.stacks" 2>"$work/ddp.unw"
kframes <"$work/ddp.stacks" >"$work/ddp.su"
total=$(wc -l <"$work/ddp.perf")
same=$(paste -d '\n' "$work/ddp.perf" "$work/ddp.su" | awk 'NR % 2 { p = $0; next } p == $0 && p !~ /\|$/ { n++ } END { print n + 0 }')
withk=$(grep -c '|.' "$work/ddp.perf")
check "perf.data: $same of $withk samples with kernel frames show perf script's kernel frames (>= 99%; $total samples, $(wc -l <"$work/ddp.su") ours)" \
	sh -c "[ $total = $(wc -l <"$work/ddp.su") ] && [ $withk -ge 100 ] && [ $((100 * same)) -ge $((99 * withk)) ]"
rw=$(grep -Ec '\|([^|]*;)?(ksys_|vfs_|__x64_sys_)(read|write)(;|$)' "$work/ddp.su")
check "perf.data: $rw of $total samples show the kernel's read/write path (>= half)" \
	awk -v a="$rw" -v b="$total" 'BEGIN { exit !(b > 0 && 2 * a >= b) }'
check "perf.data: no note about kernel symbols ($(grep -c 'kernel frames' "$work/ddp.unw"))" \
	sh -c "! grep -q 'kernel frames' '$work/ddp.unw'"
# With a core to spare (-j 2) this machine's symbols are read on a thread
# of their own from the file's header on (trace/kallsyms-ahead.c); with
# -j 1 when a sample first needs them: the same names either way.
"$UNW" stacks -j 1 --no-cache "$work/dd.data" >"$work/ddp-j1.stacks" 2>"$work/ddp-j1.err"
"$UNW" stacks -j 2 --no-cache "$work/dd.data" >"$work/ddp-j2.stacks" 2>"$work/ddp-j2.err"
check "kernel symbols read ahead (-j 2) or when first needed (-j 1): the same stacks as perf script's run above" \
	sh -c "cmp -s '$work/ddp-j1.stacks' '$work/ddp.stacks' && cmp -s '$work/ddp-j2.stacks' '$work/ddp.stacks' &&
		! grep -q 'kernel frames' '$work/ddp-j1.err' '$work/ddp-j2.err'"
# --user-only: the same stacks without their kernel frames.
"$UNW" stacks --user-only "$work/dd.data" >"$work/ddp-uo.stacks" 2>/dev/null
grep -v '(\[kernel\.kallsyms\])$' "$work/ddp.stacks" >"$work/ddp-nok.stacks"
check "perf.data --user-only: no kernel frame, every other line as without it" \
	sh -c "! grep -q 'kernel\.kallsyms' '$work/ddp-uo.stacks' && cmp -s '$work/ddp-uo.stacks' '$work/ddp-nok.stacks'"
# Another kernel's recording (its build-id changed in a copy): the frames
# keep their addresses, said once.
kid=$(perf buildid-list -i "$work/dd.data" 2>/dev/null | awk '$2 == "[kernel.kallsyms]" { print $1; exit }')
python3 -c 'import sys
d = bytearray(open(sys.argv[1], "rb").read()); i = d.find(bytes.fromhex(sys.argv[2]))
assert i > 0; d[i] ^= 0xff; open(sys.argv[3], "wb").write(d)' "$work/dd.data" "$kid" "$work/other.data" 2>"$work/other.py"
"$UNW" stacks "$work/other.data" >"$work/other.stacks" 2>"$work/other.unw"
orc=$?
check "another kernel's perf.data: exit $orc, told once ($(grep -c 'kernel frames not named' "$work/other.unw")), kernel frames unnamed" \
	sh -c "[ $orc = 0 ] && [ \$(grep -c 'kernel frames not named: the recording.s kernel' '$work/other.unw') = 1 ] &&
		grep -q 'kernel\.kallsyms' '$work/other.stacks' && ! grep -Eq 'vfs_(read|write)' '$work/other.stacks'"

# This machine's kernel symbols kept between runs (trace/kallsyms-cache.c):
# the first run over a perf.data keeps them under the cache directory
# (0700, the file 0600); a later one names the same kernel frames with
# /proc/kallsyms hidden, so from the copy; a copy that is damaged, not
# ours, open to others or a symlink is not used, and --no-cache uses none.
kc="$work/kcache"
STACKCAP_CACHE_DIR="$kc" "$UNW" stacks "$work/dd.data" >"$work/kc1.stacks" 2>/dev/null
kf=$(ls "$kc"/kallsyms/* 2>/dev/null | head -n 1)
kmodes="$(stat -c %a "$kc/kallsyms" 2>/dev/null) $(stat -c %a "$kf" 2>/dev/null)"
check "kernel symbols kept: one file, 0600 in a 0700 directory ($kmodes), the same stacks" \
	sh -c "[ -f '$kf' ] && [ '$kmodes' = '700 600' ] && cmp -s '$work/kc1.stacks' '$work/ddp.stacks'"
STACKCAP_CACHE_DIR="$kc" hidden "$UNW" stacks "$work/dd.data" >"$work/kc2.stacks" 2>"$work/kc2.err"
check "a second run names the same kernel frames with /proc/kallsyms hidden (from the kept copy)" \
	sh -c "cmp -s '$work/kc2.stacks' '$work/ddp.stacks' && ! grep -q 'kernel frames not named' '$work/kc2.err'"
for j in 1 2; do
	STACKCAP_CACHE_DIR="$kc" hidden "$UNW" stacks -j $j --no-cache "$work/dd.data" >"$work/kc3.stacks" 2>"$work/kc3.err"
	check "--no-cache -j $j: the copy is not used (hidden /proc/kallsyms: frames unnamed, said once: $(grep -c 'kernel frames not named' "$work/kc3.err"))" \
		sh -c "[ \$(grep -c 'kernel frames not named' '$work/kc3.err') = 1 ] && ! grep -Eq 'vfs_(read|write)' '$work/kc3.stacks'"
done
# bad_copy WHAT CMD: the kept copy ($kf) spoiled by shell command CMD; a
# run with /proc/kallsyms hidden then names no kernel frame (the good copy
# named them all, above); the good copy is put back.
bad_copy() {
	what=$1
	cp -p "$kf" "$work/kf.good"
	sh -ec "$2"
	STACKCAP_CACHE_DIR="$kc" hidden "$UNW" stacks "$work/dd.data" >"$work/kcb.stacks" 2>"$work/kcb.err"
	check "kept copy $what: not used (frames unnamed, said)" \
		sh -c "grep -q 'kernel frames not named' '$work/kcb.err' && ! grep -Eq 'vfs_(read|write)' '$work/kcb.stacks'"
	[ -e "$kf" ] && echo present >"$work/kcb.err.kf" || echo gone >"$work/kcb.err.kf"
	cp "$work/kcb.err" "$work/kcb.err.1"
	rm -f "$kf"
	cp -p "$work/kf.good" "$kf"
}
# A byte of the middle symbol (every lookup's first step reads it) changed:
# its block's check fails, so no lookup names anything from the copy,
# which is deleted (its blocks are checked where lookups read them).
mid=$(python3 -c 'import struct, sys
d = open(sys.argv[1], "rb").read(48)
n, n_blocks = struct.unpack_from("<Q", d, 8)[0], struct.unpack_from("<Q", d, 24)[0]
print(8 + 4 * 8 + 8 + 64 + 8 * n_blocks + 24 * (n // 2) + 8)' "$kf")
bad_copy "damaged (a byte changed)" "printf 'x' | dd of='$kf' bs=1 seek=$mid conv=notrunc 2>/dev/null"
check "the damaged copy was said and deleted ($(cat "$work/kcb.err.kf"))" \
	sh -c "grep -q 'kept copy of this machine.s kernel symbols .* is damaged' '$work/kcb.err.1' && grep -qx gone '$work/kcb.err.kf'"
bad_copy "cut short" "truncate -s 4096 '$kf'"
bad_copy "readable by others (0644)" "chmod 644 '$kf'"
bad_copy "owned by another user" "chown nobody '$kf'"
bad_copy "a symlink" "mv '$kf' '$kf.real'; ln -s '$kf.real' '$kf'"
rm -f "$kf.real"
printf 'x' | dd of="$kf" bs=1 seek="$mid" conv=notrunc 2>/dev/null
STACKCAP_CACHE_DIR="$kc" "$UNW" stacks "$work/dd.data" >"$work/kc4.stacks" 2>"$work/kc4.err"
STACKCAP_CACHE_DIR="$kc" hidden "$UNW" stacks "$work/dd.data" >"$work/kc5.stacks" 2>/dev/null
check "a copy found damaged with /proc/kallsyms readable: the frames named from /proc/kallsyms, said, a good copy kept for the next run" \
	sh -c "cmp -s '$work/kc4.stacks' '$work/ddp.stacks' && grep -q 'damaged where frames were looked up: .*a good copy kept' '$work/kc4.err' &&
		cmp -s '$work/kc5.stacks' '$work/ddp.stacks'"

# A sample in execve after its point of no return (the old image's memory
# released in begin_new_exec) holds the old image's registers: its pc is
# not in the new image's maps, its stack is gone.  stackunwind says so
# ([exec], no user frame) rather than [bad-stack] or [no-map].  A shell
# running true 300 times, sampled at 20 kHz: the exec samples are many.
"$STACKCAP" record -F 20000 -o "$work/ex.trace" -- sh -c 'i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i + 1)); done' \
	>/dev/null 2>"$work/ex.err"
check "record 300 execs: exit 0" [ $? = 0 ]
"$UNW" stacks "$work/ex.trace" >"$work/ex.stacks" 2>"$work/ex.unw"
awk 'BEGIN { RS = "" } /\[exec\]/ { e++; n = split($0, l, "\n"); for (i = 2; i <= n; i++) if (l[i] !~ /\[kernel\.kallsyms\]|\[exec\]/) user++ }
	/bprm_execve/ { x++; if (/\[bad-stack\]|\[no-map\]/) bad++ }
	END { print x + 0, e + 0, bad + 0, user + 0 }' "$work/ex.stacks" >"$work/ex.n"
read -r nx ne nbad nuser <"$work/ex.n"
check "execs: $nx samples in bprm_execve, $ne past the old image's release ([exec], >= 1)" [ "$ne" -ge 1 ]
check "execs: none in bprm_execve ends in [bad-stack] or [no-map] ($nbad)" [ "$nbad" = 0 ]
check "execs: the [exec] samples show kernel frames alone ($nuser other lines)" [ "$nuser" = 0 ]
check "execs: the summary counts them ($(grep -o '[0-9]* in execve' "$work/ex.unw"))" \
	grep -q ", $ne in execve (their program's image already gone)" "$work/ex.unw"
# The babeltrace2 filter names the same end.
nbt=$(babeltrace2 --plugin-path="$B/plugin/.libs" "$work/ex.trace" -c filter.stackcap.unwind 2>/dev/null |
	grep -c 'unwind_end = "exec"')
check "execs: the babeltrace2 filter says unwind_end \"exec\" for them too ($nbt of $ne)" [ "$nbt" = "$ne" ]
"$UNW" folded "$work/ex.trace" >"$work/ex.folded" 2>/dev/null
check "execs: folded roots them at [exec] under the program's name" grep -Eq '^[^;]+;\[exec\];entry_SYSCALL' "$work/ex.folded"

echo "1..$n"
