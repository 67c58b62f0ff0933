/* SPDX-License-Identifier: MIT */
/* The files a trace's frames need, copied into it (archive.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>

#include "cli/archive.h"
#include "common/ctf-layout.h"
#include "common/grow.h"
#include "common/io.h"

struct archive {
	char dir[4400];          /* TRACE/debug/.build-id */
	uint64_t binaries, debug_files, bytes, had, no_build_id, failed;
	int err;                 /* the first write error */
	char **done;             /* dealt with in this run (each thread opened its own modules) */
	size_t n_done, cap_done;
};

/* PATH made, or there already as a directory: never a symbolic link,
 * which a trace from elsewhere could hold to have files written where it
 * says.  @return 0 or -errno. */
static int real_dir(const char *path)
{
	struct stat st;
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat(path, &st) != 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* DEST dealt with in this run (NULL: not remembered, only counted twice). */
static void remember(struct archive *a, const char *dest)
{
	char *copy = strdup(dest);
	if (copy && !SU_GROW(a->done, a->cap_done, a->n_done + 1))
		a->done[a->n_done++] = copy;
	else
		free(copy);
}

/* DIR/REL (its xx directory made), from FD or, FD < 0, the LEN bytes at
 * IMAGE; written whole under a temporary name, then renamed. */
static int put(struct archive *a, const char *rel, const char *suffix, int fd, const void *image, size_t len)
{
	char dest[4600], tmp[4620];
	snprintf(dest, sizeof(dest), "%s/%s%s", a->dir, rel, suffix);
	for (size_t i = 0; i < a->n_done; i++)
		if (!strcmp(a->done[i], dest))
			return 0;
	struct stat st;
	if (lstat(dest, &st) == 0) {
		a->had++;
		remember(a, dest);
		return 0;
	}
	char *slash = strrchr(dest, '/');
	*slash = 0;
	int const made = real_dir(dest);
	*slash = '/';
	if (made)
		return made;
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", dest);
	int const out = mkstemp(tmp); /* 0600 */
	if (out < 0)
		return -errno;
	uint64_t n = 0;
	int rc = fd >= 0 ? su_copy_fd(fd, out, UINT64_MAX, &n) : su_write_all(out, image, len);
	if (fd < 0 && rc == 0)
		n = len;
	if (close(out) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, dest) != 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	a->bytes += n;
	remember(a, dest);
	return 1;
}

/* The file at PATH (a regular one) to DIR/REL SUFFIX. */
static int put_file(struct archive *a, const char *rel, const char *suffix, const char *path)
{
	int const fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	int const rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? put(a, rel, suffix, fd, NULL, 0) : -EINVAL;
	close(fd);
	return rc;
}

static void note(struct archive *a, int rc, const char *what)
{
	if (rc < 0) {
		a->failed++;
		if (!a->err) {
			a->err = rc;
			fprintf(stderr, PROG ": archive: %s: %s\n", what, strerror(-rc));
		}
	}
}

static void one(void *arg, struct su_module *m)
{
	struct archive *a = arg;
	/* The recorded build-id: what a reader elsewhere looks up.  A file
	 * the trace names by its path alone would never be looked for. */
	const uint8_t *id = m->build_id;
	size_t const len = m->build_id_len;
	if (!len) {
		a->no_build_id++;
		return;
	}
	char rel[2 * SU_BUILD_ID_MAX + 2];
	su_build_id_rel(rel, id, len);
	int rc;
	if (!m->debug_only) {
		if (m->is_vdso || !m->elf_path || !strcmp(m->elf_path, "[vdso]")) {
			/* Our own vDSO: its image, as libdw holds it. */
			Dwarf_Addr bias;
			Elf *elf = m->mod ? dwfl_module_getelf(m->mod, &bias) : NULL;
			size_t size = 0;
			char *raw = elf ? elf_rawfile(elf, &size) : NULL;
			rc = raw && size ? put(a, rel, "", -1, raw, size) : -ENOENT;
		} else {
			rc = put_file(a, rel, "", m->elf_path);
		}
		note(a, rc, m->elf_path ? m->elf_path : m->recorded_path);
		a->binaries += rc > 0;
	}
	const char *dbg = m->debug_only ? m->elf_path : su_module_debug_file(m);
	if (dbg) {
		rc = put_file(a, rel, ".debug", dbg);
		note(a, rc, dbg);
		a->debug_files += rc > 0;
	}
	/* The dwz file its DWARF shares (.gnu_debugaltlink), when found
	 * here: by its own build-id, where a reader looks for it. */
	Dwarf_Addr bias;
	Dwarf *dw = m->mod ? dwfl_module_getdwarf(m->mod, &bias) : NULL;
	const char *alt_name;
	const void *alt_id;
	ssize_t const alt_len = dw ? dwelf_dwarf_gnu_debugaltlink(dw, &alt_name, &alt_id) : -1;
	Dwarf *alt = alt_len > 0 && alt_len <= SU_BUILD_ID_MAX ? dwarf_getalt(dw) : NULL;
	Elf *alt_elf = alt ? dwarf_getelf(alt) : NULL;
	size_t alt_size = 0;
	char *alt_raw = alt_elf ? elf_rawfile(alt_elf, &alt_size) : NULL;
	if (alt_raw && alt_size) {
		su_build_id_rel(rel, alt_id, (size_t)alt_len);
		rc = put(a, rel, ".debug", -1, alt_raw, alt_size);
		note(a, rc, alt_name);
		a->debug_files += rc > 0;
	}
}

int archive_modules(struct worker *workers, unsigned n, const struct options *o)
{
	struct archive a = { 0 };
	char top[4200];
	snprintf(top, sizeof(top), "%s/%s", o->trace, CTF_DEBUG_DIR);
	snprintf(a.dir, sizeof(a.dir), "%s/.build-id", top);
	int rc = real_dir(top);
	if (!rc)
		rc = real_dir(a.dir);
	if (rc) {
		fprintf(stderr, PROG ": archive: cannot make %s: %s\n", a.dir,
			rc == -ENOTDIR ? "not a directory (a symbolic link?)" : strerror(-rc));
		return -1;
	}
	for (unsigned i = 0; i < n; i++)
		su_modcache_each(workers[i].modules, one, &a);
	fprintf(stderr,
		PROG ": archive: %" PRIu64 " binaries and %" PRIu64 " debug files copied into %s (%.1f MB), %" PRIu64
		" there already: the files its samples' frames need, read first by stackunwind wherever the trace "
		"goes\n", a.binaries, a.debug_files, top, (double)a.bytes / 1e6, a.had);
	if (a.no_build_id)
		fprintf(stderr, PROG ": archive: %" PRIu64 " binaries the trace names by their path alone (no build-id "
			"recorded) left out: a reader elsewhere would not look them up (--symfs gives them)\n",
			a.no_build_id);
	if (a.failed)
		fprintf(stderr, PROG ": archive: %" PRIu64 " files could not be copied\n", a.failed);
	for (size_t i = 0; i < a.n_done; i++)
		free(a.done[i]);
	free(a.done);
	return a.failed ? -1 : 0;
}
