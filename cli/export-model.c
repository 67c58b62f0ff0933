/* SPDX-License-Identifier: MIT */
/* The export model: records of unwound, symbolized samples -> deduplicated
 * strings, mappings, functions, locations, threads and samples (export.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/export.h"
#include "common/grow.h"
#include "common/hash.h"
#include "common/hashmap.h"
#include "unwind/unwind.h"

/* ---- valid UTF-8 ------------------------------------------------------------ */

/* Length of the well-formed UTF-8 sequence at S (N bytes left), or 0
 * (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char const c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return len;
}

char *export_utf8_sanitize(const char *s, size_t len)
{
	char *out = malloc(3 * len + 1);
	if (!out)
		return NULL;
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		size_t const k = utf8_seq(p + i, len - i);
		if (k) {
			memcpy(out + o, p + i, k);
			o += k;
			i += k;
		} else {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		}
	}
	out[o] = 0;
	return out;
}

/* ---- hash tables of indexes ------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	return h * 0xC2B2AE3D27D4EB4Full;
}

/* A chain a worker kept (export_rec_sample.chain_slot): its frames'
 * locations, LOCS[LOC_OFF, + NLOCS). */
struct chain_locs {
	const void *slot;
	uint64_t version;
	size_t loc_off;
	uint32_t nlocs;
	uint64_t hash;           /* export_locs_hash of the list */
};

struct index {
	struct su_hmap strings, mappings, functions, locations, threads, chains;
	struct chain_locs *chain;
	size_t n_chain, cap_chain;
	/* The mapping of a maps entry by address: entries live until the
	 * reader's end, and the model is built before it. */
	struct { const struct su_map_entry *e; uint32_t mapping; } emap[1024];
};

/* Comparison context: the model and the candidate. */
struct eqarg {
	const struct export_model *m;
	const void *key;
};

/* Room for one more element of the array M->WHAT. */
#define GROW(m, what) SU_GROW((m)->what, (m)->cap_##what, (m)->n_##what + 1)

/* ---- strings ------------------------------------------------------------------ */

static int str_eq(const void *arg, uint32_t i)
{
	const struct eqarg *a = arg;
	return !strcmp(a->m->strings[i], a->key);
}

uint32_t export_model_string(struct export_model *m, const char *s)
{
	struct index *x = m->index;
	char *clean = export_utf8_sanitize(s, strlen(s));
	if (!clean)
		return UINT32_MAX;
	if (su_hmap_reserve(&x->strings))
		goto oom;
	uint64_t const h = su_fnv1a_str(clean);
	struct eqarg a = { m, clean };
	size_t const slot = su_hmap_find(&x->strings, h, str_eq, &a);
	if (su_hmap_used(&x->strings, slot)) {
		free(clean);
		return su_hmap_value(&x->strings, slot);
	}
	if (GROW(m, strings))
		goto oom;
	m->strings[m->n_strings] = clean;
	su_hmap_set(&x->strings, slot, h, (uint32_t)m->n_strings++);
	return (uint32_t)m->n_strings - 1;
oom:
	free(clean);
	return UINT32_MAX;
}

/* ---- model -------------------------------------------------------------------- */

struct export_model *export_model_new(int no_inline)
{
	struct export_model *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->no_inline = no_inline;
	m->index = calloc(1, sizeof(struct index));
	if (!m->index || export_model_string(m, "") != 0) {
		export_model_free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

void export_model_free(struct export_model *m)
{
	if (!m)
		return;
	struct index *x = m->index;
	if (x) {
		su_hmap_free(&x->strings);
		su_hmap_free(&x->mappings);
		su_hmap_free(&x->functions);
		su_hmap_free(&x->locations);
		su_hmap_free(&x->threads);
		su_hmap_free(&x->chains);
		free(x->chain);
		free(x);
	}
	for (size_t i = 0; i < m->n_strings; i++)
		free(m->strings[i]);
	free(m->strings);
	free(m->mappings);
	free(m->functions);
	free(m->lines);
	free(m->locations);
	free(m->threads);
	free(m->samples);
	free(m->locs);
	free(m);
}

/* ---- mappings ----------------------------------------------------------------- */

static int mapping_eq(const void *arg, uint32_t i)
{
	const struct eqarg *a = arg;
	const struct export_mapping *k = a->key, *e = &a->m->mappings[i];
	return e->start == k->start && e->limit == k->limit && e->offset == k->offset &&
	       e->filename == k->filename && e->build_id == k->build_id;
}

/* The mapping of entry E (its module MOD, or NULL) named NAME.  A perf.data
 * entry has its bias and, when perf recorded none, its build-id from the
 * file its module opened. */
static uint32_t mapping_of(struct export_model *m, const struct su_map_entry *e, const struct su_module *mod,
			   const char *name, uint32_t *out)
{
	struct index *x = m->index;
	size_t const slot = ((uintptr_t)e >> 4) % (sizeof(x->emap) / sizeof(x->emap[0]));
	if (x->emap[slot].e == e) {
		*out = x->emap[slot].mapping;
		return 0;
	}
	char hex[2 * SU_BUILD_ID_MAX + 1];
	int const own = !e->build_id_len && (e->flags & (SU_MAP_FILE_BIAS | SU_MAP_THIS_KERNEL)) && mod &&
			 mod->status == SU_MODULE_OK;
	const uint8_t *id = own ? mod->file_id : e->build_id;
	unsigned const id_len = own ? mod->file_id_len : e->build_id_len;
	for (unsigned k = 0; k < id_len; k++)
		snprintf(hex + 2 * k, 3, "%02x", id[k]);
	hex[2 * id_len] = 0;
	uint64_t const bias = su_module_bias(mod, e);
	struct export_mapping key = {
		.start = e->start, .limit = e->end, .offset = e->offset, .bias = bias,
		.filename = export_model_string(m, name),
		.build_id = export_model_string(m, hex),
		.is_main = !!(e->flags & SU_MAP_MAIN),
	};
	if (key.filename == UINT32_MAX || key.build_id == UINT32_MAX)
		return -ENOMEM;
	if (su_hmap_reserve(&x->mappings))
		return -ENOMEM;
	uint64_t const h = mix(mix(mix(mix(key.start, key.limit), key.offset), key.filename), key.build_id);
	struct eqarg a = { m, &key };
	size_t const t = su_hmap_find(&x->mappings, h, mapping_eq, &a);
	if (!su_hmap_used(&x->mappings, t)) {
		if (GROW(m, mappings))
			return -ENOMEM;
		m->mappings[m->n_mappings] = key;
		su_hmap_set(&x->mappings, t, h, (uint32_t)m->n_mappings++);
	}
	*out = su_hmap_value(&x->mappings, t);
	x->emap[slot].e = e;
	x->emap[slot].mapping = *out;
	return 0;
}

/* ---- functions ---------------------------------------------------------------- */

static int function_eq(const void *arg, uint32_t i)
{
	const struct eqarg *a = arg;
	const struct export_function *k = a->key, *e = &a->m->functions[i];
	return e->name == k->name && e->filename == k->filename && e->start_line == k->start_line;
}

static int function_of(struct export_model *m, const char *name, const char *file, uint32_t line,
		       uint32_t *out)
{
	struct index *x = m->index;
	struct export_function key = {
		.name = export_model_string(m, name),
		.filename = export_model_string(m, file ? file : ""),
		.start_line = line,
	};
	if (key.name == UINT32_MAX || key.filename == UINT32_MAX)
		return -ENOMEM;
	if (su_hmap_reserve(&x->functions))
		return -ENOMEM;
	uint64_t const h = mix(mix(mix(7, key.name), key.filename), key.start_line);
	struct eqarg a = { m, &key };
	size_t const t = su_hmap_find(&x->functions, h, function_eq, &a);
	if (!su_hmap_used(&x->functions, t)) {
		if (GROW(m, functions))
			return -ENOMEM;
		m->functions[m->n_functions] = key;
		su_hmap_set(&x->functions, t, h, (uint32_t)m->n_functions++);
	}
	*out = su_hmap_value(&x->functions, t);
	return 0;
}

/* ---- locations ---------------------------------------------------------------- */

struct loc_key {
	uint32_t mapping;
	uint64_t address;
	uint8_t activation, pseudo;
	uint32_t rt_fp;
	int32_t rt_pos;
};

static int location_eq(const void *arg, uint32_t i)
{
	const struct eqarg *a = arg;
	const struct loc_key *k = a->key;
	const struct export_location *e = &a->m->locations[i];
	return e->mapping == k->mapping && e->address == k->address && e->pseudo == k->pseudo &&
	       e->rt_fp == k->rt_fp && e->rt_pos == k->rt_pos;
}

/* The location of K; *FRESH says it is new (its lines still to fill). */
static int location_of(struct export_model *m, const struct loc_key *k, uint32_t *out, int *fresh)
{
	struct index *x = m->index;
	if (su_hmap_reserve(&x->locations))
		return -ENOMEM;
	uint64_t const h = mix(mix(mix(k->mapping, k->address), k->pseudo), ((uint64_t)k->rt_fp << 32) ^ (uint32_t)k->rt_pos);
	struct eqarg a = { m, k };
	size_t const t = su_hmap_find(&x->locations, h, location_eq, &a);
	*fresh = !su_hmap_used(&x->locations, t);
	if (*fresh) {
		if (GROW(m, locations))
			return -ENOMEM;
		m->locations[m->n_locations] = (struct export_location){
			.address = k->address, .mapping = k->mapping, .activation = k->activation,
			.pseudo = k->pseudo, .first_line = (uint32_t)m->n_lines, .rt_fp = k->rt_fp, .rt_pos = k->rt_pos,
		};
		su_hmap_set(&x->locations, t, h, (uint32_t)m->n_locations++);
	}
	*out = su_hmap_value(&x->locations, t);
	return 0;
}

static int add_line(struct export_model *m, uint32_t function, uint32_t line, uint32_t column)
{
	if (GROW(m, lines))
		return -ENOMEM;
	m->lines[m->n_lines++] = (struct export_line){ function, line, column };
	return 0;
}

/* The lines of a new location from its inline chain SF[N] (innermost
 * first; --no-inline: only the real function, the last). */
static int location_fill(struct export_model *m, uint32_t li, const struct su_symframe *sf, size_t n)
{
	struct export_location *loc = &m->locations[li];
	loc->first_line = (uint32_t)m->n_lines;
	for (size_t i = m->no_inline ? n - 1 : 0; i < n; i++) {
		uint32_t fn;
		const char *file = sf[i].decl_file ? sf[i].decl_file : sf[i].file;
		if (function_of(m, sf[i].function ? sf[i].function : "[unknown]", file, sf[i].decl_line, &fn) ||
		    add_line(m, fn, sf[i].line, sf[i].column))
			return -ENOMEM;
	}
	loc = &m->locations[li];
	loc->nlines = (uint32_t)(m->n_lines - loc->first_line);
	if (loc->mapping != EXPORT_NO_MAPPING) {
		struct export_mapping *mp = &m->mappings[loc->mapping];
		for (size_t i = 0; i < n; i++) {
			mp->has_filenames |= sf[i].file != NULL;
			mp->has_line_numbers |= sf[i].line != 0;
		}
		mp->has_inline_frames |= n > 1;
	}
	return 0;
}

/* ---- threads ------------------------------------------------------------------ */

static int thread_eq(const void *arg, uint32_t i)
{
	const struct eqarg *a = arg;
	const struct export_rec_sample *k = a->key;
	const struct export_thread *e = &a->m->threads[i];
	if (a->m->process_by_id)
		return e->pid == k->pid && e->tid == k->tid && e->known == (k->process != NULL) &&
		       e->seq == (k->process ? k->process->seq : 0);
	return e->process == k->process && e->pid == k->pid && e->tid == k->tid;
}

static int thread_of(struct export_model *m, const struct export_rec_sample *s, uint32_t *out)
{
	struct index *x = m->index;
	if (su_hmap_reserve(&x->threads))
		return -ENOMEM;
	uint64_t const who = m->process_by_id ? (s->process ? (uint64_t)s->process->seq + 1 : 0)
					      : (uint64_t)(uintptr_t)s->process;
	uint64_t const h = mix(mix(who, s->pid), s->tid);
	struct eqarg a = { m, s };
	size_t const t = su_hmap_find(&x->threads, h, thread_eq, &a);
	if (!su_hmap_used(&x->threads, t)) {
		const struct su_process *p = s->process;
		uint32_t const comm = export_model_string(m, s->comm);
		if (comm == UINT32_MAX || GROW(m, threads))
			return -ENOMEM;
		m->threads[m->n_threads] = (struct export_thread){
			.pid = s->pid, .tid = s->tid, .comm = comm, .process = p, .seq = p ? p->seq : 0, .known = p != NULL,
			.period_ns = p && p->frequency_hz ? 1000000000u / p->frequency_hz : 0,
			.clock_offset_ns = p ? p->clock_offset_ns : 0,
			.first_ns = s->time_ns,
		};
		su_hmap_set(&x->threads, t, h, (uint32_t)m->n_threads++);
	}
	*out = su_hmap_value(&x->threads, t);
	struct export_thread *th = &m->threads[*out];
	th->last_ns = s->time_ns;
	th->samples++;
	return 0;
}

/* ---- chains met again ---------------------------------------------------------- */

static int chain_eq(const void *arg, uint32_t i)
{
	const struct eqarg *a = arg;
	const struct export_rec_sample *k = a->key;
	const struct chain_locs *c = &((const struct index *)a->m->index)->chain[i];
	return c->slot == k->chain_slot && c->version == k->chain_version;
}

static uint64_t chain_key_hash(const struct export_rec_sample *s)
{
	return mix((uint64_t)(uintptr_t)s->chain_slot, s->chain_version);
}

/* The locations of the chain S names, or NULL (not met: a worker's
 * record came without the one it repeats). */
static const struct chain_locs *chain_get(const struct export_model *m, const struct export_rec_sample *s)
{
	const struct index *x = m->index;
	struct eqarg a = { m, s };
	if (!x->chains.cap) /* (su_hmap_find wants a table) */
		return NULL;
	size_t const t = su_hmap_find(&x->chains, chain_key_hash(s), chain_eq, &a);
	return su_hmap_used(&x->chains, t) ? &x->chain[su_hmap_value(&x->chains, t)] : NULL;
}

/* Keep the locations of S's frames, LOCS[LOC_OFF, + NLOCS), for the
 * records that repeat its chain (a slot taking a new chain has a new
 * version: the old one is never named again, and stays). */
static int chain_put(struct export_model *m, const struct export_rec_sample *s, size_t loc_off, uint32_t nlocs,
		     uint64_t hash)
{
	struct index *x = m->index;
	if (su_hmap_reserve(&x->chains) ||
	    su_grow((void **)&x->chain, &x->cap_chain, x->n_chain + 1, sizeof(*x->chain)))
		return -ENOMEM;
	uint64_t const h = chain_key_hash(s);
	struct eqarg a = { m, s };
	size_t const t = su_hmap_find(&x->chains, h, chain_eq, &a);
	struct chain_locs const c = { s->chain_slot, s->chain_version, loc_off, nlocs, hash };
	if (su_hmap_used(&x->chains, t)) {
		x->chain[su_hmap_value(&x->chains, t)] = c;
		return 0;
	}
	x->chain[x->n_chain] = c;
	su_hmap_set(&x->chains, t, h, (uint32_t)x->n_chain++);
	return 0;
}

/* ---- records ------------------------------------------------------------------ */

static int add_loc(struct export_model *m, uint32_t li)
{
	if (GROW(m, locs))
		return -ENOMEM;
	m->locs[m->n_locs++] = li;
	return 0;
}

/* One sample's records at P (LEN bytes left): its size, or -errno. */
static long add_sample(struct export_model *m, const unsigned char *p, size_t len)
{
	struct export_rec_sample s;
	if (len < sizeof(s))
		return -EINVAL;
	memcpy(&s, p, sizeof(s));
	size_t off = sizeof(s);
	struct export_sample out = { .time_ns = s.time_ns, .loc_off = m->n_locs, .off_cpu_ns = s.off_cpu_ns };
	m->n_off_cpu += s.off_cpu_ns != 0;
	int rc = thread_of(m, &s, &out.thread);
	if (rc)
		return rc;
	if (s.repeat) {
		const struct chain_locs *const c = chain_get(m, &s);
		if (!c)
			return -EINVAL;
		if (s.end == SU_END_OUTERMOST) {
			/* The very same list: the samples share it. */
			out.loc_off = c->loc_off;
			out.nlocs = c->nlocs;
			out.locs_hash = c->hash;
			if (GROW(m, samples))
				return -ENOMEM;
			m->samples[m->n_samples++] = out;
			return (long)off;
		}
		/* Its root names why it stopped: the list again, that root after. */
		for (uint32_t i = 0; i < c->nlocs; i++)
			if ((rc = add_loc(m, m->locs[c->loc_off + i])))
				return rc;
	}
	for (uint32_t i = 0; !s.repeat && i < s.nframes; i++) {
		struct export_rec_frame f;
		if (len - off < sizeof(f))
			return -EINVAL;
		memcpy(&f, p + off, sizeof(f));
		off += sizeof(f);
		if (len - off < f.nsym * sizeof(struct su_symframe))
			return -EINVAL;
		/* The address looked up: a caller's return address - 1 is inside its
		 * call instruction, so it symbolizes right with any tool, and never
		 * equals a leaf's pc (an instruction start). */
		struct loc_key k = { .mapping = EXPORT_NO_MAPPING, .address = f.activation ? f.pc : f.pc - 1,
				     .activation = f.activation, .rt_fp = f.rt_fp, .rt_pos = f.rt_pos };
		if (f.map && (rc = mapping_of(m, f.map, f.module, f.module_name, &k.mapping)))
			return rc;
		uint32_t li;
		int fresh;
		if ((rc = location_of(m, &k, &li, &fresh)))
			return rc;
		if (fresh && f.map && f.module_ok)
			m->mappings[k.mapping].has_functions = 1;
		if (fresh && f.nsym) {
			struct su_symframe sf[64];
			size_t const n = f.nsym < 64 ? f.nsym : 64;
			memcpy(sf, p + off, n * sizeof(*sf));
			if ((rc = location_fill(m, li, sf, n)))
				return rc;
		}
		off += f.nsym * sizeof(struct su_symframe);
		if ((rc = add_loc(m, li)))
			return rc;
	}
	if (s.chain_slot && !s.repeat &&
	    (rc = chain_put(m, &s, out.loc_off, (uint32_t)(m->n_locs - out.loc_off),
			    export_locs_hash(m->locs + out.loc_off, (uint32_t)(m->n_locs - out.loc_off)))))
		return rc;
	if (s.end != SU_END_OUTERMOST) {
		/* The root of a stack that stopped early names why, as in
		 * `folded` ("[truncated]"): such stacks group apart. */
		struct loc_key k = { .mapping = EXPORT_NO_MAPPING, .address = s.end, .pseudo = 1 };
		uint32_t li, fn;
		int fresh;
		if ((rc = location_of(m, &k, &li, &fresh)))
			return rc;
		if (fresh) {
			char name[64];
			snprintf(name, sizeof(name), "[%s]", su_unwind_end_name((enum su_unwind_end)s.end));
			if ((rc = function_of(m, name, NULL, 0, &fn)) || (rc = add_line(m, fn, 0, 0)))
				return rc;
			m->locations[li].nlines = 1;
		}
		if ((rc = add_loc(m, li)))
			return rc;
	}
	out.nlocs = (uint32_t)(m->n_locs - out.loc_off);
	out.locs_hash = export_locs_hash(m->locs + out.loc_off, out.nlocs);
	if (GROW(m, samples))
		return -ENOMEM;
	m->samples[m->n_samples++] = out;
	return (long)off;
}

int export_model_add(struct export_model *m, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	while (len) {
		long const n = add_sample(m, p, len);
		if (n < 0)
			return (int)n;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void export_unknown_name(const struct export_model *m, const struct export_location *loc, char *buf,
			 size_t size)
{
	if (loc->mapping == EXPORT_NO_MAPPING) {
		snprintf(buf, size, "[unknown]");
		return;
	}
	const struct export_mapping *mp = &m->mappings[loc->mapping];
	const char *path = export_str(m, mp->filename);
	const char *base = strrchr(path, '/');
	base = base && base[1] ? base + 1 : path;
	/* The pc, as `stacks` and `folded` show it. */
	snprintf(buf, size, "%s+0x%" PRIx64, base, loc->address + !loc->activation - mp->bias);
}
