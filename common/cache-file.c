/* SPDX-License-Identifier: MIT */
/* Files kept between runs (cache-file.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cache-file.h"
#include "common/grow.h"
#include "common/hash.h"
#include "common/io.h"

void *su_cache_file_read(const char *path, size_t min, size_t max, size_t *size)
{
	int const fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_NOATIME);
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
	if (ok)
		su_cache_file_used(fd, &st);
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
	int const fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_NOATIME);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *m = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077) &&
	    (uint64_t)st.st_size >= min && (uint64_t)st.st_size <= max && st.st_size > 0)
		m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m != MAP_FAILED)
		su_cache_file_used(fd, &st);
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
	if (ok && rename(tmp, path) == 0) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", path);
		char *const slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			su_cache_prune(dir, 0);
		}
		return 0;
	}
	unlink(tmp);
	return -1;
}

#define DAY 86400

void su_cache_file_used(int fd, const struct stat *st)
{
	struct timespec now;
	if (clock_gettime(CLOCK_REALTIME, &now) == 0 && st->st_atim.tv_sec < now.tv_sec - DAY) {
		struct timespec const t[2] = { { .tv_nsec = UTIME_NOW }, { .tv_nsec = UTIME_OMIT } };
		(void)futimens(fd, t);
	}
}

/* A kept file: where (a subdirectory's fd, or DIR's), its name, when it
 * was last used (its access or modification time, the later), its size. */
struct kept {
	int dfd;
	char *name;
	int64_t used;
	uint64_t size;
};

static int kept_older(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;
	return x->used < y->used ? -1 : x->used > y->used;
}

/* The files of ours in DFD (closed by the caller), and with DEPTH 1 in its
 * subdirectories of ours (their fds into *SUBS).  @return 0, -1. */
static int kept_list(int dfd, int depth, struct kept **v, size_t *n, size_t *cap, int **subs, size_t *nsubs,
		     size_t *subs_cap)
{
	DIR *d = fdopendir(dup(dfd));
	if (!d)
		return -1;
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		struct stat st;
		if (e->d_name[0] == '.' || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    st.st_uid != geteuid())
			continue;
		if (S_ISDIR(st.st_mode) && depth > 0) {
			int const sfd = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sfd < 0)
				continue;
			if (su_grow((void **)subs, subs_cap, *nsubs + 1, sizeof(**subs))) {
				close(sfd);
				rc = -1;
				break;
			}
			(*subs)[(*nsubs)++] = sfd;
			rc = kept_list(sfd, depth - 1, v, n, cap, subs, nsubs, subs_cap);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		char *const name = su_grow((void **)v, cap, *n + 1, sizeof(**v)) ? NULL : strdup(e->d_name);
		if (!name) {
			rc = -1;
			break;
		}
		int64_t const a = (int64_t)st.st_atim.tv_sec, m = (int64_t)st.st_mtim.tv_sec;
		(*v)[(*n)++] = (struct kept){ dfd, name, a > m ? a : m, (uint64_t)st.st_size };
	}
	closedir(d);
	return rc;
}

static long env_long(const char *name, long def, long min, long max)
{
	const char *const v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	errno = 0;
	long const x = strtol(v, &end, 10);
	return errno || *end || x < min || x > max ? def : x;
}

void su_cache_prune(const char *dir, int depth)
{
	struct timespec now;
	if (clock_gettime(CLOCK_REALTIME, &now) != 0)
		return;
	int const dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	/* Once a day: the stamp's time says when. */
	struct stat st;
	if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() ||
	    (fstatat(dfd, ".pruned", &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtim.tv_sec > now.tv_sec - DAY &&
	     st.st_mtim.tv_sec <= now.tv_sec)) {
		close(dfd);
		return;
	}
	int const sfd = openat(dfd, ".pruned", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (sfd >= 0) {
		(void)futimens(sfd, NULL);
		close(sfd);
	}
	long const days = env_long("STACKCAP_CACHE_DAYS", 30, 0, 100000);
	uint64_t const budget = (uint64_t)env_long("STACKCAP_CACHE_MAX_MB", 1024, 0, 1L << 30) << 20;
	struct kept *v = NULL;
	size_t n = 0, cap = 0, nsubs = 0, subs_cap = 0;
	int *subs = NULL;
	if (kept_list(dfd, depth, &v, &n, &cap, &subs, &nsubs, &subs_cap) == 0) {
		qsort(v, n, sizeof(*v), kept_older);
		uint64_t total = 0;
		for (size_t i = 0; i < n; i++)
			total += v[i].size;
		int64_t const stale = (int64_t)now.tv_sec - (int64_t)days * DAY;
		/* Oldest first: those unused too long, then until under budget. */
		for (size_t i = 0; i < n && (v[i].used < stale || total > budget); i++)
			if (unlinkat(v[i].dfd, v[i].name, 0) == 0)
				total -= v[i].size;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	for (size_t i = 0; i < nsubs; i++)
		close(subs[i]);
	free(subs);
	close(dfd);
}

uint64_t su_file_identity(uint64_t h, const struct stat *st)
{
	uint64_t const who[] = { (uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
				 (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec };
	return su_fnv1a_from(h, who, sizeof(who));
}
