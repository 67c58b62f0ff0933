/* The per-module CFI rule cache of the fast unwinder: libdw finds and
 * executes the CFI once per (module, address); the row is translated into a
 * struct uw_rule and kept in hash tables owned by the module. */
#include <dwarf.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "unwind/unwind-internal.h"

/* ---- u64 -> u32 open-addressing map --------------------------------------- */

#define MAP_EMPTY UINT32_MAX
#define RULE_NO_CFI (UINT32_MAX - 1)

struct uw_map {
	uint64_t *keys;
	uint32_t *vals;    /* MAP_EMPTY marks a free slot */
	unsigned bits;     /* capacity 1 << bits */
	uint32_t used;
};

static inline uint32_t map_slot(uint64_t key, unsigned bits)
{
	return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

static uint32_t map_get(const struct uw_map *m, uint64_t key)
{
	if (!m->keys)
		return MAP_EMPTY;
	uint32_t const mask = (1u << m->bits) - 1;
	for (uint32_t i = map_slot(key, m->bits);; i = (i + 1) & mask) {
		if (m->vals[i] == MAP_EMPTY)
			return MAP_EMPTY;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

static void map_insert(uint64_t *keys, uint32_t *vals, unsigned bits, uint64_t key, uint32_t val)
{
	uint32_t const mask = (1u << bits) - 1;
	uint32_t i = map_slot(key, bits);
	while (vals[i] != MAP_EMPTY && keys[i] != key)
		i = (i + 1) & mask;
	keys[i] = key;
	vals[i] = val;
}

/* Insert or replace.  @return 0, or -ENOMEM (the map is unchanged). */
static int map_put(struct uw_map *m, uint64_t key, uint32_t val)
{
	if (!m->keys || (m->used + 1) * 2 > (1u << m->bits)) {
		unsigned const bits = m->keys ? m->bits + 1 : 8;
		if (bits > 30)
			return -ENOMEM;
		uint64_t *keys = malloc(sizeof(*keys) << bits);
		uint32_t *vals = malloc(sizeof(*vals) << bits);
		if (!keys || !vals) {
			free(keys);
			free(vals);
			return -ENOMEM;
		}
		for (size_t i = 0; i < ((size_t)1 << bits); i++)
			vals[i] = MAP_EMPTY;
		if (m->keys)
			for (size_t i = 0; i < ((size_t)1 << m->bits); i++)
				if (m->vals[i] != MAP_EMPTY)
					map_insert(keys, vals, bits, m->keys[i], m->vals[i]);
		free(m->keys);
		free(m->vals);
		m->keys = keys;
		m->vals = vals;
		m->bits = bits;
	}
	if (map_get(m, key) == MAP_EMPTY)
		m->used++;
	map_insert(m->keys, m->vals, m->bits, key, val);
	return 0;
}

static void map_free(struct uw_map *m)
{
	free(m->keys);
	free(m->vals);
}

/* ---- the cache ------------------------------------------------------------ */

struct uw_cache {
	struct uw_map by_addr;     /* looked-up address -> rule index or RULE_NO_CFI */
	struct uw_map by_hash;     /* rule contents hash -> rule index (sharing) */
	struct uw_rule *rules;
	uint32_t nrules, rules_cap;
	struct uw_op *ops;         /* expression ops of all rules */
	uint32_t nops, ops_cap;
	/* Bumped when RULES or OPS move: pointers into them kept elsewhere
	 * (an unwinder's memo) are stale.  Every unwinder sharing the module
	 * sees it, not only the one whose lookup moved them. */
	uint32_t moves;
	int cfi_tried[2];          /* 0: .eh_frame, 1: .debug_frame */
	Dwarf_CFI *cfi[2];
	Dwarf_Addr cfi_bias[2];
	/* The module's kept file (cfi-file.c), or NULL; the answers it
	 * gave: this run's others are written back at the end. */
	char *kept_path;
	uint32_t kept_answers;
	int top_tried;             /* go_top read from the symbol table */
	uint64_t go_top[8][2];     /* [start, end) of Go's outermost functions */
	uint8_t go_top_kind[8];    /* UW_GO_TOP, UW_GO_SPWRITE */
	unsigned n_go_top;
};

static void kept_store(struct uw_cache *c);

void uw_cache_save(void *cache)
{
	struct uw_cache *c = cache;
	if (c && c->kept_path && c->by_addr.used > c->kept_answers) {
		kept_store(c);
		c->kept_answers = c->by_addr.used;
	}
}

void uw_cache_free(void *cache)
{
	struct uw_cache *c = cache;
	if (!c)
		return;
	uw_cache_save(c);
	free(c->kept_path);
	map_free(&c->by_addr);
	map_free(&c->by_hash);
	free(c->rules);
	free(c->ops);
	free(c);
}

/* Append NOPS ops; DW_OP_addr made a module address.  @return the
 * reference, or -1 (too long, no memory). */
static int ops_reserve(struct uw_cache *c, size_t nops)
{
	if (c->nops + nops > c->ops_cap) {
		uint32_t cap = c->ops_cap ? c->ops_cap : 64;
		while (cap < c->nops + nops)
			cap *= 2;
		struct uw_op *n = realloc(c->ops, sizeof(*n) * cap);
		if (!n)
			return -1;
		c->ops = n;
		c->ops_cap = cap;
		c->moves++;
	}
	return 0;
}

static int64_t add_expr(struct uw_cache *c, const Dwarf_Op *ops, size_t nops, Dwarf_Addr cfi_bias)
{
	if (nops == 0 || nops > UW_EXPR_MAX || ops_reserve(c, nops) != 0)
		return -1;
	uint32_t const first = c->nops;
	for (size_t i = 0; i < nops; i++) {
		struct uw_op *o = &c->ops[c->nops++];
		o->atom = ops[i].atom;
		o->offset = (uint32_t)ops[i].offset;
		o->number = ops[i].number;
		o->number2 = ops[i].number2;
		if (o->atom == DW_OP_addr)
			o->number += cfi_bias;
	}
	return UW_EXPR_REF(first, nops);
}

/* Translate one register's rule as dwarf_frame_register gives it. */
static void translate_reg(struct uw_cache *c, Dwarf_Frame *fr, unsigned r, Dwarf_Addr cfi_bias,
			  struct uw_rule *out)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	out->kind[r] = UW_REG_UNDEF;
	out->arg[r] = 0;
	if (dwarf_frame_register(fr, (int)r, mem, &ops, &nops) != 0)
		return;
	if (nops == 0) {
		if (ops == NULL)
			out->kind[r] = UW_REG_SAME;
		/* libdw's x86-64 defaults leave rbx undefined where the CFI does
		 * not mention it; the ABI makes it callee-saved. */
		else if (ops == mem && r == STACKCAP_REG_RBX)
			out->kind[r] = UW_REG_SAME;
		return;
	}
	if (ops[0].atom == DW_OP_call_frame_cfa) {
		/* offset(N) / val_offset(N): CFA [plus_uconst N] [stack_value] */
		size_t i = 1;
		uint64_t off = 0;
		if (i < nops && ops[i].atom == DW_OP_plus_uconst)
			off = ops[i++].number;
		int val = 0;
		if (i < nops && ops[i].atom == DW_OP_stack_value) {
			val = 1;
			i++;
		}
		if (i == nops) {
			out->kind[r] = val ? UW_REG_VAL_CFA : UW_REG_AT_CFA;
			out->arg[r] = (int64_t)off;
			return;
		}
	} else if (nops == 1 && ops[0].atom == DW_OP_regx) {
		if (ops[0].number < STACKCAP_NREGS) {
			out->kind[r] = UW_REG_IN_REG;
			out->arg[r] = (int64_t)ops[0].number;
		}
		return;
	}
	int64_t const ref = add_expr(c, ops, nops, cfi_bias);
	if (ref >= 0) {
		out->kind[r] = UW_REG_EXPR;
		out->arg[r] = ref;
	}
}

static void derive(struct uw_rule *r)
{
	r->same_mask = r->undef_mask = 0;
	r->nmoved = 0;
	r->uses_mask = r->cfa_kind == UW_CFA_REG ? 1u << r->cfa_reg : UW_ALL_REGS;
	for (unsigned reg = 0; reg < STACKCAP_NREGS; reg++) {
		if (r->kind[reg] == UW_REG_SAME)
			r->same_mask |= 1u << reg;
		else if (r->kind[reg] == UW_REG_UNDEF)
			r->undef_mask |= 1u << reg;
		else
			r->moved[r->nmoved++] = (uint8_t)reg;
		if (r->kind[reg] == UW_REG_IN_REG || r->kind[reg] == UW_REG_EXPR)
			r->uses_mask = UW_ALL_REGS;
	}
}

static void translate(struct uw_cache *c, Dwarf_Frame *fr, Dwarf_Addr cfi_bias, struct uw_rule *out)
{
	bool signalp = false;
	int const ra = dwarf_frame_info(fr, NULL, NULL, &signalp);
	out->signal = signalp;
	out->cfa_kind = UW_CFA_BAD;
	out->cfa_reg = 0;
	out->cfa_arg = 0;
	for (unsigned r = 0; r < STACKCAP_NREGS; r++) {
		out->kind[r] = UW_REG_UNDEF;
		out->arg[r] = 0;
	}
	if (ra != STACKCAP_REG_RIP) {
		derive(out);
		return; /* not x86-64 CFI: CFA_BAD ends the unwind */
	}

	Dwarf_Op *ops = NULL;
	size_t nops = 0;
	if (dwarf_frame_cfa(fr, &ops, &nops) == 0 && nops > 0) {
		if (nops == 1 && ops[0].atom == DW_OP_bregx) {
			if (ops[0].number < STACKCAP_NREGS) {
				out->cfa_kind = UW_CFA_REG;
				out->cfa_reg = (uint8_t)ops[0].number;
				out->cfa_arg = (int64_t)ops[0].number2;
			}
		} else {
			int64_t const ref = add_expr(c, ops, nops, cfi_bias);
			if (ref >= 0) {
				out->cfa_kind = UW_CFA_EXPR;
				out->cfa_arg = ref;
			}
		}
	}
	for (unsigned r = 0; r < STACKCAP_NREGS; r++)
		translate_reg(c, fr, r, cfi_bias, out);
	derive(out);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static int is_expr(const struct uw_rule *r, int reg)
{
	return reg < 0 ? r->cfa_kind == UW_CFA_EXPR : r->kind[reg] == UW_REG_EXPR;
}

/* Hash of everything R means, expression ops included (not their place). */
static uint64_t rule_hash(const struct uw_cache *c, const struct uw_rule *r)
{
	uint64_t h = mix(0, (uint64_t)r->cfa_kind << 16 | (uint64_t)r->cfa_reg << 8 | r->signal);
	for (int reg = -1; reg < STACKCAP_NREGS; reg++) {
		int64_t const arg = reg < 0 ? r->cfa_arg : r->arg[reg];
		if (reg >= 0)
			h = mix(h, r->kind[reg]);
		if (!is_expr(r, reg)) {
			h = mix(h, (uint64_t)arg);
			continue;
		}
		const struct uw_op *o = &c->ops[UW_EXPR_FIRST(arg)];
		for (uint32_t i = 0; i < UW_EXPR_COUNT(arg); i++)
			h = mix(mix(mix(mix(h, o[i].atom), o[i].offset), o[i].number), o[i].number2);
		h = mix(h, UW_EXPR_COUNT(arg));
	}
	return h;
}

static int expr_equal(const struct uw_cache *c, int64_t a, int64_t b)
{
	if (UW_EXPR_COUNT(a) != UW_EXPR_COUNT(b))
		return 0;
	const struct uw_op *x = &c->ops[UW_EXPR_FIRST(a)], *y = &c->ops[UW_EXPR_FIRST(b)];
	for (uint32_t i = 0; i < UW_EXPR_COUNT(a); i++)
		if (x[i].atom != y[i].atom || x[i].offset != y[i].offset ||
		    x[i].number != y[i].number || x[i].number2 != y[i].number2)
			return 0;
	return 1;
}

static int rule_equal(const struct uw_cache *c, const struct uw_rule *a, const struct uw_rule *b)
{
	if (a->cfa_kind != b->cfa_kind || a->cfa_reg != b->cfa_reg || a->signal != b->signal)
		return 0;
	for (int reg = -1; reg < STACKCAP_NREGS; reg++) {
		if (reg >= 0 && a->kind[reg] != b->kind[reg])
			return 0;
		int64_t const x = reg < 0 ? a->cfa_arg : a->arg[reg];
		int64_t const y = reg < 0 ? b->cfa_arg : b->arg[reg];
		if (is_expr(a, reg) ? !expr_equal(c, x, y) : x != y)
			return 0;
	}
	return 1;
}

/* Room for one more rule.  @return 0, -1. */
static int rules_reserve(struct uw_cache *c)
{
	if (c->nrules < c->rules_cap)
		return 0;
	uint32_t const cap = c->rules_cap ? c->rules_cap * 2 : 64;
	struct uw_rule *n = cap < RULE_NO_CFI ? realloc(c->rules, sizeof(*n) * cap) : NULL;
	if (!n)
		return -1;
	c->rules = n;
	c->rules_cap = cap;
	c->moves++;
	return 0;
}

/* The rule just made at c->rules[c->nrules] (its expressions from op
 * NOPS on): kept, or the equal one kept before (the copy dropped).
 * @return its index, or MAP_EMPTY (no memory). */
static uint32_t keep_rule(struct uw_cache *c, uint32_t nops)
{
	struct uw_rule *r = &c->rules[c->nrules];
	uint64_t const h = rule_hash(c, r);
	uint32_t const idx = map_get(&c->by_hash, h);
	if (idx != MAP_EMPTY && rule_equal(c, &c->rules[idx], r)) {
		c->nops = nops; /* drop the copy's expressions */
		return idx;
	}
	if (idx == MAP_EMPTY && map_put(&c->by_hash, h, c->nrules) != 0)
		return MAP_EMPTY;
	return c->nrules++;
}

/* Find and translate the row for ADDR: eh_frame first, then debug_frame,
 * as elfutils does.  Rows are shared by content: a row's start address
 * cannot name it (after DW_CFA_restore_state libdw reports the start of
 * the remembered row).  @return a rule index, RULE_NO_CFI, or MAP_EMPTY
 * (no memory). */
static uint32_t fill(struct uw_cache *c, struct su_module *mod, uint64_t addr)
{
	for (int k = 0; k < 2; k++) {
		if (!c->cfi_tried[k]) {
			/* .debug_frame only when .eh_frame fails: it may mean
			 * looking for separate debug info. */
			c->cfi_tried[k] = 1;
			c->cfi[k] = k == 0 ? dwfl_module_eh_cfi(mod->mod, &c->cfi_bias[0])
					   : dwfl_module_dwarf_cfi(mod->mod, &c->cfi_bias[1]);
		}
		if (!c->cfi[k])
			continue;
		Dwarf_Frame *fr = NULL;
		if (dwarf_cfi_addrframe(c->cfi[k], addr - c->cfi_bias[k], &fr) != 0)
			continue;
		if (rules_reserve(c) != 0) {
			free(fr);
			return MAP_EMPTY;
		}
		uint32_t const nops = c->nops;
		translate(c, fr, c->cfi_bias[k], &c->rules[c->nrules]);
		free(fr);
		return keep_rule(c, nops);
	}
	return RULE_NO_CFI;
}

/* ---- kept between runs ---------------------------------------------------- */

/* Rule I of file F as one of C's (its expressions copied), kept once:
 * REMAP[I] remembers.  @return its index in C, or MAP_EMPTY. */
static uint32_t merge_rule(struct uw_cache *c, const struct uw_cfi_file *f, uint32_t i, uint32_t *remap)
{
	if (remap[i] != MAP_EMPTY)
		return remap[i];
	if (rules_reserve(c) != 0)
		return MAP_EMPTY;
	uint32_t const nops = c->nops;
	struct uw_rule *r = &c->rules[c->nrules];
	*r = f->rules[i];
	for (int reg = -1; reg < STACKCAP_NREGS; reg++) {
		int64_t *const arg = reg < 0 ? &r->cfa_arg : &r->arg[reg];
		if (!is_expr(r, reg))
			continue;
		uint32_t const first = UW_EXPR_FIRST(*arg), n = UW_EXPR_COUNT(*arg);
		if (ops_reserve(c, n) != 0) {
			c->nops = nops;
			return MAP_EMPTY;
		}
		memcpy(&c->ops[c->nops], &f->ops[first], n * sizeof(*c->ops));
		*arg = UW_EXPR_REF(c->nops, n);
		c->nops += n;
	}
	derive(r);
	return remap[i] = keep_rule(c, nops);
}

/* The answers of C's file that C lacks, taken into C: at its start, and
 * at its end what another run or thread wrote meanwhile (so workers of
 * -j N, each with its own modules, add up). */
static void kept_merge(struct uw_cache *c)
{
	struct uw_cfi_file f;
	if (uw_cfi_file_load(c->kept_path, &f) != 0)
		return;
	uint32_t *remap = malloc((f.nrules + 1) * sizeof(*remap));
	for (size_t i = 0; remap && i < f.nrules; i++)
		remap[i] = MAP_EMPTY;
	for (size_t i = 0; remap && i < f.nent; i++) {
		if (map_get(&c->by_addr, f.addr[i]) != MAP_EMPTY)
			continue;
		uint32_t const v = f.rule[i] == UW_CFI_FILE_NO_CFI ? RULE_NO_CFI : merge_rule(c, &f, f.rule[i], remap);
		if (v == MAP_EMPTY || map_put(&c->by_addr, f.addr[i], v) != 0)
			break;
	}
	free(remap);
	uw_cfi_file_free(&f);
}

/* The kept file's answers, with their rules and ops, into the new cache C
 * (nothing on failure: the file is written again at the end). */
static void kept_load(struct uw_cache *c, struct su_module *mod)
{
	char path[PATH_MAX];
	if (uw_cfi_file_path(mod, path, sizeof(path)) != 0 || !(c->kept_path = strdup(path)))
		return;
	kept_merge(c);
	c->kept_answers = c->by_addr.used;
}

/* Every answer of C, with its rules and ops, to its kept file. */
static void kept_store(struct uw_cache *c)
{
	kept_merge(c);
	struct uw_cfi_file f = { .rules = c->rules, .nrules = c->nrules, .ops = c->ops, .nops = c->nops };
	f.addr = malloc((c->by_addr.used + 1) * sizeof(*f.addr));
	f.rule = malloc((c->by_addr.used + 1) * sizeof(*f.rule));
	for (size_t i = 0; f.addr && f.rule && c->by_addr.keys && i < ((size_t)1 << c->by_addr.bits); i++) {
		uint32_t const v = c->by_addr.vals[i];
		if (v == MAP_EMPTY)
			continue;
		f.addr[f.nent] = c->by_addr.keys[i];
		f.rule[f.nent++] = v == RULE_NO_CFI ? UW_CFI_FILE_NO_CFI : v;
	}
	if (f.addr && f.rule)
		(void)uw_cfi_file_store(c->kept_path, &f);
	free(f.addr);
	free(f.rule);
}

static struct uw_cache *cache_of(struct su_module *mod)
{
	if (!mod->unwind_cache && (mod->unwind_cache = calloc(1, sizeof(struct uw_cache))))
		kept_load(mod->unwind_cache, mod);
	return mod->unwind_cache;
}

enum uw_lookup uw_rule_lookup(struct su_module *mod, uint64_t addr, const struct uw_rule **rule,
			      const struct uw_op **ops, const uint32_t **moves, uint64_t *misses)
{
	struct uw_cache *c = cache_of(mod);
	if (!c)
		return UW_LOOKUP_ERROR;
	uint32_t idx = map_get(&c->by_addr, addr);
	if (idx == MAP_EMPTY) {
		(*misses)++;
		idx = fill(c, mod, addr);
		if (idx == MAP_EMPTY || map_put(&c->by_addr, addr, idx) != 0)
			return UW_LOOKUP_ERROR;
	}
	if (idx == RULE_NO_CFI)
		return UW_LOOKUP_NO_CFI;
	*moves = &c->moves;
	*rule = &c->rules[idx];
	*ops = c->ops;
	return UW_LOOKUP_RULE;
}

/* Go marks the functions where its own traceback stops TOPFRAME (UW_GO_TOP): a
 * goroutine's runtime.goexit (the return address its stack starts with),
 * a thread's runtime.mstart, the process's runtime.rt0_go.  Their CFI
 * says nothing of it: the unwind reads on above the stack's top. */
/* And (UW_GO_SPWRITE) at a function that writes SP, unless it is the
 * innermost frame: these switch to the thread's system stack (g0) and
 * call there, and what is above them on it is no frame of theirs (the
 * goroutine's frames are on its own stack, which the copy does not hold;
 * a full copy reads 0 there, a filtered one a dropped word). */
static const struct {
	const char *name;
	uint8_t kind;
} go_top_names[] = {
	{ "runtime.goexit", UW_GO_TOP },          { "runtime.mstart", UW_GO_TOP },
	{ "runtime.rt0_go", UW_GO_TOP },          { "runtime.systemstack", UW_GO_SPWRITE },
	{ "runtime.mcall", UW_GO_SPWRITE },       { "runtime.morestack", UW_GO_SPWRITE },
	{ "runtime.asmcgocall", UW_GO_SPWRITE },
};

/* Does ELF hold Go code: a section only Go's linker writes (the pc table
 * its runtime walks stacks with, the build id or build info notes)?  The
 * section headers are a few dozen; the symbol table of a big binary that
 * is not Go (python3, libc) was most of a small perf.data's second run. */
static int go_elf(Elf *elf)
{
	static const char *const names[] = { ".gopclntab", ".data.rel.ro.gopclntab", ".go.buildinfo",
					     ".note.go.buildid" };
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 1; /* cannot tell: read the symbols */
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		for (size_t k = 0; name && k < sizeof(names) / sizeof(names[0]); k++)
			if (strcmp(name, names[k]) == 0)
				return 1;
	}
	return 0;
}

static void go_top_read(struct uw_cache *c, struct su_module *mod)
{
	c->top_tried = 1;
	GElf_Addr bias;
	if (!go_elf(dwfl_module_getelf(mod->mod, &bias)))
		return;
	int const nsyms = dwfl_module_getsymtab(mod->mod);
	for (int i = 0; i < nsyms && c->n_go_top < sizeof(c->go_top) / sizeof(c->go_top[0]); i++) {
		GElf_Sym sym;
		GElf_Addr value = 0;
		const char *name = dwfl_module_getsym_info(mod->mod, i, &sym, &value, NULL, NULL, NULL);
		if (!name || strncmp(name, "runtime.", 8) != 0 || GELF_ST_TYPE(sym.st_info) != STT_FUNC)
			continue;
		for (size_t k = 0; k < sizeof(go_top_names) / sizeof(go_top_names[0]); k++) {
			const char *const want = go_top_names[k].name;
			size_t const len = strlen(want);
			/* Go 1.17 on names the assembly ones "runtime.goexit.abi0". */
			if (strncmp(name, want, len) == 0 && (name[len] == 0 || strcmp(name + len, ".abi0") == 0)) {
				c->go_top[c->n_go_top][0] = value;
				c->go_top[c->n_go_top][1] = value + (sym.st_size ? sym.st_size : 1);
				c->go_top_kind[c->n_go_top] = go_top_names[k].kind;
				c->n_go_top++;
				break;
			}
		}
	}
}

int uw_go_topframe(struct su_module *mod, uint64_t addr)
{
	struct uw_cache *c = mod && mod->mod ? cache_of(mod) : NULL;
	if (!c)
		return 0;
	if (!c->top_tried)
		go_top_read(c, mod);
	for (unsigned i = 0; i < c->n_go_top; i++)
		if (addr >= c->go_top[i][0] && addr < c->go_top[i][1])
			return c->go_top_kind[i];
	return 0;
}
