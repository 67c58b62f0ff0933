/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "trace/trace-model.h"
#include "tests/unit/elf-util.h"

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	return s;
}

char *build_path(const char *rel)
{
	const char *top = getenv("top_builddir");
	return xasprintf("%s/%s", top && *top ? top : ".", rel);
}

static Elf *open_elf(const char *path, int *fd)
{
	ck_assert(elf_version(EV_CURRENT) != EV_NONE);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(*fd >= 0, "open %s: %s", path, strerror(errno));
	Elf *elf = elf_begin(*fd, ELF_C_READ, NULL);
	ck_assert_msg(elf != NULL, "elf_begin %s: %s", path, elf_errmsg(-1));
	return elf;
}

size_t elf_build_id(const char *path, uint8_t *id)
{
	int fd;
	Elf *elf = open_elf(path, &fd);
	size_t len = 0;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn && !len; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		ck_assert_ptr_nonnull(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t off = 0, noff, doff;
		GElf_Nhdr nh;
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((char *)d->d_buf + noff, "GNU", 4) == 0 &&
			    nh.n_descsz <= SU_BUILD_ID_MAX) {
				memcpy(id, (char *)d->d_buf + doff, nh.n_descsz);
				len = nh.n_descsz;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	ck_assert_msg(len > 0, "%s has no build-id", path);
	return len;
}

uint64_t elf_func_addr(const char *path, const char *name, uint64_t *size)
{
	int fd;
	Elf *elf = open_elf(path, &fd);
	uint64_t addr = 0;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		ck_assert_ptr_nonnull(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; d && i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC)
				continue;
			const char *s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && strcmp(s, name) == 0 && sym.st_value) {
				addr = sym.st_value;
				if (size)
					*size = sym.st_size;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return addr;
}

int elf_type(const char *path)
{
	int fd;
	Elf *elf = open_elf(path, &fd);
	GElf_Ehdr eh;
	ck_assert_ptr_nonnull(gelf_getehdr(elf, &eh));
	elf_end(elf);
	close(fd);
	return eh.e_type;
}

char *new_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *t = xasprintf("%s/stackcap-sym-XXXXXX", base && *base ? base : "/tmp");
	ck_assert_msg(mkdtemp(t) != NULL, "mkdtemp: %s", strerror(errno));
	return t;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	remove(path);
	return 0;
}

void rm_rf(char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

char *run_cmd(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	ck_assert_msg(p != NULL, "popen %s: %s", cmd, strerror(errno));
	size_t cap = 4096, n = 0, got;
	char *buf = malloc(cap);
	ck_assert_ptr_nonnull(buf);
	while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
		n += got;
		if (cap - n < 1024) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
	}
	buf[n] = '\0';
	int st = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return buf;
}
