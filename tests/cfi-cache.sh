#!/bin/sh
# Integration: the fast unwinder's CFI rules kept between runs
# (unwind/cfi-file.c, issue 20).  A first run keeps each module's answers
# (address -> rule) under $STACKCAP_CACHE_DIR/cfi (0700, files 0600); a
# second run prints the same bytes, takes its rules from there (rules
# edited in the file, its checksum redone, change what it prints) and
# writes nothing when it found every answer kept; a file damaged, cut,
# not ours, open to others, a symlink, or naming a rule, register or
# expression that is not there is not used; --no-cache neither reads nor
# writes; the reference unwinder never reads them.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
need "python3" python3
need "binutils" readelf

# Our own copy of the program, so touching it changes nothing else.
cp "$TD/tdata-single" "$work/prog"
"$STACKCAP" record -o "$work/t.trace" -- "$work/prog" 0.3 >/dev/null 2>"$work/rec.err"
check "recorded" [ $? = 0 ]
C="$work/cache"
su() { STACKCAP_CACHE_DIR="$C" "$SU" "$@" 2>/dev/null; }
su stacks -j 1 --no-cache "$work/t.trace" >"$work/ref.stacks"
check "--no-cache keeps no rules" [ ! -e "$C/cfi" ]
su stacks -j 1 "$work/t.trace" >"$work/cold.stacks"
id=$(build_id "$work/prog")
kf=$(ls "$C"/cfi/"$id"-* 2>/dev/null | head -n 1)
modes="$(stat -c %a "$C/cfi" 2>/dev/null) $(stat -c %a "$kf" 2>/dev/null)"
check "a first run keeps the rules: the program's file, 0600 in a 0700 directory ($modes), output unchanged" \
	sh -c "[ -f '$kf' ] && [ '$modes' = '700 600' ] && cmp -s '$work/cold.stacks' '$work/ref.stacks'"
was=$(stat -c '%i %Y.%y' "$kf")
su stacks -j 1 "$work/t.trace" >"$work/warm.stacks"
check "a second run prints the same bytes" cmp -s "$work/warm.stacks" "$work/ref.stacks"
check "a second run that found every answer kept writes no file" [ "$(stat -c '%i %Y.%y' "$kf")" = "$was" ]
su stacks -j 2 "$work/t.trace" >"$work/warm2.stacks"
check "-j 2 over the kept rules prints the same bytes" cmp -s "$work/warm2.stacks" "$work/ref.stacks"

# forge FILE HOW: the kept file changed as HOW says, its checksum redone
# (tap-lib.sh's kept_check_redo).
# Layout (cfi-file.c): head {magic, nent, nrules, nops, check}; entries
# {addr u64, rule u32, pad}; rules {cfa_kind, cfa_reg, signal, pad,
# kind[17], pad[3], cfa_arg, arg[17]} (168 bytes); ops (24 bytes).
forge() {
	python3 - "$1" "$2" <<'PY' && kept_check_redo "$1"
import struct, sys
p, how = sys.argv[1], sys.argv[2]
b = bytearray(open(p, 'rb').read())
nent, nrules, nops = struct.unpack_from('<QQQ', b, 8)
ents, rules = 40, 40 + 16 * nent
assert nent > 0 and nrules > 0
if how == 'no-cfi':        # every answer: no CFI covers the address
    for i in range(nent):
        struct.pack_into('<I', b, ents + 16 * i + 8, 0xffffffff)
elif how == 'rule-index':  # an answer naming a rule past the last
    struct.pack_into('<I', b, ents + 8, nrules)
elif how == 'cfa-reg':     # a CFA in register 200
    for i in range(nrules):
        if b[rules + 168 * i] == 0:
            b[rules + 168 * i + 1] = 200
            break
    else:
        sys.exit('no register CFA')
elif how == 'expr':        # a register's expression past the last op
    b[rules + 4 + 3] = 5   # kind[rbx] = UW_REG_EXPR
    struct.pack_into('<Q', b, rules + 32 + 8 * 3, (1 << 32) | (nops + 5))
elif how == 'kind':        # a rule kind that does not exist
    b[rules + 4 + 16] = 9
open(p, 'r+b').write(b)
PY
}
cp -p "$kf" "$work/kf.orig"
forge "$kf" no-cfi
check "forged 'no CFI' answers written" [ $? = 0 ]
su stacks -j 1 "$work/t.trace" >"$work/edited.stacks"
nh=$(grep -c ' hot_leaf+' "$work/ref.stacks")
nhe=$(awk '/ hot_leaf\+/ { getline n; if (n !~ / level_c\+/) bad++ } END { print bad + 0 }' "$work/edited.stacks")
check "the rules come from the kept file: with every answer 'no CFI', $nhe of $nh samples in hot_leaf no longer reach level_c" \
	sh -c "[ $nh -gt 10 ] && [ $nhe -gt $((nh / 2)) ]"
su stacks -j 1 --unwinder dwfl "$work/t.trace" >"$work/dwfl.stacks"
check "the reference unwinder reads no kept rule" cmp -s "$work/dwfl.stacks" "$work/ref.stacks"
su stacks -j 1 --no-cache "$work/t.trace" >"$work/nocache.stacks"
check "--no-cache reads no kept rule" cmp -s "$work/nocache.stacks" "$work/ref.stacks"
su stacks -j 1 --debug-dir "$work/nowhere" "$work/t.trace" >"$work/dd.stacks"
check "another --debug-dir: the kept rules are not used" cmp -s "$work/dd.stacks" "$work/ref.stacks"
cp -p "$kf" "$work/kf.edited"

# spoiled WHAT CMD: the edited (valid) file spoiled by shell command CMD:
# a run must print the true stacks, then the edited file is put back.
spoiled() {
	sh -ec "$2"
	su stacks -j 1 "$work/t.trace" >"$work/sp.stacks"
	check "kept rules $1: not used (the true stacks printed)" cmp -s "$work/sp.stacks" "$work/ref.stacks"
	rm -f "$kf" "$kf.real"
	cp -p "$work/kf.edited" "$kf"
}
kept_spoils "$kf"
for how in rule-index cfa-reg expr kind; do
	cp -p "$work/kf.orig" "$kf"
	forge "$kf" no-cfi && forge "$kf" "$how"
	su stacks -j 1 "$work/t.trace" >"$work/sp.stacks"
	check "kept rules forged ($how, checksum redone): not used, no crash (the true stacks printed)" \
		cmp -s "$work/sp.stacks" "$work/ref.stacks"
	cp -p "$work/kf.edited" "$kf"
done
# The program changed on disk (same build-id, another identity): its
# rules are read again, never taken from the old file.
touch -d '2001-01-01' "$work/prog"
su stacks -j 1 "$work/t.trace" >"$work/touched.stacks"
check "the binary touched (another identity, same build-id): the edited rules are not used" \
	cmp -s "$work/touched.stacks" "$work/ref.stacks"
echo "1..$n"
