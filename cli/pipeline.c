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
#include "cli/spread.h"
#include "common/grow.h"

#define BATCH 256                /* samples, at most */
#define BATCH_BYTES (1u << 18)   /* copied stack words and chains: a batch is full past this */
#define DIRECT_FLUSH (1u << 16)
#define DIRECT_FLUSH_REFS (1u << 20) /* bytes by reference: only the pointers are in memory */
/* Batches' copies in flight at most (filled, not yet written): a stack
 * may be 64 MiB (its declared cap), and a batch past BATCH_BYTES holds
 * its arena until written; past this the reader works or waits.  An
 * arena that grew past ARENA_KEEP is given back once written. */
#define HELD_MAX (64u << 20)
#define ARENA_KEEP (4 * BATCH_BYTES)

enum batch_state {
	BATCH_FREE = 0,
	BATCH_FILLED,            /* waits for a worker */
	BATCH_IN_WORK,
	BATCH_DONE,              /* its text waits to be emitted */
};

/* A sample as the reader decoded it, its memory copied into the batch's
 * arena (offsets: the arena may move while the batch fills; NONE: the
 * pointer was NULL).  The pointers are set when the batch is worked.
 *
 * Its image is held whole (HELD_WORDS), or as a delta (HELD_DELTA): the
 * words below its elided top, those the blob held, when the image it
 * took that top from (the thread's sample before it, PREV) is in the
 * same batch.  A deep stack is ~8 KB of words, a delta mostly a few
 * words; copying whole images was half the reader's time, the limit of
 * -j N.  The worker rebuilds a thread's chain of deltas one over the
 * other in a buffer of its own, aligned at the stack's top, as the
 * reader decoded them: the elided top is in place. */
#define NONE SIZE_MAX
#define NO_PREV UINT32_MAX
enum held_form { HELD_WORDS, HELD_DELTA };
struct held {
	struct su_sample s;
	struct stackcap_image image;
	uint8_t has_image, form;
	uint8_t words_out;       /* HELD_WORDS: IMAGE's words are the reader's (su_sample.words_stay) */
	uint8_t mute;            /* pipeline_add_muted: worked, its text dropped */
	size_t words, user_chain, kernel_chain, runtime_frames;
	size_t segment;          /* a second segment (rare): its struct held_segment */
	uint32_t prev;           /* HELD_DELTA: the sample its top is from */
	uint32_t head;           /* the first sample of its chain (itself, or PREV's head) */
	uint64_t chain_words;    /* a head: the most words of its chain's images */
	size_t chain_at;         /* a head: its chain's buffer in the worker's scratch (words), or NONE */
};

/* A second stack segment, in the arena: rare, so that every held sample
 * (written by the reader, read by a worker) is the smaller. */
struct held_segment {
	struct stackcap_image image;
	size_t words;
};

/* The last sample of each thread in a batch: where a delta finds its
 * top.  Open addressing, cleared when the batch is freed. */
#define THREAD_SLOTS (2 * BATCH)
struct batch_thread {
	uint64_t key;            /* 1 << 63 | pid << 32 | tid; 0: empty */
	uint32_t last;           /* index of its last sample */
};

struct batch {
	size_t n;
	struct held samples[BATCH];
	struct batch_thread threads[THREAD_SLOTS];
	uint8_t *arena;
	size_t used, cap;        /* in bytes */
	struct text out;
	int err;                 /* -errno: the worker could not work it */
	uint64_t seq;
	enum batch_state state;
	size_t held;             /* its arena's bytes, counted in pipeline.held while submitted */
};

/* A thread that works batches: a worker, or the reader. */
struct worker_arg {
	struct pipeline *p;
	void *ctx;
	uint64_t *scratch;       /* the batch's chains of images rebuilt from deltas */
	size_t scratch_cap;      /* in words */
	struct text mute;        /* a muted sample's text, dropped */
};

struct pipeline {
	pipeline_unwind_fn *unwind;
	pipeline_format_fn *format;
	pipeline_emit_fn *emit;
	void *emit_arg;
	struct worker_arg direct_arg; /* the reader thread's context */
	struct text direct;      /* no worker: samples go straight here */
	int batching;            /* the workers started: samples go into batches */
	unsigned n_workers;      /* threads running */
	pthread_t *threads;
	struct worker_arg *args;
	unsigned n_args;
	struct batch *slots;     /* ring of n_slots */
	struct batch *filling;   /* the batch the reader fills, or NULL */
	unsigned n_slots;
	uint64_t next_fill, next_write;  /* sequence numbers */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	int discard;             /* pipeline_abort: filled batches are not worked */
	int err;                 /* -errno of the first failure */
	size_t held;             /* bytes of the submitted batches' arenas (HELD_MAX) */
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

/* The slot of S's thread in B. */
static struct batch_thread *batch_thread(struct batch *b, const struct su_sample *s)
{
	uint64_t const key = 1ull << 63 | (uint64_t)s->pid << 32 | s->tid;
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (THREAD_SLOTS - 1);
	while (b->threads[i].key && b->threads[i].key != key)
		i = (i + 1) & (THREAD_SLOTS - 1);
	b->threads[i].key = key; /* a batch has fewer threads than slots */
	return &b->threads[i];
}

/* How B holds S's image: as a delta when its elided top is that of the
 * thread's last sample in B (*PREV), else whole. */
static enum held_form image_form(struct batch *b, const struct su_sample *s, uint32_t *prev)
{
	*prev = NO_PREV;
	if (!s->image || !s->decode_no)
		return HELD_WORDS;
	struct batch_thread *t = batch_thread(b, s);
	uint32_t const last = t->last;
	t->last = (uint32_t)b->n + 1;
	if (!s->image->elided || !last || b->samples[last - 1].s.decode_no + 1 != s->decode_no)
		return HELD_WORDS;
	*prev = last - 1;
	return HELD_DELTA;
}

static int batch_add(struct batch *b, const struct su_sample *s, int mute)
{
	struct held *h = &b->samples[b->n];
	int oom = 0;
	h->mute = (uint8_t)mute;
	h->s = *s;
	h->s.full_image = NULL; /* fidelity (stackunwind stats) only */
	h->has_image = s->image != NULL;
	h->form = (uint8_t)image_form(b, s, &h->prev);
	h->head = h->prev == NO_PREV ? (uint32_t)b->n : b->samples[h->prev].head;
	h->chain_words = 0;
	h->chain_at = NONE;
	h->words = NONE;
	h->words_out = 0;
	if (h->form == HELD_DELTA) {
		h->image = *s->image;
		h->image.kept = NULL;
		h->words = arena_put(b, s->image->words, (s->image->nwords - s->image->elided) * sizeof(uint64_t), &oom);
		struct held *const head = &b->samples[h->head];
		if (s->image->nwords > head->chain_words)
			head->chain_words = s->image->nwords;
	} else if (s->image && s->words_stay) {
		h->image = *s->image; /* a perf.data file's mapping: no copy */
		h->image.kept = NULL;
		h->image.capacity = s->image->nwords;
		h->words_out = 1; /* never a delta's head: perf.data has no deltas */
	} else if (s->image) {
		h->words = image_put(b, &h->image, s->image, &oom);
		h->chain_words = s->image->nwords; /* a head: deltas may follow */
	}
	h->segment = NONE;
	if (s->segment) {
		struct held_segment seg;
		seg.words = image_put(b, &seg.image, s->segment, &oom);
		h->segment = arena_put(b, &seg, sizeof(seg), &oom);
	}
	h->user_chain = arena_put(b, s->user_chain, s->n_user_chain * sizeof(*s->user_chain), &oom);
	h->kernel_chain = arena_put(b, s->kernel_chain, s->n_kernel_chain * sizeof(*s->kernel_chain), &oom);
	h->runtime_frames = arena_put(b, s->runtime_frames, s->runtime_frames_len, &oom);
	if (oom)
		return -ENOMEM;
	b->n++;
	return 0;
}

/* The sample H points into its batch's arena again (a delta's image is
 * rebuilt apart). */
static const struct su_sample *held_sample(struct batch *b, struct held *h)
{
	h->s.image = h->has_image ? &h->image : NULL;
	if (h->form == HELD_WORDS && !h->words_out)
		h->image.words = arena_at(b, h->words);
	struct held_segment *const seg = arena_at(b, h->segment);
	if (seg)
		seg->image.words = arena_at(b, seg->words);
	h->s.segment = seg ? &seg->image : NULL;
	h->s.user_chain = arena_at(b, h->user_chain);
	h->s.kernel_chain = arena_at(b, h->kernel_chain);
	h->s.runtime_frames = arena_at(b, h->runtime_frames);
	return &h->s;
}

/* ---- the ring ------------------------------------------------------------ */

/* H's image from its delta and the top of PREV's (the sample before it
 * in its chain, worked just before: its words are in the chain's buffer,
 * where the top lies in place, or in the arena for the chain's head).
 * @return 0, or -EPROTO: the reader's image did not fit on PREV's. */
static int held_rebuild(struct batch *b, struct held *h, const struct worker_arg *w)
{
	const struct held *head = &b->samples[h->head];
	const struct stackcap_image *ref = &b->samples[h->prev].image;
	uint64_t const n = h->image.nwords, top_n = h->image.elided;
	if (top_n > ref->nwords || h->image.sp + 8 * n != ref->sp + 8 * ref->nwords)
		return -EPROTO;
	uint64_t *const top = w->scratch + head->chain_at + head->chain_words;
	h->image.words = top - n;
	h->image.capacity = n;
	if (ref->words + ref->nwords != top)
		memcpy(top - top_n, ref->words + ref->nwords - top_n, top_n * sizeof(*top));
	memcpy(h->image.words, arena_at(b, h->words), (n - top_n) * sizeof(*top));
	return 0;
}

static void work_batch(struct pipeline *p, struct batch *b, struct worker_arg *w)
{
	text_clear(&b->out);
	b->out.gen = b->seq + 1; /* unique per batch */
	b->err = 0;
	/* A buffer per chain of deltas, in W's scratch. */
	size_t need = 0;
	for (size_t i = 0; i < b->n; i++) {
		struct held *const head = &b->samples[b->samples[i].head];
		if (b->samples[i].form == HELD_DELTA && head->chain_at == NONE) {
			head->chain_at = need;
			need += head->chain_words;
		}
	}
	if (SU_GROW(w->scratch, w->scratch_cap, need)) {
		b->err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct held *const h = &b->samples[i];
		if (h->form == HELD_DELTA && (b->err = held_rebuild(b, h, w)))
			return;
		work_sample(p, w->ctx, held_sample(b, h), h->mute ? &w->mute : &b->out);
		if (h->mute)
			text_clear(&w->mute);
	}
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
static void work_or_wait(struct pipeline *p, struct worker_arg *w)
{
	struct batch *b = oldest_filled(p);
	if (!b) {
		pthread_cond_wait(&p->cond, &p->lock);
		return;
	}
	b->state = BATCH_IN_WORK;
	pthread_mutex_unlock(&p->lock);
	work_batch(p, b, w);
	pthread_mutex_lock(&p->lock);
	b->state = BATCH_DONE;
	pthread_cond_broadcast(&p->cond);
}

static void *worker_thread(void *arg)
{
	struct worker_arg *a = arg;
	struct pipeline *p = a->p;
	pthread_mutex_lock(&p->lock);
	while (!p->stop || (!p->discard && oldest_filled(p)))
		work_or_wait(p, a);
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

/* T to the emit function, then emptied. */
static void emit(struct pipeline *p, struct text *t)
{
	int const rc = text_size(t) ? p->emit(p->emit_arg, t) : 0;
	if (rc && !p->err)
		p->err = rc;
	text_clear(t);
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
		if (b->err && !p->err)
			p->err = b->err;
		emit(p, &b->out);
		if (b->cap > ARENA_KEEP) {
			free(b->arena);
			b->arena = NULL;
			b->cap = 0;
		}
		pthread_mutex_lock(&p->lock);
		p->held -= b->held;
		b->held = 0;
		b->state = BATCH_FREE;
		b->n = 0;
		b->used = 0;
		memset(b->threads, 0, sizeof(b->threads));
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
		if (b->state == BATCH_FREE && p->held <= HELD_MAX)
			break;
		work_or_wait(p, &p->direct_arg);
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
	b->held = b->cap;
	p->held += b->held;
	b->state = BATCH_FILLED;
	pthread_cond_signal(&p->cond);
	write_done(p);
	pthread_mutex_unlock(&p->lock);
}

int pipeline_start(struct pipeline *p)
{
	if (p->batching || !p->n_args)
		return 0;
	/* The ring (~115 KB a batch) only now: a run whose workers never
	 * join (a short trace) would clear it for nothing. */
	if (!p->slots) {
		if (!(p->slots = calloc(p->n_slots, sizeof(*p->slots))))
			return -ENOMEM;
		for (unsigned i = 0; i < p->n_slots; i++)
			p->slots[i].out.by_ref = p->direct.by_ref;
	}
	/* The samples worked straight are emitted first. */
	emit(p, &p->direct);
	p->direct.gen++;
	int rc = 0;
	struct su_spread spread; /* the reader works too: the workers elsewhere */
	su_spread_init(&spread);
	for (unsigned i = 0; i < p->n_args && !rc; i++)
		if (!(rc = su_spread_create(&spread, &p->threads[i], worker_thread, &p->args[i])))
			p->n_workers = i + 1;
	p->batching = p->n_workers > 0;
	return p->batching ? 0 : -rc;
}

void pipeline_emit_by_ref(struct pipeline *p)
{
	p->direct.by_ref = 1;
	for (unsigned i = 0; p->slots && i < p->n_slots; i++)
		p->slots[i].out.by_ref = 1;
}

const int *pipeline_holding(const struct pipeline *p)
{
	return &p->batching;
}

int pipeline_add_muted(struct pipeline *p, const struct su_sample *s, int mute)
{
	if (!p->batching) {
		/* The same work as a worker's, right here. */
		work_sample(p, p->direct_arg.ctx, s, mute ? &p->direct_arg.mute : &p->direct);
		if (mute)
			text_clear(&p->direct_arg.mute);
		if (p->direct.oom)
			return -ENOMEM;
		if (p->direct.len >= DIRECT_FLUSH || p->direct.ref_bytes >= DIRECT_FLUSH_REFS) {
			emit(p, &p->direct);
			p->direct.gen++;
		}
		return p->err;
	}
	struct batch *b = p->filling ? p->filling : fill_slot(p);
	if (batch_add(b, s, mute))
		return -ENOMEM;
	if (b->n == BATCH || b->used >= BATCH_BYTES)
		submit(p, b);
	return p->err;
}

int pipeline_add(struct pipeline *p, const struct su_sample *s)
{
	return pipeline_add_muted(p, s, 0);
}

void pipeline_work_into(struct pipeline *p, const struct su_sample *s, struct text *out)
{
	work_sample(p, p->direct_arg.ctx, s, out);
}

void pipeline_abort(struct pipeline *p)
{
	if (!p || !p->n_workers)
		return;
	pthread_mutex_lock(&p->lock);
	p->discard = 1;
	pthread_mutex_unlock(&p->lock);
	stop_workers(p);
}

int pipeline_finish(struct pipeline *p)
{
	if (!p->batching) {
		int const oom = p->direct.oom;
		emit(p, &p->direct);
		return oom ? -ENOMEM : p->err;
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
			work_or_wait(p, &p->direct_arg);
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
				.direct_arg = { .p = p, .ctx = direct_ctx }, .direct = { .gen = 1 } };
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (!n_workers)
		return p;
	p->n_slots = 2 * n_workers + 2; /* allocated by pipeline_start */
	p->threads = calloc(n_workers, sizeof(*p->threads));
	p->args = calloc(n_workers, sizeof(*p->args));
	p->n_args = n_workers;
	if (!p->threads || !p->args) {
		pipeline_free(p);
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < n_workers; i++)
		p->args[i] = (struct worker_arg){ .p = p, .ctx = worker_ctx[i] };
	return p;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	stop_workers(p);
	for (unsigned i = 0; p->slots && i < p->n_slots; i++) {
		free(p->slots[i].arena);
		text_free(&p->slots[i].out);
	}
	free(p->slots);
	free(p->threads);
	for (unsigned i = 0; p->args && i < p->n_args; i++) {
		free(p->args[i].scratch);
		text_free(&p->args[i].mute);
	}
	free(p->args);
	free(p->direct_arg.scratch);
	text_free(&p->direct_arg.mute);
	text_free(&p->direct);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}
