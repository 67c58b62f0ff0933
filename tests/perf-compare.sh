#!/bin/sh
# perf-compare.sh PERF.DATA STACKUNWIND [OUTDIR [SEDSCRIPT]]
#
# `stackunwind stacks` beside `perf script` on one perf.data file, sample by
# sample (docs/perf-comparison.md).  Both outputs become one line per
# sample: "tid time|frame;frame;..." (innermost first), each frame
# "function@dso-basename", where
#   - perf's end marker "ffffffffffffffff [unknown]" (its unwind stopped
#     with an error) is dropped, as our "[truncated]"-style markers are;
#   - kernel frames (perf prints them, we unwind user space only) and
#     stackunwind's end markers ("[no-cfi] ([stackunwind])") are dropped;
#   - "+0x.." offsets are dropped; a frame without a symbol is "[unknown]"
#     (perf's spelling; stackunwind prints it as "module+0xoffset").
# Each sample is then one of:
#   same      identical lines;
#   alias     identical once names that are aliases of one address in the
#             same binary (perf takes one ELF symbol, we the DWARF name or
#             another symbol: clone3/__clone3, index/strchr) are unified;
#             the aliases are checked with nm, never assumed;
#   plt       identical but for PLT stubs: perf names them "f@plt" (it
#             makes symbols for .plt entries), we show [unknown];
#   sigframe  perf shows [unknown] where we show __restore_rt, the rest
#             equal: perf looks up the return address of a signal frame
#             at pc - 1, which is outside __restore_rt (perf is wrong);
#   nouser    neither shows a user frame: perf prints none, we print the
#             pc as "[unknown]" in no mapping (a process sampled inside
#             execve: the registers belong to the image being replaced,
#             whose mappings neither of us has); the same answer;
#   pconly    perf shows no user frame, we show one: the pc, in a known
#             function.  perf unwinds nothing when the stack copy is empty
#             (a thread just out of clone); the registers alone give the
#             innermost frame;
#   longer    perf's chain is a proper prefix of ours: perf stopped in code
#             without CFI whose rbp is no frame pointer (a JIT leaf, glibc's
#             clone3 around its syscall), where we take the leaf's return
#             address at rsp (unwind.c, leaf_step);
#   other     anything else (listed in OUTDIR/other.txt).
# SEDSCRIPT, if given, is applied to stackunwind's text first (tests/perf.sh:
# tap-lib.sh's sigtramp_sed, naming libc's signal trampoline without libc6-dbg).
# Prints "samples=N order_mismatch=N same=N alias=N plt=N sigframe=N nouser=N pconly=N longer=N other=N";
# exit 0 when both produced the same number of samples in the same order.
set -u
data=$1
su=$2
out=${3:-$(mktemp -d)}
rename=${4:-}
mkdir -p "$out"

norm='
# The index of the "(" that opens the group closing S (S ends in ")"), or 0.
function open_of(s,    i, d, c) {
	d = 0
	for (i = length(s); i > 0; i--) {
		c = substr(s, i, 1)
		if (c == ")") d++
		else if (c == "(" && --d == 0) return i
	}
	return 0
}
# F without a trailing C++ parameter list ("f(int, char*) const" -> "f"):
# perf prints none, we print the demangler'"'"'s whole name.
function noparams(f,    i) {
	sub(/ const$/, "", f)
	if (f !~ /\)$/) return f
	i = open_of(f)
	return i > 1 ? substr(f, 1, i - 1) : f
}
/^[^\t ]/ {
	if (hdr != "") print hdr "|" chain
	# "comm pid/tid time:[ EVENT:]": the time follows pid/tid.
	n = split($0, a, " "); k = n - 1
	for (j = n - 1; j >= 1; j--) if (a[j] ~ /^[0-9]+\/[0-9]+$/) { k = j; break }
	tid = a[k]; sub(/.*\//, "", tid)
	t = a[k + 1]; sub(/:$/, "", t); hdr = tid " " t; chain = ""; next
}
/^[\t ]+[0-9a-f]+ / {
	line = $0; sub(/^[\t ]+[0-9a-f]+ /, "", line)
	if (line ~ /\(\[kernel\.kallsyms\]\)/ || line ~ /\(\[stackunwind\]\)/) next
	if ($1 == "ffffffffffffffff") next
	# "name[+0xoff] [(inlined)] (dso)[ file:line]": the dso is the last
	# group (names may hold parentheses: C++ parameter lists).
	sub(/ [^ ()]+:[0-9]+(:[0-9]+)?$/, "", line)
	i = open_of(line)
	if (i < 2) next
	dso = substr(line, i + 1, length(line) - i - 1); fn = substr(line, 1, i - 2)
	if (dso == "inlined" || fn ~ / \(inlined\)$/) { sub(/ \(inlined\)$/, "", fn); dso = "inlined" }
	else { full = dso; sub(/.*\//, "", dso); if (full ~ /^\//) paths[dso] = full }
	sub(/\+0x[0-9a-f]+$/, "", fn)
	fn = noparams(fn)
	sub(/@@?[A-Z][A-Z_]*[0-9][0-9.]*$/, "", fn)    # perf -g: versioned ELF names (clock_gettime@@GLIBC_2.17)
	sub(/@plt$/, "(plt)", fn)
	if (fn == dso || fn == "") fn = "[unknown]"
	chain = chain (chain == "" ? "" : ";") fn "@" dso; next
}
END {
	if (hdr != "") print hdr "|" chain
	if (pathfile != "") for (d in paths) print d, paths[d] > pathfile
}'

perf script --ns -i "$data" -F comm,pid,tid,time,ip,sym,dso 2>"$out/perf.err" | awk "$norm" > "$out/perf.txt"
"$su" stacks "$data" 2>"$out/su.err" | { if [ -n "$rename" ]; then sed -f "$rename"; else cat; fi; } |
	awk -v pathfile="$out/paths.txt" "$norm" > "$out/su.txt"

# Frame pairs whose names differ, with the dso: candidates for aliases.
# (perf and we may disagree on which frames of one pc are inlined, so the
# names are compared, the dso only names the binary to ask.)
paste -d '\n' "$out/perf.txt" "$out/su.txt" | awk '
NR % 2 == 1 { p = $0; next }
{
	if (p == $0) next
	split(p, x, "|"); split($0, y, "|")
	n = split(x[2], a, ";"); m = split(y[2], b, ";")
	if (n != m) next
	for (i = 1; i <= n; i++) {
		split(a[i], pa, "@"); split(b[i], sb, "@")
		if (pa[1] == sb[1] || pa[1] == "[unknown]" || sb[1] == "[unknown]") continue
		dso = sb[2] != "inlined" ? sb[2] : pa[2]
		if (dso != "inlined") print dso, pa[1], sb[1]
	}
}' | sort -u > "$out/pairs.txt"

# Two names are aliases when the binary gives them one address.
: > "$out/aliases.txt"
while read -r dso a b; do
	path=$(awk -v d="$dso" '$1 == d { print $2; exit }' "$out/paths.txt")
	[ -n "$path" ] || continue
	# The symbols of the binary and of its separate debug file.
	bid=$(readelf -n "$path" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
	dbg=/usr/lib/debug/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug
	syms=$( (nm "$path"; nm -D "$path"; nm "$dbg") 2>/dev/null)
	# (nm -D spells versioned names clock_gettime@@GLIBC_2.17.)
	addr_a=$(printf '%s\n' "$syms" | awk -v s="$a" '{ n = $3; sub(/@.*/, "", n) } n == s { print $1; exit }')
	addr_b=$(printf '%s\n' "$syms" | awk -v s="$b" '{ n = $3; sub(/@.*/, "", n) } n == s { print $1; exit }')
	if [ -n "$addr_a" ] && [ "$addr_a" = "$addr_b" ]; then
		echo "$a $b" >> "$out/aliases.txt"
	fi
done < "$out/pairs.txt"

paste -d '\n' "$out/perf.txt" "$out/su.txt" | awk -v aliases="$out/aliases.txt" -v other="$out/other.txt" '
BEGIN {
	while ((getline l < aliases) > 0) { split(l, w, " "); al[w[1] " " w[2]] = 1 }
	printf "" > other
}
function names(s) { gsub(/@[^;]*/, "", s); return s }
NR % 2 == 1 { p = $0; next }
{
	total++
	split(p, x, "|"); split($0, y, "|")
	if (x[1] != y[1]) order++
	pn = names(x[2]); sn = names(y[2])
	if (pn == sn) { same++; next }
	n = split(pn, a, ";"); m = split(sn, b, ";")
	if (n == m) {
		kind = "alias"; plt = 0
		for (i = 1; i <= n && kind != ""; i++) {
			if (a[i] == b[i] || ((a[i] " " b[i]) in al)) continue
			if (a[i] == "[unknown]" && b[i] == "__restore_rt") { kind = "sigframe"; continue }
			if (a[i] ~ /\(plt\)$/ && b[i] == "[unknown]") { plt = 1; continue }
			kind = ""
		}
		if (kind == "alias" && plt) { plts++; next }
		if (kind == "alias") { alias++; next }
		if (kind == "sigframe") { sig++; next }
	}
	if (pn == "" && y[2] == "[unknown]@[unknown]") { nouser++; next }
	if (pn == "" && m == 1) { pconly++; next }
	if (pn != "" && m > n && substr(sn, 1, length(pn) + 1) == pn ";") { longer++; next }
	oth++
	print "perf:        " p > other
	print "stackunwind: " $0 > other
}
END {
	printf "samples=%d order_mismatch=%d same=%d alias=%d plt=%d sigframe=%d nouser=%d pconly=%d longer=%d other=%d\n", total, order, same, alias, plts, sig, nouser, pconly, longer, oth
}'
np=$(wc -l < "$out/perf.txt")
ns=$(wc -l < "$out/su.txt")
[ "$np" -eq "$ns" ] || { echo "perf script: $np samples, stackunwind: $ns" >&2; exit 1; }
exit 0
