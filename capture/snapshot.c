/* SPDX-License-Identifier: MIT */
/*
 * snapshot.c: the code ranges the handler classifies against, one immutable
 * snapshot per maps generation.
 *
 * Built from dl_iterate_phdr (executable PT_LOAD segments, build-id notes
 * read from memory) plus the executable mappings it does not list, from
 * /proc/self/maps: anonymous ones (JIT) and a loaded file mapped again
 * (node's embedded builtins).  Published by pointer swap.  A handler counts itself in
 * `readers` while it holds a snapshot; the writer frees a replaced one only
 * after seeing no reader after the swap and then draining every ring, so
 * neither a handler nor a pending record can still use it.  (A handler is
 * short; if readers are never seen at zero, old snapshots are only kept
 * longer.)
 */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "capture/capture-internal.h"
#include "common/io.h"
#include "capture/ctf-writer.h"
#include "common/hash.h"

static _Atomic(struct snapshot *) current;
static _Atomic long readers;
static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;
/* Writer-side list of every held snapshot, newest first. */
static struct snapshot *held;

/* ---- building ----------------------------------------------------------- */

struct build_ctx {
	struct snapshot *s;
	uint32_t cap;
	int oom;
	unsigned long long adds, subs;
	int first;
};

static int grow(struct build_ctx *c)
{
	if (c->s->count < c->cap)
		return 0;
	uint32_t const ncap = c->cap ? 2 * c->cap : 64;
	struct stackcap_code_range *r = realloc(c->s->ranges, ncap * sizeof(*r));
	if (!r)
		return -1;
	c->s->ranges = r;
	struct snapshot_module *m = realloc(c->s->modules, ncap * sizeof(*m));
	if (!m)
		return -1;
	c->s->modules = m;
	c->cap = ncap;
	return 0;
}

/* The NT_GNU_BUILD_ID of a loaded object, read from its PT_NOTE segments. */
static uint8_t find_build_id(const struct dl_phdr_info *info, uint8_t *out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *const end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t const name_sz = (nh->n_namesz + 3) & ~3u;
			size_t const desc_sz = (nh->n_descsz + 3) & ~3u;
			const uint8_t *name = p + sizeof(*nh);
			const uint8_t *desc = name + name_sz;
			if (desc + desc_sz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && nh->n_descsz > 0 && nh->n_descsz <= 32) {
				memcpy(out, desc, nh->n_descsz);
				return (uint8_t)nh->n_descsz;
			}
			p = desc + desc_sz;
		}
	}
	return 0;
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct build_ctx *c = data;
	if (c->first) {
		c->first = 0;
		if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
			c->adds = info->dlpi_adds;
			c->subs = info->dlpi_subs;
		}
	}
	const char *name = info->dlpi_name;
	uint8_t flags = 0;
	char exe[PATH_MAX];
	if (!name || !*name) {
		/* The main program: its name is empty in the loader's list. */
		char link[32];
		ssize_t const n = readlink(su_proc_self_path(link, sizeof(link), "exe"), exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		name = exe;
		flags |= CTF_MAP_MAIN;
	} else if (strstr(name, "linux-vdso") || strstr(name, "linux-gate")) {
		flags |= CTF_MAP_VDSO;
	}
	uint8_t bid[32];
	uint8_t const bid_len = find_build_id(info, bid);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ph->p_memsz == 0)
			continue;
		if (grow(c) != 0) {
			c->oom = 1;
			return 1;
		}
		uint32_t const k = c->s->count;
		struct snapshot_module *m = &c->s->modules[k];
		memset(m, 0, sizeof(*m));
		m->start = info->dlpi_addr + ph->p_vaddr;
		m->end = m->start + ph->p_memsz;
		m->offset = ph->p_offset;
		m->bias = info->dlpi_addr;
		m->flags = flags;
		m->build_id_len = bid_len;
		memcpy(m->build_id, bid, bid_len);
		m->path = strdup(name);
		if (!m->path) {
			c->oom = 1;
			return 1;
		}
		c->s->count++;
	}
	return 0;
}

/* One executable mapping of /proc/self/maps. */
struct exec_line {
	unsigned long lo, hi, offset, ino;
	unsigned dev_major, dev_minor;
	int anon;                  /* no file: JIT code */
};

/* The executable mappings in /proc/self/maps, but for the kernel's named
 * areas ([vdso], [vsyscall]: dl_iterate_phdr covers the vDSO), into *OUT
 * when OUT is given (malloc: never from a signal handler), and their
 * fingerprint, to notice JIT code or a file mapped later.  An anonymous
 * mapping a program named (PR_SET_VMA_ANON_NAME: "[anon:NAME]") is
 * anonymous.  0 when the file cannot be read; *OOM set when out of
 * memory (the lines read until then in *OUT). */
static uint64_t scan_exec(struct exec_line **out, size_t *count, int *oom)
{
	uint64_t h = SU_FNV_SEED;
	size_t n = 0, cap = 0;
	char maps[32];
	FILE *f = fopen(su_proc_self_path(maps, sizeof(maps), "maps"), "re");
	if (!f)
		return 0;
	char line[PATH_MAX + 128];
	while (fgets(line, sizeof(line), f)) {
		struct exec_line x = { 0 };
		char perms[8];
		int path_at = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &x.lo, &x.hi, perms, &x.offset, &x.dev_major,
			   &x.dev_minor, &x.ino, &path_at) < 7)
			continue;
		if (perms[2] != 'x')
			continue;
		const char *path = line + path_at;
		x.anon = !path_at || !*path || *path == '\n' || strncmp(path, "[anon:", 6) == 0;
		if (!x.anon && *path == '[')
			continue;
		h = su_fnv1a_add(h, x.lo);
		h = su_fnv1a_add(h, x.hi);
		h = su_fnv1a_add(h, x.offset);
		h = su_fnv1a_add(h, x.ino);
		if (!out)
			continue;
		if (n == cap) {
			size_t const ncap = cap ? 2 * cap : 64;
			struct exec_line *g = realloc(*out, ncap * sizeof(*g));
			if (!g) {
				*oom = 1;
				break;
			}
			*out = g;
			cap = ncap;
		}
		(*out)[n++] = x;
	}
	fclose(f);
	if (count)
		*count = n;
	return h;
}

static struct snapshot_module *add_module(struct build_ctx *c, unsigned long lo, unsigned long hi)
{
	if (grow(c) != 0) {
		c->oom = 1;
		return NULL;
	}
	struct snapshot_module *m = &c->s->modules[c->s->count];
	memset(m, 0, sizeof(*m));
	m->start = lo;
	m->end = hi;
	return m;
}

/* The module (of the first NMOD, from dl_iterate_phdr) whose segment was
 * mapped from the same file as L (device and inode of the mapping holding
 * the segment) and holds L's file offset, or NULL. */
static const struct snapshot_module *same_file_module(const struct build_ctx *c, uint32_t nmod,
						      const struct exec_line *lines, size_t nlines,
						      const struct exec_line *l)
{
	for (uint32_t k = 0; k < nmod; k++) {
		const struct snapshot_module *m = &c->s->modules[k];
		if (l->offset < m->offset || l->offset - m->offset >= m->end - m->start)
			continue;
		for (size_t j = 0; j < nlines; j++) {
			const struct exec_line *o = &lines[j];
			if (!o->anon && m->start >= o->lo && m->start < o->hi)
				if (o->ino == l->ino && o->dev_major == l->dev_major && o->dev_minor == l->dev_minor)
					return m;
		}
	}
	return NULL;
}

/* The executable mappings dl_iterate_phdr does not know, from
 * /proc/self/maps (after the NMOD modules it gave):
 * - anonymous ones: JIT code, "[anon:exec]" (named later from a perf map);
 * - a loaded object's file mapped a second time, as V8 maps the builtins
 *   embedded in node's text again next to its JIT code: the object's
 *   path, build-id and flags, its load bias such that the mapping's file
 *   offset falls on the ELF address it has in the object;
 *   any other file (a JIT's memfd, say) counts as JIT code.  (So does a
 *   library dlopen()ed between the two reads, for this generation only:
 *   the loader's counters have moved, the next one lists it.)
 * Without them the filter would zero every return address into them and
 * the unwinder would find no map. */
static void add_unlisted_exec(struct build_ctx *c)
{
	struct exec_line *lines = NULL;
	size_t nlines = 0;
	int oom = 0;
	uint32_t const nmod = c->s->count;
	c->s->exec_hash = scan_exec(&lines, &nlines, &oom);
	if (oom)
		c->oom = 1;
	for (size_t i = 0; i < nlines && !c->oom; i++) {
		const struct exec_line *l = &lines[i];
		const struct snapshot_module *same = NULL;
		if (!l->anon) {
			int covered = 0;
			for (uint32_t k = 0; k < nmod && !covered; k++)
				covered = l->lo < c->s->modules[k].end && c->s->modules[k].start < l->hi;
			if (covered)
				continue;
			same = same_file_module(c, nmod, lines, nlines, l);
		}
		/* add_module may move the array: copy what SAME points to. */
		struct snapshot_module from = same ? *same : (struct snapshot_module){ 0 };
		struct snapshot_module *m = add_module(c, l->lo, l->hi);
		if (!m)
			break;
		if (same) {
			/* ELF address of file offset X: X - offset + (start - bias). */
			m->offset = l->offset;
			m->bias = l->lo - (l->offset - from.offset + (from.start - from.bias));
			m->flags = from.flags;
			m->build_id_len = from.build_id_len;
			memcpy(m->build_id, from.build_id, from.build_id_len);
			m->path = strdup(from.path);
		} else {
			m->flags = CTF_MAP_ANON;
			m->path = strdup("[anon:exec]");
		}
		if (!m->path)
			c->oom = 1;
		else
			c->s->count++;
	}
	free(lines);
}

static int cmp_module(const void *a, const void *b)
{
	const struct snapshot_module *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

struct snapshot *snapshot_build(uint32_t generation)
{
	struct snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->generation = generation;
	struct build_ctx c = { .s = s, .first = 1 };
	dl_iterate_phdr(phdr_cb, &c);
	if (!c.oom)
		add_unlisted_exec(&c);
	if (c.oom) {
		snapshot_free(s);
		return NULL;
	}
	s->adds = c.adds;
	s->subs = c.subs;
	qsort(s->modules, s->count, sizeof(*s->modules), cmp_module);
	/* Drop overlaps (an anonymous mapping inside a module, say): the
	 * codec needs disjoint ranges. */
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->count; i++) {
		if (n && s->modules[i].start < s->modules[n - 1].end) {
			free(s->modules[i].path);
			continue;
		}
		s->modules[n++] = s->modules[i];
	}
	s->count = n;
	for (uint32_t i = 0; i < n; i++) {
		s->ranges[i].start = s->modules[i].start;
		s->ranges[i].end = s->modules[i].end;
		s->ranges[i].module = i;
	}
	if (stackcap_code_ranges_init(&s->set, s->ranges, n) != 0) {
		snapshot_free(s);
		return NULL;
	}
	return s;
}

void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->count; i++)
		free(s->modules[i].path);
	free(s->modules);
	free(s->ranges);
	free(s);
}

/* How often snapshot_stale reads the maps file: see there. */
#define SCAN_MIN_NS (20 * 1000000ull)
#define SCAN_MAX_NS (240 * 1000000ull)
#define ASKED_MIN_NS (1000000ull)

static int count_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned long long *v = data;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		v[0] = info->dlpi_adds;
		v[1] = info->dlpi_subs;
	}
	return 1; /* the counters are global: the first object is enough */
}

int snapshot_stale(const struct snapshot *s)
{
	unsigned long long v[2] = { 0, 0 };
	dl_iterate_phdr(count_cb, v);
	if (!s || v[0] != s->adds || v[1] != s->subs)
		return 1;
	/* JIT code (or a file: node's builtins) mapped or unmapped since: no
	 * counter tells, so the maps file is read again (writer thread only):
	 * 20 ms after a change, 20 ms later after each scan that found none,
	 * up to every 240 ms.  A JIT maps most as its program starts: node
	 * maps V8's builtins again and makes its first code pages in its first
	 * 100 ms, when a scan 4 times a second left up to 8% of the samples
	 * without a map.  (A read of node's 90 lines takes about 0.1 ms here:
	 * at most 50 a second, while a JIT keeps mapping, about 0.5% of a
	 * CPU for the writer thread.) */
	/* A capture whose pc was in no known code asks for a scan now
	 * (capture.c): 1 ms after the last one, the wait doubling (up to
	 * 20 ms) while such scans find nothing new, as for a pc in code
	 * no scan lists. */
	static uint64_t last_scan_ns, scan_every_ns = SCAN_MIN_NS, asked_every_ns = ASKED_MIN_NS;
	uint64_t const now = capture_now_ns();
	int const asked = atomic_load_explicit(&stackcap_g.pc_unmapped, memory_order_relaxed);
	if (now - last_scan_ns < (asked ? asked_every_ns : scan_every_ns))
		return 0;
	last_scan_ns = now;
	if (asked)
		atomic_store_explicit(&stackcap_g.pc_unmapped, 0, memory_order_relaxed);
	int const changed = scan_exec(NULL, NULL, NULL) != s->exec_hash;
	if (changed) {
		scan_every_ns = SCAN_MIN_NS;
		asked_every_ns = ASKED_MIN_NS;
	} else {
		if (scan_every_ns + SCAN_MIN_NS <= SCAN_MAX_NS)
			scan_every_ns += SCAN_MIN_NS;
		if (asked && asked_every_ns * 2 <= SCAN_MIN_NS)
			asked_every_ns *= 2;
	}
	return changed;
}

/* ---- publication -------------------------------------------------------- */

const struct snapshot *snapshot_enter(void)
{
	atomic_fetch_add(&readers, 1);
	return atomic_load(&current);
}

void snapshot_leave(void)
{
	atomic_fetch_sub(&readers, 1);
}

/* The first generation number.  A standalone trace has a stream per
 * process section, so 1.  In LTTng mode an exec() keeps the vpid, and a
 * sample names only its generation: a random start (1..2^30) keeps the
 * new image's generations apart from the old one's (docs/lttng.md). */
static uint32_t first_generation(void)
{
	uint32_t r;
	if (!stackcap_g.cfg.lttng || getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		return 1;
	return 1 + (r & ((1u << 30) - 1));
}

int snapshot_refresh(int force)
{
	pthread_mutex_lock(&refresh_lock);
	struct snapshot *cur = atomic_load(&current);
	int rc = 0;
	if (force || !cur || snapshot_stale(cur)) {
		struct snapshot *s = snapshot_build(cur ? cur->generation + 1 : first_generation());
		if (!s) {
			rc = -ENOMEM;
		} else {
			s->older = held;
			held = s;
			atomic_store(&current, s);
			writer_wake();
		}
	}
	pthread_mutex_unlock(&refresh_lock);
	return rc;
}

const struct snapshot *snapshot_lookup(uint32_t generation)
{
	pthread_mutex_lock(&refresh_lock);
	const struct snapshot *s = held;
	while (s && s->generation != generation)
		s = s->older;
	pthread_mutex_unlock(&refresh_lock);
	return s;
}

void snapshot_for_each_unwritten(int (*fn)(struct snapshot *, void *), void *arg)
{
	/* Every unwritten one, oldest first, in batches of 64: a program that
	 * loads and unloads faster than the writer cycles leaves many, and
	 * each must reach the trace since samples name it.  (Taking only the
	 * 64 newest left the older ones to starve, and those still unwritten
	 * at the end were lost: samples without maps.) */
	enum { BATCH = 64 };
	for (;;) {
		struct snapshot *ring[BATCH];
		size_t seen = 0;
		pthread_mutex_lock(&refresh_lock);
		/* Newest first: the last BATCH seen are the oldest. */
		for (struct snapshot *s = held; s; s = s->older)
			if (!s->written)
				ring[seen++ % BATCH] = s;
		pthread_mutex_unlock(&refresh_lock);
		size_t const n = seen < BATCH ? seen : BATCH;
		size_t done = 0;
		for (size_t i = 0; i < n; i++) {
			struct snapshot *s = ring[(seen - 1 - i) % BATCH];
			if (fn(s, arg) == 0) {
				s->written = 1;
				done++;
			}
		}
		/* More than a batch and progress: the next batch.  (LTTng mode
		 * may leave some for a later cycle: fn returned 1.) */
		if (seen <= BATCH || !done)
			return;
	}
}

void snapshot_reclaim(void)
{
	pthread_mutex_lock(&refresh_lock);
	struct snapshot *cur = atomic_load(&current);
	/* Free what the previous call marked: no handler could hold it then,
	 * and the writer has drained every ring since, so no record names it. */
	struct snapshot **pp = &held;
	while (*pp) {
		struct snapshot *s = *pp;
		if (s->reclaimable) {
			*pp = s->older;
			snapshot_free(s);
			continue;
		}
		pp = &s->older;
	}
	/* Mark replaced snapshots once no handler is inside: any handler that
	 * read one entered before its replacement and has left. */
	if (atomic_load(&readers) == 0)
		for (struct snapshot *s = held; s; s = s->older)
			if (s != cur && s->written)
				s->reclaimable = 1;
	pthread_mutex_unlock(&refresh_lock);
}

void snapshot_reset_after_fork(void)
{
	/* The child inherits the parent's snapshots unchanged and single
	 * threaded: nothing can be reading.  They must be written again into
	 * the child's own stream. */
	pthread_mutex_init(&refresh_lock, NULL);
	atomic_store(&readers, 0);
	for (struct snapshot *s = held; s; s = s->older)
		s->written = 0;
}
