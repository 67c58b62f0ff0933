/* SPDX-License-Identifier: MIT */
/* Samples of the trace model written as a stackcap trace (encode.h). */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/grow.h"
#include "common/hash.h"
#include "common/hashmap.h"
#include "record/encode.h"
#include "record/proc-files.h"
#include "record/sigframe.h"
#include "debuginfo/module.h"
#include "record/kallsyms.h"
#include "trace/stackcap-reader.h"

struct section {
	const struct su_process *p;
	struct ctf_stream *proc;          /* NULL once ended (the first's kept: section_end) */
	const struct su_maps *last_maps;  /* last generation written */
	uint64_t last_ts;
	uint32_t samples_streams;
	size_t stats;                     /* index in procs */
	int ended;                        /* its streams closed: later samples of it left out */
	int exited;                       /* its process's exit seen, at EXIT_TS, before flush EXIT_FLUSH */
	int view_known, other_view;       /* rec_proc_other_view of its process (recording live) */
	int jit_done;                     /* its perf map's keeper needs no more word of its JIT code */
	uint64_t exit_ts;
	uint32_t exit_flush;
	size_t *th;                       /* its threads, indexes in e->th */
	size_t n_th, cap_th;
};

struct thread {
	const struct su_process *p;   /* NULL: a free slot (its section ended) */
	uint32_t tid;
	int ended;               /* the stream waits for the next new thread */
	unsigned in_packet;      /* samples since the stream's last packet */
	struct ctf_stream *s;
	struct stackcap_image prev, cur;
	int have_prev;
	/* An off-CPU stack held until the thread runs again (rec_encoder_hold):
	 * its encoded sample (against prev when hold_ref), kernel chain and
	 * the time it blocked (0: the switch-out not seen yet).  cur holds
	 * its filtered image, prev is not moved until it is written. */
	int held, hold_ref, hold_capped;
	uint64_t hold_ts, blocked_at;
	uint32_t hold_generation, hold_event;
	uint8_t *hold_blob;
	size_t hold_len, hold_cap;
	uint64_t *hold_kc;
	uint32_t hold_nkc;
	size_t hold_kc_cap;
};

/* Packets of at most this many samples (and 64 KiB, the writer's packet
 * size): a reader reads a trace in bounded pieces.  Each packet starts its
 * thread's delta chain afresh (a whole sample) and, with --zstd, is one
 * zstd frame compressed alone: 256 rather than the capture library's
 * 128 (docs/BENCHMARKS.md: 1,024 would save 8-10% more on 1 s runs, but
 * a damaged blob or a cut file loses up to a packet).  What a packet holds is on disk anyway after
 * the next periodic flush (rec_encoder_flush: ctf_stream_sync). */
#define SAMPLES_PER_PACKET 256

/* Range sets kept (see struct rec_encoder). */
#define RANGE_SETS 8

struct rec_encoder {
	struct ctf_writer *w;
	struct rec_encoder_opts o;
	struct section *sec;
	size_t n_sec, cap_sec;
	struct thread *th;
	size_t n_th, cap_th;
	struct rec_proc_stats *procs;
	size_t n_procs, cap_procs;
	/* A recording of a whole machine meets thousands of processes: each
	 * found by its pid through a map, not by a scan of all (a scan per
	 * sample and per exit was quadratic), and each ended at its exit, its
	 * streams closed (fds, buffers and stack images given back).  Per
	 * procs entry: its pid's section now (index + 1; 0: none), and what
	 * its ended sections already wrote of its counts. */
	struct su_hmap pid_map;
	struct pid_state {
		size_t sec;
		uint64_t samples_said, lost_said, throttled_said;
	} *pid_st;
	size_t cap_pid_st;
	size_t *free_th;                  /* thread slots of ended sections */
	size_t n_free_th, cap_free_th;
	/* Sections whose process exited, ended at the second flush after
	 * (250-500 ms on): a sample read from another CPU's ring after the
	 * exit record still finds its streams.  At most MAX_EXITED wait (the
	 * oldest ended first): their files count against the open-file
	 * limit, a sixteenth of which they may take. */
	size_t *exited;
	size_t n_exited, cap_exited, max_exited;
	uint32_t flushes;
	uint8_t *blob;
	size_t blob_cap;
	uint64_t last_ts;
	struct rec_encoder_stats st;
	/* The classifier's lookup table (128 KiB) of the last few maps
	 * generations: built once per generation, not kept per generation
	 * by the reader (issue 16), nor rebuilt at each sample when samples
	 * of several processes alternate (-a). */
	struct range_set {
		const struct su_maps *maps;
		uint32_t pid, generation;
		uint64_t used;
		struct stackcap_code_ranges *set;
	} sets[RANGE_SETS];
	uint64_t set_clock;
	/* Kernel addresses met (kernel_frames): sorted and made unique
	 * when full, so they hold the distinct addresses of the recording. */
	uint64_t *kaddr;
	size_t n_kaddr, cap_kaddr, kaddr_sorted;
	/* Samples per event of the table; the last name met and its index. */
	uint64_t *event_samples;
	const char *last_event;
	uint32_t last_index;
	/* The files of perf's mappings (SU_MAP_FILE_BIAS), opened on the
	 * recording machine for their load biases; made when first needed. */
	struct su_modcache *mods;
};

static int by_u64(const void *a, const void *b)
{
	uint64_t const x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static size_t kaddr_unique(struct rec_encoder *e)
{
	qsort(e->kaddr, e->n_kaddr, sizeof(*e->kaddr), by_u64);
	size_t k = 0;
	for (size_t i = 0; i < e->n_kaddr; i++)
		if (!k || e->kaddr[k - 1] != e->kaddr[i])
			e->kaddr[k++] = e->kaddr[i];
	return e->n_kaddr = e->kaddr_sorted = k;
}

static int kaddr_add(struct rec_encoder *e, const uint64_t *a, size_t n)
{
	if (e->n_kaddr + n > e->cap_kaddr) {
		if (e->n_kaddr > e->kaddr_sorted)
			kaddr_unique(e);
		if (e->n_kaddr + n > e->cap_kaddr / 2 && /* mostly distinct: room to grow */
		    su_grow((void **)&e->kaddr, &e->cap_kaddr, 2 * (e->n_kaddr + n) + 4096, sizeof(*e->kaddr)))
			return -ENOMEM;
	}
	memcpy(e->kaddr + e->n_kaddr, a, n * sizeof(*a));
	e->n_kaddr += n;
	return 0;
}

/* The range set of S's maps generation, or NULL (out of memory). */
static const struct stackcap_code_ranges *ranges_of(struct rec_encoder *e, const struct su_sample *s)
{
	struct range_set *lru = &e->sets[0];
	for (size_t i = 0; i < RANGE_SETS; i++) {
		struct range_set *r = &e->sets[i];
		if (r->set && r->maps == s->maps && r->pid == s->pid && r->generation == s->maps->generation) {
			r->used = ++e->set_clock;
			return r->set;
		}
		if (r->used < lru->used)
			lru = r;
	}
	if (!lru->set && !(lru->set = malloc(sizeof(*lru->set))))
		return NULL;
	stackcap_code_ranges_init(lru->set, s->maps->range_list, s->maps->count); /* checked by the reader */
	lru->maps = s->maps;
	lru->pid = s->pid;
	lru->generation = s->maps->generation;
	lru->used = ++e->set_clock;
	return lru->set;
}

int rec_encoder_new(struct ctf_writer *w, const struct rec_encoder_opts *o, struct rec_encoder **out)
{
	struct rec_encoder *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->w = w;
	if (o)
		e->o = *o;
	if (!e->o.policy)
		e->o.policy = STACKCAP_POLICY_F2;
	if (e->o.n_events && !(e->event_samples = calloc(e->o.n_events, sizeof(*e->event_samples)))) {
		free(e);
		return -ENOMEM;
	}
	struct rlimit rl;
	e->max_exited = 64;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		e->max_exited = rl.rlim_cur / 16 < 4 ? 4 : rl.rlim_cur / 16 > 256 ? 256 : (size_t)rl.rlim_cur / 16;
	*out = e;
	return 0;
}

struct pid_key {
	const struct rec_encoder *e;
	uint32_t pid;
};

static int pid_eq(const void *arg, uint32_t idx)
{
	const struct pid_key *k = arg;
	return k->e->procs[idx].pid == k->pid;
}

/* PID's slot in the pid map (used, or where it goes; the map not empty),
 * its hash in *H. */
static size_t pid_slot(const struct rec_encoder *e, uint32_t pid, uint64_t *h)
{
	struct pid_key const k = { e, pid };
	*h = su_fnv1a(&pid, sizeof(pid));
	return su_hmap_find(&e->pid_map, *h, pid_eq, &k);
}

static struct rec_proc_stats *proc_stats(struct rec_encoder *e, uint32_t pid, size_t *index)
{
	uint64_t h;
	if (su_hmap_reserve(&e->pid_map))
		return NULL;
	size_t const slot = pid_slot(e, pid, &h);
	if (su_hmap_used(&e->pid_map, slot)) {
		size_t const i = su_hmap_value(&e->pid_map, slot);
		if (index)
			*index = i;
		return &e->procs[i];
	}
	if (e->n_procs >= UINT32_MAX - 1 ||
	    su_grow((void **)&e->procs, &e->cap_procs, e->n_procs + 1, sizeof(*e->procs)) ||
	    su_grow((void **)&e->pid_st, &e->cap_pid_st, e->n_procs + 1, sizeof(*e->pid_st)))
		return NULL;
	su_hmap_set(&e->pid_map, slot, h, (uint32_t)e->n_procs);
	if (index)
		*index = e->n_procs;
	memset(&e->pid_st[e->n_procs], 0, sizeof(*e->pid_st));
	struct rec_proc_stats *ps = &e->procs[e->n_procs++];
	memset(ps, 0, sizeof(*ps));
	ps->pid = pid;
	return ps;
}

/* PID's section now (ended or not), or NULL. */
static struct section *pid_section(struct rec_encoder *e, uint32_t pid)
{
	uint64_t h;
	if (!e->pid_map.cap)
		return NULL;
	size_t const slot = pid_slot(e, pid, &h);
	if (!su_hmap_used(&e->pid_map, slot))
		return NULL;
	size_t const sec = e->pid_st[su_hmap_value(&e->pid_map, slot)].sec;
	return sec ? &e->sec[sec - 1] : NULL;
}

static int section_end(struct rec_encoder *e, struct section *s, uint64_t ts, int exited);
static int exited_end(struct rec_encoder *e);

/* The process stream of P, started at TS on first use.  A pid has one
 * section at a time: a newer image of it (exec) or a new process on a
 * reused pid ends the one before.  NULL with *RC: an error; NULL with *RC
 * 0: P's section has ended (its process exited), nothing more of it is
 * written. */
static struct section *section_open(struct rec_encoder *e, const struct su_process *p, uint64_t ts, int *rc)
{
	*rc = 0;
	size_t psi;
	if (!proc_stats(e, p->pid, &psi)) {
		*rc = -ENOMEM;
		return NULL;
	}
	if (e->pid_st[psi].sec) {
		struct section *const old = &e->sec[e->pid_st[psi].sec - 1];
		if (old->p == p)
			return old->ended ? NULL : old;
		if (!old->ended && (*rc = section_end(e, old, ts, 0)) != 0)
			return NULL;
	}
	if (su_grow((void **)&e->sec, &e->cap_sec, e->n_sec + 1, sizeof(*e->sec))) {
		*rc = -ENOMEM;
		return NULL;
	}
	struct section *s = &e->sec[e->n_sec];
	memset(s, 0, sizeof(*s));
	s->p = p;
	s->stats = psi;
	snprintf(e->procs[psi].comm, sizeof(e->procs[psi].comm), "%s", p->comm ? p->comm : "");
	char name[64];
	snprintf(name, sizeof(name), "proc-%u-%u", p->pid, p->seq);
	*rc = ctf_writer_open_stream(e->w, CTF_STREAM_PROCESS, name, p->pid, &s->proc);
	if (*rc == 0) {
		struct ctf_process_info info = {
			.pid = p->pid, .ppid = p->ppid, .comm = p->comm, .exe = p->exe,
			.clock_offset_ns = p->clock_offset_ns,
			.frequency_hz = p->frequency_hz, .stack_cap = p->stack_cap,
			.policy = (uint8_t)e->o.policy, .codec_version = STACKCAP_CODEC_VERSION,
		};
		*rc = ctf_stream_process_start(s->proc, ts, &info);
		if (*rc)
			ctf_stream_close(s->proc);
	}
	if (*rc)
		return NULL;
	s->last_ts = ts;
	e->pid_st[psi].sec = ++e->n_sec;
	return s;
}

/* The module of X when the trace needs it opened on this machine: perf
 * gives file offsets (SU_MAP_FILE_BIAS), the file's program headers say
 * where they load; a [vdso] with no build-id is this kernel's
 * (SU_MAP_THIS_KERNEL).  NULL otherwise.  Recording live processes, a
 * file is the one process S->p maps, opened as it sees it
 * (record/proc-files.h: a container's, a deleted one): never the file
 * at the same path here when that is another. */
static const struct su_module *entry_module(struct rec_encoder *e, struct section *s, const struct su_map_entry *x)
{
	if (!(x->flags & (SU_MAP_FILE_BIAS | SU_MAP_THIS_KERNEL)))
		return NULL;
	if (!e->mods) {
		struct su_debuginfo_opts const o = { .no_debuginfod = 1, .no_system_dirs = 1 };
		e->mods = su_modcache_new(&o);
	}
	if (!e->mods)
		return NULL;
	const struct su_module *m = NULL;
	if (e->o.live && !(x->flags & (SU_MAP_VDSO | SU_MAP_ANON)) && x->path && x->path[0]) {
		if (x->build_id_len && (m = su_modcache_find(e->mods, x)))
			return m->status == SU_MODULE_OK ? m : NULL;
		if (!s->view_known) {
			s->other_view = rec_proc_other_view((pid_t)s->p->pid);
			s->view_known = 1;
		}
		int here = 0;
		int fd = rec_proc_file_open((pid_t)s->p->pid, x->start, x->end, x->path, s->other_view,
					    x->build_id, x->build_id_len, 0, 0, e->o.keep ? &here : NULL);
		if (fd < 0 && s->other_view < 0 && !x->build_id_len && x->ino)
			/* Gone, no build-id (a Go program's; a non-PIE one's
			 * load bias is not START - OFFSET): the file at its
			 * path here when it is that very inode. */
			fd = rec_proc_file_open((pid_t)s->p->pid, x->start, x->end, x->path, 0, NULL, 0, x->dev,
						x->ino, e->o.keep ? &here : NULL);
		if (fd < 0 && s->other_view < 0 && x->build_id_len && s->p->ppid > 1) {
			/* The process gone already (a short command in a
			 * container ends before its first sample is read):
			 * its parent, still there, mostly sees the same
			 * files; taken only with the recorded build-id. */
			int const view = rec_proc_other_view((pid_t)s->p->ppid);
			if (view > 0)
				fd = rec_proc_file_open((pid_t)s->p->ppid, 0, 0, x->path, view, x->build_id,
							x->build_id_len, 0, 0, e->o.keep ? &here : NULL);
		}
		if (fd >= 0) {
			struct su_map_entry alt = *x;
			if (!x->build_id_len) {
				int const n = rec_file_build_id(fd, alt.build_id, sizeof(alt.build_id));
				alt.build_id_len = n > 0 ? (uint8_t)n : 0;
			}
			struct stat a, b;
			char path[64];
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			if (alt.build_id_len) {
				/* Looked up by build-id (the file's when none
				 * was recorded): one module per file, whoever
				 * maps it. */
				alt.path = path;
				m = su_modcache_get(e->mods, &alt);
				/* Not at its path here: a copy for the reader. */
				if (!here && e->o.keep && m && m->status == SU_MODULE_OK)
					e->o.keep(e->o.keep_arg, fd, alt.build_id, alt.build_id_len);
			} else if (fstat(fd, &a) == 0 && stat(x->path, &b) == 0 && a.st_dev == b.st_dev &&
				   a.st_ino == b.st_ino) {
				/* No build-id (Go's default): by its path, one
				 * module, only when that path here is the file. */
				m = su_modcache_get(e->mods, x);
			}
			close(fd);
		} else if (x->build_id_len || s->other_view == 0) {
			/* The process gone (or its files not ours to see):
			 * the file at the path here, when it is the one (by
			 * build-id; without one only in our own view). */
			m = su_modcache_get(e->mods, x);
			if (x->build_id_len && (!m || m->status != SU_MODULE_OK) && e->o.keep)
				e->o.keep(e->o.keep_arg, -1, x->build_id, x->build_id_len); /* lost: counted */
		}
	} else {
		m = su_modcache_get(e->mods, x);
	}
	return m && m->status == SU_MODULE_OK ? m : NULL;
}

static int write_maps(struct rec_encoder *e, struct section *s, const struct su_maps *m, uint64_t ts)
{
	struct ctf_map_entry *ce = calloc(m->count ? m->count : 1, sizeof(*ce));
	if (!ce)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->count; i++) {
		const struct su_map_entry *x = &m->entries[i];
		const struct su_module *mod = entry_module(e, s, x);
		/* The build-id perf stored, else the file's (a [vdso]: ours). */
		int const own = !x->build_id_len && mod;
		ce[i] = (struct ctf_map_entry){
			.start = x->start, .end = x->end, .offset = x->offset, .bias = su_module_bias(mod, x),
			.flags = (uint8_t)((x->flags & SU_MAP_ANON ? CTF_MAP_ANON : 0) |
					   (x->flags & SU_MAP_MAIN ? CTF_MAP_MAIN : 0) |
					   (x->flags & SU_MAP_VDSO ? CTF_MAP_VDSO : 0)),
			.build_id_len = own ? mod->file_id_len : x->build_id_len,
			.build_id = own ? (mod->file_id_len ? mod->file_id : NULL) : x->build_id_len ? x->build_id : NULL,
			/* Code with no file: named as the capture library names it. */
			.path = x->path[0] || !(x->flags & SU_MAP_ANON) ? x->path : "[anon:exec]",
		};
	}
	int const rc = ctf_stream_maps(s->proc, ts, m->generation, ce, m->count);
	free(ce);
	for (uint32_t i = 0; e->o.jit && !s->jit_done && i < m->count; i++)
		if (m->entries[i].flags & SU_MAP_ANON) {
			if (!e->o.live) {
				s->other_view = -1; /* a file's processes: none of them here */
				s->view_known = 1;
			} else if (!s->view_known) {
				s->other_view = rec_proc_other_view((pid_t)s->p->pid);
				s->view_known = 1;
			}
			s->jit_done = e->o.jit(e->o.jit_arg, s->p->pid, s->other_view);
			break;
		}
	if (rc == 0) {
		s->last_maps = m;
		s->last_ts = ts;
	}
	return rc;
}

static struct thread *thread_of(struct rec_encoder *e, struct section *sec, uint32_t tid, int *rc)
{
	for (size_t i = sec->n_th; i-- > 0;) {
		struct thread *t = &e->th[sec->th[i]];
		if (t->tid == tid && !t->ended)
			return t;
	}
	for (size_t i = 0; i < sec->n_th; i++) {
		struct thread *t = &e->th[sec->th[i]];
		if (t->ended) { /* an ended thread's stream */
			t->tid = tid;
			t->ended = 0;
			t->have_prev = 0;
			return t;
		}
	}
	size_t ti = e->n_th;
	if (su_grow((void **)&sec->th, &sec->cap_th, sec->n_th + 1, sizeof(*sec->th)) ||
	    (!e->n_free_th && su_grow((void **)&e->th, &e->cap_th, e->n_th + 1, sizeof(*e->th)))) {
		*rc = -ENOMEM;
		return NULL;
	}
	if (e->n_free_th)
		ti = e->free_th[--e->n_free_th];
	struct thread *t = &e->th[ti];
	memset(t, 0, sizeof(*t));
	char name[64];
	if (sec->p->seq) /* an image after exec: its own streams */
		snprintf(name, sizeof(name), "samples-%u-%u-%u", sec->p->pid, sec->samples_streams, sec->p->seq);
	else
		snprintf(name, sizeof(name), "samples-%u-%u", sec->p->pid, sec->samples_streams);
	if ((*rc = ctf_writer_open_stream(e->w, CTF_STREAM_SAMPLES, name, sec->p->pid, &t->s)) != 0) {
		if (ti != e->n_th)
			e->free_th[e->n_free_th++] = ti;
		return NULL;
	}
	sec->samples_streams++;
	t->p = sec->p;
	t->tid = tid;
	sec->th[sec->n_th++] = ti;
	if (ti == e->n_th)
		e->n_th++;
	return t;
}

static int image_copy(struct stackcap_image *dst, const struct stackcap_image *src)
{
	if (src->nwords > dst->capacity || !dst->words) {
		uint64_t cap = src->nwords ? src->nwords : 1;
		uint64_t *w = realloc(dst->words, cap * 8);
		if (!w)
			return -ENOMEM;
		dst->words = w;
		dst->capacity = cap;
	}
	uint64_t *const words = dst->words;
	uint64_t const capacity = dst->capacity;
	*dst = *src;
	dst->words = words;
	dst->capacity = capacity;
	dst->kept = NULL;
	memcpy(dst->words, src->words, src->nwords * 8);
	return 0;
}

static int blob_room(struct rec_encoder *e, uint64_t nwords)
{
	size_t const need = STACKCAP_CODEC_BOUND(nwords);
	if (need <= e->blob_cap)
		return 0;
	uint8_t *nb = realloc(e->blob, need);
	if (!nb)
		return -ENOMEM;
	e->blob = nb;
	e->blob_cap = need;
	return 0;
}

/* The unfiltered copy (policy ALL, never elided), before the sample. */
static int write_full(struct rec_encoder *e, struct thread *t, const struct su_sample *s)
{
	const struct stackcap_image *im = s->image;
	const struct stackcap_code_ranges *ranges = ranges_of(e, s);
	if (!ranges)
		return -ENOMEM;
	/* Every stack word, but registers filtered as always (issue 16):
	 * the copy measures what the stack filter costs, and a register
	 * holds whatever the code put there (secrets, keys). */
	uint64_t regs[STACKCAP_NREGS];
	uint64_t const hi = im->sp + 8 * im->nwords;
	for (int r = 0; r < STACKCAP_NREGS; r++)
		regs[r] = r == STACKCAP_REG_RSP || r == STACKCAP_REG_RIP ||
				  stackcap_codec_classify(im->regs[r], ranges, im->sp, hi,
							  (enum stackcap_policy)e->o.policy)
				  ? im->regs[r] : 0;
	struct stackcap_codec_input in = {
		.words = im->words, .nwords = im->nwords, .sp = im->sp, .regs = regs,
		.ranges = ranges, .policy = STACKCAP_POLICY_ALL, .encoding = STACKCAP_WORDS_RELATIVE,
	};
	int rc = blob_room(e, im->nwords);
	if (rc)
		return rc;
	size_t const out = stackcap_codec_encode(e->blob, e->blob_cap, &in);
	if (stackcap_codec_is_error(out))
		return -EINVAL;
	return ctf_stream_sample_full(t->s, s->time_ns, s->tid, s->maps->generation, e->blob, out);
}

/* The interrupted stack's words kept: those up to this far above its sp. */
#define SIGF_STACK_SPAN (1ull << 20)

/* The index of event NAME in the table (the first when not there). */
static uint32_t event_index(struct rec_encoder *e, const char *name)
{
	if (!e->o.n_events || !name)
		return 0;
	if (name == e->last_event)
		return e->last_index;
	uint32_t idx = 0;
	for (size_t i = 0; i < e->o.n_events; i++)
		if (!strcmp(e->o.events[i], name)) {
			idx = (uint32_t)i;
			break;
		}
	e->last_event = name;
	e->last_index = idx;
	return idx;
}

/* S's stack filtered into T's cur image and encoded into e->blob against
 * T's previous sample (top-elided): *OUT bytes.  0 or -errno. */
static int encode_stack(struct rec_encoder *e, struct thread *t, const struct su_sample *s, size_t *out)
{
	/* As the signal handler would have filtered (F2: code pointers and
	 * pointers into the copied stack survive), every other word is 0. */
	int rc;
	if ((rc = image_copy(&t->cur, s->image)) != 0)
		return rc;
	const struct stackcap_code_ranges *ranges = ranges_of(e, s);
	if (!ranges)
		return -ENOMEM;
	uint64_t const hi = t->cur.sp + 8 * t->cur.nwords;
	uint64_t const also =
		e->o.policy == STACKCAP_POLICY_F2 ? rec_sigframe_rsp(t->cur.words, t->cur.nwords, t->cur.sp, t->cur.regs[STACKCAP_REG_RIP], ranges) : 0;
	for (uint64_t i = 0; i < t->cur.nwords; i++)
		if (!stackcap_codec_classify(t->cur.words[i], ranges, t->cur.sp, hi, (enum stackcap_policy)e->o.policy) &&
		    !(also && t->cur.words[i] - also < SIGF_STACK_SPAN))
			t->cur.words[i] = 0;
	t->cur.policy = (uint8_t)e->o.policy;
	uint64_t const k = t->have_prev ? stackcap_image_common_top(&t->cur, &t->prev) : 0;
	struct stackcap_codec_input in = {
		.words = t->cur.words, .nwords = t->cur.nwords, .sp = t->cur.sp, .regs = t->cur.regs,
		.ranges = ranges, .policy = (enum stackcap_policy)e->o.policy, .encoding = STACKCAP_WORDS_RELATIVE,
		.elide_top = k, .ref_sp = t->prev.sp, .has_ref = t->have_prev,
		.also_lo = also, .also_hi = also ? also + SIGF_STACK_SPAN : 0,
	};
	if ((rc = blob_room(e, t->cur.nwords)) != 0)
		return rc;
	*out = stackcap_codec_encode(e->blob, e->blob_cap, &in);
	return stackcap_codec_is_error(*out) ? -EINVAL : 0;
}

/* T's sample of event EV (of the table; 0 without one) and LEN bytes of
 * BLOB at TS written as the trace has it (with a table: event_sample). */
static int put_sample(struct rec_encoder *e, struct thread *t, uint64_t ts, uint32_t ev, uint32_t generation,
		      const uint8_t *blob, size_t len)
{
	return e->o.n_events ? ctf_stream_event_sample(t->s, ts, t->tid, ev, generation, blob, len)
			     : ctf_stream_sample(t->s, ts, t->tid, generation, blob, len);
}

/* S encoded (encode_stack) to be written after BEFORE bytes of other
 * events of its thread: over T's previous sample only when it all goes
 * in the packet in flight after that sample (the packet may fill by bytes
 * first, or those events begin a new one), so that each packet decodes
 * alone. */
static int encode_in_packet(struct rec_encoder *e, struct thread *t, const struct su_sample *s, size_t before,
			    size_t *out)
{
	int rc = encode_stack(e, t, s, out);
	if (rc || !t->have_prev || ctf_stream_joins(t->s, s->tid, before + CTF_SAMPLE_EVENT_MAX(*out)))
		return rc;
	t->have_prev = 0;
	return encode_stack(e, t, s, out);
}

/* T's sample of event EV and OUT bytes at TS written: counted, the packet
 * closed when full, cur becomes the reference of the next sample. */
static int sample_written(struct rec_encoder *e, struct section *sec, struct thread *t, uint64_t ts, uint32_t ev,
			  size_t out, int capped, uint64_t nwords)
{
	int rc;
	int packet_full = 0;
	if (++t->in_packet >= SAMPLES_PER_PACKET) {
		/* Each packet decodes alone: the next sample refers to none. */
		t->in_packet = 0;
		packet_full = 1;
		if ((rc = ctf_stream_flush(t->s)) != 0) {
			t->have_prev = 0;
			return rc;
		}
	}
	struct rec_proc_stats *ps = &e->procs[sec->stats];
	ps->samples++;
	ps->capped += capped != 0;
	e->st.samples++;
	if (e->o.n_events)
		e->event_samples[ev]++;
	e->st.blob_bytes += out;
	e->st.raw_stack_bytes += nwords * 8;
	if (ts > e->last_ts)
		e->last_ts = ts;
	struct stackcap_image const tmp = t->prev;
	t->prev = t->cur;
	t->cur = tmp;
	t->have_prev = !packet_full;
	return 0;
}

/* The section (*SEC) and thread of S, its maps generation written first.
 * A stack the thread holds is dropped: a sample of it means its switch
 * records were lost (a full ring).  NULL with *RC on an error. */
static struct thread *sample_thread(struct rec_encoder *e, const struct su_sample *s, struct section **sec, int *rc)
{
	if (!(*sec = section_open(e, s->process, s->time_ns, rc))) {
		e->st.after_end += *rc == 0;
		return NULL;
	}
	if ((*sec)->last_maps != s->maps && (*rc = write_maps(e, *sec, s->maps, s->time_ns)) != 0)
		return NULL;
	struct thread *t = thread_of(e, *sec, s->tid, rc);
	if (t && t->held) {
		t->held = 0;
		e->st.off_cpu_unpaired++;
	}
	return t;
}

int rec_encoder_sample(struct rec_encoder *e, const struct su_sample *s)
{
	if (!s->process || !s->maps)
		return 0;
	if (!(s->image->regs_kept >> STACKCAP_REG_RIP & 1)) {
		/* A kernel thread or an exiting task, or a call chain perf
		 * took without the stack (-g): no user stack to keep (a
		 * stackcap trace has no such samples). */
		if (s->user_chain)
			e->st.chain_only++;
		else
			e->st.no_user++;
		return 0;
	}
	int rc = 0;
	struct section *sec;
	struct thread *t = sample_thread(e, s, &sec, &rc);
	if (!t)
		return rc;
	/* The sample and the events it comes with go in one packet. */
	if ((rc = ctf_stream_group_begin(t->s, s->tid)) != 0)
		return rc;
	if (e->o.full_copy && (rc = write_full(e, t, s)) != 0)
		goto cancel;
	if (e->o.kernel_frames && s->kernel_chain && s->n_kernel_chain) {
		if ((rc = ctf_stream_kernel_chain(t->s, s->time_ns, s->tid, s->kernel_chain, s->n_kernel_chain)) != 0 ||
		    (rc = kaddr_add(e, s->kernel_chain, s->n_kernel_chain)) != 0)
			goto cancel;
	}
	size_t out;
	if ((rc = encode_in_packet(e, t, s, 0, &out)) != 0)
		goto cancel;
	uint32_t const ev = event_index(e, s->event);
	if ((rc = put_sample(e, t, s->time_ns, ev, s->maps->generation, e->blob, out)) != 0) {
		t->have_prev = 0; /* not written: no later sample may refer to it */
		goto cancel;
	}
	if (e->o.kernel_frames && s->kernel_chain && s->n_kernel_chain)
		e->st.kernel_samples++;
	return sample_written(e, sec, t, s->time_ns, ev, out, s->stack_capped, s->image->nwords);
cancel:
	ctf_stream_group_cancel(t->s);
	return rc;
}

/* ---- off-CPU time ------------------------------------------------------------- */

int rec_encoder_hold(struct rec_encoder *e, const struct su_sample *s)
{
	if (!s->process || !s->maps || !(s->image->regs_kept >> STACKCAP_REG_RIP & 1))
		return 0; /* a kernel thread or an exiting task: no user stack */
	int rc = 0;
	struct section *sec;
	struct thread *t = sample_thread(e, s, &sec, &rc);
	if (!t)
		return rc;
	/* Written later with its kernel chain and off_cpu event, in the
	 * packet in flight now (nothing else of the thread comes between). */
	size_t const kc_bytes = e->o.kernel_frames && s->kernel_chain && s->n_kernel_chain
		? CTF_KERNEL_CHAIN_EVENT_MAX(s->n_kernel_chain) : 0;
	size_t out;
	if ((rc = encode_in_packet(e, t, s, kc_bytes + CTF_OFF_CPU_EVENT_MAX, &out)) != 0)
		return rc;
	if (out > t->hold_cap) {
		uint8_t *nb = realloc(t->hold_blob, out);
		if (!nb)
			return -ENOMEM;
		t->hold_blob = nb;
		t->hold_cap = out;
	}
	memcpy(t->hold_blob, e->blob, out);
	t->hold_len = out;
	t->hold_nkc = 0;
	if (e->o.kernel_frames && s->kernel_chain && s->n_kernel_chain) {
		if (su_grow((void **)&t->hold_kc, &t->hold_kc_cap, s->n_kernel_chain, sizeof(*t->hold_kc)))
			return -ENOMEM;
		memcpy(t->hold_kc, s->kernel_chain, s->n_kernel_chain * sizeof(*t->hold_kc));
		t->hold_nkc = s->n_kernel_chain;
	}
	t->hold_ref = t->have_prev;
	t->hold_ts = s->time_ns;
	t->hold_generation = s->maps->generation;
	t->hold_event = event_index(e, s->event);
	t->hold_capped = s->stack_capped;
	t->blocked_at = 0;
	t->held = 1;
	return 0;
}

/* T's held stack written as off-CPU time of DURATION ns. */
static int hold_write(struct rec_encoder *e, struct thread *t, uint64_t duration)
{
	t->held = 0;
	int rc = 0;
	struct section *sec = section_open(e, t->p, t->hold_ts, &rc);
	if (!sec) {
		e->st.after_end += rc == 0;
		return rc;
	}
	if (t->hold_ref && !t->have_prev) {
		/* Not expected (a held thread's packet stays open), but
		 * counted: no loss is silent. */
		e->st.off_cpu_unwritable++;
		return 0;
	}
	if ((rc = ctf_stream_group_begin(t->s, t->tid)) != 0)
		return rc;
	if (t->hold_nkc) {
		if ((rc = ctf_stream_kernel_chain(t->s, t->hold_ts, t->tid, t->hold_kc, t->hold_nkc)) != 0 ||
		    (rc = kaddr_add(e, t->hold_kc, t->hold_nkc)) != 0) {
			ctf_stream_group_cancel(t->s);
			return rc;
		}
	}
	if ((rc = ctf_stream_off_cpu(t->s, t->hold_ts, t->tid, duration)) != 0 ||
	    (rc = put_sample(e, t, t->hold_ts, t->hold_event, t->hold_generation, t->hold_blob, t->hold_len)) != 0) {
		ctf_stream_group_cancel(t->s);
		t->have_prev = 0;
		return rc;
	}
	if (t->hold_nkc)
		e->st.kernel_samples++;
	e->st.off_cpu_samples++;
	e->st.off_cpu_ns += duration;
	return sample_written(e, sec, t, t->hold_ts, t->hold_event, t->hold_len, t->hold_capped, t->cur.nwords);
}

static struct thread *held_thread(struct rec_encoder *e, uint32_t pid, uint32_t tid)
{
	struct section *sec = pid_section(e, pid);
	for (size_t i = 0; sec && i < sec->n_th; i++) {
		struct thread *t = &e->th[sec->th[i]];
		if (t->held && t->tid == tid && !t->ended)
			return t;
	}
	return NULL;
}

int rec_encoder_switch(struct rec_encoder *e, uint32_t pid, uint32_t tid, uint64_t time, int out, int preempted)
{
	struct thread *t = held_thread(e, pid, tid);
	if (!t)
		return 0;
	if (out && preempted) { /* still runnable: CPU time, not off-CPU */
		t->held = 0;
		e->st.off_cpu_preempted++;
		return 0;
	}
	if (out) {
		t->blocked_at = time;
		return 0;
	}
	if (!t->blocked_at || time < t->blocked_at) { /* its switch-out was lost */
		t->held = 0;
		e->st.off_cpu_unpaired++;
		return 0;
	}
	return hold_write(e, t, time - t->blocked_at);
}

/* T still blocked when the recording (or its section) ends: its time
 * until TS. */
static int hold_end(struct rec_encoder *e, struct thread *t, uint64_t ts)
{
	if (!t->held)
		return 0;
	if (!t->blocked_at || ts <= t->blocked_at) {
		t->held = 0;
		return 0;
	}
	e->st.off_cpu_unfinished++;
	return hold_write(e, t, ts - t->blocked_at);
}

static int holds_finish(struct rec_encoder *e, uint64_t ts)
{
	for (size_t i = 0; i < e->n_th; i++) {
		if (!e->th[i].p)
			continue;
		int const rc = hold_end(e, &e->th[i], ts);
		if (rc)
			return rc;
	}
	return 0;
}

/* What S's pid has not yet said of its drops, written on S's process
 * stream (drops, then process_end when END) and counted as said. */
static int section_counts(struct rec_encoder *e, struct section *s, uint64_t ts, uint64_t lost, uint64_t thr,
			  int end)
{
	struct rec_proc_stats *ps = &e->procs[s->stats];
	struct pid_state *st = &e->pid_st[s->stats];
	lost += ps->lost - st->lost_said;
	thr += ps->throttled - st->throttled_said;
	st->lost_said = ps->lost;
	st->throttled_said = ps->throttled;
	uint64_t const at = ts > s->last_ts ? ts : s->last_ts;
	if (lost || thr) {
		struct ctf_drops d = { .tid = s->p->pid, .ring_full = lost, .other = thr };
		int const rc = ctf_stream_drops(s->proc, at, &d);
		if (rc)
			return rc;
	}
	if (!end)
		return 0;
	uint64_t const samples = ps->samples - st->samples_said;
	st->samples_said = ps->samples;
	return ctf_stream_process_end(s->proc, at, samples, lost + thr);
}

/* S's threads' streams closed and their memory given back; its process
 * stream ended (EXITED: its process exited; else a newer section of its
 * pid began) and closed.  The first section's process stream stays open:
 * the trace's last words go there (the kernel symbols, the drops of
 * processes without a section), its end written by rec_encoder_finish. */
static int section_end(struct rec_encoder *e, struct section *s, uint64_t ts, int exited)
{
	int rc = 0;
	for (size_t i = 0; i < s->n_th; i++) {
		struct thread *t = &e->th[s->th[i]];
		int r = hold_end(e, t, ts);
		rc = rc ? rc : r;
		r = ctf_stream_close(t->s);
		rc = rc ? rc : r;
		free(t->prev.words);
		free(t->cur.words);
		free(t->hold_blob);
		free(t->hold_kc);
		memset(t, 0, sizeof(*t));
		if (!su_grow((void **)&e->free_th, &e->cap_free_th, e->n_free_th + 1, sizeof(*e->free_th)))
			e->free_th[e->n_free_th++] = s->th[i];
	}
	free(s->th);
	s->th = NULL;
	s->n_th = s->cap_th = 0;
	s->ended = 1;
	/* Its maps are not used again: the range sets of its pid forgotten
	 * (a released generation's address may come back, another's). */
	for (size_t i = 0; i < RANGE_SETS; i++)
		if (e->sets[i].pid == s->p->pid) {
			e->sets[i].maps = NULL;
			e->sets[i].used = 0;
		}
	s->last_maps = NULL;
	if (e->o.released)
		e->o.released(e->o.released_arg, s->p);
	if (s == e->sec)
		return rc;
	int r = section_counts(e, s, ts, 0, 0, exited || e->o.end_all || s->p->ended);
	rc = rc ? rc : r;
	r = ctf_stream_close(s->proc);
	rc = rc ? rc : r;
	s->proc = NULL;
	return rc;
}

int rec_encoder_process(struct rec_encoder *e, const struct su_process *p, uint64_t ts)
{
	int rc = 0;
	return section_open(e, p, ts, &rc) ? 0 : rc;
}

int rec_encoder_thread_exit(struct rec_encoder *e, uint32_t pid, uint32_t tid, uint64_t ts)
{
	struct section *sec = pid_section(e, pid);
	if (!sec || sec->ended)
		return 0;
	for (size_t i = 0; i < sec->n_th; i++) {
		struct thread *t = &e->th[sec->th[i]];
		if (t->tid == tid || pid == tid) {
			t->ended = 1;
			t->held = 0;
		}
	}
	if (pid != tid || sec->exited)
		return 0;
	sec->exited = 1;
	sec->exit_ts = ts;
	sec->exit_flush = e->flushes;
	if (su_grow((void **)&e->exited, &e->cap_exited, e->n_exited + 1, sizeof(*e->exited)))
		return section_end(e, sec, ts, 1); /* now, then */
	e->exited[e->n_exited++] = (size_t)(sec - e->sec);
	return e->n_exited > e->max_exited ? exited_end(e) : 0;
}

/* The sections whose process exited before the flush before this one,
 * and the oldest beyond MAX_EXITED. */
static int exited_end(struct rec_encoder *e)
{
	int rc = 0;
	size_t k = 0;
	for (size_t i = 0; i < e->n_exited; i++) {
		struct section *s = &e->sec[e->exited[i]];
		if (s->ended)
			continue;
		if (s->exit_flush + 2 > e->flushes && e->n_exited - i <= e->max_exited) {
			e->exited[k++] = e->exited[i];
			continue;
		}
		int const r = section_end(e, s, s->exit_ts, 1);
		rc = rc ? rc : r;
	}
	e->n_exited = k;
	return rc;
}

int rec_encoder_flush(struct rec_encoder *e)
{
	e->flushes++;
	int rc = exited_end(e);
	for (size_t i = 0; i < e->n_sec; i++) {
		if (!e->sec[i].proc)
			continue;
		int const r = ctf_stream_flush(e->sec[i].proc);
		rc = rc ? rc : r;
	}
	/* The sample streams' packets stay open (ctf_stream_sync): a cut
	 * would cost a whole sample and a zstd frame, and the packets' cuts
	 * would depend on the machine's load. */
	for (size_t i = 0; i < e->n_th; i++) {
		if (!e->th[i].p || !e->th[i].in_packet)
			continue;
		int const r = ctf_stream_sync(e->th[i].s);
		rc = rc ? rc : r;
	}
	return rc;
}

int rec_encoder_lost(struct rec_encoder *e, uint32_t pid, uint64_t n, int throttled)
{
	struct rec_proc_stats *ps = proc_stats(e, pid, NULL);
	if (!ps)
		return -ENOMEM;
	if (throttled) {
		ps->throttled++;
		e->st.throttled++;
	} else {
		ps->lost += n;
		e->st.lost += n;
	}
	return 0;
}

/* The kernel symbols covering every kernel address recorded, once, in
 * the first process stream. */
static int write_kernel_symbols(struct rec_encoder *e, uint64_t ts)
{
	if (!e->n_kaddr || !e->n_sec)
		return 0;
	kaddr_unique(e);
	struct rec_ksyms k;
	int rc = rec_ksyms_cover(e->kaddr, e->n_kaddr, &k);
	if (rc) {
		if (e->o.warn.fn) {
			char msg[256];
			snprintf(msg, sizeof(msg), "kernel symbols not recorded (/proc/kallsyms: %s): kernel frames "
				 "stay unnamed", strerror(-rc));
			e->o.warn.fn(e->o.warn.arg, msg);
		}
		return 0;
	}
	struct section *s = &e->sec[0];
	uint64_t const at = ts > s->last_ts ? ts : s->last_ts;
	rc = ctf_stream_kernel_symbols(s->proc, at, k.build_id, k.build_id_len, k.syms, k.n);
	if (rc == 0) {
		e->st.kernel_symbols = k.n;
		e->st.kernel_symbol_bytes = 5 + k.build_id_len;
		for (size_t i = 0; i < k.n; i++)
			e->st.kernel_symbol_bytes += 18 + strlen(k.syms[i].name) + strlen(k.syms[i].module);
	}
	rec_ksyms_free(&k);
	return rc;
}

int rec_encoder_finish(struct rec_encoder *e, uint64_t ts)
{
	if (!ts)
		ts = e->last_ts;
	int const hrc = holds_finish(e, ts);
	if (hrc)
		return hrc;
	if (e->o.kernel_frames) {
		int const rc = write_kernel_symbols(e, ts);
		if (rc)
			return rc;
	}
	if (!e->n_sec)
		return 0;
	/* Each pid's drops not yet said on its section in progress; those
	 * of pids with none (no sample written, or ended before the drops
	 * were counted) on the first section of all. */
	uint64_t lost = 0, thr = 0;
	for (size_t j = 0; j < e->n_procs; j++) {
		size_t const si = e->pid_st[j].sec;
		if (si && (!e->sec[si - 1].ended || si == 1))
			continue;
		lost += e->procs[j].lost - e->pid_st[j].lost_said;
		thr += e->procs[j].throttled - e->pid_st[j].throttled_said;
		e->pid_st[j].lost_said = e->procs[j].lost;
		e->pid_st[j].throttled_said = e->procs[j].throttled;
	}
	for (size_t i = 0; i < e->n_sec; i++) {
		struct section *s = &e->sec[i];
		if (!s->proc)
			continue;
		int const rc = section_counts(e, s, ts, i ? 0 : lost, i ? 0 : thr,
					      e->o.end_all || s->p->ended || s->exited);
		if (rc)
			return rc;
	}
	return 0;
}

void rec_encoder_get_stats(const struct rec_encoder *e, struct rec_encoder_stats *st)
{
	*st = e->st;
	st->n_procs = e->n_procs;
	st->procs = e->procs;
	st->event_samples = e->event_samples;
}

int rec_encoder_free(struct rec_encoder *e)
{
	if (!e)
		return 0;
	int rc = 0;
	for (size_t i = 0; i < RANGE_SETS; i++)
		free(e->sets[i].set);
	for (size_t i = 0; i < e->n_th; i++) {
		if (!e->th[i].p)
			continue;
		int const r = ctf_stream_close(e->th[i].s);
		if (r && !rc)
			rc = r;
		free(e->th[i].prev.words);
		free(e->th[i].cur.words);
		free(e->th[i].hold_blob);
		free(e->th[i].hold_kc);
	}
	for (size_t i = 0; i < e->n_sec; i++) {
		free(e->sec[i].th);
		if (!e->sec[i].proc)
			continue;
		int const r = ctf_stream_close(e->sec[i].proc);
		if (r && !rc)
			rc = r;
	}
	su_hmap_free(&e->pid_map);
	free(e->pid_st);
	free(e->free_th);
	free(e->exited);
	free(e->th);
	free(e->sec);
	free(e->procs);
	free(e->blob);
	free(e->kaddr);
	free(e->event_samples);
	su_modcache_free(e->mods);
	free(e);
	return rc;
}
