/* SPDX-License-Identifier: MIT */
/* Copies of binaries a trace's reader would not find (keep-binaries.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cache-file.h"
#include "common/io.h"
#include "common/map-entry.h"
#include "debuginfo/module.h"
#include "record/keep-binaries.h"
#include "record/proc-files.h"

#define KEEP_QUEUE 64               /* files asked for, not copied yet */
#define KEEP_MAX_BYTES (512u << 20) /* a file bigger is not kept (the cache holds 1 GiB) */
#define KEEP_SEEN 4096              /* build-ids asked for in a run, beyond: not kept */
#define KEEP_RUN_BYTES (2ull << 30) /* copied in one run at most */

struct job {
	int fd;
	uint8_t id[SU_BUILD_ID_MAX];
	uint8_t len;
};

struct rec_keeper {
	char dir[PATH_MAX];          /* CACHE/bin */
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job q[KEEP_QUEUE];
	size_t head, n;
	int stop;
	int refused;                 /* the cache is not ours: nothing kept */
	uint64_t run_bytes;          /* copied in this run (the thread's) */
	struct rec_keeper_stats st;  /* under the lock */
	uint8_t (*seen)[SU_BUILD_ID_MAX + 1]; /* the run's build-ids (length first) */
	size_t n_seen;
};

/* A directory another user cannot change: owned by this user or root,
 * writable by no one else unless sticky. */
static int trusted(const struct stat *st, uid_t me)
{
	return S_ISDIR(st->st_mode) && (st->st_uid == me || st->st_uid == 0) &&
	       (!(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX));
}

/* REAL (resolved) and each directory above it trusted; its stat in *ST. */
static int chain_trusted(char *real, uid_t me, struct stat *st)
{
	size_t const n = strlen(real);
	for (size_t i = 0; i <= n; i++) {
		if (i && i < n && real[i] != '/')
			continue;
		if (i == 1 && n == 1)
			break;
		char const save = real[i];
		real[i] = 0;
		int const ok = lstat(i ? real : "/", st) == 0 && trusted(st, me);
		real[i] = save;
		if (!ok)
			return 0;
	}
	return 1;
}

/* May files be written under DIR (absolute) as this user, safely?  Walked
 * from /, each directory met must be trusted, a symlink only when this
 * user's or root's (a HOME may be one), then its target and all above
 * it; the deepest that exists must be this user's.  Root run with
 * another user's HOME (sudo -E), or a STACKCAP_CACHE_DIR through a
 * directory another user can write, would otherwise write where that
 * user put a symlink (to anywhere), or let that user read what root
 * kept.  What does not exist yet is made here, 0700, and looked at again
 * before use (keep_one). */
static int safe_dir(const char *dir)
{
	uid_t const me = geteuid();
	char cur[PATH_MAX] = "", cand[PATH_MAX], res[PATH_MAX];
	struct stat st;
	if (dir[0] != '/' || lstat("/", &st) != 0 || !trusted(&st, me))
		return 0;
	for (const char *c = dir; *c;) {
		while (*c == '/')
			c++;
		size_t const len = strcspn(c, "/");
		if (!len)
			break;
		if ((size_t)snprintf(cand, sizeof(cand), "%s/%.*s", cur, (int)len, c) >= sizeof(cand))
			return 0;
		c += len;
		struct stat l;
		if (lstat(cand, &l) != 0)
			return errno == ENOENT && st.st_uid == me; /* the rest is made here */
		if (S_ISLNK(l.st_mode)) {
			if ((l.st_uid != me && l.st_uid != 0) || !realpath(cand, res) || !chain_trusted(res, me, &st))
				return 0;
			snprintf(cur, sizeof(cur), "%s", strcmp(res, "/") ? res : "");
		} else if (trusted(&l, me)) {
			st = l;
			snprintf(cur, sizeof(cur), "%s", cand);
		} else {
			return 0;
		}
	}
	return st.st_uid == me;
}

/* DIR, made by us: a directory of this user's, 0700, not a symlink. */
static int own_private_dir(const char *dir)
{
	struct stat st;
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077);
}

/* Keep J's file: 1 copied, 0 kept already, -1 not kept. */
static int keep_one(struct rec_keeper *k, const struct job *j, uint64_t *bytes)
{
	char rel[2 * SU_BUILD_ID_MAX + 2], dest[PATH_MAX + 80], tmp[PATH_MAX + 96];
	su_build_id_rel(rel, j->id, j->len);
	if (snprintf(dest, sizeof(dest), "%s/.build-id/%s", k->dir, rel) >= (int)sizeof(dest))
		return -1;
	struct stat st;
	if (lstat(dest, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
		struct timespec const t[2] = { { .tv_nsec = UTIME_NOW }, { .tv_nsec = UTIME_OMIT } };
		(void)utimensat(AT_FDCWD, dest, t, AT_SYMLINK_NOFOLLOW); /* used again: the prune goes by it */
		return 0;
	}
	/* What is kept is what was asked for: the file still holds it. */
	uint8_t id[SU_BUILD_ID_MAX];
	if (fstat(j->fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > KEEP_MAX_BYTES ||
	    rec_file_build_id(j->fd, id, sizeof(id)) != (int)j->len || memcmp(id, j->id, j->len) != 0)
		return -1;
	if (k->run_bytes + (uint64_t)st.st_size > KEEP_RUN_BYTES)
		return -1;
	if (su_cache_mkdirs(dest, 0700) != 0)
		return -1;
	/* xx, .build-id and CACHE/bin above DEST: ours, private, no symlink. */
	snprintf(tmp, sizeof(tmp), "%s", dest);
	for (int up = 0; up < 3; up++) {
		*strrchr(tmp, '/') = 0;
		if (!own_private_dir(tmp))
			return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", dest);
	int const out = mkstemp(tmp); /* 0600 */
	if (out < 0)
		return -1;
	uint64_t n = 0;
	int const rc = su_copy_fd(j->fd, out, (uint64_t)st.st_size, &n);
	if (close(out) != 0 || rc != 0 || n != (uint64_t)st.st_size || rename(tmp, dest) != 0) {
		unlink(tmp);
		return -1;
	}
	*bytes += n;
	k->run_bytes += n;
	return 1;
}

static void *keeper_main(void *arg)
{
	struct rec_keeper *k = arg;
	int copied = 0;
	pthread_mutex_lock(&k->lock);
	for (;;) {
		while (!k->n && !k->stop)
			pthread_cond_wait(&k->cond, &k->lock);
		if (!k->n)
			break;
		struct job const j = k->q[k->head];
		k->head = (k->head + 1) % KEEP_QUEUE;
		k->n--;
		pthread_mutex_unlock(&k->lock);
		uint64_t bytes = 0;
		int const rc = keep_one(k, &j, &bytes);
		close(j.fd);
		pthread_mutex_lock(&k->lock);
		if (rc > 0) {
			k->st.kept++;
			k->st.bytes += bytes;
			copied = 1;
		} else if (rc == 0) {
			k->st.had++;
		} else {
			k->st.failed++;
		}
	}
	pthread_mutex_unlock(&k->lock);
	if (copied) {
		char d[PATH_MAX + 16];
		snprintf(d, sizeof(d), "%s/.build-id", k->dir);
		su_cache_prune(d, 1);
	}
	return NULL;
}

struct rec_keeper *rec_keeper_start(const char *cache_dir)
{
	if (!cache_dir || !*cache_dir)
		return NULL;
	struct rec_keeper *k = calloc(1, sizeof(*k));
	if (!k || snprintf(k->dir, sizeof(k->dir), "%s/bin", cache_dir) >= (int)sizeof(k->dir)) {
		free(k);
		return NULL;
	}
	k->refused = !safe_dir(cache_dir); /* every file asked for then counted as not kept */
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->cond, NULL);
	if (pthread_create(&k->th, NULL, keeper_main, k) != 0) {
		pthread_mutex_destroy(&k->lock);
		pthread_cond_destroy(&k->cond);
		free(k);
		return NULL;
	}
	return k;
}

void rec_keeper_add(struct rec_keeper *k, int fd, const uint8_t *id, size_t len)
{
	if (!k || !len || len > SU_BUILD_ID_MAX)
		return;
	for (size_t i = 0; i < k->n_seen; i++) /* only this thread adds */
		if (k->seen[i][0] == len && !memcmp(k->seen[i] + 1, id, len))
			return;
	if (!k->seen && !(k->seen = calloc(KEEP_SEEN, sizeof(*k->seen))))
		return;
	if (k->n_seen == KEEP_SEEN)
		return;
	k->seen[k->n_seen][0] = (uint8_t)len;
	memcpy(k->seen[k->n_seen++] + 1, id, len);
	int const dfd = fd >= 0 && !k->refused ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	pthread_mutex_lock(&k->lock);
	if (dfd < 0 || k->n == KEEP_QUEUE) {
		k->st.failed++;
		pthread_mutex_unlock(&k->lock);
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct job *j = &k->q[(k->head + k->n++) % KEEP_QUEUE];
	j->fd = dfd;
	j->len = (uint8_t)len;
	memcpy(j->id, id, len);
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
}

void rec_keeper_stop(struct rec_keeper *k, struct rec_keeper_stats *st)
{
	if (!k) {
		if (st)
			*st = (struct rec_keeper_stats){ 0 };
		return;
	}
	pthread_mutex_lock(&k->lock);
	k->stop = 1;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
	pthread_join(k->th, NULL);
	if (st) {
		*st = k->st;
		snprintf(st->dir, sizeof(st->dir), "%s", k->dir);
	}
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->cond);
	free(k->seen);
	free(k);
}
