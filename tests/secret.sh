#!/bin/sh
# Integration: a secret on the stack never leaks.  tests/secret-holder keeps
# a 64-bit secret and a secret string in a live caller frame of its hot loop.
# Recorded under every policy (f2, f1, zstd) with either sampler (the
# kernel copy, the in-process hook), through LTTng (record --lttng
# into a private session daemon) and through perf (perf record
# --call-graph dwarf, then stackcap convert), the secret must be nowhere in
# the trace files (zstd ones decompressed) nor in any stackunwind output
# (stacks, folded, flamegraph SVG, speedscope, pprof decompressed).  Positive
# controls show the search finds it where it is by design: a --full-copy
# trace (plain and zstd) and the perf.data file itself.
. "${top_srcdir:?}/tests/tap-lib.sh"
SU="$B/cli/stackunwind"
P="$B/tests/secret-holder"

need "linux-perf zstd gzip" perf zstd gzip
if ! echo x | LC_ALL=C grep -q -P 'x' 2>/dev/null; then
	echo "1..1"
	echo "not ok 1 - grep -P (PCRE) missing: apt-get install grep"
	exit 0
fi
need_perf_sampling

# The secrets of tests/secret-holder.c: the word 0x5EC2E7C0DEC0FFEE in
# either byte order or as hex text, and the string.
WORD_LE='\xEE\xFF\xC0\xDE\xC0\xE7\xC2\x5E'
WORD_BE='\x5E\xC2\xE7\xC0\xDE\xC0\xFF\xEE'
WORD_HEX='5ec2e7c0dec0ffee'
STR='XYZZY-quux-sekrit-0451-PLUGH'
# has_secret FILE...: which of the secrets FILE holds (nothing if none).
has_secret() {
	for f in "$@"; do
		case $f in
		*.zst) zstd -q -d -c "$f" ;;
		*.gz) gzip -d -c "$f" ;;
		*) cat "$f" ;;
		esac
	done >"$work/scan"
	found=
	LC_ALL=C grep -q -a -P "$WORD_LE" "$work/scan" && found="$found word(le)"
	LC_ALL=C grep -q -a -P "$WORD_BE" "$work/scan" && found="$found word(be)"
	LC_ALL=C grep -q -a -i -F "$WORD_HEX" "$work/scan" && found="$found word(hex)"
	LC_ALL=C grep -q -a -F "$STR" "$work/scan" && found="$found string"
	# A stored word of it: any 8 bytes of the string (the codec may put
	# tags between words, so the whole string need not be contiguous).
	i=1
	while [ $i -le $((${#STR} - 7)) ]; do
		if LC_ALL=C grep -q -a -F -e "$(echo "$STR" | cut -c$i-$((i + 7)))" "$work/scan"; then
			found="$found string-word"
			break
		fi
		i=$((i + 1))
	done
	echo "$found"
}
# trace_files DIR: every file of a trace, hidden ones too.
trace_files() { find "$1" -type f; }

# outputs NAME INPUT: every stackunwind output of INPUT as NAME.*
outputs() {
	"$SU" stacks --no-debuginfod "$2" >"$work/$1.stacks" 2>>"$work/$1.uerr"
	"$SU" folded --no-debuginfod "$2" >"$work/$1.folded" 2>>"$work/$1.uerr"
	"$SU" flamegraph --no-debuginfod -o "$work/$1.svg" "$2" 2>>"$work/$1.uerr"
	"$SU" export --format speedscope --no-debuginfod -o "$work/$1.json" "$2" 2>>"$work/$1.uerr"
	"$SU" export --format pprof --no-debuginfod -o "$work/$1.pb.gz" "$2" 2>>"$work/$1.uerr"
	"$SU" stats "$2" >"$work/$1.stats" 2>>"$work/$1.uerr"
}

# ---- stackcap record under every policy, with either sampler -------------------
for sampler in $SAMPLERS; do
for pol in f2 f1 zstd; do
	case $pol in
	zstd) opts="--zstd" ;;
	*) opts="--policy $pol" ;;
	esac
	[ "$sampler" = kernel ] || pol=$pol-$sampler
	"$STACKCAP" record $(sampler_opts "$sampler") $opts -o "$work/$pol.trace" -- "$P" 0.6 >/dev/null 2>"$work/$pol.rerr"
	outputs "$pol" "$work/$pol.trace"
	nl=$(awk '/hold_secrets/ { s += $NF } END { print s + 0 }' "$work/$pol.folded")
	check "$pol: recorded with the secrets live ($nl samples through hold_secrets)" [ "$nl" -ge 100 ]
	leak=$(has_secret $(trace_files "$work/$pol.trace"))
	check "$pol: no secret in the trace files ($(trace_files "$work/$pol.trace" | wc -l) files${leak:+; found:$leak})" [ -z "$leak" ]
	for o in stacks folded svg json pb.gz stats; do
		leak=$(has_secret "$work/$pol.$o")
		check "$pol: no secret in the $o output${leak:+ (found:$leak)}" sh -c "[ -s '$work/$pol.$o' ] && [ -z '$leak' ]"
	done
done
done

# ---- Python (record --python): the runtime unwinder reads only code objects --------
# tests/python/chains.py secret: the string and the word in live local
# variables of the hot loop's caller (heap objects: a stack copy would not
# hold them, the runtime unwinder reads the interpreter's memory).
if [ -x /usr/bin/python3 ]; then
	"$STACKCAP" record --python -o "$work/py.trace" -- /usr/bin/python3 "$top_srcdir/tests/python/chains.py" \
		secret 0.6 >/dev/null 2>"$work/py.rerr"
	outputs py "$work/py.trace"
	nl=$(awk '/hold_secrets/ { s += $NF } END { print s + 0 }' "$work/py.folded")
	check "python: recorded with the secrets live ($nl samples through the Python frame hold_secrets)" [ "$nl" -ge 100 ]
	leak=$(has_secret $(trace_files "$work/py.trace"))
	check "python: no secret in the trace files ($(trace_files "$work/py.trace" | wc -l) files${leak:+; found:$leak})" [ -z "$leak" ]
	for o in stacks folded svg json pb.gz stats; do
		leak=$(has_secret "$work/py.$o")
		check "python: no secret in the $o output${leak:+ (found:$leak)}" sh -c "[ -s '$work/py.$o' ] && [ -z '$leak' ]"
	done
else
	not_ok "python: /usr/bin/python3 missing: apt-get install python3 (scripts/install-deps.sh)"
fi

# ---- positive controls: --full-copy stores every stack word ------------------------
for sampler in $SAMPLERS; do
	sfx=
	[ "$sampler" = kernel ] || sfx=-$sampler
	for z in "" --zstd; do
		name=full${z:+-zstd}$sfx
		"$STACKCAP" record $(sampler_opts "$sampler") --full-copy $z -o "$work/$name.trace" -- "$P" 0.3 \
			>/dev/null 2>"$work/$name.rerr"
		found=$(has_secret $(trace_files "$work/$name.trace"))
		check "control ($sampler): a --full-copy${z:+ $z} trace holds the secrets (found:$found)" \
			sh -c "echo '$found' | grep -q 'word(le)' && echo '$found' | grep -q string"
	done
	check "control ($sampler): stackcap record --full-copy warns that it stores every stack word" \
		grep -q 'warning: --full-copy stores every stack word' "$work/full$sfx.rerr"
	check "no warning of the kind without --full-copy ($sampler)" sh -c "! grep -q 'full-copy' '$work/f2$sfx.rerr'"
done

# ---- registers: a word held only in rbx, r12-r15 (secret-holder ... regs) ------------
# Registers are filtered as stack words are, --full-copy included: it stores
# every stack word, never an unfiltered register.  Every stack word: the
# kernel saves the registers in each signal frame it pushes below sp (the
# in-process sampler's own), and a later sample taken deeper (in
# thread_cpu) copies what is left of them in its frames' unwritten slots
# (1 recording of 30 under load).  So a --full-copy trace is searched in
# its filtered images and in every image's registers (docs/stack-codec.md:
# the header, then one token per register), not in the full copies' words.
# full_copy_leak TRACE: as has_secret, over that (zstd files decompressed
# into a copy for babeltrace2; no image read is said as a leak would be).
full_copy_leak() {
	found=$(has_secret $(find "$1" -type f ! -name 'samples-*'))
	rm -rf "$work/plain.trace"
	cp -r "$1" "$work/plain.trace"
	for z in "$work/plain.trace"/*.zst; do
		[ -e "$z" ] && zstd -q -d --rm "$z"
	done
	babeltrace2 "$work/plain.trace" 2>/dev/null | python3 -c '
import re, sys
secret = bytes.fromhex("eeffc0dec0e7c25e")
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80: return v, i
def regs(b):
    i = 2
    _, i = varint(b, i)
    _, i = varint(b, i)
    if b[1] & 16: _, i = varint(b, i)
    mask, i = varint(b, i)
    for r in range(17):
        if mask >> r & 1:
            t, i = varint(b, i)
            if t & 3 == 1: _, i = varint(b, i)
            elif t & 3 == 3: i += 8
    return b[:i]
bad = seen = 0
for line in sys.stdin:
    m = re.search(r"\b(sample|sample_full): .*\bblob = \[ (.*) \]", line)
    if not m: continue
    b = bytes(int(x) for x in re.findall(r"\[\d+\] = (\d+)", m.group(2)))
    seen += 1
    bad += secret in (b if m.group(1) == "sample" else regs(b))
print(" word(le) in %d images or registers" % bad if bad else "" if seen else " no image read")'
	echo "$found"
}
for sampler in $SAMPLERS; do
for opts in "" "--full-copy" "--full-copy --zstd"; do
	name=regs$(echo "$opts" | tr -d ' -')-$sampler
	"$STACKCAP" record $(sampler_opts "$sampler") $opts -o "$work/$name.trace" -- "$P" 0.4 regs \
		>/dev/null 2>"$work/$name.rerr"
	"$SU" folded --no-debuginfod "$work/$name.trace" >"$work/$name.folded" 2>/dev/null
	nl=$(awk '/hold_in_registers/ { s += $NF } END { print s + 0 }' "$work/$name.folded")
	if [ -n "$opts" ]; then
		leak=$(full_copy_leak "$work/$name.trace" | tr -d '\n')
	else
		leak=$(has_secret $(trace_files "$work/$name.trace"))
	fi
	check "registers ($sampler)${opts:+ $opts}: $nl samples with the word in rbx, r12-r15, none in the trace${leak:+ (found:$leak)}" \
		sh -c "[ $nl -ge 100 ] && [ -z '$leak' ]"
done
done

# ---- perf: the perf.data holds the secret, the converted trace does not ------------------
perf record -q -k monotonic -e cpu-clock --call-graph dwarf -o "$work/p.data" -- "$P" 0.6 \
	>/dev/null 2>"$work/p.perr"
found=$(has_secret "$work/p.data")
check "control: perf record --call-graph dwarf stores the secrets in perf.data (found:$found)" \
	sh -c "echo '$found' | grep -q 'word(le)' && echo '$found' | grep -q string"
"$STACKCAP" convert "$work/p.data" -o "$work/conv.trace" 2>"$work/conv.err"
check "stackcap convert of that perf.data: exit 0" [ $? = 0 ]
outputs conv "$work/conv.trace"
nl=$(awk '/hold_secrets/ { s += $NF } END { print s + 0 }' "$work/conv.folded")
check "converted: samples through hold_secrets unwound ($nl)" [ "$nl" -ge 100 ]
leak=$(has_secret $(trace_files "$work/conv.trace"))
check "converted: no secret in the trace files${leak:+ (found:$leak)}" [ -z "$leak" ]
for o in stacks folded svg json pb.gz stats; do
	leak=$(has_secret "$work/conv.$o")
	check "converted: no secret in the $o output${leak:+ (found:$leak)}" sh -c "[ -s '$work/conv.$o' ] && [ -z '$leak' ]"
done
# stackunwind straight on the perf.data: its outputs hold no stack data either.
outputs perf "$work/p.data"
for o in stacks folded svg json pb.gz stats; do
	leak=$(has_secret "$work/perf.$o")
	check "perf.data read directly: no secret in the $o output${leak:+ (found:$leak)}" sh -c "[ -s '$work/perf.$o' ] && [ -z '$leak' ]"
done


# ---- LTTng: stackcap record --lttng into a private session daemon ----------------
# As tests/lttng.sh: our own lttng-sessiond on a private LTTNG_HOME; as root
# everything LTTng runs as nobody (a root daemon always uses /var/run/lttng),
# on copies of the programs it must reach.
lttng_part() {
	for t in lttng lttng-sessiond babeltrace2; do
		if ! command -v $t >/dev/null; then
			not_ok "LTTng: $t missing: apt-get install lttng-tools liblttng-ust-dev babeltrace2 (scripts/install-deps.sh)"
			return
		fi
	done
	if [ ! -e "$B/capture/.libs/liblttng-stackcap.so" ]; then
		not_ok "LTTng: liblttng-stackcap.so was not built: apt-get install liblttng-ust-dev, then configure"
		return
	fi
	lt="$work/lt"
	mkdir -p "$lt/home"
	RUN_STACKCAP=$STACKCAP RUN_P=$P
	if [ "$(id -u)" = 0 ]; then
		chmod 755 "$work"
		X="$work/b"
		mkdir -p "$X/cli" "$X/capture/.libs" "$X/tests"
		cp "$STACKCAP" "$X/cli/" && cp -P "$B"/capture/.libs/liblttng-stackcap.so* "$X/capture/.libs/" &&
			cp "$P" "$X/tests/" || { not_ok "LTTng: cannot copy the programs to run as nobody"; return; }
		chmod -R a+rX "$X"
		RUN_STACKCAP=$X/cli/stackcap RUN_P=$X/tests/secret-holder
		chown -R 65534:65534 "$lt"
		as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$lt/home" LTTNG_HOME="$lt/home" "$@"; }
	else
		as_user() { env HOME="$lt/home" LTTNG_HOME="$lt/home" "$@"; }
	fi
	as_user lttng-sessiond --daemonize --no-kernel >"$work/sessiond.log" 2>&1
	daemon_pid=$(cat "$lt/home/.lttng/lttng-sessiond.pid" 2>/dev/null)
	if [ -z "$daemon_pid" ]; then
		not_ok "LTTng: lttng-sessiond did not start: $(head -n 1 "$work/sessiond.log")"
		return
	fi
	as_user lttng create secret --output="$lt/secret" >/dev/null &&
		as_user lttng enable-channel -u c0 >/dev/null &&
		as_user lttng enable-event -u -c c0 "stackcap:*,lttng_ust_statedump:*,lttng_ust_dl:*,lttng_ust_lib:*" >/dev/null &&
		as_user lttng add-context -u -c c0 -t vpid -t vtid >/dev/null &&
		as_user lttng start >/dev/null
	as_user "$RUN_STACKCAP" record --lttng -- "$RUN_P" 0.6 >/dev/null 2>"$work/lttng.rerr"
	as_user lttng stop >/dev/null
	as_user lttng destroy >/dev/null
	stop_daemon
	outputs lttng "$lt/secret"
	nl=$(awk '/hold_secrets/ { s += $NF } END { print s + 0 }' "$work/lttng.folded")
	check "LTTng: recorded with the secrets live ($nl samples through hold_secrets)" [ "$nl" -ge 100 ]
	leak=$(has_secret $(trace_files "$lt/secret"))
	check "LTTng: no secret in the session's files ($(trace_files "$lt/secret" | wc -l) files${leak:+; found:$leak})" \
		sh -c "[ -d '$lt/secret' ] && [ -z '$leak' ]"
	for o in stacks folded svg json pb.gz stats; do
		leak=$(has_secret "$work/lttng.$o")
		check "LTTng: no secret in the $o output${leak:+ (found:$leak)}" sh -c "[ -s '$work/lttng.$o' ] && [ -z '$leak' ]"
	done
}
daemon_pid=
trap 'stop_daemon; rm -rf "$work"' EXIT
lttng_part
echo "1..$n"
