/* SPDX-License-Identifier: MIT */
/*
 * keep-jit-maps.h: the perf maps of the recorded processes, kept in the
 * trace.
 *
 * A JIT (node --perf-basic-prof, Java's perf-map-agent, Python 3.12 -X
 * perf) names the code it generates in /tmp/perf-PID.map, which
 * stackunwind, like perf script, reads when the trace is read.  That file
 * is on the recording machine only, may by then be a later process's of
 * the same pid, and for a process in a container is in the container's
 * /tmp under the container's pid: a reader on the host never finds it.
 * The recorder copies the map of each process whose JIT code it wrote
 * (an anonymous executable mapping in its maps) into
 * TRACE/jit/perf-PID.map, PID as the trace names the process, where
 * stackunwind looks first (symbolize/perfmap.h).  The map is opened as
 * the process sees it (record/proc-files.h) when its JIT code is first
 * met, its descriptor held (a container's process may be gone by the
 * time its map is copied), and copied as its process ends (a JIT appends
 * to it until then; one over 16 MB at the end of the recording, off the
 * thread that drains the rings), or at the end of the recording.  One
 * map a pid: a pid reused during the recording is counted.
 */
#ifndef STACKCAP_RECORD_KEEP_JIT_MAPS_H
#define STACKCAP_RECORD_KEEP_JIT_MAPS_H

#include <stdint.h>

struct rec_jitmaps;

struct rec_jitmaps_stats {
	uint64_t kept;     /* maps copied into the trace */
	uint64_t bytes;    /* their bytes */
	uint64_t none;     /* processes with JIT code that wrote no map (their JIT's perf map is off) */
	uint64_t refused;  /* a map owned by another user than the process's, root or us: not copied */
	uint64_t unverified; /* the process gone before its user was seen, the map not ours or root's: not copied */
	uint64_t lost;     /* not copied: its process gone before it was opened (another mount
			    * namespace), the trace's disk, over the bounds (256 MB a map, 1 GB a run) */
	uint64_t cut;      /* copied up to 256 MB only: the rest of the map lost */
	uint64_t reused;   /* a later process with JIT code of a pid whose map is kept: named from it */
};

/* Maps kept in TRACE_DIR/jit.  NULL: no memory. */
struct rec_jitmaps *rec_jitmaps_new(const char *trace_dir);

/* PID has JIT code (OTHER_VIEW: rec_proc_other_view's answer): its map
 * opened now if it can be.  @return 1 when nothing more is to be done for
 * PID (its map held, or given up), 0 to be told again at its next JIT
 * code (the map not written yet). */
int rec_jitmaps_seen(struct rec_jitmaps *j, uint32_t pid, int other_view);

/* The maps not found yet opened if they are now (a JIT may write its
 * map just after its first code): the recorder's, every 250 ms, a few
 * times a process at most. */
void rec_jitmaps_retry(struct rec_jitmaps *j);

/* PID's process ended: its map copied now (16 MB at most; a bigger one at
 * rec_jitmaps_finish), its descriptor closed. */
void rec_jitmaps_exit(struct rec_jitmaps *j, uint32_t pid);

/* Copy the maps, free J; its counts in *ST (when not NULL). */
void rec_jitmaps_finish(struct rec_jitmaps *j, struct rec_jitmaps_stats *st);

/* What ST says, for the recording's summary: one line of text at a time
 * to LINE (TRACE_DIR the trace's directory as the user named it). */
void rec_jitmaps_summary(const struct rec_jitmaps_stats *st, const char *trace_dir,
			 void (*line)(void *arg, const char *text), void *arg);

#endif
