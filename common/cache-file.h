/* SPDX-License-Identifier: MIT */
/* cache-file.h: files stackcap keeps between runs (the kernel's symbols,
 * the symbolizer's answers): read only when they are ours, written whole
 * or not at all. */
#ifndef STACKCAP_COMMON_CACHE_FILE_H
#define STACKCAP_COMMON_CACHE_FILE_H

#include <stddef.h>
#include <stdint.h>

/* The whole of PATH, malloc'ed, its length in *SIZE, when it is a regular
 * file (not followed if a symlink), owned by the effective user, closed
 * to group and others (what it holds may be secret), of MIN to MAX bytes.
 * NULL otherwise (missing, someone else's, unreadable, out of bounds). */
void *su_cache_file_read(const char *path, size_t min, size_t max, size_t *size);

/* As su_cache_file_read, PATH mapped read-only (munmap it, *SIZE bytes)
 * rather than copied: for big files of which a run reads little.  The
 * writer below replaces a file, never changes it in place, so a mapping
 * keeps the file it was made of. */
void *su_cache_file_map(const char *path, size_t min, size_t max, size_t *size);

struct stat;
/* The identity of a file that answers kept between runs depend on (its
 * device, inode, size and modification time) hashed into H: another
 * file, or the same one changed, names other answers. */
uint64_t su_file_identity(uint64_t h, const struct stat *st);

/* The missing directories of PATH (not PATH itself) created with MODE.
 * @return 0, -1. */
int su_cache_mkdirs(const char *path, unsigned mode);

/* PATH written with the SIZE bytes at DATA, mode 0600, its missing
 * directories created 0700, through a temporary file renamed over it: a
 * reader sees the old file or the whole new one; then PATH's directory
 * pruned (su_cache_prune).  @return 0, -1 (nothing left behind). */
int su_cache_file_write(const char *path, const void *data, size_t size);

/* A kept file is used: FD, whose stat is ST.  Its access time, the "last
 * used" su_cache_prune goes by, is set to now when a day old: kept files
 * are opened O_NOATIME (no inode write per read), and mounts may not keep
 * access times.  Never its modification time, which names answers kept
 * about it. */
void su_cache_file_used(int fd, const struct stat *st);

/* Bound DIR, where kept files are named by what they depend on (a binary,
 * a boot, our own build: names never asked for again once those change):
 * at most once a day (the time of DIR/.pruned), its files of ours, and
 * with DEPTH 1 those of its subdirectories, unused for
 * $STACKCAP_CACHE_DAYS days (default 30) are removed, then the least
 * recently used ones until they hold at most $STACKCAP_CACHE_MAX_MB
 * (default 1024) MiB.  Failures are ignored: the cache only saves time. */
void su_cache_prune(const char *dir, int depth);

#endif
