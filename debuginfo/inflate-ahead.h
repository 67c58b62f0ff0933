/* SPDX-License-Identifier: MIT */
/* The debug files a run will open, inflated ahead on threads of their own.
 *
 * A first run over a recording (nothing kept yet) inflates each compressed
 * debug file it opens (inflate-cache.h): libc's took 65 ms here,
 * python3.11-dbg's 130, each on the thread that met the module first,
 * while every sample waited.  A perf.data file names the binaries its
 * samples hit, with their build-ids, before its first sample (perf
 * record's build-id table); given those, these threads find the debug
 * files by build-id and write their inflated copies while the reader
 * starts, so a lookup finds the copy written or waits for the one being
 * written (su_inflate_cached).  Used with a core to spare (-j N > 1). */
#ifndef STACKCAP_DEBUGINFO_INFLATE_AHEAD_H
#define STACKCAP_DEBUGINFO_INFLATE_AHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "debuginfo/module.h"

struct su_inflate_ahead;

/* Start THREADS threads inflating the debug files of the N build-ids of
 * IDS (each SU_BUILD_ID_MAX bytes, its length in LENS), looked up as OPTS
 * says (never through debuginfod: a server is asked when a lookup needs
 * it).  NULL when OPTS keeps no copies, N is 0, or nothing could start. */
struct su_inflate_ahead *su_inflate_ahead_start(const struct su_debuginfo_opts *opts,
						const uint8_t (*ids)[SU_BUILD_ID_MAX], const uint8_t *lens,
						size_t n, unsigned threads);

/* Wait for the files begun, or with FINISH for every file, then free A
 * (NULL: none).  Without FINISH no further file is begun: at the end of a
 * read, the files no lookup needed are not worth a copy. */
void su_inflate_ahead_stop(struct su_inflate_ahead *a, int finish);

#endif
