/* Symbolizing with libdw: symbol table for the function, DWARF scopes for
 * the inline chain, the line table for file:line:column. */
#include <dwarf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gelf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <libiberty/demangle.h>

#include "common/grow.h"
#include "common/hash.h"
#include "symbolize/sort.h"
#include "symbolize/addr-cache.h"
#include "symbolize/escape.h"
#include "symbolize/symbolize.h"
#include "symbolize/symtab.h"

/* Longest inline chain kept for one address; deeper ones are cut. */
#define MAX_CHAIN 64
/* Deepest nesting of code DIEs (blocks, inlined subroutines) followed. */
#define MAX_SCOPES 256

/* ---- interned strings ---------------------------------------------------- */

struct strpool {
	char **slots;
	size_t nslots, count;
};

static int pool_grow(struct strpool *p)
{
	size_t n = p->nslots ? 2 * p->nslots : 256;
	char **s = calloc(n, sizeof *s);
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < p->nslots; i++) {
		if (!p->slots[i])
			continue;
		size_t j = su_fnv1a_str(p->slots[i]) & (n - 1);
		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = p->slots[i];
	}
	free(p->slots);
	p->slots = s;
	p->nslots = n;
	return 0;
}

/* The pool's copy of S (NULL stays NULL; NULL too when out of memory). */
static const char *intern(struct strpool *p, const char *s)
{
	if (!s)
		return NULL;
	if (2 * (p->count + 1) > p->nslots && pool_grow(p) != 0)
		return NULL;
	size_t j = su_fnv1a_str(s) & (p->nslots - 1);
	while (p->slots[j]) {
		if (strcmp(p->slots[j], s) == 0)
			return p->slots[j];
		j = (j + 1) & (p->nslots - 1);
	}
	char *copy = strdup(s);
	if (!copy)
		return NULL;
	p->slots[j] = copy;
	p->count++;
	return copy;
}

static void pool_free(struct strpool *p)
{
	for (size_t i = 0; i < p->nslots; i++)
		free(p->slots[i]);
	free(p->slots);
}

/* ---- the per-module cache ------------------------------------------------ */

struct slot {
	uint64_t addr;
	uint32_t first;            /* index in frames */
	uint16_t n;                /* frames of this address (0: nothing known) */
	uint8_t used;
	uint8_t clean;             /* no string of its frames needs escaping */
};

/* A range of code and the compilation unit it belongs to. */
struct cu_range {
	uint64_t lo, hi;           /* [lo, hi), DWARF addresses */
	Dwarf_Off cu;              /* the CU DIE's offset */
};

/* A PLT stub and the function it jumps to. */
struct plt_stub {
	uint64_t lo;               /* ELF address */
	uint32_t size;
	const char *name;          /* "func@plt", interned */
};

/* A code DIE a CU's walk reaches without passing through another code
 * DIE (a subprogram, also one nested in namespaces or classes), one entry
 * per pc range: code_path's first step, looked up rather than walked. */
struct code_top {
	uint64_t lo, hi;           /* [lo, hi), DWARF addresses */
	uint32_t order;            /* the DIE's place in the walk: the first wins */
	int depth;                 /* code_path's depth at the DIE */
	Dwarf_Die die;
};

/* The code_tops of one CU, sorted by lo; maxhi[i]: the largest hi of
 * tops[0..i]. */
struct cu_index {
	const void *cu;            /* the CU DIE's data (its identity) */
	struct code_top *tops;
	uint64_t *maxhi;
	size_t ntops;
	int complete;              /* 0: out of memory, walk instead */
};

/* dwfl_module_addrinfo's answers by cell (each found in the module's
 * sorted symbol table, else by libdwfl).  Its search compares an address
 * only with symbol values, value + size, section bounds (same_section)
 * and, to be safe, the module's bounds: between two of those points
 * (each point a cell of its own, each open gap another) it names the same
 * symbol, at the same value.  So one search per cell, not per address. */
struct symcells {
	uint64_t *points;          /* sorted, distinct */
	size_t npoints;
	uint32_t *cell;            /* 2 * npoints + 1 cells: 0 unknown, else
	                            * 1 + index in ans */
	struct {
		const char *name;  /* NULL: no symbol */
		uint64_t value;    /* the address the offset is from */
	} *ans;
	size_t nans, capans;
	int state;                 /* 0 not built, 1 built, -1 not usable */
	unsigned direct;           /* searches before building */
	struct su_symtab *symtab;  /* NULL: every cell asks libdwfl */
};

/* Searches a module makes before its cells are worth building (the
 * building costs a few searches: a small trace never pays it). */
#define CELLS_AFTER 4

struct symcache {
	struct symcells cells;
	struct cu_index *cuidx;    /* every CU a lookup went to, unordered */
	size_t ncuidx, capcuidx;
	size_t lastcu;             /* the one used last */
	struct plt_stub *plt;      /* by lo; built at the first address without a name */
	size_t nplt;
	int plt_built;
	struct cu_range *cus;      /* by lo; built when .debug_aranges fail */
	size_t ncus;
	int cus_built;
	struct slot *slots;
	size_t nslots, count;
	struct su_symframe *frames;
	size_t nframes, capframes;
	struct strpool strings;
	unsigned flags;            /* the FLAGS of the first call: the answers kept */
	char *disk_path;           /* where the answers are kept between runs, or NULL */
	size_t loaded;             /* answers read from there */
};

static int frames_clean(const struct su_symframe *frames, size_t n);

static void store_kept(struct symcache *c);

void su_symbolize_cache_save(void *sym_cache)
{
	if (sym_cache)
		store_kept(sym_cache);
}

void su_symbolize_cache_free(void *sym_cache)
{
	struct symcache *c = sym_cache;
	if (!c)
		return;
	store_kept(c);
	free(c->disk_path);
	free(c->cells.points);
	free(c->cells.cell);
	free(c->cells.ans);
	su_symtab_free(c->cells.symtab);
	for (size_t i = 0; i < c->ncuidx; i++) {
		free(c->cuidx[i].tops);
		free(c->cuidx[i].maxhi);
	}
	free(c->cuidx);
	free(c->plt);
	free(c->cus);
	free(c->slots);
	free(c->frames);
	pool_free(&c->strings);
	free(c);
}

static uint64_t hash_addr(uint64_t a)
{
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdu;
	a ^= a >> 33;
	return a;
}

static struct slot *slot_find(struct symcache *c, uint64_t addr)
{
	if (!c->nslots)
		return NULL;
	size_t j = hash_addr(addr) & (c->nslots - 1);
	while (c->slots[j].used) {
		if (c->slots[j].addr == addr)
			return &c->slots[j];
		j = (j + 1) & (c->nslots - 1);
	}
	return NULL;
}

static int slot_insert(struct symcache *c, const struct slot *s)
{
	if (2 * (c->count + 1) > c->nslots) {
		size_t n = c->nslots ? 2 * c->nslots : 1024;
		struct slot *t = calloc(n, sizeof *t);
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < c->nslots; i++) {
			if (!c->slots[i].used)
				continue;
			size_t j = hash_addr(c->slots[i].addr) & (n - 1);
			while (t[j].used)
				j = (j + 1) & (n - 1);
			t[j] = c->slots[i];
		}
		free(c->slots);
		c->slots = t;
		c->nslots = n;
	}
	size_t j = hash_addr(s->addr) & (c->nslots - 1);
	while (c->slots[j].used)
		j = (j + 1) & (c->nslots - 1);
	c->slots[j] = *s;
	c->slots[j].used = 1;
	c->count++;
	return 0;
}

static int frames_reserve(struct symcache *c, size_t more)
{
	return SU_GROW(c->frames, c->capframes, c->nframes + more);
}

/* ---- answers kept between runs (addr-cache.h) ---------------------------- */

/* One answer read from the kept file into C, unless C has one. */
static int add_kept(void *ctx, const struct su_addrcache_entry *e)
{
	struct symcache *c = ctx;
	if (slot_find(c, e->addr))
		return 0;
	if (frames_reserve(c, e->n) != 0)
		return -1;
	struct su_symframe *const f = c->frames + c->nframes;
	for (size_t k = 0; k < e->n; k++) {
		f[k] = e->frames[k];
		f[k].function = intern(&c->strings, e->frames[k].function);
		f[k].file = intern(&c->strings, e->frames[k].file);
		f[k].decl_file = intern(&c->strings, e->frames[k].decl_file);
		if ((e->frames[k].function && !f[k].function) || (e->frames[k].file && !f[k].file) ||
		    (e->frames[k].decl_file && !f[k].decl_file))
			return -1;
	}
	struct slot const s = { .addr = e->addr, .first = (uint32_t)c->nframes, .n = (uint16_t)e->n,
				.clean = (uint8_t)frames_clean(f, e->n) };
	if (slot_insert(c, &s) != 0)
		return -1;
	c->nframes += e->n;
	return 0;
}

/* The answers of C, in slot order, for su_addrcache_store. */
struct kept_list {
	struct symcache *c;
	uint32_t *at;              /* slot indexes */
};

static void get_kept(void *ctx, size_t i, struct su_addrcache_entry *e)
{
	const struct kept_list *k = ctx;
	const struct slot *s = &k->c->slots[k->at[i]];
	*e = (struct su_addrcache_entry){ .addr = s->addr, .n = s->n, .frames = k->c->frames + s->first };
}

/* C's answers written to its file when it made new ones, merged with
 * those another run (or thread) wrote there meanwhile. */
static void store_kept(struct symcache *c)
{
	if (!c->disk_path || c->count <= c->loaded)
		return;
	(void)su_addrcache_load(c->disk_path, add_kept, c);
	struct kept_list k = { .c = c, .at = malloc(c->count * sizeof(*k.at)) };
	if (!k.at)
		return;
	size_t n = 0;
	for (size_t i = 0; i < c->nslots; i++)
		if (c->slots[i].used)
			k.at[n++] = (uint32_t)i;
	(void)su_addrcache_store(c->disk_path, n, get_kept, &k);
	free(k.at);
}

/* ---- names --------------------------------------------------------------- */

char *su_demangle(const char *name)
{
	/* _R...: Rust's v0 mangling; _ZN...17h<16 hex digits>E (with a
	 * ".llvm.N" suffix sometimes): Rust's legacy one, which is Itanium
	 * C++ syntax carrying a hash and $-escapes ($LT$, $u7b$...).
	 * libiberty's rust_demangle says which is Rust and drops the hash,
	 * as perf and addr2line show them; the rest, C++ names (also
	 * "_Z...  .cold" clones), go to libiberty's C++ demangler with the
	 * options libstdc++'s __cxa_demangle passes it (the same code: not
	 * linking libstdc++ saves every run loading it).  Nothing else is
	 * handed to a demangler, so "_Zfoo" in C stays as it is if bad. */
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	char *rust = rust_demangle(name, 0);
	if (rust || name[1] != 'Z')
		return rust;
	return cplus_demangle_v3(name, DMGL_PARAMS | DMGL_TYPES);
}

/* NAME demangled when it is a C++ or Rust name, interned. */
static const char *intern_name(struct symcache *c, const char *name)
{
	char *d = su_demangle(name);
	const char *s = intern(&c->strings, d ? d : name);
	free(d);
	return s;
}

/* C++ only: NAME prefixed by the namespaces and classes around DIE's
 * declaration (what a linkage name would have said), malloc'ed. */
static char *qualified(Dwarf_Die *die, const char *name)
{
	Dwarf_Die cu, decl = *die, next;
	Dwarf_Attribute attr;
	if (!dwarf_diecu(die, &cu, NULL, NULL))
		return NULL;
	int lang = dwarf_srclang(&cu);
	if (lang != DW_LANG_C_plus_plus && lang != DW_LANG_C_plus_plus_03 &&
	    lang != DW_LANG_C_plus_plus_11 && lang != DW_LANG_C_plus_plus_14)
		return NULL;
	/* The declaration: through abstract_origin, then specification. */
	for (int hops = 0; hops < 8; hops++) {
		if ((dwarf_attr(&decl, DW_AT_abstract_origin, &attr) ||
		     dwarf_attr(&decl, DW_AT_specification, &attr)) &&
		    dwarf_formref_die(&attr, &next))
			decl = next;
		else
			break;
	}
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes_die(&decl, &scopes);
	char *out = strdup(name);
	for (int i = 1; i < n && out; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_namespace && tag != DW_TAG_class_type &&
		    tag != DW_TAG_structure_type && tag != DW_TAG_union_type)
			continue;
		const char *scope = dwarf_diename(&scopes[i]);
		char *q = NULL;
		if (asprintf(&q, "%s::%s", scope ? scope : "(anonymous namespace)", out) < 0)
			q = NULL;
		free(out);
		out = q;
	}
	free(scopes);
	return out;
}

/* The name of a subprogram or inlined subroutine DIE: the linkage name
 * when there is one (qualified, with parameter types once demangled), else
 * DW_AT_name (C++: qualified by its namespaces and classes); both looked
 * up through abstract_origin/specification. */
static const char *die_name(struct symcache *c, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (name)
		return intern_name(c, name);
	name = dwarf_diename(die);
	if (!name)
		return NULL;
	char *q = qualified(die, name);
	const char *s = intern(&c->strings, q ? q : name);
	free(q);
	return s;
}

/* File name NAME of compilation unit CU, interned: a relative one (a
 * program compiled as `gcc ../src/x.c`) joined to the unit's
 * DW_AT_comp_dir, as addr2line prints it, so that it names one file
 * wherever the trace is read. */
static const char *intern_file(struct symcache *c, Dwarf_Die *cu, const char *name)
{
	Dwarf_Attribute attr;
	const char *const dir = name && name[0] != '/' && cu ?
		dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)) : NULL;
	char *joined = NULL;
	if (dir && dir[0] == '/' && asprintf(&joined, "%s/%s", dir, name) < 0)
		joined = NULL;
	const char *const s = intern(&c->strings, joined ? joined : name);
	free(joined);
	return s;
}

/* The call site of inlined subroutine DIE of unit CU: file (index into
 * FILES), line, column. */
static void call_site(struct symcache *c, Dwarf_Die *cu, Dwarf_Die *die, Dwarf_Files *files,
		      struct su_symframe *f)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;
	f->file = NULL;
	f->line = 0;
	f->column = 0;
	if (files && dwarf_attr(die, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &v) == 0)
		f->file = intern_file(c, cu, dwarf_filesrc(files, (size_t)v, NULL, NULL));
	if (dwarf_attr(die, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &v) == 0)
		f->line = (uint32_t)v;
	if (dwarf_attr(die, DW_AT_call_column, &attr) && dwarf_formudata(&attr, &v) == 0)
		f->column = (uint32_t)v;
}

/* Where the function of DIE is declared (follows abstract_origin). */
static void decl_site(struct symcache *c, Dwarf_Die *die, struct su_symframe *f)
{
	int line = 0;
	Dwarf_Die cu;
	f->decl_file = intern_file(c, dwarf_diecu(die, &cu, NULL, NULL), dwarf_decl_file(die));
	f->decl_line = dwarf_decl_line(die, &line) == 0 && line > 0 ? (uint32_t)line : 0;
}

/* ---- PLT stubs ------------------------------------------------------------ */

/* The relocations of a module's RELA sections, read once per PLT table:
 * what each GOT slot's relocation names, and each .rela.plt entry's. */
struct reloc_ent {
	uint64_t offset;           /* r_offset */
	uint32_t seq;              /* order of reading: the first of a slot wins */
	const char *name;          /* the symbol's name (NULL: not JUMP_SLOT or
	                            * GLOB_DAT, or no symbol) */
};

struct reloc_index {
	struct reloc_ent *by_slot; /* by offset, then seq */
	size_t nslot;
	struct {                   /* each .rela.plt section, in order */
		const char **name; /* by entry index (NULL as above) */
		unsigned char *ok; /* the entry was readable */
		size_t n;
	} plt[4];
	size_t nplt;
};

static int reloc_cmp(const void *a, const void *b)
{
	const struct reloc_ent *x = a, *y = b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The name relocation R of SYMS (linked to string table STRNDX) gives a
 * PLT stub: NULL unless JUMP_SLOT or GLOB_DAT. */
static const char *rela_name(Elf *elf, Elf_Data *syms, size_t strndx, const GElf_Rela *r)
{
	unsigned const type = GELF_R_TYPE(r->r_info);
	if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
		return NULL;
	GElf_Sym sym;
	if (!gelf_getsym(syms, (int)GELF_R_SYM(r->r_info), &sym))
		return NULL;
	return elf_strptr(elf, strndx, sym.st_name);
}

static void reloc_index_free(struct reloc_index *x)
{
	free(x->by_slot);
	for (size_t i = 0; i < x->nplt; i++) {
		free(x->plt[i].name);
		free(x->plt[i].ok);
	}
}

/* Read every RELA section of ELF once into X (what reloc_name looks up). */
static void reloc_index_build(Elf *elf, struct reloc_index *x)
{
	size_t cap = 0, shstrndx;
	uint32_t seq = 0;
	int const have_shstr = elf_getshdrstrndx(elf, &shstrndx) == 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		const char *sname = have_shstr ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		Elf_Data *d = elf_getdata(scn, NULL);
		Elf_Scn *symscn = elf_getscn(elf, sh.sh_link);
		GElf_Shdr symsh;
		Elf_Data *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
		if (!d || !syms || !gelf_getshdr(symscn, &symsh))
			continue;
		size_t const n = sh.sh_size / sh.sh_entsize;
		int const is_plt = sname && !strcmp(sname, ".rela.plt") &&
				   x->nplt < sizeof x->plt / sizeof x->plt[0];
		const char **pname = NULL;
		unsigned char *pok = NULL;
		if (is_plt) {
			pname = calloc(n ? n : 1, sizeof *pname);
			pok = calloc(n ? n : 1, 1);
			if (!pname || !pok) {
				free(pname);
				free(pok);
				pname = NULL;
				pok = NULL;
			} else {
				x->plt[x->nplt].name = pname;
				x->plt[x->nplt].ok = pok;
				x->plt[x->nplt].n = n;
				x->nplt++;
			}
		}
		for (size_t i = 0; i < n; i++) {
			GElf_Rela r;
			if (!gelf_getrela(d, (int)i, &r))
				continue;
			const char *name = rela_name(elf, syms, symsh.sh_link, &r);
			if (pname) {
				pname[i] = name;
				pok[i] = 1;
			}
			if (SU_GROW(x->by_slot, cap, x->nslot + 1))
				goto done;
			x->by_slot[x->nslot++] = (struct reloc_ent){ r.r_offset, seq++, name };
		}
	}
done:
	if (x->nslot)
		qsort(x->by_slot, x->nslot, sizeof *x->by_slot, reloc_cmp);
}

/* The symbol of the relocation of GOT slot SLOT (JUMP_SLOT or GLOB_DAT)
 * among the RELA sections, or of .rela.plt's entry INDEX when SLOT is 0:
 * its name, or NULL. */
static const char *reloc_name(const struct reloc_index *x, uint64_t slot, int64_t index)
{
	if (index >= 0) {
		for (size_t i = 0; i < x->nplt; i++)
			if ((uint64_t)index < x->plt[i].n && x->plt[i].ok[index])
				return x->plt[i].name[index];
		return NULL;
	}
	size_t lo = 0, hi = x->nslot;
	while (lo < hi) {   /* the first entry at or after SLOT */
		size_t const mid = lo + (hi - lo) / 2;
		if (x->by_slot[mid].offset < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->nslot && x->by_slot[lo].offset == slot ? x->by_slot[lo].name : NULL;
}

/* The function PLT stub BYTES[N] at ADDR jumps to: through `jmp
 * *disp32(%rip)` (ff 25), the GOT slot's relocation; a lazy stub without
 * one (.plt when .plt.sec holds the jumps), the .rela.plt entry it
 * pushes (68 imm32).  NULL for PLT0. */
static const char *stub_target(const struct reloc_index *x, const unsigned char *b, size_t n, uint64_t addr)
{
	for (size_t i = 0; i + 6 <= n; i++) {
		if (b[i] == 0xff && b[i + 1] == 0x25) {
			int32_t disp;
			memcpy(&disp, b + i + 2, 4);
			return reloc_name(x, addr + i + 6 + (uint64_t)(int64_t)disp, -1);
		}
		if (b[i] == 0xff && b[i + 1] == 0x35) /* PLT0: push GOT+8 */
			return NULL;
	}
	for (size_t i = 0; i + 5 <= n; i++) {
		if (b[i] == 0x68) {
			uint32_t idx;
			memcpy(&idx, b + i + 1, 4);
			return reloc_name(x, 0, idx);
		}
	}
	return NULL;
}

static int plt_cmp(const void *a, const void *b)
{
	const struct plt_stub *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Build C's table of the PLT stubs of MOD (.plt, .plt.sec, .plt.got), as
 * perf names them: "func@plt". */
static void plt_build(struct symcache *c, Dwfl_Module *mod)
{
	c->plt_built = 1;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	size_t cap = 0;
	struct reloc_index relocs = { 0 };
	int have_relocs = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		const char *sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sname || (strcmp(sname, ".plt") && strcmp(sname, ".plt.sec") && strcmp(sname, ".plt.got")))
			continue;
		uint64_t const esize = sh.sh_entsize >= 8 && sh.sh_entsize <= 32 ? sh.sh_entsize : 16;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || d->d_size < sh.sh_size)
			continue;
		if (!have_relocs) {
			reloc_index_build(elf, &relocs);
			have_relocs = 1;
		}
		for (uint64_t off = 0; off + esize <= sh.sh_size; off += esize) {
			const char *fn = stub_target(&relocs, (const unsigned char *)d->d_buf + off, esize,
						     sh.sh_addr + off);
			if (!fn || !fn[0])
				continue;
			char *d_name = su_demangle(fn);
			char *full = NULL;
			if (asprintf(&full, "%s@plt", d_name ? d_name : fn) < 0)
				full = NULL;
			free(d_name);
			const char *name = full ? intern(&c->strings, full) : NULL;
			free(full);
			if (!name)
				continue;
			if (SU_GROW(c->plt, cap, c->nplt + 1))
				goto done;
			c->plt[c->nplt++] = (struct plt_stub){ sh.sh_addr + off, (uint32_t)esize, name };
		}
	}
done:
	reloc_index_free(&relocs);
	if (c->nplt)
		qsort(c->plt, c->nplt, sizeof *c->plt, plt_cmp);
}

/* The PLT stub holding ADDR (an ELF address of MOD), or NULL. */
static const struct plt_stub *plt_find(struct symcache *c, Dwfl_Module *mod, uint64_t addr)
{
	if (!c->plt_built)
		plt_build(c, mod);
	size_t lo = 0, hi = c->nplt;
	while (lo < hi) {
		size_t const mid = lo + (hi - lo) / 2;
		if (c->plt[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr - c->plt[lo - 1].lo < c->plt[lo - 1].size ? &c->plt[lo - 1] : NULL;
}

/* ---- symbolizing one address --------------------------------------------- */

/* Can DIE of TAG hold code of its own (a pc range)? */
static int tag_has_code(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_entry_point || tag == DW_TAG_try_block || tag == DW_TAG_catch_block ||
	       tag == DW_TAG_with_stmt;
}

/* Can DIE of TAG, which has no code, hold DIEs that have some?  Rust
 * nests every function in namespaces (and impl blocks); C++ may define
 * member functions in their class. */
static int tag_holds_code(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_interface_type;
}

/* The DIEs under PARENT whose code holds ADDR, outermost first, into
 * CHAIN[N..MAX): the count after them. */
static int code_path(Dwarf_Die *parent, Dwarf_Addr addr, Dwarf_Die *chain, int n, int max, int depth)
{
	Dwarf_Die child;
	if (depth > MAX_SCOPES || dwarf_child(parent, &child) != 0)
		return n;
	do {
		int const tag = dwarf_tag(&child);
		if (tag_has_code(tag)) {
			if (dwarf_haspc(&child, addr) <= 0)
				continue;
			if (n < max)
				chain[n++] = child;
			return code_path(&child, addr, chain, n, max, depth + 1);
		}
		if (tag_holds_code(tag) && dwarf_haschildren(&child)) {
			int const m = code_path(&child, addr, chain, n, max, depth + 1);
			if (m > n)
				return m;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return n;
}

struct tops_build {
	struct code_top *tops;
	size_t n, cap;
	uint32_t order;
	int oom;
};

/* Every code DIE code_path could take as its first step under PARENT,
 * at DEPTH, into B (in walk order). */
static void tops_collect(Dwarf_Die *parent, int depth, struct tops_build *b)
{
	Dwarf_Die child;
	if (depth > MAX_SCOPES || dwarf_child(parent, &child) != 0)
		return;
	do {
		int const tag = dwarf_tag(&child);
		if (tag_has_code(tag)) {
			uint32_t const order = b->order++;
			Dwarf_Addr base, lo, hi;
			ptrdiff_t it = 0;
			while ((it = dwarf_ranges(&child, it, &base, &lo, &hi)) > 0) {
				if (lo >= hi)
					continue;
				if (SU_GROW(b->tops, b->cap, b->n + 1)) {
					b->oom = 1;
					return;
				}
				b->tops[b->n++] = (struct code_top){ lo, hi, order, depth, child };
			}
			continue;
		}
		if (tag_holds_code(tag) && dwarf_haschildren(&child))
			tops_collect(&child, depth + 1, b);
		if (b->oom)
			return;
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int code_top_cmp(const void *a, const void *b)
{
	const struct code_top *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* C's index of CU's code DIEs, built at its first use; NULL when out of
 * memory. */
static struct cu_index *cu_index_get(struct symcache *c, Dwarf_Die *cu)
{
	const void *const id = cu->addr;
	if (c->lastcu < c->ncuidx && c->cuidx[c->lastcu].cu == id)
		return &c->cuidx[c->lastcu];
	for (size_t i = 0; i < c->ncuidx; i++)
		if (c->cuidx[i].cu == id) {
			c->lastcu = i;
			return &c->cuidx[i];
		}
	if (SU_GROW(c->cuidx, c->capcuidx, c->ncuidx + 1))
		return NULL;
	struct tops_build b = { 0 };
	tops_collect(cu, 0, &b);
	struct cu_index *x = &c->cuidx[c->ncuidx];
	*x = (struct cu_index){ .cu = id, .tops = b.tops, .ntops = b.n };
	if (!b.oom && b.n) {
		qsort(b.tops, b.n, sizeof *b.tops, code_top_cmp);
		x->maxhi = malloc(b.n * sizeof *x->maxhi);
		if (x->maxhi) {
			for (size_t i = 0; i < b.n; i++)
				x->maxhi[i] = i && x->maxhi[i - 1] > b.tops[i].hi ? x->maxhi[i - 1] : b.tops[i].hi;
		}
	}
	x->complete = !b.oom && (!b.n || x->maxhi);
	c->lastcu = c->ncuidx++;
	return x;
}

/* The first code DIE in walk order among X's whose ranges hold ADDR, or
 * NULL. */
static const struct code_top *cu_index_find(const struct cu_index *x, uint64_t addr)
{
	size_t lo = 0, hi = x->ntops;
	while (lo < hi) {   /* the first range starting after ADDR */
		size_t const mid = lo + (hi - lo) / 2;
		if (x->tops[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct code_top *best = NULL;
	for (size_t i = lo; i-- > 0 && x->maxhi[i] > addr;)
		if (addr < x->tops[i].hi && (!best || x->tops[i].order < best->order))
			best = &x->tops[i];
	return best;
}

/* The scopes of CU holding ADDR, innermost first (lexical blocks, each
 * inlined subroutine, the subprogram), into SCOPES[MAX]: their number.
 * Not dwarf_getscopes: elfutils (0.188) prunes every DIE without a pc
 * range, so it never enters the namespaces Rust defines its functions in
 * and finds nothing there (no inline frame, no DWARF function).  The
 * CU's first step is looked up in its index (built once), the rest
 * walked inside that one function. */
static int code_scopes(struct symcache *c, Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Die *scopes, int max)
{
	Dwarf_Die chain[MAX_SCOPES];
	int n;
	struct cu_index *x = cu_index_get(c, cu);
	if (x && x->complete) {
		const struct code_top *t = x->ntops ? cu_index_find(x, addr) : NULL;
		n = 0;
		if (t) {
			chain[n++] = t->die;
			Dwarf_Die top = t->die;
			n = code_path(&top, addr, chain, n, MAX_SCOPES, t->depth + 1);
		}
	} else {
		n = code_path(cu, addr, chain, 0, MAX_SCOPES, 0);
	}
	int const keep = n < max ? n : max;
	for (int i = 0; i < keep; i++)
		scopes[i] = chain[n - 1 - i];
	return keep;
}

static int cu_range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Build C's table of the code ranges of every CU of DW. */
static void cus_build(struct symcache *c, Dwarf *dw)
{
	size_t cap = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	c->cus_built = 1;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die die;
		if (dwarf_offdie(dw, off + hsize, &die)) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t it = 0;
			while ((it = dwarf_ranges(&die, it, &base, &lo, &hi)) > 0) {
				if (lo >= hi)
					continue;
				if (SU_GROW(c->cus, cap, c->ncus + 1))
					goto done;
				c->cus[c->ncus++] = (struct cu_range){ lo, hi, off + hsize };
			}
		}
		off = next;
	}
done:
	if (c->ncus)
		qsort(c->cus, c->ncus, sizeof *c->cus, cu_range_cmp);
}

/* The CU whose ranges hold ADDR (a module address), into *MEM, found
 * through the CUs' own ranges: NULL when none. */
static Dwarf_Die *addr_cu(struct symcache *c, Dwfl_Module *mod, uint64_t addr, Dwarf_Addr *bias, Dwarf_Die *mem)
{
	Dwarf *dw = dwfl_module_getdwarf(mod, bias);
	if (!dw)
		return NULL;
	if (!c->cus_built)
		cus_build(c, dw);
	uint64_t const a = addr - *bias;
	size_t lo = 0, hi = c->ncus;
	while (lo < hi) {   /* the first range starting after A */
		size_t const mid = lo + (hi - lo) / 2;
		if (c->cus[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges may nest (a CU's whole span, then its parts): look back. */
	for (size_t i = lo; i-- > 0 && lo - i <= 16;)
		if (a < c->cus[i].hi)
			return dwarf_offdie(dw, c->cus[i].cu, mem);
	return NULL;
}

/* The DIE a concrete DIE is an instance of (DW_AT_abstract_origin), or
 * the DIE itself: its offset. */
static Dwarf_Off origin_offset(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Die origin;
	if (dwarf_attr(die, DW_AT_abstract_origin, &attr) && dwarf_formref_die(&attr, &origin))
		return dwarf_dieoffset(&origin);
	return dwarf_dieoffset(die);
}

static int udata_attr(Dwarf_Die *die, unsigned name, Dwarf_Word *v)
{
	Dwarf_Attribute attr;
	return dwarf_attr_integrate(die, name, &attr) && dwarf_formudata(&attr, v) == 0;
}

/* Is the inlined subroutine SCOPES[0] the function that holds it (the
 * next subprogram or inlined subroutine of SCOPES[1..N)), "called" from
 * its own declaration (call file:line:column = decl file:line:column)?
 * GCC writes that when it splits a function and inlines a part back
 * (glibc's __GI___libc_read inside __GI___libc_read, read.c:24:1): one
 * function, not a call; a real recursive call inlined is called from its
 * body. */
static int inlined_into_itself(Dwarf_Die *scopes, int n)
{
	Dwarf_Off const origin = origin_offset(&scopes[0]);
	for (int j = 1; j < n; j++) {
		int const tag = dwarf_tag(&scopes[j]);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram && tag != DW_TAG_entry_point)
			continue;
		if (origin_offset(&scopes[j]) != origin)
			return 0;
		Dwarf_Word cf, cl, cc, df, dl, dc;
		return udata_attr(&scopes[0], DW_AT_call_file, &cf) && udata_attr(&scopes[0], DW_AT_call_line, &cl) &&
		       udata_attr(&scopes[0], DW_AT_call_column, &cc) && udata_attr(&scopes[0], DW_AT_decl_file, &df) &&
		       udata_attr(&scopes[0], DW_AT_decl_line, &dl) && udata_attr(&scopes[0], DW_AT_decl_column, &dc) &&
		       cf == df && cl == dl && cc == dc;
	}
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t const x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Add the bounds of every section of ELF (at BIAS) to P[*N..CAP). */
static int cells_add_sections(Elf *elf, GElf_Addr bias, uint64_t **p, size_t *n, size_t *cap)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (SU_GROW(*p, *cap, *n + 2))
			return -ENOMEM;
		(*p)[(*n)++] = sh.sh_addr + bias;
		(*p)[(*n)++] = sh.sh_addr + bias + sh.sh_size;
	}
	return 0;
}

/* Read MOD's symbol tables once: the points of X. */
static void cells_build(struct symcells *x, Dwfl_Module *mod)
{
	x->state = -1;
	int const nsyms = dwfl_module_getsymtab(mod);
	if (nsyms < 0)
		return;
	size_t n = 0, cap = 2 * (size_t)nsyms + 64;
	uint64_t *p = malloc(cap * sizeof *p);
	if (!p)
		return;
	Dwarf_Addr start = 0, end = 0;
	dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, NULL, NULL);
	p[n++] = start;
	p[n++] = end;
	Elf *elfs[8];
	GElf_Addr biases[8];
	size_t nelfs = 0, nsym = 0;
	struct su_sym *syms = malloc((size_t)(nsyms ? nsyms : 1) * sizeof *syms);
	if (!syms)
		goto fail;
	for (int i = 0; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr value = 0, bias = 0;
		Elf *elf = NULL;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, NULL, &elf, &bias);
		if (!name)
			continue;
		if (n + 2 > cap)
			goto fail;
		p[n++] = value;
		p[n++] = value + sym.st_size;
		syms[nsym++] = (struct su_sym){ value, sym.st_size, name, (uint32_t)i, sym.st_info,
						sym.st_shndx != SHN_UNDEF };
		size_t j = 0;
		while (j < nelfs && (elfs[j] != elf || biases[j] != bias))
			j++;
		if (j == nelfs) {
			if (nelfs == sizeof elfs / sizeof elfs[0] || !elf)
				goto fail;
			elfs[nelfs] = elf;
			biases[nelfs++] = bias;
		}
	}
	for (size_t j = 0; j < nelfs; j++)
		if (cells_add_sections(elfs[j], biases[j], &p, &n, &cap) != 0)
			goto fail;
	if (su_sort_u64(p, NULL, n) != 0)
		qsort(p, n, sizeof *p, u64_cmp);
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (!m || p[m - 1] != p[i])
			p[m++] = p[i];
	x->cell = calloc(2 * m + 1, sizeof *x->cell);
	if (!x->cell)
		goto fail;
	x->points = p;
	x->npoints = m;
	x->state = 1;
	int const first_global = dwfl_module_getsymtab_first_global(mod);
	if (first_global >= 0 && su_symtab_usable(mod))
		x->symtab = su_symtab_new(syms, nsym, first_global);
	free(syms);
	return;
fail:
	free(syms);
	free(p);
}

/* dwfl_module_addrinfo's name and offset for ADDR, one search per cell. */
static const char *addr_symbol(struct symcache *c, Dwfl_Module *mod, uint64_t addr, GElf_Off *off)
{
	struct symcells *x = &c->cells;
	GElf_Sym sym;
	if (!x->state && ++x->direct > CELLS_AFTER)
		cells_build(x, mod);
	if (x->state != 1)
		return dwfl_module_addrinfo(mod, addr, off, &sym, NULL, NULL, NULL);
	size_t lo = 0, hi = x->npoints;
	while (lo < hi) {   /* the first point after ADDR */
		size_t const mid = lo + (hi - lo) / 2;
		if (x->points[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Cell 0: below every point; 2k-1: point k-1 itself; 2k: after it. */
	size_t const cell = !lo ? 0 : x->points[lo - 1] == addr ? 2 * lo - 1 : 2 * lo;
	if (x->cell[cell]) {
		uint32_t const a = x->cell[cell] - 1;
		*off = x->ans[a].name ? addr - x->ans[a].value : 0;
		return x->ans[a].name;
	}
	const char *name;
	uint64_t value;
	if (su_symtab_lookup(x->symtab, addr, &name, &value) >= 0)
		*off = addr - value;
	else
		name = dwfl_module_addrinfo(mod, addr, off, &sym, NULL, NULL, NULL);
	if (SU_GROW(x->ans, x->capans, x->nans + 1))
		return name;
	x->ans[x->nans].name = name;
	x->ans[x->nans].value = addr - *off;
	x->cell[cell] = (uint32_t)++x->nans;
	return name;
}

/* The line table row of ADDR in module MOD, whose unit is CU (at BIAS):
 * its file (libdw's, not interned), *LINE, *COL; NULL when none.
 * ARANGED: CU is what .debug_aranges say (libdwfl's own lookup then
 * works), else it came from our index of units. */
static const char *line_of(Dwfl_Module *mod, Dwarf_Die *cu, int aranged, uint64_t addr, Dwarf_Addr bias, int *line,
			   int *col)
{
	const char *file = NULL;
	if (!aranged) {
		Dwarf_Line *dl = cu ? dwarf_getsrc_die(cu, addr - bias) : NULL;
		if (dl) {
			file = dwarf_linesrc(dl, NULL, NULL);
			dwarf_lineno(dl, line);
			dwarf_linecol(dl, col);
		}
	} else {
		Dwfl_Line *dl = dwfl_module_getsrc(mod, addr);
		if (dl)
			file = dwfl_lineinfo(dl, NULL, line, col, NULL, NULL);
	}
	return file;
}

/* Compute the frames of ADDR into OUT (at most MAX_CHAIN): their number. */
static size_t resolve(struct symcache *c, Dwfl_Module *mod, uint64_t addr,
		      struct su_symframe *out, unsigned flags)
{
	GElf_Off sym_off = 0;
	const char *sym_name = addr_symbol(c, mod, addr, &sym_off);
	size_t n = 0;

	/* The CU of ADDR, and its line table row: the innermost frame's
	 * location (not wanted for names alone). */
	int const lines = !(flags & SU_SYMBOLIZE_NAMES_ONLY);
	const char *file = NULL;
	int line = 0, col = 0;
	Dwarf_Addr bias = 0;
	Dwarf_Die cu_mem;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
	int const aranged = cu && dwarf_haspc(cu, addr - bias) != 0;
	if (!aranged)
		/* .debug_aranges do not cover ADDR (Go writes none; a cgo
		 * binary has gcc's, libdwfl then takes the CU before ADDR). */
		cu = addr_cu(c, mod, addr, &bias, &cu_mem);
	if (lines)
		file = line_of(mod, cu, aranged, addr, bias, &line, &col);
	Dwarf_Die scopes[MAX_SCOPES];
	int const nscopes = cu ? code_scopes(c, cu, addr - bias, scopes, MAX_SCOPES) : 0;
	Dwarf_Files *files = NULL;
	if (lines && cu && dwarf_getsrcfiles(cu, &files, NULL) != 0)
		files = NULL;

	/* scopes[0] is innermost: each inlined subroutine is a frame located
	 * where the previous (inner) one was called; the enclosing subprogram
	 * ends the chain. */
	struct su_symframe loc = {
		.file = intern_file(c, cu, file),
		.line = line > 0 ? (uint32_t)line : 0,
		.column = col > 0 ? (uint32_t)col : 0,
	};
	int have_subprogram = 0;
	for (int i = 0; i < nscopes && n < MAX_CHAIN && !have_subprogram; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram &&
		    tag != DW_TAG_entry_point)
			continue;
		if (tag == DW_TAG_inlined_subroutine && inlined_into_itself(scopes + i, nscopes - i))
			continue;
		struct su_symframe *f = &out[n++];
		*f = loc;
		f->function = die_name(c, &scopes[i]);
		if (lines)
			decl_site(c, &scopes[i], f);
		f->inlined = tag == DW_TAG_inlined_subroutine;
		f->func_offset = 0;
		if (f->inlined) {
			if (lines)
				call_site(c, cu, &scopes[i], files, &loc);
		} else {
			have_subprogram = 1;
			Dwarf_Addr entry;
			if (sym_name)
				f->func_offset = sym_off;
			else if (dwarf_entrypc(&scopes[i], &entry) == 0 && entry <= addr - bias)
				f->func_offset = addr - bias - entry;
			if (!f->function && sym_name)
				f->function = intern_name(c, sym_name);
		}
	}

	const struct plt_stub *plt = !have_subprogram && !n ? plt_find(c, mod, addr) : NULL;
	if (plt) {
		/* A PLT stub: no DWARF, no symbol of its own (or the one
		 * before it); named after its target as perf names it. */
		out[n++] = (struct su_symframe){ .function = plt->name, .func_offset = addr - plt->lo };
		return n;
	}
	if (!lines && !have_subprogram && !n && !sym_name) {
		/* Nothing names ADDR: a line alone would make it a frame. */
		loc.file = intern_file(c, cu, line_of(mod, cu, aranged, addr, bias, &line, &col));
		loc.line = line > 0 ? (uint32_t)line : 0;
		loc.column = col > 0 ? (uint32_t)col : 0;
	}
	if (!have_subprogram && n < MAX_CHAIN && (sym_name || n > 0 || loc.file)) {
		/* No DWARF function around ADDR (no DWARF, or assembly): the
		 * symbol table names it. */
		struct su_symframe *f = &out[n++];
		*f = loc;
		f->function = sym_name ? intern_name(c, sym_name) : NULL;
		f->func_offset = sym_name ? sym_off : 0;
		f->inlined = 0;
	}
	return n;
}

/* Does no string of FRAMES[N] need escaping (resolve.h)? */
static int frames_clean(const struct su_symframe *frames, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct su_symframe *f = &frames[i];
		if ((f->function && su_text_needs_escape(f->function)) || (f->file && su_text_needs_escape(f->file)) ||
		    (f->decl_file && f->decl_file != f->file && su_text_needs_escape(f->decl_file)))
			return 0;
	}
	return 1;
}

size_t su_symbolize_clean(struct su_module *module, uint64_t addr, struct su_symframe *frames, size_t max,
			  int *clean)
{
	return su_symbolize_flags(module, addr, frames, max, clean, 0);
}

size_t su_symbolize_flags(struct su_module *module, uint64_t addr, struct su_symframe *frames, size_t max,
			  int *clean, unsigned flags)
{
	if (clean)
		*clean = 0;
	if (!module || module->status != SU_MODULE_OK || !module->mod || (!frames && max)) {
		errno = EINVAL;
		return 0;
	}
	struct symcache *c = module->sym_cache;
	if (!c) {
		c = calloc(1, sizeof *c);
		if (!c)
			return 0;
		c->flags = flags;
		module->sym_cache = c;
		/* The answers a run over the same files kept: no DWARF read
		 * for the addresses they cover. */
		char path[PATH_MAX];
		if (su_addrcache_path(module, flags, path, sizeof(path)) == 0 && (c->disk_path = strdup(path)))
			(void)su_addrcache_load(path, add_kept, c); /* none, or not usable: written at the end */
		c->loaded = c->count;
	}
	if (c->flags != flags) {
		/* Not the answers this cache holds: made afresh each time (their
		 * strings still live in the cache's pool). */
		struct su_symframe chain[MAX_CHAIN];
		size_t const n0 = resolve(c, module->mod, addr, chain, flags), n = n0 < max ? n0 : max;
		if (n)
			memcpy(frames, chain, n * sizeof *frames);
		if (clean)
			*clean = frames_clean(chain, n0);
		return n;
	}
	struct slot *s = slot_find(c, addr);
	struct slot fresh = { .addr = addr };
	if (!s) {
		struct su_symframe chain[MAX_CHAIN];
		size_t n = resolve(c, module->mod, addr, chain, flags);
		if (frames_reserve(c, n) != 0)
			return 0;
		fresh.first = (uint32_t)c->nframes;
		fresh.n = (uint16_t)n;
		fresh.clean = (uint8_t)frames_clean(chain, n);
		if (n)
			memcpy(c->frames + c->nframes, chain, n * sizeof *chain);
		c->nframes += n;
		if (slot_insert(c, &fresh) != 0)
			c->nframes -= n;
		s = &fresh;
	}
	size_t n = s->n < max ? s->n : max;
	if (n)
		memcpy(frames, c->frames + s->first, n * sizeof *frames);
	if (clean)
		*clean = s->clean;
	return n;
}

size_t su_symbolize(struct su_module *module, uint64_t addr,
		    struct su_symframe *frames, size_t max)
{
	return su_symbolize_clean(module, addr, frames, max, NULL);
}
