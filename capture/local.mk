# capture/: libstackcap.  For now the standalone CTF trace writer, a
# convenience library used by the writer thread and the tests.
noinst_LTLIBRARIES += capture/libctfwriter.la
capture_libctfwriter_la_SOURCES = \
	capture/ctf-writer.c \
	capture/ctf-writer.h \
	capture/ctf-metadata.c \
	capture/ctf-inflate.c \
	capture/ctf-internal.h
capture_libctfwriter_la_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS) -fvisibility=hidden
capture_libctfwriter_la_LIBADD = $(ZSTD_LIBS)
