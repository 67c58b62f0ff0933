# capture/: libstackcap.  The standalone CTF trace writer first, a
# convenience library used by the writer thread, record/ and the tests.
noinst_LTLIBRARIES += capture/libctfwriter.la
capture_libctfwriter_la_SOURCES = \
	capture/ctf-writer.c \
	capture/ctf-writer.h \
	capture/ctf-metadata.c \
	capture/ctf-internal.h
capture_libctfwriter_la_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS) -fvisibility=hidden
capture_libctfwriter_la_LIBADD = common/libsucommon.la $(ZSTD_LIBS)

# libstackcap: the capture library, preloadable or linked.
lib_LTLIBRARIES += capture/libstackcap.la
include_HEADERS = capture/stackcap.h
pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = capture/stackcap.pc
capture_libstackcap_la_SOURCES = \
	capture/stackcap.h \
	capture/capture-internal.h \
	capture/ring.h \
	capture/capture.c \
	capture/snapshot.c \
	capture/writer.c \
	capture/lifecycle.c \
	capture/sigchain.c \
	capture/exit.c \
	capture/runtime.h \
	capture/runtime.c \
	capture/rt-cpython.c
capture_libstackcap_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -pthread
# No linker version script: a versioned library could not interpose the
# program's versioned references (pthread_create@GLIBC_2.34, dlopen...).
# The exported set is still exactly the STACKCAP_API symbols
# (-fvisibility=hidden); tests/record.sh checks it.
capture_libstackcap_la_LDFLAGS = -version-info 0:0:0 -no-undefined -pthread
capture_libstackcap_la_LIBADD = compress/libstackcodec.la capture/libctfwriter.la $(ZSTD_LIBS) -ldl -lrt
EXTRA_DIST += capture/stackcap.pc.in

# liblttng-stackcap: libstackcap plus the LTTng-UST provider `stackcap`
# (docs/lttng.md).  The same capture sources, compiled again for this
# library, and lttng-sink.c, which defines the sink they call in LTTng mode.
if HAVE_LTTNG_UST
lib_LTLIBRARIES += capture/liblttng-stackcap.la
include_HEADERS += capture/lttng/stackcap-lttng.h
capture_liblttng_stackcap_la_SOURCES = $(capture_libstackcap_la_SOURCES) \
	capture/lttng/stackcap-tp.h \
	capture/lttng/lttng-sink.c
capture_liblttng_stackcap_la_CFLAGS = $(capture_libstackcap_la_CFLAGS) $(LTTNG_UST_CFLAGS)
capture_liblttng_stackcap_la_LDFLAGS = $(capture_libstackcap_la_LDFLAGS)
capture_liblttng_stackcap_la_LIBADD = $(capture_libstackcap_la_LIBADD) $(LTTNG_UST_LIBS)
else
EXTRA_DIST += capture/lttng/stackcap-tp.h capture/lttng/lttng-sink.c capture/lttng/stackcap-lttng.h
endif
# libstackcap built with ASan+UBSan and with TSan, for tests/stress-asan.sh
# and tests/stress-tsan.sh (preloaded after the sanitizer runtime).  Built
# by `make check` only; -rpath makes libtool build shared objects.
STACKCAP_SAN_SOURCES = $(capture_libstackcap_la_SOURCES) $(capture_libctfwriter_la_SOURCES) \
	$(common_libsucommon_la_SOURCES) compress/stack-codec.c
check_LTLIBRARIES = capture/libstackcap-asan.la capture/libstackcap-tsan.la
capture_libstackcap_asan_la_SOURCES = $(STACKCAP_SAN_SOURCES)
capture_libstackcap_asan_la_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS) -fvisibility=hidden -pthread \
	-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1
capture_libstackcap_asan_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere -pthread \
	-fsanitize=address,undefined
capture_libstackcap_asan_la_LIBADD = $(ZSTD_LIBS) -ldl -lrt
capture_libstackcap_tsan_la_SOURCES = $(STACKCAP_SAN_SOURCES)
capture_libstackcap_tsan_la_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS) -fvisibility=hidden -pthread \
	-fsanitize=thread -O1
capture_libstackcap_tsan_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere -pthread -fsanitize=thread
capture_libstackcap_tsan_la_LIBADD = $(ZSTD_LIBS) -ldl -lrt
