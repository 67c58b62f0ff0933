/* SPDX-License-Identifier: MIT */
/* export/flamegraph.c on hand-made stacks: escaping, names that are no valid
 * XML, counts, narrow frames left out, --reverse, the same bytes whatever
 * the order of stacks, a large input stays small.  TAP through Check. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/flamegraph.h"
#include "tests/unit/check-main.h"

/* The SVG of STACKS (N of them) as a string; the caller frees it. */
static char *svg_of(const struct flame_stack *stacks, size_t n, const struct flame_opts *o,
		    struct flame_result *res)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	struct flame_result r;
	ck_assert_int_eq(flame_write(f, stacks, n, o, res ? res : &r), 0);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* The frame line whose title starts with TITLE, or NULL. */
static const char *frame_line(const char *svg, const char *title)
{
	char key[512];
	snprintf(key, sizeof(key), "<g class=\"f\"><title>%s", title);
	return strstr(svg, key);
}

static unsigned long attr(const char *line, const char *name)
{
	char key[64];
	snprintf(key, sizeof(key), " %s=\"", name);
	const char *p = strstr(line, key);
	ck_assert_ptr_nonnull(p);
	return strtoul(p + strlen(key), NULL, 10);
}

START_TEST(escapes_markup)
{
	struct flame_stack st[] = {
		{ "prog;ns::f<int, std::less<int> >(a const&, b&&)\x1flib<x>&.so;operator\"'\x1flib<x>&.so", 3 },
	};
	struct flame_opts o = { .title = "t <&> \"'", .min_width = -1 };
	char *svg = svg_of(st, 1, &o, NULL);
	ck_assert_ptr_nonnull(strstr(svg, "ns::f&lt;int, std::less&lt;int&gt; &gt;(a const&amp;, b&amp;&amp;) (lib&lt;x&gt;&amp;.so)"));
	ck_assert_ptr_nonnull(strstr(svg, "operator&quot;&apos; (lib&lt;x&gt;&amp;.so)"));
	ck_assert_ptr_nonnull(strstr(svg, ">t &lt;&amp;&gt; &quot;&apos;</text>"));
	ck_assert_ptr_null(strstr(svg, "f<int"));
	ck_assert_ptr_null(strstr(svg, "lib<x>"));
	/* Outside the CDATA sections, every '&' starts an entity. */
	const char *end_script = strstr(svg, "]]></script>");
	ck_assert_ptr_nonnull(end_script);
	for (const char *p = end_script; (p = strchr(p, '&')); p++)
		ck_assert_msg(!strncmp(p, "&amp;", 5) || !strncmp(p, "&lt;", 4) || !strncmp(p, "&gt;", 4) ||
				      !strncmp(p, "&quot;", 6) || !strncmp(p, "&apos;", 6),
			      "bare & at: %.20s", p);
	/* The module list of the script has no quote or ']]>' of the name. */
	ck_assert_ptr_nonnull(strstr(svg, "\"lib\\u003cx\\u003e\\u0026.so\""));
	ck_assert_uint_eq(count_of(svg, "]]>"), 2);
	free(svg);
}
END_TEST

START_TEST(invalid_names_sanitized)
{
	/* A control byte, a lone continuation byte, a truncated sequence; é stays. */
	struct flame_stack st[] = { { "p;bad\x01name\x80x\xe2\x82;caf\xc3\xa9", 2 } };
	struct flame_opts o = { .min_width = -1 };
	char *svg = svg_of(st, 1, &o, NULL);
	ck_assert_ptr_nonnull(frame_line(svg, "bad?name?x?? \xe2\x80\x94 2 samples, 100.00%"));
	ck_assert_ptr_nonnull(frame_line(svg, "caf\xc3\xa9 \xe2\x80\x94"));
	ck_assert_ptr_null(strchr(svg, '\x01'));
	ck_assert_ptr_null(strstr(svg, "\x80x"));
	free(svg);
}
END_TEST

/* Counts of time (unit "us") and off-CPU frames (FLAME_OFF_CPU_MARK): the
 * unit in the subtitle and titles, the marked frames blue. */
START_TEST(off_cpu_time)
{
	struct flame_stack st[] = {
		{ "p;main\x1fm;read_[o]\x1fm", 1500 },
		{ "p;main\x1fm;work\x1fm", 500 },
	};
	struct flame_opts o = { .min_width = -1, .unit = "us" };
	char *svg = svg_of(st, 2, &o, NULL);
	ck_assert_ptr_nonnull(strstr(svg, ">2000 us"));
	const char *rd = frame_line(svg, "read_[o] (m) \xe2\x80\x94 1500 us, 75.00%");
	const char *wk = frame_line(svg, "work (m) \xe2\x80\x94 500 us, 25.00%");
	ck_assert_ptr_nonnull(rd);
	ck_assert_ptr_nonnull(wk);
	/* Blue: more blue than red in the off-CPU frame's fill. */
	unsigned r = 0, g = 0, b = 0;
	const char *fill = strstr(rd, "fill=\"rgb(");
	ck_assert_ptr_nonnull(fill);
	ck_assert_int_eq(sscanf(fill, "fill=\"rgb(%u,%u,%u)", &r, &g, &b), 3);
	ck_assert_uint_gt(b, r);
	ck_assert_uint_eq(count_of(svg, " sample"), 0);
	free(svg);
}
END_TEST

START_TEST(counts_and_nesting)
{
	struct flame_stack st[] = {
		{ "p;main\x1fm;a\x1fm;leaf\x1fm", 6 },
		{ "p;main\x1fm;b\x1fm", 4 },
	};
	struct flame_opts o = { .min_width = -1 };
	struct flame_result res;
	char *svg = svg_of(st, 2, &o, &res);
	ck_assert_uint_eq(res.samples, 10);
	ck_assert_uint_eq(res.frames, 6); /* all p main a leaf b */
	ck_assert_uint_eq(res.omitted, 0);
	const char *all = frame_line(svg, "all \xe2\x80\x94 10 samples, 100.00%");
	ck_assert_ptr_nonnull(all);
	ck_assert_uint_eq(attr(all, "data-n"), 10);
	const char *a = frame_line(svg, "a (m) \xe2\x80\x94 6 samples, 60.00%");
	const char *b = frame_line(svg, "b (m) \xe2\x80\x94 4 samples, 40.00%");
	const char *leaf = frame_line(svg, "leaf (m)");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(leaf);
	/* a before b (by name), b's range after a's, leaf inside a, one level deeper. */
	ck_assert_uint_eq(attr(a, "data-s"), 0);
	ck_assert_uint_eq(attr(b, "data-s"), 6);
	ck_assert_uint_eq(attr(leaf, "data-s"), 0);
	ck_assert_uint_eq(attr(leaf, "data-d"), attr(a, "data-d") + 1);
	ck_assert_uint_eq(attr(a, "data-d"), 3);
	free(svg);
}
END_TEST

START_TEST(reverse_merges_from_leaf)
{
	struct flame_stack st[] = {
		{ "p;x\x1fm;hot\x1fm", 3 },
		{ "p;y\x1fm;hot\x1fm", 2 },
		{ "p;y\x1fm", 1 },
	};
	struct flame_opts o = { .min_width = -1, .reverse = 1 };
	char *svg = svg_of(st, 3, &o, NULL);
	const char *hot = frame_line(svg, "hot (m) \xe2\x80\x94 5 samples");
	ck_assert_ptr_nonnull(hot);
	ck_assert_uint_eq(attr(hot, "data-d"), 1);
	const char *y = frame_line(svg, "y (m) \xe2\x80\x94 1 sample,");
	ck_assert_ptr_nonnull(y);
	ck_assert_uint_eq(attr(y, "data-d"), 1);
	/* Under hot: its callers x (3) and y (2), then p under each. */
	const char *x = frame_line(svg, "x (m) \xe2\x80\x94 3 samples");
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(attr(x, "data-d"), 2);
	ck_assert_uint_eq(count_of(svg, "<title>p \xe2\x80\x94"), 3);
	free(svg);
}
END_TEST

START_TEST(same_bytes_any_order)
{
	struct flame_stack a[] = { { "p;m\x1fq;z", 1 }, { "p;m\x1fq;a", 2 }, { "p;b", 5 }, { "q;c", 1 } };
	struct flame_stack b[] = { a[3], a[1], a[2], a[0] };
	struct flame_opts o = { .min_width = -1, .icicle = 1 };
	char *s1 = svg_of(a, 4, &o, NULL), *s2 = svg_of(b, 4, &o, NULL);
	ck_assert_str_eq(s1, s2);
	free(s1);
	free(s2);
}
END_TEST

START_TEST(narrow_frames_left_out)
{
	/* 1 sample of 1,000,001 is 0.0012 px wide at 1200 px: left out. */
	struct flame_stack st[] = { { "p;big\x1fm", 1000000 }, { "p;tiny\x1fm;tinier\x1fm", 1 } };
	struct flame_opts o = { .min_width = -1 };
	struct flame_result res;
	char *svg = svg_of(st, 2, &o, &res);
	ck_assert_uint_eq(res.omitted, 2);
	ck_assert_uint_eq(res.frames, 3);
	ck_assert_ptr_null(strstr(svg, "tiny"));
	ck_assert_ptr_nonnull(strstr(svg, "2 frames narrower than 0.1 px left out"));
	free(svg);
	o.min_width = 0;
	svg = svg_of(st, 2, &o, &res);
	ck_assert_uint_eq(res.omitted, 0);
	ck_assert_ptr_nonnull(strstr(svg, "tinier"));
	free(svg);
}
END_TEST

START_TEST(large_profile_stays_small)
{
	/* 50,000 distinct stacks of one sample each under 50 callers. */
	enum { N = 50000 };
	struct flame_stack *st = calloc(N, sizeof(*st));
	char **keys = calloc(N, sizeof(*keys));
	ck_assert_ptr_nonnull(st);
	ck_assert_ptr_nonnull(keys);
	for (int i = 0; i < N; i++) {
		ck_assert_int_gt(asprintf(&keys[i], "prog;main\x1fm;caller%d\x1fm;leaf%d\x1fm", i % 50, i), 0);
		st[i] = (struct flame_stack){ keys[i], 1 };
	}
	struct flame_opts o = { .min_width = -1 };
	struct flame_result res;
	char *svg = svg_of(st, N, &o, &res);
	ck_assert_uint_eq(res.samples, N);
	ck_assert_uint_eq(res.frames + res.omitted, 3 + 50 + N);
	ck_assert_uint_ge(res.omitted, N / 2);
	ck_assert_uint_lt(strlen(svg), 4u << 20);
	free(svg);
	for (int i = 0; i < N; i++)
		free(keys[i]);
	free(keys);
	free(st);
}
END_TEST

START_TEST(no_samples)
{
	struct flame_opts o = { .min_width = -1 };
	struct flame_result res;
	char *svg = svg_of(NULL, 0, &o, &res);
	ck_assert_uint_eq(res.samples, 0);
	ck_assert_ptr_nonnull(frame_line(svg, "all \xe2\x80\x94 0 samples, 0.00%"));
	ck_assert_ptr_nonnull(strstr(svg, "</svg>\n"));
	free(svg);
}
END_TEST

static Suite *flamegraph_suite(void)
{
	Suite *s = suite_create("flamegraph");
	TCase *tc = tcase_create("svg");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, escapes_markup);
	tcase_add_test(tc, off_cpu_time);
	tcase_add_test(tc, invalid_names_sanitized);
	tcase_add_test(tc, counts_and_nesting);
	tcase_add_test(tc, reverse_merges_from_leaf);
	tcase_add_test(tc, same_bytes_any_order);
	tcase_add_test(tc, narrow_frames_left_out);
	tcase_add_test(tc, large_profile_stays_small);
	tcase_add_test(tc, no_samples);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(flamegraph_suite)
