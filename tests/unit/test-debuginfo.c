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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

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

Suite *debuginfo_suite(void);
Suite *debuginfo_suite(void)
{
	Suite *s = suite_create("debuginfo");
	TCase *tc = tcase_create("modules");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, found_by_path_with_its_build_id);
	tcase_add_test(tc, shared_object_at_bias_0);
	tcase_add_test(tc, et_exec_at_bias_0);
	tcase_add_test(tc, wrong_build_id_is_never_used);
	tcase_add_test(tc, missing_file_not_found);
	tcase_add_test(tc, no_build_id_recorded_uses_path);
	tcase_add_test(tc, anonymous_no_file);
	tcase_add_test(tc, finalizers_run_on_free);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(debuginfo_suite)
