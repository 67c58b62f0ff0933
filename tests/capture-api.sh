#!/bin/sh
# Runs tests/capture-api (libstackcap linked, explicit captures) and checks
# its trace with babeltrace2.
set -u
: "${top_builddir:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$("$top_builddir/tests/capture-api" "$work/api.trace")
echo "$out" | grep -v '^1\.\.'
n=$(echo "$out" | grep -c '^\(not \)\?ok ')
if babeltrace2 "$work/api.trace" >"$work/bt.txt" 2>"$work/bt.err"; then
	echo "ok $((n + 1)) - babeltrace2 reads the trace"
else
	echo "not ok $((n + 1)) - babeltrace2 reads the trace: $(head -c 300 "$work/bt.err")"
fi
s=$(grep -c ' sample: ' "$work/bt.txt")
if [ "$s" = 110 ]; then
	echo "ok $((n + 2)) - 110 sample events in the trace"
else
	echo "not ok $((n + 2)) - 110 sample events in the trace (found $s)"
fi
echo "1..$((n + 2))"
