/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of debuginfo/module.c: modules found by build-id, a file with
 * another build-id never used, module addresses = ELF addresses (PIE and
 * ET_EXEC), separate debug files, --symfs, the vDSO.  Build-ids and symbol
 * addresses are read with libelf by the test itself.
 */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "debuginfo/inflate-ahead.h"
#include "debuginfo/inflate-cache.h"
#include "debuginfo/module.h"
#include "tests/unit/check-main.h"
#include "tests/unit/elf-util.h"

static struct su_debuginfo_opts quiet_opts(void)
{
	/* No /usr/lib/debug, no network: only what each test sets up. */
	struct su_debuginfo_opts o = { .no_debuginfod = 1, .no_system_dirs = 1 };
	return o;
}

static struct su_map_entry entry_for(const char *path, const uint8_t *id, size_t id_len)
{
	struct su_map_entry e;
	memset(&e, 0, sizeof e);
	e.path = (char *)path;
	e.build_id_len = (uint8_t)id_len;
	if (id_len)
		memcpy(e.build_id, id, id_len);
	return e;
}

/* MOD names ADDR as function NAME. */
static void check_sym(struct su_module *m, uint64_t addr, const char *name)
{
	ck_assert_ptr_nonnull(m->mod);
	const char *got = dwfl_module_addrname(m->mod, addr);
	ck_assert_msg(got && strcmp(got, name) == 0, "0x%llx: %s, want %s",
		      (unsigned long long)addr, got ? got : "(null)", name);
}

/* The module is the ELF at bias 0: symbols and PT_LOAD at their ELF
 * addresses. */
static void check_bias0(struct su_module *m, const char *path, const char *func)
{
	GElf_Addr bias = 1;
	ck_assert_ptr_nonnull(dwfl_module_getelf(m->mod, &bias));
	ck_assert_uint_eq(bias, 0);
	uint64_t size = 0;
	uint64_t addr = elf_func_addr(path, func, &size);
	ck_assert_msg(addr != 0, "%s: no symbol %s", path, func);
	check_sym(m, addr, func);
	check_sym(m, addr + size - 1, func);
	Dwarf_Addr start, end;
	dwfl_module_info(m->mod, NULL, &start, &end, NULL, NULL, NULL, NULL);
	ck_assert_msg(start <= addr && addr < end, "%s not in [0x%llx, 0x%llx)", func,
		      (unsigned long long)start, (unsigned long long)end);
	/* dwfl_module_relocate_address is identity at bias 0. */
	Dwarf_Addr a = addr;
	ck_assert_int_ge(dwfl_module_relocate_address(m->mod, &a), 0);
	ck_assert_uint_eq(a, addr);
}

START_TEST(found_by_path_with_its_build_id)
{
	char *bin = build_path("testdata/tdata-single");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(bin, id);
	struct su_debuginfo_opts o = quiet_opts();
	struct su_modcache *c = su_modcache_new(&o);
	ck_assert_ptr_nonnull(c);
	struct su_map_entry e = entry_for(bin, id, len);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	ck_assert_str_eq(m->elf_path, bin);
	ck_assert_ptr_nonnull(m->dwfl);
	ck_assert_int_eq(m->debug_only, 0);
	ck_assert_int_eq(elf_type(bin), ET_DYN);
	check_bias0(m, bin, "hot_leaf");
	check_bias0(m, bin, "main");
	/* Cached: the same module, counted once. */
	ck_assert_ptr_eq(su_modcache_get(c, &e), m);
	struct su_map_entry e2 = entry_for("/elsewhere/with/same/id", id, len);
	ck_assert_ptr_eq(su_modcache_get(c, &e2), m);
	struct su_modcache_stats st;
	su_modcache_get_stats(c, &st);
	ck_assert_uint_eq(st.modules, 1);
	ck_assert_uint_eq(st.not_found + st.build_id_mismatch + st.no_file, 0);
	su_modcache_free(c);
	free(bin);
}
END_TEST

START_TEST(shared_object_at_bias_0)
{
	char *so = build_path("testdata/.libs/libtdata-plugin.so");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(so, id);
	struct su_debuginfo_opts o = quiet_opts();
	struct su_modcache *c = su_modcache_new(&o);
	struct su_map_entry e = entry_for(so, id, len);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	check_bias0(m, so, "plugin_hot");
	check_bias0(m, so, "plugin_entry");
	su_modcache_free(c);
	free(so);
}
END_TEST

START_TEST(et_exec_at_bias_0)
{
	char *bin = build_path("tests/unit/tdata-single-nopie");
	ck_assert_int_eq(elf_type(bin), ET_EXEC);
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(bin, id);
	struct su_debuginfo_opts o = quiet_opts();
	struct su_modcache *c = su_modcache_new(&o);
	struct su_map_entry e = entry_for(bin, id, len);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	check_bias0(m, bin, "hot_leaf");
	check_bias0(m, bin, "level_a");
	su_modcache_free(c);
	free(bin);
}
END_TEST

/* A perf.data mapping gives a file offset, not a bias (SU_MAP_FILE_BIAS):
 * the module's program headers place it.  An ET_EXEC loads at its own
 * addresses: bias 0 whatever START - OFFSET says; an entry with a recorded
 * bias keeps it; a module not found leaves START - OFFSET. */
START_TEST(file_bias_from_program_headers)
{
	char *bin = build_path("tests/unit/tdata-single-nopie");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(bin, id);
	struct su_debuginfo_opts o = quiet_opts();
	struct su_modcache *c = su_modcache_new(&o);
	struct su_map_entry e = entry_for(bin, id, len);
	e.start = 0x401000;
	e.end = 0x402000;
	e.offset = 0x1000;
	e.bias = e.start - e.offset;
	e.flags |= SU_MAP_FILE_BIAS;
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	ck_assert_uint_eq(su_module_bias(m, &e), 0);
	ck_assert_uint_eq(su_module_bias(NULL, &e), 0x400000);
	e.flags &= ~(uint32_t)SU_MAP_FILE_BIAS;
	ck_assert_uint_eq(su_module_bias(m, &e), 0x400000);
	id[len - 1] ^= 0x5a;
	struct su_map_entry other = entry_for(bin, id, len);
	other.start = 0x401000;
	other.offset = 0x1000;
	other.bias = 0x400000;
	other.flags |= SU_MAP_FILE_BIAS;
	struct su_module *mo = su_modcache_get(c, &other);
	ck_assert_int_ne(mo->status, SU_MODULE_OK);
	ck_assert_uint_eq(su_module_bias(mo, &other), 0x400000);
	su_modcache_free(c);
	free(bin);
}
END_TEST

START_TEST(wrong_build_id_is_never_used)
{
	char *bin = build_path("testdata/tdata-single");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(bin, id);
	id[len - 1] ^= 0x5a;
	struct su_debuginfo_opts o = quiet_opts();
	struct su_modcache *c = su_modcache_new(&o);
	struct su_map_entry e = entry_for(bin, id, len);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(m->status, SU_MODULE_BUILD_ID_MISMATCH);
	ck_assert_ptr_null(m->dwfl);
	ck_assert_ptr_null(m->mod);
	ck_assert_ptr_null(m->elf_path);
	/* A shorter id that is a prefix of the real one is no match either. */
	id[len - 1] ^= 0x5a;
	struct su_map_entry e2 = entry_for(bin, id, len - 1);
	ck_assert_int_eq(su_modcache_get(c, &e2)->status, SU_MODULE_BUILD_ID_MISMATCH);
	struct su_modcache_stats st;
	su_modcache_get_stats(c, &st);
	ck_assert_uint_eq(st.modules, 2);
	ck_assert_uint_eq(st.build_id_mismatch, 2);
	ck_assert_uint_ge(st.mismatched_files, 2);
	su_modcache_free(c);
	free(bin);
}
END_TEST

START_TEST(missing_file_not_found)
{
	static const uint8_t id[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	struct su_debuginfo_opts o = quiet_opts();
	struct su_modcache *c = su_modcache_new(&o);
	struct su_map_entry e = entry_for("/nonexistent/stackcap/libnothing.so", id, sizeof id);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_NOT_FOUND);
	ck_assert_ptr_null(m->dwfl);
	ck_assert_str_eq(m->recorded_path, "/nonexistent/stackcap/libnothing.so");
	/* Without a build-id too. */
	struct su_map_entry e2 = entry_for("/nonexistent/stackcap/other", NULL, 0);
	ck_assert_int_eq(su_modcache_get(c, &e2)->status, SU_MODULE_NOT_FOUND);
	/* Not an ELF file, a directory: not found, no crash. */
	static const uint8_t id3[20] = { 3, 3, 3 };
	struct su_map_entry e3 = entry_for("/etc/passwd", id3, sizeof id3);
	struct su_map_entry e4 = entry_for("/", NULL, 0);
	ck_assert_int_eq(su_modcache_get(c, &e3)->status, SU_MODULE_NOT_FOUND);
	ck_assert_int_eq(su_modcache_get(c, &e4)->status, SU_MODULE_NOT_FOUND);
	struct su_modcache_stats st;
	su_modcache_get_stats(c, &st);
	ck_assert_uint_eq(st.not_found, 4);
	ck_assert(su_modcache_get(c, NULL) == NULL && errno == EINVAL);
	su_modcache_free(c);
}
END_TEST

START_TEST(no_build_id_recorded_uses_path)
{
	char *bin = build_path("testdata/tdata-single");
	struct su_debuginfo_opts o = quiet_opts();
	struct su_modcache *c = su_modcache_new(&o);
	struct su_map_entry e = entry_for(bin, NULL, 0);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	check_bias0(m, bin, "level_b");
	su_modcache_free(c);
	free(bin);
}
END_TEST

START_TEST(anonymous_no_file)
{
	struct su_debuginfo_opts o = quiet_opts();
	struct su_modcache *c = su_modcache_new(&o);
	struct su_map_entry e = entry_for("", NULL, 0);
	e.flags = SU_MAP_ANON;
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_NO_FILE);
	struct su_map_entry e2 = entry_for("[anon:jit]", NULL, 0);
	ck_assert_int_eq(su_modcache_get(c, &e2)->status, SU_MODULE_NO_FILE);
	struct su_modcache_stats st;
	su_modcache_get_stats(c, &st);
	ck_assert_uint_eq(st.no_file, 2);
	su_modcache_free(c);
}
END_TEST

static int unwind_freed, sym_freed;
static void count_unwind(void *p) { free(p); unwind_freed++; }
static void count_sym(void *p) { free(p); sym_freed++; }

START_TEST(finalizers_run_on_free)
{
	char *bin = build_path("testdata/tdata-single");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(bin, id);
	struct su_modcache *c = su_modcache_new(NULL);
	su_modcache_set_finalizers(c, count_unwind, count_sym);
	struct su_map_entry e = entry_for(bin, id, len);
	struct su_module *m = su_modcache_get(c, &e);
	m->unwind_cache = malloc(8);
	m->sym_cache = malloc(8);
	/* Many modules: the table grows and keeps them all. */
	struct su_module *first = m;
	for (int i = 0; i < 300; i++) {
		char *p = xasprintf("/nonexistent/%d", i);
		struct su_map_entry ei = entry_for(p, NULL, 0);
		ck_assert_ptr_nonnull(su_modcache_get(c, &ei));
		free(p);
	}
	ck_assert_ptr_eq(su_modcache_get(c, &e), first);
	su_modcache_free(c);
	ck_assert_int_eq(unwind_freed, 1);
	ck_assert_int_eq(sym_freed, 1);
	free(bin);
}
END_TEST

/* ---- separate debug info, --debug-dir, --symfs, debuginfod, vDSO ------- */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&cmd, fmt, ap), 0);
	va_end(ap);
	int st;
	char *out = run_cmd(cmd, &st);
	ck_assert_msg(st == 0, "%s: exit %d: %s", cmd, st, out);
	free(out);
	free(cmd);
}

/* "xx/rest" of ID. */
static char *id_rel(const uint8_t *id, size_t len)
{
	char *s = calloc(1, 2 * len + 2);
	char *p = s;
	for (size_t i = 0; i < len; i++) {
		p += sprintf(p, "%02x", id[i]);
		if (i == 0)
			*p++ = '/';
	}
	return s;
}

/* In DIR: bin/tdata-single without DWARF (symtab kept) plus
 * bin/tdata-single.debug, linked by .gnu_debuglink. */
static void make_split(const char *dir, const char *src)
{
	sh("mkdir -p '%s/bin' && cp '%s' '%s/bin/tdata-single' && cd '%s/bin' && "
	   "objcopy --only-keep-debug tdata-single tdata-single.debug && "
	   "strip --strip-debug tdata-single && "
	   "objcopy --add-gnu-debuglink=tdata-single.debug tdata-single",
	   dir, src, dir, dir);
}

/* M has DWARF (from DEBUG when not NULL) giving hot_leaf's file. */
static void check_dwarf(struct su_module *m, const char *src_bin, const char *debug)
{
	Dwarf_Addr bias = 1;
	ck_assert_msg(dwfl_module_getdwarf(m->mod, &bias) != NULL, "no DWARF: %s",
		      dwfl_errmsg(-1));
	ck_assert_uint_eq(bias, 0);
	if (debug) {
		ck_assert_ptr_nonnull(m->debug_path);
		ck_assert_str_eq(m->debug_path, debug);
	}
	uint64_t addr = elf_func_addr(src_bin, "hot_leaf", NULL);
	Dwfl_Line *line = dwfl_module_getsrc(m->mod, addr);
	ck_assert_ptr_nonnull(line);
	const char *file = dwfl_lineinfo(line, NULL, NULL, NULL, NULL, NULL);
	ck_assert_ptr_nonnull(file);
	ck_assert_msg(strstr(file, "single.c") != NULL, "file %s", file);
	check_sym(m, addr, "hot_leaf");
}

START_TEST(debug_file_in_debug_dir_build_id_tree)
{
	char *src = build_path("testdata/tdata-single");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(src, id);
	char *t = new_tmpdir();
	make_split(t, src);
	char *rel = id_rel(id, len);
	char *dbg = xasprintf("%s/dbg/.build-id/%s.debug", t, rel);
	/* Move the debug file away from the debuglink's reach. */
	sh("mkdir -p \"$(dirname '%s')\" && mv '%s/bin/tdata-single.debug' '%s'", dbg, t, dbg);
	char *ddir = xasprintf("%s/dbg", t);
	const char *dirs[] = { ddir, NULL };
	struct su_debuginfo_opts o = quiet_opts();
	o.debug_dirs = dirs;
	struct su_modcache *c = su_modcache_new(&o);
	char *bin = xasprintf("%s/bin/tdata-single", t);
	struct su_map_entry e = entry_for(bin, id, len);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	ck_assert_str_eq(m->elf_path, bin);
	check_dwarf(m, src, dbg);
	struct su_modcache_stats st;
	su_modcache_get_stats(c, &st);
	ck_assert_uint_eq(st.separate_debug, 1);
	su_modcache_free(c);

	/* Without the debug dir: symbols, but no DWARF. */
	o.debug_dirs = NULL;
	c = su_modcache_new(&o);
	m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	ck_assert_ptr_null(dwfl_module_getdwarf(m->mod, &(Dwarf_Addr){0}));
	check_sym(m, elf_func_addr(src, "hot_leaf", NULL), "hot_leaf");
	su_modcache_free(c);

	/* A debug file with another build-id in the tree is refused. */
	char *nopie = build_path("tests/unit/tdata-single-nopie");
	sh("cp '%s' '%s'", nopie, dbg);
	free(nopie);
	o.debug_dirs = dirs;
	c = su_modcache_new(&o);
	m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	ck_assert_ptr_null(dwfl_module_getdwarf(m->mod, &(Dwarf_Addr){0}));
	ck_assert_ptr_null(m->debug_path);
	su_modcache_get_stats(c, &st);
	ck_assert_uint_ge(st.mismatched_files, 1);
	su_modcache_free(c);
	free(bin); free(ddir); free(dbg); free(rel); free(src);
	rm_rf(t);
}
END_TEST

START_TEST(debug_file_by_debuglink)
{
	char *src = build_path("testdata/tdata-single");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(src, id);
	char *t = new_tmpdir();
	make_split(t, src);
	struct su_debuginfo_opts o = quiet_opts();
	char *bin = xasprintf("%s/bin/tdata-single", t);
	char *dbg = xasprintf("%s/bin/tdata-single.debug", t);
	struct su_map_entry e = entry_for(bin, id, len);
	struct su_modcache *c = su_modcache_new(&o);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	check_dwarf(m, src, dbg);
	su_modcache_free(c);
	/* In .debug/ next to the binary. */
	sh("mkdir '%s/bin/.debug' && mv '%s' '%s/bin/.debug/'", t, dbg, t);
	free(dbg);
	dbg = xasprintf("%s/bin/.debug/tdata-single.debug", t);
	c = su_modcache_new(&o);
	m = su_modcache_get(c, &e);
	check_dwarf(m, src, dbg);
	su_modcache_free(c);
	/* By debuglink name in a --debug-dir. */
	char *ddir = xasprintf("%s/d", t);
	sh("mkdir '%s' && mv '%s' '%s/'", ddir, dbg, ddir);
	free(dbg);
	dbg = xasprintf("%s/tdata-single.debug", ddir);
	const char *dirs[] = { ddir, NULL };
	o.debug_dirs = dirs;
	c = su_modcache_new(&o);
	m = su_modcache_get(c, &e);
	check_dwarf(m, src, dbg);
	su_modcache_free(c);
	free(ddir); free(dbg); free(bin); free(src);
	rm_rf(t);
}
END_TEST

START_TEST(debug_dir_before_recorded_path)
{
	char *src = build_path("testdata/tdata-single");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(src, id);
	char *t = new_tmpdir();
	char *rel = id_rel(id, len);
	/* The binary only by basename in the debug dir: found there. */
	sh("mkdir -p '%s/d' && cp '%s' '%s/d/tdata-single'", t, src, t);
	char *ddir = xasprintf("%s/d", t);
	const char *dirs[] = { ddir, NULL };
	struct su_debuginfo_opts o = quiet_opts();
	o.debug_dirs = dirs;
	struct su_modcache *c = su_modcache_new(&o);
	struct su_map_entry e = entry_for("/nonexistent/usr/bin/tdata-single", id, len);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	char *want = xasprintf("%s/tdata-single", ddir);
	ck_assert_str_eq(m->elf_path, want);
	check_dwarf(m, src, NULL);
	su_modcache_free(c);
	free(want);
	/* .build-id/xx/rest in the debug dir wins over the basename and the
	 * recorded path. */
	sh("mkdir -p \"$(dirname '%s/d/.build-id/%s')\" && cp '%s' '%s/d/.build-id/%s'",
	   t, rel, src, t, rel);
	c = su_modcache_new(&o);
	struct su_map_entry e2 = entry_for(src, id, len);
	m = su_modcache_get(c, &e2);
	want = xasprintf("%s/d/.build-id/%s", t, rel);
	ck_assert_str_eq(m->elf_path, want);
	su_modcache_free(c);
	free(want);
	/* Another binary under the same basename: refused, the recorded path
	 * is used. */
	char *nopie = build_path("tests/unit/tdata-single-nopie");
	sh("rm -r '%s/d/.build-id' && cp '%s' '%s/d/tdata-single'", t, nopie, t);
	free(nopie);
	c = su_modcache_new(&o);
	m = su_modcache_get(c, &e2);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	ck_assert_str_eq(m->elf_path, src);
	struct su_modcache_stats st;
	su_modcache_get_stats(c, &st);
	ck_assert_uint_eq(st.mismatched_files, 1);
	su_modcache_free(c);
	free(ddir); free(rel); free(src);
	rm_rf(t);
}
END_TEST

START_TEST(debug_file_alone_stands_in)
{
	char *src = build_path("testdata/tdata-single");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(src, id);
	char *t = new_tmpdir();
	char *rel = id_rel(id, len);
	char *dbg = xasprintf("%s/.build-id/%s.debug", t, rel);
	sh("mkdir -p \"$(dirname '%s')\" && objcopy --only-keep-debug '%s' '%s'", dbg, src, dbg);
	const char *dirs[] = { t, NULL };
	struct su_debuginfo_opts o = quiet_opts();
	o.debug_dirs = dirs;
	struct su_modcache *c = su_modcache_new(&o);
	struct su_map_entry e = entry_for("/nonexistent/tdata-single", id, len);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	ck_assert_int_eq(m->debug_only, 1);
	ck_assert_str_eq(m->elf_path, dbg);
	check_bias0(m, src, "level_c");
	check_dwarf(m, src, NULL);
	su_modcache_free(c);
	/* A debug file is never taken for the binary when the binary is there. */
	struct su_map_entry e2 = entry_for(src, id, len);
	c = su_modcache_new(&o);
	m = su_modcache_get(c, &e2);
	ck_assert_int_eq(m->debug_only, 0);
	ck_assert_str_eq(m->elf_path, src);
	su_modcache_free(c);
	free(dbg); free(rel); free(src);
	rm_rf(t);
}
END_TEST

START_TEST(symfs_prefix)
{
	char *src = build_path("testdata/tdata-single");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(src, id);
	char *t = new_tmpdir();
	sh("mkdir -p '%s/usr/libexec/stackcap-test' && cp '%s' '%s/usr/libexec/stackcap-test/tdata-single'",
	   t, src, t);
	const char *rec = "/usr/libexec/stackcap-test/tdata-single";
	struct su_debuginfo_opts o = quiet_opts();
	struct su_map_entry e = entry_for(rec, id, len);
	struct su_modcache *c = su_modcache_new(&o);
	ck_assert_int_eq(su_modcache_get(c, &e)->status, SU_MODULE_NOT_FOUND);
	su_modcache_free(c);
	o.symfs = t;
	c = su_modcache_new(&o);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	char *want = xasprintf("%s%s", t, rec);
	ck_assert_str_eq(m->elf_path, want);
	check_dwarf(m, src, NULL);
	su_modcache_free(c);
	/* [SYMFS]/usr/lib/debug/.build-id/xx/rest.debug for a split binary. */
	sh("cd '%s/usr/libexec/stackcap-test' && objcopy --only-keep-debug tdata-single d && "
	   "strip --strip-debug tdata-single", t);
	char *rel = id_rel(id, len);
	char *dbg = xasprintf("%s/usr/lib/debug/.build-id/%s.debug", t, rel);
	sh("mkdir -p \"$(dirname '%s')\" && mv '%s/usr/libexec/stackcap-test/d' '%s'", dbg, t, dbg);
	o.no_system_dirs = 0;
	c = su_modcache_new(&o);
	m = su_modcache_get(c, &e);
	check_dwarf(m, src, dbg);
	su_modcache_free(c);
	free(dbg); free(rel); free(want); free(src);
	rm_rf(t);
}
END_TEST

START_TEST(debuginfod_file_server)
{
	/* libdebuginfod takes file:// URLs: a server without a network. */
	char *src = build_path("testdata/tdata-single");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(src, id);
	char hex[2 * SU_BUILD_ID_MAX + 1];
	for (size_t i = 0; i < len; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	char *t = new_tmpdir();
	sh("mkdir -p '%s/srv/buildid/%s' && cp '%s' '%s/srv/buildid/%s/executable'",
	   t, hex, src, t, hex);
	char *url = xasprintf("file://%s/srv", t);
	char *cachedir = xasprintf("%s/cache", t);
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", cachedir, 1);
	struct su_debuginfo_opts o = quiet_opts();
	struct su_map_entry e = entry_for("/nonexistent/tdata-single", id, len);
	struct su_modcache *c = su_modcache_new(&o);
	ck_assert_int_eq(su_modcache_get(c, &e)->status, SU_MODULE_NOT_FOUND);
	su_modcache_free(c);
#ifdef HAVE_DEBUGINFOD
	o.no_debuginfod = 0;
	c = su_modcache_new(&o);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	ck_assert_msg(strncmp(m->elf_path, cachedir, strlen(cachedir)) == 0, "%s", m->elf_path);
	check_dwarf(m, src, NULL);
	su_modcache_free(c);
	/* A split binary: its debug file from the server. */
	make_split(t, src);
	sh("mv '%s/bin/tdata-single.debug' '%s/srv/buildid/%s/debuginfo'", t, t, hex);
	char *bin = xasprintf("%s/bin/tdata-single", t);
	struct su_map_entry e2 = entry_for(bin, id, len);
	c = su_modcache_new(&o);
	m = su_modcache_get(c, &e2);
	ck_assert_str_eq(m->elf_path, bin);
	check_dwarf(m, src, NULL);
	ck_assert_msg(strncmp(m->debug_path, cachedir, strlen(cachedir)) == 0, "%s", m->debug_path);
	su_modcache_free(c);
	free(bin);
#endif
	free(url); free(cachedir); free(src);
	rm_rf(t);
}
END_TEST

/* This process's vDSO image, found through /proc/self/maps. */
static void own_vdso(const void **start, size_t *size)
{
	FILE *f = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(f);
	char line[512];
	*start = NULL;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			*start = (const void *)lo;
			*size = hi - lo;
		}
	}
	fclose(f);
	ck_assert_msg(*start != NULL, "no [vdso] in /proc/self/maps");
}

/* The build-id of this process's vDSO into ID (its length) and, when FUNC
 * is not NULL, the address of __vdso_clock_gettime. */
static size_t own_vdso_build_id_func(uint8_t *id, uint64_t *funcp)
{
	const void *start;
	size_t size = 0;
	own_vdso(&start, &size);
	ck_assert(elf_version(EV_CURRENT) != EV_NONE);
	char *copy = malloc(size);
	memcpy(copy, start, size);
	Elf *elf = elf_memory(copy, size);
	ck_assert_ptr_nonnull(elf);
	/* Build-id note and a symbol, read here with libelf. */
	size_t len = 0;
	uint64_t func = 0;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		gelf_getshdr(scn, &sh);
		Elf_Data *d = elf_getdata(scn, NULL);
		if (sh.sh_type == SHT_NOTE) {
			size_t off = 0, noff, doff;
			GElf_Nhdr nh;
			while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0)
				if (nh.n_type == NT_GNU_BUILD_ID && nh.n_descsz <= SU_BUILD_ID_MAX) {
					memcpy(id, (char *)d->d_buf + doff, nh.n_descsz);
					len = nh.n_descsz;
				}
		} else if (sh.sh_type == SHT_DYNSYM) {
			for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym sym;
				gelf_getsym(d, (int)i, &sym);
				const char *n = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (n && strcmp(n, "__vdso_clock_gettime") == 0)
					func = sym.st_value;
			}
		}
	}
	elf_end(elf);
	free(copy);
	ck_assert_uint_gt(len, 0);
	ck_assert_uint_ne(func, 0);
	if (funcp)
		*funcp = func;
	return len;
}

static size_t own_vdso_build_id(uint8_t *id)
{
	return own_vdso_build_id_func(id, NULL);
}

START_TEST(vdso_matching_build_id)
{
	uint8_t id[SU_BUILD_ID_MAX];
	uint64_t func = 0;
	size_t len = own_vdso_build_id_func(id, &func);

	struct su_debuginfo_opts o = quiet_opts();
	struct su_modcache *c = su_modcache_new(&o);
	struct su_map_entry e = entry_for("[vdso]", id, len);
	e.flags = SU_MAP_VDSO;
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	ck_assert_int_eq(m->is_vdso, 1);
	ck_assert_str_eq(m->elf_path, "[vdso]");
	check_sym(m, func, "__vdso_clock_gettime");
	/* Another kernel's vDSO: not found. */
	id[0] ^= 1;
	struct su_map_entry e2 = entry_for("[vdso]", id, len);
	e2.flags = SU_MAP_VDSO;
	ck_assert_int_eq(su_modcache_get(c, &e2)->status, SU_MODULE_NOT_FOUND);
	struct su_map_entry e3 = entry_for("[vdso]", NULL, 0);
	e3.flags = SU_MAP_VDSO;
	ck_assert_int_eq(su_modcache_get(c, &e3)->status, SU_MODULE_NOT_FOUND);
	su_modcache_free(c);
}
END_TEST

/* Open fds of this process on files under DIR or testdata/, or memfds. */
static int open_fds(const char *dir)
{
	int st;
	char *cmd = xasprintf("ls -l /proc/$PPID/fd | grep -c -e '%s' -e /testdata/ -e memfd:", dir);
	char *out = run_cmd(cmd, &st);
	free(cmd);
	int n = atoi(out);
	free(out);
	return n;
}

START_TEST(no_fd_left_open)
{
	char *src = build_path("testdata/tdata-single");
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len = elf_build_id(src, id);
	char *t = new_tmpdir();
	make_split(t, src);
	char *bin = xasprintf("%s/bin/tdata-single", t);
	for (int round = 0; round < 3; round++) {
		struct su_debuginfo_opts o = quiet_opts();
		struct su_modcache *c = su_modcache_new(&o);
		struct su_map_entry e = entry_for(bin, id, len);
		struct su_module *m = su_modcache_get(c, &e);
		ck_assert_int_eq(m->status, SU_MODULE_OK);
		ck_assert_ptr_nonnull(dwfl_module_getdwarf(m->mod, &(Dwarf_Addr){0}));
		id[0] ^= 1;
		struct su_map_entry e2 = entry_for(src, id, len);
		ck_assert_int_eq(su_modcache_get(c, &e2)->status, SU_MODULE_BUILD_ID_MISMATCH);
		id[0] ^= 1;
		struct su_map_entry ev = entry_for("[vdso]", NULL, 0);
		ev.flags = SU_MAP_VDSO;
		ev.build_id_len = (uint8_t)own_vdso_build_id(ev.build_id);
		ck_assert_int_eq(su_modcache_get(c, &ev)->status, SU_MODULE_OK);
		ck_assert_int_ge(open_fds(t), 2); /* the check sees them */
		su_modcache_free(c);
	}
	ck_assert_int_eq(open_fds(t), 0);
	free(bin); free(src);
	rm_rf(t);
}
END_TEST


/* ---- compressed debug files inflated once, ahead ------------------------- */

/* Sections of PATH still compressed (SHF_COMPRESSED), or -1: no ELF. */
static int compressed_sections(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	int n = elf && elf_kind(elf) == ELF_K_ELF ? 0 : -1;
	Elf_Scn *scn = NULL;
	while (n >= 0 && (scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED))
			n++;
	}
	elf_end(elf);
	close(fd);
	return n;
}

/* In T: dbg/.build-id/xx/rest.debug, tdata-single's DWARF with its
 * sections zlib-compressed (as Debian's debug packages ship them), and
 * bin/tdata-single without it.  *ID, *LEN: its build-id.  The debug file's
 * path (free it). */
static char *make_compressed_debug(const char *t, uint8_t *id, size_t *len)
{
	char *src = build_path("testdata/tdata-single");
	*len = elf_build_id(src, id);
	char *rel = id_rel(id, *len);
	char *dbg = xasprintf("%s/dbg/.build-id/%s.debug", t, rel);
	sh("mkdir -p \"$(dirname '%s')\" '%s/bin' && objcopy --only-keep-debug --compress-debug-sections=zlib '%s' '%s' && "
	   "cp '%s' '%s/bin/tdata-single' && strip --strip-debug '%s/bin/tdata-single'",
	   dbg, t, src, dbg, src, t, t);
	ck_assert_int_ge(compressed_sections(dbg), 3);
	free(rel);
	free(src);
	return dbg;
}

/* The one inflated copy of ID's debug file in CACHE (free it), or NULL. */
static char *the_copy(const char *cache, const uint8_t *id, size_t len)
{
	char *rel = id_rel(id, len);
	int st;
	char *cmd = xasprintf("ls '%s/debug/%s'-*.debug 2>/dev/null", cache, rel);
	char *out = run_cmd(cmd, &st);
	free(cmd);
	free(rel);
	char *nl = out ? strchr(out, '\n') : NULL;
	if (!out || st != 0 || !nl || nl[1]) { /* none, or more than one */
		free(out);
		return NULL;
	}
	*nl = 0;
	return out;
}

/* The threads inflating ahead (inflate-ahead.h) write the copy a module's
 * lookup then reads: by build-id, from --debug-dir; a build-id with no
 * debug file anywhere, or no cache directory, is nothing to do. */
START_TEST(inflate_ahead_writes_the_copy)
{
	char *t = new_tmpdir();
	uint8_t id[2][SU_BUILD_ID_MAX] = { { 0 } }, lens[2];
	size_t len;
	char *dbg = make_compressed_debug(t, id[0], &len);
	lens[0] = (uint8_t)len;
	memset(id[1], 0xab, 20); /* no file has it */
	lens[1] = 20;
	char *ddir = xasprintf("%s/dbg", t), *cache = xasprintf("%s/cache", t);
	const char *dirs[] = { ddir, NULL };
	struct su_debuginfo_opts o = quiet_opts();
	o.debug_dirs = dirs;
	ck_assert_ptr_null(su_inflate_ahead_start(&o, (const uint8_t (*)[SU_BUILD_ID_MAX])id, lens, 2, 2));
	o.inflate_cache_dir = cache;
	ck_assert_ptr_null(su_inflate_ahead_start(&o, (const uint8_t (*)[SU_BUILD_ID_MAX])id, lens, 0, 2));
	struct su_inflate_ahead *a = su_inflate_ahead_start(&o, (const uint8_t (*)[SU_BUILD_ID_MAX])id, lens, 2, 2);
	ck_assert_ptr_nonnull(a);
	su_inflate_ahead_stop(a, 1);
	char *copy = the_copy(cache, id[0], len);
	ck_assert_msg(copy != NULL, "no single inflated copy under %s", cache);
	ck_assert_int_eq(compressed_sections(copy), 0);
	struct stat before, after;
	ck_assert_int_eq(stat(copy, &before), 0);
	/* The module's lookup finds it: DWARF from the debug file, the copy
	 * not written again. */
	struct su_modcache *c = su_modcache_new(&o);
	char *bin = xasprintf("%s/bin/tdata-single", t);
	struct su_map_entry e = entry_for(bin, id[0], len);
	struct su_module *m = su_modcache_get(c, &e);
	ck_assert_int_eq(m->status, SU_MODULE_OK);
	char *src = build_path("testdata/tdata-single");
	check_dwarf(m, src, dbg);
	su_modcache_free(c);
	ck_assert_int_eq(stat(copy, &after), 0);
	ck_assert_uint_eq(before.st_ino, after.st_ino);
	su_inflate_ahead_stop(NULL, 0);
	free(src); free(bin); free(copy); free(ddir); free(cache); free(dbg);
	rm_rf(t);
}
END_TEST

struct inflate_race {
	pthread_barrier_t *go;
	const char *cache;
	int src;
	int fd;
};

static void *inflate_racer(void *arg)
{
	struct inflate_race *r = arg;
	pthread_barrier_wait(r->go);
	r->fd = su_inflate_cached(r->cache, r->src);
	return NULL;
}

/* Threads wanting one copy at once (the thread inflating ahead, the reader,
 * the -j workers): one writes it, the others wait for it and get the same
 * file, not a copy each written over the one before. */
START_TEST(inflated_once_for_threads_at_once)
{
	char *t = new_tmpdir();
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len;
	char *dbg = make_compressed_debug(t, id, &len);
	char *cache = xasprintf("%s/cache", t);
	enum { N = 4 };
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, N);
	struct inflate_race r[N];
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		r[i] = (struct inflate_race){ .go = &go, .cache = cache, .src = open(dbg, O_RDONLY | O_CLOEXEC), .fd = -1 };
		ck_assert_int_ge(r[i].src, 0);
		ck_assert_int_eq(pthread_create(&th[i], NULL, inflate_racer, &r[i]), 0);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
	char *copy = the_copy(cache, id, len);
	ck_assert_ptr_nonnull(copy);
	struct stat want;
	ck_assert_int_eq(stat(copy, &want), 0);
	for (int i = 0; i < N; i++) {
		struct stat st;
		ck_assert_msg(r[i].fd >= 0, "thread %d got no copy", i);
		ck_assert_int_eq(fstat(r[i].fd, &st), 0);
		ck_assert_msg(st.st_ino == want.st_ino && st.st_nlink == 1,
			      "thread %d reads another file than the copy (inode %llu, %llu links; the copy's %llu)", i,
			      (unsigned long long)st.st_ino, (unsigned long long)st.st_nlink,
			      (unsigned long long)want.st_ino);
		close(r[i].fd);
		close(r[i].src);
	}
	free(copy); free(cache); free(dbg);
	rm_rf(t);
}
END_TEST

/* Section NAME's bytes in PATH (*LEN), NULL when it has none (or NOBITS). */
static void *section_bytes(const char *path, const char *name, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(elf);
	size_t shstr;
	ck_assert_int_eq(elf_getshdrstrndx(elf, &shstr), 0);
	void *out = NULL;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstr, sh.sh_name) : NULL;
		if (!n || strcmp(n, name) || sh.sh_type == SHT_NOBITS)
			continue;
		Elf_Data *d = elf_rawdata(scn, NULL);
		ck_assert_ptr_nonnull(d);
		*len = d->d_size;
		out = malloc(d->d_size ? d->d_size : 1);
		memcpy(out, d->d_buf, d->d_size);
	}
	elf_end(elf);
	close(fd);
	return out;
}

/* The copy's sections (inflated by libdeflate, inflate-cache.c) hold what
 * objcopy --decompress-debug-sections (zlib, through bfd) gives, byte for
 * byte; a compressed section whose header lies about its size leaves no
 * copy (the file is read as it is), and nothing breaks. */
START_TEST(inflated_as_objcopy_does)
{
	char *t = new_tmpdir();
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len;
	char *dbg = make_compressed_debug(t, id, &len);
	char *ref = xasprintf("%s/ref.debug", t), *cache = xasprintf("%s/cache", t);
	sh("objcopy --decompress-debug-sections '%s' '%s'", dbg, ref);
	int fd = open(dbg, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	int cfd = su_inflate_cached(cache, fd);
	ck_assert_int_ge(cfd, 0);
	close(cfd);
	close(fd);
	char *copy = the_copy(cache, id, len);
	ck_assert_ptr_nonnull(copy);
	static const char *const names[] = { ".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_aranges" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t a_len = 0, b_len = 0;
		void *a = section_bytes(ref, names[i], &a_len), *b = section_bytes(copy, names[i], &b_len);
		ck_assert_msg(a && b, "%s: in objcopy's %d, in the copy %d", names[i], a != NULL, b != NULL);
		ck_assert_msg(a_len == b_len && memcmp(a, b, a_len) == 0, "%s: %zu bytes, objcopy's %zu, or other bytes",
			      names[i], b_len, a_len);
		free(a);
		free(b);
	}
	/* .debug_info's compression header (Elf64_Chdr: type, reserved,
	 * size, alignment) made to claim 4 GiB more than it holds. */
	int st;
	char *cmd = xasprintf("readelf -S -W '%s' | awk '$2 == \".debug_info\" { print $5 }'", dbg);
	char *off = run_cmd(cmd, &st);
	free(cmd);
	ck_assert_msg(st == 0 && off && *off, "no .debug_info offset");
	uint64_t const at = strtoull(off, NULL, 16);
	free(off);
	char *bad = xasprintf("%s/bad.debug", t);
	sh("cp '%s' '%s'", dbg, bad);
	fd = open(bad, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	uint64_t size;
	ck_assert_int_eq(pread(fd, &size, 8, (off_t)at + 8), 8);
	size += 1ull << 32;
	ck_assert_int_eq(pwrite(fd, &size, 8, (off_t)at + 8), 8);
	char *cache2 = xasprintf("%s/cache2", t);
	ck_assert_int_lt(su_inflate_cached(cache2, fd), 0);
	close(fd);
	ck_assert_ptr_null(the_copy(cache2, id, len));
	free(cache2); free(bad); free(copy); free(cache); free(ref); free(dbg);
	rm_rf(t);
}
END_TEST

/* A run that keeps no copy (--no-cache, or a cache that cannot be
 * written) gets one in memory (a memfd), inflated as a kept one is, not
 * the compressed file for libdw to inflate with zlib at each open. */
START_TEST(inflated_in_memory_without_a_cache)
{
	char *t = new_tmpdir();
	uint8_t id[SU_BUILD_ID_MAX];
	size_t len;
	char *dbg = make_compressed_debug(t, id, &len);
	int fd = open(dbg, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	const char *dirs[] = { NULL, "/proc/no-such-cache" };
	for (size_t i = 0; i < 2; i++) {
		int const cfd = su_inflate_cached(dirs[i], fd);
		ck_assert_msg(cfd >= 0, "cache %s: no copy", dirs[i] ? dirs[i] : "(none)");
		char link[64], target[256] = { 0 };
		snprintf(link, sizeof(link), "/proc/self/fd/%d", cfd);
		ck_assert_int_gt(readlink(link, target, sizeof(target) - 1), 0);
		ck_assert_msg(strncmp(target, "/memfd:", 7) == 0, "cache %s: the copy is %s", dirs[i] ? dirs[i] : "(none)",
			      target);
		ck_assert_int_eq(compressed_sections(link), 0);
		close(cfd);
	}
	/* Nothing compressed: nothing to inflate, the file as it is. */
	char *src = build_path("testdata/tdata-single");
	int const plain = open(src, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(plain, 0);
	ck_assert_int_eq(su_inflate_cached(NULL, plain), -1);
	close(plain);
	close(fd);
	free(src); free(dbg);
	rm_rf(t);
}
END_TEST

Suite *debuginfo_suite(void);
Suite *debuginfo_suite(void)
{
	Suite *s = suite_create("debuginfo");
	TCase *tc = tcase_create("modules");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, found_by_path_with_its_build_id);
	tcase_add_test(tc, shared_object_at_bias_0);
	tcase_add_test(tc, et_exec_at_bias_0);
	tcase_add_test(tc, file_bias_from_program_headers);
	tcase_add_test(tc, wrong_build_id_is_never_used);
	tcase_add_test(tc, missing_file_not_found);
	tcase_add_test(tc, no_build_id_recorded_uses_path);
	tcase_add_test(tc, anonymous_no_file);
	tcase_add_test(tc, finalizers_run_on_free);
	tcase_add_test(tc, debug_file_in_debug_dir_build_id_tree);
	tcase_add_test(tc, debug_file_by_debuglink);
	tcase_add_test(tc, debug_dir_before_recorded_path);
	tcase_add_test(tc, debug_file_alone_stands_in);
	tcase_add_test(tc, symfs_prefix);
	tcase_add_test(tc, debuginfod_file_server);
	tcase_add_test(tc, vdso_matching_build_id);
	tcase_add_test(tc, no_fd_left_open);
	tcase_add_test(tc, inflate_ahead_writes_the_copy);
	tcase_add_test(tc, inflated_once_for_threads_at_once);
	tcase_add_test(tc, inflated_as_objcopy_does);
	tcase_add_test(tc, inflated_in_memory_without_a_cache);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(debuginfo_suite)
