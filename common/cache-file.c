/* SPDX-License-Identifier: MIT */
/* Files kept between runs (cache-file.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cache-file.h"
#include "common/hash.h"
#include "common/io.h"

void *su_cache_file_read(const char *path, size_t min, size_t max, size_t *size)
{
	int const fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	struct stat st;
	unsigned char *b = NULL;
	int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077) &&
		 (uint64_t)st.st_size >= min && (uint64_t)st.st_size <= max && (b = malloc(st.st_size ? (size_t)st.st_size : 1));
	size_t const n = ok ? (size_t)st.st_size : 0;
	for (size_t done = 0; ok && done < n;) {
		ssize_t const got = pread(fd, b + done, n - done, (off_t)done);
		if (got < 0 && errno == EINTR)
			continue;
		ok = got > 0;
		done += ok ? (size_t)got : 0;
	}
	close(fd);
	if (!ok) {
		free(b);
		return NULL;
	}
	*size = n;
	return b;
}

void *su_cache_file_map(const char *path, size_t min, size_t max, size_t *size)
{
	int const fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *m = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077) &&
	    (uint64_t)st.st_size >= min && (uint64_t)st.st_size <= max && st.st_size > 0)
		m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	*size = (size_t)st.st_size;
	return m;
}

int su_cache_mkdirs(const char *path, unsigned mode)
{
	char d[PATH_MAX];
	if (snprintf(d, sizeof(d), "%s", path) >= (int)sizeof(d))
		return -1;
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int const rc = mkdir(d, (mode_t)mode);
		*p = '/';
		if (rc != 0 && errno != EEXIST)
			return -1;
	}
	return 0;
}

int su_cache_file_write(const char *path, const void *data, size_t size)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp) || su_cache_mkdirs(path, 0700) != 0)
		return -1;
	int const fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -1;
	int ok = fchmod(fd, 0600) == 0 && su_write_all(fd, data, size) == 0;
	ok = close(fd) == 0 && ok;
	if (ok && rename(tmp, path) == 0)
		return 0;
	unlink(tmp);
	return -1;
}

uint64_t su_file_identity(uint64_t h, const struct stat *st)
{
	uint64_t const who[] = { (uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
				 (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec };
	return su_fnv1a_from(h, who, sizeof(who));
}
