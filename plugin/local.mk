# plugin/: the babeltrace2 plugin `stackcap` (docs/babeltrace2-plugin.md):
# filter.stackcap.unwind, sink.stackcap.folded, source.stackcap.trace.
# A libtool module installed where babeltrace2 looks for system plugins;
# from the build tree: babeltrace2 --plugin-path=BUILD/plugin/.libs
bt2plugindir = $(libdir)/babeltrace2/plugins
bt2plugin_LTLIBRARIES = plugin/babeltrace-plugin-stackcap.la
plugin_babeltrace_plugin_stackcap_la_SOURCES = \
	plugin/plugin.h \
	plugin/stackcap-plugin.c \
	plugin/ir-copy.h \
	plugin/ir-copy.c \
	plugin/filter-unwind.c \
	plugin/sink-folded.c \
	plugin/source-trace.c
plugin_babeltrace_plugin_stackcap_la_CFLAGS = $(AM_CFLAGS) $(BABELTRACE2_CFLAGS) $(LIBDW_CFLAGS) $(ZSTD_CFLAGS)
plugin_babeltrace_plugin_stackcap_la_LDFLAGS = -module -avoid-version -no-undefined
plugin_babeltrace_plugin_stackcap_la_LIBADD = export/libsuexport.la trace/libsutrace.la symbolize/libsusymbolize.la unwind/libsuunwind.la \
	debuginfo/libsudebuginfo.la $(BABELTRACE2_LIBS)
