#!/bin/sh
# A setuid program linked with libstackcap: the caller's environment must
# not choose what root writes (STACKCAP_OUTPUT and the other STACKCAP_*
# variables are read with secure_getenv), and the library records nothing
# in a secure-execution process (AT_SECURE): stackcap_init refuses with
# EPERM.  tests/setuid-prog.c is built here, installed setuid-root in a
# private directory and run as nobody (setpriv).  Needs root, as CI runs.
. "${top_srcdir:?}/tests/tap-lib.sh"

if [ "$(id -u)" != 0 ]; then
	echo "1..1"
	echo "not ok 1 - needs root to install a setuid-root program (CI runs as root)"
	exit 0
fi
need "util-linux gcc" setpriv "${CC:-cc}"

d="$work/priv"
mkdir -p "$d/lib" "$d/victim" "$d/mine"
chmod 755 "$work" "$d" "$d/lib" "$d/victim"
chown 65534:65534 "$d/mine"
cp -P "$B"/capture/.libs/libstackcap.so* "$d/lib/"
# --no-as-needed: the program calls nothing of the library without "init".
if ! "${CC:-cc}" -o "$d/prog" "$top_srcdir/tests/setuid-prog.c" -I"$top_srcdir/capture" \
	-Wl,--no-as-needed -L"$d/lib" -lstackcap -Wl,-rpath,"$d/lib" 2>"$work/cc.err"; then
	echo "1..1"
	echo "not ok 1 - cannot build tests/setuid-prog.c: $(head -n 1 "$work/cc.err")"
	exit 0
fi
cp "$d/prog" "$d/prog-plain"
chmod 755 "$d/prog-plain"
chmod 4755 "$d/prog"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# Control: the same program, not setuid, records where nobody may write.
as_nobody env STACKCAP_OUTPUT="$d/mine/t" "$d/prog-plain" >"$work/plain.out" 2>&1
check "control: not setuid, STACKCAP_OUTPUT records ($(tr '\n' ' ' <"$work/plain.out"))" \
	sh -c "grep -q 'euid 65534' '$work/plain.out' && [ -f '$d/mine/t/metadata' ]"

# The setuid copy runs as root (the file system honours setuid here).
as_nobody env STACKCAP_OUTPUT="$d/victim/t" STACKCAP_VERBOSE=1 "$d/prog" >"$work/suid.out" 2>&1
rc=$?
check "setuid-root program runs as euid 0 for nobody, exit 0 ($rc: $(tr '\n' ' ' <"$work/suid.out"))" \
	sh -c "[ $rc = 0 ] && grep -q 'euid 0' '$work/suid.out'"
check "setuid: STACKCAP_OUTPUT from the caller's environment writes nothing as root" \
	sh -c "[ ! -e '$d/victim/t' ] && [ -z \"\$(ls -A '$d/victim')\" ]"
# The program's own stackcap_init is refused too: the process is secure.
as_nobody "$d/prog" init "$d/victim/own" >"$work/init.out" 2>&1
check "setuid: stackcap_init refuses (EPERM) ($(tr '\n' ' ' <"$work/init.out"))" \
	sh -c "grep -q 'stackcap_init: Operation not permitted' '$work/init.out' && [ ! -e '$d/victim/own' ]"
# Not setuid, the program's own stackcap_init records.
as_nobody "$d/prog-plain" init "$d/mine/own" >"$work/init-plain.out" 2>&1
check "control: not setuid, stackcap_init records ($(tr '\n' ' ' <"$work/init-plain.out"))" \
	sh -c "grep -q 'stackcap_init: 0' '$work/init-plain.out' && [ -f '$d/mine/own/metadata' ]"

echo "1..$n"
