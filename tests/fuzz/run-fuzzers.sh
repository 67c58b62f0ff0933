#!/bin/sh
# Runs each libFuzzer target for FUZZ_SECONDS (default 20) from a copy of its
# seed corpus and reports TAP.  Built only with --enable-fuzzing.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
secs=${FUZZ_SECONDS:-20}
targets="decode roundtrip native-source perf-data"
n=0
echo "1..4"
for t in $targets; do
	n=$((n + 1))
	bin="$top_builddir/tests/fuzz/fuzz-$t"
	if [ ! -x "$bin" ]; then
		echo "not ok $n - fuzz-$t: not built (configure --enable-fuzzing; needs clang)"
		continue
	fi
	work=$(mktemp -d)
	cp "$top_srcdir/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null
	log="$top_builddir/tests/fuzz/fuzz-$t.log"
	if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$top_builddir/tests/fuzz/crash-$t-" "$work" >"$log" 2>&1; then
		runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -n 1)
		echo "ok $n - fuzz-$t: ${runs:-done} in ${secs}s, no finding"
	else
		echo "not ok $n - fuzz-$t: finding, see $log"
		tail -n 30 "$log" | sed 's/^/# /'
	fi
	rm -rf "$work"
done
