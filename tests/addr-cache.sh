#!/bin/sh
# Integration: the symbolizer's answers kept between runs
# (symbolize/addr-cache.c, issue 20).  A first run keeps each module's
# answers under $STACKCAP_CACHE_DIR/sym (0700, files 0600); a second run
# prints the same bytes and takes its names from there (a kept name edited
# in the file, its checksum redone, is what the second run prints); a file
# kept for other files (the binary touched: another identity; another
# --debug-dir), damaged, not ours, open to others or a symlink is not used;
# a debug file found by its link touched, or another put where it is
# looked for first, neither; --no-cache neither reads nor writes; -j 2
# over kept answers prints what -j 1 printed; folded keeps its own
# (names only) answers; the cache is pruned (files unused for 30 days, then down to a budget).
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
need "python3" python3
need binutils objcopy

# Our own copy of the program, so touching it changes nothing else.
cp "$TD/tdata-inline" "$work/prog"
"$STACKCAP" record -o "$work/t.trace" -- "$work/prog" 0.3 >/dev/null 2>"$work/rec.err"
check "recorded" [ $? = 0 ]
C="$work/cache"
su() { STACKCAP_CACHE_DIR="$C" "$SU" "$@" 2>/dev/null; }
su stacks -j 1 --no-cache "$work/t.trace" >"$work/ref.stacks"
check "--no-cache keeps nothing" [ ! -e "$C/sym" ]
su stacks -j 1 "$work/t.trace" >"$work/cold.stacks"
# The file of the program's answers: the one naming inline_hot.
kf=$(grep -l inline_hot "$C"/sym/* 2>/dev/null | head -n 1)
modes="$(stat -c %a "$C/sym" 2>/dev/null) $(stat -c %a "$kf" 2>/dev/null)"
check "a first run keeps the answers: the program's file, 0600 in a 0700 directory ($modes), output unchanged" \
	sh -c "[ -f '$kf' ] && [ '$modes' = '700 600' ] && cmp -s '$work/cold.stacks' '$work/ref.stacks'"
su stacks -j 1 "$work/t.trace" >"$work/warm.stacks"
check "a second run prints the same bytes" cmp -s "$work/warm.stacks" "$work/ref.stacks"
su stacks -j 2 "$work/t.trace" >"$work/warm2.stacks"
check "-j 2 over the kept answers prints the same bytes" cmp -s "$work/warm2.stacks" "$work/ref.stacks"

# edit FILE: inline_hot renamed inline_HOT in a kept file, its checksum
# redone (tap-lib.sh's kept_check_redo).
edit() {
	python3 - "$1" <<'PY' && kept_check_redo "$1"
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
i = b.find(b'inline_hot\0')
assert i > 40
b[i:i + 10] = b'inline_HOT'
open(p, 'r+b').write(b)
PY
}
cp -p "$kf" "$work/kf.orig"
edit "$kf"
su stacks -j 1 "$work/t.trace" >"$work/edited.stacks"
hot=$(grep -c ' inline_HOT' "$work/edited.stacks")
check "the names come from the kept file (its edited name printed $hot times, no DWARF read for them)" \
	sh -c "[ $hot -gt 10 ] && ! grep -q ' inline_hot' '$work/edited.stacks'"
cp -p "$kf" "$work/kf.edited"
su stacks -j 1 --no-cache "$work/t.trace" >"$work/nocache.stacks"
check "--no-cache reads no kept answer" cmp -s "$work/nocache.stacks" "$work/ref.stacks"
su stacks -j 1 --debug-dir "$work/nowhere" "$work/t.trace" >"$work/dd.stacks"
check "another --debug-dir: the kept answers are not used" cmp -s "$work/dd.stacks" "$work/ref.stacks"

# spoiled WHAT CMD: the edited (valid) file spoiled by shell command CMD:
# a run must print the true names, then the edited file is put back.
spoiled() {
	sh -ec "$2"
	su stacks -j 1 "$work/t.trace" >"$work/sp.stacks"
	check "kept file $1: not used (the true names printed)" cmp -s "$work/sp.stacks" "$work/ref.stacks"
	rm -f "$kf" "$kf.real"
	cp -p "$work/kf.edited" "$kf"
}
kept_spoils "$kf"
# The program changed on disk (same build-id, another identity): its
# answers are made again, never taken from the old file.
touch -d '2001-01-01' "$work/prog"
su stacks -j 1 "$work/t.trace" >"$work/touched.stacks"
check "the binary touched (another identity, same build-id): the edited answers are not used" \
	cmp -s "$work/touched.stacks" "$work/ref.stacks"

# folded: names only, kept apart from stacks' answers.
su folded --no-cache "$work/t.trace" >"$work/ref.folded"
su folded "$work/t.trace" >"$work/f1.folded"
su folded "$work/t.trace" >"$work/f2.folded"
nf=$(grep -l inline_hot "$C"/sym/* 2>/dev/null | wc -l)
check "folded: the same lines cold and warm, its own kept file ($nf files name inline_hot)" \
	sh -c "cmp -s '$work/f1.folded' '$work/ref.folded' && cmp -s '$work/f2.folded' '$work/ref.folded' && [ $nf -ge 2 ]"

# The program's debug info in a file of its own (stripped, with a
# .gnu_debuglink): the kept answers are named by the identities of the
# paths that file is looked for at (debuginfo/module.c
# su_module_kept_path), none of them opened on a warm run; the debug file
# touched, or another put at a path looked at before it, and the answers
# kept are not used.
mkdir -p "$work/sd/.debug"
objcopy --only-keep-debug "$work/prog" "$work/sd/.debug/sprog.debug" &&
	objcopy --strip-debug --add-gnu-debuglink="$work/sd/.debug/sprog.debug" "$work/prog" "$work/sd/sprog"
check "a stripped copy with its debug file beside it (.debug/)" [ $? = 0 ]
"$STACKCAP" record -o "$work/s.trace" -- "$work/sd/sprog" 0.3 >/dev/null 2>"$work/rec.err"
C="$work/scache"
su stacks -j 1 --no-cache "$work/s.trace" >"$work/sref.stacks"
check "its inlined functions named from the debug file" grep -q ' inline_hot' "$work/sref.stacks"
# newest_kept: the newest kept file naming inline_hot.
newest_kept() {
	f=$(grep -l inline_hot "$C"/sym/* 2>/dev/null)
	[ -n "$f" ] && ls -t $f | head -n 1
}
su stacks -j 1 "$work/s.trace" >/dev/null
kf=$(newest_kept)
edit "$kf"
su stacks -j 1 "$work/s.trace" >"$work/sedited.stacks"
check "the names come from the kept file (stripped binary, debug file found by its link)" \
	sh -c "grep -q ' inline_HOT' '$work/sedited.stacks' && ! grep -q ' inline_hot' '$work/sedited.stacks'"
touch -d '2001-01-01' "$work/sd/.debug/sprog.debug"
su stacks -j 1 "$work/s.trace" >"$work/stouched.stacks"
check "the debug file touched (the binary not): the kept answers are not used" \
	cmp -s "$work/stouched.stacks" "$work/sref.stacks"
kf=$(newest_kept)
edit "$kf"
su stacks -j 1 "$work/s.trace" >"$work/sedited2.stacks"
cp "$work/sd/.debug/sprog.debug" "$work/sd/sprog.debug"
su stacks -j 1 "$work/s.trace" >"$work/searlier.stacks"
check "a debug file put where it is looked for first (next to the binary): the kept answers are not used" \
	sh -c "grep -q ' inline_HOT' '$work/sedited2.stacks' && cmp -s '$work/searlier.stacks' '$work/sref.stacks'"

# The cache stays bounded (common/cache-file.c su_cache_prune): kept files
# are named by what they depend on, so a binary upgraded or rebuilt leaves
# files no run asks for again.  A write prunes its directory at most once
# a day (DIR/.pruned): files of ours unused for $STACKCAP_CACHE_DAYS (30)
# days go, then the least recently used down to $STACKCAP_CACHE_MAX_MB.
C="$work/pcache"
su stacks -j 1 "$work/t.trace" >/dev/null
kf=$(grep -l inline_hot "$C"/sym/* 2>/dev/null | head -n 1)
check "a write leaves the day's stamp (sym/.pruned)" [ -f "$C/sym/.pruned" ]
head -c 1000 /dev/zero >"$C/sym/stale" && touch -d '40 days ago' "$C/sym/stale"
head -c 1000 /dev/zero >"$C/sym/idle" && touch -d '10 days ago' "$C/sym/idle"
head -c 1000 /dev/zero >"$C/sym/foreign" && touch -d '40 days ago' "$C/sym/foreign" && chown nobody "$C/sym/foreign"
head -c 1000 /dev/zero >"$work/outside" && touch -d '40 days ago' "$work/outside"
ln -s "$work/outside" "$C/sym/link"
chmod 600 "$C/sym/"*
# A write within the day prunes nothing.
rm -f "$kf"
su stacks -j 1 "$work/t.trace" >/dev/null
check "within the day of the last pruning, a stale file stays" [ -f "$C/sym/stale" ]
rm -f "$kf" "$C/sym/.pruned"
su stacks -j 1 "$work/t.trace" >"$work/pr.stacks"
left=$(cd "$C/sym" && ls | tr '\n' ' ')
check "pruned: the file unused 40 days removed; the one 10 days old, another user's, a symlink and what it points to kept; the answers written again ($left)" \
	sh -c "[ ! -e '$C/sym/stale' ] && [ -f '$C/sym/idle' ] && [ -f '$C/sym/foreign' ] && [ -L '$C/sym/link' ] && [ -f '$work/outside' ] && [ -n \"\$(grep -l inline_hot '$C'/sym/* 2>/dev/null)\" ] && cmp -s '$work/pr.stacks' '$work/ref.stacks'"
# A kept file read is marked used (its access time; its modification time,
# which names answers about it, unchanged).
kf=$(grep -l inline_hot "$C"/sym/* 2>/dev/null | head -n 1)
touch -a -d '10 days ago' "$kf"
m0=$(stat -c %Y "$kf")
su stacks -j 1 "$work/t.trace" >/dev/null
a1=$(stat -c %X "$kf")
check "a kept file read is marked used: its access time now, its modification time kept" \
	sh -c "[ $a1 -gt $(($(date +%s) - 3600)) ] && [ $(stat -c %Y "$kf") = $m0 ]"
# Over the budget: the least recently used go first, down to it.
head -c 700000 /dev/zero >"$C/sym/big-old" && touch -d '5 days ago' "$C/sym/big-old"
head -c 700000 /dev/zero >"$C/sym/big-new" && touch -d '3 days ago' "$C/sym/big-new"
chmod 600 "$C/sym/big-old" "$C/sym/big-new"
rm -f "$kf" "$C/sym/.pruned"
STACKCAP_CACHE_MAX_MB=1 su stacks -j 1 "$work/t.trace" >/dev/null
left=$(cd "$C/sym" && ls | tr '\n' ' ')
check "over a 1 MiB budget: the older of two 700 KB files removed, the newer and the answers just written kept ($left)" \
	sh -c "[ ! -e '$C/sym/big-old' ] && [ -f '$C/sym/big-new' ] && [ -n \"\$(grep -l inline_hot '$C'/sym/* 2>/dev/null)\" ]"
echo "1..$n"
