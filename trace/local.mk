# trace/: the sample model and the stackcap trace reader: a core (process
# model, maps, decoding) fed by an event source, our own parser of the
# stream files (default) or babeltrace2 (the reference).
noinst_LTLIBRARIES += trace/libsutrace.la
trace_libsutrace_la_SOURCES = \
	trace/trace-model.h \
	trace/stackcap-reader.h \
	trace/stackcap-reader.c trace/trace-dir.c \
	trace/trace-read.h \
	trace/trace-read.c \
	trace/reader-internal.h \
	trace/reader-push.h \
	trace/native-file.h \
	trace/source-babeltrace2.c \
	trace/source-native.c \
	trace/source-lttng.c \
	trace/lttng-join.h \
	trace/lttng-join.c \
	trace/bt2-event.h \
	trace/bt2-event.c \
	trace/bt2-graph.h \
	trace/bt2-graph.c \
	trace/lttng-reader.h \
	trace/perf-data.h \
	trace/kallsyms.h \
	trace/kallsyms.c \
	trace/kallsyms-cache.c \
	trace/kallsyms-ahead.c \
	trace/perf-data-internal.h \
	trace/perf-data.c \
	trace/perf-procs.c \
	trace/perf-sample.c \
	trace/perf-stream.c \
	trace/perf-ahead.h \
	trace/perf-ahead.c \
	trace/parts-plan.h \
	trace/parts-plan.c \
	trace/mem-ranges.h \
	trace/mem-ranges.c
trace_libsutrace_la_CFLAGS = $(AM_CFLAGS) $(BABELTRACE2_CFLAGS) $(ZSTD_CFLAGS) -pthread
trace_libsutrace_la_LIBADD = common/libsucommon.la compress/libstackcodec.la $(ZSTD_LIBS)

# libbabeltrace2 loaded at its first use (bt2-lazy.c), for the programs:
# link this beside libsutrace, or $(BABELTRACE2_LIBS) for the library
# itself (the babeltrace2 plugin, tests built with the sources).
noinst_LTLIBRARIES += trace/libsubt2lazy.la
trace_libsubt2lazy_la_SOURCES = trace/bt2-lazy.c
trace_libsubt2lazy_la_CFLAGS = $(AM_CFLAGS) $(BABELTRACE2_CFLAGS)
trace_libsubt2lazy_la_LIBADD = $(DL_LIBS)
