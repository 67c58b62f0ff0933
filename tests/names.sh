#!/bin/sh
# Integration: the names stackunwind gives frames of programs in other
# languages and of the places every process passes through, checked against
# binutils' addr2line (and perf script where perf names them):
#   Rust (Debian's rustc, legacy and v0 manglings): demangled, no hash, no
#   $-escapes, every inline frame with its file:line, as addr2line -f -i -C;
#   Go (Debian's golang-go, static and cgo): every frame's file:line as
#   addr2line (libdwfl's .debug_aranges lookup fails on both), and a stack
#   through runtime.rt0_go ends there, outermost, not on argc as a frame;
#   ld.so's _start, where every exec'd process starts: outermost;
#   PLT stubs (test-symbolize checks them against objdump);
#   a function GCC inlined into itself (glibc's read, libc6-dbg) shown once.
#   a C program compiled from a relative path: its file under DW_AT_comp_dir.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
need "binutils gcc" addr2line nm objdump gcc

# Debian's compiler, whatever else is on PATH (rustup's).
RUSTC=/usr/bin/rustc
if [ ! -x "$RUSTC" ]; then
	echo "1..1"
	echo "not ok 1 - $RUSTC missing: apt-get install rustc (scripts/install-deps.sh)"
	exit 0
fi

# bias_of STACKS BIN: BIN's load bias in a `stacks` output, from its main frame.
bias_of() {
	set -- $(awk -v bin="$2" 'index($0, " (" bin ")") && $2 ~ /^main\+0x/ { split($2, a, "+"); print $1, a[2]; exit }' "$1") \
		"$(nm "$2" | awk '$3 == "main" { print $1 }')"
	[ $# = 3 ] && echo $((0x$1 - $2 - 0x$3))
}

# our_chains STACKS BIN BIAS: one line per distinct address of BIN looked
# up ("hex<TAB>name|file:line;..." innermost first: the "(inlined)" frames
# at one pc, then the real one; the activation frame at its pc, return
# addresses at pc - 1).  The activation frame is the first user-space one:
# a sample taken in the kernel (a page fault, a syscall) starts with kernel
# frames, and the user pc after them is where the program was stopped, not
# a return address (pc - 1 there names the instruction before it: another
# line or inline chain where pc starts a line table row or inline range).
# So is the frame a signal interrupted, after its trampoline (libc's
# __restore_rt, Go's runtime.sigreturn): a Go program preempted
# asynchronously is stopped at any instruction, runtime.asyncPreempt+0x0
# among them, whose pc - 1 is the end of another function.
our_chains() {
	awk -v bin="$2" -v bias="$3" '
	function hex(s,  v, i) { v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
	function flush() { if (cur != "" && !(key in seen)) { seen[key] = 1; printf "%x\t%s\n", key, cur } cur = "" }
	/^\t/ {
		line = $0; sub(/^\t */, "", line)
		pc = line; sub(/ .*/, "", pc); rest = substr(line, length(pc) + 2)
		if (length(pc) == 16 && pc ~ /^ffff/) next   # a kernel frame
		fn = rest; sub(/[+ ].*/, "", fn)
		# A signal restorer is named at its first byte (the kernel made
		# it the return address), as is the pc the signal interrupted.
		sig = fn ~ /^(__restore_rt|runtime\.sigreturn)/
		if (pc != lastpc) { flush(); nth++; lastpc = pc; act = nth == 1 || aftersig || sig; aftersig = 0 }
		if (sig) aftersig = 1
		i = index(rest, " (" bin ")")
		if (!i) { cur = ""; next }
		name = substr(rest, 1, i - 1); loc = substr(rest, i + length(bin) + 4)
		inl = sub(/ \(inlined\)$/, "", name); sub(/\+0x[0-9a-f]+$/, "", name)
		key = hex(pc) - bias - (act ? 0 : 1)
		cur = cur (cur == "" ? "" : ";") name "|" loc
		# A real frame ends its address chain: a recursion repeats the
		# same return address in the next frame (runtime.doInit).
		if (!inl) { flush(); lastpc = "" }
		next
	}
	{ flush(); nth = 0; lastpc = ""; aftersig = 0 }
	END { flush() }' "$1" | sort
}

# a2l_chains BIN CHAINS: the same lines from addr2line -f -i -C -a for the
# addresses of CHAINS (a location it has no line for, "file:?", as none).
a2l_chains() {
	addr2line -f -i -C -a -e "$1" $(cut -f1 "$2" | sed 's/^/0x/') | awk '
	function flush() { if (addr != "") printf "%s\t%s\n", addr, cur; cur = "" }
	/^0x[0-9a-f]+$/ { flush(); addr = $0; sub(/^0x0*/, "", addr); state = 0; next }
	state == 0 { name = $0; state = 1; next }
	{ loc = $0; sub(/ \(discriminator [0-9]+\)$/, "", loc); if (loc ~ /:\?$/) loc = ""
	  cur = cur (cur == "" ? "" : ";") name "|" loc; state = 0 }
	END { flush() }' | sort
}

# lt_rows BIN CHAINS: for each address of CHAINS, "hex<TAB>file:line" of the
# line table row in effect there as binutils' objdump decodes it (the last
# row at the highest address not above it, in its sequence; the file as
# objdump prints it, without its directory).  The second referee for an
# innermost location where addr2line and we differ: binutils 2.40's
# addr2line names the compilation unit's file for the rows of cgo's prolog
# (`#line "cgo-gcc-prolog"` in cgo.cgo2.c), the line table and we name
# cgo-gcc-prolog.
lt_rows() {
	objdump --dwarf=decodedline "$1" | awk -F '\t' '
	function hex(s,  v, i) { v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
	NR == FNR { want[hex($1)] = $1; next }
	{ split($0, r, " +") }
	r[3] !~ /^0x[0-9a-f]+$/ { have = 0; next }
	{
		a = hex(substr(r[3], 3))
		if (have && a > p)
			for (q = p; q < a && q - p < 65536; q++)
				if (q in want) printf "%s\t%s:%s\n", want[q], f, l
		if (r[2] == "-") { have = 0; next }
		p = a; f = r[1]; l = r[2]; have = 1
	}' "$2" -
}

# chains_agree OURS THEIRS NAMES [ROWS]: "agree total": the same number of
# frames at each address, each at the same file:line (addr2line's path may
# be ours under the compilation directory), with the same names when NAMES
# is 1.  Where the innermost location alone differs, ROWS (lt_rows) decides:
# ours agrees if it is the line table's file and line there.
chains_agree() {
	awk -F '\t' -v names="$3" '
	FILENAME == ARGV[1] { ref[$1] = $2; next }
	FILENAME == ARGV[2] { a[$1] = $2; next }
	{
		tot++
		n = split($2, o, ";"); m = split(a[$1], t, ";")
		good = n == m
		for (i = 1; good && i <= n; i++) {
			split(o[i], x, "|"); split(t[i], y, "|")
			if (names && x[1] != y[1]) good = 0
			if (x[2] != y[2] && !(x[2] != "" && substr(y[2], length(y[2]) - length(x[2])) == "/" x[2])) {
				base = x[2]; sub(/.*\//, "", base)
				if (i == 1 && ($1 in ref) && ref[$1] == base) {
					printf "at 0x%s: ours %s; addr2line %s; the line table %s\n", $1, x[2], y[2], ref[$1] >"/dev/stderr"
					continue
				}
				good = 0
			}
		}
		if (!good && bad++ < 3) printf "differs at 0x%s: ours %s; addr2line %s\n", $1, $2, a[$1] >"/dev/stderr"
		agree += good
	}
	END { printf "%d %d\n", agree, tot }' "${4:-/dev/null}" "$2" "$1"
}

# first_diff FILE: ": " and the first difference chains_agree told (in the
# check's line: check.sh shows a failure's line, not the test's log).
first_diff() {
	grep -m 1 '^differs at' "$1" | cut -c 1-400 | sed 's/^/: /'
}

# ---- Rust ------------------------------------------------------------------
# rust_case NAME RUSTC-FLAGS...: build testdata/rust/words.rs, record it,
# compare every frame of it with addr2line.
rust_case() {
	name=$1; shift
	bin="$work/$name"
	if ! "$RUSTC" -g -O "$@" -o "$bin" "$top_srcdir/testdata/rust/words.rs" 2>"$work/$name.cerr"; then
		not_ok "$name: $RUSTC $* failed: $(head -n 1 "$work/$name.cerr")"
		return
	fi
	"$STACKCAP" record -o "$work/$name.trace" -- "$bin" 400 >/dev/null 2>"$work/$name.rerr"
	"$SU" stacks "$work/$name.trace" >"$work/$name.out" 2>"$work/$name.err"
	check "$name: stackunwind exits 0" [ $? = 0 ]
	check "$name: words::count_words named (no hash)" grep -q ' words::count_words+0x[0-9a-f]* (' "$work/$name.out"
	left=$(grep -c -E '::h[0-9a-f]{16}([^0-9a-f]|$)|\$(LT|GT|u7b|u7d|C|u20)\$|\.llvm\.[0-9]|[ ;]_(ZN|R[NC])[0-9A-Za-z_]' "$work/$name.out")
	check "$name: no hash, \$-escape or mangled name left ($left frames)" [ "$left" = 0 ]
	inl=$(grep -c ' (inlined) ('"$bin"')' "$work/$name.out")
	check "$name: inline frames shown ($inl)" [ "$inl" -gt 100 ]
	bias=$(bias_of "$work/$name.out" "$bin")
	our_chains "$work/$name.out" "$bin" "${bias:-0}" >"$work/$name.ours"
	a2l_chains "$bin" "$work/$name.ours" >"$work/$name.a2l"
	set -- $(chains_agree "$work/$name.ours" "$work/$name.a2l" "$names" 2>"$work/$name.diff")
	cat "$work/$name.diff" >&2
	check "$name: every address's inline chain and file:lines as addr2line -i ($1 of $2)$(first_diff "$work/$name.diff")" \
		[ "$2" -gt 20 -a "$1" = "$2" ]
}
names=1
rust_case rust-legacy
# v0 names say more than addr2line's DWARF names (<Vec<u8>>::push, not
# Vec<T,A>::push): locations only.
names=0
rust_case rust-v0 -C symbol-mangling-version=v0

# ---- a C program compiled from a relative path --------------------------------
# `gcc ../src/single.c` (a build configured as ../configure): the line table
# says ../src/single.c; the file named is that path under the compilation
# directory, as addr2line prints it, not one relative to wherever the trace
# is read.
mkdir -p "$work/rel/src" "$work/rel/build"
cp "$top_srcdir/testdata/single.c" "$top_srcdir/testdata/tdata.h" "$work/rel/src/"
if ! (cd "$work/rel/build" && gcc -O1 -g -fno-omit-frame-pointer -o single ../src/single.c) 2>"$work/rel.cerr"; then
	not_ok "relative path: gcc ../src/single.c failed: $(head -n 1 "$work/rel.cerr")"
else
	"$STACKCAP" record -o "$work/rel.trace" -- "$work/rel/build/single" 0.3 >/dev/null 2>"$work/rel.rerr"
	"$SU" stacks "$work/rel.trace" >"$work/rel.out" 2>"$work/rel.err"
	want="$work/rel/build/../src/single.c"
	hot=$(grep -c " hot_leaf+0x[0-9a-f]* ($work/rel/build/single) $want:[0-9]" "$work/rel.out")
	relative=$(grep -c ' \.\./src/single\.c:' "$work/rel.out")
	check "relative path: hot_leaf at $want:LINE ($hot frames), never at ../src/single.c alone ($relative)" \
		[ "$hot" -gt 10 -a "$relative" = 0 ]
	bias=$(bias_of "$work/rel.out" "$work/rel/build/single")
	our_chains "$work/rel.out" "$work/rel/build/single" "${bias:-0}" >"$work/rel.ours"
	a2l_chains "$work/rel/build/single" "$work/rel.ours" >"$work/rel.a2l"
	set -- $(awk -F '\t' 'NR == FNR { a[$1] = $2; next } { t++; g += a[$1] == $2 } END { print g + 0, t + 0 }' \
		"$work/rel.a2l" "$work/rel.ours")
	check "relative path: every address's name and file:line exactly as addr2line -i ($1 of $2)" \
		[ "$2" -gt 2 -a "$1" = "$2" ]
fi

# ---- Go ----------------------------------------------------------------------
need "golang-go" go
need "linux-perf" perf
need_perf_sampling
export GOCACHE="$work/gocache" GOPATH="$work/gopath" GOFLAGS= GO111MODULE=on
# go_case NAME CGO_ENABLED: build testdata/go, record it with perf (all
# threads on one P), compare every frame of it with addr2line.  600 rounds:
# ~0.2 s of CPU, ~200 samples at 999 Hz, ~100 distinct addresses (60 rounds
# gave 20 samples, and 20 addresses or fewer on a loaded machine).
go_case() {
	name=$1
	bin="$work/$name"
	if ! (cd "$top_srcdir/testdata/go" && CGO_ENABLED=$2 go build -o "$bin" .) 2>"$work/$name.cerr"; then
		not_ok "$name: go build failed: $(head -n 1 "$work/$name.cerr")"
		return
	fi
	GOMAXPROCS=1 perf record -q -k monotonic -F 999 --call-graph dwarf -o "$work/$name.data" -- "$bin" 600 \
		>/dev/null 2>"$work/$name.rerr"
	"$SU" stacks "$work/$name.data" >"$work/$name.out" 2>"$work/$name.err"
	check "$name: stackunwind exits 0" [ $? = 0 ]
	check "$name: main.hot under main.work, with main.go's lines" \
		grep -q "main.hot+0x[0-9a-f]* ($bin) .*/testdata/go/main.go:[0-9]" "$work/$name.out"
	# Go writes executables, not PIE: ELF addresses are addresses.
	# Locations only: addr2line names an innermost inlined Go function
	# after the function it is inlined into, and assembly by its symbol
	# (runtime.rt0_go.abi0, DWARF's runtime.rt0_go).
	our_chains "$work/$name.out" "$bin" 0 >"$work/$name.ours"
	a2l_chains "$bin" "$work/$name.ours" >"$work/$name.a2l"
	lt_rows "$bin" "$work/$name.ours" >"$work/$name.rows"
	set -- $(chains_agree "$work/$name.ours" "$work/$name.a2l" 0 "$work/$name.rows" 2>"$work/$name.diff")
	cat "$work/$name.diff" >&2
	check "$name: every address's inline chain and file:lines as addr2line -i ($1 of $2)$(first_diff "$work/$name.diff")" \
		[ "$2" -gt 20 -a "$1" = "$2" ]
}
go_case go-static 0
go_case go-cgo 1

# A cgo Go program under the in-process hook: goroutines run on stacks
# the hook knows no bounds of, read through process_vm_readv (every sample
# there was dropped: 173 of 241 in one run).
"$STACKCAP" record --in-process -o "$work/go-ip.trace" -- "$work/go-cgo" 600 >/dev/null 2>"$work/go-ip.rerr"
"$SU" folded "$work/go-ip.trace" >"$work/go-ip.folded" 2>"$work/go-ip.err"
set -- $(sed -n 's/.* \([0-9][0-9]*\) samples, \([0-9][0-9]*\) drops.*/\1 \2/p' "$work/go-ip.rerr" | head -n 1) 0 0
hot=$(awk '/main\.work;main\.hot/ { n += $NF } END { print n + 0 }' "$work/go-ip.folded")
check "go-cgo --in-process: $1 samples, $2 dropped (<= 2%), main.work;main.hot in $hot (>= 50)" \
	sh -c "[ $1 -ge 100 ] && [ \$(($2 * 50)) -le $1 ] && [ $hot -ge 50 ]"

# Every system call of a Go program's start, from the main thread: the
# stacks through runtime.rt0_go (a deterministic set, unlike a timer's).
perf record -q -k monotonic -e raw_syscalls:sys_enter --call-graph dwarf -o "$work/go-sys.data" \
	-- "$work/go-static" 2 >/dev/null 2>"$work/go-sys.rerr"
"$SU" stacks "$work/go-sys.data" >"$work/go-sys.out" 2>"$work/go-sys.err"
rt0=$(grep -c ' runtime.rt0_go+' "$work/go-sys.out")
below=$(grep -A1 ' runtime.rt0_go+' "$work/go-sys.out" | grep -c -v -e ' runtime.rt0_go+' -e '^$' -e '^--$')
check "go: $rt0 stacks reach runtime.rt0_go, none goes on below it ($below)" [ "$rt0" -gt 10 -a "$below" = 0 ]

# Go's collector helped on the thread's system stack: a frame above
# runtime.systemstack (which switched stacks there) is not one, as Go's own
# traceback says (it stops at a function that writes SP).  A filtered trace
# read a dropped word there: once [bad-stack] in every such sample.
"$STACKCAP" record -F 4999 -o "$work/go-gc.trace" -- "$work/go-static" 150 gc >/dev/null 2>"$work/go-gc.rerr"
"$SU" stacks "$work/go-gc.trace" >"$work/go-gc.out" 2>"$work/go-gc.err"
set -- $(awk 'BEGIN { RS = "" } { n = split($0, l, "\n"); s = 0
	for (i = 3; i <= n; i++) if (l[i] ~ / runtime\.systemstack(\.abi0)?\+0x/) s = i
	if (!s) next; t++; if (s == n) top++; if (l[n] ~ /\[bad-stack\]/) bad++ }
	END { print t + 0, top + 0, bad + 0 }' "$work/go-gc.out")
if [ "$1" -ge 20 -a "$3" = 0 -a $(($2 * 100)) -ge $(($1 * 95)) ]; then
	ok "go: $1 samples through runtime.systemstack (on the system stack), $2 end there, $3 [bad-stack]"
else
	# Once 1 [bad-stack] in 341 under make check's load: the evidence.
	awk 'BEGIN { RS = ""; ORS = "\n\n" } /\[bad-stack\]/' "$work/go-gc.out" >"$work/go-gc.bad"
	not_ok_show "go: $1 samples through runtime.systemstack (on the system stack), $2 end there, $3 [bad-stack]" \
		"$work/go-gc.bad"
fi

# Short Go commands, each gone before its samples are read (a build's
# tools, a script's): their file is opened at its path, found to be the
# very inode mapped (the kernel gives device and inode where it has no
# build-id), for the load bias of a non-PIE binary (not START - OFFSET).
# Almost every frame was unknown (18 of 300 samples fully unwound).
"$STACKCAP" record -o "$work/go-short.trace" -- \
	sh -c "for i in \$(seq 20); do '$work/go-static' 20 >/dev/null; done" 2>"$work/go-short.rerr"
"$SU" stacks "$work/go-short.trace" >"$work/go-short.out" 2>"$work/go-short.err"
set -- $(sed -n 's/.* \([0-9]*\) samples, \([0-9]*\) fully unwound.*/\1 \2/p' "$work/go-short.err")
hot=$(grep -c " main\.hot+0x" "$work/go-short.out")
check "20 short Go commands: ${2:-?} of ${1:-?} samples fully unwound (>= 90%), main.hot named in $hot" \
	sh -c "[ '${1:-0}' -ge 100 ] && [ \$((${2:-0} * 100)) -ge \$((${1:-0} * 90)) ] && [ $hot -ge 20 ]"

# A Go program writes no GNU build-id: the recorder records its Go build ID
# in its place (su_elf_file_id), so a program rebuilt at the same path
# since (here: the cgo build put there) is refused, never used to name
# frames it did not run.
cp "$work/go-static" "$work/go-re"
"$STACKCAP" record -o "$work/go-re.trace" -- "$work/go-re" 300 >/dev/null 2>"$work/go-re.rerr"
rrc=$?
"$SU" stacks "$work/go-re.trace" >"$work/go-re.out" 2>"$work/go-re.err"
named=$(grep -c " main\.hot+0x[0-9a-f]* ($work/go-re)" "$work/go-re.out")
cp "$work/go-cgo" "$work/go-re"
"$SU" stacks --no-cache "$work/go-re.trace" >"$work/go-re2.out" 2>"$work/go-re2.err"
wrong=$(grep " [^ ]*+0x[0-9a-f]* ($work/go-re)" "$work/go-re2.out" | grep -vc " go-re+0x[0-9a-f]* (")
check "go rebuilt since recorded (recorded: exit $rrc): the trace's $named main.hot frames named before; after, the other build refused (build-id mismatch said), $wrong frames named from it$(tail -n 1 "$work/go-re.err")" \
	sh -c "[ $named -ge 50 ] && [ $wrong = 0 ] && grep -q ' 1 build-id mismatches' '$work/go-re2.err'"

# ---- ld.so ------------------------------------------------------------------
# The system calls of a C program's start: ld.so's, under its _start.
perf record -q -k monotonic -e raw_syscalls:sys_enter --call-graph dwarf -o "$work/ldso.data" \
	-- "$TD/tdata-single" 0.01 >/dev/null 2>"$work/ldso.rerr"
"$SU" stacks "$work/ldso.data" >"$work/ldso.out" 2>"$work/ldso.err"
starts=$(grep -c ' _start+0x[0-9a-f]* (.*/ld-linux-x86-64.so.2)$' "$work/ldso.out")
nocfi=$(grep -c '\[no-cfi\]' "$work/ldso.out")
check "ld.so: $starts stacks end in its _start, none as [no-cfi] ($nocfi)" [ "$starts" -gt 5 -a "$nocfi" = 0 ]
check "ld.so: the summary counts none stopped early" grep -q ' 0 stopped early,' "$work/ldso.err"

# ---- a function inlined into itself -------------------------------------------
if ! dpkg-query -W -f='${Status}' libc6-dbg 2>/dev/null | grep -q 'install ok installed'; then
	not_ok "libc6-dbg missing (glibc's DWARF): apt-get install libc6-dbg (scripts/install-deps.sh)"
else
	"$STACKCAP" record -o "$work/dd.trace" -- dd if=/dev/zero of=/dev/null bs=64 count=300000 \
		>/dev/null 2>"$work/dd.rerr"
	"$SU" stacks "$work/dd.trace" >"$work/dd.out" 2>"$work/dd.err"
	reads=$(grep -c ' __GI___libc_read+0x' "$work/dd.out")
	# An (inlined) frame at the pc of the frame below it, with its name.
	dups=$(awk '/^\t/ { name = $2; sub(/\+0x[0-9a-f]+$/, "", name)
		if (inl && $1 == ppc && name == pname) d++
		inl = $3 == "(inlined)"; ppc = $1; pname = name; next }
		{ inl = 0 } END { print d + 0 }' "$work/dd.out")
	check "dd: $reads frames in __GI___libc_read, none under an (inlined) copy of itself ($dups)" \
		[ "$reads" -gt 0 -a "$dups" = 0 ]
fi

echo "1..$n"
