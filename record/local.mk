# record/: the kernel sampler of `stackcap record` (a process beside the
# traced ones: perf events, their rings, /proc at attach) and the one
# encoder of samples into a trace, shared with `stackcap convert`.
noinst_LTLIBRARIES += record/librecord.la
record_librecord_la_SOURCES = \
	record/encode.h \
	record/encode.c \
	record/sigframe.h \
	record/sigframe.c \
	record/events.h \
	record/events.c \
	record/files-ahead.h \
	record/files-ahead.c \
	record/kallsyms.h \
	record/kallsyms.c \
	record/offcpu.h \
	record/offcpu.c \
	record/perf-events.h \
	record/perf-events.c \
	record/procmaps.h \
	record/procmaps.c \
	record/proc-files.h \
	record/proc-files.c \
	record/keep-binaries.h \
	record/keep-binaries.c \
	record/keep-jit-maps.h \
	record/keep-jit-maps.c \
	record/recorder.h \
	record/recorder.c
record_librecord_la_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
record_librecord_la_LIBADD = debuginfo/libsudebuginfo-local.la trace/libsutrace.la capture/libctfwriter.la compress/libstackcodec.la $(LIBELF_LIBS)
