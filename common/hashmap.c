/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "common/hashmap.h"

#define MIN_CAP 1024u

int su_hmap_reserve(struct su_hmap *m)
{
	if ((m->n + 1) * 2 <= m->cap)
		return 0;
	size_t const ncap = m->cap ? 2 * m->cap : MIN_CAP;
	if (ncap < m->cap || ncap > SIZE_MAX / sizeof(*m->hash))
		return -ENOMEM;
	uint64_t *nh = calloc(ncap, sizeof(*nh));
	uint32_t *nv = calloc(ncap, sizeof(*nv));
	if (!nh || !nv) {
		free(nh);
		free(nv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->val[i]) {
			size_t h = m->hash[i] & (ncap - 1);
			while (nv[h])
				h = (h + 1) & (ncap - 1);
			nh[h] = m->hash[i];
			nv[h] = m->val[i];
		}
	free(m->hash);
	free(m->val);
	m->hash = nh;
	m->val = nv;
	m->cap = ncap;
	return 0;
}

size_t su_hmap_find(const struct su_hmap *m, uint64_t hash, su_hmap_eq_fn eq, const void *arg)
{
	size_t h = hash & (m->cap - 1);
	while (m->val[h] && !(m->hash[h] == hash && eq(arg, m->val[h] - 1)))
		h = (h + 1) & (m->cap - 1);
	return h;
}

void su_hmap_set(struct su_hmap *m, size_t slot, uint64_t hash, uint32_t value)
{
	m->hash[slot] = hash;
	m->val[slot] = value + 1;
	m->n++;
}

void su_hmap_free(struct su_hmap *m)
{
	free(m->hash);
	free(m->val);
	m->hash = NULL;
	m->val = NULL;
	m->n = m->cap = 0;
}
