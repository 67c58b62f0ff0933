/* SPDX-License-Identifier: MIT */
/* trace/mem-ranges.c: where the stack of an sp ends, from the mappings
 * MMAP records announce (never their unmapping). */
#include <stdint.h>

#include "check-main.h"
#include "trace/mem-ranges.h"

static void map(struct su_mem_ranges *t, uint64_t start, uint64_t end, int down)
{
	ck_assert_int_eq(su_mem_ranges_map(t, start, end, down), 0);
}

/* The ranges are sorted and disjoint. */
static void check_sorted(const struct su_mem_ranges *t)
{
	for (size_t i = 0; i < t->n; i++) {
		ck_assert_uint_lt(t->v[i].start, t->v[i].end);
		if (i)
			ck_assert_uint_le(t->v[i - 1].end, t->v[i].start);
	}
}

START_TEST(unknown_is_zero)
{
	struct su_mem_ranges t = { 0 };
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x1000), 0);
	map(&t, 0x10000, 0x20000, 0);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x8000), 0);   /* below, in none */
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x20000), 0);  /* the end is outside */
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x1ffff), 0x20000);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x10000), 0x20000);
	su_mem_ranges_free(&t);
}
END_TEST

/* glibc's thread stack: mapped PROT_NONE, then all but the guard made
 * read-write (the kernel tells both, mprotect as a new mapping). */
START_TEST(thread_stack_guard)
{
	struct su_mem_ranges t = { 0 };
	map(&t, 0x7f0000000000, 0x7f0000801000, 0);
	map(&t, 0x7f0000001000, 0x7f0000801000, 0);
	check_sorted(&t);
	ck_assert_uint_eq(t.n, 2);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x7f00007ff000), 0x7f0000801000);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x7f0000000800), 0x7f0000001000);
	su_mem_ranges_free(&t);
}
END_TEST

START_TEST(split_and_cover)
{
	struct su_mem_ranges t = { 0 };
	map(&t, 0x1000, 0x9000, 0);
	map(&t, 0x3000, 0x4000, 0); /* inside: the old one split */
	check_sorted(&t);
	ck_assert_uint_eq(t.n, 3);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x2000), 0x3000);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x3800), 0x4000);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x5000), 0x9000);
	/* Over the tail of one, two whole ones and the head of another. */
	map(&t, 0x20000, 0x21000, 0);
	map(&t, 0x2800, 0x8000, 0);
	check_sorted(&t);
	ck_assert_uint_eq(t.n, 4);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x2000), 0x2800);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x3800), 0x8000);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x8800), 0x9000);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x20800), 0x21000);
	/* The same range again (an mprotect of the whole): one range. */
	map(&t, 0x2800, 0x8000, 0);
	ck_assert_uint_eq(t.n, 4);
	/* A merged area the kernel reports whole: the parts go. */
	map(&t, 0x1000, 0x21000, 0);
	ck_assert_uint_eq(t.n, 1);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x3000), 0x21000);
	su_mem_ranges_free(&t);
}
END_TEST

/* The main thread's stack grows down past the range its record gave. */
START_TEST(main_stack_grows_down)
{
	struct su_mem_ranges t = { 0 };
	map(&t, 0x7ffd00000, 0x7ffd21000, 1);
	map(&t, 0x10000, 0x20000, 0);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x7ffd20000), 0x7ffd21000);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x7ffc00000), 0x7ffd21000); /* grown below */
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x8000), 0);               /* below another range */
	/* A range right under the stack may be one unmapped since, the
	 * stack grown over it: the stack's end, never the range's. */
	map(&t, 0x7ff000000, 0x7ff010000, 0);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x7ff008000), 0x7ffd21000);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, 0x18000), 0x20000);
	su_mem_ranges_free(&t);
}
END_TEST

START_TEST(copy_is_equal)
{
	struct su_mem_ranges t = { 0 }, c;
	map(&t, 0x1000, 0x2000, 0);
	map(&t, 0x3000, 0x4000, 0);
	map(&t, 0x7000, 0x8000, 1);
	ck_assert_int_eq(su_mem_ranges_copy(&c, &t), 0);
	ck_assert_uint_eq(c.n, t.n);
	map(&t, 0x1000, 0x5000, 0); /* the parent changes, not the copy */
	ck_assert_uint_eq(su_mem_ranges_stack_end(&c, 0x1800), 0x2000);
	ck_assert_uint_eq(su_mem_ranges_stack_end(&c, 0x6000), 0x8000);
	su_mem_ranges_free(&c);
	su_mem_ranges_free(&t);
	ck_assert_int_eq(su_mem_ranges_copy(&c, &t), 0);
	ck_assert_uint_eq(c.n, 0);
	su_mem_ranges_free(&c);
}
END_TEST

/* A program mapping at ever new addresses: the table stays bounded, the
 * ranges mapped after it was forgotten are known. */
START_TEST(bounded)
{
	struct su_mem_ranges t = { 0 };
	for (uint64_t i = 0; i < 200000; i++)
		map(&t, 0x100000 + i * 0x2000, 0x101000 + i * 0x2000, 0);
	ck_assert_int_eq(t.overflow, 1);
	ck_assert_uint_le(t.n, 65536);
	check_sorted(&t);
	uint64_t const last = 0x100000 + 199999ull * 0x2000;
	ck_assert_uint_eq(su_mem_ranges_stack_end(&t, last + 8), last + 0x1000);
	su_mem_ranges_free(&t);
}
END_TEST

static Suite *mem_ranges_suite(void)
{
	Suite *s = suite_create("mem-ranges");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, unknown_is_zero);
	tcase_add_test(tc, thread_stack_guard);
	tcase_add_test(tc, split_and_cover);
	tcase_add_test(tc, main_stack_grows_down);
	tcase_add_test(tc, copy_is_equal);
	tcase_add_test(tc, bounded);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(mem_ranges_suite)
