/* SPDX-License-Identifier: MIT */
/*
 * keep-binaries.h: copies of the binaries a trace's reader would not
 * find, kept by build-id.
 *
 * A container's files (another mount namespace) and files deleted since
 * they were mapped are not at their recorded path when the trace is read
 * (the path holds the host's file, or nothing): the reader would refuse
 * the file there for its build-id and show module+offset, and the
 * unwinding would stop at the first such frame.  The recorder keeps a
 * copy of each, as perf keeps its ~/.debug, under the cache directory:
 * CACHE/bin/.build-id/xx/rest (0600 in 0700 directories, bounded by
 * su_cache_prune), where stackunwind and the babeltrace2 filter look
 * (debuginfo/module.h).  Copied on a thread of its own from a
 * descriptor opened when the file was met (its process may be gone by
 * the copy): the thread that drains the rings never waits on one.
 */
#ifndef STACKCAP_RECORD_KEEP_BINARIES_H
#define STACKCAP_RECORD_KEEP_BINARIES_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct rec_keeper;

struct rec_keeper_stats {
	uint64_t kept;       /* files copied */
	uint64_t bytes;      /* their bytes */
	uint64_t had;        /* already kept (an earlier recording) */
	uint64_t failed;     /* not kept: its process gone, no space, no permission, too big (512 MB a
			      * file, 2 GB a run), queue full, the directory not safe to write */
	char dir[PATH_MAX];  /* where they go: CACHE/bin */
};

/* Keep copies under CACHE_DIR (su_inflate_default_dir()).  NULL: not
 * (no directory, no memory, no thread). */
struct rec_keeper *rec_keeper_start(const char *cache_dir);

/* Keep the file open at FD (not taken: a duplicate is), of build-id ID
 * (LEN bytes), unless asked for already in this run; FD -1: it could not
 * be opened, counted as not kept. */
void rec_keeper_add(struct rec_keeper *k, int fd, const uint8_t *id, size_t len);

/* Wait for the copies asked for, stop the thread, free K; its counts in
 * *ST (when not NULL). */
void rec_keeper_stop(struct rec_keeper *k, struct rec_keeper_stats *st);

#endif
