#!/bin/sh
# Integration: every class of bad input we know, fed to every stackunwind
# command (stacks, folded, report, stats, flamegraph, export speedscope and pprof)
# and to stackcap convert.  For each: the exit status, a first stderr line
# that names the problem, no crash (no signal, no sanitizer report), and what
# was good still read.  The table of what the user sees is written to
# tests/bad-input.table in the build dir and must equal the one in
# docs/RELIABILITY.md (the test fails with the diff otherwise).
. "${top_srcdir:?}/tests/tap-lib.sh"
# BAD_INPUT_STACKUNWIND and BAD_INPUT_STACKCAP run other builds of the two
# tools (an ASan one) through the same cases; recording uses this build.
SU=${BAD_INPUT_STACKUNWIND:-$B/cli/stackunwind}
CONVERT=${BAD_INPUT_STACKCAP:-$STACKCAP}
DOC="$top_srcdir/docs/RELIABILITY.md"
TABLE="$B/tests/bad-input.table"

need "linux-perf zstd util-linux" perf zstd setpriv
need_perf_sampling

# Messages name inputs relative to $work; the unprivileged case reads it too.
cd "$work" || exit 1
chmod 755 "$work"
: >"$work/table"

# Normalize a message for the table: no directory, numbers and build-ids
# (they change from run to run) as N and BUILDID.
norm() {
	sed -e "s|$work/||g" -e 's/[0-9a-f]\{40\}/BUILDID/g' -e 's/[0-9][0-9]*/N/g' -e 's/|/\\|/g'
}
crashed() { # crashed NAME: a signal exit or a sanitizer/runtime report
	[ "$(cat "$1.rc")" -ge 128 ] || grep -q -E 'Sanitizer|runtime error|Segmentation|core dumped' "$1.err"
}
first() { head -n 1 "$1.err"; }

# every INPUT LABEL RC REGEX: every stackunwind command on INPUT; each must
# exit RC with a first stderr line matching REGEX (commands that do not
# open binaries -- stats -- are given as RC_STATS/REGEX_STATS when they
# differ).  Rows of the table, grouped by what the user sees.
RC_STATS= REGEX_STATS= AS_PRE=
every() {
	input=$1; label=$2; want=$3; regex=$4
	: >"$work/rows"
	for cmd in stacks folded report stats flamegraph speedscope pprof; do
		id="$label-$cmd"; id=$(echo "$id" | tr ' /' '__')
		case $cmd in
		flamegraph) run "$id" $AS_PRE "$SU" flamegraph --no-debuginfod -o "$id.svg" "$input" ;;
		speedscope) run "$id" $AS_PRE "$SU" export --format speedscope --no-debuginfod -o "$id.json" "$input" ;;
		pprof) run "$id" $AS_PRE "$SU" export --format pprof --no-debuginfod -o "$id.pb.gz" "$input" ;;
		*) run "$id" $AS_PRE "$SU" "$cmd" --no-debuginfod "$input" ;;
		esac
		w=$want r=$regex
		if [ "$cmd" = stats ] && [ -n "$RC_STATS" ]; then w=$RC_STATS r=$REGEX_STATS; fi
		got=$(cat "$id.rc")
		if crashed "$id"; then
			not_ok "$label / $cmd: crashed (exit $got): $(grep -m 1 -E 'Sanitizer|runtime error|Segmentation' "$id.err")"
		elif [ "$got" = "$w" ] && if [ -z "$r" ]; then [ ! -s "$id.err" ]; else first "$id" | grep -q -E -e "$r"; fi; then
			ok "$label / $cmd: exit $got, says '$(first "$id" | cut -c1-90)'"
		else
			not_ok "$label / $cmd: exit $got (want $w), first line '$(first "$id")' (want /$r/)"
		fi
		case $cmd in speedscope | pprof) c="export $cmd" ;; *) c=$cmd ;; esac
		printf '%s\t%s\t%s\n' "$c" "$got" "$(first "$id" | norm)" >>"$work/rows"
	done
	RC_STATS= REGEX_STATS=
	# One row per distinct (exit, message), its commands joined.
	awk -F'\t' -v label="$label" '
		{ k = $2 "\t" $3; if (!(k in cmds)) { order[++n] = k; cmds[k] = $1 } else cmds[k] = cmds[k] ", " $1; nc[k]++ }
		END { for (i = 1; i <= n; i++) { split(order[i], f, "\t")
			printf "| %s | %s | %s | %s |\n", label, (nc[order[i]] == 7 ? "all" : cmds[order[i]]), (f[2] == "" ? "(nothing)" : f[2]), f[1] } }' \
		"$work/rows" >>"$work/table"
}
# convert INPUT LABEL RC REGEX: stackcap convert INPUT -o LABEL.conv
convert() {
	input=$1; label=$2; want=$3; regex=$4
	id=$(echo "conv-$label" | tr ' /' '__')
	rm -rf "$id.trace"
	run "$id" $AS_PRE "$CONVERT" convert "$input" -o "$id.trace"
	got=$(cat "$id.rc")
	if crashed "$id"; then
		not_ok "$label / convert: crashed (exit $got)"
	elif [ "$got" = "$want" ] && first "$id" | grep -q -E -e "$regex"; then
		ok "$label / convert: exit $got, says '$(first "$id" | cut -c1-90)'"
	else
		not_ok "$label / convert: exit $got (want $want), first line '$(first "$id")' (want /$regex/)"
	fi
	printf '| %s | stackcap convert | %s | %s |\n' "$label" "$(first "$id" | norm)" "$got" >>"$work/table"
}
# stacks_samples ID: sample headers in a stacks output.
stacks_samples() { grep -c '^tdata-single ' "$1.out"; }

# ---- the recordings ---------------------------------------------------------
# User frames only: with kernel frames the first event of a packet may be
# a sample's kernel_chain, where the damage below would hit an address.
"$STACKCAP" record --user-only -o good.trace -- "$TD/tdata-single" 1 2>/dev/null
"$STACKCAP" record --zstd -o zgood.trace -- "$TD/tdata-single" 0.5 2>/dev/null
cp "$TD/tdata-single" victim
"$STACKCAP" record -o victim.trace -- "$work/victim" 0.3 2>/dev/null
perf record -q -k monotonic -e cpu-clock --call-graph dwarf -o good.data -- "$TD/tdata-single" 0.3 \
	>/dev/null 2>&1
perf record -q -k monotonic -e cpu-clock --call-graph dwarf -o - -- "$TD/tdata-single" 0.1 \
	>pipe.data 2>/dev/null
# No call graph at all (plain perf record); call chains by frame pointers
# (-g): stackunwind reads those, convert has no stack to re-encode.
perf record -q -k monotonic -e cpu-clock -o nocg.data -- "$TD/tdata-single" 0.1 >/dev/null 2>&1
perf record -q -k monotonic -e cpu-clock -g -o fp.data -- "$TD/tdata-single" 0.1 >/dev/null 2>&1
run good "$SU" stacks good.trace
ngood=$(stacks_samples good)
check "controls: the good trace reads with exit 0 ($ngood samples), the perf.data too" \
	sh -c "[ $(cat good.rc) = 0 ] && [ $ngood -ge 200 ] && '$SU' stacks good.data >/dev/null 2>&1"

# ---- stackcap traces ----------------------------------------------------------
# A stream file cut inside a packet: the packets before the cut are read.
# The cut falls in the middle of the events of the file's last packet (not
# merely at the file's middle: that may be a packet header, which is
# another message -- a CI run hit it; nor in its first packet: a packet
# holds up to 256 samples, a 0.5 s run fewer than 600).  packet_size, in
# bits, is at byte 56 of a packet (docs/trace-format.md).
cp -r good.trace cut.trace
f=$(ls cut.trace/samples-*)
size=$(stat -c %s "$f") pos=0 psz=0
while :; do
	psz=$(($(od -An -tu8 -j $((pos + 56)) -N 8 "$f" | tr -d ' ') / 8))
	[ "$psz" -gt 81 ] && [ $((pos + psz)) -lt "$size" ] || break
	pos=$((pos + psz))
done
truncate -s $((pos + 80 + (psz - 80) / 2)) "$f"
every cut.trace "samples file cut in a packet" 3 'warning: .*samples-.*cut by the end of the file'
ns=$(stacks_samples "samples_file_cut_in_a_packet-stacks")
check "cut samples file: $ns samples before the cut still unwound" [ "$ns" -ge 50 ]

# Corrupted bytes: the first event's blob (80-byte packet header and
# context, 4-byte event header, 6 bytes of fields) gets a bad format byte.
cp -r good.trace corrupt.trace
f=$(ls corrupt.trace/samples-*)
printf '\377' | dd of="$f" bs=1 seek=90 conv=notrunc 2>/dev/null
every corrupt.trace "corrupted bytes in a samples file" 3 'warning: .*does not decode'
ns=$(stacks_samples "corrupted_bytes_in_a_samples_file-stacks")
check "corrupted blob: the samples that do not depend on it ($ns) still unwound" [ "$ns" -ge 50 ]

# A zstd stream file damaged: the last frame's checksum.
cp -r zgood.trace zdamaged.trace
f=$(ls zdamaged.trace/samples-*.zst)
printf '\377\377\377\377' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") - 4)) conv=notrunc 2>/dev/null
every zdamaged.trace "zstd samples file damaged" 3 "warning: .*samples-.*zst: .*checksum.*zstd frame at byte"
ns=$(stacks_samples "zstd_samples_file_damaged-stacks")
check "damaged zstd file: the frames before the damage read ($ns samples)" [ "$ns" -ge 50 ]

# An empty stream file is read as empty, no warning (a process that exec()s
# before its first flush leaves one): the summary says 0 samples.
cp -r good.trace emptystream.trace
: >"$(ls emptystream.trace/samples-*)"
RC_STATS=0 REGEX_STATS=
every emptystream.trace "empty samples file" 0 '^stackunwind: 0 samples'

# The process stream gone: nothing can be decoded, and the user is told.
cp -r good.trace noproc.trace
rm noproc.trace/proc-*
every noproc.trace "process stream missing" 3 'warning: noproc.trace: no process_start event'

# A stream file nobody may read.  CI runs as root, which reads anything:
# the reader runs as nobody (setpriv) when we are root, on a copy whose
# samples file is mode 000; it runs copies of the tools (self-contained
# binaries) from the work directory, where it writes its outputs too.
if [ "$(id -u)" = 0 ]; then
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
else
	AS=
fi
chmod 777 "$work"
mkdir -m 755 bin
cp "$SU" "$CONVERT" bin/
cp -r good.trace unreadable.trace
chmod -R a+rX unreadable.trace
chmod 000 unreadable.trace/samples-*
SU_SAVED=$SU CONVERT_SAVED=$CONVERT
SU=$work/bin/stackunwind CONVERT=$work/bin/stackcap AS_PRE=$AS
every unreadable.trace "unreadable samples file" 3 'warning: .*samples-.*: Permission denied: file skipped'
SU=$SU_SAVED CONVERT=$CONVERT_SAVED AS_PRE=

# A binary rebuilt since the recording (another build-id): never used.
# (perf's build-id cache, where this script's perf runs kept tdata-single,
# the victim's build-id, would be found: out of the way.)
export PERF_BUILDID_DIR="$work/no-perf-cache"
cp -r victim.trace rebuilt.trace
cp "$TD/tdata-nofp" victim
RC_STATS=0 REGEX_STATS=
every rebuilt.trace "binary rebuilt (other build-id)" 3 'warning: .*victim \(build-id [0-9a-f]+\): the file there has another build-id'
# (Its frames only: libc's may be named, __libc_start_call_main among them
# when a sample lands in start-up -- a CI run did.)
check "rebuilt binary: frames are module+offset, none of its symbols used" \
	sh -c "grep -q -E '^	 *[0-9a-f]+ victim\\+0x[0-9a-f]+ \\(.*victim\\)' 'binary_rebuilt_(other_build-id)-stacks.out' && ! grep -E '\\(.*/victim\\)' 'binary_rebuilt_(other_build-id)-stacks.out' | grep -q -v -E '^	 *[0-9a-f]+ victim\\+0x'"
check "rebuilt binary: counted in the summary" grep -q '[1-9][0-9]* build-id mismatch' 'binary_rebuilt_(other_build-id)-stacks.err'

# The binary gone.
rm victim
RC_STATS=0 REGEX_STATS=
every victim.trace "binary missing" 3 'warning: .*victim \(build-id [0-9a-f]+\): not found'
check "missing binary: frames are module+offset, the summary counts it" \
	sh -c "grep -q -E '^	 *[0-9a-f]+ victim\\+0x[0-9a-f]+' binary_missing-stacks.out && grep -q '1 binaries not found' binary_missing-stacks.err"

# Traces that are refused.
cp -r good.trace version.trace
sed -i 's/stackcap_trace_version = [0-9]*;/stackcap_trace_version = 9;/' version.trace/metadata
every version.trace "trace format version 9" 1 'version.trace: stackcap trace format version 9 not supported'
mkdir foreign.trace
printf '/* CTF 1.8 */\ntrace {\n\tmajor = 1;\n\tminor = 8;\n\tbyte_order = le;\n};\nenv {\n\tdomain = "kernel";\n\ttracer_name = "lttng-modules";\n};\n' \
	>foreign.trace/metadata
: >foreign.trace/channel0_0
every foreign.trace "metadata of another CTF producer" 1 'foreign.trace is not a stackcap trace \(its metadata names tracer "lttng-modules"'
mkdir emptydir
every emptydir "empty directory" 1 'emptydir is not a stackcap trace: emptydir/metadata: No such file'
mkdir notrace
echo "not a trace" >notrace/README
every notrace "directory that is no trace" 1 'notrace is not a stackcap trace: notrace/metadata: No such file'
: >empty.file
every empty.file "empty file" 1 'empty.file is neither a stackcap trace directory nor a perf.data file'
every nonexistent "nonexistent path" 1 'nonexistent: No such file or directory'

# ---- perf.data ---------------------------------------------------------------
head -c 4096 "$TD/tdata-single" >notperf.data
every notperf.data "file that is no perf.data" 1 'notperf.data is neither a stackcap trace directory nor a perf.data file'
head -c $(($(stat -c %s good.data) / 2 + 5)) good.data >cut.data
every cut.data "perf.data cut in the middle" 3 'warning: cut.data: data section cut short'
ns=$(stacks_samples "perf.data_cut_in_the_middle-stacks")
check "cut perf.data: the samples before the cut ($ns) still unwound" [ "$ns" -ge 50 ]
# A record whose size field is zeroed in the middle of the data section.
cp good.data damaged.data
off=$(od -An -tu8 -j 40 -N 8 good.data | tr -d ' ')
dsize=$(od -An -tu8 -j 48 -N 8 good.data | tr -d ' ')
# Walk the records to the middle one (offset of the first past half).
pos=0
while [ $pos -lt $((dsize / 2)) ]; do
	rsz=$(od -An -tu2 -j $((off + pos + 6)) -N 2 good.data | tr -d ' ')
	[ "$rsz" -ge 8 ] || break
	pos=$((pos + rsz))
done
dd if=/dev/zero of=damaged.data bs=1 seek=$((off + pos + 6)) count=2 conv=notrunc 2>/dev/null
every damaged.data "perf.data with a damaged record" 3 'warning: damaged.data: damaged record \(type [0-9]+, size 0\) at offset'
ns=$(stacks_samples "perf.data_with_a_damaged_record-stacks")
check "damaged perf.data record: the samples before it ($ns) still unwound" [ "$ns" -ge 50 ]
# Pipe mode (perf record -o -) cut in the middle: what came before is read.
head -c $(($(stat -c %s pipe.data) / 2 + 5)) pipe.data >pipecut.data
every pipecut.data "pipe-mode perf.data cut in the middle" 3 'warning: pipecut.data: the stream ends inside a record at offset'
ns=$(stacks_samples "pipe-mode_perf.data_cut_in_the_middle-stacks")
check "cut pipe-mode perf.data: the samples before the cut ($ns) still unwound" [ "$ns" -ge 50 ]
every nocg.data "perf.data recorded without call graphs" 1 'nocg.data: recorded without call graphs: its samples hold IP\|TID\|TIME\|PERIOD, .*record with `perf record --call-graph dwarf` \(or -g\)'
cp good.data unreadable.data
chmod 000 unreadable.data
SU=$work/bin/stackunwind AS_PRE=$AS
every unreadable.data "unreadable perf.data" 1 'unreadable.data: Permission denied'
SU=$SU_SAVED AS_PRE=

# ---- stackcap convert -------------------------------------------------------------
convert cut.data "perf.data cut in the middle" 3 'stackcap convert: warning: cut.data: data section cut short'
ns=$("$SU" stacks conv-perf.data_cut_in_the_middle.trace 2>/dev/null | grep -c '^tdata-single ')
check "convert of a cut perf.data: the converted trace holds the $ns samples before the cut" [ "$ns" -ge 50 ]
convert pipecut.data "pipe-mode perf.data cut in the middle" 3 'stackcap convert: warning: pipecut.data: the stream ends inside a record'
convert nocg.data "perf.data recorded without call graphs" 1 'stackcap convert: nocg.data: recorded without call graphs'
convert fp.data "perf.data with call chains, no stacks (-g)" 1 'stackcap convert: fp.data: recorded with call chains \(perf record -g\), not stacks'
convert notperf.data "file that is no perf.data" 1 'stackcap convert: notperf.data is not a perf.data file'
convert empty.file "empty file" 1 'stackcap convert: empty.file is not a perf.data file'
convert good.trace "a stackcap trace directory" 1 'stackcap convert: good.trace is not a perf.data file'
convert nonexistent "nonexistent path" 1 'stackcap convert: nonexistent: No such file or directory'
CONVERT=$work/bin/stackcap AS_PRE=$AS
convert unreadable.data "unreadable perf.data" 1 'stackcap convert: unreadable.data: Permission denied'
CONVERT=$CONVERT_SAVED AS_PRE=
check "a refused convert leaves no output directory behind" \
	sh -c "! ls -d conv-*call_*.trace conv-*no_perf*.trace conv-empty*.trace 2>/dev/null | grep -q ."

# ---- the table in docs/RELIABILITY.md -----------------------------------------------
{
	echo "| Input | Command | What the user sees (first stderr line) | Exit |"
	echo "|---|---|---|---|"
	cat "$work/table"
} >"$TABLE"
sed -n '/^<!-- bad-input table: begin/,/^<!-- bad-input table: end/p' "$DOC" | sed '1d;$d' >"$work/doc-table"
if diff -u "$work/doc-table" "$TABLE" >"$work/table.diff"; then
	ok "the bad-input table in docs/RELIABILITY.md is what the tools print ($(wc -l <"$TABLE") lines)"
else
	not_ok "docs/RELIABILITY.md's bad-input table differs from $TABLE (copy it in):"
	sed 's/^/# /' "$work/table.diff"
fi

echo "1..$n"
