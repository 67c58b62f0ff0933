#!/bin/sh
# Install the Debian packages stackcap needs to build, test and run.
# Skips what is present; as non-root, prints the apt-get command and exits 1.
set -eu

PKGS="build-essential g++ binutils autoconf automake libtool pkg-config gawk
libdw-dev libelf-dev libdwarf-dev libzstd-dev zlib1g-dev
libbabeltrace2-dev babeltrace2 liblttng-ust-dev lttng-tools
libdebuginfod-dev libprotobuf-c-dev protobuf-c-compiler golang-github-google-pprof-dev golang-go check
clang libclang-rt-14-dev llvm zstd linux-perf file procps gdb time dwz xz-utils
libxml2-utils bsdutils python3 python3.11-dbg"
# python3 (Debian's CPython 3.11): tests/python.sh, tests/secret.sh record
# Python programs with --python.  python3.11-dbg: its DWARF, against which
# tests/unit/test-cpython-layout checks capture/cpython-layout.h (the
# offsets the CPython runtime unwinder reads); it must match python3.11's
# version (apt-get upgrades both together).
# symbolize/: Rust names, legacy and v0 (libiberty's rust_demangle)
PKGS="$PKGS libiberty-dev"
# tests/names.sh: Rust programs built by Debian's compiler (names, inlines)
PKGS="$PKGS rustc"
# tests/names.sh: glibc's DWARF (a function GCC inlined into itself)
PKGS="$PKGS libc6-dbg"
# tests/debuginfod.sh: a real debuginfod server on loopback
PKGS="$PKGS debuginfod"
# tests/kernel-record.sh: busybox-static (a static binary the kernel copy
# records and LD_PRELOAD cannot; golang-go above builds the Go ones);
# bench/stack-window.sh: sqlite3 and bzip2 (deep stacks, the window's size).
PKGS="$PKGS busybox-static sqlite3 bzip2"

# Extra package sets, by name.
case "${1:-}" in
  --with-browser)
    # tests/browser.sh: Debian's chromium, driven by playwright-core (npm)
    # on node.  A node and npm already on PATH (e.g. nodesource's, whose
    # nodejs conflicts with Debian's npm) are used as they are.
    PKGS="$PKGS chromium"
    command -v node >/dev/null 2>&1 || PKGS="$PKGS nodejs"
    command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
    ;;
esac

missing=""
for p in $PKGS; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case "$st" in
    *"install ok installed"*) ;;
    *) missing="$missing $p" ;;
  esac
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "stackcap: these Debian packages are missing; install them as root with:" >&2
  echo "  apt-get update && apt-get install -y --no-install-recommends$missing" >&2
  exit 1
fi

echo "stackcap: installing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
