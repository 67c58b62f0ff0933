#!/bin/sh
# Integration: the symbolizer's answers kept between runs
# (symbolize/addr-cache.c, issue 20).  A first run keeps each module's
# answers under $STACKCAP_CACHE_DIR/sym (0700, files 0600); a second run
# prints the same bytes and takes its names from there (a kept name edited
# in the file, its checksum redone, is what the second run prints); a file
# kept for other files (the binary touched: another identity; another
# --debug-dir), damaged, not ours, open to others or a symlink is not used;
# --no-cache neither reads nor writes; -j 2 over kept answers prints what
# -j 1 printed; folded keeps its own (names only) answers.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
need "python3" python3

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
echo "1..$n"
