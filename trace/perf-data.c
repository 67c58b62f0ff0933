/* Reading a perf.data file (file mode, this machine's byte order) into the
 * trace model (docs/perf-data.md).
 *
 * The data section is mapped, not read: queued events are file offsets, so
 * memory holds one round of 32-byte index entries, never sample bytes.
 * Events are delivered in perf's order (tools/perf/util/ordered-events.c):
 * events without a timestamp at once; the others queued and, at each
 * FINISHED_ROUND, those up to the highest timestamp seen before the
 * previous round flushed in (time, file order); the rest at the end.
 *
 * Maps: each process keeps its executable mappings as the kernel would
 * (a new mmap replaces what it overlaps); a maps generation is built only
 * when a sample follows a change, and kept until the end (consumers key
 * caches by entry address).  The load bias of a file mapping comes from
 * the ELF program headers of the recorded path when its build-id agrees
 * (perf.data records file offsets, our model ELF addresses). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <zstd.h>

#include "trace/mem-ranges.h"
#include "trace/perf-data.h"
#include "trace/reader-internal.h"

/* ---- perf's ABI (linux/perf_event.h, tools/perf/util/header.h) ------------ */

#define PERF_MAGIC2 0x32454c4946524550ull /* "PERFILE2" */
#define PERF_MAGIC2_SWAPPED 0x50455246494c4532ull
#define FILE_HEADER_SIZE 104u
#define PIPE_HEADER_SIZE 16u

enum {
	S_IP = 1u << 0, S_TID = 1u << 1, S_TIME = 1u << 2, S_ADDR = 1u << 3,
	S_READ = 1u << 4, S_CALLCHAIN = 1u << 5, S_ID = 1u << 6, S_CPU = 1u << 7,
	S_PERIOD = 1u << 8, S_STREAM_ID = 1u << 9, S_RAW = 1u << 10,
	S_BRANCH_STACK = 1u << 11, S_REGS_USER = 1u << 12, S_STACK_USER = 1u << 13,
	S_IDENTIFIER = 1u << 16,
};
enum { F_TOTAL_TIME_ENABLED = 1, F_TOTAL_TIME_RUNNING = 2, F_ID = 4, F_GROUP = 8, F_LOST = 16 };
#define BRANCH_HW_INDEX (1ull << 17)
#define ATTR_FREQ (1ull << 10)
#define ATTR_SAMPLE_ID_ALL (1ull << 18)
#define ATTR_EXCLUDE_CALLCHAIN_USER (1ull << 22)
/* Call chain context markers (PERF_CONTEXT_*): the entries that follow
 * PERF_CONTEXT_USER, up to the next marker, are user addresses. */
#define CONTEXT_USER ((uint64_t)-512)
#define CONTEXT_KERNEL ((uint64_t)-128)
#define CONTEXT_MAX ((uint64_t)-4095)

enum {
	R_MMAP = 1, R_LOST = 2, R_COMM = 3, R_EXIT = 4, R_THROTTLE = 5, R_FORK = 7, R_SAMPLE = 9,
	R_MMAP2 = 10, R_LOST_SAMPLES = 13,
	R_FINISHED_ROUND = 68, R_AUXTRACE = 71, R_COMPRESSED = 81,
};
#define MISC_CPUMODE_MASK 7u
#define MISC_KERNEL 1u
#define MISC_MMAP_DATA (1u << 13)
#define MISC_COMM_EXEC (1u << 13)
#define MISC_MMAP_BUILD_ID (1u << 14)
#define MISC_BUILD_ID_SIZE (1u << 15)

enum { FEAT_BUILD_ID = 2, FEAT_OSRELEASE = 4, FEAT_CMDLINE = 11, FEAT_COMPRESSED = 27 };

/* PERF_REG_X86_* -> ours (STACKCAP_REG_*); -1: not an unwinding register. */
static const int8_t perf_reg_to_ours[24] = {
	STACKCAP_REG_RAX, STACKCAP_REG_RBX, STACKCAP_REG_RCX, STACKCAP_REG_RDX,
	STACKCAP_REG_RSI, STACKCAP_REG_RDI, STACKCAP_REG_RBP, STACKCAP_REG_RSP,
	STACKCAP_REG_RIP, -1 /* flags */, -1 /* cs */, -1 /* ss */,
	-1, -1, -1, -1 /* ds es fs gs */,
	STACKCAP_REG_R8, STACKCAP_REG_R9, STACKCAP_REG_R10, STACKCAP_REG_R11,
	STACKCAP_REG_R12, STACKCAP_REG_R13, STACKCAP_REG_R14, STACKCAP_REG_R15,
};

/* ---- the model being built -------------------------------------------------- */

/* An interned path, with what the reader learnt of its file. */
struct path_info {
	char *path;
	uint64_t hash;
	uint8_t table_id_len;        /* from the build-id feature section */
	uint8_t table_id[SU_BUILD_ID_MAX];
	int elf_tried, elf_ok;
	uint8_t file_id_len;         /* read from the file on this machine */
	uint8_t file_id[SU_BUILD_ID_MAX];
	uint16_t nload;
	struct { uint64_t offset, vaddr, filesz; } load[16];
};

struct pmap {
	uint64_t start, end, pgoff, bias;
	uint32_t flags;
	uint8_t id_len;
	uint8_t id[SU_BUILD_ID_MAX];
	const char *path;            /* interned */
};

struct proc {
	struct su_process p;
	struct pmap *m;
	size_t n, cap;
	int dirty;                   /* maps changed since CUR */
	struct su_maps *cur;
	uint32_t next_gen;
	/* Every mapping, data too (attr.mmap_data): where a sample's stack
	 * ends.  Freed when the process ends or execs. */
	struct su_mem_ranges mem;
};

struct attr {
	uint64_t type, sample_type, read_format, flags, branch_sample_type;
	uint64_t sample_regs_user, period_or_freq;
	uint32_t sample_stack_user;
	uint16_t sample_max_stack;   /* call chain entries at most (0: the kernel's default) */
	uint32_t nregs;              /* popcount(sample_regs_user) */
	int8_t reg_map[64];          /* i-th value in a sample -> ours, or -1 */
};

struct qev {
	uint64_t ts, seq;
	const uint8_t *rec;
};

/* Decompressed records (perf record -z), freed once no queued event
 * points into them. */
/* perf -z: one record inflates to at most this (perf's own buffers are its
 * mmap size, 512 KiB by default), and the inflated records waiting for a
 * FINISHED_ROUND hold at most about COMPRESSED_HELD_MAX. */
#define COMPRESSED_RECORD_MAX (64u << 20)
#define COMPRESSED_HELD_MAX (64u << 20)

struct chunk {
	struct chunk *next;
	uint64_t last_seq;          /* of the last event queued from it */
	size_t len;
	uint8_t data[];
};

struct pr {
	const struct su_reader_opts *opts;
	const struct su_reader_callbacks *cb;
	struct su_reader_stats *st;
	char *err;
	size_t errlen;
	const char *name;

	const uint8_t *map;          /* the whole file, read-only private */
	uint64_t file_size;
	uint64_t data_off, data_size;

	struct attr *attrs;
	size_t n_attrs;
	struct id_attr { uint64_t id; size_t attr; } *ids;  /* sorted by id */
	size_t n_ids, cap_ids;
	int id_pos;                  /* u64 index of the id in a sample, or -1 */
	int id_from_end;             /* u64 index from the end of a sample_id trailer, or 0 */

	struct path_info **paths;    /* open addressing */
	size_t n_paths, cap_paths;

	struct proc **procs;         /* every section, in creation order */
	size_t n_procs, cap_procs;
	struct { uint32_t pid; struct proc *p; } *live; /* pid -> current section */
	size_t n_live, cap_live;

	struct su_maps **gens;       /* every generation built (freed at the end) */
	size_t n_gens, cap_gens;

	struct qev *q;
	size_t nq, capq;
	uint64_t seq, max_ts, next_flush;

	ZSTD_DCtx *dctx;
	struct chunk *chunks, *chunks_tail;
	uint8_t *rem;                /* 64 KiB: an event cut at a chunk end */
	size_t rem_len;
	size_t chunk_bytes;          /* inflated bytes held in chunks */
	int warned_chunks;

	/* A stack or user call chain [0], a kernel call chain [1], not
	 * 8-aligned in the file. */
	uint64_t *scratch[2];
	size_t scratch_cap[2];

	char osrelease[128];
	int vdso_tried;
	uint8_t vdso_id_len;
	uint8_t vdso_id[SU_BUILD_ID_MAX];

	uint64_t bad_samples, unknown_ids, compat_regs;
	/* A live stream (su_perf_stream): LOST and THROTTLE records told per
	 * process, thread exits; NULL for a file. */
	const struct su_perf_stream_callbacks *live_cb;
	uint64_t now;                /* time of the record being delivered */
	int cb_rc;
	int malformed;               /* the data section ended at a damaged record */
};

static void set_err(struct pr *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(struct pr *r, const char *fmt, ...)
{
	va_list ap;
	if (!r->err || !r->errlen || r->err[0])
		return;
	int n = snprintf(r->err, r->errlen, "%s: ", r->name);
	if (n < 0 || (size_t)n >= r->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

/* ---- interned paths and what their files say -------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h | 1;
}

static struct path_info *intern(struct pr *r, const char *s, size_t n)
{
	uint64_t const h = hash_bytes(s, n);
	if ((r->n_paths + 1) * 2 > r->cap_paths) {
		size_t ncap = r->cap_paths ? r->cap_paths * 2 : 64;
		struct path_info **nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return NULL;
		for (size_t i = 0; i < r->cap_paths; i++) {
			if (!r->paths[i])
				continue;
			size_t k = r->paths[i]->hash & (ncap - 1);
			while (nt[k])
				k = (k + 1) & (ncap - 1);
			nt[k] = r->paths[i];
		}
		free(r->paths);
		r->paths = nt;
		r->cap_paths = ncap;
	}
	size_t k = h & (r->cap_paths - 1);
	for (; r->paths[k]; k = (k + 1) & (r->cap_paths - 1))
		if (r->paths[k]->hash == h && strlen(r->paths[k]->path) == n &&
		    memcmp(r->paths[k]->path, s, n) == 0)
			return r->paths[k];
	struct path_info *pi = calloc(1, sizeof(*pi));
	if (!pi || !(pi->path = strndup(s, n))) {
		free(pi);
		return NULL;
	}
	pi->hash = h;
	r->paths[k] = pi;
	r->n_paths++;
	return pi;
}

/* The GNU build-id among the notes in BUF. */
static size_t note_build_id(const uint8_t *buf, size_t len, uint8_t *out)
{
	size_t off = 0;
	while (off + sizeof(Elf64_Nhdr) <= len) {
		Elf64_Nhdr nh;
		memcpy(&nh, buf + off, sizeof(nh));
		off += sizeof(nh);
		size_t const name_sz = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
		size_t const desc_sz = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
		if (name_sz > len - off || desc_sz > len - off - name_sz)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(buf + off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= SU_BUILD_ID_MAX) {
			memcpy(out, buf + off + name_sz, nh.n_descsz);
			return nh.n_descsz;
		}
		off += name_sz + desc_sz;
	}
	return 0;
}

/* Load segments and build-id of PI's file (on this machine), once. */
static void path_read_elf(struct path_info *pi)
{
	if (pi->elf_tried)
		return;
	pi->elf_tried = 1;
	/* Non-blocking and regular files only: a recorded path may name a FIFO
	 * or a device on this machine. */
	int fd = open(pi->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return;
	struct stat sb;
	Elf64_Ehdr eh;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode))
		goto out;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 128)
		goto out;
	Elf64_Phdr ph[128];
	size_t const phlen = (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
	if (pread(fd, ph, phlen, (off_t)eh.e_phoff) != (ssize_t)phlen)
		goto out;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && pi->nload < 16) {
			pi->load[pi->nload].offset = ph[i].p_offset;
			pi->load[pi->nload].vaddr = ph[i].p_vaddr;
			pi->load[pi->nload].filesz = ph[i].p_filesz;
			pi->nload++;
		} else if (ph[i].p_type == PT_NOTE && !pi->file_id_len && ph[i].p_filesz <= 65536) {
			uint8_t notes[65536];
			size_t const n = (size_t)ph[i].p_filesz;
			if (pread(fd, notes, n, (off_t)ph[i].p_offset) == (ssize_t)n)
				pi->file_id_len = (uint8_t)note_build_id(notes, n, pi->file_id);
		}
	}
	pi->elf_ok = pi->nload > 0;
out:
	close(fd);
}

/* The build-id of this process's vDSO: the recording's, when it was made
 * on this kernel and perf did not store one. */
static void own_vdso_id(struct pr *r)
{
	if (r->vdso_tried)
		return;
	r->vdso_tried = 1;
	struct utsname u;
	if (uname(&u) || !r->osrelease[0] || strcmp(u.release, r->osrelease) != 0)
		return;
	const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_phentsize != sizeof(Elf64_Phdr))
		return;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_NOTE) {
			size_t n = note_build_id(base + ph[i].p_offset, ph[i].p_filesz, r->vdso_id);
			if (n) {
				r->vdso_id_len = (uint8_t)n;
				return;
			}
		}
}

/* ---- processes -------------------------------------------------------------- */

static struct proc *proc_live(struct pr *r, uint32_t pid)
{
	if (!r->cap_live)
		return NULL;
	size_t k = (pid * 0x9E3779B1u) & (r->cap_live - 1);
	for (; r->live[k].p; k = (k + 1) & (r->cap_live - 1))
		if (r->live[k].pid == pid)
			return r->live[k].p;
	return NULL;
}

static int live_set(struct pr *r, uint32_t pid, struct proc *p)
{
	if ((r->n_live + 1) * 2 > r->cap_live) {
		size_t ncap = r->cap_live ? r->cap_live * 2 : 64;
		__typeof__(r->live) nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		for (size_t i = 0; i < r->cap_live; i++) {
			if (!r->live[i].p)
				continue;
			size_t k = (r->live[i].pid * 0x9E3779B1u) & (ncap - 1);
			while (nt[k].p)
				k = (k + 1) & (ncap - 1);
			nt[k] = r->live[i];
		}
		free(r->live);
		r->live = nt;
		r->cap_live = ncap;
	}
	size_t k = (pid * 0x9E3779B1u) & (r->cap_live - 1);
	for (; r->live[k].p; k = (k + 1) & (r->cap_live - 1))
		if (r->live[k].pid == pid) {
			r->live[k].p = p;
			return 0;
		}
	r->live[k].pid = pid;
	r->live[k].p = p;
	r->n_live++;
	return 0;
}

/* The most stack bytes a sample of A holds: sample_stack_user, unless the
 * record would pass 64 KiB (its size is a u16): then the kernel cuts the
 * copy to fit (perf_sample_ustack_size), 65,320 bytes with every user
 * register.  A copy this long may have been cut.  (Fields of variable
 * size before the stack, a call chain, make it smaller still: for the
 * kernel frames of a live stream (CHAIN), its count is counted here, the
 * context marker and addresses of a sample that has them by the trace's
 * reader; not for perf.data files.) */
static uint32_t attr_stack_cap(const struct attr *a, int chain)
{
	uint64_t const t = a->sample_type;
	uint64_t head = 8 + 8u * (!!(t & S_IDENTIFIER) + !!(t & S_IP) + !!(t & S_TID) + !!(t & S_TIME) +
				  !!(t & S_ADDR) + !!(t & S_ID) + !!(t & S_STREAM_ID) + !!(t & S_CPU) +
				  !!(t & S_PERIOD));
	if (t & S_REGS_USER)
		head += 8 + 8u * a->nregs;
	head += 16; /* the stack's size and dynamic size */
	if (chain && (t & S_CALLCHAIN)) /* nr: a sample without kernel frames */
		head += 8;
	if ((uint64_t)a->sample_stack_user + head <= 0xffff || head + 8 > 0xffff)
		return a->sample_stack_user;
	return (uint32_t)((0xffff - head - 8 + 7) & ~7ull);
}

/* A new section for PID (first sight, fork or exec), its maps copied from
 * FROM (fork) or empty. */
static struct proc *proc_new(struct pr *r, uint32_t pid, uint32_t ppid, const char *comm,
			     const struct proc *from)
{
	if (su_grow((void **)&r->procs, &r->cap_procs, r->n_procs + 1, sizeof(*r->procs)))
		return NULL;
	struct proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->p.pid = pid;
	p->p.ppid = ppid;
	p->p.comm = strdup(comm ? comm : "");
	p->p.exe = strdup(from && from->p.exe ? from->p.exe : "");
	p->p.policy = STACKCAP_POLICY_ALL;
	p->p.codec_version = STACKCAP_CODEC_VERSION;
	if (r->n_attrs) {
		p->p.stack_cap = attr_stack_cap(&r->attrs[0], r->live_cb != NULL);
		if (r->attrs[0].flags & ATTR_FREQ)
			p->p.frequency_hz = (uint32_t)r->attrs[0].period_or_freq;
	}
	for (size_t i = 0; i < r->n_procs; i++)
		if (r->procs[i]->p.pid == pid)
			p->p.seq++;
	p->dirty = 1;
	if (!p->p.comm || !p->p.exe)
		goto fail;
	if (from && from->n) {
		p->m = malloc(from->n * sizeof(*p->m));
		if (!p->m)
			goto fail;
		memcpy(p->m, from->m, from->n * sizeof(*p->m));
		p->n = p->cap = from->n;
	}
	if (from && su_mem_ranges_copy(&p->mem, &from->mem))
		goto fail;
	if (live_set(r, pid, p))
		goto fail;
	r->procs[r->n_procs++] = p;
	r->st->processes++;
	if (r->cb->process_start && !r->cb_rc)
		r->cb_rc = r->cb->process_start(r->cb->arg, &p->p);
	return p;
fail:
	free(p->p.comm);
	free(p->p.exe);
	free(p->m);
	su_mem_ranges_free(&p->mem);
	free(p);
	return NULL;
}

static struct proc *proc_get(struct pr *r, uint32_t pid)
{
	struct proc *p = proc_live(r, pid);
	return p ? p : proc_new(r, pid, 0, NULL, NULL);
}

/* Insert [START, END) as the kernel would: it replaces whatever it
 * overlaps.  EXEC 0: only the removal (a data mapping over code). */
static int proc_mmap(struct proc *p, const struct pmap *nm, int exec)
{
	/* Remove or cut every overlapping entry. */
	size_t need = p->n + 2;
	if (need > p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 16;
		while (ncap < need)
			ncap *= 2;
		struct pmap *m = realloc(p->m, ncap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		p->m = m;
		p->cap = ncap;
	}
	int changed = 0;
	for (size_t i = 0; i < p->n;) {
		struct pmap *e = &p->m[i];
		if (e->end <= nm->start || e->start >= nm->end) {
			i++;
			continue;
		}
		changed = 1;
		if (e->start < nm->start && e->end > nm->end) {
			/* Split in two around the new one. */
			memmove(&p->m[i + 1], &p->m[i], (p->n - i) * sizeof(*p->m));
			p->n++;
			p->m[i].end = nm->start;
			p->m[i + 1].pgoff += nm->end - p->m[i + 1].start;
			p->m[i + 1].start = nm->end;
			i += 2;
		} else if (e->start < nm->start) {
			e->end = nm->start;
			i++;
		} else if (e->end > nm->end) {
			e->pgoff += nm->end - e->start;
			e->start = nm->end;
			i++;
		} else {
			memmove(&p->m[i], &p->m[i + 1], (p->n - i - 1) * sizeof(*p->m));
			p->n--;
		}
	}
	if (exec) {
		size_t at = p->n;
		while (at > 0 && p->m[at - 1].start > nm->start)
			at--;
		memmove(&p->m[at + 1], &p->m[at], (p->n - at) * sizeof(*p->m));
		p->m[at] = *nm;
		p->n++;
		changed = 1;
	}
	if (changed)
		p->dirty = 1;
	return 0;
}

static void maps_free(struct su_maps *m)
{
	if (!m)
		return;
	free(m->entries);
	free(m->range_list);
	free(m);
}

/* The maps generation of P now, built if its maps changed. */
static struct su_maps *proc_maps(struct pr *r, struct proc *p)
{
	if (!p->dirty && p->cur)
		return p->cur;
	if (su_grow((void **)&r->gens, &r->cap_gens, r->n_gens + 1, sizeof(*r->gens)))
		return NULL;
	struct su_maps *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->generation = ++p->next_gen;
	m->count = (uint32_t)p->n;
	m->entries = calloc(p->n ? p->n : 1, sizeof(*m->entries));
	m->range_list = calloc(p->n ? p->n : 1, sizeof(*m->range_list));
	if (!m->entries || !m->range_list) {
		maps_free(m);
		return NULL;
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct pmap *e = &p->m[i];
		struct su_map_entry *o = &m->entries[i];
		o->start = e->start;
		o->end = e->end;
		o->offset = e->pgoff;
		o->bias = e->bias;
		o->flags = e->flags;
		o->build_id_len = e->id_len;
		memcpy(o->build_id, e->id, e->id_len);
		o->path = (char *)e->path; /* interned: freed with the reader */
		m->range_list[i] = (struct stackcap_code_range){ e->start, e->end, (uint32_t)i };
	}
	if (stackcap_code_list_check(m->range_list, m->count)) {
		maps_free(m); /* cannot happen: proc_mmap keeps them disjoint */
		return NULL;
	}
	r->gens[r->n_gens++] = m;
	p->cur = m;
	p->dirty = 0;
	if (r->cb->maps && !r->cb_rc)
		r->cb_rc = r->cb->maps(r->cb->arg, &p->p, m);
	return m;
}

/* ---- records -------------------------------------------------------------------- */

static const struct attr *attr_of_id(struct pr *r, uint64_t id)
{
	size_t lo = 0, hi = r->n_ids;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->ids[mid].id == id)
			return &r->attrs[r->ids[mid].attr];
		if (r->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Size of the sample_id trailer of a non-sample record. */
static size_t trailer_size(const struct attr *a)
{
	if (!(a->flags & ATTR_SAMPLE_ID_ALL))
		return 0;
	uint64_t const t = a->sample_type;
	return 8u * (!!(t & S_TID) + !!(t & S_TIME) + !!(t & S_ID) + !!(t & S_STREAM_ID) +
		     !!(t & S_CPU) + !!(t & S_IDENTIFIER));
}

/* The attr of a non-sample record and its trailer. */
static const struct attr *record_attr(struct pr *r, const uint8_t *rec, size_t len)
{
	const struct attr *a = &r->attrs[0];
	if (r->n_attrs > 1 && r->id_from_end && len >= 8 + 8u * (size_t)r->id_from_end) {
		const struct attr *b = attr_of_id(r, su_ld64(rec + len - 8u * (size_t)r->id_from_end));
		if (b)
			a = b;
	}
	return a;
}

/* Timestamp of REC for ordering: 0 when it has none (delivered at once). */
static uint64_t record_time(struct pr *r, const uint8_t *rec, size_t len)
{
	uint32_t const type = su_ld32(rec);
	if (type == R_SAMPLE) {
		const struct attr *a = &r->attrs[0];
		if (r->n_attrs > 1 && r->id_pos >= 0 && len >= 8 + 8u * ((size_t)r->id_pos + 1)) {
			const struct attr *b = attr_of_id(r, su_ld64(rec + 8 + 8u * (size_t)r->id_pos));
			if (b)
				a = b;
		}
		uint64_t const t = a->sample_type;
		if (!(t & S_TIME))
			return 0;
		size_t const at = 8 + 8u * (!!(t & S_IDENTIFIER) + !!(t & S_IP) + !!(t & S_TID));
		return at + 8 <= len ? su_ld64(rec + at) : 0;
	}
	if (type >= 64) /* perf's own records carry no sample_id */
		return 0;
	const struct attr *a = record_attr(r, rec, len);
	size_t const ts = trailer_size(a);
	if (!ts || !(a->sample_type & S_TIME) || len < 8 + ts)
		return 0;
	return su_ld64(rec + len - ts + 8u * !!(a->sample_type & S_TID));
}

static void on_mmap(struct pr *r, const uint8_t *rec, size_t len, int v2)
{
	uint16_t const misc = su_ld16(rec + 4);
	size_t const fixed = v2 ? 8 + 8 + 24 + 24 + 8 : 8 + 8 + 24;
	size_t const tl = trailer_size(record_attr(r, rec, len));
	if (len < fixed + tl + 1) {
		r->bad_samples++;
		return;
	}
	uint32_t const pid = su_ld32(rec + 8);
	if ((misc & MISC_CPUMODE_MASK) == MISC_KERNEL || pid == UINT32_MAX)
		return; /* the kernel's maps: we unwind user space only */
	uint64_t const addr = su_ld64(rec + 16), mlen = su_ld64(rec + 24), pgoff = su_ld64(rec + 32);
	int exec;
	struct pmap nm = { .start = addr, .end = addr + mlen, .pgoff = pgoff };
	if (v2) {
		uint32_t const prot = su_ld32(rec + 64);
		exec = (prot & 4) != 0; /* PROT_EXEC */
		if (misc & MISC_MMAP_BUILD_ID) {
			uint8_t const n = rec[40];
			if (n > 0 && n <= 20) {
				nm.id_len = n;
				memcpy(nm.id, rec + 44, n);
			}
		}
	} else {
		exec = !(misc & MISC_MMAP_DATA);
	}
	if (nm.end <= nm.start)
		return;
	const char *fname = (const char *)rec + fixed;
	size_t const fmax = len - fixed - tl;
	size_t const flen = strnlen(fname, fmax);
	struct proc *p = proc_get(r, pid);
	if (!p || su_mem_ranges_map(&p->mem, nm.start, nm.end, flen == 7 && !memcmp(fname, "[stack]", 7)))
		goto oom;
	if (exec) {
		struct path_info *pi = intern(r, fname, flen);
		if (!pi)
			goto oom;
		nm.path = pi->path;
		if (strcmp(pi->path, "[vdso]") == 0) {
			nm.flags = SU_MAP_VDSO;
			nm.bias = nm.start - nm.pgoff;
			if (!nm.id_len && pi->table_id_len) {
				nm.id_len = pi->table_id_len;
				memcpy(nm.id, pi->table_id, nm.id_len);
			}
			if (!nm.id_len) {
				own_vdso_id(r);
				nm.id_len = r->vdso_id_len;
				memcpy(nm.id, r->vdso_id, nm.id_len);
			}
		} else if (pi->path[0] != '/' || !strcmp(pi->path, "//anon") || !strncmp(pi->path, "/memfd:", 7) ||
			   !strncmp(pi->path, "/anon_hugepage", 14) || !strncmp(pi->path, "/dev/zero", 9)) {
			/* //anon, [heap], [stack], /memfd:..., /anon_hugepage,
			 * /dev/zero: code with no file (JITs), as perf's
			 * is_anon_memory() and is_no_dso_memory() say. */
			nm.flags = SU_MAP_ANON;
			nm.pgoff = 0; /* the kernel's is the address: no file, no offset */
			struct path_info *e = intern(r, "", 0);
			if (!e)
				goto oom;
			nm.path = e->path;
		} else {
			if (!nm.id_len && pi->table_id_len) {
				nm.id_len = pi->table_id_len;
				memcpy(nm.id, pi->table_id, nm.id_len);
			}
			path_read_elf(pi);
			nm.bias = nm.start - nm.pgoff;
			int const same = pi->elf_ok &&
				(!nm.id_len || (nm.id_len == pi->file_id_len && !memcmp(nm.id, pi->file_id, nm.id_len)));
			if (same) {
				if (!nm.id_len) {
					nm.id_len = pi->file_id_len;
					memcpy(nm.id, pi->file_id, nm.id_len);
				}
				for (unsigned i = 0; i < pi->nload; i++) {
					uint64_t const lo = pi->load[i].offset & ~0xfffull;
					if (nm.pgoff >= lo && nm.pgoff < pi->load[i].offset + pi->load[i].filesz) {
						nm.bias = nm.start - nm.pgoff + pi->load[i].offset - pi->load[i].vaddr;
						break;
					}
				}
			}
			if (!p->p.exe[0]) {
				char *exe = strdup(pi->path);
				if (!exe)
					goto oom;
				free(p->p.exe);
				p->p.exe = exe;
			}
			if (strcmp(p->p.exe, pi->path) == 0)
				nm.flags |= SU_MAP_MAIN;
		}
	}
	if (proc_mmap(p, &nm, exec))
		goto oom;
	return;
oom:
	r->cb_rc = -ENOMEM;
}

static void on_comm(struct pr *r, const uint8_t *rec, size_t len)
{
	size_t const tl = trailer_size(record_attr(r, rec, len));
	if (len < 16 + tl + 1) {
		r->bad_samples++;
		return;
	}
	uint32_t const pid = su_ld32(rec + 8), tid = su_ld32(rec + 12);
	const char *comm = (const char *)rec + 16;
	size_t const n = strnlen(comm, len - 16 - tl);
	char name[64];
	snprintf(name, sizeof(name), "%.*s", (int)(n < 63 ? n : 63), comm);
	if (pid != tid)
		return; /* a thread's own name: the process keeps its comm */
	struct proc *p = proc_live(r, pid);
	if (su_ld16(rec + 4) & MISC_COMM_EXEC) {
		/* exec: a new image, its mappings follow. */
		if (p)
			su_mem_ranges_free(&p->mem);
		if (!proc_new(r, pid, p ? p->p.ppid : 0, name, NULL))
			r->cb_rc = -ENOMEM;
		return;
	}
	if (!p) {
		if (!proc_new(r, pid, 0, name, NULL))
			r->cb_rc = -ENOMEM;
		return;
	}
	char *c = strdup(name);
	if (!c) {
		r->cb_rc = -ENOMEM;
		return;
	}
	free(p->p.comm);
	p->p.comm = c;
}

static void on_fork_exit(struct pr *r, const uint8_t *rec, size_t len, int fork)
{
	if (len < 8 + 24) {
		r->bad_samples++;
		return;
	}
	uint32_t const pid = su_ld32(rec + 8), ppid = su_ld32(rec + 12), tid = su_ld32(rec + 16);
	if (fork) {
		if (pid == ppid || pid != tid)
			return; /* a new thread of PPID */
		const struct proc *parent = proc_live(r, ppid);
		if (!proc_new(r, pid, ppid, parent ? parent->p.comm : NULL, parent))
			r->cb_rc = -ENOMEM;
		return;
	}
	if (r->live_cb && r->live_cb->exit && !r->cb_rc)
		r->cb_rc = r->live_cb->exit(r->cb->arg, pid, tid);
	if (pid != tid)
		return;
	struct proc *p = proc_live(r, pid);
	if (p && !p->p.ended) {
		p->p.ended = 1;
		r->st->ended++;
		su_mem_ranges_free(&p->mem);
	}
}

/* Skip the READ field of a sample: its size from the read_format. */
static int skip_read(const struct attr *a, const uint8_t **pp, const uint8_t *end)
{
	const uint8_t *p = *pp;
	uint64_t const f = a->read_format;
	uint64_t const per = 8u * (1 + !!(f & F_ID) + !!(f & F_LOST));
	uint64_t const times = 8u * (!!(f & F_TOTAL_TIME_ENABLED) + !!(f & F_TOTAL_TIME_RUNNING));
	if (f & F_GROUP) {
		if (end - p < 8)
			return -1;
		uint64_t const nr = su_ld64(p);
		if (nr > (uint64_t)(end - p) / per)
			return -1;
		uint64_t const sz = 8 + times + nr * per;
		if (sz > (uint64_t)(end - p))
			return -1;
		*pp = p + sz;
	} else {
		uint64_t const sz = per + times;
		if (sz > (uint64_t)(end - p))
			return -1;
		*pp = p + sz;
	}
	return 0;
}

#define NEED(n) do { if ((uint64_t)(end - p) < (uint64_t)(n)) goto bad; } while (0)

/* N 64-bit words at P: in place when P is 8-aligned (the mapping is
 * private, never written), else copied into the reader's scratch SLOT
 * (one sample's stack or user call chain at a time in 0, its kernel call
 * chain in 1).  NULL (and cb_rc set) when out of memory. */
static uint64_t *words_at(struct pr *r, const uint8_t *p, size_t n, int slot)
{
	if (((uintptr_t)p & 7) == 0)
		return (uint64_t *)(uintptr_t)p;
	if (su_grow((void **)&r->scratch[slot], &r->scratch_cap[slot], n + 1, 8)) {
		r->cb_rc = -ENOMEM;
		return NULL;
	}
	memcpy(r->scratch[slot], p, n * 8);
	return r->scratch[slot];
}

/* The part of the NR-entry call chain at P after context marker MARKER,
 * up to the next marker: its first entry and count (*N, at most MAX), or
 * NULL when it has none. */
static const uint8_t *chain_part(const uint8_t *p, uint64_t nr, uint64_t marker, uint32_t max, uint32_t *n)
{
	for (uint64_t i = 0; i < nr; i++) {
		if (su_ld64(p + 8 * i) != marker)
			continue;
		uint64_t k = i + 1;
		while (k < nr && su_ld64(p + 8 * k) < CONTEXT_MAX)
			k++;
		if (k == i + 1)
			return NULL;
		*n = (uint32_t)(k - i - 1 < max ? k - i - 1 : max);
		return p + 8 * (i + 1);
	}
	return NULL;
}

static void on_sample(struct pr *r, const uint8_t *rec, size_t len)
{
	const uint8_t *p = rec + 8, *const end = rec + len;
	const struct attr *a = &r->attrs[0];
	if (r->n_attrs > 1 && r->id_pos >= 0) {
		if (len < 8 + 8u * ((size_t)r->id_pos + 1))
			goto bad;
		a = attr_of_id(r, su_ld64(rec + 8 + 8u * (size_t)r->id_pos));
		if (!a) {
			r->unknown_ids++;
			return;
		}
	}
	uint64_t const t = a->sample_type;
	uint32_t pid = 0, tid = 0;
	uint64_t ts = 0;
	if (t & S_IDENTIFIER) { NEED(8); p += 8; }
	if (t & S_IP) { NEED(8); p += 8; }
	if (t & S_TID) { NEED(8); pid = su_ld32(p); tid = su_ld32(p + 4); p += 8; }
	if (t & S_TIME) { NEED(8); ts = su_ld64(p); p += 8; }
	if (t & S_ADDR) { NEED(8); p += 8; }
	if (t & S_ID) { NEED(8); p += 8; }
	if (t & S_STREAM_ID) { NEED(8); p += 8; }
	if (t & S_CPU) { NEED(8); p += 8; }
	if (t & S_PERIOD) { NEED(8); p += 8; }
	if ((t & S_READ) && skip_read(a, &p, end))
		goto bad;
	const uint8_t *uchain = NULL, *kchain = NULL;
	uint32_t n_uchain = 0, n_kchain = 0;
	if (t & S_CALLCHAIN) {
		NEED(8);
		uint64_t const nr = su_ld64(p);
		p += 8;
		if (nr > (uint64_t)(end - p) / 8)
			goto bad;
		/* The kernel part of a chain whose user part is ours to unwind
		 * (stackcap record's live stream, exclude_callchain_user; not
		 * yet perf.data files), and the user part. */
		if (r->live_cb && (a->flags & ATTR_EXCLUDE_CALLCHAIN_USER))
			kchain = chain_part(p, nr, CONTEXT_KERNEL, UINT16_MAX, &n_kchain);
		uchain = chain_part(p, nr, CONTEXT_USER, UINT32_MAX, &n_uchain);
		p += nr * 8;
	}
	if (t & S_RAW) {
		NEED(4);
		uint32_t const sz = su_ld32(p);
		p += 4;
		NEED(sz);
		p += sz;
	}
	if (t & S_BRANCH_STACK) {
		NEED(8);
		uint64_t const nr = su_ld64(p);
		p += 8;
		if (a->branch_sample_type & BRANCH_HW_INDEX) { NEED(8); p += 8; }
		if (nr > (uint64_t)(end - p) / 24)
			goto bad;
		p += nr * 24;
	}
	if (r->opts && r->opts->pid && r->opts->pid != pid)
		return;
	if (r->opts && r->opts->tid && r->opts->tid != tid)
		return;
	if (r->opts && (ts < r->opts->time_begin || (r->opts->time_end && ts > r->opts->time_end)))
		return;
	struct stackcap_image img = { .policy = STACKCAP_POLICY_ALL, .encoding = STACKCAP_WORDS_RAW };
	uint64_t abi = 0;
	if (t & S_REGS_USER) {
		NEED(8);
		abi = su_ld64(p);
		p += 8;
		if (abi) {
			NEED(8u * a->nregs);
			for (uint32_t i = 0; i < a->nregs; i++) {
				int const o = a->reg_map[i];
				if (o >= 0) {
					img.regs[o] = su_ld64(p + 8u * i);
					img.regs_kept |= 1u << o;
				}
			}
			p += 8u * a->nregs;
		}
	}
	uint64_t size = 0, dyn = 0;
	const uint8_t *stack = NULL;
	if (t & S_STACK_USER) {
		NEED(8);
		size = su_ld64(p);
		p += 8;
		if (size) {
			NEED(size);
			stack = p;
			p += size;
			NEED(8);
			dyn = su_ld64(p);
			p += 8;
			if (dyn > size)
				goto bad;
		}
	}
	uint32_t const need = 1u << STACKCAP_REG_RIP | 1u << STACKCAP_REG_RSP;
	int const no_user = abi != 2 || (img.regs_kept & need) != need || !(t & S_STACK_USER);
	int const chain_only = no_user && uchain && abi != 1;
	if (no_user) {
		/* A kernel thread, a task sampled while exiting, a 32-bit task,
		 * or an event without --call-graph dwarf: no user state to
		 * unwind.  Delivered with no registers and no stack: the
		 * unwinder takes the user call chain the kernel walked when
		 * there is one (perf record -g), else says no-user, so that
		 * every sample perf script prints is printed, in its order. */
		if (abi == 1)
			r->compat_regs++;
		if (!chain_only)
			r->st->no_user_regs++;
		else
			r->st->chain_only++;
		memset(img.regs, 0, sizeof(img.regs));
		img.regs_kept = 0;
		size = dyn = 0;
		stack = NULL;
	}
	img.sp = img.regs[STACKCAP_REG_RSP];
	img.nwords = dyn / 8;
	struct proc *pr = proc_get(r, pid);
	if (!pr) {
		r->cb_rc = -ENOMEM;
		return;
	}
	/* The copy cut where the stack sp is in ends (recorded with data
	 * mappings): what the kernel copied above it is another mapping's. */
	uint64_t const top = img.nwords ? su_mem_ranges_stack_end(&pr->mem, img.sp) : 0;
	int const cut = top > img.sp && (top - img.sp) / 8 < img.nwords;
	if (cut)
		img.nwords = (top - img.sp) / 8;
	img.capacity = img.nwords;
	if (stack && !(img.words = words_at(r, stack, img.nwords, 0)))
		return;
	struct su_maps *maps = proc_maps(r, pr);
	if (!maps) {
		r->cb_rc = -ENOMEM;
		return;
	}
	if (!maps->count && (!no_user || chain_only))
		r->st->no_maps++;
	r->st->samples++;
	r->st->raw_stack_bytes += img.nwords * 8;
	r->st->blob_bytes += size;
	if (!r->cb->sample || r->cb_rc)
		return;
	struct su_sample s = {
		.time_ns = ts,
		.pid = pid,
		.tid = tid,
		.process = &pr->p,
		.maps = maps,
		.image = &img,
		.stack_capped = !no_user && dyn >= size && !cut,
	};
	if (chain_only) {
		if (!(s.user_chain = words_at(r, uchain, n_uchain, 0)))
			return;
		s.n_user_chain = n_uchain;
	}
	if (kchain) {
		if (!(s.kernel_chain = words_at(r, kchain, n_kchain, 1)))
			return;
		s.n_kernel_chain = n_kchain;
	}
	r->cb_rc = r->cb->sample(r->cb->arg, &s);
	return;
bad:
	r->bad_samples++;
}

/* A live stream's loss, told with the pid and tid of its sample_id
 * trailer (the task running when the kernel wrote the record). */
static void lost_told(struct pr *r, const uint8_t *rec, size_t len, uint64_t n, int throttled)
{
	if (!r->live_cb || !r->live_cb->lost || r->cb_rc)
		return;
	const struct attr *a = record_attr(r, rec, len);
	size_t const tl = trailer_size(a);
	uint32_t pid = UINT32_MAX, tid = UINT32_MAX;
	if (tl && (a->sample_type & S_TID) && len >= 8 + tl) {
		pid = su_ld32(rec + len - tl);
		tid = su_ld32(rec + len - tl + 4);
	}
	r->cb_rc = r->live_cb->lost(r->cb->arg, pid, tid, n, throttled);
}

static void deliver(struct pr *r, const uint8_t *rec, size_t len)
{
	switch (su_ld32(rec)) {
	case R_SAMPLE: on_sample(r, rec, len); break;
	case R_MMAP: on_mmap(r, rec, len, 0); break;
	case R_MMAP2: on_mmap(r, rec, len, 1); break;
	case R_COMM: on_comm(r, rec, len); break;
	case R_FORK: on_fork_exit(r, rec, len, 1); break;
	case R_EXIT: on_fork_exit(r, rec, len, 0); break;
	case R_LOST:
		if (len >= 24) {
			r->st->drops += su_ld64(rec + 16);
			lost_told(r, rec, len, su_ld64(rec + 16), 0);
		}
		break;
	case R_LOST_SAMPLES:
		if (len >= 16) {
			r->st->drops += su_ld64(rec + 8);
			lost_told(r, rec, len, su_ld64(rec + 8), 0);
		}
		break;
	case R_THROTTLE:
		lost_told(r, rec, len, 0, 1);
		break;
	default: break; /* KSYMBOL, BPF_EVENT...: nothing for user stacks */
	}
}

/* ---- ordering ------------------------------------------------------------------ */

static int qev_cmp(const void *a, const void *b)
{
	const struct qev *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Deliver the queued events with ts <= LIMIT, in (ts, file order). */
static void flush_until(struct pr *r, uint64_t limit)
{
	if (!r->nq)
		return;
	qsort(r->q, r->nq, sizeof(*r->q), qev_cmp);
	size_t i = 0;
	for (; i < r->nq && r->q[i].ts <= limit && !r->cb_rc; i++) {
		r->now = r->q[i].ts;
		deliver(r, r->q[i].rec, su_ld16(r->q[i].rec + 6));
	}
	memmove(r->q, r->q + i, (r->nq - i) * sizeof(*r->q));
	r->nq -= i;
}

/* Queue or deliver one record (from the file or a decompressed chunk). */
static int handle_record(struct pr *r, const uint8_t *rec, uint16_t size)
{
	uint64_t const ts = record_time(r, rec, size);
	if (!ts || ts == UINT64_MAX) {
		deliver(r, rec, size);
		return 0;
	}
	if (r->nq == r->capq && su_grow((void **)&r->q, &r->capq, r->nq + 1, sizeof(*r->q))) {
		r->cb_rc = -ENOMEM;
		return -ENOMEM;
	}
	r->q[r->nq++] = (struct qev){ ts, r->seq++, rec };
	if (ts > r->max_ts)
		r->max_ts = ts;
	return 0;
}

/* Free the decompressed chunks no queued event points into any more. */
static void chunks_release(struct pr *r)
{
	uint64_t min_seq = UINT64_MAX;
	for (size_t i = 0; i < r->nq; i++)
		if (r->q[i].seq < min_seq)
			min_seq = r->q[i].seq;
	while (r->chunks && r->chunks->last_seq < min_seq) {
		struct chunk *c = r->chunks;
		r->chunks = c->next;
		if (!r->chunks)
			r->chunks_tail = NULL;
		r->chunk_bytes -= c->len;
		free(c);
	}
}

/* Chunk C, whose events were queued from sequence SEQ0 on, joins the list
 * while a queued event points into it; freed at once if none does. */
static void chunk_keep(struct pr *r, struct chunk *c, uint64_t seq0)
{
	if (r->seq == seq0) {
		free(c);
		return;
	}
	c->last_seq = r->seq - 1;
	r->chunk_bytes += c->len;
	if (r->chunks_tail)
		r->chunks_tail->next = c;
	else
		r->chunks = c;
	r->chunks_tail = c;
}

/* Queue the whole records of chunk C (decompressed, or copied from a live
 * ring), C->len bytes; @return the bytes consumed (a record cut at the
 * end is left).  A record shorter than its header stops it (*DAMAGED). */
static size_t queue_chunk(struct pr *r, struct chunk *c, const char *what, int *damaged)
{
	c->next = NULL;
	c->last_seq = 0;
	size_t pos = 0;
	while (c->len - pos >= 8 && !r->cb_rc) {
		uint16_t const rsize = su_ld16(c->data + pos + 6);
		if (rsize < 8) {
			/* Events queued before the damage still point into C: it
			 * is kept by the caller, not freed here (a fuzzing finding). */
			su_reader_warn("%s: damaged record inside %s: the rest is ignored", r->name, what);
			r->malformed = 1;
			*damaged = 1;
			break;
		}
		if (rsize > c->len - pos)
			break;
		if (handle_record(r, c->data + pos, rsize))
			break;
		pos += rsize;
	}
	return pos;
}

/* PERF_RECORD_COMPRESSED (perf record -z): one zstd stream across all of
 * them; an event may continue in the next one (perf's decomp_last_rem). */
static int on_compressed(struct pr *r, const uint8_t *rec, uint16_t size)
{
	if (!r->dctx && (!(r->dctx = ZSTD_createDCtx()) || !(r->rem = malloc(65536))))
		return r->cb_rc = -ENOMEM;
	size_t cap = r->rem_len + 8 * (size_t)size + 65536;
	struct chunk *c = malloc(sizeof(*c) + cap);
	if (!c)
		return r->cb_rc = -ENOMEM;
	memcpy(c->data, r->rem, r->rem_len);
	size_t len = r->rem_len;
	ZSTD_inBuffer in = { rec + 8, (size_t)size - 8, 0 };
	/* Until the input is consumed and the output was not filled: zstd
	 * may hold decoded bytes back when the output is full, even once it
	 * has taken all the input (the last samples of a file were lost so). */
	for (int full = 1; in.pos < in.size || full;) {
		if (len == cap) {
			if (cap * 2 > COMPRESSED_RECORD_MAX) {
				free(c);
				su_reader_warn("%s: a compressed record inflates past %u MiB: the rest is ignored", r->name,
					       COMPRESSED_RECORD_MAX >> 20);
				r->malformed = 1;
				return -EINVAL;
			}
			struct chunk *n = realloc(c, sizeof(*c) + cap * 2);
			if (!n) {
				free(c);
				return r->cb_rc = -ENOMEM;
			}
			c = n;
			cap *= 2;
		}
		ZSTD_outBuffer out = { c->data, cap, len };
		size_t const zr = ZSTD_decompressStream(r->dctx, &out, &in);
		if (ZSTD_isError(zr)) {
			free(c);
			su_reader_warn("%s: compressed record does not decompress (%s): the rest is ignored",
				       r->name, ZSTD_getErrorName(zr));
			r->malformed = 1;
			return -EINVAL;
		}
		len = out.pos;
		full = len == cap;
	}
	c->len = len;
	uint64_t const seq0 = r->seq;
	int damaged = 0;
	size_t const pos = queue_chunk(r, c, "a compressed one", &damaged);
	/* The partial event at the end starts the next chunk (shorter than one
	 * record, so it fits REM; nothing is carried after damage or a stop). */
	r->rem_len = damaged || r->cb_rc || len - pos > 65535 ? 0 : len - pos;
	memcpy(r->rem, c->data + pos, r->rem_len);
	chunk_keep(r, c, seq0);
	/* Events wait for a FINISHED_ROUND to be sorted, and their inflated
	 * chunks with them: a file without rounds would hold them all. */
	if (r->chunk_bytes > COMPRESSED_HELD_MAX && !r->cb_rc) {
		if (!r->warned_chunks++)
			su_reader_warn("%s: more than %u MiB of compressed records without a FINISHED_ROUND: "
				       "the events so far are delivered, later ones may be out of time order",
				       r->name, COMPRESSED_HELD_MAX >> 20);
		flush_until(r, UINT64_MAX);
		chunks_release(r);
	}
	return damaged ? -EINVAL : 0;
}

/* Give back the pages of the data section below FROM that no queued event
 * points into: the mapping is read once, front to back, so the resident
 * part stays about one round long instead of growing to the file's size. */
static void release_consumed(struct pr *r, uint64_t from, uint64_t *released)
{
	const uint8_t *const base = r->map + r->data_off;
	uint64_t low = from;
	for (size_t i = 0; i < r->nq; i++)
		if (r->q[i].rec >= base && r->q[i].rec < base + from && (uint64_t)(r->q[i].rec - base) < low)
			low = (uint64_t)(r->q[i].rec - base);
	uint64_t const start = (r->data_off + *released + 4095) & ~4095ull;
	uint64_t const end = (r->data_off + low) & ~4095ull;
	if (end >= start + (8u << 20)) {
		madvise((void *)(uintptr_t)(r->map + start), end - start, MADV_DONTNEED);
		*released = end - r->data_off;
	}
}

static void run_data(struct pr *r)
{
	const uint8_t *const base = r->map + r->data_off;
	uint64_t pos = 0;
	uint64_t populated = 0, released = 0;
	while (pos < r->data_size && !r->cb_rc) {
		if (pos >= populated) {
			/* Page tables filled 32 MiB at a time: one call instead of
			 * thousands of faults (a third of the time on big files). */
			uint64_t const from = (r->data_off + pos) & ~4095ull;
			uint64_t const len = r->file_size - from < (32u << 20) ? r->file_size - from : (32u << 20);
			madvise((void *)(uintptr_t)(r->map + from), len, MADV_POPULATE_READ);
			populated = from + len - r->data_off;
		}
		if (r->data_size - pos < 8) {
			r->malformed = 1;
			su_reader_warn("%s: data section ends inside a record header at offset %" PRIu64
				       ": the rest is ignored", r->name, r->data_off + pos);
			break;
		}
		const uint8_t *rec = base + pos;
		uint32_t const type = su_ld32(rec);
		uint16_t const size = su_ld16(rec + 6);
		if (size < 8 || size > r->data_size - pos) {
			r->malformed = 1;
			su_reader_warn("%s: damaged record (type %u, size %u) at offset %" PRIu64
				       ": the rest of the data section is ignored",
				       r->name, type, size, r->data_off + pos);
			break;
		}
		pos += size;
		if (type == R_AUXTRACE && size >= 16) {
			uint64_t const aux = su_ld64(rec + 8);
			if (aux > r->data_size - pos) {
				r->malformed = 1;
				break;
			}
			pos += aux;
			continue;
		}
		if (type == R_COMPRESSED) {
			if (on_compressed(r, rec, size))
				break;
			continue;
		}
		if (type == R_FINISHED_ROUND) {
			flush_until(r, r->next_flush);
			r->next_flush = r->max_ts;
			chunks_release(r);
			release_consumed(r, pos, &released);
			continue;
		}
		if (handle_record(r, rec, size))
			break;
	}
	if (!r->cb_rc)
		flush_until(r, UINT64_MAX);
}

/* ---- header, attributes, features ------------------------------------------------ */

/* By id, then attribute (a stable order for equal ids). */
static int id_cmp(const void *a, const void *b)
{
	const struct id_attr *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->attr > y->attr) - (x->attr < y->attr);
}

/* SAMPLE_TYPE spelled as perf report --header does (IP|TID|TIME|...). */
static void sample_type_name(uint64_t t, char *buf, size_t len)
{
	static const char *const names[] = {
		"IP", "TID", "TIME", "ADDR", "READ", "CALLCHAIN", "ID", "CPU", "PERIOD",
		"STREAM_ID", "RAW", "BRANCH_STACK", "REGS_USER", "STACK_USER", "WEIGHT",
		"DATA_SRC", "IDENTIFIER", "TRANSACTION", "REGS_INTR", "PHYS_ADDR", "AUX",
		"CGROUP", "DATA_PAGE_SIZE", "CODE_PAGE_SIZE", "WEIGHT_STRUCT",
	};
	size_t n = 0;
	buf[0] = 0;
	for (unsigned b = 0; b < 64 && n < len; b++) {
		if (!(t >> b & 1))
			continue;
		int const k = b < sizeof(names) / sizeof(names[0])
				      ? snprintf(buf + n, len - n, "%s%s", n ? "|" : "", names[b])
				      : snprintf(buf + n, len - n, "%sbit%u", n ? "|" : "", b);
		if (k < 0)
			return;
		n += (size_t)k;
	}
}

/* Whether samples of A carry what unwinding needs: the user registers
 * (rip and rsp among them) and a copy of the user stack; or the user call
 * chain the kernel walked (perf record -g). */
static int attr_unwindable(const struct attr *a)
{
	if ((a->sample_type & S_CALLCHAIN) && !(a->flags & ATTR_EXCLUDE_CALLCHAIN_USER) &&
	    !((a->sample_type & S_REGS_USER) && (a->sample_type & S_STACK_USER)))
		return 1;
	if (!(a->sample_type & S_REGS_USER) || !(a->sample_type & S_STACK_USER))
		return 0;
	int ip = 0, sp = 0;
	for (uint32_t i = 0; i < a->nregs && i < sizeof(a->reg_map) / sizeof(a->reg_map[0]); i++) {
		ip |= a->reg_map[i] == STACKCAP_REG_RIP;
		sp |= a->reg_map[i] == STACKCAP_REG_RSP;
	}
	return ip && sp;
}

/* One perf_event_attr (AVAIL bytes at E: its own size field may say less). */
static void attr_parse(struct attr *a, const uint8_t *e, size_t avail)
{
	uint8_t raw[256] = { 0 };
	uint32_t const asz = su_ld32(e + 4);
	size_t const n = asz && asz < avail ? asz : avail;
	memcpy(raw, e, n < sizeof(raw) ? n : sizeof(raw));
	a->type = su_ld32(raw);
	a->period_or_freq = su_ld64(raw + 16);
	a->sample_type = su_ld64(raw + 24);
	a->read_format = su_ld64(raw + 32);
	a->flags = su_ld64(raw + 40);
	a->branch_sample_type = su_ld64(raw + 72);
	a->sample_regs_user = su_ld64(raw + 80);
	a->sample_stack_user = su_ld32(raw + 88);
	a->sample_max_stack = (uint16_t)(su_ld32(raw + 108) & 0xffff);
	memset(a->reg_map, -1, sizeof(a->reg_map));
	for (unsigned b = 0; b < 64; b++)
		if (a->sample_regs_user >> b & 1) {
			a->reg_map[a->nregs] = b < 24 ? perf_reg_to_ours[b] : -1;
			a->nregs++;
		}
}

/* Where a sample's id sits, from the first attr (perf requires them equal). */
static void id_positions(struct pr *r)
{
	uint64_t const t = r->attrs[0].sample_type;
	r->id_pos = t & S_IDENTIFIER ? 0 : t & S_ID ? !!(t & S_IP) + !!(t & S_TID) + !!(t & S_TIME) + !!(t & S_ADDR) : -1;
	r->id_from_end = t & S_IDENTIFIER ? 1 : t & S_ID ? 1 + !!(t & S_CPU) + !!(t & S_STREAM_ID) : 0;
}

static int read_attrs(struct pr *r, uint64_t attr_size, uint64_t off, uint64_t size)
{
	if (attr_size < 64 + 16 || attr_size > 4096 || size % attr_size || size / attr_size == 0 ||
	    size / attr_size > 4096 || off > r->file_size || size > r->file_size - off) {
		set_err(r, "bad attribute section (entry size %" PRIu64 ", %" PRIu64 " bytes at %" PRIu64 ")",
			attr_size, size, off);
		return -EINVAL;
	}
	r->n_attrs = size / attr_size;
	r->attrs = calloc(r->n_attrs, sizeof(*r->attrs));
	if (!r->attrs)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_attrs; i++) {
		const uint8_t *e = r->map + off + i * attr_size;
		attr_parse(&r->attrs[i], e, attr_size - 16);
		/* The ids of this attr's events (one per cpu or thread). */
		uint64_t const ids_off = su_ld64(e + attr_size - 16), ids_size = su_ld64(e + attr_size - 8);
		if (ids_size % 8 || ids_off > r->file_size || ids_size > r->file_size - ids_off) {
			set_err(r, "attribute %zu: bad id section (%" PRIu64 " bytes at %" PRIu64 ")",
				i, ids_size, ids_off);
			return -EINVAL;
		}
		size_t const nid = ids_size / 8;
		/* Attributes may share an id section; all of them together
		 * still hold no more ids than the file has words. */
		if (r->n_ids + nid > r->file_size / 8) {
			set_err(r, "attribute %zu: more event ids than the file holds (id sections overlap)", i);
			return -EINVAL;
		}
		if (su_grow((void **)&r->ids, &r->cap_ids, r->n_ids + nid + 1, sizeof(*r->ids)))
			return -ENOMEM;
		for (size_t k = 0; k < nid; k++) {
			r->ids[r->n_ids].id = su_ld64(r->map + ids_off + 8 * k);
			r->ids[r->n_ids].attr = i;
			r->n_ids++;
		}
	}
	/* Sort ids for lookup. */
	if (r->n_ids)
		qsort(r->ids, r->n_ids, sizeof(*r->ids), id_cmp);
	id_positions(r);
	if (r->n_attrs > 1 && r->id_pos < 0) {
		set_err(r, "%zu events without sample ids: cannot tell their samples apart", r->n_attrs);
		return -EINVAL;
	}
	/* A recording without --call-graph dwarf has nothing to unwind: say
	 * so and how to record, rather than read zero samples. */
	size_t i = 0;
	while (i < r->n_attrs && !attr_unwindable(&r->attrs[i]))
		i++;
	if (i == r->n_attrs) {
		char types[256];
		sample_type_name(r->attrs[0].sample_type, types, sizeof(types));
		set_err(r, "recorded without call graphs: its samples hold %s, no user registers and stack "
			   "to unwind, no user call chain; record with `perf record --call-graph dwarf` (or -g)",
			types);
		return -EINVAL;
	}
	return 0;
}

/* HEADER_BUILD_ID: (header, pid, build_id[24], filename) records. */
static void read_build_ids(struct pr *r, const uint8_t *p, uint64_t size)
{
	uint64_t off = 0;
	while (size - off >= 8 + 4 + 24) {
		uint16_t const misc = su_ld16(p + off + 4), len = su_ld16(p + off + 6);
		if (len < 8 + 4 + 24 + 1 || len > size - off) {
			su_reader_warn("%s: damaged build-id table: the rest is ignored", r->name);
			return;
		}
		const uint8_t *id = p + off + 12;
		size_t idlen = 20;
		if (misc & MISC_BUILD_ID_SIZE)
			idlen = id[20] <= 20 ? id[20] : 20;
		const char *fname = (const char *)p + off + 36;
		size_t const flen = strnlen(fname, len - 36);
		struct path_info *pi = intern(r, fname, flen);
		if (pi && idlen && !pi->table_id_len) {
			pi->table_id_len = (uint8_t)idlen;
			memcpy(pi->table_id, id, idlen);
		}
		off += len;
	}
}

static int read_features(struct pr *r, const uint8_t *bits)
{
	uint64_t const sec = r->data_off + r->data_size;
	unsigned n = 0;
	for (unsigned feat = 0; feat < 256; feat++) {
		if (!(bits[feat / 8] >> (feat % 8) & 1))
			continue;
		uint64_t const at = sec + 16u * n++;
		if (at > r->file_size || r->file_size - at < 16) {
			su_reader_warn("%s: feature sections cut short: build-ids and the rest are ignored", r->name);
			return 1;
		}
		uint64_t const off = su_ld64(r->map + at), size = su_ld64(r->map + at + 8);
		if (off > r->file_size || size > r->file_size - off) {
			su_reader_warn("%s: feature %u points outside the file: ignored", r->name, feat);
			continue;
		}
		const uint8_t *p = r->map + off;
		if (feat == FEAT_BUILD_ID) {
			read_build_ids(r, p, size);
		} else if (feat == FEAT_OSRELEASE && size >= 4) {
			uint32_t const slen = su_ld32(p);
			if (slen <= size - 4)
				snprintf(r->osrelease, sizeof(r->osrelease), "%.*s", (int)strnlen((const char *)p + 4, slen),
					 (const char *)p + 4);
		} else if (feat == FEAT_COMPRESSED) {
			/* Checked when a compressed record is met. */
		}
	}
	return 0;
}

static void pr_free(struct pr *r)
{
	for (size_t i = 0; i < r->n_procs; i++) {
		free(r->procs[i]->p.comm);
		free(r->procs[i]->p.exe);
		free(r->procs[i]->m);
		su_mem_ranges_free(&r->procs[i]->mem);
		free(r->procs[i]);
	}
	free(r->procs);
	free(r->live);
	for (size_t i = 0; i < r->n_gens; i++)
		maps_free(r->gens[i]);
	free(r->gens);
	for (size_t i = 0; i < r->cap_paths; i++)
		if (r->paths[i]) {
			free(r->paths[i]->path);
			free(r->paths[i]);
		}
	free(r->paths);
	free(r->attrs);
	free(r->ids);
	free(r->q);
	free(r->scratch[0]);
	free(r->scratch[1]);
	while (r->chunks) {
		struct chunk *c = r->chunks;
		r->chunks = c->next;
		free(c);
	}
	ZSTD_freeDCtx(r->dctx);
	free(r->rem);
}

int su_perf_data_probe(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return 0;
	struct stat sb;
	uint64_t magic = 0;
	int ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
		 pread(fd, &magic, 8, 0) == 8 && (magic == PERF_MAGIC2 || magic == PERF_MAGIC2_SWAPPED);
	close(fd);
	return ok;
}

int su_perf_data_read_fd(int fd, const char *name, const struct su_reader_opts *opts,
			 const struct su_reader_callbacks *cb,
			 struct su_reader_stats *stats, char *err, size_t errlen)
{
	struct pr r = { .opts = opts, .cb = cb, .st = stats, .err = err, .errlen = errlen, .name = name };
	int rc = 0;
	void *map = MAP_FAILED;
	struct stat sb;

	if (err && errlen)
		err[0] = 0;
	memset(stats, 0, sizeof(*stats));
	if (fstat(fd, &sb)) {
		set_err(&r, "%s", strerror(errno));
		return -errno;
	}
	r.file_size = (uint64_t)sb.st_size;
	stats->bytes_on_disk = r.file_size;
	uint8_t hdr[FILE_HEADER_SIZE];
	if (r.file_size < 16 || pread(fd, hdr, 16, 0) != 16) {
		set_err(&r, "not a perf.data file (%" PRIu64 " bytes)", r.file_size);
		return -EINVAL;
	}
	uint64_t const magic = su_ld64(hdr), hsize = su_ld64(hdr + 8);
	if (magic == PERF_MAGIC2_SWAPPED) {
		set_err(&r, "perf.data of the other byte order: not supported");
		return -ENOTSUP;
	}
	if (magic != PERF_MAGIC2) {
		set_err(&r, "not a perf.data file (no PERFILE2 magic)");
		return -EINVAL;
	}
	if (hsize == PIPE_HEADER_SIZE) {
		set_err(&r, "perf.data in pipe mode (perf record -o -): not supported; "
			"write it to a file with `perf inject -i IN -o OUT`");
		return -ENOTSUP;
	}
	if (hsize != FILE_HEADER_SIZE || r.file_size < FILE_HEADER_SIZE) {
		set_err(&r, "bad perf.data header (size %" PRIu64 ", expected %u)", hsize, FILE_HEADER_SIZE);
		return -EINVAL;
	}
	map = mmap(NULL, r.file_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		set_err(&r, "cannot map the file: %s", strerror(errno));
		return -errno;
	}
	r.map = map;
	memcpy(hdr, r.map, FILE_HEADER_SIZE);
	uint64_t const attr_size = su_ld64(hdr + 16);
	r.data_off = su_ld64(hdr + 40);
	r.data_size = su_ld64(hdr + 48);
	if (r.data_off < FILE_HEADER_SIZE || r.data_off > r.file_size || (r.data_off & 7)) {
		set_err(&r, "bad data section offset %" PRIu64, r.data_off);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = read_attrs(&r, attr_size, su_ld64(hdr + 24), su_ld64(hdr + 32))) != 0)
		goto out;
	int partial = 0;
	if (r.data_size == 0 && r.file_size > r.data_off) {
		su_reader_warn("%s: data size is 0 (perf record did not finish?): reading to the end of the file",
			       name);
		r.data_size = r.file_size - r.data_off;
		partial = 1;
	} else if (r.data_size > r.file_size - r.data_off) {
		su_reader_warn("%s: data section cut short (%" PRIu64 " of %" PRIu64 " bytes): reading what is there",
			       name, r.file_size - r.data_off, r.data_size);
		r.data_size = r.file_size - r.data_off;
		partial = 1;
	} else {
		partial |= read_features(&r, hdr + 72);
	}
	madvise(map, r.file_size, MADV_SEQUENTIAL);
	run_data(&r);
	if (r.cb_rc) {
		rc = r.cb_rc;
		goto out;
	}
	if (cb->end)
		rc = cb->end(cb->arg);
	stats->bad_blobs = r.bad_samples + r.unknown_ids;
	if (r.bad_samples)
		su_reader_warn("%s: %" PRIu64 " damaged records skipped", name, r.bad_samples);
	if (r.unknown_ids)
		su_reader_warn("%s: %" PRIu64 " samples of an unknown event id skipped", name, r.unknown_ids);
	if (r.compat_regs)
		su_reader_warn("%s: %" PRIu64 " samples of 32-bit tasks not unwound (no-user)", name, r.compat_regs);
	stats->truncated_files = r.malformed || partial;
	if (!rc && (stats->truncated_files || stats->bad_blobs))
		rc = 1;
out:
	if (map != MAP_FAILED)
		munmap(map, r.file_size);
	pr_free(&r);
	return rc;
}

int su_perf_data_read(const char *path, const struct su_reader_opts *opts,
		      const struct su_reader_callbacks *cb,
		      struct su_reader_stats *stats, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int const e = errno;
		memset(stats, 0, sizeof(*stats));
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	int rc = su_perf_data_read_fd(fd, path, opts, cb, stats, err, errlen);
	close(fd);
	return rc;
}

/* ---- a live stream of records --------------------------------------------------- */

struct su_perf_stream {
	struct pr r;
	struct chunk *pending;       /* reserved, not committed yet */
};

int su_perf_stream_new(const void *attr, size_t attr_len, const struct su_reader_callbacks *cb,
		       const struct su_perf_stream_callbacks *live, struct su_reader_stats *stats,
		       struct su_perf_stream **out)
{
	*out = NULL;
	if (attr_len < 96)
		return -EINVAL;
	struct su_perf_stream *s = calloc(1, sizeof(*s));
	if (!s || !(s->r.attrs = calloc(1, sizeof(*s->r.attrs)))) {
		free(s);
		return -ENOMEM;
	}
	memset(stats, 0, sizeof(*stats));
	s->r.cb = cb;
	s->r.st = stats;
	s->r.live_cb = live;
	s->r.name = "live recording";
	s->r.n_attrs = 1;
	attr_parse(&s->r.attrs[0], attr, attr_len);
	id_positions(&s->r);
	struct utsname u;
	if (uname(&u) == 0) /* recorded here: our own vDSO's build-id applies */
		snprintf(s->r.osrelease, sizeof(s->r.osrelease), "%s", u.release);
	*out = s;
	return 0;
}

uint8_t *su_perf_stream_reserve(struct su_perf_stream *s, size_t len)
{
	free(s->pending);
	s->pending = malloc(sizeof(*s->pending) + (len ? len : 1));
	if (!s->pending)
		return NULL;
	s->pending->len = len;
	return s->pending->data;
}

int su_perf_stream_commit(struct su_perf_stream *s, size_t len)
{
	struct pr *r = &s->r;
	struct chunk *c = s->pending;
	s->pending = NULL;
	if (!c || len > c->len) {
		free(c);
		return -EINVAL;
	}
	if (r->cb_rc) {
		free(c);
		return r->cb_rc;
	}
	c->len = len;
	uint64_t const seq0 = r->seq;
	int damaged = 0;
	size_t const pos = queue_chunk(r, c, "a ring buffer", &damaged);
	chunk_keep(r, c, seq0);
	if (r->cb_rc)
		return r->cb_rc;
	return damaged || pos != len ? -EINVAL : 0;
}

int su_perf_stream_feed(struct su_perf_stream *s, const uint8_t *buf, size_t len)
{
	uint8_t *d = su_perf_stream_reserve(s, len);
	if (!d)
		return -ENOMEM;
	memcpy(d, buf, len);
	return su_perf_stream_commit(s, len);
}

int su_perf_stream_round(struct su_perf_stream *s)
{
	struct pr *r = &s->r;
	if (r->cb_rc)
		return r->cb_rc;
	flush_until(r, r->next_flush);
	r->next_flush = r->max_ts;
	chunks_release(r);
	return r->cb_rc;
}

uint32_t su_perf_stream_stack_cap(const struct su_perf_stream *s)
{
	return attr_stack_cap(&s->r.attrs[0], 1);
}

uint64_t su_perf_stream_time(const struct su_perf_stream *s)
{
	return s->r.now;
}

int su_perf_stream_end(struct su_perf_stream *s)
{
	struct pr *r = &s->r;
	if (!r->cb_rc)
		flush_until(r, UINT64_MAX);
	chunks_release(r);
	if (r->cb_rc)
		return r->cb_rc;
	r->st->bad_blobs = r->bad_samples + r->unknown_ids;
	return r->cb->end ? r->cb->end(r->cb->arg) : 0;
}

void su_perf_stream_free(struct su_perf_stream *s)
{
	if (!s)
		return;
	pr_free(&s->r);
	free(s->pending);
	free(s);
}
