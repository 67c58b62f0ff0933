#!/bin/sh
# The whole main job on a fresh Debian machine: install the packages, build,
# record a demo program with stackcap, unwind it offline with stackunwind,
# write an interactive flamegraph (flame.svg) and print the heaviest stacks.
# Build directory: ./build (override: BUILD_DIR); demo CPU seconds:
# DEMO_SECONDS (default 2).
set -eu
top=$(cd "$(dirname "$0")" && pwd)
cd "$top"
./scripts/install-deps.sh
build=${BUILD_DIR:-$top/build}
mkdir -p "$build"
echo "== building (log: $build/quickstart-build.log)"
{ autoreconf -fi && cd "$build" && "$top/configure" && make -j2; } >"$build/quickstart-build.log" 2>&1 ||
	{ tail -n 30 "$build/quickstart-build.log"; echo "build failed"; exit 1; }

trace=$build/demo.trace
svg=$build/flame.svg
demo=$build/testdata/tdata-demo
echo "== recording the demo (testdata/demo.cc, ${DEMO_SECONDS:-2} s of CPU) with stackcap"
rm -rf "$trace"
"$build/cli/stackcap" record -o "$trace" -- "$demo" "${DEMO_SECONDS:-2}"

echo "== unwinding and symbolizing offline with stackunwind"
"$build/cli/stackunwind" flamegraph --title "tdata-demo: stackcap quick start" -o "$svg" "$trace"
"$build/cli/stackunwind" folded "$trace" 2>/dev/null >"$build/demo.folded"

echo "== the 5 heaviest stacks (innermost frames; full ones in $build/demo.folded)"
# "count stack" by count, the last 4 frames of each, with its share.
awk '{ n = $NF; total += n; s = substr($0, 1, length($0) - length(n) - 1); line[NR] = n "\t" s }
     END { for (i = 1; i <= NR; i++) print total "\t" line[i] }' "$build/demo.folded" |
	sort -t "$(printf '\t')" -k 2,2 -n -r | head -n 5 |
	awk -F '\t' '{ k = split($3, f, ";"); s = ""
		for (i = (k > 4 ? k - 3 : 1); i <= k; i++) s = s (s == "" ? "" : " <- ") f[i]
		# innermost first reads like a backtrace
		m = split(s, g, " <- "); r = ""
		for (i = m; i >= 1; i--) r = r (r == "" ? "" : " <- ") g[i]
		printf "  %5.1f%%  %s%s\n", 100 * $2 / $1, r, (k > 4 ? " <- ..." : "") }'

echo "== flamegraph: $svg"
echo "   open it in a browser (no network needed): hover for details, click to zoom, Ctrl-F to search"
