# bench/: benchmarks.  Built by `make`, run by hand or `make bench`; their
# numbers go into docs/BENCHMARKS.md.  Never part of `make check`.
noinst_PROGRAMS += bench/codec
bench_codec_SOURCES = bench/codec.c
bench_codec_CFLAGS = $(AM_CFLAGS) -O2
bench_codec_LDADD = compress/libstackcodec.la


noinst_PROGRAMS += bench/capture
bench_capture_SOURCES = bench/capture.c
bench_capture_CFLAGS = $(AM_CFLAGS) -O2
bench_capture_LDADD = capture/libstackcap.la

if HAVE_LTTNG_UST
# The same, through LTTng (bench/capture-lttng --lttng); bench/lttng.sh
# runs it in a session of its own daemon.  `make bench-lttng`.
noinst_PROGRAMS += bench/capture-lttng
bench_capture_lttng_SOURCES = bench/capture.c
bench_capture_lttng_CFLAGS = $(AM_CFLAGS) -O2
bench_capture_lttng_LDADD = capture/liblttng-stackcap.la
bench-lttng: all
	$(SHELL) $(srcdir)/bench/lttng.sh $(abs_top_builddir)
endif
EXTRA_DIST += bench/lttng.sh
# Off-CPU recording beside perf's sched_switch (testdata/tdata-offcpu switch).
EXTRA_DIST += bench/offcpu.sh
# Kernel frames' cost: stackcap record with and without --user-only.
EXTRA_DIST += bench/kernel-frames.sh
# stackcap record -a beside perf record -a on a machine starting hundreds
# of processes a second (shell loops, gcc, xz): CPU, memory, files, drops.
EXTRA_DIST += bench/sys-record.sh
# Our frames beside perf 7's, sample by sample, on a perf.data
# (bench/exact-vs-perf7.sh BUILD_DIR PERF.DATA).
EXTRA_DIST += bench/exact-vs-perf7.sh

# A fixed amount of CPU work through 12..24-frame call chains, timed by
# bench/slowdown.sh with no profiler, stackcap record and perf record.
noinst_PROGRAMS += bench/workload
bench_workload_SOURCES = bench/workload.c
bench_workload_CFLAGS = $(AM_CFLAGS) -g -O2
EXTRA_DIST += bench/slowdown.sh

# The sampling signal alone (empty handler), re-armed per signal or not.
noinst_PROGRAMS += bench/sigfloor
bench_sigfloor_SOURCES = bench/sigfloor.c
bench_sigfloor_CFLAGS = $(AM_CFLAGS) -O2

# The kernel's part of reading a cached perf.data through a mapping
# (bench/perf-vs.sh, beside the ~1 GB file).
noinst_PROGRAMS += bench/page-floor
bench_page_floor_SOURCES = bench/page-floor.c
bench_page_floor_CFLAGS = $(AM_CFLAGS) -O2

# Reading a recorded trace with each event source (samples/s, peak RSS).
noinst_PROGRAMS += bench/read
bench_read_SOURCES = bench/read.c
bench_read_CFLAGS = $(AM_CFLAGS) -O2
bench_read_LDADD = trace/libsutrace.la trace/libsubt2lazy.la

bench: all
	bench/codec
	rm -rf bench-capture.trace && bench/capture bench-capture.trace
	bench/sigfloor -F 999
	bench/sigfloor -F 9999 -u 1500
	$(SHELL) $(srcdir)/bench/slowdown.sh .
.PHONY: bench bench-lttng

# bench/unwind.sh: stackunwind throughput (1 thread, all cores, dwfl) and
# peak memory beside perf script.  `make bench-unwind`.
EXTRA_DIST += bench/unwind.sh
bench-unwind: cli/stackunwind cli/stackcap
	$(SHELL) $(srcdir)/bench/unwind.sh $(abs_top_builddir)
.PHONY: bench-unwind

# bench/unwind-fast: frames/s of the fast and the dwfl unwinder on samples
# of the benchmark process itself.  `make bench-unwind-fast`.
noinst_PROGRAMS += bench/unwind-fast
bench_unwind_fast_SOURCES = bench/unwind-fast.c tests/unit/uw-sample.c tests/unit/uw-sample.h
bench_unwind_fast_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS) -O2
bench_unwind_fast_LDADD = unwind/libsuunwind.la debuginfo/libsudebuginfo.la \
	compress/libstackcodec.la common/libsucommon.la $(LIBDW_LIBS) $(LIBELF_LIBS)
bench-unwind-fast: bench/unwind-fast
	bench/unwind-fast
.PHONY: bench-unwind-fast

# bench/perf-vs.sh: stackunwind stacks and folded beside perf 6.1 script,
# perf 7 script and samply import on perf.data files (median of 3, ratios
# to perf 7), then samples/s on our own trace.  `make bench-perf-vs`
# (PERF_VS_BIG=1: a ~1 GB perf.data too).
EXTRA_DIST += bench/perf-vs.sh
bench-perf-vs: cli/stackunwind cli/stackcap testdata/tdata-recurse testdata/tdata-threads bench/page-floor
	$(SHELL) $(srcdir)/bench/perf-vs.sh $(abs_top_builddir)
.PHONY: bench-perf-vs

# bench/python.sh: the cost of Python frames (stackcap record --python) at
# recursion depths 10, 50, 200, and bytes per sample.  `make bench-python`.
EXTRA_DIST += bench/python.sh
bench-python: cli/stackcap capture/libstackcap.la
	$(SHELL) $(srcdir)/bench/python.sh $(abs_top_builddir)
.PHONY: bench-python

# bench/own-rate.sh: issue 20's aims on our own trace: samples per
# CPU-second of stacks and folded at -j 1 and -j 2 (median of 5,
# interleaved), -j 2's speed-up.  `make bench-own-rate`.
EXTRA_DIST += bench/own-rate.sh
bench-own-rate: cli/stackunwind cli/stackcap testdata/tdata-recurse
	$(SHELL) $(srcdir)/bench/own-rate.sh $(abs_top_builddir)
.PHONY: bench-own-rate

# bench/compare-builds.sh OLD NEW TRACE...: two builds' stackunwind stacks
# and folded -j 1 on the same traces, runs alternated, medians and ratios,
# outputs compared.  By hand (it needs a second build).
EXTRA_DIST += bench/compare-builds.sh
