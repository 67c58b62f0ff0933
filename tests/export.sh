#!/bin/sh
# Integration: `stackunwind export` on traces of the testdata programs.
# pprof: decoded back with protobuf-c by tests/pprof-check (counts, ids,
# string indexes, the known chain).  speedscope: validated against the
# schema the npm package speedscope publishes (ajv), and checked by
# tests/speedscope-check.js (indices, lengths, counts, one profile per
# thread, the known chain).  Both: identical for any -j, the filters, --no-inline,
# usage errors, unwritable output, a damaged trace exported in part.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
PPROF_CHECK="$B/tests/pprof-check"
SS_CHECK="$top_srcdir/tests/speedscope-check.js"
NODE_CACHE="$B/tests/node-cache"

# xp OUT FORMAT TRACE [OPTIONS]: export TRACE.trace into OUT (exit status in OUT.rc)
xp() {
	out=$1; fmt=$2; tr=$3; shift 3
	"$SU" export --format "$fmt" -o "$work/$out" "$@" "$work/$tr.trace" 2>"$work/$out.err"
	echo $? >"$work/$out.rc"
}
# samples_of TRACE [OPTIONS]: the samples `stackunwind stacks` prints (headers)
samples_of() {
	tr=$1; shift
	"$SU" stacks -j 1 "$@" "$work/$tr.trace" 2>/dev/null | grep -c -E '^[^	 ].* [0-9]+/[0-9]+ [0-9]+\.[0-9]+:$'
}
threads_of() {
	tr=$1; shift
	"$SU" stacks -j 1 "$@" "$work/$tr.trace" 2>/dev/null |
		sed -n -E 's/^[^	 ].* ([0-9]+\/[0-9]+) [0-9]+\.[0-9]+:$/\1/p' | sort -u | wc -l
}
# checks CMD...: the checker's "PASS: x" / "FAIL: x" lines, each a TAP case.
checks() {
	"$@" >"$work/chk.out" 2>"$work/chk.err"
	got=0
	while IFS= read -r line; do
		case $line in
		PASS:*) ok "${line#PASS: }"; got=1 ;;
		FAIL:*) not_ok "${line#FAIL: }"; got=1 ;;
		esac
	done <"$work/chk.out"
	[ $got = 1 ] || not_ok "$(basename "$1") printed no results: $(head -c 300 "$work/chk.err")"
}

record threads -- "$TD/tdata-threads" -t 2 0.5
record inline -- "$TD/tdata-inline" 0.5
chain_threads=$("$TD/tdata-threads" -t 2 --chain | tr '\n' ' ')
chain_inline=$("$TD/tdata-inline" --chain | tr '\n' ' ')
ns_threads=$(samples_of threads)
ns_inline=$(samples_of inline)
nt_threads=$(threads_of threads)

# ---- pprof -------------------------------------------------------------------
xp threads.pb.gz pprof threads -j 1
xp threads-j3.pb.gz pprof threads -j 3
check "pprof: export exits 0 ($(rc threads.pb.gz), -j 3: $(rc threads-j3.pb.gz))" \
	sh -c "[ $(rc threads.pb.gz) = 0 ] && [ $(rc threads-j3.pb.gz) = 0 ]"
check "pprof: -j 3 writes the same bytes as -j 1" cmp -s "$work/threads.pb.gz" "$work/threads-j3.pb.gz"
checks "$PPROF_CHECK" "$work/threads.pb.gz" "$ns_threads" tdata-threads $chain_threads
xp inline.pb.gz pprof inline -j 2
checks "$PPROF_CHECK" "$work/inline.pb.gz" "$ns_inline" tdata-inline $chain_inline
"$SU" export --format pprof -o - -j 2 "$work/threads.trace" >"$work/stdout.pb.gz" 2>/dev/null
check "pprof: -o - writes the same profile to standard output" cmp -s "$work/threads.pb.gz" "$work/stdout.pb.gz"

# --tid: a worker thread (one that ran worker_hot) alone.
tid=$("$SU" stacks -j 1 "$work/threads.trace" 2>/dev/null | awk '
	/^[^\t ].* [0-9]+\/[0-9]+ / { split($(NF - 1), a, "/"); t = a[2]; next }
	t && /worker_hot/ { print t; exit }')
ns_tid=$(samples_of threads --tid "$tid")
xp tid.pb.gz pprof threads --tid "$tid"
checks "$PPROF_CHECK" "$work/tid.pb.gz" "$ns_tid" tdata-threads $chain_threads
check "pprof --tid $tid: $ns_tid of $ns_threads samples" [ "$ns_tid" -lt "$ns_threads" ]

# The real pprof, an independent decoder: built offline from Debian's
# sources of it (golang-github-google-pprof-dev) with golang-go, once per
# build tree.
GOPPROF="$B/tests/go-pprof/pprof"
if [ ! -x "$GOPPROF" ] && command -v go >/dev/null && [ -d /usr/share/gocode/src/github.com/google/pprof ]; then
	mkdir -p "$B/tests/go-pprof"
	GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOPROXY=off GOCACHE="$B/tests/go-pprof/cache" \
		go build -o "$GOPPROF" github.com/google/pprof >"$work/go.log" 2>&1
fi
if [ ! -x "$GOPPROF" ]; then
	not_ok "pprof (Go): cannot build it: apt-get install golang-go golang-github-google-pprof-dev ($(head -c 300 "$work/go.log" 2>/dev/null))"
else
	"$GOPPROF" -top -sample_index=samples "$work/threads.pb.gz" >"$work/top.txt" 2>&1
	check "pprof (Go) -top: $ns_threads samples in all, the chain's leaf on top" \
		sh -c "grep -q 'Total samples = $ns_threads *\$' '$work/top.txt' &&
			awk '/flat%/ { getline; print \$NF; exit }' '$work/top.txt' | grep -qx '$(echo $chain_threads | cut -d' ' -f1)'"
	# -traces: every pprof sample in profile order (pprof does not sort
	# them), its labels, then its count and its stack, one function per
	# line, leaf first.  Samples with the same functions but other
	# addresses (lines) are summed here; the heaviest stack must be the
	# chain with its inlined functions.  User frames only: the kernel
	# frames a root recording keeps split the chain's samples over as many
	# stacks as the kernel paths under it (timer interrupt, softirq...).
	xp inline-user.pb.gz pprof inline -j 2 --user-only
	"$GOPPROF" -traces -sample_index=samples "$work/inline-user.pb.gz" >"$work/traces.txt" 2>&1
	got=$(awk -v n="$(echo $chain_inline | wc -w)" '
		function flush() { if (on) w[key] += cnt; on = 0; key = ""; k = 0 }
		function add(f) { if (k++ < n) key = key f " " }
		/^-+\+-+$/ { flush(); next }
		/^ +[0-9]+ +[^ ]/ { flush(); on = 1; cnt = $1; add($2); next }
		on && /^ +[^ ]/ { add($1) }
		END { flush(); for (s in w) if (w[s] > best) { best = w[s]; top = s }; printf "%s", top }' "$work/traces.txt")
	check "pprof (Go) -traces: the heaviest stack is tdata-inline's chain, inlined functions included ($got)" \
		[ "$got" = "$chain_inline" ]
fi

# ---- speedscope ------------------------------------------------------------------
xp threads.json speedscope threads -j 1
xp threads-j3.json speedscope threads -j 3
check "speedscope: export exits 0 ($(rc threads.json), -j 3: $(rc threads-j3.json))" \
	sh -c "[ $(rc threads.json) = 0 ] && [ $(rc threads-j3.json) = 0 ]"
check "speedscope: -j 3 writes the same bytes as -j 1" cmp -s "$work/threads.json" "$work/threads-j3.json"
xp inline.json speedscope inline -j 2
xp inline-noinl.json speedscope inline --no-inline
xp tid.json speedscope threads --tid "$tid"
check "speedscope: inlined functions are frames (inl_leaf), --no-inline leaves them out" \
	sh -c "grep -q '\"name\":\"inl_leaf\"' '$work/inline.json' && ! grep -q '\"name\":\"inl_leaf\"' '$work/inline-noinl.json' &&
		grep -q '\"name\":\"inline_hot\"' '$work/inline-noinl.json'"

# Frames name functions where they are declared (DW_AT_decl_file/line),
# inlined ones too: the lines of the definitions in testdata/*.c.
l_hot=$(grep -n 'worker_hot(double' "$top_srcdir/testdata/threads.c" | cut -d: -f1)
l_leaf=$(grep -n 'inl_leaf(volatile' "$top_srcdir/testdata/inline.c" | cut -d: -f1)
check "speedscope: frames carry the function's file and line (worker_hot: threads.c:$l_hot, inlined inl_leaf: inline.c:$l_leaf)" \
	sh -c "grep -q '{\"name\":\"worker_hot\",\"file\":\"[^\"]*threads.c\",\"line\":$l_hot}' '$work/threads.json' &&
		grep -q '{\"name\":\"inl_leaf\",\"file\":\"[^\"]*inline.c\",\"line\":$l_leaf}' '$work/inline.json'"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	not_ok "speedscope: node and npm missing, the schema check needs them: apt-get install nodejs npm"
else
	schema=$(find "$NODE_CACHE/node_modules/speedscope" -name file-format-schema.json 2>/dev/null | head -n 1)
	if [ -z "$schema" ] || [ ! -f "$NODE_CACHE/node_modules/ajv/package.json" ]; then
		npm install --prefix "$NODE_CACHE" --no-audit --no-fund --loglevel=error \
			'speedscope@^1.20' 'ajv@^8' >"$work/npm.log" 2>&1
		schema=$(find "$NODE_CACHE/node_modules/speedscope" -name file-format-schema.json 2>/dev/null | head -n 1)
	fi
	if [ -z "$schema" ] || [ ! -f "$NODE_CACHE/node_modules/ajv/package.json" ]; then
		not_ok "speedscope: npm could not install speedscope and ajv into $NODE_CACHE: $(tail -n 3 "$work/npm.log" | tr '\n' ' ')"
	else
		ok "speedscope: the schema of npm's speedscope $(sed -n 's/^ *"version": "\(.*\)",$/\1/p' \
			"$NODE_CACHE/node_modules/speedscope/package.json" | head -n 1): $schema"
		export NODE_PATH="$NODE_CACHE/node_modules"
		checks node "$SS_CHECK" "$work/threads.json" "$schema" "$ns_threads" "$nt_threads" tdata-threads $chain_threads
		checks node "$SS_CHECK" "$work/inline.json" "$schema" "$ns_inline" 1 tdata-inline $chain_inline
		checks node "$SS_CHECK" "$work/tid.json" "$schema" "$ns_tid" 1 tdata-threads $chain_threads
	fi
fi

# ---- errors ----------------------------------------------------------------------
"$SU" export --format svg -o "$work/x" "$work/threads.trace" 2>"$work/err1"; r1=$?
check "unknown format: exit 2, says which formats ($r1)" \
	sh -c "[ $r1 = 2 ] && grep -q 'speedscope or pprof' '$work/err1'"
"$SU" export --format pprof "$work/threads.trace" 2>"$work/err2"; r2=$?
check "missing -o: exit 2 with a message ($r2)" sh -c "[ $r2 = 2 ] && grep -q 'missing -o' '$work/err2'"
"$SU" export -o "$work/x" "$work/threads.trace" 2>"$work/err3"; r3=$?
check "missing --format: exit 2 with a message ($r3)" sh -c "[ $r3 = 2 ] && grep -q 'missing --format' '$work/err3'"
"$SU" stacks --format pprof "$work/threads.trace" >/dev/null 2>"$work/err4"; r4=$?
check "--format outside export: exit 2 ($r4)" [ "$r4" = 2 ]
"$SU" export --format pprof -o "$work/no/such/dir/x.pb.gz" "$work/threads.trace" 2>"$work/err5"; r5=$?
check "unwritable output: exit 1, 'cannot write' and the reason ($r5)" \
	sh -c "[ $r5 = 1 ] && grep -q \"cannot write '.*x.pb.gz': No such file\" '$work/err5'"
# A full disk: said at the end, exit 1, and what is not a file of ours
# (here a symlink to /dev/full) not removed.  The output is written in
# 1 MB pieces: the error still comes, from the last flush.
[ -w /dev/full ] || { echo "tests/export.sh: /dev/full is missing (a Linux system has it)" >&2; exit 1; }
ln -sf /dev/full "$work/full.json"
"$SU" export --format speedscope -o "$work/full.json" "$work/threads.trace" 2>"$work/err6"
r6=$?
check "full disk: exit 1, 'write error on' the output, which is left as it was ($r6)" \
	sh -c "[ $r6 = 1 ] && grep -q \"write error on '.*full.json': No space left\" '$work/err6' && [ -L '$work/full.json' ]"
"$SU" export --format speedscope -o "$work/nothing.json" "$work/no-such.trace" 2>"$work/err6"; r6=$?
check "no trace: exit 1 and no output file left ($r6)" sh -c "[ $r6 = 1 ] && [ ! -e '$work/nothing.json' ]"

# A samples file cut inside a packet: exit 3, the readable samples exported.
record cut -- "$TD/tdata-single" 1
f=$(ls "$work/cut.trace"/samples-* | head -n 1)
size=$(wc -c <"$f")
truncate -s $((size / 2 + 13)) "$f"
ns_cut=$(samples_of cut)
xp cut.pb.gz pprof cut
check "cut trace: pprof export exits 3 with a warning ($(rc cut.pb.gz); $(ls "$work/cut.trace" | tr '\n' ' '); $(head -c 160 "$work/cut.pb.gz.err"))" \
	sh -c "[ $(rc cut.pb.gz) = 3 ] && grep -q 'warning: .*samples-.*cut' '$work/cut.pb.gz.err'"
checks "$PPROF_CHECK" "$work/cut.pb.gz" "$ns_cut" tdata-single $("$TD/tdata-single" --chain | tr '\n' ' ')

# A binary gone since the recording: exit 3, its frames named module+0xoffset.
cp "$TD/tdata-single" "$work/tdata-gone"
record gone -- "$work/tdata-gone" 0.3
rm -f "$work/tdata-gone"
xp gone.json speedscope gone --no-debuginfod
check "binary not found: exit 3, frames 'tdata-gone+0xOFFSET' with the module's path ($(rc gone.json))" \
	sh -c "[ $(rc gone.json) = 3 ] && grep -q 'not found' '$work/gone.json.err' &&
		grep -q -E '\"name\":\"tdata-gone\\+0x[0-9a-f]+\",\"file\":\"[^\"]*/tdata-gone\"' '$work/gone.json'"

echo "1..$n"
