/* The symbolizer's answers kept between runs (issue 20): per module, a
 * file of (address -> frames) under the cache directory, so a second run
 * over the same binaries names its frames without reading their DWARF.
 *
 * A file is named by the module's build-id and a hash of everything its
 * answers depend on (su_module_kept_path: the binary, the debug file, how
 * they were looked up, the symbolizer's own build) and the symbolizer's
 * flags.  A file is used only when it
 * is ours (owner, 0600, not a symlink) and parses whole; the directory is
 * 0700 (the answers name a program's functions and sources). */
#ifndef STACKCAP_SYMBOLIZE_ADDR_CACHE_H
#define STACKCAP_SYMBOLIZE_ADDR_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include "debuginfo/module.h"
#include "symbolize/symbolize.h"

/* Frames kept for one address at most (longer chains are not kept). */
#define SU_ADDRCACHE_MAX_FRAMES 64

struct su_addrcache_entry {
	uint64_t addr;
	size_t n;
	const struct su_symframe *frames;
};

/* The file of MODULE's answers made with FLAGS, into PATH (SIZE bytes).
 * Finds the module's debug file (libdw opens it; no unit is read).
 * @return 0, or -1 when none is kept (no cache directory, a vDSO, no
 * build-id, a file that cannot be stat'ed). */
int su_addrcache_path(struct su_module *module, unsigned flags, char *path, size_t size);

/* Each entry of the file at PATH through ADD (its strings valid during the
 * call only; ADD's nonzero return stops).  @return the entries read, -1
 * when the file is missing, not ours or damaged (then nothing was added). */
long su_addrcache_load(const char *path, int (*add)(void *ctx, const struct su_addrcache_entry *e), void *ctx);

/* Write N entries (GET(CTX, i, &e) for each i < N) to PATH, through a
 * temporary file renamed into place.  @return 0, -1 on failure (nothing
 * is left behind). */
int su_addrcache_store(const char *path, size_t n, void (*get)(void *ctx, size_t i, struct su_addrcache_entry *e),
		       void *ctx);

#endif
