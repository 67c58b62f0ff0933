/* SPDX-License-Identifier: MIT */
/* A least-significant-byte-first radix sort of 64-bit keys (sort.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/sort.h"

/* Below this many keys an insertion sort (stable too) is quicker than
 * counting 256 buckets a pass. */
#define SMALL 32

static void insertion(uint64_t *k, uint32_t *p, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t const key = k[i];
		uint32_t const pay = p ? p[i] : 0;
		size_t j = i;
		for (; j > 0 && k[j - 1] > key; j--) {
			k[j] = k[j - 1];
			if (p)
				p[j] = p[j - 1];
		}
		k[j] = key;
		if (p)
			p[j] = pay;
	}
}

int su_sort_u64(uint64_t *keys, uint32_t *payload, size_t n)
{
	if (n <= SMALL) {
		insertion(keys, payload, n);
		return 0;
	}
	uint64_t *const k2 = malloc(n * sizeof(*k2));
	uint32_t *const p2 = payload ? malloc(n * sizeof(*p2)) : NULL;
	if (!k2 || (payload && !p2)) {
		free(k2);
		free(p2);
		return -ENOMEM;
	}
	/* Every byte's counts in one read of the keys. */
	size_t (*count)[256] = calloc(8, sizeof(*count));
	if (!count) {
		free(k2);
		free(p2);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		for (unsigned b = 0; b < 8; b++)
			count[b][keys[i] >> (8 * b) & 0xff]++;
	uint64_t *src = keys, *dst = k2;
	uint32_t *psrc = payload, *pdst = p2;
	for (unsigned b = 0; b < 8; b++) {
		size_t *const c = count[b];
		/* A byte every key shares moves nothing: the pass is skipped
		 * (the high bytes of addresses). */
		if (c[keys[0] >> (8 * b) & 0xff] == n)
			continue;
		size_t sum = 0;
		for (size_t d = 0; d < 256; d++) {
			size_t const t = c[d];
			c[d] = sum;
			sum += t;
		}
		for (size_t i = 0; i < n; i++) {
			size_t const at = c[src[i] >> (8 * b) & 0xff]++;
			dst[at] = src[i];
			if (psrc)
				pdst[at] = psrc[i];
		}
		uint64_t *const t = src;
		src = dst;
		dst = t;
		uint32_t *const pt = psrc;
		psrc = pdst;
		pdst = pt;
	}
	if (src != keys) {
		memcpy(keys, src, n * sizeof(*keys));
		if (payload)
			memcpy(payload, psrc, n * sizeof(*payload));
	}
	free(count);
	free(k2);
	free(p2);
	return 0;
}
