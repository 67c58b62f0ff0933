#!/bin/sh
# Integration: `stackunwind archive TRACE` copies into the trace the
# binaries and debug files its samples' frames need (cli/archive.h), so
# it reads the same on a machine without them.  A program built here
# (a build-id no other file has), its debug info split into a separate
# file; the "other machine" is this one with the program, its debug file
# and every cache gone.
. "${top_srcdir:?}/tests/tap-lib.sh"
need "gcc" gcc
need "binutils" objcopy readelf strip
SU="$B/cli/stackunwind"
export STACKCAP_CACHE_DIR="$work/cache"

cat >"$work/arch.c" <<EOF_C
#include <stdio.h>
#include <time.h>
/* $work: a build-id of its own */
static volatile unsigned long sink;
__attribute__((noinline)) static void arch_leaf(void)
{
	for (int i = 0; i < 100000; i++)
		sink += (unsigned long)i * 7u;
}
__attribute__((noinline)) static void arch_mid(void) { arch_leaf(); sink++; }
int main(void)
{
	while (clock() < CLOCKS_PER_SEC / 2)
		arch_mid();
	printf("%lu\n", sink);
	return 0;
}
EOF_C
mkdir -p "$work/bin" "$work/dbg"
gcc -O2 -g -fno-omit-frame-pointer -o "$work/bin/arch" "$work/arch.c"
id=$(build_id "$work/bin/arch")
rel="$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-)"
mkdir -p "$work/dbg/.build-id/$(echo "$id" | cut -c1-2)"
objcopy --only-keep-debug "$work/bin/arch" "$work/dbg/.build-id/$rel.debug"
strip --strip-debug --strip-unneeded "$work/bin/arch"
objcopy --add-gnu-debuglink="$work/dbg/.build-id/$rel.debug" "$work/bin/arch"
check "sound: the program has a build-id ($id) and no debug info of its own" \
	sh -c "[ -n '$id' ] && ! readelf -S '$work/bin/arch' | grep -q debug_info"

record arch -- "$work/bin/arch" >/dev/null
"$SU" stats "$work/arch.trace" >"$work/stats-before.out" 2>&1
"$SU" archive --debug-dir "$work/dbg" "$work/arch.trace" >"$work/archive.out" 2>"$work/archive.err"
rc=$?
check "archive: exit 0 ($rc), the program and its debug file copied, said" \
	sh -c "[ $rc = 0 ] && cmp -s '$work/bin/arch' '$work/arch.trace/debug/.build-id/$rel' &&
		cmp -s '$work/dbg/.build-id/$rel.debug' '$work/arch.trace/debug/.build-id/$rel.debug' &&
		grep -q 'archive: [1-9][0-9]* binaries and [1-9][0-9]* debug files copied into' '$work/archive.err' &&
		[ ! -s '$work/archive.out' ]"
libc=$(build_id "$(ldd "$work/bin/arch" | awk '/libc\.so/ { print $3 }')")
check "archive: libc kept too, by its build-id ($libc)" \
	test -s "$work/arch.trace/debug/.build-id/$(echo "$libc" | cut -c1-2)/$(echo "$libc" | cut -c3-)"
"$SU" stats "$work/arch.trace" >"$work/stats-after.out" 2>&1
before=$(awk '/^bytes on disk:/ { print $NF }' "$work/stats-before.out")
after=$(awk '/^bytes on disk:/ { print $NF }' "$work/stats-after.out")
check "stats: the archived files said apart, the recording's bytes the same ($before, $after)" \
	sh -c "[ -n '$before' ] && [ '$before' = '$after' ] && grep -q '^archived files: *[1-9]' '$work/stats-after.out'"
"$SU" archive "$work/arch.trace" >/dev/null 2>"$work/archive2.err"
rc=$?
check "archive again: exit 0 ($rc), nothing copied, all there already" \
	sh -c "[ $rc = 0 ] && grep -q 'archive: 0 binaries and 0 debug files copied .* [1-9][0-9]* there already' '$work/archive2.err'"

# Elsewhere: the program, its debug file and the caches gone.
mv "$work/bin" "$work/bin.away"
mv "$work/dbg" "$work/dbg.away"
rm -rf "$work/cache"
"$SU" stacks --no-cache "$work/arch.trace" >"$work/elsewhere.out" 2>"$work/elsewhere.err"
rc=$?
set -- $(chain_match "$work/elsewhere.out" arch_leaf arch_mid main)
lines=$(grep -c ' arch_leaf+0x[0-9a-f]* (.*) .*/arch\.c:[0-9]*$' "$work/elsewhere.out")
check "elsewhere: exit 0 ($rc), arch_leaf <- arch_mid <- main in >= 99% ($1 of $2), with file:line from the archived debug file ($lines)" \
	sh -c "[ $rc = 0 ] && [ $2 -ge 100 ] && [ \$(($1 * 100)) -ge \$(($2 * 99)) ] && [ $lines -ge 100 ]"
mv "$work/arch.trace/debug" "$work/debug.away"
"$SU" stacks --no-cache "$work/arch.trace" >"$work/none.out" 2>"$work/none.err"
set -- $(chain_match "$work/none.out" arch_leaf arch_mid main)
check "sound: without the archive, no frame of the program named ($2 samples end in arch_leaf)" [ "$2" = 0 ]
mv "$work/debug.away" "$work/arch.trace/debug"
check "babeltrace2 reads the archived trace" babeltrace2 "$work/arch.trace" -o dummy

# dwz: the debug files of two programs share a common file
# (.gnu_debugaltlink), archived too, by its own build-id.
need "dwz" dwz
mkdir -p "$work/dz"
sed 's/a build-id of its own/one of two/' "$work/arch.c" >"$work/dz/two.c"
gcc -O2 -g -o "$work/dz/one" "$work/arch.c" && gcc -O2 -g -o "$work/dz/two" "$work/dz/two.c"
for p in one two; do
	objcopy --only-keep-debug "$work/dz/$p" "$work/dz/$p.debug"
done
(cd "$work/dz" && dwz -m common.debug -M "$work/nowhere/common.debug" one.debug two.debug) >"$work/dwz.err" 2>&1
one=$(build_id "$work/dz/one")
alt=$(build_id "$work/dz/common.debug")
mkdir -p "$work/dz/dbg/.build-id/$(echo "$one" | cut -c1-2)" "$work/dz/dbg/.build-id/$(echo "$alt" | cut -c1-2)"
cp "$work/dz/one.debug" "$work/dz/dbg/.build-id/$(echo "$one" | cut -c1-2)/$(echo "$one" | cut -c3-).debug"
cp "$work/dz/common.debug" "$work/dz/dbg/.build-id/$(echo "$alt" | cut -c1-2)/$(echo "$alt" | cut -c3-).debug"
strip --strip-debug "$work/dz/one"
record dz -- "$work/dz/one" >/dev/null
"$SU" archive --debug-dir "$work/dz/dbg" "$work/dz.trace" >/dev/null 2>"$work/dz.err"
rc=$?
check "dwz: exit 0 ($rc), the shared file ($alt) archived by its build-id beside the debug file$(head -n 1 "$work/dwz.err")" \
	sh -c "[ $rc = 0 ] && [ -n '$alt' ] && readelf -S '$work/dz/one.debug' 2>/dev/null | grep -q gnu_debugaltlink &&
		cmp -s '$work/dz/common.debug' '$work/dz.trace/debug/.build-id/$(echo "$alt" | cut -c1-2)/$(echo "$alt" | cut -c3-).debug'"

# A trace from elsewhere whose debug directory is a symbolic link: archive
# writes nothing through it.
record link -- "$work/bin.away/arch" >/dev/null
mkdir -p "$work/elsewhere"
ln -s "$work/elsewhere" "$work/link.trace/debug"
"$SU" archive --debug-dir "$work/dbg.away" "$work/link.trace" >/dev/null 2>"$work/link.err"
rc=$?
check "archive into a trace whose debug directory is a symbolic link: exit 1 ($rc), nothing written there, said" \
	sh -c "[ $rc = 1 ] && [ -z \"\$(ls -A '$work/elsewhere')\" ] && grep -q 'not a directory' '$work/link.err'"

# Not a stackcap trace: said, nothing written.
printf 'PERFILE2' >"$work/fake.data"
"$SU" archive "$work/fake.data" 2>"$work/pd.err"
rc=$?
check "archive of another format: exit 2 ($rc), what to do said" \
	sh -c "[ $rc = 2 ] && grep -q 'not a stackcap trace directory' '$work/pd.err'"

echo "1..$n"
