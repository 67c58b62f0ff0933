/* Modules by build-id: finding the right files, one private Dwfl each. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>
#include <elfutils/libdwelf.h>
#ifdef SU_DEBUGINFO_LOCAL_ONLY
/* The recorder's copy (debuginfo/local.mk): local files only, so that
 * stackcap record does not load libdebuginfod's libcurl, gnutls and
 * p11-kit (whose exit handlers deadlocked it under a preloaded ASan). */
#undef HAVE_DEBUGINFOD
#endif
#ifdef HAVE_DEBUGINFOD
#include "debuginfo/debuginfod-load.h"
#endif

#include "common/asan.h"
#include "common/cache-file.h"
#include "common/hash.h"
#include "debuginfo/module.h"
#include "debuginfo/inflate-cache.h"
#include "debuginfo/perf-cache.h"

#define SYSTEM_DEBUG_DIR "/usr/lib/debug"
/* A vDSO is a few pages; anything bigger is not one. */
#define VDSO_MAX_SIZE (1u << 20)

struct modpriv {
	struct su_module pub;
	struct su_modcache *cache;
	char *key;
	struct modpriv *next;      /* hash chain */
	/* Build-id to check debug files against: the recorded one, or the
	 * opened file's own when none was recorded. */
	uint8_t want_id[SU_BUILD_ID_MAX];
	size_t want_id_len;
	char *main_debuglink;      /* .gnu_debuglink name of the binary, or NULL */
	/* The identities of the files its kept answers depend on, worked out
	 * at su_module_kept_path's first call (the unwinder's, then the
	 * symbolizer's). */
	uint64_t kept_files;
	int kept_files_done;
};

struct su_modcache {
	char **debug_dirs;
	char *symfs;
	int no_debuginfod;
	int no_system_dirs;
	char *inflate_dir;         /* inflated copies of compressed debug files, or NULL */
	char *kept_dir;            /* binaries stackcap record kept (su_debuginfo_opts), or NULL */
	char *perf_dir;            /* perf's build-id cache ($PERF_BUILDID_DIR, ~/.debug), or NULL */
	uint64_t lookup_hash;      /* su_module's */
	struct modpriv **buckets;
	size_t nbuckets, count;
	struct su_modcache_stats stats;
	void (*unwind_free)(void *);
	void (*sym_free)(void *);
	void (*unwind_save)(void *);
	void (*sym_save)(void *);
	char *debuginfo_path;      /* for Dwfl_Callbacks: unused by our callbacks */
	Dwfl_Callbacks callbacks;
#ifdef HAVE_DEBUGINFOD
	debuginfod_client *dbgd;
	int dbgd_tried;
#endif
	int vdso_tried;
	unsigned char *vdso;       /* copy of this process's vDSO image */
	size_t vdso_size;
	uint8_t vdso_id[SU_BUILD_ID_MAX];
	size_t vdso_id_len;
};

const char *su_module_status_name(enum su_module_status status)
{
	switch (status) {
	case SU_MODULE_OK: return "ok";
	case SU_MODULE_NOT_FOUND: return "not found";
	case SU_MODULE_BUILD_ID_MISMATCH: return "build-id mismatch";
	case SU_MODULE_NO_FILE: return "no file";
	}
	return "?";
}

/* ---- small helpers ------------------------------------------------------ */

static char *path_join(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *path_join(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* PATH's identity into H; a missing file is an identity too (none). */
static uint64_t identity(uint64_t h, const char *path)
{
	struct stat st;
	if (!path || stat(path, &st) != 0)
		return su_fnv1a_add(h, 0);
	return su_file_identity(su_fnv1a_add(h, 1), &st);
}

typedef int candidate_fn(struct modpriv *p, const char *path, void *arg);
static int debug_candidates(struct modpriv *p, const char *file, const char *link, candidate_fn *try, void *arg);

static int hash_candidate(struct modpriv *p, const char *path, void *h)
{
	(void)p;
	*(uint64_t *)h = identity(*(uint64_t *)h, path);
	return -1; /* on to the next */
}

/* The identities of the files P's kept answers depend on: this program,
 * P's file, its debug file. */
static uint64_t kept_files(struct modpriv *p)
{
	struct su_module *const m = &p->pub;
	Dl_info self;
	const char *const me = dladdr((void *)su_module_kept_path, &self) && self.dli_fname &&
			       strchr(self.dli_fname, '/') ? self.dli_fname : "/proc/self/exe";
	uint64_t h = identity(SU_FNV_SEED, me);
	h = identity(h, m->elf_path);
	/* Which debug file libdw reads is decided by the binary and the
	 * files at the paths it is looked for at: their identities (present
	 * or not) name it without opening any (libdw's opening of a debug
	 * file was most of a warm run's start).  A file debuginfod could
	 * send lies elsewhere: then the one libdw opens is asked for. */
	int dbgd = 0;
#ifdef HAVE_DEBUGINFOD
	const char *const urls = getenv("DEBUGINFOD_URLS");
	dbgd = !p->cache->no_debuginfod && urls && *urls;
#endif
	if (dbgd) {
		Dwarf_Addr bias;
		(void)dwfl_module_getdwarf(m->mod, &bias);
		return identity(su_fnv1a_add(h, 1), m->debug_path);
	}
	h = su_fnv1a_add(h, 2);
	(void)debug_candidates(p, m->elf_path, p->main_debuglink, hash_candidate, &h);
	return h;
}

int su_module_kept_path(struct su_module *m, const char *subdir, const char *magic, uint64_t salt, char *path,
			size_t size)
{
	/* Named by the opened file's build-id: the recorded one, or the
	 * file's own when the trace recorded none (perf record lists only the
	 * files its samples' pcs hit: a callchain's callers, such as libc,
	 * come without, and their answers were worked out again each run). */
	if (!m || !m->cache_dir || !*m->cache_dir || m->is_vdso || m->status != SU_MODULE_OK || !m->mod ||
	    !m->file_id_len || !m->elf_path || m->elf_path[0] != '/')
		return -1;
	struct modpriv *const p = (struct modpriv *)m; /* its first member */
	if (!p->kept_files_done) {
		p->kept_files = kept_files(p);
		p->kept_files_done = 1;
	}
	uint64_t h = su_fnv1a_add(su_fnv1a(magic, 8), salt);
	h = su_fnv1a_add(h, m->lookup_hash);
	h = su_fnv1a_add(h, p->kept_files);
	char hex[2 * SU_BUILD_ID_MAX + 1];
	for (size_t i = 0; i < m->file_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", m->file_id[i]);
	return snprintf(path, size, "%s/%s/%s-%016llx", m->cache_dir, subdir, hex, (unsigned long long)h) <
		       (int)size ? 0 : -1;
}

void su_build_id_rel(char *buf, const uint8_t *id, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char *p = buf;
	for (size_t i = 0; i < len; i++) {
		*p++ = hex[id[i] >> 4];
		*p++ = hex[id[i] & 15];
		if (i == 0)
			*p++ = '/';
	}
	*p = '\0';
}

/* Does ELF hold code, or is it a debug-only file (code sections NOBITS)? */
static int elf_has_code(Elf *elf)
{
	size_t shnum;
	if (elf_getshdrnum(elf, &shnum) == 0 && shnum > 0) {
		for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
			GElf_Shdr shdr;
			if (gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_EXECINSTR) &&
			    shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0)
				return 1;
		}
		return 0;
	}
	/* No section headers: trust the program headers. */
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_flags & PF_X) && ph.p_filesz > 0)
			return 1;
	}
	return 0;
}

/* Does ELF hold anything a debug file is for: DWARF or a full symbol table? */
static int elf_has_debug(Elf *elf)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			return 1;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (strcmp(name, ".debug_info") == 0 || strcmp(name, ".zdebug_info") == 0))
			return 1;
	}
	return 0;
}

/* What a candidate file must be. */
enum want { WANT_BINARY, WANT_DEBUG };

/* What open_candidate learnt of the file it accepted. */
struct cand_info {
	uint8_t id[SU_BUILD_ID_MAX];
	size_t id_len;
	char *debuglink;           /* malloc'ed, or NULL */
};

/* Open PATH if it is an ELF whose build-id is ID (any when LEN is 0) that
 * holds code (WANT_BINARY), or DWARF or a .symtab (WANT_DEBUG).  @return
 * an fd, or -1.  A file with another build-id bumps the cache's mismatch
 * count and sets *MISMATCH. */
static int open_candidate(struct su_modcache *cache, const char *path,
			  const uint8_t *id, size_t len, enum want want,
			  int *mismatch, struct cand_info *info)
{
	/* A path from a trace may name a FIFO or a device: the open must not
	 * wait for a writer, and only a regular file is read. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -1;
	struct stat st;
	Elf *elf = NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		goto fail;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		goto fail;
	const void *bid = NULL;
	ssize_t bid_len = su_elf_file_id(elf, &bid);
	if (len > 0 && (bid_len != (ssize_t)len || memcmp(bid, id, len) != 0)) {
		cache->stats.mismatched_files++;
		if (mismatch)
			*mismatch = 1;
		goto fail;
	}
	if (want == WANT_BINARY ? !elf_has_code(elf) : !elf_has_debug(elf))
		goto fail;
	if (info) {
		memset(info, 0, sizeof *info);
		if (bid_len > 0 && (size_t)bid_len <= SU_BUILD_ID_MAX) {
			memcpy(info->id, bid, (size_t)bid_len);
			info->id_len = (size_t)bid_len;
		}
		GElf_Word crc;
		const char *link = dwelf_elf_gnu_debuglink(elf, &crc);
		if (link)
			info->debuglink = strdup(link);
	}
	elf_end(elf);
	return fd;
fail:
	if (elf)
		elf_end(elf);
	close(fd);
	return -1;
}

/* PATH prefixed by the --symfs root, malloc'ed. */
static char *under_symfs(const struct su_modcache *cache, const char *path)
{
	if (cache->symfs && *cache->symfs)
		return path_join("%s%s%s", cache->symfs, path[0] == '/' ? "" : "/", path);
	return strdup(path);
}

#ifdef HAVE_DEBUGINFOD
static debuginfod_client *dbgd_client(struct su_modcache *cache)
{
	if (cache->no_debuginfod)
		return NULL;
	if (!cache->dbgd_tried) {
		cache->dbgd_tried = 1;
		const char *urls = getenv("DEBUGINFOD_URLS");
		const struct su_debuginfod_api *api = urls && *urls ? su_debuginfod_api() : NULL;
		if (api)
			cache->dbgd = api->begin();
	}
	return cache->dbgd;
}
#endif

/* ---- separate debug files ----------------------------------------------- */

/* Try PATH as a debug file for P.  @return fd or -1; *OUT = strdup(PATH). */
static int try_debug(struct modpriv *p, const char *path, char **out)
{
	if (!path)
		return -1;
	int fd = open_candidate(p->cache, path, p->want_id, p->want_id_len,
				WANT_DEBUG, NULL, NULL);
	if (fd >= 0 && out)
		*out = strdup(path);
	return fd;
}

/* System debug roots: [SYMFS]/usr/lib/debug, then /usr/lib/debug. */
static size_t system_roots(const struct su_modcache *c, char *roots[2])
{
	size_t n = 0;
	if (c->no_system_dirs)
		return 0;
	if (c->symfs && *c->symfs)
		roots[n++] = path_join("%s%s", c->symfs, SYSTEM_DEBUG_DIR);
	roots[n++] = strdup(SYSTEM_DEBUG_DIR);
	return n;
}

/* The path FMT... given to TRY(P, PATH, ARG): its fd, or -1. */
static int try_candidate(struct modpriv *p, candidate_fn *try, void *arg, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int try_candidate(struct modpriv *p, candidate_fn *try, void *arg, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	int fd = try(p, s, arg);
	free(s);
	return fd;
}

/* Each path the separate debug file of P is looked for at, in order
 * (FILE: the binary opened, or NULL; LINK: its .gnu_debuglink name, or
 * NULL), given to TRY(P, PATH, ARG) until one returns an fd (>= 0): that
 * fd, or -1.  debuginfod, asked last, is not among them. */
static int debug_candidates(struct modpriv *p, const char *file, const char *link, candidate_fn *try, void *arg)
{
	struct su_modcache *c = p->cache;
	char rel[2 * SU_BUILD_ID_MAX + 2];
	int fd = -1;
#define TRY_FMT(...) (fd = try_candidate(p, try, arg, __VA_ARGS__))
	if (p->want_id_len)
		su_build_id_rel(rel, p->want_id, p->want_id_len);
	for (char **d = c->debug_dirs; d && *d && fd < 0; d++) {
		if (p->want_id_len)
			TRY_FMT("%s/.build-id/%s.debug", *d, rel);
		if (fd < 0 && link)
			TRY_FMT("%s/%s", *d, link);
	}
	char *roots[2] = {0};
	size_t nroots = system_roots(c, roots);
	for (size_t i = 0; i < nroots && fd < 0; i++)
		if (roots[i] && p->want_id_len)
			TRY_FMT("%s/.build-id/%s.debug", roots[i], rel);
	if (fd < 0 && link && file && strcmp(file, "[vdso]") != 0) {
		/* .gnu_debuglink: next to the binary, in its .debug/, and under
		 * the debug roots at the binary's recorded directory.  The CRC is
		 * not checked; the build-id is whenever there is one. */
		char *dir = strdup(file);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		if (slash) {
			*slash = '\0';
			if (strcmp(base_name(file), link) != 0)
				TRY_FMT("%s/%s", dir, link);
			if (fd < 0)
				TRY_FMT("%s/.debug/%s", dir, link);
		}
		free(dir);
		const char *rp = p->pub.recorded_path;
		const char *rslash = rp ? strrchr(rp, '/') : NULL;
		for (size_t i = 0; i < nroots && fd < 0 && rslash; i++)
			if (roots[i])
				TRY_FMT("%s%.*s/%s", roots[i], (int)(rslash - rp), rp, link);
	}
#undef TRY_FMT
	for (size_t i = 0; i < nroots; i++)
		free(roots[i]);
	return fd;
}

static int try_debug_candidate(struct modpriv *p, const char *path, void *out)
{
	return try_debug(p, path, out);
}

/* The separate debug file of P (FILE: the binary opened, or NULL; LINK: its
 * .gnu_debuglink name, or NULL).  @return fd or -1, *OUT its path. */
static int find_debug_file(struct modpriv *p, const char *file, const char *link,
			   char **out)
{
	*out = NULL;
	int fd = debug_candidates(p, file, link, try_debug_candidate, out);
#ifdef HAVE_DEBUGINFOD
	debuginfod_client *dc;
	if (fd < 0 && p->want_id_len && !su_build_id_is_go(p->want_id, p->want_id_len) &&
	    (dc = dbgd_client(p->cache)) != NULL) {
		char *path = NULL;
		int dfd = su_debuginfod_api()->find_debuginfo(dc, p->want_id, (int)p->want_id_len, &path);
		if (dfd >= 0) {
			close(dfd);
			/* Check what the server sent like any other file. */
			fd = try_debug(p, path, out);
		}
		free(path);
	}
#endif
	return fd;
}

/* The build-id in PATH's .gnu_debugaltlink (file name, NUL, build-id) into
 * ID: its length, 0 when there is none. */
static size_t altlink_build_id(const char *path, uint8_t *id)
{
	size_t len = 0, shstrndx;
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) : -1;
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		return 0;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
			GElf_Shdr sh;
			const char *name;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
			    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
			    strcmp(name, ".gnu_debugaltlink") != 0)
				continue;
			Elf_Data *d = elf_getdata(scn, NULL);
			const char *nul = d && d->d_buf ? memchr(d->d_buf, '\0', d->d_size) : NULL;
			if (nul) {
				size_t skip = (size_t)(nul + 1 - (const char *)d->d_buf);
				len = d->d_size - skip;
				if (len > SU_BUILD_ID_MAX)
					len = 0;
				else
					memcpy(id, nul + 1, len);
			}
			break;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return len;
}

/* A dwz file: .gnu_debugaltlink NAME of the file DEBUG.  Looked up by
 * name (absolute: under --symfs, then as is; relative: next to DEBUG), by
 * basename in the --debug-dirs, then by its build-id like a debug file.
 * Only a file with the link's build-id is taken. */
static int find_alt_file(struct modpriv *p, const char *debug, const char *name,
			 char **out)
{
	int fd = -1;
	*out = NULL;
	if (!name || !*name)
		return -1;
	uint8_t save[SU_BUILD_ID_MAX];
	size_t save_len = p->want_id_len;
	memcpy(save, p->want_id, sizeof save);
	p->want_id_len = altlink_build_id(debug, p->want_id);
	if (name[0] == '/') {
		char *s = under_symfs(p->cache, name);
		fd = try_debug(p, s, out);
		free(s);
		if (fd < 0 && p->cache->symfs)
			fd = try_debug(p, name, out);
	} else if (debug) {
		const char *slash = strrchr(debug, '/');
		if (slash)
			fd = try_candidate(p, try_debug_candidate, out, "%.*s/%s", (int)(slash - debug), debug, name);
	}
	for (char **d = p->cache->debug_dirs; d && *d && fd < 0; d++)
		fd = try_candidate(p, try_debug_candidate, out, "%s/%s", *d, base_name(name));
	if (fd < 0 && p->want_id_len)
		fd = find_debug_file(p, NULL, NULL, out);
	p->want_id_len = save_len;
	memcpy(p->want_id, save, sizeof save);
	return fd;
}

int su_modcache_inflate_ahead(struct su_modcache *c, const uint8_t *id, size_t id_len)
{
	if (!c->inflate_dir || !id_len || id_len > SU_BUILD_ID_MAX)
		return -1;
	/* A module's lookup without the binary's .gnu_debuglink: the first
	 * places find_debug_file tries, by build-id. */
	struct modpriv p = { .cache = c, .want_id_len = id_len };
	memcpy(p.want_id, id, id_len);
	char *path = NULL;
	int const fd = find_debug_file(&p, NULL, NULL, &path);
	free(path);
	if (fd < 0)
		return -1;
	int const cfd = su_inflate_cached(c->inflate_dir, fd);
	close(fd);
	if (cfd >= 0)
		close(cfd);
	return cfd >= 0 ? 0 : -1;
}

/* ---- Dwfl callbacks ------------------------------------------------------ */

static int cb_find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
		       Dwarf_Addr base, char **file_name, Elf **elfp)
{
	/* Every module is reported with its fd: nothing more to find. */
	(void)mod; (void)userdata; (void)modname; (void)base; (void)file_name;
	*elfp = NULL;
	errno = ENOENT;
	return -1;
}

static int cb_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name,
			     const char *debuglink_file, GElf_Word debuglink_crc,
			     char **debuginfo_file_name)
{
	(void)mod; (void)modname; (void)base; (void)debuglink_crc;
	struct modpriv *p = userdata ? *userdata : NULL;
	if (!p) {
		errno = ENOENT;
		return -1;
	}
	char *path = NULL;
	int fd;
	/* libdw asks with the binary's own .gnu_debuglink for its debug file,
	 * and with a .gnu_debugaltlink name for a dwz file. */
	int same_link = debuglink_file && p->main_debuglink ?
		strcmp(debuglink_file, p->main_debuglink) == 0 :
		!debuglink_file && !p->main_debuglink;
	if (!same_link) {
		fd = find_alt_file(p, file_name ? file_name : p->pub.debug_path,
				   debuglink_file, &path);
	} else {
		fd = find_debug_file(p, file_name, debuglink_file, &path);
		if (fd >= 0 && !p->pub.debug_path) {
			p->pub.debug_path = path ? strdup(path) : NULL;
			p->cache->stats.separate_debug++;
		}
	}
	if (fd < 0) {
		free(path);
		errno = ENOENT;
		return -1;
	}
	/* libdw reads the inflated copy; the name stays the file's own (a
	 * dwz file is looked up relative to it). */
	int const cfd = su_inflate_cached(p->cache->inflate_dir, fd);
	if (cfd >= 0) {
		close(fd);
		fd = cfd;
	}
	*debuginfo_file_name = path;
	return fd;
}

/* ---- the vDSO ------------------------------------------------------------ */

/* Copy this process's vDSO image once (its size from its own headers). */
static void load_own_vdso(struct su_modcache *c)
{
	if (c->vdso_tried)
		return;
	c->vdso_tried = 1;
	const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return;
	Elf64_Ehdr eh;
	memcpy(&eh, base, sizeof eh);
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > VDSO_MAX_SIZE ||
	    eh.e_shoff > VDSO_MAX_SIZE)
		return;
	uint64_t size = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
	uint64_t ph_end = eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr);
	if (ph_end > VDSO_MAX_SIZE)
		return;
	if (ph_end > size)
		size = ph_end;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, base + eh.e_phoff + i * sizeof ph, sizeof ph);
		if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > size)
			size = ph.p_offset + ph.p_filesz;
	}
	if (size > VDSO_MAX_SIZE)
		return;
	unsigned char *copy = malloc(size);
	if (!copy)
		return;
	memcpy(copy, base, size);
	Elf *elf = elf_memory((char *)copy, size);
	const void *bid = NULL;
	ssize_t len = elf ? dwelf_elf_gnu_build_id(elf, &bid) : -1;
	if (len > 0 && (size_t)len <= SU_BUILD_ID_MAX) {
		memcpy(c->vdso_id, bid, (size_t)len);
		c->vdso_id_len = (size_t)len;
		c->vdso = copy;
		c->vdso_size = size;
		copy = NULL;
	}
	if (elf)
		elf_end(elf);
	free(copy);
}

/* An fd holding our vDSO image when P's build-id is its one, else -1. */
static int own_vdso_fd(struct modpriv *p)
{
	struct su_modcache *c = p->cache;
	load_own_vdso(c);
	if (!c->vdso || p->want_id_len != c->vdso_id_len ||
	    memcmp(p->want_id, c->vdso_id, c->vdso_id_len) != 0)
		return -1;
	int fd = memfd_create("stackcap-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < c->vdso_size) {
		ssize_t n = write(fd, c->vdso + done, c->vdso_size - done);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	return fd;
}

/* ---- opening a module ---------------------------------------------------- */

static int try_binary(struct modpriv *p, const char *path, int *mismatch)
{
	if (!path)
		return -1;
	struct cand_info info;
	int fd = open_candidate(p->cache, path, p->pub.build_id, p->pub.build_id_len,
				WANT_BINARY, mismatch, &info);
	if (fd < 0)
		return -1;
	if (!p->pub.build_id_len) {
		memcpy(p->want_id, info.id, info.id_len);
		p->want_id_len = info.id_len;
	}
	free(p->main_debuglink);
	p->main_debuglink = info.debuglink;
	return fd;
}

/* try_candidate's TRY for the binary of P: *B->PATH set to the path
 * taken. */
struct binary_try {
	int *mismatch;
	char **path;
};

static int try_binary_candidate(struct modpriv *p, const char *path, void *arg)
{
	const struct binary_try *b = arg;
	int fd = try_binary(p, path, b->mismatch);
	if (fd >= 0 && !(*b->path = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* try_candidate's TRY for a copy `stackcap record` kept: a regular file
 * of ours, closed to others (in our 0700 cache, so no one else could
 * have put it there), with the build-id asked for (try_binary). */
static int try_kept_candidate(struct modpriv *p, const char *path, void *arg)
{
	struct stat st;
	if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -1;
	int const fd = try_binary_candidate(p, path, arg);
	if (fd >= 0)
		su_cache_file_used(fd, &st); /* the prune goes by last use */
	return fd;
}

/* try_candidate's TRY for a file of perf's build-id cache: a regular
 * file of this user's or root's (as perf takes its maps), found by the
 * cache's own symlinks. */
static int try_perf_candidate(struct modpriv *p, const char *path, void *arg)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0))
		return -1;
	return try_binary_candidate(p, path, arg);
}

/* Find the binary of P: fd and *PATH, or -1. */
static int find_binary(struct modpriv *p, int *mismatch, char **path)
{
	struct su_modcache *c = p->cache;
	struct su_module *m = &p->pub;
	char rel[2 * SU_BUILD_ID_MAX + 2];
	int fd = -1;
	struct binary_try bt = { .mismatch = mismatch, .path = path };
	if (m->build_id_len)
		su_build_id_rel(rel, m->build_id, m->build_id_len);
	/* Without a recorded build-id only the recorded path is trusted. */
	for (char **d = c->debug_dirs; d && *d && fd < 0 && m->build_id_len; d++) {
		fd = try_candidate(p, try_binary_candidate, &bt, "%s/.build-id/%s", *d, rel);
		if (fd < 0 && !m->is_vdso && *m->recorded_path)
			fd = try_candidate(p, try_binary_candidate, &bt, "%s/%s", *d, base_name(m->recorded_path));
	}
	if (fd < 0 && m->is_vdso) {
		fd = own_vdso_fd(p);
		if (fd >= 0)
			*path = strdup("[vdso]");
	} else if (fd < 0 && *m->recorded_path) {
		char *s = under_symfs(c, m->recorded_path);
		fd = try_binary(p, s, mismatch);
		if (fd >= 0)
			*path = s;
		else
			free(s);
	}
	char *roots[2] = {0};
	size_t nroots = m->build_id_len ? system_roots(c, roots) : 0;
	for (size_t i = 0; i < nroots; i++) {
		if (fd < 0 && roots[i])
			fd = try_candidate(p, try_binary_candidate, &bt, "%s/.build-id/%s", roots[i], rel);
		free(roots[i]);
	}
	if (fd < 0 && m->build_id_len && c->kept_dir && !m->is_vdso)
		fd = try_candidate(p, try_kept_candidate, &bt, "%s/bin/.build-id/%s", c->kept_dir, rel);
	/* perf's build-id cache: the files perf record's samples hit (a
	 * container's, a [vdso]), or a `perf archive` unpacked there. */
	if (fd < 0 && m->build_id_len && c->perf_dir)
		fd = try_candidate(p, try_perf_candidate, &bt, "%s/.build-id/%s/elf", c->perf_dir, rel);
#ifdef HAVE_DEBUGINFOD
	debuginfod_client *dc;
	if (fd < 0 && m->build_id_len && !su_build_id_is_go(m->build_id, m->build_id_len) &&
	    (dc = dbgd_client(c)) != NULL) {
		char *dpath = NULL;
		int dfd = su_debuginfod_api()->find_executable(dc, m->build_id, m->build_id_len, &dpath);
		if (dfd >= 0) {
			close(dfd);
			fd = try_binary(p, dpath, mismatch);
			if (fd >= 0)
				*path = dpath, dpath = NULL;
		}
		free(dpath);
	}
#endif
	return fd;
}

/* Report FD (PATH) as the only module of a new Dwfl, at bias 0. */
static int open_dwfl(struct modpriv *p, int fd, const char *path)
{
	struct su_module *m = &p->pub;
	m->dwfl = dwfl_begin(&p->cache->callbacks);
	if (!m->dwfl) {
		close(fd);
		return -ENOMEM;
	}
	dwfl_report_begin(m->dwfl);
	/* add_p_vaddr: the module starts at its first PT_LOAD p_vaddr with
	 * bias 0, so st_value and p_vaddr are module addresses for ET_EXEC and
	 * ET_DYN alike (false would bias a prelinked ET_DYN by -p_vaddr). */
	m->mod = dwfl_report_elf(m->dwfl, base_name(path), path, fd, 0, true);
	if (!m->mod) {
		/* dwfl_report_elf closes FD only on success. */
		close(fd);
		goto fail;
	}
	if (dwfl_report_end(m->dwfl, NULL, NULL) != 0)
		goto fail;
	void **ud = NULL;
	dwfl_module_info(m->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	if (ud)
		*ud = p;
	GElf_Addr bias = 1;
	if (!dwfl_module_getelf(m->mod, &bias) || bias != 0)
		goto fail;
	return 0;
fail:
	dwfl_end(m->dwfl);
	m->dwfl = NULL;
	m->mod = NULL;
	return -EINVAL;
}

/* The PT_LOAD segments of M's file (opened at bias 0), for su_module_bias. */
static void read_loads(struct su_module *m)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->mod, &bias);
	size_t n = 0;
	if (!elf || elf_getphdrnum(elf, &n) != 0)
		return;
	for (size_t i = 0; i < n && m->nload < sizeof(m->load) / sizeof(m->load[0]); i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			m->load[m->nload].offset = ph.p_offset;
			m->load[m->nload].vaddr = ph.p_vaddr;
			m->load[m->nload].filesz = ph.p_filesz;
			m->load[m->nload].flags = ph.p_flags;
			m->nload++;
		}
	}
}

static void open_module(struct modpriv *p)
{
	struct su_module *m = &p->pub;
	int mismatch = 0;
	char *path = NULL;

	/* "" or "[anon:...]", "[heap]"...: nothing on disk to look for. */
	if (!m->is_vdso && !m->build_id_len &&
	    (m->recorded_path[0] == '\0' || m->recorded_path[0] == '[')) {
		m->status = SU_MODULE_NO_FILE;
		return;
	}
	if (m->is_vdso && !m->build_id_len) {
		m->status = SU_MODULE_NOT_FOUND; /* cannot tell which kernel's */
		return;
	}
	int fd = find_binary(p, &mismatch, &path);
	if (fd < 0 && p->want_id_len) {
		/* No binary: a debug file can stand in for symbols and lines. */
		fd = find_debug_file(p, NULL, NULL, &path);
		if (fd >= 0)
			m->debug_only = 1;
	}
	if (fd < 0) {
		m->status = mismatch ? SU_MODULE_BUILD_ID_MISMATCH : SU_MODULE_NOT_FOUND;
		free(path);
		return;
	}
	if (open_dwfl(p, fd, path) != 0) {
		m->status = SU_MODULE_NOT_FOUND;
		m->debug_only = 0;
		free(path);
		return;
	}
	m->elf_path = path;
	m->status = SU_MODULE_OK;
	memcpy(m->file_id, p->want_id, p->want_id_len);
	m->file_id_len = (uint8_t)p->want_id_len;
	read_loads(m);
}

uint64_t su_module_bias(const struct su_module *m, const struct su_map_entry *e)
{
	if (!(e->flags & SU_MAP_FILE_BIAS))
		return e->bias;
	uint64_t const bias = e->start - e->offset;
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; m && m->status == SU_MODULE_OK && i < m->nload; i++) {
			uint64_t const lo = m->load[i].offset & ~0xfffull;
			if ((pass || (m->load[i].flags & PF_X)) && e->offset >= lo &&
			    e->offset < m->load[i].offset + m->load[i].filesz)
				return bias + m->load[i].offset - m->load[i].vaddr;
		}
	}
	return bias;
}

/* ---- the cache ------------------------------------------------------------ */

/* The cache key: build-id when recorded, else kind + path. */
static char *entry_key(const struct su_map_entry *e)
{
	const char *path = e->path ? e->path : "";
	if (e->build_id_len && e->build_id_len <= SU_BUILD_ID_MAX) {
		char hex[2 * SU_BUILD_ID_MAX + 1];
		for (size_t i = 0; i < e->build_id_len; i++) {
			hex[2 * i] = "0123456789abcdef"[e->build_id[i] >> 4];
			hex[2 * i + 1] = "0123456789abcdef"[e->build_id[i] & 15];
		}
		hex[2 * e->build_id_len] = 0;
		return path_join("b:%s", hex);
	}
	if (e->flags & SU_MAP_ANON)
		return path_join("a:%s", path);
	if (e->flags & SU_MAP_VDSO)
		return path_join("v:%s", path);
	return path_join("p:%s", path);
}

struct su_modcache *su_modcache_new(const struct su_debuginfo_opts *opts)
{
	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOSYS;
		return NULL;
	}
	struct su_modcache *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->nbuckets = 64;
	c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
	if (!c->buckets)
		goto oom;
	if (opts) {
		c->no_debuginfod = opts->no_debuginfod;
		c->no_system_dirs = opts->no_system_dirs;
		if (opts->inflate_cache_dir && *opts->inflate_cache_dir &&
		    !(c->inflate_dir = strdup(opts->inflate_cache_dir)))
			goto oom;
		if (opts->symfs && *opts->symfs && !(c->symfs = strdup(opts->symfs)))
			goto oom;
		if (opts->kept_dir && *opts->kept_dir && !(c->kept_dir = strdup(opts->kept_dir)))
			goto oom;
		size_t n = 0;
		while (opts->debug_dirs && opts->debug_dirs[n])
			n++;
		if (n) {
			c->debug_dirs = calloc(n + 1, sizeof *c->debug_dirs);
			if (!c->debug_dirs)
				goto oom;
			for (size_t i = 0; i < n; i++)
				if (!(c->debug_dirs[i] = strdup(opts->debug_dirs[i])))
					goto oom;
		}
	}
	if (!c->no_system_dirs)
		c->perf_dir = su_perf_buildid_dir();
	/* How files are looked up, hashed: su_module's lookup_hash. */
	uint64_t h = su_fnv1a_str(c->symfs ? c->symfs : "");
	for (char **d = c->debug_dirs; d && *d; d++)
		h = su_fnv1a_add(su_fnv1a_from(h, *d, strlen(*d)), 0x100);
	const char *const urls = c->no_debuginfod ? NULL : getenv("DEBUGINFOD_URLS");
	h = su_fnv1a_add(h, (uint64_t)c->no_system_dirs << 1 | (uint64_t)c->no_debuginfod);
	if (c->perf_dir)
		h = su_fnv1a_from(h, c->perf_dir, strlen(c->perf_dir));
	c->lookup_hash = su_fnv1a_from(h, urls ? urls : "", urls ? strlen(urls) : 0);
	c->callbacks.find_elf = cb_find_elf;
	c->callbacks.find_debuginfo = cb_find_debuginfo;
	c->callbacks.section_address = dwfl_offline_section_address;
	c->callbacks.debuginfo_path = &c->debuginfo_path;
	return c;
oom:
	su_modcache_free(c);
	errno = ENOMEM;
	return NULL;
}

static void module_free(struct su_modcache *c, struct modpriv *p, int at_exit)
{
	struct su_module *m = &p->pub;
	if (m->unwind_cache && c->unwind_free)
		c->unwind_free(m->unwind_cache);
	if (m->sym_cache && c->sym_free)
		c->sym_free(m->sym_cache);
	if (m->dwfl && !at_exit)
		dwfl_end(m->dwfl);
	free(m->recorded_path);
	free(m->elf_path);
	free(m->debug_path);
	free(p->main_debuglink);
	free(p->key);
	free(p);
}

static void modcache_free(struct su_modcache *c, int at_exit)
{
	if (!c)
		return;
	for (size_t i = 0; c->buckets && i < c->nbuckets; i++) {
		struct modpriv *p = c->buckets[i];
		while (p) {
			struct modpriv *next = p->next;
			module_free(c, p, at_exit);
			p = next;
		}
	}
	free(c->buckets);
	for (char **d = c->debug_dirs; d && *d; d++)
		free(*d);
	free(c->debug_dirs);
	free(c->symfs);
	free(c->inflate_dir);
	free(c->kept_dir);
	free(c->perf_dir);
#ifdef HAVE_DEBUGINFOD
	if (c->dbgd)
		su_debuginfod_api()->end(c->dbgd);
#endif
	free(c->vdso);
	free(c);
}

/* The desc of the Go build ID note in the LEN bytes at P (a note
 * section's or segment's), or NULL. */
static const void *go_note(Elf *elf, Elf_Data *d, size_t *len)
{
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off, next;
	while (d && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == 4 && nh.n_namesz == 4 && !memcmp((const char *)d->d_buf + name_off, "Go\0\0", 4) &&
		    nh.n_descsz > 0) {
			*len = nh.n_descsz;
			return (const char *)d->d_buf + desc_off;
		}
		off = next;
	}
	(void)elf;
	return NULL;
}

ssize_t su_elf_file_id(Elf *elf, const void **id)
{
	ssize_t const n = dwelf_elf_gnu_build_id(elf, id);
	if (n > 0)
		return n;
	const void *desc = NULL;
	size_t len = 0;
	/* Its section (.note.go.buildid), else its PT_NOTE segment. */
	for (Elf_Scn *scn = NULL; !desc && (scn = elf_nextscn(elf, scn)) != NULL;) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE)
			desc = go_note(elf, elf_getdata(scn, NULL), &len);
	}
	size_t nph = 0;
	if (!desc && elf_getphdrnum(elf, &nph) == 0)
		for (size_t i = 0; !desc && i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_NOTE)
				desc = go_note(elf, elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
									 ELF_T_NHDR), &len);
		}
	if (!desc || !su_build_id_is_go(desc, len < SU_BUILD_ID_MAX ? len : SU_BUILD_ID_MAX))
		return -1;
	*id = desc;
	return (ssize_t)(len < SU_BUILD_ID_MAX ? len : SU_BUILD_ID_MAX);
}

int su_build_id_is_go(const uint8_t *id, size_t len)
{
	int slash = 0;
	if (len < 16)
		return 0;
	for (size_t i = 0; i < len; i++) {
		uint8_t const c = id[i];
		if (c == '/')
			slash = 1;
		else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			   c == '_'))
			return 0;
	}
	return slash;
}

void su_modcache_each(struct su_modcache *c, void (*fn)(void *arg, struct su_module *m), void *arg)
{
	for (size_t b = 0; c && b < c->nbuckets; b++)
		for (struct modpriv *p = c->buckets[b]; p; p = p->next)
			if (p->pub.status == SU_MODULE_OK)
				fn(arg, &p->pub);
}

const char *su_module_debug_file(struct su_module *m)
{
	Dwarf_Addr bias;
	if (m->status == SU_MODULE_OK && m->mod && !m->debug_path && !m->debug_only)
		(void)dwfl_module_getdwarf(m->mod, &bias); /* asks cb_find_debuginfo */
	return m->debug_path;
}

void su_modcache_free(struct su_modcache *c)
{
	modcache_free(c, 0);
}

void su_modcache_free_at_exit(struct su_modcache *c)
{
	modcache_free(c, !SU_ASAN);
}

void su_modcache_save_at_exit(struct su_modcache *c)
{
	if (SU_ASAN || !c) {
		su_modcache_free(c);
		return;
	}
	void (*const us)(void *) = c->unwind_save ? c->unwind_save : c->unwind_free;
	void (*const ss)(void *) = c->sym_save ? c->sym_save : c->sym_free;
	for (size_t i = 0; c->buckets && i < c->nbuckets; i++)
		for (struct modpriv *p = c->buckets[i]; p; p = p->next) {
			struct su_module *const m = &p->pub;
			if (m->unwind_cache && us)
				us(m->unwind_cache);
			if (m->sym_cache && ss)
				ss(m->sym_cache);
		}
}

static void grow(struct su_modcache *c)
{
	size_t n = c->nbuckets * 2;
	struct modpriv **b = calloc(n, sizeof *b);
	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct modpriv *p = c->buckets[i];
		while (p) {
			struct modpriv *next = p->next;
			size_t h = su_fnv1a_str(p->key) & (n - 1);
			p->next = b[h];
			b[h] = p;
			p = next;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = n;
}

/* The module cached under KEY, or NULL. */
static struct su_module *cached(const struct su_modcache *c, const char *key)
{
	size_t const h = su_fnv1a_str(key) & (c->nbuckets - 1);
	for (struct modpriv *p = c->buckets[h]; p; p = p->next)
		if (strcmp(p->key, key) == 0)
			return &p->pub;
	return NULL;
}

struct su_module *su_modcache_find(struct su_modcache *c, const struct su_map_entry *e)
{
	if (!c || !e || e->build_id_len > SU_BUILD_ID_MAX)
		return NULL;
	char *key = entry_key(e);
	struct su_module *const m = key ? cached(c, key) : NULL;
	free(key);
	return m;
}

struct su_module *su_modcache_get(struct su_modcache *c, const struct su_map_entry *e)
{
	if (!c || !e || e->build_id_len > SU_BUILD_ID_MAX) {
		errno = EINVAL;
		return NULL;
	}
	char *key = entry_key(e);
	if (!key) {
		errno = ENOMEM;
		return NULL;
	}
	struct su_module *const known = cached(c, key);
	if (known) {
		free(key);
		return known;
	}
	size_t const h = su_fnv1a_str(key) & (c->nbuckets - 1);
	struct modpriv *p = calloc(1, sizeof *p);
	if (!p || !(p->pub.recorded_path = strdup(e->path ? e->path : ""))) {
		free(p);
		free(key);
		errno = ENOMEM;
		return NULL;
	}
	p->key = key;
	p->cache = c;
	struct su_module *m = &p->pub;
	m->cache_dir = c->inflate_dir;
	m->lookup_hash = c->lookup_hash;
	memcpy(m->build_id, e->build_id, e->build_id_len);
	m->build_id_len = e->build_id_len;
	memcpy(p->want_id, e->build_id, e->build_id_len);
	p->want_id_len = e->build_id_len;
	m->is_vdso = (e->flags & SU_MAP_VDSO) != 0;
	if (m->is_vdso && !m->build_id_len && (e->flags & SU_MAP_THIS_KERNEL)) {
		/* Recorded on this kernel, no build-id stored: ours is its. */
		load_own_vdso(c);
		memcpy(m->build_id, c->vdso_id, c->vdso_id_len);
		m->build_id_len = (uint8_t)c->vdso_id_len;
		memcpy(p->want_id, c->vdso_id, c->vdso_id_len);
		p->want_id_len = c->vdso_id_len;
	}
	if ((e->flags & SU_MAP_ANON) && !m->is_vdso)
		m->status = SU_MODULE_NO_FILE;
	else
		open_module(p);

	c->stats.modules++;
	switch (m->status) {
	case SU_MODULE_NOT_FOUND: c->stats.not_found++; break;
	case SU_MODULE_BUILD_ID_MISMATCH: c->stats.build_id_mismatch++; break;
	case SU_MODULE_NO_FILE: c->stats.no_file++; break;
	case SU_MODULE_OK: break;
	}
	p->next = c->buckets[h];
	c->buckets[h] = p;
	if (++c->count > c->nbuckets)
		grow(c);
	return m;
}

void su_modcache_get_stats(const struct su_modcache *c, struct su_modcache_stats *stats)
{
	if (!stats)
		return;
	if (!c) {
		memset(stats, 0, sizeof *stats);
		return;
	}
	*stats = c->stats;
}

void su_modcache_set_finalizers(struct su_modcache *c, void (*unwind_free)(void *),
				void (*sym_free)(void *))
{
	if (!c)
		return;
	/* unwind/ and symbolize/ each register their own: NULL keeps. */
	if (unwind_free)
		c->unwind_free = unwind_free;
	if (sym_free)
		c->sym_free = sym_free;
}

void su_modcache_set_savers(struct su_modcache *c, void (*unwind_save)(void *), void (*sym_save)(void *))
{
	if (!c)
		return;
	if (unwind_save)
		c->unwind_save = unwind_save;
	if (sym_save)
		c->sym_save = sym_save;
}
