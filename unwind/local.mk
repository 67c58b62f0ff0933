# unwind/: registers + stack image -> frames.  Two unwinders behind one
# interface: elfutils' (reference) and the fast one (cached CFI rules).
# Link debuginfo/libsudebuginfo.la beside it.
noinst_LTLIBRARIES += unwind/libsuunwind.la
unwind_libsuunwind_la_SOURCES = \
	unwind/unwind.h \
	unwind/unwind-internal.h \
	unwind/unwind.c \
	unwind/cfi-cache.c \
	unwind/cfi-file.c \
	unwind/walk-reuse.c \
	unwind/unwind-dwfl.c \
	unwind/runtime-splice.c
unwind_libsuunwind_la_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
unwind_libsuunwind_la_LIBADD = $(LIBDW_LIBS) $(LIBELF_LIBS)
