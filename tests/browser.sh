#!/bin/sh
# The flamegraph in a real browser: Debian's chromium, headless, on a fresh
# profile, driven by playwright-core (npm, installed into the build tree)
# through tests/browser-flame.js: the picture is not blank, hover details,
# click zoom checked through the DOM, search, reset.  Installs what it
# needs (scripts/install-deps.sh --with-browser); a missing chromium or
# node fails, it never skips.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
PLAYWRIGHT=playwright-core@1.56.0   # works on node >= 18 (Debian's) and 20
cache="$B/tests/browser-cache"
CHROMIUM=/usr/bin/chromium

finish() { echo "1..$n"; exit 0; }

if "$top_srcdir/scripts/install-deps.sh" --with-browser >"$work/deps.log" 2>&1; then
	ok "scripts/install-deps.sh --with-browser"
else
	sed 's/^/# /' "$work/deps.log"
	not_ok "scripts/install-deps.sh --with-browser (chromium, node, npm): see the message above"
fi
missing=
[ -x "$CHROMIUM" ] || missing="$missing chromium"
command -v node >/dev/null 2>&1 || missing="$missing node"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
	not_ok "missing:$missing: install with apt-get install chromium nodejs npm (scripts/install-deps.sh --with-browser)"
	finish
fi
ok "chromium, node and npm are installed"

# playwright-core only (never `playwright install`: the browser is Debian's).
want=${PLAYWRIGHT#playwright-core@}
have=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$cache/node_modules/playwright-core/package.json" 2>/dev/null | head -n 1)
if [ "$have" != "$want" ]; then
	mkdir -p "$cache"
	npm install --prefix "$cache" --no-audit --no-fund --no-save "$PLAYWRIGHT" >"$work/npm.log" 2>&1
	sed 's/^/# /' "$work/npm.log" | tail -n 5
fi
if [ -f "$cache/node_modules/playwright-core/package.json" ]; then
	ok "playwright-core in $cache"
else
	not_ok "npm install $PLAYWRIGHT into $cache failed (is the npm registry reachable?)"
	finish
fi

"$STACKCAP" record -o "$work/demo.trace" -- "$TD/tdata-demo" 1 2>"$work/rec.err"
"$SU" flamegraph -o "$work/flame.svg" "$work/demo.trace" 2>"$work/flame.err"
frc=$?
check "stackunwind flamegraph of tdata-demo (exit $frc)" sh -c "[ $frc = 0 ] && [ -s '$work/flame.svg' ]"

profile=$(mktemp -d "$work/chromium-profile.XXXXXX")
if command -v timeout >/dev/null 2>&1; then T="timeout 300"; else T=; fi
$T node "$top_srcdir/tests/browser-flame.js" "$cache" "$work/flame.svg" "$profile" "$work/flame.png" \
	>"$work/node.out" 2>"$work/node.err"
nrc=$?
seen=0
while IFS= read -r line; do
	case $line in
	"ok "*) ok "browser: ${line#ok }"; seen=$((seen + 1)) ;;
	"not ok "*) not_ok "browser: ${line#not ok }"; seen=$((seen + 1)) ;;
	*) echo "# $line" ;;
	esac
done <"$work/node.out"
if [ "$seen" -lt 15 ] || [ "$nrc" != 0 ]; then
	sed 's/^/# /' "$work/node.err" | tail -n 20
	not_ok "browser-flame.js ran all its checks (exit $nrc, $seen checks)"
fi

# The browser is gone: anything still running on our private profile is
# ours, stopped by its pid.
left=$(pgrep -f -- "--user-data-dir=$profile" 2>/dev/null)
if [ -n "$left" ]; then
	# shellcheck disable=SC2086
	kill $left 2>/dev/null
	not_ok "chromium stopped at the end (had to kill $left)"
else
	ok "chromium stopped at the end"
fi
finish
