/* SPDX-License-Identifier: MIT */
/* The ordered parallel pipeline (pipeline.h): a ring of batches, each
 * free -> filled (by the reader) -> in work (a worker) -> done -> emitted
 * in sequence order (by the reader, whenever it waits for a free slot). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cli/pipeline.h"
#include "common/grow.h"

#define BATCH 1024
#define DIRECT_FLUSH (1u << 16)

enum batch_state {
	BATCH_FREE = 0,
	BATCH_FILLED,            /* waits for a worker */
	BATCH_IN_WORK,
	BATCH_DONE,              /* its text waits to be emitted */
};

struct batch {
	size_t n;
	struct pipeline_sample samples[BATCH];
	struct su_frame *frames; /* arena */
	size_t used, cap;        /* in frames */
	struct text out;
	uint64_t seq;
	enum batch_state state;
};

struct worker_arg {
	struct pipeline *p;
	void *ctx;
};

struct pipeline {
	pipeline_format_fn *format;
	pipeline_emit_fn *emit;
	void *emit_arg;
	void *direct_ctx;
	struct text direct;      /* no worker: samples go straight here */
	unsigned n_workers;      /* threads running */
	pthread_t *threads;
	struct worker_arg *args;
	struct batch *slots;     /* ring of n_slots */
	unsigned n_slots;
	uint64_t next_fill, next_write;  /* sequence numbers */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	int err;                 /* -errno of the first failure */
};

static void sample_of(struct pipeline_sample *u, const struct su_sample *s, size_t n, enum su_unwind_end end)
{
	*u = (struct pipeline_sample){ .process = s->process, .maps = s->maps, .pid = s->pid, .tid = s->tid,
				       .time_ns = s->time_ns, .off_cpu_ns = s->off_cpu_ns, .nframes = (uint32_t)n,
				       .end = (uint8_t)end, .event = s->event };
}

static void *worker_thread(void *arg)
{
	struct worker_arg *a = arg;
	struct pipeline *p = a->p;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct batch *b = NULL;
		for (unsigned i = 0; i < p->n_slots; i++)
			if (p->slots[i].state == BATCH_FILLED && (!b || p->slots[i].seq < b->seq))
				b = &p->slots[i];
		if (!b) {
			if (p->stop)
				break;
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		b->state = BATCH_IN_WORK;
		pthread_mutex_unlock(&p->lock);
		b->out.len = 0;
		for (size_t i = 0; i < b->n; i++)
			p->format(a->ctx, &b->samples[i], b->frames + b->samples[i].frame_off, &b->out);
		pthread_mutex_lock(&p->lock);
		b->state = BATCH_DONE;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void stop_workers(struct pipeline *p)
{
	if (!p->n_workers)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n_workers; i++)
		pthread_join(p->threads[i], NULL);
	p->n_workers = 0;
}

static void emit(struct pipeline *p, const char *buf, size_t len)
{
	int const rc = p->emit(p->emit_arg, buf, len);
	if (rc && !p->err)
		p->err = rc;
}

/* Emit finished batches in sequence order.  Lock held. */
static void write_done(struct pipeline *p)
{
	for (;;) {
		struct batch *b = &p->slots[p->next_write % p->n_slots];
		if (b->seq != p->next_write || b->state != BATCH_DONE)
			return;
		if (b->out.oom && !p->err)
			p->err = -ENOMEM;
		emit(p, b->out.buf, b->out.len);
		b->state = BATCH_FREE;
		b->n = 0;
		b->used = 0;
		p->next_write++;
	}
}

/* The batch being filled (slot of next_fill), waiting for it to be free. */
static struct batch *fill_slot(struct pipeline *p)
{
	struct batch *b = &p->slots[p->next_fill % p->n_slots];
	pthread_mutex_lock(&p->lock);
	for (;;) {
		write_done(p);
		if (b->state == BATCH_FREE)
			break;
		pthread_cond_wait(&p->cond, &p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return b;
}

static void submit(struct pipeline *p, struct batch *b)
{
	b->seq = p->next_fill++;
	pthread_mutex_lock(&p->lock);
	b->state = BATCH_FILLED;
	pthread_cond_broadcast(&p->cond);
	write_done(p);
	pthread_mutex_unlock(&p->lock);
}

static int batch_add(struct batch *b, const struct su_sample *s, const struct su_frame *frames, size_t n,
		     enum su_unwind_end end)
{
	if (SU_GROW(b->frames, b->cap, b->used + n))
		return -ENOMEM;
	struct pipeline_sample *u = &b->samples[b->n++];
	sample_of(u, s, n, end);
	u->frame_off = b->used;
	memcpy(b->frames + b->used, frames, n * sizeof(*frames));
	b->used += n;
	return 0;
}

int pipeline_add(struct pipeline *p, const struct su_sample *s, const struct su_frame *frames, size_t n,
		 enum su_unwind_end end)
{
	if (!p->threads) {
		/* The same formatting as a worker's, right here. */
		struct pipeline_sample u;
		sample_of(&u, s, n, end);
		p->format(p->direct_ctx, &u, frames, &p->direct);
		if (p->direct.oom)
			return -ENOMEM;
		if (p->direct.len >= DIRECT_FLUSH) {
			emit(p, p->direct.buf, p->direct.len);
			p->direct.len = 0;
		}
		return p->err;
	}
	struct batch *b = fill_slot(p);
	if (batch_add(b, s, frames, n, end))
		return -ENOMEM;
	if (b->n == BATCH)
		submit(p, b);
	return p->err;
}

int pipeline_finish(struct pipeline *p)
{
	if (!p->threads) {
		emit(p, p->direct.buf, p->direct.len);
		p->direct.len = 0;
		return p->direct.oom ? -ENOMEM : p->err;
	}
	struct batch *b = fill_slot(p);
	if (b->n)
		submit(p, b);
	if (p->n_workers) {
		pthread_mutex_lock(&p->lock);
		while (p->next_write != p->next_fill) {
			write_done(p);
			if (p->next_write == p->next_fill)
				break;
			pthread_cond_wait(&p->cond, &p->lock);
		}
		pthread_mutex_unlock(&p->lock);
		stop_workers(p);
	}
	return p->err;
}

struct pipeline *pipeline_new(unsigned n_workers, void *const *worker_ctx, void *direct_ctx,
			      pipeline_format_fn *format, pipeline_emit_fn *emit_fn, void *emit_arg)
{
	struct pipeline *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	*p = (struct pipeline){ .format = format, .emit = emit_fn, .emit_arg = emit_arg, .direct_ctx = direct_ctx };
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (!n_workers)
		return p;
	p->n_slots = 2 * n_workers + 2;
	p->slots = calloc(p->n_slots, sizeof(*p->slots));
	p->threads = calloc(n_workers, sizeof(*p->threads));
	p->args = calloc(n_workers, sizeof(*p->args));
	if (!p->slots || !p->threads || !p->args) {
		pipeline_free(p);
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < n_workers; i++) {
		p->args[i] = (struct worker_arg){ p, worker_ctx[i] };
		int const rc = pthread_create(&p->threads[i], NULL, worker_thread, &p->args[i]);
		if (rc) {
			pipeline_free(p);
			errno = rc;
			return NULL;
		}
		p->n_workers = i + 1;
	}
	return p;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	stop_workers(p);
	for (unsigned i = 0; p->slots && i < p->n_slots; i++) {
		free(p->slots[i].frames);
		free(p->slots[i].out.buf);
	}
	free(p->slots);
	free(p->threads);
	free(p->args);
	free(p->direct.buf);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}
