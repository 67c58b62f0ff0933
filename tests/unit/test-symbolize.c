/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of symbolize/symbolize.c.  What the symbolizer says is checked
 * against two independent readers of the same DWARF: a libdwarf oracle
 * (tests/unit/dwarf-oracle.c: function ranges and line table) and binutils'
 * `addr2line -f -i` (inline chains), over every byte address of the
 * testdata functions.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debuginfo/module.h"
#include "symbolize/symbolize.h"
#include "tests/unit/check-main.h"
#include "tests/unit/dwarf-oracle.h"
#include "tests/unit/elf-util.h"

#define MAXF 16

struct fixture {
	char *path;
	struct su_modcache *cache;
	struct su_module *mod;
};

/* REL: under the build directory, or an absolute path. */
static void fixture_open(struct fixture *f, const char *rel)
{
	f->path = rel[0] == '/' ? xasprintf("%s", rel) : build_path(rel);
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(f->path, id);
	struct su_debuginfo_opts o = { .no_debuginfod = 1, .no_system_dirs = 1 };
	f->cache = su_modcache_new(&o);
	ck_assert_ptr_nonnull(f->cache);
	su_modcache_set_finalizers(f->cache, NULL, su_symbolize_cache_free);
	struct su_map_entry e;
	memset(&e, 0, sizeof e);
	e.path = f->path;
	e.build_id_len = (uint8_t)len;
	memcpy(e.build_id, id, len);
	f->mod = su_modcache_get(f->cache, &e);
	ck_assert_ptr_nonnull(f->mod);
	ck_assert_int_eq(f->mod->status, SU_MODULE_OK);
}

static void fixture_close(struct fixture *f)
{
	su_modcache_free(f->cache);
	free(f->path);
}

static const char *or_q(const char *s) { return s ? s : "??"; }

/* Every byte address of FUNC in BIN: our outermost function and its
 * offset, and our innermost file:line:column, equal the oracle's. */
static void check_against_oracle(struct fixture *f, struct dwarf_oracle *o, const char *func)
{
	uint64_t size = 0;
	uint64_t start = elf_func_addr(f->path, func, &size);
	ck_assert_msg(start && size, "%s: no symbol %s", f->path, func);
	for (uint64_t a = start; a < start + size; a++) {
		struct su_symframe fr[MAXF];
		size_t n = su_symbolize(f->mod, a, fr, MAXF);
		ck_assert_msg(n >= 1, "%s+0x%llx: nothing", func, (unsigned long long)(a - start));
		uint64_t low = 0;
		const char *ofunc = dwarf_oracle_function(o, a, &low);
		ck_assert_msg(ofunc != NULL, "oracle: no function at 0x%llx", (unsigned long long)a);
		ck_assert_msg(fr[n - 1].function && strcmp(fr[n - 1].function, ofunc) == 0,
			      "0x%llx: %s, oracle %s", (unsigned long long)a,
			      or_q(fr[n - 1].function), ofunc);
		ck_assert_str_eq(ofunc, func);
		ck_assert_uint_eq(fr[n - 1].func_offset, a - start);
		ck_assert_uint_eq(low, start);
		ck_assert_int_eq(fr[n - 1].inlined, 0);
		const char *ofile;
		unsigned oline, ocol;
		ck_assert_int_eq(dwarf_oracle_line(o, a, &ofile, &oline, &ocol), 0);
		ck_assert_msg(fr[0].file && strcmp(fr[0].file, ofile) == 0 &&
			      fr[0].line == oline && fr[0].column == ocol,
			      "0x%llx (%s): %s:%u:%u, oracle %s:%u:%u", (unsigned long long)a,
			      func, or_q(fr[0].file), fr[0].line, fr[0].column, ofile, oline, ocol);
		for (size_t i = 0; i + 1 < n; i++)
			ck_assert_int_eq(fr[i].inlined, 1);
	}
}

static void oracle_case(const char *rel, const char *const *funcs)
{
	struct fixture f;
	fixture_open(&f, rel);
	struct dwarf_oracle *o = dwarf_oracle_open(f.path);
	ck_assert_msg(o != NULL, "libdwarf could not read %s", f.path);
	for (size_t i = 0; funcs[i]; i++)
		check_against_oracle(&f, o, funcs[i]);
	dwarf_oracle_close(o);
	fixture_close(&f);
}

START_TEST(single_agrees_with_libdwarf)
{
	static const char *const funcs[] = { "hot_leaf", "level_c", "level_b", "level_a",
					     "run_workload", "main", NULL };
	oracle_case("testdata/tdata-single", funcs);
}
END_TEST

START_TEST(nofp_agrees_with_libdwarf)
{
	static const char *const funcs[] = { "nofp_hot", "nofp_middle", "nofp_outer", "main", NULL };
	oracle_case("testdata/tdata-nofp", funcs);
}
END_TEST

START_TEST(plugin_agrees_with_libdwarf)
{
	static const char *const funcs[] = { "plugin_hot", "plugin_entry", NULL };
	oracle_case("testdata/.libs/libtdata-plugin.so", funcs);
}
END_TEST

START_TEST(inline_program_agrees_with_libdwarf)
{
	static const char *const funcs[] = { "inline_hot", "inline_outer", "main", NULL };
	oracle_case("testdata/tdata-inline", funcs);
}
END_TEST

/* ---- inline chains ------------------------------------------------------- */

/* The line of the source line holding MARK in testdata/FILE. */
static unsigned marked_line(const char *file, const char *mark)
{
	const char *top = getenv("top_srcdir");
	char *path = xasprintf("%s/testdata/%s", top && *top ? top : "..", file);
	FILE *fp = fopen(path, "r");
	ck_assert_msg(fp != NULL, "%s: %s", path, strerror(errno));
	char buf[512];
	unsigned n = 0, found = 0;
	while (fgets(buf, sizeof buf, fp)) {
		n++;
		if (strstr(buf, mark))
			found = n;
	}
	fclose(fp);
	free(path);
	ck_assert_msg(found, "no '%s' in %s", mark, file);
	return found;
}

static int ends_with(const char *s, const char *tail)
{
	size_t a = s ? strlen(s) : 0, b = strlen(tail);
	return a >= b && strcmp(s + a - b, tail) == 0;
}

START_TEST(inline_chain_of_hot_loop)
{
	struct fixture f;
	fixture_open(&f, "testdata/tdata-inline");
	struct dwarf_oracle *o = dwarf_oracle_open(f.path);
	ck_assert_ptr_nonnull(o);
	unsigned hot = marked_line("inline.c", "tdata: inline hot loop");
	unsigned leaf_site = marked_line("inline.c", "tdata: inl_leaf call site");
	unsigned mid_site = marked_line("inline.c", "tdata: inl_middle call site");
	uint64_t size = 0, start = elf_func_addr(f.path, "inline_hot", &size);
	unsigned seen = 0;
	for (uint64_t a = start; a < start + size; a++) {
		const char *ofile;
		unsigned oline, ocol;
		if (dwarf_oracle_line(o, a, &ofile, &oline, &ocol) != 0 || oline != hot)
			continue;
		seen++;
		struct su_symframe fr[MAXF];
		size_t n = su_symbolize(f.mod, a, fr, MAXF);
		ck_assert_uint_eq(n, 3);
		ck_assert_str_eq(fr[0].function, "inl_leaf");
		ck_assert_str_eq(fr[1].function, "inl_middle");
		ck_assert_str_eq(fr[2].function, "inline_hot");
		ck_assert(fr[0].inlined && fr[1].inlined && !fr[2].inlined);
		ck_assert_uint_eq(fr[0].line, hot);
		ck_assert_uint_eq(fr[1].line, leaf_site);
		ck_assert_uint_eq(fr[2].line, mid_site);
		for (int i = 0; i < 3; i++)
			ck_assert_msg(ends_with(fr[i].file, "/testdata/inline.c"), "%s", or_q(fr[i].file));
		ck_assert_uint_gt(fr[1].column, 0); /* call sites carry columns */
		ck_assert_uint_eq(fr[0].func_offset, 0);
		ck_assert_uint_eq(fr[2].func_offset, a - start);
		/* A short array gets the innermost frames. */
		struct su_symframe two[2];
		ck_assert_uint_eq(su_symbolize(f.mod, a, two, 2), 2);
		ck_assert_str_eq(two[1].function, "inl_middle");
	}
	ck_assert_uint_gt(seen, 4);
	dwarf_oracle_close(o);
	fixture_close(&f);
}
END_TEST

/* Our frames for every byte address of FUNC equal `addr2line -f -i -C -a`:
 * as many, each at the same file:line, with the same names when NAMES. */
static void check_against_addr2line(const char *rel, const char *func, int names)
{
	struct fixture f;
	fixture_open(&f, rel);
	uint64_t size = 0, start = elf_func_addr(f.path, func, &size);
	ck_assert(start && size);
	char *list = calloc(size, 20);
	for (uint64_t a = start; a < start + size; a++)
		sprintf(list + strlen(list), " 0x%llx", (unsigned long long)a);
	char *cmd = xasprintf("addr2line -f -i -C -a -e '%s'%s", f.path, list);
	int st;
	char *out = run_cmd(cmd, &st);
	ck_assert_msg(st == 0, "%s: exit %d (binutils installed?)", cmd, st);
	char *save = NULL, *line = strtok_r(out, "\n", &save);
	uint64_t a = 0;
	size_t k = 0, n = 0;
	struct su_symframe fr[MAXF];
	unsigned addrs = 0;
	while (line) {
		if (strncmp(line, "0x", 2) == 0) {
			if (addrs)
				ck_assert_msg(k == n, "0x%llx: %zu frames, addr2line %zu",
					      (unsigned long long)a, n, k);
			a = strtoull(line, NULL, 16);
			n = su_symbolize(f.mod, a, fr, MAXF);
			k = 0;
			addrs++;
			line = strtok_r(NULL, "\n", &save);
			continue;
		}
		const char *fn = line;
		char *loc = strtok_r(NULL, "\n", &save);
		ck_assert_ptr_nonnull(loc);
		char *disc = strstr(loc, " (discriminator");
		if (disc)
			*disc = '\0';
		ck_assert_msg(k < n, "0x%llx: addr2line has more frames (%s)", (unsigned long long)a, fn);
		size_t const ll = strlen(loc);
		if (ll > 2 && strcmp(loc + ll - 2, ":?") == 0)
			loc[ll - 1] = '0'; /* a row without a line: ours says 0 */
		char *ours = xasprintf("%s %s:%u", names ? or_q(fr[k].function) : "", or_q(fr[k].file), fr[k].line);
		char *theirs = xasprintf("%s %s", names ? fn : "", loc);
		ck_assert_msg(strcmp(ours, theirs) == 0, "0x%llx frame %zu: ours %s, addr2line %s",
			      (unsigned long long)a, k, ours, theirs);
		free(ours);
		free(theirs);
		k++;
		line = strtok_r(NULL, "\n", &save);
	}
	ck_assert_uint_eq(k, n);
	ck_assert_uint_eq(addrs, size);
	free(out);
	free(cmd);
	free(list);
	fixture_close(&f);
}

/* Every PLT stub objdump names (`<func@plt>`, from binutils' synthetic
 * symbols) has that name here, at each of its bytes, as perf names it. */
static unsigned check_plt_against_objdump(const char *rel)
{
	struct fixture f;
	fixture_open(&f, rel);
	char *cmd = xasprintf("objdump -d -C -j .plt -j .plt.sec -j .plt.got '%s'", f.path);
	int st;
	char *out = run_cmd(cmd, &st);
	ck_assert_msg(st == 0, "%s: exit %d (binutils installed?)", cmd, st);
	unsigned stubs = 0;
	char *save = NULL;
	for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *lt = strstr(line, " <"), *end = strstr(line, "@plt>:");
		if (!lt || !end || end < lt || strchr(line, '\t'))
			continue;
		*end = '\0';
		if (strchr(lt + 2, '+') || strstr(lt + 2, "@plt-"))
			continue; /* PLT0: "<func@plt-0x10>" */
		uint64_t const a = strtoull(line, NULL, 16);
		char *want = xasprintf("%s@plt", lt + 2);
		for (uint64_t off = 0; off < 8; off++) {
			struct su_symframe fr[MAXF];
			size_t const n = su_symbolize(f.mod, a + off, fr, MAXF);
			ck_assert_msg(n == 1 && fr[0].function && !strcmp(fr[0].function, want) &&
				      fr[0].func_offset == off,
				      "%s 0x%llx: %s+0x%llx, objdump %s", rel, (unsigned long long)(a + off),
				      n ? or_q(fr[0].function) : "nothing", n ? (unsigned long long)fr[0].func_offset : 0ull,
				      want);
		}
		free(want);
		stubs++;
	}
	free(out);
	free(cmd);
	fixture_close(&f);
	return stubs;
}

START_TEST(plt_stubs_named_as_objdump)
{
	unsigned const c = check_plt_against_objdump("testdata/tdata-single");
	unsigned const cxx = check_plt_against_objdump("testdata/tdata-demo");
	ck_assert_msg(c >= 3 && cxx >= 3, "PLT stubs checked: %u and %u", c, cxx);
}
END_TEST

START_TEST(inline_chains_match_addr2line)
{
	check_against_addr2line("testdata/tdata-inline", "inline_hot", 1);
	check_against_addr2line("testdata/tdata-inline", "inline_outer", 1);
	check_against_addr2line("testdata/tdata-single", "hot_leaf", 1);
	check_against_addr2line("testdata/tdata-nofp", "nofp_middle", 1);
}
END_TEST

/* words::count_words of testdata/rust/words.rs, built here by Debian's
 * rustc -g -O with both manglings: every byte address, not only the ones a
 * recording happens to sample (tests/names.sh), as addr2line.  Rust nests
 * its functions in namespaces and inlines deep chains whose ranges end
 * where a sibling's begin.  v0 names say more than addr2line's DWARF names:
 * locations only there. */
START_TEST(rust_inline_chains_match_addr2line)
{
	static const char rustc[] = "/usr/bin/rustc";
	ck_assert_msg(access(rustc, X_OK) == 0, "%s missing: apt-get install rustc (scripts/install-deps.sh)", rustc);
	const char *top = getenv("top_srcdir");
	char *dir = new_tmpdir();
	static const struct { const char *name, *flags; int names; } builds[] = {
		{ "legacy", "", 1 },
		{ "v0", "-C symbol-mangling-version=v0", 0 },
	};
	for (size_t i = 0; i < sizeof builds / sizeof *builds; i++) {
		char *bin = xasprintf("%s/words-%s", dir, builds[i].name);
		/* Not make's jobserver: its fds are not ours to use. */
		char *cmd = xasprintf("MAKEFLAGS= MFLAGS= CARGO_MAKEFLAGS= %s -g -O %s -o '%s' '%s/testdata/rust/words.rs' 2>&1",
				      rustc, builds[i].flags,
				      bin, top && *top ? top : "..");
		int st;
		char *out = run_cmd(cmd, &st);
		ck_assert_msg(st == 0, "%s: exit %d: %s", cmd, st, out);
		free(out);
		free(cmd);
		/* The symbol, whatever the crate hash: "t <mangled count_words>". */
		cmd = xasprintf("nm '%s' | awk '$3 ~ /5words11count_words/ { print $3; exit }'", bin);
		char *sym = run_cmd(cmd, &st);
		ck_assert_msg(st == 0 && sym[0], "%s: no words::count_words symbol", bin);
		sym[strcspn(sym, "\n")] = '\0';
		check_against_addr2line(bin, sym, builds[i].names);
		free(sym);
		free(cmd);
		free(bin);
	}
	rm_rf(dir);
}
END_TEST

/* ---- C++ ----------------------------------------------------------------- */

START_TEST(demangle_known_names)
{
	char *s = su_demangle("_ZN3foo3barEi");
	ck_assert_str_eq(s, "foo::bar(int)");
	free(s);
	s = su_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi");
	ck_assert_str_eq(s, "std::vector<int, std::allocator<int> >::push_back(int const&)");
	free(s);
	s = su_demangle("_ZN3foo3barEi.cold");
	ck_assert_str_eq(s, "foo::bar(int) [clone .cold]");
	free(s);
	ck_assert_ptr_null(su_demangle("main"));
	ck_assert_ptr_null(su_demangle("_Z"));
	ck_assert_ptr_null(su_demangle("_Zgarbage"));
	ck_assert_ptr_null(su_demangle(""));
	ck_assert_ptr_null(su_demangle(NULL));
}
END_TEST

/* Rust: the legacy mangling (Itanium syntax, a hash, $-escapes, LLVM's
 * suffix) and v0, as rustc 1.63 writes them; names as perf shows them. */
START_TEST(demangle_rust_names)
{
	static const char *const cases[][2] = {
		{ "_ZN1t11count_words17h957abfedacffe652E", "t::count_words" },
		{ "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h459e666ec38d5061E.llvm.17602109445883871853",
		  "std::rt::lang_start::{{closure}}" },
		{ "_ZN5alloc7raw_vec11finish_grow17h6bb3b34c672aa864E.llvm.16760922126257571484",
		  "alloc::raw_vec::finish_grow" },
		{ "_ZN9hashbrown11rustc_entry62_$LT$impl$u20$hashbrown..map..HashMap$LT$K$C$V$C$S$C$A$GT$$GT$11rustc_entry17h3472448d97eeb406E",
		  "hashbrown::rustc_entry::<impl hashbrown::map::HashMap<K,V,S,A>>::rustc_entry" },
		{ "_RNvCs6Bq21TOhnQv_1t11count_words", "t::count_words" },
		{ "_RNvMNtCs1234_5alloc3vecINtB2_3VechE4push", "<alloc::vec::Vec<u8>>::push" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = su_demangle(cases[i][0]);
		ck_assert_msg(s && !strcmp(s, cases[i][1]), "%s: %s, not %s", cases[i][0], s ? s : "NULL", cases[i][1]);
		free(s);
	}
	/* A C++ name that only looks like a Rust one stays C++. */
	char *s = su_demangle("_ZN3foo17h0123456789abcdefEv");
	ck_assert_str_eq(s, "foo::h0123456789abcdef()");
	free(s);
	ck_assert_ptr_null(su_demangle("_Rgarbage"));
}
END_TEST

START_TEST(cxx_names_demangled)
{
	struct fixture f;
	fixture_open(&f, "tests/unit/cxx-fixture");
	uint64_t size = 0;
	uint64_t a = elf_func_addr(f.path, "_ZN5shape6Circle4areaEd", &size);
	ck_assert_msg(a != 0, "no ns::Circle::area symbol");
	struct su_symframe fr[MAXF];
	size_t n = su_symbolize(f.mod, a + size / 2, fr, MAXF);
	ck_assert_uint_ge(n, 1);
	ck_assert_str_eq(fr[n - 1].function, "shape::Circle::area(double)");
	/* An inlined template without a linkage name: qualified DW_AT_name. */
	a = elf_func_addr(f.path, "_ZN5shape5totalEi", &size);
	ck_assert(a != 0);
	int found = 0;
	for (uint64_t p = a; p < a + size && !found; p++) {
		n = su_symbolize(f.mod, p, fr, MAXF);
		ck_assert_uint_ge(n, 1);
		ck_assert_str_eq(fr[n - 1].function, "shape::total(int)");
		if (n >= 2 && fr[0].inlined &&
		    strcmp(fr[0].function, "shape::twice<int>") == 0)
			found = 1;
	}
	ck_assert_msg(found, "inlined shape::twice<int> not seen");
	fixture_close(&f);
}
END_TEST

/* ---- the cache ----------------------------------------------------------- */

START_TEST(cache_gives_same_frames_and_stable_strings)
{
	struct fixture f;
	fixture_open(&f, "testdata/tdata-inline");
	uint64_t size = 0, start = elf_func_addr(f.path, "inline_hot", &size);
	struct su_symframe first[MAXF][MAXF];
	size_t nfirst[MAXF];
	for (int i = 0; i < MAXF; i++)
		nfirst[i] = su_symbolize(f.mod, start + (uint64_t)i * size / MAXF, first[i], MAXF);
	/* Thousands more addresses: the tables grow and are rehashed. */
	for (uint64_t a = 0; a < 20000; a++) {
		struct su_symframe fr[MAXF];
		su_symbolize(f.mod, a, fr, MAXF);
	}
	for (int i = 0; i < MAXF; i++) {
		struct su_symframe again[MAXF];
		size_t n = su_symbolize(f.mod, start + (uint64_t)i * size / MAXF, again, MAXF);
		ck_assert_uint_eq(n, nfirst[i]);
		ck_assert(memcmp(again, first[i], n * sizeof again[0]) == 0);
		/* Same pointers, still readable. */
		for (size_t k = 0; k < n; k++)
			ck_assert(strlen(first[i][k].function) > 0);
	}
	/* One string per name: the pointers of two addresses agree. */
	ck_assert_ptr_eq(first[0][nfirst[0] - 1].function, first[1][nfirst[1] - 1].function);
	fixture_close(&f);
}
END_TEST

/* Names only (folded stacks): every address of a function with inlines and
 * of a plain one names the same functions, inline flags and offsets as the
 * full answer, with no file or line; the module's cache then keeps the
 * names-only answers, and a full question still gets files and lines. */
static void names_only_agree(const char *path, const char *func)
{
	struct fixture f, g;
	fixture_open(&f, path);
	fixture_open(&g, path);
	uint64_t size = 0, start = elf_func_addr(f.path, func, &size);
	ck_assert_msg(start != 0 && size > 0, "no %s in %s", func, path);
	int with_line = 0;
	for (uint64_t a = start; a < start + size; a++) {
		struct su_symframe full[MAXF], names[MAXF];
		size_t const n = su_symbolize_flags(f.mod, a, full, MAXF, NULL, 0);
		size_t const m = su_symbolize_flags(g.mod, a, names, MAXF, NULL, SU_SYMBOLIZE_NAMES_ONLY);
		ck_assert_uint_eq(m, n);
		for (size_t k = 0; k < n; k++) {
			ck_assert_str_eq(names[k].function, full[k].function);
			ck_assert_int_eq(names[k].inlined, full[k].inlined);
			ck_assert_uint_eq(names[k].func_offset, full[k].func_offset);
			ck_assert_ptr_null(names[k].file);
			ck_assert_ptr_null(names[k].decl_file);
			ck_assert_uint_eq(names[k].line, 0);
			with_line += full[k].file && full[k].line;
		}
		/* The other kind of question on the names-only module: the full answer. */
		struct su_symframe again[MAXF];
		size_t const r = su_symbolize_flags(g.mod, a, again, MAXF, NULL, 0);
		ck_assert_uint_eq(r, n);
		for (size_t k = 0; k < n; k++) {
			ck_assert_uint_eq(again[k].line, full[k].line);
			ck_assert((again[k].file == NULL) == (full[k].file == NULL));
			if (full[k].file)
				ck_assert_str_eq(again[k].file, full[k].file);
		}
	}
	ck_assert_msg(with_line > 0, "no line known in %s: the comparison is empty", func);
	fixture_close(&g);
	fixture_close(&f);
}

START_TEST(names_only_same_functions)
{
	names_only_agree("testdata/tdata-inline", "inline_hot");
	names_only_agree("testdata/tdata-single", "main");
}
END_TEST

START_TEST(bad_input_gives_nothing)
{
	struct su_symframe fr[MAXF];
	ck_assert_uint_eq(su_symbolize(NULL, 0x1000, fr, MAXF), 0);
	struct fixture f;
	fixture_open(&f, "testdata/tdata-single");
	ck_assert_uint_eq(su_symbolize(f.mod, 0, fr, MAXF), 0);
	ck_assert_uint_eq(su_symbolize(f.mod, UINT64_MAX, fr, MAXF), 0);
	ck_assert_uint_eq(su_symbolize(f.mod, UINT64_C(0x7fffffff0000), fr, MAXF), 0);
	uint64_t a = elf_func_addr(f.path, "hot_leaf", NULL);
	ck_assert_uint_eq(su_symbolize(f.mod, a, fr, 0), 0);
	ck_assert_uint_eq(su_symbolize(f.mod, a, NULL, 0), 0);
	ck_assert_uint_eq(su_symbolize(f.mod, a, fr, 1), 1);
	/* A module that was not found. */
	struct su_map_entry e;
	memset(&e, 0, sizeof e);
	e.path = (char *)"/nonexistent/x";
	struct su_module *m = su_modcache_get(f.cache, &e);
	ck_assert_int_eq(m->status, SU_MODULE_NOT_FOUND);
	ck_assert_uint_eq(su_symbolize(m, a, fr, MAXF), 0);
	fixture_close(&f);
}
END_TEST

/* Symbols and lines through a separate debug file (stripped binary). */
START_TEST(split_debug_symbolizes_like_the_original)
{
	char *src = build_path("testdata/tdata-single");
	char *t = new_tmpdir();
	char *cmd = xasprintf("cp '%s' '%s/tdata-single' && cd '%s' && "
			      "objcopy --only-keep-debug tdata-single tdata-single.debug && "
			      "strip --strip-all tdata-single && "
			      "objcopy --add-gnu-debuglink=tdata-single.debug tdata-single", src, t, t);
	int st;
	free(run_cmd(cmd, &st));
	ck_assert_int_eq(st, 0);
	struct fixture orig, split;
	fixture_open(&orig, "testdata/tdata-single");
	split.path = xasprintf("%s/tdata-single", t);
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(split.path, id);
	struct su_debuginfo_opts o = { .no_debuginfod = 1, .no_system_dirs = 1 };
	split.cache = su_modcache_new(&o);
	su_modcache_set_finalizers(split.cache, NULL, su_symbolize_cache_free);
	struct su_map_entry e;
	memset(&e, 0, sizeof e);
	e.path = split.path;
	e.build_id_len = (uint8_t)len;
	memcpy(e.build_id, id, len);
	split.mod = su_modcache_get(split.cache, &e);
	ck_assert_int_eq(split.mod->status, SU_MODULE_OK);
	uint64_t size, start = elf_func_addr(src, "level_b", &size);
	for (uint64_t a = start; a < start + size; a++) {
		struct su_symframe x[MAXF], y[MAXF];
		size_t nx = su_symbolize(orig.mod, a, x, MAXF);
		size_t ny = su_symbolize(split.mod, a, y, MAXF);
		ck_assert_uint_eq(nx, ny);
		for (size_t k = 0; k < nx; k++) {
			ck_assert_str_eq(x[k].function, y[k].function);
			ck_assert_str_eq(x[k].file, y[k].file);
			ck_assert_uint_eq(x[k].line, y[k].line);
			ck_assert_uint_eq(x[k].func_offset, y[k].func_offset);
		}
	}
	ck_assert_ptr_nonnull(split.mod->debug_path);
	fixture_close(&orig);
	fixture_close(&split);
	free(cmd);
	free(src);
	rm_rf(t);
}
END_TEST

/* dwz: DWARF shared through a .gnu_debugaltlink file. */
static struct su_module *open_in(struct su_modcache **c, const char *path,
				 const char *const *dirs)
{
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(path, id);
	struct su_debuginfo_opts o = { .no_debuginfod = 1, .no_system_dirs = 1, .debug_dirs = dirs };
	*c = su_modcache_new(&o);
	su_modcache_set_finalizers(*c, NULL, su_symbolize_cache_free);
	struct su_map_entry e;
	memset(&e, 0, sizeof e);
	e.path = (char *)path;
	e.build_id_len = (uint8_t)len;
	memcpy(e.build_id, id, len);
	struct su_module *m = su_modcache_get(*c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	return m;
}

/* Every address of FUNC gives the same frames in A and B. */
static void same_frames(struct su_module *a, struct su_module *b, const char *bin, const char *func)
{
	uint64_t size = 0, start = elf_func_addr(bin, func, &size);
	ck_assert(start && size);
	for (uint64_t p = start; p < start + size; p++) {
		struct su_symframe x[MAXF], y[MAXF];
		size_t nx = su_symbolize(a, p, x, MAXF);
		size_t ny = su_symbolize(b, p, y, MAXF);
		ck_assert_uint_eq(nx, ny);
		for (size_t k = 0; k < nx; k++) {
			ck_assert_str_eq(or_q(x[k].function), or_q(y[k].function));
			ck_assert_str_eq(or_q(x[k].file), or_q(y[k].file));
			ck_assert_uint_eq(x[k].line, y[k].line);
			ck_assert_uint_eq(x[k].column, y[k].column);
			ck_assert_int_eq(x[k].inlined, y[k].inlined);
		}
	}
}

START_TEST(dwz_alt_file_found_and_checked)
{
	char *single = build_path("testdata/tdata-single");
	char *inl = build_path("testdata/tdata-inline");
	char *t = new_tmpdir();
	char *cmd = xasprintf("cd '%s' && cp '%s' a && cp '%s' b && cp '%s' c && "
			      "dwz -m common.debug -M '%s/common.debug' a b && "
			      "readelf -S a | grep -q gnu_debugaltlink", t, single, single, inl, t);
	int st;
	char *out = run_cmd(cmd, &st);
	ck_assert_msg(st == 0, "%s: exit %d (dwz installed?) %s", cmd, st, out);
	free(out);
	free(cmd);
	struct su_modcache *c0, *c1, *c2, *c3;
	struct su_module *orig = open_in(&c0, single, NULL);
	char *a = xasprintf("%s/a", t);
	/* The alt file where the link says. */
	struct su_module *m = open_in(&c1, a, NULL);
	static const char *const funcs[] = { "hot_leaf", "level_a", "main" };
	ck_assert_ptr_nonnull(dwarf_getalt(dwfl_module_getdwarf(m->mod, &(Dwarf_Addr){0})));
	for (int i = 0; i < 3; i++)
		same_frames(orig, m, single, funcs[i]);
	su_modcache_free(c1);
	/* Moved into a --debug-dir: found by name there. */
	char *d = xasprintf("%s/dbg", t);
	cmd = xasprintf("mkdir '%s' && mv '%s/common.debug' '%s/'", d, t, d);
	free(run_cmd(cmd, &st));
	ck_assert_int_eq(st, 0);
	free(cmd);
	const char *dirs[] = { d, NULL };
	m = open_in(&c2, a, dirs);
	ck_assert_ptr_nonnull(dwarf_getalt(dwfl_module_getdwarf(m->mod, &(Dwarf_Addr){0})));
	for (int i = 0; i < 3; i++)
		same_frames(orig, m, single, funcs[i]);
	su_modcache_free(c2);
	/* Another file under the alt file's name: refused (another build-id);
	 * symbolizing still works from what the binary has, and never crashes. */
	cmd = xasprintf("cd '%s' && dwz -m '%s/common.debug' -M /x/common.debug b c >/dev/null 2>&1 || "
			"objcopy --only-keep-debug c '%s/common.debug'", t, d, d);
	free(run_cmd(cmd, &st));
	free(cmd);
	m = open_in(&c3, a, dirs);
	uint64_t size, start = elf_func_addr(single, "level_b", &size);
	for (uint64_t p = start; p < start + size; p++) {
		struct su_symframe fr[MAXF];
		size_t n = su_symbolize(m, p, fr, MAXF);
		ck_assert_uint_ge(n, 1);
		ck_assert_str_eq(or_q(fr[n - 1].function), "level_b");
	}
	struct su_modcache_stats stats;
	su_modcache_get_stats(c3, &stats);
	ck_assert_ptr_null(dwarf_getalt(dwfl_module_getdwarf(m->mod, &(Dwarf_Addr){0})));
	ck_assert_uint_ge(stats.mismatched_files, 1);
	su_modcache_free(c3);
	su_modcache_free(c0);
	free(d);
	free(a);
	free(inl);
	free(single);
	rm_rf(t);
}
END_TEST

Suite *symbolize_suite(void);
Suite *symbolize_suite(void)
{
	Suite *s = suite_create("symbolize");
	TCase *tc = tcase_create("symbolize");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, single_agrees_with_libdwarf);
	tcase_add_test(tc, nofp_agrees_with_libdwarf);
	tcase_add_test(tc, plugin_agrees_with_libdwarf);
	tcase_add_test(tc, inline_program_agrees_with_libdwarf);
	tcase_add_test(tc, inline_chain_of_hot_loop);
	tcase_add_test(tc, inline_chains_match_addr2line);
	tcase_add_test(tc, rust_inline_chains_match_addr2line);
	tcase_add_test(tc, demangle_known_names);
	tcase_add_test(tc, demangle_rust_names);
	tcase_add_test(tc, plt_stubs_named_as_objdump);
	tcase_add_test(tc, cxx_names_demangled);
	tcase_add_test(tc, cache_gives_same_frames_and_stable_strings);
	tcase_add_test(tc, names_only_same_functions);
	tcase_add_test(tc, bad_input_gives_nothing);
	tcase_add_test(tc, split_debug_symbolizes_like_the_original);
	tcase_add_test(tc, dwz_alt_file_found_and_checked);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(symbolize_suite)
