/* SPDX-License-Identifier: MIT */
/*
 * archive.h: `stackunwind archive TRACE`, the files a trace's frames need
 * copied into it, so that it reads the same anywhere (as perf archive
 * does for a perf.data).
 *
 * The samples are unwound and named as `folded` does; every module the
 * threads opened on the way (the binaries their frames are in, found here
 * by build-id) is copied with its separate debug file, when there is one,
 * into TRACE/debug/.build-id/xx/rest and rest.debug: the layout of a
 * --debug-dir, which stackunwind reads first for a trace holding one.
 */
#ifndef STACKCAP_CLI_ARCHIVE_H
#define STACKCAP_CLI_ARCHIVE_H

#include "cli/worker.h"

/* Copy the modules of the N threads' contexts WORKERS into O->trace's
 * debug directory; say what was copied on standard error.  @return 0, or
 * -1 when a file could not be written (said). */
int archive_modules(struct worker *workers, unsigned n, const struct options *o);

#endif
