#!/bin/sh
# The flamegraph in a real browser: Debian's chromium, headless, on a fresh
# profile, driven by playwright-core (npm, installed into the build tree)
# through tests/browser-flame.js: the picture is not blank, hover details,
# click zoom checked through the DOM, search, reset.  Installs what it
# needs (scripts/install-deps.sh --with-browser); a missing chromium or
# node fails, it never skips.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
cache="$B/tests/browser-cache"

finish() { echo "1..$n"; exit 0; }

browser_ready || finish
# playwright-core only (never `playwright install`: the browser is Debian's).
npm_into "$cache" "$PLAYWRIGHT" || finish

"$STACKCAP" record -o "$work/demo.trace" -- "$TD/tdata-demo" 1 2>"$work/rec.err"
"$SU" flamegraph -o "$work/flame.svg" "$work/demo.trace" 2>"$work/flame.err"
frc=$?
check "stackunwind flamegraph of tdata-demo (exit $frc)" sh -c "[ $frc = 0 ] && [ -s '$work/flame.svg' ]"

profile=$(mktemp -d "$work/chromium-profile.XXXXXX")
if command -v timeout >/dev/null 2>&1; then T="timeout 300"; else T=; fi
$T node "$top_srcdir/tests/browser-flame.js" "$cache" "$work/flame.svg" "$profile" "$work/flame.png" \
	>"$work/node.out" 2>"$work/node.err"
nrc=$?
node_checks "browser: " "$work/node.out"
if [ "$node_seen" -lt 15 ] || [ "$nrc" != 0 ]; then
	sed 's/^/# /' "$work/node.err" | tail -n 20
	not_ok "browser-flame.js ran all its checks (exit $nrc, $node_seen checks)"
fi

# The browser is gone: anything still running on our private profile is
# ours, stopped by its pid.
browser_gone "$profile"
finish
