# compress/: the stack codec.  Pure functions, no I/O; built on its own.
noinst_LTLIBRARIES += compress/libstackcodec.la
compress_libstackcodec_la_SOURCES = \
	compress/stack-codec.c \
	compress/stack-codec.h \
	compress/rt-frames.h
compress_libstackcodec_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
