/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of symbolize/symtab.c, the sorted symbol table that answers
 * for dwfl_module_addrinfo: small tables made up here (aliases, sizeless
 * labels, nesting, table order, one table without locals, gaps), and
 * real modules (a testdata program, libc with libc6-dbg's .symtab and
 * without it, .dynsym only) where libdwfl itself is the oracle at every
 * symbol's edges and at addresses spread over the module.  And the radix
 * sort that orders the tables (symbolize/sort.c) against qsort.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gelf.h>
#include <elfutils/libdwfl.h>

#include "symbolize/sort.h"
#include "symbolize/symtab.h"
#include "tests/unit/check-main.h"
#include "tests/unit/elf-util.h"

#define FUNC(bind) GELF_ST_INFO(bind, STT_FUNC)

/* ASK: libdwfl must be asked (lookup -1); else WANT at WANT_VALUE, or
 * (WANT NULL) nothing. */
static void expect_rc(const struct su_symtab *t, uint64_t addr, int ask, const char *want, uint64_t want_value)
{
	const char *got = NULL;
	uint64_t v = 0;
	int const rc = su_symtab_lookup(t, addr, &got, &v);
	if (ask) {
		ck_assert_msg(rc == -1, "0x%llx: %d %s, want libdwfl asked", (unsigned long long)addr, rc,
			      got ? got : "(nothing)");
		return;
	}
	ck_assert_msg(want ? rc == 1 && got && !strcmp(got, want) && v == want_value : rc == 0 && !got,
		      "0x%llx: %d %s at 0x%llx, want %s at 0x%llx", (unsigned long long)addr, rc,
		      got ? got : "(nothing)", (unsigned long long)v, want ? want : "(nothing)",
		      (unsigned long long)want_value);
}

static void expect(const struct su_symtab *t, uint64_t addr, const char *want, uint64_t want_value)
{
	expect_rc(t, addr, 0, want, want_value);
}

static void expect_ask(const struct su_symtab *t, uint64_t addr)
{
	expect_rc(t, addr, 1, NULL, 0);
}

START_TEST(aliases_pick_as_libdwfl)
{
	/* Index 0 is the null symbol; locals [1, 4), globals [4, ...). */
	struct su_sym s[] = {
		{ 0x100, 0x40, "local_a", 1, FUNC(STB_LOCAL), 1 },
		{ 0x100, 0x40, "local_b", 2, FUNC(STB_LOCAL), 1 },  /* same start and size: the first */
		{ 0x200, 0x40, "only_local", 3, FUNC(STB_LOCAL), 1 },
		{ 0x300, 0x40, "weak_first", 4, FUNC(STB_WEAK), 1 },
		{ 0x300, 0x40, "global_second", 5, FUNC(STB_GLOBAL), 1 }, /* binds more strongly */
		{ 0x400, 0x40, "global_first", 6, FUNC(STB_GLOBAL), 1 },
		{ 0x400, 0x40, "weak_second", 7, FUNC(STB_WEAK), 1 },     /* binds less strongly */
		{ 0x500, 0x40, "global_big", 8, FUNC(STB_GLOBAL), 1 },
		{ 0x500, 0x10, "global_small", 9, FUNC(STB_GLOBAL), 1 },  /* smaller: wins */
		{ 0x200, 0x40, "aaa_local", 0, FUNC(STB_LOCAL), 1 },      /* index 0: never searched */
	};
	struct su_symtab *t = su_symtab_new(s, sizeof s / sizeof s[0], 4);
	ck_assert_ptr_nonnull(t);
	expect(t, 0x100, "local_a", 0x100);
	expect(t, 0x13f, "local_a", 0x100);
	expect(t, 0x210, "only_local", 0x200);
	expect(t, 0x310, "global_second", 0x300);
	expect(t, 0x410, "global_first", 0x400);
	expect(t, 0x505, "global_small", 0x500);
	expect(t, 0x530, "global_big", 0x500);   /* past the small one */
	su_symtab_free(t);
}
END_TEST

START_TEST(globals_before_locals_and_nesting)
{
	struct su_sym s[] = {
		{ 0x1000, 0x10, "inner_local", 1, FUNC(STB_LOCAL), 1 },
		{ 0x2010, 0x10, "inner_local2", 2, FUNC(STB_LOCAL), 1 },
		{ 0x2000, 0x100, "outer_local", 3, FUNC(STB_LOCAL), 1 },
		{ 0x0f00, 0x200, "outer_global", 4, FUNC(STB_GLOBAL), 1 },
	};
	struct su_symtab *t = su_symtab_new(s, 4, 4);
	ck_assert_ptr_nonnull(t);
	expect(t, 0x1008, "outer_global", 0xf00);  /* the globals' pass finds it: locals unseen */
	expect(t, 0x2018, "inner_local2", 0x2010); /* locals: the closest start */
	expect(t, 0x2020, "outer_local", 0x2000);
	su_symtab_free(t);
}
END_TEST

START_TEST(table_order_decides_like_libdwfl)
{
	/* libdwfl keeps a later symbol that starts higher or binds more
	 * strongly: the order of the table changes the answer. */
	struct su_sym a[] = {
		{ 0x100, 0x50, "global_wide", 1, FUNC(STB_GLOBAL), 1 },
		{ 0x120, 0x10, "weak_narrow", 2, FUNC(STB_WEAK), 1 },
	};
	struct su_symtab *t = su_symtab_new(a, 2, 1);
	ck_assert_ptr_nonnull(t);
	expect(t, 0x125, "weak_narrow", 0x120);
	su_symtab_free(t);
	a[0].index = 2;
	a[1].index = 1;
	t = su_symtab_new(a, 2, 1);
	ck_assert_ptr_nonnull(t);
	expect(t, 0x125, "global_wide", 0x100);
	su_symtab_free(t);
}
END_TEST

START_TEST(sizeless_labels_asked_gaps_nameless)
{
	/* Locals [1, 8), globals [8, ...). */
	struct su_sym s[] = {
		{ 0x100, 0, "label", 1, FUNC(STB_LOCAL), 1 },
		{ 0x200, 0x10, "", 2, FUNC(STB_LOCAL), 1 },                  /* no name */
		{ 0x400, 0x10, "sect", 3, GELF_ST_INFO(STB_LOCAL, STT_SECTION), 1 },
		{ 0x500, 0x10, "file", 4, GELF_ST_INFO(STB_LOCAL, STT_FILE), 1 },
		{ 0x880, 0, "inner_label", 5, FUNC(STB_LOCAL), 1 },
		{ 0x900, 0x20, "local_at_label", 6, FUNC(STB_LOCAL), 1 },
		{ 0x300, 0x10, "undef", 8, FUNC(STB_GLOBAL), 0 },            /* undefined */
		{ 0x600, 0x10, "tls", 9, GELF_ST_INFO(STB_GLOBAL, STT_TLS), 1 },
		{ 0x700, 0x10, "object", 10, GELF_ST_INFO(STB_GLOBAL, STT_OBJECT), 1 },
		{ 0x800, 0x100, "holds_label", 11, FUNC(STB_GLOBAL), 1 },
		{ 0x900, 0, "global_label", 12, FUNC(STB_GLOBAL), 1 },
	};
	struct su_symtab *t = su_symtab_new(s, sizeof s / sizeof s[0], 8);
	ck_assert_ptr_nonnull(t);
	expect_ask(t, 0x100);        /* sizeless: libdwfl's label rules */
	expect_ask(t, 0x180);        /* above the label, nothing sized in between */
	expect_ask(t, 0x205);        /* the nameless one is no symbol: the label still may be */
	expect_ask(t, 0x305);
	expect_ask(t, 0x405);
	expect_ask(t, 0x505);
	expect_ask(t, 0x605);
	expect(t, 0x705, "object", 0x700);
	expect(t, 0x710, NULL, 0);   /* a gap above a sized symbol ending above every label: nothing */
	expect(t, 0x7ff, NULL, 0);
	expect(t, 0x890, "holds_label", 0x800);
	expect_ask(t, 0x900);        /* a sizeless global right here could stop the locals' pass */
	expect(t, 0x905, "local_at_label", 0x900);
	expect(t, 0x10, NULL, 0);    /* below everything */
	expect_ask(t, UINT64_MAX);   /* above the label at 0x900 */
	su_symtab_free(t);
}
END_TEST

START_TEST(one_table_without_locals_pass)
{
	/* .dynsym loaded through the program headers: first_global 0, every
	 * symbol in one pass, locals and globals compared by binding. */
	struct su_sym s[] = {
		{ 0x100, 0x40, "local_outer", 1, FUNC(STB_LOCAL), 1 },
		{ 0x110, 0x10, "local_inner", 2, FUNC(STB_LOCAL), 1 },
		{ 0x100, 0x40, "global_same", 3, FUNC(STB_GLOBAL), 1 },
	};
	struct su_symtab *t = su_symtab_new(s, 3, 0);
	ck_assert_ptr_nonnull(t);
	/* local_outer, then local_inner (higher), then global_same (binds
	 * more strongly, though lower): libdwfl's answer. */
	expect(t, 0x115, "global_same", 0x100);
	expect(t, 0x130, "global_same", 0x100);
	su_symtab_free(t);
	struct su_symtab *e = su_symtab_new(NULL, 0, 0);
	ck_assert_ptr_nonnull(e);
	expect(e, 0x100, NULL, 0);
	expect_ask(NULL, 0x100);
	su_symtab_free(e);
}
END_TEST

/* ---- real modules, libdwfl as the oracle -------------------------------- */

static char *no_debug_path = "/nonexistent-stackcap-debug";

/* PATH as an offline module: with its separate debug info found the
 * standard way, or (NO_DEBUG) with none. */
static Dwfl *open_offline(const char *path, int no_debug, Dwfl_Module **mod)
{
	static Dwfl_Callbacks cb_debug = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	static Dwfl_Callbacks cb_none = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &no_debug_path,
	};
	Dwfl *d = dwfl_begin(no_debug ? &cb_none : &cb_debug);
	ck_assert_ptr_nonnull(d);
	*mod = dwfl_report_offline(d, "m", path, -1);
	ck_assert_msg(*mod != NULL, "%s: %s", path, dwfl_errmsg(-1));
	dwfl_report_end(d, NULL, NULL);
	return d;
}

struct tally {
	unsigned checked, answered, named, named_answered;
};

static void check_addr(Dwfl_Module *mod, const struct su_symtab *t, uint64_t a, struct tally *n)
{
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *want = dwfl_module_addrinfo(mod, a, &off, &sym, NULL, NULL, NULL);
	const char *got = NULL;
	uint64_t value = 0;
	n->checked++;
	n->named += want != NULL;
	int const rc = su_symtab_lookup(t, a, &got, &value);
	if (rc < 0)
		return;
	n->answered++;
	n->named_answered += rc == 1;
	ck_assert_msg(rc == 1 ? want && got == want && value == a - off : !want && !got,
		      "0x%llx: %s+0x%llx, libdwfl %s+0x%llx", (unsigned long long)a, got ? got : "(nothing)",
		      (unsigned long long)(a - value), want ? want : "(nothing)", (unsigned long long)off);
}

/* Every symbol's edges (one in STRIDE_SYM symbols) and every STRIDE-th
 * byte of the module's code: our answers are libdwfl's (a name, or
 * nothing), and we answer at least MIN_PERCENT of the addresses. */
static void oracle_module(const char *path, int no_debug, int want_symtab, unsigned stride_sym, unsigned stride,
			  unsigned min_percent)
{
	Dwfl_Module *mod;
	Dwfl *d = open_offline(path, no_debug, &mod);
	struct su_symtab *t = su_symtab_of_module(mod);
	ck_assert_msg(t != NULL, "%s: no table", path);
	int const nsyms = dwfl_module_getsymtab(mod);
	ck_assert_int_gt(nsyms, 1);
	/* Which table libdwfl chose: .symtab (the debug file's) or .dynsym. */
	GElf_Addr bias;
	Elf *elf = NULL;
	GElf_Sym sym;
	GElf_Addr v1 = 0;
	dwfl_module_getsym_info(mod, 1, &sym, &v1, NULL, &elf, &bias);
	ck_assert_ptr_nonnull(elf);
	int has_symtab = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			has_symtab = 1;
	}
	ck_assert_msg(has_symtab == want_symtab, "%s: libdwfl read %s", path, has_symtab ? ".symtab" : ".dynsym");
	struct tally n = { 0 };
	for (int i = 1; i < nsyms; i += (int)stride_sym) {
		GElf_Addr v = 0;
		if (!dwfl_module_getsym_info(mod, i, &sym, &v, NULL, NULL, NULL) || !v)
			continue;
		uint64_t const pts[] = { v - 1, v, v + 1, v + sym.st_size / 2, v + sym.st_size - 1, v + sym.st_size };
		for (size_t k = 0; k < sizeof pts / sizeof pts[0]; k++)
			check_addr(mod, t, pts[k], &n);
	}
	/* Code: the main file's executable sections. */
	Elf *main_elf = dwfl_module_getelf(mod, &bias);
	ck_assert_ptr_nonnull(main_elf);
	scn = NULL;
	while ((scn = elf_nextscn(main_elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		for (uint64_t a = sh.sh_addr + bias; a < sh.sh_addr + bias + sh.sh_size; a += stride)
			check_addr(mod, t, a, &n);
	}
	ck_assert_msg(n.named >= 10 && n.named_answered > 0 &&
		      100ull * n.answered >= (unsigned long long)min_percent * n.checked,
		      "%s: answered %u of %u addresses (%u of the %u libdwfl names)", path, n.answered, n.checked,
		      n.named_answered, n.named);
	printf("# %s%s: %u addresses, the table answers %u (%u of the %u libdwfl names), all alike\n", path,
	       no_debug ? " (no debug file)" : "", n.checked, n.answered, n.named_answered, n.named);
	su_symtab_free(t);
	dwfl_end(d);
}

START_TEST(testdata_program_agrees_with_libdwfl)
{
	/* crtstuff's functions (frame_dummy, register_tm_clones...) have no
	 * size: libdwfl's label rules name them, the table leaves them. */
	char *p = build_path("testdata/tdata-single");
	oracle_module(p, 1, 1, 1, 1, 60);
	free(p);
}
END_TEST

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

START_TEST(libc_symtab_agrees_with_libdwfl)
{
	/* libc6-dbg's .symtab: thousands of locals and aliases. */
	Dwfl_Module *mod;
	Dwfl *d = open_offline(LIBC, 0, &mod);
	Dwarf_Addr bias;
	int const dbg = dwfl_module_getdwarf(mod, &bias) != NULL;
	dwfl_end(d);
	ck_assert_msg(dbg, "no debug info for " LIBC ": apt-get install libc6-dbg (scripts/install-deps.sh)");
	oracle_module(LIBC, 0, 1, 8, 211, 90);
}
END_TEST

START_TEST(dynsym_only_libraries_agree_with_libdwfl)
{
	/* Debian's libc without its debug file: .dynsym only; and a stripped
	 * copy of the testdata plugin. */
	oracle_module(LIBC, 1, 0, 2, 211, 50);
	char *dir = new_tmpdir();
	char *src = build_path("testdata/.libs/libtdata-plugin.so");
	char *dst = xasprintf("%s/libplugin-stripped.so", dir);
	char *cmd = xasprintf("strip -o '%s' '%s' 2>&1", dst, src);
	int status = -1;
	char *out = run_cmd(cmd, &status);
	ck_assert_msg(status == 0, "strip failed (binutils): %s", out);
	oracle_module(dst, 1, 0, 1, 1, 90);
	free(out);
	free(cmd);
	free(dst);
	free(src);
	rm_rf(dir);
}
END_TEST

/* ---- sort -------------------------------------------------------------------- */

static int key_pos_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b; /* key, then the original position */
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* su_sort_u64 against qsort on (key, position): the same keys in the same
 * order, each payload with its key, equal keys in their first order.
 * Sizes across the insertion sort's bound; keys that differ in a few low
 * bytes only (addresses: passes skipped), in every byte, many equal. */
START_TEST(sort_u64_as_qsort)
{
	static const size_t sizes[] = { 0, 1, 2, 31, 32, 33, 100, 1000, 70000 };
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (int kind = 0; kind < 3; kind++)
		for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			size_t const n = sizes[si];
			uint64_t *k = malloc((n + 1) * sizeof(*k)), *ref = malloc((2 * n + 1) * sizeof(*ref));
			uint32_t *p = malloc((n + 1) * sizeof(*p));
			ck_assert(k && ref && p);
			for (size_t i = 0; i < n; i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				k[i] = kind == 0 ? 0x7f0000400000ull + (x & 0xfffff) : kind == 1 ? x : x % 7;
				p[i] = (uint32_t)i;
				ref[2 * i] = k[i];
				ref[2 * i + 1] = i;
			}
			qsort(ref, n, 2 * sizeof(*ref), key_pos_cmp);
			ck_assert_int_eq(su_sort_u64(k, p, n), 0);
			for (size_t i = 0; i < n; i++) {
				ck_assert_uint_eq(k[i], ref[2 * i]);
				ck_assert_uint_eq(p[i], ref[2 * i + 1]);
			}
			/* Without a payload: the keys alone. */
			for (size_t i = 0; i < n; i++)
				k[n - 1 - i] = ref[2 * i];
			ck_assert_int_eq(su_sort_u64(k, NULL, n), 0);
			for (size_t i = 0; i < n; i++)
				ck_assert_uint_eq(k[i], ref[2 * i]);
			free(k);
			free(ref);
			free(p);
		}
}
END_TEST

static Suite *symtab_suite(void)
{
	Suite *s = suite_create("symtab");
	TCase *tc = tcase_create("symtab");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, aliases_pick_as_libdwfl);
	tcase_add_test(tc, globals_before_locals_and_nesting);
	tcase_add_test(tc, table_order_decides_like_libdwfl);
	tcase_add_test(tc, sizeless_labels_asked_gaps_nameless);
	tcase_add_test(tc, one_table_without_locals_pass);
	tcase_add_test(tc, testdata_program_agrees_with_libdwfl);
	tcase_add_test(tc, libc_symtab_agrees_with_libdwfl);
	tcase_add_test(tc, dynsym_only_libraries_agree_with_libdwfl);
	tcase_add_test(tc, sort_u64_as_qsort);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(symtab_suite)
