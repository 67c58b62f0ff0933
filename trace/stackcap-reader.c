/* Reading a stackcap trace (docs/trace-format.md) into the trace model.
 *
 * Two passes over the trace's streams, each in time order:
 *  1. the process streams (small): process sections, every maps generation,
 *     drops, ends;
 *  2. the sample streams, decoded with the maps of their generation.
 * Two passes because the writer stamps a maps event when it writes it, which
 * can be after the first samples encoded against it.  Memory is bounded by
 * the number of threads and maps generations, never by the trace length.
 *
 * The events come from an event source (reader-internal.h): our own parser
 * of the format we write (fast, the default) or babeltrace2 (the reference). */
#include <errno.h>
#include <inttypes.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/grow.h"
#include "compress/rt-frames.h"
#include "trace/reader-internal.h"
#include "trace/reader-push.h"
#include "trace/parts-plan.h"

/* reader.pass in push mode: every event kind at once. */
#define PUSH_PASSES (PASS_PROCESS | PASS_SAMPLES)

/* ---- the model being built ----------------------------------------------- */

struct section {
	struct su_process p;
	uint64_t start_ts;
	uint64_t stream_id;      /* bt stream id of its process stream */
	struct su_maps **maps;   /* sorted by generation */
	size_t n_maps, cap_maps;
	struct su_runtime *rt;   /* version 2: its runtime unwinder, or NULL */
	int has_later;           /* a later section of the same pid exists */
	int uncounted;           /* another part counts it (su_reader_opts.plan) */
};

/* The sections of one pid, in the order they started (indices into
 * reader.sections), found by hashing the pid: a trace of many processes
 * is read in linear time. */
struct pid_sections {
	uint64_t key;            /* 1 << 32 | pid; 0: empty slot */
	int unsorted;            /* start times not in order: scan them */
	size_t *idx;
	size_t n, cap;
};

struct thread_drops {
	uint64_t key;            /* pid << 32 | tid; 0: empty slot (open addressing) */
	uint64_t total;
};

/* A thread's slot in the reader's table: small, so a system-wide trace's
 * thousands of threads cost little once their states are gone. */
struct thread_slot {
	uint64_t key;             /* pid << 32 | tid | 1 << 63; 0: empty slot */
	uint64_t decodes;         /* images decoded while it had no state (thread_end) */
	struct thread_state *t;   /* NULL: none now */
};

struct thread_state {
	/* The last two images: img[cur] the last decoded, the other the
	 * next.  Both lie in BUF aligned at its end (the stack's top), so a
	 * blob decoded over its reference finds the words it takes from it
	 * (most of a deep stack) in place: no copy. */
	struct stackcap_image img[2];
	int cur;                 /* img[cur] is the last decoded image */
	uint64_t decodes;        /* images decoded: su_sample.decode_no */
	uint64_t *buf;
	uint64_t buf_cap;        /* in words */
	int has_ref;
	struct stackcap_image full; /* unfiltered copy of the next sample */
	uint64_t full_ts;
	int full_pending;
	struct stackcap_image seg;  /* second stack segment of the next sample */
	uint64_t seg_ts;
	int seg_pending;
	uint8_t *rt;                /* runtime frames of the next sample */
	size_t rt_len, rt_cap;
	uint64_t rt_ts;
	int rt_pending;
	uint64_t *kc;               /* kernel call chain of the next sample */
	uint32_t kc_n;
	size_t kc_cap;
	uint64_t kc_ts;
	int kc_pending;
	uint64_t oc_ns;             /* off-CPU time of the next sample */
	uint64_t oc_ts;
	int oc_pending;
};

struct reader {
	const struct su_reader_opts *opts;
	int pass;
	const struct su_reader_callbacks *cb;
	struct su_reader_stats *st;
	char *err;
	size_t errlen;
	const struct su_warn_hook *warn; /* opts->warn, or NULL */

	struct section *sections;
	size_t n_sections, cap_sections;
	struct pid_sections *pids;
	size_t n_pids, cap_pids;  /* open addressing, power of two */
	struct thread_drops *drops;
	size_t n_drops, cap_drops;
	struct thread_slot *threads;
	size_t cap_threads, n_threads; /* open addressing, power of two */

	int cb_rc;               /* a callback's nonzero return */
	struct su_maps *last_maps;   /* what on_maps stored (push mode tells cb->maps) */
	int warned_blob;             /* the first undecodable blob was named */
	struct su_kernel *kernel;    /* the trace's kernel symbols, or NULL */
	int kernel_shared;           /* KERNEL is the parts' plan's (not freed here) */
	unsigned kernel_events;      /* kernel symbol events met */
	char **events;               /* versions 4, 5: the event table (metadata env), or NULL */
	size_t n_events;
	int warned_event;            /* a sample named an event beyond the table */
	uint64_t image_bytes;        /* the stack images every thread holds (capacities) */
};

void su_kernel_free(struct su_kernel *k)
{
	if (!k)
		return;
	if (k->drop)
		k->drop(k);
	for (size_t i = 0; !k->text && k->syms && i < k->n; i++) {
		free(k->syms[i].name);
		free(k->syms[i].module);
	}
	free(k->text);
	free(k->syms);
	if (k->map)
		munmap(k->map, k->map_len);
	free(k->block_state);
	free(k->cache_path);
	su_kernel_free(k->fallback);
	free(k);
}

void su_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || !errlen || err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void su_err_context(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	char ctx[1024], cause[1024];
	va_list ap;
	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	snprintf(cause, sizeof(cause), "%s", err[0] ? err : strerror(rc < 0 ? -rc : rc));
	snprintf(err, errlen, "%s: %s", ctx, cause);
}

void su_reader_warn(const struct su_warn_hook *w, const char *fmt, ...)
{
	char msg[2048], out[4 * sizeof(msg) + 2];
	va_list ap;
	if (!w || !w->fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* A recorded path may hold escape sequences meant for the terminal. */
	size_t n = 0;
	for (const unsigned char *c = (const unsigned char *)msg; *c; c++) {
		if (*c < 0x20 || *c == 0x7f)
			n += (size_t)sprintf(out + n, "\\x%02x", *c);
		else
			out[n++] = (char)*c;
	}
	out[n] = 0;
	w->fn(w->arg, out);
}

int su_open_regular(const char *path, int flags)
{
	int const fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | flags);
	struct stat sb;
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		int const e = S_ISREG(sb.st_mode) ? errno : EINVAL;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

void su_maps_free(struct su_maps *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->count; i++)
		free(m->entries[i].path);
	free(m->entries);
	free(m->range_list);
	free(m);
}

/* ---- runtimes (version 2) --------------------------------------------------- */

static struct section *section_of_stream(struct reader *r, uint64_t stream_id, uint32_t pid);
static struct thread_state *thread_get(struct reader *r, uint32_t pid, uint32_t tid);

static size_t rt_slot(uint64_t code, uint32_t fp, size_t cap)
{
	uint64_t h = (code ^ ((uint64_t)fp << 32)) * 0x9E3779B97F4A7C15ull;
	return (size_t)(h ^ (h >> 31)) & (cap - 1);
}

const struct su_rt_code *su_runtime_code(const struct su_runtime *rt, uint64_t code, uint32_t fp)
{
	if (!rt || !rt->cap_codes || !fp)
		return NULL;
	for (size_t h = rt_slot(code, fp, rt->cap_codes); rt->codes[h].fp; h = (h + 1) & (rt->cap_codes - 1))
		if (rt->codes[h].code == code && rt->codes[h].fp == fp)
			return &rt->codes[h];
	return NULL;
}

static void runtime_free(struct su_runtime *rt)
{
	if (!rt)
		return;
	for (size_t i = 0; i < rt->cap_codes; i++) {
		free(rt->codes[i].name);
		free(rt->codes[i].file);
		free(rt->codes[i].line_table);
	}
	free(rt->codes);
	free(rt->name);
	free(rt);
}

/* The runtime of section S, created empty at its first runtime event. */
static struct su_runtime *section_runtime(struct section *s)
{
	if (!s->rt) {
		s->rt = calloc(1, sizeof(*s->rt));
		if (!s->rt)
			return NULL;
		for (size_t i = 0; i < s->n_maps; i++)
			s->maps[i]->runtime = s->rt;
	}
	return s->rt;
}

static int on_runtime(struct reader *r, const struct raw_event *ev)
{
	struct section *s = section_of_stream(r, ev->stream_id, ev->pid);
	if (!s)
		return 0;
	struct su_runtime *rt = section_runtime(s);
	if (!rt)
		return -ENOMEM;
	if (ev->kind == RAW_RUNTIME) {
		char *name = strdup(ev->runtime.name ? ev->runtime.name : "");
		if (!name)
			return -ENOMEM;
		free(rt->name);
		rt->name = name;
		rt->kind = ev->runtime.kind;
		rt->version = ev->runtime.version;
		rt->eval_start = ev->runtime.eval_start;
		rt->eval_end = ev->runtime.eval_end;
		rt->chains = ev->runtime.chains;
		rt->dropped = ev->runtime.dropped;
		rt->stale = ev->runtime.stale;
		return 0;
	}
	const struct su_rt_code *c = &ev->rt_code;
	if (!c->fp || su_runtime_code(rt, c->code, c->fp))
		return 0; /* no fingerprint is never named; a repeat changes nothing */
	if ((rt->n_codes + 1) * 2 > rt->cap_codes) {
		size_t const ncap = rt->cap_codes ? 2 * rt->cap_codes : 256;
		struct su_rt_code *nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		for (size_t i = 0; i < rt->cap_codes; i++) {
			if (!rt->codes[i].fp)
				continue;
			size_t h = rt_slot(rt->codes[i].code, rt->codes[i].fp, ncap);
			while (nt[h].fp)
				h = (h + 1) & (ncap - 1);
			nt[h] = rt->codes[i];
		}
		free(rt->codes);
		rt->codes = nt;
		rt->cap_codes = ncap;
	}
	size_t h = rt_slot(c->code, c->fp, rt->cap_codes);
	while (rt->codes[h].fp)
		h = (h + 1) & (rt->cap_codes - 1);
	struct su_rt_code n = *c;
	n.name = strdup(c->name ? c->name : "");
	n.file = strdup(c->file ? c->file : "");
	n.line_table = malloc(c->line_table_len ? c->line_table_len : 1);
	if (!n.name || !n.file || !n.line_table) {
		free(n.name);
		free(n.file);
		free(n.line_table);
		return -ENOMEM;
	}
	if (c->line_table_len)
		memcpy(n.line_table, c->line_table, c->line_table_len);
	rt->codes[h] = n;
	rt->n_codes++;
	return 0;
}

/* K, the trace's kernel symbols, named by every maps generation. */
static void kernel_set(struct reader *r, struct su_kernel *k)
{
	r->kernel = k;
	for (size_t i = 0; i < r->n_sections; i++)
		for (size_t j = 0; j < r->sections[i].n_maps; j++)
			r->sections[i].maps[j]->kernel = k;
}

/* The trace's kernel symbols (the first event of them; one per trace). */
static int on_kernel_symbols(struct reader *r, const struct raw_event *ev)
{
	if (!ev->kernel)
		return 0;
	r->kernel_events += !ev->uncounted; /* a file every part reads: counted by one */
	if (r->kernel) {
		su_kernel_free(ev->kernel);
		return 0;
	}
	kernel_set(r, ev->kernel);
	return 0;
}

/* Read in parts with a plan, this part's process streams read: the parts
 * meet, and each takes the kernel symbols whichever part read.  @return
 * the process sections of all parts (counted once each). */
static size_t parts_meet(struct reader *r, struct su_parts_plan *plan)
{
	struct su_kernel *k = r->kernel;
	size_t sections = 0;
	for (size_t i = 0; i < r->n_sections; i++)
		sections += !r->sections[i].uncounted;
	unsigned const n = su_parts_plan_meet(plan, r->opts->part, &k, r->kernel_events, &sections);
	if (n > 1)
		su_reader_warn(r->warn, "kernel symbols in %u process streams: read in parts, which one a whole read "
			       "keeps is not known", n);
	r->kernel_shared = 1;
	kernel_set(r, k);
	return sections;
}

/* Held until the sample of the same time that follows it. */
static int on_off_cpu(struct reader *r, const struct raw_event *ev)
{
	if (r->opts && ((r->opts->pid && r->opts->pid != ev->pid) || (r->opts->tid && r->opts->tid != ev->tid)))
		return 0;
	struct thread_state *t = thread_get(r, ev->pid, ev->tid);
	if (!t)
		return -ENOMEM;
	t->oc_ns = ev->off_cpu_ns;
	t->oc_ts = ev->ts;
	t->oc_pending = ev->off_cpu_ns != 0;
	return 0;
}

/* Held until the sample of the same time that follows it. */
static int on_kernel_chain(struct reader *r, const struct raw_event *ev)
{
	if (r->opts && ((r->opts->pid && r->opts->pid != ev->pid) || (r->opts->tid && r->opts->tid != ev->tid)))
		return 0;
	struct thread_state *t = thread_get(r, ev->pid, ev->tid);
	if (!t)
		return -ENOMEM;
	size_t const n = ev->blob_len / 8;
	t->kc_pending = 0;
	if (n > t->kc_cap) {
		uint64_t *nk = realloc(t->kc, n * sizeof(*nk));
		if (!nk)
			return -ENOMEM;
		t->kc = nk;
		t->kc_cap = n;
	}
	for (size_t i = 0; i < n; i++)
		t->kc[i] = su_ld64(ev->blob + 8 * i);
	t->kc_n = (uint32_t)n;
	t->kc_ts = ev->ts;
	t->kc_pending = n != 0;
	return 0;
}

/* Held until the sample of the same time that follows it. */
static int on_runtime_frames(struct reader *r, const struct raw_event *ev)
{
	if (r->opts && ((r->opts->pid && r->opts->pid != ev->pid) || (r->opts->tid && r->opts->tid != ev->tid)))
		return 0;
	struct thread_state *t = thread_get(r, ev->pid, ev->tid);
	if (!t)
		return -ENOMEM;
	t->rt_pending = 0;
	if (ev->blob_len > t->rt_cap) {
		uint8_t *nb = realloc(t->rt, ev->blob_len);
		if (!nb)
			return -ENOMEM;
		t->rt = nb;
		t->rt_cap = ev->blob_len;
	}
	if (ev->blob_len)
		memcpy(t->rt, ev->blob, ev->blob_len);
	t->rt_len = ev->blob_len;
	t->rt_ts = ev->ts;
	t->rt_pending = 1;
	return 0;
}

static void reader_free(struct reader *r)
{
	for (size_t i = 0; i < r->n_events; i++)
		free(r->events[i]);
	free(r->events);
	for (size_t i = 0; i < r->n_sections; i++) {
		struct section *s = &r->sections[i];
		runtime_free(s->rt);
		for (size_t j = 0; j < s->n_maps; j++)
			su_maps_free(s->maps[j]);
		free(s->maps);
		free(s->p.comm);
		free(s->p.exe);
	}
	free(r->sections);
	for (size_t i = 0; i < r->cap_pids; i++)
		free(r->pids[i].idx);
	free(r->pids);
	free(r->drops);
	for (size_t i = 0; i < r->cap_threads; i++) {
		struct thread_state *t = r->threads[i].t;
		if (!t)
			continue;
		free(t->buf);
		free(t->full.words);
		free(t->seg.words);
		free(t->rt);
		free(t->kc);
		free(t);
	}
	free(r->threads);
	if (!r->kernel_shared)
		su_kernel_free(r->kernel);
}

/* ---- open-addressing tables (threads, pids): slots keyed by a nonzero
 * uint64_t at their start, power-of-two sizes, linear probing ---------- */

static size_t oa_hash(uint64_t key, size_t cap)
{
	return (size_t)(key * 0x9E3779B97F4A7C15ull >> 40) & (cap - 1);
}

/* The slot of KEY in TAB (CAP slots of ELEM bytes): KEY's, or the empty
 * one where it would go. */
static void *oa_slot(void *tab, size_t cap, size_t elem, uint64_t key)
{
	size_t h = oa_hash(key, cap);
	uint64_t k;
	while (memcpy(&k, (char *)tab + h * elem, 8), k && k != key)
		h = (h + 1) & (cap - 1);
	return (char *)tab + h * elem;
}

/* Make room for one more entry in *TAB (*CAP slots, N used): doubled and
 * rehashed when half full.  @return 0 or -ENOMEM. */
static int oa_reserve(void **tab, size_t *cap, size_t n, size_t elem)
{
	if ((n + 1) * 2 <= *cap)
		return 0;
	size_t const ncap = *cap ? *cap * 2 : 64;
	char *nt = calloc(ncap, elem);
	if (!nt)
		return -ENOMEM;
	for (size_t i = 0; i < *cap; i++) {
		const char *e = (const char *)*tab + i * elem;
		uint64_t k;
		memcpy(&k, e, 8);
		if (k)
			memcpy(oa_slot(nt, ncap, elem, k), e, elem);
	}
	free(*tab);
	*tab = nt;
	*cap = ncap;
	return 0;
}

/* The sections of PID, or NULL; with ADD, an empty entry made (NULL: no
 * memory). */
static struct pid_sections *pid_find(struct reader *r, uint32_t pid, int add)
{
	uint64_t const key = 1ull << 32 | pid;
	if (add && oa_reserve((void **)&r->pids, &r->cap_pids, r->n_pids, sizeof(*r->pids)))
		return NULL;
	if (!r->cap_pids)
		return NULL;
	struct pid_sections *ps = oa_slot(r->pids, r->cap_pids, sizeof(*r->pids), key);
	if (!ps->key) {
		if (!add)
			return NULL;
		ps->key = key;
		r->n_pids++;
	}
	return ps;
}

/* The section of PID that was current at TS: the latest started at or
 * before TS, else the earliest (clock skew between streams). */
static struct section *section_at(struct reader *r, uint32_t pid, uint64_t ts)
{
	struct pid_sections *ps = pid_find(r, pid, 0);
	if (!ps || !ps->n)
		return NULL;
	if (!ps->unsorted) {
		/* Started in time order: the last start <= TS by bisection. */
		size_t lo = 0, hi = ps->n;
		while (lo < hi) {
			size_t const mid = lo + (hi - lo) / 2;
			if (r->sections[ps->idx[mid]].start_ts <= ts)
				lo = mid + 1;
			else
				hi = mid;
		}
		return &r->sections[ps->idx[lo ? lo - 1 : 0]];
	}
	struct section *best = NULL, *first = NULL;
	for (size_t i = 0; i < ps->n; i++) {
		struct section *s = &r->sections[ps->idx[i]];
		if (!first || s->start_ts < first->start_ts)
			first = s;
		if (s->start_ts <= ts && (!best || s->start_ts >= best->start_ts))
			best = s;
	}
	return best ? best : first;
}

static struct su_maps *section_maps(struct section *s, uint32_t generation)
{
	size_t lo = 0, hi = s->n_maps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->maps[mid]->generation == generation)
			return s->maps[mid];
		if (s->maps[mid]->generation < generation)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- pass 1: process streams --------------------------------------------- */

static struct section *section_of_stream(struct reader *r, uint64_t stream_id, uint32_t pid)
{
	struct pid_sections *ps = pid_find(r, pid, 0);
	for (size_t i = ps ? ps->n : 0; i-- > 0;)
		if (r->sections[ps->idx[i]].stream_id == stream_id)
			return &r->sections[ps->idx[i]];
	return NULL;
}

static int on_process_start(struct reader *r, const struct raw_event *ev)
{
	struct pid_sections *ps = pid_find(r, ev->proc.pid, 1);
	if (!ps || su_grow((void **)&ps->idx, &ps->cap, ps->n + 1, sizeof(*ps->idx)) ||
	    su_grow((void **)&r->sections, &r->cap_sections, r->n_sections + 1, sizeof(*r->sections))) {
		free(ev->proc.comm);
		free(ev->proc.exe);
		return -ENOMEM;
	}
	struct section *s = &r->sections[r->n_sections++];
	memset(s, 0, sizeof(*s));
	s->start_ts = ev->ts;
	s->stream_id = ev->stream_id;
	s->p = ev->proc;
	s->p.seq = (uint32_t)ps->n;
	s->p.ended = 0;
	if (ps->n) {
		struct section *prev = &r->sections[ps->idx[ps->n - 1]];
		prev->has_later = 1;
		if (prev->start_ts > s->start_ts)
			ps->unsorted = 1;
	}
	ps->idx[ps->n++] = r->n_sections - 1;
	s->uncounted = ev->uncounted;
	if (!ev->uncounted)
		r->st->processes++;
	if (s->p.codec_version != STACKCAP_CODEC_VERSION)
		su_reader_warn(r->warn, "process %u: stack codec version %u not supported (this reader knows %u); "
			       "its samples are skipped", s->p.pid, s->p.codec_version, STACKCAP_CODEC_VERSION);
	return 0;
}

static int on_maps(struct reader *r, const struct raw_event *ev)
{
	struct su_maps *m = ev->maps;
	struct section *s = section_of_stream(r, ev->stream_id, ev->pid);
	if (!s) {
		su_reader_warn(r->warn, "maps event of pid %u without process_start: ignored", ev->pid);
		su_maps_free(m);
		return 0;
	}
	if (stackcap_code_list_check(m->range_list, m->count)) {
		su_reader_warn(r->warn, "pid %u: maps generation %u has unsorted or overlapping ranges: ignored",
			       ev->pid, m->generation);
		su_maps_free(m);
		return 0;
	}
	if (section_maps(s, m->generation)) {
		su_reader_warn(r->warn, "pid %u: maps generation %u recorded twice: the first is kept", ev->pid,
			       m->generation);
		su_maps_free(m);
		return 0;
	}
	m->runtime = s->rt;
	m->kernel = r->kernel;
	if (su_grow((void **)&s->maps, &s->cap_maps, s->n_maps + 1, sizeof(*s->maps))) {
		su_maps_free(m);
		return -ENOMEM;
	}
	size_t at = s->n_maps;
	while (at > 0 && s->maps[at - 1]->generation > m->generation) {
		s->maps[at] = s->maps[at - 1];
		at--;
	}
	s->maps[at] = m;
	s->n_maps++;
	r->last_maps = m;
	return 0;
}

static int on_drops(struct reader *r, const struct raw_event *ev)
{
	uint64_t const key = (uint64_t)ev->pid << 32 | ev->drop_tid | (1ull << 63);
	if (oa_reserve((void **)&r->drops, &r->cap_drops, r->n_drops, sizeof(*r->drops)))
		return -ENOMEM;
	struct thread_drops *d = oa_slot(r->drops, r->cap_drops, sizeof(*r->drops), key);
	if (!d->key) {
		d->key = key;
		r->n_drops++;
	}
	if (ev->drops_total > d->total) {
		/* Cumulative: the latest wins; the process's own count is the
		 * sum of its threads' latest, kept by adding what grew. */
		struct section *s = section_of_stream(r, ev->stream_id, ev->pid);
		if (s)
			s->p.drops += ev->drops_total - d->total;
		d->total = ev->drops_total;
	}
	return 0;
}

/* ---- pass 2: samples ----------------------------------------------------- */

static struct thread_state *thread_get(struct reader *r, uint32_t pid, uint32_t tid)
{
	uint64_t const key = (uint64_t)pid << 32 | tid | (1ull << 63);
	if (oa_reserve((void **)&r->threads, &r->cap_threads, r->n_threads, sizeof(*r->threads)))
		return NULL;
	struct thread_slot *sl = oa_slot(r->threads, r->cap_threads, sizeof(*r->threads), key);
	if (!sl->key) {
		sl->key = key;
		r->n_threads++;
	}
	if (!sl->t) {
		if (!(sl->t = calloc(1, sizeof(*sl->t))))
			return NULL;
		sl->t->decodes = sl->decodes;
	}
	return sl->t;
}

/* PID/TID's samples are all read (RAW_THREAD_END): its images given
 * back (its decode count kept: a thread of the same ids later goes on
 * counting). */
static void thread_end(struct reader *r, uint32_t pid, uint32_t tid)
{
	uint64_t const key = (uint64_t)pid << 32 | tid | (1ull << 63);
	if (!r->cap_threads)
		return;
	struct thread_slot *sl = oa_slot(r->threads, r->cap_threads, sizeof(*r->threads), key);
	struct thread_state *t = sl->t;
	if (sl->key != key || !t)
		return;
	r->image_bytes -= (t->buf_cap + t->full.capacity + t->seg.capacity) * sizeof(uint64_t);
	free(t->buf);
	free(t->full.words);
	free(t->seg.words);
	free(t->rt);
	free(t->kc);
	sl->decodes = t->decodes;
	free(t);
	sl->t = NULL;
}

/* The stack images all threads hold at once (the last one of each, the
 * reference of its next sample; full and segment copies): a few bytes of
 * run-length-encoded zeros may claim a whole declared stack cap (64 MiB
 * each) in as many threads as the trace names. */
#define IMAGES_HELD_MAX (128u << 20)

/* The capacity (in words) a buffer of OLD words grows to for NWORDS, and
 * R's image_bytes with it in *HELD.  @return 0, or 1 when that would
 * pass IMAGES_HELD_MAX. */
static int grown_cap(const struct reader *r, uint64_t old, uint64_t nwords, uint64_t *cap, uint64_t *held)
{
	uint64_t c = old ? old : 512;
	while (c < nwords)
		c *= 2;
	*cap = c;
	*held = r->image_bytes - old * sizeof(uint64_t) + c * sizeof(uint64_t);
	return *held > IMAGES_HELD_MAX;
}

/* Room for NWORDS in IMG, counted in R's image_bytes.  @return 0, 1 when
 * that would pass IMAGES_HELD_MAX, or -ENOMEM. */
static int image_reserve(struct reader *r, struct stackcap_image *img, uint64_t nwords)
{
	if (nwords <= img->capacity && img->words)
		return 0;
	uint64_t cap, held;
	if (grown_cap(r, img->capacity, nwords, &cap, &held))
		return 1;
	uint64_t *w = realloc(img->words, cap * sizeof(*w));
	if (!w)
		return -ENOMEM;
	img->words = w;
	/* No kept bitmap: a kept word is never zero and a dropped one always
	 * is (docs/stack-codec.md), so readers test the word; the decoder
	 * then skips the bitmap, a fifth of its time on deep stacks. */
	img->kept = NULL;
	img->capacity = cap;
	r->image_bytes = held;
	return 0;
}

/* T's next image (the other of img[]) made NWORDS words long at the end
 * of T's buffer, the buffer grown if short (the last image, when T has
 * one, moved with it).  @return as image_reserve. */
static int top_reserve(struct reader *r, struct thread_state *t, uint64_t nwords, struct stackcap_image **out)
{
	struct stackcap_image *const ref = &t->img[t->cur];
	if (nwords > t->buf_cap || !t->buf) {
		uint64_t cap, held;
		if (grown_cap(r, t->buf_cap, nwords, &cap, &held))
			return 1;
		uint64_t *const b = malloc(cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		if (t->has_ref && ref->nwords <= cap) {
			memcpy(b + cap - ref->nwords, ref->words, ref->nwords * sizeof(*b));
			ref->words = b + cap - ref->nwords;
		}
		free(t->buf);
		t->buf = b;
		t->buf_cap = cap;
		r->image_bytes = held;
	}
	struct stackcap_image *const dst = &t->img[!t->cur];
	dst->words = t->buf + t->buf_cap - nwords;
	dst->capacity = nwords;
	dst->kept = NULL; /* as image_reserve */
	*out = dst;
	return 0;
}

/* A blob that does not decode: counted; the first one is named so the user
 * learns the trace is damaged, and where (the rest go in the summary). */
static void bad_blob(struct reader *r, const struct raw_event *ev, size_t code, const char *why)
{
	r->st->bad_blobs++;
	if (r->warned_blob++)
		return;
	su_reader_warn(r->warn, "pid %u tid %u: the stack of the sample at %" PRIu64 ".%09" PRIu64
		       " does not decode (%s: damaged trace?): it and the samples that refer to it are skipped",
		       ev->pid, ev->tid, ev->ts / 1000000000u, ev->ts % 1000000000u,
		       code ? stackcap_codec_error_name(code) : why);
}

/* A sample whose image would pass IMAGES_HELD_MAX: a bad blob, named. */
static void images_full(struct reader *r, const struct raw_event *ev, uint64_t nwords)
{
	char why[128];
	snprintf(why, sizeof(why), "%" PRIu64 " stack words: the images of all threads would hold more than %u MiB",
		 nwords, IMAGES_HELD_MAX >> 20);
	bad_blob(r, ev, 0, why);
}

/* The name of EV's event: from the table (NULL when the trace has none:
 * every sample is cpu-clock). */
static const char *sample_event_name(struct reader *r, const struct raw_event *ev)
{
	if (!r->n_events)
		return NULL;
	if (ev->event < r->n_events)
		return r->events[ev->event];
	if (!r->warned_event++)
		su_reader_warn(r->warn, "pid %u tid %u: a sample names event %u, beyond the trace's %zu events: shown as "
			       "[unknown event]", ev->pid, ev->tid, ev->event, r->n_events);
	return "[unknown event]";
}

static int on_sample(struct reader *r, const struct raw_event *ev)
{
	int const kind = ev->kind;
	int const full = kind != RAW_SAMPLE;
	uint32_t const pid = ev->pid, tid = ev->tid;
	uint64_t const ts = ev->ts;
	const uint8_t *const blob = ev->blob;
	size_t const len = ev->blob_len;
	if (r->opts && r->opts->pid && r->opts->pid != pid)
		return 0;
	if (r->opts && r->opts->tid && r->opts->tid != tid)
		return 0;
	if (ev->others && kind == RAW_SAMPLE) {
		/* Another part's: what came with it goes with it. */
		struct thread_state *t = thread_get(r, pid, tid);
		if (!t)
			return -ENOMEM;
		t->has_ref = 0;
		t->kc_pending = t->oc_pending = t->full_pending = t->seg_pending = t->rt_pending = 0;
		return 0;
	}
	uint32_t const generation = ev->generation;

	struct section *sec = section_at(r, pid, ts);
	if (!sec)
		r->st->no_process++;
	if (sec && sec->p.codec_version != STACKCAP_CODEC_VERSION) {
		r->st->bad_blobs++;
		return 0;
	}
	struct su_maps *maps = sec ? section_maps(sec, generation) : NULL;
	struct thread_state *t = thread_get(r, pid, tid);
	if (!t)
		return -ENOMEM;
	if (!maps) {
		/* Without the ranges of its generation a blob's code words
		 * cannot be decoded, and the next samples may refer to it. */
		if (!full) {
			r->st->no_maps++;
			t->has_ref = 0;
		}
		return 0;
	}
	struct stackcap_codec_header hdr;
	size_t const prc = stackcap_codec_peek(blob, len, &hdr);
	/* No image is bigger than the stack cap the process recorded with (a
	 * few bytes of run-length-encoded zeros can claim 64 MiB). */
	uint64_t const cap_words = (sec->p.stack_cap ? sec->p.stack_cap : 64u << 20) / 8;
	if (stackcap_codec_is_error(prc) || hdr.nwords > cap_words) {
		char why[96];
		snprintf(why, sizeof(why), "%" PRIu64 " stack words, more than the stack cap of %" PRIu32 " bytes",
			 stackcap_codec_is_error(prc) ? 0 : hdr.nwords, sec->p.stack_cap);
		bad_blob(r, ev, stackcap_codec_is_error(prc) ? prc : 0, why);
		if (!full)
			t->has_ref = 0;
		return 0;
	}
	if (full) {
		/* Held until the sample of the same time that follows it. */
		struct stackcap_image *img = kind == RAW_SAMPLE_FULL ? &t->full : &t->seg;
		int *pending = kind == RAW_SAMPLE_FULL ? &t->full_pending : &t->seg_pending;
		*pending = 0;
		int const grc = image_reserve(r, img, hdr.nwords);
		if (grc < 0)
			return grc;
		if (grc) {
			images_full(r, ev, hdr.nwords);
			return 0;
		}
		size_t const drc =
			stackcap_codec_decode_peeked(blob, len, &hdr, prc, maps->range_list, maps->count, NULL, img);
		if (stackcap_codec_is_error(drc)) {
			bad_blob(r, ev, drc, NULL);
			return 0;
		}
		*pending = 1;
		if (kind == RAW_SAMPLE_FULL)
			t->full_ts = ts;
		else
			t->seg_ts = ts;
		return 0;
	}
	struct stackcap_image *dst = NULL;
	struct stackcap_image *ref = t->has_ref ? &t->img[t->cur] : NULL;
	int const grc = top_reserve(r, t, hdr.nwords, &dst);
	if (grc < 0)
		return grc;
	if (grc) {
		images_full(r, ev, hdr.nwords);
		t->has_ref = 0;
		return 0;
	}
	size_t rc = stackcap_codec_decode_peeked(blob, len, &hdr, prc, maps->range_list, maps->count, ref, dst);
	if (stackcap_codec_is_error(rc)) {
		bad_blob(r, ev, rc, NULL);
		t->has_ref = 0;
		return 0;
	}
	t->cur = !t->cur;
	t->has_ref = 1;
	t->decodes++;

	if (r->opts && (ts < r->opts->time_begin || (r->opts->time_end && ts > r->opts->time_end)))
		return 0;
	r->st->samples++;
	r->st->blob_bytes += len;
	r->st->raw_stack_bytes += dst->nwords * 8;
	int const has_full = t->full_pending && t->full_ts == ts;
	int const has_seg = t->seg_pending && t->seg_ts == ts;
	int const has_rt = t->rt_pending && t->rt_ts == ts;
	int const has_kc = t->kc_pending && t->kc_ts == ts;
	int const has_oc = t->oc_pending && t->oc_ts == ts;
	t->kc_pending = 0;
	t->oc_pending = 0;
	t->full_pending = 0;
	t->seg_pending = 0;
	t->rt_pending = 0;
	if (has_full)
		r->st->full_samples++;
	if (!r->cb->sample)
		return 0;
	struct su_sample s = {
		.time_ns = ts,
		.pid = pid,
		.tid = tid,
		.process = sec ? &sec->p : NULL,
		.maps = maps,
		.image = dst,
		.stack_capped = sec && sec->p.stack_cap &&
				/* A kernel chain (its marker and addresses) took
				 * that much of the window (docs/trace-format.md). */
				(dst->nwords + (has_seg ? t->seg.nwords : 0) + (has_kc ? t->kc_n + 1u : 0)) * 8 + 8 >
					sec->p.stack_cap,
		.full_image = has_full ? &t->full : NULL,
		.segment = has_seg ? &t->seg : NULL,
		.runtime_frames = has_rt ? t->rt : NULL,
		.runtime_frames_len = has_rt ? t->rt_len : 0,
		/* --user-only: the kernel frames left out. */
		.kernel_chain = has_kc && !(r->opts && r->opts->user_only) ? t->kc : NULL,
		.n_kernel_chain = has_kc && !(r->opts && r->opts->user_only) ? t->kc_n : 0,
		.event = sample_event_name(r, ev),
		.off_cpu_ns = has_oc ? t->oc_ns : 0,
		.decode_no = t->decodes,
	};
	int const crc = r->cb->sample(r->cb->arg, &s);
	if (crc)
		r->cb_rc = crc;
	return 0;
}

/* ---- events from the source ------------------------------------------------ */

static int on_event(void *ctx, const struct raw_event *ev)
{
	struct reader *r = ctx;
	int rc = 0;
	switch (ev->kind) {
	case RAW_SAMPLE:
	case RAW_SAMPLE_FULL:
	case RAW_SAMPLE_SEGMENT:
		if (r->pass & PASS_SAMPLES)
			rc = on_sample(r, ev);
		break;
	case RAW_RUNTIME_FRAMES:
		if (r->pass & PASS_SAMPLES)
			rc = on_runtime_frames(r, ev);
		break;
	case RAW_KERNEL_CHAIN:
		if (r->pass & PASS_SAMPLES)
			rc = on_kernel_chain(r, ev);
		break;
	case RAW_OFF_CPU:
		if (r->pass & PASS_SAMPLES)
			rc = on_off_cpu(r, ev);
		break;
	case RAW_THREAD_END:
		if (r->pass & PASS_SAMPLES)
			thread_end(r, ev->pid, ev->tid);
		break;
	case RAW_KERNEL_SYMBOLS:
		if (r->pass & PASS_PROCESS)
			rc = on_kernel_symbols(r, ev);
		else
			su_kernel_free(ev->kernel);
		break;
	case RAW_RUNTIME:
	case RAW_RUNTIME_CODE:
		if (r->pass & PASS_PROCESS)
			rc = on_runtime(r, ev);
		break;
	case RAW_DISCARDED:
		if (r->pass & PASS_SAMPLES && !ev->uncounted)
			r->st->discarded += ev->discarded;
		break;
	case RAW_PROCESS_START:
		rc = on_process_start(r, ev);
		if (rc == 0 && r->cb->process_start)
			r->cb_rc = r->cb->process_start(r->cb->arg, &r->sections[r->n_sections - 1].p);
		break;
	case RAW_MAPS: {
		struct section *s = section_of_stream(r, ev->stream_id, ev->pid);
		r->last_maps = NULL;
		rc = on_maps(r, ev);
		/* Two passes tell cb->maps after pass 1; pushed events at once. */
		if (rc == 0 && r->last_maps && r->pass == PUSH_PASSES && r->cb->maps)
			r->cb_rc = r->cb->maps(r->cb->arg, &s->p, r->last_maps);
		break;
	}
	case RAW_DROPS:
		if (!ev->uncounted)
			rc = on_drops(r, ev);
		break;
	case RAW_PROCESS_END: {
		struct section *s = section_of_stream(r, ev->stream_id, ev->pid);
		if (s && !s->p.ended) {
			s->p.ended = 1;
			r->st->ended += !ev->uncounted;
		}
		break;
	}
	}
	return rc ? rc : r->cb_rc;
}

/* ---- entry points -------------------------------------------------------- */

int su_stackcap_trace_read(const char *dir, const struct su_reader_opts *opts,
			   const struct su_reader_callbacks *cb,
			   struct su_reader_stats *stats,
			   char *err, size_t errlen)
{
	struct reader r = { .opts = opts, .cb = cb, .st = stats, .err = err, .errlen = errlen };
	const struct event_source *src =
		opts && opts->source == SU_READER_BABELTRACE2 ? &su_source_babeltrace2 : &su_source_native;

	if (err && errlen)
		err[0] = 0;
	memset(stats, 0, sizeof(*stats));
	struct stat sb;
	if (stat(dir, &sb)) {
		su_set_err(r.err, r.errlen, "%s: %s", dir, strerror(errno));
		return -ENOENT;
	}
	if (!S_ISDIR(sb.st_mode)) {
		su_set_err(r.err, r.errlen, "%s is not a trace directory", dir);
		return -ENOTDIR;
	}
	int const mrc = su_trace_check_metadata(dir, err, errlen);
	if (mrc)
		return mrc;
	return su_reader_run_source(dir, src, opts, cb, stats, err, errlen);
}

/* A source's failure RC (not a callback's stop): the layer it happened in,
 * before its cause ("TRACE: reading its sample streams (native parser):
 * FILE: cause"). */
static void source_context(struct reader *r, const struct event_source *src, int rc, const char *dir,
			   const char *streams)
{
	if (rc < 0 && rc != r->cb_rc)
		su_err_context(r->err, r->errlen, rc, "%s: reading its %s (%s source)", dir, streams, src->name);
}

int su_reader_run_source(const char *dir, const struct event_source *src, const struct su_reader_opts *opts,
			 const struct su_reader_callbacks *cb, struct su_reader_stats *stats, char *err,
			 size_t errlen)
{
	struct reader r = { .opts = opts, .cb = cb, .st = stats, .err = err, .errlen = errlen,
			    .warn = opts ? &opts->warn : NULL };
	struct source_report rep = { .warn = r.warn };
	void *h = NULL;
	char *abs_dir = NULL;
	int rc, ended = 0, met = 0;

	if (err && errlen)
		err[0] = 0;
	memset(stats, 0, sizeof(*stats));
	abs_dir = realpath(dir, NULL);
	if (!abs_dir) {
		int const e = errno;
		su_set_err(r.err, r.errlen, "%s: %s", dir, strerror(e));
		return -e;
	}
	stats->bytes_on_disk = opts && opts->no_dir_bytes ? 0 : su_trace_dir_bytes(dir);
	rep.bytes_read = &stats->bytes_read;
	rep.order = opts ? opts->order : NULL;
	if (opts && opts->parts > 1 && opts->part < opts->parts) {
		rep.part = opts->part;
		rep.parts = opts->parts;
		rep.claims = opts->claims;
		rep.n_claims = opts->n_claims;
		if (opts->plan && src == &su_source_native) {
			rep.plan = opts->plan;
			rep.claims = opts->plan->claims;
			rep.n_claims = opts->plan->n_samples;
		}
	}
	rep.packets_whole = su_trace_packets_whole(dir);
	if ((rc = su_trace_event_table(dir, &r.events, &r.n_events)) != 0)
		goto out;
	if ((rc = src->open(abs_dir, &rep, &h, err, errlen)) != 0)
		goto out;
	if (src->one_pass) {
		/* Process, maps and samples in one pass: the maps told as
		 * they come (push mode's rule, on_event). */
		r.pass = PUSH_PASSES;
		if ((rc = src->run(h, PUSH_PASSES, on_event, &r, err, errlen)) != 0) {
			source_context(&r, src, rc, dir, "streams");
			goto out;
		}
		if (!r.n_sections)
			su_reader_warn(r.warn, "%s: no process_start event: samples cannot be decoded", dir);
		goto read;
	}
	r.pass = PASS_PROCESS;
	rc = src->run(h, PASS_PROCESS, on_event, &r, err, errlen);
	size_t sections = r.n_sections; /* with a plan, all parts': a part may own none */
	if (rep.plan) {
		sections = parts_meet(&r, rep.plan);
		met = 1;
	}
	if (rc != 0) {
		source_context(&r, src, rc, dir, "process streams");
		goto out;
	}
	if (!sections)
		su_reader_warn(r.warn, "%s: no process_start event: samples cannot be decoded", dir);
	/* A process image without process_end was killed (or its trace cut):
	 * its last packets are missing.  One replaced by exec ends without one
	 * too, and a later image of the same pid follows it. */
	for (size_t i = 0; i < r.n_sections; i++) {
		if (!r.sections[i].p.ended && !r.sections[i].has_later && !src->no_process_end) {
			stats->unended += !r.sections[i].uncounted;
			su_reader_warn(r.warn, "process %u (%s) has no process_end: it was killed or its trace was cut, "
				       "its last samples are missing", r.sections[i].p.pid,
				       r.sections[i].p.comm ? r.sections[i].p.comm : "?");
		}
	}
	for (size_t i = 0; i < r.n_sections; i++)
		if (cb->maps)
			for (size_t j = 0; j < r.sections[i].n_maps && !r.cb_rc; j++)
				r.cb_rc = cb->maps(cb->arg, &r.sections[i].p, r.sections[i].maps[j]);
	if (r.cb_rc) {
		rc = r.cb_rc;
		goto out;
	}
	r.pass = PASS_SAMPLES;
	if ((rc = src->run(h, PASS_SAMPLES, on_event, &r, err, errlen)) != 0) {
		source_context(&r, src, rc, dir, "sample streams");
		goto out;
	}
read:
	ended = 1;
	if (cb->end)
		rc = cb->end(cb->arg);
	for (size_t i = 0; i < r.cap_drops; i++)
		stats->drops += r.drops[i].total;
	stats->truncated_files = rep.truncated_files;
	if (!rc && (stats->truncated_files || stats->bad_blobs || stats->no_maps || stats->unended))
		rc = 1;
out:
	if (rep.plan && !met) /* the other parts wait for this one */
		su_parts_plan_part_done(rep.plan, rep.part);
	if (!ended && cb->stop)
		cb->stop(cb->arg);
	if (h)
		src->close(h);
	reader_free(&r);
	free(abs_dir);
	return rc;
}

/* ---- push mode (trace/reader-push.h) --------------------------------------- */

struct su_reader {
	struct reader r;
	struct su_reader_opts opts;
	struct su_reader_callbacks cb;
	struct su_reader_stats st;
};

struct su_reader *su_reader_new(const struct su_reader_opts *opts, const struct su_reader_callbacks *cb)
{
	struct su_reader *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (opts)
		p->opts = *opts;
	p->cb = *cb;
	p->r.opts = &p->opts;
	p->r.cb = &p->cb;
	p->r.st = &p->st;
	p->r.warn = &p->opts.warn;
	p->r.pass = PUSH_PASSES;
	return p;
}

void su_reader_free(struct su_reader *p)
{
	if (!p)
		return;
	reader_free(&p->r);
	free(p);
}

int su_reader_push(struct su_reader *p, const struct raw_event *ev)
{
	p->r.cb_rc = 0;
	return on_event(&p->r, ev);
}

void su_reader_set_events(struct su_reader *p, char **names, size_t n)
{
	for (size_t i = 0; i < p->r.n_events; i++)
		free(p->r.events[i]);
	free(p->r.events);
	p->r.events = names;
	p->r.n_events = names ? n : 0;
}

int reader_can_decode(void *ctx, const struct raw_event *ev)
{
	struct reader *r = ctx; /* section_at only reads */
	struct section *sec = section_at(r, ev->pid, ev->ts);
	if (!sec)
		return 0;
	if (sec->p.codec_version != STACKCAP_CODEC_VERSION)
		return 1; /* skipped whatever comes later */
	return section_maps(sec, ev->generation) != NULL;
}

int su_reader_can_decode(const struct su_reader *p, const struct raw_event *ev)
{
	return reader_can_decode((struct reader *)&p->r, ev);
}

int su_reader_can_name_runtime(const struct su_reader *p, const struct raw_event *ev)
{
	return reader_can_name_runtime((struct reader *)&p->r, ev);
}

int reader_can_name_runtime(void *ctx, const struct raw_event *ev)
{
	struct reader *r = ctx; /* section_at only reads */
	struct section *sec = section_at(r, ev->pid, ev->ts);
	struct rt_frames_dec d;
	struct rt_frame f;
	if (!sec || !sec->rt)
		return 0;
	if (rt_frames_open(&d, ev->blob, ev->blob_len))
		return 1; /* not decodable: nothing to wait for */
	int rc;
	while ((rc = rt_frames_next(&d, &f)) == 1)
		if (f.fp && !su_runtime_code(sec->rt, f.code, f.fp))
			return 0;
	return 1;
}

void su_reader_get_stats(const struct su_reader *p, struct su_reader_stats *stats)
{
	*stats = p->st;
	stats->drops = 0;
	for (size_t i = 0; i < p->r.cap_drops; i++)
		stats->drops += p->r.drops[i].total;
}
