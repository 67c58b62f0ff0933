/* SPDX-License-Identifier: MIT */
/* The thread mapping a perf.data file ahead of its reader (perf-ahead.h). */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "trace/perf-ahead.h"

struct perf_ahead {
	pthread_t thread;
	const uint8_t *map;
	uint64_t size;
	uint64_t done;            /* mapped up to here (the thread's own) */
	_Atomic uint64_t want;    /* map up to here */
	_Atomic uint32_t moved;   /* a futex word: bumped whenever WANT moves or on stop */
	_Atomic int sleeping;     /* the thread waits on MOVED */
	_Atomic int stop;
	_Atomic int retired;      /* the pages map cheaply: the thread left (perf_ahead_release) */
	_Atomic uint64_t next_chunk; /* the next 2 MB to give back */
	_Atomic uint64_t release;    /* perf_ahead_release: give back below this offset */
	uint64_t release_told;       /* the reader's: RELEASE when it last woke the thread */
};

/* Page tables map 2 MB each (x86-64, arm64 with 4 KB pages): two threads
 * giving back whole ones never wait for each other's table. */
#define CHUNK (2u << 20)

/* Give back the mapping's pages below offset UPTO, 2 MB after 2 MB, with
 * whoever else runs this: each takes the next one not taken, and only a
 * whole one below UPTO (the last one of the mapping ends at its end). */
static void give_back_chunks(struct perf_ahead *a, uint64_t upto)
{
	uintptr_t const lo = (uintptr_t)a->map, hi = lo + a->size;
	uintptr_t const first = lo & ~(uintptr_t)(CHUNK - 1);
	uintptr_t const limit = upto >= a->size ? hi : lo + upto;
	uint64_t i = atomic_load_explicit(&a->next_chunk, memory_order_relaxed);
	for (;;) {
		uintptr_t from = first + (uintptr_t)i * CHUNK, to = from + CHUNK;
		if (from >= hi || (to > limit && limit < hi))
			return;
		if (!atomic_compare_exchange_weak_explicit(&a->next_chunk, &i, i + 1, memory_order_relaxed,
							   memory_order_relaxed))
			continue; /* I is now the next one not taken */
		i++;
		if (from < lo)
			from = lo;
		if (to > hi)
			to = hi;
		madvise((void *)from, to - from, MADV_DONTNEED);
	}
}

/* The mapping thread loads one address each STRIDE bytes: a fault maps
 * the cached pages of the aligned 64 KB around it (the kernel's
 * fault_around_bytes, 64 KB unless changed in debugfs; a page left
 * unmapped is mapped by the reader's own fault).  A load per 4 KB page
 * took twice as long (a TLB miss each, through the VM's nested page
 * tables) and the thread fell behind the reader. */
#define STRIDE (64u << 10)

/* Mapping a megabyte faster than this: the pages are in large folios.
 * Measured here: 1.5 us in 2 MB folios, 5-6 after dd bs=1M, 19-28 in the
 * 64 KB folios cp leaves, 45-60 in single pages. */
#define CHEAP_NS_PER_MB 10000u

static void futex_wait(_Atomic uint32_t *w, uint32_t v)
{
	(void)syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	(void)syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void *ahead_main(void *arg)
{
	struct perf_ahead *a = arg;
	int first = 1;
	while (!atomic_load_explicit(&a->stop, memory_order_acquire)) {
		uint32_t const seen = atomic_load_explicit(&a->moved, memory_order_acquire);
		uint64_t want = atomic_load_explicit(&a->want, memory_order_relaxed);
		if (want > a->size)
			want = a->size;
		if (a->done < want) {
			volatile const uint8_t *const m = a->map;
			uint64_t const from = a->done;
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			for (; a->done < want && !atomic_load_explicit(&a->stop, memory_order_relaxed); a->done += STRIDE)
				(void)m[a->done];
			clock_gettime(CLOCK_MONOTONIC, &t1);
			/* Pages cached in large folios (a file written in big
			 * writes or read from disk with MADV_HUGEPAGE) map a
			 * whole folio a fault, 1.5-6 us a megabyte here against
			 * 45-60 for the single pages perf record's writes leave:
			 * then this thread only costs the reader wake-ups, and
			 * it leaves. */
			uint64_t const ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec -
					    (uint64_t)t0.tv_nsec;
			if (first && a->done - from >= (4u << 20) && ns < CHEAP_NS_PER_MB * ((a->done - from) >> 20)) {
				atomic_store_explicit(&a->retired, 1, memory_order_release);
				return NULL;
			}
			first = 0;
			continue;
		}
		give_back_chunks(a, atomic_load_explicit(&a->release, memory_order_relaxed));
		atomic_store_explicit(&a->sleeping, 1, memory_order_seq_cst);
		if (atomic_load_explicit(&a->moved, memory_order_seq_cst) == seen &&
		    !atomic_load_explicit(&a->stop, memory_order_seq_cst))
			futex_wait(&a->moved, seen);
		atomic_store_explicit(&a->sleeping, 0, memory_order_relaxed);
	}
	give_back_chunks(a, UINT64_MAX);
	return NULL;
}

struct perf_ahead *perf_ahead_start(const uint8_t *map, uint64_t size, uint64_t from)
{
	struct perf_ahead *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->map = map;
	a->size = size;
	a->done = from & ~(uint64_t)(STRIDE - 1);
	atomic_init(&a->want, from + PERF_AHEAD_BYTES);
	if (pthread_create(&a->thread, NULL, ahead_main, a) != 0) {
		free(a);
		return NULL;
	}
	return a;
}

/* Wake the thread if it waits: WANT or RELEASE moved. */
static void nudge(struct perf_ahead *a)
{
	atomic_fetch_add_explicit(&a->moved, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&a->sleeping, memory_order_seq_cst))
		futex_wake(&a->moved);
}

void perf_ahead_at(struct perf_ahead *a, uint64_t pos)
{
	if (atomic_load_explicit(&a->retired, memory_order_relaxed))
		return;
	atomic_store_explicit(&a->want, pos + PERF_AHEAD_BYTES, memory_order_relaxed);
	nudge(a);
}

int perf_ahead_release(struct perf_ahead *a, uint64_t below)
{
	if (atomic_load_explicit(&a->retired, memory_order_acquire))
		return -1;
	atomic_store_explicit(&a->release, below, memory_order_relaxed);
	/* A wake is a system call and an interrupt for the other core: only
	 * for a whole piece more to give back. */
	if (below >= a->release_told + CHUNK) {
		a->release_told = below;
		nudge(a);
	}
	return 0;
}

void perf_ahead_stop(struct perf_ahead *a)
{
	if (!a)
		return;
	atomic_store_explicit(&a->stop, 1, memory_order_seq_cst);
	atomic_fetch_add_explicit(&a->moved, 1, memory_order_seq_cst);
	futex_wake(&a->moved);
	give_back_chunks(a, UINT64_MAX);
	pthread_join(a->thread, NULL);
	free(a);
}
