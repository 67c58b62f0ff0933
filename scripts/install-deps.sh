#!/bin/sh
# Install the Debian (bookworm) packages stackcap needs to build, test,
# benchmark and run the quick start: the one list below, one package a
# line with who needs it.  Skips what is present; as non-root, prints the
# apt-get command and exits 1.
#
#   install-deps.sh                  what the build and ./quickstart.sh need,
#                                    and every test but the [check] lines
#   install-deps.sh --with-browser   also the [check] lines: node, npm and
#                                    chromium for the whole suite (./check.sh)
#
# Whoever adds a command to a test, a benchmark or the quick start adds its
# package here; scripts/fresh-debian.sh './check.sh' proves the list on a
# bare Debian.  Essential packages (coreutils, sed, grep, gzip, util-linux's
# setpriv, ...) are on every Debian and not listed.
set -eu

list() {
	sed -e 's/#[[:space:]]*\(\[check\]\).*/\1/' -e 's/[[:space:]]*#.*//' -e '/^$/d' <<'LIST'
# ---- the build (./configure && make) ----
build-essential     # gcc, make, libc6-dev: every C target
g++                 # testdata/demo.cc (the quick start's demo), tests/unit/cxx-fixture.cc
binutils            # ld; nm, readelf, objcopy, strip, objdump, addr2line in tests (record.sh, unwind.sh, perf.sh, unit tests)
autoconf            # autoreconf -fi (check.sh, quickstart.sh)
automake            # autoreconf -fi
libtool             # autoreconf -fi; the shared libraries (libstackcap.so, the plugin)
pkg-config          # configure: finds libdw, libzstd, babeltrace2, lttng-ust, ...
file                # libtool's configure probes object files with file(1)
gawk                # the awk of the tests' and quickstart's awk scripts
libdw-dev           # unwind/, debuginfo/: elfutils' libdw and libdwfl
libelf-dev          # debuginfo/, capture/: ELF notes and build-ids
libdwarf-dev        # tests/unit/dwarf-oracle.c: an independent DWARF reader to check symbolize/ against
libzstd-dev         # trace/, capture/: --zstd streams; perf record -z
zlib1g-dev          # cli/export-pprof.c: gzipped profiles
libdeflate-dev      # debuginfo/inflate-cache.c: zlib-compressed debug sections, inflated 2.3x faster than zlib
libbabeltrace2-dev  # trace/source-babeltrace2.c, plugin/ (the babeltrace2 plugin)
liblttng-ust-dev    # capture/: liblttng-stackcap.so (stackcap record --lttng)
libdebuginfod-dev   # debuginfo/: debuginfod client (DEBUGINFOD_URLS)
libprotobuf-c-dev   # cli/export-pprof.c; tests/pprof-check.c decodes its output
protobuf-c-compiler # protoc-c: the pprof profile.proto bindings
check               # tests/unit/*: the Check unit-test framework
clang               # --enable-fuzzing (check.sh): libFuzzer targets in tests/fuzz
libclang-rt-14-dev  # libFuzzer and the sanitizer runtimes for clang
lld                 # tests/unwind.sh: a binary linked by lld (its code segment at another vaddr - offset than the segment before)
llvm                # llvm-symbolizer: symbolized ASan/UBSan/libFuzzer reports
# ---- tests, benchmarks, the quick start ----
babeltrace2         # tests/*.sh (tap-lib.sh): reads every trace; the plugin's tests
lttng-tools         # tests/lttng.sh, tests/secret.sh, bench/lttng.sh: lttng, lttng-sessiond, lttng-relayd
linux-perf          # tests/perf.sh, perf-compare.sh, record.sh, secret.sh, bad-input.sh, bt2-plugin.sh; bench/
libc6-dbg           # libc's separate debug info: names libc's local symbols (tests/unwind.sh: the signal trampoline __restore_rt; tests/names.sh: a function GCC inlined into itself)
gdb                 # tests/testdata.sh: gdb's backtraces are the testdata programs' reference chains
strace              # tests/parallel.sh: which stream files each part of a read in parts opens
dwz                 # tests/unit/test-symbolize.c: DWARF shared through .gnu_debugaltlink
golang-go           # tests/export.sh, tests/real-clients.sh: Google's pprof tool reads our pprof files; tests/names.sh, tests/kernel-record.sh: Go programs (static and cgo); bench/slowdown.sh: a Go workload
golang-github-google-pprof-dev  # tests/export.sh: pprof's source, for that build
zstd                # tests (record.sh, unwind.sh, bt2-plugin.sh, perf.sh, secret.sh, bad-input.sh): zstd -d of --zstd streams
xz-utils            # tests/perf.sh, tests/kernel-record.sh, bench/: xz as a program not written here
libxml2-utils       # tests/flamegraph.sh, tests/perf.sh: xmllint validates the SVG flamegraphs
bsdutils            # script(1): tests/flamegraph.sh's progress on a terminal, tests/perf*.sh
procps              # ps (tap-lib.sh: daemons the tests stop), pgrep (tests/browser.sh)
python3             # tests/perf.sh, bench/perf-vs.sh, bench/slowdown.sh: a pure-Python program under perf; tests/python.sh, tests/secret.sh: --python
time                # /usr/bin/time: bench/perf-vs.sh, bench/unwind.sh (peak memory)
python3.11-dbg      # tests/unit/test-cpython-layout: CPython 3.11's DWARF checks capture/cpython-layout.h (the offsets --python reads); apt upgrades it with python3.11
debootstrap         # tests/python-new.sh: a trixie chroot (cached) with python3.13 for --python on CPython 3.13
libiberty-dev       # symbolize/: Rust names, legacy and v0 (libiberty's rust_demangle)
rustc               # tests/names.sh: Rust programs built by Debian's compiler (names, inline frames)
debuginfod          # tests/real-clients.sh: a real debuginfod server on loopback serves a stripped program's debug file
systemtap-sdt-dev   # <sys/sdt.h>: the SDT markers of testdata/tdata-events (tests/events.sh: stackcap record -e sdt:...)
busybox-static      # tests/kernel-record.sh: a static binary the kernel copy records and LD_PRELOAD cannot
sqlite3             # bench/stack-window.sh, bench/slowdown.sh: deep stacks (the stack window's size), bytes per sample
bzip2               # bench/stack-window.sh: deep stacks (the stack window's size)
ca-certificates     # [check] npm's registry over https (tests/export.sh, tests/browser.sh)
nodejs              # [check] tests/export.sh (speedscope-check.js), tests/browser.sh: node; tests/node.sh: node --perf-basic-prof recorded (V8 maps its builtins a second time)
npm                 # [check] npm installs ajv, speedscope and playwright-core for those tests
chromium            # [check] tests/browser.sh: the flamegraph in a headless browser
LIST
}

case "${1:-}" in
--with-browser) with_check=1 ;;
"") with_check= ;;
*) echo "usage: $0 [--with-browser]" >&2; exit 2 ;;
esac

PKGS=""
for p in $(list | while read -r pkg rest; do
		case "$rest" in
		*'[check]'*) [ -n "$with_check" ] && echo "$pkg" ;;
		*) echo "$pkg" ;;
		esac
	done); do
	# A node and npm already on PATH (e.g. nodesource's, whose nodejs
	# conflicts with Debian's npm) are used as they are.
	case "$p" in
	nodejs) command -v node >/dev/null 2>&1 && continue ;;
	npm) command -v npm >/dev/null 2>&1 && continue ;;
	esac
	PKGS="$PKGS $p"
done

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
