/* SPDX-License-Identifier: MIT */
/* stackcap record -e: events by name (events.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/events.h"

static const struct {
	const char *name;
	uint64_t config;
} software[] = {
	{ "cpu-clock", PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
};

const char rec_software_event_names[] = "cpu-clock, task-clock, page-faults (faults), minor-faults, major-faults, "
					"context-switches (cs), cpu-migrations (migrations)";

/* The name as the trace keeps it: printable ASCII but quotes and
 * backslashes (the metadata holds it in a TSDL string). */
static char *trace_name(const char *spec)
{
	char *n = strdup(spec);
	for (char *p = n; p && *p; p++)
		if (*p < 0x21 || *p > 0x7e || *p == '"' || *p == '\\')
			*p = '_';
	return n;
}

static int set_name(struct rec_event *e, const char *spec)
{
	return (e->name = trace_name(spec)) ? 0 : -1;
}

/* ---- tracepoints ------------------------------------------------------------------ */

static const char *const tracefs_dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

/* The id of tracepoint SYS:NAME: >0; 0 none; -errno when tracefs cannot
 * be read (DIR: the one tried). */
static long tracepoint_id(const char *sys, const char *name, const char **dir)
{
	long rc = -ENOENT;
	for (size_t i = 0; i < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]); i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/events", tracefs_dirs[i]);
		if (access(path, F_OK)) {
			if (errno != ENOENT && rc == -ENOENT) {
				rc = -errno;
				*dir = tracefs_dirs[i];
			}
			continue;
		}
		*dir = tracefs_dirs[i];
		if (strchr(sys, '/') || strchr(name, '/') || !strcmp(sys, "..") || !strcmp(name, "..") ||
		    !strcmp(sys, ".") || !strcmp(name, "."))
			return 0;
		snprintf(path, sizeof(path), "%s/events/%.255s/%.255s/id", tracefs_dirs[i], sys, name);
		FILE *f = fopen(path, "r");
		if (!f)
			return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
		long id = 0;
		if (fscanf(f, "%ld", &id) != 1 || id <= 0)
			id = -EINVAL;
		fclose(f);
		return id;
	}
	return rc;
}

/* ---- ELF: symbols and SDT notes ---------------------------------------------------- */

struct elf_file {
	int fd;
	Elf *elf;
};

static int elf_file_open(struct elf_file *f, const char *path, char *err, size_t errlen)
{
	elf_version(EV_CURRENT);
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &eh) ||
	    gelf_getclass(f->elf) != ELFCLASS64) {
		snprintf(err, errlen, "%s: not a 64-bit ELF file", path);
		if (f->elf)
			elf_end(f->elf);
		close(f->fd);
		return -1;
	}
	return 0;
}

static void elf_file_close(struct elf_file *f)
{
	elf_end(f->elf);
	close(f->fd);
}

/* The file offset of virtual address VADDR (in a PT_LOAD segment's file
 * part), or UINT64_MAX. */
static uint64_t vaddr_to_offset(Elf *elf, uint64_t vaddr)
{
	size_t n;
	if (elf_getphdrnum(elf, &n))
		return UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr - ph.p_vaddr < ph.p_filesz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	return UINT64_MAX;
}

static int add_site(struct rec_event *e, uint64_t off, uint64_t ref)
{
	for (size_t i = 0; i < e->n_sites; i++)
		if (e->offsets[i] == off)
			return 0;
	uint64_t *no = realloc(e->offsets, (e->n_sites + 1) * sizeof(*no));
	if (!no)
		return -1;
	e->offsets = no;
	uint64_t *nr = realloc(e->ref_ctr, (e->n_sites + 1) * sizeof(*nr));
	if (!nr)
		return -1;
	e->ref_ctr = nr;
	e->offsets[e->n_sites] = off;
	e->ref_ctr[e->n_sites++] = ref;
	return 0;
}

/* Every defined function FUNC of the symbol tables: a site each. */
static int find_function(struct rec_event *e, Elf *elf, const char *func)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t const n = d ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value ||
			    (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
				continue;
			const char *nm = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!nm || strcmp(nm, func))
				continue;
			uint64_t const off = vaddr_to_offset(elf, sym.st_value);
			if (off != UINT64_MAX && add_site(e, off, 0))
				return -1;
		}
	}
	return 0;
}

#define NT_STAPSDT 3

/* The sites of SDT marker PROVIDER:NAME in ELF: each note's pc (moved as
 * the .stapsdt.base section was, prelink's way) and semaphore, as file
 * offsets.  *SEM_BAD: a semaphore outside the file's segments. */
static int find_sdt(struct rec_event *e, Elf *elf, const char *provider, const char *name, int *sem_bad)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	uint64_t base_addr = 0;
	int has_base = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sn = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (sn && !strcmp(sn, ".stapsdt.base")) {
			base_addr = sh.sh_addr;
			has_base = 1;
		}
	}
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sn = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (!sn || sh.sh_type != SHT_NOTE || strcmp(sn, ".note.stapsdt"))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t off = 0, noff, doff;
		GElf_Nhdr nh;
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const char *owner = (const char *)d->d_buf + noff;
			if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 || memcmp(owner, "stapsdt", 8) || nh.n_descsz < 24 + 2)
				continue;
			const uint8_t *desc = (const uint8_t *)d->d_buf + doff;
			uint64_t pc, base, sem;
			memcpy(&pc, desc, 8);
			memcpy(&base, desc + 8, 8);
			memcpy(&sem, desc + 16, 8);
			const char *prov = (const char *)desc + 24;
			const char *end = (const char *)desc + nh.n_descsz;
			const char *nm = memchr(prov, 0, (size_t)(end - prov));
			if (!nm || !memchr(nm + 1, 0, (size_t)(end - nm - 1)))
				continue;
			nm++;
			if (strcmp(prov, provider) || strcmp(nm, name))
				continue;
			if (has_base && base)
				pc += base_addr - base;
			uint64_t const at = vaddr_to_offset(elf, pc);
			uint64_t ref = 0;
			if (sem) {
				ref = vaddr_to_offset(elf, sem);
				if (ref == UINT64_MAX) {
					*sem_bad = 1;
					continue;
				}
			}
			if (at != UINT64_MAX && add_site(e, at, ref))
				return -1;
		}
	}
	return 0;
}

/* ---- the uprobe PMU ----------------------------------------------------------------- */

/* Its type number, or -1 (no uprobe PMU: CONFIG_UPROBE_EVENTS). */
static int uprobe_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	int t = -1;
	if (f) {
		if (fscanf(f, "%d", &t) != 1)
			t = -1;
		fclose(f);
	}
	return t;
}

/* The uprobe PMU takes a reference counter (an SDT semaphore) in config
 * bits 32-63 (Linux 4.20). */
static int uprobe_has_ref_ctr(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset", "r");
	char buf[64] = "";
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	return !strncmp(buf, "config:32-63", 12);
}

char *rec_resolve_binary(const char *bin)
{
	struct stat st;
	if (strchr(bin, '/') || (stat(bin, &st) == 0 && S_ISREG(st.st_mode)))
		return stat(bin, &st) == 0 && S_ISREG(st.st_mode) ? realpath(bin, NULL) : NULL;
	const char *path = getenv("PATH");
	if (!path)
		return NULL;
	for (const char *p = path; *p;) {
		size_t const len = strcspn(p, ":");
		char cand[4096];
		snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, len ? p : ".", bin);
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode))
			return realpath(cand, NULL);
		p += len + (p[len] == ':');
	}
	return NULL;
}

/* ---- the libraries a program loads --------------------------------------------------- */

int rec_binary_is_static(const char *bin)
{
	char *path = rec_resolve_binary(bin);
	struct elf_file f;
	char why[512];
	int is_static = 0;
	if (path && !elf_file_open(&f, path, why, sizeof(why))) {
		size_t n = 0;
		is_static = elf_getphdrnum(f.elf, &n) == 0 && n > 0;
		for (size_t i = 0; is_static && i < n; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(f.elf, (int)i, &ph) || ph.p_type == PT_INTERP)
				is_static = 0;
		}
		elf_file_close(&f);
	}
	free(path);
	return is_static;
}

#define LIBS_MAX 512

static const char *const lib_dirs[] = { "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
					"/lib", "/usr/lib", "/usr/local/lib" };

/* NAME (a DT_NEEDED entry) in the colon-separated directories DIRS
 * ($ORIGIN: ORIGIN, the needing file's directory): a malloc'd real path or
 * NULL. */
static char *lib_in(const char *dirs, const char *origin, const char *name)
{
	for (const char *p = dirs; p && *p;) {
		size_t const len = strcspn(p, ":");
		char dir[4096], cand[8192];
		snprintf(dir, sizeof(dir), "%.*s", (int)len, p);
		const char *o = strstr(dir, "$ORIGIN");
		if (o)
			snprintf(cand, sizeof(cand), "%.*s%s%s/%s", (int)(o - dir), dir, origin, o + 7, name);
		else
			snprintf(cand, sizeof(cand), "%s/%s", dir[0] ? dir : ".", name);
		struct stat st;
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode))
			return realpath(cand, NULL);
		p += len + (p[len] == ':');
	}
	return NULL;
}

/* Append PATH (taken) to V[*N] unless there already: 0, or -1 (memory; PATH freed). */
static int lib_add(char ***v, size_t *n, size_t *cap, char *path)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i], path)) {
			free(path);
			return 0;
		}
	if (*n == *cap) {
		size_t const nc = *cap ? 2 * *cap : 16;
		char **nv = realloc(*v, nc * sizeof(*nv));
		if (!nv) {
			free(path);
			return -1;
		}
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = path;
	return 0;
}

/* The files BINARIES (N) load before they run: each binary, then the
 * DT_NEEDED libraries of every file, breadth first, found as ld.so finds
 * them (DT_RPATH or DT_RUNPATH with $ORIGIN, $LD_LIBRARY_PATH, the system
 * directories; not ld.so.cache's extra directories), at most LIBS_MAX.
 * *OUT malloc'd real paths; @return how many (0 on no memory). */
static size_t load_set(const char *const *binaries, size_t n, char ***out)
{
	char **v = NULL;
	size_t nv = 0, cap = 0;
	for (size_t i = 0; i < n; i++) {
		char *p = rec_resolve_binary(binaries[i]);
		if (p && lib_add(&v, &nv, &cap, p))
			goto oom;
	}
	for (size_t i = 0; i < nv && nv < LIBS_MAX; i++) {
		struct elf_file f;
		char why[512];
		if (elf_file_open(&f, v[i], why, sizeof(why)))
			continue;
		char origin[4096];
		snprintf(origin, sizeof(origin), "%s", v[i]);
		*strrchr(origin, '/') = 0;
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(f.elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(d = elf_getdata(scn, NULL)))
				continue;
			const char *rpath = NULL, *runpath = NULL;
			size_t const nd = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
			for (size_t k = 0; k < nd; k++) {
				GElf_Dyn dyn;
				if (!gelf_getdyn(d, (int)k, &dyn))
					break;
				if (dyn.d_tag == DT_RPATH)
					rpath = elf_strptr(f.elf, sh.sh_link, dyn.d_un.d_val);
				else if (dyn.d_tag == DT_RUNPATH)
					runpath = elf_strptr(f.elf, sh.sh_link, dyn.d_un.d_val);
			}
			for (size_t k = 0; k < nd && nv < LIBS_MAX; k++) {
				GElf_Dyn dyn;
				const char *name;
				if (!gelf_getdyn(d, (int)k, &dyn) || dyn.d_tag != DT_NEEDED ||
				    !(name = elf_strptr(f.elf, sh.sh_link, dyn.d_un.d_val)))
					continue;
				char *p = NULL;
				if (strchr(name, '/'))
					p = realpath(name, NULL);
				if (!p && !strchr(name, '/') && !runpath)
					p = lib_in(rpath, origin, name);
				if (!p && !strchr(name, '/'))
					p = lib_in(getenv("LD_LIBRARY_PATH"), origin, name);
				if (!p && !strchr(name, '/'))
					p = lib_in(runpath, origin, name);
				for (size_t d2 = 0; !p && !strchr(name, '/') && d2 < sizeof(lib_dirs) / sizeof(lib_dirs[0]); d2++)
					p = lib_in(lib_dirs[d2], origin, name);
				if (p && lib_add(&v, &nv, &cap, p)) {
					elf_file_close(&f);
					goto oom;
				}
			}
		}
		elf_file_close(&f);
	}
	*out = v;
	return nv;
oom:
	for (size_t i = 0; i < nv; i++)
		free(v[i]);
	free(v);
	*out = NULL;
	return 0;
}

static void load_set_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The library LIB (a file name without '/': "libc.so.6", or its stem
 * "libc") among the files BINARIES (N) load: a malloc'd path, or NULL. */
static char *find_library(const char *const *binaries, size_t n, const char *lib)
{
	char **v;
	size_t const nv = load_set(binaries, n, &v);
	char *found = NULL;
	size_t const len = strlen(lib);
	for (size_t i = 0; i < nv && !found; i++) {
		const char *base = strrchr(v[i], '/') + 1;
		if (!strcmp(base, lib) || (!strncmp(base, lib, len) && !strncmp(base + len, ".so", 3)))
			found = strdup(v[i]);
	}
	load_set_free(v, nv);
	return found;
}

static int uprobe_ready(struct rec_event *e, const char *spec, char *err, size_t errlen)
{
	int const t = uprobe_type();
	if (t < 0) {
		snprintf(err, errlen, "event '%s': this kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe: "
			 "CONFIG_UPROBE_EVENTS)", spec);
		return -1;
	}
	e->type = (uint32_t)t;
	return 0;
}

/* A uprobe on FUNC of the file PATH (taken). */
static int parse_uprobe(const char *spec, char *path, const char *func, struct rec_event *e, char *err,
			size_t errlen)
{
	e->kind = REC_EV_UPROBE;
	e->path = path;
	if (uprobe_ready(e, spec, err, errlen))
		return -1;
	struct elf_file f;
	char why[512];
	if (elf_file_open(&f, e->path, why, sizeof(why))) {
		snprintf(err, errlen, "event '%s': %s", spec, why);
		return -1;
	}
	int const rc = find_function(e, f.elf, func);
	elf_file_close(&f);
	if (rc) {
		snprintf(err, errlen, "event '%s': out of memory", spec);
		return -1;
	}
	if (!e->n_sites) {
		snprintf(err, errlen, "event '%s': no function %s in the symbol tables of %s", spec, func, e->path);
		return -1;
	}
	return 0;
}

static int parse_sdt(const char *spec, const char *rest, const char *const *binaries, size_t n,
		     struct rec_event *e, char *err, size_t errlen)
{
	e->kind = REC_EV_SDT;
	/* PROVIDER:NAME or BINARY:PROVIDER:NAME (BINARY may hold ':'). */
	const char *last = strrchr(rest, ':');
	if (!last || last == rest || !last[1]) {
		snprintf(err, errlen, "event '%s': an SDT marker is sdt:PROVIDER:NAME or sdt:BINARY:PROVIDER:NAME", spec);
		return -1;
	}
	const char *prev = last - 1;
	while (prev > rest && *prev != ':')
		prev--;
	char provider[256], name[256], bin[4096] = "";
	if (*prev == ':') {
		snprintf(bin, sizeof(bin), "%.*s", (int)(prev - rest), rest);
		snprintf(provider, sizeof(provider), "%.*s", (int)(last - prev - 1), prev + 1);
	} else {
		snprintf(provider, sizeof(provider), "%.*s", (int)(last - rest), rest);
	}
	snprintf(name, sizeof(name), "%s", last + 1);
	if (uprobe_ready(e, spec, err, errlen))
		return -1;
	char *one = NULL;
	const char *const *list = binaries;
	char **loaded = NULL;
	if (!bin[0] && n) {
		/* The command's files and the libraries they load. */
		size_t const nl = load_set(binaries, n, &loaded);
		if (nl) {
			list = (const char *const *)loaded;
			n = nl;
		}
	}
	if (bin[0]) {
		if (!(one = rec_resolve_binary(bin))) {
			snprintf(err, errlen, "event '%s': no file %s", spec, bin);
			return -1;
		}
		list = (const char *const *)&one;
		n = 1;
	}
	if (!n) {
		snprintf(err, errlen, "event '%s': no binary to look in (name it: sdt:BINARY:%s:%s)", spec, provider, name);
		return -1;
	}
	int sem_bad = 0;
	for (size_t i = 0; i < n && !e->n_sites; i++) {
		struct elf_file f;
		char why[512];
		char *path = rec_resolve_binary(list[i]);
		if (!path)
			continue;
		int const orc = elf_file_open(&f, path, why, sizeof(why));
		free(path);
		if (orc)
			continue;
		int const rc = find_sdt(e, f.elf, provider, name, &sem_bad);
		elf_file_close(&f);
		if (rc || (e->n_sites && !(e->path = rec_resolve_binary(list[i])))) {
			free(one);
			load_set_free(loaded, loaded ? n : 0);
			snprintf(err, errlen, "event '%s': out of memory", spec);
			return -1;
		}
	}
	if (!e->n_sites) {
		if (n == 1)
			snprintf(err, errlen, "event '%s': no SDT marker %s:%s in %s (.note.stapsdt)%s", spec, provider, name,
				 list[0], sem_bad ? "; its semaphore lies outside the file's segments" : "");
		else
			snprintf(err, errlen, "event '%s': no SDT marker %s:%s in %s nor the %zu libraries and other files "
				 "it loads (.note.stapsdt)", spec, provider, name, list[0], n - 1);
		free(one);
		load_set_free(loaded, loaded ? n : 0);
		return -1;
	}
	free(one);
	load_set_free(loaded, loaded ? n : 0);
	for (size_t i = 0; i < e->n_sites; i++)
		if (e->ref_ctr[i] && !uprobe_has_ref_ctr()) {
			snprintf(err, errlen, "event '%s': the marker has a semaphore and this kernel's uprobe PMU cannot "
				 "raise it (no ref_ctr_offset, Linux 4.20): not supported", spec);
			return -1;
		}
	return 0;
}

static int parse_plain(const char *spec, const char *const *binaries, size_t n, struct rec_event *e, char *err,
		       size_t errlen)
{
	memset(e, 0, sizeof(*e));
	err[0] = 0;
	int rc = -1;
	if (!spec[0]) {
		snprintf(err, errlen, "-e: an empty event name");
		return -1;
	}
	for (size_t i = 0; i < sizeof(software) / sizeof(software[0]); i++)
		if (!strcmp(spec, software[i].name)) {
			e->kind = REC_EV_SOFTWARE;
			e->type = PERF_TYPE_SOFTWARE;
			e->config = software[i].config;
			e->n_sites = 1;
			rc = set_name(e, spec);
			goto out;
		}
	if (!strncmp(spec, "sdt:", 4)) {
		rc = parse_sdt(spec, spec + 4, binaries, n, e, err, errlen);
		if (!rc)
			rc = set_name(e, spec);
		goto out;
	}
	const char *colon = strrchr(spec, ':');
	if (!colon) {
		snprintf(err, errlen, "unknown event '%s' (software events: %s; tracepoints SYS:NAME; uprobes "
			 "BINARY:FUNCTION; SDT markers sdt:PROVIDER:NAME)", spec, rec_software_event_names);
		goto out;
	}
	char left[4096], right[256];
	snprintf(left, sizeof(left), "%.*s", (int)(colon - spec), spec);
	snprintf(right, sizeof(right), "%s", colon + 1);
	if (!left[0] || !right[0]) {
		snprintf(err, errlen, "unknown event '%s': SYS:NAME or BINARY:FUNCTION, both parts needed", spec);
		goto out;
	}
	const char *dir = tracefs_dirs[0];
	long const id = strchr(left, '/') ? 0 : tracepoint_id(left, right, &dir);
	if (id > 0) {
		e->kind = REC_EV_TRACEPOINT;
		e->type = PERF_TYPE_TRACEPOINT;
		e->config = (uint64_t)id;
		e->n_sites = 1;
		rc = set_name(e, spec);
		goto out;
	}
	char *bin = rec_resolve_binary(left);
	/* A library the command (or an attached process) loads, by name. */
	if (!bin && !strchr(left, '/'))
		bin = find_library(binaries, n, left);
	if (bin) {
		rc = parse_uprobe(spec, bin, right, e, err, errlen);
		if (!rc)
			rc = set_name(e, spec);
		goto out;
	}
	if (strchr(left, '/'))
		snprintf(err, errlen, "event '%s': no file %s", spec, left);
	else if (id < 0)
		snprintf(err, errlen, "event '%s': not a file, and the tracepoints cannot be read (%s/events: %s%s)",
			 spec, dir, strerror((int)-id), id == -EACCES ? "; root may" : "");
	else if (id == 0 && access(dir, F_OK) == 0)
		snprintf(err, errlen, "unknown event '%s': no tracepoint %s:%s (%s/events/%s/%s) and no file %s", spec,
			 left, right, dir, left, right, left);
	else
		snprintf(err, errlen, "unknown event '%s': no file %s, and tracefs is not mounted (mount -t tracefs "
			 "nodev /sys/kernel/tracing) to look for a tracepoint", spec, left);
out:
	if (rc) {
		if (!err[0] || rc > 0)
			snprintf(err, errlen, "event '%s': out of memory", spec);
		rec_event_free(e);
		return -1;
	}
	return 0;
}

static int is_software(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(software) / sizeof(software[0]); i++)
		if (strlen(software[i].name) == len && !strncmp(software[i].name, name, len))
			return 1;
	return 0;
}

/* A tracepoint's name: SYS:NAME, no '/' (a uprobe's path has one). */
static int is_tracepoint_name(const char *name, size_t len)
{
	const char *c = memchr(name, ':', len);
	return c && c > name && c + 1 < name + len && !memchr(name, '/', len) && !memchr(c + 1, ':', len - (size_t)(c + 1 - name));
}

/* Modifiers MODS (after "NAME:" or "NAME/TERMS/") into E: u (user mode
 * only), k (kernel mode only), both (either).  0, or -1 with ERR. */
static int parse_mods(const char *spec, const char *mods, int software_ev, struct rec_event *e, char *err,
		      size_t errlen)
{
	int u = 0, k = 0;
	for (const char *m = mods; *m; m++) {
		if (*m == 'u') {
			u = 1;
		} else if (*m == 'k') {
			k = 1;
		} else {
			snprintf(err, errlen, "event '%s': modifier '%c' not supported (u: user mode only, k: kernel mode "
				 "only; %s)", spec, *m,
				 *m == 'p' || *m == 'P' ? "precise sampling is for hardware events, stackcap samples software "
							  "events, tracepoints and probes"
				 : *m == 'h' || *m == 'G' || *m == 'H' ? "no hypervisor or guest sampling"
				 : "perf's other modifiers are not supported");
			return -1;
		}
	}
	if (!software_ev) {
		snprintf(err, errlen, "event '%s': modifiers u and k apply to software events (a tracepoint fires in "
			 "the kernel, a probe in user code)", spec);
		return -1;
	}
	e->exclude_kernel = u && !k;
	e->exclude_user = k && !u;
	return 0;
}

/* Terms TERMS (between the slashes of "NAME/TERMS/"): period=N, freq=N
 * (software events).  0, or -1 with ERR. */
static int parse_terms(const char *spec, const char *terms, size_t len, int software_ev, struct rec_event *e,
		       char *err, size_t errlen)
{
	char buf[256];
	if (!len || len >= sizeof(buf)) {
		snprintf(err, errlen, "event '%s': empty or too long terms between the slashes (period=N, freq=N)", spec);
		return -1;
	}
	memcpy(buf, terms, len);
	buf[len] = 0;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '='), *end;
		unsigned long long v = eq && eq[1] ? strtoull(eq + 1, &end, 10) : 0;
		int const ok = eq && eq[1] && !*end && v > 0;
		if (eq)
			*eq = 0;
		if (ok && !strcmp(t, "period") && v <= (1ull << 62)) {
			e->period = v;
		} else if (ok && !strcmp(t, "freq") && software_ev && v <= 100000) {
			e->freq = (uint32_t)v;
		} else {
			snprintf(err, errlen, "event '%s': term '%s%s' not supported (period=N: a sample every N events; "
				 "freq=HZ: software events, 1 to 100000)", spec, t, eq ? "=..." : "");
			return -1;
		}
	}
	if (e->period && e->freq) {
		snprintf(err, errlen, "event '%s': period= and freq= together", spec);
		return -1;
	}
	return 0;
}

int rec_event_parse(const char *spec, const char *const *binaries, size_t n, struct rec_event *e, char *err,
		    size_t errlen)
{
	/* perf's spellings: NAME:MODS (software events), NAME/TERMS/[MODS]
	 * (software events and tracepoints).  Parsed off here; the name
	 * stays as given. */
	const char *slash = strchr(spec, '/');
	const char *colon = strrchr(spec, ':');
	size_t blen = strlen(spec);
	struct rec_event mod = { 0 };
	const char *terms = NULL, *mods = NULL;
	size_t tlen = 0;
	if (slash && slash > spec && (is_software(spec, (size_t)(slash - spec)) ||
				      is_tracepoint_name(spec, (size_t)(slash - spec)))) {
		const char *close = strchr(slash + 1, '/');
		if (!close) {
			snprintf(err, errlen, "event '%s': terms go between two slashes (%.*s/period=N/)", spec,
				 (int)(slash - spec), spec);
			return -1;
		}
		blen = (size_t)(slash - spec);
		terms = slash + 1;
		tlen = (size_t)(close - terms);
		mods = close[1] == ':' ? close + 2 : close + 1;
	} else if (colon && (is_software(spec, (size_t)(colon - spec)) ||
			     (is_tracepoint_name(spec, (size_t)(colon - spec)) && colon[1] &&
			      strspn(colon + 1, "ukpPhGHSDIWe") == strlen(colon + 1)))) {
		/* A tracepoint's modifiers: refused by parse_mods. */
		blen = (size_t)(colon - spec);
		mods = colon + 1;
	}
	int const sw = is_software(spec, blen);
	if ((terms && parse_terms(spec, terms, tlen, sw, &mod, err, errlen)) ||
	    (mods && *mods && parse_mods(spec, mods, sw, &mod, err, errlen)))
		return -1;
	char base[4096];
	if (blen >= sizeof(base)) {
		snprintf(err, errlen, "event '%.64s...': name too long", spec);
		return -1;
	}
	memcpy(base, spec, blen);
	base[blen] = 0;
	if (parse_plain(base, binaries, n, e, err, errlen))
		return -1;
	if (blen != strlen(spec)) {
		free(e->name);
		if (set_name(e, spec)) {
			rec_event_free(e);
			snprintf(err, errlen, "event '%s': out of memory", spec);
			return -1;
		}
	}
	e->period = mod.period;
	e->freq = mod.freq;
	e->exclude_user = mod.exclude_user;
	e->exclude_kernel = mod.exclude_kernel;
	if (e->exclude_kernel && rec_event_in_kernel(e)) {
		snprintf(err, errlen, "event '%s': %s happens in the kernel: in user mode only (:u) it never fires",
			 spec, base);
		rec_event_free(e);
		return -1;
	}
	return 0;
}

void rec_event_attr(const struct rec_event *e, size_t site, const struct perf_event_attr *base, uint32_t freq,
		    uint64_t period, struct perf_event_attr *out)
{
	*out = *base;
	out->type = e->type;
	out->config = e->config;
	if (e->kind == REC_EV_UPROBE || e->kind == REC_EV_SDT) {
		out->config = (uint64_t)e->ref_ctr[site] << 32;
		out->config1 = (uint64_t)(uintptr_t)e->path; /* uprobe_path */
		out->config2 = e->offsets[site];            /* probe_offset */
	}
	/* The event's own period= or freq= over -c and -F. */
	if (e->period)
		period = e->period;
	else if (e->freq)
		period = 0, freq = e->freq;
	if (e->kind == REC_EV_SOFTWARE && !period) {
		out->freq = 1;
		out->sample_freq = freq;
	} else {
		out->freq = 0;
		out->sample_period = period ? period : 1;
	}
	/* :u, :k */
	if (e->exclude_kernel)
		out->exclude_kernel = 1;
	if (e->exclude_user)
		out->exclude_user = 1;
}

int rec_event_in_kernel(const struct rec_event *e)
{
	return e->kind == REC_EV_TRACEPOINT || e->exclude_user ||
	       (e->kind == REC_EV_SOFTWARE && (e->config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
					       e->config == PERF_COUNT_SW_CPU_MIGRATIONS));
}

void rec_event_free(struct rec_event *e)
{
	free(e->name);
	free(e->path);
	free(e->offsets);
	free(e->ref_ctr);
	memset(e, 0, sizeof(*e));
}
