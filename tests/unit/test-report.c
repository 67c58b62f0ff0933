/* SPDX-License-Identifier: MIT */
/* cli/report.c on hand-made folded counts: Children counts a sample once
 * however often recursion repeats a function, Self only the innermost
 * frame; the root and an early end's "[why]" are no rows, "[unknown]"
 * frames are; per-module rows; the order of --sort; --min and --limit;
 * the call tree caller first, hottest first.  TAP through Check. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report.h"
#include "tests/unit/check-main.h"

#define M "\x1f" /* FOLDED_MODSEP */

struct row {
	double children, self;
	unsigned long samples;
	char module[64], function[256];
};

/* The report of the N lines STACKS (with their COUNTS) as a string. */
static char *report_of(const char *const *stacks, const unsigned *counts, size_t n, const struct report_opts *o)
{
	struct folded_counts c = { 0 };
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(folded_counts_add_n(&c, stacks[i], strlen(stacks[i]), counts[i]), 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(report_print(&c, o, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	folded_counts_free(&c);
	return buf;
}

/* The table rows of TEXT in order; @return how many (at most MAX). */
static size_t rows_of(const char *text, struct row *rows, size_t max, int per_module)
{
	size_t n = 0;
	for (const char *p = text; *p && n < max; p = strchr(p, '\n') + 1) {
		if (*p != '#') {
			struct row *r = &rows[n];
			memset(r, 0, sizeof(*r));
			int const want = per_module ? 4 : 5;
			char line[512];
			size_t const len = strcspn(p, "\n");
			ck_assert_uint_lt(len, sizeof(line));
			memcpy(line, p, len);
			line[len] = 0;
			ck_assert_int_eq(sscanf(line, " %lf%% %lf%% %lu %63s %255[^\n]", &r->children, &r->self,
						&r->samples, r->module, r->function), want);
			n++;
		}
		if (!strchr(p, '\n'))
			break;
	}
	return n;
}

static const struct row *find(const struct row *rows, size_t n, const char *function)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].function, function))
			return &rows[i];
	ck_abort_msg("no row %s", function);
	return NULL;
}

START_TEST(recursion_counted_once)
{
	const char *st[] = { "p;main" M "a;f" M "a;f" M "a;f" M "a", "p;main" M "a;g" M "b", "q;main" M "a;f" M "a;g" M "b" };
	unsigned const cnt[] = { 3, 1, 4 };
	struct report_opts o = { .title = "t" };
	char *text = report_of(st, cnt, 3, &o);
	ck_assert_ptr_nonnull(strstr(text, "# stackunwind report of t: 8 samples\n"));
	struct row r[8];
	size_t const n = rows_of(text, r, 8, 0);
	ck_assert_uint_eq(n, 3);
	/* Children first: main (all 8), f (3 + 4), g (1 + 4). */
	ck_assert_str_eq(r[0].function, "main");
	ck_assert_double_eq_tol(r[0].children, 100.0, 1e-9);
	ck_assert_double_eq_tol(r[0].self, 0.0, 1e-9);
	ck_assert_str_eq(r[1].function, "f");
	ck_assert_double_eq_tol(r[1].children, 87.5, 1e-9);
	ck_assert_double_eq_tol(r[1].self, 37.5, 1e-9);
	ck_assert_uint_eq(r[1].samples, 3);
	ck_assert_str_eq(r[2].function, "g");
	ck_assert_str_eq(r[2].module, "b");
	ck_assert_double_eq_tol(r[2].children, 62.5, 1e-9);
	ck_assert_double_eq_tol(r[2].self, 62.5, 1e-9);
	free(text);
	/* --sort self: g (5) before f (3) before main (0). */
	o.sort = REPORT_SORT_SELF;
	text = report_of(st, cnt, 3, &o);
	ck_assert_uint_eq(rows_of(text, r, 8, 0), 3);
	ck_assert_str_eq(r[0].function, "g");
	ck_assert_str_eq(r[1].function, "f");
	ck_assert_str_eq(r[2].function, "main");
	free(text);
}
END_TEST

START_TEST(end_marker_and_unknown)
{
	const char *st[] = { "p;[truncated];[unknown];f" M "a", "p;[unknown]", "p;[no-cfi];g" M "a" };
	unsigned const cnt[] = { 2, 1, 1 };
	struct report_opts o = { .title = "t" };
	char *text = report_of(st, cnt, 3, &o);
	ck_assert_ptr_null(strstr(text, "truncated"));
	ck_assert_ptr_null(strstr(text, "no-cfi"));
	struct row r[8];
	size_t const n = rows_of(text, r, 8, 0);
	ck_assert_uint_eq(n, 3);
	const struct row *u = find(r, n, "[unknown]");
	ck_assert_double_eq_tol(u->children, 75.0, 1e-9);
	ck_assert_double_eq_tol(u->self, 25.0, 1e-9);
	ck_assert_str_eq(u->module, "[unknown]");
	ck_assert_double_eq_tol(find(r, n, "f")->self, 50.0, 1e-9);
	ck_assert_double_eq_tol(find(r, n, "g")->children, 25.0, 1e-9);
	free(text);
}
END_TEST

START_TEST(per_module_rows)
{
	const char *st[] = { "p;main" M "exe;f" M "libc.so.6;g" M "exe", "p;main" M "exe;h" M "libc.so.6",
			     "p;main" M "exe;[unknown]" };
	unsigned const cnt[] = { 5, 3, 2 };
	struct report_opts o = { .title = "t", .per_module = 1 };
	char *text = report_of(st, cnt, 3, &o);
	struct row r[8];
	size_t const n = rows_of(text, r, 8, 1);
	ck_assert_uint_eq(n, 3);
	double self = 0;
	unsigned long samples = 0;
	for (size_t i = 0; i < n; i++) {
		self += r[i].self;
		samples += r[i].samples;
	}
	ck_assert_double_eq_tol(self, 100.0, 0.02);
	ck_assert_uint_eq(samples, 10);
	/* exe: in every stack once (main, and g under libc's f), innermost in 5. */
	ck_assert_str_eq(r[0].module, "exe");
	ck_assert_double_eq_tol(r[0].children, 100.0, 1e-9);
	ck_assert_double_eq_tol(r[0].self, 50.0, 1e-9);
	ck_assert_str_eq(r[1].module, "libc.so.6");
	ck_assert_double_eq_tol(r[1].children, 80.0, 1e-9);
	ck_assert_double_eq_tol(r[1].self, 30.0, 1e-9);
	free(text);
}
END_TEST

START_TEST(min_and_limit)
{
	const char *st[] = { "p;a" M "m", "p;b" M "m", "p;c" M "m" };
	unsigned const cnt[] = { 60, 30, 10 };
	struct report_opts o = { .title = "t", .min_pct = 20 };
	char *text = report_of(st, cnt, 3, &o);
	struct row r[8];
	ck_assert_uint_eq(rows_of(text, r, 8, 0), 2);
	ck_assert_ptr_nonnull(strstr(text, "# 1 more functions under --min 20%\n"));
	free(text);
	o = (struct report_opts){ .title = "t", .limit = 1 };
	text = report_of(st, cnt, 3, &o);
	ck_assert_uint_eq(rows_of(text, r, 8, 0), 1);
	ck_assert_str_eq(r[0].function, "a");
	ck_assert_ptr_nonnull(strstr(text, "# 2 more functions past --limit 1\n"));
	free(text);
}
END_TEST

START_TEST(tree_caller_first)
{
	const char *st[] = { "p;main" M "x;a" M "x;leaf" M "y", "p;main" M "x;b" M "x", "q;main" M "x;a" M "x",
			     "p;[truncated];z" M "x" };
	unsigned const cnt[] = { 50, 30, 10, 10 };
	struct report_opts o = { .title = "t", .tree = 1, .min_pct = 0.5 };
	char *text = report_of(st, cnt, 4, &o);
	const char *body = strstr(text, "#\n");
	ck_assert_ptr_nonnull(body);
	ck_assert_str_eq(body + 2, "90.00%  main (x)\n"
				   "  60.00%  a (x)\n"
				   "    50.00%  leaf (y)\n"
				   "  30.00%  b (x)\n"
				   "10.00%  z (x)\n");
	free(text);
	/* Per module: a run of frames of one module is one node. */
	o.per_module = 1;
	o.limit = 1;
	text = report_of(st, cnt, 4, &o);
	body = strstr(text, "#\n");
	ck_assert_str_eq(body + 2, "100.00%  x\n"
				   "  50.00%  y\n");
	free(text);
}
END_TEST

START_TEST(time_weighted_and_empty)
{
	const char *st[] = { "p;sleep" M "libc.so.6" };
	unsigned const cnt[] = { 1500 };
	struct report_opts o = { .title = "t", .unit = "us" };
	char *text = report_of(st, cnt, 1, &o);
	ck_assert_ptr_nonnull(strstr(text, ": 1500 us (off-CPU time"));
	ck_assert_ptr_nonnull(strstr(text, "Self us"));
	free(text);
	o.unit = NULL;
	text = report_of(NULL, NULL, 0, &o);
	ck_assert_ptr_nonnull(strstr(text, ": 0 samples\n"));
	struct row r[1];
	ck_assert_uint_eq(rows_of(text, r, 1, 0), 0);
	free(text);
}
END_TEST

static Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("report");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, recursion_counted_once);
	tcase_add_test(tc, end_marker_and_unknown);
	tcase_add_test(tc, per_module_rows);
	tcase_add_test(tc, min_and_limit);
	tcase_add_test(tc, tree_caller_first);
	tcase_add_test(tc, time_weighted_and_empty);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(report_suite)
