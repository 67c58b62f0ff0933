/* SPDX-License-Identifier: MIT */
/* Where perf keeps the binaries its recordings hit: its build-id cache
 * (perf record adds the files its samples hit; `perf archive` packs them
 * for another machine, unpacked there into the same place).  Binaries
 * are DIR/.build-id/xx/rest/elf.  A perf user's perf.data of a container
 * (whose files are not at their paths here), or of a program rebuilt
 * since, is read with them, as perf report reads it. */
#ifndef STACKCAP_DEBUGINFO_PERF_CACHE_H
#define STACKCAP_DEBUGINFO_PERF_CACHE_H

/* The directory, malloc'd, as perf finds it: $PERF_BUILDID_DIR (perf
 * sets it for the commands it runs), else `buildid.dir` of perf's
 * configuration ($PERF_CONFIG alone when set, else /etc/perfconfig then
 * ~/.perfconfig, the last one saying), else ~/.debug.  NULL when none
 * can be named (no HOME, no memory). */
char *su_perf_buildid_dir(void);

#endif
