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

# Reading a recorded trace with each event source (samples/s, peak RSS).
noinst_PROGRAMS += bench/read
bench_read_SOURCES = bench/read.c
bench_read_CFLAGS = $(AM_CFLAGS) -O2
bench_read_LDADD = trace/libsutrace.la

bench: bench/codec bench/capture
	bench/codec
	rm -rf bench-capture.trace && bench/capture bench-capture.trace
.PHONY: bench
