/* SPDX-License-Identifier: MIT */
/* speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * one "sampled" profile per thread, frames shared.  Mapping: docs/export.md. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/export.h"
#include "common/grow.h"
#include "common/hash.h"
#include "common/hashmap.h"

void export_json_string(FILE *f, const char *s)
{
	/* S is valid UTF-8 (the model's strings are): only '"', '\\' and
	 * control characters need escapes. */
	putc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				putc(*p, f);
		}
	}
	putc('"', f);
}

/* Frames: functions first used by a sample, and the names of addresses no
 * symbol covers ("lib.so+0x1234"), each once, in order of first use. */
struct frames {
	uint32_t *of_function;     /* function -> frame + 1 (0: not yet) */
	uint32_t *of_location;     /* unknown location -> frame + 1 */
	struct frame { uint32_t function; char *name; const char *file; } *tab;  /* NAME: unknown ones */
	size_t n, cap;
	/* unknown names -> frame, open addressing */
	uint32_t *byname;
	size_t nbyname;
};

static int frames_add(struct frames *fr, struct frame f)
{
	if (SU_GROW(fr->tab, fr->cap, fr->n + 1))
		return -ENOMEM;
	fr->tab[fr->n++] = f;
	return 0;
}

/* Frame of an address without symbols, by its name. */
static int frame_unknown(const struct export_model *m, struct frames *fr, uint32_t li, uint32_t *out)
{
	if (fr->of_location[li]) {
		*out = fr->of_location[li] - 1;
		return 0;
	}
	const struct export_location *loc = &m->locations[li];
	char name[4200];
	export_unknown_name(m, loc, name, sizeof(name));
	size_t const cap = 2 * m->n_locations + 2;  /* never more than one frame per location */
	size_t h = su_fnv1a_str(name) % cap;
	while (fr->byname[h] && strcmp(fr->tab[fr->byname[h] - 1].name, name))
		h = (h + 1) % cap;
	if (!fr->byname[h]) {
		char *copy = strdup(name);
		const char *file = loc->mapping == EXPORT_NO_MAPPING ? NULL
			: export_str(m, m->mappings[loc->mapping].filename);
		if (!copy || frames_add(fr, (struct frame){ UINT32_MAX, copy, file })) {
			free(copy);
			return -ENOMEM;
		}
		fr->byname[h] = (uint32_t)fr->n;
	}
	fr->of_location[li] = fr->byname[h];
	*out = fr->byname[h] - 1;
	return 0;
}

static int frame_function(struct frames *fr, uint32_t fn, uint32_t *out)
{
	if (!fr->of_function[fn]) {
		if (frames_add(fr, (struct frame){ fn, NULL, NULL }))
			return -ENOMEM;
		fr->of_function[fn] = (uint32_t)fr->n;
	}
	*out = fr->of_function[fn] - 1;
	return 0;
}

/* The frames of sample S, outermost first, into *BUF. */
static int sample_frames(const struct export_model *m, struct frames *fr, const struct export_sample *s,
			 uint32_t **buf, size_t *cap, size_t *n)
{
	*n = 0;
	for (uint32_t i = s->nlocs; i-- > 0;) {
		uint32_t const li = m->locs[s->loc_off + i];
		const struct export_location *loc = &m->locations[li];
		size_t const need = *n + (loc->nlines ? loc->nlines : 1);
		if (su_grow((void **)buf, cap, need, sizeof(**buf)))
			return -ENOMEM;
		if (!loc->nlines) {
			if (frame_unknown(m, fr, li, &(*buf)[(*n)++]))
				return -ENOMEM;
			continue;
		}
		/* The real function (last line) is the outermost. */
		for (uint32_t k = loc->nlines; k-- > 0;)
			if (frame_function(fr, m->lines[loc->first_line + k].function, &(*buf)[(*n)++]))
				return -ENOMEM;
	}
	return 0;
}

/* The stacks of the samples, each once: samples that share their list of
 * locations (a chain the model met again) share its frames and its text
 * "[f,f,...]", computed at its first use.  Found by (LOC_OFF, NLOCS); a
 * sample points at its stack. */
struct stack {
	size_t loc_off;
	uint32_t nlocs;
	uint32_t depth;          /* frames, at STACKS[SOFF] */
	size_t soff;
	size_t toff;             /* its text, at TEXT[TOFF], TLEN bytes; TLEN 0: not yet */
	size_t tlen;
	uint32_t uses;           /* samples: a stack of one sample keeps no text */
};

struct stacks {
	struct stack *tab;       /* room for one a sample */
	size_t n;
	struct su_hmap map;      /* (LOC_OFF, NLOCS) -> TAB index */
};

struct stack_key {
	const struct stacks *st;
	const struct export_sample *s;
};

static int stack_eq(const void *arg, uint32_t i)
{
	const struct stack_key *k = arg;
	const struct stack *x = &k->st->tab[i];
	return x->loc_off == k->s->loc_off && x->nlocs == k->s->nlocs;
}

/* The stack of sample S (*FRESH: new, its frames to fill), or -1 when out
 * of memory. */
static int64_t stack_of(struct stacks *st, const struct export_sample *s, int *fresh)
{
	if (su_hmap_reserve(&st->map))
		return -1;
	uint64_t const h = su_fnv1a_add(su_fnv1a_add(SU_FNV_SEED, s->loc_off), s->nlocs);
	struct stack_key const k = { st, s };
	size_t const t = su_hmap_find(&st->map, h, stack_eq, &k);
	*fresh = !su_hmap_used(&st->map, t);
	if (*fresh) {
		st->tab[st->n] = (struct stack){ .loc_off = s->loc_off, .nlocs = s->nlocs };
		su_hmap_set(&st->map, t, h, (uint32_t)st->n++);
	}
	return su_hmap_value(&st->map, t);
}

/* V in decimal at P.  @return the digits written. */
static size_t u32_text(char *p, uint32_t v)
{
	char tmp[10];
	size_t n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	for (size_t i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

/* The samples' texts and weights gathered here and handed to stdio 64 KB
 * at a time: two fwrite calls a sample (~140 instructions each) were 7%
 * of an export of a 150k-sample trace. */
struct obuf {
	FILE *f;
	size_t n;
	char b[1 << 16];
};

static void ob_flush(struct obuf *o)
{
	fwrite(o->b, 1, o->n, o->f);
	o->n = 0;
}

static void ob_put(struct obuf *o, const char *s, size_t len)
{
	if (o->n + len > sizeof(o->b)) {
		ob_flush(o);
		if (len > sizeof(o->b)) {
			fwrite(s, 1, len, o->f);
			return;
		}
	}
	memcpy(o->b + o->n, s, len);
	o->n += len;
}

int export_speedscope_write(const struct export_model *m, const struct export_info *info, FILE *f,
			    char *err, size_t errlen)
{
	int rc = -ENOMEM;
	struct frames fr = { 0 };
	uint32_t *stack = NULL;
	size_t stack_cap = 0, depth;
	/* Samples grouped by thread (a counting sort keeps their time order). */
	size_t *start = calloc(m->n_threads + 1, sizeof(*start));
	uint32_t *order = malloc((m->n_samples + 1) * sizeof(*order));
	/* Per sample: its frames, outermost first, in STACKS at SOFF[i]. */
	uint32_t *stacks = NULL;
	size_t n_stacks = 0, cap_stacks = 0;
	uint32_t *sstack = malloc((m->n_samples + 1) * sizeof(*sstack)); /* sample -> its stack */
	struct stacks st = { .tab = malloc((m->n_samples + 1) * sizeof(*st.tab)) };
	char *text = NULL;
	size_t n_text = 0, cap_text = 0;
	struct obuf *ob = malloc(sizeof(*ob));
	fr.of_function = calloc(m->n_functions + 1, sizeof(*fr.of_function));
	fr.of_location = calloc(m->n_locations + 1, sizeof(*fr.of_location));
	fr.byname = calloc(2 * m->n_locations + 2, sizeof(*fr.byname));
	if (!start || !order || !sstack || !st.tab || !fr.of_function || !fr.of_location || !fr.byname || !ob)
		goto out;
	ob->f = f;
	ob->n = 0;
	for (size_t i = 0; i < m->n_samples; i++)
		start[m->samples[i].thread + 1]++;
	for (size_t t = 0; t < m->n_threads; t++)
		start[t + 1] += start[t];
	{
		size_t *fill = calloc(m->n_threads + 1, sizeof(*fill));
		if (!fill)
			goto out;
		memcpy(fill, start, (m->n_threads + 1) * sizeof(*fill));
		for (size_t i = 0; i < m->n_samples; i++)
			order[fill[m->samples[i].thread]++] = (uint32_t)i;
		free(fill);
	}
	/* Frames are numbered in the order the profiles use them. */
	for (size_t k = 0; k < m->n_samples; k++) {
		uint32_t const i = order[k];
		int fresh;
		int64_t const j = stack_of(&st, &m->samples[i], &fresh);
		if (j < 0)
			goto out;
		sstack[i] = (uint32_t)j;
		st.tab[j].uses++;
		if (!fresh)
			continue;
		if (sample_frames(m, &fr, &m->samples[i], &stack, &stack_cap, &depth))
			goto out;
		if (SU_GROW(stacks, cap_stacks, n_stacks + depth))
			goto out;
		st.tab[j].soff = n_stacks;
		st.tab[j].depth = (uint32_t)depth;
		memcpy(stacks + n_stacks, stack, depth * sizeof(*stack));
		n_stacks += depth;
	}

	size_t active = 0;
	for (size_t t = 1; t < m->n_threads; t++)
		if (m->threads[t].samples > m->threads[active].samples)
			active = t;

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n\"exporter\":", f);
	export_json_string(f, info->exporter);
	fputs(",\n\"name\":", f);
	{
		/* A path is any bytes: made valid UTF-8 like every string. */
		char *name = export_utf8_sanitize(info->name, strlen(info->name));
		if (!name)
			goto out;
		export_json_string(f, name);
		free(name);
	}
	fprintf(f, ",\n\"activeProfileIndex\":%zu,\n\"shared\":{\"frames\":[", active);
	for (size_t i = 0; i < fr.n; i++) {
		const struct frame *x = &fr.tab[i];
		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f);
		if (x->name) {
			export_json_string(f, x->name);
			if (x->file) {
				fputs(",\"file\":", f);
				export_json_string(f, x->file);
			}
		} else {
			const struct export_function *fn = &m->functions[x->function];
			export_json_string(f, export_str(m, fn->name));
			if (export_str(m, fn->filename)[0]) {
				fputs(",\"file\":", f);
				export_json_string(f, export_str(m, fn->filename));
			}
			if (fn->start_line)
				fprintf(f, ",\"line\":%" PRIu32, fn->start_line);
		}
		putc('}', f);
	}
	fputs("]},\n\"profiles\":[", f);
	for (size_t t = 0; t < m->n_threads; t++) {
		const struct export_thread *th = &m->threads[t];
		/* Weight: the CPU time a sample stands for, the sampling period
		 * (samples come from per-thread CPU-time timers).  No frequency
		 * recorded (captures by API call only): unit none, weight 1. */
		int const timed = th->period_ns != 0;
		fputs(t ? ",\n{\"type\":\"sampled\",\"name\":" : "\n{\"type\":\"sampled\",\"name\":", f);
		/* "comm pid/tid" */
		char tail[32];
		snprintf(tail, sizeof(tail), " %" PRIu32 "/%" PRIu32, th->pid, th->tid);
		size_t const len = strlen(export_str(m, th->comm)) + strlen(tail) + 1;
		char *name = malloc(len);
		if (!name)
			goto out;
		snprintf(name, len, "%s%s", export_str(m, th->comm), tail);
		export_json_string(f, name);
		free(name);
		if (timed)
			fprintf(f, ",\"unit\":\"nanoseconds\",\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64,
				th->first_ns, th->last_ns + th->period_ns);
		else
			fprintf(f, ",\"unit\":\"none\",\"startValue\":0,\"endValue\":%" PRIu64, th->samples);
		fputs(",\n\"samples\":[", f);
		for (size_t k = start[t]; k < start[t + 1]; k++) {
			struct stack *x = &st.tab[sstack[order[k]]];
			if (k > start[t])
				ob_put(ob, ",", 1);
			if (x->tlen) {
				ob_put(ob, text + x->toff, x->tlen);
				continue;
			}
			/* "[f,f,...]", 11 bytes a frame at most, after the texts
			 * kept: kept there too when more samples use it. */
			if (SU_GROW(text, cap_text, n_text + 11 * (size_t)x->depth + 2))
				goto out;
			char *const from = text + n_text, *p = from;
			*p++ = '[';
			for (uint32_t d = 0; d < x->depth; d++) {
				if (d)
					*p++ = ',';
				p += u32_text(p, stacks[x->soff + d]);
			}
			*p++ = ']';
			ob_put(ob, from, (size_t)(p - from));
			if (x->uses > 1) {
				x->toff = n_text;
				x->tlen = (size_t)(p - from);
				n_text += x->tlen;
			}
		}
		ob_put(ob, "],\n\"weights\":[", sizeof("],\n\"weights\":[") - 1);
		char w[24];
		int const wn = snprintf(w, sizeof(w), ",%" PRIu64, timed ? th->period_ns : 1);
		for (size_t k = start[t]; k < start[t + 1]; k++)
			ob_put(ob, k > start[t] ? w : w + 1, (size_t)(k > start[t] ? wn : wn - 1));
		ob_put(ob, "]}", sizeof("]}") - 1);
		ob_flush(ob); /* before stdio's next */
	}
	fputs("\n]}\n", f);
	rc = 0;
out:
	if (rc)
		snprintf(err, errlen, "out of memory");
	for (size_t i = 0; i < fr.n; i++)
		free(fr.tab[i].name);
	free(fr.tab);
	free(fr.of_function);
	free(fr.of_location);
	free(fr.byname);
	free(stack);
	free(stacks);
	free(sstack);
	su_hmap_free(&st.map);
	free(st.tab);
	free(text);
	free(ob);
	free(start);
	free(order);
	return rc;
}
