/* SPDX-License-Identifier: MIT */
/* The text the outputs print: symbolize/resolve.c's escaping (control
 * characters, C1 controls, ill-formed UTF-8 as \xHH; clean text as it is,
 * by pointer) and export/folded.c's lines and counts.  TAP through Check. */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/resolve.h"
#include "export/folded.h"
#include "tests/unit/check-main.h"

/* The escaped form of S, in a static buffer. */
static const char *esc(const char *s)
{
	static char buf[256];
	size_t const n = su_text_escape(buf, sizeof(buf), s);
	ck_assert_uint_lt(n, sizeof(buf));
	ck_assert_uint_eq(n, strlen(buf));
	return buf;
}

START_TEST(clean_text_unchanged)
{
	static const char *const clean[] = {
		"", "main", "std::vector<int>::push_back(int&&)", "/usr/lib/x86_64-linux-gnu/libc.so.6",
		"caf\xc3\xa9", "\xe2\x82\xac 5", "\xf0\x9f\x94\xa5", "a b;c:d\\x", "~\x7e",
	};
	for (size_t i = 0; i < sizeof(clean) / sizeof(clean[0]); i++) {
		ck_assert_int_eq(su_text_needs_escape(clean[i]), 0);
		ck_assert_str_eq(esc(clean[i]), clean[i]);
	}
}
END_TEST

START_TEST(controls_escaped)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "\x1b]52;c;SGVsbG8=\x07", "\\x1b]52;c;SGVsbG8=\\x07" },  /* OSC 52 */
		{ "a\tb\nc\rd", "a\\x09b\\x0ac\\x0dd" },
		{ "\x7f", "\\x7f" },                                       /* DEL */
		{ "x\xc2\x9b" "31m", "x\\xc2\\x9b31m" },                   /* U+009B, CSI */
		{ "\x9b" "2J", "\\x9b2J" },                                /* a lone C1 byte */
		{ "\xc0\x80", "\\xc0\\x80" },                              /* overlong NUL */
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80" },                     /* a surrogate */
		{ "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80" },            /* past U+10FFFF */
		{ "ok\xe2\x82", "ok\\xe2\\x82" },                          /* cut at the end */
		{ "\xe2\x82" "A", "\\xe2\\x82A" },                         /* cut in the middle */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(su_text_needs_escape(cases[i].in), 1);
		ck_assert_str_eq(esc(cases[i].in), cases[i].out);
	}
}
END_TEST

START_TEST(escape_truncates_like_snprintf)
{
	char b[6];
	ck_assert_uint_eq(su_text_escape(b, sizeof(b), "ab\x1b" "cd"), 8);
	ck_assert_str_eq(b, "ab\\x1");
	ck_assert_uint_eq(su_text_escape(NULL, 0, "\x01\x02"), 8);
}
END_TEST

START_TEST(resolver_keeps_one_copy)
{
	struct su_debuginfo_opts const di = { .no_debuginfod = 1 };
	struct su_modcache *mc = su_modcache_new(&di);
	ck_assert_ptr_nonnull(mc);
	struct su_resolver *r = su_resolver_new(mc, NULL, NULL);
	ck_assert_ptr_nonnull(r);
	const char *clean = "plain";
	ck_assert_ptr_eq(su_resolver_text(r, clean), clean);
	char a[] = "t\x1b]0;x\x07", b[] = "t\x1b]0;x\x07";
	const char *ea = su_resolver_text(r, a), *eb = su_resolver_text(r, b);
	ck_assert_str_eq(ea, "t\\x1b]0;x\\x07");
	ck_assert_ptr_eq(ea, eb);
	/* Many distinct strings: the table grows, each kept. */
	char s[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(s, sizeof(s), "\x1b%d", i);
		const char *e = su_resolver_text(r, s);
		char want[32];
		snprintf(want, sizeof(want), "\\x1b%d", i);
		ck_assert_str_eq(e, want);
	}
	struct su_process p = { .comm = (char *)"" };
	ck_assert_str_eq(su_resolver_comm(r, &p), "[unknown]");
	ck_assert_str_eq(su_resolver_comm(r, NULL), "[unknown]");
	p.comm = (char *)"sh\x1b";
	ck_assert_str_eq(su_resolver_comm(r, &p), "sh\\x1b");
	ck_assert_str_eq(su_resolver_comm(r, &p), "sh\\x1b"); /* the last one's answer */
	/* The last comm is remembered by content: one changed in place (or
	 * at a reused address) is checked anew, either way. */
	char comm[32] = "worker";
	p.comm = comm;
	ck_assert_ptr_eq(su_resolver_comm(r, &p), comm);
	ck_assert_ptr_eq(su_resolver_comm(r, &p), comm);
	strcpy(comm, "work\x07" "er");
	ck_assert_str_eq(su_resolver_comm(r, &p), "work\\x07er");
	strcpy(comm, "worker-2");
	ck_assert_ptr_eq(su_resolver_comm(r, &p), comm);
	strcpy(comm, "work");
	ck_assert_ptr_eq(su_resolver_comm(r, &p), comm);
	/* Longer than it keeps: answered each time. */
	char longc[100];
	memset(longc, 'a', sizeof(longc) - 1);
	longc[sizeof(longc) - 1] = 0;
	p.comm = longc;
	ck_assert_ptr_eq(su_resolver_comm(r, &p), longc);
	longc[50] = 0x1b;
	ck_assert_ptr_ne(su_resolver_comm(r, &p), longc);
	su_resolver_free(r);
	su_modcache_free(mc);
}
END_TEST

/* One folded line of frames given outermost first. */
/* Kernel symbols found the same in a table of pointers and in a packed
 * one (a kept kallsyms copy mapped in place); a packed entry whose names
 * or bounds do not hold names nothing. */
START_TEST(kernel_find_packed)
{
	static char text[] = "alpha\0\0beta\0ext4\0gamma\0";
	struct su_ksym syms[] = {
		{ 0x1000, 0x1010, text + 0, text + 6 },
		{ 0x1010, 0x1100, text + 7, text + 12 },
		{ 0x2000, 0x2040, text + 17, text + 6 },
	};
	struct su_ksym_packed packed[] = {
		{ 0x1000, 0x1010, 0, 6 },
		{ 0x1010, 0x1100, 7, 12 },
		{ 0x2000, 0x2040, 17, 6 },
	};
	struct su_kernel plain = { .syms = syms, .n = 3 };
	struct su_kernel pk = { .packed = packed, .n = 3, .packed_text = text, .packed_text_len = sizeof(text) };
	static const uint64_t at[] = { 0xfff, 0x1000, 0x100f, 0x1010, 0x10ff, 0x1100, 0x1fff, 0x2000, 0x203f, 0x2040, 0 };
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		struct su_ksym a = { 0 }, b = { 0 };
		int const fa = su_kernel_find(&plain, at[i], &a), fb = su_kernel_find(&pk, at[i], &b);
		ck_assert_int_eq(fa, fb);
		ck_assert_int_eq(fa, (at[i] >= 0x1000 && at[i] < 0x1100) || (at[i] >= 0x2000 && at[i] < 0x2040));
		if (fa) {
			ck_assert_uint_eq(a.start, b.start);
			ck_assert_uint_eq(a.end, b.end);
			ck_assert_str_eq(a.name, b.name);
			ck_assert_str_eq(a.module, b.module);
		}
	}
	struct su_ksym y;
	ck_assert(su_kernel_find(&pk, 0x1020, &y) && strcmp(y.name, "beta") == 0 && strcmp(y.module, "ext4") == 0);
	packed[1].name = sizeof(text); /* past the names */
	ck_assert(!su_kernel_find(&pk, 0x1020, &y));
	packed[1].name = 7;
	packed[1].module = 1u << 31;
	ck_assert(!su_kernel_find(&pk, 0x1020, &y));
	packed[1].module = 12;
	packed[2].start = 0x2050; /* start after end: covers nothing */
	ck_assert(!su_kernel_find(&pk, 0x2000, &y));
	ck_assert(!su_kernel_find(NULL, 0x1000, &y));
}
END_TEST

START_TEST(folded_line)
{
	struct text t = { 0 };
	struct folded_opts o = { .root = FOLDED_ROOT_THREAD };
	folded_root(&t, &o, "a;b", 12, UINT32_MAX, "truncated");
	folded_function(&t, &o, "ns::f;g", "/lib/libx.so");
	folded_address(&t, &o, "/usr/bin/prog", 0x1234);
	folded_unknown(&t);
	ck_assert_int_eq(t.oom, 0);
	ck_assert_uint_eq(t.len, strlen("a:b-12/-1;[truncated];ns::f:g;prog+0x1234;[unknown]"));
	ck_assert_int_eq(memcmp(t.buf, "a:b-12/-1;[truncated];ns::f:g;prog+0x1234;[unknown]", t.len), 0);
	t.len = 0;
	/* Every ';' of a name, first and last bytes too. */
	folded_function(&t, &o, ";x;;y;", NULL);
	ck_assert_uint_eq(t.len, strlen(";:x::y:"));
	ck_assert_int_eq(memcmp(t.buf, ";:x::y:", t.len), 0);
	t.len = 0;
	o = (struct folded_opts){ .modules = 1 };
	folded_root(&t, &o, "c", 1, 2, NULL);
	folded_function(&t, &o, "f", "/lib/libx.so");
	folded_address(&t, &o, "/usr/bin/prog", 0x10);
	char const want[] = "c;f\x1flibx.so;prog+0x10\x1fprog";
	ck_assert_uint_eq(t.len, sizeof(want) - 1);
	ck_assert_int_eq(memcmp(t.buf, want, t.len), 0);
	free(t.buf);
}
END_TEST

START_TEST(folded_counts_sorted)
{
	struct folded_counts c = { 0 };
	char const lines[] = "b;x\na;y\nb;x\nb\n";
	ck_assert_int_eq(folded_counts_add_lines(&c, lines, sizeof(lines) - 1), 0);
	for (int i = 0; i < 3000; i++) {
		char s[32];
		snprintf(s, sizeof(s), "z;%04d", i);
		ck_assert_int_eq(folded_counts_add(&c, s, strlen(s)), 0);
	}
	ck_assert_uint_eq(folded_counts_sort(&c), 3003);
	ck_assert_str_eq(c.tab[0].stack, "a;y");
	ck_assert_str_eq(c.tab[1].stack, "b");
	ck_assert_str_eq(c.tab[2].stack, "b;x");
	ck_assert_uint_eq(c.tab[2].count, 2);
	ck_assert_str_eq(c.tab[3002].stack, "z;2999");
	folded_counts_free(&c);
	ck_assert_uint_eq(c.n, 0);
}
END_TEST

/* Numbers written by hand as printf would: text_x64 as "0x%" PRIx64,
 * text_u64 as "%" PRIu64 (and its zeros in front). */
START_TEST(text_numbers_as_printf)
{
	uint64_t const v[] = { 0, 1, 9, 10, 15, 16, 0xabcdef, 0x7fffffffffffffffu, UINT64_MAX };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct text t = { 0 };
		char want[64];
		text_x64(&t, v[i]);
		text_put(&t, " ", 1);
		text_u64(&t, v[i], 1);
		text_put(&t, " ", 1);
		text_u64(&t, v[i], 4);
		snprintf(want, sizeof(want), "0x%" PRIx64 " %" PRIu64 " %04" PRIu64, v[i], v[i], v[i]);
		ck_assert_uint_eq(t.len, strlen(want));
		ck_assert_int_eq(memcmp(t.buf, want, t.len), 0);
		free(t.buf);
	}
}
END_TEST

/* The parts of a read in parts each sort their counts; merged, one
 * sorted table with a line's counts added, as if counted in one. */
START_TEST(folded_counts_merged)
{
	struct folded_counts part[3] = { { 0 } }, all = { 0 }, one = { 0 };
	char const *const lines[3] = { "b;x\na;y\nb;x\nc\n", "a;y\nd\n", "" };
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(folded_counts_add_lines(&part[k], lines[k], strlen(lines[k])), 0);
		ck_assert_int_eq(folded_counts_add_lines(&one, lines[k], strlen(lines[k])), 0);
		folded_counts_sort(&part[k]);
	}
	struct folded_counts *const in[3] = { &part[0], &part[1], &part[2] };
	ck_assert_int_eq(folded_counts_merge_sorted(&all, in, 3), 0);
	ck_assert_uint_eq(folded_counts_sort(&one), 4);
	ck_assert_uint_eq(folded_counts_sort(&all), 4);
	for (size_t i = 0; i < 4; i++) {
		ck_assert_str_eq(all.tab[i].stack, one.tab[i].stack);
		ck_assert_uint_eq(all.tab[i].count, one.tab[i].count);
	}
	ck_assert_uint_eq(all.tab[0].count, 2); /* a;y, in two parts */
	for (int k = 0; k < 3; k++) {
		ck_assert_uint_eq(part[k].n, 0); /* their lines moved */
		folded_counts_free(&part[k]);
	}
	folded_counts_free(&all);
	folded_counts_free(&one);
}
END_TEST

/* Off-CPU folded lines: each frame marked (the root not), and lines
 * weighed by their trailing count ("STACK N"). */
START_TEST(folded_off_cpu)
{
	struct text t = { 0 };
	struct folded_opts o = { .modules = 1, .off_cpu_mark = 1 };
	folded_root(&t, &o, "c", 1, 2, NULL);
	folded_function(&t, &o, "f", "/lib/libx.so");
	folded_address(&t, &o, "/usr/bin/prog", 0x10);
	folded_unknown(&t);
	char const want[] = "c;f_[o]\x1flibx.so;prog+0x10_[o]\x1fprog;[unknown]";
	ck_assert_uint_eq(t.len, sizeof(want) - 1);
	ck_assert_int_eq(memcmp(t.buf, want, t.len), 0);
	free(t.buf);

	struct folded_counts c = { 0 };
	char const lines[] = "a;read 800000\nb;x y 5\na;read 1\n";
	ck_assert_int_eq(folded_counts_add_weighted_lines(&c, lines, sizeof(lines) - 1), 0);
	ck_assert_uint_eq(folded_counts_sort(&c), 2);
	ck_assert_str_eq(c.tab[0].stack, "a;read");
	ck_assert_uint_eq(c.tab[0].count, 800001);
	ck_assert_str_eq(c.tab[1].stack, "b;x y"); /* a name with a space: the count is the last word */
	ck_assert_uint_eq(c.tab[1].count, 5);
	char const bad[] = "a;read\n";
	ck_assert_int_eq(folded_counts_add_weighted_lines(&c, bad, sizeof(bad) - 1), -EINVAL);
	char const bad2[] = "a;read 12x\n";
	ck_assert_int_eq(folded_counts_add_weighted_lines(&c, bad2, sizeof(bad2) - 1), -EINVAL);
	folded_counts_free(&c);
}
END_TEST

static Suite *resolve_suite(void)
{
	Suite *s = suite_create("resolve");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, clean_text_unchanged);
	tcase_add_test(tc, controls_escaped);
	tcase_add_test(tc, escape_truncates_like_snprintf);
	tcase_add_test(tc, resolver_keeps_one_copy);
	tcase_add_test(tc, kernel_find_packed);
	tcase_add_test(tc, folded_line);
	tcase_add_test(tc, folded_counts_sorted);
	tcase_add_test(tc, folded_counts_merged);
	tcase_add_test(tc, text_numbers_as_printf);
	tcase_add_test(tc, folded_off_cpu);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(resolve_suite)
