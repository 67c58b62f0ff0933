/* A module's symbol table, sorted once (symtab.h).
 *
 * What dwfl_module_addrinfo (elfutils 0.188, __libdwfl_addrsym) does, for
 * ADDR: it scans the table's globals in table order, then, when no sized
 * global holds ADDR (and no sizeless global label sits right at ADDR),
 * its locals.  A symbol counts when it is named, defined, not a section,
 * file or TLS symbol, and starts at or below ADDR.  Among the sized ones
 * that hold ADDR, a later one replaces the one kept when it starts
 * higher or binds more strongly (global > weak > local > other), or,
 * starting at the same place, when it is smaller and binds no weaker, or
 * as large and binds more strongly.  Sizeless symbols only matter when
 * no sized one holds ADDR.  Here the sized symbols are sorted by start
 * with the running maximum of their ends: those holding ADDR are the few
 * just below it, replayed in table order by the same rule. */
#include <stdlib.h>
#include <string.h>

#include <gelf.h>

#include "symbolize/sort.h"
#include "symbolize/symtab.h"

/* Symbols holding one address replayed at most (more: ask libdwfl). */
#define MAX_HOLDERS 64

struct ent {
	uint64_t value, size;
	const char *name;
	uint32_t index;
	unsigned char bind;        /* binding_value: 3 global, 2 weak, 1 local, 0 other */
	unsigned char global;      /* searched in the first pass */
};

struct su_symtab {
	struct ent *sized;         /* by value, then index */
	uint64_t *maxend;          /* maxend[i]: the largest end of sized[0..i] */
	uint64_t *gmaxend;         /* the same over the first pass's only (0: none) */
	size_t nsized;
	uint64_t *labels;          /* starts of sizeless global symbols, sorted */
	size_t nlabels;
	uint64_t *all_labels;      /* starts of every sizeless symbol, sorted */
	size_t nall_labels;
	int locals;                /* the table has a locals pass */
};

static unsigned char binding_value(unsigned char info)
{
	switch (GELF_ST_BIND(info)) {
	case STB_GLOBAL: return 3;
	case STB_WEAK: return 2;
	case STB_LOCAL: return 1;
	default: return 0;
	}
}

static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t const x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* T's sized entries in ent_cmp's order: by value (a radix sort carrying
 * each one's place), equal values by index.  @return 0, or -ENOMEM
 * (nothing moved: qsort then). */
static int sort_sized(struct su_symtab *t)
{
	size_t const n = t->nsized;
	uint64_t *key = malloc((n ? n : 1) * sizeof *key);
	uint32_t *at = malloc((n ? n : 1) * sizeof *at);
	struct ent *out = malloc((n ? n : 1) * sizeof *out);
	int rc = -1;
	if (!key || !at || !out)
		goto done;
	for (size_t i = 0; i < n; i++) {
		key[i] = t->sized[i].value;
		at[i] = (uint32_t)i;
	}
	if (su_sort_u64(key, at, n) != 0)
		goto done;
	for (size_t i = 0; i < n; i++)
		out[i] = t->sized[at[i]];
	/* Aliases (one value, several names): a few at a time, by index. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && out[j - 1].value == out[j].value && out[j - 1].index > out[j].index; j--) {
			struct ent const e = out[j];
			out[j] = out[j - 1];
			out[j - 1] = e;
		}
	free(t->sized);
	t->sized = out;
	out = NULL;
	rc = 0;
done:
	free(key);
	free(at);
	free(out);
	return rc;
}

void su_symtab_free(struct su_symtab *t)
{
	if (!t)
		return;
	free(t->sized);
	free(t->maxend);
	free(t->gmaxend);
	free(t->labels);
	free(t->all_labels);
	free(t);
}

struct su_symtab *su_symtab_new(const struct su_sym *syms, size_t n, int first_global)
{
	struct su_symtab *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	/* The first pass: [first_global, end), or [1, end) when 0. */
	uint32_t const gstart = first_global > 0 ? (uint32_t)first_global : 1;
	t->locals = first_global > 1;
	t->sized = malloc((n ? n : 1) * sizeof *t->sized);
	t->labels = malloc((n ? n : 1) * sizeof *t->labels);
	t->all_labels = malloc((n ? n : 1) * sizeof *t->all_labels);
	if (!t->sized || !t->labels || !t->all_labels)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct su_sym *s = &syms[i];
		int const type = GELF_ST_TYPE(s->info);
		if (s->index == 0 || !s->name || !s->name[0] || !s->defined || type == STT_SECTION ||
		    type == STT_FILE || type == STT_TLS)
			continue;
		int const global = s->index >= gstart;
		if (!s->size) {
			if (global)
				t->labels[t->nlabels++] = s->value;
			t->all_labels[t->nall_labels++] = s->value;
			continue;
		}
		t->sized[t->nsized++] = (struct ent){ s->value, s->size, s->name, s->index,
						      binding_value(s->info), (unsigned char)global };
	}
	if (sort_sized(t) != 0)
		qsort(t->sized, t->nsized, sizeof *t->sized, ent_cmp);
	if (su_sort_u64(t->labels, NULL, t->nlabels) != 0)
		qsort(t->labels, t->nlabels, sizeof *t->labels, u64_cmp);
	if (su_sort_u64(t->all_labels, NULL, t->nall_labels) != 0)
		qsort(t->all_labels, t->nall_labels, sizeof *t->all_labels, u64_cmp);
	t->maxend = malloc((t->nsized ? t->nsized : 1) * sizeof *t->maxend);
	t->gmaxend = malloc((t->nsized ? t->nsized : 1) * sizeof *t->gmaxend);
	if (!t->maxend || !t->gmaxend)
		goto fail;
	for (size_t i = 0; i < t->nsized; i++) {
		uint64_t const v = t->sized[i].value, s = t->sized[i].size;
		uint64_t const end = v + s < v ? UINT64_MAX : v + s;
		uint64_t const gend = t->sized[i].global ? end : 0;
		t->maxend[i] = i && t->maxend[i - 1] > end ? t->maxend[i - 1] : end;
		t->gmaxend[i] = i && t->gmaxend[i - 1] > gend ? t->gmaxend[i - 1] : gend;
	}
	return t;
fail:
	su_symtab_free(t);
	return NULL;
}

int su_symtab_usable(Dwfl_Module *mod)
{
	/* Only where libdwfl resolves no function descriptors (ppc64's
	 * ELFv1 and the like add a second value per symbol) and relocates
	 * nothing (ET_REL). */
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	GElf_Ehdr eh;
	return elf && gelf_getehdr(elf, &eh) && eh.e_type != ET_REL &&
	       (eh.e_machine == EM_X86_64 || eh.e_machine == EM_386 || eh.e_machine == EM_AARCH64);
}

struct su_symtab *su_symtab_of_module(Dwfl_Module *mod)
{
	if (!su_symtab_usable(mod))
		return NULL;
	int const nsyms = dwfl_module_getsymtab(mod);
	int const first_global = dwfl_module_getsymtab_first_global(mod);
	if (nsyms <= 0 || first_global < 0)
		return NULL;
	struct su_sym *syms = malloc((size_t)nsyms * sizeof *syms);
	if (!syms)
		return NULL;
	size_t n = 0;
	for (int i = 1; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr value = 0;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, NULL, NULL, NULL);
		if (!name)
			continue;
		syms[n++] = (struct su_sym){ value, sym.st_size, name, (uint32_t)i, sym.st_info,
					     sym.st_shndx != SHN_UNDEF };
	}
	struct su_symtab *t = su_symtab_new(syms, n, first_global);
	free(syms);
	return t;
}

/* libdwfl's choice among HOLDERS[N] (in table order) of the pass GLOBAL:
 * NULL when none is of that pass. */
static const struct ent *replay(const struct ent *const *holders, size_t n, int global)
{
	const struct ent *best = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct ent *e = holders[i];
		if (e->global != global)
			continue;
		if (!best || best->value < e->value || best->bind < e->bind)
			best = e;
		else if (best->value == e->value &&
			 ((best->size > e->size && best->bind <= e->bind) ||
			  (best->size >= e->size && best->bind < e->bind)))
			best = e;
	}
	return best;
}

/* The first of V[N] (sorted) at or above X: N when none. */
static size_t first_at_or_above(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t const mid = lo + (hi - lo) / 2;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int su_symtab_lookup(const struct su_symtab *t, uint64_t addr, const char **name, uint64_t *value)
{
	if (!t)
		return -1;
	size_t lo = 0, hi = t->nsized;
	while (lo < hi) {   /* the first symbol starting above ADDR */
		size_t const mid = lo + (hi - lo) / 2;
		if (t->sized[mid].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct ent *holders[MAX_HOLDERS];
	size_t n = 0;
	for (size_t i = lo; i-- > 0 && t->maxend[i] > addr;) {
		const struct ent *e = &t->sized[i];
		if (addr - e->value >= e->size)
			continue;
		if (n == MAX_HOLDERS)
			return -1;
		holders[n++] = e;
	}
	/* Table order (the walk went down by value). */
	for (size_t i = 1; i < n; i++) {
		const struct ent *e = holders[i];
		size_t j = i;
		for (; j > 0 && holders[j - 1]->index > e->index; j--)
			holders[j] = holders[j - 1];
		holders[j] = e;
	}
	const struct ent *best = replay(holders, n, 1);
	if (!best && t->locals) {
		/* A sizeless global right at ADDR would stop libdwfl before
		 * the locals. */
		size_t const a = first_at_or_above(t->labels, t->nlabels, addr);
		if (a < t->nlabels && t->labels[a] == addr)
			return -1;
		best = replay(holders, n, 0);
	}
	if (best) {
		*name = best->name;
		*value = best->value;
		return 1;
	}
	/* No sized symbol holds ADDR.  libdwfl's last resort is a sizeless
	 * symbol at or above the end of every symbol it saw below ADDR (at
	 * least the first pass's), in ADDR's section: with none between
	 * that end and ADDR, it names nothing. */
	uint64_t const floor = lo ? t->gmaxend[lo - 1] : 0;
	size_t const a = first_at_or_above(t->all_labels, t->nall_labels, floor);
	if (floor <= addr && a < t->nall_labels && t->all_labels[a] <= addr)
		return -1;
	*name = NULL;
	*value = 0;
	return 0;
}
