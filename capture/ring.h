/* SPDX-License-Identifier: MIT */
/*
 * ring.h: a single-producer single-consumer byte ring of variable-size
 * records.  The producer is one thread's signal handler or capture call
 * (never blocks, never allocates); the consumer is the writer thread.
 * Records are contiguous: when one does not fit before the end, a wrap
 * marker sends both sides back to offset 0.
 */
#ifndef STACKCAP_RING_H
#define STACKCAP_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Record header, 8-byte aligned; `size` includes the header. */
struct ring_rec {
	uint32_t size;       /* RING_WRAP: skip to offset 0 */
	uint32_t generation; /* maps generation the blob was classified against */
	uint64_t ts;         /* CLOCK_MONOTONIC ns */
	/* Bytes of a second blob after the first: the interrupted stack of
	 * a signal handler running on the alternate stack (0: none). */
	uint32_t seg_len;
	/* Bytes of a runtime unwinder's frames after the blobs
	 * (capture/runtime.h; 0: none). */
	uint32_t rt_len;
};
#define RING_WRAP 0xffffffffu

struct ring {
	uint8_t *buf;
	size_t size;                 /* power of two not needed; multiple of 8 */
	_Atomic size_t head;         /* producer: next write offset (monotonic bytes) */
	_Atomic size_t tail;         /* consumer: next read offset (monotonic bytes) */
	size_t reserved_at;          /* producer-private: offset of the reservation */
};

static inline size_t ring_align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Producer: room for a record of up to MAX bytes (header included)?  Returns
 * a pointer to write it at, or NULL when the ring is too full (drop).
 * Async-signal-safe. */
static inline struct ring_rec *ring_reserve(struct ring *r, size_t max)
{
	max = ring_align8(max);
	size_t const head = atomic_load_explicit(&r->head, memory_order_relaxed);
	size_t const tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	size_t const used = head - tail;
	size_t const off = head % r->size;
	size_t const to_end = r->size - off;
	if (max <= to_end) {
		if (used + max > r->size)
			return NULL;
		r->reserved_at = head;
		return (struct ring_rec *)(r->buf + off);
	}
	/* Wrap: the tail end is wasted, the record goes at offset 0. */
	if (used + to_end + max > r->size)
		return NULL;
	((struct ring_rec *)(r->buf + off))->size = RING_WRAP;
	r->reserved_at = head + to_end;
	return (struct ring_rec *)r->buf;
}

/* Producer: publish the reserved record, SIZE bytes (header included). */
static inline void ring_commit(struct ring *r, struct ring_rec *rec, size_t size)
{
	rec->size = (uint32_t)size;
	atomic_store_explicit(&r->head, r->reserved_at + ring_align8(size), memory_order_release);
}

/* Consumer: the next record, or NULL when empty. */
static inline const struct ring_rec *ring_peek(struct ring *r)
{
	for (;;) {
		size_t const tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
		size_t const head = atomic_load_explicit(&r->head, memory_order_acquire);
		if (tail == head)
			return NULL;
		const struct ring_rec *rec = (const struct ring_rec *)(r->buf + tail % r->size);
		if (rec->size != RING_WRAP)
			return rec;
		atomic_store_explicit(&r->tail, tail + (r->size - tail % r->size), memory_order_release);
	}
}

/* Consumer: release the record returned by ring_peek(). */
static inline void ring_pop(struct ring *r, const struct ring_rec *rec)
{
	size_t const tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	atomic_store_explicit(&r->tail, tail + ring_align8(rec->size), memory_order_release);
}

/* Bytes in use (either side; approximate from the consumer's view). */
static inline size_t ring_used(struct ring *r)
{
	return atomic_load_explicit(&r->head, memory_order_acquire) -
	       atomic_load_explicit(&r->tail, memory_order_acquire);
}

#endif /* STACKCAP_RING_H */
