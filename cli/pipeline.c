/* SPDX-License-Identifier: MIT */
/* The ordered parallel pipeline (pipeline.h): a ring of batches, each
 * free -> filled (by the reader) -> in work (a worker, or the reader when
 * the ring is full) -> done -> emitted in sequence order (by the reader,
 * whenever it waits for a free slot). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cli/pipeline.h"
#include "common/grow.h"

#define BATCH 256                /* samples, at most */
#define BATCH_BYTES (1u << 18)   /* copied stack words and chains: a batch is full past this */
#define DIRECT_FLUSH (1u << 16)

enum batch_state {
	BATCH_FREE = 0,
	BATCH_FILLED,            /* waits for a worker */
	BATCH_IN_WORK,
	BATCH_DONE,              /* its text waits to be emitted */
};

/* A sample as the reader decoded it, its memory copied into the batch's
 * arena (offsets: the arena may move while the batch fills; NONE: the
 * pointer was NULL).  The pointers are set when the batch is worked. */
#define NONE SIZE_MAX
struct held {
	struct su_sample s;
	struct stackcap_image image, segment;
	uint8_t has_image, has_segment;
	size_t words, segment_words, user_chain, kernel_chain, runtime_frames;
};

struct batch {
	size_t n;
	struct held samples[BATCH];
	uint8_t *arena;
	size_t used, cap;        /* in bytes */
	struct text out;
	uint64_t seq;
	enum batch_state state;
};

struct worker_arg {
	struct pipeline *p;
	void *ctx;
};

struct pipeline {
	pipeline_unwind_fn *unwind;
	pipeline_format_fn *format;
	pipeline_emit_fn *emit;
	void *emit_arg;
	void *direct_ctx;        /* the reader thread's context */
	struct text direct;      /* no worker: samples go straight here */
	unsigned n_workers;      /* threads running */
	pthread_t *threads;
	struct worker_arg *args;
	struct batch *slots;     /* ring of n_slots */
	struct batch *filling;   /* the batch the reader fills, or NULL */
	unsigned n_slots;
	uint64_t next_fill, next_write;  /* sequence numbers */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	int err;                 /* -errno of the first failure */
};

/* Unwind and format sample S with context CTX into OUT. */
static void work_sample(struct pipeline *p, void *ctx, const struct su_sample *s, struct text *out)
{
	const struct su_frame *frames = NULL;
	enum su_unwind_end end = SU_END_ERROR;
	size_t const n = p->unwind(ctx, s, &frames, &end);
	struct pipeline_sample const u = { .process = s->process, .maps = s->maps, .pid = s->pid, .tid = s->tid,
					   .time_ns = s->time_ns, .off_cpu_ns = s->off_cpu_ns,
					   .nframes = (uint32_t)n, .end = (uint8_t)end, .event = s->event };
	p->format(ctx, &u, frames, out);
}

/* ---- a sample's copy ---------------------------------------------------- */

/* LEN bytes of SRC into B's arena, 8-byte aligned.  @return their offset,
 * NONE for a NULL SRC, or NONE with *OOM set. */
static size_t arena_put(struct batch *b, const void *src, size_t len, int *oom)
{
	if (!src)
		return NONE;
	size_t const at = (b->used + 7) & ~(size_t)7;
	if (at + len < at || SU_GROW(b->arena, b->cap, at + len)) {
		*oom = 1;
		return NONE;
	}
	if (len)
		memcpy(b->arena + at, src, len);
	b->used = at + len;
	return at;
}

static void *arena_at(struct batch *b, size_t off)
{
	return off == NONE ? NULL : b->arena + off;
}

/* The image IMG's words into B (what the unwinder reads: not the bitmap
 * of kept words).  @return the words' offset (NONE: IMG has none). */
static size_t image_put(struct batch *b, struct stackcap_image *copy, const struct stackcap_image *img, int *oom)
{
	*copy = *img;
	copy->kept = NULL;
	copy->capacity = img->words ? img->nwords : 0;
	return arena_put(b, img->words, img->words ? img->nwords * sizeof(*img->words) : 0, oom);
}

static int batch_add(struct batch *b, const struct su_sample *s)
{
	struct held *h = &b->samples[b->n];
	int oom = 0;
	h->s = *s;
	h->s.full_image = NULL; /* fidelity (stackunwind stats) only */
	h->has_image = s->image != NULL;
	h->has_segment = s->segment != NULL;
	h->words = s->image ? image_put(b, &h->image, s->image, &oom) : NONE;
	h->segment_words = s->segment ? image_put(b, &h->segment, s->segment, &oom) : NONE;
	h->user_chain = arena_put(b, s->user_chain, s->n_user_chain * sizeof(*s->user_chain), &oom);
	h->kernel_chain = arena_put(b, s->kernel_chain, s->n_kernel_chain * sizeof(*s->kernel_chain), &oom);
	h->runtime_frames = arena_put(b, s->runtime_frames, s->runtime_frames_len, &oom);
	if (oom)
		return -ENOMEM;
	b->n++;
	return 0;
}

/* The sample H points into its batch's arena again. */
static const struct su_sample *held_sample(struct batch *b, struct held *h)
{
	h->s.image = h->has_image ? &h->image : NULL;
	h->image.words = arena_at(b, h->words);
	h->s.segment = h->has_segment ? &h->segment : NULL;
	h->segment.words = arena_at(b, h->segment_words);
	h->s.user_chain = arena_at(b, h->user_chain);
	h->s.kernel_chain = arena_at(b, h->kernel_chain);
	h->s.runtime_frames = arena_at(b, h->runtime_frames);
	return &h->s;
}

/* ---- the ring ------------------------------------------------------------ */

static void work_batch(struct pipeline *p, struct batch *b, void *ctx)
{
	b->out.len = 0;
	b->out.gen = b->seq + 1; /* unique per batch */
	for (size_t i = 0; i < b->n; i++)
		work_sample(p, ctx, held_sample(b, &b->samples[i]), &b->out);
}

/* The filled batch of the lowest sequence number, or NULL.  Lock held. */
static struct batch *oldest_filled(struct pipeline *p)
{
	struct batch *b = NULL;
	for (unsigned i = 0; i < p->n_slots; i++)
		if (p->slots[i].state == BATCH_FILLED && (!b || p->slots[i].seq < b->seq))
			b = &p->slots[i];
	return b;
}

/* Work the oldest filled batch with CTX, or with none filled wait for a
 * change.  Lock held (released while working or waiting). */
static void work_or_wait(struct pipeline *p, void *ctx)
{
	struct batch *b = oldest_filled(p);
	if (!b) {
		pthread_cond_wait(&p->cond, &p->lock);
		return;
	}
	b->state = BATCH_IN_WORK;
	pthread_mutex_unlock(&p->lock);
	work_batch(p, b, ctx);
	pthread_mutex_lock(&p->lock);
	b->state = BATCH_DONE;
	pthread_cond_broadcast(&p->cond);
}

static void *worker_thread(void *arg)
{
	struct worker_arg *a = arg;
	struct pipeline *p = a->p;
	pthread_mutex_lock(&p->lock);
	while (!p->stop || oldest_filled(p))
		work_or_wait(p, a->ctx);
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

/* Emit finished batches in sequence order, the lock released meanwhile
 * (only the reader thread emits and frees batches).  Lock held. */
static void write_done(struct pipeline *p)
{
	for (;;) {
		struct batch *b = &p->slots[p->next_write % p->n_slots];
		if (b->seq != p->next_write || b->state != BATCH_DONE)
			return;
		pthread_mutex_unlock(&p->lock);
		if (b->out.oom && !p->err)
			p->err = -ENOMEM;
		emit(p, b->out.buf, b->out.len);
		pthread_mutex_lock(&p->lock);
		b->state = BATCH_FREE;
		b->n = 0;
		b->used = 0;
		p->next_write++;
	}
}

/* The batch being filled (slot of next_fill), once it is free: meanwhile
 * the reader emits what is done and works batches itself. */
static struct batch *fill_slot(struct pipeline *p)
{
	struct batch *b = &p->slots[p->next_fill % p->n_slots];
	pthread_mutex_lock(&p->lock);
	for (;;) {
		write_done(p);
		if (b->state == BATCH_FREE)
			break;
		work_or_wait(p, p->direct_ctx);
	}
	pthread_mutex_unlock(&p->lock);
	p->filling = b;
	return b;
}

static void submit(struct pipeline *p, struct batch *b)
{
	b->seq = p->next_fill++;
	p->filling = NULL;
	pthread_mutex_lock(&p->lock);
	b->state = BATCH_FILLED;
	pthread_cond_signal(&p->cond);
	write_done(p);
	pthread_mutex_unlock(&p->lock);
}

int pipeline_add(struct pipeline *p, const struct su_sample *s)
{
	if (!p->threads) {
		/* The same work as a worker's, right here. */
		work_sample(p, p->direct_ctx, s, &p->direct);
		if (p->direct.oom)
			return -ENOMEM;
		if (p->direct.len >= DIRECT_FLUSH) {
			emit(p, p->direct.buf, p->direct.len);
			p->direct.len = 0;
			p->direct.gen++;
		}
		return p->err;
	}
	struct batch *b = p->filling ? p->filling : fill_slot(p);
	if (batch_add(b, s))
		return -ENOMEM;
	if (b->n == BATCH || b->used >= BATCH_BYTES)
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
	struct batch *b = p->filling;
	if (b && b->n)
		submit(p, b);
	if (p->n_workers) {
		pthread_mutex_lock(&p->lock);
		for (;;) {
			write_done(p);
			if (p->next_write == p->next_fill)
				break;
			work_or_wait(p, p->direct_ctx);
		}
		pthread_mutex_unlock(&p->lock);
		stop_workers(p);
	}
	return p->err;
}

struct pipeline *pipeline_new(unsigned n_workers, void *const *worker_ctx, void *direct_ctx,
			      pipeline_unwind_fn *unwind, pipeline_format_fn *format, pipeline_emit_fn *emit_fn,
			      void *emit_arg)
{
	struct pipeline *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	*p = (struct pipeline){ .unwind = unwind, .format = format, .emit = emit_fn, .emit_arg = emit_arg,
				.direct_ctx = direct_ctx, .direct = { .gen = 1 } };
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
		free(p->slots[i].arena);
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
