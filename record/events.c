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

/* PATH as a file to probe: as given when it holds a '/' or names a file
 * here, else found in $PATH.  malloc'd absolute path, or NULL. */
static char *resolve_binary(const char *bin)
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

static int parse_uprobe(const char *spec, const char *bin, const char *func, struct rec_event *e, char *err,
			size_t errlen)
{
	e->kind = REC_EV_UPROBE;
	if (!(e->path = resolve_binary(bin))) {
		snprintf(err, errlen, "event '%s': no file %s", spec, bin);
		return -1;
	}
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
	if (bin[0]) {
		if (!(one = resolve_binary(bin))) {
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
		char *path = resolve_binary(list[i]);
		if (!path)
			continue;
		int const orc = elf_file_open(&f, path, why, sizeof(why));
		free(path);
		if (orc)
			continue;
		int const rc = find_sdt(e, f.elf, provider, name, &sem_bad);
		elf_file_close(&f);
		if (rc) {
			free(one);
			snprintf(err, errlen, "event '%s': out of memory", spec);
			return -1;
		}
		if (e->n_sites && !(e->path = resolve_binary(list[i]))) {
			free(one);
			snprintf(err, errlen, "event '%s': out of memory", spec);
			return -1;
		}
	}
	if (!e->n_sites) {
		if (n == 1)
			snprintf(err, errlen, "event '%s': no SDT marker %s:%s in %s (.note.stapsdt)%s", spec, provider, name,
				 list[0], sem_bad ? "; its semaphore lies outside the file's segments" : "");
		else
			snprintf(err, errlen, "event '%s': no SDT marker %s:%s in %s nor its %zu other files (.note.stapsdt)",
				 spec, provider, name, list[0], n - 1);
		free(one);
		return -1;
	}
	free(one);
	for (size_t i = 0; i < e->n_sites; i++)
		if (e->ref_ctr[i] && !uprobe_has_ref_ctr()) {
			snprintf(err, errlen, "event '%s': the marker has a semaphore and this kernel's uprobe PMU cannot "
				 "raise it (no ref_ctr_offset, Linux 4.20): not supported", spec);
			return -1;
		}
	return 0;
}

int rec_event_parse(const char *spec, const char *const *binaries, size_t n, struct rec_event *e, char *err,
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
	char *bin = resolve_binary(left);
	if (bin) {
		free(bin);
		rc = parse_uprobe(spec, left, right, e, err, errlen);
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
	if (e->kind == REC_EV_SOFTWARE && !period) {
		out->freq = 1;
		out->sample_freq = freq;
	} else {
		out->freq = 0;
		out->sample_period = period ? period : 1;
	}
}

int rec_event_in_kernel(const struct rec_event *e)
{
	return e->kind == REC_EV_TRACEPOINT ||
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
