/* SPDX-License-Identifier: MIT */
/* A thread that maps a perf.data file's pages ahead of its reader.
 *
 * The file is read through a mapping, and mapping its pages (a fault, the
 * kernel filling page tables for 16 cached pages at a time) was a quarter
 * of the CPU time of `stackunwind folded` on a 76 MB file and half of it
 * on a 1 GB one, all on the reader's thread, the one every sample waits
 * for.  With another core to spare (stackunwind -j N > 1), this thread
 * takes those faults a few megabytes ahead of the reader, so the reader
 * finds the pages mapped.  It touches no page further than that, and
 * gives back (MADV_DONTNEED) the pages the reader says it is done with:
 * what is mapped at once stays bounded however long the file, and the
 * teardown of the mapping is off the reader's thread too. */
#ifndef STACKCAP_TRACE_PERF_AHEAD_H
#define STACKCAP_TRACE_PERF_AHEAD_H

#include <stdint.h>

struct perf_ahead;

/* Start mapping the SIZE bytes at MAP (a read-only file mapping) from
 * offset FROM, at most PERF_AHEAD_BYTES ahead of what perf_ahead_at says.
 * NULL when the thread could not start (nothing else changes). */
struct perf_ahead *perf_ahead_start(const uint8_t *map, uint64_t size, uint64_t from);

#define PERF_AHEAD_BYTES (8u << 20)

/* The reader is at offset POS (call it every megabyte or so). */
void perf_ahead_at(struct perf_ahead *a, uint64_t pos);

/* Nothing reads the mapping below offset BELOW any more: the thread gives
 * those pages back (MADV_DONTNEED, 2 MB at a time) when it has nothing to
 * map, on its own core rather than the reader's.  -1 when the thread
 * left, its first 4-8 MB mapping faster than 10 us a megabyte (the
 * file's pages cached in large folios: the reader's own faults cost
 * little): the caller gives them back itself. */
int perf_ahead_release(struct perf_ahead *a, uint64_t below);

/* Stop the thread and free A, once nothing reads the mapping any more:
 * the thread and the caller first give back all of its pages together
 * (MADV_DONTNEED, 2 MB each in turn), so that the munmap after finds
 * none to tear down.  That munmap was 2.5-3 ms of a 15 ms run on a 76 MB
 * file, on one thread while the other core sat idle (-j 1 gives pages
 * back as it reads: none are left at the end).  A NULL: nothing. */
void perf_ahead_stop(struct perf_ahead *a);

#endif
