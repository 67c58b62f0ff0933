/* SPDX-License-Identifier: MIT */
/* This machine's kernel symbols read on a thread of their own
 * (su_kallsyms_ahead): /proc/kallsyms takes the kernel 60-70 ms to print
 * here (its 120,000 lines through vsnprintf), 85 ms with our parsing and
 * the kept copy written: a third to a half of a first run over a small
 * perf.data file, all on the thread every sample waits for.  The reader
 * hands out a kernel at once whose lookups wait for the read only when
 * they come, so the first samples' other cold work (debug files inflated,
 * unwind rules compiled) goes on meanwhile on the reader's core. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "trace/kallsyms.h"

struct su_kernel_ahead {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	atomic_int done;             /* REAL and RC are set */
	int joined;
	int rc;
	struct su_kernel *real;      /* what the read gave, NULL when it failed */
	char *dir;
};

static void *ahead_main(void *arg)
{
	struct su_kernel_ahead *a = arg;
	struct su_kernel *k = NULL;
	int const rc = su_kallsyms_read_cached(a->dir, &k);
	pthread_mutex_lock(&a->lock);
	a->rc = rc;
	a->real = rc ? NULL : k;
	atomic_store_explicit(&a->done, 1, memory_order_release);
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->lock);
	if (rc)
		su_kernel_free(k);
	return NULL;
}

/* The read's kernel, once done (NULL: it failed). */
static const struct su_kernel *ahead_real(const struct su_kernel *k)
{
	struct su_kernel_ahead *const a = k->ahead;
	if (!atomic_load_explicit(&a->done, memory_order_acquire)) {
		pthread_mutex_lock(&a->lock);
		while (!atomic_load_explicit(&a->done, memory_order_relaxed))
			pthread_cond_wait(&a->cond, &a->lock);
		pthread_mutex_unlock(&a->lock);
	}
	return a->real;
}

static int ahead_find(const struct su_kernel *k, uint64_t addr, struct su_ksym *out)
{
	return su_kernel_find(ahead_real(k), addr, out);
}

int su_kallsyms_ahead_wait(struct su_kernel *k)
{
	if (!k || !k->ahead)
		return 0;
	struct su_kernel_ahead *const a = k->ahead;
	if (!a->joined) {
		pthread_join(a->thread, NULL);
		a->joined = 1;
	}
	return a->rc;
}

/* su_kernel_free's part (su_kernel.drop). */
static void ahead_drop(struct su_kernel *k)
{
	struct su_kernel_ahead *const a = k->ahead;
	su_kallsyms_ahead_wait(k);
	su_kernel_free(a->real);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a->dir);
	free(a);
	k->ahead = NULL;
	k->drop = NULL;
}

struct su_kernel *su_kallsyms_ahead(const char *dir)
{
	struct su_kernel *k = calloc(1, sizeof(*k));
	struct su_kernel_ahead *a = calloc(1, sizeof(*a));
	if (!k || !a || (dir && !(a->dir = strdup(dir))))
		goto fail;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	if (pthread_create(&a->thread, NULL, ahead_main, a) != 0) {
		pthread_cond_destroy(&a->cond);
		pthread_mutex_destroy(&a->lock);
		goto fail;
	}
	k->ahead = a;
	k->find_checked = ahead_find;
	k->drop = ahead_drop;
	return k;
fail:
	if (a)
		free(a->dir);
	free(a);
	free(k);
	return NULL;
}

const struct su_kernel *su_kallsyms_ahead_real(const struct su_kernel *k)
{
	return k && k->ahead ? ahead_real(k) : k;
}
