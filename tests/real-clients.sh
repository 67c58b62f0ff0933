#!/bin/sh
# Integration: our exports read by the real tools that read them:
#   go tool pprof (Debian's golang-go) on `export --format pprof`: the main
#   executable is the profile's binary (its first mapping), the hot function
#   on top with its source line, the call chain in -traces, and frames no
#   symbol names kept apart (module+0xADDR each, not one [module] node);
#   a real debuginfod server (Debian's debuginfod, started here on a
#   private database, stopped after) serving the debug file of a stripped
#   testdata program: stackunwind names every frame of it through
#   DEBUGINFOD_URLS alone;
#   speedscope itself (the web app of the npm package speedscope, served
#   on loopback by tests/speedscope-browser.js) in Debian's chromium: our
#   file imported without an error, its names shown, tdata-single's
#   hot_leaf first in the Sandwich view with the self weight our file
#   gives it; a damaged copy makes the importer's error seen.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
need "golang-go" go
export HOME="$work" GOCACHE="$work/gocache"

# ---- pprof ------------------------------------------------------------------
# tdata-dlopen: the hot code is in a library it loads (the first mapping
# its samples meet), the main executable is tdata-dlopen.
"$STACKCAP" record -o "$work/dl.trace" -- "$TD/tdata-dlopen" 0.5 >/dev/null 2>"$work/dl.rerr"
"$SU" export --format pprof -o "$work/dl.pb.gz" "$work/dl.trace" 2>"$work/dl.err"
check "pprof: export exits 0" [ $? = 0 ]
go tool pprof -top -lines "$work/dl.pb.gz" >"$work/dl.top" 2>"$work/dl.toperr"
check "pprof -top: File: tdata-dlopen (the main executable), not the library ($(grep '^File:' "$work/dl.top"))" \
	grep -qx 'File: tdata-dlopen' "$work/dl.top"
first=$(awk '/flat%/ { getline; print; exit }' "$work/dl.top")
check "pprof -top: the hot function first, with its line ($first)" \
	sh -c "echo '$first' | grep -q ' plugin_hot .*plugin.c:[0-9]'"
go tool pprof -traces "$work/dl.pb.gz" >"$work/dl.traces" 2>"$work/dl.trerr"
chain=$("$TD/tdata-dlopen" --chain | tr '\n' ' ')
check "pprof -traces: the known chain ($chain)" awk -v chain="$chain" '
	BEGIN { nc = split(chain, C, " ") }
	/^-----/ { k = 0; next }
	{ fn = $NF; if ($1 ~ /ms$|s$/ && NF >= 2) k = 0; F[++k] = fn
	  if (k == nc) { good = 1; for (i = 1; i <= nc; i++) if (F[i] != C[i]) good = 0; if (good) found = 1 } }
	END { exit !found }' "$work/dl.traces"

# A binary gone since the recording: its frames have no symbol.
cp "$TD/tdata-single" "$work/gone-single"
"$STACKCAP" record -o "$work/gone.trace" -- "$work/gone-single" 0.5 >/dev/null 2>"$work/gone.rerr"
rm -f "$work/gone-single"
"$SU" export --format pprof -o "$work/gone.pb.gz" "$work/gone.trace" 2>"$work/gone.err"
"$SU" folded "$work/gone.trace" >"$work/gone.folded" 2>/dev/null
go tool pprof -top "$work/gone.pb.gz" >"$work/gone.top" 2>/dev/null
ours=$(tr ';' '\n' <"$work/gone.folded" | sed 's/ [0-9]*$//' | grep -c -x 'gone-single+0x[0-9a-f]*' )
theirs=$(grep -c ' gone-single+0x[0-9a-f]*$' "$work/gone.top")
merged=$(grep -c '\[gone-single\]' "$work/gone.top")
check "pprof -top: unnamed frames apart ($theirs gone-single+0x... nodes, folded has $ours lines of them, $merged [gone-single])" \
	[ "$theirs" -gt 1 -a "$merged" = 0 ]

# ---- debuginfod ------------------------------------------------------------
need "debuginfod" debuginfod debuginfod-find
need "binutils" objcopy strip readelf
mkdir -p "$work/srv"
cp "$TD/tdata-single" "$work/full-single"
objcopy --only-keep-debug "$work/full-single" "$work/srv/tdata-single.debug"
strip --strip-all -o "$work/stripped-single" "$work/full-single"
rm -f "$work/full-single"
id=$(build_id "$work/stripped-single")
"$STACKCAP" record -o "$work/stripped.trace" -- "$work/stripped-single" 0.5 >/dev/null 2>"$work/stripped.rerr"
"$SU" stacks --no-cache "$work/stripped.trace" >"$work/nodi.out" 2>/dev/null
unnamed=$(grep -c ' stripped-single+0x' "$work/nodi.out")
check "stripped tdata-single without debuginfod: frames unnamed ($unnamed)" [ "$unnamed" -gt 0 ]

# A free port: debuginfod exits at once when its port is taken.
dpid=
for try in 1 2 3 4 5; do
	port=$((20000 + ($$ * 7 + try * 1237) % 40000))
	debuginfod -d "$work/debuginfod.sqlite" -p "$port" -F "$work/srv" -t 0 -g 0 >"$work/debuginfod.log" 2>&1 &
	dpid=$!
	sleep 0.5
	alive "$dpid" && break
	dpid=
done
if [ -z "$dpid" ]; then
	not_ok "debuginfod did not start: $(tail -n 1 "$work/debuginfod.log")"
else
	url="http://127.0.0.1:$port"
	# Wait for its first scan (up to 30 s): debuginfod-find fetches the
	# file (a cache of its own each try: a miss is cached for 10 minutes).
	i=0
	until DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH="$work/find-cache.$i" \
		debuginfod-find debuginfo "$id" >/dev/null 2>&1 || [ $i -ge 150 ]; do
		sleep 0.2; i=$((i + 1))
	done
	check "debuginfod on $url serves the debug file of build-id $id" [ $i -lt 150 ]
	env -u DEBUGINFOD_URLS DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH="$work/di-cache" STACKCAP_CACHE_DIR="$work/sc-cache" \
		"$SU" stacks "$work/stripped.trace" >"$work/di.out" 2>"$work/di.err"
	check "stackunwind through debuginfod exits 0" [ $? = 0 ]
	left=$(grep -c ' stripped-single+0x' "$work/di.out")
	named=$(grep -c ' hot_leaf+0x[0-9a-f]* (.*stripped-single) .*single.c:[0-9]' "$work/di.out")
	check "through debuginfod: every frame of it named ($left left), hot_leaf with single.c's line ($named)" \
		[ "$left" = 0 -a "$named" -gt 0 ]
	check "through debuginfod: the debug file came over HTTP (in DEBUGINFOD_CACHE_PATH)" \
		[ -s "$work/di-cache/$id/debuginfo" ]
	stop_process "$dpid"
	check "debuginfod stopped" sh -c "! kill -0 $dpid 2>/dev/null"
fi

# ---- speedscope, in a browser ---------------------------------------------
SPEEDSCOPE=speedscope@1.25.0
sscache="$B/tests/speedscope-cache"
if command -v timeout >/dev/null 2>&1; then T="timeout 300"; else T=; fi
# speedscope_in_browser NAME LOAD.json: speedscope-browser.js on LOAD.json
# (our file, or a damaged copy) with what $work/ss.json says; its lines in
# NAME.out, its exit status in NAME.rc.
speedscope_in_browser() {
	sib_profile=$(mktemp -d "$work/chromium-profile.XXXXXX")
	$T node "$top_srcdir/tests/speedscope-browser.js" "$sscache" "$sscache/node_modules/speedscope" \
		"$work/ss.json" "$2" "$sib_profile" "$hot" >"$work/$1.out" 2>"$work/$1.err"
	echo $? >"$work/$1.rc"
	browser_gone "$sib_profile"
}
if browser_ready && npm_into "$sscache" "$PLAYWRIGHT" "$SPEEDSCOPE"; then
	"$STACKCAP" record -o "$work/ss.trace" -- "$TD/tdata-single" 0.5 >/dev/null 2>"$work/ss.rerr"
	"$SU" export --format speedscope -o "$work/ss.json" "$work/ss.trace" 2>"$work/ss.xerr"
	check "speedscope: export of tdata-single exits 0" [ $? = 0 ]
	hot=$("$TD/tdata-single" --chain | head -n 1)
	speedscope_in_browser ss "$work/ss.json"
	node_checks "speedscope in chromium: " "$work/ss.out"
	if [ "$node_seen" -lt 7 ] || [ "$(rc ss)" != 0 ]; then
		sed 's/^/# /' "$work/ss.err" | tail -n 20
		not_ok "speedscope-browser.js ran all its checks (exit $(rc ss), $node_seen checks)"
	fi
	# A damaged copy: a sample names a frame the file does not have.
	sed '0,/"samples":\[\[[0-9]*/s//"samples":[[999999/' "$work/ss.json" >"$work/ss-bad.json"
	speedscope_in_browser ss-bad "$work/ss-bad.json"
	seen=$(grep "^not ok speedscope's importer read the file without an error" "$work/ss-bad.out")
	check "speedscope in chromium: a damaged copy (a sample naming frame 999999) fails: ${seen#not ok }" \
		[ -n "$seen" -a "$(rc ss-bad)" != 0 ]
fi

echo "1..$n"
