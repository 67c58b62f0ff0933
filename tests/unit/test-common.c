/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of common/: the grow helper, the hash function and hash map,
 * varints.  (The zstd framing is tested with the writer that makes the
 * frames: test-ctf-writer.)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"
#include "common/hashmap.h"
#include "common/varint.h"
#include "tests/unit/check-main.h"

#ifdef __SANITIZE_ADDRESS__
/* The sizes past memory below must fail as realloc fails (NULL), not end
 * the test as ASan does by default. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}
#endif

/* ---- grow ------------------------------------------------------------------ */

START_TEST(grow_doubles_and_zeroes)
{
	uint32_t *a = NULL;
	size_t cap = 0;
	ck_assert_int_eq(SU_GROW(a, cap, 1), 0);
	ck_assert_uint_eq(cap, 8);
	for (size_t i = 0; i < cap; i++)
		ck_assert_uint_eq(a[i], 0);
	for (size_t i = 0; i < cap; i++)
		a[i] = (uint32_t)i + 1;
	uint32_t *const before = a;
	ck_assert_int_eq(SU_GROW(a, cap, 8), 0); /* fits: nothing moves */
	ck_assert_ptr_eq(a, before);
	ck_assert_uint_eq(cap, 8);
	ck_assert_int_eq(SU_GROW(a, cap, 9), 0);
	ck_assert_uint_eq(cap, 16);
	ck_assert_int_eq(SU_GROW(a, cap, 100), 0);
	ck_assert_uint_eq(cap, 128);
	for (size_t i = 0; i < 8; i++)
		ck_assert_uint_eq(a[i], i + 1);
	for (size_t i = 8; i < cap; i++)
		ck_assert_uint_eq(a[i], 0);
	free(a);
}
END_TEST

START_TEST(grow_refuses_overflow)
{
	uint64_t *a = NULL;
	size_t cap = 0;
	ck_assert_int_eq(SU_GROW(a, cap, 4), 0);
	a[3] = 42;
	uint64_t *const before = a;
	/* NEED elements of 8 bytes past SIZE_MAX: refused, nothing changed. */
	ck_assert_int_eq(SU_GROW(a, cap, SIZE_MAX / 8 + 1), -ENOMEM);
	ck_assert_int_eq(SU_GROW(a, cap, SIZE_MAX), -ENOMEM);
	ck_assert_ptr_eq(a, before);
	ck_assert_uint_eq(cap, 8);
	ck_assert_uint_eq(a[3], 42);
	/* Representable but far too big for memory: -ENOMEM from realloc. */
	ck_assert_int_eq(SU_GROW(a, cap, SIZE_MAX / 16), -ENOMEM);
	ck_assert_ptr_eq(a, before);
	ck_assert_uint_eq(cap, 8);
	/* Doubling past SIZE_MAX / elem stops at NEED (then fails in realloc,
	 * not by wrapping to a small size). */
	char *b = NULL;
	size_t bcap = 0;
	ck_assert_int_eq(SU_GROW(b, bcap, SIZE_MAX / 2 + 2), -ENOMEM);
	ck_assert_ptr_null(b);
	ck_assert_uint_eq(bcap, 0);
	ck_assert_int_eq(su_grow((void **)&b, &bcap, 1, 0), -ENOMEM); /* no element size */
	free(a);
}
END_TEST

/* ---- hash ------------------------------------------------------------------ */

START_TEST(fnv1a_known_values)
{
	/* The published FNV-1a 64-bit test vectors. */
	ck_assert_uint_eq(su_fnv1a_str(""), UINT64_C(0xcbf29ce484222325));
	ck_assert_uint_eq(su_fnv1a_str("a"), UINT64_C(0xaf63dc4c8601ec8c));
	ck_assert_uint_eq(su_fnv1a_str("foobar"), UINT64_C(0x85944171f73967e8));
	ck_assert_uint_eq(su_fnv1a("foobar", 6), su_fnv1a_str("foobar"));
	ck_assert_uint_eq(su_fnv1a("foobarbaz", 6), su_fnv1a_str("foobar"));
	uint64_t h = SU_FNV_SEED;
	for (const char *s = "foobar"; *s; s++)
		h = su_fnv1a_add(h, (unsigned char)*s);
	ck_assert_uint_eq(h, su_fnv1a_str("foobar"));
}
END_TEST

/* ---- hash map ------------------------------------------------------------- */

struct keys {
	char (*name)[16];
	size_t n;
	int collide; /* every key the same hash */
};

static uint64_t key_hash(const struct keys *k, const char *name)
{
	return k->collide ? 42 : su_fnv1a_str(name);
}

struct probe {
	const struct keys *k;
	const char *name;
};

static int key_eq(const void *arg, uint32_t idx)
{
	const struct probe *p = arg;
	ck_assert_uint_lt(idx, p->k->n);
	return !strcmp(p->k->name[idx], p->name);
}

/* Insert "key-0" ... "key-(N-1)", checking each is new, then find each. */
static void map_round(size_t n, int collide)
{
	struct keys k = { calloc(n, sizeof(*k.name)), 0, collide };
	struct su_hmap m = { 0 };
	ck_assert_ptr_nonnull(k.name);
	size_t grew = 0, cap = 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(k.name[i], sizeof(k.name[i]), "key-%zu", i);
		ck_assert_int_eq(su_hmap_reserve(&m), 0);
		ck_assert_uint_ge(m.cap, 2 * (m.n + 1)); /* at most half full */
		ck_assert_uint_eq(m.cap & (m.cap - 1), 0);
		if (m.cap != cap) {
			grew++;
			cap = m.cap;
		}
		struct probe p = { &k, k.name[i] };
		uint64_t const h = key_hash(&k, k.name[i]);
		size_t const slot = su_hmap_find(&m, h, key_eq, &p);
		ck_assert(!su_hmap_used(&m, slot));
		su_hmap_set(&m, slot, h, (uint32_t)i);
		k.n = i + 1;
	}
	ck_assert_uint_eq(m.n, n);
	if (n > 512)
		ck_assert_uint_gt(grew, 1); /* grew past its first table */
	for (size_t i = 0; i < n; i++) {
		struct probe p = { &k, k.name[i] };
		size_t const slot = su_hmap_find(&m, key_hash(&k, k.name[i]), key_eq, &p);
		ck_assert(su_hmap_used(&m, slot));
		ck_assert_uint_eq(su_hmap_value(&m, slot), i);
	}
	struct probe absent = { &k, "key-none" };
	ck_assert(!su_hmap_used(&m, su_hmap_find(&m, key_hash(&k, "key-none"), key_eq, &absent)));
	su_hmap_free(&m);
	ck_assert_uint_eq(m.n, 0);
	ck_assert_uint_eq(m.cap, 0);
	free(k.name);
}

START_TEST(hmap_insert_find_grow)
{
	map_round(5000, 0);
}
END_TEST

START_TEST(hmap_collisions)
{
	/* One hash for all: every probe runs the chain, EQ tells them apart
	 * (across a grow too). */
	map_round(600, 1);
}
END_TEST

START_TEST(hmap_same_slot_other_hash)
{
	/* Hashes equal in their low bits land in one slot; the stored hash
	 * keeps EQ from being asked about the other. */
	struct keys k = { calloc(2, sizeof(*k.name)), 2, 0 };
	ck_assert_ptr_nonnull(k.name);
	strcpy(k.name[0], "x");
	strcpy(k.name[1], "x"); /* equal names: only the hash differs */
	struct su_hmap m = { 0 };
	ck_assert_int_eq(su_hmap_reserve(&m), 0);
	uint64_t const h0 = 7, h1 = 7 + ((uint64_t)m.cap << 8);
	struct probe p = { &k, "x" };
	size_t s0 = su_hmap_find(&m, h0, key_eq, &p);
	su_hmap_set(&m, s0, h0, 0);
	ck_assert_int_eq(su_hmap_reserve(&m), 0);
	size_t s1 = su_hmap_find(&m, h1, key_eq, &p);
	ck_assert(!su_hmap_used(&m, s1)); /* not entry 0, though EQ would say yes */
	ck_assert_uint_eq(s1, (s0 + 1) & (m.cap - 1));
	su_hmap_set(&m, s1, h1, 1);
	ck_assert_uint_eq(su_hmap_value(&m, su_hmap_find(&m, h1, key_eq, &p)), 1);
	ck_assert_uint_eq(su_hmap_value(&m, su_hmap_find(&m, h0, key_eq, &p)), 0);
	su_hmap_free(&m);
	free(k.name);
}
END_TEST

/* ---- varints ------------------------------------------------------------ */

START_TEST(varint_round_trip)
{
	uint8_t buf[VARINT_MAX_BYTES];
	const uint64_t vals[] = { 0, 1, 127, 128, 16383, 16384, UINT32_MAX, UINT64_MAX - 1, UINT64_MAX };
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		size_t const n = varint_put(buf, vals[i]);
		ck_assert_uint_eq(n, varint_size(vals[i]));
		uint64_t v;
		ck_assert_int_eq(varint_get(buf, buf + n, &v), (int)n);
		ck_assert_uint_eq(v, vals[i]);
		for (size_t cut = 0; cut < n; cut++) /* every truncation */
			ck_assert_int_eq(varint_get(buf, buf + cut, &v), 0);
	}
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (int i = 0; i < 1000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ck_assert_int_eq(zigzag_decode(zigzag_encode((int64_t)x)), (int64_t)x);
		size_t const n = varint_put(buf, x);
		uint64_t v;
		ck_assert_int_eq(varint_get(buf, buf + n, &v), (int)n);
		ck_assert_uint_eq(v, x);
	}
	ck_assert_uint_eq(zigzag_encode(-1), 1);
	ck_assert_uint_eq(zigzag_encode(1), 2);
	ck_assert_int_eq(zigzag_decode(UINT64_MAX), INT64_MIN);
}
END_TEST

START_TEST(varint_rejects_malformed)
{
	uint64_t v;
	const uint8_t too_long[11] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
	ck_assert_int_eq(varint_get(too_long, too_long + 11, &v), -1);
	const uint8_t over64[10] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
	ck_assert_int_eq(varint_get(over64, over64 + 10, &v), -1);
	const uint8_t nonminimal[2] = { 0x81, 0x00 };
	ck_assert_int_eq(varint_get(nonminimal, nonminimal + 2, &v), -1);
	ck_assert_int_eq(varint_get(nonminimal, nonminimal, &v), 0); /* empty input */
}
END_TEST

static Suite *common_suite(void)
{
	Suite *s = suite_create("common");
	TCase *tc = tcase_create("common");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, grow_doubles_and_zeroes);
	tcase_add_test(tc, grow_refuses_overflow);
	tcase_add_test(tc, fnv1a_known_values);
	tcase_add_test(tc, hmap_insert_find_grow);
	tcase_add_test(tc, hmap_collisions);
	tcase_add_test(tc, hmap_same_slot_other_hash);
	tcase_add_test(tc, varint_round_trip);
	tcase_add_test(tc, varint_rejects_malformed);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(common_suite)
