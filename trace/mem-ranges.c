/* SPDX-License-Identifier: MIT */
/* A process's mappings, for where the stack of an sp ends (mem-ranges.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "trace/mem-ranges.h"

/* More ranges than this (a program mapping at ever new addresses, whose
 * old ranges never go): all forgotten, those mapped later kept. */
#define MEM_RANGES_MAX 65536u

/* The first range ending above ADDR (T->n: none). */
static size_t first_above(const struct su_mem_ranges *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t const mid = lo + (hi - lo) / 2;
		if (t->v[mid].end > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int su_mem_ranges_map(struct su_mem_ranges *t, uint64_t start, uint64_t end, int grows_down)
{
	if (end <= start)
		return 0;
	if (t->n + 2 > MEM_RANGES_MAX) {
		t->n = 0;
		t->overflow = 1;
	}
	if (su_grow((void **)&t->v, &t->cap, t->n + 2, sizeof(*t->v)))
		return -ENOMEM;
	/* The parts of older ranges under the new one are gone (the kernel
	 * split or replaced them). */
	size_t i = first_above(t, start);
	if (i < t->n && t->v[i].start < start && t->v[i].end > end) {
		/* Split in two around the new one. */
		memmove(&t->v[i + 2], &t->v[i], (t->n - i) * sizeof(*t->v));
		t->n += 2;
		t->v[i].end = start;
		t->v[i + 2].start = end;
		t->v[i + 1] = (struct su_mem_range){ start, end, grows_down };
		return 0;
	}
	if (i < t->n && t->v[i].start < start) {
		t->v[i].end = start;
		i++;
	}
	size_t k = i;
	while (k < t->n && t->v[k].end <= end)
		k++; /* wholly covered */
	if (k < t->n && t->v[k].start < end)
		t->v[k].start = end;
	/* [i, k) go, the new one takes their place. */
	if (k == i) {
		memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
		t->n++;
	} else if (k > i + 1) {
		memmove(&t->v[i + 1], &t->v[k], (t->n - k) * sizeof(*t->v));
		t->n -= k - i - 1;
	}
	t->v[i] = (struct su_mem_range){ start, end, grows_down };
	return 0;
}

uint64_t su_mem_ranges_stack_end(const struct su_mem_ranges *t, uint64_t sp)
{
	size_t const i = first_above(t, sp);
	if (i == t->n)
		return 0;
	if (t->v[i].start > sp) /* in no range: the part a main stack grew */
		return t->v[i].grows_down ? t->v[i].end : 0;
	/* A main stack may have grown down over a range unmapped since. */
	if (i + 1 < t->n && t->v[i + 1].grows_down)
		return t->v[i + 1].end;
	return t->v[i].end;
}

int su_mem_ranges_copy(struct su_mem_ranges *dst, const struct su_mem_ranges *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->overflow = src->overflow;
	if (!src->n)
		return 0;
	if (su_grow((void **)&dst->v, &dst->cap, src->n, sizeof(*dst->v)))
		return -ENOMEM;
	memcpy(dst->v, src->v, src->n * sizeof(*src->v));
	dst->n = src->n;
	return 0;
}

void su_mem_ranges_free(struct su_mem_ranges *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}
