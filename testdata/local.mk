# testdata/: small programs with known call chains, used by the capture and
# unwinding tests (see testdata/README.md).  Built by `make`, never installed.

# How the fixtures are compiled is part of what they test: -O1 (-O2 and no
# frame pointer for tdata-nofp), full debug info, and no sibling calls so
# every frame of a chain is a real frame.
TDATA_CFLAGS = -g -O1 -fno-optimize-sibling-calls
TDATA_NOFP_CFLAGS = -g -O2 -fomit-frame-pointer -fno-optimize-sibling-calls
TDATA_INLINE_CFLAGS = -g -O2 -fno-optimize-sibling-calls

noinst_PROGRAMS += \
	testdata/tdata-single \
	testdata/tdata-threads \
	testdata/tdata-dlopen \
	testdata/tdata-recurse \
	testdata/tdata-nofp \
	testdata/tdata-sigalt \
	testdata/tdata-inline \
	testdata/tdata-offcpu \
	testdata/tdata-demo \
	testdata/tdata-events \
	testdata/tdata-evlib

testdata_tdata_single_SOURCES = testdata/single.c testdata/tdata.h
testdata_tdata_single_CFLAGS = $(AM_CFLAGS) $(TDATA_CFLAGS)

testdata_tdata_threads_SOURCES = testdata/threads.c testdata/tdata.h
testdata_tdata_threads_CFLAGS = $(AM_CFLAGS) $(TDATA_CFLAGS) -pthread
testdata_tdata_threads_LDFLAGS = -pthread

testdata_tdata_dlopen_SOURCES = testdata/dlopen.c testdata/tdata.h testdata/tdata-plugin.h
testdata_tdata_dlopen_CFLAGS = $(AM_CFLAGS) $(TDATA_CFLAGS)
testdata_tdata_dlopen_LDADD = $(DL_LIBS)
EXTRA_testdata_tdata_dlopen_DEPENDENCIES = testdata/libtdata-plugin.la

# The plugin: a real shared object (the -rpath makes libtool build one even
# though it is never installed), found by tdata-dlopen in testdata/.libs/.
noinst_LTLIBRARIES += testdata/libtdata-plugin.la
testdata_libtdata_plugin_la_SOURCES = testdata/plugin.c testdata/tdata.h testdata/tdata-plugin.h
testdata_libtdata_plugin_la_CFLAGS = $(AM_CFLAGS) $(TDATA_CFLAGS)
testdata_libtdata_plugin_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere

testdata_tdata_recurse_SOURCES = testdata/recurse.c testdata/tdata.h
testdata_tdata_recurse_CFLAGS = $(AM_CFLAGS) $(TDATA_CFLAGS)

testdata_tdata_nofp_SOURCES = testdata/nofp.c testdata/tdata.h
testdata_tdata_nofp_CFLAGS = $(AM_CFLAGS) $(TDATA_NOFP_CFLAGS)

testdata_tdata_sigalt_SOURCES = testdata/sigalt.c testdata/tdata.h
testdata_tdata_sigalt_CFLAGS = $(AM_CFLAGS) $(TDATA_CFLAGS)

# Threads blocking in known functions (off-CPU time).
testdata_tdata_offcpu_SOURCES = testdata/offcpu.c testdata/tdata.h
testdata_tdata_offcpu_CFLAGS = $(AM_CFLAGS) $(TDATA_CFLAGS) -pthread
testdata_tdata_offcpu_LDFLAGS = -pthread

testdata_tdata_inline_SOURCES = testdata/inline.c testdata/tdata.h
testdata_tdata_inline_CFLAGS = $(AM_CFLAGS) $(TDATA_INLINE_CFLAGS)

# Known counts of events (stackcap record -e): a write, a function, SDT markers.
testdata_tdata_events_SOURCES = testdata/events.c testdata/events-sem.c testdata/tdata.h testdata/tdata-events.h
testdata_tdata_events_CFLAGS = $(AM_CFLAGS) $(TDATA_CFLAGS)

# A library's events: libtdata-evlib.so (an SDT marker, a function) linked
# by tdata-evlib.  -no-install: the program runs in place, finding the
# library through its rpath (no libtool wrapper script), so that stackcap
# record finds the marker among the command's DT_NEEDED libraries.
noinst_LTLIBRARIES += testdata/libtdata-evlib.la
testdata_libtdata_evlib_la_SOURCES = testdata/evlib.c testdata/tdata.h testdata/tdata-evlib.h
testdata_libtdata_evlib_la_CFLAGS = $(AM_CFLAGS) $(TDATA_CFLAGS)
testdata_libtdata_evlib_la_LDFLAGS = -avoid-version -shared -rpath /nowhere
testdata_tdata_evlib_SOURCES = testdata/evlib-main.c testdata/tdata.h testdata/tdata-evlib.h
testdata_tdata_evlib_CFLAGS = $(AM_CFLAGS) $(TDATA_CFLAGS)
testdata_tdata_evlib_LDADD = testdata/libtdata-evlib.la
testdata_tdata_evlib_LDFLAGS = -no-install

# The demo quickstart.sh records: a C++ profile several levels deep.
testdata_tdata_demo_SOURCES = testdata/demo.cc
testdata_tdata_demo_CXXFLAGS = $(TDATA_CFLAGS)

# Automake puts the user's CFLAGS (by default "-g -O2") after the per-target
# flags, where they would win.  Repeat the fixture flags after them with GNU
# make target-specific variables, so the programs are always built as
# documented whatever CFLAGS the tree was configured with.
$(testdata_tdata_single_OBJECTS) $(testdata_tdata_threads_OBJECTS) \
$(testdata_tdata_dlopen_OBJECTS) $(testdata_libtdata_plugin_la_OBJECTS) \
$(testdata_tdata_recurse_OBJECTS) $(testdata_tdata_sigalt_OBJECTS) \
$(testdata_tdata_events_OBJECTS) $(testdata_tdata_offcpu_OBJECTS) \
$(testdata_libtdata_evlib_la_OBJECTS) $(testdata_tdata_evlib_OBJECTS): CFLAGS += $(TDATA_CFLAGS)
$(testdata_tdata_nofp_OBJECTS): CFLAGS += $(TDATA_NOFP_CFLAGS)
$(testdata_tdata_inline_OBJECTS): CFLAGS += $(TDATA_INLINE_CFLAGS)
$(testdata_tdata_demo_OBJECTS): CXXFLAGS += $(TDATA_CFLAGS)

EXTRA_DIST += testdata/README.md
# A trace recorded by the parent commit of stackcap record -e (4015bdf,
# format version 1): tests/events.sh reads it as cpu-clock samples.
EXTRA_DIST += testdata/trace-v1/metadata testdata/trace-v1/proc-22377-0 testdata/trace-v1/samples-22377-0
# An LTTng trace recorded before blobs were 64-bit words (each blob a
# uint8_t sequence; docs/lttng.md): tests/lttng.sh reads it.
EXTRA_DIST += testdata/lttng-bytes-blob/ust/uid/0/64-bit/metadata testdata/lttng-bytes-blob/ust/uid/0/64-bit/c16_0 \
	testdata/lttng-bytes-blob/ust/uid/0/64-bit/c16_1 testdata/lttng-bytes-blob/ust/uid/0/64-bit/index/c16_0.idx \
	testdata/lttng-bytes-blob/ust/uid/0/64-bit/index/c16_1.idx
