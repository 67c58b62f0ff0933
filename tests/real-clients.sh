#!/bin/sh
# Integration: our exports read by the real tools that read them:
#   go tool pprof (Debian's golang-go) on `export --format pprof`: the main
#   executable is the profile's binary (its first mapping), the hot function
#   on top with its source line, the call chain in -traces, and frames no
#   symbol names kept apart (module+0xADDR each, not one [module] node).
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

echo "1..$n"
