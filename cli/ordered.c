/* SPDX-License-Identifier: MIT */
/* The parts' stacks texts written in the whole read's order (ordered.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cli/ordered.h"
#include "common/grow.h"

/* Chunks a part may have handed over, not yet written, and their bytes:
 * a part waits beyond either.  A part that meets a process's start (its
 * modules loaded, its first frames named) runs 2-8 ms behind the other,
 * which went on to 12 chunks and waited for it, in half the runs of
 * stacks -j 2 on a 150k-sample trace; steady, a part has 4-12 pending. */
#define ORDERED_PENDING 64
#define ORDERED_PENDING_BYTES (16u << 20)
#define CHUNK_SAMPLES 1024
#define CHUNK_BYTES (1u << 20)       /* own bytes (references aside) */

/* A sample's end in its chunk's text, and its place (the rest of its
 * su_order_key is its chunk's).  (A chunk's text ends at CHUNK_BYTES
 * and one sample past it: 32 bits are enough.) */
struct mark {
	uint64_t time, at;
	uint32_t own_end, refs_end;
};

struct chunk {
	struct text text;
	struct mark *marks;           /* CHUNK_SAMPLES */
	size_t n;
	uint64_t instance, file, packet; /* its samples' (one packet's) */
	size_t bytes;                 /* handed over: what it holds, for ORDERED_PENDING_BYTES */
	size_t next;                  /* the writer's: its first sample not written */
	struct chunk *after;          /* the part's next chunk handed over, or on the free list */
};

/* Sample I of C's place. */
static inline struct su_order_key chunk_key(const struct chunk *c, size_t i)
{
	return (struct su_order_key){ .time = c->marks[i].time, .instance = c->instance, .file = c->file,
				      .packet = c->packet, .at = c->marks[i].at };
}

/* Its thread's field (written for every sample) and the shared ones
 * each on cache lines of their own, not sharing one with the next part's. */
struct part {
	_Alignas(64) struct chunk *filling; /* the part's own, not handed over */
	/* Under the lock: */
	_Alignas(64) struct chunk *head, *tail; /* handed over, not yet written */
	struct chunk *free;
	unsigned pending;
	size_t pending_bytes;
	struct su_order_key below;    /* every sample of this part before it is handed over */
	int done;
};

struct ordered {
	pthread_mutex_t lock;
	pthread_cond_t cond;          /* a chunk was written, or cancelled */
	struct part *parts;
	unsigned n;
	int fd;
	int (*sink)(void *arg, const char *buf, size_t len); /* instead of FD, when set */
	void *sink_arg;
	int writing;                  /* a thread writes (the lock released meanwhile) */
	int cancelled;
	int err;
	uint64_t written;
	struct text_iov iov;          /* the writing thread's */
};

struct ordered *ordered_new(unsigned parts, int fd)
{
	struct ordered *o = calloc(1, sizeof(*o));
	if (!o || !(o->parts = aligned_alloc(_Alignof(struct part), parts * sizeof(*o->parts)))) {
		free(o);
		return NULL;
	}
	memset(o->parts, 0, parts * sizeof(*o->parts));
	o->n = parts;
	o->fd = fd;
	pthread_mutex_init(&o->lock, NULL);
	pthread_cond_init(&o->cond, NULL);
	return o;
}

struct ordered *ordered_new_sink(unsigned parts, int (*sink)(void *arg, const char *buf, size_t len), void *arg)
{
	struct ordered *o = ordered_new(parts, -1);
	if (o) {
		o->sink = sink;
		o->sink_arg = arg;
	}
	return o;
}

/* The first error (-errno) is kept.  Lock held. */
static void note_err(struct ordered *o, int err)
{
	if (err && !o->err)
		o->err = err;
}

static void fail(struct ordered *o, int err)
{
	pthread_mutex_lock(&o->lock);
	note_err(o, err);
	pthread_mutex_unlock(&o->lock);
}

static struct chunk *chunk_new(const struct ordered *o)
{
	struct chunk *c = calloc(1, sizeof(*c));
	if (c && !(c->marks = malloc(CHUNK_SAMPLES * sizeof(*c->marks)))) {
		free(c);
		return NULL;
	}
	if (c && !o->sink)
		c->text.by_ref = 1; /* the chains' lines go out by reference */
	return c;
}

static void chunk_free(struct chunk *c)
{
	if (!c)
		return;
	text_free(&c->text);
	free(c->marks);
	free(c);
}

/* The first place where another part than P has a sample not written or
 * may have one not yet handed over, into *B (0: none): P's samples
 * before it may be written.  Lock held. */
static int next_other(const struct ordered *o, const struct part *p, struct su_order_key *b)
{
	int have = 0;
	for (unsigned j = 0; j < o->n; j++) {
		const struct part *q = &o->parts[j];
		if (q == p || (!q->head && q->done))
			continue;
		struct su_order_key const k = q->head ? chunk_key(q->head, q->head->next) : q->below;
		if (!have || su_order_before(&k, b)) {
			*b = k;
			have = 1;
		}
	}
	return have;
}

/* Write what can be written, the lock released while writing.  Lock held;
 * only one thread at a time (WRITING). */
static void write_ready(struct ordered *o)
{
	o->writing = 1;
	for (;;) {
		/* The part whose next sample comes first. */
		struct part *p = NULL;
		struct su_order_key first = { 0 };
		for (unsigned j = 0; j < o->n; j++) {
			struct part *q = &o->parts[j];
			if (!q->head)
				continue;
			struct su_order_key const k = chunk_key(q->head, q->head->next);
			if (!p || su_order_before(&k, &first)) {
				p = q;
				first = k;
			}
		}
		if (!p || o->cancelled)
			break;
		/* As many of its samples in a row as come before any other's. */
		struct chunk *const c = p->head;
		size_t const from = c->next;
		size_t to = from;
		/* Often the whole rest of the chunk (its samples were made on
		 * another core: not each read here when its last tells). */
		struct su_order_key bound = { 0 };
		struct su_order_key const last = chunk_key(c, c->n - 1);
		if (!next_other(o, p, &bound) || su_order_before(&last, &bound))
			to = c->n;
		while (to < c->n) {
			struct su_order_key const k = chunk_key(c, to);
			if (!su_order_before(&k, &bound))
				break;
			to++;
		}
		if (to == from)
			break; /* another part's sample may come first: not handed over yet */
		int const failed = o->err;
		pthread_mutex_unlock(&o->lock);
		size_t const own_from = from ? c->marks[from - 1].own_end : 0;
		size_t const refs_from = from ? c->marks[from - 1].refs_end : 0;
		int rc = 0;
		if (!failed && o->sink)
			rc = o->sink(o->sink_arg, c->text.buf + own_from, c->marks[to - 1].own_end - own_from);
		else if (!failed)
			rc = text_write_range(&c->text, own_from, c->marks[to - 1].own_end, refs_from,
					      c->marks[to - 1].refs_end, &o->iov, o->fd);
		pthread_mutex_lock(&o->lock);
		note_err(o, rc);
		o->written += to - from;
		c->next = to;
		if (to == c->n) {
			/* Its pieces out before its text is let go of (a sink
			 * took them already). */
			int const flush = !o->err && !o->sink;
			pthread_mutex_unlock(&o->lock);
			rc = flush ? text_iov_flush(&o->iov, o->fd) : 0;
			pthread_mutex_lock(&o->lock);
			note_err(o, rc);
			p->head = c->after;
			if (!p->head)
				p->tail = NULL;
			text_clear(&c->text);
			c->text.gen++;
			c->n = c->next = 0;
			c->after = p->free;
			p->free = c;
			p->pending--;
			p->pending_bytes -= c->bytes;
			pthread_cond_broadcast(&o->cond);
		}
	}
	o->writing = 0;
	pthread_cond_broadcast(&o->cond); /* ordered_drain may wait for it */
}

/* Hand over part P's filling chunk (when it holds samples); every sample
 * of P before BELOW (NULL: all) is then handed over.  Lock held. */
static void hand_over(struct ordered *o, struct part *p, const struct su_order_key *below)
{
	struct chunk *const c = p->filling;
	if (c && c->text.oom)
		note_err(o, -ENOMEM); /* text lost: written no further */
	if (c && c->n) {
		c->after = NULL;
		c->next = 0;
		if (p->tail)
			p->tail->after = c;
		else
			p->head = c;
		p->tail = c;
		p->pending++;
		/* Its own, and the lines it holds (a line held twice counted twice). */
		c->bytes = CHUNK_SAMPLES * sizeof(*c->marks) + c->text.cap + c->text.cap_refs * sizeof(*c->text.refs);
		for (size_t i = 0; i < c->text.n_holds; i++)
			c->bytes += sizeof(struct text_shared) + c->text.holds[i]->cap;
		p->pending_bytes += c->bytes;
		p->filling = NULL;
	}
	if (below)
		p->below = *below;
	else
		p->done = 1;
	if (!o->writing)
		write_ready(o);
}

struct text *ordered_text(struct ordered *o, unsigned k, const struct su_order_key *key)
{
	struct part *const p = &o->parts[k];
	struct chunk *c = p->filling;
	if (c && c->n && (c->file != key->file || c->packet != key->packet || c->n >= CHUNK_SAMPLES ||
			  c->text.len >= CHUNK_BYTES || c->text.n_refs >= CHUNK_BYTES || c->text.oom)) {
		pthread_mutex_lock(&o->lock);
		hand_over(o, p, key);
		/* Too many handed over and not written: write or wait. */
		while ((p->pending >= ORDERED_PENDING || p->pending_bytes >= ORDERED_PENDING_BYTES) &&
		       !o->cancelled) {
			if (!o->writing) {
				/* The lock is let go while writing: a cancel or a
				 * write then was not waited for, look again
				 * rather than wait for a wake-up already gone. */
				uint64_t const before = o->written;
				write_ready(o);
				if (o->written != before || o->cancelled)
					continue;
			}
			pthread_cond_wait(&o->cond, &o->lock);
		}
		if ((c = p->free))
			p->free = c->after;
		int const stop = o->cancelled || o->err;
		pthread_mutex_unlock(&o->lock);
		p->filling = c;
		if (stop)
			return NULL;
	}
	if (!c && !(c = p->filling = chunk_new(o))) {
		fail(o, -ENOMEM);
		return NULL;
	}
	if (!c->n) {
		c->instance = key->instance;
		c->file = key->file;
		c->packet = key->packet;
	}
	c->marks[c->n].time = key->time;
	c->marks[c->n].at = key->at;
	return &c->text;
}

void ordered_mark(struct ordered *o, unsigned k)
{
	struct chunk *const c = o->parts[k].filling;
	/* A sample's text past 4 GB: lost, as out of memory. */
	if (c->text.len > UINT32_MAX || c->text.n_refs > UINT32_MAX)
		c->text.oom = 1;
	c->marks[c->n].own_end = (uint32_t)c->text.len;
	c->marks[c->n].refs_end = (uint32_t)c->text.n_refs;
	c->n++;
}

void ordered_done(struct ordered *o, unsigned k)
{
	pthread_mutex_lock(&o->lock);
	hand_over(o, &o->parts[k], NULL);
	pthread_cond_broadcast(&o->cond); /* ordered_drain may wait for it */
	pthread_mutex_unlock(&o->lock);
}

/* Every part done, every chunk written.  Lock held. */
static int all_written(const struct ordered *o)
{
	for (unsigned k = 0; k < o->n; k++)
		if (!o->parts[k].done || o->parts[k].head)
			return 0;
	return 1;
}

void ordered_drain(struct ordered *o)
{
	pthread_mutex_lock(&o->lock);
	for (;;) {
		if (!o->cancelled && !o->writing)
			write_ready(o); /* the lock let go meanwhile: look again below */
		if (!o->writing && (o->cancelled || all_written(o)))
			break;
		pthread_cond_wait(&o->cond, &o->lock);
	}
	pthread_mutex_unlock(&o->lock);
}

void ordered_cancel(struct ordered *o)
{
	pthread_mutex_lock(&o->lock);
	o->cancelled = 1;
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
}

uint64_t ordered_finish(struct ordered *o, int *err)
{
	pthread_mutex_lock(&o->lock);
	if (!o->writing)
		write_ready(o);
	/* Cancelled: the pieces gathered are of samples counted written. */
	if (!o->err && !o->sink)
		o->err = text_iov_flush(&o->iov, o->fd);
	int const rc = o->err;
	uint64_t const n = o->written;
	pthread_mutex_unlock(&o->lock);
	*err = rc;
	return n;
}

void ordered_free(struct ordered *o)
{
	if (!o)
		return;
	for (unsigned k = 0; k < o->n; k++) {
		struct part *const p = &o->parts[k];
		chunk_free(p->filling);
		for (struct chunk *c = p->head, *nx; c; c = nx) {
			nx = c->after;
			chunk_free(c);
		}
		for (struct chunk *c = p->free, *nx; c; c = nx) {
			nx = c->after;
			chunk_free(c);
		}
	}
	pthread_mutex_destroy(&o->lock);
	pthread_cond_destroy(&o->cond);
	free(o->parts);
	free(o);
}
