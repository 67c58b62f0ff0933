/* A module's CFI rules kept between runs (issue 20): the fast unwinder's
 * answers (module address -> rule) with the rules and their expression
 * ops, so a second run over the same binaries walks without asking libdw
 * for rows.  Named by su_module_kept_path (build-id, the binary, its
 * debug file, the lookup options, this code's own build); used only when
 * it is ours and parses whole, every index checked: a damaged file adds
 * nothing. */
#include <stdlib.h>
#include <string.h>

#include "common/cache-file.h"
#include "common/hash.h"
#include "unwind/unwind-internal.h"

#define MAGIC "SCCFI001"
/* Bigger is not ours (a module's rows take a few MB at most). */
#define MAX_FILE (64u << 20)

struct file_head {
	char magic[8];
	uint64_t nent, nrules, nops, check;
};
struct file_ent {
	uint64_t addr;
	uint32_t rule, pad; /* rule: an index, or UW_CFI_FILE_NO_CFI */
};
/* What a rule is; the rest (masks, moved registers) is derived again. */
struct file_rule {
	uint8_t cfa_kind, cfa_reg, signal, pad;
	uint8_t kind[STACKCAP_NREGS];
	int64_t cfa_arg;
	int64_t arg[STACKCAP_NREGS];
};
struct file_op {
	uint8_t atom, pad[3];
	uint32_t offset;
	uint64_t number, number2;
};

int uw_cfi_file_path(struct su_module *m, char *path, size_t size)
{
	return su_module_kept_path(m, "cfi", MAGIC, 0, path, size);
}

/* An expression reference that names ops inside [0, NOPS). */
static int expr_ok(int64_t ref, uint64_t nops)
{
	uint64_t const first = UW_EXPR_FIRST(ref), n = UW_EXPR_COUNT(ref);
	return n >= 1 && n <= UW_EXPR_MAX && first <= nops && n <= nops - first;
}

static int rule_ok(const struct file_rule *r, uint64_t nops)
{
	if (r->signal > 1 || r->cfa_kind > UW_CFA_BAD ||
	    (r->cfa_kind == UW_CFA_REG && r->cfa_reg >= STACKCAP_NREGS) ||
	    (r->cfa_kind == UW_CFA_EXPR && !expr_ok(r->cfa_arg, nops)))
		return 0;
	for (unsigned k = 0; k < STACKCAP_NREGS; k++)
		if (r->kind[k] > UW_REG_EXPR ||
		    (r->kind[k] == UW_REG_IN_REG && (r->arg[k] < 0 || r->arg[k] >= STACKCAP_NREGS)) ||
		    (r->kind[k] == UW_REG_EXPR && !expr_ok(r->arg[k], nops)))
			return 0;
	return 1;
}

int uw_cfi_file_load(const char *path, struct uw_cfi_file *out)
{
	memset(out, 0, sizeof(*out));
	size_t size = 0;
	uint8_t *b = su_cache_file_read(path, sizeof(struct file_head), MAX_FILE, &size);
	if (!b)
		return -1;
	struct file_head h;
	memcpy(&h, b, sizeof(h));
	int ok = !memcmp(h.magic, MAGIC, 8) && h.nent <= size / sizeof(struct file_ent) &&
		 h.nrules <= size / sizeof(struct file_rule) && h.nops <= size / sizeof(struct file_op) &&
		 h.nrules < UW_CFI_FILE_NO_CFI &&
		 sizeof(h) + h.nent * sizeof(struct file_ent) + h.nrules * sizeof(struct file_rule) +
				 h.nops * sizeof(struct file_op) == size &&
		 su_fnv1a_words(b + sizeof(h), size - sizeof(h)) == h.check;
	const uint8_t *const ents = b + sizeof(h), *const rules = ents + h.nent * sizeof(struct file_ent),
			     *const ops = rules + h.nrules * sizeof(struct file_rule);
	if (ok) {
		out->addr = malloc((h.nent ? h.nent : 1) * sizeof(*out->addr));
		out->rule = malloc((h.nent ? h.nent : 1) * sizeof(*out->rule));
		out->rules = calloc(h.nrules ? h.nrules : 1, sizeof(*out->rules));
		out->ops = calloc(h.nops ? h.nops : 1, sizeof(*out->ops));
		ok = out->addr && out->rule && out->rules && out->ops;
	}
	for (uint64_t i = 0; ok && i < h.nent; i++) {
		struct file_ent e;
		memcpy(&e, ents + i * sizeof(e), sizeof(e));
		ok = e.rule < h.nrules || e.rule == UW_CFI_FILE_NO_CFI;
		out->addr[i] = e.addr;
		out->rule[i] = e.rule;
	}
	for (uint64_t i = 0; ok && i < h.nrules; i++) {
		struct file_rule r;
		memcpy(&r, rules + i * sizeof(r), sizeof(r));
		ok = rule_ok(&r, h.nops);
		struct uw_rule *o = &out->rules[i];
		o->cfa_kind = r.cfa_kind;
		o->cfa_reg = r.cfa_reg;
		o->signal = r.signal;
		o->cfa_arg = r.cfa_arg;
		memcpy(o->kind, r.kind, sizeof(o->kind));
		memcpy(o->arg, r.arg, sizeof(o->arg));
	}
	for (uint64_t i = 0; ok && i < h.nops; i++) {
		struct file_op p;
		memcpy(&p, ops + i * sizeof(p), sizeof(p));
		out->ops[i] = (struct uw_op){ .atom = p.atom, .offset = p.offset, .number = p.number,
					      .number2 = p.number2 };
	}
	free(b);
	if (!ok) {
		uw_cfi_file_free(out);
		return -1;
	}
	out->nent = (size_t)h.nent;
	out->nrules = (size_t)h.nrules;
	out->nops = (size_t)h.nops;
	return 0;
}

void uw_cfi_file_free(struct uw_cfi_file *f)
{
	free(f->addr);
	free(f->rule);
	free(f->rules);
	free(f->ops);
	memset(f, 0, sizeof(*f));
}

int uw_cfi_file_store(const char *path, const struct uw_cfi_file *f)
{
	size_t const size = sizeof(struct file_head) + f->nent * sizeof(struct file_ent) +
			    f->nrules * sizeof(struct file_rule) + f->nops * sizeof(struct file_op);
	if (size > MAX_FILE || f->nrules >= UW_CFI_FILE_NO_CFI)
		return -1;
	uint8_t *b = malloc(size);
	if (!b)
		return -1;
	uint8_t *p = b + sizeof(struct file_head);
	for (size_t i = 0; i < f->nent; i++, p += sizeof(struct file_ent)) {
		struct file_ent const e = { .addr = f->addr[i], .rule = f->rule[i] };
		memcpy(p, &e, sizeof(e));
	}
	for (size_t i = 0; i < f->nrules; i++, p += sizeof(struct file_rule)) {
		const struct uw_rule *o = &f->rules[i];
		struct file_rule r;
		memset(&r, 0, sizeof(r));
		r.cfa_kind = o->cfa_kind;
		r.cfa_reg = o->cfa_reg;
		r.signal = o->signal;
		r.cfa_arg = o->cfa_arg;
		memcpy(r.kind, o->kind, sizeof(r.kind));
		memcpy(r.arg, o->arg, sizeof(r.arg));
		memcpy(p, &r, sizeof(r));
	}
	for (size_t i = 0; i < f->nops; i++, p += sizeof(struct file_op)) {
		const struct uw_op *o = &f->ops[i];
		struct file_op op = { .atom = o->atom, .offset = o->offset, .number = o->number,
				      .number2 = o->number2 };
		memcpy(p, &op, sizeof(op));
	}
	struct file_head h = { .nent = f->nent, .nrules = f->nrules, .nops = f->nops };
	memcpy(h.magic, MAGIC, 8);
	h.check = su_fnv1a_words(b + sizeof(h), size - sizeof(h));
	memcpy(b, &h, sizeof(h));
	int const rc = su_cache_file_write(path, b, size);
	free(b);
	return rc;
}
