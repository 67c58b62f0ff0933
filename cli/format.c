/* SPDX-License-Identifier: MIT */
/* The per-sample formatters of stackunwind (format.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "cli/format.h"
#include "cli/export.h"
#include "common/grow.h"

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

/* "\t" and V in hex, right-aligned in 16 columns, then a space: perf's. */
static void text_pc(struct text *t, uint64_t v)
{
	char b[18];
	int i = 17;
	b[17] = ' ';
	do {
		b[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	while (i > 1)
		b[--i] = ' ';
	b[0] = '\t';
	text_put(t, b, sizeof(b));
}

/* ---- frame text, cached per (module, address) --------------------------------- */

static uint64_t frame_hash(const void *m, const char *path, uint64_t addr, int act)
{
	uint64_t h = (uint64_t)(uintptr_t)m * 0x9E3779B97F4A7C15ull;
	h ^= (uint64_t)(uintptr_t)path * 0xC2B2AE3D27D4EB4Full;
	h ^= (addr * 2 + (uint64_t)act) * 0x165667B19E3779F9ull;
	return h ^ (h >> 29);
}

struct ftext_key {
	const struct worker *w;
	const struct su_module *m;
	const char *path;
	uint64_t addr;
	int act;
};

static int ftext_eq(const void *arg, uint32_t i)
{
	const struct ftext_key *k = arg;
	const struct frame_text *f = &k->w->ftext[i];
	return f->m == k->m && f->path == k->path && f->addr == k->addr && f->activation == k->act;
}

/* The cached text of (M, PATH, ADDR, ACT), or the empty entry after the
 * cache's last, to fill and then add at *SLOT with *HASH.  NULL: out of
 * memory. */
static struct frame_text *frame_cache_slot(struct worker *w, const struct su_module *m, const char *path,
					   uint64_t addr, int act, size_t *slot, uint64_t *hash)
{
	if (su_hmap_reserve(&w->ftext_map) || w->n_ftext >= UINT32_MAX ||
	    SU_GROW(w->ftext, w->cap_ftext, w->n_ftext + 1))
		return NULL;
	struct ftext_key const key = { w, m, path, addr, act };
	*hash = frame_hash(m, path, addr, act);
	*slot = su_hmap_find(&w->ftext_map, *hash, ftext_eq, &key);
	if (su_hmap_used(&w->ftext_map, *slot))
		return &w->ftext[su_hmap_value(&w->ftext_map, *slot)];
	return &w->ftext[w->n_ftext];
}

/* " (MODULE)\n" */
static void put_module_line(struct text *t, const char *module)
{
	text_put(t, " (", 2);
	text_puts(t, module);
	text_put(t, ")\n", 2);
}

/* "FUNCTION+0xOFF (MODULE)\n", as perf script */
static void put_offset_line(struct text *t, const char *function, uint64_t off, const char *module)
{
	text_puts(t, function);
	text_put(t, "+", 1);
	text_x64(t, off);
	put_module_line(t, module);
}

/* The text of resolved frame R: one line per function (inlined ones
 * first, like perf's "(inlined)"), module+offset where nothing is known. */
static int frame_text_build(struct text *scratch, struct frame_text *ft, const struct su_resolved *r)
{
	/* By hand, not text_printf (vsnprintf twice: measure, then write),
	 * in SCRATCH, then copied at its size: a system-wide trace names
	 * thousands of frames once each (a text of its own grown from
	 * nothing took several reallocs each). */
	struct text *const t = scratch;
	t->len = 0;
	size_t n = r->nsym;
	if (r->kind != SU_RESOLVED_SYMBOLS) {
		/* module+offset: what can still be looked up later by hand. */
		n = 1;
		put_offset_line(t, base_name(r->module_name), r->elf_addr, r->module_name);
		ft->unknown = 1;
	} else {
		for (size_t i = 0; i < n; i++) {
			const struct su_symframe *y = &r->sym[i];
			text_puts(t, y->function ? y->function : "[unknown]");
			if (y->inlined) {
				text_puts(t, " (inlined)");
			} else {
				text_put(t, "+", 1);
				text_x64(t, y->func_offset + (r->activation ? 0 : 1));
			}
			text_put(t, " (", 2);
			text_puts(t, r->module_name);
			text_put(t, ")", 1);
			if (y->file && y->line) {
				text_put(t, " ", 1);
				text_puts(t, y->file);
				text_put(t, ":", 1);
				text_u64(t, y->line, 1);
			}
			text_put(t, "\n", 1);
		}
	}
	char *const text = t->oom || !t->buf ? NULL : strndup(t->buf, t->len);
	t->oom = 0;
	if (!text)
		return -ENOMEM;
	ft->text = text;
	ft->lines = (uint16_t)n;
	return 0;
}

/* ---- whole frame text, cached per (maps, pc, entry, activation) ------------- */

static uint64_t pc_hash(const struct su_maps *maps, const struct su_frame *f)
{
	uint64_t h = (uint64_t)(uintptr_t)maps * 0x9E3779B97F4A7C15ull;
	h ^= (f->pc * 2 + f->activation) * 0xC2B2AE3D27D4EB4Full;
	h ^= (uint64_t)f->map * 0x165667B19E3779F9ull;
	return h ^ (h >> 29);
}

struct pc_key {
	const struct worker *w;
	const struct su_maps *maps;
	const struct su_frame *f;
};

static int pctext_eq(const void *arg, uint32_t i)
{
	const struct pc_key *k = arg;
	const struct pc_text *t = &k->w->pctext[i];
	return t->maps == k->maps && t->pc == k->f->pc && t->map == k->f->map && t->activation == k->f->activation;
}

/* The cached text of frame F of MAPS, or NULL. */
static const struct pc_text *pctext_find(struct worker *w, const struct su_maps *maps, const struct su_frame *f)
{
	if (!w->n_pctext)
		return NULL;
	struct pc_key const key = { w, maps, f };
	if (pctext_eq(&key, (uint32_t)w->last_pctext))
		return &w->pctext[w->last_pctext];
	size_t const slot = su_hmap_find(&w->pctext_map, pc_hash(maps, f), pctext_eq, &key);
	if (!su_hmap_used(&w->pctext_map, slot))
		return NULL;
	w->last_pctext = su_hmap_value(&w->pctext_map, slot);
	return &w->pctext[w->last_pctext];
}

/* The pc_text cache's bytes at most: its key is a maps snapshot's, so a
 * system-wide trace (each process its snapshots, thousands of processes)
 * adds entries it seldom meets again; past this the cache starts empty
 * (what it held is found again by the resolver's own caches). */
#define PCTEXT_BUDGET (48u << 20)

static void pctext_clear(struct worker *w)
{
	for (size_t i = 0; i < w->n_pctext; i++)
		free(w->pctext[i].text);
	w->n_pctext = 0;
	w->last_pctext = 0;
	w->pctext_bytes = 0;
	su_hmap_free(&w->pctext_map);
}

/* Keys met once: a fingerprint a slot (256 KiB). */
#define PCTEXT_SEEN (1u << 16)

/* Has the key of hash H been met before (since its slot was last another
 * key's)?  A system-wide trace's frames are mostly met once at their
 * (snapshot, pc): of 81,862 texts kept on a 4,245-process trace 7,689 were
 * ever found again, and keeping them (the copy, the map's growth) cost
 * more than naming them did.  So a text is kept the second time its key
 * comes. */
static int pctext_seen(struct worker *w, uint64_t h)
{
	if (!w->pctext_seen && !(w->pctext_seen = calloc(PCTEXT_SEEN, sizeof(*w->pctext_seen))))
		return 1; /* no memory for it: kept at once, as before */
	uint32_t const fp = (uint32_t)(h >> 32) | 1;
	uint32_t *const slot = &w->pctext_seen[h & (PCTEXT_SEEN - 1)];
	if (*slot == fp)
		return 1;
	*slot = fp;
	return 0;
}

/* Keep TEXT (LEN bytes) as frame F's text: M's, UNKNOWN or not, from the
 * second time its key comes.  Out of memory: only the cache entry is
 * lost. */
static void pctext_add(struct worker *w, const struct su_maps *maps, const struct su_frame *f,
		       const struct su_module *m, int unknown, const char *text, size_t len)
{
	uint64_t const hash = pc_hash(maps, f);
	if (!pctext_seen(w, hash))
		return;
	if (w->pctext_bytes > PCTEXT_BUDGET)
		pctext_clear(w);
	if (len > UINT32_MAX || w->n_pctext >= UINT32_MAX || su_hmap_reserve(&w->pctext_map) ||
	    SU_GROW(w->pctext, w->cap_pctext, w->n_pctext + 1))
		return;
	char *copy = malloc(len ? len : 1);
	if (!copy)
		return;
	memcpy(copy, text, len);
	struct pc_key const key = { w, maps, f };
	size_t const slot = su_hmap_find(&w->pctext_map, hash, pctext_eq, &key);
	w->pctext[w->n_pctext] = (struct pc_text){ .maps = maps, .pc = f->pc, .map = f->map, .m = m,
						   .activation = f->activation, .unknown = (uint8_t)unknown,
						   .len = (uint32_t)len, .text = copy };
	su_hmap_set(&w->pctext_map, slot, hash, (uint32_t)w->n_pctext++);
	/* The entry, its text (malloc's 16-byte steps), its map slot's 12. */
	w->pctext_bytes += sizeof(struct pc_text) + ((len + 15) & ~(size_t)15) + 24;
}

/* Is F's text a function of (maps snapshot, pc, map, activation), kept
 * in the pc_text cache: code of a file, or the kernel's (named by the
 * trace's own kernel symbols, maps->kernel)?  Not a runtime's frame. */
static int text_by_pc(const struct su_frame *f)
{
	return (f->map >= 0 && f->how != SU_FRAME_RUNTIME) || f->how == SU_FRAME_KERNEL;
}

/* One frame's lines, after its address. */
static int format_frame(struct worker *w, uint32_t pid, const struct su_maps *maps, const struct su_frame *f,
			 struct text *out)
{
	/* Met before at this pc of this snapshot: its text. */
	int const by_pc = text_by_pc(f);
	const struct pc_text *pt = by_pc ? pctext_find(w, maps, f) : NULL;
	if (pt) {
		if (pt->unknown)
			w->counts.unknown_frames++;
		if (pt->m)
			worker_note_module(w, pt->m);
		text_put(out, pt->text, pt->len);
		return 1;
	}
	size_t const start = out->len;
	const struct su_map_entry *e;
	struct su_module *m = su_resolver_module(w->resolver, maps, f, &e);
	/* Code of a file: its text is cached per (module, name, address). */
	size_t slot = 0;
	uint64_t hash = 0;
	struct frame_text *ft = m && m->status != SU_MODULE_NO_FILE
		? frame_cache_slot(w, m, e->path, f->pc - su_module_bias(m, e), f->activation, &slot, &hash) : NULL;
	struct frame_text tmp = { 0 };
	if (ft && ft->m) {
		if (ft->unknown)
			w->counts.unknown_frames++;
		worker_note_module(w, m);
	} else {
		struct su_resolved r;
		if (worker_resolve(w, pid, maps, f, &r)) {
			out->oom = 1;
			return 0;
		}
		if (r.kind == SU_RESOLVED_UNKNOWN) {
			text_pc(out, f->pc);
			text_puts(out, "[unknown] ([unknown])\n");
			return 0;
		}
		if (r.kind == SU_RESOLVED_PYTHON) {
			/* "qualname (file.py:LINE)" */
			text_pc(out, f->pc);
			if (r.sym[0].function) {
				text_puts(out, r.sym[0].function);
				text_put(out, " (", 2);
				text_puts(out, r.sym[0].file);
				text_put(out, ":", 1);
				text_u64(out, r.sym[0].line, 1);
				text_put(out, ")\n", 2);
			} else
				text_puts(out, "[unknown python code] ([python])\n");
			return 0;
		}
		if (r.kind == SU_RESOLVED_KERNEL) {
			/* "function+0xOFF ([kernel.kallsyms])", as perf script */
			text_pc(out, f->pc);
			if (r.nsym)
				put_offset_line(out, r.sym[0].function, r.sym[0].func_offset, r.module_name);
			else {
				text_puts(out, "[unknown]");
				put_module_line(out, r.module_name);
			}
			if (out->oom)
				return 0;
			pctext_add(w, maps, f, NULL, !r.nsym, out->buf + start, out->len - start);
			return 1;
		}
		if (r.kind == SU_RESOLVED_JIT) {
			text_pc(out, f->pc);
			put_offset_line(out, r.sym[0].function, r.sym[0].func_offset, r.jit_map);
			return 0;
		}
		struct frame_text *dst = ft ? ft : &tmp;
		if (frame_text_build(&w->frame_lines, dst, &r)) {
			out->oom = 1;
			return 0;
		}
		dst->m = m;
		dst->path = e->path;
		dst->addr = r.elf_addr;
		dst->activation = f->activation;
		if (ft)
			su_hmap_set(&w->ftext_map, slot, hash, (uint32_t)w->n_ftext++);
		ft = dst;
	}
	const char *p = ft->text;
	for (uint16_t i = 0; i < ft->lines; i++) {
		const char *nl = strchr(p, '\n');
		text_pc(out, f->pc);
		text_put(out, p, (size_t)(nl - p) + 1);
		p = nl + 1;
	}
	if (ft == &tmp) {
		free(tmp.text);
		return 0;
	}
	if (!by_pc || out->oom)
		return 0;
	pctext_add(w, maps, f, m, ft->unknown, out->buf + start, out->len - start);
	return 1;
}

static struct chain_text *chain_find(struct worker *w, const struct pipeline_sample *u,
				     const struct su_frame *frames, uint64_t *hash, int *hit);
static int chain_keep(struct worker *w, struct chain_text *c, uint64_t hash, const struct su_maps *maps,
		      const struct su_frame *frames, size_t n, uint32_t unknown, const char *text, size_t len);

/* Slot CT (a chain_find miss) for the chain of hash CH, or NULL when it
 * is not to be kept yet: stacks keeps a chain from its second time on.
 * Most of a system-wide trace's chains come once, and keeping each (a
 * shared text made, its lines copied in, its pages faulted in) was 14%
 * of stacks there; a chain that repeats is formatted twice, then kept.
 * (Not folded's: its lines are short, kept at once they cost less than
 * formatting twice: +2-4% instructions.) */
static struct chain_text *chain_second_time(struct chain_text *ct, uint64_t ch)
{
	if (ct && ct->seen != ch) {
		ct->seen = ch;
		return NULL;
	}
	return ct;
}

/* V (below 10^9) in 9 digits, zeros in front. */
static void text_digits9(struct text *out, uint32_t v)
{
	/* Two digits a step from a table (a division by 100 each) rather
	 * than nine divisions by 10: 1.6% of stacks' time. */
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				       "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				       "8081828384858687888990919293949596979899";
	if (text_reserve(out, 9))
		return;
	char *p = out->buf + out->len + 9;
	for (int i = 0; i < 4; i++, v /= 100) {
		p -= 2;
		memcpy(p, &pairs[2 * (v % 100)], 2);
	}
	*--p = (char)('0' + v % 10);
	out->len += 9;
}

static void format_stacks(struct worker *w, const struct pipeline_sample *u, const char *comm,
			  const struct su_frame *frames, struct text *out)
{
	/* "comm pid/tid sec.nsec:", then " EVENT:" when the trace names its
	 * events (perf script prints the event after the time).  Up to the
	 * nanoseconds, the thread's sample before may have written the same
	 * (numbers to text were a tenth of stacks' time). */
	size_t const comm_len = strlen(comm);
	uint64_t const sec = u->time_ns / 1000000000u;
	if (w->head.len && w->head.sec == sec && w->head.pid == u->pid && w->head.tid == u->tid &&
	    w->head.comm_len == comm_len && !memcmp(w->head.buf, comm, comm_len)) {
		text_put(out, w->head.buf, w->head.len);
	} else {
		size_t const at = out->len;
		text_put(out, comm, comm_len);
		text_put(out, " ", 1);
		text_id(out, u->pid);
		text_put(out, "/", 1);
		text_id(out, u->tid);
		text_put(out, " ", 1);
		text_u64(out, sec, 1);
		text_put(out, ".", 1);
		size_t const n = out->len - at;
		w->head.len = 0;
		if (!out->oom && n <= sizeof(w->head.buf)) {
			memcpy(w->head.buf, out->buf + at, n);
			w->head.len = (uint32_t)n;
			w->head.comm_len = (uint32_t)comm_len;
			w->head.pid = u->pid;
			w->head.tid = u->tid;
			w->head.sec = sec;
		}
	}
	text_digits9(out, (uint32_t)(u->time_ns % 1000000000u));
	if (u->event) {
		text_put(out, ": ", 2);
		text_puts(out, u->event);
	}
	if (u->off_cpu_ns) { /* "off-cpu 800.123456 ms": blocked this long */
		text_puts(out, ": off-cpu ");
		text_u64(out, u->off_cpu_ns / 1000000u, 1);
		text_put(out, ".", 1);
		text_u64(out, u->off_cpu_ns % 1000000u, 6);
		text_puts(out, " ms");
	}
	text_put(out, ":\n", 2);
	/* The frames' lines: a whole chain's, kept when each frame's came
	 * from the pc_text path (as folded's). */
	uint64_t ch = 0;
	int hit = 0;
	struct chain_text *ct = u->nframes && u->maps ? chain_find(w, u, frames, &ch, &hit) : NULL;
	if (hit) {
		text_put_shared(out, ct->text, ct->len);
		ct = NULL;
		goto frames_done;
	}
	ct = chain_second_time(ct, ch);
	/* Into an output by reference, a chain kept goes in by reference
	 * from its first sample on (its lines formatted aside). */
	struct text *const lines = ct && out->by_ref ? &w->chain_lines : out;
	if (lines != out) {
		text_clear(lines);
		lines->oom = 0;
	}
	size_t const chain_start = lines->len;
	uint64_t const unknown_before = w->counts.unknown_frames;
	int whole = 1;
	for (size_t i = 0; i < u->nframes; i++)
		whole &= format_frame(w, u->pid, u->maps, &frames[i], lines);
	int const kept = ct && whole && !lines->oom &&
			 !chain_keep(w, ct, ch, u->maps, frames, u->nframes,
				     (uint32_t)(w->counts.unknown_frames - unknown_before), lines->buf + chain_start,
				     lines->len - chain_start);
	if (lines != out) {
		if (kept)
			text_put_shared(out, ct->text, ct->len);
		else if (lines->oom)
			out->oom = 1;
		else
			text_put(out, lines->buf, lines->len);
	}
frames_done:
	if (u->end != SU_END_OUTERMOST) {
		text_pc(out, 0);
		text_put(out, "[", 1);
		text_puts(out, su_unwind_end_name((enum su_unwind_end)u->end));
		text_puts(out, "] ([stackunwind])\n");
	}
	text_put(out, "\n", 1);
}

/* ---- a whole chain's text (struct chain_text): folded and stacks ----------- */

/* Kept only when every frame's text came from the pc_text path, so a
 * chain's text is a function of its key; frames also compare their how
 * (a runtime frame's text is not its pc's). */

static uint64_t chain_hash(const struct su_maps *maps, const struct su_frame *frames, size_t n)
{
	/* pcs only (chain_eq compares the rest): one multiply a frame, in
	 * two lanes (even and odd frames) so that the multiplies of a deep
	 * chain overlap instead of waiting on one another; the high bits
	 * folded down once for the slot index. */
	uint64_t h0 = (uint64_t)(uintptr_t)maps * 0x9E3779B97F4A7C15ull ^ n, h1 = ~h0;
	size_t i = 0;
	for (; i + 1 < n; i += 2) {
		h0 = (h0 ^ frames[i].pc) * 0xC2B2AE3D27D4EB4Full;
		h1 = (h1 ^ frames[i + 1].pc) * 0x9E3779B97F4A7C15ull;
	}
	if (i < n)
		h0 = (h0 ^ frames[i].pc) * 0xC2B2AE3D27D4EB4Full;
	uint64_t const h = (h0 ^ (h1 >> 29) ^ (h1 << 35)) * 0xC2B2AE3D27D4EB4Full;
	return h ^ (h >> 31);
}

/* Nonzero when A and B differ in pc, map, how or activation. */
static inline uint64_t frame_diff(const struct su_frame *a, const struct su_frame *b)
{
	_Static_assert(offsetof(struct su_frame, activation) == offsetof(struct su_frame, how) + 1,
		       "how and activation side by side");
	uint16_t ha, hb;
	memcpy(&ha, &a->how, 2);
	memcpy(&hb, &b->how, 2);
	return (a->pc ^ b->pc) | ((uint64_t)a->map ^ (uint64_t)b->map) | (uint64_t)(uint16_t)(ha ^ hb);
}

static int chain_eq(const struct chain_text *c, uint64_t hash, const struct su_maps *maps,
		    const struct su_frame *frames, size_t n)
{
	if (c->maps != maps || c->hash != hash || c->nframes != n)
		return 0;
	/* Two frames a test, each one's fields XORed together (how and
	 * activation, side by side, as one 16-bit load): equal hashes mean
	 * equal frames but for a collision, and the test a field each was
	 * 8% of stacks' time. */
	size_t i = 0;
	for (; i + 1 < n; i += 2)
		if (frame_diff(&c->frames[i], &frames[i]) | frame_diff(&c->frames[i + 1], &frames[i + 1]))
			return 0;
	return i == n || !frame_diff(&c->frames[i], &frames[i]);
}

/* The slot of U's chain of FRAMES (NULL: no memory for the slots), its
 * hash in *HASH; *HIT when the slot holds that chain (its unknown frames
 * counted then). */
static struct chain_text *chain_find(struct worker *w, const struct pipeline_sample *u,
				     const struct su_frame *frames, uint64_t *hash, int *hit)
{
	struct chain_text *ct = w->reuse_chain;
	w->reuse_chain = NULL;
	if (ct && ct->maps == u->maps && ct->nframes == u->nframes) {
		/* The previous sample's frames again, in the slot that holds
		 * them (worker_unwind). */
		*hash = ct->hash;
	} else {
		*hash = chain_hash(u->maps, frames, u->nframes);
		*hit = 0;
		if (!w->chains)
			w->chains = calloc(CHAIN_SLOTS, sizeof(*w->chains));
		if (!w->chains)
			return NULL;
		ct = &w->chains[*hash % CHAIN_SLOTS];
		if (!chain_eq(ct, *hash, u->maps, frames, u->nframes))
			return ct;
	}
	w->counts.unknown_frames += ct->unknown;
	*hit = 1;
	w->last_chain = ct;
	return ct;
}

/* Keep TEXT (LEN bytes) as the chain's text in slot C, replacing what it
 * held.  Out of memory: only the cache entry is lost. */
static int chain_keep(struct worker *w, struct chain_text *c, uint64_t hash, const struct su_maps *maps,
		      const struct su_frame *frames, size_t n, uint32_t unknown, const char *text, size_t len)
{
	if (n > UINT32_MAX || len > UINT32_MAX)
		return -1;
	struct su_frame *fr = c->nframes >= n ? c->frames : realloc(c->frames, n * sizeof(*fr));
	if (!fr)
		return -1;
	c->frames = fr;
	c->nframes = (uint32_t)n > c->nframes ? (uint32_t)n : c->nframes;
	/* Not in place while an output holds the old text (stacks puts it
	 * into the output by reference). */
	if (!(c->text = text_shared_set(c->text, text, len))) {
		c->maps = NULL;
		return -1;
	}
	memcpy(fr, frames, n * sizeof(*fr));
	c->maps = maps;
	c->hash = hash;
	c->version++;
	c->nframes = (uint32_t)n;
	c->unknown = unknown;
	c->len = (uint32_t)len;
	c->line_out = NULL; /* a line written with the chain it held */
	w->last_chain = c; /* the sample's chain: the next may repeat it */
	return 0;
}

/* The count ending each folded line the workers write: fixed width, so
 * a repeat of the line in the same text adds to it in place. */
#define FOLDED_COUNT_DIGITS 20

/* Add N to the count of FOLDED_COUNT_DIGITS digits at P.  @return 0, or
 * -1 (the sum would not fit: P unchanged). */
static int count_add(char *p, uint64_t n)
{
	/* Below 10^16 (four leading zeros) and N below it too: the sum fits
	 * the digits and a uint64_t, added digit by digit from the end (a
	 * weight of 1 touches one digit, seldom two). */
	if (n < 10000000000000000ull && p[0] == '0' && p[1] == '0' && p[2] == '0' && p[3] == '0') {
		uint64_t carry = n;
		for (int i = FOLDED_COUNT_DIGITS; carry && i-- > 0;) {
			uint64_t const d = (uint64_t)(p[i] - '0') + carry % 10;
			carry = carry / 10 + d / 10;
			p[i] = (char)('0' + d % 10);
		}
		return 0;
	}
	uint64_t v = 0;
	for (int i = 0; i < FOLDED_COUNT_DIGITS; i++) {
		uint64_t const d = (uint64_t)(p[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (v > UINT64_MAX - n)
		return -1;
	v += n;
	for (int i = FOLDED_COUNT_DIGITS; i-- > 0; v /= 10)
		p[i] = (char)('0' + v % 10);
	return 0;
}

/* One line "comm;[end;]outermost;...;leaf COUNT\n" (export/folded.h),
 * COUNT the sample's weight (1, or microseconds with --weigh).  A line
 * already written in OUT with the same chain and root gets the weight
 * added instead: the reader thread then counts a hot loop's samples once
 * per batch rather than hashing each one's line. */
static void format_folded(struct worker *w, const struct pipeline_sample *u, const char *comm,
			  const struct su_frame *frames, struct text *out)
{
	struct folded_opts fo = w->o->fold;
	fo.off_cpu_mark = w->o->off_cpu == OFF_CPU_WITH && u->off_cpu_ns;
	uint64_t weight = 1;
	if (w->o->weigh) {
		/* Microseconds: blocked (at least 1), or a CPU sample's period. */
		uint32_t const hz = u->process && u->process->frequency_hz ? u->process->frequency_hz : 1000;
		uint64_t const us = u->off_cpu_ns ? (u->off_cpu_ns + 500) / 1000 : (1000000u + hz / 2) / hz;
		weight = us ? us : 1;
	}
	size_t const line_at = out->len;
	folded_root(out, &fo, comm, u->pid, u->tid,
		    u->end != SU_END_OUTERMOST ? su_unwind_end_name((enum su_unwind_end)u->end) : NULL);
	size_t const root_len = out->len - line_at;
	uint64_t ch = 0;
	int hit = 0;
	struct chain_text *ct = !fo.off_cpu_mark && u->nframes && u->maps ? chain_find(w, u, frames, &ch, &hit) : NULL;
	if (hit) {
		if (ct->line_out == out && ct->line_gen == out->gen && ct->root_len == root_len && !out->oom &&
		    memcmp(out->buf + ct->line_at, out->buf + line_at, root_len) == 0 &&
		    count_add(out->buf + ct->count_at, weight) == 0) {
			out->len = line_at; /* the same line: counted there */
			return;
		}
		text_put(out, ct->text->s, ct->len);
		goto frames_done;
	}
	size_t const chain_start = out->len;
	uint32_t chain_unknown = 0;
	for (size_t i = u->nframes; i-- > 0;) {
		const struct su_frame *f = &frames[i];
		/* Met before at this pc of this snapshot (an off-CPU sample's
		 * names are marked: not cached). */
		int const by_pc = text_by_pc(f) && !fo.off_cpu_mark;
		const struct pc_text *pt = by_pc ? pctext_find(w, u->maps, f) : NULL;
		if (pt) {
			if (pt->unknown) {
				w->counts.unknown_frames++;
				chain_unknown++;
			}
			if (pt->m)
				worker_note_module(w, pt->m);
			text_put(out, pt->text, pt->len);
			continue;
		}
		size_t const start = out->len;
		struct su_resolved r;
		if (worker_resolve(w, u->pid, u->maps, f, &r)) {
			out->oom = 1;
			return;
		}
		folded_resolved(out, &fo, &r);
		int const kernel = r.kind == SU_RESOLVED_KERNEL;
		if (by_pc && !out->oom &&
		    (kernel || (r.module && (r.kind == SU_RESOLVED_SYMBOLS || r.kind == SU_RESOLVED_MODULE)))) {
			int const unknown = kernel ? !r.nsym : r.kind == SU_RESOLVED_MODULE;
			pctext_add(w, u->maps, f, kernel ? NULL : r.module, unknown, out->buf + start,
				   out->len - start);
			chain_unknown += (uint32_t)unknown;
		} else {
			ct = NULL; /* this frame's text is not a function of its key */
		}
	}
	if (!ct || out->oom ||
	    chain_keep(w, ct, ch, u->maps, frames, u->nframes, chain_unknown, out->buf + chain_start,
		       out->len - chain_start) != 0)
		ct = NULL; /* not kept: the slot may hold another chain, whose line this is not */
frames_done:
	text_put(out, " ", 1);
	size_t const count_at = out->len;
	text_u64(out, weight, FOLDED_COUNT_DIGITS);
	text_put(out, "\n", 1);
	if (ct && !out->oom && out->len - count_at == FOLDED_COUNT_DIGITS + 1) {
		ct->line_out = out;
		ct->line_gen = out->gen;
		ct->line_at = line_at;
		ct->count_at = count_at;
		ct->root_len = (uint32_t)root_len;
	}
}

/* `export`: the sample as records for the export model (cli/export.h):
 * symbolized here, in the worker; deduplicated in the main thread.  A
 * chain this worker kept before is a record naming it (its slot and
 * version); a chain is kept when each frame's symbols are a function of
 * its key (code of a file, as folded's pc texts: not a JIT map, not an
 * interpreter's frame). */
static void format_export(struct worker *w, const struct pipeline_sample *u, const char *comm,
			  const struct su_frame *frames, struct text *out)
{
	struct export_rec_sample h = { .time_ns = u->time_ns, .process = u->process, .comm = comm,
				       .pid = u->pid, .tid = u->tid, .nframes = u->nframes, .end = u->end,
				       .off_cpu_ns = u->off_cpu_ns };
	uint64_t ch = 0;
	int hit = 0;
	struct chain_text *ct = u->nframes && u->maps ? chain_find(w, u, frames, &ch, &hit) : NULL;
	if (hit) {
		h.repeat = 1;
		h.nframes = 0;
		h.chain_slot = ct;
		h.chain_version = ct->version;
		text_put(out, (const char *)&h, sizeof(h));
		return;
	}
	size_t const at = out->len;
	text_put(out, (const char *)&h, sizeof(h));
	uint64_t const unknown_before = w->counts.unknown_frames;
	int keep = ct != NULL;
	for (size_t i = 0; i < u->nframes; i++) {
		struct su_resolved r;
		if (worker_resolve(w, u->pid, u->maps, &frames[i], &r)) {
			out->oom = 1;
			return;
		}
		keep &= frames[i].map >= 0 && frames[i].how != SU_FRAME_RUNTIME && r.module &&
			(r.kind == SU_RESOLVED_SYMBOLS || r.kind == SU_RESOLVED_MODULE);
		struct export_rec_frame const x = {
			.pc = r.pc, .map = r.entry, .module_name = r.module_name, .activation = r.activation,
			.module = r.module,
			.module_ok = r.module && r.module->status == SU_MODULE_OK, .nsym = (uint16_t)r.nsym,
			.rt_fp = frames[i].how == SU_FRAME_RUNTIME ? frames[i].rt_fp : 0,
			.rt_pos = frames[i].how == SU_FRAME_RUNTIME ? frames[i].rt_pos : 0 };
		text_put(out, (const char *)&x, sizeof(x));
		text_put(out, (const char *)r.sym, r.nsym * sizeof(*r.sym));
	}
	if (keep && !out->oom &&
	    chain_keep(w, ct, ch, u->maps, frames, u->nframes, (uint32_t)(w->counts.unknown_frames - unknown_before),
		       "", 0) == 0) {
		h.chain_slot = ct;
		h.chain_version = ct->version;
		memcpy(out->buf + at, &h, sizeof(h));
	}
}

void format_sample_of(void *ctx, const struct pipeline_sample *u, const struct su_frame *frames,
		      struct text *out)
{
	struct worker *w = ctx;
	const char *comm = su_resolver_comm(w->resolver, u->process);
	if (!comm)
		out->oom = 1;
	else if (w->o->export_format)
		format_export(w, u, comm, frames, out);
	else
		(w->o->folded ? format_folded : format_stacks)(w, u, comm, frames, out);
}
