# Sourced by the integration scripts (record.sh, unwind.sh): the build
# paths, a private work directory removed on exit, TAP helpers, and a
# failing TAP line when babeltrace2 is missing.
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
B=$top_builddir
STACKCAP="$B/cli/stackcap"
TD="$B/testdata"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else not_ok "$desc"; fi; }

if ! command -v babeltrace2 >/dev/null; then
	echo "1..1"
	echo "not ok 1 - babeltrace2 missing: apt-get install babeltrace2 (scripts/install-deps.sh)"
	exit 0
fi
