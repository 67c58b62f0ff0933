/* SPDX-License-Identifier: MIT */
/* Folded stacks (folded.h): the line builder and the count table. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"
#include "export/folded.h"

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

/* A name in a folded line: ';' separates frames there. */
static void put_name(struct text *t, const char *name)
{
	size_t const n = strlen(name);
	if (text_reserve(t, n))
		return;
	/* Copied whole, then its rare ';' found (memchr, not a test a
	 * byte: the comm of every folded sample goes through here). */
	char *const d = t->buf + t->len;
	memcpy(d, name, n);
	for (char *p = memchr(d, ';', n); p; p = memchr(p + 1, ';', n - (size_t)(p + 1 - d)))
		*p = ':';
	t->len += n;
}

static void put_module(struct text *t, const struct folded_opts *o, const char *module)
{
	if (!o->modules || !module)
		return;
	text_put(t, (const char[]){ FOLDED_MODSEP }, 1);
	put_name(t, base_name(module));
}

void folded_root(struct text *t, const struct folded_opts *o, const char *comm, uint64_t pid, uint64_t tid,
		 const char *end)
{
	put_name(t, comm);
	if (o->root >= FOLDED_ROOT_PROCESS) {
		text_put(t, "-", 1);
		text_id(t, pid);
	}
	if (o->root >= FOLDED_ROOT_THREAD) {
		text_put(t, "/", 1);
		text_id(t, tid);
	}
	if (end) {
		text_puts(t, ";[");
		text_puts(t, end);
		text_put(t, "]", 1);
	}
}

static void put_mark(struct text *t, const struct folded_opts *o)
{
	if (o->off_cpu_mark)
		text_puts(t, FOLDED_OFF_CPU_MARK);
}

void folded_function(struct text *t, const struct folded_opts *o, const char *fn, const char *module)
{
	text_put(t, ";", 1);
	put_name(t, fn);
	put_mark(t, o);
	put_module(t, o, module);
}

void folded_address(struct text *t, const struct folded_opts *o, const char *module, uint64_t addr)
{
	text_put(t, ";", 1);
	put_name(t, base_name(module));
	text_printf(t, "+0x%" PRIx64, addr);
	put_mark(t, o);
	put_module(t, o, module);
}

void folded_unknown(struct text *t)
{
	text_puts(t, ";[unknown]");
}

void folded_resolved(struct text *t, const struct folded_opts *o, const struct su_resolved *r)
{
	switch (r->kind) {
	case SU_RESOLVED_SYMBOLS:
	case SU_RESOLVED_JIT: {
		const char *module = r->kind == SU_RESOLVED_JIT ? r->jit_map : r->module_name;
		/* Outermost (the real function) first; no_inline keeps only it. */
		size_t const last = o->no_inline ? r->nsym - 1 : 0;
		for (size_t k = r->nsym; k-- > last;)
			folded_function(t, o, r->sym[k].function ? r->sym[k].function : "[unknown]", module);
		break;
	}
	case SU_RESOLVED_MODULE:
		folded_address(t, o, r->module_name, r->elf_addr);
		break;
	case SU_RESOLVED_KERNEL:
		/* Module "[kernel.kallsyms]" (or a module's "[name]"). */
		folded_function(t, o, r->nsym ? r->sym[0].function : "[unknown]", r->module_name);
		break;
	case SU_RESOLVED_PYTHON:
		/* Its qualified name; module "[python]": its own colour. */
		folded_function(t, o, r->sym[0].function ? r->sym[0].function : "[unknown python code]",
				r->module_name);
		break;
	default:
		folded_unknown(t);
		put_mark(t, o);
	}
}

/* ---- counts ------------------------------------------------------------------ */

struct line_key {
	const struct folded_counts *c;
	const char *s;
	size_t len;
};

static int line_eq(const void *arg, uint32_t i)
{
	const struct line_key *k = arg;
	const char *stack = k->c->tab[i].stack;
	return !strncmp(stack, k->s, k->len) && !stack[k->len];
}

int folded_counts_add(struct folded_counts *c, const char *s, size_t len)
{
	return folded_counts_add_n(c, s, len, 1);
}

/* FNV-1a of a line a word at a time (lines are long: one step per byte
 * was the most of what the main thread did for `folded -j N`), folded
 * so that the low bits the hash map indexes by depend on every byte. */
static uint64_t line_hash(const char *s, size_t len)
{
	uint64_t const h = su_fnv1a_words(s, len);
	return h ^ (h >> 29);
}

int folded_counts_add_n(struct folded_counts *c, const char *s, size_t len, uint64_t n)
{
	c->sorted = 0;
	if (su_hmap_reserve(&c->map))
		return -ENOMEM;
	uint64_t const hash = line_hash(s, len);
	struct line_key key = { c, s, len };
	size_t const slot = su_hmap_find(&c->map, hash, line_eq, &key);
	if (su_hmap_used(&c->map, slot)) {
		c->tab[su_hmap_value(&c->map, slot)].count += n;
		return 0;
	}
	if (c->n >= UINT32_MAX || SU_GROW(c->tab, c->cap, c->n + 1))
		return -ENOMEM;
	char *k = strndup(s, len);
	if (!k)
		return -ENOMEM;
	/* Its length counted here, on the thread that counts (a part of a
	 * read in parts), not when the merged table is printed. */
	c->tab[c->n] = (struct folded_entry){ k, n, strlen(k) };
	su_hmap_set(&c->map, slot, hash, (uint32_t)c->n++);
	return 0;
}

int folded_counts_add_lines(struct folded_counts *c, const char *buf, size_t len)
{
	while (len) {
		const char *nl = memchr(buf, '\n', len);
		size_t const n = nl ? (size_t)(nl - buf) : len;
		if (folded_counts_add(c, buf, n))
			return -ENOMEM;
		len -= n + (nl != NULL);
		buf += n + (nl != NULL);
	}
	return 0;
}

int folded_counts_add_weighted_lines(struct folded_counts *c, const char *buf, size_t len)
{
	while (len) {
		const char *nl = memchr(buf, '\n', len);
		size_t const n = nl ? (size_t)(nl - buf) : len;
		size_t sp = n;
		while (sp && buf[sp - 1] != ' ')
			sp--;
		if (!sp || sp == n)
			return -EINVAL;
		uint64_t w = 0;
		for (size_t i = sp; i < n; i++) {
			if (buf[i] < '0' || buf[i] > '9')
				return -EINVAL;
			w = w * 10 + (uint64_t)(buf[i] - '0');
		}
		if (folded_counts_add_n(c, buf, sp - 1, w))
			return -ENOMEM;
		len -= n + (nl != NULL);
		buf += n + (nl != NULL);
	}
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_entry *)a)->stack, ((const struct folded_entry *)b)->stack);
}

size_t folded_counts_sort(struct folded_counts *c)
{
	su_hmap_free(&c->map); /* its indexes die with the order */
	if (c->n && !c->sorted)
		qsort(c->tab, c->n, sizeof(*c->tab), entry_cmp);
	c->sorted = 1;
	return c->n;
}

int folded_counts_merge_sorted(struct folded_counts *out, struct folded_counts *const *in, size_t n)
{
	size_t total = 0;
	for (size_t k = 0; k < n; k++)
		total += in[k]->n;
	size_t *at = calloc(n ? n : 1, sizeof(*at));
	if (!at || (total && SU_GROW(out->tab, out->cap, total))) {
		free(at);
		return -ENOMEM;
	}
	su_hmap_free(&out->map);
	out->n = 0;
	for (;;) {
		/* The part whose next line comes first (a few parts: a scan). */
		struct folded_entry *first = NULL;
		size_t from = 0;
		for (size_t k = 0; k < n; k++)
			if (at[k] < in[k]->n && (!first || strcmp(in[k]->tab[at[k]].stack, first->stack) < 0)) {
				first = &in[k]->tab[at[k]];
				from = k;
			}
		if (!first)
			break;
		at[from]++;
		struct folded_entry *const last = out->n ? &out->tab[out->n - 1] : NULL;
		if (last && !strcmp(last->stack, first->stack)) {
			last->count += first->count;
			free(first->stack);
		} else {
			out->tab[out->n++] = *first;
		}
		first->stack = NULL;
	}
	for (size_t k = 0; k < n; k++)
		in[k]->n = 0; /* their lines are OUT's, or freed */
	free(at);
	out->sorted = 1;
	return 0;
}

void folded_counts_print(struct folded_counts *c, FILE *out)
{
	size_t const n = folded_counts_sort(c);
	/* Lines gathered and written 256 KB at a time (fwrite of a block
	 * that size goes straight to the file): fprintf a line was most of
	 * printing a system-wide trace's 5,000 long lines. */
	struct text t = { 0 };
	size_t done = 0; /* lines written */
	for (size_t i = 0; i < n && !t.oom; i++) {
		text_put(&t, c->tab[i].stack, c->tab[i].len);
		text_put(&t, " ", 1);
		text_u64(&t, c->tab[i].count, 1);
		text_put(&t, "\n", 1);
		if (!t.oom && (t.len >= (256u << 10) || i + 1 == n)) {
			(void)fwrite(t.buf, 1, t.len, out);
			t.len = 0;
			done = i + 1;
		}
	}
	for (size_t i = done; i < n; i++) /* out of memory: the rest line by line */
		fprintf(out, "%s %" PRIu64 "\n", c->tab[i].stack, c->tab[i].count);
	text_free(&t);
}

void folded_counts_free(struct folded_counts *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->tab[i].stack);
	free(c->tab);
	su_hmap_free(&c->map);
	memset(c, 0, sizeof(*c));
}
