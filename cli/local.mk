# cli/: the command-line front ends.
bin_PROGRAMS += cli/stackcap
cli_stackcap_SOURCES = cli/stackcap.c cli/convert.c cli/convert.h
cli_stackcap_LDADD = trace/libsutrace.la compress/libstackcodec.la
cli_stackcap_CPPFLAGS = $(AM_CPPFLAGS) -DSTACKCAP_LIBDIR='"$(libdir)"'

bin_PROGRAMS += cli/stackunwind
cli_stackunwind_SOURCES = cli/stackunwind.c
cli_stackunwind_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) -pthread
cli_stackunwind_LDFLAGS = -pthread
cli_stackunwind_LDADD = trace/libsutrace.la symbolize/libsusymbolize.la unwind/libsuunwind.la \
	debuginfo/libsudebuginfo.la compress/libstackcodec.la
