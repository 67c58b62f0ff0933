/* SPDX-License-Identifier: MIT */
/* capture/cpython-layout.h against the DWARF of the python3 on this machine
 * (Debian's python3.11 and its debug file from python3.11-dbg, found by
 * build-id): every offset the CPython runtime unwinder reads, field by
 * field.  Fails, naming what to install, when the debug file is missing.
 * CPY_LAYOUT_VERSION=3.13 CPY_LAYOUT_ROOT=DIR checks the 3.13 row against
 * DIR/usr/bin/python3.13 instead (tests/python-new.sh, on a trixie
 * chroot): the fields _Py_DebugOffsets does not publish, and the row's
 * copies of those it does. */
#include <check.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/check-main.h"
#include "capture/cpython-layout.h"

static char PYTHON[512] = "/usr/bin/python3.11";
static const char *root = "";          /* CPY_LAYOUT_ROOT */
static unsigned want = 0x030b;          /* CPY_LAYOUT_VERSION */
static const char *want_s = "3.11";

static Dwarf *dw;
static int fd = -1;
static char why[2048];

/* The debug file of PYTHON by its build-id. */
static void open_debug(void)
{
	if (dw || why[0])
		return;
	const char *r = getenv("CPY_LAYOUT_ROOT"), *v = getenv("CPY_LAYOUT_VERSION");
	unsigned maj, min;
	if (v && sscanf(v, "%u.%u", &maj, &min) == 2) {
		want = maj << 8 | min;
		want_s = v;
	}
	root = r ? r : "";
	snprintf(PYTHON, sizeof(PYTHON), "%s/usr/bin/python%s", root, want_s);
	int const efd = open(PYTHON, O_RDONLY);
	elf_version(EV_CURRENT);
	Elf *e = efd >= 0 ? elf_begin(efd, ELF_C_READ, NULL) : NULL;
	if (!e) {
		snprintf(why, sizeof(why), "%s missing: apt-get install python%s", PYTHON, want_s);
		return;
	}
	uint8_t id[64];
	size_t idlen = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn)) && !idlen) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Nhdr nh;
		size_t off = 0, no, dof;
		while (d && (off = gelf_getnote(d, off, &nh, &no, &dof)) > 0)
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_descsz <= sizeof(id)) {
				memcpy(id, (char *)d->d_buf + dof, nh.n_descsz);
				idlen = nh.n_descsz;
			}
	}
	elf_end(e);
	close(efd);
	char path[1024];
	size_t p = (size_t)snprintf(path, sizeof(path) - 128, "%s/usr/lib/debug/.build-id/", root);
	for (size_t i = 0; i < idlen; i++) {
		p += (size_t)snprintf(path + p, sizeof(path) - p, "%02x", id[i]);
		if (i == 0)
			path[p++] = '/';
	}
	snprintf(path + p, sizeof(path) - p, ".debug");
	fd = open(path, O_RDONLY);
	dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	if (!dw)
		snprintf(why, sizeof(why), "no debug file %s for %s: apt-get install python%s-dbg "
			 "(scripts/install-deps.sh; same version as python%s)", path, PYTHON, want_s, want_s);
}

/* The struct named NAME (a struct tag, or a typedef of an anonymous one). */
static int find_struct(const char *name, Dwarf_Die *out)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, d;
		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &d) == 0) {
			do {
				int const tag = dwarf_tag(&d);
				const char *n = dwarf_diename(&d);
				if (!n || strcmp(n, name))
					continue;
				if (tag == DW_TAG_structure_type && dwarf_hasattr(&d, DW_AT_byte_size)) {
					*out = d;
					return 0;
				}
				Dwarf_Attribute a;
				Dwarf_Die t;
				if (tag == DW_TAG_typedef && dwarf_formref_die(dwarf_attr(&d, DW_AT_type, &a), &t) &&
				    dwarf_tag(&t) == DW_TAG_structure_type && dwarf_hasattr(&t, DW_AT_byte_size)) {
					*out = t;
					return 0;
				}
			} while (dwarf_siblingof(&d, &d) == 0);
		}
		off = next;
	}
	return -1;
}

/* Offset of member PATH ("a.b": nested) in struct S, or -1. */
static long member(const char *s, const char *path)
{
	Dwarf_Die st;
	if (find_struct(s, &st))
		return -1;
	long total = 0;
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, ".")) {
		Dwarf_Die m;
		int found = 0;
		if (dwarf_child(&st, &m) != 0)
			return -1;
		do {
			const char *n = dwarf_diename(&m);
			if (dwarf_tag(&m) != DW_TAG_member || !n || strcmp(n, tok))
				continue;
			Dwarf_Attribute a;
			Dwarf_Word loc;
			if (dwarf_formudata(dwarf_attr(&m, DW_AT_data_member_location, &a), &loc))
				return -1;
			total += (long)loc;
			Dwarf_Die t;
			if (dwarf_formref_die(dwarf_attr(&m, DW_AT_type, &a), &t)) {
				while (dwarf_tag(&t) == DW_TAG_typedef &&
				       dwarf_formref_die(dwarf_attr(&t, DW_AT_type, &a), &t))
					;
				st = t;
			}
			found = 1;
			break;
		} while (dwarf_siblingof(&m, &m) == 0);
		if (!found)
			return -1;
	}
	return total;
}

static long size_of(const char *s)
{
	Dwarf_Die st;
	Dwarf_Attribute a;
	Dwarf_Word v;
	if (find_struct(s, &st) || dwarf_formudata(dwarf_attr(&st, DW_AT_byte_size, &a), &v))
		return -1;
	return (long)v;
}

/* The row under test. */
static const struct cpy_layout *L311(void)
{
	for (size_t i = 0; i < sizeof(cpy_layouts) / sizeof(cpy_layouts[0]); i++)
		if (cpy_layouts[i].version == want)
			return &cpy_layouts[i];
	return NULL;
}

#define NEED_DWARF()                                  \
	do {                                          \
		open_debug();                         \
		ck_assert_msg(dw, "%s", why);         \
		ck_assert_msg(L311(), "no row for %s", want_s); \
	} while (0)
#define SAME(field, dwarf_value)                                                                  \
	do {                                                                                      \
		long const v_ = (dwarf_value);                                                     \
		ck_assert_msg(v_ >= 0 && (long)L311()->field == v_, "%s: table %ld, DWARF %ld (%s)", \
			      #field, (long)L311()->field, v_, #dwarf_value);                      \
	} while (0)

START_TEST(thread_state)
{
	NEED_DWARF();
	ck_assert_int_eq(member("_Py_tss_t", "_key"), 4);
	if (want == 0x030b) {
		SAME(rt_tss, member("pyruntimestate", "gilstate.autoTSSkey"));
		SAME(ts_cframe, member("_ts", "cframe"));
		SAME(cf_current, member("_PyCFrame", "current_frame"));
	} else {
		SAME(rt_tss, member("pyruntimestate", "autoTSSkey"));
		SAME(ts_cframe, member("_ts", "current_frame"));
		ck_assert_uint_eq(L311()->cf_current, CPY_NONE);
		ck_assert_int_eq(L311()->debug_offsets, 1);
		ck_assert_int_eq(member("pyruntimestate", "debug_offsets"), 0);
	}
	SAME(ts_chunk, member("_ts", "datastack_chunk"));
	SAME(ts_top, member("_ts", "datastack_top"));
	ck_assert_int_eq(L311()->ts_top, L311()->ts_chunk + 8); /* read together */
	SAME(ck_previous, member("_stack_chunk", "previous"));
	SAME(ck_data, member("_stack_chunk", "data"));
}
END_TEST

START_TEST(frame)
{
	NEED_DWARF();
	SAME(fr_previous, member("_PyInterpreterFrame", "previous"));
	if (want == 0x030b) {
		SAME(fr_code, member("_PyInterpreterFrame", "f_code"));
		SAME(fr_instr, member("_PyInterpreterFrame", "prev_instr"));
		SAME(fr_entry, member("_PyInterpreterFrame", "is_entry"));
		ck_assert_uint_eq(L311()->fr_owner, CPY_NONE);
		ck_assert(L311()->fr_lo <= L311()->fr_code && L311()->fr_hi > L311()->fr_entry);
		/* Nothing past the owner byte is read: no local variable. */
		SAME(fr_hi, member("_PyInterpreterFrame", "owner"));
	} else {
		SAME(fr_code, member("_PyInterpreterFrame", "f_executable"));
		SAME(fr_instr, member("_PyInterpreterFrame", "instr_ptr"));
		SAME(fr_owner, member("_PyInterpreterFrame", "owner"));
		ck_assert_uint_eq(L311()->fr_entry, CPY_NONE);
		ck_assert(L311()->fr_lo <= L311()->fr_code && L311()->fr_hi == L311()->fr_owner + 1);
		/* Nothing of the locals is read. */
		ck_assert_int_le(L311()->fr_hi, member("_PyInterpreterFrame", "localsplus"));
	}
	ck_assert(L311()->fr_lo <= L311()->fr_previous && L311()->fr_lo <= L311()->fr_instr);
}
END_TEST

START_TEST(code)
{
	NEED_DWARF();
	SAME(co_adaptive, member("PyCodeObject", "co_code_adaptive"));
	SAME(co_firstlineno, member("PyCodeObject", "co_firstlineno"));
	SAME(co_filename, member("PyCodeObject", "co_filename"));
	SAME(co_qualname, member("PyCodeObject", "co_qualname"));
	SAME(co_linetable, member("PyCodeObject", "co_linetable"));
	SAME(co_lo, member("PyCodeObject", "ob_base.ob_base.ob_type"));
	if (want == 0x030b) {
		SAME(co_skip_lo, member("PyCodeObject", "co_warmup"));
		SAME(co_skip_hi, member("PyCodeObject", "co_argcount"));
		ck_assert_int_eq(L311()->co_shim_flag, 0);
	} else {
		SAME(co_flags, member("PyCodeObject", "co_flags"));
		ck_assert_int_eq(L311()->co_shim_flag, 0x2000000); /* CO_NO_MONITORING_EVENTS */
		ck_assert_int_eq(L311()->co_skip_lo, L311()->co_hi); /* no skip */
		ck_assert_int_eq(L311()->co_skip_hi, L311()->co_hi);
	}
	SAME(co_hi, member("PyCodeObject", "co_weakreflist"));
}
END_TEST

START_TEST(strings)
{
	NEED_DWARF();
	SAME(str_length, member("PyASCIIObject", "length"));
	SAME(str_state, member("PyASCIIObject", "state"));
	SAME(str_ascii_data, size_of("PyASCIIObject"));
	SAME(str_compact_data, size_of("PyCompactUnicodeObject"));
	SAME(bytes_size, member("PyBytesObject", "ob_base.ob_size"));
	SAME(bytes_data, member("PyBytesObject", "ob_sval"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cpython-layout");
	TCase *t = tcase_create("row");
	tcase_set_timeout(t, 120);
	tcase_add_test(t, thread_state);
	tcase_add_test(t, frame);
	tcase_add_test(t, code);
	tcase_add_test(t, strings);
	suite_add_tcase(s, t);
	return s;
}

CHECK_MAIN(suite)
