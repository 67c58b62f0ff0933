# trace/: the sample model and the trace readers (stackcap CTF through
# babeltrace2; LTTng and perf.data later).
noinst_LTLIBRARIES += trace/libsutrace.la
trace_libsutrace_la_SOURCES = \
	trace/trace-model.h \
	trace/stackcap-reader.h \
	trace/stackcap-reader.c \
	trace/reader-internal.h \
	trace/source-babeltrace2.c
trace_libsutrace_la_CFLAGS = $(AM_CFLAGS) $(BABELTRACE2_CFLAGS)
trace_libsutrace_la_LIBADD = compress/libstackcodec.la capture/libctfwriter.la $(BABELTRACE2_LIBS) $(ZSTD_LIBS)
