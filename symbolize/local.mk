# symbolize/: module + ELF address -> functions (inline chain), file:line.
# C++ names are demangled by libiberty's cplus_demangle_v3 (what
# libstdc++'s __cxa_demangle calls), Rust names by its rust_demangle
# (legacy and v0 manglings).
noinst_LTLIBRARIES += symbolize/libsusymbolize.la
symbolize_libsusymbolize_la_SOURCES = symbolize/symbolize.c symbolize/symbolize.h \
	symbolize/perfmap.c symbolize/perfmap.h symbolize/resolve.c symbolize/resolve.h \
	symbolize/pyline.c symbolize/pyline.h symbolize/symtab.c symbolize/symtab.h \
	symbolize/escape.c symbolize/escape.h symbolize/addr-cache.c symbolize/addr-cache.h \
	symbolize/sort.c symbolize/sort.h
symbolize_libsusymbolize_la_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
symbolize_libsusymbolize_la_LIBADD = $(LIBDW_LIBS) $(LIBELF_LIBS) $(IBERTY_LIBS)
