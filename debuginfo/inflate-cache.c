/* Inflated copies of compressed debug files (inflate-cache.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libdeflate.h>
#include <libelf.h>
#include <elfutils/libdwelf.h>

#include "common/cache-file.h"
#include "common/grow.h"
#include "common/hash.h"
#include "debuginfo/inflate-cache.h"
#include "debuginfo/module.h"

static int has_compressed(Elf *elf)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) && sh.sh_type != SHT_NOBITS)
			return 1;
	}
	return 0;
}

/* PATH if it is an inflated copy of the file with build-id ID: its fd. */
static int open_copy(const char *path, const uint8_t *id, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOATIME);
	if (fd < 0)
		return -1;
	/* Ours only: a copy someone else put there could say anything. */
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return -1;
	}
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *bid = NULL;
	int ok = elf && elf_kind(elf) == ELF_K_ELF &&
		 dwelf_elf_gnu_build_id(elf, &bid) == (ssize_t)len && memcmp(bid, id, len) == 0 &&
		 !has_compressed(elf);
	elf_end(elf);
	if (!ok) {
		close(fd);
		return -1;
	}
	su_cache_file_used(fd, &st);
	return fd;
}

static int copy_fd(int src, int dst)
{
	struct stat st;
	if (fstat(src, &st) != 0)
		return -1;
	char buf[1 << 16];
	off_t off = 0;
	while (off < st.st_size) {
		ssize_t const n = pread(src, buf, sizeof(buf), off);
		if (n <= 0)
			return -1;
		for (ssize_t done = 0; done < n;) {
			ssize_t const w = write(dst, buf + done, (size_t)(n - done));
			if (w <= 0)
				return -1;
			done += w;
		}
		off += n;
	}
	return 0;
}

/* Sections libdw loads (and inflates) when it opens a file, but that no
 * lookup of ours reads: variable locations and macros.  Left out of the
 * copy (SHT_NOBITS): python3.11-dbg's location lists are a quarter of its
 * compressed debug data. */
static int unread_section(const char *name)
{
	static const char *const names[] = { ".debug_loc", ".debug_loclists", ".debug_macro", ".debug_macinfo" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return 1;
	return 0;
}

/* SCN's zlib-compressed contents inflated by libdeflate, in place of
 * libelf's elf_compress (zlib's inflate): 2.3x faster here on Debian's
 * debug files (python3.11-dbg's 110 -> 48 ms, libc's 59 -> 24), the
 * costliest step of a first run.  The inflated bytes (in *BUF, the
 * caller's to free after elf_end) become the section's data.  @return 0,
 * or -1 (nothing changed): not zlib, damaged, or out of memory. */
static int inflate_section(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct libdeflate_decompressor *dd, void **buf)
{
	GElf_Chdr ch;
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t const hdr = gelf_fsize(elf, ELF_T_CHDR, 1, EV_CURRENT);
	if (!dd || !d || !d->d_buf || !hdr || d->d_size < hdr || !gelf_getchdr(scn, &ch) || ch.ch_type != ELFCOMPRESS_ZLIB)
		return -1;
	size_t const in_len = d->d_size - hdr;
	/* Deflate expands 1032x at most: a size past that is a lie. */
	if (ch.ch_size == 0 || ch.ch_size / 1032 > in_len + 1)
		return -1;
	void *out = malloc(ch.ch_size);
	size_t got = 0;
	if (!out || libdeflate_zlib_decompress(dd, (const char *)d->d_buf + hdr, in_len, out, ch.ch_size, &got) !=
			    LIBDEFLATE_SUCCESS || got != ch.ch_size) {
		free(out);
		return -1;
	}
	d->d_buf = out;
	d->d_size = ch.ch_size;
	d->d_type = ELF_T_BYTE;
	d->d_off = 0;
	d->d_align = ch.ch_addralign ? ch.ch_addralign : 1;
	sh->sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
	sh->sh_size = ch.ch_size;
	sh->sh_addralign = d->d_align;
	if (!gelf_update_shdr(scn, sh)) {
		*buf = out; /* set already: freed after elf_end */
		return -1;
	}
	elf_flagdata(d, ELF_C_SET, ELF_F_DIRTY);
	elf_flagscn(scn, ELF_C_SET, ELF_F_DIRTY);
	*buf = out;
	return 0;
}

/* SRC with every compressed section inflated, but those unread_section()
 * names, left out, written to FD (libelf lays the file out again; a debug
 * file is never loaded, so its section offsets are free to move).
 * @return 0 or -1. */
static int inflate_into(int fd, int src)
{
	Elf *elf = NULL;
	/* The inflated sections' buffers, freed after elf_end. */
	void **bufs = NULL;
	size_t n_bufs = 0, cap_bufs = 0;
	struct libdeflate_decompressor *const dd = libdeflate_alloc_decompressor();
	int rc = -1;
	if (copy_fd(src, fd) != 0)
		goto out;
	elf = elf_begin(fd, ELF_C_RDWR, NULL);
	size_t shstrndx;
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0)
		goto out;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		const char *const name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && unread_section(name)) {
			sh.sh_type = SHT_NOBITS;
			sh.sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
			if (!gelf_update_shdr(scn, &sh))
				goto out;
			continue;
		}
		if (!(sh.sh_flags & SHF_COMPRESSED))
			continue;
		if (SU_GROW(bufs, cap_bufs, n_bufs + 1))
			goto out;
		bufs[n_bufs] = NULL;
		int const inflated = inflate_section(elf, scn, &sh, dd, &bufs[n_bufs]) == 0;
		if (bufs[n_bufs] && !inflated)
			goto out; /* half done (freed after elf_end) */
		if (bufs[n_bufs])
			n_bufs++;
		else if (elf_compress(scn, 0, 0) < 0) /* not zlib (zstd), or damaged: libelf's */
			goto out;
	}
	if (elf_update(elf, ELF_C_WRITE) >= 0)
		rc = 0;
out:
	if (elf)
		elf_end(elf);
	for (size_t i = 0; i < n_bufs; i++)
		free(bufs[i]);
	free(bufs);
	libdeflate_free_decompressor(dd);
	return rc;
}

/* Write PATH: SRC inflated (inflate_into).  Through a temporary file
 * renamed into place: a reader sees the whole copy or none. */
static int write_copy(char *path, int src)
{
	if (su_cache_mkdirs(path, 0755) != 0)
		return -1;
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -1;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -1;
	int ok = inflate_into(fd, src) == 0 && fchmod(fd, 0644) == 0;
	ok = close(fd) == 0 && ok;
	if (ok && rename(tmp, path) == 0)
		return 0;
	unlink(tmp);
	return -1;
}

/* SRC inflated into memory (a memfd: libdw maps it as a file), for a run
 * that keeps no copy: libdeflate's inflate and the unread sections left
 * out, as for a kept copy, not libelf's zlib on every section.  @return
 * its fd, or -1. */
static int inflate_in_memory(int src)
{
	int const fd = memfd_create("stackcap-debug", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (inflate_into(fd, src) == 0 && lseek(fd, 0, SEEK_SET) == 0)
		return fd;
	close(fd);
	return -1;
}

/* The copies this process is writing now (their paths), so that a second
 * thread wanting one waits for it rather than inflates it again: the
 * thread inflating ahead (debuginfo/inflate-ahead.h), the reader and the
 * -j workers meet at the same files in a first run. */
static pthread_mutex_t writing_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t writing_done = PTHREAD_COND_INITIALIZER;
static char **writing;
static size_t n_writing, cap_writing;

static size_t writing_find(const char *path)
{
	size_t i = 0;
	while (i < n_writing && strcmp(writing[i], path) != 0)
		i++;
	return i;
}

/* Claim the writing of PATH: 1; or 0 once another thread that had it is
 * done (its copy is there, or it failed); -1: out of memory. */
static int writing_claim(const char *path)
{
	pthread_mutex_lock(&writing_lock);
	if (writing_find(path) < n_writing) {
		while (writing_find(path) < n_writing)
			pthread_cond_wait(&writing_done, &writing_lock);
		pthread_mutex_unlock(&writing_lock);
		return 0;
	}
	char *const copy = strdup(path);
	if (!copy || SU_GROW(writing, cap_writing, n_writing + 1)) {
		pthread_mutex_unlock(&writing_lock);
		free(copy);
		return -1;
	}
	writing[n_writing++] = copy;
	pthread_mutex_unlock(&writing_lock);
	return 1;
}

static void writing_end(const char *path)
{
	pthread_mutex_lock(&writing_lock);
	size_t const i = writing_find(path);
	if (i < n_writing) {
		free(writing[i]);
		writing[i] = writing[--n_writing];
	}
	if (!n_writing) {
		free(writing);
		writing = NULL;
		cap_writing = 0;
	}
	pthread_cond_broadcast(&writing_done);
	pthread_mutex_unlock(&writing_lock);
}

int su_inflate_cached(const char *dir, int fd)
{
	if (fd < 0)
		return -1;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -1;
	uint8_t id[SU_BUILD_ID_MAX];
	const void *bid = NULL;
	ssize_t const len = elf_kind(elf) == ELF_K_ELF ? dwelf_elf_gnu_build_id(elf, &bid) : -1;
	int const want = len > 0 && len <= SU_BUILD_ID_MAX && has_compressed(elf);
	if (want)
		memcpy(id, bid, (size_t)len);
	elf_end(elf);
	if (!want)
		return -1;
	if (!dir || !*dir)
		return inflate_in_memory(fd);
	/* A build-id is easy to forge: the copy is named by the source file's
	 * identity too, so a hostile debug file read once never stands in
	 * for the true one later (a forged copy is only found again from the
	 * same forged file). */
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -1;
	uint64_t const h = su_file_identity(SU_FNV_SEED, &st);
	char rel[2 * SU_BUILD_ID_MAX + 2], path[PATH_MAX];
	su_build_id_rel(rel, id, (size_t)len);
	if (snprintf(path, sizeof(path), "%s/debug/%s-%016llx.debug", dir, rel, (unsigned long long)h) >=
	    (int)sizeof(path))
		return -1;
	int cfd = open_copy(path, id, (size_t)len);
	if (cfd >= 0)
		return cfd;
	/* Looked for again once claimed too: a thread that wrote it between
	 * the look above and the claim has let go of it by then (two copies
	 * written, the first thread's file replaced under it: seen once on a
	 * fresh machine, tests/unit/test-debuginfo). */
	int const claim = writing_claim(path);
	if (claim >= 0 && (cfd = open_copy(path, id, (size_t)len)) >= 0) {
		if (claim == 1)
			writing_end(path);
		return cfd; /* another thread wrote it meanwhile */
	}
	int const wrote = write_copy(path, fd);
	if (claim == 1)
		writing_end(path);
	if (wrote != 0)
		return inflate_in_memory(fd); /* the cache cannot be written: this run's own */
	char debug[PATH_MAX];
	if (snprintf(debug, sizeof(debug), "%s/debug", dir) < (int)sizeof(debug))
		su_cache_prune(debug, 1); /* its files are under the build-ids' first bytes */
	return open_copy(path, id, (size_t)len);
}

const char *su_inflate_default_dir(void)
{
	static char buf[PATH_MAX];
	const char *d = getenv("STACKCAP_CACHE_DIR");
	if (d)
		return *d ? d : NULL;
	const char *x = getenv("XDG_CACHE_HOME");
	if (x && *x == '/') {
		if (snprintf(buf, sizeof(buf), "%s/stackcap", x) >= (int)sizeof(buf))
			return NULL;
		return buf;
	}
	const char *h = getenv("HOME");
	if (h && *h == '/') {
		if (snprintf(buf, sizeof(buf), "%s/.cache/stackcap", h) >= (int)sizeof(buf))
			return NULL;
		return buf;
	}
	return NULL;
}
