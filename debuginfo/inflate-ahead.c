/* SPDX-License-Identifier: MIT */
/* Debug files inflated ahead (inflate-ahead.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "debuginfo/inflate-ahead.h"

#define AHEAD_THREADS_MAX 4

struct su_inflate_ahead {
	struct su_debuginfo_opts opts;
	uint8_t (*ids)[SU_BUILD_ID_MAX];
	uint8_t *lens;
	size_t n;
	atomic_size_t next;          /* the next build-id to take */
	atomic_int stop;
	pthread_t threads[AHEAD_THREADS_MAX];
	unsigned n_threads;
};

static void *ahead_main(void *arg)
{
	struct su_inflate_ahead *a = arg;
	/* A cache of its own: a module cache belongs to one thread. */
	struct su_modcache *c = su_modcache_new(&a->opts);
	if (!c)
		return NULL;
	size_t i;
	while (!atomic_load_explicit(&a->stop, memory_order_relaxed) &&
	       (i = atomic_fetch_add_explicit(&a->next, 1, memory_order_relaxed)) < a->n)
		(void)su_modcache_inflate_ahead(c, a->ids[i], a->lens[i]);
	su_modcache_free(c);
	return NULL;
}

struct su_inflate_ahead *su_inflate_ahead_start(const struct su_debuginfo_opts *opts,
						const uint8_t (*ids)[SU_BUILD_ID_MAX], const uint8_t *lens,
						size_t n, unsigned threads)
{
	if (!opts || !opts->inflate_cache_dir || !n || !threads)
		return NULL;
	struct su_inflate_ahead *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->opts = *opts;
	a->opts.no_debuginfod = 1;
	a->ids = malloc(n * sizeof(*a->ids));
	a->lens = malloc(n);
	if (!a->ids || !a->lens)
		goto fail;
	memcpy(a->ids, ids, n * sizeof(*a->ids));
	memcpy(a->lens, lens, n);
	a->n = n;
	if (threads > AHEAD_THREADS_MAX)
		threads = AHEAD_THREADS_MAX;
	if (threads > n)
		threads = (unsigned)n;
	while (a->n_threads < threads && pthread_create(&a->threads[a->n_threads], NULL, ahead_main, a) == 0)
		a->n_threads++;
	if (a->n_threads)
		return a;
fail:
	free(a->ids);
	free(a->lens);
	free(a);
	return NULL;
}

void su_inflate_ahead_stop(struct su_inflate_ahead *a, int finish)
{
	if (!a)
		return;
	if (!finish)
		atomic_store_explicit(&a->stop, 1, memory_order_relaxed);
	for (unsigned i = 0; i < a->n_threads; i++)
		pthread_join(a->threads[i], NULL);
	free(a->ids);
	free(a->lens);
	free(a);
}
