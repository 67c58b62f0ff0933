#!/bin/sh
# Integration: off-CPU time (issue 21).  stackcap record --off-cpu keeps,
# for each traced thread that blocks (switched out while not runnable), its
# stack and the time until it runs again (record/offcpu.h); stackunwind
# folded --off-cpu counts that time in microseconds, the flamegraph and
# pprof weigh by it, stacks marks it, stats counts it.
#
# The times asserted are the program's own sleeps (nanosleep sleeps at
# least what it is asked), with 10% above for the wake-up on a busy
# machine; nothing is timed against the recorder.
. "${top_srcdir:?}/tests/tap-lib.sh"
need "linux-perf" perf
need_perf_sampling
need "libxml2-utils" xmllint
need "golang-go" go
[ -e "$B/plugin/.libs/babeltrace-plugin-stackcap.so" ] || {
	echo "1..1"
	echo "not ok 1 - the babeltrace2 plugin was not built (babeltrace2 development files: scripts/install-deps.sh)"
	exit 0
}
UNW="$B/cli/stackunwind"
P="$TD/tdata-offcpu"

# sum_us FILE PATTERN: the counts of FILE's folded lines matching PATTERN.
sum_us() { grep -e "$2" "$1" | awk '{ s += $NF } END { print s + 0 }'; }
# within LO HI V: LO <= V <= HI (integers).
within() { [ "$3" -ge "$1" ] && [ "$3" -le "$2" ]; }

# -- two threads sleep 0.8 s each in sleeper_wait --------------------------------------
"$STACKCAP" record --off-cpu -o "$work/sleep.trace" -- "$P" sleep 0.8 >"$work/sleep.out" 2>"$work/sleep.err"
check "record --off-cpu: exit 0" [ $? = 0 ]
check "record --off-cpu: the summary counts off-CPU stacks ($(grep 'off-CPU' "$work/sleep.err"))" \
	grep -q 'off-CPU: [1-9][0-9]* stacks where threads blocked' "$work/sleep.err"
check "the trace is format version 5 (the off_cpu event declared)" \
	grep -q 'stackcap_trace_version = 5;' "$work/sleep.trace/metadata"
babeltrace2 "$work/sleep.trace" >"$work/sleep.bt2" 2>"$work/sleep.bt2err"
check "babeltrace2 reads the off_cpu events (a duration each)" grep -q 'off_cpu: .*{ duration = [1-9]' "$work/sleep.bt2"

"$UNW" folded --off-cpu "$work/sleep.trace" >"$work/sleep.folded" 2>"$work/sleep.unw"
check "folded --off-cpu: exit 0" [ $? = 0 ]
us=$(sum_us "$work/sleep.folded" ';sleeper_main;sleeper_wait;')
check "folded --off-cpu: 1.6 s blocked under sleeper_main;sleeper_wait (within 10%: $us us)" \
	within 1600000 1760000 "$us"
check "folded --off-cpu: the sleeps are in nanosleep under sleeper_wait" \
	grep -q ';sleeper_wait;[^;]*nanosleep' "$work/sleep.folded"
check "folded --off-cpu: exactly two stacks of sleeper_wait were that long (one per thread)" \
	[ "$(grep -c ';sleeper_wait;' "$work/sleep.folded")" -ge 1 ]
"$UNW" stacks --off-cpu "$work/sleep.trace" >"$work/sleep.stacks" 2>/dev/null
nst=$(awk '/off-cpu [0-9.]* ms:$/ { h = $0 } /sleeper_wait/ && h { c++; h = "" } END { print c + 0 }' "$work/sleep.stacks")
check "stacks --off-cpu: 2 samples in sleeper_wait, each marked 'off-cpu N ms' ($nst)" [ "$nst" = 2 ]
nms=$(grep -o 'off-cpu [0-9]*\.[0-9]* ms:' "$work/sleep.stacks" | awk '$2 >= 800 && $2 <= 880' | wc -l)
check "stacks --off-cpu: at least 2 of them blocked 800 to 880 ms ($nms)" [ "$nms" -ge 2 ]
"$UNW" folded "$work/sleep.trace" >"$work/sleep.cpu" 2>"$work/sleep.cpuerr"
"$UNW" stats "$work/sleep.trace" >"$work/sleep.stats" 2>/dev/null
# A CPU sample may land in sleeper_wait too (the thread's clock ticking as
# it is switched back in after the sleep): the CPU samples are counted,
# every sample but the off-CPU stacks, each weighing 1.
ncpu=$(cpu_samples <"$work/sleep.stats")
nfold=$(sum_us "$work/sleep.cpu" .)
check "plain folded: CPU samples only ($nfold counted, $ncpu taken), the off-CPU stacks left out and said so" \
	sh -c "[ '$nfold' = '$ncpu' ] && grep -q 'off-CPU stacks left out' '$work/sleep.cpuerr'"
"$UNW" folded --with-off-cpu "$work/sleep.trace" >"$work/sleep.with" 2>/dev/null
check "folded --with-off-cpu: off-CPU frames marked _[o]" grep -q ';sleeper_main_\[o\];sleeper_wait_\[o\];' "$work/sleep.with"
wus=$(sum_us "$work/sleep.with" 'sleeper_wait_\[o\]')
check "folded --with-off-cpu: the same time as --off-cpu ($wus = $us)" [ "$wus" = "$us" ]
"$UNW" flamegraph --with-off-cpu -o "$work/sleep.svg" "$work/sleep.trace" 2>/dev/null
check "flamegraph --with-off-cpu: valid SVG" xmllint --noout "$work/sleep.svg"
check "flamegraph --with-off-cpu: counts in us, off-CPU frames named _[o]" \
	sh -c "grep -q '[0-9] us' '$work/sleep.svg' && grep -q 'sleeper_wait_\[o\]' '$work/sleep.svg'"
check "stats counts the off-CPU stacks and their time" grep -q '^off-CPU: *[1-9][0-9]* of the samples' "$work/sleep.stats"
"$UNW" export --format pprof -o "$work/sleep.pb.gz" "$work/sleep.trace" 2>/dev/null
HOME=$work GOCACHE=$work/go go tool pprof -raw "$work/sleep.pb.gz" >"$work/sleep.pprof" 2>&1
check "pprof: its own sample type off-cpu/nanoseconds" grep -q 'off-cpu/nanoseconds' "$work/sleep.pprof"
ns=$(HOME=$work GOCACHE=$work/go go tool pprof -sample_index=off-cpu -top -nodecount=200 "$work/sleep.pb.gz" 2>/dev/null |
	awk '$NF == "sleeper_wait" { v = $4 } END { print v }')
ms=$(echo "$ns" | awk '/ms$/ { print int($1) } /[0-9]s$/ && !/ms$/ { print int($1 * 1000) }')
check "pprof -sample_index=off-cpu: sleeper_wait's cumulative time is 1.6 s to 1.76 s ($ns)" \
	within 1600 1760 "${ms:-0}"

# -- CPU and off-CPU samples in one trace: the babeltrace2 plugin's folded
# sink leaves the off-CPU ones out as stackunwind folded does (kernel
# frames too), and with off-cpu=yes gives folded --off-cpu's bytes.
"$STACKCAP" record --off-cpu -o "$work/mix.trace" -- \
	sh -c "'$TD/tdata-single' 0.3 && '$P' sleep 0.2" >/dev/null 2>"$work/mix.err"
check "mixed recording: exit 0" [ $? = 0 ]
"$UNW" folded "$work/mix.trace" >"$work/mix.folded" 2>/dev/null
"$UNW" folded --off-cpu "$work/mix.trace" >"$work/mix.off" 2>/dev/null
babeltrace2 --plugin-path="$B/plugin/.libs" "$work/mix.trace" -c filter.stackcap.unwind -c sink.stackcap.folded \
	>"$work/mix.sink" 2>"$work/mix.sinkerr"
# The sleeper's thread runs a little too: a CPU sample may land in
# sleeper_wait (seen: a page fault inside nanosleep as it first runs),
# one or two; its 0.2 s asleep would be a stack ending in schedule, with
# a weight in microseconds.
nsw=$(awk '/;sleeper_wait;/ { s += $NF; if ($0 ~ /;schedule [0-9]+$/) s += 1000 } END { print s + 0 }' "$work/mix.folded")
check "mixed: folded has tdata-single's CPU samples and no sleep ($nsw samples in sleeper_wait), folded --off-cpu the sleeps" \
	sh -c "grep -q ';hot_leaf ' '$work/mix.folded' && [ $nsw -le 5 ] && grep -q ';sleeper_wait;' '$work/mix.off'"
grep -q ';hot_leaf ' "$work/mix.folded" && [ "$nsw" -le 5 ] && grep -q ';sleeper_wait;' "$work/mix.off" ||
	{ grep sleeper_wait "$work/mix.folded" | head -n 3; head -n 3 "$work/mix.off"; head -n 3 "$work/mix.err"; } | cut -c1-300 | sed 's/^/# /'
check "mixed: sink.stackcap.folded gives the bytes of stackunwind folded (off-CPU stacks left out)" \
	cmp -s "$work/mix.folded" "$work/mix.sink"
babeltrace2 --plugin-path="$B/plugin/.libs" "$work/mix.trace" -c filter.stackcap.unwind -c sink.stackcap.folded \
	-p off-cpu=yes >"$work/mix.sinkoff" 2>"$work/mix.sinkofferr"
check "mixed: sink.stackcap.folded off-cpu=yes gives the bytes of stackunwind folded --off-cpu" \
	cmp -s "$work/mix.off" "$work/mix.sinkoff"

# -- preempted is not off-CPU: one thread more than there are CPUs, each
# burning CPU, are switched out while runnable; none of that is off-CPU.
"$STACKCAP" record --off-cpu -o "$work/burn.trace" -- "$TD/tdata-threads" -t $(($(nproc) + 1)) 0.5 \
	>/dev/null 2>"$work/burn.err"
check "burners: exit 0" [ $? = 0 ]
pre=$(sed -n 's/.*; \([0-9]*\) preemptions left out.*/\1/p' "$work/burn.err")
"$UNW" folded --off-cpu "$work/burn.trace" >"$work/burn.folded" 2>/dev/null
check "burners: their preemptions left out (${pre:-?} of them), no off-CPU stack under worker_main" \
	sh -c "[ '${pre:-0}' -gt 0 ] && ! grep -q worker_main '$work/burn.folded'"

# -- a reader waiting for a slow writer: 10 bytes 100 ms apart --------------------------
"$STACKCAP" record --off-cpu -o "$work/pipe.trace" -- "$P" pipe 10 100 >"$work/pipe.out" 2>"$work/pipe.err"
check "pipe: record exit 0, the program read its 10 bytes" \
	sh -c "[ $? = 0 ] && grep -q 'read 10 bytes' '$work/pipe.out'"
"$UNW" folded --off-cpu "$work/pipe.trace" >"$work/pipe.folded" 2>/dev/null
rus=$(sum_us "$work/pipe.folded" ';pipe_reader;pipe_read_one;')
check "pipe: the read stacks (main;...;pipe_reader;pipe_read_one) waited 1 s in all (1.0 to 1.1 s: $rus us)" \
	within 1000000 1100000 "$rus"
check "pipe: the waits are in read under pipe_read_one" grep -q ';pipe_read_one;[^;]*read' "$work/pipe.folded"
if [ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/kptr_restrict)" = 0 ]; then
	check "pipe: the kernel part shows the pipe read blocking (vfs_read;...pipe_read;schedule)" \
		grep -q ';vfs_read;[a-z_]*pipe_read;.*schedule ' "$work/pipe.folded"
else
	not_ok "pipe: kernel frames need root or kernel.kptr_restrict=0"
fi

# -- -p and -a -------------------------------------------------------------------------
"$P" pipe 30 100 >"$work/attach.out" 2>&1 &
pid=$!
wait_until 10 sh -c "[ \$(ls /proc/$pid/task | wc -l) -ge 2 ]"
"$STACKCAP" record --off-cpu -p "$pid" -o "$work/attach.trace" >"$work/attach.rec" 2>&1
arc=$?
wait "$pid"
check "-p --off-cpu: recorded until the process ended (exit $arc)" [ "$arc" = 0 ]
"$UNW" folded --off-cpu "$work/attach.trace" >"$work/attach.folded" 2>/dev/null
check "-p --off-cpu: the reader's blocked reads are there" grep -q ';pipe_reader;pipe_read_one;' "$work/attach.folded"
# Every switch of the machine is a sample: a small window keeps the rings
# from filling on a busy machine (losses are counted, not asserted).
"$STACKCAP" record -a --off-cpu --stack-size 8192 -o "$work/all.trace" -- "$P" pipe 10 100 >"$work/all.out" 2>"$work/all.err"
check "-a --off-cpu: exit 0" [ $? = 0 ]
"$UNW" folded --off-cpu --per-process "$work/all.trace" >"$work/all.folded" 2>/dev/null
# A machine switching fast enough fills the rings (two checks at once
# did): then the reads may be among the samples lost, but not silently.
adrops=$(sed -n 's/.* samples, \([0-9]*\) drops.*/\1/p' "$work/all.err" | head -n 1)
aswl=$(sed -n 's/.*; \([0-9]*\) stacks whose switch records were lost.*/\1/p' "$work/all.err" | head -n 1)
check "-a --off-cpu: the reader's blocked reads are there among every process's, or losses were counted ($adrops drops, $aswl switch records lost)" \
	sh -c "grep -q '^tdata-offcpu-[0-9]*;.*;pipe_reader;pipe_read_one;' '$work/all.folded' || [ '${adrops:-0}' -gt 0 ] || [ '${aswl:-0}' -gt 0 ]"

# -- no recording mode makes sleeping calls fail -------------------------------------------
# tests/stress.sh's sleepers scenario (in-process, with its options) under
# every sampler.
for mode in --off-cpu "" --in-process; do
	"$STACKCAP" record $mode -o "$work/eintr$mode.trace" -- "$B/tests/stress/stress" sleepers 300 \
		>"$work/eintr$mode.out" 2>"$work/eintr$mode.err"
	check "sleepers under record${mode:+ $mode}: exit 0, no nanosleep, poll, epoll_wait or read failed ($(cat "$work/eintr$mode.out"))" \
		grep -q 'failed: nanosleep 0, poll 0, epoll_wait 0, read 0$' "$work/eintr$mode.out"
done
check "sleepers under --off-cpu: its blocking calls recorded" \
	sh -c "'$UNW' folded --off-cpu '$work/eintr--off-cpu.trace' 2>/dev/null | grep -q 'epoll_wait'"

# -- -e and --off-cpu together: the context-switch event is one more event
# of the trace's table (format version 5 with version 4's table), its
# stacks named "off-cpu", the -e event's samples (tdata-single's CPU time)
# beside them.
"$STACKCAP" record -e task-clock --off-cpu -o "$work/ev.trace" -- \
	sh -c "'$TD/tdata-single' 0.3 && '$P' sleep 0.8" >/dev/null 2>"$work/ev.err"
check "-e task-clock --off-cpu: exit 0" [ $? = 0 ]
check "-e task-clock --off-cpu: version 5, the table task-clock then off-cpu" sh -c "
	grep -q 'stackcap_trace_version = 5;' '$work/ev.trace/metadata' &&
	grep -q 'stackcap_event_0 = \"task-clock\";' '$work/ev.trace/metadata' &&
	grep -q 'stackcap_event_1 = \"off-cpu\";' '$work/ev.trace/metadata'"
eoff=$(sed -n 's/.*off-CPU: \([0-9]*\) stacks where threads blocked.*/\1/p' "$work/ev.err")
check "-e task-clock --off-cpu: the summary counts per event, off-cpu's as the off-CPU stacks ($(grep 'per event' "$work/ev.err"); $eoff)" \
	grep -q "samples per event: task-clock [1-9][0-9]*, off-cpu ${eoff:-x}\$" "$work/ev.err"
"$UNW" folded --off-cpu "$work/ev.trace" >"$work/ev.folded" 2>/dev/null
eus=$(sum_us "$work/ev.folded" ';sleeper_main;sleeper_wait;')
check "-e task-clock --off-cpu: folded --off-cpu, 1.6 s blocked under sleeper_wait (within 10%: $eus us)" \
	within 1600000 1760000 "$eus"
"$UNW" folded --off-cpu --event off-cpu "$work/ev.trace" >"$work/ev.offev" 2>/dev/null
check "-e task-clock --off-cpu: --event off-cpu selects every off-CPU stack" cmp -s "$work/ev.folded" "$work/ev.offev"
"$UNW" folded --off-cpu --event task-clock "$work/ev.trace" >"$work/ev.tc" 2>/dev/null
check "-e task-clock --off-cpu: --event task-clock has no off-CPU stack" [ ! -s "$work/ev.tc" ]
"$UNW" folded --event task-clock "$work/ev.trace" >"$work/ev.cpu" 2>/dev/null
ntc=$(sed -n 's/.*samples per event: task-clock \([0-9]*\),.*/\1/p' "$work/ev.err")
ncpu=$(sum_us "$work/ev.cpu" .)
check "-e task-clock --off-cpu: --event task-clock has tdata-single's CPU samples, each counted once, none of the sleeps ($ncpu of ${ntc:-?})" \
	sh -c "grep -q ';hot_leaf ' '$work/ev.cpu' && [ '$ncpu' = '${ntc:-x}' ]"
"$UNW" folded --off-cpu --reader babeltrace2 "$work/ev.trace" >"$work/ev.bt2" 2>/dev/null
check "-e task-clock --off-cpu: babeltrace2's reader gives the same off-CPU stacks" cmp -s "$work/ev.folded" "$work/ev.bt2"

# -- refused combinations ----------------------------------------------------------------
"$STACKCAP" record --off-cpu --in-process -o "$work/bad.trace" -- true >/dev/null 2>"$work/bad.err"
check "--off-cpu --in-process: usage error (2), said" sh -c "[ $? = 2 ] && grep -q 'off-cpu' '$work/bad.err'"
"$UNW" export --off-cpu --format pprof -o "$work/x.pb.gz" "$work/sleep.trace" >/dev/null 2>"$work/bad2.err"
check "export --off-cpu: usage error (2)" [ $? = 2 ]
echo "1..$n"
