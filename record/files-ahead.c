/* Stream files created ahead (record/files-ahead.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "record/files-ahead.h"

#define READY 16 /* files kept ready at most: two for each of 8 processes */

struct rec_files_ahead {
	int dirfd;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;        /* the thread waits here for room */
	pthread_cond_t ready;     /* a stream waits here for a file */
	int fds[READY];
	unsigned n;
	/* Kept ready: 2 at first, twice as many each time a stream found
	 * none (a recording of one program makes a few files: making 16
	 * ahead was CPU taken from it, on a slow file system ~10 ms each). */
	unsigned want;
	int stop;                 /* the thread is to end: stopping, or naming failed */
	int done;                 /* the thread has ended: no file comes any more */
};

static void *make_ahead(void *arg)
{
	struct rec_files_ahead *fa = arg;
	pthread_mutex_lock(&fa->mu);
	for (;;) {
		while (fa->n >= fa->want && !fa->stop)
			pthread_cond_wait(&fa->cv, &fa->mu);
		if (fa->stop)
			break;
		pthread_mutex_unlock(&fa->mu);
		int const fd = openat(fa->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
		pthread_mutex_lock(&fa->mu);
		if (fd < 0)
			break; /* refused now: the writer creates its files */
		fa->fds[fa->n++] = fd;
		pthread_cond_signal(&fa->ready);
	}
	fa->done = 1;
	pthread_cond_broadcast(&fa->ready);
	pthread_mutex_unlock(&fa->mu);
	return NULL;
}

struct rec_files_ahead *rec_files_ahead_start(const char *dir)
{
	/* Under a tight open-file limit the files kept ready would be the
	 * streams' own: there the writer makes its files as they come. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 64 * READY)
		return NULL;
	struct rec_files_ahead *fa = calloc(1, sizeof(*fa));
	if (!fa)
		return NULL;
	fa->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* One first here: a directory that refuses O_TMPFILE (NFS, old
	 * kernels) needs no thread. */
	int const fd = fa->dirfd < 0 ? -1 : openat(fa->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (fa->dirfd >= 0)
			close(fa->dirfd);
		free(fa);
		return NULL;
	}
	fa->fds[fa->n++] = fd;
	fa->want = 2;
	pthread_mutex_init(&fa->mu, NULL);
	pthread_cond_init(&fa->cv, NULL);
	pthread_cond_init(&fa->ready, NULL);
	if (pthread_create(&fa->th, NULL, make_ahead, fa)) {
		close(fd);
		close(fa->dirfd);
		pthread_mutex_destroy(&fa->mu);
		pthread_cond_destroy(&fa->cv);
		pthread_cond_destroy(&fa->ready);
		free(fa);
		return NULL;
	}
	return fa;
}

int rec_files_ahead_take(void *arg, int dirfd, const char *fname)
{
	struct rec_files_ahead *fa = arg;
	pthread_mutex_lock(&fa->mu);
	if (!fa->n && fa->want < READY)
		fa->want *= 2; /* none ready: more kept from now on */
	/* None ready: the thread is making one, sooner done than one made
	 * here from the start (it stops only if the files cannot be made). */
	while (!fa->n && !fa->stop && !fa->done) {
		pthread_cond_signal(&fa->cv);
		pthread_cond_wait(&fa->ready, &fa->mu);
	}
	int const fd = fa->n && !fa->stop ? fa->fds[--fa->n] : -1;
	pthread_cond_signal(&fa->cv);
	pthread_mutex_unlock(&fa->mu);
	if (fd < 0)
		return -EAGAIN;
	/* Named through /proc (linkat's AT_EMPTY_PATH needs a capability). */
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, path, dirfd, fname, AT_SYMLINK_FOLLOW) == 0)
		return fd;
	int const e = errno;
	close(fd);
	if (e == EEXIST)
		return -EEXIST;
	/* Not named so here (no /proc...): the writer creates its files. */
	pthread_mutex_lock(&fa->mu);
	fa->stop = 1;
	pthread_cond_signal(&fa->cv);
	pthread_mutex_unlock(&fa->mu);
	return -EAGAIN;
}

void rec_files_ahead_stop(struct rec_files_ahead *fa)
{
	if (!fa)
		return;
	pthread_mutex_lock(&fa->mu);
	fa->stop = 1;
	pthread_cond_signal(&fa->cv);
	pthread_mutex_unlock(&fa->mu);
	pthread_join(fa->th, NULL);
	for (unsigned i = 0; i < fa->n; i++)
		close(fa->fds[i]);
	close(fa->dirfd);
	pthread_mutex_destroy(&fa->mu);
	pthread_cond_destroy(&fa->cv);
	pthread_cond_destroy(&fa->ready);
	free(fa);
}
