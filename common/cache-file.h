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
 * reader sees the old file or the whole new one.  @return 0, -1 (nothing
 * left behind). */
int su_cache_file_write(const char *path, const void *data, size_t size);

#endif
