# cli/: the command-line front ends.
bin_PROGRAMS += cli/stackcap
cli_stackcap_SOURCES = cli/stackcap.c
cli_stackcap_CPPFLAGS = $(AM_CPPFLAGS) -DSTACKCAP_LIBDIR='"$(libdir)"'
