#!/bin/sh
# `stackunwind flamegraph`: the SVG is valid XML with no URL but the
# xmlns, the root counts every sample, a testdata program's known chain is
# there as nested frames, --reverse and --icicle, names escaped, the
# script's zoom and search are in, -j N changes nothing, bad input fails
# cleanly.  No browser here (tests/browser.sh runs one).
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"

if ! command -v xmllint >/dev/null 2>&1; then
	not_ok "xmllint missing: apt-get install libxml2-utils (scripts/install-deps.sh)"
	echo "1..$n"
	exit 0
fi

# frames SVG: one line per frame, "depth start count y<TAB>name (module)".
svg_frames() {
	awk '/^<g class="f">/ {
		t = $0; sub(/.*<title>/, "", t); sub(/ \xe2\x80\x94 .*/, "", t)
		split("data-d data-s data-n y", K, " "); out = ""
		for (i = 1; i <= 4; i++) {
			v = $0; sub(".*<rect[^>]* " K[i] "=\"", "", v); sub(/".*/, "", v)
			out = out (i > 1 ? " " : "") v
		}
		print out "\t" t
	}' "$1"
}

"$STACKCAP" record -o "$work/single.trace" -- "$TD/tdata-single" 0.5 2>/dev/null
"$SU" flamegraph -j 1 -o "$work/single.svg" "$work/single.trace" 2>"$work/single.err"
rc=$?
check "flamegraph: exit 0 and an SVG written ($rc)" sh -c "[ $rc = 0 ] && [ -s '$work/single.svg' ]"
check "flamegraph: valid XML (xmllint)" xmllint --noout "$work/single.svg"
svg_frames "$work/single.svg" >"$work/single.frames"

# Every sample's header line ("comm pid/tid time:"), not those named
# tdata-single: on a loaded machine one sample in ~540 came under another
# name (a fresh Debian's check, 2026-12-03: root 539, named 538), as one
# taken while the exec that starts the program is under way would.
nsamp=$("$SU" stacks -j 1 "$work/single.trace" 2>/dev/null | grep -c '^[^ 	]')
root=$(awk -F '\t' '$2 == "all" { split($1, v, " "); print v[1], v[2], v[3] }' "$work/single.frames")
check "the root frame counts every sample (depth, start, count: $root; $nsamp samples)" \
	[ "$root" = "0 0 $nsamp" ]
check "the root frame spans the full width (1200 - 2 x 10 px)" \
	grep -q '<title>all [^<]*</title><rect x="10.00" y="[0-9]*" width="1180.00"' "$work/single.svg"

# The chain, outermost first: each frame one level deeper than its caller
# and inside its caller's sample range; the hot leaf has >= 99% of samples.
chain=$("$TD/tdata-single" --chain | awk '{ a[NR] = $0 } END { for (i = NR; i >= 1; i--) print a[i] }' | tr '\n' ' ')
nested=$(awk -F '\t' -v chain="$chain" -v total="$nsamp" '
	{ split($1, v, " "); name = $2; sub(/ \(.*\)$/, "", name)
	  if (!(name in D)) { D[name] = v[1]; S[name] = v[2]; N[name] = v[3] } }
	END {
		nc = split(chain, C, " "); bad = 0
		for (i = 1; i <= nc; i++) if (!(C[i] in D)) { print "missing " C[i]; exit }
		for (i = 2; i <= nc; i++) {
			p = C[i - 1]; c = C[i]
			if (D[c] != D[p] + 1 || S[c] < S[p] || S[c] + N[c] > S[p] + N[p]) bad = 1
		}
		if (!bad && N[C[nc]] * 100 >= total * 99) print "nested"
		else print "not nested"
	}' "$work/single.frames")
check "tdata-single's chain ($chain) is there as nested frames, the leaf with >= 99% ($nested)" [ "$nested" = nested ]
check "frames carry 'name (module) — N samples, P%' titles" \
	grep -q '<title>hot_leaf (tdata-single) — [0-9]* samples, [0-9.]*%</title>' "$work/single.svg"

# Default orientation: flames grow up (the root lowest); --icicle: down.
ry=$(awk -F '\t' '$2 == "all" { split($1, v, " "); print v[4] }' "$work/single.frames")
ly=$(awk -F '\t' '$2 ~ /^hot_leaf / { split($1, v, " "); print v[4] }' "$work/single.frames")
check "default: flames grow up (root y $ry below leaf y $ly)" [ "${ry:-0}" -gt "${ly:-0}" ]
"$SU" flamegraph -j 1 --icicle -o "$work/icicle.svg" "$work/single.trace" 2>/dev/null
svg_frames "$work/icicle.svg" >"$work/icicle.frames"
ry=$(awk -F '\t' '$2 == "all" { split($1, v, " "); print v[4] }' "$work/icicle.frames")
ly=$(awk -F '\t' '$2 ~ /^hot_leaf / { split($1, v, " "); print v[4] }' "$work/icicle.frames")
check "--icicle: stacks grow down (root y $ry above leaf y $ly)" [ "${ry:-1}" -lt "${ly:-0}" ]

# --reverse: merged from the leaf, so the hot function is at the root level.
"$SU" flamegraph -j 1 --reverse -o "$work/reverse.svg" "$work/single.trace" 2>/dev/null
svg_frames "$work/reverse.svg" >"$work/reverse.frames"
top=$(awk -F '\t' '{ split($1, v, " ") } v[1] == 1 && v[3] > best { best = v[3]; name = $2 } END { print name }' "$work/reverse.frames")
check "--reverse: the leaf is at the root level, the heaviest there ($top)" [ "$top" = "hot_leaf (tdata-single)" ]
check "--reverse: main is deeper than the leaf" \
	awk -F '\t' '$2 == "main (tdata-single)" { split($1, v, " "); if (v[1] > 1) f = 1 } END { exit !f }' "$work/reverse.frames"
check "--reverse and --icicle: valid XML" xmllint --noout "$work/reverse.svg" "$work/icicle.svg"

# Self-contained: inline style and script, no URL but the xmlns.
urls=$(grep -o -E 'https?://[^"<> ]*' "$work/single.svg" | grep -v -x 'http://www.w3.org/2000/svg' | head -n 3)
check "no http(s):// URL but the SVG xmlns ($urls)" [ -z "$urls" ]
check "inline <style> and <script> in CDATA" \
	sh -c "grep -q '<style type=\"text/css\"><!\[CDATA\[' '$work/single.svg' && grep -q '<script type=\"text/ecmascript\"><!\[CDATA\[' '$work/single.svg'"
check "the script zooms, searches (regex, Ctrl-F) and resets" \
	sh -c "grep -q 'function zoom(' '$work/single.svg' && grep -q 'function search(' '$work/single.svg' && grep -q 'new RegExp' '$work/single.svg' && grep -q 'ctrlKey' '$work/single.svg' && grep -q 'id=\"unzoom\"' '$work/single.svg' && grep -q 'Matched: ' '$work/single.svg'"
check "a details line and a legend of modules" \
	sh -c "grep -q '<text id=\"details\"' '$work/single.svg' && grep -q '<g id=\"legend\">' '$work/single.svg' && grep -q '>tdata-single [0-9.]*%</text>' '$work/single.svg'"

# Colour by module: frames of one module share a hue, the legend's.
hues=$(awk '/^<g class="f">.*\(tdata-single\) / { f = $0; sub(/.*fill="/, "", f); sub(/".*/, "", f); print f }' \
	"$work/single.svg" | sort -u | wc -l)
check "frames of tdata-single have their own colours ($hues shades)" [ "$hues" -ge 2 ]

# C++ names: '<', '>' and '&' escaped; the document says them back.
"$STACKCAP" record -o "$work/demo.trace" -- "$TD/tdata-demo" 0.5 2>/dev/null
"$SU" flamegraph --title 'demo <&> "x"' -o "$work/demo.svg" "$work/demo.trace" 2>/dev/null
"$SU" flamegraph -j 1 -o "$work/demo.svg.plain" "$work/demo.trace" 2>/dev/null
check "C++ names: valid XML" xmllint --noout "$work/demo.svg"
check "C++ names: escaped in the file (Matrix&lt;double&gt;, const&amp;)" \
	sh -c "grep -q 'Matrix&lt;double&gt;' '$work/demo.svg' && grep -q 'const&amp;' '$work/demo.svg' && ! grep -q '<title>[^<]*Matrix<double>' '$work/demo.svg'"
said=$(xmllint --xpath 'string(//*[local-name()="title"][starts-with(., "demo::BitWriter::operator<<")])' "$work/demo.svg" 2>/dev/null)
check "C++ names: the parsed document has them back ($said)" \
	sh -c "echo '$said' | grep -q '^demo::BitWriter::operator<<(unsigned int) (tdata-demo) — '"
check "--title escaped" grep -q '<text id="title" [^>]*>demo &lt;&amp;&gt; &quot;x&quot;</text>' "$work/demo.svg"

# Narrow frames are left out and counted.
"$SU" flamegraph --min-width 100 -o "$work/narrow.svg" "$work/demo.trace" 2>"$work/narrow.err"
nf=$(grep -c '^<g class="f">' "$work/narrow.svg")
nall=$(grep -c '^<g class="f">' "$work/demo.svg")
check "--min-width 100: fewer frames ($nf of $nall), the count said" \
	sh -c "[ $nf -lt $nall ] && grep -q 'narrower than 100 px left out' '$work/narrow.svg' && grep -q 'narrower than 100 px left out' '$work/narrow.err' && xmllint --noout '$work/narrow.svg'"

# The same bytes for any -j, and the same options as folded.
"$STACKCAP" record -o "$work/threads.trace" -- "$TD/tdata-threads" -t 2 0.3 2>/dev/null
"$SU" flamegraph -j 1 -o "$work/t1.svg" "$work/threads.trace" 2>/dev/null
"$SU" flamegraph -j 2 -o "$work/t2.svg" "$work/threads.trace" 2>/dev/null
check "-j 2 output identical to -j 1" cmp -s "$work/t1.svg" "$work/t2.svg"
"$SU" flamegraph -j 1 --per-thread -o - "$work/threads.trace" >"$work/pt.svg" 2>/dev/null
check "--per-thread roots, SVG on stdout with -o -" \
	sh -c "grep -q '<title>tdata-threads-[0-9]*/[0-9]* — ' '$work/pt.svg' && xmllint --noout '$work/pt.svg'"

# Progress on a terminal only (script(1) gives a pty): one line redrawn in
# place and erased before the summary; nothing when stderr is a file, nor
# when samples go to the same terminal.
if command -v script >/dev/null 2>&1; then
	script -qec "env STACKUNWIND_PROGRESS_MS=0 '$SU' flamegraph -j 1 -o '$work/p.svg' '$work/demo.trace'" \
		/dev/null >"$work/pty.out" 2>&1
	check "progress on a terminal: 'stackunwind: N samples (P% of the trace), R samples/s'" \
		grep -a -q -E 'stackunwind: [0-9]+ samples \([0-9]+% of the trace\), [0-9]+ samples/s' "$work/pty.out"
	check "progress: erased before the summary line" \
		grep -a -q "$(printf 'samples/s\033\\[K\r\033\\[Kstackunwind: [0-9]* samples, ')" "$work/pty.out"
	check "progress changes nothing in the output" cmp -s "$work/p.svg" "$work/demo.svg.plain"
	# Read in two parts (STACKCAP_JOBS_AFTER=0: parts however short the
	# trace): the first part's line, all parts' samples and bytes.
	script -qec "env STACKUNWIND_PROGRESS_MS=0 STACKCAP_JOBS_AFTER=0 '$SU' flamegraph -j 2 -o '$work/p3.svg' '$work/demo.trace'" \
		/dev/null >"$work/pty3.out" 2>&1
	check "progress of a read in parts: 'stackunwind: N samples (P% of the trace)'" \
		grep -a -q -E 'stackunwind: [0-9]+ samples \([0-9]+% of the trace\), [0-9]+ samples/s' "$work/pty3.out"
	check "a read in parts: the same output" cmp -s "$work/p3.svg" "$work/demo.svg.plain"
	STACKUNWIND_PROGRESS_MS=0 "$SU" flamegraph -j 1 -o "$work/p2.svg" "$work/demo.trace" 2>"$work/notty.err"
	check "no progress when stderr is no terminal" \
		sh -c "! grep -q 'samples/s' '$work/notty.err' && ! grep -q \"\$(printf '\r')\" '$work/notty.err'"
	script -qec "env STACKUNWIND_PROGRESS_MS=0 '$SU' folded -j 1 '$work/demo.trace'" /dev/null >"$work/pty2.out" 2>&1
	check "no progress among samples printed to the same terminal" \
		sh -c "grep -a -q 'demo::run_report' '$work/pty2.out' && ! grep -a -q 'samples/s' '$work/pty2.out'"
else
	not_ok "script(1) missing: apt-get install bsdutils (scripts/install-deps.sh)"
fi

# ---- bad input ----
"$SU" flamegraph -o "$work/none.svg" "$work/nonexistent.trace" >/dev/null 2>"$work/bad1.err"
brc=$?
check "a missing trace: exit 1, a message, no SVG left ($brc)" \
	sh -c "[ $brc = 1 ] && grep -q 'nonexistent' '$work/bad1.err' && [ ! -e '$work/none.svg' ]"
"$SU" flamegraph -o "$work/no/such/dir/x.svg" "$work/single.trace" >/dev/null 2>"$work/bad2.err"
brc=$?
check "an output that cannot be written: exit 1 and says why ($brc)" \
	sh -c "[ $brc = 1 ] && grep -q 'no/such/dir/x.svg' '$work/bad2.err'"
"$SU" flamegraph --width abc "$work/single.trace" >/dev/null 2>"$work/bad3.err"
brc=$?
check "--width abc: usage error, exit 2 ($brc)" sh -c "[ $brc = 2 ] && grep -q 'width' '$work/bad3.err'"
"$SU" stacks --icicle "$work/single.trace" >/dev/null 2>"$work/bad4.err"
brc=$?
check "flamegraph options elsewhere: usage error, exit 2 ($brc)" sh -c "[ $brc = 2 ] && grep -q 'flamegraph only' '$work/bad4.err'"
if [ -w /dev/full ]; then
	"$SU" flamegraph "$work/single.trace" >/dev/full 2>"$work/bad5.err"
	brc=$?
	check "a full disk: exit 1 and a write error ($brc)" sh -c "[ $brc = 1 ] && grep -q 'write error' '$work/bad5.err'"
fi

echo "1..$n"
