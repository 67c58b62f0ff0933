# Sourced by the integration scripts (record.sh, unwind.sh...): the build
# paths, a private work directory removed on exit, TAP helpers, a failing
# TAP line when babeltrace2 is missing, and the helpers more than one
# script uses (one definition each: a script defines only its own).
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
B=$top_builddir
STACKCAP="$B/cli/stackcap"
# A test about recording runs under both samplers of stackcap record: the
# kernel copy (the default) and the in-process hook (--in-process).
# sampler_opts SAMPLER: stackcap record's options for it.
SAMPLERS="kernel in-process"
sampler_opts() { [ "$1" = in-process ] && echo --in-process; return 0; }
TD="$B/testdata"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# perf's build-id cache (~/.debug) per test script, not shared: perf 6.1
# record failed once with "assertion failed at util/build-id.c:1010" while
# other tests' perf runs wrote the same cache (a bare Debian's check.sh,
# make -j2); the user's stays untouched, and stackunwind finds in it only
# what this script's perf runs put there.  perf reads the directory from
# its configuration (PERF_CONFIG: that file alone); PERF_BUILDID_DIR is
# what it tells the commands it runs, stackunwind among its readers.
export PERF_BUILDID_DIR="$work/perf-buildid"
printf '[buildid]\n\tdir = %s\n' "$PERF_BUILDID_DIR" >"$work/perfconfig"
export PERF_CONFIG="$work/perfconfig"
# stackunwind -j N starts its workers after 256 samples (2048 with
# --no-cache, cli/stackunwind.c):
# the tests' traces are shorter, and their -j runs must use the workers.
# tests/parallel.sh also runs the default.
export STACKCAP_JOBS_AFTER=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else not_ok "$desc"; fi; }
# not_ok_show DESCRIPTION [FILE...]: a failure, with the first lines of
# each FILE shown as TAP diagnostics.
not_ok_show() {
	not_ok "$1"
	shift
	for f in "$@"; do
		[ -f "$f" ] && head -n 40 "$f" | sed 's/^/#   /'
	done
	return 0
}

# A script that does not need babeltrace2 sets TAP_NO_BABELTRACE2=1 first.
if [ "${TAP_NO_BABELTRACE2:-}" != 1 ] && ! command -v babeltrace2 >/dev/null; then
	echo "1..1"
	echo "not ok 1 - babeltrace2 missing: apt-get install babeltrace2 (scripts/install-deps.sh)"
	exit 0
fi

# alive PID: running (a zombie waiting for init counts as gone).
alive() { st=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }
# stop_process PID: SIGTERM, up to 10 s to go, then SIGKILL (the daemons
# the tests start: lttng-sessiond, lttng-relayd).
stop_process() {
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null
	i=0
	while alive "$1" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	kill -9 "$1" 2>/dev/null
	return 0
}

# wait_until SECONDS CMD...: run CMD every 0.1 s until it succeeds (0) or
# SECONDS have passed (1).  For a test that waits for an event (a daemon
# listening, a reader connected): the bound only catches a hang, however
# slow a loaded machine is.
wait_until() {
	wu_end=$(( $1 * 10 ))
	shift
	wu_i=0
	until "$@"; do
		[ $wu_i -ge $wu_end ] && return 1
		sleep 0.1
		wu_i=$((wu_i + 1))
	done
}
# tcp_port PORT STATE: a TCP socket on local port PORT in STATE (hex, as in
# /proc/net/tcp: 0A listening, 01 established) exists.
tcp_port() {
	awk -v p="$(printf '%04X' "$1")" -v s="$2" '
		FNR > 1 { split($2, a, ":"); if (a[2] == p && $4 == s) found = 1 }
		END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# cpu_samples: the CPU samples of the `stackunwind stats` output on
# standard input: every sample but the off-CPU stacks.
cpu_samples() { awk '$1 == "samples:" { n = $2 } $1 == "off-CPU:" { o = $2 } END { print n - o }'; }

# need "PACKAGES" TOOL...: a failing plan naming what to install, and exit,
# when a tool is missing.
need() {
	pk=$1
	shift
	for t in "$@"; do
		command -v "$t" >/dev/null && continue
		echo "1..1"
		echo "not ok 1 - $t missing: apt-get install $pk (scripts/install-deps.sh)"
		exit 0
	done
}
# need_perf_sampling: perf record must be able to sample here.
need_perf_sampling() {
	perf record -q -e cpu-clock -o "$work/probe.data" true >"$work/probe.err" 2>&1 && return 0
	echo "1..1"
	echo "not ok 1 - perf record cannot sample here (kernel.perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)): $(head -n 1 "$work/probe.err")"
	exit 0
}

# build_id FILE: FILE's GNU build-id in hex (readelf -n), empty when none.
build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'; }

# sigtramp_sed: a sed script naming libc's signal return trampoline
# __restore_rt where it shows without a name, as module+offset: in
# `stackunwind stacks` and folded text (libc.so.6+0x3c050) and in the
# babeltrace2 filter's callstacks (function = "", module = ".../libc.so.6",
# offset = 0x3C050).  The offsets are those inside an FDE of libc's
# .eh_frame whose CIE has augmentation "S" (a signal frame): the trampoline
# known by its CFI, as the unwinder knows it.  The name itself comes only
# from libc's separate debug info (libc6-dbg); a test that checks the
# unwinder went through the signal frame need not check the name.
sigtramp_sed() {
	libc=$(awk '$6 ~ /\/libc\.so\.6$/ { print $6; exit }' /proc/self/maps)
	[ -n "$libc" ] || return 0
	readelf --debug-dump=frames "$libc" 2>/dev/null | awk '
		$NF == "CIE" { cie = $1 }
		$1 == "Augmentation:" && $2 ~ /S/ { sig[cie] = 1 }
		$4 == "FDE" { c = $5; sub(/^cie=/, "", c); r = $6; sub(/^pc=/, "", r); sub(/\.\./, " ", r)
			if (c in sig) print r }' |
	while read -r lo hi; do
		o=$((0x$lo))
		while [ "$o" -lt $((0x$hi)) ]; do
			printf 's/\\([ ;]\\)libc\\.so\\.6+0x%x\\([^0-9a-f]\\|$\\)/\\1__restore_rt\\2/g\n' "$o"
			printf 's/function = "", \\(module = "[^"]*\\/libc\\.so\\.6", offset = 0x%X,\\)/function = "__restore_rt", \\1/g\n' "$o"
			o=$((o + 1))
		done
	done
}

# record NAME [OPTIONS] -- CMD...: stackcap record $RECORD_OPTS OPTIONS into
# $work/NAME.trace; its stderr in NAME.rerr, its exit status in NAME.rc
# (and returned).
record() {
	rec_name=$1
	shift
	"$STACKCAP" record ${RECORD_OPTS:-} -o "$work/$rec_name.trace" "$@" 2>"$work/$rec_name.rerr"
	rec_rc=$?
	echo $rec_rc >"$work/$rec_name.rc"
	return $rec_rc
}
# run NAME CMD...: CMD with stdin from /dev/null, its stdout, stderr and
# exit status in ${run_dir:-$work}/NAME.out, .err, .rc.
run() {
	run_name=$1
	shift
	"$@" >"${run_dir:-$work}/$run_name.out" 2>"${run_dir:-$work}/$run_name.err" </dev/null
	echo $? >"${run_dir:-$work}/$run_name.rc"
}
# rc NAME: the exit status that record or run (or a script's own helper)
# left in $work/NAME.rc.
rc() { cat "${run_dir:-$work}/$1.rc"; }

# chain_match FILE FUNC...: of the samples in FILE (`stackunwind stacks`
# text) whose innermost function is the first FUNC, how many have exactly
# FUNC... as their innermost frames: "GOOD TOTAL".
chain_match() {
	f=$1; shift
	awk -v chain="$*" '
	BEGIN { nc = split(chain, C, " ") }
	function done() {
		if (k > 0 && F[1] == C[1]) {
			tot++; good1 = 1
			for (i = 1; i <= nc; i++) if (F[i] != C[i]) good1 = 0
			good += good1
		}
		k = 0
	}
	/^\t/ { fn = $2; sub(/\+0x[0-9a-f]+$/, "", fn); F[++k] = fn; next }
	/^$/ { done(); next }
	{ k = 0 }
	END { done(); printf "%d %d\n", good, tot }' "$f"
}

# stop_daemon: stop the daemon whose pid is in $daemon_pid (the scripts'
# own lttng-sessiond), and forget it.
stop_daemon() { stop_process "${daemon_pid:-}"; daemon_pid=; }

# ---- a real browser: Debian's chromium, driven by playwright-core from npm --
# (tests/browser.sh, tests/real-clients.sh; their node drivers share
# tests/browser-lib.js.)
CHROMIUM=/usr/bin/chromium
PLAYWRIGHT=playwright-core@1.56.0   # works on node >= 18 (Debian's) and 20
# browser_ready: scripts/install-deps.sh --with-browser (as root it installs
# Debian's chromium, nodejs and npm when missing), then chromium, node and
# npm are there; TAP lines; 1 when one is missing (said by a failing line).
browser_ready() {
	if "$top_srcdir/scripts/install-deps.sh" --with-browser >"$work/deps.log" 2>&1; then
		ok "scripts/install-deps.sh --with-browser"
	else
		sed 's/^/# /' "$work/deps.log"
		not_ok "scripts/install-deps.sh --with-browser (chromium, node, npm): see the message above"
	fi
	br_missing=
	[ -x "$CHROMIUM" ] || br_missing="$br_missing chromium"
	command -v node >/dev/null 2>&1 || br_missing="$br_missing node"
	command -v npm >/dev/null 2>&1 || br_missing="$br_missing npm"
	if [ -n "$br_missing" ]; then
		not_ok "missing:$br_missing: install with apt-get install chromium nodejs npm (scripts/install-deps.sh --with-browser)"
		return 1
	fi
	ok "chromium, node and npm are installed"
}
# npm_into DIR NAME@VERSION...: these npm packages at these versions under
# DIR/node_modules, installed by npm together unless all are there (npm
# removes what a later install into DIR does not name: one DIR per set);
# a TAP line; 1 when they could not be installed.
npm_into() {
	ni_dir=$1
	shift
	ni_ok=1
	for ni_p in "$@"; do
		[ "$(npm_version "$ni_dir" "${ni_p%@*}")" = "${ni_p##*@}" ] || ni_ok=
	done
	if [ -z "$ni_ok" ]; then
		mkdir -p "$ni_dir"
		npm install --prefix "$ni_dir" --no-audit --no-fund --no-save "$@" >"$work/npm.log" 2>&1
		sed 's/^/# /' "$work/npm.log" | tail -n 5
	fi
	for ni_p in "$@"; do
		if [ "$(npm_version "$ni_dir" "${ni_p%@*}")" != "${ni_p##*@}" ]; then
			not_ok "npm install $* into $ni_dir failed (is the npm registry reachable?)"
			return 1
		fi
	done
	ok "npm packages $* in $ni_dir"
}
# npm_version DIR NAME: the version of DIR/node_modules/NAME, or nothing.
npm_version() {
	sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$1/node_modules/$2/package.json" 2>/dev/null | head -n 1
}
# node_checks PREFIX FILE: a node driver's "ok DESC" / "not ok DESC" lines
# in FILE as TAP lines (DESC after PREFIX), other lines as diagnostics;
# sets node_seen to the number of checks.
node_checks() {
	node_seen=0
	while IFS= read -r nc_line; do
		case $nc_line in
		"ok "*) ok "$1${nc_line#ok }"; node_seen=$((node_seen + 1)) ;;
		"not ok "*) not_ok "$1${nc_line#not ok }"; node_seen=$((node_seen + 1)) ;;
		*) echo "# $nc_line" ;;
		esac
	done <"$2"
}
# browser_gone PROFILE_DIR: a TAP line: no chromium left on the private
# profile PROFILE_DIR (any left is ours, stopped by its pid).
browser_gone() {
	bg_left=$(pgrep -f -- "--user-data-dir=$1" 2>/dev/null)
	if [ -n "$bg_left" ]; then
		# shellcheck disable=SC2086
		kill $bg_left 2>/dev/null
		not_ok "chromium stopped at the end (had to kill $bg_left)"
	else
		ok "chromium stopped at the end"
	fi
}

# kept_check_redo FILE: the checksum of a file kept between runs (the
# symbolizer's answers, the unwinder's rules) redone after a test edited
# it: common/hash.h's su_fnv1a_words of what follows the 40-byte head,
# into the head's last 8 bytes.
kept_check_redo() {
	python3 - "$1" <<'PY'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
h, M = 0xcbf29ce484222325, (1 << 64) - 1
body = bytes(b[40:])
n8 = len(body) // 8 * 8
for (w,) in struct.iter_unpack('<Q', body[:n8]):
    h = ((h ^ w) * 0x100000001b3) & M
    h ^= h >> 32
for c in body[n8:]:
    h = ((h ^ c) * 0x100000001b3) & M
b[32:40] = struct.pack('<Q', h)
open(p, 'r+b').write(b)
PY
}

# kept_spoils FILE: the five ways a file kept between runs is spoiled,
# none of which it may be used after: the test's own `spoiled WHAT CMD`
# runs shell command CMD, then checks and puts the file back.
kept_spoils() {
	spoiled "damaged (a byte changed)" "printf 'Z' | dd of='$1' bs=1 seek=60 conv=notrunc 2>/dev/null"
	spoiled "cut short" "truncate -s 100 '$1'"
	spoiled "open to others (0644)" "chmod 644 '$1'"
	spoiled "owned by another user" "chown nobody '$1'"
	spoiled "a symlink" "mv '$1' '$1.real'; ln -s '$1.real' '$1'"
}
