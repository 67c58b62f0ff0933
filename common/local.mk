# common/: what several layers share and no layer owns (zstd's lib/common is
# the model): the grow helper, the one hash function and hash map, varints,
# the CTF stream layout, the zstd framing of stream files, whole writes,
# the recorded maps entry.  Below every other layer; includes none of them.
noinst_LTLIBRARIES += common/libsucommon.la
common_libsucommon_la_SOURCES = \
	common/grow.c \
	common/grow.h \
	common/hash.h \
	common/proc-stat.h \
	common/hashmap.c \
	common/hashmap.h \
	common/io.c \
	common/io.h \
	common/cache-file.c \
	common/cache-file.h \
	common/varint.h \
	common/asan.h \
	common/ctf-layout.h \
	common/map-entry.h \
	common/zstd-frame.c \
	common/zstd-frame.h
common_libsucommon_la_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS) -fvisibility=hidden
common_libsucommon_la_LIBADD = $(ZSTD_LIBS)
