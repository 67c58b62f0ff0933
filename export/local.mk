# export/: output formats several front ends write (stackunwind, the
# babeltrace2 plugin): the text buffer, folded stacks, the SVG flamegraph.
noinst_LTLIBRARIES += export/libsuexport.la
export_libsuexport_la_SOURCES = export/text.c export/text.h export/folded.c export/folded.h \
	export/flamegraph.c export/flamegraph.h
export_libsuexport_la_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS)
export_libsuexport_la_LIBADD = -lm
