#!/bin/sh
# The test command: install what is missing (Debian packages), build with
# -Werror, run every test.  The last line is "N passed, N failed", counted
# over every test case.  Build directory: ./build (override: BUILD_DIR).
set -u
top=$(cd "$(dirname "$0")" && pwd)
cd "$top" || exit 1
build=${BUILD_DIR:-$top/build}
log=$build/check-build.log

summary() {
	echo "$1 passed, $2 failed"
}

# --with-browser: tests/browser.sh drives Debian's chromium.
if ! ./scripts/install-deps.sh --with-browser; then
	summary 0 1
	exit 1
fi

mkdir -p "$build"
echo "== configure and build (log: $log)"
if ! { autoreconf -fi && cd "$build" && "$top/configure" --enable-werror --enable-fuzzing &&
       make -j2; } >"$log" 2>&1; then
	tail -n 40 "$log"
	echo "build failed: see $log"
	summary 0 1
	exit 1
fi

cd "$build" || exit 1
echo "== make check"
make -j2 check FUZZ_SECONDS="${FUZZ_SECONDS:-20}" 2>&1 | grep -Ev '^(PASS|SKIP|XFAIL): ' | grep -v '^make'
status=0
[ -f test-suite.log ] || status=1

# Each TAP line is one test case; automake totals them in test-suite.log.
count() {
	sed -n "s/^# $1: *\([0-9][0-9]*\).*/\1/p" test-suite.log 2>/dev/null | head -n 1
}
pass=$(count PASS); fail=$(count FAIL); err=$(count ERROR); xpass=$(count XPASS); skip=$(count SKIP)
pass=${pass:-0}
# Nothing may skip itself: a skip counts as a failure.
failed=$(( ${fail:-0} + ${err:-0} + ${xpass:-0} + ${skip:-0} ))
if [ "$status" != 0 ] || [ "$pass" = 0 ]; then
	failed=$((failed > 0 ? failed : 1))
fi
if [ "$failed" != 0 ]; then
	grep -E '^(FAIL|ERROR|XPASS|SKIP): ' test-suite.log | head -n 50
fi
summary "$pass" "$failed"
[ "$failed" = 0 ]
