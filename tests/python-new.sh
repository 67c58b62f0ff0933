#!/bin/sh
# Integration: Python frames (stackcap record --python, issue 18) with the
# CPython versions after bookworm's 3.11: Debian trixie's python3.13, in a
# trixie chroot.  The same checks as tests/python.sh's for 3.11
# (tests/python/lib.sh): each known call chain of tests/python/chains.py,
# Python and native frames in their order, in >= 95% of its hot samples;
# file:line in stacks; output and status unchanged; exec'ed functions
# never misnamed; the babeltrace2 plugin's folded text is stackunwind's;
# the --python hint for python3.13.  Also checks capture/cpython-layout.h's
# 3.13 row against the DWARF of trixie's python3.13-dbg
# (tests/unit/test-cpython-layout).
#
# The chroot: debootstrap --variant=minbase trixie, with python3.13, its
# and libc's debug symbols (python3.13-dbg, libc6-dbg) and the libraries
# of our stackcap CLI; built once (a few minutes) and kept in $STACKCAP_PY_ROOT (default
# /var/cache/stackcap-py/trixie; delete it to refresh).  This tree's
# stackcap runs in it (bookworm's build: trixie's glibc is newer), the
# build and work directories bound at their own paths in a private mount
# namespace (nothing is left mounted after); the trace is read out here,
# with --symfs ROOT.  Needs root, debootstrap, unshare and the network to
# Debian's archive the first time.  (No Debian suite has python3.12: its
# row is not written.)
set -u
me="python-new.sh"
ROOT=${STACKCAP_PY_ROOT:-/var/cache/stackcap-py/trixie}
PKGS="python3.13 python3.13-dbg libc6-dbg libdw1t64 libelf1t64 libbabeltrace2-0 libzstd1 libdeflate0"

fail() {
	echo "1..1"
	echo "not ok 1 - $*"
	exit 0
}

if [ -z "${STACKCAP_PYNEW_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot, mount): run the suite as root"
	for t in debootstrap unshare chroot mount flock; do
		command -v $t >/dev/null 2>&1 ||
			fail "$t missing: apt-get install debootstrap util-linux coreutils mount (scripts/install-deps.sh)"
	done
	# The chroot, built once (one run at a time: a lock beside it):
	# debootstrap into ROOT.new, then renamed.
	mkdir -p "$(dirname "$ROOT")"
	exec 9>"$ROOT.lock"
	flock 9 || fail "cannot lock $ROOT.lock"
	if [ "$(cat "$ROOT/.stackcap-py" 2>/dev/null)" != "$PKGS" ]; then
		mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null)
		[ -n "$mirror" ] || mirror=$(awk '/^deb / { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
		[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
		log=$(dirname "$ROOT")/build.log
		if ! [ -x "$ROOT/usr/bin/apt-get" ]; then
			rm -rf "$ROOT.new"
			debootstrap --variant=minbase trixie "$ROOT.new" "$mirror" >"$log" 2>&1 && mv "$ROOT.new" "$ROOT" ||
				fail "debootstrap trixie into $ROOT.new failed (network to $mirror? see $log)"
		fi
		cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null
		{ chroot "$ROOT" apt-get update && chroot "$ROOT" apt-get install -y --no-install-recommends $PKGS; } \
			>>"$log" 2>&1 || fail "apt-get install $PKGS in $ROOT failed (see $log)"
		echo "$PKGS" >"$ROOT/.stackcap-py"
	fi
	exec 9>&-
	STACKCAP_PYNEW_NS=1 exec unshare --mount --propagation private -- sh "$0" "$@"
fi

. "${top_srcdir:?}/tests/tap-lib.sh"
# Our trees and the work directory at their own paths in the chroot.
for d in "$top_srcdir" "$top_builddir" "$work"; do
	mkdir -p "$ROOT$d" && mount --bind "$d" "$ROOT$d" || fail "cannot bind $d into $ROOT"
done
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc" || fail "cannot mount /proc in $ROOT"
# (The work directory's mount point goes with it.)
trap 'umount "$ROOT$work" && rmdir "$ROOT$work"; rm -rf "$work"' EXIT

PY=/usr/bin/python3.13
IN="chroot $ROOT"
SYMFS="--symfs $ROOT"
. "$top_srcdir/tests/python/lib.sh"

$IN $PY -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' ||
	fail "no python3.13 in $ROOT: delete $ROOT and run again"
$IN "$STACKCAP" --help >/dev/null 2>&1 ||
	fail "this tree's stackcap does not run in $ROOT ($IN $STACKCAP --help): apt-get install $PKGS there"

# ---- 3.13's row of capture/cpython-layout.h against its DWARF ------------------
CPY_LAYOUT_ROOT=$ROOT CPY_LAYOUT_VERSION=3.13 "$B/tests/unit/test-cpython-layout" >"$work/layout.out" 2>&1
what="test-cpython-layout: the 3.13 row matches the DWARF of $ROOT's python3.13 ($(grep -c '^ok' "$work/layout.out") test cases)"
if grep -q '^ok' "$work/layout.out" && ! grep -q '^not ok' "$work/layout.out"; then
	ok "$what"
else
	not_ok_show "$what" "$work/layout.out"
fi

# ---- the checks every version passes (tests/python/lib.sh) ----------------------
python_main
python_modes
# The babeltrace2 plugin (src.ctf.fs, filter.stackcap.unwind with symfs,
# sink.stackcap.folded): the same folded text as stackunwind.
for m in main sort; do
	babeltrace2 --plugin-path="$B/plugin/.libs" "$work/$m.trace" -c filter.stackcap.unwind \
		-p no-debuginfod=yes -p "symfs=\"$ROOT\"" -c sink.stackcap.folded >"$work/$m-plugin.folded" 2>/dev/null
	check "$m: src.ctf.fs + filter.stackcap.unwind + sink.stackcap.folded == stackunwind folded ($(wc -l <"$work/$m.folded") lines)" \
		cmp -s "$work/$m.folded" "$work/$m-plugin.folded"
done
$IN "$STACKCAP" record -o "$work/nopy.trace" -- $PY -c 'pass' >/dev/null 2>"$work/nopy.err"
check "record without --python on python3.13 suggests --python" grep -q 'add --python' "$work/nopy.err"
echo "1..$n"
