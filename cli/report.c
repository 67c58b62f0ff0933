/* SPDX-License-Identifier: MIT */
/* `stackunwind report` from the folded counts (report.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report.h"
#include "common/grow.h"
#include "common/hash.h"
#include "common/hashmap.h"

/* A function (name MODSEP module) or a module: a key into a folded line. */
struct row {
	const char *key;
	size_t len;
	uint64_t self, children;
	size_t last;             /* the last stack counted in CHILDREN, + 1 */
};

/* A call-tree node: ROW called from PARENT, COUNT samples through it. */
struct node {
	uint32_t row, parent;
	uint32_t first_child, next;  /* 0: none (node 0 is the root) */
	uint64_t count;
};

struct report {
	const struct report_opts *o;
	struct row *rows;
	size_t n_rows, cap_rows;
	struct su_hmap row_map;
	struct node *nodes;
	size_t n_nodes, cap_nodes;
	struct su_hmap node_map;
	uint64_t total;
	int module_width;
};

struct key_arg {
	const struct report *r;
	const char *s;
	size_t len;
	uint32_t parent, row;
};

static int row_eq(const void *arg, uint32_t i)
{
	const struct key_arg *k = arg;
	const struct row *w = &k->r->rows[i];
	return w->len == k->len && !memcmp(w->key, k->s, k->len);
}

static int node_eq(const void *arg, uint32_t i)
{
	const struct key_arg *k = arg;
	return k->r->nodes[i].parent == k->parent && k->r->nodes[i].row == k->row;
}

/* The row of key S (LEN bytes), added when new.  @return its index or -1
 * (out of memory). */
static long row_of(struct report *r, const char *s, size_t len)
{
	if (su_hmap_reserve(&r->row_map) || SU_GROW(r->rows, r->cap_rows, r->n_rows + 1) ||
	    r->n_rows >= UINT32_MAX - 1)
		return -1;
	uint64_t const h = su_fnv1a(s, len);
	struct key_arg const k = { r, s, len, 0, 0 };
	size_t const slot = su_hmap_find(&r->row_map, h, row_eq, &k);
	if (su_hmap_used(&r->row_map, slot))
		return su_hmap_value(&r->row_map, slot);
	r->rows[r->n_rows] = (struct row){ .key = s, .len = len };
	su_hmap_set(&r->row_map, slot, h, (uint32_t)r->n_rows);
	return (long)r->n_rows++;
}

/* The node of ROW under PARENT, added when new.  @return its index or -1. */
static long node_of(struct report *r, uint32_t parent, uint32_t row)
{
	if (su_hmap_reserve(&r->node_map) || SU_GROW(r->nodes, r->cap_nodes, r->n_nodes + 1) ||
	    r->n_nodes >= UINT32_MAX - 1)
		return -1;
	uint64_t const h = su_fnv1a_from(su_fnv1a(&parent, sizeof(parent)), &row, sizeof(row));
	struct key_arg const k = { r, NULL, 0, parent, row };
	size_t const slot = su_hmap_find(&r->node_map, h, node_eq, &k);
	if (su_hmap_used(&r->node_map, slot))
		return su_hmap_value(&r->node_map, slot);
	uint32_t const n = (uint32_t)r->n_nodes++;
	r->nodes[n] = (struct node){ .row = row, .parent = parent, .next = r->nodes[parent].first_child };
	r->nodes[parent].first_child = n;
	su_hmap_set(&r->node_map, slot, h, n);
	return n;
}

/* Where a frame's module starts (after FOLDED_MODSEP), or NULL: "[unknown]". */
static const char *module_of(const char *s, size_t len)
{
	const char *m = memrchr(s, FOLDED_MODSEP, len);
	return m ? m + 1 : NULL;
}

/* Count the line S (COUNT samples), the I-th distinct one. */
static int add_stack(struct report *r, const char *s, uint64_t count, size_t i)
{
	r->total += count;
	/* The root (comm), then "[end]" when the unwind stopped early: the
	 * only element but "[unknown]" frames without a module. */
	const char *p = strchr(s, ';');
	if (p) {
		const char *q = strchr(p + 1, ';');
		size_t const len = q ? (size_t)(q - p - 1) : strlen(p + 1);
		if (p[1] == '[' && !module_of(p + 1, len) && strncmp(p + 1, "[unknown]", 9))
			p = q;
	}
	uint32_t node = 0, prev = UINT32_MAX;
	while (p) {
		const char *f = p + 1;
		p = strchr(f, ';');
		size_t len = p ? (size_t)(p - f) : strlen(f);
		if (r->o->per_module) {
			const char *m = module_of(f, len);
			if (m) {
				len -= (size_t)(m - f);
				f = m;
			}
		}
		long const w = row_of(r, f, len);
		if (w < 0)
			return -ENOMEM;
		struct row *row = &r->rows[w];
		if (row->last != i + 1) {
			row->children += count;
			row->last = i + 1;
		}
		if (!p)
			row->self += count;
		if (r->o->tree && (uint32_t)w != prev) {
			/* Modules: a run of frames of one module is one node. */
			long const n = node_of(r, node, (uint32_t)w);
			if (n < 0)
				return -ENOMEM;
			r->nodes[n].count += count;
			node = (uint32_t)n;
		}
		if (r->o->per_module)
			prev = (uint32_t)w;
	}
	return 0;
}

static int key_cmp(const struct row *a, const struct row *b)
{
	size_t const n = a->len < b->len ? a->len : b->len;
	int const c = memcmp(a->key, b->key, n);
	return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int row_cmp(const void *pa, const void *pb, void *arg)
{
	const struct report *r = arg;
	const struct row *a = &r->rows[*(const uint32_t *)pa], *b = &r->rows[*(const uint32_t *)pb];
	uint64_t const a1 = r->o->sort == REPORT_SORT_SELF ? a->self : a->children;
	uint64_t const b1 = r->o->sort == REPORT_SORT_SELF ? b->self : b->children;
	uint64_t const a2 = r->o->sort == REPORT_SORT_SELF ? a->children : a->self;
	uint64_t const b2 = r->o->sort == REPORT_SORT_SELF ? b->children : b->self;
	if (a1 != b1)
		return a1 > b1 ? -1 : 1;
	if (a2 != b2)
		return a2 > b2 ? -1 : 1;
	return key_cmp(a, b);
}

static int node_cmp(const void *pa, const void *pb, void *arg)
{
	const struct report *r = arg;
	const struct node *a = &r->nodes[*(const uint32_t *)pa], *b = &r->nodes[*(const uint32_t *)pb];
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return key_cmp(&r->rows[a->row], &r->rows[b->row]);
}

static double pct(const struct report *r, uint64_t n)
{
	return 100.0 * (double)n / (double)r->total;
}

/* Row W's function name and module ("[unknown]": both that). */
static void split(const struct row *w, const char **name, int *nlen, const char **mod, int *mlen)
{
	const char *m = module_of(w->key, w->len);
	*name = w->key;
	*nlen = m ? (int)(m - 1 - w->key) : (int)w->len;
	*mod = m ? m : w->key;
	*mlen = m ? (int)(w->len - (size_t)(m - w->key)) : (int)w->len;
}

static int print_table(struct report *r, FILE *out)
{
	uint32_t *ix = malloc((r->n_rows ? r->n_rows : 1) * sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_rows; i++)
		ix[i] = (uint32_t)i;
	qsort_r(ix, r->n_rows, sizeof(*ix), row_cmp, r);
	/* The rows shown, and the module column as wide as they need. */
	size_t shown = 0;
	int width = 6;
	for (; shown < r->n_rows && (!r->o->limit || shown < r->o->limit); shown++) {
		const struct row *w = &r->rows[ix[shown]];
		if (pct(r, r->o->sort == REPORT_SORT_SELF ? w->self : w->children) < r->o->min_pct)
			break;
		const char *name, *mod;
		int nlen, mlen;
		split(w, &name, &nlen, &mod, &mlen);
		width = mlen > width ? mlen : width;
	}
	fprintf(out, "# %9s  %8s  %9s  ", "Children", "Self", r->o->unit ? "Self us" : "Samples");
	if (r->o->per_module)
		fprintf(out, "Module\n");
	else
		fprintf(out, "%-*s  Function\n", width, "Module");
	for (size_t i = 0; i < shown; i++) {
		const struct row *w = &r->rows[ix[i]];
		const char *name, *mod;
		int nlen, mlen;
		split(w, &name, &nlen, &mod, &mlen);
		fprintf(out, "  %8.2f%%  %7.2f%%  %9" PRIu64 "  ", pct(r, w->children), pct(r, w->self), w->self);
		if (r->o->per_module)
			fprintf(out, "%.*s\n", mlen, mod);
		else
			fprintf(out, "%-*.*s  %.*s\n", width, mlen, mod, nlen, name);
	}
	if (shown < r->n_rows && r->o->limit && shown == r->o->limit)
		fprintf(out, "# %zu more %s past --limit %zu\n", r->n_rows - shown,
			r->o->per_module ? "modules" : "functions", r->o->limit);
	else if (shown < r->n_rows)
		fprintf(out, "# %zu more %s under --min %g%%\n", r->n_rows - shown,
			r->o->per_module ? "modules" : "functions", r->o->min_pct);
	free(ix);
	return 0;
}

/* A tree level being printed: its nodes, hottest first, and the next one. */
struct level {
	uint32_t *ix;
	size_t k, i;
};

/* Node N's callees into L, hottest first.  @return 0 or -ENOMEM. */
static int callees(const struct report *r, uint32_t n, struct level *l)
{
	size_t k = 0;
	for (uint32_t c = r->nodes[n].first_child; c; c = r->nodes[c].next)
		k++;
	*l = (struct level){ .ix = malloc((k ? k : 1) * sizeof(*l->ix)), .k = k };
	if (!l->ix)
		return -ENOMEM;
	k = 0;
	for (uint32_t c = r->nodes[n].first_child; c; c = r->nodes[c].next)
		l->ix[k++] = c;
	qsort_r(l->ix, k, sizeof(*l->ix), node_cmp, (void *)r);
	return 0;
}

/* The tree, depth first without recursion (a stack may be 65,536 frames
 * deep). */
static int print_tree(struct report *r, FILE *out)
{
	struct level *lv = NULL;
	size_t cap = 0, d = 1;
	int rc = SU_GROW(lv, cap, 1) ? -ENOMEM : callees(r, 0, &lv[0]);
	if (rc) {
		free(lv);
		return rc;
	}
	while (d) {
		struct level *l = &lv[d - 1];
		const struct node *c = l->i < l->k ? &r->nodes[l->ix[l->i]] : NULL;
		if (!c || (r->o->limit && l->i >= r->o->limit) || pct(r, c->count) < r->o->min_pct) {
			free(l->ix);
			d--;
			continue;
		}
		uint32_t const n = l->ix[l->i++];
		const char *name, *mod;
		int nlen, mlen;
		split(&r->rows[c->row], &name, &nlen, &mod, &mlen);
		fprintf(out, "%*s%.2f%%  ", 2 * (int)(d - 1), "", pct(r, c->count));
		if (r->o->per_module || name == mod)
			fprintf(out, "%.*s\n", mlen, mod);
		else
			fprintf(out, "%.*s (%.*s)\n", nlen, name, mlen, mod);
		if (!r->nodes[n].first_child)
			continue;
		if (SU_GROW(lv, cap, d + 1) || callees(r, n, &lv[d])) {
			rc = -ENOMEM;
			break;
		}
		d++;
	}
	while (d)
		free(lv[--d].ix);
	free(lv);
	return rc;
}

int report_print(const struct folded_counts *c, const struct report_opts *o, FILE *out)
{
	struct report r = { .o = o };
	int rc = 0;
	if (o->tree && !SU_GROW(r.nodes, r.cap_nodes, 1))
		r.n_nodes = 1; /* the root */
	else if (o->tree)
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < c->n; i++)
		rc = add_stack(&r, c->tab[i].stack, c->tab[i].count, i);
	if (!rc) {
		fprintf(out, "# stackunwind report of %s: %" PRIu64 " %s\n", o->title, r.total,
			o->unit ? "us (off-CPU time: percentages of it)" : "samples");
		if (o->tree)
			fprintf(out, "# call tree, caller first: each line the share of all %s through that path,"
				" its callees indented below it\n", o->unit ? "time" : "samples");
		else
			fprintf(out, "# Children: %s whose stack holds it; Self: %s where it is the innermost frame\n",
				o->unit ? "time" : "samples", o->unit ? "time" : "samples");
		fprintf(out, "#\n");
		if (r.total)
			rc = o->tree ? print_tree(&r, out) : print_table(&r, out);
	}
	free(r.rows);
	su_hmap_free(&r.row_map);
	free(r.nodes);
	su_hmap_free(&r.node_map);
	return rc;
}
