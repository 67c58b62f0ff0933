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
