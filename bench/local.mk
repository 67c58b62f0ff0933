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

bench: bench/codec bench/capture
	bench/codec
	rm -rf bench-capture.trace && bench/capture bench-capture.trace
.PHONY: bench

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
	compress/libstackcodec.la $(LIBDW_LIBS) $(LIBELF_LIBS)
bench-unwind-fast: bench/unwind-fast
	bench/unwind-fast
.PHONY: bench-unwind-fast
