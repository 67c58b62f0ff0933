# debuginfo/: modules by build-id (binary, separate debug info, vDSO,
# debuginfod), each in a private Dwfl; inflated copies of compressed debug
# files kept by build-id.
noinst_LTLIBRARIES += debuginfo/libsudebuginfo.la
# libdebuginfod is loaded at its first use (debuginfod-load.c), not linked.
debuginfo_libsudebuginfo_la_SOURCES = debuginfo/module.c debuginfo/module.h \
	debuginfo/perf-cache.c debuginfo/perf-cache.h \
	debuginfo/inflate-cache.c debuginfo/inflate-cache.h \
	debuginfo/inflate-ahead.c debuginfo/inflate-ahead.h \
	debuginfo/debuginfod-load.c debuginfo/debuginfod-load.h
debuginfo_libsudebuginfo_la_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS) $(DEBUGINFOD_CFLAGS) $(LIBDEFLATE_CFLAGS)
debuginfo_libsudebuginfo_la_LIBADD = $(LIBDW_LIBS) $(LIBELF_LIBS) $(DL_LIBS) $(LIBDEFLATE_LIBS)

# The same without debuginfod (SU_DEBUGINFO_LOCAL_ONLY), for record/: the
# recorder opens only the files the trace names, to learn load biases.
noinst_LTLIBRARIES += debuginfo/libsudebuginfo-local.la
debuginfo_libsudebuginfo_local_la_SOURCES = debuginfo/module.c debuginfo/module.h \
	debuginfo/perf-cache.c debuginfo/perf-cache.h \
	debuginfo/inflate-cache.c debuginfo/inflate-cache.h
debuginfo_libsudebuginfo_local_la_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS) $(LIBDEFLATE_CFLAGS) -DSU_DEBUGINFO_LOCAL_ONLY
debuginfo_libsudebuginfo_local_la_LIBADD = $(LIBDW_LIBS) $(LIBELF_LIBS) $(DL_LIBS) $(LIBDEFLATE_LIBS)
