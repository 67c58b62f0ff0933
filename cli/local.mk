# cli/: the command-line front ends.
bin_PROGRAMS += cli/stackcap
cli_stackcap_SOURCES = cli/stackcap.c cli/convert.c cli/convert.h cli/misplaced.c cli/misplaced.h cli/warn.c cli/warn.h
cli_stackcap_LDADD = record/librecord.la trace/libsutrace.la trace/libsubt2lazy.la compress/libstackcodec.la
cli_stackcap_CPPFLAGS = $(AM_CPPFLAGS) -DSTACKCAP_LIBDIR='"$(libdir)"'

# pprof's profile.proto (Debian's golang-github-google-pprof-dev, never
# copied here), compiled to C by protoc-c in the build tree.
cli/profile.pb-c.c: $(PPROF_PROTO)
	$(AM_V_GEN)$(MKDIR_P) cli && \
	$(PROTOC_C) --c_out=cli --proto_path=$(dir $(PPROF_PROTO)) $(PPROF_PROTO)
cli/profile.pb-c.h: cli/profile.pb-c.c
	@test -f $@ || { rm -f $<; $(MAKE) $(AM_MAKEFLAGS) $<; }
BUILT_SOURCES += cli/profile.pb-c.h
CLEANFILES += cli/profile.pb-c.c cli/profile.pb-c.h
# Generated code: built without our warning flags.
noinst_LTLIBRARIES += cli/libpprofproto.la
nodist_cli_libpprofproto_la_SOURCES = cli/profile.pb-c.c cli/profile.pb-c.h
cli_libpprofproto_la_CFLAGS = $(PROTOBUF_C_CFLAGS)
cli_libpprofproto_la_LIBADD = $(PROTOBUF_C_LIBS)

bin_PROGRAMS += cli/stackunwind
cli_stackunwind_SOURCES = cli/stackunwind.c cli/stackunwind.h cli/pipeline.c cli/pipeline.h cli/spread.c cli/spread.h cli/ordered.c cli/ordered.h \
	cli/worker.c cli/worker.h cli/format.c cli/format.h cli/stats.c cli/archive.c cli/archive.h cli/progress.c cli/progress.h \
	cli/report.c cli/report.h cli/help.c cli/misplaced.c cli/misplaced.h \
	cli/export.h cli/export-model.c cli/export-file.c cli/export-speedscope.c cli/export-pprof.c \
	cli/warn.c cli/warn.h
cli_stackunwind_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(PROTOBUF_C_CFLAGS) $(ZLIB_CFLAGS) -pthread
cli_stackunwind_LDFLAGS = -pthread
cli_stackunwind_LDADD = export/libsuexport.la trace/libsutrace.la trace/libsubt2lazy.la symbolize/libsusymbolize.la unwind/libsuunwind.la \
	debuginfo/libsudebuginfo.la compress/libstackcodec.la cli/libpprofproto.la $(ZLIB_LIBS) -lm
