/* Inflated copies of compressed debug files, kept by build-id.
 *
 * Debian's debug files (libc6-dbg, *-dbgsym) have zlib-compressed .debug_*
 * sections, and libdw inflates every one of them each time it opens the
 * file: for libc that is ~50 ms, half of what `stackunwind stacks` spends
 * on a 16,000-sample trace.  The first run writes an inflated copy under
 * DIR/debug/xx/rest-IDENT.debug (xx/rest: the file's build-id; IDENT: a
 * hash of the file's device, inode, size and mtime, since a build-id alone
 * is easy to forge); later runs hand that copy to libdw.  The copy is
 * found by the file's build-id and identity and checked before use (a
 * regular file of ours, with that build-id, nothing compressed left), so a
 * stale, foreign or forged file is never taken; any
 * failure (no space, no permission) falls back to a copy in memory,
 * silently: the cache only saves time. */
#ifndef STACKCAP_DEBUGINFO_INFLATE_CACHE_H
#define STACKCAP_DEBUGINFO_INFLATE_CACHE_H

#include <stdint.h>

/* FD: a debug file just found.  When its .debug_* sections are
 * compressed: an fd of its inflated copy in DIR (written now if missing),
 * or, when DIR is NULL or the copy cannot be written there, of one in
 * memory for this run alone (a memfd: inflated as fast, libdw then reads
 * it as a file); else -1 (use FD).  FD is never closed or moved. */
int su_inflate_cached(const char *dir, int fd);

/* The default cache directory: $STACKCAP_CACHE_DIR, else
 * $XDG_CACHE_HOME/stackcap, else $HOME/.cache/stackcap; NULL when none
 * can be named, or when STACKCAP_CACHE_DIR is set but empty (off). */
const char *su_inflate_default_dir(void);

#endif
