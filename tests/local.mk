# tests/: unit tests (Check, reporting TAP), shell integration tests (TAP),
# sanitizer builds and fuzz targets.

check_PROGRAMS += tests/unit/test-stack-codec
tests_unit_test_stack_codec_SOURCES = tests/unit/test-stack-codec.c tests/unit/check-main.h
tests_unit_test_stack_codec_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_stack_codec_LDADD = compress/libstackcodec.la $(CHECK_LIBS)
TESTS += tests/unit/test-stack-codec

# record/sigframe.c: the signal frame in a copied alternate stack.
check_PROGRAMS += tests/unit/test-sigframe
tests_unit_test_sigframe_SOURCES = tests/unit/test-sigframe.c tests/unit/check-main.h record/sigframe.c record/sigframe.h
tests_unit_test_sigframe_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_sigframe_LDADD = compress/libstackcodec.la $(CHECK_LIBS)
TESTS += tests/unit/test-sigframe

# common/: grow, hash, hash map, varints (and under ASan+UBSan).
check_PROGRAMS += tests/unit/test-common tests/unit/test-common-asan
tests_unit_test_common_SOURCES = tests/unit/test-common.c tests/unit/check-main.h
tests_unit_test_common_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_common_LDADD = common/libsucommon.la $(CHECK_LIBS)
tests_unit_test_common_asan_SOURCES = $(tests_unit_test_common_SOURCES) common/grow.c common/hashmap.c
tests_unit_test_common_asan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_common_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_common_asan_LDADD = $(CHECK_LIBS)
TESTS += tests/unit/test-common tests/unit/test-common-asan

check_PROGRAMS += tests/unit/test-ctf-writer
tests_unit_test_ctf_writer_SOURCES = tests/unit/test-ctf-writer.c tests/unit/check-main.h
tests_unit_test_ctf_writer_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(ZSTD_CFLAGS)
tests_unit_test_ctf_writer_LDADD = capture/libctfwriter.la $(ZSTD_LIBS) $(CHECK_LIBS)
TESTS += tests/unit/test-ctf-writer

# The reader's event sources: native and babeltrace2 deliver the same
# events; damaged stream files.
check_PROGRAMS += tests/unit/test-trace-sources
tests_unit_test_trace_sources_SOURCES = tests/unit/test-trace-sources.c tests/unit/check-main.h
tests_unit_test_trace_sources_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(ZSTD_CFLAGS)
tests_unit_test_trace_sources_LDADD = trace/libsutrace.la trace/libsubt2lazy.la capture/libctfwriter.la $(ZSTD_LIBS) $(CHECK_LIBS)
TESTS += tests/unit/test-trace-sources

# The perf.data reader (trace/perf-data.h) on images built by the test:
# what it delivers, perf's round order, damaged and cut files.
check_PROGRAMS += tests/unit/test-perf-data
tests_unit_test_perf_data_SOURCES = tests/unit/test-perf-data.c tests/unit/check-main.h
tests_unit_test_perf_data_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_perf_data_LDADD = trace/libsutrace.la trace/libsubt2lazy.la $(CHECK_LIBS)
TESTS += tests/unit/test-perf-data

# Where the stack of an sp ends, from the mappings MMAP records announce.
check_PROGRAMS += tests/unit/test-mem-ranges
tests_unit_test_mem_ranges_SOURCES = tests/unit/test-mem-ranges.c tests/unit/check-main.h
tests_unit_test_mem_ranges_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_mem_ranges_LDADD = trace/libsutrace.la trace/libsubt2lazy.la $(CHECK_LIBS)
TESTS += tests/unit/test-mem-ranges

# The same codec tests under ASan+UBSan, as part of every `make check`.
SANITIZE_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
check_PROGRAMS += tests/unit/test-stack-codec-asan
tests_unit_test_stack_codec_asan_SOURCES = $(tests_unit_test_stack_codec_SOURCES) \
	compress/stack-codec.c
tests_unit_test_stack_codec_asan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_stack_codec_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_stack_codec_asan_LDADD = $(CHECK_LIBS)
TESTS += tests/unit/test-stack-codec-asan

check_PROGRAMS += tests/unit/test-ctf-writer-asan
tests_unit_test_ctf_writer_asan_SOURCES = $(tests_unit_test_ctf_writer_SOURCES) \
	capture/ctf-writer.c capture/ctf-metadata.c $(common_libsucommon_la_SOURCES)
tests_unit_test_ctf_writer_asan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(ZSTD_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_ctf_writer_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_ctf_writer_asan_LDADD = $(ZSTD_LIBS) $(CHECK_LIBS)
TESTS += tests/unit/test-ctf-writer-asan

check_PROGRAMS += tests/unit/test-trace-sources-asan
tests_unit_test_trace_sources_asan_SOURCES = $(tests_unit_test_trace_sources_SOURCES) \
	trace/stackcap-reader.c trace/trace-dir.c trace/parts-plan.c trace/source-native.c trace/source-babeltrace2.c trace/bt2-event.c trace/bt2-graph.c \
	capture/ctf-writer.c capture/ctf-metadata.c $(common_libsucommon_la_SOURCES) compress/stack-codec.c
tests_unit_test_trace_sources_asan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(ZSTD_CFLAGS) $(BABELTRACE2_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_trace_sources_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_trace_sources_asan_LDADD = $(BABELTRACE2_LIBS) $(ZSTD_LIBS) $(CHECK_LIBS)
TESTS += tests/unit/test-trace-sources-asan

check_PROGRAMS += tests/unit/test-perf-data-asan
tests_unit_test_perf_data_asan_SOURCES = $(tests_unit_test_perf_data_SOURCES) \
	trace/perf-data.c trace/perf-procs.c trace/perf-sample.c trace/perf-stream.c trace/perf-ahead.c trace/kallsyms.c trace/kallsyms-cache.c trace/kallsyms-ahead.c trace/mem-ranges.c \
	trace/stackcap-reader.c trace/trace-dir.c trace/parts-plan.c trace/source-native.c trace/source-babeltrace2.c trace/bt2-event.c trace/bt2-graph.c \
	capture/ctf-writer.c capture/ctf-metadata.c $(common_libsucommon_la_SOURCES) compress/stack-codec.c
tests_unit_test_perf_data_asan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(ZSTD_CFLAGS) $(BABELTRACE2_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_perf_data_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_perf_data_asan_LDADD = $(BABELTRACE2_LIBS) $(ZSTD_LIBS) $(CHECK_LIBS)
TESTS += tests/unit/test-perf-data-asan

# The -j pipeline on samples made by hand: images rebuilt from deltas by workers.
check_PROGRAMS += tests/unit/test-pipeline
tests_unit_test_pipeline_SOURCES = tests/unit/test-pipeline.c tests/unit/check-main.h cli/pipeline.c cli/pipeline.h \
	cli/spread.c cli/spread.h
tests_unit_test_pipeline_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBDW_CFLAGS) -pthread
tests_unit_test_pipeline_LDFLAGS = -pthread
tests_unit_test_pipeline_LDADD = export/libsuexport.la compress/libstackcodec.la common/libsucommon.la $(CHECK_LIBS)
TESTS += tests/unit/test-pipeline

# Threads started on another CPU than their creator's, and not left pinned.
check_PROGRAMS += tests/unit/test-spread
tests_unit_test_spread_SOURCES = tests/unit/test-spread.c tests/unit/check-main.h cli/spread.c cli/spread.h
tests_unit_test_spread_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -pthread
tests_unit_test_spread_LDFLAGS = -pthread
tests_unit_test_spread_LDADD = $(CHECK_LIBS)
TESTS += tests/unit/test-spread

# stacks in parts: the parts' texts merged in the whole read's order.
check_PROGRAMS += tests/unit/test-ordered
tests_unit_test_ordered_SOURCES = tests/unit/test-ordered.c tests/unit/check-main.h cli/ordered.c cli/ordered.h
tests_unit_test_ordered_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -pthread
tests_unit_test_ordered_LDFLAGS = -pthread
tests_unit_test_ordered_LDADD = export/libsuexport.la common/libsucommon.la $(CHECK_LIBS)
check_PROGRAMS += tests/unit/test-ordered-asan
tests_unit_test_ordered_asan_SOURCES = $(tests_unit_test_ordered_SOURCES) export/text.c common/grow.c common/io.c
tests_unit_test_ordered_asan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(SANITIZE_FLAGS) -O1 -pthread
tests_unit_test_ordered_asan_LDFLAGS = $(SANITIZE_FLAGS) -pthread
tests_unit_test_ordered_asan_LDADD = $(CHECK_LIBS)
check_PROGRAMS += tests/unit/test-ordered-tsan
tests_unit_test_ordered_tsan_SOURCES = $(tests_unit_test_ordered_asan_SOURCES)
tests_unit_test_ordered_tsan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -fsanitize=thread -O1 -pthread
tests_unit_test_ordered_tsan_LDFLAGS = -fsanitize=thread -pthread
tests_unit_test_ordered_tsan_LDADD = $(CHECK_LIBS)
TESTS += tests/unit/test-ordered tests/unit/test-ordered-asan tests/unit/test-ordered-tsan
check_PROGRAMS += tests/unit/test-pipeline-asan
tests_unit_test_pipeline_asan_SOURCES = $(tests_unit_test_pipeline_SOURCES) export/text.c compress/stack-codec.c \
	$(common_libsucommon_la_SOURCES)
tests_unit_test_pipeline_asan_CFLAGS = $(tests_unit_test_pipeline_CFLAGS) $(ZSTD_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_pipeline_asan_LDFLAGS = -pthread $(SANITIZE_FLAGS)
tests_unit_test_pipeline_asan_LDADD = $(ZSTD_LIBS) $(CHECK_LIBS)
TESTS += tests/unit/test-pipeline-asan

# `make check-sanitize`: only the sanitizer builds.
check-sanitize:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS="tests/unit/test-common-asan tests/unit/test-stack-codec-asan tests/unit/test-ctf-writer-asan \
		tests/unit/test-debuginfo-asan tests/unit/test-symbolize-asan tests/unit/test-unwind-asan \
		tests/unit/test-trace-sources-asan tests/unit/test-perf-data-asan tests/unit/test-export-asan tests/unit/test-flamegraph-asan \
		tests/unit/test-report-asan tests/unit/test-ir-copy-asan tests/unit/test-pipeline-asan"
.PHONY: check-sanitize

# Fuzz targets: replayed over the committed corpus by every `make check`
# (any compiler), and run under libFuzzer with --enable-fuzzing.
FUZZ_TARGETS = decode roundtrip native-source perf-data perf-dir symbolize-text
check_PROGRAMS += tests/fuzz/replay-decode tests/fuzz/replay-roundtrip
tests_fuzz_replay_decode_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-decode.c tests/fuzz/fuzz-common.h
tests_fuzz_replay_decode_CPPFLAGS = $(AM_CPPFLAGS) -DDEFAULT_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/decode"'
tests_fuzz_replay_decode_LDADD = compress/libstackcodec.la
tests_fuzz_replay_roundtrip_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-roundtrip.c tests/fuzz/fuzz-common.h
tests_fuzz_replay_roundtrip_CPPFLAGS = $(AM_CPPFLAGS) -DDEFAULT_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/roundtrip"'
tests_fuzz_replay_roundtrip_LDADD = compress/libstackcodec.la
TESTS += tests/fuzz/replay-decode tests/fuzz/replay-roundtrip
check_PROGRAMS += tests/fuzz/replay-native-source
tests_fuzz_replay_native_source_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-native-source.c tests/fuzz/fuzz-reader.h
tests_fuzz_replay_native_source_CPPFLAGS = $(AM_CPPFLAGS) -DDEFAULT_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/native-source"'
tests_fuzz_replay_native_source_LDADD = trace/libsutrace.la trace/libsubt2lazy.la
TESTS += tests/fuzz/replay-native-source
# The perf.data reader (trace/perf-data.c) on arbitrary files.
check_PROGRAMS += tests/fuzz/replay-perf-data
tests_fuzz_replay_perf_data_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-perf-data.c tests/fuzz/fuzz-reader.h \
	tests/fuzz/fuzz-kallsyms.c
tests_fuzz_replay_perf_data_CPPFLAGS = $(AM_CPPFLAGS) -DDEFAULT_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/perf-data"'
tests_fuzz_replay_perf_data_LDADD = trace/libsutrace.la trace/libsubt2lazy.la
TESTS += tests/fuzz/replay-perf-data
# The same on the directories of perf record --threads (DIR/data, DIR/data.N).
check_PROGRAMS += tests/fuzz/replay-perf-dir
tests_fuzz_replay_perf_dir_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-perf-dir.c tests/fuzz/fuzz-reader.h \
	tests/fuzz/fuzz-kallsyms.c
tests_fuzz_replay_perf_dir_CPPFLAGS = $(AM_CPPFLAGS) -DDEFAULT_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/perf-dir"'
tests_fuzz_replay_perf_dir_LDADD = trace/libsutrace.la trace/libsubt2lazy.la
TESTS += tests/fuzz/replay-perf-dir
# The symbolizer's own parsers of outside bytes: CPython line tables, perf maps.
check_PROGRAMS += tests/fuzz/replay-symbolize-text
tests_fuzz_replay_symbolize_text_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-symbolize-text.c
tests_fuzz_replay_symbolize_text_CPPFLAGS = $(AM_CPPFLAGS) -DDEFAULT_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/symbolize-text"'
tests_fuzz_replay_symbolize_text_LDADD = symbolize/libsusymbolize.la common/libsucommon.la
TESTS += tests/fuzz/replay-symbolize-text
EXTRA_DIST += tests/fuzz/corpus tests/fuzz/run-fuzzers.sh tests/fuzz/record-seeds.sh

noinst_PROGRAMS += tests/fuzz/make-seeds
tests_fuzz_make_seeds_SOURCES = tests/fuzz/make-seeds.c tests/fuzz/fuzz-common.h
tests_fuzz_make_seeds_LDADD = compress/libstackcodec.la
fuzz-seeds: tests/fuzz/make-seeds
	mkdir -p $(srcdir)/tests/fuzz/corpus/decode $(srcdir)/tests/fuzz/corpus/roundtrip
	tests/fuzz/make-seeds $(srcdir)/tests/fuzz/corpus/decode $(srcdir)/tests/fuzz/corpus/roundtrip

FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I$(top_srcdir)
FUZZ_CODEC_SRC = $(top_srcdir)/compress/stack-codec.c
# The whole reader with the native source (babeltrace2's source is linked, never run).
FUZZ_READER_SRC = $(top_srcdir)/trace/stackcap-reader.c $(top_srcdir)/trace/trace-dir.c $(top_srcdir)/trace/parts-plan.c $(top_srcdir)/trace/source-native.c \
	$(top_srcdir)/trace/source-babeltrace2.c $(top_srcdir)/trace/bt2-event.c $(top_srcdir)/trace/bt2-graph.c $(top_srcdir)/common/zstd-frame.c \
	$(top_srcdir)/common/io.c $(top_srcdir)/common/grow.c $(top_srcdir)/common/hashmap.c \
	$(FUZZ_CODEC_SRC)
FUZZ_PERF_SRC = $(top_srcdir)/trace/perf-data.c $(top_srcdir)/trace/perf-procs.c $(top_srcdir)/trace/mem-ranges.c \
	$(top_srcdir)/trace/perf-sample.c $(top_srcdir)/trace/perf-stream.c $(top_srcdir)/trace/perf-ahead.c $(top_srcdir)/trace/kallsyms-cache.c \
	$(top_srcdir)/trace/kallsyms-ahead.c \
	$(top_srcdir)/common/cache-file.c \
	$(top_srcdir)/tests/fuzz/fuzz-kallsyms.c
if ENABLE_FUZZING
check_PROGRAMS += tests/fuzz/fuzz-decode tests/fuzz/fuzz-roundtrip tests/fuzz/fuzz-native-source tests/fuzz/fuzz-perf-data \
	tests/fuzz/fuzz-perf-dir tests/fuzz/fuzz-symbolize-text
tests_fuzz_fuzz_decode_SOURCES =
tests_fuzz_fuzz_roundtrip_SOURCES =
tests_fuzz_fuzz_native_source_SOURCES =
tests_fuzz_fuzz_perf_data_SOURCES =
tests_fuzz_fuzz_perf_dir_SOURCES =
tests_fuzz_fuzz_symbolize_text_SOURCES =
tests/fuzz/fuzz-decode$(EXEEXT): $(top_srcdir)/tests/fuzz/fuzz-decode.c $(FUZZ_CODEC_SRC)
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && $(CLANG) $(FUZZ_CFLAGS) -o $@ $^
tests/fuzz/fuzz-roundtrip$(EXEEXT): $(top_srcdir)/tests/fuzz/fuzz-roundtrip.c $(FUZZ_CODEC_SRC)
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && $(CLANG) $(FUZZ_CFLAGS) -o $@ $^
tests/fuzz/fuzz-native-source$(EXEEXT): $(top_srcdir)/tests/fuzz/fuzz-native-source.c $(top_srcdir)/tests/fuzz/fuzz-reader.h $(FUZZ_READER_SRC)
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && $(CLANG) $(FUZZ_CFLAGS) -D_GNU_SOURCE \
		$(BABELTRACE2_CFLAGS) $(ZSTD_CFLAGS) -o $@ $(filter %.c,$^) $(BABELTRACE2_LIBS) $(ZSTD_LIBS)
tests/fuzz/fuzz-perf-data$(EXEEXT): $(top_srcdir)/tests/fuzz/fuzz-perf-data.c $(top_srcdir)/tests/fuzz/fuzz-reader.h $(FUZZ_PERF_SRC) $(FUZZ_READER_SRC)
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && $(CLANG) $(FUZZ_CFLAGS) -D_GNU_SOURCE \
		$(BABELTRACE2_CFLAGS) $(ZSTD_CFLAGS) -o $@ $(filter %.c,$^) $(BABELTRACE2_LIBS) $(ZSTD_LIBS)
tests/fuzz/fuzz-perf-dir$(EXEEXT): $(top_srcdir)/tests/fuzz/fuzz-perf-dir.c $(top_srcdir)/tests/fuzz/fuzz-reader.h $(FUZZ_PERF_SRC) $(FUZZ_READER_SRC)
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && $(CLANG) $(FUZZ_CFLAGS) -D_GNU_SOURCE \
		$(BABELTRACE2_CFLAGS) $(ZSTD_CFLAGS) -o $@ $(filter %.c,$^) $(BABELTRACE2_LIBS) $(ZSTD_LIBS)
tests/fuzz/fuzz-symbolize-text$(EXEEXT): $(top_srcdir)/tests/fuzz/fuzz-symbolize-text.c $(top_srcdir)/symbolize/pyline.c \
		$(top_srcdir)/symbolize/perfmap.c $(top_srcdir)/common/hashmap.c $(top_srcdir)/common/grow.c
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && $(CLANG) $(FUZZ_CFLAGS) -D_GNU_SOURCE -o $@ $^
TESTS += tests/fuzz/run-fuzzers.sh
endif

# `make fuzz`: the long runs (FUZZ_SECONDS each, default 30 minutes), one
# target after the other; crashes land in tests/fuzz/crash-TARGET-*.
if ENABLE_FUZZING
fuzz:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS=tests/fuzz/run-fuzzers.sh FUZZ_SECONDS=$${FUZZ_SECONDS:-1800}
else
fuzz:
	@echo "make fuzz: the libFuzzer targets are not built: configure with --enable-fuzzing (needs clang)" >&2; exit 1
endif
.PHONY: fuzz fuzz-seeds

# The testdata programs run, and gdb sees exactly their documented chains.
TESTS += tests/testdata.sh
dist_check_SCRIPTS += tests/testdata.sh

# Integration: stackcap record on the testdata programs.
check_PROGRAMS += tests/jit-burn
tests_jit_burn_SOURCES = tests/jit-burn.c
check_PROGRAMS += tests/remap-burn
tests_remap_burn_SOURCES = tests/remap-burn.c
# The same as an ET_EXEC (fixed addresses: libdwfl cannot place its second
# mapping; tests/node.sh).
check_PROGRAMS += tests/remap-burn-nopie
tests_remap_burn_nopie_SOURCES = tests/remap-burn.c
tests_remap_burn_nopie_CFLAGS = $(AM_CFLAGS) -fno-pie
tests_remap_burn_nopie_LDFLAGS = -no-pie
check_PROGRAMS += tests/thread-churn
tests_thread_churn_SOURCES = tests/thread-churn.c
tests_thread_churn_LDADD = -lpthread
check_PROGRAMS += tests/fork-burn
tests_fork_burn_SOURCES = tests/fork-burn.c
# The main thread's pthread_exit while another thread goes on
# (tests/record-in-process.sh, tests/lttng.sh).
check_PROGRAMS += tests/tsd-exit-burn
tests_tsd_exit_burn_SOURCES = tests/tsd-exit-burn.c
tests_tsd_exit_burn_LDADD = -lpthread -ldl
# A coroutine on a malloc'ed stack (makecontext) (tests/record.sh).
check_PROGRAMS += tests/fiber-burn
tests_fiber_burn_SOURCES = tests/fiber-burn.c
# A signal handler whose restorer has no CFI, as Go's (tests/record.sh).
check_PROGRAMS += tests/restorer-burn
tests_restorer_burn_SOURCES = tests/restorer-burn.c
TESTS += tests/record.sh tests/record-in-process.sh

# Integration: the kernel copy where the in-process hook cannot reach
# (threads blocking signals, static and Go binaries, exit_group, closed
# fds), attach, the whole machine, against perf record.
check_PROGRAMS += tests/hard-burn tests/no-perf-events
tests_hard_burn_SOURCES = tests/hard-burn.c
tests_hard_burn_CFLAGS = $(AM_CFLAGS) -O1 -g -pthread
tests_hard_burn_LDFLAGS = -pthread
tests_no_perf_events_SOURCES = tests/no-perf-events.c
TESTS += tests/kernel-record.sh
TESTS += tests/kernel-frames.sh
EXTRA_DIST += tests/kernel-frames.sh
TESTS += tests/addr-cache.sh
EXTRA_DIST += tests/addr-cache.sh
TESTS += tests/cfi-cache.sh
EXTRA_DIST += tests/cfi-cache.sh
TESTS += tests/off-cpu.sh
EXTRA_DIST += tests/off-cpu.sh
EXTRA_DIST += tests/plt-burn.c
EXTRA_DIST += tests/kernel-record.sh
# stackcap record -e: tracepoints, uprobes, SDT markers, software events,
# the event per sample; a trace of the parent commit (testdata/trace-v1).
TESTS += tests/events.sh
EXTRA_DIST += tests/events.sh
EXTRA_DIST += tests/record.sh tests/record-in-process.sh tests/tap-lib.sh

# Integration: stackunwind on recorded traces (chains, unwinders, bad input).
TESTS += tests/unwind.sh
EXTRA_DIST += tests/unwind.sh

# Integration: every class of bad input against every stackunwind command and
# stackcap convert; the table in docs/RELIABILITY.md must match.
TESTS += tests/bad-input.sh
EXTRA_DIST += tests/bad-input.sh
# Control characters of a trace escaped in every output (symbolize/resolve.h).
TESTS += tests/escape.sh
EXTRA_DIST += tests/escape.sh
# stackunwind -j N: many threads interleaved, delta-coded blobs, deep stacks:
# -j 1, 2 and 8 byte-identical (cli/pipeline.c).
TESTS += tests/parallel.sh
EXTRA_DIST += tests/parallel.sh

# Names of Rust, Go, PLT and ld.so frames against addr2line and perf.
TESTS += tests/names.sh
EXTRA_DIST += tests/names.sh testdata/rust/words.rs testdata/go/main.go testdata/go/cgo.go \
	testdata/go/nocgo.go testdata/go/go.mod
# Code mapped a second time (tests/remap-burn, V8's builtins), node
# --perf-basic-prof, both samplers.
TESTS += tests/node.sh
EXTRA_DIST += tests/node.sh tests/node-hot.js

# Our exports read by the tools that read them (go tool pprof, debuginfod,
# speedscope).
TESTS += tests/real-clients.sh
EXTRA_DIST += tests/real-clients.sh tests/speedscope-browser.js

# Choosing samples by time (--time +START,+END), empty filters said.
TESTS += tests/report.sh
EXTRA_DIST += tests/report.sh

# Integration: crafted traces and perf.data files that asked for unbounded
# memory or time, or named files to hang on or leak (issue 16); their
# generator writes them at test time.
check_PROGRAMS += tests/hostile-gen
tests_hostile_gen_SOURCES = tests/hostile-gen.c
tests_hostile_gen_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS)
tests_hostile_gen_LDADD = capture/libctfwriter.la compress/libstackcodec.la $(ZSTD_LIBS)
TESTS += tests/hostile-input.sh
EXTRA_DIST += tests/hostile-input.sh

# Integration: a secret on a live stack frame never reaches a trace (every
# policy, zstd, perf.data converted) nor any stackunwind output.
check_PROGRAMS += tests/secret-holder
tests_secret_holder_SOURCES = tests/secret-holder.c
TESTS += tests/secret.sh
EXTRA_DIST += tests/secret.sh
# Python frames (issue 18): tests/python/chains.py under stackcap record --python.
TESTS += tests/python.sh
EXTRA_DIST += tests/python.sh tests/python/chains.py tests/python/lib.sh
# The same checks with trixie's python3.13, in a cached trixie chroot
# (after tests/unit/test-cpython-layout, which it also runs on 3.13).
TESTS += tests/python-new.sh
EXTRA_DIST += tests/python-new.sh

# Integration: a setuid-root program linked with libstackcap, run by nobody,
# records nothing and writes nowhere the caller's environment says.
TESTS += tests/setuid.sh
# Containers (another mount namespace) and replaced files: the build-ids
# of the files the process maps, kept copies (record/keep-binaries.h).
TESTS += tests/containers.sh
EXTRA_DIST += tests/containers.sh
# stackunwind archive: a trace that reads the same without the machine's
# binaries and debug files (cli/archive.h).
TESTS += tests/archive.sh
EXTRA_DIST += tests/archive.sh
EXTRA_DIST += tests/setuid.sh tests/setuid-prog.c

# Integration: stackunwind export.  pprof-check decodes the pprof file with
# protobuf-c; speedscope-check.js validates the JSON against the schema the
# npm package speedscope ships (ajv; npm installs both under tests/node-cache).
check_PROGRAMS += tests/pprof-check
tests_pprof_check_SOURCES = tests/pprof-check.c
tests_pprof_check_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(ZLIB_CFLAGS)
tests_pprof_check_LDADD = cli/libpprofproto.la $(ZLIB_LIBS)
TESTS += tests/export.sh
EXTRA_DIST += tests/export.sh tests/speedscope-check.js
# The export model and writers on records made by hand.
check_PROGRAMS += tests/unit/test-export
tests_unit_test_export_SOURCES = tests/unit/test-export.c tests/unit/check-main.h \
	cli/export-model.c cli/export-speedscope.c cli/export-pprof.c
tests_unit_test_export_CPPFLAGS = $(AM_CPPFLAGS)
tests_unit_test_export_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBDW_CFLAGS) $(PROTOBUF_C_CFLAGS) $(ZLIB_CFLAGS)
tests_unit_test_export_LDADD = cli/libpprofproto.la unwind/libsuunwind.la debuginfo/libsudebuginfo.la trace/libsutrace.la trace/libsubt2lazy.la \
	$(ZLIB_LIBS) $(CHECK_LIBS)
TESTS += tests/unit/test-export
check_PROGRAMS += tests/unit/test-export-asan
tests_unit_test_export_asan_SOURCES = $(tests_unit_test_export_SOURCES)
tests_unit_test_export_asan_CPPFLAGS = $(tests_unit_test_export_CPPFLAGS)
tests_unit_test_export_asan_CFLAGS = $(tests_unit_test_export_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_export_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_export_asan_LDADD = $(tests_unit_test_export_LDADD)
TESTS += tests/unit/test-export-asan
clean-local: clean-node-cache
clean-node-cache:
	-rm -rf tests/node-cache tests/go-pprof
.PHONY: clean-node-cache
# LTTng: our own session daemon on a private LTTNG_HOME (docs/lttng.md);
# lttng-probe: a user's own event with a stack (linked liblttng-stackcap).
TESTS += tests/lttng.sh
EXTRA_DIST += tests/lttng.sh tests/lttng-probe.c tests/lttng-probe-tp.h
if HAVE_LTTNG_UST
check_PROGRAMS += tests/lttng-probe
tests_lttng_probe_SOURCES = tests/lttng-probe.c tests/lttng-probe-tp.h
# The installed headers, included as a user's program includes them.
tests_lttng_probe_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/capture -I$(top_srcdir)/capture/lttng
tests_lttng_probe_CFLAGS = $(AM_CFLAGS) $(LTTNG_UST_CFLAGS)
tests_lttng_probe_LDADD = capture/liblttng-stackcap.la $(LTTNG_UST_LIBS)
endif
# stackunwind flamegraph: the SVG (tests/flamegraph.sh), and in a headless
# chromium (tests/browser.sh, which installs chromium and playwright-core).
TESTS += tests/flamegraph.sh tests/browser.sh
EXTRA_DIST += tests/flamegraph.sh tests/browser.sh tests/browser-flame.js tests/browser-lib.js
# Its playwright-core (npm) stays in the build tree until distclean.
distclean-local: distclean-browser-cache
distclean-browser-cache:
	rm -rf tests/browser-cache
.PHONY: distclean-browser-cache
# The SVG writer alone, on hand-made stacks (and under ASan+UBSan).
check_PROGRAMS += tests/unit/test-flamegraph tests/unit/test-flamegraph-asan
tests_unit_test_flamegraph_SOURCES = tests/unit/test-flamegraph.c tests/unit/check-main.h \
	export/flamegraph.c export/flamegraph.h common/grow.c common/hashmap.c
tests_unit_test_flamegraph_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_flamegraph_LDADD = $(CHECK_LIBS) -lm
tests_unit_test_flamegraph_asan_SOURCES = $(tests_unit_test_flamegraph_SOURCES)
tests_unit_test_flamegraph_asan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_flamegraph_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_flamegraph_asan_LDADD = $(CHECK_LIBS) -lm
TESTS += tests/unit/test-flamegraph tests/unit/test-flamegraph-asan
# stackunwind report's table and tree on hand-made folded counts (and under ASan+UBSan).
check_PROGRAMS += tests/unit/test-report tests/unit/test-report-asan
tests_unit_test_report_SOURCES = tests/unit/test-report.c tests/unit/check-main.h cli/report.c cli/report.h \
	export/folded.c export/text.c common/grow.c common/hashmap.c common/io.c
tests_unit_test_report_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBDW_CFLAGS)
tests_unit_test_report_LDADD = $(CHECK_LIBS)
tests_unit_test_report_asan_SOURCES = $(tests_unit_test_report_SOURCES)
tests_unit_test_report_asan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBDW_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_report_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_report_asan_LDADD = $(CHECK_LIBS)
TESTS += tests/unit/test-report tests/unit/test-report-asan
# The resolver's escaping and the folded lines and counts (export/folded.c).
check_PROGRAMS += tests/unit/test-resolve
tests_unit_test_resolve_SOURCES = tests/unit/test-resolve.c tests/unit/check-main.h
tests_unit_test_resolve_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBDW_CFLAGS)
tests_unit_test_resolve_LDADD = export/libsuexport.la symbolize/libsusymbolize.la debuginfo/libsudebuginfo.la \
	trace/libsutrace.la trace/libsubt2lazy.la $(CHECK_LIBS)
TESTS += tests/unit/test-resolve

# Code fed babeltrace2 messages, on a graph made in the test
# (bt2-fixture.[ch]: a scripted source, no trace on disk): the LTTng join
# and the babeltrace2 plugin's IR copier (compiled in: the plugin is a
# loadable module).
check_PROGRAMS += tests/unit/test-lttng-join tests/unit/test-ir-copy
tests_unit_test_lttng_join_SOURCES = tests/unit/test-lttng-join.c tests/unit/bt2-fixture.c tests/unit/bt2-fixture.h \
	tests/unit/check-main.h
tests_unit_test_lttng_join_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(BABELTRACE2_CFLAGS)
tests_unit_test_lttng_join_LDADD = trace/libsutrace.la $(BABELTRACE2_LIBS) $(CHECK_LIBS)
tests_unit_test_ir_copy_SOURCES = tests/unit/test-ir-copy.c tests/unit/bt2-fixture.c tests/unit/bt2-fixture.h \
	tests/unit/check-main.h plugin/ir-copy.c plugin/ir-copy.h common/grow.c common/grow.h
tests_unit_test_ir_copy_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(BABELTRACE2_CFLAGS)
tests_unit_test_ir_copy_LDADD = $(BABELTRACE2_LIBS) $(CHECK_LIBS)
TESTS += tests/unit/test-lttng-join tests/unit/test-ir-copy
# The IR copier under ASan+UBSan (its own code instrumented; babeltrace2 not).
check_PROGRAMS += tests/unit/test-ir-copy-asan
tests_unit_test_ir_copy_asan_SOURCES = $(tests_unit_test_ir_copy_SOURCES)
tests_unit_test_ir_copy_asan_CFLAGS = $(tests_unit_test_ir_copy_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_ir_copy_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_ir_copy_asan_LDADD = $(tests_unit_test_ir_copy_LDADD)
TESTS += tests/unit/test-ir-copy-asan
# Integration: perf.data from perf record --call-graph dwarf, beside perf script.
TESTS += tests/perf.sh
EXTRA_DIST += tests/perf.sh tests/perf-compare.sh

# libstackcap linked by a program: the public API and stackcap_capture().
check_PROGRAMS += tests/capture-api
tests_capture_api_SOURCES = tests/capture-api.c
tests_capture_api_LDADD = capture/libstackcap.la
TESTS += tests/capture-api.sh
EXTRA_DIST += tests/capture-api.sh

# debuginfo/: modules by build-id.  tdata-single-nopie is tdata-single as
# an ET_EXEC, to check that module addresses are ELF addresses there too.
check_PROGRAMS += tests/unit/tdata-single-nopie
tests_unit_tdata_single_nopie_SOURCES = testdata/single.c testdata/tdata.h
tests_unit_tdata_single_nopie_CFLAGS = $(AM_CFLAGS) $(TDATA_CFLAGS) -fno-pie
tests_unit_tdata_single_nopie_LDFLAGS = -no-pie
$(tests_unit_tdata_single_nopie_OBJECTS): CFLAGS += $(TDATA_CFLAGS)

check_PROGRAMS += tests/unit/test-debuginfo
tests_unit_test_debuginfo_SOURCES = tests/unit/test-debuginfo.c tests/unit/check-main.h \
	tests/unit/elf-util.c tests/unit/elf-util.h
tests_unit_test_debuginfo_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
tests_unit_test_debuginfo_LDADD = debuginfo/libsudebuginfo.la common/libsucommon.la $(LIBDW_LIBS) $(LIBELF_LIBS) $(CHECK_LIBS)
EXTRA_tests_unit_test_debuginfo_DEPENDENCIES = tests/unit/tdata-single-nopie testdata/tdata-single testdata/libtdata-plugin.la
TESTS += tests/unit/test-debuginfo

# symbolize/: checked against a libdwarf oracle and addr2line (binutils).
# libdwarf and libdw export the same names: the libdwarf oracle is a program.
check_PROGRAMS += tests/unit/dwarf-oracle
tests_unit_dwarf_oracle_SOURCES = tests/unit/dwarf-oracle.c
tests_unit_dwarf_oracle_CFLAGS = $(AM_CFLAGS) $(LIBDWARF_CFLAGS)
tests_unit_dwarf_oracle_LDADD = $(LIBDWARF_LIBS)

check_PROGRAMS += tests/unit/cxx-fixture
tests_unit_cxx_fixture_SOURCES = tests/unit/cxx-fixture.cc
tests_unit_cxx_fixture_CXXFLAGS = -g -O2

check_PROGRAMS += tests/unit/test-symbolize
tests_unit_test_symbolize_SOURCES = tests/unit/test-symbolize.c tests/unit/check-main.h \
	tests/unit/elf-util.c tests/unit/elf-util.h \
	tests/unit/oracle-client.c tests/unit/dwarf-oracle.h
tests_unit_test_symbolize_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
tests_unit_test_symbolize_LDADD = symbolize/libsusymbolize.la debuginfo/libsudebuginfo.la \
	common/libsucommon.la $(LIBDW_LIBS) $(LIBELF_LIBS) $(CHECK_LIBS)
EXTRA_tests_unit_test_symbolize_DEPENDENCIES = tests/unit/cxx-fixture tests/unit/dwarf-oracle testdata/tdata-single \
	testdata/tdata-nofp testdata/tdata-inline testdata/libtdata-plugin.la
TESTS += tests/unit/test-symbolize

# symbolize/symtab.c: libdwfl's dwfl_module_addrinfo as the oracle.
check_PROGRAMS += tests/unit/test-symtab
tests_unit_test_symtab_SOURCES = tests/unit/test-symtab.c tests/unit/check-main.h \
	tests/unit/elf-util.c tests/unit/elf-util.h
tests_unit_test_symtab_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
tests_unit_test_symtab_LDADD = symbolize/libsusymbolize.la common/libsucommon.la $(LIBDW_LIBS) $(LIBELF_LIBS) $(CHECK_LIBS)
EXTRA_tests_unit_test_symtab_DEPENDENCIES = testdata/tdata-single testdata/libtdata-plugin.la
TESTS += tests/unit/test-symtab

# The debuginfo and symbolize tests under ASan+UBSan too.
check_PROGRAMS += tests/unit/test-debuginfo-asan tests/unit/test-symbolize-asan
tests_unit_test_debuginfo_asan_SOURCES = $(tests_unit_test_debuginfo_SOURCES) debuginfo/module.c debuginfo/perf-cache.c debuginfo/inflate-cache.c debuginfo/inflate-ahead.c debuginfo/debuginfod-load.c common/cache-file.c common/grow.c common/io.c
tests_unit_test_debuginfo_asan_CFLAGS = $(tests_unit_test_debuginfo_CFLAGS) $(DEBUGINFOD_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_debuginfo_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_debuginfo_asan_LDADD = $(LIBDW_LIBS) $(LIBELF_LIBS) $(DL_LIBS) $(LIBDEFLATE_LIBS) $(CHECK_LIBS)
EXTRA_tests_unit_test_debuginfo_asan_DEPENDENCIES = $(EXTRA_tests_unit_test_debuginfo_DEPENDENCIES)
tests_unit_test_symbolize_asan_SOURCES = $(tests_unit_test_symbolize_SOURCES) debuginfo/module.c debuginfo/perf-cache.c debuginfo/inflate-cache.c debuginfo/debuginfod-load.c \
	symbolize/symbolize.c symbolize/symtab.c symbolize/escape.c symbolize/addr-cache.c symbolize/sort.c common/grow.c \
	common/cache-file.c common/io.c
tests_unit_test_symbolize_asan_CFLAGS = $(tests_unit_test_symbolize_CFLAGS) $(DEBUGINFOD_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_symbolize_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_symbolize_asan_LDADD = $(LIBDW_LIBS) $(LIBELF_LIBS) $(DL_LIBS) $(IBERTY_LIBS) $(LIBDEFLATE_LIBS) $(CHECK_LIBS)
EXTRA_tests_unit_test_symbolize_asan_DEPENDENCIES = $(EXTRA_tests_unit_test_symbolize_DEPENDENCIES)
TESTS += tests/unit/test-debuginfo-asan tests/unit/test-symbolize-asan
check_PROGRAMS += tests/unit/test-symtab-asan
tests_unit_test_symtab_asan_SOURCES = $(tests_unit_test_symtab_SOURCES) symbolize/symtab.c symbolize/sort.c
tests_unit_test_symtab_asan_CFLAGS = $(tests_unit_test_symtab_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_symtab_asan_LDFLAGS = $(SANITIZE_FLAGS)
tests_unit_test_symtab_asan_LDADD = $(LIBDW_LIBS) $(LIBELF_LIBS) $(CHECK_LIBS)
EXTRA_tests_unit_test_symtab_asan_DEPENDENCIES = $(EXTRA_tests_unit_test_symtab_DEPENDENCIES)
TESTS += tests/unit/test-symtab-asan

# unwind/: samples of the test process itself, through the codec, unwound
# by both unwinders.  -rdynamic: dladdr names the chain functions.
UNWIND_TEST_SOURCES = tests/unit/test-unwind.c tests/unit/check-main.h \
	tests/unit/uw-sample.c tests/unit/uw-sample.h tests/unit/uw-asm.S
check_PROGRAMS += tests/unit/test-unwind
tests_unit_test_unwind_SOURCES = $(UNWIND_TEST_SOURCES)
tests_unit_test_unwind_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
tests_unit_test_unwind_LDFLAGS = -rdynamic
tests_unit_test_unwind_LDADD = unwind/libsuunwind.la debuginfo/libsudebuginfo.la \
	compress/libstackcodec.la common/libsucommon.la $(LIBDW_LIBS) $(LIBELF_LIBS) $(DL_LIBS) $(CHECK_LIBS)
TESTS += tests/unit/test-unwind

# The same under ASan+UBSan, the unwinder and module cache built in.
check_PROGRAMS += tests/unit/test-unwind-asan
tests_unit_test_unwind_asan_SOURCES = $(UNWIND_TEST_SOURCES) \
	unwind/unwind.c unwind/cfi-cache.c unwind/cfi-file.c unwind/walk-reuse.c unwind/unwind-dwfl.c unwind/runtime-splice.c debuginfo/module.c debuginfo/perf-cache.c debuginfo/inflate-cache.c debuginfo/debuginfod-load.c \
	compress/stack-codec.c common/cache-file.c common/grow.c common/io.c
tests_unit_test_unwind_asan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS) \
	$(DEBUGINFOD_CFLAGS) $(SANITIZE_FLAGS) -O1
tests_unit_test_unwind_asan_LDFLAGS = -rdynamic $(SANITIZE_FLAGS)
tests_unit_test_unwind_asan_LDADD = $(LIBDW_LIBS) $(LIBELF_LIBS) $(DL_LIBS) $(LIBDEFLATE_LIBS) $(CHECK_LIBS)
TESTS += tests/unit/test-unwind-asan

# Integration: the babeltrace2 plugin (plugin/) from the build tree.
TESTS += tests/bt2-plugin.sh
EXTRA_DIST += tests/bt2-plugin.sh
# Reliability (docs/RELIABILITY.md): each scenario run plain and under
# `stackcap record`, same output and status, bounded in time; faults.
check_PROGRAMS += tests/stress/stress
tests_stress_stress_SOURCES = tests/stress/stress.c
tests_stress_stress_LDADD = -lpthread $(DL_LIBS)
# Two limits of TSan itself, shown without stackcap (stress-tsan.sh).
check_PROGRAMS += tests/stress/tsan-limits
tests_stress_tsan_limits_SOURCES = tests/stress/tsan-limits.c
tests_stress_tsan_limits_LDADD = -lpthread
TESTS += tests/stress.sh tests/stress-asan.sh tests/stress-tsan.sh
EXTRA_DIST += tests/stress.sh tests/stress-asan.sh tests/stress-tsan.sh

# capture/cpython-layout.h (the CPython runtime unwinder's offsets) against
# the DWARF of Debian's python3.11 (python3.11-dbg), field by field
# (tests/python-new.sh runs it on trixie's python3.13 too).
check_PROGRAMS += tests/unit/test-cpython-layout
tests_unit_test_cpython_layout_SOURCES = tests/unit/test-cpython-layout.c tests/unit/check-main.h \
	capture/cpython-layout.h
tests_unit_test_cpython_layout_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
tests_unit_test_cpython_layout_LDADD = $(LIBDW_LIBS) $(LIBELF_LIBS) $(CHECK_LIBS)
TESTS += tests/unit/test-cpython-layout
