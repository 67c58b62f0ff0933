/* SPDX-License-Identifier: MIT */
/*
 * hashmap.h: the one open-addressing hash map: 64-bit hashes to uint32
 * values (an index into the caller's own array of entries), linear
 * probing over a power-of-two table kept at most half full.  The map
 * keeps each slot's hash, so it grows without asking the caller; whether
 * two entries are equal is the caller's question (EQ).
 *
 *	if (su_hmap_reserve(&m))                  (room for one more)
 *		return -ENOMEM;
 *	size_t slot = su_hmap_find(&m, h, eq, &key);
 *	if (su_hmap_used(&m, slot))
 *		return su_hmap_value(&m, slot);   (found)
 *	su_hmap_set(&m, slot, h, index);          (add: the empty slot found)
 */
#ifndef STACKCAP_COMMON_HASHMAP_H
#define STACKCAP_COMMON_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct su_hmap {
	uint64_t *hash;
	uint32_t *val;   /* 0: empty, else value + 1 */
	size_t n, cap;   /* entries, slots (0 or a power of two) */
};

/* Is the entry of value IDX the one ARG asks for? */
typedef int (*su_hmap_eq_fn)(const void *arg, uint32_t idx);

/* Room for one more entry: the table doubles (from MIN_CAP 1024 slots)
 * when it would be more than half full.  @return 0 or -ENOMEM (the map is
 * unchanged). */
int su_hmap_reserve(struct su_hmap *m);

/* The slot holding HASH whose value EQ(ARG, value) accepts, or the empty
 * slot where such an entry goes.  The table must have room (reserve). */
size_t su_hmap_find(const struct su_hmap *m, uint64_t hash, su_hmap_eq_fn eq, const void *arg);

static inline int su_hmap_used(const struct su_hmap *m, size_t slot)
{
	return m->val[slot] != 0;
}

static inline uint32_t su_hmap_value(const struct su_hmap *m, size_t slot)
{
	return m->val[slot] - 1;
}

/* Fill the empty SLOT (from su_hmap_find) with HASH -> VALUE
 * (VALUE < UINT32_MAX). */
void su_hmap_set(struct su_hmap *m, size_t slot, uint64_t hash, uint32_t value);

/* Free the table (the map is then empty and reusable). */
void su_hmap_free(struct su_hmap *m);

#endif
